//! How close an inferred (or bound) GPU timeline comes to the measured one:
//! busy/idle time and its error in %, gap-by-gap matching, and per-launch
//! start errors. `tracer compare TRACE --durations FILE` on a trace recorded
//! with `--gpu-timestamps`.
//!
//! Per device, over the measured window (first to last measured work):
//! - idle error % = (idle_inferred − idle_measured) / idle_measured × 100;
//! - gaps ≥ threshold are matched greedily in time order: a measured gap
//!   matches the not-yet-matched inferred gap that overlaps it most, if the
//!   overlap is at least half the shorter of the two; unmatched measured gaps
//!   are `missed`, unmatched inferred ones `spurious`; matched pairs give the
//!   start and length errors (p50/p90 of absolute values);
//! - launches: inferred intervals carry their launch call, measured ones are
//!   tied to launches by [`link_measured_to_launches`]; the start error is
//!   inferred start − measured start.
use std::collections::HashMap;
use std::fmt::Write as _;

use serde::Serialize;

use super::basis::IdleBasis;
use super::gaps::fmt_ns;
use super::model::Trace;
use super::stats::{complement, covered, nearest_rank, union};
use super::timeline::{Timeline, link_measured_to_launches};

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Comparison {
    pub device: u32,
    pub window: (u64, u64),
    pub measured_busy_ns: u64,
    /// What the compared timeline's figures rest on: `calibrated`, or
    /// `lower_bound` for the bound timeline (its busy time is unknown, its
    /// idle time a lower bound).
    pub idle_basis: IdleBasis,
    /// `None` for the bound timeline (busy time unknown).
    pub inferred_busy_ns: Option<u64>,
    pub measured_idle_ns: u64,
    pub inferred_idle_ns: u64,
    pub idle_error_pct: Option<f64>,
    /// (inferred busy − measured busy) / measured busy × 100; `None` for the
    /// bound timeline (busy time unknown).
    pub busy_error_pct: Option<f64>,
    /// Idle time / window, measured and compared (for the bound timeline a
    /// lower bound).
    pub measured_idle_share: f64,
    pub inferred_idle_share: f64,
    /// (inferred gaps − measured gaps) / measured gaps × 100, gaps ≥ threshold.
    pub gap_count_error_pct: Option<f64>,
    /// The figures off by more than [`FLAG_PCT`] % ("busy time", "idle time",
    /// "gap count"); for the bound timeline, "bound exceeds measured idle"
    /// when its certain idle time is more than the measured idle time.
    pub flagged: Vec<&'static str>,
    pub threshold_ns: u64,
    pub measured_gaps: u64,
    pub inferred_gaps: u64,
    pub matched: u64,
    pub missed: u64,
    pub spurious: u64,
    pub gap_start_err_p50_ns: u64,
    pub gap_start_err_p90_ns: u64,
    pub gap_len_err_p50_ns: u64,
    pub gap_len_err_p90_ns: u64,
    pub launches_compared: u64,
    /// Signed start error (inferred − measured), percentiles of the absolute value.
    pub start_err_p50_ns: u64,
    pub start_err_p90_ns: u64,
    pub start_err_p99_ns: u64,
    /// Mean signed start error (positive: inferred later).
    pub start_err_mean_ns: f64,
}

fn pct_abs(v: &mut [u64]) -> (u64, u64, u64) {
    v.sort_unstable();
    (nearest_rank(v, 50.0), nearest_rank(v, 90.0), nearest_rank(v, 99.0))
}

/// Gap matching (see the module header): (matched pairs, missed, spurious).
pub fn match_gaps(measured: &[(u64, u64)], inferred: &[(u64, u64)]) -> (Vec<(usize, usize)>, u64, u64) {
    let mut used = vec![false; inferred.len()];
    let mut pairs = Vec::new();
    let mut j0 = 0;
    for (i, &(a, b)) in measured.iter().enumerate() {
        while j0 < inferred.len() && inferred[j0].1 <= a {
            j0 += 1;
        }
        let mut best: Option<(u64, usize)> = None;
        let mut j = j0;
        while j < inferred.len() && inferred[j].0 < b {
            if !used[j] {
                let ov = b.min(inferred[j].1).saturating_sub(a.max(inferred[j].0));
                let shorter = (b - a).min(inferred[j].1 - inferred[j].0);
                if ov * 2 >= shorter && ov > 0 && best.is_none_or(|x| ov > x.0) {
                    best = Some((ov, j));
                }
            }
            j += 1;
        }
        if let Some((_, j)) = best {
            used[j] = true;
            pairs.push((i, j));
        }
    }
    let missed = (measured.len() - pairs.len()) as u64;
    let spurious = used.iter().filter(|u| !**u).count() as u64;
    (pairs, missed, spurious)
}

