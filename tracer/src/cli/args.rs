//! Command-line interface. `tracer [OPTIONS] -- CMD` is short for
//! `tracer record [OPTIONS] -- CMD`; other subcommands read traces.
use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

pub use super::names::{Names, NamesOpt};

#[derive(Parser, Debug)]
#[command(
    name = "tracer",
    version = concat!(env!("CARGO_PKG_VERSION"), " (commit ", env!("TRACER_GIT_COMMIT"), ")"),
    about = "Record every CUDA driver call of a process tree with eBPF",
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true,
    after_help = "Examples:\n  sudo tracer -- python3 infer.py          record into trace_<time>.jsonl\n  \
                  sudo tracer --gpu-timestamps -o run.jsonl -- python3 infer.py\n  \
                  tracer report run.jsonl                  what bounds each phase\n  \
                  tracer gaps run.jsonl                    GPU idle gaps and what the CPU did meanwhile"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub record: RecordArgs,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run a command (or attach to a process) and record its CUDA driver calls.
    Record(RecordArgs),
    /// Stay attached and serve OpenMetrics/Prometheus metrics at /metrics
    /// (per process and GPU); optionally duty-cycled trace files (docs/agent.md).
    Agent(crate::cli::agent::AgentArgs),
    /// Print the summary of a recorded trace (.jsonl, .jsonl.gz or .jsonl.zst).
    #[command(after_help = "Examples:\n  tracer summary run.jsonl.gz\n  tracer summary run.jsonl --names full --json")]
    Summary {
        /// Trace file (.jsonl, .jsonl.gz, .jsonl.zst, a NAME.rec directory; - for stdin).
        trace: PathBuf,
        /// JSON instead of text (every function and kernel).
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        names: NamesOpt,
    },
    /// Analyze the ioctls a trace recorded with --ioctls: counts and times per
    /// escape, RM control command, class, CUDA call and phase; errors.
    Ioctls {
        /// Trace file (.jsonl, .jsonl.gz, .jsonl.zst, a NAME.rec directory; - for stdin).
        trace: PathBuf,
        /// JSON instead of text tables.
        #[arg(long)]
        json: bool,
    },
    /// Decode a CUDA code image: a fatbin, cubin or PTX file, or a host
    /// library/executable with a .nv_fatbin section, or an image in a
    /// running process's memory (--pid, --addr). Lists the entries and
    /// architectures and each kernel's parameter layout.
    Image(crate::cli::image::ImageArgs),
    /// Draw a trace: timeline (calls per thread, GPU busy per stream, phases,
    /// power), idle-gap histogram, time and energy per phase (PNG and/or SVG);
    /// with --compare, recorded vs replayed GPU timelines side by side.
    #[command(
        after_help = "Examples:\n  tracer plot run.jsonl -o plots/\n  tracer plot run.jsonl --from 20 --to 22.5 --format png"
    )]
    Plot {
        /// Trace file (.jsonl, .jsonl.gz, .jsonl.zst, a NAME.rec directory; - for stdin).
        trace: PathBuf,
        /// Directory for the images (created if missing).
        #[arg(short, long, value_name = "DIR", default_value = ".")]
        output: PathBuf,
        /// Image format.
        #[arg(long, value_enum, default_value_t = crate::export::plot::Format::Both)]
        format: crate::export::plot::Format,
        /// Width of the images in pixels.
        #[arg(long, value_name = "PX", default_value_t = 1600)]
        width: u32,
        /// Thread rows in the timeline: the busiest, the others folded into one row.
        #[arg(long, value_name = "N", default_value_t = 12)]
        threads: usize,
        /// Timeline from this many seconds after the start of the trace.
        #[arg(long, value_name = "S")]
        from: Option<f64>,
        /// Timeline up to this many seconds after the start of the trace.
        #[arg(long, value_name = "S")]
        to: Option<f64>,
        /// Compare TRACE's measured GPU timeline with OTHER's (a replay's
        /// NAME.rec/replay-timeline.jsonl, or a NAME.rec directory holding
        /// one): compare_timeline, compare_kernels and compare_gaps images, a
        /// summary on stdout; --from/--to count from each trace's first GPU
        /// interval.
        #[arg(long, value_name = "OTHER")]
        compare: Option<PathBuf>,
        /// Print the figures' numbers (calls and GPU intervals per row in the
        /// window, time and energy per phase, gaps) as JSON instead of drawing.
        #[arg(long, conflicts_with = "compare")]
        json: bool,
    },
    /// GPU idle gaps per GPU and per process: count, share of wall time,
    /// histogram, percentiles, long gaps and what the CPU did meanwhile, the
    /// time a second tenant could use (docs/gaps.md).
    #[command(
        after_help = "Examples:\n  tracer gaps run.jsonl\n  tracer gaps run.jsonl --phase generate --threshold-us 50"
    )]
    Gaps(crate::cli::analysis::GapsArgs),
    /// What bounds each phase (launch/host, synchronization, GPU, transfers);
    /// time, calls, kernels, synchronization, memory and energy per phase and
    /// iteration; top kernels by count and GPU time; loss.
    #[command(after_help = "Examples:\n  tracer report run.jsonl\n  tracer report run.jsonl --html run.html\n  \
                      tracer report run.jsonl --json --names full")]
    Report(crate::cli::analysis::ReportArgs),
    /// Export a trace for other tools (Perfetto / Chrome trace-event JSON, Parquet, pprof).
    #[command(
        after_help = "Examples:\n  tracer export run.jsonl                  run.perfetto.json for ui.perfetto.dev\n  \
                      tracer export run.jsonl --format parquet -o run.parquet/\n  \
                      tracer export run.jsonl --format pprof -o run.pb.gz   go tool pprof -http : run.pb.gz"
    )]
    Export(crate::cli::analysis::ExportArgs),
    /// Derive a kernel-durations file from a trace's measured GPU activity.
    Calibrate(crate::cli::analysis::CalibrateArgs),
    /// Compare the inferred and bound GPU timelines with the measured one.
    Compare(crate::cli::analysis::CompareArgs),
    /// Time a fixed single-thread CPU workload on this host (a few ms per run, the median of 9):
    /// its ratio to a recording's (whose header stores one) is the `--host-speed` of this host
    /// for `tracer whatif` and `replay`.
    #[command(after_help = "Example:
  tracer calibrate-host -o h200-host.json
                        tracer whatif h100.rec --durations h200.json --host-speed h200-host.json")]
    CalibrateHost(crate::cli::analysis::CalibrateHostArgs),
    /// What-if on another GPU: TRACE's workload (recorded with --gpu-timestamps)
    /// with another GPU's kernel durations (`replay TRACE.rec` run there):
    /// iteration time, busy time and kernel families there; --against a
    /// trace of the same workload measured there gives the errors.
    #[command(after_help = "Examples:\n  tracer whatif h100.rec --durations h100.rec/sequence-durations.h200.json\n  \
                      tracer whatif h100.rec --durations h200.json --against h200.jsonl\n\nMethod: docs/what-if.md")]
    Whatif(crate::cli::analysis::WhatifArgs),
    /// Print a completion script for SHELL (e.g. `tracer completions bash >
    /// /etc/bash_completion.d/tracer`).
    Completions {
        #[arg(value_enum)]
        shell: Shell,
    },
    /// Print tracer's man page in roff (`tracer man | man -l -`).
    Man,
}

