//! `tracer record`: checks the arguments, turns them into the recording's
//! options (collect/record), records, then prints the summary, the trace's
//! path and what the program used that the trace does not hold.
use crate::analysis::inert;
use crate::cli::args::{BenchProbe, CompressArg, IoctlPathArg, RecordArgs, Returns, Wakeup};
use crate::collect::loader::IoctlPath;
use crate::collect::probe_options::{self, IoctlChoice, ProbeOptions};
use crate::collect::record::options::{GpuOptions, Outcome, RecordOptions};
use crate::collect::replayable::probes::Mode;
use crate::collect::selection::Selection;
use crate::collect::stacks::sites::StackOptions;
use crate::collect::zstd_out::Compress;
use crate::error::UsageError;

pub fn run(args: RecordArgs) -> anyhow::Result<i32> {
    check_args(&args)?;
    // Readable kernel names (short, like Nsight's base names).
    let names = crate::cli::args::NamesOpt { names: args.names, mangled: false }.style();
    let quiet = args.quiet;
    let outcome = crate::collect::record::record(&options(args))?;
    Ok(report(&outcome, quiet, names))
}

/// The process selection the arguments ask for.
pub fn selection(args: &RecordArgs) -> Selection {
    Selection { system: args.system, cgroup: args.cgroup.clone() }
}

/// Refuses arguments that cannot work, before anything is created.
fn check_args(args: &RecordArgs) -> anyhow::Result<()> {
    if let Some(pid) = args.pid {
        crate::cli::arg_checks::check_pid(pid)?;
    }
    crate::cli::arg_checks::check_buffer_size(args.buffer_size)?;
    if args.replayable && args.bench_probe.is_some() {
        return Err(UsageError("--replayable cannot be combined with --bench-probe".into()).into());
    }
    Ok(())
}

/// The recording's options from the arguments.
fn options(args: RecordArgs) -> RecordOptions {
    // --replayable: the probes' cost per program for replay's compensated pacing
    // (docs/replay.md), ~20-50 ns a program run (docs/overhead.md)
    let bpf_stats = args.bpf_stats || (args.replayable && !args.no_bpf_stats);
    let probes = ProbeOptions {
        sched: !args.no_sched,
        ebpf_log: args.ebpf_log,
        ioctls: args.ioctls.then(|| IoctlChoice {
            path: match args.ioctl_path {
                IoctlPathArg::Auto => IoctlPath::Auto,
                IoctlPathArg::Kprobe => IoctlPath::Kprobe,
                IoctlPathArg::Tracepoint => IoctlPath::Tracepoint,
            },
            frontend_fn: args.kprobe_function.clone(),
            uvm_fn: args.kprobe_uvm_function.clone(),
        }),
        returns: match args.returns() {
            Returns::Default => probe_options::Returns::Default,
            Returns::All => probe_options::Returns::All,
            Returns::None => probe_options::Returns::None,
        },
        counts: args.counts,
        all_functions: args.all_functions,
        bench_probe: args.bench_probe.map(|b| match b {
            BenchProbe::Empty => probe_options::BenchProbe::Empty,
            BenchProbe::EmptyReturn => probe_options::BenchProbe::EmptyReturn,
            BenchProbe::Filter => probe_options::BenchProbe::Filter,
            BenchProbe::Ring => probe_options::BenchProbe::Ring,
        }),
        bench_producer: args.bench_producer,
        wakeup: match args.wakeup {
            Wakeup::Batched => probe_options::Wakeup::Batched,
            Wakeup::Every => probe_options::Wakeup::Every,
        },
        buffer_size_mib: args.buffer_size,
        replay: Mode { replayable: args.replayable, capture_data: args.capture_data },
        stacks: match args.no_stacks {
            true => StackOptions::OFF,
            // Switch-outs are seen by the scheduler probes only.
            false => StackOptions {
                switches: !args.no_sched,
                every_launch: args.all_launch_stacks,
                sample_hz: args.stack_sample_hz,
                ..StackOptions::ALL
            },
        },
        // the trap is measured where compensated pacing will need it (collect/record/header.rs)
        trap_programs: bpf_stats && args.bench_probe.is_none(),
    };
    RecordOptions {
        selection: selection(&args),
        private: args.private_output(),
        gpu: gpu_options(&args),
        probes,
        output: args.output,
        compress: match args.compress {
            CompressArg::None => Compress::None,
            CompressArg::Zstd => Compress::Zstd,
        },
        force: args.force,
        pid: args.pid,
        command: args.command,
        libcuda: args.libcuda,
        as_root: args.as_root,
        bpf_stats,
        bpf_stats_implied: !args.bpf_stats && args.replayable && !args.no_bpf_stats,
        data_cap_mib: args.data_cap_mib,
        no_markers: args.no_markers,
        no_power: args.no_power,
        power_interval_ms: args.power_interval_ms,
        quiet: args.quiet,
    }
}

/// The GPU side: `--gpu-timestamps` (all the time, or `--gpu-sample`'s duty
/// cycle), else the default recording's adaptive windows for a command tracer
/// starts, unless `--no-gpu`. Attached (`-p`, `--system`, `--cgroup` without
/// a command) nothing can be injected.
fn gpu_options(args: &RecordArgs) -> Option<GpuOptions> {
    use tracer_cupti::sample::{DEFAULT_ADAPTIVE, Plan};
    let explicit = args.gpu_timestamps;
    // --replayable: replay paces by the recording's host gaps; its own CUPTI runs
    // time the kernels (ask with --gpu-timestamps)
    if args.no_gpu || (!explicit && (args.pid.is_some() || args.command.is_empty() || args.replayable)) {
        return None;
    }
    Some(GpuOptions {
        cupti_injection: args.cupti_injection.clone(),
        cupti_lib: args.cupti_lib.clone(),
        plan: match explicit {
            true => args.gpu_sample.map(Plan::Duty),
            false => Some(Plan::Adaptive(args.gpu_windows.unwrap_or(DEFAULT_ADAPTIVE))),
        },
        implicit: !explicit,
        library: match &args.durations_library {
            Some(p) if p.as_os_str().is_empty() => None,
            Some(p) => Some(p.clone()),
            None => crate::collect::durations_library::default_path(),
        },
        check_coverage: args.check_coverage,
    })
}

/// Prints the summary, the trace's path and the manifest's line (unless
/// `--quiet`), a write failure, and last, where it is seen, what the
/// program used that the trace does not hold; returns the exit code.
fn report(o: &Outcome, quiet: bool, names: crate::analysis::kernel_names::NameStyle) -> i32 {
    if !quiet {
        eprint!("{}", o.summary.render_with(names));
        if let Some(g) = &o.gpu_summary {
            eprintln!("{}", inert::text(g));
        }
        eprintln!("trace: {} ({} lines)", o.trace_path.display(), o.lines);
        if let Some(m) = &o.manifest {
            eprintln!("{}", inert::text(m));
        }
    }
    if let Some(e) = &o.write_err {
        eprintln!(
            "tracer: writing {} failed ({e}): {} lines written are complete and valid, {} were not written",
            o.trace_path.display(),
            o.lines,
            o.dropped
        );
    }
    o.entry_lines.iter().for_each(|l| eprintln!("{}", inert::text(l)));
    o.exit_code()
}
