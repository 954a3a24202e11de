//! `tracer report`: time, calls, kernels, synchronization, memory and energy
//! per phase and per iteration; top kernels by count and GPU time; loss.
//! Pure: built from a parsed [`Trace`], its phases and a GPU timeline.
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

use serde::Serialize;

use super::basis::IdleBasis;
use super::energy::{self, Energy, EnergySeries};
use super::figures::{self, SyncTime};
use super::gaps::fmt_ns;
use super::kernel_names::NameStyle;
use super::model::{Kind, NO_STR, Trace};
use super::phases::Phases;
use super::stats::{covered, union};
use super::text_table::{Align, Table};
use super::timeline::{Source, Timeline, WorkKind};

#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct Counts {
    pub calls: u64,
    pub launches: u64,
    pub distinct_kernels: u64,
    pub copies: u64,
    pub copy_bytes: u64,
    /// Bytes copied per direction (h2d, d2h, d2d, …).
    pub copy_bytes_by_direction: BTreeMap<&'static str, u64>,
    pub allocs: u64,
    pub alloc_bytes: u64,
    /// Calls that blocked the host until GPU work was done: synchronizations
    /// and host-blocking copies (analysis/figures.rs, [`SyncTime`]).
    pub sync_calls: u64,
    /// Time spent inside them.
    pub sync_ns: u64,
    /// Polling queries (cuStreamQuery, cuEventQuery): not blocking waits, not in `sync_ns`.
    pub polling_calls: u64,
    pub polling_ns: u64,
    pub failed_calls: u64,
    /// ioctls on NVIDIA device files (traces recorded with --ioctls).
    pub ioctls: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct PeriodRow {
    pub name: String,
    pub pid: u32,
    pub start: u64,
    pub end: u64,
    pub dur_ns: u64,
    pub counts: Counts,
    /// GPU busy time within the period (union over streams), from the
    /// timeline; `None` when only a lower bound on idle time is known
    /// (`idle_basis: lower_bound`).
    pub gpu_busy_ns: Option<u64>,
    /// 1 − busy / duration (`None` without GPU work in the trace, or when
    /// only a lower bound is known).
    pub gpu_idle_share: Option<f64>,
    /// `idle_basis: lower_bound` only: certain idle time within the period
    /// (duration − possibly busy time), a lower bound.
    pub gpu_idle_lower_bound_ns: Option<u64>,
    /// `idle_basis: lower_bound` only: certain idle time / duration, a lower
    /// bound on the idle share.
    pub gpu_idle_share_lower_bound: Option<f64>,
    /// Phase and iteration rows: the GPUs' energy over the period. Process
    /// rows: the energy of the instants when only this process had GPU work
    /// (analysis/process_energy.rs).
    pub energy: Option<Energy>,
    /// NVML's utilization over the period, mean of its samples (device-wide,
    /// all GPUs; analysis/figures.rs): beside a lower bound, a rough busy share.
    pub nvml_util_pct: Option<f64>,
    /// Process rows: the energy of the instants when this process and
    /// others had GPU work (not split between them).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub energy_shared_j: Option<f64>,
    pub tokens: Option<u64>,
    /// The process's rank in a distributed job (its exec line's RANK).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rank: Option<u64>,
    pub joules_per_token: Option<f64>,
    pub ms_per_token: Option<f64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct KernelRow {
    /// As recorded (mangled for C++).
    pub kernel: String,
    /// The whole demangled name (C++ kernels only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub demangled: Option<String>,
    /// The base name, template arguments elided (analysis/kernel_names.rs).
    pub short: String,
    pub launches: u64,
    /// GPU time from the timeline (None for the `bound` timeline).
    pub gpu_ns: Option<u64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct LossRow {
    pub cpu: u32,
    pub seen: u64,
    pub missing: u64,
    pub holes: Vec<(u64, u64)>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub trace: String,
    /// Text printed right under the title (the caller's verdict,
    /// analysis/verdict.rs, which reads this report).
    #[serde(skip)]
    pub lead: String,
    /// How the text names kernels (`--names`); the JSON has every spelling.
    #[serde(skip)]
    pub names: NameStyle,
    pub command: Option<String>,
    pub gpu: Option<String>,
    pub span_ns: u64,
    /// Every process of the traced tree: (pid, name).
    pub processes: Vec<(u32, String)>,
    /// The pids of `processes` that made CUDA driver calls (the header
    /// lists these; the others are counted).
    pub cuda_pids: Vec<u32>,
    pub phase_source: Option<super::phases::PhaseSource>,
    pub main_pid: Option<u32>,
    pub timeline: Source,
    /// What the busy/idle figures rest on: `measured`, `calibrated` or
    /// `lower_bound` (busy time and idle share unknown).
    pub idle_basis: IdleBasis,
    /// `calibrated`: where the kernel durations came from.
    pub calibrated_from: Option<String>,
    /// `calibrated`: the launches of kernels missing from the calibration
    /// (share of launches and of estimated kernel time).
    pub calibration_coverage: Option<super::coverage::CalibrationCoverage>,
    pub total: Counts,
    pub phases: Vec<PeriodRow>,
    pub iterations: Vec<PeriodRow>,
    /// One row per process (own calls and GPU work) when there are several.
    pub per_process: Vec<PeriodRow>,
    /// Per GPU, and per process on each GPU, when the timeline has several
    /// devices (analysis/per_gpu.rs).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub per_gpu: Vec<super::per_gpu::GpuRow>,
    pub top_by_count: Vec<KernelRow>,
    pub top_by_gpu_time: Vec<KernelRow>,
    pub copies_by_direction: BTreeMap<&'static str, (u64, u64)>,
    pub frees: u64,
    pub power_available: bool,
    pub energy_counter_update_ns: Option<u64>,
    pub energy_total: Option<Energy>,
    pub lost_footer: Option<u64>,
    pub lost_scan: Vec<LossRow>,
    pub truncated: bool,
    pub notes: Vec<String>,
    /// Top stacks by GPU busy and idle time, and the flame graphs' trees
    /// (analysis/stack_report.rs); None when the trace has no stacks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stacks: Option<super::stack_report::StackReport>,
}

fn counts_in(t: &Trace, pid: Option<u32>, a: u64, b: u64) -> Counts {
    let mut c = Counts::default();
    let lo = t.calls.partition_point(|x| x.ts < a);
    let hi = t.calls.partition_point(|x| x.ts < b);
    let mut kernels = std::collections::HashSet::new();
    let mut sync = SyncTime::default();
    for x in &t.calls[lo..hi] {
        if pid.is_some_and(|p| p != x.pid) {
            continue;
        }
        // An expanded graph launch counts as the kernels it ran (the calls
        // after it, which are not driver calls).
        if x.expanded() {
            c.calls += 1;
            continue;
        }
        c.calls += x.is_driver_call() as u64;
        if x.failed() {
            c.failed_calls += 1;
        }
        match x.kind {
            Kind::Launch | Kind::GraphLaunch => {
                c.launches += 1;
                if x.kernel != NO_STR {
                    kernels.insert(x.kernel);
                }
            }
            Kind::Copy | Kind::CopyAsync => {
                c.copies += 1;
                c.copy_bytes = c.copy_bytes.saturating_add(x.size);
                let d = c.copy_bytes_by_direction.entry(x.dir.as_str()).or_default();
                *d = d.saturating_add(x.size);
            }
            Kind::Alloc if !x.failed() => {
                c.allocs += 1;
                c.alloc_bytes = c.alloc_bytes.saturating_add(x.size);
            }
            _ => {}
        }
        sync.add_call(x);
    }
    (c.sync_calls, c.sync_ns, c.polling_calls, c.polling_ns) =
        (sync.calls, sync.ns, sync.polling_calls, sync.polling_ns);
    c.distinct_kernels = kernels.len() as u64;
    let lo = t.ioctls.partition_point(|x| x.ts < a);
    let hi = t.ioctls.partition_point(|x| x.ts < b);
    c.ioctls = t.ioctls[lo..hi].iter().filter(|x| !x.file_op && pid.is_none_or(|p| p == x.pid)).count() as u64;
    c
}

/// The report of a trace: totals, per-process/phase/iteration rows, top kernels, copies, energy, loss and notes.
pub fn build(t: &Trace, ph: &Phases, tl: &Timeline) -> Report {
    let span = t.span().unwrap_or((0, 0));
    let series = energy::series(t);
    let busy = union(tl.streams.iter().flat_map(|s| s.intervals.iter().map(|i| (i.start, i.end))).collect());
    let rows = Rows { t, series: &series, basis: IdleBasis::of(tl) };
    let row = |name: String, pid: u32, a: u64, b: u64, tokens: Option<u64>| rows.row(&busy, name, pid, a, b, tokens);
    let processes = rows.per_process(tl);
    let phases: Vec<PeriodRow> = ph.main().iter().map(|p| row(p.name.clone(), p.pid, p.start, p.end, None)).collect();
    let iterations: Vec<PeriodRow> =
        ph.iterations.iter().map(|i| row(i.label.clone(), i.pid, i.start, i.end, i.tokens)).collect();
    let (top_by_count, top_by_gpu_time) = top_kernels(t, tl);
    let (copies, frees) = copies_and_frees(t);
    let notes = notes(t, ph, tl, &series);
    let lost_scan = t
        .loss
        .by_cpu
        .iter()
        .filter(|(_, c)| c.missing > 0)
        .map(|(&cpu, c)| LossRow { cpu, seen: c.seen, missing: c.missing, holes: c.holes.clone() })
        .collect();
    let energy_total = energy::energy_all_gpus(&series, span.0, span.1).or_else(|| {
        let lo = series.iter().filter_map(|s| s.points.first().map(|p| p.0)).max()?;
        let hi = series.iter().filter_map(|s| s.points.last().map(|p| p.0)).min()?;
        energy::energy_all_gpus(&series, lo, hi)
    });
    Report {
        trace: t.path.clone(),
        lead: String::new(),
        names: NameStyle::Short,
        command: t
            .header
            .as_ref()
            .and_then(|h| h["command"].as_array())
            .map(|a| a.iter().filter_map(|x| x.as_str()).collect::<Vec<_>>().join(" ")),
        gpu: t.gpu_model(0),
        span_ns: span.1 - span.0,
        processes: t.pids().into_iter().map(|p| (p, t.process_name(p))).collect(),
        cuda_pids: cuda_pids(t),
        phase_source: ph.source(),
        main_pid: ph.main_pid,
        timeline: tl.source,
        idle_basis: IdleBasis::of(tl),
        calibrated_from: tl.calibrated_from.clone(),
        calibration_coverage: tl.diag.coverage.clone(),
        total: counts_in(t, None, span.0, span.1 + 1),
        phases,
        iterations,
        per_process: processes,
        per_gpu: super::per_gpu::rows(t, tl, &series, IdleBasis::of(tl)),
        top_by_count,
        top_by_gpu_time,
        copies_by_direction: copies,
        frees,
        power_available: !series.is_empty(),
        energy_counter_update_ns: series.first().and_then(|s| s.update_period_ns),
        energy_total,
        lost_footer: t.footer.as_ref().and_then(|f| f["lost"]["total"].as_u64()),
        lost_scan,
        truncated: t.truncated,
        notes,
        stacks: super::stack_report::build(t, tl),
    }
}

impl Report {
    /// The kernel names of the top-kernel tables.
    pub fn kernel_names(&self) -> Vec<&str> {
        self.top_by_count.iter().chain(&self.top_by_gpu_time).map(|k| k.kernel.as_str()).collect()
    }
}

impl KernelRow {
    /// The name in the spelling `style`.
    pub fn name(&self, style: NameStyle) -> &str {
        match style {
            NameStyle::Mangled => &self.kernel,
            NameStyle::Full => self.demangled.as_deref().unwrap_or(&self.kernel),
            NameStyle::Short => &self.short,
        }
    }
}

/// The pids that made CUDA driver calls, in order.
fn cuda_pids(t: &Trace) -> Vec<u32> {
    let s: std::collections::BTreeSet<u32> = t.calls.iter().map(|c| c.pid).collect();
    s.into_iter().collect()
}

/// "1 process: 502 python3", or on a tree where some processes made no CUDA
/// call (compilers, shells): "161 processes, 3 with CUDA calls: 502 python3,
/// … (+ 158 other processes without CUDA calls)".
fn processes_line(r: &Report) -> String {
    let n = r.processes.len();
    let with: Vec<String> = r
        .processes
        .iter()
        .filter(|(p, _)| r.cuda_pids.contains(p))
        .map(|(p, name)| format!("{p} {}", super::inert::name(name)))
        .collect();
    let others = n - with.len();
    if others == 0 {
        return format!("{n} process(es): {}", with.join(", "));
    }
    let plural = |k: usize, w: &str| if k == 1 { format!("{k} {w}") } else { format!("{k} {w}es") };
    if with.is_empty() {
        return format!("{}, none with CUDA calls", plural(n, "process"));
    }
    format!(
        "{}, {} with CUDA calls: {} (+ {} without CUDA calls)",
        plural(n, "process"),
        with.len(),
        with.join(", "),
        plural(others, "other process")
    )
}

/// What a period's row is computed from: the trace and its energy series.
struct Rows<'a> {
    t: &'a Trace,
    series: &'a [EnergySeries],
    basis: IdleBasis,
}

impl Rows<'_> {
    /// The row of the period `[a, b)` of `pid`, with GPU busy time from `busy` (sorted disjoint intervals).
    fn row(&self, busy: &[(u64, u64)], name: String, pid: u32, a: u64, b: u64, tokens: Option<u64>) -> PeriodRow {
        let counts = counts_in(self.t, Some(pid), a, b);
        let gpu_busy_ns = covered(busy, a, b);
        let energy = energy::energy_all_gpus(self.series, a, b);
        let dur = b - a;
        // share of the period with no GPU work
        let idle_share = (dur > 0 && !busy.is_empty()).then(|| 1.0 - gpu_busy_ns as f64 / dur as f64);
        let known = self.basis.share_known();
        PeriodRow {
            name,
            pid,
            start: a,
            end: b,
            dur_ns: dur,
            counts,
            gpu_busy_ns: known.then_some(gpu_busy_ns),
            gpu_idle_share: idle_share.filter(|_| known),
            gpu_idle_lower_bound_ns: (!known && !busy.is_empty()).then(|| dur - gpu_busy_ns),
            gpu_idle_share_lower_bound: idle_share.filter(|_| !known),
            joules_per_token: energy.as_ref().zip(tokens.filter(|&n| n > 0)).map(|(e, n)| e.joules / n as f64),
            ms_per_token: tokens.filter(|&n| n > 0).map(|n| dur as f64 / 1e6 / n as f64),
            nvml_util_pct: figures::nvml_util_pct(self.series, &[], a, b),
            energy,
            energy_shared_j: None,
            tokens,
            rank: self.t.rank(pid),
        }
    }

    /// One row per process (own GPU work only) when there are several, else none.
    fn per_process(&self, tl: &Timeline) -> Vec<PeriodRow> {
        let t = self.t;
        let spans = super::phases::process_spans(t);
        if spans.len() <= 1 {
            return vec![];
        }
        let mut energy = super::process_energy::attribute(tl, self.series);
        spans
            .iter()
            .map(|(&pid, &(a, b))| {
                let own = union(
                    tl.streams
                        .iter()
                        .filter(|s| s.key.pid == pid)
                        .flat_map(|s| s.intervals.iter().map(|i| (i.start, i.end)))
                        .collect(),
                );
                // the process's span, extended to the end of its GPU work
                let b = b.max(own.last().map_or(b, |x| x.1));
                let mut row = self.row(&own, t.process_name(pid), pid, a, b, None);
                // Not the GPUs' energy over its lifetime (other processes'
                // work and idle time are in that): its own share.
                let e = energy.remove(&pid).unwrap_or_default();
                row.energy = e.own;
                row.energy_shared_j = e.shared_j;
                row
            })
            .collect()
    }
}