/// `tracer completions SHELL`.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
}

#[derive(clap::ValueEnum, Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Wakeup {
    #[default]
    Batched,
    Every,
}

#[derive(clap::ValueEnum, Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Returns {
    #[default]
    Default,
    All,
    None,
}

impl RecordArgs {
    /// Whether the output is its owner's only: `--private`, or
    /// `--capture-data` (device memory contents: weights, inputs).
    pub fn private_output(&self) -> bool {
        self.private || self.capture_data
    }

    /// `--returns`, with the hidden `--no-return-probes` alias applied.
    pub fn returns(&self) -> Returns {
        if self.no_return_probes { Returns::None } else { self.returns }
    }
}

#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum BenchProbe {
    /// An empty entry program on each probed function.
    Empty,
    /// Empty entry and return programs.
    EmptyReturn,
    /// The traced-task filter and the cookie only.
    Filter,
    /// The filter, a header and an empty record through the ring buffer.
    Ring,
}

/// `--compress` (`crate::collect::zstd_out::Compress`).
#[derive(clap::ValueEnum, Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum CompressArg {
    /// Plain JSONL, unless the output name ends in `.zst`.
    #[default]
    None,
    /// zstd (level 1); the default output name ends in `.jsonl.zst`.
    Zstd,
}

#[derive(clap::ValueEnum, Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum IoctlPathArg {
    #[default]
    Auto,
    Kprobe,
    Tracepoint,
}

