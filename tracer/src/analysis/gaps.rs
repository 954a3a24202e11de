//! `tracer gaps`: idle periods of each GPU and each process (method in
//! docs/gaps.md).
//!
//! A scope (a GPU, or one process's work on its GPUs) is busy when any of its
//! streams has an interval of the [`Timeline`]; its gaps are the complement of
//! the union of those intervals within its window, from its first GPU work to
//! its last. Per phase, the gaps are those of the phase's whole window (the
//! main process's phases, as `tracer report` shows them: time of the phase
//! before the scope's first or after its last GPU work is idle too; a gap
//! across a boundary counts in both, each its part).
//!
//! Each gap of at least the threshold is attributed, instant by instant, to
//! what the CPU side of the scope's processes was doing, by priority:
//! process start-up (before the process's first GPU work), module loading,
//! allocation, synchronization (incl. polling queries), an ioctl, submission
//! (a launch/copy/set call in flight), another driver call, or no driver call
//! in flight (CPU work between calls: Python, the framework).
//!
//! Public entry points: [`analyze`] (the whole report), [`busy`],
//! [`gaps_of`], [`stats`], [`attribute`] (for plots: gap lengths come from
//! `ScopeReport::gaps`).
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use serde::Serialize;

use super::basis::IdleBasis;
use super::gap_stacks::{self, Attributor, CodeSplit, GapCode};
use super::model::{Kind, Trace};
use super::phases::{Phases, process_spans};
use super::stats::{Bucket, complement, log_histogram, nearest_rank, union};
use super::thread_states::{self, OsSplit};
use super::timeline::{Source, Timeline};

pub const CAUSES: [&str; 8] = [
    "process_start",
    "module_loading",
    "allocation",
    "synchronization",
    "ioctl",
    "submission",
    "other_driver_call",
    "cpu_between_calls",
];
const NONE_CAUSE: u8 = 7;

#[derive(Clone, Debug)]
pub struct GapOptions {
    pub threshold_ns: u64,
    pub switch_costs_ns: Vec<u64>,
    /// Longest gaps listed individually.
    pub top: usize,
}