pub fn compare(t: &Trace, inferred: &Timeline, measured: &Timeline, threshold_ns: u64) -> Vec<Comparison> {
    let links = link_measured_to_launches(t, measured);
    let mut measured_start: HashMap<u32, (u32, u64)> = HashMap::new();
    for (si, ii, ci) in links {
        let s = &measured.streams[si];
        measured_start.insert(ci, (s.device, s.intervals[ii].start));
    }
    let mut out = Vec::new();
    for d in measured.devices() {
        let mb = union(measured.device_intervals(d).map(|i| (i.start, i.end)).collect());
        let ib = union(inferred.device_intervals(d).map(|i| (i.start, i.end)).collect());
        let (Some(f), Some(l)) = (mb.first(), mb.last()) else { continue };
        let (lo, hi) = (f.0, l.1);
        let mg: Vec<(u64, u64)> = complement(&mb, lo, hi).into_iter().filter(|g| g.1 - g.0 >= threshold_ns).collect();
        let ig: Vec<(u64, u64)> = complement(&ib, lo, hi).into_iter().filter(|g| g.1 - g.0 >= threshold_ns).collect();
        let m_busy = covered(&mb, lo, hi);
        let i_busy = covered(&ib, lo, hi);
        let (m_idle, i_idle) = (hi - lo - m_busy, hi - lo - i_busy);
        let (pairs, missed, spurious) = match_gaps(&mg, &ig);
        let mut se: Vec<u64> = pairs.iter().map(|&(i, j)| mg[i].0.abs_diff(ig[j].0)).collect();
        let mut le: Vec<u64> = pairs.iter().map(|&(i, j)| (mg[i].1 - mg[i].0).abs_diff(ig[j].1 - ig[j].0)).collect();
        let (s50, s90, _) = pct_abs(&mut se);
        let (l50, l90, _) = pct_abs(&mut le);
        let mut errs: Vec<i64> = Vec::new();
        for s in inferred.streams.iter().filter(|s| s.device == d) {
            // per-launch errors: kernels only (not copies, not `bound` stretches)
            for iv in s.intervals.iter().filter(|i| i.kind == super::timeline::WorkKind::Kernel) {
                if let Some(&(md, ms)) = measured_start.get(&iv.call)
                    && md == d
                {
                    errs.push(iv.start as i64 - ms as i64);
                }
            }
        }
        let mut abs: Vec<u64> = errs.iter().map(|e| e.unsigned_abs()).collect();
        let (e50, e90, e99) = pct_abs(&mut abs);
        let rel = |x: u64, m: u64| (m > 0).then(|| (x as f64 - m as f64) / m as f64 * 100.0);
        let known = IdleBasis::of(inferred).share_known();
        let busy_error_pct = if known { rel(i_busy, m_busy) } else { None };
        let idle_error_pct = rel(i_idle, m_idle);
        let gap_count_error_pct = rel(ig.len() as u64, mg.len() as u64);
        let off = |e: Option<f64>| e.is_some_and(|e| e.abs() > FLAG_PCT);
        let mut flagged = Vec::new();
        if known {
            for (what, e) in
                [("busy time", busy_error_pct), ("idle time", idle_error_pct), ("gap count", gap_count_error_pct)]
            {
                if off(e) {
                    flagged.push(what);
                }
            }
        } else if i_idle > m_idle {
            flagged.push("bound exceeds measured idle");
        }
        let window = (hi - lo).max(1) as f64;
        out.push(Comparison {
            device: d,
            window: (lo, hi),
            measured_busy_ns: m_busy,
            idle_basis: IdleBasis::of(inferred),
            inferred_busy_ns: IdleBasis::of(inferred).share_known().then_some(i_busy),
            measured_idle_ns: m_idle,
            inferred_idle_ns: i_idle,
            idle_error_pct,
            busy_error_pct,
            measured_idle_share: m_idle as f64 / window,
            inferred_idle_share: i_idle as f64 / window,
            gap_count_error_pct,
            flagged,
            threshold_ns,
            measured_gaps: mg.len() as u64,
            inferred_gaps: ig.len() as u64,
            matched: pairs.len() as u64,
            missed,
            spurious,
            gap_start_err_p50_ns: s50,
            gap_start_err_p90_ns: s90,
            gap_len_err_p50_ns: l50,
            gap_len_err_p90_ns: l90,
            launches_compared: errs.len() as u64,
            start_err_p50_ns: e50,
            start_err_p90_ns: e90,
            start_err_p99_ns: e99,
            start_err_mean_ns: if errs.is_empty() {
                0.0
            } else {
                errs.iter().map(|&e| e as f64).sum::<f64>() / errs.len() as f64
            },
        });
    }
    out
}

