//! The analysis subcommands: `tracer gaps | report | export | calibrate |
//! compare`. Thin: load, call the pure functions, print.
use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use clap::{Args, ValueEnum};

use crate::analysis::durations::Durations;
use crate::analysis::timeline::{self, Timeline};
use crate::analysis::{compare, gaps, phases, report};
use crate::cli::load;
use crate::cli::output::OutFile;
use crate::cli::progress::Progress;
use crate::export::perfetto;

#[derive(ValueEnum, Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TimelineArg {
    /// measured if the trace has `gpu` lines, else inferred with --durations, else bound
    #[default]
    Auto,
    /// the trace's `gpu` lines (CUPTI, --gpu-timestamps)
    Measured,
    /// launches + calibrated kernel durations, simulated per stream (needs --durations)
    Inferred,
    /// no durations: possibly-busy stretches up to each synchronization's return (certain idle time)
    Bound,
}

/// Options shared by the commands that need a GPU timeline.
#[derive(Args, Debug, Clone, Default)]
pub struct TimelineOpts {
    /// Kernel duration calibration file (`tracer calibrate`, or replay's
    /// isolated mode) for the inferred GPU timeline. Default for a recording
    /// directory NAME.rec without gpu lines: NAME.rec/kernel-durations.json
    /// when `replay NAME.rec --mode isolated` wrote it.
    #[arg(long, value_name = "FILE")]
    pub durations: Option<PathBuf>,
    /// Which GPU timeline to use.
    #[arg(long, value_enum, default_value_t = TimelineArg::Auto)]
    pub timeline: TimelineArg,
}

/// `--pid`, `--from`, `--to` (analysis::filter), shared by report, gaps and export.
#[derive(Args, Debug, Clone, Default)]
pub struct FilterOpts {
    /// Only these processes (comma-separated pids; NVML samples are kept).
    #[arg(long, value_name = "PID,...", value_delimiter = ',')]
    pub pid: Vec<u32>,
    /// Only events from this many seconds after the trace's first event (the
    /// phase then in effect goes on).
    #[arg(long, value_name = "S")]
    pub from: Option<f64>,
    /// Only events before this many seconds after the trace's first event.
    #[arg(long, value_name = "S")]
    pub to: Option<f64>,
    /// Only events in the span of this phase (of the main process; see `tracer report`).
    #[arg(long, value_name = "NAME", conflicts_with_all = ["from", "to"])]
    pub phase: Option<String>,
}

/// Loads a trace and keeps the part `f` selects (a bad pid or window is a misuse).
fn load_filtered(path: &Path, f: &FilterOpts) -> anyhow::Result<crate::analysis::model::Trace> {
    let mut t = load::load(path)?;
    let filter =
        crate::analysis::filter::Filter { pids: f.pid.clone(), from_s: f.from, to_s: f.to, phase: f.phase.clone() };
    crate::analysis::filter::apply(&mut t, &filter).map_err(crate::error::UsageError)?;
    Ok(t)
}

#[derive(Args, Debug, Clone)]
pub struct GapsArgs {
    /// Trace file (.jsonl, .jsonl.gz, .jsonl.zst, a NAME.rec directory; - for stdin).
    pub trace: PathBuf,
    /// JSON instead of text tables.
    #[arg(long)]
    pub json: bool,
    /// Gaps at least this long are "long": counted, summed and attributed to CPU activity.
    #[arg(long, value_name = "US", default_value_t = 100.0)]
    pub threshold_us: f64,
    /// Context-switch costs for the "time a second tenant could use" table.
    #[arg(long, value_name = "US,US,...", value_delimiter = ',', default_values_t = [5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 1000.0])]
    pub switch_cost_us: Vec<f64>,
    /// Longest gaps listed one by one.
    #[arg(long, default_value_t = 10)]
    pub top: usize,
    /// With --json: also every gap's [start, end] (ns), per scope.
    #[arg(long, requires = "json")]
    pub list: bool,
    #[command(flatten)]
    pub tl: TimelineOpts,
    #[command(flatten)]
    pub filter: FilterOpts,
}