impl Default for GapOptions {
    fn default() -> Self {
        GapOptions {
            threshold_ns: 100_000,
            switch_costs_ns: [5, 10, 25, 50, 100, 250, 1000].iter().map(|x| x * 1000).collect(),
            top: 10,
        }
    }
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct SwitchRow {
    pub switch_cost_ns: u64,
    /// Σ max(0, gap − 2·cost) over all gaps.
    pub usable_ns: u64,
    pub usable_share: f64,
    /// Gaps longer than 2·cost.
    pub gaps_usable: u64,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct GapStats {
    pub window_ns: u64,
    /// Busy time; `None` when only a lower bound on idle time is known
    /// (`idle_basis: lower_bound`).
    pub busy_ns: Option<u64>,
    pub count: u64,
    /// Idle time; with `idle_basis: lower_bound` the certain idle time, a
    /// lower bound.
    pub idle_ns: u64,
    /// idle / window; `None` when only a lower bound is known.
    pub idle_share: Option<f64>,
    /// `idle_basis: lower_bound` only: certain idle time / window, a lower
    /// bound on the idle share.
    pub idle_share_lower_bound: Option<f64>,
    pub p50_ns: u64,
    pub p90_ns: u64,
    pub p99_ns: u64,
    pub max_ns: u64,
    pub histogram: Vec<Bucket>,
    pub threshold_ns: u64,
    pub long_count: u64,
    pub long_ns: u64,
    pub long_share: f64,
    pub switch: Vec<SwitchRow>,
}

#[derive(Clone, Debug, Serialize)]
pub struct PhaseGaps {
    pub phase: String,
    pub start: u64,
    pub end: u64,
    pub stats: GapStats,
    /// What the launching threads did in the phase's long gaps (their parts
    /// inside the phase), when scheduler events were recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub os: Option<OsSplit>,
    /// Which code held the GPU idle in the phase's long gaps (their parts
    /// inside the phase), when the trace has stacks (analysis/gap_stacks.rs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<CodeSplit>,
}

#[derive(Clone, Debug, Serialize)]
pub struct LongGap {
    pub start: u64,
    pub end: u64,
    pub dur_ns: u64,
    /// Cause -> ns within the gap.
    pub causes: BTreeMap<&'static str, u64>,
    /// What the thread that ended the gap did in it (scheduler events).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub os: Option<OsSplit>,
    /// Which code held the GPU idle (stacks; analysis/gap_stacks.rs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<GapCode>,
}

#[derive(Clone, Debug, Serialize)]
pub struct ScopeReport {
    /// "gpu 0" or "pid 445 (python3)".
    pub scope: String,
    pub kind: &'static str,
    pub window: (u64, u64),
    pub overall: GapStats,
    pub phases: Vec<PhaseGaps>,
    /// Shares of the time of all gaps ≥ threshold, by cause.
    pub long_gap_causes: BTreeMap<&'static str, f64>,
    /// What the launching threads did in all gaps ≥ threshold (scheduler
    /// events; None when the trace has none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub long_gap_os: Option<OsSplit>,
    /// Which code held the GPU idle in all gaps ≥ threshold (None when the
    /// trace has no stacks).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub long_gap_code: Option<CodeSplit>,
    pub longest: Vec<LongGap>,
    /// `gpu` scopes: NVML's utilization over the window (mean of its samples,
    /// device-wide; analysis/figures.rs), beside a lower bound a rough busy share.
    pub nvml_util_pct: Option<f64>,
    /// Every gap [start, end) (JSON only with `tracer gaps --json --list`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub gaps: Vec<(u64, u64)>,
    /// The GPU of a `gpu` scope.
    #[serde(skip)]
    pub device: Option<u32>,
    /// The processes whose CPU activity the scope's gaps are attributed to.
    #[serde(skip)]
    pub pids: BTreeSet<u32>,
}

#[derive(Clone, Debug, Serialize)]
pub struct GapReport {
    pub trace: String,
    pub timeline: Source,
    /// What the busy/idle figures rest on: `measured`, `calibrated` or
    /// `lower_bound` (busy time and idle share unknown).
    pub idle_basis: IdleBasis,
    /// `calibrated`: where the kernel durations came from.
    pub calibrated_from: Option<String>,
    pub timeline_meaning: &'static str,
    pub diagnostics: super::timeline::Diagnostics,
    /// Where the per-phase windows come from (markers or detected).
    pub phase_source: Option<super::phases::PhaseSource>,
    /// The synchronization time of the trace's calls (analysis/figures.rs).
    pub synchronization: super::figures::SyncTime,
    /// The user stacks of the trace (`stack` lines), and the lines naming
    /// an id no `stack` line defines (both left out of the JSON when 0).
    #[serde(skip_serializing_if = "is_zero")]
    pub stacks: usize,
    #[serde(skip_serializing_if = "is_zero")]
    pub unknown_stack_refs: u64,
    /// The header has `stacks` (a tracer that can take them made the
    /// trace): without stack lines the text says so.
    #[serde(skip)]
    pub stacks_in_header: bool,
    pub scopes: Vec<ScopeReport>,
}

fn is_zero<T: Default + PartialEq>(n: &T) -> bool {
    *n == T::default()
}

/// The union of the intervals (busy time) of the given streams.
pub fn busy<'a>(it: impl Iterator<Item = &'a super::timeline::GpuInterval>) -> Vec<(u64, u64)> {
    union(it.map(|i| (i.start, i.end)).collect())
}

/// Gaps of `busy` within its own extent (first start to last end).
pub fn gaps_of(busy: &[(u64, u64)]) -> ((u64, u64), Vec<(u64, u64)>) {
    match (busy.first(), busy.last()) {
        (Some(f), Some(l)) => ((f.0, l.1), complement(busy, f.0, l.1)),
        _ => ((0, 0), vec![]),
    }
}

/// Statistics of gaps within a window of `window_ns` ns.
pub fn stats(gaps: &[(u64, u64)], window_ns: u64, o: &GapOptions) -> GapStats {
    let mut len: Vec<u64> = gaps.iter().map(|g| g.1 - g.0).filter(|&l| l > 0).collect();
    len.sort_unstable();
    let idle: u64 = len.iter().sum();
    let share = |x: u64| if window_ns > 0 { x as f64 / window_ns as f64 } else { 0.0 };
    let long: Vec<u64> = len.iter().copied().filter(|&l| l >= o.threshold_ns).collect();
    let long_ns: u64 = long.iter().sum();
    let switch = o
        .switch_costs_ns
        .iter()
        .map(|&x| {
            let usable: u64 = len.iter().map(|&g| g.saturating_sub(2 * x)).sum();
            SwitchRow {
                switch_cost_ns: x,
                usable_ns: usable,
                usable_share: share(usable),
                gaps_usable: len.iter().filter(|&&g| g > 2 * x).count() as u64,
            }
        })
        .collect();
    GapStats {
        window_ns,
        busy_ns: Some(window_ns.saturating_sub(idle)),
        count: len.len() as u64,
        idle_ns: idle,
        idle_share: Some(share(idle)),
        idle_share_lower_bound: None,
        p50_ns: nearest_rank(&len, 50.0),
        p90_ns: nearest_rank(&len, 90.0),
        p99_ns: nearest_rank(&len, 99.0),
        max_ns: len.last().copied().unwrap_or(0),
        histogram: log_histogram(&len),
        threshold_ns: o.threshold_ns,
        long_count: long.len() as u64,
        long_ns,
        long_share: share(long_ns),
        switch,
    }
}

impl GapStats {
    /// The same figures when the gaps are only the certain ones: busy time
    /// and idle share unknown, the share a lower bound.
    pub fn as_lower_bound(mut self) -> Self {
        self.busy_ns = None;
        self.idle_share_lower_bound = self.idle_share.take();
        self
    }

