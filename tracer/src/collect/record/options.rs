//! What a recording is asked to do (`tracer record`'s arguments, checked
//! and converted by the cli), and what it gives back to be printed.
use std::ffi::OsString;
use std::path::PathBuf;

use crate::analysis::summary::Summary;
use crate::collect::probe_options::ProbeOptions;
use crate::collect::selection::Selection;
use crate::collect::spawn::ExitInfo;
use crate::collect::zstd_out::Compress;

/// A recording's options.
#[derive(Debug, Clone, Default)]
pub struct RecordOptions {
    /// The trace file or recording directory (None: named after the start
    /// time; `-`: stdout).
    pub output: Option<PathBuf>,
    pub compress: Compress,
    /// Overwrite an existing output.
    pub force: bool,
    /// The output is its owner's only (`--private` or `--capture-data`).
    pub private: bool,
    /// `-p`: the running process traced.
    pub pid: Option<u32>,
    /// The command to start (empty: none).
    pub command: Vec<OsString>,
    /// `--system`, `--cgroup`.
    pub selection: Selection,
    /// `--libcuda`.
    pub libcuda: Option<PathBuf>,
    /// Run the command as root even under sudo.
    pub as_root: bool,
    pub probes: ProbeOptions,
    /// `--bpf-stats`: the kernel times the programs.
    pub bpf_stats: bool,
    /// `bpf_stats` is on because the recording is replayable, not asked for: a kernel that
    /// refuses the statistics is a warning, not an error (replay's compensated pacing then
    /// names the correction it lacks).
    pub bpf_stats_implied: bool,
    /// `--capture-data`: the most copy data stored, in MiB.
    pub data_cap_mib: u64,
    /// `--gpu-timestamps` (None: off).
    pub gpu: Option<GpuOptions>,
    pub no_markers: bool,
    pub no_power: bool,
    pub power_interval_ms: u64,
    /// Print nothing but warnings and errors.
    pub quiet: bool,
}

/// `--gpu-timestamps` and the options that go with it.
#[derive(Debug, Clone, Default)]
pub struct GpuOptions {
    pub cupti_injection: Option<PathBuf>,
    pub cupti_lib: Option<PathBuf>,
    /// How CUPTI's records are switched: None all the time (`--gpu-timestamps`),
    /// a duty cycle (`--gpu-sample`), adaptive windows (the default recording).
    pub plan: Option<tracer_cupti::sample::Plan>,
    /// The default recording's GPU side, not asked for: where it cannot be had
    /// (no injection library, another injection, attached), the run goes on
    /// without it and says why.
    pub implicit: bool,
    /// The durations library (None: none, `--durations-library ""`).
    pub library: Option<PathBuf>,
    /// `--check-coverage`: CUPTI's per-function counts against the trace's.
    pub check_coverage: bool,
}

impl RecordOptions {
    /// `-o -`: the trace goes to stdout (plain JSONL, or zstd with `--compress zstd`).
    pub fn to_stdout(&self) -> bool {
        self.output.as_deref() == Some(std::path::Path::new("-"))
    }

    /// Attached to running processes: `-p`, or no command.
    pub fn attached(&self) -> bool {
        self.pid.is_some() || self.command.is_empty()
    }

    pub fn replayable(&self) -> bool {
        self.probes.replay.replayable
    }

    pub fn check_coverage(&self) -> bool {
        self.gpu.as_ref().is_some_and(|g| g.check_coverage)
    }
}

/// What a finished recording leaves to be printed.
pub struct Outcome {
    pub summary: Summary,
    /// `--gpu-timestamps`: the summary's line about the GPU lines.
    pub gpu_summary: Option<String>,
    /// The trace file (`-`: stdout).
    pub trace_path: PathBuf,
    /// Lines written, and those that could not be.
    pub lines: u64,
    pub dropped: u64,
    /// `--replayable`: the line about the recording's manifest.
    pub manifest: Option<String>,
    /// Why the trace could not be written whole.
    pub write_err: Option<String>,
    /// How the command ended (None: no command).
    pub exit: Option<ExitInfo>,
    /// What the program used that the trace does not hold (printed last).
    pub entry_lines: Vec<String>,
}

impl Outcome {
    /// The exit code: the command's, or 1 (at least) when the trace could
    /// not be written whole.
    pub fn exit_code(&self) -> i32 {
        let code = self.exit.as_ref().map(|e| e.exit_code());
        match self.write_err {
            Some(_) => code.filter(|&c| c != 0).unwrap_or(1),
            None => code.unwrap_or(0),
        }
    }
}
