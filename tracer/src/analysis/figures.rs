//! One definition for each figure that several commands show, so that
//! `summary`, `report`, `gaps`, `plot`, `compare`, the exports and the agent
//! give the same number for the same thing (tests/figures_agree.rs checks
//! it on every committed trace):
//!
//! - the **trace span** ([`trace_span`], [`SpanAcc`] for line-by-line
//!   readers): from the first to the last instant of any record: driver
//!   calls (to their return), ioctls (to their return), process events,
//!   markers, measured GPU work (to its end) and NVML samples;
//! - the **synchronization time** ([`SyncTime`], [`sync_class`]): time
//!   inside calls that block the host until GPU work is done:
//!   stream/context/event synchronizations and host-blocking copies
//!   (device-to-host, host-to-device). Polling queries (cuStreamQuery,
//!   cuEventQuery) return at once whatever the GPU does: they are counted
//!   apart, not as blocking waits;
//! - the **GPU window** of a scope ([`gpu_window`]): from its first GPU work
//!   to its last;
//! - the **phase window**: the phase's own [start, end), whole (not clipped
//!   to a GPU window), in `report` and `gaps` alike;
//! - **idle time** within a window ([`idle_within`]): the window's length
//!   less the time any stream of the scope was (possibly) busy. On a `bound`
//!   timeline this is certain idle time, a lower bound;
//! - **energy** of a period: [`super::energy::energy_between`]; where NVML
//!   samples cover only part of the period it is the covered part's energy,
//!   a lower bound ([`energy_text`]).
//!
//! Calls are classified by their line's `type`/`op` ([`super::model::Kind`]),
//! not by exact function names, so versioned and per-thread entry points
//! (`_v2`, `_ptsz`, `_ptds`, new ones such as cuMemcpyBatchAsync) count
//! as their class.
use serde::Serialize;

use super::energy::Energy;
use super::model::{Call, Dir, Kind};
use super::stats::covered;

/// A line's duration in ns, rounded as the trace model rounds it.
pub fn dur_ns(duration_us: Option<f64>) -> u64 {
    duration_us.map_or(0, |d| (d.max(0.0) * 1000.0).round() as u64)
}

/// Line types that are not records of the traced program and do not count
/// in the trace span (`sched`: the model keeps them apart from its span, and
/// `stack` lines are where other lines were taken;
/// an interval still open at the end reaches the last record's time).
pub const NOT_IN_SPAN: &[&str] =
    &["header", "footer", "gpu_window", "copy_data", "count", "kernel_count", "sched", "stack", "durations"];

/// The trace span of a parsed trace (`None` when it has no record).
pub fn trace_span(t: &super::model::Trace) -> Option<(u64, u64)> {
    t.span()
}

/// The trace span, line by line (for readers that do not build a trace:
/// `tracer summary`, the live summary); the same as [`trace_span`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SpanAcc {
    lo: Option<u64>,
    hi: u64,
}

impl SpanAcc {
    /// A line of type `ty` at `ts`, lasting `duration_us` or ending at `end_ts`.
    pub fn add(&mut self, ty: &str, ts: Option<u64>, duration_us: Option<f64>, end_ts: Option<u64>) {
        let Some(ts) = ts else { return };
        if NOT_IN_SPAN.contains(&ty) {
            return;
        }
        // as the model: gpu lines end at end_ts, others at ts + duration
        let end = if ty == "gpu" { end_ts.unwrap_or(ts) } else { ts.saturating_add(dur_ns(duration_us)) };
        self.lo = Some(self.lo.map_or(ts, |l| l.min(ts)));
        self.hi = self.hi.max(end).max(ts);
    }
    pub fn span(&self) -> Option<(u64, u64)> {
        self.lo.map(|l| (l, self.hi))
    }
}

/// What a call counts as in the synchronization time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncClass {
    /// cuStreamSynchronize, cuCtxSynchronize, cuEventSynchronize (any variant).
    Blocking,
    /// A synchronous device-to-host or host-to-device copy: the host waits.
    BlockingCopy,
    /// cuStreamQuery / cuEventQuery: returns at once, not a blocking wait.
    Polling,
    None,
}