    /// The idle share, or its lower bound.
    pub fn idle_share_or_bound(&self) -> f64 {
        self.idle_share.or(self.idle_share_lower_bound).unwrap_or(0.0)
    }
}

/// CPU-side activity intervals (start, end, cause index) of the given pids, sorted by start.
pub fn activities(t: &Trace, pids: &BTreeSet<u32>, first_work: &BTreeMap<u32, u64>) -> Vec<(u64, u64, u8)> {
    let mut v = Vec::new();
    let spans = process_spans(t);
    for &p in pids {
        if let (Some(s), Some(&w)) = (spans.get(&p), first_work.get(&p))
            && w > s.0
        {
            v.push((s.0, w, 0));
        }
    }
    for c in t.calls.iter().filter(|c| pids.contains(&c.pid) && c.is_driver_call()) {
        let cause = match c.kind {
            Kind::Module => {
                let n = t.name(c.func);
                if n.contains("Load") { 1 } else { 6 }
            }
            Kind::Alloc | Kind::Free => 2,
            Kind::StreamSync | Kind::CtxSync | Kind::EventSync | Kind::Query => 3,
            k if k.is_gpu_work() => {
                if k == Kind::Copy && c.dir != super::model::Dir::D2D {
                    3 // a blocking copy waits like a synchronization
                } else {
                    5
                }
            }
            _ => 6,
        };
        if c.dur > 0 {
            v.push((c.ts, c.end(), cause));
        }
    }
    for i in t.ioctls.iter().filter(|i| pids.contains(&i.pid)) {
        if i.dur > 0 {
            v.push((i.ts, i.ts + i.dur, 4));
        }
    }
    v.sort_unstable();
    v
}

/// For each gap (sorted, disjoint), ns per cause (index into [`CAUSES`]).
pub fn attribute(gaps: &[(u64, u64)], acts: &[(u64, u64, u8)]) -> Vec<[u64; 8]> {
    let mut out = Vec::with_capacity(gaps.len());
    let mut j = 0;
    let mut active: Vec<(u64, u64, u8)> = Vec::new();
    for &(a, b) in gaps {
        while j < acts.len() && acts[j].0 < b {
            active.push(acts[j]);
            j += 1;
        }
        active.retain(|x| x.1 > a);
        // sweep: boundary events within [a, b)
        let mut ev: Vec<(u64, i32, u8)> = Vec::new();
        for &(s, e, c) in &active {
            if s >= b {
                continue;
            }
            ev.push((s.max(a), 1, c));
            ev.push((e.min(b), -1, c));
        }
        ev.sort_unstable_by_key(|x| (x.0, -x.1));
        let mut count = [0i32; 8];
        let mut res = [0u64; 8];
        let mut at = a;
        let mut k = 0;
        while at < b {
            while k < ev.len() && ev[k].0 <= at {
                count[ev[k].2 as usize] += ev[k].1;
                k += 1;
            }
            let next = if k < ev.len() { ev[k].0.min(b) } else { b };
            let cause = (0..7).find(|&c| count[c] > 0).unwrap_or(NONE_CAUSE as usize);
            res[cause] += next - at;
            at = next;
        }
        out.push(res);
    }
    out
}

/// What one scope covers.
struct Scope {
    name: String,
    kind: &'static str,
    device: Option<u32>,
    busy: Vec<(u64, u64)>,
    pids: BTreeSet<u32>,
}

fn scope_report(
    t: &Trace,
    sc: Scope,
    first_work: &BTreeMap<u32, u64>,
    phases: &Phases,
    o: &GapOptions,
    basis: IdleBasis,
) -> ScopeReport {
    let Scope { name, kind, device, busy, pids } = sc;
    let (window, gaps) = gaps_of(&busy);
    let known = |st: GapStats| if basis.share_known() { st } else { st.as_lower_bound() };
    let overall = known(stats(&gaps, window.1 - window.0, o));
    let phase_list = if matches!(kind, "process" | "process_gpu") && pids.len() == 1 {
        phases.by_pid.get(pids.iter().next().unwrap()).map_or(&[][..], |v| v.as_slice())
    } else {
        phases.main()
    };
    let mut per_phase = Vec::new();
    for p in phase_list {
        // the phase's whole window (analysis/figures.rs), as in `tracer report`
        let (lo, hi) = (p.start, p.end);
        if hi <= lo {
            continue;
        }
        let clipped = complement(&busy, lo, hi);
        per_phase.push(PhaseGaps {
            phase: p.name.clone(),
            start: lo,
            end: hi,
            stats: known(stats(&clipped, hi - lo, o)),
            os: None,
            code: None,
        });
    }
    let long: Vec<(u64, u64)> = gaps.iter().copied().filter(|g| g.1 - g.0 >= o.threshold_ns).collect();
    // The operating-system side of each long gap: its launching thread's states.
    let os: Vec<Option<OsSplit>> = long
        .iter()
        .map(|&(a, b)| {
            t.sched.recorded.then(|| match thread_states::gap_thread(t, &pids, a) {
                Some(id) => thread_states::split(t, id, a, b),
                None => OsSplit { total_ns: b - a, unknown_ns: b - a, ..Default::default() },
            })
        })
        .collect();
    let long_gap_os = t.sched.recorded.then(|| {
        let mut sum = OsSplit::default();
        os.iter().flatten().for_each(|x| sum.add(x));
        sum
    });
    for pg in per_phase.iter_mut().filter(|_| t.sched.recorded) {
        let mut sum = OsSplit::default();
        for (&(a, b), x) in long.iter().zip(&os) {
            let (lo, hi) = (a.max(pg.start), b.min(pg.end));
            if hi <= lo {
                continue;
            }
            match x.as_ref().and_then(|x| x.thread) {
                // the gap's part inside the phase
                Some(id) if (lo, hi) != (a, b) => sum.add(&thread_states::split(t, id, lo, hi)),
                _ => sum.add(x.as_ref().expect("recorded")),
            }
        }
        sum.thread = None;
        pg.os = Some(sum);
    }
    // Which code: each long gap's, the phases' parts, the sum.
    let code_of = Attributor::new(t, &pids);
    let codes: Vec<GapCode> =
        if code_of.has_stacks() { long.iter().map(|&(a, b)| code_of.gap(a, b)).collect() } else { Vec::new() };
    let long_gap_code = code_of.has_stacks().then(|| code_of.split(&long));
    for pg in per_phase.iter_mut().filter(|_| code_of.has_stacks()) {
        pg.code = Some(code_of.split_within(&long, &codes, pg.start, pg.end));
    }
    let acts = activities(t, &pids, first_work);
    let attr = attribute(&long, &acts);
    let mut tot = [0u64; 8];
    for a in &attr {
        for i in 0..8 {
            tot[i] += a[i];
        }
    }
    let sum: u64 = tot.iter().sum();
    let long_gap_causes =
        CAUSES.iter().zip(tot).filter(|(_, n)| *n > 0).map(|(c, n)| (*c, n as f64 / sum as f64)).collect();
    let mut idx: Vec<usize> = (0..long.len()).collect();
    idx.sort_by_key(|&i| (std::cmp::Reverse(long[i].1 - long[i].0), long[i].0));
    let longest = idx
        .into_iter()
        .take(o.top)
        .map(|i| LongGap {
            start: long[i].0,
            end: long[i].1,
            dur_ns: long[i].1 - long[i].0,
            causes: CAUSES.iter().zip(attr[i]).filter(|(_, n)| *n > 0).map(|(c, n)| (*c, n)).collect(),
            os: os[i].clone(),
            code: codes.get(i).cloned(),
        })
        .collect();
    let nvml_util_pct = match (kind, device) {
        ("gpu", Some(d)) => super::figures::nvml_util_pct(&super::energy::series(t), &[d], window.0, window.1),
        _ => None,
    };
    ScopeReport {
        scope: name,
        kind,
        window,
        overall,
        phases: per_phase,
        long_gap_causes,
        long_gap_os,
        long_gap_code,
        longest,
        nvml_util_pct,
        gaps,
        device,
        pids,
    }
}

pub fn meaning(s: Source) -> &'static str {
    match s {
        Source::Measured => "measured GPU activity (CUPTI)",
        Source::Inferred => "inferred: launch times + calibrated kernel durations, simulated per stream",
        Source::Sampled => {
            "sampled: measured GPU activity (CUPTI) inside the sampling windows, elsewhere inferred from launch times + kernel durations calibrated on those windows"
        }
        Source::Bound => {
            "bound (no measured or calibrated kernel durations): busy time and idle share unknown; gaps are certain idle time between a completion proof (a synchronization's return, a successful query, a device-to-host copy) and the next submission, so idle time is a lower bound; after work never proven complete it is unknown"
        }
    }
}

