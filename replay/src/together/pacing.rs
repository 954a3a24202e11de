//! A together run paces each tenant by its recorded host gaps: op `i` is
//! submitted the recorded host time after op `i − 1`, counted from that
//! call's return when the recording measured its duration (a return-probed
//! call: a synchronization, a synchronous copy), else from its start. A delay
//! of the GPU then delays what the program did after waiting for it, as it
//! would in the program; `timed` mode's offsets from the pass's start would
//! absorb it into the next recorded gap instead.
//!
//! Time the submitting thread was stopped inside a gap is not the
//! program's host time and is left out: under `--capture-data` the recorder
//! stops the thread at the return of a copy whose host bytes it reads and of
//! a synchronization with asynchronous device-to-host bytes to read (before
//! 2026-11-28 at every synchronization and copy), 0.6-1.4 ms a stop on the
//! H100 machine, and a debugger's stop
//! is no part of the program either (the trace's `off_cpu` lines named
//! `stopped`).
//!
//! Compensated pacing (the default, `--pacing compensated`) also takes out
//! of each gap what tracing cost the thread in it: tracer_format::pacing's
//! cost model, from the recording's `bpf_stats`, its `sched` lines and its
//! header ([`Pacer`]); `--host-speed F` then divides every gap by F.

use std::collections::HashMap;

use tracer_format::pacing::{Compensation, GapStats, HostSpeed, Overrides, Pacing, PacingReport, Probed};

use crate::exec::session::HostGap;
use crate::plan::Op;

/// Each thread's stopped intervals, sorted (from the trace's `stopped` off-CPU lines).
#[derive(Debug, Clone, Default)]
pub struct Stops(HashMap<u32, Vec<(u64, u64)>>);

impl Stops {
    /// From `(tid, ts, end_ts)` intervals.
    pub fn new(stops: &[(u32, u64, u64)]) -> Stops {
        let mut m: HashMap<u32, Vec<(u64, u64)>> = HashMap::new();
        for &(tid, s, e) in stops {
            m.entry(tid).or_default().push((s, e));
        }
        for v in m.values_mut() {
            v.sort_unstable();
        }
        Stops(m)
    }

    /// How long thread `tid` was stopped between `from` and `to`, ns.
    pub fn within(&self, tid: u32, from: u64, to: u64) -> u64 {
        let Some(v) = self.0.get(&tid) else { return 0 };
        // The first interval that ends after `from` (sorted by start; a thread's stops do not overlap).
        let first = v.partition_point(|&(_, e)| e <= from);
        v[first..].iter().take_while(|&&(s, _)| s < to).map(|&(s, e)| e.min(to).saturating_sub(s.max(from))).sum()
    }
}

/// The host gaps of a sequence of ops, with what was taken out of them.
#[derive(Debug, Clone, PartialEq)]
pub struct Gaps {
    pub gaps: Vec<HostGap>,
    /// Time the threads were stopped inside the gaps, left out, ns.
    pub stopped_ns: u64,
    /// The compensation's gaps, removed ns and clamped gaps.
    pub stats: GapStats,
}

/// Each op's wait before its submission (the first op's is 0), without the time its thread was
/// stopped in that wait, and without what tracing cost its thread there (`comp`; none with
/// [`Compensation::none`]), clamped at 0 and counted.
pub fn host_gaps(ops: &[Op], stops: &Stops, comp: &Compensation) -> Gaps {
    let mut v = Vec::with_capacity(ops.len());
    let (mut stopped_ns, mut stats) = (0, GapStats::default());
    for (i, o) in ops.iter().enumerate() {
        if i == 0 {
            v.push(HostGap { ns: 0, after_return: false });
            continue;
        }
        let prev = &ops[i - 1];
        let (from, after_return) = match prev.duration_ns {
            Some(d) => (prev.ts + d, true),
            None => (prev.ts, false),
        };
        let raw = o.ts.saturating_sub(from);
        let stopped = stops.within(o.tid, from, o.ts).min(raw);
        stopped_ns += stopped;
        let ns = stats.take(raw - stopped, comp.within(o.tid, from, o.ts));
        v.push(HostGap { ns, after_return });
    }
    Gaps { gaps: v, stopped_ns, stats }
}

/// How a recording's ops are paced: `--pacing`, `--host-speed`, the cost overrides.
#[derive(Debug, Clone, Default)]
pub struct Pacer {
    pub pacing: Pacing,
    /// `--host-speed`, times the recording's usual speed where compensated pacing has it.
    pub host_speed: HostSpeed,
    pub overrides: Overrides,
    /// Why compensated pacing has no usual speed for the recording (the report's `missing`).
    pub speed_note: Option<String>,
}

