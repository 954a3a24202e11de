//! What bounds each phase: the verdict at the top of `tracer report` (rules
//! in docs/analysis.md#verdict). Consumes the report's phase rows and the
//! GPU timeline; the idle time of each phase is split by what the main
//! process's CPU side was doing (the causes of [`gaps::attribute`], grouped
//! as HTA groups them: submission overhead, synchronization waits, CPU
//! between calls, and the rest).
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use serde::Serialize;

use super::basis::IdleBasis;
use super::gaps::{self, CAUSES};
use super::model::Trace;
use super::report::{PeriodRow, Report};
use super::stats::{complement, covered, union};
use super::timeline::{Timeline, WorkKind};

/// GPU busy at least this share of a phase: GPU- (or transfer-) bound.
pub const GPU_BOUND_BUSY: f64 = 0.8;
/// Copies at least this share of the GPU busy time: transfer-bound.
pub const TRANSFER_SHARE: f64 = 0.5;
/// A phase with less than this share of the main process's GPU
/// submissions (launches and copies) is idle between phases.
pub const IDLE_PHASE_WORK: f64 = 0.01;
/// Lower-bound timelines with little certain idle time: the host blocked in
/// synchronization at least this share of the phase: GPU-bound (otherwise
/// undetermined: a host that never synchronizes may be blocked inside
/// launch calls on a full queue, which entry-only launch probes do not time).
pub const HOST_WAIT_HIGH: f64 = 0.5;
/// A phase idle at least this share, most of it start-up or module
/// loading, is idle between phases however much it submitted.
pub const STARTUP_IDLE: f64 = 0.9;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Bound {
    /// Launch/host-bound: the GPU waits for the CPU to submit work.
    Host,
    /// The GPU idles while the host waits in synchronization calls.
    Sync,
    /// The GPU is busy running kernels.
    Gpu,
    /// The GPU is busy mostly with copies.
    Transfer,
    /// Next to no GPU work: start-up, loading, the host between GPU phases.
    Idle,
    /// Not decidable from this trace (no kernel durations and a mixed picture).
    Undetermined,
}

impl Bound {
    pub fn label(self) -> &'static str {
        match self {
            Bound::Host => "launch/host-bound",
            Bound::Sync => "synchronization-bound",
            Bound::Gpu => "GPU-bound",
            Bound::Transfer => "transfer-bound",
            Bound::Idle => "idle between phases",
            Bound::Undetermined => "undetermined",
        }
    }
}

/// The GPU idle time of a phase split by what the CPU side was doing.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct IdleSplit {
    /// A launch/copy/set call in flight.
    pub submission_ns: u64,
    /// A synchronization call (or blocking copy) in flight.
    pub sync_wait_ns: u64,
    /// No driver call in flight: Python, the framework.
    pub cpu_between_calls_ns: u64,
    /// Start-up, module loading, allocation, ioctls, other driver calls.
    pub other_ns: u64,
    /// Every cause of [`CAUSES`] with its time.
    pub by_cause: BTreeMap<&'static str, u64>,
}

impl IdleSplit {
    fn total(&self) -> u64 {
        self.submission_ns + self.sync_wait_ns + self.cpu_between_calls_ns + self.other_ns
    }

    /// The largest of the "other" causes.
    fn main_other(&self) -> Option<&'static str> {
        self.by_cause
            .iter()
            .filter(|(c, _)| !matches!(**c, "submission" | "synchronization" | "cpu_between_calls"))
            .max_by_key(|(_, n)| **n)
            .filter(|(_, n)| **n > 0)
            .map(|(c, _)| *c)
    }
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct PhaseVerdict {
    pub phase: String,
    pub start: u64,
    pub end: u64,
    pub dur_ns: u64,
    pub bound: Bound,
    pub label: &'static str,
    /// GPU busy share of the phase (`None` on a lower-bound timeline).
    pub busy_share: Option<f64>,
    /// GPU idle time in the phase (a lower bound on a lower-bound timeline).
    pub idle_ns: u64,
    pub idle_is_lower_bound: bool,
    /// Copies' share of the GPU busy time.
    pub copy_share_of_busy: Option<f64>,
    /// Time the main process spent blocked in synchronization calls and
    /// blocking copies, as a share of the phase.
    pub host_wait_share: f64,
    /// The phase's share of the main process's GPU submissions.
    pub work_share: f64,
    /// CUDA graph launches in the phase (main process).
    pub graph_launches: u64,
    pub idle_split: IdleSplit,
    /// The figures that show it, one line.
    pub evidence: String,
    /// What to try, one line.
    pub try_next: String,
    /// What the launching thread did in the phase's idle gaps of at least
    /// [`OS_GAP_NS`] (scheduler events; None when the trace has none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idle_os: Option<super::thread_states::OsSplit>,
}

