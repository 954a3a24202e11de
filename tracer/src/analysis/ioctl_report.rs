//! `tracer ioctls TRACE`: what the CUDA runtime asks of the NVIDIA kernel
//! driver. Pure: built from trace lines.
//!
//! Phases, per process, when the program marks none: `startup` (until the
//! first device allocation), `loading` (until the first kernel launch),
//! `warmup` (until the last module/library load: lazy loading, autotuning),
//! `steady` (the rest): the rule of `crate::analysis::phases`, which also
//! reads phase markers.
use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::{Value, json};

use super::inert;

pub const PHASES: [&str; 4] = crate::analysis::phases::DETECTED;

#[derive(Default, Debug, Clone)]
pub struct Stat {
    pub durations_us: Vec<f64>,
    pub failed: u64,
}

impl Stat {
    fn add(&mut self, d: f64, failed: bool) {
        self.durations_us.push(d);
        self.failed += failed as u64;
    }
    pub fn count(&self) -> usize {
        self.durations_us.len()
    }
    pub fn total_us(&self) -> f64 {
        self.durations_us.iter().sum()
    }
    /// Nearest-rank percentile.
    pub fn pct(&self, p: f64) -> f64 {
        let mut v = self.durations_us.clone();
        if v.is_empty() {
            return 0.0;
        }
        v.sort_by(|a, b| a.total_cmp(b));
        let rank = ((p / 100.0) * v.len() as f64).ceil().max(1.0) as usize;
        v[rank.min(v.len()) - 1]
    }
    fn json(&self) -> Value {
        json!({ "count": self.count(), "total_us": round3(self.total_us()), "p50_us": round3(self.pct(50.0)),
                "p99_us": round3(self.pct(99.0)), "failed": self.failed })
    }
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// Per-process boundaries between the phases (timestamps, ns).
#[derive(Default, Debug, Clone, Copy)]
struct Marks {
    first_alloc: Option<u64>,
    first_launch: Option<u64>,
    last_load: Option<u64>,
}

#[derive(Default, Debug)]
pub struct IoctlReport {
    pub total: u64,
    pub undecoded: u64,
    pub by_escape: BTreeMap<String, Stat>,
    pub by_control: BTreeMap<String, Stat>,
    pub by_class: BTreeMap<String, Stat>,
    pub by_cuda_call: BTreeMap<String, Stat>,
    /// phase -> escape (or control command) -> stat
    pub by_phase: BTreeMap<&'static str, BTreeMap<String, Stat>>,
    pub phase_span_ns: BTreeMap<&'static str, u64>,
    pub errors: BTreeMap<String, u64>,
    pub launches_by_phase: BTreeMap<&'static str, u64>,
    /// ioctls issued inside a kernel-launch call, per phase
    pub launch_ioctls_by_phase: BTreeMap<&'static str, u64>,
    pub file_ops: BTreeMap<String, u64>,
    pub ioctl_path: Option<String>,
}

/// The driver wrote a non-OK NV status into the ioctl's struct.
fn nv_status_failed(v: &Value) -> bool {
    v["status"].as_u64().is_some_and(|s| s != 0)
}

/// An ioctl line failed: a non-OK NV status or a syscall error.
pub fn failed(v: &Value) -> bool {
    nv_status_failed(v) || v["errno"].is_string()
}

fn key(v: &Value) -> String {
    let name = v["name"].as_str().unwrap_or("UNKNOWN");
    match name {
        "RM_CONTROL" => format!(
            "RM_CONTROL {}",
            v["fields"]["cmd_name"]
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| v["fields"]["cmd"].as_str().unwrap_or("?").to_string())
        ),
        "RM_ALLOC" => format!(
            "RM_ALLOC {}",
            v["fields"]["class_name"]
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| v["fields"]["class"].as_str().unwrap_or("?").to_string())
        ),
        "UNKNOWN" => {
            format!("UNKNOWN nr={} on {}", v["nr"].as_str().unwrap_or("?"), v["device"].as_str().unwrap_or("?"))
        }
        n => n.to_string(),
    }
}

/// The first pass over a trace: per process, its time span and the
/// boundaries of its phases; the header's `ioctl_path`. Its size depends on
/// the number of processes, not of lines.
#[derive(Default, Debug)]
pub struct PhaseScan {
    marks: BTreeMap<u64, Marks>,
    first_ts: BTreeMap<u64, u64>,
    last_ts: BTreeMap<u64, u64>,
    ioctl_path: Option<String>,
}