#[derive(Args, Debug, Clone, Default)]
pub struct RecordArgs {
    /// Output file (default: trace_<UTC timestamp>.jsonl in the current
    /// directory); `-`: the trace to stdout, the command's own stdout to stderr.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Overwrite the output file if it exists.
    #[arg(long)]
    pub force: bool,
    /// Make the output file readable by its owner only (mode 0600; default
    /// 0644; a --replayable directory and its subdirectories 0700). Implied
    /// by --capture-data, whose data/ holds device memory contents.
    #[arg(long)]
    pub private: bool,
    /// Compress the trace with zstd (also chosen by an output name ending in
    /// .zst): ~10-40× fewer bytes, for high call rates on slow disks.
    #[arg(long, value_enum, value_name = "ALGO", default_value_t = CompressArg::None)]
    pub compress: CompressArg,
    /// Trace this running process (and the children it creates from now on).
    #[arg(short, long, value_name = "PID", conflicts_with = "command")]
    pub pid: Option<u32>,
    /// Record every process on the machine that uses libcuda, also those
    /// started later (docs/containers.md); with a command until it exits,
    /// without one until Ctrl-C.
    #[arg(long, conflicts_with_all = ["pid", "cgroup"])]
    pub system: bool,
    /// Record the processes of this cgroup v2 and the cgroups below it (a
    /// container, a pod): a directory under /sys/fs/cgroup, or the path
    /// /proc/PID/cgroup shows (docs/containers.md).
    #[arg(long, value_name = "PATH", conflicts_with = "pid")]
    pub cgroup: Option<PathBuf>,
    /// The libcuda to probe (default: the one the dynamic loader would pick).
    #[arg(long, value_name = "PATH")]
    pub libcuda: Option<PathBuf>,
    /// Run the command as root even when tracer was started with sudo.
    #[arg(long)]
    pub as_root: bool,
    /// Ring buffer size in MiB (a power of two).
    #[arg(long, value_name = "MIB", default_value_t = 64)]
    pub buffer_size: u32,
    /// Also probe the state getters that the CUDA runtime calls several times
    /// per launch (cuDevicePrimaryCtxGetState, cuCtxGetCurrent, ...): complete,
    /// but it roughly doubles the tracing cost on launch-bound programs.
    #[arg(long)]
    pub all_functions: bool,
    /// Print the eBPF programs' own diagnostics (aya-log; see RUST_LOG).
    #[arg(long)]
    pub ebpf_log: bool,
    /// When the kernel side wakes the collector: `batched` (when an eighth of
    /// the ring buffer is filled; the collector also polls every 10 ms) or
    /// `every` record (costs the traced thread a wakeup per call).
    #[arg(long, value_enum, default_value_t = Wakeup::Batched)]
    pub wakeup: Wakeup,
    /// Which calls get a return probe (a second trap per call, for the return
    /// code, out-parameters and duration): `default`: all but launches and
    /// the other calls that never block (listed in the header as
    /// `entry_only_functions`; they are most calls of a launch-bound
    /// program); `all`: every call; `none`: entry only (out-parameters such
    /// as allocated addresses and handles, hence kernel names, stay unknown).
    #[arg(long, value_enum, default_value_t = Returns::Default)]
    pub returns: Returns,
    /// Same as `--returns none`.
    #[arg(long, hide = true)]
    pub no_return_probes: bool,
    /// Count launches and the other calls probed entry-only by default
    /// (`entry_only_functions`) in the kernel instead of recording each
    /// one: `count` lines per function and `kernel_count` lines per kernel
    /// at the end of the trace; every other call is recorded as usual. The
    /// cheapest mode for always-on use (docs/overhead.md).
    #[arg(long, conflicts_with = "replayable")]
    pub counts: bool,
    /// Benchmarks only (cargo xtask bench collector): attach empty programs
    /// instead of tracer's, to measure the probe mechanism's floor.
    #[arg(long, value_enum, hide = true)]
    pub bench_probe: Option<BenchProbe>,
    /// Have the kernel time every run of tracer's eBPF programs and put the
    /// count and mean time per program in the footer (`bpf_stats`): where the
    /// probe cost goes. Adds ~20-50 ns per run. On by default with --replayable (replay's
    /// compensated pacing takes the probes' cost out of the recorded host gaps with it).
    #[arg(long)]
    pub bpf_stats: bool,
    /// With --replayable: do not collect BPF statistics (replay then removes only a default
    /// trap cost per probe hit from the host gaps).
    #[arg(long, conflicts_with = "bpf_stats")]
    pub no_bpf_stats: bool,
    /// Benchmarks only: every getppid() of the traced processes emits a
    /// launch record (a producer that is not trap-bound).
    #[arg(long, hide = true)]
    pub bench_producer: bool,
    /// Make a replayable recording (docs/recording-format.md): a directory
    /// (-o NAME.rec) with the trace, every code image the program loads and
    /// the parameter bytes of every kernel launch, for `replay`.
    #[arg(long)]
    pub replayable: bool,
    /// With --replayable: also store the host bytes of host-to-device copies
    /// (deduplicated), so that replay can rebuild the device memory. The
    /// recording is then private (0700 directories, 0600 files: --private).
    #[arg(long, requires = "replayable")]
    pub capture_data: bool,
    /// With --capture-data: store at most this many MiB of copy data; copies
    /// beyond it are listed as not captured.
    #[arg(long, value_name = "MIB", default_value_t = 4096)]
    pub data_cap_mib: u64,
    /// Also record the syscalls the traced processes make on NVIDIA device
    /// files (open, close, ioctl with its decoded parameters, mmap, munmap).
    #[arg(long)]
    pub ioctls: bool,
    /// How ioctls are captured with --ioctls: `kprobe` on the driver's ioctl
    /// entry points (stock kernels), `tracepoint` on the ioctl syscall (works
    /// everywhere), or `auto`: kprobe, else tracepoint (the header says which
    /// was used and why the others were refused).
    #[arg(long, value_enum, default_value_t = IoctlPathArg::Auto)]
    pub ioctl_path: IoctlPathArg,
    /// Kernel function kprobed for /dev/nvidiactl and /dev/nvidiaN ioctls
    /// (its arguments must be (struct file *, unsigned int cmd, unsigned long arg)).
    #[arg(long, value_name = "FUNCTION", default_value = "nvidia_unlocked_ioctl")]
    pub kprobe_function: String,
    /// Kernel function kprobed for /dev/nvidia-uvm ioctls ("" to skip).
    #[arg(long, value_name = "FUNCTION", default_value = "uvm_unlocked_ioctl_entry")]
    pub kprobe_uvm_function: String,
    /// Also record when each kernel, copy and memset ran on the GPU (start and
    /// end, measured by CUPTI's activity API, injected into the command through
    /// CUDA_INJECTION64_PATH): `type: "gpu"` lines. Costs the command extra
    /// time (docs/gpu-timestamps.md).
    #[arg(long, conflicts_with = "pid")]
    pub gpu_timestamps: bool,
    /// The pure-uprobe mode: no GPU durations at all. By default a command
    /// started by tracer also gets CUPTI in short adaptive windows (attached
    /// from cuInit while it meets kernels the durations library does not
    /// know, detached in between), and the analyses infer the rest of the
    /// timeline from those windows and the library (docs/gpu-timestamps.md,
    /// "The default: adaptive windows").
    #[arg(long, conflicts_with_all = ["gpu_timestamps", "gpu_windows"])]
    pub no_gpu: bool,
    /// The default recording's windows: WINDOW_MS/MAX_WINDOW_MS/MAX_GAP_MS[/BUDGET_PCT[/HORIZON_MS]]
    /// (default 100/2000/20000/2): a window lasts WINDOW_MS, is extended while
    /// it meets new work up to MAX_WINDOW_MS, and the gap before the next
    /// doubles while nothing is new, up to MAX_GAP_MS; and the windows' cost
    /// (attaching, detaching, CUPTI's work per record) stays within
    /// BUDGET_PCT of the process's time since cuInit (0: no budget), or, with
    /// HORIZON_MS, within BUDGET_PCT of any stretch of HORIZON_MS.
    #[arg(long, value_name = "W/MAX_W/MAX_GAP[/PCT[/HORIZON]]", value_parser = parse_windows, conflicts_with = "gpu_timestamps")]
    pub gpu_windows: Option<tracer_cupti::sample::Adaptive>,
    /// The durations library that measured runs add to and the default
    /// recording's analyses draw on (default: $TRACER_DURATIONS_LIBRARY, else
    /// /var/lib/tracer/durations.json as root, ~/.local/state/tracer/durations.json
    /// otherwise; "" for none).
    #[arg(long, value_name = "PATH")]
    pub durations_library: Option<PathBuf>,
    /// With --gpu-timestamps: also count every driver call per function with CUPTI's
    /// driver-API callbacks and compare with the trace, function by function (footer
    /// `coverage`, a table of differences on stderr; docs/capture.md). Slows every
    /// driver call; for checking tracer, not for measuring.
    #[arg(long, requires = "gpu_timestamps", conflicts_with = "counts")]
    pub check_coverage: bool,
    /// With --gpu-timestamps: measure in windows only, CUPTI's records on for
    /// the first WINDOW_MS of every PERIOD_MS (from each process's cuInit) and
    /// off in between (`gpu_window` lines); the first window lasts at least
    /// LEAD_MS (default 10000), so that the loading phase's copies are
    /// measured; the analyses calibrate the rest of the run from the windows
    /// (docs/gpu-timestamps.md#sampled-measurement).
    #[arg(long, value_name = "WINDOW_MS/PERIOD_MS[/LEAD_MS]", requires = "gpu_timestamps", value_parser = parse_sample)]
    pub gpu_sample: Option<tracer_cupti::sample::Spec>,
    /// The injection library for the GPU side (default: libtracer_cupti.so
    /// next to the tracer executable).
    #[arg(long, value_name = "PATH", conflicts_with = "no_gpu")]
    pub cupti_injection: Option<PathBuf>,
    /// The libcupti the command loads for the GPU side (default: one it
    /// already loaded, else $CUDA_HOME, /usr/local/cuda*, the loader's path).
    #[arg(long, value_name = "PATH", conflicts_with = "no_gpu")]
    pub cupti_lib: Option<PathBuf>,
    /// Do not print the summary.
    #[arg(short, long)]
    pub quiet: bool,
    /// How the summary prints kernel names: short (like Nsight's base names), full (demangled) or mangled.
    #[arg(long, value_enum, value_name = "STYLE", default_value_t = Names::Short)]
    pub names: Names,
    /// Do not sample GPU power, energy, clocks, utilization and temperature
    /// through NVML (docs/power.md).
    #[arg(long)]
    pub no_power: bool,
    /// NVML sampling interval.
    #[arg(long, value_name = "MS", default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=60_000))]
    pub power_interval_ms: u64,
    /// Do not give the command a marker FIFO (TRACER_MARKER_FIFO, docs/markers.md).
    #[arg(long)]
    pub no_markers: bool,
    /// Do not record the traced threads' scheduler events (switches and
    /// wake-ups), which explain idle gaps down to the operating system
    /// (docs/gaps.md, "Why the thread was not launching").
    #[arg(long)]
    pub no_sched: bool,
    /// Do not take the traced threads' user stacks (native and Python
    /// frames) at launches, copies, sets, synchronizations and switch-outs
    /// (docs/stacks.md).
    #[arg(long)]
    pub no_stacks: bool,
    /// Take a stack at every launch, not at the first after an idle or
    /// off-CPU time and once per 10 ms per thread otherwise (docs/stacks.md:
    /// a stack costs a launch's probe several times).
    #[arg(long, conflicts_with = "no_stacks")]
    pub all_launch_stacks: bool,
    /// Samples per second and CPU of the traced threads' on-CPU stacks (a
    /// perf event on the CPU clock; 0: none): what ran inside a GPU idle
    /// gap (docs/stacks.md, "Samples").
    #[arg(long, value_name = "N", default_value_t = crate::collect::stacks::sites::DEFAULT_SAMPLE_HZ)]
    pub stack_sample_hz: u32,
    /// The command to run, after `--`.
    #[arg(last = true, value_name = "CMD", required_unless_present_any = ["pid", "system", "cgroup"])]
    pub command: Vec<OsString>,
}

