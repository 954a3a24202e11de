//! `replay run RECORDING`: plan, replay in each mode, measure energy, write
//! the report.

use std::collections::BTreeMap;
use std::io::Write;
use std::process::ExitCode;

use anyhow::{Context, Result};
use serde_json::{Value, json};

use crate::options::{Mode, RunArgs};
use cudarc::driver::sys::CUstream;
use replay::energy::{UpdatePeriod, Window, recorded_energy_mj, window_uncertainty_mj};
use replay::exec::session::Snapshot;
use replay::exec::{L2Flush, OutputCheck, Session, SessionOpts, Timed};
use replay::gpu_time::figures::{self, ModeGpu};
use replay::gpu_time::matching::Submitted;
use replay::plan;
use replay::recording::Recording;
use replay::recording::ranks::Selected;
use replay::report::{self, RecordedTime};
use tracer_cupti::collect::{Collector, monotonic_ns};

/// CUPTI's sorted ms of one isolated key's runs, when all were seen.
type Samples = Option<Vec<f64>>;

fn stats(v: &[f64]) -> (f64, f64) {
    let mean = if v.is_empty() { f64::NAN } else { v.iter().sum::<f64>() / v.len() as f64 };
    (mean, v.iter().copied().fold(f64::INFINITY, f64::min))
}

fn progress(msg: &str) {
    eprint!("\r\x1b[2K{msg}");
    let _ = std::io::stderr().flush();
}

/// What every mode reads: the options, the recording, its plan and its own
/// GPU time, the session and CUPTI (None: CUDA events only).
struct Replay<'a> {
    a: &'a RunArgs,
    rec: &'a Recording,
    p: &'a plan::Plan,
    recorded: &'a RecordedTime,
    s: &'a Session,
    cupti: &'a Option<Collector>,
    /// `--copies-against`: each reference (its name as given, its copies).
    copies_against: &'a [(String, Vec<replay::recording::GpuActivity>)],
    /// Timed mode's pacing: each op's offset (ns) from the first one, recorded or compensated
    /// (`--pacing`) and divided by `--host-speed` (together/pacing.rs `paced_offsets`).
    offsets: &'a [u64],
}

/// What the modes produced, in the order `--mode` ran them.
struct Results {
    /// One report row per mode run.
    modes: Vec<Value>,
    /// The first pass's output checks, then every sequence/timed pass's with --check-every-pass.
    pass_checks: Vec<Value>,
    /// The lines of outputs that are not comparable (after a skipped collective).
    set_aside: Vec<usize>,
    /// CUPTI figures of sequence, then timed passes: (mode, what they measured).
    measured: Vec<(Mode, ModeGpu)>,
    isolated: Isolated,
    notes: Vec<String>,
}

/// The isolated mode's figures per key (over every isolated run of `--mode`).
struct Isolated {
    /// Median (µs) of the runs the prediction uses: after an L2 flush, else warm.
    us: BTreeMap<String, f64>,
    /// Median (µs) of the runs with the L2 left warm by the previous one.
    warm_us: BTreeMap<String, f64>,
    /// The runs the prediction uses (ms), for the durations file.
    samples: BTreeMap<String, Vec<f64>>,
    rows: Vec<Value>,
    in_context: bool,
    timer: &'static str,
    l2: &'static str,
}

impl Default for Isolated {
    fn default() -> Self {
        Isolated {
            us: BTreeMap::new(),
            warm_us: BTreeMap::new(),
            samples: BTreeMap::new(),
            rows: Vec::new(),
            in_context: false,
            timer: "events",
            l2: "warm",
        }
    }
}