impl Pacer {
    /// `ops`' gaps in `trace`: stops left out, compensated (unless recorded), divided by the
    /// host speed; the report counts the probed calls of the ops' span.
    pub fn gaps(&self, trace: &crate::recording::Trace, ops: &[Op]) -> (Gaps, PacingReport) {
        let comp = trace.compensation(self.pacing, self.overrides);
        let mut g = host_gaps(ops, &Stops::new(&trace.stops), &comp);
        for x in &mut g.gaps {
            x.ns = self.host_speed.scale(x.ns);
        }
        let mut report = PacingReport::new(&comp, g.stats, calls_within(&trace.probed, ops), &self.host_speed);
        if report.pacing == Pacing::Compensated {
            report.missing.extend(self.speed_note.clone());
        }
        (g, report)
    }
}

/// The probed calls of `ops`' threads from their first op to their last (every call line, not
/// only the replayed ones).
pub fn calls_within(probed: &[Probed], ops: &[Op]) -> u64 {
    let (Some(a), Some(b)) = (ops.iter().map(|o| o.ts).min(), ops.iter().map(|o| o.ts).max()) else { return 0 };
    let tids: std::collections::HashSet<u32> = ops.iter().map(|o| o.tid).collect();
    probed.iter().filter(|c| c.ts > a && c.ts <= b && tids.contains(&c.tid)).count() as u64
}

/// Timed mode's offsets from the first op under `gaps`: each op's recorded offset less what
/// the gaps up to it lost (stops, the compensation) or gained (`--host-speed` below 1), at 0 at
/// least. The recorded offsets themselves when `gaps` are the recorded ones.
pub fn paced_offsets(ops: &[Op], gaps: &[HostGap]) -> Vec<u64> {
    let Some(first) = ops.first() else { return Vec::new() };
    let mut shrink = 0i64;
    let mut v = Vec::with_capacity(ops.len());
    for (i, o) in ops.iter().enumerate() {
        if i > 0 {
            let prev = &ops[i - 1];
            let from = prev.ts + if gaps[i].after_return { prev.duration_ns.unwrap_or(0) } else { 0 };
            shrink += o.ts.saturating_sub(from) as i64 - gaps[i].ns as i64;
        }
        v.push((o.ts.saturating_sub(first.ts) as i64 - shrink).max(0) as u64);
    }
    v
}

/// Multiplies every host gap by `factor` (`--host-scale`: the tenant's host program `factor`
/// times as slow as recorded; its GPU work and the waits for it are the replay's own).
pub fn scale(gaps: &mut [HostGap], factor: f64) {
    if factor != 1.0 {
        for g in gaps {
            g.ns = (g.ns as f64 * factor).round() as u64;
        }
    }
}

/// Checks `--host-scale`'s factors against `n` recordings and gives one per recording: none
/// (1 each), one for all, or one per recording in their order; each finite and above 0.
pub fn host_scales(factors: &[f64], n: usize) -> anyhow::Result<Vec<f64>> {
    if let Some(f) = factors.iter().find(|f| !(f.is_finite() && **f > 0.0)) {
        anyhow::bail!("--host-scale: {f} is not a factor above 0 (1 keeps the recorded host gaps, 0.5 halves them)");
    }
    per_recording(factors.to_vec(), 1.0, n, "--host-scale", "factors")
}

/// `values` of option `option` spread over `n` recordings: none (`none` each), one for all, or
/// one per recording in their order; another count is refused with one line naming `what`.
fn per_recording<T: Clone>(values: Vec<T>, none: T, n: usize, option: &str, what: &str) -> anyhow::Result<Vec<T>> {
    match values.len() {
        0 => Ok(vec![none; n]),
        1 => Ok(vec![values[0].clone(); n]),
        k if k == n => Ok(values),
        k => anyhow::bail!(
            "{option}: {k} {what} for {n} recordings: give one for all, or one per recording in their order"
        ),
    }
}

