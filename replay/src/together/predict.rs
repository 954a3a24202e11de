//! Each tenant's slowdown beside the others, predicted from the recordings
//! alone: their measured phases replayed in a simulation of the time-sliced
//! GPU ([`super::simulate`]), each op's GPU work taking its recorded duration
//! (its `gpu` line, `--gpu-timestamps`). docs/colocation.md describes the
//! model.
//!
//! Beside it, the oracle bound of the second-tenant table: the others' work in
//! `i`'s span, `Σ_{j≠i} u_j · span_i` (`u_j = busy_j / span_j`, recorded),
//! against `i`'s usable idle time `Σ max(0, gap − 2c)`: when it fits, a
//! scheduler that knew the gaps could place the others' work with no slowdown
//! of `i` at all.

use std::fmt::Write as _;

use serde::Serialize;

pub use super::simulate::Model;
use super::simulate::{self, Act, SimOp, TenantRun, Wait};
use crate::exec::session::HostGap;
use crate::plan::{Op, OpKind};

/// One tenant's prediction (None figures: a recording without gpu lines).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Prediction {
    /// Recorded GPU busy time in the phase (gpu lines), ns.
    pub busy_ns: u64,
    /// Recorded first start to last end in the phase, ns.
    pub span_ns: u64,
    /// busy / span.
    pub utilization: f64,
    /// The phase's GPU work ops no gpu line paired with (simulated as 0 ns).
    pub work_without_duration: usize,
    /// Simulated alone and together.
    pub alone: Option<TenantRun>,
    pub together: Option<TenantRun>,
    /// together.wall / alone.wall.
    pub slowdown: Option<f64>,
    /// The other tenants' GPU work within this tenant's span, ns.
    pub others_work_ns: Option<f64>,
    /// Σ max(0, gap − 2c) over this tenant's gaps, ns.
    pub usable_idle_ns: u64,
    /// others_work ≤ usable_idle.
    pub fits_in_gaps: Option<bool>,
}

/// The simulated GPU of the together run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PredictedGpu {
    pub busy_ns: u64,
    pub span_ns: u64,
    pub switches: u64,
}

/// What the prediction needs of a tenant.
#[derive(Debug, Clone, Copy)]
pub struct Input<'a> {
    /// Recorded busy intervals in the phase (sorted, merged, ns).
    pub busy: &'a [(u64, u64)],
    /// The phase's ops as the simulation runs them ([`sim_ops`]).
    pub ops: &'a [SimOp],
}

/// The phase's ops (`ops`, each with its recorded GPU duration in
/// `durations`) as the simulation runs them, paced as replay paces them
/// (`gaps`: [`super::pacing::host_gaps`] of `ops`).
pub fn sim_ops(ops: &[Op], durations: &[Option<u64>], gaps: &[HostGap]) -> Vec<SimOp> {
    ops.iter()
        .zip(durations)
        .zip(gaps.iter().copied())
        .map(|((o, &ns), gap)| {
            let stream = o.stream.unwrap_or(usize::MAX);
            let act = match &o.kind {
                OpKind::Launch(_) | OpKind::Set(_) => Act::Work { stream, ns, sync: false },
                OpKind::Copy(c) => Act::Work { stream, ns, sync: !c.is_async },
                OpKind::EventRecord { event } => Act::Record { event: *event, stream },
                OpKind::StreamSync if o.stream.is_some() => Act::Wait(Wait::Stream(stream)),
                OpKind::StreamSync | OpKind::CtxSync => Act::Wait(Wait::All),
                OpKind::EventSync { event } => Act::Wait(Wait::Event(*event)),
                OpKind::StreamWaitEvent { .. } | OpKind::SetAttribute { .. } => Act::Host,
            };
            SimOp { gap, act }
        })
        .collect()
}

/// Predictions for the tenants `t`, and the together run's simulated GPU
/// (None: some recording has no gpu lines).
pub fn predict(t: &[Input], m: &Model) -> (Vec<Prediction>, Option<PredictedGpu>) {
    let measured = t.iter().all(|x| !x.busy.is_empty());
    let together = measured.then(|| simulate::simulate(&t.iter().map(|x| x.ops).collect::<Vec<_>>(), m));
    let mut out: Vec<Prediction> = t
        .iter()
        .enumerate()
        .map(|(i, x)| {
            let busy_ns: u64 = x.busy.iter().map(|b| b.1.saturating_sub(b.0)).sum();
            let span_ns = match (x.busy.first(), x.busy.last()) {
                (Some(f), Some(l)) => l.1.saturating_sub(f.0),
                _ => 0,
            };
            let alone = measured.then(|| simulate::simulate(&[x.ops], m).tenants[0]);
            let tog = together.as_ref().map(|o| o.tenants[i]);
            Prediction {
                busy_ns,
                span_ns,
                utilization: if span_ns > 0 { busy_ns as f64 / span_ns as f64 } else { 0.0 },
                work_without_duration: x.ops.iter().filter(|o| matches!(o.act, Act::Work { ns: None, .. })).count(),
                slowdown: alone.zip(tog).map(|(a, b)| b.wall_ns as f64 / a.wall_ns.max(1) as f64),
                alone,
                together: tog,
                others_work_ns: None,
                usable_idle_ns: x
                    .busy
                    .windows(2)
                    .map(|w| w[1].0.saturating_sub(w[0].1).saturating_sub(2 * m.switch_ns))
                    .sum(),
                fits_in_gaps: None,
            }
        })
        .collect();
    if measured {
        let u: Vec<f64> = out.iter().map(|p| p.utilization).collect();
        for (i, p) in out.iter_mut().enumerate() {
            let others: f64 = u.iter().enumerate().filter(|(j, _)| *j != i).map(|(_, u)| u * p.span_ns as f64).sum();
            p.others_work_ns = Some(others);
            p.fits_in_gaps = Some(others <= p.usable_idle_ns as f64);
        }
    }
    let gpu = together.map(|o| PredictedGpu { busy_ns: o.gpu_busy_ns, span_ns: o.gpu_span_ns, switches: o.switches });
    (out, gpu)
}