pub fn run(a: &RunArgs) -> Result<ExitCode> {
    let (rec, p, selected) = open_and_plan(a)?;
    // Read before anything runs: a bad reference is refused first.
    let copies_against = a
        .copies_against
        .iter()
        .map(|f| Ok((f.display().to_string(), replay::gpu_time::copy_kinds::reference_copies(f)?)))
        .collect::<Result<Vec<_>>>()?;
    let recorded = report::recorded_time(&rec.trace, &p);
    let (gaps, pacing) = a.host.pacer(&rec.trace)?.gaps(&rec.trace, &p.ops);
    let offsets = replay::together::pacing::paced_offsets(&p.ops, &gaps.gaps);
    if a.mode.contains(&Mode::Timed) {
        eprint!("{}", tracer_format::inert::text(&pacing.text()));
    }
    // CUPTI before the first CUDA call, so that the context is covered.
    let mut notes: Vec<String> = p.coverage.capture_cost_note().into_iter().collect();
    let cupti = start_cupti(a, &mut notes);
    let s = open_session(a, &rec, &p)?;
    notes.extend(s.setup_notes.iter().cloned());
    let r = Replay {
        a,
        rec: &rec,
        p: &p,
        recorded: &recorded,
        s: &s,
        cupti: &cupti,
        copies_against: &copies_against,
        offsets: &offsets,
    };
    let checks = r.checking_pass()?;
    let lines: Vec<(usize, bool)> = checks.iter().map(|c| (c.line, c.matches)).collect();
    let not_comparable = replay::selection::not_comparable(&p, &lines);
    let set_aside = not_comparable.as_ref().map_or(vec![], |n| n.lines.clone());
    let mut res = Results {
        modes: Vec::new(),
        pass_checks: vec![pass_check_row("first", 0, &checks, &set_aside)],
        set_aside,
        measured: Vec::new(),
        isolated: Isolated::default(),
        notes,
    };
    if a.check_every_pass {
        eprintln!("{}", pass_check_line(&res.pass_checks[0]));
    }
    r.run_modes(&mut res)?;
    let mut out = r.report_json(&checks, std::mem::take(&mut res.modes), std::mem::take(&mut res.pass_checks));
    // timed mode's (and the timed energy passes') pacing
    out["pacing"] = json!(pacing);
    if a.time_graph_launches {
        out["graph_launch_events_us"] = graph_launch_events(&s.graph_launch_us.borrow());
    }
    r.add_isolated(&mut out, &res.isolated)?;
    if let Some(s) = &selected {
        out["selection"] = json!(s);
        out["selection"]["collectives_skipped"] = json!(p.coverage.collectives.map_or(0, |c| c.launches));
    }
    if let Some(nc) = &not_comparable {
        out["outputs_not_comparable"] = json!(nc);
    }
    if let Some(c) = &cupti {
        out["cupti"] = json!({"library": c.library(), "version": c.version(), "clock": c.clock()});
    }
    let chosen = r.add_measured(&mut out, &res.measured);
    r.write_timelines(&mut out, &res.measured, chosen, &mut res.notes);
    r.add_energy(&mut out, &mut res.notes);
    out["notes"] = json!(res.notes);
    write_report(a, &rec, &out)?;
    // Outputs after a skipped collective are not comparable: not failures.
    let pass = replay::selection::checks_pass(&lines, not_comparable.as_ref());
    Ok(if pass { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

/// Opens the recording (its warnings printed) and plans it: its data files are there, it has GPU work.
fn open_and_plan(a: &RunArgs) -> Result<(Recording, plan::Plan, Option<Selected>)> {
    let opened = replay::selection::open(&a.recording, a.select.selection())?;
    for w in &opened.rec.trace.warnings {
        eprintln!("warning: {}", tracer_format::inert::text(w));
    }
    let planned = opened.plan()?;
    for n in &planned.notes {
        eprintln!("{}", tracer_format::inert::text(n));
    }
    let (rec, p) = (planned.rec, planned.plan);
    eprint!("{}", tracer_format::inert::text(&p.summary()));
    if p.ops.iter().all(|o| !o.is_work()) {
        anyhow::bail!("{}: nothing to replay (no replayable launch, copy or set)", rec.dir.display());
    }
    Ok((rec, p, planned.selected))
}

/// `--time-graph-launches`: the rebuilt graph launches' event times (every pass, warm-up
/// included), printed and as the report's `graph_launch_events_us`.
fn graph_launch_events(us: &[f64]) -> serde_json::Value {
    let mut v = us.to_vec();
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        eprintln!("graph launches timed with CUDA events: none (no graph launch was rebuilt)");
        return json!(null);
    }
    let median = replay::exec::session::graph_launch_median(&v);
    eprintln!(
        "graph launches timed with CUDA events: median {median:.1} us, min {:.1} us, max {:.1} us over {} launches",
        v[0],
        v[v.len() - 1],
        v.len()
    );
    json!({"launches": v.len(), "median": median, "min": v[0], "max": v[v.len() - 1]})
}

/// CUPTI's collector, unless --no-cupti or it cannot start (then a note says so).
fn start_cupti(a: &RunArgs, notes: &mut Vec<String>) -> Option<Collector> {
    if a.no_cupti {
        return None;
    }
    match tracer_cupti::collect::start(a.cupti_lib.as_deref()) {
        Ok(c) => {
            eprintln!("cupti: {} (version {}, clock {})", c.library(), c.version(), c.clock());
            Some(c)
        }
        Err(e) => {
            notes.push(format!(
                "the replay's GPU time is not measured with CUPTI ({e}): CUDA events only, which time tiny kernels long"
            ));
            None
        }
    }
}

/// The session on the device (images loaded, windows mapped), its setup printed.
fn open_session(a: &RunArgs, rec: &Recording, p: &plan::Plan) -> Result<Session> {
    let opts = SessionOpts {
        force_relocation: a.force_relocation,
        fill: a.fill,
        probes: a.probe.clone(),
        pinned_copies: a.pinned_copies,
        expand_graphs: a.expand_graphs,
        graph_rebuild: replay::exec::graph_execs::Rebuild {
            dot_dir: a.graph_dot.clone(),
            chain: a.graph_chain,
            flags: a.graph_instantiate_flags,
            after_pass: a.graph_build_after_pass,
            refresh: a.graph_refresh,
        },
        time_graph_launches: a.time_graph_launches,
        device_memory: a.device_memory,
        skip_ops: a.skip_ops.clone(),
    };
    let s = Session::new(rec, p, a.device, &opts)?;
    eprintln!(
        "setup: {} images loaded, {} windows mapped ({} at their recorded address) in {:.2} s",
        s.loaded_images(),
        s.map.windows.len(),
        s.map.windows.iter().filter(|w| w.at_recorded_address).count(),
        s.setup_s
    );
    for w in s.map.windows.iter().filter(|w| !w.at_recorded_address) {
        eprintln!("moved: {} window {:#x}+{:#x} at {:#x}", w.kind, w.recorded, w.size, w.actual);
    }
    Ok(s)
}

/// Writes the report (NAME.rec/replay-report.json or --report) and prints it as text.
fn write_report(a: &RunArgs, rec: &Recording, out: &Value) -> Result<()> {
    let path = a.report.clone().unwrap_or_else(|| rec.dir.join("replay-report.json"));
    std::fs::write(&path, serde_json::to_string_pretty(out)? + "\n")
        .with_context(|| format!("{}: cannot write", path.display()))?;
    print!("{}", report::text(out));
    println!("report: {}", path.display());
    Ok(())
}

impl Replay<'_> {
    /// Whether the recording measured its GPU time (`gpu` lines); without
    /// them its launch-to-synchronize spans are host-bound, mostly not GPU
    /// time, and no error % is given against them.
    fn measured(&self) -> bool {
        self.recorded.source == "gpu_lines"
    }

    /// The recording's measured GPU busy time (µs), if it has one.
    fn busy_us(&self) -> Option<f64> {
        self.measured().then(|| self.recorded.busy_ns as f64 / 1e3)
    }

    /// The recording's measured GPU span, first start to last end (µs), if it has one.
    fn span_us(&self) -> Option<f64> {
        self.measured().then(|| self.recorded.span_ns as f64 / 1e3)
    }

    /// First pass: checks the outputs whose bytes the recording holds.
    fn checking_pass(&self) -> Result<Vec<OutputCheck>> {
        let (_, _, checks) = self.s.pass(None, Some(self.rec)).context("first (checking) pass")?;
        if let Some(c) = self.cupti {
            c.take(); // the checking pass (its synchronizations for the checks) is not measured
        }
        Ok(checks)
    }

    /// Each mode of --mode, in order.
    fn run_modes(&self, res: &mut Results) -> Result<()> {
        let sub = self.s.submitted(self.p);
        for m in &self.a.mode {
            match m {
                Mode::Sequence | Mode::Timed => self.stream_mode(*m, &sub, res)?,
                Mode::Graph => self.graph_mode(res)?,
                Mode::Isolated => self.isolated_mode(res)?,
            }
        }
        Ok(())
    }

    /// Sequence or timed mode: warm-up and timed passes from the initial memory, their row and CUPTI's figures.
    fn stream_mode(&self, m: Mode, sub: &[Submitted], res: &mut Results) -> Result<()> {
        let (a, s, p) = (self.a, self.s, self.p);
        let pace: Option<Vec<u64>> = (m == Mode::Timed).then(|| self.offsets.to_vec());
        let mut gpu = Vec::new();
        let mut wall = Vec::new();
        let mut windows = Vec::new();
        for it in 0..a.warmup + a.iterations {
            progress(&format!("{m:?}: iteration {}/{}", it + 1, a.warmup + a.iterations));
            s.reset_memory()?;
            let chk = a.check_every_pass.then_some(self.rec);
            let t0 = monotonic_ns();
            let (g, w, c) =
                s.pass(pace.as_deref(), chk).with_context(|| format!("{m:?} pass {}", it + 1).to_lowercase())?;
            if it >= a.warmup {
                windows.push((t0, monotonic_ns()));
            }
            if a.check_every_pass {
                let row = pass_check_row(&format!("{m:?}").to_lowercase(), it + 1, &c, &res.set_aside);
                eprintln!("\n{}", pass_check_line(&row));
                res.pass_checks.push(row);
            }
            if it >= a.warmup {
                gpu.push(g);
                wall.push(w);
            }
        }
        eprintln!();
        let (mean, min) = stats(&gpu);
        // `timed` keeps the recorded idle gaps: compared with the recorded span, not the busy time.
        let (reference, ref_us) = if m == Mode::Timed { ("span", self.span_us()) } else { ("busy", self.busy_us()) };
        let mut row = json!({
            "mode": format!("{m:?}").to_lowercase(), "gpu_ms": gpu, "wall_ms": wall,
            "mean_us": mean * 1e3, "min_us": min * 1e3,
            "reference": reference,
            "error_pct": ref_us.and_then(|r| report::error_pct(mean * 1e3, r)),
            "note": if m == Mode::Timed { Some("submissions paced to the recorded offsets (less what tracing cost the host gaps unless --pacing recorded: the report's pacing): includes the recorded idle gaps") } else { None },
        });
        if let Some(c) = self.cupti {
            let mut g = figures::mode_gpu(p, Some(sub), c.take(), &windows, self.recorded);
            g.segments = figures::segment_rows(self.rec, p, &g.matched);
            row["cupti"] = g.json.clone();
            if let Some(rows) = &g.segments {
                row["cupti"]["segments"] = rows.clone();
            }
            if !self.copies_against.is_empty() {
                row["cupti"]["copies_against"] = replay::gpu_time::copy_kinds::against(self.copies_against, &g.passes);
            }
            res.measured.push((m, g));
        }
        res.modes.push(row);
        Ok(())
    }

    /// Graph mode: the sequence captured into a CUDA graph, launched and timed (its failure is a note and a row).
    fn graph_mode(&self, res: &mut Results) -> Result<()> {
        let a = self.a;
        match self.s.graph() {
            Ok(g) => {
                let mut gpu = Vec::new();
                let mut windows = Vec::new();
                for it in 0..a.warmup + a.iterations {
                    let t0 = monotonic_ns();
                    let t = g.launch_timed()?;
                    if it >= a.warmup {
                        gpu.push(t);
                        windows.push((t0, monotonic_ns()));
                    }
                }
                let (mean, min) = stats(&gpu);
                let mut row = json!({
                    "mode": "graph", "gpu_ms": gpu, "mean_us": mean * 1e3, "min_us": min * 1e3,
                    "error_pct": self.busy_us().and_then(|r| report::error_pct(mean * 1e3, r)),
                    "note": "captured on one stream in recorded order (recorded concurrency not kept; host syncs dropped)",
                });
                if let Some(c) = self.cupti {
                    // A graph's records do not pair with the stream ops (one stream): totals only.
                    row["cupti"] = figures::mode_gpu(self.p, None, c.take(), &windows, self.recorded).json;
                }
                res.modes.push(row);
            }
            Err(e) => {
                res.notes.push(format!("graph mode failed: {e:#}"));
                res.modes.push(json!({"mode": "graph", "error": format!("{e:#}")}));
            }
        }
        Ok(())
    }

    /// Isolated mode: each distinct kernel+shape, copy and set timed alone, in context when there is
    /// memory for a snapshot, warm and after an L2 flush.
    fn isolated_mode(&self, res: &mut Results) -> Result<()> {
        let p = self.p;
        let keys = report::distinct_keys(p);
        let st = self.s.new_stream()?;
        let n = keys.len();
        // Each key's first occurrence, in recorded order, with the memsets that prepared it.
        let order = report::in_recorded_order(&keys);
        let targets: Vec<(usize, Vec<usize>)> = order.iter().map(|(_, op)| (*op, prologue(p, *op))).collect();
        let snap = self.isolated_snapshot(&mut res.notes);
        res.isolated.in_context = snap.is_some();
        let flush = self.l2_flush(&mut res.notes);
        if let Some(c) = self.cupti {
            c.take(); // what ran before (not isolated timing)
        }
        let all = self.time_isolated(snap.as_ref(), &targets, st, n, flush.as_ref())?;
        let (by_cupti_warm, by_cupti_cold) = self.isolated_cupti_samples(&order, &all, flush.as_ref(), &mut res.notes);
        res.isolated.timer = if self.cupti.is_some() { "cupti" } else { "events" };
        res.isolated.l2 = if flush.is_some() { "flushed" } else { "warm" };
        self.isolated_rows(&keys, &order, all, by_cupti_warm, by_cupti_cold, &mut res.isolated);
        progress(&format!("isolated: {n}/{n} done\n"));
        Ok(())
    }

    /// In context needs a snapshot of the windows; without the memory for one, out of context (a note says so).
    fn isolated_snapshot(&self, notes: &mut Vec<String>) -> Option<Snapshot> {
        if self.a.isolated_out_of_context {
            return None;
        }
        match self.s.snapshot() {
            Ok(x) => Some(x),
            Err(e) => {
                notes.push(format!(
                    "isolated mode timed out of context (a data-dependent kernel may misbehave): no device memory for the snapshot: {e:#}"
                ));
                None
            }
        }
    }

    /// A cold L2 before each timed run (--isolated-warm-l2: none); both are timed in context.
    fn l2_flush(&self, notes: &mut Vec<String>) -> Option<L2Flush> {
        if self.a.isolated_warm_l2 {
            return None;
        }
        match L2Flush::new(&self.s.ctx) {
            Ok(f) => Some(f),
            Err(e) => {
                notes.push(format!("isolated: L2 not flushed before each run: {e:#}"));
                None
            }
        }
    }

    /// Each target op timed warm and (with `flush`) cold: in context with a snapshot, else alone.
    fn time_isolated(
        &self,
        snap: Option<&Snapshot>,
        targets: &[(usize, Vec<usize>)],
        st: CUstream,
        n: usize,
        flush: Option<&L2Flush>,
    ) -> Result<Vec<(Timed, Option<Timed>)>> {
        let (s, repeats) = (self.s, self.a.repeats);
        let show = |j: usize| {
            if j.is_multiple_of(16) {
                progress(&format!("isolated: {j}/{n} distinct kernels, copies and sets"));
            }
        };
        Ok(if let Some(snap) = snap {
            s.time_in_context(snap, targets, st, 3, repeats, flush, show).context("isolated mode (in context)")?
        } else {
            let mut v = Vec::new();
            for (j, (op, pro)) in targets.iter().enumerate() {
                show(j);
                v.push(s.time_warm_and_cold(*op, pro, st, 3, repeats, flush)?);
            }
            v
        })
    }

    /// CUPTI's durations of each key's warm and cold runs (None where its records were not one per run).
    fn isolated_cupti_samples(
        &self,
        order: &[(String, usize)],
        all: &[(Timed, Option<Timed>)],
        flush: Option<&L2Flush>,
        notes: &mut Vec<String>,
    ) -> (Vec<Samples>, Vec<Samples>) {
        // Every timed window in time order: (key index, after an L2 flush?, window).
        let mut runs: Vec<(usize, bool, (u64, u64))> = Vec::new();
        for (j, (warm, cold)) in all.iter().enumerate() {
            runs.push((j, false, warm.window));
            if let Some(cold) = cold {
                runs.push((j, true, cold.window));
            }
        }
        let (mut by_cupti_warm, mut by_cupti_cold): (Vec<Samples>, Vec<Samples>) =
            (vec![None; all.len()], vec![None; all.len()]);
        if let Some(c) = self.cupti {
            let ops: Vec<usize> = runs.iter().map(|r| order[r.0].1).collect();
            let windows: Vec<(u64, u64)> = runs.iter().map(|r| r.2).collect();
            let flush_bytes = flush.map(|f| f.bytes as u64);
            let d = figures::isolated_durations(self.p, &ops, &windows, c.take(), self.a.repeats, flush_bytes);
            let missing = d.iter().filter(|x| x.is_none()).count();
            if missing > 0 {
                notes.push(format!(
                    "isolated: {missing} timings of {} keys by CUDA events (CUPTI's records of their runs were not {} per key)",
                    all.len(),
                    self.a.repeats
                ));
            }
            for (&(j, cold, _), x) in runs.iter().zip(d) {
                if cold {
                    by_cupti_cold[j] = x;
                } else {
                    by_cupti_warm[j] = x;
                }
            }
        }
        (by_cupti_warm, by_cupti_cold)
    }

    /// Each key's medians and report row, from CUPTI's durations where it has them, else the events'.
    fn isolated_rows(
        &self,
        keys: &BTreeMap<String, (usize, usize)>,
        order: &[(String, usize)],
        all: Vec<(Timed, Option<Timed>)>,
        by_cupti_warm: Vec<Samples>,
        by_cupti_cold: Vec<Samples>,
        iso: &mut Isolated,
    ) {
        let p = self.p;
        for ((((k, _), (warm, cold)), cw), cc) in order.iter().zip(all).zip(by_cupti_warm).zip(by_cupti_cold) {
            let (op, count) = &keys[k];
            let event_median_ms = report::nearest_rank(&warm.ms, 50.0);
            let warm_samples = cw.unwrap_or(warm.ms);
            let cold_samples = match cold {
                Some(t) => Some(cc.unwrap_or(t.ms)),
                None => None,
            };
            let warm_ms = report::nearest_rank(&warm_samples, 50.0);
            iso.warm_us.insert(k.clone(), warm_ms * 1e3);
            let samples = cold_samples.clone().unwrap_or(warm_samples);
            let ms = report::nearest_rank(&samples, 50.0);
            iso.us.insert(k.clone(), ms * 1e3);
            iso.samples.insert(k.clone(), samples.clone());
            let o = &p.ops[*op];
            let mut row = json!({"key": k, "family": report::op_family(p, *op), "count": count, "median_us": ms * 1e3,
                "p10_us": report::nearest_rank(&samples, 10.0) * 1e3, "p90_us": report::nearest_rank(&samples, 90.0) * 1e3,
                "total_us": ms * 1e3 * *count as f64, "first_line": o.line,
                "l2": iso.l2, "warm_l2_median_us": warm_ms * 1e3,
                "event_median_us": event_median_ms * 1e3});
            if let Some(l) = o.launch() {
                row["kernel"] = json!(l.kernel);
                row["grid"] = json!(l.grid);
                row["block"] = json!(l.block);
                row["shared_mem"] = json!(l.shared_mem);
            }
            iso.rows.push(row);
        }
    }

    /// The report's figures that every run has: recording, device, coverage, plan, memory, recorded
    /// time, the modes' rows and the output checks.
    fn report_json(&self, checks: &[OutputCheck], modes: Vec<Value>, pass_checks: Vec<Value>) -> Value {
        let (rec, p, s, recorded) = (self.rec, self.p, self.s, self.recorded);
        json!({
            "format": "tracer-replay-report", "version": 1,
            "recording": rec.dir.display().to_string(),
            "device": format!("{} ({})", s.ctx.name, s.ctx.pci_bus_id),
            "replay_version": env!("CARGO_PKG_VERSION"),
            "coverage": {
                "launches": p.coverage.launches, "launches_replayed": p.coverage.launches_replayed,
                "percent": p.coverage.percent(), "launches_by_api": p.coverage.launches_by_api,
                "skipped_by_reason": p.coverage.skipped_by_reason, "skipped": p.coverage.skipped,
                "graph_launches": p.coverage.graph_launches, "graph_launches_expanded": p.coverage.graph_launches_expanded,
                "graph_launches_not_replayed": p.coverage.graph_launches_not_replayed,
                "graph_launches_as_graphs": s.graphs.launches, "graph_execs_rebuilt": s.graphs.rebuilt,
                "graph_kernels": p.coverage.graph_kernels, "graph_kernels_replayed": p.coverage.graph_kernels_replayed,
                "graph_skipped_by_reason": p.coverage.graph_skipped_by_reason, "copies": p.coverage.copies,
                "copies_replayed": p.coverage.copies_replayed, "h2d_with_data": p.coverage.h2d_with_data,
                "h2d_filled": p.coverage.h2d_filled, "host_pageable": p.coverage.host_pageable, "sets": p.coverage.sets, "sets_replayed": p.coverage.sets_replayed,
                "other_skipped": p.coverage.other_skipped,
            },
            "plan": {
                "ops": p.ops.len(), "streams": p.streams.len(), "events": p.events.len(), "edges": p.edges.len(),
                "ranges": p.ranges.len(), "relocation_candidates": p.relocations.len(),
            },
            "memory": {
                "summary": format!("{} windows, {} at the recorded address, {} relocated", s.map.windows.len(),
                    s.map.windows.iter().filter(|w| w.at_recorded_address).count(),
                    s.map.windows.iter().filter(|w| !w.at_recorded_address).count()),
                "granularity": s.map.granularity, "windows": s.map.windows,
            },
            "recorded": {
                "source": recorded.source, "measured": self.measured(), "busy_us": self.busy_us(),
                "launch_to_sync_us": (!self.measured()).then(|| recorded.busy_ns as f64 / 1e3),
                "span_us": recorded.span_ns as f64 / 1e3,
                "kernels_us": recorded.kernels_ns as f64 / 1e3, "copies_us": recorded.copies_ns as f64 / 1e3,
                "sets_us": recorded.sets_ns as f64 / 1e3,
            },
            "modes": modes,
            "output_checks": checks,
            "pass_checks": pass_checks,
            "setup_s": s.setup_s,
        })
    }

    /// The prediction from the isolated medians (cold and warm L2), the isolated rows, and the
    /// durations file beside the report.
    fn add_isolated(&self, out: &mut Value, iso: &Isolated) -> Result<()> {
        if iso.us.is_empty() {
            return Ok(());
        }
        let (p, recorded, busy_us) = (self.p, self.recorded, self.busy_us());
        let (pred, fam, top) = report::predict(p, &iso.us, recorded);
        out["predicted_us"] = json!(pred);
        out["predicted_error_pct"] = json!(busy_us.and_then(|b| report::error_pct(pred, b)));
        out["families"] = json!(fam);
        out["top_kernels"] = json!(top.iter().take(20).collect::<Vec<_>>());
        out["isolated"] = Value::Array(iso.rows.clone());
        let dpath = self
            .a
            .report
            .as_ref()
            .map(|r| r.with_extension("durations.json"))
            .unwrap_or_else(|| self.rec.dir.join("kernel-durations.json"));
        let d = report::durations_file(p, &iso.samples, Some(&self.s.ctx.name));
        std::fs::write(&dpath, serde_json::to_string_pretty(&d)? + "\n")
            .with_context(|| format!("{}: cannot write", dpath.display()))?;
        out["durations_file"] = json!(dpath.display().to_string());
        out["isolated_in_context"] = json!(iso.in_context);
        out["isolated_timer"] = json!(iso.timer);
        out["isolated_l2"] = json!(iso.l2);
        if iso.l2 == "flushed" {
            // The same kernels with the L2 left warm by their previous run.
            let (pred, fam, _) = report::predict(p, &iso.warm_us, recorded);
            out["predicted_warm_l2_us"] = json!(pred);
            out["predicted_warm_l2_error_pct"] = json!(busy_us.and_then(|b| report::error_pct(pred, b)));
            out["families_warm_l2"] = json!(fam);
        }
        Ok(())
    }

    /// Recorded vs replayed per family, kernel and segment, from the sequence passes (else the timed
    /// ones); the mode they came from.
    fn add_measured(&self, out: &mut Value, measured: &[(Mode, ModeGpu)]) -> Option<Mode> {
        let pick = measured.iter().find(|x| x.0 == Mode::Sequence).or_else(|| measured.first());
        if let Some((mode, g)) = pick {
            let (fams, kernels) = figures::families_and_kernels(&g.passes, self.recorded, 20);
            out["measured"] =
                json!({"mode": format!("{mode:?}").to_lowercase(), "families": fams, "top_kernels": kernels});
            if let Some(rows) = &g.segments {
                out["measured"]["segments"] = rows.clone();
            }
            self.write_in_context_durations(out, *mode, g);
        }
        pick.map(|x| x.0)
    }

    /// The kernel durations the chosen mode's paired passes measured, in context, as a durations file
    /// for `tracer whatif` (NAME.rec/MODE-durations.json, or FILE.MODE-durations.json beside
    /// `--report FILE`; gpu_time/in_context.rs); a failure to write it goes into the report.
    fn write_in_context_durations(&self, out: &mut Value, mode: Mode, g: &ModeGpu) {
        if g.matched.is_empty() {
            return;
        }
        let name = format!("{}-durations.json", format!("{mode:?}").to_lowercase());
        let path = match &self.a.report {
            Some(r) => r.with_extension(&name),
            None => self.rec.dir.join(&name),
        };
        let f = replay::gpu_time::in_context::durations_file(self.p, &g.matched, Some(&self.s.ctx.name));
        match serde_json::to_string_pretty(&f).map(|t| std::fs::write(&path, t + "\n")) {
            Ok(Ok(())) => out["durations_file_in_context"] = json!(path.display().to_string()),
            Ok(Err(e)) => out["durations_file_in_context_error"] = json!(format!("{}: {e}", path.display())),
            Err(e) => out["durations_file_in_context_error"] = json!(e.to_string()),
        }
    }

    /// The last measured pass of each mode as a tracer trace: the chosen mode's
    /// as replay-timeline.jsonl, the others' as replay-timeline-MODE.jsonl.
    fn write_timelines(
        &self,
        out: &mut Value,
        measured: &[(Mode, ModeGpu)],
        chosen: Option<Mode>,
        notes: &mut Vec<String>,
    ) {
        let rec = self.rec;
        for (mode, g) in measured {
            let Some(acts) = g.passes.last() else { continue };
            let lines = &g.last_links;
            let name = format!("{mode:?}").to_lowercase();
            let main = Some(*mode) == chosen;
            let tpath = match (&self.a.report, main) {
                (Some(r), true) => r.with_extension("timeline.jsonl"),
                (Some(r), false) => r.with_extension(format!("timeline-{name}.jsonl")),
                (None, true) => rec.dir.join("replay-timeline.jsonl"),
                (None, false) => rec.dir.join(format!("replay-timeline-{name}.jsonl")),
            };
            match write_timeline(&tpath, rec, self.p, self.s, *mode, acts, lines, c_lib(self.cupti), g.passes.len()) {
                Ok(()) => {
                    if main {
                        out["timeline_file"] = json!(tpath.display().to_string());
                    }
                    out["timeline_files"][&name] = json!(tpath.display().to_string());
                }
                Err(e) => notes.push(format!("replayed {name} timeline not written: {e:#}")),
            }
        }
    }

    /// With --energy-seconds: the energy figures (their failure is a note).
    fn add_energy(&self, out: &mut Value, notes: &mut Vec<String>) {
        let a = self.a;
        if a.energy_seconds > 0.0 {
            let pace: Option<Vec<u64>> = a.mode.contains(&Mode::Timed).then(|| self.offsets.to_vec());
            match energy(self.s, self.rec, self.p, a.energy_seconds, pace.as_deref(), self.cupti) {
                Ok(e) => out["energy"] = e,
                Err(e) => notes.push(format!("energy not measured: {e:#}")),
            }
        }
    }
}

fn c_lib(c: &Option<tracer_cupti::collect::Collector>) -> String {
    c.as_ref().map(|c| c.library().to_owned()).unwrap_or_default()
}

/// `replay-timeline.jsonl`: the last measured pass, shifted so that it starts
/// where the recorded GPU work started (the recording's first `gpu` line,
/// else its first GPU op's submission).
#[allow(
    clippy::too_many_arguments,
    reason = "the timeline file joins the recording, the plan, the session and the measured times"
)]
fn write_timeline(
    path: &std::path::Path,
    rec: &Recording,
    p: &plan::Plan,
    s: &Session,
    mode: Mode,
    acts: &[replay::gpu_time::Activity],
    lines: &[Option<(usize, u64)>],
    lib: String,
    pass: usize,
) -> Result<()> {
    use replay::gpu_time::timeline_file::{Header, lines as timeline_lines};
    let rec_start = replay::gpu_time::recorded::plan_gpu_lines(&rec.trace, p)
        .iter()
        .map(|g| g.ts)
        .min()
        .or_else(|| p.ops.iter().find(|o| o.is_work()).map(|o| o.ts))
        .unwrap_or(0);
    let first = acts.first().map_or(rec_start, |x| x.start);
    let shift = rec_start as i64 - first as i64;
    let pid = p.ops.iter().map(|o| o.pid).min().unwrap_or(0);
    let h = Header {
        recording: &rec.dir.display().to_string(),
        command: std::env::args().collect(),
        gpu_model: &s.ctx.name,
        gpu_bus: &s.ctx.pci_bus_id,
        mode: &format!("{mode:?}").to_lowercase(),
        pass,
        cupti_library: &lib,
    };
    let mut out = String::new();
    for v in timeline_lines(&h, acts, lines, shift, pid, &rec.trace.markers) {
        out.push_str(&serde_json::to_string(&v)?);
        out.push('\n');
    }
    std::fs::write(path, out).with_context(|| format!("{}: cannot write", path.display()))
}

