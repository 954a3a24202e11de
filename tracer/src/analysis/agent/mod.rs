//! What `tracer agent` serves at /metrics, kept up to date line by line:
//! per process (pid, command, cgroup) and GPU, the counters of
//! [`counters`], the busy/idle time of [`busy`], NVML energy and power per
//! GPU, and the agent's own losses. Pure: the collect layer feeds lines,
//! process facts and clock readings; [`snapshot`] turns the state into
//! metric families ([`metric`]) that the export layer renders.
//!
//! Memory is bounded: at most `max_processes` processes (those beyond are
//! counted, not kept), the caps of [`counters::Caps`] per process, and
//! processes that exited are dropped after a grace period.
pub mod busy;
pub mod counters;
pub mod metric;
pub mod snapshot;

use std::collections::BTreeMap;

use serde_json::Value;

use crate::decode::fastline::Line;
use counters::{Caps, Counters, Obs};

#[derive(Clone, Copy, Debug)]
pub struct Options {
    pub caps: Caps,
    /// Kernels by name in the metrics (0: none; bounded cardinality).
    pub top_kernels: usize,
    pub max_processes: usize,
    /// How long a process's series stay after it exited (ns).
    pub grace_ns: u64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            caps: Caps { kernel_names: 0, live_allocations: 1 << 20 },
            top_kernels: 0,
            max_processes: 4096,
            grace_ns: 60_000_000_000,
        }
    }
}

/// One traced process.
#[derive(Clone, Debug, Default)]
pub struct Process {
    /// From /proc (the collect layer fills it in); None until known.
    pub command: Option<String>,
    pub cgroup: Option<String>,
    /// GPU label -> counters.
    pub gpus: BTreeMap<String, Counters>,
    /// When the process exited (the agent's clock, ns).
    pub exited_at: Option<u64>,
}

/// One GPU's latest NVML reading.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GpuPower {
    pub bus_id: String,
    /// The energy counter (since the driver loaded), joules.
    pub energy_j: Option<f64>,
    pub power_w: Option<f64>,
    pub samples: u64,
}

/// The agent's own health: what it could not count or keep.
#[derive(Clone, Debug, Default)]
pub struct Health {
    /// Records the kernel side numbered but that never arrived (ring buffer
    /// full, undecodable), and of those, the ring-buffer-full count.
    pub lost_records: u64,
    pub ring_buffer_full: u64,
    /// Processes not kept because `max_processes` were already.
    pub processes_not_kept: u64,
    /// Processes traced since the start, and dropped after exiting.
    pub processes_seen: u64,
    pub processes_dropped: u64,
    /// NVML: None when unavailable, with the reason.
    pub power_unavailable: Option<String>,
    /// Duty-cycled recording: (files written, bytes written, paused reason).
    pub recordings: u64,
    pub recorded_bytes: u64,
    pub recording_paused: Option<&'static str>,
    /// libcuda files probed now: (path as the process that led to it saw
    /// it, inode, functions probed); files found but not probed (each time:
    /// failed, or past the agent's limit); opens of libcuda files watched.
    pub libcuda_files: Vec<(String, u64, usize)>,
    pub libcuda_files_not_probed: u64,
    pub libcuda_opens: u64,
    /// The agent's resident memory (bytes) and CPU seconds.
    pub rss_bytes: u64,
    pub cpu_seconds: f64,
}

#[derive(Clone, Debug, Default)]
pub struct AgentMetrics {
    pub opts: Options,
    pub processes: BTreeMap<u32, Process>,
    pub power: BTreeMap<u32, GpuPower>,
    pub health: Health,
}

impl AgentMetrics {
    pub fn new(opts: Options) -> Self {
        AgentMetrics { opts, ..Default::default() }
    }

    /// The process's entry, created at its first line (None past the cap).
    pub fn process(&mut self, pid: u32) -> Option<&mut Process> {
        if !self.processes.contains_key(&pid) {
            if self.processes.len() >= self.opts.max_processes {
                self.health.processes_not_kept += 1;
                return None;
            }
            self.health.processes_seen += 1;
            self.processes.insert(pid, Process::default());
        }
        self.processes.get_mut(&pid)
    }

    /// Processes whose command is not known yet (the collect layer looks
    /// them up in /proc and calls [`set_info`](Self::set_info)).
    pub fn unknown_processes(&self) -> Vec<u32> {
        self.processes.iter().filter(|(_, p)| p.command.is_none() && p.exited_at.is_none()).map(|(&k, _)| k).collect()
    }

    pub fn set_info(&mut self, pid: u32, command: String, cgroup: Option<String>) {
        if let Some(p) = self.processes.get_mut(&pid) {
            p.command = Some(command);
            p.cgroup = cgroup;
        }
    }

