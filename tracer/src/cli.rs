//! Command-line interface. `tracer [OPTIONS] -- CMD` is short for
//! `tracer record [OPTIONS] -- CMD`; other subcommands read traces.
use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(
    name = "tracer",
    version,
    about = "Record every CUDA driver call of a process tree with eBPF",
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true
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
    /// Print the summary of a recorded trace (.jsonl or .jsonl.gz).
    Summary {
        /// Trace file.
        trace: PathBuf,
    },
    /// Analyze the ioctls a trace recorded with --ioctls: counts and times per
    /// escape, RM control command, class, CUDA call and phase; errors.
    Ioctls {
        /// Trace file.
        trace: PathBuf,
        /// JSON instead of text tables.
        #[arg(long)]
        json: bool,
    },
}

#[derive(clap::ValueEnum, Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Wakeup {
    #[default]
    Batched,
    Every,
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
    /// Output file (default: trace_<UTC timestamp>.jsonl in the current directory).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Overwrite the output file if it exists.
    #[arg(long)]
    pub force: bool,
    /// Make the output file readable by its owner only (mode 0600; default 0644).
    #[arg(long)]
    pub private: bool,
    /// Trace this running process (and the children it creates from now on).
    #[arg(short, long, value_name = "PID", conflicts_with = "command")]
    pub pid: Option<u32>,
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
    /// Entry probes only: calls are recorded with their arguments but without
    /// return code, out-parameters (allocated addresses, handles, so kernel
    /// names stay unknown) or duration. Roughly halves the probe cost.
    #[arg(long)]
    pub no_return_probes: bool,
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
    /// Do not print the summary.
    #[arg(short, long)]
    pub quiet: bool,
    /// The command to run, after `--`.
    #[arg(last = true, value_name = "CMD", required_unless_present = "pid")]
    pub command: Vec<OsString>,
}
