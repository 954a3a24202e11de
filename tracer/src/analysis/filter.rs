//! The part of a trace a command looks at: `--pid` and `--from`/`--to`
//! (seconds since the trace's first event) or `--phase NAME` (the span of
//! that phase), for `report`, `gaps`, `export`; `plot` zooms with the same
//! window ([`window_ns`]).
//!
//! Rule: an event is kept when it starts inside `[from, to)` (and belongs to
//! one of the pids, NVML samples being GPU-wide are kept for any pid). The
//! phase a process was in at `from` goes on: its last phase marker before
//! `from` is kept, moved to `from`.
use super::model::{MarkerOp, Trace};

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Filter {
    /// Only these processes (empty: all).
    pub pids: Vec<u32>,
    /// Seconds since the first event.
    pub from_s: Option<f64>,
    pub to_s: Option<f64>,
    /// The span of the phase of this name (of the main process when several
    /// have it, else of the one process that has it); instead of from/to.
    pub phase: Option<String>,
}

impl Filter {
    pub fn is_empty(&self) -> bool {
        self.pids.is_empty() && self.from_s.is_none() && self.to_s.is_none() && self.phase.is_none()
    }
}

/// `[start, end)` of the phase `name` (module doc); the error lists the phases.
fn phase_window(t: &Trace, name: &str, pids: &[u32]) -> Result<(u64, u64), String> {
    let ph = super::phases::phases(t);
    let mut found: Vec<&super::phases::Phase> =
        ph.by_pid.values().flatten().filter(|p| p.name == name && (pids.is_empty() || pids.contains(&p.pid))).collect();
    if found.iter().any(|p| Some(p.pid) == ph.main_pid) {
        found.retain(|p| Some(p.pid) == ph.main_pid);
    }
    match found.as_slice() {
        [p] => Ok((p.start, p.end.max(p.start + 1))),
        [] => {
            let per_pid: Vec<String> = ph
                .by_pid
                .iter()
                .map(|(pid, v)| {
                    let mut names: Vec<&str> = v.iter().map(|p| p.name.as_str()).collect();
                    names.dedup();
                    format!("pid {pid}: {}", names.join(", "))
                })
                .collect();
            Err(format!("--phase {name}: no such phase in {} (its phases: {})", t.path, per_pid.join("; ")))
        }
        many => {
            Err(format!("--phase {name}: {} phases of that name; choose one with --pid or use --from/--to", many.len()))
        }
    }
}

/// `[from, to)` in ns for a trace running from `origin` to `end` (ns):
/// `from_s`/`to_s` are seconds since `origin` (negative counts as 0); an
/// empty window is an error that says how long the trace lasts.
pub fn window_ns(origin: u64, end: u64, from_s: Option<f64>, to_s: Option<f64>) -> Result<(u64, u64), String> {
    for (name, v) in [("--from", from_s), ("--to", to_s)] {
        if v.is_some_and(|v| !v.is_finite()) {
            return Err(format!("{name} must be a number of seconds"));
        }
    }
    let at = |s: f64| origin.saturating_add((s.max(0.0) * 1e9).round() as u64);
    let (a, b) = (from_s.map_or(origin, at), to_s.map_or(end, at));
    if b <= a {
        return Err(format!(
            "--from must be before --to (the trace lasts {:.3} s)",
            end.saturating_sub(origin) as f64 / 1e9
        ));
    }
    Ok((a, b))
}