impl PhaseScan {
    /// One line, any type.
    pub fn add(&mut self, v: &Value) {
        if v["type"] == "header" {
            self.ioctl_path = v["ioctl_path"].as_str().map(str::to_string);
        }
        let (Some(pid), Some(ts)) = (v["pid"].as_u64(), v["ts"].as_u64()) else { return };
        self.add_record(pid, ts, v["type"].as_str().unwrap_or(""), v["op"].as_str().unwrap_or(""));
    }

    /// One line other than the header, by its `pid`, `ts`, `type` and `op`.
    pub fn add_record(&mut self, pid: u64, ts: u64, ty: &str, op: &str) {
        let f = self.first_ts.entry(pid).or_insert(ts);
        *f = (*f).min(ts);
        let l = self.last_ts.entry(pid).or_insert(ts);
        *l = (*l).max(ts);
        let m = self.marks.entry(pid).or_default();
        match (ty, op) {
            ("memory", "alloc") => m.first_alloc = Some(m.first_alloc.map_or(ts, |x| x.min(ts))),
            ("kernel", "launch") | ("graph", "graph_launch") => {
                m.first_launch = Some(m.first_launch.map_or(ts, |x| x.min(ts)))
            }
            ("module", o) if o.contains("load") && !o.contains("unload") => {
                m.last_load = Some(m.last_load.map_or(ts, |x| x.max(ts)))
            }
            _ => {}
        }
    }

    fn phase_of(&self, pid: u64, ts: u64) -> &'static str {
        let m = self.marks.get(&pid).copied().unwrap_or_default();
        if m.first_alloc.is_none_or(|a| ts < a) && m.first_launch.is_none_or(|l| ts < l) {
            "startup"
        } else if m.first_launch.is_none_or(|l| ts < l) {
            "loading"
        } else if m.last_load.is_some_and(|l| ts <= l) {
            "warmup"
        } else {
            "steady"
        }
    }
}

impl IoctlReport {
    /// Builds the report from all lines of a trace (two passes over `lines`).
    pub fn build(lines: &[Value]) -> Self {
        let mut scan = PhaseScan::default();
        lines.iter().for_each(|v| scan.add(v));
        let mut r = IoctlReport::start(&scan);
        lines.iter().for_each(|v| r.add(v, &scan));
        r
    }

    /// The report before the second pass: the phases' spans.
    pub fn start(scan: &PhaseScan) -> Self {
        let mut r = IoctlReport { ioctl_path: scan.ioctl_path.clone(), ..Default::default() };
        for (&pid, &start) in &scan.first_ts {
            let end = scan.last_ts[&pid];
            let m = scan.marks.get(&pid).copied().unwrap_or_default();
            let spans =
                crate::analysis::phases::detected_boundaries(start, end, m.first_alloc, m.first_launch, m.last_load);
            for (ph, a, b) in spans {
                let span = r.phase_span_ns.entry(ph).or_default();
                *span = span.saturating_add(b - a);
            }
        }
        r
    }

    /// The second pass: one line (only `kernel`, `nvidia_fd` and `ioctl`
    /// lines count), its phase from `scan`.
    pub fn add(&mut self, v: &Value, scan: &PhaseScan) {
        let r = self;
        let ty = v["type"].as_str().unwrap_or("");
        let (Some(pid), Some(ts)) = (v["pid"].as_u64(), v["ts"].as_u64()) else { return };
        let phase = scan.phase_of(pid, ts);
        if ty == "kernel" && v["op"] == "launch" {
            *r.launches_by_phase.entry(phase).or_default() += 1;
        }
        if ty == "nvidia_fd" {
            *r.file_ops.entry(v["op"].as_str().unwrap_or("?").to_string()).or_default() += 1;
        }
        if ty != "ioctl" {
            return;
        }
        r.total += 1;
        if v["known"] == false {
            r.undecoded += 1;
        }
        let d = v["duration_us"].as_f64().unwrap_or(0.0);
        let status_failed = nv_status_failed(v);
        let failed = failed(v);
        let k = key(v);
        let esc = v["name"].as_str().unwrap_or("UNKNOWN").to_string();
        r.by_escape.entry(esc.clone()).or_default().add(d, failed);
        if esc == "RM_CONTROL" {
            r.by_control.entry(k.clone()).or_default().add(d, failed);
        }
        if let Some(c) = v["fields"]["class_name"].as_str().or(v["fields"]["class"].as_str()) {
            r.by_class.entry(c.to_string()).or_default().add(d, failed);
        }
        let call = v["cuda_call"].as_str().unwrap_or("none").to_string();
        if call.starts_with("cuLaunch") {
            *r.launch_ioctls_by_phase.entry(phase).or_default() += 1;
        }
        r.by_cuda_call.entry(call).or_default().add(d, failed);
        r.by_phase.entry(phase).or_default().entry(k.clone()).or_default().add(d, failed);
        if failed {
            let what = match (v["status_name"].as_str(), v["errno"].as_str()) {
                (Some(s), _) if status_failed => s.to_string(),
                (_, Some(e)) => e.to_string(),
                _ => "failed".to_string(),
            };
            *r.errors.entry(format!("{k}: {what}")).or_default() += 1;
        }
    }