pub fn sync_class(kind: Kind, dir: Dir) -> SyncClass {
    match kind {
        k if k.is_blocking_sync() => SyncClass::Blocking,
        Kind::Copy if matches!(dir, Dir::D2H | Dir::H2D) => SyncClass::BlockingCopy,
        Kind::Query => SyncClass::Polling,
        _ => SyncClass::None,
    }
}

/// The synchronization time of a set of calls.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SyncTime {
    /// Calls that blocked the host: synchronizations and host-blocking copies.
    pub calls: u64,
    /// Time inside them.
    pub ns: u64,
    /// Polling queries (not blocking waits): how many, and their time.
    pub polling_calls: u64,
    pub polling_ns: u64,
}

impl SyncTime {
    /// Counts a call of class `kind`/`dir` that lasted `dur_ns`.
    pub fn add(&mut self, kind: Kind, dir: Dir, dur_ns: u64) {
        match sync_class(kind, dir) {
            SyncClass::Blocking | SyncClass::BlockingCopy => {
                self.calls += 1;
                self.ns = self.ns.saturating_add(dur_ns);
            }
            SyncClass::Polling => {
                self.polling_calls += 1;
                self.polling_ns = self.polling_ns.saturating_add(dur_ns);
            }
            SyncClass::None => {}
        }
    }

    /// A call of the trace model (graph nodes expanded from a launch are not calls the program made).
    pub fn add_call(&mut self, c: &Call) {
        if c.is_driver_call() && !c.expanded() {
            self.add(c.kind, c.dir, c.dur);
        }
    }

    /// "2.05 ms blocked in 328 synchronizing calls (synchronizations and
    /// host-blocking copies; 41308 polling queries, 99.94 ms, not counted:
    /// they do not wait)".
    pub fn sentence(&self) -> String {
        let mut s = format!(
            "{} blocked in {} synchronizing calls (synchronizations and host-blocking copies",
            super::stats::fmt_ns(self.ns),
            self.calls
        );
        if self.polling_calls > 0 {
            s += &format!(
                "; {} polling queries, {}, not counted: they return without waiting",
                self.polling_calls,
                super::stats::fmt_ns(self.polling_ns)
            );
        }
        s + ")"
    }
}

/// A scope's GPU window: its first GPU work to its last (`busy` sorted, disjoint).
pub fn gpu_window(busy: &[(u64, u64)]) -> Option<(u64, u64)> {
    Some((busy.first()?.0, busy.last()?.1))
}

/// Idle time within [a, b): its length less the busy time in it (`busy`
/// sorted, disjoint). On a `bound` timeline, certain idle time.
pub fn idle_within(busy: &[(u64, u64)], a: u64, b: u64) -> u64 {
    b.saturating_sub(a).saturating_sub(covered(busy, a, b))
}

/// NVML's utilization (`util_gpu_pct`: the share of its last sample period,
/// 1/6 s to 1 s, in which any kernel ran on the device) averaged over the
/// samples taken in [a, b) on the given GPUs (all when `gpus` is empty);
/// `None` without samples there. Device-wide (every process, traced or
/// not) and coarse: beside a lower bound it tells roughly how busy the
/// GPU was, not when (docs/gaps.md, NVML utilization).
pub fn nvml_util_pct(series: &[super::energy::EnergySeries], gpus: &[u32], a: u64, b: u64) -> Option<f64> {
    let (mut sum, mut n) = (0.0, 0u64);
    for s in series.iter().filter(|s| gpus.is_empty() || gpus.contains(&s.gpu)) {
        let lo = s.util.partition_point(|u| u.0 < a);
        let hi = s.util.partition_point(|u| u.0 < b);
        for u in &s.util[lo..hi] {
            sum += u.1;
            n += 1;
        }
    }
    (n > 0).then(|| sum / n as f64)
}