/// Keeps the events `f` selects (module doc); the error is a misuse
/// (unknown pid, empty window).
pub fn apply(t: &mut Trace, f: &Filter) -> Result<(), String> {
    if f.is_empty() {
        return Ok(());
    }
    if let Some(&p) = f.pids.iter().find(|p| !t.pids().contains(p)) {
        let known: Vec<String> = t.pids().iter().map(u32::to_string).collect();
        return Err(format!("--pid {p}: no such process in {} (its processes: {})", t.path, known.join(", ")));
    }
    let (lo, hi) = t.span().unwrap_or((0, 0));
    // The window is half-open; without --to it includes the last event.
    let (a, b) = match &f.phase {
        Some(name) => phase_window(t, name, &f.pids)?,
        None => window_ns(lo, hi.saturating_add(1), f.from_s, f.to_s)?,
    };
    let pid_ok = |p: u32| f.pids.is_empty() || f.pids.contains(&p);
    let keep = |p: u32, ts: u64| pid_ok(p) && ts >= a && ts < b;
    // The phase each process is in at `a`: its last phase marker before it.
    let mut carried: Vec<super::model::Marker> = Vec::new();
    for m in t.markers.iter().filter(|m| m.op == MarkerOp::Phase && m.ts < a && pid_ok(m.pid)) {
        match carried.iter_mut().find(|c| c.pid == m.pid) {
            Some(c) if c.ts <= m.ts => *c = m.clone(),
            Some(_) => {}
            None => carried.push(m.clone()),
        }
    }
    t.calls.retain(|c| keep(c.pid, c.ts));
    t.procs.retain(|p| keep(p.pid, p.ts));
    t.ioctls.retain(|i| keep(i.pid, i.ts));
    t.gpu.retain(|g| keep(g.pid, g.start));
    // Sampling windows (--gpu-sample) clipped to the window: measured work
    // outside it is gone, so its span is no longer measured.
    t.gpu_windows.retain(|w| pid_ok(w.pid) && w.end > a && w.start < b);
    for w in &mut t.gpu_windows {
        w.start = w.start.max(a);
        w.end = w.end.min(b);
    }
    t.power.retain(|p| p.ts >= a && p.ts < b);
    // The trace's span is that of its other events: without --from (--to)
    // the scheduler intervals before (after) it stay.
    let open = f.phase.is_none();
    let sa = if open && f.from_s.is_none() { 0 } else { a };
    let sb = if open && f.to_s.is_none() { u64::MAX } else { b };
    t.sched.retain(pid_ok, sa, sb);
    t.markers.retain(|m| keep(m.pid, m.ts));
    for mut m in carried.into_iter().filter(|m| m.label != "end") {
        // Not when a phase of that process starts right at `a`.
        if !t.markers.iter().any(|k| k.pid == m.pid && k.op == MarkerOp::Phase && k.ts == a) {
            m.ts = a;
            t.markers.push(m);
        }
    }
    t.markers.sort_by_key(|m| m.ts);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::model::parse_str;

    fn call(ts: u64, pid: u32) -> String {
        format!(
            r#"{{"ts":{ts},"pid":{pid},"tid":{pid},"type":"init","op":"init","name":"cuInit","duration_us":1.0,"ret":0}}"#
        )
    }
    fn phase(ts: u64, pid: u32, l: &str) -> String {
        format!(r#"{{"ts":{ts},"pid":{pid},"tid":{pid},"type":"marker","op":"phase","name":"marker","label":"{l}"}}"#)
    }
    fn power(ts: u64) -> String {
        format!(
            r#"{{"ts":{ts},"pid":0,"tid":0,"type":"power","op":"sample","name":"nvml","gpu":0,"energy_mj":1,"power_mw":1}}"#
        )
    }

    fn trace() -> Trace {
        let s = 1_000_000_000u64;
        let l = [
            phase(0, 1, "load"),
            call(s, 1),
            call(s, 2),
            phase(2 * s, 1, "run"),
            power(2 * s),
            call(3 * s, 1),
            call(3 * s, 2),
            power(4 * s),
            call(5 * s, 1),
            call(6 * s, 2),
        ];
        parse_str("t.jsonl", &l.join("\n")).unwrap()
    }

    #[test]
    fn window_and_pids() {
        let mut t = trace();
        apply(&mut t, &Filter { pids: vec![1], from_s: Some(2.5), to_s: Some(5.0), phase: None }).unwrap();
        assert_eq!(t.calls.iter().map(|c| (c.ts / 1_000_000_000, c.pid)).collect::<Vec<_>>(), [(3, 1)]);
        assert_eq!(t.power.iter().map(|p| p.ts).collect::<Vec<_>>(), [4_000_000_000]);
        // The phase in effect at 2.5 s goes on from there.
        let m: Vec<_> = t.markers.iter().map(|m| (m.ts, m.label.as_str())).collect();
        assert_eq!(m, [(2_500_000_000, "run")]);

        let mut t = trace();
        apply(&mut t, &Filter { pids: vec![2], ..Default::default() }).unwrap();
        assert_eq!(t.calls.iter().map(|c| c.ts / 1_000_000_000).collect::<Vec<_>>(), [1, 3, 6]);
        assert!(t.markers.is_empty());
        assert_eq!(t.power.len(), 2);

        // Without --to the last event is in.
        let mut t = trace();
        apply(&mut t, &Filter { from_s: Some(6.0), ..Default::default() }).unwrap();
        assert_eq!(t.calls.len(), 1);
    }

    #[test]
    fn sampling_windows_clipped() {
        use crate::analysis::model::GpuWindow;
        let s = 1_000_000_000u64;
        let mut t = trace();
        t.gpu_windows = vec![
            GpuWindow { pid: 1, start: s, end: 3 * s },
            GpuWindow { pid: 2, start: 2 * s, end: 3 * s },
            GpuWindow { pid: 1, start: 4 * s, end: 6 * s },
            GpuWindow { pid: 1, start: 6 * s, end: 7 * s },
        ];
        apply(&mut t, &Filter { pids: vec![1], from_s: Some(2.5), to_s: Some(5.0), phase: None }).unwrap();
        let w: Vec<_> = t.gpu_windows.iter().map(|w| (w.pid, w.start, w.end)).collect();
        assert_eq!(w, [(1, 2_500_000_000, 3 * s), (1, 4 * s, 5 * s)]);
    }

    #[test]
    fn sched_intervals_overlapping_the_window() {
        let s = 1_000_000_000u64;
        let off = |pid: u32, a: u64, b: u64| {
            format!(
                r#"{{"ts":{a},"end_ts":{b},"pid":{pid},"tid":{pid},"type":"sched","op":"off_cpu","name":"read","state":"blocked"}}"#
            )
        };
        let mut l: Vec<String> = vec![call(0, 1), call(0, 2), call(6 * s, 1)];
        l.extend([off(1, s, 3 * s), off(1, 3 * s, 4 * s), off(1, 5 * s, 6 * s), off(2, 3 * s, 4 * s)]);
        l.push(format!(
            r#"{{"ts":{},"end_ts":{},"pid":0,"tid":0,"type":"sched","op":"lost","name":"lost","cpu":1,"records":2}}"#,
            s,
            2 * s
        ));
        l.push(format!(
            r#"{{"ts":{},"end_ts":{},"pid":0,"tid":0,"type":"sched","op":"lost","name":"lost","cpu":0,"records":3}}"#,
            4 * s,
            5 * s
        ));
        let mut t = parse_str("t.jsonl", &l.join("\n")).unwrap();
        apply(&mut t, &Filter { pids: vec![1], from_s: Some(2.5), to_s: Some(5.0), phase: None }).unwrap();
        let got: Vec<(u32, u64, u64)> =
            t.sched.off.values().flatten().map(|o| (o.tid, o.start / s, o.end / s)).collect();
        assert_eq!(got, [(1, 1, 3), (1, 3, 4)]);
        assert_eq!(t.sched.seen.keys().copied().collect::<Vec<_>>(), [1]);
        assert_eq!(t.sched.lost, [(4 * s, 5 * s)]);
        assert_eq!(t.sched.lost_lines.iter().map(|l| (l.cpu, l.records)).collect::<Vec<_>>(), [(Some(0), Some(3))]);
        // --pid alone: every interval of the process, also past its last call (6 s)
        l.push(off(1, 7 * s, 8 * s));
        let mut t = parse_str("t.jsonl", &l.join("\n")).unwrap();
        apply(&mut t, &Filter { pids: vec![1], ..Default::default() }).unwrap();
        assert_eq!(t.sched.off[&1].len(), 4);
        assert!(!t.sched.off.contains_key(&2));
    }

    #[test]
    fn phase_window() {
        let mut t = trace();
        apply(&mut t, &Filter { phase: Some("run".into()), ..Default::default() }).unwrap();
        // pid 1's "run": from 2 s to the end of the trace (no exit line); all pids' calls in it.
        assert_eq!(
            t.calls.iter().map(|c| (c.ts / 1_000_000_000, c.pid)).collect::<Vec<_>>(),
            [(3, 1), (3, 2), (5, 1), (6, 2)]
        );
        let m: Vec<_> = t.markers.iter().map(|m| (m.ts, m.label.as_str())).collect();
        assert_eq!(m, [(2_000_000_000, "run")]);
        let e = apply(&mut trace(), &Filter { phase: Some("warmup".into()), ..Default::default() }).unwrap_err();
        assert_eq!(e, "--phase warmup: no such phase in t.jsonl (its phases: pid 1: load, run; pid 2: startup)");
    }

    #[test]
    fn misuse_is_one_line() {
        let mut t = trace();
        let e = apply(&mut t, &Filter { pids: vec![7], ..Default::default() }).unwrap_err();
        assert_eq!(e, "--pid 7: no such process in t.jsonl (its processes: 1, 2)");
        let e = apply(&mut t, &Filter { from_s: Some(3.0), to_s: Some(2.0), ..Default::default() }).unwrap_err();
        assert_eq!(e, "--from must be before --to (the trace lasts 6.000 s)");
        assert_eq!(window_ns(100, 200, Some(-1.0), None), Ok((100, 200)));
        assert!(window_ns(100, 200, Some(f64::NAN), None).is_err());
    }
}