/// Each process's first GPU work (interval start or submission call), which
/// ends its start-up ([`activities`]).
pub fn first_work(t: &Trace, tl: &Timeline) -> BTreeMap<u32, u64> {
    let mut first_work: BTreeMap<u32, u64> = BTreeMap::new();
    for s in &tl.streams {
        if let Some(f) = s.intervals.first() {
            let e = first_work.entry(s.key.pid).or_insert(f.start);
            *e = (*e).min(f.start);
        }
    }
    for c in t.calls.iter().filter(|c| c.kind.is_gpu_work()) {
        let e = first_work.entry(c.pid).or_insert(c.ts);
        *e = (*e).min(c.ts);
    }
    first_work
}

/// The whole report: one scope per GPU, then one per process, then one per
/// GPU of each process that used several.
pub fn analyze(t: &Trace, tl: &Timeline, phases: &Phases, o: &GapOptions) -> GapReport {
    let first_work = first_work(t, tl);
    let basis = IdleBasis::of(tl);
    let mut scopes = Vec::new();
    for d in tl.devices() {
        let pids: BTreeSet<u32> = tl.streams.iter().filter(|s| s.device == d).map(|s| s.key.pid).collect();
        let sc =
            Scope { name: format!("gpu {d}"), kind: "gpu", device: Some(d), busy: busy(tl.device_intervals(d)), pids };
        scopes.push(scope_report(t, sc, &first_work, phases, o, basis));
    }
    for p in tl.pids() {
        let b = busy(tl.streams.iter().filter(|s| s.key.pid == p).flat_map(|s| s.intervals.iter()));
        let name = format!("pid {p} ({})", t.process_name(p));
        let sc = Scope { name, kind: "process", device: None, busy: b, pids: BTreeSet::from([p]) };
        scopes.push(scope_report(t, sc, &first_work, phases, o, basis));
    }
    // A process using several GPUs: its work on each one.
    for p in tl.pids() {
        let devs: BTreeSet<u32> = tl.streams.iter().filter(|s| s.key.pid == p).map(|s| s.device).collect();
        if devs.len() < 2 {
            continue;
        }
        for d in devs {
            let b =
                busy(tl.streams.iter().filter(|s| s.key.pid == p && s.device == d).flat_map(|s| s.intervals.iter()));
            let name = format!("pid {p} ({}) on gpu {d}", t.process_name(p));
            let sc = Scope { name, kind: "process_gpu", device: Some(d), busy: b, pids: BTreeSet::from([p]) };
            scopes.push(scope_report(t, sc, &first_work, phases, o, basis));
        }
    }
    GapReport {
        trace: t.path.clone(),
        timeline: tl.source,
        idle_basis: basis,
        calibrated_from: tl.calibrated_from.clone(),
        timeline_meaning: meaning(tl.source),
        diagnostics: tl.diag.clone(),
        phase_source: phases.source(),
        synchronization: {
            let mut s = super::figures::SyncTime::default();
            t.calls.iter().for_each(|c| s.add_call(c));
            s
        },
        stacks: t.stacks.len(),
        unknown_stack_refs: t.stacks.unknown_refs,
        // `stacks` is null with --no-stacks: the key says a tracer that takes them wrote it.
        stacks_in_header: t.header.as_ref().and_then(|h| h.as_object()).is_some_and(|h| h.contains_key("stacks")),
        scopes,
    }
}