#[derive(Args, Debug, Clone)]
pub struct ReportArgs {
    /// Trace file (.jsonl, .jsonl.gz, .jsonl.zst, a NAME.rec directory; - for stdin).
    pub trace: PathBuf,
    /// JSON instead of text tables.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub names: crate::cli::names::NamesOpt,
    /// Also write the report as one self-contained HTML page (verdict, phases,
    /// top kernels, idle gaps, a zoomable timeline, energy, ioctls); fetches
    /// nothing from the network.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Overwrite the --html file if it exists.
    #[arg(long, requires = "html")]
    pub force: bool,
    #[command(flatten)]
    pub tl: TimelineOpts,
    #[command(flatten)]
    pub filter: FilterOpts,
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    /// Chrome/Perfetto trace-event JSON (ui.perfetto.dev, chrome://tracing)
    Perfetto,
    /// Parquet tables in a directory (DuckDB, Spark; docs/parquet.md)
    Parquet,
    /// A pprof profile of the user stacks (gzip; `go tool pprof`, speedscope; docs/stacks.md)
    Pprof,
}

#[derive(Args, Debug, Clone)]
pub struct ExportArgs {
    /// Trace file (.jsonl, .jsonl.gz, .jsonl.zst, a NAME.rec directory; - for stdin).
    pub trace: PathBuf,
    #[arg(long, value_enum, default_value_t = ExportFormat::Perfetto)]
    pub format: ExportFormat,
    /// Output file (default: TRACE with .perfetto.json instead of .jsonl[.gz]; "-" for stdout);
    /// gzip-compressed when it ends in .gz (ui.perfetto.dev opens both). Parquet: a directory
    /// (default: TRACE with .parquet instead of .jsonl[.gz]). pprof: always gzip (default: TRACE
    /// with .pb.gz).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Overwrite the output file (Parquet: the table files) if it exists.
    #[arg(long)]
    pub force: bool,
    /// Parquet: this `host` column instead of the header's host.
    #[arg(long, value_name = "NAME")]
    pub host: Option<String>,
    /// Perfetto: how GPU slices name their kernels (Parquet has every spelling).
    #[arg(long, value_enum, value_name = "STYLE", default_value_t = crate::cli::names::Names::Short)]
    pub names: crate::cli::names::Names,
    #[command(flatten)]
    pub tl: TimelineOpts,
    #[command(flatten)]
    pub filter: FilterOpts,
}

#[derive(Args, Debug, Clone)]
pub struct CalibrateArgs {
    /// Trace recorded with --gpu-timestamps (has `gpu` lines).
    pub trace: PathBuf,
    /// Where to write the kernel-durations JSON.
    #[arg(short, long, value_name = "FILE")]
    pub output: PathBuf,
    /// Overwrite the output file if it exists.
    #[arg(long)]
    pub force: bool,
}

#[derive(Args, Debug, Clone)]
pub struct CalibrateHostArgs {
    /// Where to write the calibration JSON (default: stdout).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Overwrite the output file if it exists.
    #[arg(long)]
    pub force: bool,
}