    pub fn to_json(&self) -> Value {
        let map = |m: &BTreeMap<String, Stat>| -> Value {
            let mut v: Vec<(&String, &Stat)> = m.iter().collect();
            v.sort_by(|a, b| b.1.count().cmp(&a.1.count()).then(a.0.cmp(b.0)));
            Value::Array(
                v.into_iter()
                    .map(|(k, s)| {
                        let mut j = s.json();
                        j["name"] = json!(k);
                        j
                    })
                    .collect(),
            )
        };
        let phases: serde_json::Map<String, Value> = PHASES
            .iter()
            .map(|p| {
                let m = self.by_phase.get(p).cloned().unwrap_or_default();
                let n: usize = m.values().map(Stat::count).sum();
                let span = self.phase_span_ns.get(p).copied().unwrap_or(0);
                (
                    p.to_string(),
                    json!({
                        "ioctls": n,
                        "duration_s": span as f64 / 1e9,
                        "ioctls_per_s": if span > 0 { n as f64 / (span as f64 / 1e9) } else { 0.0 },
                        "launches": self.launches_by_phase.get(p).copied().unwrap_or(0),
                        "ioctls_inside_launch_calls": self.launch_ioctls_by_phase.get(p).copied().unwrap_or(0),
                        "by_request": map(&m),
                    }),
                )
            })
            .collect();
        json!({
            "ioctl_path": self.ioctl_path,
            "total": self.total,
            "undecoded": self.undecoded,
            "decoded_share": if self.total > 0 { 1.0 - self.undecoded as f64 / self.total as f64 } else { 1.0 },
            "by_escape": map(&self.by_escape),
            "by_control_command": map(&self.by_control),
            "by_class": map(&self.by_class),
            "by_cuda_call": map(&self.by_cuda_call),
            "phases": phases,
            "errors": self.errors,
            "device_file_ops": self.file_ops,
        })
    }

    pub fn render(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "{} ioctls on NVIDIA devices, {} decoded to a name ({:.1}%), captured via {}",
            self.total,
            self.total - self.undecoded,
            if self.total > 0 { 100.0 * (self.total - self.undecoded) as f64 / self.total as f64 } else { 100.0 },
            inert::name(self.ioctl_path.as_deref().unwrap_or("?"))
        );
        let table = |s: &mut String, title: &str, m: &BTreeMap<String, Stat>, n: usize| {
            if m.is_empty() {
                return;
            }
            let _ = writeln!(
                s,
                "\n{title:<62} {:>8} {:>11} {:>9} {:>9} {:>7}",
                "count", "total ms", "p50 us", "p99 us", "failed"
            );
            let mut v: Vec<_> = m.iter().collect();
            v.sort_by(|a, b| b.1.count().cmp(&a.1.count()).then(a.0.cmp(b.0)));
            for (k, st) in v.iter().take(n) {
                let k: String = inert::escape(k).chars().take(62).collect();
                let _ = writeln!(
                    s,
                    "{k:<62} {:>8} {:>11.3} {:>9.1} {:>9.1} {:>7}",
                    st.count(),
                    st.total_us() / 1000.0,
                    st.pct(50.0),
                    st.pct(99.0),
                    st.failed
                );
            }
            if v.len() > n {
                let _ = writeln!(s, "… {} more", v.len() - n);
            }
        };
        table(&mut s, "by escape", &self.by_escape, 30);
        table(&mut s, "by RM control command", &self.by_control, 25);
        table(&mut s, "by RM class (RM_ALLOC, ALLOC_MEMORY)", &self.by_class, 20);
        table(&mut s, "by the CUDA call in progress on the thread", &self.by_cuda_call, 20);
        let _ = writeln!(
            s,
            "\n{:<10} {:>10} {:>8} {:>10} {:>10} {:>22}",
            "phase", "seconds", "ioctls", "per s", "launches", "ioctls inside launches"
        );
        for p in PHASES {
            let n: usize = self.by_phase.get(p).map_or(0, |m| m.values().map(Stat::count).sum());
            let span = self.phase_span_ns.get(p).copied().unwrap_or(0) as f64 / 1e9;
            let _ = writeln!(
                s,
                "{p:<10} {span:>10.3} {n:>8} {:>10.1} {:>10} {:>22}",
                if span > 0.0 { n as f64 / span } else { 0.0 },
                self.launches_by_phase.get(p).copied().unwrap_or(0),
                self.launch_ioctls_by_phase.get(p).copied().unwrap_or(0)
            );
        }
        for p in PHASES {
            if let Some(m) = self.by_phase.get(p) {
                table(&mut s, &format!("{p}: by request"), m, 10);
            }
        }
        if !self.errors.is_empty() {
            let _ = writeln!(s, "\nfailed ioctls:");
            for (e, n) in &self.errors {
                let _ = writeln!(s, "  {n:>6}  {}", inert::name(e));
            }
        }
        inert::text(&s).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ioctl(ts: u64, name: &str, extra: Value) -> Value {
        let mut v = json!({"ts": ts, "pid": 1, "tid": 1, "type": "ioctl", "op": "ioctl", "name": name, "known": name != "UNKNOWN",
                           "duration_us": 2.0, "ret": 0, "status": 0, "status_name": "NV_OK", "cuda_call": null, "fields": {}, "nr": "0x77", "device": "/dev/nvidiactl"});
        if let Value::Object(e) = extra {
            for (k, x) in e {
                v[k] = x;
            }
        }
        v
    }

