//! Project tasks: `cargo xtask <command>` (alias in .cargo/config.toml).

mod build;
mod demo;
mod fuzz;
mod setup;
mod soak;
mod test;
mod util;
mod vm;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(about = "Project tasks for the CUDA eBPF tracer (cargo xtask <command>)")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Install what is missing: apt packages, nightly + rust-src, bpf-linker, tracefs/bpffs mounts
    Setup,
    /// Setup, then build the tracer (its build.rs builds the eBPF crate)
    Build {
        /// Build with the release profile
        #[arg(long)]
        release: bool,
    },
    /// Setup, then run every test, the root-only integration tests included
    Test {
        /// Extra arguments for the test binaries (after `--`)
        #[arg(last = true)]
        args: Vec<String>,
    },
    /// Setup, build release, then trace the example on a GPU or summarise the committed recording
    Demo,
    /// Run every fuzz target of tracer for a fixed time (tracer/src/fuzz/)
    Fuzz {
        /// Seconds per target
        #[arg(long, default_value_t = 60.0)]
        seconds: f64,
        /// Only these targets (default: all)
        targets: Vec<String>,
    },
    /// Benchmarks: `soak` (minutes of steady tracing, memory and loss checked)
    Bench {
        #[command(subcommand)]
        what: soak::Bench,
    },
    /// Boot a stock Debian kernel under qemu (TCG) and run the kprobe tests in it (docs/kprobe-vm.md)
    KprobeVm {
        /// Use this tracer binary instead of building the release one
        #[arg(long, value_name = "PATH")]
        tracer: Option<std::path::PathBuf>,
        /// Only the tests whose name contains one of these (after `--`)
        #[arg(last = true)]
        filters: Vec<String>,
    },
}

fn main() -> ExitCode {
    let result = match Cli::parse().command {
        Command::Setup => setup::run(),
        Command::Build { release } => build::run(release),
        Command::Test { args } => test::run(&args),
        Command::Demo => demo::run(),
        Command::Fuzz { seconds, targets } => fuzz::run(seconds, &targets),
        Command::Bench { what } => soak::run(&what),
        Command::KprobeVm { tracer, filters } => vm::run(tracer.as_deref(), &filters),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