#[derive(Args, Debug, Clone)]
pub struct CompareArgs {
    /// Trace recorded with --gpu-timestamps (has `gpu` lines).
    pub trace: PathBuf,
    /// Calibration for the inferred timeline (default: calibrated from this
    /// trace's own gpu lines, which flatters the inference).
    #[arg(long, value_name = "FILE")]
    pub durations: Option<PathBuf>,
    /// Gaps at least this long are matched one by one.
    #[arg(long, value_name = "US", default_value_t = 100.0)]
    pub threshold_us: f64,
    /// JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug, Clone)]
pub struct WhatifArgs {
    /// Trace recorded with --gpu-timestamps on the GPU it ran on (a NAME.rec directory or a trace file).
    pub trace: PathBuf,
    /// The other GPU's kernel durations: replay's NAME.rec/sequence-durations.json or
    /// kernel-durations.json written there, or `tracer calibrate` of a trace made there.
    #[arg(long, value_name = "FILE")]
    pub durations: PathBuf,
    /// A trace of the same workload recorded with --gpu-timestamps on that GPU:
    /// the prediction's error per figure and per kernel family.
    #[arg(long, value_name = "TRACE")]
    pub against: Option<PathBuf>,
    /// Copies and sets timed by the file's copy model (default: as recorded;
    /// their time is mostly the host's and the bus's).
    #[arg(long)]
    pub copy_model: bool,
    /// JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// `compensated`: the host program without what tracing added to its host time (the
    /// probes' traps and eBPF programs, CUPTI's records, the recorder's stops and its hold of
    /// the CPU: the trace's bpf_stats and sched lines); `recorded`: as recorded
    #[arg(long, value_name = "HOW", default_value = "compensated", value_parser = tracer_format::pacing::Pacing::parse)]
    pub pacing: tracer_format::pacing::Pacing,
    /// The target host's speed: F (its CPU runs the host work F times as fast: every host gap /
    /// F), or FILE, the target's `tracer calibrate-host -o FILE`, against the calibration in the
    /// trace's header
    #[arg(long, value_name = "F|FILE", value_parser = host_speed_arg)]
    pub host_speed: Option<String>,
    /// Keep the speed the recorded process ran at. By default compensated pacing also scales
    /// the host gaps to the speed the recording's machine usually runs the command at (the
    /// footer's `host_speed`)
    #[arg(long)]
    pub recorded_speed: bool,
    /// The uprobe trap's cost per probe hit, ns (default: the trace's `probe_trap_ns`, else 700)
    #[arg(long, value_name = "NS", value_parser = ns_arg)]
    pub probe_trap_ns: Option<f64>,
    /// CUPTI's cost per GPU work call, ns (default: the trace's `cupti_ns_per_call`, else 2200)
    #[arg(long, value_name = "NS", value_parser = ns_arg)]
    pub cupti_ns_per_call: Option<f64>,
}

/// `--host-speed`: a factor above 0, or a file that exists (read against the trace's header).
fn host_speed_arg(s: &str) -> Result<String, String> {
    match s.parse::<f64>() {
        Ok(f) if f.is_finite() && f > 0.0 => Ok(s.to_string()),
        Ok(_) => Err(format!("{s}: not a factor above 0 (2: the target host runs the host work twice as fast)")),
        Err(_) if Path::new(s).is_file() => Ok(s.to_string()),
        Err(_) => Err(format!("{s}: neither a factor nor a calibration file (tracer calibrate-host -o FILE)")),
    }
}

/// A cost in ns: finite, 0 or more.
fn ns_arg(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(x) if x.is_finite() && x >= 0.0 => Ok(x),
        _ => Err(format!("{s}: not a time in ns (0 or more)")),
    }
}

/// A kernel-durations file (`tracer calibrate`'s output).
fn load_durations(path: &Path) -> anyhow::Result<Durations> {
    parse_durations(&tracer_format::open::read_to_string(path, tracer_format::open::Kind::Durations)?, path)
}

/// A durations file's `text`, read from `path` (named in errors and as the origin).
fn parse_durations(text: &str, path: &Path) -> anyhow::Result<Durations> {
    Ok(Durations::parse(text).with_context(|| format!("{}", path.display()))?.with_origin(path.display().to_string()))
}

fn us_to_ns(x: f64) -> anyhow::Result<u64> {
    if !(x.is_finite() && x >= 0.0) {
        bail!(crate::error::UsageError(format!("{x} µs is not a non-negative duration")));
    }
    Ok((x * 1000.0).round() as u64)
}

/// The calibration `replay NAME.rec --mode isolated` wrote into a recording
/// directory (docs/replay.md), if `trace` is one and it exists.
pub fn replay_durations(trace: &Path) -> Option<PathBuf> {
    let dir = trace.is_dir().then(|| tracer_format::open::Beneath::new(trace).ok()).flatten()?;
    // Below the recording only: a link there is found here and refused when it is read.
    dir.exists(Path::new(REPLAY_DURATIONS)).then(|| trace.join(REPLAY_DURATIONS))
}