/// NVML energy: the sequence repeated back to back (GPU busy: energy per
/// iteration of the kernels themselves), and with `pace` (timed mode) timed
/// passes, which keep the recorded idle gaps and so compare with the
/// recording's own energy over its span even for a launch-bound program.
fn energy(
    s: &Session,
    rec: &Recording,
    p: &plan::Plan,
    secs: f64,
    pace: Option<&[u64]>,
    cupti: &Option<tracer_cupti::collect::Collector>,
) -> Result<Value> {
    use replay::energy::{Meter, idle_uncertainty_mw, recorded_net_mj};
    let secs = secs.max(2.0);
    let m = Meter::new(&s.ctx.pci_bus_id)?;
    progress("energy: counter update period (1 s)");
    let period = m.update_period(1.0)?;
    progress(&format!("energy: idle baseline ({secs:.0} s)"));
    let idle_mw = m.idle_mw(secs)?;
    let idle_unc_mw = idle_uncertainty_mw(&period, idle_mw, secs);
    // Each repetition from the initial memory, like the timed passes (the
    // reset's memset, a fraction of a millisecond, is inside the window);
    // CUPTI's records are dropped as they come.
    let one = |pace: Option<&[u64]>| -> Result<()> {
        s.reset_memory()?;
        s.pass(pace, None)?;
        if let Some(c) = cupti {
            c.take();
        }
        Ok(())
    };
    progress(&format!("energy: sequence repeated for >= {secs:.0} s"));
    let w = m.window(secs, idle_mw, || one(None))?;
    eprintln!();
    let n = w.iterations as f64;
    let unc_w = window_uncertainty_mj(&period, w.energy_mj / w.seconds, idle_mw, w.tail_s);
    let per_it = (w.energy_mj - idle_mw * w.seconds) / n;
    let per_it_unc = (unc_w + idle_unc_mw * w.seconds) / n;
    // The recording: its power lines over the GPU work's span, less the same idle baseline.
    let (t0, t1, span_s) = recorded_work_span(rec, p);
    let rec_unc = |gross_mj: f64| recorded_uncertainty(rec, &period, span_s, gross_mj);
    let (recorded, recorded_unc, not_measured) = match (t0, t1) {
        (Some(a), Some(b)) if b > a => match recorded_net_mj(&rec.trace, 0, a, b, idle_mw, 2.0) {
            Ok(e) => (Some(e), Some(rec_unc(e + idle_mw * span_s) + idle_unc_mw * span_s), None),
            Err(why) => (None, None, Some(why)),
        },
        _ => (None, None, Some("no GPU work in the recording".to_owned())),
    };
    let tokens: u64 = rec.trace.markers.iter().filter_map(|m| m.tokens).sum();
    let pct = |u: f64, x: f64| (x.abs() > 0.0).then(|| 100.0 * u / x.abs());
    let mut out = json!({
        "update_period_ms": period.median_ms, "update_jitter_ms": period.jitter_ms, "update_changes": period.changes,
        "idle_mw": idle_mw, "idle_uncertainty_mw": idle_unc_mw,
        "replay_window_s": w.seconds, "replay_iterations": w.iterations, "replay_tail_s": w.tail_s,
        "replay_mj_total": w.energy_mj, "replay_mj_per_iteration": per_it,
        "replay_uncertainty_mj": per_it_unc, "replay_uncertainty_pct": pct(per_it_unc, per_it),
        "recorded_mj": recorded, "recorded_uncertainty_mj": recorded_unc,
        "recorded_not_measured": not_measured,
        "error_pct": recorded.and_then(|r| report::error_pct(per_it, r)),
        "tokens": if tokens > 0 { Some(tokens) } else { None },
        "replay_mj_per_token": if tokens > 0 { Some(per_it / tokens as f64) } else { None },
        "recorded_mj_per_token": if tokens > 0 { recorded.map(|r| r / tokens as f64) } else { None },
    });
    if let (Some(pace), Some(a), Some(b)) = (pace, t0, t1) {
        progress(&format!("energy: timed passes for >= {secs:.0} s"));
        let tw = m.window(secs, idle_mw, || one(Some(pace)))?;
        eprintln!();
        let idle = Idle { period: &period, mw: idle_mw, unc_mw: idle_unc_mw };
        out["timed"] = timed_energy(&tw, rec, &idle, (a, b), span_s, tokens);
    }
    Ok(out)
}

