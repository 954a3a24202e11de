//! Command line: `replay plan RECORDING` (CPU only) and `replay [run] RECORDING --mode …`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Parser, Subcommand};

use crate::options::{RunArgs, SelectArgs};

#[derive(Parser)]
#[command(
    name = "replay",
    version,
    about = "Re-execute the kernels and memory operations of a replayable tracer recording (NAME.rec/)"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Print the coverage and plan summary (no GPU needed)
    Plan {
        recording: PathBuf,
        /// Print the plan as JSON (ops without parameter bytes)
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        select: SelectArgs,
    },
    /// Replay on a GPU and write NAME.rec/replay-report.json (the default command)
    Run(RunArgs),
}

pub fn main() -> Result<ExitCode> {
    let mut args: Vec<String> = std::env::args().collect();
    // `replay RECORDING …` means `replay run RECORDING …`.
    if args.len() > 1 && !["plan", "run", "help", "-h", "--help", "-V", "--version"].contains(&args[1].as_str()) {
        args.insert(1, "run".into());
    }
    let cli = Cli::parse_from(args);
    match cli.cmd {
        Cmd::Plan { recording, json, select } => {
            let opened = replay::selection::open(&recording, select.selection())?;
            for w in &opened.rec.trace.warnings {
                eprintln!("warning: {w}");
            }
            let planned = opened.plan()?;
            for n in &planned.notes {
                eprintln!("{n}");
            }
            let p = &planned.plan;
            if json {
                println!("{}", serde_json::to_string_pretty(p)?);
            } else {
                print!("{}", p.summary());
            }
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Run(a) => crate::run::run(&a),
    }
}