/// [`load_durations`] of the calibration inside a recording `p` names
/// (`NAME.rec/kernel-durations.json`): read below the recording, never through a link.
fn load_recording_durations(p: &Path) -> anyhow::Result<Durations> {
    let (Some(dir), Some(name)) = (p.parent(), p.file_name()) else { return load_durations(p) };
    let text = tracer_format::open::Beneath::new(dir)?
        .read_to_string(Path::new(name), tracer_format::open::Kind::Durations)?;
    parse_durations(&text, p)
}

/// The file replay's isolated mode writes into NAME.rec/.
pub const REPLAY_DURATIONS: &str = "kernel-durations.json";

/// Rejects option combinations before any work is done.
fn check(o: &TimelineOpts, trace: &Path) -> anyhow::Result<()> {
    if o.timeline == TimelineArg::Inferred && o.durations.is_none() && replay_durations(trace).is_none() {
        bail!(crate::error::UsageError("--timeline inferred needs --durations FILE (tracer calibrate)".into()));
    }
    Ok(())
}

/// Builds the timeline the options ask for.
pub fn timeline_for(t: &crate::analysis::model::Trace, o: &TimelineOpts) -> anyhow::Result<Timeline> {
    // a replayed recording calibrates its own timeline (unless measured or told otherwise)
    let from_replay = match (&o.durations, o.timeline) {
        (None, TimelineArg::Inferred) => replay_durations(Path::new(&t.path)),
        (None, TimelineArg::Auto) if t.gpu.is_empty() => replay_durations(Path::new(&t.path)),
        _ => None,
    };
    if let Some(p) = &from_replay {
        eprintln!(
            "tracer: GPU timeline inferred with {} (replay --mode isolated); --timeline bound to ignore it",
            p.display()
        );
    }
    if let Some(p) = &o.durations
        && o.timeline == TimelineArg::Auto
        && !t.gpu.is_empty()
        && t.gpu_windows.is_empty()
    {
        eprintln!(
            "tracer: {} has a measured GPU timeline, which is used: --durations {} applies with --timeline inferred; \
             `tracer whatif` re-times the run with another GPU's durations",
            t.path,
            p.display()
        );
    }
    if let (None, None, TimelineArg::Auto, Some((origin, _))) =
        (&o.durations, &from_replay, o.timeline, &t.library_durations)
        && t.gpu.is_empty()
        && t.gpu_windows.is_empty()
    {
        eprintln!(
            "tracer: GPU timeline inferred with the trace's {origin} (docs/durations-library.md); --timeline bound to \
             ignore it, --durations FILE to use another"
        );
    }
    let d = match (&o.durations, &from_replay) {
        (Some(p), _) => Some(load_durations(p)?),
        (None, Some(p)) => Some(load_recording_durations(p)?),
        (None, None) => None,
    };
    Ok(match o.timeline {
        TimelineArg::Auto => crate::analysis::sampled::gpu_intervals(t, d.as_ref()),
        TimelineArg::Measured => {
            if t.gpu.is_empty() {
                bail!(crate::error::UsageError(format!(
                    "{}: no measured GPU activity in this trace (record with --gpu-timestamps)",
                    t.path
                )));
            }
            timeline::measured(t)
        }
        TimelineArg::Inferred => match &d {
            Some(d) => timeline::inferred(t, d),
            None => {
                bail!(crate::error::UsageError("--timeline inferred needs --durations FILE (tracer calibrate)".into()))
            }
        },
        TimelineArg::Bound => timeline::bound(t),
    })
}

pub fn gaps_cmd(a: &GapsArgs) -> anyhow::Result<()> {
    check(&a.tl, &a.trace)?;
    let opts = gaps::GapOptions {
        threshold_ns: us_to_ns(a.threshold_us)?,
        switch_costs_ns: a.switch_cost_us.iter().map(|&x| us_to_ns(x)).collect::<anyhow::Result<_>>()?,
        top: a.top,
    };
    let t = load_filtered(&a.trace, &a.filter)?;
    let tl = timeline_for(&t, &a.tl)?;
    if tl.interval_count() == 0 {
        bail!("{}: no GPU work (launches, copies, sets) in this trace", a.trace.display());
    }
    let ph = phases::phases(&t);
    let mut r = gaps::analyze(&t, &tl, &ph, &opts);
    if a.json {
        if !a.list {
            r.scopes.iter_mut().for_each(|s| s.gaps.clear());
        }
        println!("{}", serde_json::to_string_pretty(&r)?);
    } else {
        // prose at most 160 columns, as report and summary
        let text = gaps::render(&r);
        let max = crate::analysis::text_table::MAX_COLUMNS;
        print!("{}", crate::analysis::text_table::wrap(&text, max, 2));
    }
    Ok(())
}

