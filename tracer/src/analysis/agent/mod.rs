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
pub mod inferred;
pub mod metric;
pub mod off_cpu;
pub mod snapshot;

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;

use crate::decode::fastline::Line;
use counters::{Caps, Counters, Obs};

#[derive(Clone, Debug)]
pub struct Options {
    pub caps: Caps,
    /// The machine's durations library's entries for its GPU: the busy/idle
    /// figures of processes without CUPTI are inferred from them
    /// ([`inferred`]) where they time most launches.
    pub durations: Option<std::sync::Arc<crate::analysis::durations::Durations>>,
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
            durations: None,
            top_kernels: 0,
            max_processes: 4096,
            grace_ns: 60_000_000_000,
        }
    }
}

/// One traced process.
#[derive(Clone, Debug, Default)]
pub struct Process {
    /// The program's name (comm): from its exec line, its parent's at a
    /// fork, else the collect layer's (the kernel's note at the first
    /// probed call, /proc); None until known.
    pub command: Option<String>,
    pub cgroup: Option<String>,
    /// GPU label -> counters.
    pub gpus: BTreeMap<String, Counters>,
    /// When the process exited (the agent's clock, ns).
    pub exited_at: Option<u64>,
    /// Its threads' time off their CPU by cause (the `sched` lines).
    pub off_cpu: off_cpu::OffCpu,
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
    /// Calls of the exported driver functions tracer counts without decoding
    /// them (outside its table; all processes), by function.
    pub undecoded_calls: std::collections::BTreeMap<String, u64>,
    /// HTTP connections closed at accept (connection cap), closed to make
    /// room for a new one, closed by a timeout, and requests answered 401.
    pub http_refused: u64,
    pub http_evicted: u64,
    pub http_timed_out: u64,
    pub http_unauthorized: u64,
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
    /// pid -> program name from the exec and fork lines, also of processes
    /// without series yet (an exec comes before the first driver call);
    /// forgotten at exit, bounded by [`NAMES_CAP`].
    pub names: HashMap<u32, String>,
    /// Processes given series since the collect layer last took them (it
    /// looks up what the lines did not say: name, cgroup).
    pub fresh: Vec<u32>,
    /// `--duty-cycle`: the probes are attached part of the time.
    pub sampling: Option<Sampling>,
}

/// Calls and launches by API of one process and GPU.
type ApiCounts = (HashMap<Box<str>, u64>, HashMap<Box<str>, u64>);
/// Calls and launches per second by API of one process and GPU.
pub type ApiRates = (BTreeMap<String, f64>, BTreeMap<String, f64>);

/// `--duty-cycle ON/PERIOD`: the counters count what the probes saw while
/// attached (exact within each window); the rates of the last whole window
/// estimate the rates of the whole period.
#[derive(Clone, Debug, Default)]
pub struct Sampling {
    /// ON / PERIOD.
    pub ratio: f64,
    pub attached: bool,
    /// Seconds attached in the windows that ended, and their number.
    pub attached_s: f64,
    pub windows: u64,
    /// (pid, gpu) -> calls and launches by API at the open window's start.
    start: HashMap<(u32, String), ApiCounts>,
    /// (pid, gpu) -> calls and launches by API per second in the last
    /// window (processes that made calls in it).
    pub rates: BTreeMap<(u32, String), ApiRates>,
}

/// Entries of [`AgentMetrics::names`] at most (cleared when full: the
/// collect layer's lookups remain).
pub const NAMES_CAP: usize = 65536;

