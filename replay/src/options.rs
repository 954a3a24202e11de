//! What `replay run` is asked to do: its modes and options, parsed by
//! [`crate::cli`] and read by [`crate::run`] (here rather than in cli, so
//! that run does not import cli: cli -> run, and both -> options).

use std::path::PathBuf;

use clap::ValueEnum;
use replay::recording::ranks::Selection;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Mode {
    /// Whole run in recorded order, as fast as possible
    Sequence,
    /// Honour the recorded gaps between submissions
    Timed,
    /// Each distinct kernel+shape alone, repeated, timed with CUPTI (CUDA events without it)
    Isolated,
    /// The sequence captured into a CUDA graph
    Graph,
}

/// Which process of a multi-process recording to replay (recording/ranks.rs).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct SelectArgs {
    /// Replay only this process's calls (a multi-process recording; its collectives are skipped)
    #[arg(long, value_name = "PID", conflicts_with = "rank")]
    pub pid: Option<u32>,
    /// Replay only the process of this rank (the exec line's `rank`: RANK of torchrun, mpirun);
    /// its collectives (NCCL kernels) are skipped: they need their peer ranks
    #[arg(long, value_name = "N")]
    pub rank: Option<u64>,
}

impl SelectArgs {
    pub fn selection(&self) -> Option<Selection> {
        match (self.pid, self.rank) {
            (Some(p), _) => Some(Selection::Pid(p)),
            (None, Some(r)) => Some(Selection::Rank(r)),
            (None, None) => None,
        }
    }
}

#[derive(clap::Args, Debug, Clone)]
pub struct RunArgs {
    pub recording: PathBuf,
    #[command(flatten)]
    pub select: SelectArgs,
    /// Modes to run, in order (comma separated)
    #[arg(long, value_enum, value_delimiter = ',', default_value = "sequence,isolated")]
    pub mode: Vec<Mode>,
    /// Timed iterations of each mode
    #[arg(long, default_value_t = 3)]
    pub iterations: u32,
    /// Untimed iterations before
    #[arg(long, default_value_t = 1)]
    pub warmup: u32,
    /// CUDA device ordinal (with --rank: the GPU that rank replays on)
    #[arg(long, default_value_t = 0)]
    pub device: i32,
    /// Isolated mode: timed repetitions of each distinct kernel+shape
    #[arg(long, default_value_t = 20)]
    pub repeats: u32,
    /// Measure energy with NVML (idle baseline, then the sequence repeated for >= this many seconds;
    /// with --mode timed also timed passes, which keep the recorded idle gaps)
    #[arg(long, default_value_t = 0.0)]
    pub energy_seconds: f64,
    /// Never map recorded addresses: always relocate pointer parameters (for testing the fallback)
    #[arg(long)]
    pub force_relocation: bool,
    /// Isolated mode: time each kernel on the memory left by the end of the run instead of the memory
    /// its recorded run found (faster, no snapshot; data-dependent kernels may then misbehave)
    #[arg(long)]
    pub isolated_out_of_context: bool,
    /// Isolated mode: do not flush the L2 cache before each timed run (by default the prediction uses
    /// runs that start with a cold L2, and the warm figures are reported beside it)
    #[arg(long)]
    pub isolated_warm_l2: bool,
    /// Write the report here instead of NAME.rec/replay-report.json
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// Compare the recorded device-to-host bytes in every sequence/timed pass, not only the first
    #[arg(long)]
    pub check_every_pass: bool,
    /// Byte the device windows hold at the start of every pass (0; 0xff shows reads of memory no op wrote)
    #[arg(long, default_value = "0", value_parser = parse_byte)]
    pub fill: u8,
    /// LINE:ADDR:LEN: print LEN bytes at recorded address ADDR before the op of trace line LINE, every pass
    #[arg(long)]
    pub probe: Vec<replay::exec::probe::Probe>,
    /// Copies from/to page-locked host buffers even where the recorded host memory was pageable
    /// (default: the recorded kind, so that copy times compare)
    #[arg(long)]
    pub pinned_copies: bool,
    /// Device memory: `vmm` (the recorded addresses, mapped) or `malloc` (cuMemAlloc, as the
    /// program's allocator got it; every pointer relocated): to compare copy and graph timings
    #[arg(long, value_enum, default_value_t = replay::exec::memory::DeviceMemory::Vmm)]
    pub device_memory: replay::exec::memory::DeviceMemory,
    /// Run each recorded graph launch as separate launches of its work, in its order on the
    /// launch's stream (default: the exec is rebuilt once as a CUDA graph and launched as recorded)
    #[arg(long)]
    pub expand_graphs: bool,
    /// Write each rebuilt graph to DIR/graph-N.dot (cuGraphDebugDotPrint, verbose: node
    /// parameters and kernel node attributes), to compare with the program's own graph
    #[arg(long, value_name = "DIR")]
    pub graph_dot: Option<std::path::PathBuf>,
    /// Rebuild each graph as one chain of its work in recorded order instead of with its
    /// recorded dependencies (a diagnostic: does the graph's shape change its timing?)
    #[arg(long)]
    pub graph_chain: bool,
    /// Instantiate every rebuilt graph with these `CUDA_GRAPH_INSTANTIATE_FLAG_*` bits instead
    /// of its recorded flags (a diagnostic: auto-free on launch 1, device launch 4, use node
    /// priority 8; upload 2 is never passed)
    #[arg(long, value_name = "BITS", value_parser = parse_flags)]
    pub graph_instantiate_flags: Option<u64>,
    /// Build the rebuilt graphs after one whole pass with graph launches run as separate
    /// launches, so every kernel has run in the context before instantiation as in the
    /// program (a diagnostic; default: built at setup, before any pass)
    #[arg(long)]
    pub graph_build_after_pass: bool,
    /// Before a pass's first launch of each rebuilt graph: upload it on the launch's stream, or
    /// instantiate it anew from its graph (a diagnostic: does the work a pass runs between
    /// instantiation and launch change the graph's timing?)
    #[arg(long, value_name = "HOW", value_enum)]
    pub graph_refresh: Option<replay::exec::graph_execs::Refresh>,
    /// Also compare the replayed copies, per direction and host memory kind, with those of
    /// FILE: a trace or recording of the same program made with --gpu-timestamps and without
    /// --capture-data, whose copies do not carry the recorder's data capture (the recording
    /// replayed is compared as well). Repeat it for several such recordings: the copies are then
    /// compared with their median, and the report says whether they fall inside their range
    #[arg(long, value_name = "FILE")]
    pub copies_against: Vec<std::path::PathBuf>,
    /// Time every rebuilt graph launch with CUDA events recorded right before and after it
    /// (prints their median: the launch's GPU time without CUPTI's instrumentation when run
    /// with --no-cupti, as a program timing its own graph launches would measure it)
    #[arg(long)]
    pub time_graph_launches: bool,
    /// Leave these ops out of every pass, each KIND or KIND@STREAM (KIND: launch, copy, set,
    /// event, wait, sync; STREAM: the plan's stream number; the ops per kind and stream are
    /// printed): a diagnostic, e.g. which ops before a graph launch change its time. Outputs and
    /// GPU time then no longer stand for the recording
    #[arg(long, value_name = "KIND[@STREAM]", value_delimiter = ',', value_parser = parse_skip_op)]
    pub skip_ops: Vec<replay::exec::skip::SkipOp>,
    /// Do not measure the replay's GPU time with CUPTI (CUDA events only)
    #[arg(long)]
    pub no_cupti: bool,
    /// The libcupti to load (default: $CUDA_HOME, /usr/local/cuda*, the loader's path)
    #[arg(long, value_name = "PATH")]
    pub cupti_lib: Option<String>,
    #[command(flatten)]
    pub host: HostArgs,
}

