//! tracer: records every CUDA driver call of a process tree with eBPF uprobes
//! on libcuda, to JSONL. See docs/trace-format.md.

mod analysis;
mod args;
mod calls;
mod cli;
mod collector;
mod cuda_names;
mod cudaimage;
mod fastcall;
#[cfg(test)]
mod fastcall_tests;
mod fastline;
#[cfg(test)]
mod fuzz;
mod gpu_lines;
mod gpu_timestamps;
mod image_cmd;
mod ioctl_report;
mod ioctls;
mod libcuda;
mod loader;
mod markers;
mod nvioctl;
mod plot;
mod power;
mod procmem;
mod reader;
mod record;
mod replayable;
mod side;
mod side_summary;
mod spawn;
mod summary;
mod sysinfo;
mod uprobe_multi;
mod usage;
mod writer;
mod zstd_out;

use clap::Parser as _;

/// Errors the user can fix by changing the command line: exit code 2.
#[derive(Debug)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for UsageError {}

/// The command to trace could not be started: exit code 127, as in shells.
#[derive(Debug)]
pub struct CommandNotFound(pub String);

impl std::fmt::Display for CommandNotFound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for CommandNotFound {}

fn main() {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let cli = cli::Cli::try_parse().unwrap_or_else(|e| usage::exit_on_clap_error(e));
    let result = match cli.command {
        Some(cli::Command::Summary { trace }) => summary_cmd(&trace).map(|_| 0),
        Some(cli::Command::Ioctls { trace, json }) => ioctls_cmd(&trace, json).map(|_| 0),
        Some(cli::Command::Image(a)) => image_cmd::run(&a).map(|_| 0),
        Some(cli::Command::Plot { trace, output, format, width, threads, from, to, compare }) => {
            let o = plot::Opts { format, width, max_threads: threads, from_s: from, to_s: to };
            match compare {
                Some(other) => plot::compare::run(&trace, &other, &output, &o).map(|_| 0),
                None => plot::run(&trace, &output, &o).map(|_| 0),
            }
        }
        Some(cli::Command::Gaps(a)) => analysis::commands::gaps_cmd(&a).map(|_| 0),
        Some(cli::Command::Report(a)) => analysis::commands::report_cmd(&a).map(|_| 0),
        Some(cli::Command::Export(a)) => analysis::commands::export_cmd(&a).map(|_| 0),
        Some(cli::Command::Calibrate(a)) => analysis::commands::calibrate_cmd(&a).map(|_| 0),
        Some(cli::Command::Compare(a)) => analysis::commands::compare_cmd(&a).map(|_| 0),
        Some(cli::Command::Record(r)) => record::run(r),
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
            eprintln!("tracer: {}", one_line(&e));
            std::process::exit(code);
        }
    }
}

/// "context: cause: cause" on one line.
fn one_line(e: &anyhow::Error) -> String {
    e.chain().map(|c| c.to_string()).collect::<Vec<_>>().join(": ")
}

fn summary_cmd(path: &std::path::Path) -> anyhow::Result<()> {
    let mut s = summary::Summary::default();
    let name = path.display().to_string();
    reader::for_each_line(path, |n, bytes| s.add_json(&name, n, bytes))?;
    print!("{}", s.render());
    Ok(())
}

fn ioctls_cmd(path: &std::path::Path, json: bool) -> anyhow::Result<()> {
    let mut lines = Vec::new();
    reader::for_each(path, |v| lines.push(v.clone()))?;
    let r = ioctl_report::IoctlReport::build(&lines);
    if r.total == 0 && r.ioctl_path.is_none() {
        anyhow::bail!("{}: no ioctls recorded (record with `tracer --ioctls -- CMD`)", path.display());
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&r.to_json())?);
    } else {
        print!("{}", r.render());
    }
    Ok(())
}