pub use super::stats::fmt_ns;

pub fn render(r: &GapReport) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "GPU idle gaps in {}", super::inert::name(&r.trace));
    let _ = writeln!(s, "timeline: {}", r.timeline_meaning);
    let bound = !r.idle_basis.share_known();
    let _ = writeln!(
        s,
        "idle figures: {}",
        match r.idle_basis {
            IdleBasis::Measured => "measured".to_string(),
            IdleBasis::Calibrated => format!(
                "inferred (calibrated from {}){}{}",
                r.calibrated_from.as_deref().unwrap_or(super::basis::UNNAMED_CALIBRATION),
                super::basis::expected_error(r.diagnostics.expected_busy_error_pct),
                super::window_check::phrase(r.diagnostics.window_check.as_ref())
            ),
            IdleBasis::LowerBound => "idle share unknown; idle ≥ X is a lower bound (record with --gpu-timestamps, \
                                      or pass --durations FILE, for the idle share)"
                .to_string(),
        }
    );
    let _ = writeln!(
        s,
        "phases: {}",
        match r.phase_source {
            Some(super::phases::PhaseSource::Marker) => "from the program's markers",
            Some(super::phases::PhaseSource::Detected) => "detected from the data (startup/loading/warmup/steady)",
            None => "none",
        }
    );
    let _ = writeln!(s, "synchronization: {}", r.synchronization.sentence());
    if r.unknown_stack_refs > 0 {
        let _ = writeln!(
            s,
            "stacks: {} lines name a stack id that no stack line defines (their time counts as without a stack)",
            r.unknown_stack_refs
        );
    }
    if r.diagnostics.unbounded_ops > 0 && bound {
        let _ = writeln!(
            s,
            "{} operations never proven complete (no later synchronization, successful query or device-to-host copy \
             of their stream): their streams are possibly busy from them to the end of the trace, so idle time after \
             them is unknown, not idle",
            r.diagnostics.unbounded_ops
        );
    }
    if matches!(r.timeline, Source::Inferred | Source::Sampled) {
        let d = &r.diagnostics;
        let _ = writeln!(
            s,
            "inference: {} ops, {} kernels timed by name only, {} unknown kernels, {} copies by the built-in model, {} intervals cut at syncs ({}), {} of sync waits unexplained",
            d.ops,
            d.by_name_only,
            d.unknown_kernels,
            d.default_copy_model,
            d.clamped,
            fmt_ns(d.clamped_ns),
            fmt_ns(d.unexplained_sync_wait_ns)
        );
        if let Some(c) = &d.coverage {
            let _ = writeln!(s, "{}", c.sentence());
        }
    }
    for (i, sc) in r.scopes.iter().enumerate() {
        let o = &sc.overall;
        // a process alone on its GPU: its figures are the GPU's, print them once
        if sc.kind == "process"
            && let Some(g) =
                r.scopes[..i].iter().find(|g| g.kind == "gpu" && g.gaps == sc.gaps && g.window == sc.window)
        {
            let (a, b) = (super::inert::name(&sc.scope), super::inert::name(&g.scope));
            let _ = writeln!(s, "\n== {a} == the same gaps as {b} (the only process using it)");
            continue;
        }
        match o.busy_ns {
            Some(busy) if !bound => {
                let _ = writeln!(
                    s,
                    "\n== {} == window {} (first GPU work to last), busy {}, idle {} ({:.1}%) in {} gaps",
                    super::inert::name(&sc.scope),
                    fmt_ns(o.window_ns),
                    fmt_ns(busy),
                    fmt_ns(o.idle_ns),
                    100.0 * o.idle_share_or_bound(),
                    o.count
                );
            }
            _ => {
                let _ = writeln!(
                    s,
                    "\n== {} == window {} (first GPU work to last), busy/idle share unknown, idle ≥ {} (≥ {:.1}%, lower bound) in {} certain gaps",
                    super::inert::name(&sc.scope),
                    fmt_ns(o.window_ns),
                    fmt_ns(o.idle_ns),
                    100.0 * o.idle_share_or_bound(),
                    o.count
                );
            }
        }
        if bound && let Some(u) = sc.nvml_util_pct {
            let _ = writeln!(
                s,
                "NVML utilization over the window: {u:.1}% (device-wide: any kernel of any process; sampled every 1/6-1 s)"
            );
        }
        let _ = writeln!(
            s,
            "{}gap length: p50 {}  p90 {}  p99 {}  max {}",
            if bound { "certain " } else { "" },
            fmt_ns(o.p50_ns),
            fmt_ns(o.p90_ns),
            fmt_ns(o.p99_ns),
            fmt_ns(o.max_ns)
        );
        let _ = writeln!(
            s,
            "{}gaps ≥ {}: {} adding up to {} ({:.1}% of the window)",
            if bound { "certain " } else { "" },
            fmt_ns(o.threshold_ns),
            o.long_count,
            fmt_ns(o.long_ns),
            100.0 * o.long_share
        );
        let _ = writeln!(s, "{:<22} {:>9} {:>12}", "gap length", "gaps", "total");
        for b in &o.histogram {
            let range = match b.hi_ns {
                Some(h) => format!("[{}, {})", fmt_ns(b.lo_ns), fmt_ns(h)),
                None => format!("≥ {}", fmt_ns(b.lo_ns)),
            };
            let _ = writeln!(s, "{range:<22} {:>9} {:>12}", b.count, fmt_ns(b.total_ns));
        }
        let _ = writeln!(
            s,
            "time a second tenant could use if a context switch costs X (Σ max(0, gap − 2X)){}:",
            if bound { ", a lower bound (certain gaps only)" } else { "" }
        );
        let _ = writeln!(s, "{:>10} {:>12} {:>8} {:>10}", "X", "usable", "share", "gaps > 2X");
        for w in &o.switch {
            let _ = writeln!(
                s,
                "{:>10} {:>12} {:>7.1}% {:>10}",
                fmt_ns(w.switch_cost_ns),
                fmt_ns(w.usable_ns),
                100.0 * w.usable_share,
                w.gaps_usable
            );
        }
        if !sc.phases.is_empty() {
            let _ = writeln!(s, "per phase, each phase's whole window (as in `tracer report`):");
            let _ = writeln!(
                s,
                "{:<14} {:>12} {:>12} {:>7} {:>8} {:>10} {:>10} {:>10}",
                "phase",
                "window",
                if bound { "idle ≥" } else { "idle" },
                if bound { "idle% ≥" } else { "idle %" },
                "gaps",
                "p50",
                "p99",
                "≥ thresh"
            );
            for p in &sc.phases {
                let st = &p.stats;
                let _ = writeln!(
                    s,
                    "{:<14} {:>12} {:>12} {:>6.1}% {:>8} {:>10} {:>10} {:>10}",
                    super::inert::escape(&p.phase).chars().take(14).collect::<String>(),
                    fmt_ns(st.window_ns),
                    fmt_ns(st.idle_ns),
                    100.0 * st.idle_share_or_bound(),
                    st.count,
                    fmt_ns(st.p50_ns),
                    fmt_ns(st.p99_ns),
                    st.long_count
                );
            }
        }
        if !sc.long_gap_causes.is_empty() {
            let c: Vec<String> = sc.long_gap_causes.iter().map(|(k, v)| format!("{k} {:.1}%", 100.0 * v)).collect();
            let _ = writeln!(s, "what the CPU side did during gaps ≥ threshold: {}", c.join(", "));
        }
        match &sc.long_gap_os {
            Some(os) if os.total_ns > 0 => {
                let _ = writeln!(
                    s,
                    "what the launching threads did during gaps ≥ threshold (scheduler events): {}",
                    os.sentence(6)
                );
                let with_os: Vec<&PhaseGaps> =
                    sc.phases.iter().filter(|p| p.os.as_ref().is_some_and(|o| o.total_ns > 0)).collect();
                if with_os.len() > 1 {
                    for p in with_os {
                        let _ = writeln!(
                            s,
                            "  {:<14} {}",
                            super::inert::name(&p.phase),
                            p.os.as_ref().expect("filtered").sentence(4)
                        );
                    }
                }
            }
            Some(_) => {}
            None => {
                if !sc.longest.is_empty() {
                    let _ = writeln!(
                        s,
                        "why the launching threads were not launching: not recorded (recorded with --no-sched, or by a tracer before scheduler events)"
                    );
                }
            }
        }
        match &sc.long_gap_code {
            Some(c) if c.total_ns > 0 => {
                let _ =
                    writeln!(s, "which code held the GPU idle in gaps ≥ threshold (the launching threads' stacks):");
                gap_stacks::render_split(&mut s, "  ", c, 6);
                let with_code: Vec<&PhaseGaps> =
                    sc.phases.iter().filter(|p| p.code.as_ref().is_some_and(|c| c.total_ns > 0)).collect();
                if with_code.len() > 1 {
                    for p in with_code {
                        let _ = writeln!(s, "  in {}:", super::inert::name(&p.phase));
                        gap_stacks::render_split(&mut s, "    ", p.code.as_ref().expect("filtered"), 3);
                    }
                }
            }
            Some(_) => {}
            // Traces of a tracer before stacks (no `stacks` in the header) say nothing.
            None => {
                if !sc.longest.is_empty() && r.stacks_in_header {
                    let _ = writeln!(
                        s,
                        "which code held the GPU idle: no stacks in the trace (recorded with --no-stacks, or none taken)"
                    );
                }
            }
        }
        for g in &sc.longest {
            let c: Vec<String> = g
                .causes
                .iter()
                .map(|(k, v)| format!("{k} {:.0}%", 100.0 * *v as f64 / g.dur_ns.max(1) as f64))
                .collect();
            let _ =
                writeln!(s, "  {:>12} at +{:<12} {}", fmt_ns(g.dur_ns), fmt_ns(g.start - sc.window.0), c.join(", "));
            if let Some(os) = &g.os {
                let who = os.thread.map_or(String::new(), |t| format!("thread {}: ", t.tid));
                let _ = writeln!(s, "  {:>12}    {:<12} {who}{}", "", "", os.sentence(4));
            }
            if let Some(code) = &g.code {
                let pad = format!("  {:>12}    {:<12} ", "", "");
                gap_stacks::render_gap(&mut s, &pad, &code.code, 3);
                if !code.began_at_frames.is_empty() {
                    let _ = writeln!(
                        s,
                        "{pad}when it began the thread was at {}",
                        gap_stacks::frames_text(&code.began_at_frames, gap_stacks::TEXT_FRAMES)
                    );
                }
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::model::parse_str;
    use crate::analysis::phases::phases;
    use crate::analysis::timeline::{self, GpuInterval, StreamKey, StreamTimeline, WorkKind};

    fn iv(a: u64, b: u64) -> GpuInterval {
        GpuInterval { start: a, end: b, kind: WorkKind::Kernel, name: 0, call: 0, ops: 1, approximate: false }
    }

    #[test]
    fn gap_stats_known_answers() {
        // busy [0,10) [20,30) [35,1035) [1235,1335): gaps 10, 5, 200 (ns x1000)
        let us = |x: u64| x * 1000;
        let b = union(vec![(0, us(10)), (us(20), us(30)), (us(35), us(1035)), (us(1235), us(1335))]);
        let (w, g) = gaps_of(&b);
        assert_eq!(w, (0, us(1335)));
        assert_eq!(g, [(us(10), us(20)), (us(30), us(35)), (us(1035), us(1235))]);
        let o = GapOptions { threshold_ns: us(100), switch_costs_ns: vec![us(2), us(5), us(100)], top: 5 };
        let s = stats(&g, w.1 - w.0, &o);
        assert_eq!((s.count, s.idle_ns, s.busy_ns), (3, us(215), Some(us(1120))));
        assert_eq!((s.p50_ns, s.p90_ns, s.max_ns), (us(10), us(200), us(200)));
        assert_eq!((s.long_count, s.long_ns), (1, us(200)));
        let sw: Vec<(u64, u64)> = s.switch.iter().map(|r| (r.usable_ns, r.gaps_usable)).collect();
        // X=2: 6+1+196 = 203; X=5: 0+0+190 (10-10=0 not > 0); X=100: 0
        assert_eq!(sw, [(us(203), 3), (us(190), 1), (0, 0)]);
        assert!((s.idle_share.unwrap() - 215.0 / 1335.0).abs() < 1e-12);
        let lb = s.clone().as_lower_bound();
        assert_eq!((lb.busy_ns, lb.idle_share, lb.idle_ns), (None, None, us(215)));
        assert!((lb.idle_share_lower_bound.unwrap() - 215.0 / 1335.0).abs() < 1e-12);
        let h: Vec<(u64, u64)> = s.histogram.iter().map(|b| (b.lo_ns, b.count)).collect();
        assert_eq!(h, [(us(5), 1), (us(10), 1), (us(200), 1)]);
    }

    #[test]
    fn two_processes_share_a_gpu() {
        let g = |pid: u32, a: u64, b: u64| {
            format!(
                r#"{{"ts":{a},"end_ts":{b},"pid":{pid},"type":"gpu","op":"kernel","name":"k","device":0,"stream_id":1}}"#
            )
        };
        let l = [
            g(1, 0, 10_000),
            g(1, 1_000_000, 1_010_000),
            r#"{"ts":200000,"pid":2,"tid":2,"type":"process","op":"exec","name":"process","filename":"/bin/b"}"#
                .to_string(),
            g(2, 800_000, 810_000),
        ];
        let t = parse_str("two", &l.join("\n")).unwrap();
        let tl = timeline::measured(&t);
        let r = analyze(&t, &tl, &phases(&t), &GapOptions::default());
        let sc: Vec<(&str, u64, u64)> =
            r.scopes.iter().map(|s| (s.scope.as_str(), s.overall.count, s.overall.idle_ns)).collect();
        assert_eq!(sc, [("gpu 0", 2, 980_000), ("pid 1 (pid 1)", 1, 990_000), ("pid 2 (b)", 0, 0)]);
        // the GPU's first gap [10, 800) µs: process 2 starting up for 600 µs of it
        assert_eq!(
            r.scopes[0].longest.iter().find(|x| x.start == 10_000).unwrap().causes,
            BTreeMap::from([("process_start", 600_000), ("cpu_between_calls", 190_000)])
        );
        // process 1 alone: nothing of its own was running
        assert_eq!(r.scopes[1].longest[0].causes, BTreeMap::from([("cpu_between_calls", 990_000)]));
        assert!(render(&r).contains("== pid 1 (pid 1) == window"));
    }

    /// The reported case, as `tracer gaps` prints it: a launch loop with no
    /// synchronization visible read "idle ≥ 2.181 s (≥ 100.0 %, lower bound)
    /// in 108000 certain gaps"; its launches are never proven complete, so
    /// no idle time is certain.
    #[test]
    fn a_launch_loop_without_synchronization_reads_no_idle() {
        let mut l: Vec<String> =
            (0..1000u64).map(|i| timeline::tests::launch(1_000_000 + i * 20_000, 0.0, "k", "0x0")).collect();
        l.push(r#"{"ts":30000000,"pid":1,"tid":1,"type":"process","op":"exit","name":"process"}"#.to_string());
        let t = parse_str("loop", &l.join("\n")).unwrap();
        let r = analyze(&t, &timeline::bound(&t), &phases(&t), &GapOptions::default());
        let o = &r.scopes[0].overall;
        assert_eq!((o.window_ns, o.count, o.idle_ns, o.idle_share_lower_bound), (29_000_000, 0, 0, Some(0.0)));
        let text = render(&r);
        assert!(text.contains("idle ≥ 0 ns (≥ 0.0%, lower bound) in 0 certain gaps"), "{text}");
        assert!(text.contains("1000 operations never proven complete"), "{text}");
    }

    #[test]
    fn attribution_by_priority() {
        // gap [100, 200): sync call 90..120, launch call 150..160, ioctl 155..158, nothing else
        let acts = vec![(90, 120, 3u8), (150, 160, 5), (155, 158, 4)];
        let a = attribute(&[(100, 200), (300, 310)], &acts);
        assert_eq!(a[0], [0, 0, 0, 20, 3, 7, 0, 70]);
        assert_eq!(a[1], [0, 0, 0, 0, 0, 0, 0, 10]);
    }

    #[test]
    fn end_to_end_with_phases() {
        let l = [
            timeline::tests::launch(1_000_000, 1.0, "k", "0x0"),
            timeline::tests::sync(1_001_000, 9.0, "0x0"),
            r#"{"ts":1500000,"pid":1,"tid":1,"type":"memory","op":"alloc","name":"cuMemAlloc_v2","size":4,"duration_us":100.0,"ret":0}"#.to_string(),
            timeline::tests::launch(2_000_000, 1.0, "k", "0x0"),
            timeline::tests::sync(2_001_000, 9.0, "0x0"),
        ];
        let t = parse_str("g", &l.join("\n")).unwrap();
        let tl = timeline::bound(&t);
        // busy [1.000, 1.010] ms and [2.000, 2.010] ms
        let ph = phases(&t);
        let r = analyze(&t, &tl, &ph, &GapOptions::default());
        assert_eq!(r.scopes.len(), 2);
        let g = &r.scopes[0];
        assert_eq!((g.scope.as_str(), g.window), ("gpu 0", (1_000_000, 2_010_000)));
        assert_eq!(g.gaps, [(1_010_000, 2_000_000)]);
        assert_eq!(g.longest[0].causes, BTreeMap::from([("allocation", 100_000), ("cpu_between_calls", 890_000)]));
        // detected phases: startup [1.0, 1.5) ms (first alloc) , loading -> launch at 1.0 < alloc so startup ends at 1.0 ms
        let names: Vec<&str> = g.phases.iter().map(|p| p.phase.as_str()).collect();
        assert_eq!(names, ["steady"]);
        assert_eq!(r.scopes[1].scope, "pid 1 (pid 1)");
        let text = render(&r);
        // no durations: the idle share is unknown, 990 µs only a lower bound, no busy figure
        assert!(
            text.contains("busy/idle share unknown, idle ≥ 990.0 µs (≥ 98.0%, lower bound) in 1 certain gaps"),
            "{text}"
        );
        assert!(!text.contains("busy 1") && !text.contains("idle 990"), "{text}");
        assert!(text.contains("a lower bound (certain gaps only):"), "{text}");
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["idle_basis"], "lower_bound");
        let o = &json["scopes"][0]["overall"];
        assert_eq!((&o["busy_ns"], &o["idle_share"]), (&serde_json::Value::Null, &serde_json::Value::Null));
        assert_eq!(o["idle_share_lower_bound"].as_f64(), Some(990_000.0 / 1_010_000.0));
        // the same trace with durations: measured-style figures, labelled with the calibration
        let d = timeline::tests::durs(&[("k", 10_000)]).with_origin("cal.json");
        let ri = analyze(&t, &timeline::inferred(&t, &d), &ph, &GapOptions::default());
        let ti = render(&ri);
        assert!(ti.contains("idle figures: inferred (calibrated from cal.json)\n"), "{ti}");
        // each 10 µs kernel starts at its launch's return and is cut at the sync's return: 9 µs each
        assert!(
            ti.contains("window 1.01 ms (first GPU work to last), busy 18.0 µs, idle 991.0 µs (98.2%) in 1 gaps"),
            "{ti}"
        );
        // a hand-built two-stream timeline: overlapping streams merge
        let tl2 = Timeline {
            source: Source::Measured,
            diag: Default::default(),
            streams: vec![
                StreamTimeline {
                    device: 0,
                    key: StreamKey { pid: 1, handle: 1, tid: 0, device: 0 },
                    label: "a".into(),
                    source: Source::Measured,
                    intervals: vec![iv(0, 10), iv(50, 60)],
                },
                StreamTimeline {
                    device: 0,
                    key: StreamKey { pid: 2, handle: 1, tid: 0, device: 0 },
                    label: "b".into(),
                    source: Source::Measured,
                    intervals: vec![iv(5, 20)],
                },
            ],
            calibrated_from: None,
        };
        assert_eq!(gaps_of(&busy(tl2.device_intervals(0))).1, [(20, 50)]);
    }
}