pub fn report_cmd(a: &ReportArgs) -> anyhow::Result<()> {
    check(&a.tl, &a.trace)?;
    if let Some(p) = &a.html
        && p.exists()
        && !a.force
    {
        bail!("output file {} exists (use --force to overwrite)", p.display());
    }
    let t = load_filtered(&a.trace, &a.filter)?;
    let tl = timeline_for(&t, &a.tl)?;
    let ph = phases::phases(&t);
    let mut r = report::build(&t, &ph, &tl);
    r.names = a.names.style();
    let verdict = crate::analysis::verdict::judge(&t, &tl, &r);
    if let Some(v) = &verdict {
        crate::analysis::verdict::render(v, &mut r.lead);
    }
    if a.json {
        /// The report with its verdict first.
        #[derive(serde::Serialize)]
        struct WithVerdict<'a> {
            #[serde(skip_serializing_if = "Option::is_none")]
            verdict: Option<&'a crate::analysis::verdict::Verdict>,
            #[serde(flatten)]
            report: &'a report::Report,
        }
        println!("{}", serde_json::to_string_pretty(&WithVerdict { verdict: verdict.as_ref(), report: &r })?);
    } else {
        print!("{}", report::render(&r));
    }
    if let Some(path) = &a.html {
        let started = std::time::Instant::now();
        let g = (tl.interval_count() > 0).then(|| gaps::analyze(&t, &tl, &ph, &gaps::GapOptions::default()));
        let page = crate::export::html::render(&t, &r, &tl, verdict.as_ref(), g.as_ref());
        let mut f = OutFile::create(path, a.force)?;
        f.write_all(page.as_bytes()).with_context(|| format!("writing {}", path.display()))?;
        f.finish(path)?;
        eprintln!(
            "wrote {} ({:.1} MB in {:.2} s); open it in a browser",
            path.display(),
            page.len() as f64 / 1e6,
            started.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

/// run.jsonl.gz -> run.perfetto.json
pub fn default_export_path(trace: &Path) -> PathBuf {
    export_path_with(trace, "perfetto.json")
}

/// run.jsonl.gz -> run.EXT
pub fn export_path_with(trace: &Path, ext: &str) -> PathBuf {
    if trace.as_os_str() == "-" {
        return PathBuf::from(format!("stdin.{ext}"));
    }
    let name = trace.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default();
    let stem = name.strip_suffix(".gz").or_else(|| name.strip_suffix(".zst")).unwrap_or(&name);
    let stem = stem.strip_suffix(".jsonl").unwrap_or(stem);
    trace.with_file_name(format!("{stem}.{ext}"))
}

pub fn export_cmd(a: &ExportArgs) -> anyhow::Result<()> {
    check(&a.tl, &a.trace)?;
    if a.format == ExportFormat::Parquet {
        let dir = a.output.clone().unwrap_or_else(|| export_path_with(&a.trace, "parquet"));
        let o = crate::export::parquet::Options { host: a.host.clone(), force: a.force };
        crate::cli::export_parquet::check(&dir, &o)?;
        let t = load_filtered(&a.trace, &a.filter)?;
        let tl = timeline_for(&t, &a.tl)?;
        return crate::cli::export_parquet::run(&t, &tl, &dir, &o);
    }
    if a.host.is_some() {
        bail!(crate::error::UsageError("--host applies to --format parquet only".into()));
    }
    if a.format == ExportFormat::Pprof {
        let out = a.output.clone().unwrap_or_else(|| export_path_with(&a.trace, "pb.gz"));
        let t = load_filtered(&a.trace, &a.filter)?;
        let tl = timeline_for(&t, &a.tl)?;
        return crate::cli::export_pprof::run(&t, &tl, &out, a.force);
    }
    let t = load_filtered(&a.trace, &a.filter)?;
    let tl = timeline_for(&t, &a.tl)?;
    let ph = phases::phases(&t);
    let out = a.output.clone().unwrap_or_else(|| default_export_path(&a.trace));
    let names = crate::cli::names::NamesOpt { names: a.names, mangled: false }.style();
    let mut progress = Progress::new(perfetto::estimated_events(&t, &tl), "writing");
    let mut tick = |n: u64| progress.set(n);
    let n = if out.as_os_str() == "-" {
        let stdout = std::io::stdout().lock();
        perfetto::export_with_progress(
            &t,
            &ph,
            &tl,
            std::io::BufWriter::with_capacity(1 << 20, stdout),
            names,
            &mut tick,
        )?
    } else {
        let mut f = OutFile::create(&out, a.force)?;
        let n = perfetto::export_with_progress(&t, &ph, &tl, &mut f, names, &mut tick)
            .with_context(|| format!("writing {}", out.display()))?;
        f.finish(&out)?;
        eprintln!(
            "wrote {} ({n} events, GPU timeline: {}); open it in ui.perfetto.dev",
            out.display(),
            tl.source.as_str()
        );
        n
    };
    let _ = n;
    progress.finish();
    Ok(())
}

pub fn calibrate_cmd(a: &CalibrateArgs) -> anyhow::Result<()> {
    let t = load::load(&a.trace)?;
    let f = crate::analysis::durations::calibrate(&t)?;
    let mut w = OutFile::create(&a.output, a.force)?;
    serde_json::to_writer_pretty(&mut w, &f)?;
    writeln!(w)?;
    w.finish(&a.output)?;
    eprintln!(
        "wrote {}: {} kernel configurations ({} measured kernels), {} copy kinds",
        a.output.display(),
        f.kernels.len(),
        f.kernels.iter().map(|k| k.count).sum::<u64>(),
        f.copies.len()
    );
    Ok(())
}

pub fn calibrate_host_cmd(a: &CalibrateHostArgs) -> anyhow::Result<()> {
    let c = tracer_format::pacing::HostCalibration::measure(Some(crate::collect::sysinfo::hostname()));
    match &a.output {
        Some(out) => {
            let mut w = OutFile::create(out, a.force)?;
            serde_json::to_writer_pretty(&mut w, &c)?;
            writeln!(w)?;
            w.finish(out)?;
            eprintln!("wrote {}: {} ns ({}, median of {} runs)", out.display(), c.ns, c.workload, c.runs_ns.len());
        }
        None => println!("{}", serde_json::to_string_pretty(&c)?),
    }
    Ok(())
}

pub fn compare_cmd(a: &CompareArgs) -> anyhow::Result<()> {
    let t = load::load(&a.trace)?;
    if t.gpu.is_empty() {
        bail!("{}: no measured GPU activity (record with --gpu-timestamps)", a.trace.display());
    }
    if !t.gpu_windows.is_empty() {
        // Its gpu lines cover the windows only: every gap between two windows
        // would read as measured idle time.
        bail!(
            "{}: recorded with --gpu-sample, so GPU activity was measured in {} window(s) only; compare needs a \
             fully measured trace (--gpu-timestamps without --gpu-sample); `tracer gaps` shows this one's sampled \
             timeline",
            a.trace.display(),
            t.gpu_windows.len()
        );
    }
    let (d, label) = match &a.durations {
        Some(p) => (load_durations(p)?, "inferred"),
        None => (
            Durations::new(crate::analysis::durations::calibrate(&t)?).with_origin("this trace's own gpu lines"),
            "inferred (self-calibrated)",
        ),
    };
    let th = us_to_ns(a.threshold_us)?;
    let measured = timeline::measured(&t);
    let inferred = timeline::inferred(&t, &d);
    let inferred_entry = timeline::inferred_with(&t, &d, timeline::SubmitAt::Entry);
    let bound = timeline::bound(&t);
    let ci = compare::compare(&t, &inferred, &measured, th);
    let ce = compare::compare(&t, &inferred_entry, &measured, th);
    let cb = compare::compare(&t, &bound, &measured, th);
    if a.json {
        let v = serde_json::json!({"inferred": ci, "inferred_diagnostics": inferred.diag,
            "inferred_submit_at_entry": ce, "bound": cb, "self_calibrated": a.durations.is_none()});
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        print!("{}", compare::render(&ci, label));
        print!("{}", compare::render(&ce, &format!("{label}, work may start at the launch call's entry")));
        print!("{}", compare::render(&cb, "bound"));
    }
    Ok(())
}

/// A trace with its whole GPU timeline measured (gpu lines, not sampled), for `whatif`.
fn load_measured(path: &Path, role: &str) -> anyhow::Result<crate::analysis::model::Trace> {
    let t = load::load(path)?;
    if t.gpu.is_empty() {
        bail!(crate::error::UsageError(format!(
            "{}: no measured GPU activity; {role} must be recorded with --gpu-timestamps",
            path.display()
        )));
    }
    if !t.gpu_windows.is_empty() {
        bail!(crate::error::UsageError(format!(
            "{}: recorded with --gpu-sample (GPU activity measured in {} window(s) only); {role} must be recorded \
             with --gpu-timestamps without --gpu-sample",
            path.display(),
            t.gpu_windows.len()
        )));
    }
    Ok(t)
}

pub fn whatif_cmd(a: &WhatifArgs) -> anyhow::Result<()> {
    use crate::analysis::whatif;
    let d = load_durations(&a.durations)?;
    let t = load_measured(&a.trace, "the trace to predict from")?;
    let recorded_cal = t
        .header
        .as_ref()
        .and_then(|h| h.get("host_calibration"))
        .and_then(|v| tracer_format::pacing::HostCalibration::of_value(v).ok());
    let given = match &a.host_speed {
        None => tracer_format::pacing::HostSpeed::default(),
        Some(s) => tracer_format::pacing::HostSpeed::parse(s, recorded_cal.as_ref())
            .map_err(|e| crate::error::UsageError(format!("{}: {e}", a.trace.display())))?,
    };
    // the recording's machine's usual speed for the command (footer host_speed), unless kept;
    // why it could not be applied is said as replay says it
    let (speed, usual_missing) = given.for_recording(a.pacing, a.recorded_speed, t.footer.as_ref());
    let host = crate::analysis::host_clock::Host {
        pacing: a.pacing,
        speed,
        overrides: tracer_format::pacing::Overrides { trap_ns: a.probe_trap_ns, cupti_ns: a.cupti_ns_per_call },
    };
    let mut p = whatif::predict(&t, &d, whatif::Options { copy_model: a.copy_model, host });
    p.pacing.missing.extend(usual_missing);
    let against = a.against.as_deref().map(|p| load_measured(p, "the --against trace")).transpose()?;
    let actual = against.as_ref().map(whatif::measured_figures);
    let c = actual.as_ref().map(|f| whatif::compare(&p, f));
    if a.json {
        let v = serde_json::json!({"prediction": p, "measured": actual, "comparison": c});
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        let gpu = actual.as_ref().and_then(|f| f.gpu.clone());
        let text = whatif::render(&p, c.as_ref(), gpu.as_deref());
        let max = crate::analysis::text_table::MAX_COLUMNS;
        print!("{}", crate::analysis::text_table::wrap(&text, max, 2));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn export_path() {
        assert_eq!(default_export_path(Path::new("a/run.jsonl.gz")), PathBuf::from("a/run.perfetto.json"));
        assert_eq!(default_export_path(Path::new("run.jsonl")), PathBuf::from("run.perfetto.json"));
        assert_eq!(default_export_path(Path::new("run.jsonl.zst")), PathBuf::from("run.perfetto.json"));
        assert_eq!(default_export_path(Path::new("-")), PathBuf::from("stdin.perfetto.json"));
    }
}
