//! A sampled recording's check of its own model: in each window where CUPTI measured the
//! GPU (`gpu_window` lines), the idle share the model gives when it does not use that
//! window's measurements, against the idle share measured there. Both are of the same
//! process at the same moment, so the check is free of the bias of comparing with another
//! run (a run under full CUPTI is slower on the host, hence idler on the GPU).
//!
//! The model is the queue simulation ([`timeline::inferred`]) with the durations the rest of
//! the run was timed with, the durations library's first (measured in other runs: out of
//! sample) and this run's own calibration for the kernels the library lacks (medians of
//! these very launches: in sample), as [`WindowCheck::model`] says. Per window it is compared
//! over the part the measurement covers: from the first measured start to the last measured
//! end inside it (work launched before CUPTI attached has no record).
use super::durations::Durations;
use super::model::Trace;
use super::stats::union;
pub use super::timeline::WindowCheck;
use super::timeline::{self, Timeline};

/// The check of `t`'s sampled model (`measured`: its measured timeline; `own`: its own
/// calibration; `library`: the durations library's entries, if any). None without a window
/// that measured work.
pub fn check(t: &Trace, measured: &Timeline, own: &Durations, library: Option<&Durations>) -> Option<WindowCheck> {
    let (d, model) = match library {
        Some(l) => (l.clone().with_supplement(own.clone()), "durations library"),
        None => (own.clone(), "this run's own calibration"),
    };
    let inferred = timeline::inferred(t, &d);
    let (mut span, mut busy_m, mut busy_i, mut per) = (0u64, 0u64, 0u64, Vec::new());
    for w in &t.gpu_windows {
        let of = |tl: &Timeline| -> Vec<(u64, u64)> {
            tl.streams
                .iter()
                .filter(|s| s.key.pid == w.pid)
                .flat_map(|s| s.intervals.iter())
                .filter(|i| i.end > w.start && i.start < w.end)
                .map(|i| (i.start.max(w.start), i.end.min(w.end)))
                .collect()
        };
        // unions are sorted and disjoint: the last one ends last
        let m = union(of(measured));
        let (Some(&(first, _)), Some(&(_, last))) = (m.first(), m.last()) else { continue };
        if last <= first {
            continue;
        }
        let busy = |u: &[(u64, u64)]| -> u64 { u.iter().map(|&(a, b)| b.min(last).saturating_sub(a.max(first))).sum() };
        let (bm, bi) = (busy(&m), busy(&union(of(&inferred))));
        let len = last - first;
        span += len;
        busy_m += bm;
        busy_i += bi;
        per.push((bm as f64 - bi as f64).abs() * 100.0 / len as f64);
    }
    if span == 0 {
        return None;
    }
    per.sort_by(f64::total_cmp);
    let idle = |b: u64| 100.0 - b as f64 * 100.0 / span as f64;
    let (mi, ii) = (idle(busy_m), idle(busy_i));
    Some(WindowCheck {
        windows: per.len() as u64,
        span_ns: span,
        measured_idle_pct: mi,
        model_idle_pct: ii,
        points: ii - mi,
        median_abs_points: per[(per.len() - 1) / 2],
        model,
    })
}

/// "; checked in its N measured windows (TIME): the model without them (…) gives idle A % where
/// B % was measured (±p points; q per window, median)", or "".
pub fn phrase(c: Option<&WindowCheck>) -> String {
    let Some(c) = c else { return String::new() };
    format!(
        "; checked in its {} measured windows ({}): the model without them (the {}) gives idle {:.1} % where {:.1} % \
         was measured ({:+.1} points; {:.1} per window, median)",
        c.windows,
        super::stats::fmt_ns(c.span_ns),
        c.model,
        c.model_idle_pct,
        c.measured_idle_pct,
        c.points,
        c.median_abs_points
    )
}
