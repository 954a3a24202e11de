//! Project tasks: `cargo xtask <command>` (alias in .cargo/config.toml).

mod bench;
mod build;
mod demo;
mod fuzz;
mod install;
mod lints;
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
    /// Setup, then only the lints of `test`: cargo fmt --check, clippy -D warnings (also the eBPF crate)
    Lints,
    /// Setup, then build the tracer (its build.rs builds the eBPF crate), the injection library and replay
    Build {
        /// Build with the release profile
        #[arg(long)]
        release: bool,
    },
    /// Build release, then install tracer, replay and the CUPTI library where sudo finds them
    /// (PREFIX/bin/{tracer,replay}; tracer's real file beside libtracer_cupti.so in PREFIX/lib/tracer/)
    Install {
        /// Installation root
        #[arg(long, value_name = "DIR", default_value = install::DEFAULT_PREFIX)]
        prefix: std::path::PathBuf,
    },
    /// Setup, then the lints (fmt, clippy -D warnings) and every test, the root-only integration tests and the kprobe VM tests included
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
    /// Benchmarks (measurements printed and written as JSON/Markdown, not tests)
    Bench {
        #[command(subcommand)]
        which: BenchCommand,
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

#[derive(Subcommand)]
enum BenchCommand {
    /// Per-call cost next to the bare uprobe floor, the collector's ceiling and
    /// memory, readers' throughput (root, no GPU; docs/overhead.md)
    Collector {
        /// Calls per thread in each loop
        #[arg(long, default_value_t = 200_000)]
        calls: u64,
        /// Thread counts
        #[arg(long, value_delimiter = ',', default_value = "1,2")]
        threads: Vec<u32>,
        /// Functions of the fake libcuda to call (launch, memcpy, sync, ctx)
        #[arg(long, value_delimiter = ',', default_value = "launch,memcpy")]
        funcs: Vec<String>,
        /// Repetitions (modes interleaved in each)
        #[arg(long, default_value_t = 5)]
        reps: u32,
        /// Producer rates (records/s) for the collector ceiling
        #[arg(long, value_delimiter = ',', default_value = "250000,500000,1000000,1500000")]
        rates: Vec<u64>,
        /// Seconds per producer rate
        #[arg(long, default_value_t = 10.0)]
        seconds: f64,
        /// Also write docs/bench/collector_<date>.{json,md}
        #[arg(long)]
        save: bool,
    },
    /// How long tracer takes to end after its command exits, against the
    /// command alone (root, no GPU; medians of N runs)
    Exit {
        /// Runs of each
        #[arg(long, default_value_t = 9)]
        reps: u32,
    },
    /// Minutes of steady tracing: memory sampled, every call checked on disk (docs/reliability.md)
    Soak {
        /// How long the traced program runs
        #[arg(long, default_value_t = 10.0)]
        minutes: f64,
        /// Driver calls per second the program makes
        #[arg(long, default_value_t = 5000)]
        rate: u64,
        /// Use the release build of tracer (default: the debug build the tests use)
        #[arg(long)]
        release: bool,
    },
    /// Trace readers (summary, report, gaps, Perfetto export) of the working
    /// tree against a baseline revision's, on one large trace (no root, no GPU)
    Readers {
        /// Revision to compare with, built in a worktree under target/bench-readers
        /// (default: the merge-base with main)
        #[arg(long, value_name = "REV", conflicts_with = "baseline_bin")]
        baseline: Option<String>,
        /// A tracer binary to compare with, used as is
        #[arg(long, value_name = "PATH")]
        baseline_bin: Option<std::path::PathBuf>,
        /// Body lines of the trace (made once from the committed recording, reused)
        #[arg(long, default_value_t = 3_000_000)]
        lines: u64,
        /// Repetitions (baseline and current interleaved in each)
        #[arg(long, default_value_t = 3)]
        reps: u32,
        /// Also write docs/bench/NAME.{md,json}
        #[arg(long, value_name = "NAME")]
        save: Option<String>,
    },
    /// Overhead on the GPU examples, untraced vs tracer modes vs torch.profiler
    /// (builds here; runs where a GPU is, else prints the command to run there)
    Overhead {
        /// Arguments for bench/overhead.py (after `--`), e.g. -- --reps 5
        #[arg(last = true)]
        args: Vec<String>,
    },
}

fn main() -> ExitCode {
    let result = match Cli::parse().command {
        Command::Setup => setup::run(),
        Command::Lints => setup::run().and_then(|()| lints::run()),
        Command::Build { release } => build::run_all(release),
        Command::Install { prefix } => install::run(&prefix),
        Command::Test { args } => test::run(&args),
        Command::Demo => demo::run(),
        Command::Fuzz { seconds, targets } => fuzz::run(seconds, &targets),
        Command::KprobeVm { tracer, filters } => vm::run(tracer.as_deref(), &filters),
        Command::Bench { which } => match which {
            BenchCommand::Collector { calls, threads, funcs, reps, rates, seconds, save } => {
                bench::collector::run(&bench::collector::Opts { calls, threads, funcs, reps, rates, seconds, save })
            }
            BenchCommand::Readers { baseline, baseline_bin, lines, reps, save } => {
                bench::readers::run(&bench::readers::Opts { baseline, baseline_bin, lines, reps, save })
            }
            BenchCommand::Overhead { args } => bench::overhead::run(&args),
            BenchCommand::Exit { reps } => bench::exit::run(reps),
            BenchCommand::Soak { minutes, rate, release } => soak::run(&soak::Bench::Soak { minutes, rate, release }),
        },
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