/// Idle gaps at least this long are split by the launching thread's states
/// (as `tracer gaps`' default threshold).
pub const OS_GAP_NS: u64 = 100_000;

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Verdict {
    /// The run's verdict: that of the phase with the most GPU submissions.
    pub bound: Bound,
    pub label: &'static str,
    /// The phase it comes from.
    pub phase: Option<String>,
    pub phases: Vec<PhaseVerdict>,
}

fn pct(x: f64) -> String {
    format!("{:.1}%", 100.0 * x)
}

/// The verdict of every phase of the report's main process.
pub fn judge(t: &Trace, tl: &Timeline, r: &Report) -> Option<Verdict> {
    let pid = r.main_pid?;
    let known = IdleBasis::of(tl).share_known();
    let mine = |k: Option<WorkKind>| {
        union(
            tl.streams
                .iter()
                .filter(|s| s.key.pid == pid)
                .flat_map(|s| s.intervals.iter())
                .filter(|i| k.is_none_or(|k| i.kind == k))
                .map(|i| (i.start, i.end))
                .collect(),
        )
    };
    let busy = mine(None);
    let copies = mine(Some(WorkKind::Memcpy));
    let pids: BTreeSet<u32> = [pid].into();
    let acts = gaps::activities(t, &pids, &gaps::first_work(t, tl));
    let work = |p: &PeriodRow| p.counts.launches + p.counts.copies;
    let all_work: u64 = r.phases.iter().map(work).sum();
    let phases: Vec<PhaseVerdict> = r
        .phases
        .iter()
        .filter(|p| p.dur_ns > 0)
        .map(|p| {
            let (a, b) = (p.start, p.end);
            let busy_ns = covered(&busy, a, b);
            let copy_ns = covered(&copies, a, b);
            let gaps = complement(&busy, a, b);
            let mut split = IdleSplit::default();
            for g in gaps::attribute(&gaps, &acts) {
                for (i, ns) in g.iter().enumerate() {
                    *split.by_cause.entry(CAUSES[i]).or_default() += ns;
                }
            }
            for (&c, &ns) in &split.by_cause {
                match c {
                    "submission" => split.submission_ns += ns,
                    "synchronization" => split.sync_wait_ns += ns,
                    "cpu_between_calls" => split.cpu_between_calls_ns += ns,
                    _ => split.other_ns += ns,
                }
            }
            split.by_cause.retain(|_, ns| *ns > 0);
            let dur = p.dur_ns as f64;
            let lo = t.calls.partition_point(|c| c.ts < a);
            let hi = t.calls.partition_point(|c| c.ts < b);
            let graph_launches =
                t.calls[lo..hi].iter().filter(|c| c.pid == pid && c.kind == super::model::Kind::GraphLaunch).count()
                    as u64;
            let idle_ns = p.dur_ns - busy_ns;
            let v = Facts {
                busy_share: known.then(|| busy_ns as f64 / dur),
                idle_share: idle_ns as f64 / dur,
                copy_share: (busy_ns > 0 && known).then(|| copy_ns as f64 / busy_ns as f64),
                host_wait: p.counts.sync_ns as f64 / dur,
                work_share: if all_work > 0 { work(p) as f64 / all_work as f64 } else { 0.0 },
                graph_launches,
                split,
            };
            let (bound, evidence, try_next) = v.judge();
            let idle_os = t.sched.recorded.then(|| {
                let mut sum = super::thread_states::OsSplit::default();
                for &(ga, gb) in gaps.iter().filter(|g| g.1 - g.0 >= OS_GAP_NS) {
                    if let Some(id) = super::thread_states::gap_thread(t, &pids, ga) {
                        sum.add(&super::thread_states::split(t, id, ga, gb));
                    }
                }
                sum.thread = None;
                sum
            });
            PhaseVerdict {
                phase: p.name.clone(),
                start: a,
                end: b,
                dur_ns: p.dur_ns,
                bound,
                label: bound.label(),
                busy_share: v.busy_share,
                idle_ns,
                idle_is_lower_bound: !known,
                copy_share_of_busy: v.copy_share,
                host_wait_share: v.host_wait,
                work_share: v.work_share,
                graph_launches: v.graph_launches,
                idle_split: v.split,
                evidence,
                try_next,
                idle_os,
            }
        })
        .collect();
    let top = phases
        .iter()
        .filter(|p| p.bound != Bound::Idle)
        .max_by(|x, y| x.work_share.total_cmp(&y.work_share).then(y.start.cmp(&x.start)));
    let (bound, phase) = match top {
        Some(p) => (p.bound, Some(p.phase.clone())),
        None => (Bound::Idle, None),
    };
    Some(Verdict { bound, label: bound.label(), phase, phases })
}