/// The 15 kernels launched most often, and the 15 with the most GPU time (none on a bound timeline).
fn top_kernels(t: &Trace, tl: &Timeline) -> (Vec<KernelRow>, Vec<KernelRow>) {
    let mut by_count: HashMap<u32, u64> = HashMap::new();
    for c in t.calls.iter().filter(|c| c.kind == Kind::Launch && !c.failed()) {
        *by_count.entry(c.kernel).or_default() += 1;
    }
    let mut gpu_time: HashMap<u32, u64> = HashMap::new();
    if tl.source != Source::Bound {
        for s in &tl.streams {
            for i in s.intervals.iter().filter(|i| i.kind == WorkKind::Kernel) {
                *gpu_time.entry(i.name).or_default() += i.dur();
            }
        }
    }
    let kname = |k: u32| if k == NO_STR { "(unnamed handle)".to_string() } else { t.name(k).to_string() };
    let short = super::short_names::ShortNames::of_trace(t);
    let mk = |k: u32| KernelRow {
        demangled: super::kernel_names::demangle(&kname(k)),
        short: short.short(&kname(k)).into_owned(),
        kernel: kname(k),
        launches: by_count.get(&k).copied().unwrap_or(0),
        gpu_ns: (tl.source != Source::Bound).then(|| gpu_time.get(&k).copied().unwrap_or(0)),
    };
    let mut kc: Vec<u32> = by_count.keys().copied().collect();
    kc.sort_by_key(|k| (std::cmp::Reverse(by_count[k]), kname(*k)));
    let top_by_count = kc.iter().take(15).map(|&k| mk(k)).collect();
    let mut kg: Vec<u32> = gpu_time.keys().copied().collect();
    kg.sort_by_key(|k| (std::cmp::Reverse(gpu_time[k]), kname(*k)));
    let top_by_gpu_time = kg.iter().take(15).map(|&k| mk(k)).collect();
    (top_by_count, top_by_gpu_time)
}