    /// The process exited at `now` (agent clock): its series go after the grace period.
    pub fn exited(&mut self, pid: u32, now: u64) {
        if let Some(p) = self.processes.get_mut(&pid)
            && p.exited_at.is_none()
        {
            p.exited_at = Some(now);
        }
    }

    /// Drops the processes that exited more than the grace period before `now`.
    pub fn expire(&mut self, now: u64) {
        let grace = self.opts.grace_ns;
        let before = self.processes.len();
        self.processes.retain(|_, p| p.exited_at.is_none_or(|t| now.saturating_sub(t) < grace));
        self.health.processes_dropped += (before - self.processes.len()) as u64;
    }

    /// Live processes (not marked exited).
    pub fn live_pids(&self) -> Vec<u32> {
        self.processes.iter().filter(|(_, p)| p.exited_at.is_none()).map(|(&k, _)| k).collect()
    }

    /// One line from the collector; `now` is the agent's clock (for exits).
    pub fn add_line(&mut self, l: &Line, now: u64) {
        match l {
            Line::Value(v) => self.add_value(v, now),
            Line::Launch(l) => {
                let o = Obs {
                    pid: l.hdr.pid,
                    ty: "kernel",
                    op: "launch",
                    name: l.name,
                    ts: l.hdr.ts,
                    dur_ns: l.returned.map(|r| r.exit_ts.saturating_sub(l.hdr.ts)),
                    kernel: l.kernel,
                    stream: Some(l.args[8]),
                    ..Default::default()
                };
                self.observe(&o);
            }
            Line::Call(l) => {
                let (ty, op) = l.type_op();
                // The symbol without its variant suffix needs no allocation.
                let name = match l.variant {
                    0 => std::borrow::Cow::Borrowed(l.spec.name),
                    _ => std::borrow::Cow::Owned(l.name()),
                };
                let o = Obs {
                    pid: l.hdr.pid,
                    ty,
                    op,
                    name: &name,
                    ts: l.hdr.ts,
                    dur_ns: l.returned.map(|r| r.exit_ts.saturating_sub(l.hdr.ts)),
                    size: l.size(),
                    direction: l.direction(),
                    kernel: l.kernel(),
                    stream: l.stream(),
                    event: l.event(),
                    ..Default::default()
                };
                self.observe(&o);
            }
        }
    }

    /// A JSON line: calls, process lines (exit), power samples.
    pub fn add_value(&mut self, v: &Value, now: u64) {
        let s = |k: &str| v.get(k).and_then(Value::as_str);
        let n = |k: &str| v.get(k).and_then(Value::as_u64);
        let f = |k: &str| v.get(k).and_then(Value::as_f64);
        let addr = |k: &str| s(k).and_then(|x| u64::from_str_radix(x.trim_start_matches("0x"), 16).ok());
        let Some(ty) = s("type") else { return };
        match ty {
            "header" | "footer" | "marker" => {}
            "power" => {
                let Some(gpu) = n("gpu") else { return };
                let p = self.power.entry(gpu as u32).or_default();
                p.bus_id = s("bus_id").unwrap_or("").to_string();
                p.energy_j = f("energy_mj").map(|e| e / 1e3).or(p.energy_j);
                p.power_w = f("power_mw").map(|w| w / 1e3);
                p.samples += 1;
            }
            "process" => {
                if s("op") == Some("exit")
                    && let Some(pid) = n("pid")
                {
                    self.exited(pid as u32, now);
                }
            }
            _ => {
                let (Some(pid), Some(name)) = (n("pid"), s("name")) else { return };
                // `"device": null` (a call outside any known context) is no GPU label.
                let device = v.get("device").filter(|d| !d.is_null()).map(|d| match d {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                });
                let o = Obs {
                    pid: pid as u32,
                    gpu: device.as_deref().unwrap_or(""),
                    ty,
                    op: s("op").unwrap_or(""),
                    name,
                    ts: n("ts").unwrap_or(0),
                    dur_ns: f("duration_us").map(|d| (d * 1e3).round() as u64),
                    size: n("size"),
                    direction: s("direction"),
                    ptr: addr("ptr"),
                    error: s("error"),
                    kernel: s("kernel"),
                    stream: addr("stream"),
                    event: addr("event"),
                    end_ts: n("end_ts"),
                    created_stream: created_stream(v),
                };
                self.observe(&o);
            }
        }
    }

    fn observe(&mut self, o: &Obs) {
        let caps = self.opts.caps;
        let Some(p) = self.process(o.pid) else { return };
        match p.gpus.get_mut(o.gpu) {
            Some(c) => c.add(o, caps),
            None => {
                let mut c = Counters::default();
                c.add(o, caps);
                p.gpus.insert(o.gpu.to_string(), c);
            }
        }
    }
}