/// The recording's GPU work span: its first work submission to its last work's end (its last gpu
/// line's, when it has them), in ns, and its length in s (0 without work).
fn recorded_work_span(rec: &Recording, p: &plan::Plan) -> (Option<u64>, Option<u64>, f64) {
    let t0 = p.ops.iter().find(|o| o.is_work()).map(|o| o.ts);
    let t1 = p.ops.iter().rev().find(|o| o.is_work()).map(|o| o.ts + o.duration_ns.unwrap_or(0));
    let t1 = rec.trace.gpu.iter().map(|g| g.end_ts).max().or(t1);
    let span_s = match (t0, t1) {
        (Some(a), Some(b)) if b > a => (b - a) as f64 / 1e9,
        _ => 0.0,
    };
    (t0, t1, span_s)
}

/// The uncertainty (mJ) of the recording's `gross_mj` over its `span_s`, from its power lines.
fn recorded_uncertainty(rec: &Recording, period: &UpdatePeriod, span_s: f64, gross_mj: f64) -> f64 {
    replay::energy::recorded_uncertainty_mj(&rec.trace, 0, period, gross_mj / span_s.max(1e-9))
}

/// The idle baseline the energy figures are net of: the counter's update period, the idle power
/// and its uncertainty (mW).
struct Idle<'a> {
    period: &'a UpdatePeriod,
    mw: f64,
    unc_mw: f64,
}

