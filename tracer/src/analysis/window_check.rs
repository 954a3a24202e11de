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

/// Measured records a window needs to be checked: a window that met one kernel or copy spans
/// that record only, 0 % idle by construction (the default's window at cuInit often does).
pub const MIN_RECORDS: usize = 2;

/// The check of `t`'s sampled model (`measured`: its measured timeline; `own`: its own
/// calibration; `library`: the durations library's entries, if any). None without a window
/// that measured work.
pub fn check(t: &Trace, measured: &Timeline, own: &Durations, library: Option<&Durations>) -> Option<WindowCheck> {
    let (d, model) = match library {
        Some(l) => (l.clone().with_supplement(own.clone()), "durations library"),
        None => (own.clone(), "this run's own calibration"),
    };
    let inferred = timeline::inferred(t, &d);
    let (mut span, mut busy_m, mut busy_i, mut per, mut too_few) = (0u64, 0u64, 0u64, Vec::new(), 0u64);
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
        let records = of(measured);
        if records.is_empty() {
            continue;
        }
        if records.len() < MIN_RECORDS {
            too_few += 1;
            continue;
        }
        // unions are sorted and disjoint: the last one ends last
        let m = union(records);
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
        return (too_few > 0).then_some(WindowCheck {
            windows: 0,
            span_ns: 0,
            windows_too_few_records: too_few,
            measured_idle_pct: f64::NAN,
            model_idle_pct: f64::NAN,
            points: f64::NAN,
            median_abs_points: f64::NAN,
            model,
        });
    }
    per.sort_by(f64::total_cmp);
    let idle = |b: u64| 100.0 - b as f64 * 100.0 / span as f64;
    let (mi, ii) = (idle(busy_m), idle(busy_i));
    Some(WindowCheck {
        windows: per.len() as u64,
        span_ns: span,
        windows_too_few_records: too_few,
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
    let few = match c.windows_too_few_records {
        0 => String::new(),
        n => format!("; {n} measured window(s) with fewer than {MIN_RECORDS} records not checked"),
    };
    if c.windows == 0 {
        return few;
    }
    format!(
        "; checked in its {} measured windows ({}): the model without them (the {}) gives idle {:.1} % where {:.1} % \
         was measured ({:+.1} points; {:.1} per window, median){few}",
        c.windows,
        super::stats::fmt_ns(c.span_ns),
        c.model,
        c.model_idle_pct,
        c.measured_idle_pct,
        c.points,
        c.median_abs_points
    )
}
