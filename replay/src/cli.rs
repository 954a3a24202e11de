//! Command line: `replay plan RECORDING` (CPU only) and `replay [run] RECORDING --mode …`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Parser, Subcommand};

use crate::options::RunArgs;
use replay::plan;
use replay::recording::Recording;

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
        Cmd::Plan { recording, json } => {
            let rec = Recording::open(&recording)?;
            let p = plan::build(&rec.manifest, &rec.trace, rec.trace_name())?;
            replay::data_check::check(&rec, &p)?;
            for w in &rec.trace.warnings {
                eprintln!("warning: {w}");
            }
            if json {
                println!("{}", serde_json::to_string_pretty(&p)?);
            } else {
                print!("{}", p.summary());
            }
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Run(a) => crate::run::run(&a),
    }
}