/// Successful copies per direction (count, bytes) and the number of successful frees.
fn copies_and_frees(t: &Trace) -> (BTreeMap<&'static str, (u64, u64)>, u64) {
    let mut copies: BTreeMap<&'static str, (u64, u64)> = BTreeMap::new();
    let mut frees = 0;
    for c in t.calls.iter().filter(|c| !c.failed()) {
        match c.kind {
            Kind::Copy | Kind::CopyAsync => {
                let e = copies.entry(c.dir.as_str()).or_default();
                e.0 += 1;
                e.1 = e.1.saturating_add(c.size);
            }
            Kind::Free => frees += 1,
            _ => {}
        }
    }
    (copies, frees)
}

/// The report's notes: what is missing (iterations, power, measured GPU activity) and coarse energy counters.
fn notes(t: &Trace, ph: &Phases, tl: &Timeline, series: &[EnergySeries]) -> Vec<String> {
    let mut notes = Vec::new();
    if ph.iterations.is_empty() {
        notes.push("no iteration markers: per-iteration and per-token figures need `iteration` markers".into());
    }
    if series.is_empty() {
        let why = t.header.as_ref().and_then(|h| h["power"]["reason"].as_str()).map(str::to_string);
        notes.push(match why {
            Some(r) => format!("no power samples: {r}"),
            None => "no power samples: energy needs NVML sampling at record time".into(),
        });
    }
    if let Some(c) = &tl.diag.coverage {
        notes.push(c.sentence());
    }
    if let Some(g) = super::model::graphs::note(&t.graphs) {
        notes.push(g);
        if tl.source == Source::Measured {
            let (matched, nodes) = super::timeline::measured_matches(t, tl);
            notes.push(format!("CUDA graphs: {matched} of {nodes} graph nodes' work matched a measured GPU record"));
            if let Some(s) = super::model::graph_measured::tie_by_ids(t).sentence() {
                notes.push(s);
            }
        }
    }
    if tl.source != Source::Measured
        && let Some(r) = t.header.as_ref().and_then(|h| h["gpu_timestamps"]["reason"].as_str())
    {
        notes.push(format!("no measured GPU activity: {r}"));
    }
    for s in series {
        if let (Some(u), Some(sp)) = (s.update_period_ns, s.sample_period_ns)
            && u > sp
        {
            notes.push(format!(
                "gpu {}: the energy counter changes every {} although it was sampled every {}: phases shorter than {} are marked uncertain",
                s.gpu,
                fmt_ns(u),
                fmt_ns(sp),
                fmt_ns(2 * u)
            ));
        }
    }
    notes
}