    #[test]
    fn phases_tables_and_errors() {
        let lines = vec![
            json!({"type": "header", "ioctl_path": "tracepoint"}),
            ioctl(10, "CARD_INFO", json!({})),
            json!({"ts": 20, "pid": 1, "type": "memory", "op": "alloc"}),
            ioctl(
                25,
                "RM_ALLOC",
                json!({"cuda_call": "cuMemAlloc_v2", "fields": {"class": "0x40", "class_name": "NV01_MEMORY_LOCAL_USER"}}),
            ),
            json!({"ts": 30, "pid": 1, "type": "kernel", "op": "launch"}),
            json!({"ts": 40, "pid": 1, "type": "module", "op": "library_load_data"}),
            ioctl(
                45,
                "RM_CONTROL",
                json!({"fields": {"cmd": "0x20800102", "cmd_name": "NV2080_CTRL_CMD_GPU_GET_INFO_V2"}, "status": 0x56, "status_name": "NV_ERR_NOT_SUPPORTED", "duration_us": 10.0}),
            ),
            json!({"ts": 50, "pid": 1, "type": "kernel", "op": "launch"}),
            ioctl(60, "UNKNOWN", json!({"cuda_call": "cuLaunchKernel", "ret": -25, "errno": "ENOTTY"})),
        ];
        let r = IoctlReport::build(&lines);
        assert_eq!(r.total, 4);
        assert_eq!(r.undecoded, 1);
        assert_eq!(r.by_phase["startup"].keys().collect::<Vec<_>>(), ["CARD_INFO"]);
        assert_eq!(r.by_phase["loading"].keys().collect::<Vec<_>>(), ["RM_ALLOC NV01_MEMORY_LOCAL_USER"]);
        assert!(!r.by_phase.contains_key("warmup"));
        assert_eq!(r.by_phase["steady"].len(), 2);
        assert!(!r.launches_by_phase.contains_key("loading"));
        assert_eq!(r.launches_by_phase["warmup"], 1);
        assert_eq!(r.launches_by_phase["steady"], 1);
        assert_eq!(r.launch_ioctls_by_phase["steady"], 1);
        assert_eq!(r.by_cuda_call["cuMemAlloc_v2"].count(), 1);
        assert_eq!(r.by_class["NV01_MEMORY_LOCAL_USER"].count(), 1);
        assert_eq!(r.errors["RM_CONTROL NV2080_CTRL_CMD_GPU_GET_INFO_V2: NV_ERR_NOT_SUPPORTED"], 1);
        assert_eq!(r.errors["UNKNOWN nr=0x77 on /dev/nvidiactl: ENOTTY"], 1);
        assert_eq!(r.phase_span_ns["startup"], 10);
        assert_eq!(r.phase_span_ns["steady"], 20);
        let j = r.to_json();
        assert_eq!(j["decoded_share"], 0.75);
        assert_eq!(j["phases"]["steady"]["ioctls_inside_launch_calls"], 1);
        let t = r.render();
        assert!(t.contains("4 ioctls on NVIDIA devices, 3 decoded to a name (75.0%), captured via tracepoint"), "{t}");
    }

    #[test]
    fn percentiles() {
        let s = Stat { durations_us: (1..=100).map(|x| x as f64).collect(), failed: 0 };
        assert_eq!(s.pct(50.0), 50.0);
        assert_eq!(s.pct(99.0), 99.0);
        assert_eq!(Stat::default().pct(50.0), 0.0);
    }
}