/// The timed passes' energy (recorded idle gaps kept) against the recording's over its work span
/// `(a, b)`, gross and above idle.
fn timed_energy(tw: &Window, rec: &Recording, idle: &Idle, (a, b): (u64, u64), span_s: f64, tokens: u64) -> Value {
    let (idle_mw, idle_unc_mw) = (idle.mw, idle.unc_mw);
    let n = tw.iterations as f64;
    let per_pass = tw.energy_mj / n;
    let pass_s = tw.seconds / n;
    let unc = window_uncertainty_mj(idle.period, tw.energy_mj / tw.seconds, idle_mw, tw.tail_s) / n;
    let net_pass = per_pass - idle_mw * pass_s;
    let net_unc = unc + idle_unc_mw * pass_s;
    let rec_gross = (span_s >= 2.0).then(|| recorded_energy_mj(&rec.trace, 0, a, b)).flatten();
    let rec_gross_unc = rec_gross.map(|g| recorded_uncertainty(rec, idle.period, span_s, g));
    let rec_net = rec_gross.map(|g| g - idle_mw * span_s);
    let rec_net_unc = rec_gross_unc.map(|u| u + idle_unc_mw * span_s);
    // Relative uncertainty of a ratio: the sum of both sides' relative uncertainties.
    let err_unc = |x: f64, ux: f64, r: Option<f64>, ur: Option<f64>| match (r, ur) {
        (Some(r), Some(ur)) if x != 0.0 && r != 0.0 => Some(100.0 * (ux / x.abs() + ur / r.abs()) * (x / r).abs()),
        _ => None,
    };
    json!({
        "window_s": tw.seconds, "passes": tw.iterations, "pass_s": pass_s, "tail_s": tw.tail_s, "recorded_span_s": span_s,
        "replay_mj_per_pass": per_pass, "replay_uncertainty_mj": unc,
        "recorded_mj": rec_gross, "recorded_uncertainty_mj": rec_gross_unc,
        "error_pct": rec_gross.and_then(|r| report::error_pct(per_pass, r)),
        "error_uncertainty_pct": err_unc(per_pass, unc, rec_gross, rec_gross_unc),
        "replay_net_mj_per_pass": net_pass, "replay_net_uncertainty_mj": net_unc,
        "recorded_net_mj": rec_net, "recorded_net_uncertainty_mj": rec_net_unc,
        "net_error_pct": rec_net.and_then(|r| report::error_pct(net_pass, r)),
        "net_error_uncertainty_pct": err_unc(net_pass, net_unc, rec_net, rec_net_unc),
        "replay_mj_per_token": if tokens > 0 { Some(per_pass / tokens as f64) } else { None },
        "recorded_mj_per_token": if tokens > 0 { rec_gross.map(|r| r / tokens as f64) } else { None },
        "note": if span_s < 2.0 { Some(format!("the recorded span ({span_s:.3} s) is under the 2 s the counter needs")) } else { None },
    })
}

