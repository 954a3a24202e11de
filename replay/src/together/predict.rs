//! Each tenant's slowdown beside the others, predicted from the recordings
//! alone (their `gpu` lines): docs/colocation.md derives the model.
//!
//! A tenant's GPU work is its *bursts*: its measured busy intervals, with the
//! gaps no other context could use (≤ 2 × the context-switch cost `c`, the
//! second-tenant table of `tracer gaps`) merged into them. Tenant `j` keeps
//! the GPU busy a share `u_j = busy_j / span_j` of its time. The GPU
//! time-slices between contexts: a context keeps the GPU until its work runs
//! out or its time slice `T` ends. So each burst of tenant `i`
//!
//! - finds the GPU held by `j` with probability `u_j`, and then waits for the
//!   rest of `j`'s burst (on average `r_j = Σ b² / (2 Σ b)` over `j`'s bursts,
//!   at most `T`) and a switch `c`;
//! - once longer than `T`, shares the GPU with `j` for the rest of it: it
//!   loses a share `u_j` of `max(0, b − T)`.
//!
//! `delay_i = Σ_{j≠i} u_j · (n_i · (min(r_j, T) + c) + Σ_k max(0, b_ik − T))`,
//! `slowdown_i = (span_i + delay_i) / span_i`.
//!
//! Beside it, the oracle bound of the second-tenant table: the others' work in
//! `i`'s span, `Σ_{j≠i} u_j · span_i`, against `i`'s usable idle time
//! `Σ max(0, gap − 2c)`: when it fits, a scheduler that knew the gaps could
//! place the others' work with no slowdown of `i` at all.

use std::fmt::Write as _;

use serde::Serialize;

/// The model's two constants.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Model {
    /// Context switch cost `c`, ns.
    pub switch_ns: u64,
    /// Time slice `T`, ns.
    pub timeslice_ns: u64,
}

impl Default for Model {
    fn default() -> Self {
        Model { switch_ns: 25_000, timeslice_ns: 2_000_000 }
    }
}

/// One tenant's prediction (None figures: the recording has no gpu lines).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Prediction {
    pub bursts: usize,
    pub busy_ns: u64,
    pub span_ns: u64,
    /// busy / span.
    pub utilization: f64,
    /// Mean residual of a burst found running, ns.
    pub residual_ns: f64,
    pub delay_ns: Option<f64>,
    pub slowdown: Option<f64>,
    /// The other tenants' GPU work within this tenant's span, ns.
    pub others_work_ns: Option<f64>,
    /// Σ max(0, gap − 2c) over this tenant's gaps, ns.
    pub usable_idle_ns: u64,
    /// others_work ≤ usable_idle.
    pub fits_in_gaps: Option<bool>,
}