/// One phase's figures.
struct Facts {
    busy_share: Option<f64>,
    /// Idle share; a lower bound when `busy_share` is None.
    idle_share: f64,
    copy_share: Option<f64>,
    host_wait: f64,
    work_share: f64,
    graph_launches: u64,
    split: IdleSplit,
}

impl Facts {
    /// "of the idle time: CPU between calls 85.7%, submission 10.1%, sync waits 2.0%, other 2.2% (module loading)".
    fn split_text(&self) -> String {
        let s = &self.split;
        let total = s.total().max(1) as f64;
        let mut v = [
            ("CPU between calls", s.cpu_between_calls_ns),
            ("submission", s.submission_ns),
            ("sync waits", s.sync_wait_ns),
            ("other", s.other_ns),
        ];
        v.sort_by_key(|x| std::cmp::Reverse(x.1));
        let mut out = String::from("idle split: ");
        // the causes that took at least 0.05% of it
        for (i, (name, ns)) in v.iter().filter(|x| x.1 as f64 / total >= 0.0005).enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            let _ = write!(out, "{name} {}", pct(*ns as f64 / total));
            if *name == "other"
                && let Some(c) = s.main_other()
            {
                let _ = write!(out, " (mostly {})", c.replace('_', " "));
            }
        }
        out
    }

    fn judge(&self) -> (Bound, String, String) {
        let idle_txt = match self.busy_share {
            Some(_) => format!("GPU idle {}", pct(self.idle_share)),
            None => format!("GPU idle ≥ {} (lower bound)", pct(self.idle_share)),
        };
        let s = &self.split;
        let starting = self.idle_share >= STARTUP_IDLE
            && 2 * s.other_ns >= s.total()
            && matches!(s.main_other(), Some("process_start" | "module_loading"));
        if self.work_share < IDLE_PHASE_WORK || starting {
            return (
                Bound::Idle,
                format!("{} of the GPU submissions; {idle_txt}; {}", pct(self.work_share), self.split_text()),
                "nothing here for the GPU; if it matters, shorten start-up and loading (imports, weights, \
                 CUDA_MODULE_LOADING=LAZY)"
                    .into(),
            );
        }
        if let Some(busy) = self.busy_share
            && busy >= GPU_BOUND_BUSY
        {
            let copies = self.copy_share.unwrap_or(0.0);
            if copies >= TRANSFER_SHARE {
                return (
                    Bound::Transfer,
                    format!("GPU busy {}, {} of it copies", pct(busy), pct(copies)),
                    "copy less or overlap it: keep data on the GPU, pinned host memory, async copies on their own \
                     stream"
                        .into(),
                );
            }
            return (
                Bound::Gpu,
                format!("GPU busy {}, {} of it copies", pct(busy), pct(copies)),
                "faster kernels: the top kernels by GPU time, lower precision, fusion (torch.compile); larger \
                 batches will not help"
                    .into(),
            );
        }
        if self.busy_share.is_none() && self.idle_share < 1.0 - GPU_BOUND_BUSY {
            // Little certain idle time: only a host that mostly waits tells.
            let wait = format!(
                "{idle_txt}; the host blocked in synchronization {} of the phase; the GPU's busy time is unknown (no kernel \
                 durations)",
                pct(self.host_wait)
            );
            if self.host_wait >= HOST_WAIT_HIGH {
                return (
                    Bound::Gpu,
                    wait,
                    "the host mostly waits for the GPU: faster kernels; record with --gpu-timestamps to see which"
                        .into(),
                );
            }
            return (
                Bound::Undetermined,
                wait,
                "record with --gpu-timestamps (or pass --durations FILE) to measure the GPU's busy time".into(),
            );
        }
        let host = s.submission_ns + s.cpu_between_calls_ns;
        let evidence = format!("{idle_txt}; {}", self.split_text());
        if s.sync_wait_ns > host && s.sync_wait_ns >= s.other_ns {
            return (
                Bound::Sync,
                evidence,
                "fewer synchronizations in the loop (.item(), .cpu(), cudaStreamSynchronize); overlap work on \
                 streams; on several GPUs, look at the slowest rank"
                    .into(),
            );
        }
        let try_next = if host >= s.other_ns {
            if self.graph_launches > 0 {
                "it already replays CUDA graphs: capture more of each step in one graph, less host work between \
                 replays, larger batches"
            } else if s.submission_ns > s.cpu_between_calls_ns {
                "fewer, larger launches: CUDA graphs (torch.compile mode=\"reduce-overhead\") or kernel fusion"
            } else {
                "less host time between launches: CUDA graphs (torch.compile mode=\"reduce-overhead\"), larger \
                 batches, less Python per step"
            }
        } else {
            match s.main_other() {
                Some("allocation") => "allocate once and reuse (caching allocator, preallocated buffers)",
                Some("module_loading") => "load modules before the measured work (warm-up, CUDA_MODULE_LOADING)",
                Some("process_start") => "start-up dominates: warm up before measuring",
                _ => "see `tracer gaps` for the driver calls in the idle time",
            }
        };
        (Bound::Host, evidence, try_next.into())
    }
}