fn parse_windows(s: &str) -> Result<tracer_cupti::sample::Adaptive, String> {
    tracer_cupti::sample::Adaptive::parse(s)
}

fn parse_sample(s: &str) -> Result<tracer_cupti::sample::Spec, String> {
    tracer_cupti::sample::Spec::parse(s)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    #[test]
    fn gpu_timestamps_command_line() {
        use clap::Parser as _;
        let parse = |a: &[&str]| Cli::try_parse_from(a.iter().copied()).map(|c| c.record);
        let r = parse(&["tracer", "--gpu-timestamps", "--cupti-lib", "/x/libcupti.so", "--", "python3"]).unwrap();
        assert!(r.gpu_timestamps);
        assert_eq!(r.cupti_lib.as_deref(), Some(Path::new("/x/libcupti.so")));
        assert_eq!(r.cupti_injection, None);
        assert_eq!(r.gpu_sample, None);
        let r = parse(&["tracer", "--gpu-timestamps", "--gpu-sample", "20/200", "--", "python3"]).unwrap();
        assert_eq!(r.gpu_sample, Some(tracer_cupti::sample::Spec { window_ms: 20, period_ms: 200, lead_ms: 10_000 }));
        let err = |a: &[&str]| parse(a).unwrap_err().kind();
        // Injection goes through the environment: not with -p.
        assert_eq!(err(&["tracer", "--gpu-timestamps", "-p", "1"]), clap::error::ErrorKind::ArgumentConflict);
        // the default recording's GPU side takes them too, --no-gpu not
        assert!(parse(&["tracer", "--cupti-lib", "/x", "--", "true"]).is_ok());
        assert_eq!(
            err(&["tracer", "--no-gpu", "--cupti-lib", "/x", "--", "true"]),
            clap::error::ErrorKind::ArgumentConflict
        );
        assert_eq!(
            err(&["tracer", "--no-gpu", "--gpu-timestamps", "--", "true"]),
            clap::error::ErrorKind::ArgumentConflict
        );
        let r = parse(&["tracer", "--gpu-windows", "50/500/5000", "--", "true"]).unwrap();
        assert_eq!(r.gpu_windows.map(|a| a.env_value()).as_deref(), Some("adaptive:50/500/5000/2"));
        let r = parse(&["tracer", "--gpu-windows", "50/500/5000/0.25", "--", "true"]).unwrap();
        assert_eq!(r.gpu_windows.map(|a| a.budget_bp), Some(25));
        let r = parse(&["tracer", "--gpu-windows", "50/500/5000/2/1000", "--", "true"]).unwrap();
        assert_eq!(r.gpu_windows.map(|a| a.env_value()).as_deref(), Some("adaptive:50/500/5000/2/1000"));
        assert!(parse(&["tracer", "--cupti-injection", "/x", "--", "true"]).is_ok());
        assert_eq!(
            err(&["tracer", "--gpu-sample", "20/200", "--", "true"]),
            clap::error::ErrorKind::MissingRequiredArgument
        );
        assert_eq!(
            err(&["tracer", "--gpu-timestamps", "--gpu-sample", "200/20", "--", "true"]),
            clap::error::ErrorKind::ValueValidation
        );
    }
}