/// A cuStreamCreate* line's stream (`args.phStream`) and whether it was
/// created with CU_STREAM_NON_BLOCKING (`args.Flags` bit 0), as the trace
/// model reads them.
fn created_stream(v: &Value) -> Option<(u64, bool)> {
    let a = v.get("args")?;
    let hex = |x: &Value| x.as_str().and_then(|s| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok());
    let h = hex(a.get("phStream")?)?;
    let flags = a.get("Flags").and_then(|f| f.as_u64().or_else(|| hex(f))).unwrap_or(0);
    Some((h, flags & 1 != 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(s: &str) -> Value {
        serde_json::from_str(s).unwrap()
    }

    fn busy_of(m: &AgentMetrics, pid: u32) -> (f64, f64, f64, String) {
        let f = snapshot::families(m);
        let get = |name: &str| f.iter().find(|x| x.name == name).unwrap();
        let of = |name: &str| {
            get(name)
                .samples
                .iter()
                .find(|s| s.labels.iter().any(|l| l.0 == "pid" && l.1 == pid.to_string()))
                .unwrap()
                .clone()
        };
        let basis = of("tracer_gpu_busy_basis");
        let b = basis.labels.iter().find(|l| l.0 == "basis").unwrap().1.clone();
        let gaps = match &of("tracer_gpu_idle_gap_seconds").value {
            metric::Value::Histogram(h) => h.count as f64,
            _ => panic!("not a histogram"),
        };
        let v = |s: metric::Sample| match s.value {
            metric::Value::Number(x) => x,
            _ => panic!("not a number"),
        };
        (v(of("tracer_gpu_busy_seconds")), v(of("tracer_gpu_idle_seconds")), gaps, b)
    }

    /// The reported case: a PyTorch process whose synchronizations the agent
    /// did not see made 108,001 launches and its busy/idle stayed 0. Its
    /// launches are possibly busy from the first to the latest instant seen
    /// (the bound's meaning, labelled lower_bound); with CUPTI's `gpu` lines
    /// the figures are measured.
    #[test]
    fn busy_and_idle_of_a_process_that_never_synchronizes() {
        let mut m = AgentMetrics::default();
        for i in 0..1000u64 {
            let ts = 1_000_000 + i * 20_000;
            m.add_value(&line(&format!(r#"{{"type":"kernel","op":"launch","name":"cuLaunchKernel","pid":7,"device":0,"ts":{ts},"duration_us":5.0,"kernel":"k","stream":"0x0"}}"#)), 0);
        }
        // first entry 1 ms, last return 1 ms + 999 x 20 µs + 5 µs
        assert_eq!(busy_of(&m, 7), (19_985_000.0 / 1e9, 0.0, 0.0, "lower_bound".into()));
        // the same process measured: 1000 kernels of 2 µs, 18 µs apart
        let mut m = AgentMetrics::default();
        for i in 0..1000u64 {
            let ts = 1_000_000 + i * 20_000;
            m.add_value(&line(&format!(r#"{{"type":"kernel","op":"launch","name":"cuLaunchKernel","pid":7,"device":0,"ts":{ts},"duration_us":5.0,"kernel":"k","stream":"0x0"}}"#)), 0);
            m.add_value(
                &line(&format!(
                    r#"{{"type":"gpu","op":"kernel","name":"k","pid":7,"device":0,"ts":{},"end_ts":{}}}"#,
                    ts + 6_000,
                    ts + 8_000
                )),
                0,
            );
        }
        assert_eq!(busy_of(&m, 7), (2_000_000.0 / 1e9, 999.0 * 18_000.0 / 1e9, 999.0, "measured".into()));
    }

    /// cuBLAS's memsets on a stream it created non-blocking: a
    /// synchronization of the legacy stream does not prove them complete.
    #[test]
    fn a_legacy_synchronization_does_not_cover_a_non_blocking_stream() {
        let mut m = AgentMetrics::default();
        for l in [
            r#"{"type":"stream","op":"stream_create","name":"cuStreamCreate","pid":7,"ts":1000,"duration_us":1.0,"args":{"Flags":"0x1","phStream":"0x30"}}"#,
            r#"{"type":"memset","op":"set","name":"cuMemsetD8Async","pid":7,"ts":2000,"duration_us":1.0,"size":4,"stream":"0x30"}"#,
            r#"{"type":"kernel","op":"launch","name":"cuLaunchKernel","pid":7,"ts":3000,"duration_us":1.0,"kernel":"k","stream":"0x0"}"#,
            r#"{"type":"sync","op":"stream_synchronize","name":"cuStreamSynchronize","pid":7,"ts":4000,"duration_us":6.0,"stream":"0x0"}"#,
            r#"{"type":"kernel","op":"launch","name":"cuLaunchKernel","pid":7,"ts":20000,"duration_us":1.0,"kernel":"k","stream":"0x0"}"#,
        ] {
            m.add_value(&line(l), 0);
        }
        // possibly busy from the memset (2 µs) to the latest instant seen (21 µs): no certain gap
        assert_eq!(busy_of(&m, 7), (19_000.0 / 1e9, 0.0, 0.0, "lower_bound".into()));
    }

    #[test]
    fn exited_processes_are_dropped_after_the_grace_period() {
        let mut m = AgentMetrics::new(Options { grace_ns: 100, ..Default::default() });
        m.add_value(&line(r#"{"type":"context","op":"ctx_set_current","name":"cuCtxSetCurrent","pid":7,"ts":5}"#), 0);
        m.add_value(&line(r#"{"type":"process","op":"exit","name":"process","pid":7,"ts":6}"#), 1_000);
        m.expire(1_099);
        assert_eq!(m.live_pids(), Vec::<u32>::new());
        assert!(m.processes.contains_key(&7), "still in its grace period");
        m.expire(1_100);
        assert!(m.processes.is_empty());
        assert_eq!((m.health.processes_seen, m.health.processes_dropped), (1, 1));
    }

    #[test]
    fn processes_beyond_the_cap_are_counted_not_kept() {
        let mut m = AgentMetrics::new(Options { max_processes: 2, ..Default::default() });
        for pid in 1..=5 {
            m.add_value(&line(&format!(r#"{{"type":"init","op":"init","name":"cuInit","pid":{pid},"ts":1}}"#)), 0);
        }
        assert_eq!(m.processes.len(), 2);
        assert_eq!(m.health.processes_not_kept, 3);
    }

    #[test]
    fn power_lines_keep_the_latest_reading() {
        let mut m = AgentMetrics::default();
        let p = r#"{"type":"power","op":"sample","name":"nvml","gpu":1,"bus_id":"0000:01:00.0","energy_mj":5000,"power_mw":250000,"pid":0,"ts":1}"#;
        m.add_value(&line(p), 0);
        assert_eq!(
            m.power[&1],
            GpuPower { bus_id: "0000:01:00.0".into(), energy_j: Some(5.0), power_w: Some(250.0), samples: 1 }
        );
    }

    /// 200 000 launches and allocations with a new kernel name, stream and
    /// address each: every map stays at its cap (no per-call growth).
    #[test]
    fn memory_does_not_grow_with_calls() {
        let caps = Caps { kernel_names: 100, live_allocations: 1000 };
        let mut m = AgentMetrics::new(Options { caps, top_kernels: 5, ..Default::default() });
        for i in 0..200_000u64 {
            let k = format!("kernel_{i}");
            let o = Obs {
                pid: 1,
                ty: "kernel",
                op: "launch",
                name: "cuLaunchKernel",
                ts: i,
                kernel: Some(&k),
                stream: Some(i),
                ..Default::default()
            };
            m.observe(&o);
            let o = Obs {
                pid: 1,
                ty: "memory",
                op: "alloc",
                name: "cuMemAlloc_v2",
                ts: i,
                ptr: Some(i + 1),
                size: Some(8),
                ..Default::default()
            };
            m.observe(&o);
        }
        let c = &m.processes[&1].gpus[""];
        assert_eq!((c.kernels_by_name.len(), c.kernel_names_over_cap), (100, 199_900));
        assert_eq!((c.live.len(), c.untracked_allocations, c.live_bytes), (1000, 199_000, 8000));
        assert_eq!((c.calls.len(), c.launches["cuLaunchKernel"]), (2, 200_000));
        // 20 samples of the process (5 of them the top kernels, 1 the busy/idle basis) and 14
        // of the agent's own (no libcuda file probed here).
        assert_eq!(crate::analysis::agent::snapshot::families(&m).iter().map(|f| f.samples.len()).sum::<usize>(), 34);
    }

    #[test]
    fn a_device_field_makes_its_own_series() {
        let mut m = AgentMetrics::default();
        m.add_value(&line(r#"{"type":"init","op":"init","name":"cuInit","pid":3,"ts":1}"#), 0);
        m.add_value(&line(r#"{"type":"memory","op":"alloc","name":"cuMemAlloc_v2","pid":3,"ts":2,"device":1,"size":64,"ptr":"0x100","duration_us":1.5}"#), 0);
        let p = &m.processes[&3];
        assert_eq!(p.gpus.keys().collect::<Vec<_>>(), ["", "1"]);
        assert_eq!(p.gpus["1"].live_bytes, 64);
        assert_eq!(p.gpus["1"].live[&0x100], 64);
    }
}