/// Sorted, merged intervals, gaps of at most `join_ns` closed.
pub fn merge(iv: &mut [(u64, u64)], join_ns: u64) -> Vec<(u64, u64)> {
    iv.sort_unstable();
    let mut out: Vec<(u64, u64)> = Vec::new();
    // An interval that ends before it starts (an incomplete record) is none.
    for &(s, e) in iv.iter().filter(|x| x.1 >= x.0) {
        match out.last_mut() {
            Some(l) if s <= l.1.saturating_add(join_ns) => l.1 = l.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

/// Predictions for tenants with these measured busy intervals (sorted, merged, ns).
pub fn predict(busy: &[&[(u64, u64)]], m: &Model) -> Vec<Prediction> {
    let bursts: Vec<Vec<(u64, u64)>> = busy.iter().map(|b| merge(&mut b.to_vec(), 2 * m.switch_ns)).collect();
    let base: Vec<Prediction> = busy
        .iter()
        .zip(&bursts)
        .map(|(raw, b)| {
            let busy_ns: u64 = raw.iter().map(|x| x.1.saturating_sub(x.0)).sum();
            let span_ns = match (raw.first(), raw.last()) {
                (Some(f), Some(l)) => l.1.saturating_sub(f.0),
                _ => 0,
            };
            let len: Vec<u64> = b.iter().map(|x| x.1 - x.0).collect();
            let sum: f64 = len.iter().map(|&x| x as f64).sum();
            let sq: f64 = len.iter().map(|&x| (x as f64) * (x as f64)).sum();
            let usable_idle_ns =
                raw.windows(2).map(|w| w[1].0.saturating_sub(w[0].1).saturating_sub(2 * m.switch_ns)).sum();
            Prediction {
                bursts: b.len(),
                busy_ns,
                span_ns,
                utilization: if span_ns > 0 { busy_ns as f64 / span_ns as f64 } else { 0.0 },
                residual_ns: if sum > 0.0 { sq / (2.0 * sum) } else { 0.0 },
                delay_ns: None,
                slowdown: None,
                others_work_ns: None,
                usable_idle_ns,
                fits_in_gaps: None,
            }
        })
        .collect();
    let t = m.timeslice_ns as f64;
    let c = m.switch_ns as f64;
    let mut out = base.clone();
    for (i, o) in out.iter_mut().enumerate() {
        let all_measured = base.iter().all(|p| p.span_ns > 0);
        if !all_measured {
            continue;
        }
        let n = bursts[i].len() as f64;
        let long: f64 = bursts[i].iter().map(|x| ((x.1 - x.0) as f64 - t).max(0.0)).sum();
        let mut delay = 0.0;
        let mut others = 0.0;
        for (j, q) in base.iter().enumerate() {
            if j == i {
                continue;
            }
            delay += q.utilization * (n * (q.residual_ns.min(t) + c) + long);
            others += q.utilization * o.span_ns as f64;
        }
        o.delay_ns = Some(delay);
        o.slowdown = Some((o.span_ns as f64 + delay) / o.span_ns as f64);
        o.others_work_ns = Some(others);
        o.fits_in_gaps = Some(others <= o.usable_idle_ns as f64);
    }
    out
}

/// The predictions as the plan and the report print them.
pub fn text(p: &[Prediction], m: &Model) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "prediction (docs/colocation.md; context switch {:.0} µs, time slice {:.0} µs):",
        m.switch_ns as f64 / 1e3,
        m.timeslice_ns as f64 / 1e3
    );
    for (i, x) in p.iter().enumerate() {
        match (x.slowdown, x.others_work_ns) {
            (Some(sl), Some(ow)) => {
                let _ = writeln!(
                    s,
                    "  tenant {}: GPU busy {:.1} % in {} bursts (mean residual {:.1} µs); others' work in its span {:.3} ms {} its usable idle {:.3} ms; predicted slowdown {:.3}×",
                    i + 1,
                    100.0 * x.utilization,
                    x.bursts,
                    x.residual_ns / 1e3,
                    ow / 1e6,
                    if x.fits_in_gaps == Some(true) { "fits in" } else { "exceeds" },
                    x.usable_idle_ns as f64 / 1e6,
                    sl
                );
            }
            _ => {
                let _ = writeln!(
                    s,
                    "  tenant {}: not predicted (a recording without gpu lines: record with --gpu-timestamps)",
                    i + 1
                );
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_gpu_bound_tenants_share_the_gpu() {
        // Each one 10 ms burst: u = 1, residual 5 ms (> T: T), long part 8 ms.
        let a = [(0u64, 10_000_000u64)];
        let p = predict(&[&a, &a], &Model::default());
        let delay = 1.0 * (1.0 * (2_000_000.0 + 25_000.0) + 8_000_000.0);
        assert_eq!(p[0].delay_ns, Some(delay));
        assert_eq!(p[0].slowdown, Some((10_000_000.0 + delay) / 10_000_000.0)); // 2.0025
        assert_eq!(p[0].usable_idle_ns, 0);
        assert_eq!(p[0].fits_in_gaps, Some(false));
    }

    #[test]
    fn gaps_up_to_two_switches_join_bursts_and_no_gpu_lines_no_prediction() {
        let mut iv = vec![(100, 200), (0, 50), (250, 300), (301, 400)];
        assert_eq!(merge(&mut iv, 0), vec![(0, 50), (100, 200), (250, 300), (301, 400)]);
        assert_eq!(merge(&mut iv, 50), vec![(0, 400)]);
        let a = [(0u64, 1_000u64)];
        let p = predict(&[&a, &[]], &Model::default());
        assert_eq!((p[0].slowdown, p[1].slowdown), (None, None));
        assert_eq!(p[0].busy_ns, 1_000);
    }
}