/// A figure off by more than this (relative, %) is flagged in the verdict.
pub const FLAG_PCT: f64 = 10.0;

/// The verdict line: each figure's error, and which are off by more than [`FLAG_PCT`] %.
pub fn verdict(c: &Comparison, label: &str) -> String {
    let pct = |e: Option<f64>| e.map_or("n/a".into(), |e| format!("{e:+.1}%"));
    let share = |x: f64| format!("{:.1}%", 100.0 * x);
    if c.inferred_busy_ns.is_none() {
        let holds = if c.flagged.is_empty() { "holds" } else { "VIOLATED" };
        return format!(
            "  verdict: {label} idle ≥ {} against {} measured: the lower bound {holds}; busy time unknown; certain gaps ≥ {}: {} against {} measured",
            share(c.inferred_idle_share),
            share(c.measured_idle_share),
            fmt_ns(c.threshold_ns),
            c.inferred_gaps,
            c.measured_gaps
        );
    }
    format!(
        "  verdict: busy time {}, idle share {} against {} measured ({}), gaps ≥ {} {}: {}",
        pct(c.busy_error_pct),
        share(c.inferred_idle_share),
        share(c.measured_idle_share),
        pct(c.idle_error_pct),
        fmt_ns(c.threshold_ns),
        pct(c.gap_count_error_pct),
        if c.flagged.is_empty() {
            format!("all within {FLAG_PCT}%")
        } else {
            format!("OFF BY MORE THAN {FLAG_PCT}%: {}", c.flagged.join(", "))
        }
    )
}