/// How a recording's host gaps are paced (together/pacing.rs, tracer_format::pacing): timed
/// mode's offsets, the tenants of a together run, the prediction.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct HostArgs {
    /// `compensated`: each recorded host gap without what tracing cost its thread there (the
    /// probes' traps and eBPF programs, CUPTI's records, the recorder's stops and its hold of
    /// the CPU: the recording's bpf_stats and sched lines); `recorded`: the gaps as recorded
    /// (less the recorder's --capture-data stops)
    #[arg(long, value_name = "HOW", default_value = "compensated", value_parser = parse_pacing)]
    pub pacing: tracer_format::pacing::Pacing,
    /// The target host's speed: F (its CPU runs the program's host work F times as fast as the
    /// recording's: every host gap / F), or FILE, the target's `tracer calibrate-host -o FILE`,
    /// against the calibration in the recording's header
    #[arg(long, value_name = "F|FILE", value_parser = parse_host_speed)]
    pub host_speed: Option<String>,
    /// Keep the speed the recorded process ran at. By default compensated pacing also scales
    /// the host gaps to the speed the recording's machine usually runs the command at (the
    /// footer's `host_speed`: the probes' cost per run against the median of the machine's
    /// earlier recordings of the command)
    #[arg(long)]
    pub recorded_speed: bool,
    /// The uprobe trap's cost per probe hit, ns (default: the recording's `probe_trap_ns`, else
    /// 700, measured on the H100 machine)
    #[arg(long, value_name = "NS", value_parser = parse_ns)]
    pub probe_trap_ns: Option<f64>,
    /// CUPTI's cost per GPU work call of a --gpu-timestamps recording, ns (default: the
    /// recording's `cupti_ns_per_call`, else 2200, measured on the H100)
    #[arg(long, value_name = "NS", value_parser = parse_ns)]
    pub cupti_ns_per_call: Option<f64>,
}