/// The kernel's name of a program started from `filename` (comm): its file
/// name, cut to 15 bytes.
pub fn comm_of(filename: &str) -> String {
    let base = filename.rsplit('/').next().unwrap_or(filename);
    let mut cut = base.len().min(15);
    while !base.is_char_boundary(cut) {
        cut -= 1;
    }
    base[..cut].to_string()
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
            self.processes.insert(pid, Process { command: self.names.get(&pid).cloned(), ..Default::default() });
            self.fresh.push(pid);
        }
        self.processes.get_mut(&pid)
    }

    /// `--duty-cycle`: sampling at `ratio` (ON / PERIOD), a window open.
    pub fn sample(&mut self, ratio: f64) {
        self.sampling = Some(Sampling { ratio, ..Default::default() });
        self.window_started();
    }

    /// A sampling window starts (the probes were attached).
    pub fn window_started(&mut self) {
        let Some(sm) = self.sampling.as_mut() else { return };
        sm.start.clear();
        for (&pid, p) in &self.processes {
            for (gpu, c) in &p.gpus {
                sm.start.insert((pid, gpu.clone()), (c.calls.clone(), c.launches.clone()));
            }
        }
        sm.attached = true;
    }

    /// The window ends after `seconds` attached: the rates of its calls.
    pub fn window_ended(&mut self, seconds: f64) {
        let Some(sm) = self.sampling.as_mut() else { return };
        let per_s = |now: &HashMap<Box<str>, u64>, before: Option<&HashMap<Box<str>, u64>>| {
            now.iter()
                .filter_map(|(k, &n)| {
                    let d = n - before.and_then(|b| b.get(k)).copied().unwrap_or(0).min(n);
                    (d > 0).then(|| (k.to_string(), d as f64 / seconds.max(1e-9)))
                })
                .collect::<BTreeMap<String, f64>>()
        };
        sm.rates.clear();
        for (&pid, p) in &self.processes {
            for (gpu, c) in &p.gpus {
                let before = sm.start.get(&(pid, gpu.clone()));
                let calls = per_s(&c.calls, before.map(|b| &b.0));
                if !calls.is_empty() {
                    let launches = per_s(&c.launches, before.map(|b| &b.1));
                    sm.rates.insert((pid, gpu.clone()), (calls, launches));
                }
            }
        }
        sm.start.clear();
        sm.attached = false;
        sm.attached_s += seconds;
        sm.windows += 1;
    }

    /// Processes whose command is not known yet (the collect layer looks
    /// them up in /proc and calls [`set_info`](Self::set_info)).
    pub fn unknown_processes(&self) -> Vec<u32> {
        self.processes.iter().filter(|(_, p)| p.command.is_none() && p.exited_at.is_none()).map(|(&k, _)| k).collect()
    }

    /// What the collect layer found: a name where the lines gave none (or
    /// the command line, `replace`), and the cgroup.
    pub fn set_info(&mut self, pid: u32, command: Option<String>, cgroup: Option<String>, replace: bool) {
        if let Some(p) = self.processes.get_mut(&pid) {
            if p.command.is_none() || replace {
                p.command = command.or(p.command.take());
            }
            if cgroup.is_some() {
                p.cgroup = cgroup;
            }
        }
    }

    fn named(&mut self, pid: u32, name: String) {
        if self.names.len() >= NAMES_CAP && !self.names.contains_key(&pid) {
            self.names.clear();
        }
        self.names.insert(pid, name);
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
                    geom: Some(crate::analysis::model::Geom {
                        grid: [l.args[1] as u32, l.args[2] as u32, l.args[3] as u32],
                        block: [l.args[4] as u32, l.args[5] as u32, l.args[6] as u32],
                        shared_mem: l.args[7] as u32,
                    }),
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
            // Stacks: where lines were taken, not calls.
            "header" | "footer" | "marker" | "stack" | "sample" => {}
            // Scheduler events: off-CPU time, not calls.
            "sched" => {
                if v.get("op").and_then(Value::as_str) == Some("off_cpu")
                    && let Some(pid) = n("pid")
                    && let Some(p) = self.process(pid as u32)
                {
                    p.off_cpu.add(v);
                }
            }
            "power" => {
                let Some(gpu) = n("gpu") else { return };
                let p = self.power.entry(gpu as u32).or_default();
                p.bus_id = s("bus_id").unwrap_or("").to_string();
                p.energy_j = f("energy_mj").map(|e| e / 1e3).or(p.energy_j);
                p.power_w = f("power_mw").map(|w| w / 1e3);
                p.samples += 1;
            }
            "process" => {
                let Some(pid) = n("pid").map(|p| p as u32) else { return };
                match s("op") {
                    Some("exit") => {
                        self.names.remove(&pid);
                        self.exited(pid, now);
                    }
                    Some("exec") => {
                        let name = comm_of(s("filename").unwrap_or(""));
                        if let Some(p) = self.processes.get_mut(&pid) {
                            p.command = Some(name.clone());
                        }
                        self.named(pid, name);
                    }
                    Some("fork") => {
                        // A process (or thread) starts with its parent's name.
                        let parent =
                            self.names.get(&pid).cloned().or_else(|| self.processes.get(&pid)?.command.clone());
                        if let (Some(child), Some(name)) = (n("child").map(|c| c as u32), parent)
                            && child != pid
                        {
                            self.named(child, name);
                        }
                    }
                    _ => {}
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
                    geom: geom_of(v),
                };
                self.observe(&o);
            }
        }
    }

    fn observe(&mut self, o: &Obs) {
        let caps = self.opts.caps;
        // out of the options while the process is borrowed, put back after:
        // no reference count taken per line
        let durations = self.opts.durations.take();
        let d = durations.as_deref();
        if let Some(p) = self.process(o.pid) {
            match p.gpus.get_mut(o.gpu) {
                Some(c) => c.add(o, caps, d),
                None => {
                    let mut c = Counters::default();
                    c.add(o, caps, d);
                    p.gpus.insert(o.gpu.to_string(), c);
                }
            }
        }
        self.opts.durations = durations;
    }
}

