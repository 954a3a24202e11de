//! Phases and iterations of each traced process.
//!
//! From marker lines when the process wrote any (docs/trace-format.md,
//! "Markers"): a `phase` marker starts a phase that lasts until the next phase
//! marker of the same pid, or the process's end (its exit line, else its last
//! event), or the end of the trace; a phase labelled `end` only closes the
//! previous one. An `iteration` marker starts an iteration that ends at the
//! next iteration or phase marker of that pid (or where the process ends).
//!
//! Without markers, phases are detected from the data, per process, by the
//! rule `tracer ioctls` uses too ([`detected_boundaries`]):
//! `startup` until the first device allocation or kernel launch, `loading`
//! until the first kernel launch, `warmup` until the last module/library load
//! (lazy loading, autotuning), `steady` after it. No iterations are detected.
use std::collections::BTreeMap;

use serde::Serialize;

use super::model::{Kind, MarkerOp, ProcOp, Trace};

pub const DETECTED: [&str; 4] = ["startup", "loading", "warmup", "steady"];

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PhaseSource {
    Marker,
    Detected,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Phase {
    pub pid: u32,
    pub name: String,
    pub start: u64,
    pub end: u64,
    pub source: PhaseSource,
}

impl Phase {
    pub fn dur(&self) -> u64 {
        self.end - self.start
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Iteration {
    pub pid: u32,
    pub label: String,
    pub start: u64,
    pub end: u64,
    pub tokens: Option<u64>,
}

#[derive(Clone, Debug, Default)]
pub struct Phases {
    /// Per process, in time order, non-overlapping.
    pub by_pid: BTreeMap<u32, Vec<Phase>>,
    pub iterations: Vec<Iteration>,
    /// The process with the most GPU work (launches, copies, sets): its
    /// phases are the trace's phases for GPU-wide figures.
    pub main_pid: Option<u32>,
}

impl Phases {
    /// The main process's phases (empty if none).
    pub fn main(&self) -> &[Phase] {
        self.main_pid.and_then(|p| self.by_pid.get(&p)).map_or(&[], |v| v.as_slice())
    }
    /// The phase of `pid` containing `ts` (start inclusive, end exclusive; the
    /// last phase includes its end).
    pub fn phase_at(&self, pid: u32, ts: u64) -> Option<&Phase> {
        let v = self.by_pid.get(&pid)?;
        v.iter().find(|p| p.start <= ts && ts < p.end).or_else(|| v.last().filter(|p| p.end == ts))
    }
    pub fn source(&self) -> Option<PhaseSource> {
        self.main().first().map(|p| p.source)
    }
}

/// The detected phases' spans of one process, clamped into [start, end]:
/// startup = [start, first alloc or launch), loading = [.., first launch),
/// warmup = [.., last module load], steady = (.., end].
pub fn detected_boundaries(
    start: u64,
    end: u64,
    first_alloc: Option<u64>,
    first_launch: Option<u64>,
    last_load: Option<u64>,
) -> [(&'static str, u64, u64); 4] {
    let b1 = first_alloc.into_iter().chain(first_launch).min().unwrap_or(end).clamp(start, end);
    let b2 = first_launch.unwrap_or(end).clamp(b1, end);
    let b3 = last_load.unwrap_or(b2).clamp(b2, end);
    [("startup", start, b1), ("loading", b1, b2), ("warmup", b2, b3), ("steady", b3, end)]
}

/// Start and end of each process: first event to its exit line (else its last event).
pub fn process_spans(t: &Trace) -> BTreeMap<u32, (u64, u64)> {
    let mut m: BTreeMap<u32, (u64, u64)> = BTreeMap::new();
    let mut add = |pid: u32, a: u64, b: u64| {
        if pid == 0 {
            return;
        }
        let e = m.entry(pid).or_insert((a, b));
        e.0 = e.0.min(a);
        e.1 = e.1.max(b);
    };
    for c in &t.calls {
        add(c.pid, c.ts, c.end());
    }
    for p in &t.procs {
        add(p.pid, p.ts, p.ts);
    }
    for i in &t.ioctls {
        add(i.pid, i.ts, i.ts + i.dur);
    }
    for mk in &t.markers {
        add(mk.pid, mk.ts, mk.ts);
    }
    for g in &t.gpu {
        add(g.pid, g.start, g.end);
    }
    for p in &t.procs {
        if p.op == ProcOp::Exit
            && let Some(e) = m.get_mut(&p.pid)
        {
            e.1 = e.1.max(p.ts);
        }
    }
    m
}

pub fn phases(t: &Trace) -> Phases {
    let spans = process_spans(t);
    let trace_end = t.span().map_or(0, |s| s.1);
    let mut out = Phases::default();
    let mut work: BTreeMap<u32, u64> = BTreeMap::new();
    for c in &t.calls {
        if c.kind.is_gpu_work() {
            *work.entry(c.pid).or_default() += 1;
        }
    }
    let header_pid = t.header.as_ref().and_then(|h| h["pid"].as_u64()).map(|p| p as u32);
    out.main_pid = work
        .iter()
        .max_by_key(|(p, n)| (**n, Some(**p) == header_pid, std::cmp::Reverse(**p)))
        .map(|(p, _)| *p)
        .or(header_pid.filter(|p| spans.contains_key(p)))
        .or_else(|| spans.keys().next().copied());

    let mut markers: BTreeMap<u32, Vec<&super::model::Marker>> = BTreeMap::new();
    for m in &t.markers {
        markers.entry(m.pid).or_default().push(m);
    }
    for (&pid, &(pstart, pend0)) in &spans {
        let pend =
            if t.procs.iter().any(|p| p.pid == pid && p.op == ProcOp::Exit) { pend0 } else { trace_end.max(pend0) };
        let ms = markers.get(&pid).map_or(&[][..], |v| v.as_slice());
        if ms.iter().any(|m| m.op == MarkerOp::Phase) {
            let ph: Vec<_> = ms.iter().filter(|m| m.op == MarkerOp::Phase).collect();
            let mut v = Vec::new();
            for (i, m) in ph.iter().enumerate() {
                let end = ph.get(i + 1).map_or(pend, |n| n.ts).max(m.ts);
                if m.label != "end" {
                    v.push(Phase { pid, name: m.label.clone(), start: m.ts, end, source: PhaseSource::Marker });
                }
            }
            out.by_pid.insert(pid, v);
        } else {
            let mut first_alloc = None;
            let mut first_launch = None;
            let mut last_load = None;
            for c in t.calls.iter().filter(|c| c.pid == pid) {
                match c.kind {
                    Kind::Alloc => first_alloc = first_alloc.or(Some(c.ts)),
                    Kind::Launch | Kind::GraphLaunch => first_launch = first_launch.or(Some(c.ts)),
                    Kind::Module => {
                        let n = t.name(c.func);
                        if n.contains("Load") && !n.contains("Unload") {
                            last_load = Some(c.ts);
                        }
                    }
                    _ => {}
                }
            }
            if first_alloc.is_none() && first_launch.is_none() && last_load.is_none() {
                // No CUDA work at all: one phase covering the process.
                out.by_pid.insert(
                    pid,
                    vec![Phase {
                        pid,
                        name: "startup".into(),
                        start: pstart,
                        end: pend,
                        source: PhaseSource::Detected,
                    }],
                );
                continue;
            }
            let v = detected_boundaries(pstart, pend, first_alloc, first_launch, last_load)
                .into_iter()
                .filter(|(_, a, b)| b > a)
                .map(|(n, a, b)| Phase { pid, name: n.into(), start: a, end: b, source: PhaseSource::Detected })
                .collect();
            out.by_pid.insert(pid, v);
        }
        let bounds: Vec<u64> =
            ms.iter().filter(|m| matches!(m.op, MarkerOp::Phase | MarkerOp::Iteration)).map(|m| m.ts).collect();
        for m in ms.iter().filter(|m| m.op == MarkerOp::Iteration) {
            let end = bounds.iter().copied().find(|&b| b > m.ts).unwrap_or(pend);
            out.iterations.push(Iteration { pid, label: m.label.clone(), start: m.ts, end, tokens: m.tokens });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::model::parse_str;

    fn call(ts: u64, ty: &str, op: &str, name: &str) -> String {
        format!(r#"{{"ts":{ts},"pid":5,"tid":5,"type":"{ty}","op":"{op}","name":"{name}","duration_us":1.0,"ret":0}}"#)
    }

    #[test]
    fn detected_from_data() {
        let lines = [
            r#"{"ts":1000,"pid":5,"tid":5,"type":"process","op":"exec","name":"process","filename":"/bin/p"}"#
                .to_string(),
            call(2000, "init", "init", "cuInit"),
            call(5000, "memory", "alloc", "cuMemAlloc_v2"),
            call(6000, "module", "library_load_data", "cuLibraryLoadData"),
            call(7000, "kernel", "launch", "cuLaunchKernel"),
            call(9000, "module", "library_load_data", "cuLibraryLoadData"),
            call(9500, "module", "library_unload", "cuLibraryUnload"),
            call(12000, "kernel", "launch", "cuLaunchKernel"),
            r#"{"ts":20000,"pid":5,"tid":5,"type":"process","op":"exit","name":"process"}"#.to_string(),
        ];
        let t = parse_str("t", &lines.join("\n")).unwrap();
        let p = phases(&t);
        assert_eq!(p.main_pid, Some(5));
        let got: Vec<(&str, u64, u64)> = p.main().iter().map(|p| (p.name.as_str(), p.start, p.end)).collect();
        assert_eq!(
            got,
            [("startup", 1000, 5000), ("loading", 5000, 7000), ("warmup", 7000, 9000), ("steady", 9000, 20000)]
        );
        assert_eq!(p.phase_at(5, 8999).unwrap().name, "warmup");
        assert_eq!(p.phase_at(5, 20000).unwrap().name, "steady");
        assert_eq!(p.source(), Some(PhaseSource::Detected));
        assert!(p.iterations.is_empty());
    }

    #[test]
    fn from_markers_with_iterations_and_end() {
        let mk = |ts: u64, op: &str, label: &str, extra: &str| {
            format!(
                r#"{{"ts":{ts},"pid":5,"tid":0,"type":"marker","op":"{op}","name":"marker","label":"{label}"{extra}}}"#
            )
        };
        let lines = [
            mk(100, "phase", "import", ""),
            mk(300, "phase", "load", ""),
            call(350, "kernel", "launch", "cuLaunchKernel"),
            mk(400, "phase", "inference", ""),
            mk(400, "iteration", "0", r#","tokens":20"#),
            mk(600, "iteration", "1", r#","tokens":10"#),
            mk(700, "mark", "hello", ""),
            mk(900, "phase", "end", ""),
            call(1000, "init", "init", "cuInit"),
        ];
        let t = parse_str("t", &lines.join("\n")).unwrap();
        let p = phases(&t);
        let got: Vec<(&str, u64, u64)> = p.main().iter().map(|p| (p.name.as_str(), p.start, p.end)).collect();
        assert_eq!(got, [("import", 100, 300), ("load", 300, 400), ("inference", 400, 900)]);
        assert_eq!(p.source(), Some(PhaseSource::Marker));
        let it: Vec<(&str, u64, u64, Option<u64>)> =
            p.iterations.iter().map(|i| (i.label.as_str(), i.start, i.end, i.tokens)).collect();
        assert_eq!(it, [("0", 400, 600, Some(20)), ("1", 600, 900, Some(10))]);
    }

    #[test]
    fn boundaries_clamp() {
        assert_eq!(
            detected_boundaries(10, 100, None, None, None),
            [("startup", 10, 100), ("loading", 100, 100), ("warmup", 100, 100), ("steady", 100, 100)]
        );
        assert_eq!(
            detected_boundaries(10, 100, Some(5), Some(50), Some(200)),
            [("startup", 10, 10), ("loading", 10, 50), ("warmup", 50, 100), ("steady", 100, 100)]
        );
    }
}
