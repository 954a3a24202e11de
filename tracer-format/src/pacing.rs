//! Compensated pacing: what tracing added to a recording's host time, and
//! the host speed of another machine (docs/replay.md, *Compensated pacing*;
//! docs/what-if.md, *Host speed*).
//!
//! A traced thread pays, inside the host gaps between its submissions, for
//! every probed call it made there: the uprobe trap of each probe hit (entry,
//! and return where the call was return-probed), the eBPF program that ran
//! (the recording's `--bpf-stats` per-program `ns_per_run`), CUPTI's record
//! keeping for each GPU work call under `--gpu-timestamps`, the scheduler
//! programs at its own context switches and the CPU time the recorder's own
//! threads took from it while it waited, runnable (the `sched` lines'
//! `held_by`). Stops of `--capture-data` are taken out by the callers (they
//! are intervals, not costs: replay's `together::pacing::Stops`). Replay's
//! pacing and tracer's what-if take these costs out of each gap
//! ([`Compensation::within`]), clamped at 0 and counted ([`GapStats`]).
//!
//! Here, in tracer-format, because both readers need the same model: replay
//! reads recordings through tracer-format only, and tracer's `analysis/` is
//! pure and sits above it. Nothing here reads a file but
//! [`HostSpeed::parse`]'s calibration files.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The uprobe trap's cost per probe hit when the recording gives none: ~0.7 µs
/// for an empty program attached the same way on the H100 GPU machine
/// (docs/overhead.md, *Where the time goes*: the floor of the mechanism).
pub const TRAP_NS_DEFAULT: u64 = 700;

/// CUPTI's cost per GPU work call (a launch, copy or set) under
/// `--gpu-timestamps` when the recording gives none: 2.2-3.7 µs per launch
/// measured on the H100 (docs/gpu-timestamps.md); the lower end.
pub const CUPTI_NS_DEFAULT: u64 = 2_200;

/// The eBPF programs that run at a call's entry with the plain probes.
pub const ENTRY_PROGRAMS: [&str; 3] = ["cu_enter", "cu_enter_str", "cu_enter_blob"];
/// `--replayable`'s entry program of launches and graph kernel nodes (their parameter bytes).
pub const LAUNCH_PROGRAM: &str = "cu_launch";
/// The return program.
pub const EXIT_PROGRAM: &str = "cu_exit";
/// The on-CPU sample program (a perf event of the CPU clock, `--stack-sample-hz`).
pub const SAMPLE_PROGRAM: &str = "stack_sample";
/// The scheduler's switch programs (raw tracepoint, or the classic one).
pub const SWITCH_PROGRAMS: [&str; 2] = ["sched_switch_raw", "sched_switch"];
/// Whether a `held_by` entry's thread name is one of the recorder's threads (recordings
/// before the entries were marked `"recorder"`): its main thread ([`RECORDER_COMM`]), the
/// power sampler (`tracer-nvml`), the marker reader (`tracer-markers`), the Python layout
/// reader (`python-layouts`).
pub fn is_recorder_comm(comm: &str) -> bool {
    comm == RECORDER_COMM || comm.starts_with("tracer-") || comm == "python-layouts"
}

/// The `comm` of the recorder's main thread in `held_by`.
pub const RECORDER_COMM: &str = "tracer";

/// How replays and what-if pace the recorded host program.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Pacing {
    /// Each host gap without what tracing added to it (the default).
    #[default]
    Compensated,
    /// The recorded host gaps (less `--capture-data`'s stops, which are never the program's).
    Recorded,
}

impl Pacing {
    pub fn parse(s: &str) -> Result<Pacing, String> {
        match s {
            "compensated" => Ok(Pacing::Compensated),
            "recorded" => Ok(Pacing::Recorded),
            _ => Err(format!("{s:?}: expected compensated or recorded")),
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Pacing::Compensated => "compensated",
            Pacing::Recorded => "recorded",
        }
    }
}

/// Where a cost came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// The recording's own measurement (`bpf_stats`, a header field).
    Recording,
    /// A documented default (the constants above).
    Default,
    /// Given on the command line.
    Option,
    /// Not applicable or not available: 0.
    None,
}

/// The costs per probe hit, program run and work call, ns.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Costs {
    /// The uprobe trap, per entry probe hit: the header's `probe_trap_ns` (measured at the
    /// recording's start, collect/trap_cost.rs), else the default.
    pub trap_ns: f64,
    pub trap_from: Source,
    /// The return probe's trap, per return: the header's `return_trap_ns`, else `trap_ns`.
    pub return_trap_ns: f64,
    /// The plain entry programs' mean run (their runs and run times summed).
    pub entry_ns: f64,
    /// The launch program's run (`--replayable`); the plain entry's when it did not run.
    pub launch_ns: f64,
    /// The return program's run.
    pub exit_ns: f64,
    /// The scheduler's switch program, per switch of a traced thread (two per off-CPU interval),
    /// without the stack walks of switch-outs.
    pub switch_ns: f64,
    /// The stack walk of a switch-out that took a stack (an `off_cpu` line with `stack`): the
    /// footer's `stack_walks.switch_out` per walk (older recordings: the sample's cost, the same
    /// walk), taken out of the switch program's mean, which spreads those walks over every
    /// switch of the machine.
    pub switch_out_stack_ns: f64,
    /// An on-CPU sample of a traced thread (a `sample` line): the footer's `stack_walks.sample`
    /// per walk; older recordings: the sample program's run time over all its runs (the runs on
    /// other tasks return at once) divided by the samples it took (`stacks.by_site.sample`). 0
    /// without samples or statistics.
    pub sample_ns: f64,
    /// CUPTI's record keeping per GPU work call (0 without `--gpu-timestamps`).
    pub cupti_ns: f64,
    pub cupti_from: Source,
    /// The per-program figures came from the recording's `bpf_stats`.
    pub bpf_stats: bool,
    /// Scheduler lines were recorded (preemption by the recorder and switch costs counted).
    pub sched: bool,
    /// The corrections that were not available, one phrase each.
    pub missing: Vec<String>,
}

