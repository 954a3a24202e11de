//! `tracer plot --json`: the figures' numbers instead of their pictures:
//! per row the calls or GPU intervals in the window (instants counted apart),
//! each phase's time and energy (the rule of `tracer report`), the gaps.
use serde_json::{Value, json};

use super::input::{Kind, PlotData, Slice, Track};

/// Whether a slice is drawn in the window `[t0, t1)`: an instant when it
/// falls inside, an interval when it overlaps it.
fn in_window(s: &Slice, t0: u64, t1: u64) -> bool {
    if s.end_ns == s.start_ns { s.start_ns >= t0 && s.start_ns < t1 } else { s.end_ns > t0 && s.start_ns < t1 }
}

fn row(t: &Track, t0: u64, t1: u64, what: &str) -> Value {
    let shown: Vec<&Slice> = t.slices.iter().filter(|s| in_window(s, t0, t1)).collect();
    let mut by_kind = serde_json::Map::new();
    for k in Kind::ALL {
        let n = shown.iter().filter(|s| s.kind == k).count();
        if n > 0 {
            by_kind.insert(k.name().to_string(), json!(n));
        }
    }
    let covered = |bound: bool| -> u64 {
        shown
            .iter()
            .filter(|s| (s.kind == Kind::GpuBound) == bound)
            .map(|s| s.end_ns.min(t1).saturating_sub(s.start_ns.max(t0)))
            .sum()
    };
    // The bound's stretches are not busy time (issue 16): apart, and a row
    // of the bound alone has no busy figure.
    let bound_ns = covered(true);
    let only_bound = !shown.is_empty() && shown.iter().all(|s| s.kind == Kind::GpuBound);
    let mut v = json!({
        "label": t.label,
        what: shown.len(),
        "instants": shown.iter().filter(|s| s.end_ns == s.start_ns).count(),
        "busy_ns": if only_bound { Value::Null } else { json!(covered(false)) },
        "by_kind": by_kind,
    });
    if bound_ns > 0 {
        v["possibly_busy_ns"] = json!(bound_ns);
        v["idle_basis"] = json!("lower_bound");
    }
    v
}

/// The figures of `d` as JSON (the timeline's rows counted in its window).
pub fn figures(d: &PlotData) -> Value {
    let tl = &d.timeline;
    let (t0, t1) = (tl.t0_ns, tl.t1_ns);
    let phases: Vec<Value> = tl
        .phases
        .iter()
        .zip(&d.phases.bars)
        .map(|(p, b)| {
            json!({"label": p.label, "start_ns": p.start_ns, "end_ns": p.end_ns, "seconds": b.seconds,
                   "joules": b.joules, "energy_uncertain": b.uncertain})
        })
        .collect();
    let g = &d.gaps.gaps_ns;
    json!({
        "timeline": {
            "title": tl.title,
            "notes": tl.notes,
            "origin_ns": tl.origin_ns,
            "window_ns": [t0, t1],
            "threads": tl.threads.iter().map(|t| row(t, t0, t1, "calls")).collect::<Vec<_>>(),
            "gpu": tl.gpu.iter().map(|t| row(t, t0, t1, "intervals")).collect::<Vec<_>>(),
            "marks": tl.marks.iter().filter(|m| m.ts_ns >= t0 && m.ts_ns < t1).count(),
            "power": tl.power.iter().map(|p| json!({"label": p.label,
                "samples": p.samples.iter().filter(|s| s.0 >= t0 && s.0 < t1).count()})).collect::<Vec<_>>(),
        },
        "gaps": {
            "title": d.gaps.title,
            "notes": d.gaps.notes,
            "count": g.len(),
            "total_ns": g.iter().sum::<u64>(),
            "max_ns": g.iter().max(),
        },
        "phases": {"title": d.phases.title, "notes": d.phases.notes, "bars": phases},
    })
}