/// One pass's output checks, summarized: how many, how many identical, the first line that differed.
/// A pass's output checks; those of `set_aside` lines (outputs after a skipped collective, not
/// comparable) are counted apart, not as differences.
fn pass_check_row(mode: &str, pass: u32, c: &[OutputCheck], set_aside: &[usize]) -> Value {
    let (aside, c): (Vec<&OutputCheck>, Vec<&OutputCheck>) = c.iter().partition(|x| set_aside.contains(&x.line));
    let bad: Vec<&&OutputCheck> = c.iter().filter(|x| !x.matches).collect();
    let mut row = json!({"mode": mode, "pass": pass, "checked": c.len(), "identical": c.len() - bad.len(),
        "first_difference_line": bad.first().map(|x| x.line),
        "different_bytes": bad.iter().map(|x| x.mismatched_bytes).sum::<u64>()});
    if !aside.is_empty() {
        row["not_comparable"] = json!(aside.len());
    }
    row
}

fn pass_check_line(r: &Value) -> String {
    format!(
        "checks {} pass {}: {}/{} device-to-host copies identical{}{}",
        r["mode"].as_str().unwrap_or(""),
        r["pass"],
        r["identical"],
        r["checked"],
        match r["first_difference_line"].as_u64() {
            Some(l) => format!(", first difference at trace.jsonl line {l}"),
            None => String::new(),
        },
        match r["not_comparable"].as_u64() {
            Some(n) => format!(" ({n} more not comparable: after a skipped collective)"),
            None => String::new(),
        }
    )
}