/// Options that override what a recording gives.
#[derive(Debug, Clone, Copy, Default)]
pub struct Overrides {
    /// The trap's cost per probe hit, ns.
    pub trap_ns: Option<f64>,
    /// CUPTI's cost per GPU work call, ns.
    pub cupti_ns: Option<f64>,
}

fn ns_per_run(stats: &serde_json::Map<String, Value>, names: &[&str]) -> Option<f64> {
    let (mut runs, mut ns) = (0u64, 0f64);
    for n in names {
        let Some(p) = stats.get(*n) else { continue };
        let r = p.get("runs").and_then(Value::as_u64).unwrap_or(0);
        let t = match p.get("run_time_ns").and_then(Value::as_f64) {
            Some(t) => t,
            None => p.get("ns_per_run").and_then(Value::as_f64).unwrap_or(0.0) * r as f64,
        };
        runs += r;
        ns += t;
    }
    (runs > 0).then(|| ns / runs as f64)
}

impl Costs {
    /// The costs a recording gives, from its header and footer lines (as JSON values), with
    /// `has_sched`: whether it has scheduler lines (the header's `sched`, else any `sched` line).
    /// What is missing falls back to the defaults and is named in `missing`.
    pub fn of_recording(header: Option<&Value>, footer: Option<&Value>, has_sched: bool, o: Overrides) -> Costs {
        let mut missing = Vec::new();
        let header_f64 = |k: &str| header.and_then(|h| h.get(k)).and_then(Value::as_f64);
        let (trap_ns, trap_from) = match (o.trap_ns, header_f64("probe_trap_ns")) {
            (Some(t), _) => (t, Source::Option),
            (None, Some(t)) => (t, Source::Recording),
            (None, None) => (TRAP_NS_DEFAULT as f64, Source::Default),
        };
        let return_trap_ns = match (o.trap_ns, header_f64("return_trap_ns")) {
            (None, Some(t)) if trap_from == Source::Recording => t,
            _ => trap_ns,
        };
        let stats = footer.and_then(|f| f.get("bpf_stats")).and_then(Value::as_object);
        let (mut entry_ns, mut launch_ns, mut exit_ns, mut switch_ns, mut sample_ns) = (0.0, 0.0, 0.0, 0.0, 0.0);
        let mut switch_out_stack_ns = 0.0;
        match stats {
            Some(s) => {
                entry_ns = ns_per_run(s, &ENTRY_PROGRAMS).unwrap_or(0.0);
                launch_ns = ns_per_run(s, &[LAUNCH_PROGRAM]).unwrap_or(entry_ns);
                exit_ns = ns_per_run(s, &[EXIT_PROGRAM]).unwrap_or(0.0);
                switch_ns = ns_per_run(s, &SWITCH_PROGRAMS).unwrap_or(0.0);
                let taken = footer
                    .and_then(|f| f.pointer("/stacks/by_site/sample"))
                    .and_then(Value::as_u64)
                    .unwrap_or(0);
                // The walks' own time where the kernel side measured it (footer `stack_walks`),
                // per site: (walks, ns per walk).
                let measured = |site: &str| {
                    let w = footer?.get("stack_walks")?.get(site)?;
                    let n = w.get("walks")?.as_u64().filter(|&n| n > 0)?;
                    Some((n, w.get("ns")?.as_u64()? as f64 / n as f64))
                };
                if let Some((_, per_walk)) = measured("sample") {
                    sample_ns = per_walk;
                } else if let (Some(per_run), Some(p)) = (ns_per_run(s, &[SAMPLE_PROGRAM]), s.get(SAMPLE_PROGRAM))
                    && taken > 0
                {
                    // Older recordings: the program's run time over the samples it took (its
                    // runs on other tasks' ticks included).
                    let runs = p.get("runs").and_then(Value::as_u64).unwrap_or(0);
                    sample_ns = per_run * runs as f64 / taken as f64;
                }
                // The switch program's time: every run's base plus the walks of the switch-outs
                // that took a stack (measured, or costing what a sample does), at most the whole time.
                let (walks, per_walk) = match measured("switch_out") {
                    Some(m) => m,
                    None => (
                        footer
                            .and_then(|f| f.pointer("/stacks/by_site/switch_out"))
                            .and_then(Value::as_u64)
                            .unwrap_or(0),
                        sample_ns,
                    ),
                };
                let runs: u64 = SWITCH_PROGRAMS
                    .iter()
                    .filter_map(|n| s.get(*n)?.get("runs")?.as_u64())
                    .sum();
                if walks > 0 && runs > 0 && per_walk > 0.0 {
                    let total = switch_ns * runs as f64;
                    switch_out_stack_ns = per_walk.min(total / walks as f64);
                    switch_ns = ((total - switch_out_stack_ns * walks as f64) / runs as f64).max(0.0);
                }
            }
            None => missing.push(
                "no bpf_stats in the footer (record with --bpf-stats): the eBPF programs' run time is not removed, only the trap per probe hit"
                    .to_string(),
            ),
        }
        if !has_sched {
            missing.push(
                "no scheduler lines (recorded with --no-sched, or an older recording): preemption by the recorder and the switch programs are not removed"
                    .to_string(),
            );
        }
        let gpu_ts = header.and_then(|h| h.get("gpu_timestamps"));
        let cupti_on = gpu_ts.and_then(|g| g.get("enabled")).and_then(Value::as_bool).unwrap_or(false);
        // the default recording's adaptive windows: CUPTI was attached a small share of
        // the run only, and detached in between; its cost inside them is left in
        let adaptive = gpu_ts.and_then(|g| g.get("mode")).and_then(Value::as_str) == Some("adaptive");
        if cupti_on && adaptive {
            missing.push(
                "CUPTI's cost inside the default recording's adaptive windows is not removed (it was detached \
                 between them)"
                    .to_string(),
            );
        }
        let cupti_on = cupti_on && !adaptive;
        let (cupti_ns, cupti_from) = match (cupti_on, o.cupti_ns, header_f64("cupti_ns_per_call")) {
            (false, _, _) => (0.0, Source::None),
            (true, Some(c), _) => (c, Source::Option),
            (true, None, Some(c)) => (c, Source::Recording),
            (true, None, None) => (CUPTI_NS_DEFAULT as f64, Source::Default),
        };
        Costs {
            trap_ns,
            trap_from,
            return_trap_ns,
            entry_ns,
            launch_ns,
            exit_ns,
            switch_ns,
            switch_out_stack_ns,
            sample_ns,
            cupti_ns,
            cupti_from,
            bpf_stats: stats.is_some(),
            sched: has_sched,
            missing,
        }
    }