fn bytes(b: u64) -> String {
    const U: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut x = b as f64;
    let mut i = 0;
    while x >= 1024.0 && i < U.len() - 1 {
        x /= 1024.0;
        i += 1;
    }
    if i == 0 { format!("{b} B") } else { format!("{x:.1} {}", U[i]) }
}

/// The title of the per-process table.
const PROCESS_TITLE: &str = "process";

/// An energy figure; a part-sampled or short period says so (explained by [`energy_legend`]).
fn energy_cell(e: &Option<Energy>) -> String {
    figures::energy_text(e)
}

/// The rows per GPU and per process on each GPU.
fn gpu_table(s: &mut String, r: &Report, bound: bool) {
    if r.per_gpu.is_empty() {
        return;
    }
    s.push_str("\nper GPU, from its first GPU work to its last (the GPU window, as in `tracer gaps`)");
    let mut tb = Table::new(&[
        ("GPU (process)", Align::Left),
        ("GPU window", Align::Right),
        ("launches", Align::Right),
        (if bound { "idle ≥" } else { "GPU busy" }, Align::Right),
        (if bound { "idle% ≥" } else { "idle %" }, Align::Right),
        ("energy", Align::Right),
    ]);
    for g in &r.per_gpu {
        let name = match g.pid {
            None => format!("gpu {}", g.device),
            Some(p) => {
                let n = r.processes.iter().find(|(q, _)| *q == p).map_or("", |(_, n)| n.as_str());
                format!("  pid {p} {n}")
            }
        };
        tb.row(vec![
            name,
            fmt_ns(g.end - g.start),
            g.launches.to_string(),
            g.busy_ns.or(g.idle_lower_bound_ns).map_or("-".into(), fmt_ns),
            g.idle_share.or(g.idle_share_lower_bound).map_or("-".into(), |x| format!("{:.1}", 100.0 * x)),
            if g.pid.is_some() { String::new() } else { energy_cell(&g.energy) },
        ]);
    }
    s.push('\n');
    tb.render(s);
}