impl HostArgs {
    /// The pacing of the recording whose trace is `trace` (its header's host calibration for a
    /// `--host-speed FILE`); a bad value is a misuse, one line naming the option.
    pub fn pacer(&self, trace: &replay::recording::Trace) -> anyhow::Result<replay::together::pacing::Pacer> {
        use tracer_format::pacing::{HostSpeed, Overrides};
        let given = match &self.host_speed {
            None => HostSpeed::default(),
            Some(s) => HostSpeed::parse(s, trace.host_calibration().as_ref()).map_err(replay::Misuse)?,
        };
        let footer = trace.footer.as_ref().and_then(|f| serde_json::to_value(f).ok());
        let (host_speed, speed_note) = given.for_recording(self.pacing, self.recorded_speed, footer.as_ref());
        Ok(replay::together::pacing::Pacer {
            pacing: self.pacing,
            host_speed,
            overrides: Overrides { trap_ns: self.probe_trap_ns, cupti_ns: self.cupti_ns_per_call },
            speed_note,
        })
    }

    /// The same options for a tenant process, its host speed resolved to `factor` (the usual
    /// speed included: the tenant keeps it as given).
    pub fn tenant_args(&self, factor: f64) -> Vec<String> {
        let mut v = vec!["--pacing".to_string(), self.pacing.name().to_string(), "--recorded-speed".to_string()];
        if factor != 1.0 {
            v.extend(["--host-speed".to_string(), factor.to_string()]);
        }
        if let Some(t) = self.probe_trap_ns {
            v.extend(["--probe-trap-ns".to_string(), t.to_string()]);
        }
        if let Some(c) = self.cupti_ns_per_call {
            v.extend(["--cupti-ns-per-call".to_string(), c.to_string()]);
        }
        v
    }
}

fn parse_pacing(s: &str) -> Result<tracer_format::pacing::Pacing, String> {
    tracer_format::pacing::Pacing::parse(s)
}

/// `--host-speed`: a factor above 0, or a file that exists (read against each recording later).
fn parse_host_speed(s: &str) -> Result<String, String> {
    match s.parse::<f64>() {
        Ok(f) if f.is_finite() && f > 0.0 => Ok(s.to_string()),
        Ok(_) => Err(format!("{s}: not a factor above 0 (2: the target host runs the host work twice as fast)")),
        Err(_) if std::path::Path::new(s).is_file() => Ok(s.to_string()),
        Err(_) => Err(format!("{s}: neither a factor nor a calibration file (tracer calibrate-host -o FILE)")),
    }
}

/// A cost in ns: finite, 0 or more.
fn parse_ns(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(x) if x.is_finite() && x >= 0.0 => Ok(x),
        _ => Err(format!("{s}: not a time in ns (0 or more)")),
    }
}

/// How the tenants of a together run are paced (together/pacing.rs).
#[derive(clap::Args, Debug, Clone)]
pub struct PacingArgs {
    /// Multiply every recorded host gap by F: the tenant's host program F times as slow as when
    /// recorded (0.8: a faster CPU; its GPU work and its waits for the GPU stay the replay's own).
    /// One factor for all recordings, or one per recording in their order
    #[arg(long, value_name = "F[,F…]", value_delimiter = ',', conflicts_with = "host_alone_ms")]
    pub host_scale: Vec<f64>,
    /// Scale each tenant's host gaps so that its phase takes MS milliseconds alone in the
    /// prediction's simulation (the host speed of real runs measured elsewhere: their alone
    /// time); one value for all recordings, or one per recording in their order, 0 keeping that
    /// recording's pacing. The factor found is printed as its --host-scale
    #[arg(long, value_name = "MS[,MS…]", value_delimiter = ',', conflicts_with = "host_speed")]
    pub host_alone_ms: Vec<f64>,
    #[command(flatten)]
    pub host: HostArgs,
}

/// The co-location prediction's constants (together/simulate.rs; defaults: `Model::DEFAULT`).
#[derive(clap::Args, Debug, Clone)]
pub struct ModelArgs {
    /// Prediction: cost of a switch between contexts, µs
    #[arg(long, default_value_t = replay::together::predict::Model::DEFAULT.switch_ns as f64 / 1e3, value_name = "US")]
    pub switch_us: f64,
    /// Prediction: the GPU's time slice between contexts, µs
    #[arg(long, default_value_t = replay::together::predict::Model::DEFAULT.timeslice_ns as f64 / 1e3, value_name = "US")]
    pub timeslice_us: f64,
}