    /// What a call costs at its entry, ns.
    pub fn entry_cost(&self, c: &Probed) -> f64 {
        self.trap_ns
            + if c.launch { self.launch_ns } else { self.entry_ns }
            + if c.gpu_work { self.cupti_ns } else { 0.0 }
    }

    /// What a call costs at its return (none without a return probe), ns.
    pub fn return_cost(&self) -> f64 {
        self.return_trap_ns + self.exit_ns
    }
}

/// One probed call of the recording (every call line, replayed or not).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Probed {
    pub tid: u32,
    /// Entry, ns.
    pub ts: u64,
    /// The return's time, when the call was return-probed (its line has `ret` or a duration).
    pub ret_ts: Option<u64>,
    /// Its entry ran the launch program (`--replayable` launches: the line carries `params`).
    pub launch: bool,
    /// A kernel launch, copy or set (CUPTI keeps a record of it).
    pub gpu_work: bool,
}

/// One off-CPU interval of a traced thread (a `sched` `off_cpu` line).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OffCpu {
    pub tid: u32,
    pub ts: u64,
    pub end_ts: u64,
    /// Of its runnable wait, the ns the recorder's threads held the CPU ([`OffCpu::recorder_ns_of`]).
    pub recorder_ns: u64,
    /// A stack was taken at the switch-out (the line has `stack`).
    pub stack: bool,
}

impl OffCpu {
    /// The recorder's share of a `held_by` list (`[{comm, ns, recorder}]`): its entries marked
    /// `"recorder": true` (the recorder's own process, since 2026-12-03); in a recording
    /// without the mark, its threads by name ([`is_recorder_comm`]).
    pub fn recorder_ns_of(held_by: Option<&Value>) -> u64 {
        let Some(v) = held_by.and_then(Value::as_array) else { return 0 };
        let marked = v.iter().any(|h| h.get("recorder").is_some());
        v.iter()
            .filter(|h| match marked {
                true => h.get("recorder").and_then(Value::as_bool) == Some(true),
                false => h.get("comm").and_then(Value::as_str).is_some_and(is_recorder_comm),
            })
            .filter_map(|h| h.get("ns").and_then(Value::as_u64))
            .sum()
    }
}

/// An on-CPU sample of a traced thread (a `sample` line): the sample program interrupted it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    pub tid: u32,
    pub ts: u64,
}

/// The costs of each thread in time order: `(time, cumulative ns up to and including it)`.
#[derive(Debug, Clone, Default)]
pub struct Compensation {
    pub costs: Option<Costs>,
    per_tid: HashMap<u32, (Vec<u64>, Vec<u64>)>,
}

impl Compensation {
    /// No compensation (`--pacing recorded`): every gap as recorded.
    pub fn none() -> Compensation {
        Compensation::default()
    }

    /// The cost points of `calls` and `off_cpu` under `costs`: a call's entry cost at its entry,
    /// its return cost at its return; two switch programs per off-CPU interval, at its start and
    /// end; the recorder's hold of the CPU at the interval's end; the sample program at each
    /// on-CPU sample.
    pub fn new(costs: Costs, calls: &[Probed], off_cpu: &[OffCpu], samples: &[Sample]) -> Compensation {
        let mut pts: HashMap<u32, Vec<(u64, f64)>> = HashMap::new();
        for c in calls {
            let v = pts.entry(c.tid).or_default();
            v.push((c.ts, costs.entry_cost(c)));
            if let Some(r) = c.ret_ts {
                v.push((r, costs.return_cost()));
            }
        }
        if costs.sched {
            for o in off_cpu {
                let v = pts.entry(o.tid).or_default();
                v.push((o.ts, costs.switch_ns + if o.stack { costs.switch_out_stack_ns } else { 0.0 }));
                v.push((o.end_ts, costs.switch_ns + o.recorder_ns as f64));
            }
        }
        if costs.sample_ns > 0.0 {
            for p in samples {
                pts.entry(p.tid).or_default().push((p.ts, costs.sample_ns));
            }
        }
        let per_tid = pts
            .into_iter()
            .map(|(tid, mut v)| {
                v.sort_by_key(|p| p.0);
                let mut acc = 0f64;
                let (mut ts, mut cum) = (Vec::with_capacity(v.len()), Vec::with_capacity(v.len()));
                for (t, c) in v {
                    acc += c;
                    ts.push(t);
                    cum.push(acc.round() as u64);
                }
                (tid, (ts, cum))
            })
            .collect();
        Compensation { costs: Some(costs), per_tid }
    }

    /// What tracing cost thread `tid` in `(from, to]`, ns.
    pub fn within(&self, tid: u32, from: u64, to: u64) -> u64 {
        let Some((ts, cum)) = self.per_tid.get(&tid) else { return 0 };
        if to <= from {
            return 0;
        }
        let upto = |t: u64| {
            let k = ts.partition_point(|&x| x <= t);
            if k == 0 { 0 } else { cum[k - 1] }
        };
        upto(to) - upto(from)
    }