/// The lines that explain the marks of [`energy_cell`], for those that appear in the report.
pub fn energy_legend(r: &Report) -> Vec<String> {
    let all = r
        .phases
        .iter()
        .chain(&r.iterations)
        .chain(&r.per_process)
        .filter_map(|p| p.energy.as_ref())
        .chain(r.per_gpu.iter().filter_map(|g| g.energy.as_ref()))
        .chain(r.energy_total.as_ref());
    let (mut part, mut unsure) = (false, false);
    for e in all {
        part |= e.covered_share < 1.0;
        unsure |= e.covered_share >= 1.0 && e.uncertain;
    }
    let mut v = Vec::new();
    if part {
        v.push(
            "energy \"≥ X J (N% sampled)\": the NVML samples cover only that share of the period (it began before the \
             first sample or ended after the last); X is the energy of the sampled part, a lower bound"
                .to_string(),
        );
    }
    if unsure {
        v.push(
            "energy \"±X\": the period is shorter than two updates of the GPU's energy counter; X is one update's \
             worth of energy at the period's mean power"
                .to_string(),
        );
    }
    v
}

pub fn render(r: &Report) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "── tracer report: {} ──", super::inert::name(&r.trace));
    if let Some(c) = &r.command {
        let _ = writeln!(s, "command: {}", super::inert::name(c));
    }
    s.push_str(&r.lead);
    let _ = writeln!(
        s,
        "{} over {}, {}; GPU: {}",
        if r.truncated { "cut-off trace" } else { "trace" },
        fmt_ns(r.span_ns),
        processes_line(r),
        super::inert::name(r.gpu.as_deref().unwrap_or("unknown (not in the trace's header)"))
    );
    let t = &r.total;
    let _ = writeln!(
        s,
        "{} calls, {} launches ({} kernels), {} copies ({}), {} allocations ({}), {} frees, {}, {} failed calls",
        t.calls,
        t.launches,
        t.distinct_kernels,
        t.copies,
        bytes(t.copy_bytes),
        t.allocs,
        bytes(t.alloc_bytes),
        r.frees,
        SyncTime { calls: t.sync_calls, ns: t.sync_ns, polling_calls: t.polling_calls, polling_ns: t.polling_ns }
            .sentence(),
        t.failed_calls
    );
    for (d, (n, b)) in &r.copies_by_direction {
        let _ = writeln!(s, "  copies {d}: {n} ({})", bytes(*b));
    }
    let _ = writeln!(
        s,
        "GPU timeline: {}; phases: {} (pid {})",
        super::gaps::meaning(r.timeline),
        match r.phase_source {
            Some(super::phases::PhaseSource::Marker) => "from markers",
            Some(super::phases::PhaseSource::Detected) => "detected from the data (startup/loading/warmup/steady)",
            None => "none",
        },
        r.main_pid.map_or("-".into(), |p| p.to_string())
    );
    let _ = writeln!(
        s,
        "{}",
        match r.idle_basis {
            IdleBasis::Measured => "GPU busy/idle: measured (CUPTI activity records)".to_string(),
            IdleBasis::Calibrated => format!(
                "GPU busy/idle: inferred (calibrated from {})",
                r.calibrated_from.as_deref().unwrap_or(super::basis::UNNAMED_CALIBRATION)
            ),
            IdleBasis::LowerBound => "GPU busy/idle share: unknown (no measured or calibrated kernel durations: \
                                      record with --gpu-timestamps, or pass --durations FILE); \"idle ≥\" is \
                                      certain idle time, a lower bound"
                .to_string(),
        }
    );
    let bound = !r.idle_basis.share_known();
    let power = r.power_available;
    let table = |s: &mut String, title: &str, rows: &[PeriodRow], tokens: bool| {
        if rows.is_empty() {
            return;
        }
        // Process rows: the energy attributed to the process, and the
        // energy of the time it shared the GPU.
        let per_process = title == PROCESS_TITLE;
        // Rows of several processes (a distributed job's iterations): say whose.
        let ranked = !per_process && rows.iter().any(|p| p.rank.is_some());
        let pids: std::collections::BTreeSet<u32> = rows.iter().map(|p| p.pid).collect();
        let by_pid = !per_process && !ranked && pids.len() > 1;
        let mut tb = Table::new(&[(title, Align::Left)]);
        if ranked {
            tb.column("rank", Align::Right);
        } else if by_pid {
            tb.column("pid", Align::Right);
        }
        for (h, a) in [
            ("time", Align::Right),
            ("calls", Align::Right),
            ("ioctls", Align::Right),
            ("launches", Align::Right),
            ("kernels", Align::Right),
            ("sync", Align::Right),
            (if bound { "idle ≥" } else { "GPU busy" }, Align::Right),
            (if bound { "idle% ≥" } else { "idle %" }, Align::Right),
            (if per_process { "own energy" } else { "energy" }, Align::Right),
        ] {
            tb.column(h, a);
        }
        if tokens {
            tb.column("tokens", Align::Right);
            tb.column("ms/token", Align::Right);
            tb.column("J/token", Align::Right);
        } else if per_process {
            tb.column("shared energy", Align::Right);
        }
        for p in rows {
            let c = &p.counts;
            let mut cells = vec![p.name.clone()];
            if ranked {
                cells.push(p.rank.map_or("-".into(), |r| r.to_string()));
            } else if by_pid {
                cells.push(p.pid.to_string());
            }
            cells.extend([
                fmt_ns(p.dur_ns),
                c.calls.to_string(),
                c.ioctls.to_string(),
                c.launches.to_string(),
                c.distinct_kernels.to_string(),
                fmt_ns(c.sync_ns),
                p.gpu_busy_ns.or(p.gpu_idle_lower_bound_ns).map_or("-".into(), fmt_ns),
                p.gpu_idle_share.or(p.gpu_idle_share_lower_bound).map_or("-".into(), |x| format!("{:.1}", 100.0 * x)),
                energy_cell(&p.energy),
            ]);
            if tokens {
                cells.extend([
                    p.tokens.map_or("-".into(), |x| x.to_string()),
                    p.ms_per_token.map_or("-".into(), |x| format!("{x:.2}")),
                    p.joules_per_token.map_or("-".into(), |x| format!("{x:.3}")),
                ]);
            } else if per_process {
                cells.push(p.energy_shared_j.map_or("-".into(), |j| format!("{j:.2} J")));
            }
            tb.row(cells);
        }
        s.push('\n');
        tb.render(s);
        if per_process && power {
            let _ = writeln!(
                s,
                "own energy: the GPU's while only that process had work on it; shared: while it and others had \
                 (counted for each); idle time is no process's (docs/analysis.md)"
            );
        }
    };
    if !r.per_gpu.is_empty() && !r.phases.is_empty() {
        let _ = writeln!(
            s,
            "\nphase, iteration and process rows: all GPUs together (busy while any GPU is); per GPU below"
        );
    }
    table(&mut s, "phase", &r.phases, false);
    if bound && r.phases.iter().any(|p| p.nvml_util_pct.is_some()) {
        let v: Vec<String> = r
            .phases
            .iter()
            .map(|p| {
                format!(
                    "{} {}",
                    super::inert::name(&p.name),
                    p.nvml_util_pct.map_or("-".into(), |u| format!("{u:.0}%"))
                )
            })
            .collect();
        let _ = writeln!(
            s,
            "NVML utilization (device-wide, share of time any kernel ran, sampled every 1/6-1 s; docs/gaps.md): {}",
            v.join(", ")
        );
    }
    table(&mut s, "iteration", &r.iterations, true);
    if !r.per_process.is_empty() {
        let _ = writeln!(
            s,
            "\neach process row: the process's lifetime (first record to last, extended to its last GPU work), not its \
             GPU window as in `tracer gaps`"
        );
    }
    table(&mut s, PROCESS_TITLE, &r.per_process, false);
    gpu_table(&mut s, r, bound);
    let kt = |s: &mut String, title: &str, rows: &[KernelRow]| {
        if rows.is_empty() {
            return;
        }
        let _ = writeln!(s, "\n{title}");
        let mut tb = Table::new(&[("launches", Align::Right), ("GPU time", Align::Right), ("kernel", Align::Left)]);
        for k in rows {
            tb.row(vec![k.launches.to_string(), k.gpu_ns.map_or("-".into(), fmt_ns), k.name(r.names).to_string()]);
        }
        tb.render(s);
    };
    kt(&mut s, "top kernels by launches", &r.top_by_count);
    kt(&mut s, "top kernels by GPU time", &r.top_by_gpu_time);
    if let Some(st) = &r.stacks {
        super::stack_report::render(&mut s, st);
    }
    if let Some(e) = &r.energy_total {
        let _ = writeln!(s, "\nenergy over the trace: {} ({})", energy_cell(&Some(e.clone())), e.method);
    }
    let _ = writeln!(
        s,
        "\nloss: {} (footer){}",
        r.lost_footer.map_or("unknown, no footer".into(), |n| format!("{n} records lost")),
        if r.lost_scan.is_empty() {
            "; no gaps in the per-CPU sequence numbers".to_string()
        } else {
            let v: Vec<String> = r.lost_scan.iter().map(|l| format!("cpu {}: {} missing", l.cpu, l.missing)).collect();
            format!("; sequence gaps: {}", v.join(", "))
        }
    );
    for n in energy_legend(r) {
        let _ = writeln!(s, "note: {n}");
    }
    for n in &r.notes {
        let _ = writeln!(s, "note: {n}");
    }
    super::text_table::wrap(&s, super::text_table::MAX_COLUMNS, 2)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::model::parse_str;
    use crate::analysis::phases::phases;
    use crate::analysis::timeline;

    /// Two processes on one GPU at 100 W: pid 1's kernel runs 0-30 ms, pid
    /// 2's 20-50 ms, nothing 50-100 ms. Each process row shows its own
    /// energy (2 J: 20 ms alone) and the shared 10 ms (1 J), not the GPU's
    /// energy over its lifetime (3 J, 3 J).
    #[test]
    fn a_shared_gpu_gives_each_process_its_own_energy() {
        let launch = |pid: u32, ms: u64| {
            format!(
                r#"{{"ts":{},"pid":{pid},"tid":{pid},"type":"kernel","op":"launch","name":"cuLaunchKernel","kernel":"k{pid}","grid":[1,1,1],"block":[32,1,1],"shared_mem":0,"stream":"0x0","duration_us":1.0,"ret":0}}"#,
                ms * 1_000_000
            )
        };
        let gpu = |pid: u32, a: u64, b: u64| {
            format!(
                r#"{{"ts":{},"end_ts":{},"pid":{pid},"type":"gpu","op":"kernel","name":"k{pid}","device":0,"stream":"0x0","grid":[1,1,1],"block":[32,1,1],"shared_mem":0}}"#,
                a * 1_000_000,
                b * 1_000_000
            )
        };
        let mut l = vec![launch(1, 0), gpu(1, 0, 30), launch(2, 20), gpu(2, 20, 50)];
        for ms in 0..=100u64 {
            l.push(format!(
                r#"{{"ts":{},"pid":0,"tid":0,"type":"power","op":"sample","name":"nvml","gpu":0,"energy_mj":{},"power_mw":100000}}"#,
                ms * 1_000_000,
                100 * ms
            ));
        }
        let t = parse_str("shared", &l.join("\n")).unwrap();
        let r = build(&t, &phases(&t), &timeline::measured(&t));
        let rows: Vec<(u32, f64, f64)> = r
            .per_process
            .iter()
            .map(|p| (p.pid, p.energy.as_ref().unwrap().joules, p.energy_shared_j.unwrap()))
            .collect();
        assert_eq!(rows.len(), 2, "{rows:?}");
        for (pid, own, shared) in rows {
            assert!(
                (own - 2.0).abs() < 1e-9 && (shared - 1.0).abs() < 1e-9,
                "pid {pid}: {own} J own, {shared} J shared"
            );
        }
        assert!(!r.per_process[0].energy.as_ref().unwrap().uncertain);
        // The whole GPU over the trace: 10 J, 5 of them idle (no process's).
        assert!((r.energy_total.as_ref().unwrap().joules - 10.0).abs() < 1e-9);
        let text = render(&r);
        let head = text.lines().find(|l| l.starts_with("process ")).unwrap_or_else(|| panic!("{text}"));
        assert!(head.ends_with("own energy  shared energy"), "{head}");
        let row = text.lines().find(|l| l.contains(" 2.00 J")).unwrap_or_else(|| panic!("{text}"));
        assert!(row.ends_with("2.00 J         1.00 J"), "{row}");
        assert!(text.contains("\nown energy: the GPU's while only that process had work on it;"), "{text}");
        // Phase rows keep the GPU's energy and no shared column.
        assert!(r.phases.iter().all(|p| p.energy_shared_j.is_none()));
    }

    #[test]
    fn phases_iterations_energy_and_kernels() {
        let mk = |ts: u64, op: &str, label: &str, extra: &str| {
            format!(
                r#"{{"ts":{ts},"pid":1,"tid":0,"type":"marker","op":"{op}","name":"marker","label":"{label}"{extra}}}"#
            )
        };
        let pw = |ms: u64, e: u64| {
            format!(
                r#"{{"ts":{},"pid":0,"tid":0,"type":"power","op":"sample","name":"nvml","gpu":0,"energy_mj":{e},"power_mw":100000}}"#,
                ms * 1_000_000
            )
        };
        let mut l = vec![
            mk(0, "phase", "load", ""),
            mk(10_000_000, "phase", "inference", ""),
            mk(10_000_000, "iteration", "0", r#","tokens":4"#),
            mk(30_000_000, "iteration", "1", r#","tokens":5"#),
            mk(50_000_000, "phase", "end", ""),
            r#"{"ts":1000000,"pid":1,"tid":1,"type":"memory","op":"alloc","name":"cuMemAlloc_v2","size":1024,"duration_us":10.0,"ret":0,"cpu":0,"seq":0,"exit_cpu":0,"exit_seq":1}"#.into(),
            r#"{"ts":2000000,"pid":1,"tid":1,"type":"memcpy","op":"copy","name":"cuMemcpyHtoD_v2","size":512,"direction":"h2d","duration_us":20.0,"ret":0,"cpu":0,"seq":4,"exit_cpu":0,"exit_seq":5}"#.into(),
            r#"{"type":"footer","lost":{"total":2}}"#.into(),
        ];
        for i in 0..4 {
            l.push(timeline::tests::launch(11_000_000 + i * 1_000_000, 1.0, if i == 0 { "kB" } else { "kA" }, "0x0"));
        }
        l.push(timeline::tests::sync(15_000_000, 100.0, "0x0"));
        l.push(timeline::tests::launch(31_000_000, 1.0, "kA", "0x0"));
        for ms in 0..=60 {
            l.push(pw(ms, 5_000_000 + 100 * ms)); // 100 W
        }
        let t = parse_str("r", &l.join("\n")).unwrap();
        let ph = phases(&t);
        let tl = timeline::inferred(&t, &timeline::tests::durs(&[("kA", 100_000), ("kB", 1_000_000)]));
        let r = build(&t, &ph, &tl);
        assert!(r.per_process.is_empty());
        let names: Vec<(&str, u64)> = r.phases.iter().map(|p| (p.name.as_str(), p.dur_ns)).collect();
        assert_eq!(names, [("load", 10_000_000), ("inference", 40_000_000)]);
        assert_eq!(r.phases[0].counts.allocs, 1);
        assert_eq!(r.phases[0].counts.sync_ns, 20_000); // blocking h2d copy
        assert_eq!(r.phases[1].counts.launches, 5);
        assert_eq!(r.phases[1].counts.sync_ns, 100_000);
        let e = r.phases[0].energy.as_ref().unwrap();
        assert!((e.joules - 1.0).abs() < 1e-9, "{e:?}");
        let it = &r.iterations;
        assert_eq!((it[0].dur_ns, it[0].counts.launches, it[0].tokens), (20_000_000, 4, Some(4)));
        assert!((it[0].joules_per_token.unwrap() - 0.5).abs() < 1e-9);
        assert!((it[1].ms_per_token.unwrap() - 4.0).abs() < 1e-9);
        // GPU time: kB 1 ms, kA 3 x 100 µs in iteration 0 (+1 in iteration 1)
        assert_eq!(r.top_by_count[0].kernel, "kA");
        assert_eq!(r.top_by_count[0].launches, 4);
        assert_eq!(r.top_by_gpu_time[0].kernel, "kB");
        assert_eq!(r.top_by_gpu_time[0].gpu_ns, Some(1_000_000));
        assert_eq!(r.top_by_gpu_time[1].gpu_ns, Some(400_000));
        assert_eq!(it[0].gpu_busy_ns, Some(1_300_000));
        assert_eq!(
            (r.idle_basis, r.calibrated_from.as_deref()),
            (IdleBasis::Calibrated, Some("an unnamed calibration"))
        );
        assert_eq!(r.copies_by_direction["h2d"], (1, 512));
        assert_eq!(r.phases[0].counts.copy_bytes_by_direction, BTreeMap::from([("h2d", 512)]));
        assert!(r.phases[1].counts.copy_bytes_by_direction.is_empty());
        assert_eq!(r.lost_footer, Some(2));
        assert_eq!(r.lost_scan.len(), 1);
        assert_eq!((r.lost_scan[0].missing, r.lost_scan[0].holes.clone()), (2, vec![(2, 3)]));
        let text = render(&r);
        assert!(text.contains("sequence gaps: cpu 0: 2 missing"), "{text}");
        // a second process: one row each, with its own GPU work only
        let second = r#"{"ts":40000000,"pid":2,"tid":2,"type":"kernel","op":"launch","name":"cuLaunchKernel","kernel":"kA","grid":[1,1,1],"block":[32,1,1],"shared_mem":0,"stream":"0x0","duration_us":1.0,"ret":0}"#;
        let t2 = parse_str("r2", &(l.join("\n") + "\n" + second)).unwrap();
        let tl2 = timeline::inferred(&t2, &timeline::tests::durs(&[("kA", 100_000), ("kB", 1_000_000)]));
        let r2 = build(&t2, &phases(&t2), &tl2);
        let pp: Vec<(u32, u64, u64)> =
            r2.per_process.iter().map(|p| (p.pid, p.counts.launches, p.gpu_busy_ns.unwrap())).collect();
        assert_eq!(pp, [(1, 5, 1_402_026), (2, 1, 100_000)]); // pid 1: + the 2 µs h2d copy
        // the header says why power and GPU timestamps are missing
        let hdr = r#"{"type":"header","power":{"available":false,"reason":"NVML not found (libnvidia-ml.so.1)"},"gpu_timestamps":{"enabled":false,"reason":"not requested"}}"#;
        let t3 = parse_str("r3", &format!("{hdr}\n{}", timeline::tests::launch(1, 1.0, "k", "0x0"))).unwrap();
        let r3 = build(&t3, &phases(&t3), &timeline::bound(&t3));
        assert!(
            r3.notes.contains(&"no power samples: NVML not found (libnvidia-ml.so.1)".to_string()),
            "{:?}",
            r3.notes
        );
        assert!(r3.notes.contains(&"no measured GPU activity: not requested".to_string()), "{:?}", r3.notes);
        assert!(text.contains("inference"), "{text}");
    }

    /// A tree of 4 processes where 2 made CUDA calls: the header lists those
    /// 2 and counts the others.
    #[test]
    fn header_lists_cuda_processes_and_counts_the_rest() {
        let exec = |ts: u64, pid: u32, comm: &str| {
            format!(
                r#"{{"ts":{ts},"pid":{pid},"tid":{pid},"type":"process","op":"exec","name":"process","filename":"/usr/bin/{comm}"}}"#
            )
        };
        let call = |ts: u64, pid: u32| {
            format!(
                r#"{{"ts":{ts},"pid":{pid},"tid":{pid},"type":"init","op":"init","name":"cuInit","duration_us":1.0,"ret":0}}"#
            )
        };
        let l = [
            exec(1, 10, "python3"),
            exec(2, 11, "gcc"),
            exec(3, 12, "python3"),
            exec(4, 13, "ptxas"),
            call(5, 10),
            call(6, 12),
        ];
        let t = parse_str("p", &l.join("\n")).unwrap();
        let r = build(&t, &phases(&t), &timeline::bound(&t));
        assert_eq!(r.processes.len(), 4);
        assert_eq!(r.cuda_pids, [10, 12]);
        let text = render(&r);
        let line = text.lines().nth(1).unwrap();
        assert_eq!(
            line,
            "trace over 1.0 µs, 4 processes, 2 with CUDA calls: 10 python3, 12 python3 (+ 2 other processes without \
             CUDA calls); GPU: unknown (not in the trace's header)"
        );
        let one = parse_str("p", &[exec(1, 10, "python3"), exec(2, 11, "gcc"), call(5, 10)].join("\n")).unwrap();
        let text = render(&build(&one, &phases(&one), &timeline::bound(&one)));
        assert!(
            text.contains(", 2 processes, 1 with CUDA calls: 10 python3 (+ 1 other process without CUDA calls);"),
            "{text}"
        );
        let none = parse_str("p", &[exec(1, 10, "python3"), exec(2, 11, "gcc")].join("\n")).unwrap();
        let text = render(&build(&none, &phases(&none), &timeline::bound(&none)));
        assert!(text.contains(", 2 processes, none with CUDA calls;"), "{text}");
    }
}
