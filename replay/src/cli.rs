//! Command line: `replay plan RECORDING` (CPU only) and `replay [run] RECORDING --mode …`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Parser, Subcommand};

use crate::options::{ModelArgs, PacingArgs, RunArgs, SelectArgs, TenantArgs, TogetherArgs};

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
    /// Print the coverage and plan summary (no GPU needed); with several recordings and
    /// --together, the plan of their together run
    Plan {
        #[arg(required = true, num_args = 1..)]
        recordings: Vec<PathBuf>,
        /// Print the plan as JSON (ops without parameter bytes)
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        select: SelectArgs,
        /// Plan the recordings' together run (co-location: docs/colocation.md)
        #[arg(long)]
        together: bool,
        /// --together: rounds of alone and together runs
        #[arg(long, default_value_t = 6)]
        rounds: usize,
        /// --together: the GPU's memory in GB (default: from the recordings' GPU model name)
        #[arg(long, value_name = "GB")]
        gpu_memory: Option<f64>,
        /// --together: the phase measured (as `replay --together --phase`)
        #[arg(long, default_value = "generate")]
        phase: String,
        #[command(flatten)]
        model: ModelArgs,
        #[command(flatten)]
        pacing: PacingArgs,
    },
    /// Replay on a GPU and write NAME.rec/replay-report.json (the default command)
    Run(RunArgs),
    /// Replay recordings together as tenants of one GPU (`replay A.rec B.rec --together`)
    Together(TogetherArgs),
    /// One tenant of a together run (run by `replay --together`)
    #[command(hide = true)]
    Tenant(TenantArgs),
}

pub fn main() -> Result<ExitCode> {
    let mut args: Vec<String> = std::env::args().collect();
    // `replay RECORDING …` means `replay run RECORDING …`.
    // `replay A.rec B.rec … --together` means `replay together A.rec B.rec …`.
    let subs = ["plan", "run", "together", "tenant", "help", "-h", "--help", "-V", "--version"];
    if args.len() > 1 && !subs.contains(&args[1].as_str()) {
        let together = args.iter().any(|a| a == "--together");
        args.insert(1, if together { "together" } else { "run" }.into());
    }
    let cli = Cli::parse_from(args);
    match cli.cmd {
        Cmd::Plan { recordings, together: true, json, select, rounds, gpu_memory, phase, model, pacing } => {
            let capacity = gpu_memory.map(|gb| replay::together::Capacity {
                bytes: (gb * 1e9) as u64,
                source: format!("--gpu-memory {gb}"),
            });
            if select.selection().is_some() {
                return Err(replay::Misuse(
                    "--pid/--rank select a process of one recording: not with --together".into(),
                )
                .into());
            }
            let tenants = crate::together_run::tenants(&recordings, &phase, &pacing, &model.model())?;
            let capacity = capacity.or_else(|| replay::together::recorded_capacity(&tenants));
            let tp = replay::together::plan(tenants, capacity, rounds, model.model())?;
            if json {
                println!("{}", serde_json::to_string_pretty(&tp)?);
            } else {
                print!("{}", tracer_format::inert::text(&tp.text()));
            }
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Plan { recordings, .. } if recordings.len() > 1 => Err(replay::Misuse(format!(
            "{} recordings given: plan one at a time, or add --together for their together run",
            recordings.len()
        ))
        .into()),
        Cmd::Plan { recordings, json, select, .. } => {
            let recording = &recordings[0];
            let opened = replay::selection::open(recording, select.selection())?;
            for w in &opened.rec.trace.warnings {
                eprintln!("warning: {}", tracer_format::inert::text(w));
            }
            let planned = opened.plan()?;
            for n in &planned.notes {
                eprintln!("{}", tracer_format::inert::text(n));
            }
            let p = &planned.plan;
            if json {
                println!("{}", serde_json::to_string_pretty(p)?);
            } else {
                print!("{}", tracer_format::inert::text(&p.summary()));
            }
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Run(a) => crate::run::run(&a),
        Cmd::Together(a) => crate::together_run::together(&a),
        Cmd::Tenant(a) => crate::together_run::tenant(&a),
    }
}