    /// Whether this compensates anything (`--pacing compensated`).
    pub fn active(&self) -> bool {
        self.costs.is_some()
    }
}

/// The gaps of a pacing, counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct GapStats {
    pub gaps: u64,
    /// Ns taken out of the gaps in all (after clamping).
    pub removed_ns: u64,
    /// Gaps whose costs were as long as the gap or longer: paced as 0.
    pub clamped: u64,
    /// The costs the clamped gaps had no room for, ns.
    pub clamped_excess_ns: u64,
}

impl GapStats {
    /// The gap `raw` less `cost`, clamped at 0 and counted.
    pub fn take(&mut self, raw: u64, cost: u64) -> u64 {
        self.gaps += 1;
        if cost >= raw && cost > 0 {
            self.clamped += 1;
            self.clamped_excess_ns += cost - raw;
            self.removed_ns += raw;
            return 0;
        }
        self.removed_ns += cost;
        raw - cost
    }
    pub fn add(&mut self, o: &GapStats) {
        self.gaps += o.gaps;
        self.removed_ns += o.removed_ns;
        self.clamped += o.clamped;
        self.clamped_excess_ns += o.clamped_excess_ns;
    }
}

/// What a pacing did, for reports (text and JSON).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PacingReport {
    pub pacing: Pacing,
    /// The target host's speed against the recording's (host gaps × 1/F).
    pub host_speed: f64,
    pub host_speed_from: String,
    #[serde(flatten)]
    pub stats: GapStats,
    /// Probed calls the costs were counted for.
    pub calls: u64,
    /// `removed_ns / calls`.
    pub removed_ns_per_call: f64,
    pub costs: Option<Costs>,
    /// The corrections not available (empty with `recorded` pacing).
    pub missing: Vec<String>,
}

impl PacingReport {
    pub fn new(c: &Compensation, stats: GapStats, calls: u64, speed: &HostSpeed) -> PacingReport {
        PacingReport::of(c.costs.clone(), stats, calls, speed)
    }

    /// The report of a compensation with `costs` (None: recorded pacing).
    pub fn of(costs: Option<Costs>, stats: GapStats, calls: u64, speed: &HostSpeed) -> PacingReport {
        PacingReport {
            pacing: if costs.is_some() { Pacing::Compensated } else { Pacing::Recorded },
            host_speed: speed.factor,
            host_speed_from: speed.from.clone(),
            stats,
            calls,
            removed_ns_per_call: if calls == 0 { 0.0 } else { stats.removed_ns as f64 / calls as f64 },
            missing: costs.as_ref().map(|c| c.missing.clone()).unwrap_or_default(),
            costs,
        }
    }

    /// One line: `pacing: compensated (…)`, and a line per missing correction.
    pub fn text(&self) -> String {
        let speed = if self.host_speed == 1.0 {
            String::new()
        } else {
            format!(
                "; host speed {} ({}): host gaps x {:.4}",
                self.host_speed,
                self.host_speed_from,
                1.0 / self.host_speed
            )
        };
        let mut s = match self.pacing {
            Pacing::Recorded => {
                format!("pacing: recorded (host gaps as recorded, --capture-data stops left out){speed}\n")
            }
            Pacing::Compensated => format!(
                "pacing: compensated: {:.3} ms of tracing removed from {} host gaps ({:.0} ns per probed call, {} calls), {} gaps clamped at 0{}{speed}\n",
                self.stats.removed_ns as f64 / 1e6,
                self.stats.gaps,
                self.removed_ns_per_call,
                self.calls,
                self.stats.clamped,
                if self.stats.clamped > 0 {
                    format!(" ({} ns of costs without room)", self.stats.clamped_excess_ns)
                } else {
                    String::new()
                }
            ),
        };
        for m in &self.missing {
            s.push_str(&format!("pacing: not corrected: {m}\n"));
        }
        s
    }
}

/// The target host's speed: its CPU runs the program's host work `factor` times as fast as the
/// recording's (host gaps × 1/factor).
#[derive(Debug, Clone, PartialEq)]
pub struct HostSpeed {
    pub factor: f64,
    /// `1 (same host)`, `--host-speed 1.25`, or the calibrations it came from.
    pub from: String,
}

impl Default for HostSpeed {
    fn default() -> HostSpeed {
        HostSpeed { factor: 1.0, from: "same host".into() }
    }
}

impl HostSpeed {
    /// `--host-speed`'s value: a factor above 0, or the path of the target's calibration file
    /// (`tracer calibrate-host -o FILE`), against `recorded`, the recording's (its header's
    /// `host_calibration`). Errors name the option.
    pub fn parse(s: &str, recorded: Option<&HostCalibration>) -> Result<HostSpeed, String> {
        if let Ok(f) = s.parse::<f64>() {
            if !(f.is_finite() && f > 0.0) {
                return Err(format!(
                    "--host-speed: {s} is not a factor above 0 (2: the target host runs the host work twice as fast)"
                ));
            }
            return Ok(HostSpeed { factor: f, from: format!("--host-speed {s}") });
        }
        let path = std::path::Path::new(s);
        let target = HostCalibration::read(path).map_err(|e| format!("--host-speed: {e}"))?;
        let Some(rec) = recorded else {
            return Err(format!(
                "--host-speed: {s}: the recording has no host_calibration in its header (recorded before it was stored): give the factor instead"
            ));
        };
        rec.check_same_workload(&target).map_err(|e| format!("--host-speed: {s}: {e}"))?;
        Ok(HostSpeed {
            factor: rec.ns as f64 / target.ns as f64,
            from: format!("calibration {} ns recorded / {} ns in {s}", rec.ns, target.ns),
        })
    }