/// A launch line's geometry (`grid`, `block`, `shared_mem`), as the trace model reads it.
fn geom_of(v: &Value) -> Option<crate::analysis::model::Geom> {
    let dims = |k: &str| -> Option<[u32; 3]> {
        let a = v.get(k)?.as_array()?;
        let d = |i: usize| a.get(i).and_then(Value::as_u64).map(|x| x as u32);
        Some([d(0)?, d(1)?, d(2)?])
    };
    let shared_mem = v.get("shared_mem").and_then(Value::as_u64).unwrap_or(0) as u32;
    Some(crate::analysis::model::Geom { grid: dims("grid")?, block: dims("block")?, shared_mem })
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

    /// The same process without CUPTI on a machine whose durations library
    /// has its kernel (2 µs at its geometry): busy and idle inferred, labelled calibrated.
    #[test]
    fn busy_and_idle_from_the_durations_library() {
        use crate::analysis::durations::Durations;
        use crate::analysis::durations_file::{DurationsFile, FORMAT, KernelEntry};
        let k = KernelEntry {
            kernel: "k".into(),
            grid: [4, 1, 1],
            block: [32, 1, 1],
            shared_mem: 0,
            count: 9,
            median_ns: 2_000,
            p10_ns: 2_000,
            p90_ns: 2_000,
        };
        let f = DurationsFile {
            format: FORMAT.into(),
            version: 1,
            source: "durations library".into(),
            gpu: None,
            kernels: vec![k],
            copies: vec![],
        };
        let opts = Options { durations: Some(std::sync::Arc::new(Durations::new(f))), ..Default::default() };
        let mut m = AgentMetrics::new(opts);
        for i in 0..1000u64 {
            let ts = 1_000_000 + i * 20_000;
            m.add_value(&line(&format!(r#"{{"type":"kernel","op":"launch","name":"cuLaunchKernel","pid":7,"device":0,"ts":{ts},"duration_us":5.0,"kernel":"k","stream":"0x0","grid":[4,1,1],"block":[32,1,1],"shared_mem":0}}"#)), 0);
        }
        // each kernel from its launch's return for 2 µs, 18 µs apart
        assert_eq!(busy_of(&m, 7), (2_000_000.0 / 1e9, 999.0 * 18_000.0 / 1e9, 999.0, "calibrated".into()));
        // a kernel the library lacks in 1 of 5 launches: too few timed, the bound again
        let f2 = m.opts.durations.clone();
        let mut m = AgentMetrics::new(Options { durations: f2, ..Default::default() });
        for i in 0..1000u64 {
            let ts = 1_000_000 + i * 20_000;
            let k = if i % 5 == 0 { "other" } else { "k" };
            m.add_value(&line(&format!(r#"{{"type":"kernel","op":"launch","name":"cuLaunchKernel","pid":7,"device":0,"ts":{ts},"duration_us":5.0,"kernel":"{k}","stream":"0x0","grid":[4,1,1],"block":[32,1,1],"shared_mem":0}}"#)), 0);
        }
        assert_eq!(busy_of(&m, 7).3, "lower_bound");
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
        // 20 samples of the process (5 of them the top kernels, 1 the busy/idle basis) and
        // the agent's own (no libcuda file probed here).
        assert_eq!(crate::analysis::agent::snapshot::families(&m).iter().map(|f| f.samples.len()).sum::<usize>(), 38);
    }

    /// The name comes from the lines: exec (before the first call), a fork
    /// (the parent's), a later exec (the new program); never arguments.
    #[test]
    fn names_come_from_exec_and_fork_lines() {
        let mut m = AgentMetrics::default();
        let v = |s: &str| line(s);
        m.add_value(&v(r#"{"type":"process","op":"exec","name":"process","pid":5,"ts":1,"filename":"/opt/bin/a_very_long_program_name"}"#), 0);
        m.add_value(&v(r#"{"type":"init","op":"init","name":"cuInit","pid":5,"ts":2}"#), 0);
        assert_eq!(m.processes[&5].command.as_deref(), Some("a_very_long_pro"));
        m.add_value(&v(r#"{"type":"process","op":"fork","name":"process","pid":5,"ts":3,"child":6}"#), 0);
        m.add_value(&v(r#"{"type":"init","op":"init","name":"cuInit","pid":6,"ts":4}"#), 0);
        assert_eq!(m.processes[&6].command.as_deref(), Some("a_very_long_pro"));
        m.add_value(
            &v(r#"{"type":"process","op":"exec","name":"process","pid":6,"ts":5,"filename":"/usr/bin/python3"}"#),
            0,
        );
        assert_eq!(m.processes[&6].command.as_deref(), Some("python3"));
        assert_eq!(m.fresh, [5, 6]);
        // The collect layer's name only fills a gap, unless asked to replace.
        m.set_info(6, Some("other".into()), Some("/a".into()), false);
        assert_eq!(
            (m.processes[&6].command.as_deref(), m.processes[&6].cgroup.as_deref()),
            (Some("python3"), Some("/a"))
        );
        m.set_info(6, Some("python3 serve.py".into()), None, true);
        assert_eq!(
            (m.processes[&6].command.as_deref(), m.processes[&6].cgroup.as_deref()),
            (Some("python3 serve.py"), Some("/a"))
        );
        m.add_value(&v(r#"{"type":"process","op":"exit","name":"process","pid":5,"ts":6}"#), 0);
        assert!(!m.names.contains_key(&5));
        assert_eq!(comm_of("/x/é123456789abcdef"), "é123456789abcd");
    }

    /// Rates of the last window: the calls made in it over its length.
    #[test]
    fn a_sampling_window_gives_rates() {
        let mut m =
            AgentMetrics { sampling: Some(Sampling { ratio: 0.1, ..Default::default() }), ..Default::default() };
        let launch = r#"{"type":"kernel","op":"launch","name":"cuLaunchKernel","pid":4,"ts":1}"#;
        m.window_started();
        for _ in 0..30 {
            m.add_value(&line(launch), 0);
        }
        m.window_ended(2.0);
        let s = m.sampling.as_ref().unwrap();
        assert_eq!(s.rates[&(4, String::new())].1["cuLaunchKernel"], 15.0);
        assert_eq!((s.windows, s.attached_s, s.attached), (1, 2.0, false));
        m.window_started();
        for _ in 0..5 {
            m.add_value(&line(launch), 0);
        }
        m.window_ended(1.0);
        let s = m.sampling.as_ref().unwrap();
        assert_eq!(s.rates[&(4, String::new())].0["cuLaunchKernel"], 5.0);
        assert_eq!(m.processes[&4].gpus[""].launches["cuLaunchKernel"], 35);
        // A window without calls: no rate.
        m.window_started();
        m.window_ended(1.0);
        assert!(m.sampling.as_ref().unwrap().rates.is_empty());
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