/// The verdict as text: the run's line, then per phase its time, verdict and
/// figures, and what to try.
pub fn render(v: &Verdict, out: &mut String) {
    use super::inert;
    let _ = writeln!(
        out,
        "verdict: {}{}",
        v.label,
        v.phase.as_ref().map_or(String::new(), |p| format!(" (phase {}, the most GPU submissions)", inert::name(p)))
    );
    let w = v.phases.iter().map(|p| inert::name(&p.phase).chars().count()).max().unwrap_or(0);
    let tw = v.phases.iter().map(|p| super::gaps::fmt_ns(p.dur_ns).chars().count()).max().unwrap_or(0);
    use super::text_table::{MAX_COLUMNS, wrap};
    for p in &v.phases {
        let phase = inert::name(&p.phase);
        let line = format!("  {phase:<w$}  {:>tw$}  {}: {}\n", super::gaps::fmt_ns(p.dur_ns), p.label, p.evidence);
        // continuation lines under the verdict column
        out.push_str(&wrap(&line, MAX_COLUMNS, w + tw + 4));
        if p.bound != Bound::Idle {
            if let Some(os) = p.idle_os.as_ref().filter(|o| o.total_ns > 0) {
                let line = format!(
                    "  {:<w$}  {:>tw$}  while idle ≥ 100 µs, the launching thread was: {}\n",
                    "",
                    "",
                    os.sentence(4)
                );
                out.push_str(&wrap(&line, MAX_COLUMNS, 5));
            }
            let line = format!("  {:<w$}  {:>tw$}  try: {}\n", "", "", p.try_next);
            out.push_str(&wrap(&line, MAX_COLUMNS, 5));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(busy: Option<f64>, idle: f64, copies: f64, wait: f64, work: f64, split: [u64; 4]) -> Facts {
        Facts {
            graph_launches: 0,
            busy_share: busy,
            idle_share: idle,
            copy_share: Some(copies),
            host_wait: wait,
            work_share: work,
            split: IdleSplit {
                submission_ns: split[0],
                sync_wait_ns: split[1],
                cpu_between_calls_ns: split[2],
                other_ns: split[3],
                by_cause: BTreeMap::from([("allocation", split[3])]),
            },
        }
    }

    #[test]
    fn rules() {
        let b = |f: Facts| f.judge().0;
        assert_eq!(b(facts(Some(0.01), 0.99, 0.0, 0.0, 0.005, [0, 0, 1, 0])), Bound::Idle);
        assert_eq!(b(facts(Some(0.9), 0.1, 0.1, 0.9, 0.5, [0, 0, 1, 0])), Bound::Gpu);
        assert_eq!(b(facts(Some(0.9), 0.1, 0.6, 0.9, 0.5, [0, 0, 1, 0])), Bound::Transfer);
        assert_eq!(b(facts(Some(0.1), 0.9, 0.0, 0.0, 0.5, [10, 5, 80, 5])), Bound::Host);
        assert_eq!(b(facts(Some(0.1), 0.9, 0.0, 0.8, 0.5, [10, 80, 5, 5])), Bound::Sync);
        // lower bound, little certain idle: the host's waits decide
        assert_eq!(b(facts(None, 0.05, 0.0, 0.6, 0.5, [0; 4])), Bound::Gpu);
        assert_eq!(b(facts(None, 0.05, 0.0, 0.05, 0.5, [0; 4])), Bound::Undetermined);
        assert_eq!(b(facts(None, 0.05, 0.0, 0.3, 0.5, [0; 4])), Bound::Undetermined);
        // start-up: idle between phases however much it copied
        let mut f = facts(Some(0.01), 0.99, 0.9, 0.0, 0.3, [0, 0, 1, 9]);
        f.split.by_cause = BTreeMap::from([("process_start", 9)]);
        assert_eq!(b(f), Bound::Idle);
        // lower bound with much certain idle: the split decides
        assert_eq!(b(facts(None, 0.5, 0.0, 0.3, 0.5, [10, 80, 5, 5])), Bound::Sync);
        let (_, ev, _) = facts(Some(0.1), 0.9, 0.0, 0.0, 0.5, [10, 5, 80, 5]).judge();
        assert_eq!(
            ev,
            "GPU idle 90.0%; idle split: CPU between calls 80.0%, submission 10.0%, sync waits 5.0%, other 5.0% \
             (mostly allocation)"
        );
    }
}