impl ModelArgs {
    pub fn model(&self) -> replay::together::predict::Model {
        replay::together::predict::Model {
            switch_ns: (self.switch_us * 1e3).round() as u64,
            timeslice_ns: (self.timeslice_us * 1e3).round() as u64,
        }
    }
}

/// `replay A.rec B.rec … --together`: co-location replay (docs/colocation.md).
#[derive(clap::Args, Debug, Clone)]
pub struct TogetherArgs {
    /// The tenants' recordings (at least two)
    #[arg(required = true, num_args = 2..)]
    pub recordings: Vec<PathBuf>,
    /// Run the recordings together as tenants of one GPU (implied by `replay together`)
    #[arg(long)]
    pub together: bool,
    /// Rounds of alone and together runs (interleaved)
    #[arg(long, default_value_t = 6)]
    pub rounds: usize,
    /// CUDA device ordinal
    #[arg(long, default_value_t = 0)]
    pub device: i32,
    /// Write the JSON report here (default: together-report.json in the current directory)
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// Do not measure the GPU's busy time with CUPTI
    #[arg(long)]
    pub no_cupti: bool,
    /// The libcupti to load (default: $CUDA_HOME, /usr/local/cuda*, the loader's path)
    #[arg(long, value_name = "PATH")]
    pub cupti_lib: Option<String>,
    /// Do not read NVML's energy counter over each run
    #[arg(long)]
    pub no_energy: bool,
    /// Measure each recording's phase of this name (its `phase` marker to the next one; the ops
    /// before it run once, their memory is restored before each start barrier); a recording
    /// without it is measured whole
    #[arg(long, default_value = "generate")]
    pub phase: String,
    /// Run the ops before the phase again before every run instead of restoring the memory they
    /// left (the first version's way; their GPU work then runs right before each measured phase)
    #[arg(long)]
    pub rerun_before_phase: bool,
    /// Milliseconds the GPU idles before each run (after every tenant is armed), so that every
    /// run starts from the same power state (the clocks depend on the power drawn just before)
    #[arg(long, default_value_t = 500, value_name = "MS")]
    pub settle_ms: u64,
    /// Write every run's GPU activity per tenant to FILE (JSONL in the trace's form: each pass a
    /// phase `served NAME K`, its CUPTI busy intervals `gpu` lines), for the scripts that read a
    /// traced real run (experiments/colocation/sync_waits.py)
    #[arg(long, value_name = "FILE")]
    pub activities: Option<PathBuf>,
    #[command(flatten)]
    pub model: ModelArgs,
    #[command(flatten)]
    pub pacing: PacingArgs,
}

/// The hidden `replay tenant REC`: one tenant of a together run, driven by its parent over stdin/stdout.
#[derive(clap::Args, Debug, Clone)]
pub struct TenantArgs {
    pub recording: PathBuf,
    #[arg(long, default_value_t = 0)]
    pub device: i32,
    #[arg(long)]
    pub no_cupti: bool,
    #[arg(long)]
    pub cupti_lib: Option<String>,
    #[arg(long, default_value = "generate")]
    pub phase: String,
    #[arg(long)]
    pub rerun_before_phase: bool,
    #[arg(long, default_value_t = 1.0)]
    pub host_scale: f64,
    #[command(flatten)]
    pub host: HostArgs,
}

fn parse_byte(s: &str) -> Result<u8, String> {
    let r = match s.strip_prefix("0x") {
        Some(h) => u8::from_str_radix(h, 16),
        None => s.parse::<u8>(),
    };
    r.map_err(|e| format!("{s:?}: expected a byte (0..255 or 0x00..0xff): {e}"))
}

/// One `--skip-ops` item: KIND or KIND@STREAM.
fn parse_skip_op(s: &str) -> Result<replay::exec::skip::SkipOp, String> {
    s.parse()
}

/// A number in decimal or 0x hex.
fn parse_flags(s: &str) -> Result<u64, String> {
    let r = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16),
        None => s.parse(),
    };
    r.map_err(|_| format!("{s:?}: not a number (decimal or 0x hex)"))
}

#[cfg(test)]
mod tests {
    use super::parse_byte;

    #[test]
    fn fill_byte() {
        assert_eq!(parse_byte("0xff"), Ok(255));
        assert_eq!(parse_byte("7"), Ok(7));
        assert_eq!(
            parse_byte("256"),
            Err("\"256\": expected a byte (0..255 or 0x00..0xff): number too large to fit in target type".into())
        );
        assert!(parse_byte("0xg1").is_err());
    }
}
