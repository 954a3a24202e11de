//! The cli layer: `tracer`'s command line ([`args`]) and its commands. Each
//! command checks its arguments, turns them into the plain options of the
//! layers below (`crate::collect` to record, `crate::analysis` and
//! `crate::export` to read) and prints what they return; progress bars,
//! the analysis commands' output files ([`output`]) and clap live here and
//! nowhere below. A recording's trace file or directory is created by
//! `crate::collect::record`.
//!
//! - [`record`]: `tracer record` / `tracer -- CMD` (the recording itself:
//!   `crate::collect::record`);
//! - [`agent`]: `tracer agent` (its run: `crate::collect::agent::run`);
//! - [`analysis`]: `gaps`, `report`, `export`, `calibrate`, `compare`, with
//!   [`load`] (file → trace model, with [`progress`]) and [`output`] (the
//!   files they write: `--force`, gzip); [`export_parquet`]: `export --format parquet`; [`export_pprof`]: `export --format pprof`;
//! - [`image`]: `tracer image`; `summary` and `ioctls` below;
//! - [`shell`]: `completions` and `man`, generated from [`args`];
//! - [`usage`]: command-line errors as one line, exit code 2.
pub mod agent;
pub mod analysis;
pub mod arg_checks;
pub mod args;
pub mod export_parquet;
pub mod export_pprof;
pub mod image;
pub mod load;
pub mod names;
pub mod output;
pub mod progress;
pub mod record;
pub mod shell;
pub mod usage;

use clap::Parser as _;

use crate::error::{CommandNotFound, UsageError, one_line};

/// `tracer`'s entry point: parses the command line, runs the command, exits
/// with its code (2 for misuse, 127 when the command is not found).
pub fn main() {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let cli = args::Cli::try_parse().unwrap_or_else(|e| usage::exit_on_clap_error(e));
    let result = match cli.command {
        Some(args::Command::Summary { trace, json, names }) => summary_cmd(&trace, json, names.style()).map(|_| 0),
        Some(args::Command::Ioctls { trace, json }) => ioctls_cmd(&trace, json).map(|_| 0),
        Some(args::Command::Image(a)) => image::run(&a).map(|_| 0),
        Some(args::Command::Plot { trace, output, format, width, threads, from, to, compare, json }) => {
            let o = crate::export::plot::Opts { format, width, max_threads: threads, from_s: from, to_s: to, json };
            match compare {
                Some(other) => crate::export::plot::compare::run(&trace, &other, &output, &o).map(|_| 0),
                None => crate::export::plot::run(&trace, &output, &o, load::load).map(|_| 0),
            }
        }
        Some(args::Command::Gaps(a)) => analysis::gaps_cmd(&a).map(|_| 0),
        Some(args::Command::Report(a)) => analysis::report_cmd(&a).map(|_| 0),
        Some(args::Command::Export(a)) => analysis::export_cmd(&a).map(|_| 0),
        Some(args::Command::Calibrate(a)) => analysis::calibrate_cmd(&a).map(|_| 0),
        Some(args::Command::Compare(a)) => analysis::compare_cmd(&a).map(|_| 0),
        Some(args::Command::CalibrateHost(a)) => analysis::calibrate_host_cmd(&a).map(|_| 0),
        Some(args::Command::Whatif(a)) => analysis::whatif_cmd(&a).map(|_| 0),
        Some(args::Command::Completions { shell }) => {
            print!("{}", shell::completions(shell));
            Ok(0)
        }
        Some(args::Command::Man) => {
            print!("{}", shell::man());
            Ok(0)
        }
        Some(args::Command::Record(r)) => record::run(r),
        Some(args::Command::Agent(a)) => agent::run(a),
        None => record::run(cli.record),
    };
    match result {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            let code = if e.downcast_ref::<UsageError>().is_some() {
                2
            } else if e.downcast_ref::<CommandNotFound>().is_some() {
                127
            } else {
                1
            };
            eprintln!("tracer: {}", crate::analysis::inert::text(&one_line(&e)));
            std::process::exit(code);
        }
    }
}

/// Reads the trace `path` (`-`: stdin) under tracer-format's rule, `f`
/// for each non-blank line, and prints the rule's warnings.
pub(crate) fn read_lines(
    path: &std::path::Path,
    mut f: impl FnMut(&str, u64, &[u8], &tracer_format::line::RawLine) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let input = tracer_format::read::Input::resolve(path)?;
    let o =
        tracer_format::read::read_checked(&input, Default::default(), |n, bytes, raw| f(&input.name, n, bytes, raw))?;
    tracer_format::read::print_warnings(&o);
    Ok(())
}

fn summary_cmd(
    path: &std::path::Path,
    json: bool,
    names: crate::analysis::kernel_names::NameStyle,
) -> anyhow::Result<()> {
    let mut s = crate::analysis::summary::Summary::default();
    read_lines(path, |name, n, bytes, raw| s.add_checked(name, n, bytes, raw))?;
    if json {
        println!("{}", serde_json::to_string_pretty(&s.to_json())?);
        return Ok(());
    }
    print!("{}", s.render_with(names));
    Ok(())
}

/// Two passes over the file (the phases first), one line in memory at a
/// time: memory does not grow with the trace.
fn ioctls_cmd(path: &std::path::Path, json: bool) -> anyhow::Result<()> {
    use crate::analysis::ioctl_report::{IoctlReport, PhaseScan};
    let value = |name: &str, n: u64, bytes: &[u8]| -> anyhow::Result<serde_json::Value> {
        serde_json::from_slice(bytes).map_err(|e| anyhow::anyhow!("{name}: line {n}: not valid JSON ({e})"))
    };
    let mut scan = PhaseScan::default();
    read_lines(path, |name, n, bytes, raw| {
        match (raw.ty.as_deref(), raw.pid, raw.ts) {
            (Some("header"), _, _) => scan.add(&value(name, n, bytes)?),
            (Some(ty), Some(pid), Some(ts)) => scan.add_record(u64::from(pid), ts, ty, raw.op.as_deref().unwrap_or("")),
            _ => {}
        }
        Ok(())
    })?;
    let mut r = IoctlReport::start(&scan);
    // The warnings were printed by the first pass.
    let input = tracer_format::read::Input::resolve(path)?;
    tracer_format::read::read_checked(&input, Default::default(), |n, bytes, raw| {
        if matches!(raw.ty.as_deref(), Some("ioctl" | "nvidia_fd" | "kernel")) {
            r.add(&value(&input.name, n, bytes)?, &scan);
        }
        Ok(())
    })?;
    if r.total == 0 && r.ioctl_path.is_none() {
        anyhow::bail!("{}: no ioctls recorded (record with `tracer --ioctls -- CMD`)", input.name);
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&r.to_json())?);
    } else {
        print!("{}", r.render());
    }
    Ok(())
}