pub fn render(v: &[Comparison], inferred_label: &str) -> String {
    let mut s = String::new();
    for c in v {
        let _ =
            writeln!(s, "gpu {}: measured vs {inferred_label}, window {}", c.device, fmt_ns(c.window.1 - c.window.0));
        let _ = writeln!(s, "{}", verdict(c, inferred_label));
        let err = c.idle_error_pct.map_or("n/a".into(), |e| format!("{e:+.1}%"));
        match c.inferred_busy_ns {
            Some(busy) => {
                let _ = writeln!(
                    s,
                    "  busy: measured {}, {inferred_label} {} (error {})\n  idle: measured {}, {inferred_label} {} (error {err})",
                    fmt_ns(c.measured_busy_ns),
                    fmt_ns(busy),
                    c.busy_error_pct.map_or("n/a".into(), |e| format!("{e:+.1}%")),
                    fmt_ns(c.measured_idle_ns),
                    fmt_ns(c.inferred_idle_ns),
                );
            }
            None => {
                let _ = writeln!(
                    s,
                    "  busy: measured {}, {inferred_label} unknown\n  idle: measured {}, {inferred_label} ≥ {} (lower bound; error {err})",
                    fmt_ns(c.measured_busy_ns),
                    fmt_ns(c.measured_idle_ns),
                    fmt_ns(c.inferred_idle_ns),
                );
            }
        }
        let _ = writeln!(
            s,
            "  gaps ≥ {}: measured {}, {inferred_label} {}; matched {}, missed {}, spurious {}; start error p50 {} p90 {}, length error p50 {} p90 {}",
            fmt_ns(c.threshold_ns),
            c.measured_gaps,
            c.inferred_gaps,
            c.matched,
            c.missed,
            c.spurious,
            fmt_ns(c.gap_start_err_p50_ns),
            fmt_ns(c.gap_start_err_p90_ns),
            fmt_ns(c.gap_len_err_p50_ns),
            fmt_ns(c.gap_len_err_p90_ns)
        );
        let _ = writeln!(
            s,
            "  launches compared: {}; |start error| p50 {} p90 {} p99 {}, mean signed {:+.1} µs",
            c.launches_compared,
            fmt_ns(c.start_err_p50_ns),
            fmt_ns(c.start_err_p90_ns),
            fmt_ns(c.start_err_p99_ns),
            c.start_err_mean_ns / 1000.0
        );
    }
    super::inert::text(&s).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::durations::Durations;
    use crate::analysis::durations::calibrate;
    use crate::analysis::model::parse_str;
    use crate::analysis::timeline;

    #[test]
    fn gap_matching() {
        let m = [(0, 100), (200, 300), (1000, 1100)];
        let i = [(10, 90), (250, 260), (500, 600)];
        let (p, missed, spurious) = match_gaps(&m, &i);
        // (200,300) vs (250,260): overlap 10 >= half of 10 -> matched
        assert_eq!(p, [(0, 0), (1, 1)]);
        assert_eq!((missed, spurious), (1, 1));
    }

    #[test]
    fn inferred_vs_measured_with_self_calibration() {
        // two launches of k; measured: 10 µs each, starting 3 µs after the call returns; a 1 ms gap.
        let l = [
            timeline::tests::launch(0, 1.0, "k", "0x0"),
            timeline::tests::launch(1_000_000, 1.0, "k", "0x0"),
            r#"{"ts":4000,"end_ts":14000,"pid":1,"type":"gpu","op":"kernel","name":"k","device":0,"stream":"0x0","grid":[1,1,1],"block":[32,1,1],"shared_mem":0}"#.to_string(),
            r#"{"ts":1004000,"end_ts":1014000,"pid":1,"type":"gpu","op":"kernel","name":"k","device":0,"stream":"0x0","grid":[1,1,1],"block":[32,1,1],"shared_mem":0}"#.to_string(),
        ];
        let t = parse_str("c", &l.join("\n")).unwrap();
        let d = Durations::new(calibrate(&t).unwrap());
        let inf = timeline::inferred(&t, &d);
        let mea = timeline::measured(&t);
        let c = &compare(&t, &inf, &mea, 100_000)[0];
        assert_eq!((c.measured_busy_ns, c.measured_idle_ns), (20_000, 990_000));
        // inferred: [1, 11] and [1001, 1011] µs, clipped to the measured window [4, 1014] µs
        assert_eq!((c.idle_basis, c.inferred_busy_ns), (IdleBasis::Calibrated, Some(7_000 + 10_000)));
        assert_eq!(c.inferred_idle_ns, 1_010_000 - 17_000);
        assert!((c.idle_error_pct.unwrap() - 3000.0 / 990_000.0 * 100.0).abs() < 1e-9);
        assert_eq!((c.matched, c.missed, c.spurious), (1, 0, 0));
        assert_eq!((c.gap_start_err_p50_ns, c.gap_len_err_p50_ns), (3000, 0));
        assert_eq!((c.launches_compared, c.start_err_p50_ns, c.start_err_mean_ns), (2, 3000, -3000.0));
        let text = render(std::slice::from_ref(c), "inferred");
        assert!(text.contains("idle: measured 990.0 µs, inferred 993.0 µs (error +0.3%)"), "{text}");
        // busy 17 µs against 20 µs measured: -15 %, flagged although idle is +0.3 %
        assert!((c.busy_error_pct.unwrap() + 15.0).abs() < 1e-9);
        assert_eq!((c.gap_count_error_pct, c.flagged.clone()), (Some(0.0), vec!["busy time"]));
        assert!(
            text.contains("  verdict: busy time -15.0%, idle share 98.3% against 98.0% measured (+0.3%), gaps ≥ 100.0 µs +0.0%: OFF BY MORE THAN 10%: busy time\n"),
            "{text}"
        );
        // the bound timeline: no busy figure, the idle time a lower bound
        let b = &compare(&t, &timeline::bound(&t), &mea, 100_000)[0];
        assert_eq!((b.idle_basis, b.inferred_busy_ns), (IdleBasis::LowerBound, None));
        let text = render(std::slice::from_ref(b), "bound");
        assert!(text.contains("busy: measured 20.0 µs, bound unknown\n"), "{text}");
        assert!(b.flagged.is_empty() && text.contains("the lower bound holds"), "{text}");
        assert!(
            text.contains(&format!(
                "idle: measured 990.0 µs, bound ≥ {} (lower bound; error",
                fmt_ns(b.inferred_idle_ns)
            )),
            "{text}"
        );
    }
}