/// The memsets submitted on the same stream right before op `i` (at most
/// 4, nearest last), which a kernel may depend on (zeroed counters).
fn prologue(p: &replay::plan::Plan, i: usize) -> Vec<usize> {
    let mut v = Vec::new();
    if !matches!(p.ops[i].kind, replay::plan::OpKind::Launch(_)) {
        return v;
    }
    let stream = p.ops[i].stream;
    for j in (0..i).rev() {
        let o = &p.ops[j];
        if !o.is_work() || o.stream != stream {
            continue;
        }
        if matches!(o.kind, replay::plan::OpKind::Set(_)) && v.len() < 4 {
            v.push(j);
        } else {
            break;
        }
    }
    v.reverse();
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chk(line: usize, matches: bool, bad: u64) -> OutputCheck {
        OutputCheck { line, size: 1, matches, mismatched_bytes: bad, first_mismatch: (!matches).then_some(0) }
    }

    #[test]
    fn pass_check_summary() {
        let r = pass_check_row("sequence", 3, &[chk(10, true, 0), chk(20, false, 1), chk(30, false, 4)], &[]);
        assert_eq!(
            r,
            json!({"mode": "sequence", "pass": 3, "checked": 3, "identical": 1, "first_difference_line": 20, "different_bytes": 5})
        );
        assert_eq!(
            pass_check_line(&r),
            "checks sequence pass 3: 1/3 device-to-host copies identical, first difference at trace.jsonl line 20"
        );
        let ok = pass_check_row("first", 0, &[chk(10, true, 0)], &[]);
        assert_eq!(pass_check_line(&ok), "checks first pass 0: 1/1 device-to-host copies identical");
        // Outputs after a skipped collective are set aside, not differences.
        let rank = pass_check_row("sequence", 1, &[chk(10, true, 0), chk(20, false, 1), chk(30, true, 0)], &[20, 30]);
        assert_eq!(
            rank,
            json!({"mode": "sequence", "pass": 1, "checked": 1, "identical": 1, "first_difference_line": null,
                   "different_bytes": 0, "not_comparable": 2})
        );
        assert_eq!(
            pass_check_line(&rank),
            "checks sequence pass 1: 1/1 device-to-host copies identical (2 more not comparable: after a skipped collective)"
        );
    }
}