/// Checks `--host-alone-ms`'s values against `n` recordings and gives one target per recording,
/// ns (None: paced as recorded): none, one for all, or one per recording; 0 leaves that one as
/// recorded.
pub fn alone_targets(ms: &[f64], n: usize) -> anyhow::Result<Vec<Option<u64>>> {
    if let Some(x) = ms.iter().find(|x| !(x.is_finite() && **x >= 0.0)) {
        anyhow::bail!("--host-alone-ms: {x} is not a time in milliseconds (0 keeps a recording's pacing)");
    }
    let targets = ms.iter().map(|&x| (x > 0.0).then(|| (x * 1e6).round() as u64)).collect();
    per_recording(targets, None, n, "--host-alone-ms", "values")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::OpKind;

    fn op(ts: u64, duration_ns: Option<u64>) -> Op {
        Op { line: 0, ts, duration_ns, pid: 1, tid: 1, stream: None, kind: OpKind::CtxSync }
    }

    #[test]
    fn gaps_from_start_or_from_return() {
        let ops = vec![op(1_000, None), op(1_500, Some(3_000)), op(4_700, None), op(4_600, None)];
        assert_eq!(
            host_gaps(&ops, &Stops::default(), &Compensation::none()).gaps,
            vec![
                HostGap { ns: 0, after_return: false },
                HostGap { ns: 500, after_return: false },
                HostGap { ns: 200, after_return: true },
                HostGap { ns: 0, after_return: false },
            ]
        );
    }

    #[test]
    fn stopped_time_is_left_out_of_the_gaps() {
        // A sync at 1,000 returns at 1,500 and the thread is stopped 1,500-2,100 (the recorder
        // reading the copied bytes), the next launch at 2,200; another thread's stop and a stop
        // inside the call (before its return) do not count; a stop half inside the next gap
        // counts for its part inside.
        let mut ops = vec![op(1_000, Some(500)), op(2_200, None), op(2_500, None), op(3_000, None)];
        ops[3].tid = 2;
        let stops = Stops::new(&[(1, 1_100, 1_400), (1, 1_500, 2_100), (2, 2_400, 2_700), (3, 2_000, 3_000)]);
        assert_eq!(stops.within(1, 0, 10_000), 900);
        assert_eq!(stops.within(2, 2_500, 3_000), 200);
        let g = host_gaps(&ops, &stops, &Compensation::none());
        assert_eq!(g.gaps.iter().map(|g| g.ns).collect::<Vec<_>>(), vec![0, 100, 300, 300]);
        assert_eq!(g.stopped_ns, 600 + 200);
        assert_eq!(g.stats, GapStats { gaps: 3, ..GapStats::default() });
    }

    #[test]
    fn host_scale_multiplies_every_gap() {
        let ops = vec![op(1_000, None), op(1_500, Some(3_000)), op(4_700, None), op(4_601, None)];
        let mut gaps = host_gaps(&ops, &Stops::default(), &Compensation::none()).gaps;
        scale(&mut gaps, 0.5);
        assert_eq!(gaps.iter().map(|g| g.ns).collect::<Vec<_>>(), vec![0, 250, 100, 0]);
        let mut gaps = host_gaps(&ops, &Stops::default(), &Compensation::none()).gaps;
        scale(&mut gaps, 1.5);
        assert_eq!(gaps.iter().map(|g| g.ns).collect::<Vec<_>>(), vec![0, 750, 300, 0]);
        assert!(gaps[2].after_return);
    }

    fn costs(trap_ns: f64) -> tracer_format::pacing::Costs {
        // no bpf_stats, no sched: the trap per probe hit only
        let o = Overrides { trap_ns: Some(trap_ns), cupti_ns: None };
        tracer_format::pacing::Costs::of_recording(None, None, false, o)
    }

    fn probed(ts: u64, ret_ts: Option<u64>) -> Probed {
        Probed { tid: 1, ts, ret_ts, launch: false, gpu_work: false }
    }

    #[test]
    fn compensated_gaps_lose_the_probes_inside_them() {
        // Ops: a launch at 1,000, a sync at 10,000 returning at 12,000, a launch at 20,000, a
        // launch at 20,500. Probed calls of thread 1 (100 ns a probe hit): the ops themselves
        // (the sync return-probed), three calls replay does not make between the first two
        // ops, one return-probed between the sync's return and the third op; four between the
        // last two, more than its 500 ns gap: clamped at 0 and counted.
        let ops = vec![op(1_000, None), op(10_000, Some(2_000)), op(20_000, None), op(20_500, None)];
        let mut calls =
            vec![probed(1_000, None), probed(10_000, Some(12_000)), probed(20_000, None), probed(20_500, None)];
        calls.extend([probed(2_000, None), probed(3_000, None), probed(4_000, None)]);
        calls.push(probed(15_000, Some(15_100)));
        calls.extend([probed(20_100, None), probed(20_200, None), probed(20_300, None), probed(20_400, None)]);
        let comp = Compensation::new(costs(100.0), &calls, &[], &[]);
        let g = host_gaps(&ops, &Stops::default(), &comp);
        // gap 2: 9,000 less 3 calls and the sync's entry (400); gap 3 (from the return at 12,000):
        // 8,000 less 2 hits at 15,000/15,100 and the launch's entry (300); gap 4: 500 less 5 hits
        // -> 0, clamped.
        assert_eq!(g.gaps.iter().map(|g| g.ns).collect::<Vec<_>>(), vec![0, 8_600, 7_700, 0]);
        assert_eq!(g.stats, GapStats { gaps: 3, removed_ns: 400 + 300 + 500, clamped: 1, clamped_excess_ns: 0 });
        // timed mode's offsets lose the same, cumulated
        assert_eq!(paced_offsets(&ops, &g.gaps), vec![0, 8_600, 18_300, 18_300]);
        let recorded = host_gaps(&ops, &Stops::default(), &Compensation::none());
        assert_eq!(paced_offsets(&ops, &recorded.gaps), vec![0, 9_000, 19_000, 19_500]);
        assert_eq!(calls_within(&calls, &ops), 11);
    }

    #[test]
    fn host_speed_divides_the_compensated_gaps() {
        let t = crate::recording::Trace {
            probed: vec![probed(1_000, None), probed(5_000, None), probed(9_000, None)],
            ..Default::default()
        };
        let ops = vec![op(1_000, None), op(9_000, None)];
        let pacer = |pacing, factor| Pacer {
            pacing,
            host_speed: HostSpeed { factor, from: "test".into() },
            overrides: Overrides { trap_ns: Some(1_000.0), cupti_ns: None },
            speed_note: Some("the machine's usual speed (why)".into()),
        };
        // 8,000 less 2 hits of 1,000 ns, then / 2
        let (g, r) = pacer(Pacing::Compensated, 2.0).gaps(&t, &ops);
        assert_eq!(g.gaps[1].ns, 3_000);
        assert_eq!(
            (r.pacing, r.stats.removed_ns, r.calls, r.removed_ns_per_call),
            (Pacing::Compensated, 2_000, 2, 1_000.0)
        );
        // the costs' two, and the usual speed's
        assert_eq!(r.missing.len(), 3);
        assert_eq!(r.missing[2], "the machine's usual speed (why)");
        let (g, r) = pacer(Pacing::Recorded, 0.5).gaps(&t, &ops);
        assert_eq!(g.gaps[1].ns, 16_000);
        assert_eq!((r.pacing, r.stats.removed_ns, r.missing.len()), (Pacing::Recorded, 0, 0));
    }

    #[test]
    fn host_scale_factors_per_recording() {
        assert_eq!(host_scales(&[], 2).unwrap(), vec![1.0, 1.0]);
        assert_eq!(host_scales(&[0.7], 3).unwrap(), vec![0.7, 0.7, 0.7]);
        assert_eq!(host_scales(&[0.7, 1.2], 2).unwrap(), vec![0.7, 1.2]);
        assert_eq!(
            host_scales(&[0.7, 1.2], 3).unwrap_err().to_string(),
            "--host-scale: 2 factors for 3 recordings: give one for all, or one per recording in their order"
        );
        assert_eq!(
            host_scales(&[0.0], 2).unwrap_err().to_string(),
            "--host-scale: 0 is not a factor above 0 (1 keeps the recorded host gaps, 0.5 halves them)"
        );
        assert!(host_scales(&[f64::NAN], 2).is_err());
    }

    #[test]
    fn alone_targets_per_recording() {
        assert_eq!(alone_targets(&[], 2).unwrap(), vec![None, None]);
        assert_eq!(alone_targets(&[1.5], 2).unwrap(), vec![Some(1_500_000), Some(1_500_000)]);
        assert_eq!(alone_targets(&[0.0, 785.25], 2).unwrap(), vec![None, Some(785_250_000)]);
        assert_eq!(
            alone_targets(&[1.0, 2.0, 3.0], 2).unwrap_err().to_string(),
            "--host-alone-ms: 3 values for 2 recordings: give one for all, or one per recording in their order"
        );
        assert_eq!(
            alone_targets(&[-1.0], 2).unwrap_err().to_string(),
            "--host-alone-ms: -1 is not a time in milliseconds (0 keeps a recording's pacing)"
        );
    }
}