    /// A host gap of `ns` on the target.
    pub fn scale(&self, ns: u64) -> u64 {
        if self.factor == 1.0 { ns } else { (ns as f64 / self.factor).round() as u64 }
    }
}

/// The recording's process against the speed its machine usually runs that command at: the
/// footer's `host_speed` (the probes' gauge against the median of the machine's host speed
/// history for the command and probe set; docs/replay.md, *The machine's usual speed*).
/// Compensated pacing divides the host gaps by `factor` as well, unless the reader keeps the
/// recorded speed.
#[derive(Debug, Clone, PartialEq)]
pub struct UsualSpeed {
    /// gauge / reference (already within the recorder's bounds).
    pub factor: f64,
    pub gauge_ns: f64,
    pub reference_ns: f64,
    /// The history's recordings of the command the reference is the median of (this one included).
    pub recordings: u64,
}

impl UsualSpeed {
    /// The footer's `host_speed`; Err says why there is none, in a few words.
    pub fn of_footer(footer: Option<&Value>) -> Result<UsualSpeed, String> {
        let Some(h) = footer.and_then(|f| f.get("host_speed")).filter(|h| h.is_object()) else {
            return Err(
                "the machine's usual speed (no host_speed in the footer: recorded without BPF statistics, or before it was kept)"
                    .into(),
            );
        };
        let why = |w: &str| Err(format!("the machine's usual speed ({w})"));
        let (Some(gauge_ns), Some(factor)) = (h["gauge_ns"].as_f64(), h["factor"].as_f64()) else {
            return why(h["note"].as_str().unwrap_or("no gauge in the footer's host_speed"));
        };
        let Some(reference_ns) = h["reference_ns"].as_f64() else {
            return why(h["note"].as_str().unwrap_or("no reference in the footer's host_speed"));
        };
        let recordings = h["recordings"].as_u64().unwrap_or(0);
        if recordings < 2 {
            return why("the first recording of its command and probe set on its machine: nothing to compare it with");
        }
        if !(factor.is_finite() && factor > 0.0 && gauge_ns > 0.0 && reference_ns > 0.0) {
            return why(&format!(
                "the footer's host_speed has factor {factor}, gauge {gauge_ns} ns, reference {reference_ns} ns"
            ));
        }
        Ok(UsualSpeed { factor, gauge_ns, reference_ns, recordings })
    }

    /// "usual speed: probes at 1952 ns a run, the machine's median 1532 ns over 12 recordings of the command".
    pub fn text(&self) -> String {
        format!(
            "usual speed: probes at {:.0} ns a run, the machine's median {:.0} ns over {} recordings of the command",
            self.gauge_ns, self.reference_ns, self.recordings
        )
    }
}

impl HostSpeed {
    /// This speed for a recording whose process ran `u.factor` times slower than usual.
    pub fn with_usual(self, u: &UsualSpeed) -> HostSpeed {
        let from = if self == HostSpeed::default() { u.text() } else { format!("{}; {}", u.text(), self.from) };
        HostSpeed { factor: self.factor * u.factor, from }
    }

    /// This speed for the recording whose footer is `footer`, paced by `pacing`: compensated
    /// pacing scales it to the machine's usual speed ([`UsualSpeed::of_footer`]) unless
    /// `recorded_speed` keeps the speed the process ran at; the second is why the usual speed
    /// could not be had (for the pacing report's `missing`), as replay and what-if say it.
    pub fn for_recording(
        self,
        pacing: Pacing,
        recorded_speed: bool,
        footer: Option<&Value>,
    ) -> (HostSpeed, Option<String>) {
        if pacing != Pacing::Compensated || recorded_speed {
            return (self, None);
        }
        match UsualSpeed::of_footer(footer) {
            Ok(u) => (self.with_usual(&u), None),
            Err(why) => (self, Some(why)),
        }
    }
}

/// The calibration workload's name and version: a fixed single-thread job (SHA-256 of 64 KiB, 16
/// times, then a 64-bit integer hash loop of 2^18 steps), timed [`CALIBRATION_RUNS`] times.
pub const CALIBRATION_WORKLOAD: &str = "sha256-64KiB-x16+mix-2^18 v1";
pub const CALIBRATION_RUNS: usize = 9;

/// A host's CPU calibration: the fixed workload's median time (`tracer calibrate-host`, and the
/// recording header's `host_calibration`). The ratio of two gives `--host-speed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostCalibration {
    pub workload: String,
    /// Median of the runs, ns.
    pub ns: u64,
    pub runs_ns: Vec<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