fn ms(ns: u64) -> String {
    format!("{:.3} ms", ns as f64 / 1e6)
}

/// The predictions as the plan and the report print them.
pub fn text(p: &[Prediction], gpu: Option<&PredictedGpu>, m: &Model) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "prediction (docs/colocation.md: the recorded phases on a simulated time-sliced GPU; context switch {:.0} µs, time slice {:.0} µs):",
        m.switch_ns as f64 / 1e3,
        m.timeslice_ns as f64 / 1e3
    );
    for (i, x) in p.iter().enumerate() {
        let (Some(a), Some(t), Some(sl), Some(ow)) = (x.alone, x.together, x.slowdown, x.others_work_ns) else {
            let _ = writeln!(
                s,
                "  tenant {}: not predicted (a recording without gpu lines: record with --gpu-timestamps)",
                i + 1
            );
            continue;
        };
        let _ = writeln!(
            s,
            "  tenant {}: alone {} (GPU busy {} in a {} span), together {} (GPU span {}): predicted slowdown {:.3}×",
            i + 1,
            ms(a.wall_ns),
            ms(a.gpu_busy_ns),
            ms(a.gpu_span_ns),
            ms(t.wall_ns),
            ms(t.gpu_span_ns),
            sl
        );
        let _ = writeln!(
            s,
            "    recorded GPU busy {:.1} %; others' work in its span {:.3} ms {} its usable idle {:.3} ms{}",
            100.0 * x.utilization,
            ow / 1e6,
            if x.fits_in_gaps == Some(true) { "fits in" } else { "exceeds" },
            x.usable_idle_ns as f64 / 1e6,
            match x.work_without_duration {
                0 => String::new(),
                n => format!("; {n} GPU ops without a gpu line, simulated as 0 ns"),
            }
        );
    }
    if let Some(g) = gpu {
        let _ = writeln!(
            s,
            "  together: GPU busy {} in a {} span, {} context switches",
            ms(g.busy_ns),
            ms(g.span_ns),
            g.switches
        );
    }
    s
}

#[cfg(test)]
mod tests {
    /// The constants the hand computations below use.
    const C25: Model = Model { switch_ns: 25_000, timeslice_ns: 2_000_000 };
    use super::*;

    fn kernel(gap_ns: u64, ns: Option<u64>) -> SimOp {
        SimOp { gap: HostGap { ns: gap_ns, after_return: false }, act: Act::Work { stream: 0, ns, sync: false } }
    }

    #[test]
    fn two_gpu_bound_tenants_and_the_oracle_beside_them() {
        // Each one 10 ms kernel: alone 10 ms; together 18.2 and 20.225 ms (simulate.rs's
        // tests), nine switches. Recorded: each busy all its span: no usable idle.
        let ops = [kernel(0, Some(10_000_000))];
        let busy = [(0u64, 10_000_000u64)];
        let x = Input { busy: &busy, ops: &ops };
        let (p, g) = predict(&[x, x], &C25);
        assert_eq!(p[0].slowdown, Some(1.82));
        assert_eq!(p[1].slowdown, Some(2.0225));
        assert_eq!(g, Some(PredictedGpu { busy_ns: 20_000_000, span_ns: 20_225_000, switches: 9 }));
        assert_eq!((p[0].usable_idle_ns, p[0].others_work_ns, p[0].fits_in_gaps), (0, Some(10_000_000.0), Some(false)));
        assert_eq!(p[0].work_without_duration, 0);
    }

    #[test]
    fn gaps_up_to_two_switches_join_intervals_and_no_gpu_lines_no_prediction() {
        let mut iv = vec![(100, 200), (0, 50), (250, 300), (301, 400)];
        assert_eq!(crate::gpu_time::merge(&mut iv, 0), vec![(0, 50), (100, 200), (250, 300), (301, 400)]);
        assert_eq!(crate::gpu_time::merge(&mut iv, 50), vec![(0, 400)]);
        let ops = [kernel(0, Some(1_000)), kernel(5, None)];
        let busy = [(0u64, 1_000u64)];
        let (p, g) = predict(&[Input { busy: &busy, ops: &ops }, Input { busy: &[], ops: &ops }], &C25);
        assert_eq!((p[0].slowdown, p[1].slowdown, g), (None, None, None));
        assert_eq!((p[0].busy_ns, p[0].work_without_duration), (1_000, 1));
        assert!(text(&p, None, &C25).contains("tenant 2: not predicted"));
    }
}