/// An energy figure as the tables print it: "12.50 J", "12.50 J ±0.40?"
/// (a period shorter than two counter updates), or "≥ 7292.52 J (99.6 %
/// sampled)" when NVML samples cover only part of the period (the energy of
/// the covered part, a lower bound).
pub fn energy_text(e: &Option<Energy>) -> String {
    match e {
        Some(e) if e.covered_share < 1.0 => {
            // never "100.0 %" for a period the samples do not cover whole
            let pct = (1000.0 * e.covered_share).floor() / 10.0;
            format!("≥ {:.2} J ({pct:.1}% sampled)", e.joules)
        }
        Some(e) if e.uncertain => format!("{:.2} J ±{:.2}", e.joules, e.uncertainty_j),
        Some(e) => format!("{:.2} J", e.joules),
        None => "-".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_by_type_and_op_whatever_the_entry_point() {
        let k = |ty, op, name| Kind::classify(tracer_format::line::LineType::parse(ty), op, name);
        for name in ["cuCtxSynchronize", "cuCtxSynchronize_v2"] {
            assert_eq!(sync_class(k("sync", "ctx_synchronize", name), Dir::None), SyncClass::Blocking);
        }
        for name in ["cuStreamSynchronize", "cuStreamSynchronize_ptsz"] {
            assert_eq!(sync_class(k("sync", "stream_synchronize", name), Dir::None), SyncClass::Blocking);
        }
        assert_eq!(sync_class(k("sync", "event_query", "cuEventQuery"), Dir::None), SyncClass::Polling);
        assert_eq!(sync_class(k("sync", "stream_query", "cuStreamQuery_ptsz"), Dir::None), SyncClass::Polling);
        assert_eq!(sync_class(k("memcpy", "copy", "cuMemcpyDtoH_v2"), Dir::D2H), SyncClass::BlockingCopy);
        assert_eq!(sync_class(k("memcpy", "copy", "cuMemcpyDtoHAsync_v2_ptsz"), Dir::D2H), SyncClass::None);
        assert_eq!(sync_class(k("memcpy", "copy", "cuMemcpyBatchAsync"), Dir::H2D), SyncClass::None);
        assert_eq!(sync_class(k("memcpy", "copy", "cuMemcpyDtoD_v2"), Dir::D2D), SyncClass::None);
        assert_eq!(sync_class(k("sync", "stream_wait_event", "cuStreamWaitEvent"), Dir::None), SyncClass::None);
        let mut s = SyncTime::default();
        s.add(Kind::StreamSync, Dir::None, 3_000);
        s.add(Kind::Copy, Dir::D2H, 2_000);
        s.add(Kind::Query, Dir::None, 1_000);
        assert_eq!((s.calls, s.ns, s.polling_calls, s.polling_ns), (2, 5_000, 1, 1_000));
        assert_eq!(
            s.sentence(),
            "5.0 µs blocked in 2 synchronizing calls (synchronizations and host-blocking copies; 1 polling queries, \
             1.0 µs, not counted: they return without waiting)"
        );
    }

    #[test]
    fn span_of_lines_as_the_model() {
        let mut a = SpanAcc::default();
        a.add("header", Some(1), None, None);
        a.add("kernel", Some(100), Some(2.0004), None);
        a.add("gpu", Some(150), None, Some(5_000));
        a.add("power", Some(90), None, None);
        a.add("gpu_window", Some(10), None, Some(9_000));
        assert_eq!(a.span(), Some((90, 5_000)));
        let mut b = SpanAcc::default();
        b.add("kernel", Some(100), Some(6.0), None);
        assert_eq!(b.span(), Some((100, 6_100)));
    }

    #[test]
    fn nvml_utilization_is_the_mean_of_the_samples_in_the_window() {
        let s =
            |gpu: u32, util: Vec<(u64, f64)>| super::super::energy::EnergySeries { gpu, util, ..Default::default() };
        let series = [s(0, vec![(10, 20.0), (20, 40.0), (30, 90.0)]), s(1, vec![(15, 0.0)])];
        assert_eq!(nvml_util_pct(&series, &[0], 10, 30), Some(30.0));
        assert_eq!(nvml_util_pct(&series, &[], 10, 30), Some(20.0));
        assert_eq!(nvml_util_pct(&series, &[0], 31, 40), None);
    }

    #[test]
    fn partly_sampled_energy_is_a_lower_bound() {
        let e = |share: f64| {
            Some(Energy {
                joules: 7292.52,
                method: "counter",
                uncertain: true,
                uncertainty_j: 0.0,
                covered_share: share,
            })
        };
        assert_eq!(energy_text(&e(0.9996)), "≥ 7292.52 J (99.9% sampled)");
        assert_eq!(energy_text(&e(0.5)), "≥ 7292.52 J (50.0% sampled)");
        assert_eq!(energy_text(&None), "-");
    }
}