/// One run of the workload; its result, so that nothing is optimised away.
pub fn calibration_job() -> u64 {
    let buf: Vec<u8> = (0..64 * 1024u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    let mut acc = 0u64;
    for k in 0..16u8 {
        let mut b = buf.clone();
        b[0] = k;
        let h = crate::digest::sha256_hex(&b);
        acc = acc.wrapping_add(u64::from_str_radix(&h[..16], 16).unwrap_or(0));
    }
    let mut x = acc | 1;
    for _ in 0..(1u32 << 18) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x = x.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
    x
}

impl HostCalibration {
    /// Runs the workload (a few ms per run on a current server CPU) on the calling thread.
    pub fn measure(host: Option<String>) -> HostCalibration {
        std::hint::black_box(calibration_job()); // warm-up
        let mut runs: Vec<u64> = (0..CALIBRATION_RUNS)
            .map(|_| {
                let t = std::time::Instant::now();
                std::hint::black_box(calibration_job());
                t.elapsed().as_nanos() as u64
            })
            .collect();
        let runs_ns = runs.clone();
        runs.sort_unstable();
        HostCalibration { workload: CALIBRATION_WORKLOAD.into(), ns: runs[runs.len() / 2], runs_ns, host }
    }

    /// From a JSON value (a header's `host_calibration`, a calibration file).
    pub fn of_value(v: &Value) -> Result<HostCalibration, String> {
        let c = HostCalibration::deserialize(v).map_err(|e| format!("not a host calibration ({e})"))?;
        if c.ns == 0 {
            return Err("host calibration: \"ns\" is 0".into());
        }
        Ok(c)
    }

    /// A calibration file (`tracer calibrate-host -o FILE`).
    pub fn read(path: &std::path::Path) -> Result<HostCalibration, String> {
        let mut f = crate::open::open(path, crate::open::Kind::Sidecar)
            .map_err(|e| format!("{}: cannot open ({e:#})", path.display()))?
            .file;
        let mut s = String::new();
        std::io::Read::read_to_string(&mut f, &mut s).map_err(|e| format!("{}: {e}", path.display()))?;
        let v: Value = serde_json::from_str(&s).map_err(|e| format!("{}: not JSON ({e})", path.display()))?;
        HostCalibration::of_value(&v).map_err(|e| format!("{}: {e}", path.display()))
    }

    pub fn check_same_workload(&self, o: &HostCalibration) -> Result<(), String> {
        if self.workload != o.workload {
            return Err(format!(
                "calibrated with workload {:?}, the recording with {:?}: not comparable",
                o.workload, self.workload
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_usual_speed_comes_from_the_footer_and_says_why_not() {
        let f = json!({"host_speed": {"gauge_ns": 1950.0, "reference_ns": 1500.0, "recordings": 3, "factor": 1.3}});
        let u = UsualSpeed::of_footer(Some(&f)).unwrap();
        assert_eq!((u.factor, u.recordings), (1.3, 3));
        let s = HostSpeed::default().with_usual(&u);
        assert_eq!(s.factor, 1.3);
        assert_eq!(
            s.from,
            "usual speed: probes at 1950 ns a run, the machine's median 1500 ns over 3 recordings of the command"
        );
        // times --host-speed's
        let s = HostSpeed { factor: 2.0, from: "--host-speed 2".into() }.with_usual(&u);
        assert_eq!(s.factor, 2.6);
        assert!(s.from.ends_with("of the command; --host-speed 2"), "{}", s.from);
        assert_eq!(s.scale(2_600), 1_000);
        let why = |f: Value| UsualSpeed::of_footer(Some(&f)).unwrap_err();
        assert!(why(json!({})).contains("no host_speed in the footer"));
        assert_eq!(
            why(json!({"host_speed": {"gauge_ns": 1.0, "factor": 1.0, "reference_ns": 1.0, "recordings": 1}})),
            "the machine's usual speed (the first recording of its command and probe set on its machine: nothing to compare it with)"
        );
        assert_eq!(
            why(json!({"host_speed": {"gauge_ns": null, "note": "under 200 runs of the entry programs: no gauge"}})),
            "the machine's usual speed (under 200 runs of the entry programs: no gauge)"
        );
        assert!(
            why(json!({"host_speed": {"gauge_ns": 1.0, "factor": -1.0, "reference_ns": 1.0, "recordings": 4}}))
                .contains("factor -1")
        );
        assert!(UsualSpeed::of_footer(None).is_err());
        // for a recording: compensated pacing takes it (or says why not); recorded pacing and
        // --recorded-speed keep the speed given, with nothing missing
        let given = HostSpeed { factor: 2.0, from: "--host-speed 2".into() };
        let (s, why) = given.clone().for_recording(Pacing::Compensated, false, Some(&f));
        assert_eq!((s.factor, why), (2.6, None));
        let (s, why) = given.clone().for_recording(Pacing::Compensated, false, Some(&json!({})));
        assert_eq!(s, given);
        assert!(why.unwrap().starts_with("the machine's usual speed (no host_speed in the footer"));
        assert_eq!(given.clone().for_recording(Pacing::Compensated, true, Some(&f)), (given.clone(), None));
        assert_eq!(given.clone().for_recording(Pacing::Recorded, false, Some(&f)), (given, None));
    }

    fn footer() -> Value {
        json!({"type": "footer", "bpf_stats": {
            "cu_enter": {"runs": 300, "run_time_ns": 90_000, "ns_per_run": 300.0},
            "cu_enter_str": {"runs": 100, "run_time_ns": 70_000, "ns_per_run": 700.0},
            "cu_launch": {"runs": 50, "run_time_ns": 50_000, "ns_per_run": 1000.0},
            "cu_exit": {"runs": 200, "run_time_ns": 40_000, "ns_per_run": 200.0},
            "sched_switch_raw": {"runs": 10, "run_time_ns": 5_000, "ns_per_run": 500.0},
            "stack_sample": {"runs": 40, "run_time_ns": 24_000, "ns_per_run": 600.0}
        }, "stacks": {"by_site": {"sample": 8}}})
    }

    fn header(cupti: bool) -> Value {
        json!({"type": "header", "sched": true, "gpu_timestamps": {"enabled": cupti}})
    }

    #[test]
    fn costs_from_the_footer() {
        let c = Costs::of_recording(Some(&header(true)), Some(&footer()), true, Overrides::default());
        // (90,000 + 70,000) / 400 runs
        assert_eq!((c.trap_ns, c.entry_ns, c.launch_ns, c.exit_ns, c.switch_ns), (700.0, 400.0, 1000.0, 200.0, 500.0));
        // the sample program's 24,000 ns over the 8 samples it took (its other 32 runs were on other tasks)
        assert_eq!(c.sample_ns, 3000.0);
        assert_eq!((c.cupti_ns, c.cupti_from, c.trap_from), (2200.0, Source::Default, Source::Default));
        assert!(c.missing.is_empty());
        let o = Overrides { trap_ns: Some(900.0), cupti_ns: Some(3000.0) };
        let c = Costs::of_recording(Some(&header(true)), Some(&footer()), true, o);
        assert_eq!((c.trap_ns, c.trap_from, c.cupti_ns, c.cupti_from), (900.0, Source::Option, 3000.0, Source::Option));
        let c = Costs::of_recording(Some(&header(false)), Some(&footer()), true, o);
        assert_eq!((c.cupti_ns, c.cupti_from), (0.0, Source::None));
        let adaptive =
            json!({"type": "header", "sched": true, "gpu_timestamps": {"enabled": true, "mode": "adaptive"}});
        let c = Costs::of_recording(Some(&adaptive), Some(&footer()), true, Overrides::default());
        assert_eq!((c.cupti_ns, c.cupti_from), (0.0, Source::None));
        assert!(
            c.missing.iter().any(|m| m.starts_with("CUPTI's cost inside the default recording's adaptive windows"))
        );
    }

    /// The walks' own times (footer `stack_walks`) replace the sample program's run time over its
    /// samples (40 runs, 8 samples: 3,000 ns) and the switch-out walk's estimate.
    #[test]
    fn measured_walks_are_the_sample_and_switch_out_costs() {
        let mut f = footer();
        f["stacks"]["by_site"]["switch_out"] = json!(1);
        f["stack_walks"] = json!({"call": {"walks": 3, "ns": 9_000, "python_ns": 6_000},
            "switch_out": {"walks": 2, "ns": 1_600, "python_ns": 1_000},
            "sample": {"walks": 8, "ns": 12_000, "python_ns": 8_000}});
        let c = Costs::of_recording(Some(&header(false)), Some(&f), true, Overrides::default());
        // 12,000 ns / 8 samples; 1,600 / 2 walks, the switch program's other 3,400 ns over 10 runs
        assert_eq!((c.sample_ns, c.switch_out_stack_ns, c.switch_ns), (1500.0, 800.0, 340.0));
        // no sample walks measured: the program's figure, as before
        f["stack_walks"]["sample"] = json!({"walks": 0, "ns": 0, "python_ns": 0});
        let c = Costs::of_recording(Some(&header(false)), Some(&f), true, Overrides::default());
        assert_eq!((c.sample_ns, c.switch_out_stack_ns), (3000.0, 800.0));
    }

    /// 10 switches at 500 ns a run (5,000 ns), 1 of them a switch-out that took a stack: its walk
    /// costs what a sample does (3,000 ns), the other runs share the rest (200 ns each).
    #[test]
    fn switch_out_walks_are_taken_out_of_the_switch_mean() {
        let mut f = footer();
        f["stacks"]["by_site"]["switch_out"] = json!(1);
        let c = Costs::of_recording(Some(&header(false)), Some(&f), true, Overrides::default());
        assert_eq!((c.switch_ns, c.switch_out_stack_ns, c.sample_ns), (200.0, 3000.0, 3000.0));
        let off = [
            OffCpu { tid: 1, ts: 1_000, end_ts: 2_000, recorder_ns: 0, stack: true },
            OffCpu { tid: 1, ts: 5_000, end_ts: 6_000, recorder_ns: 0, stack: false },
        ];
        let comp = Compensation::new(c, &[], &off, &[]);
        assert_eq!(
            (comp.within(1, 0, 1_000), comp.within(1, 1_000, 2_000), comp.within(1, 2_000, 6_000)),
            (3_200, 200, 400)
        );
        // more walks than the program's time allows: the walks get it all
        f["stacks"]["by_site"]["switch_out"] = json!(4);
        let c = Costs::of_recording(Some(&header(false)), Some(&f), true, Overrides::default());
        assert_eq!((c.switch_ns, c.switch_out_stack_ns), (0.0, 1250.0));
    }

    #[test]
    fn measured_traps_from_the_header() {
        let h = json!({"type": "header", "sched": true, "probe_trap_ns": 900.0, "return_trap_ns": 1300.0});
        let c = Costs::of_recording(Some(&h), Some(&footer()), true, Overrides::default());
        assert_eq!((c.trap_ns, c.return_trap_ns, c.trap_from), (900.0, 1300.0, Source::Recording));
        // a sync's return: its trap and cu_exit's 200
        assert_eq!(c.return_cost(), 1500.0);
        // --probe-trap-ns is both
        let c =
            Costs::of_recording(Some(&h), Some(&footer()), true, Overrides { trap_ns: Some(500.0), cupti_ns: None });
        assert_eq!((c.trap_ns, c.return_trap_ns, c.trap_from), (500.0, 500.0, Source::Option));
        // an older recording: the entry's for both
        let h = json!({"type": "header", "sched": true, "probe_trap_ns": 900.0});
        let c = Costs::of_recording(Some(&h), Some(&footer()), true, Overrides::default());
        assert_eq!(c.return_trap_ns, 900.0);
    }

    #[test]
    fn missing_statistics_are_named() {
        let c =
            Costs::of_recording(None, Some(&json!({"type": "footer", "bpf_stats": null})), false, Overrides::default());
        assert_eq!(
            (c.trap_ns, c.entry_ns, c.launch_ns, c.exit_ns, c.switch_ns, c.cupti_ns),
            (700.0, 0.0, 0.0, 0.0, 0.0, 0.0)
        );
        assert_eq!(c.missing.len(), 2);
        assert!(c.missing[0].starts_with("no bpf_stats in the footer"), "{}", c.missing[0]);
        assert!(c.missing[1].starts_with("no scheduler lines"), "{}", c.missing[1]);
        // Without cu_launch the launches cost the plain entry's run.
        let f = json!({"bpf_stats": {"cu_enter": {"runs": 2, "run_time_ns": 1000}}});
        let c = Costs::of_recording(None, Some(&f), true, Overrides::default());
        assert_eq!((c.entry_ns, c.launch_ns, c.exit_ns), (500.0, 500.0, 0.0));
    }

    fn call(tid: u32, ts: u64, ret_ts: Option<u64>, launch: bool) -> Probed {
        Probed { tid, ts, ret_ts, launch, gpu_work: launch }
    }

    #[test]
    fn costs_land_where_the_probes_fired() {
        let costs = Costs::of_recording(Some(&header(true)), Some(&footer()), true, Overrides::default());
        let calls = [
            call(1, 1_000, None, true),         // launch: 700 + 1000 + 2200 cupti = 3900 at 1000
            call(1, 2_000, Some(2_500), false), // 700 + 400 at 2000, 700 + 200 at 2500
            call(2, 2_100, None, false),        // another thread
        ];
        let off = [OffCpu { tid: 1, ts: 3_000, end_ts: 4_000, recorder_ns: 300, stack: false }]; // 500 at 3000, 800 at 4000
        let samples = [Sample { tid: 2, ts: 5_000 }]; // 3000 at 5000 on thread 2
        let c = Compensation::new(costs, &calls, &off, &samples);
        assert_eq!(c.within(1, 0, 1_000), 3_900);
        assert_eq!(c.within(1, 1_000, 2_000), 1_100);
        assert_eq!(c.within(1, 1_000, 2_500), 2_000);
        assert_eq!(c.within(1, 2_500, 4_000), 1_300);
        assert_eq!(c.within(1, 0, 10_000), 3_900 + 1_100 + 900 + 500 + 800);
        assert_eq!(c.within(2, 0, 10_000), 1_100 + 3_000);
        assert_eq!(c.within(2, 4_999, 5_000), 3_000);
        assert_eq!(c.within(3, 0, 10_000), 0);
        assert_eq!(c.within(1, 4_000, 1_000), 0);
    }

    #[test]
    fn gaps_clamped_and_counted() {
        let mut s = GapStats::default();
        assert_eq!(s.take(5_000, 1_200), 3_800);
        assert_eq!(s.take(1_000, 1_500), 0);
        assert_eq!(s.take(0, 0), 0);
        assert_eq!(s, GapStats { gaps: 3, removed_ns: 2_200, clamped: 1, clamped_excess_ns: 500 });
        let c = Compensation::new(
            Costs::of_recording(None, None, false, Overrides::default()),
            &[call(1, 10, None, false)],
            &[],
            &[],
        );
        let r = PacingReport::new(&c, s, 4, &HostSpeed::default());
        assert_eq!(r.removed_ns_per_call, 550.0);
        assert_eq!(
            r.text().lines().next().unwrap(),
            "pacing: compensated: 0.002 ms of tracing removed from 3 host gaps (550 ns per probed call, 4 calls), 1 gaps clamped at 0 (500 ns of costs without room)"
        );
        assert_eq!(r.text().lines().count(), 3);
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(
            (v["pacing"].clone(), v["clamped"].clone(), v["removed_ns"].clone()),
            (json!("compensated"), json!(1), json!(2200))
        );
        let r = PacingReport::new(&Compensation::none(), GapStats::default(), 4, &HostSpeed::default());
        assert_eq!(r.text(), "pacing: recorded (host gaps as recorded, --capture-data stops left out)\n");
    }

    #[test]
    fn host_speed_factor_or_calibrations() {
        assert_eq!(HostSpeed::parse("1.25", None).unwrap().factor, 1.25);
        assert_eq!(HostSpeed::parse("2", None).unwrap().scale(1_001), 501);
        assert_eq!(HostSpeed::parse("0.5", None).unwrap().scale(1_000), 2_000);
        assert_eq!(
            HostSpeed::parse("0", None).unwrap_err(),
            "--host-speed: 0 is not a factor above 0 (2: the target host runs the host work twice as fast)"
        );
        assert!(HostSpeed::parse("-1", None).unwrap_err().starts_with("--host-speed: -1 is not a factor"));
        assert!(HostSpeed::parse("inf", None).is_err());
        let dir = std::env::temp_dir().join(format!("pacing-cal-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("target.json");
        let target =
            HostCalibration { workload: CALIBRATION_WORKLOAD.into(), ns: 4_000_000, runs_ns: vec![], host: None };
        std::fs::write(&f, serde_json::to_string(&target).unwrap()).unwrap();
        let rec = HostCalibration { ns: 5_000_000, ..target.clone() };
        let s = HostSpeed::parse(f.to_str().unwrap(), Some(&rec)).unwrap();
        assert_eq!(s.factor, 1.25);
        let e = HostSpeed::parse(f.to_str().unwrap(), None).unwrap_err();
        assert!(e.contains("the recording has no host_calibration in its header"), "{e}");
        let other = HostCalibration { workload: "other".into(), ..rec };
        let e = HostSpeed::parse(f.to_str().unwrap(), Some(&other)).unwrap_err();
        assert!(e.contains("not comparable"), "{e}");
        let e = HostSpeed::parse(dir.join("none.json").to_str().unwrap(), Some(&other)).unwrap_err();
        assert!(e.starts_with("--host-speed: ") && e.contains("none.json: cannot open"), "{e}");
        std::fs::write(&f, "{\"ns\": 5}").unwrap();
        let e = HostSpeed::parse(f.to_str().unwrap(), Some(&other)).unwrap_err();
        assert!(e.contains("not a host calibration"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn calibration_job_is_fixed() {
        assert_eq!(calibration_job(), calibration_job());
        let c = HostCalibration::measure(None);
        assert_eq!((c.runs_ns.len(), c.workload.as_str()), (CALIBRATION_RUNS, CALIBRATION_WORKLOAD));
        let mut r = c.runs_ns.clone();
        r.sort_unstable();
        assert_eq!(c.ns, r[CALIBRATION_RUNS / 2]);
    }

    #[test]
    fn pacing_names() {
        assert_eq!(Pacing::parse("recorded"), Ok(Pacing::Recorded));
        assert_eq!(Pacing::parse("raw").unwrap_err(), "\"raw\": expected compensated or recorded");
        assert_eq!(Pacing::default().name(), "compensated");
    }
}
