//! `tracer record`: load probes, start (or attach to) the traced program,
//! collect until it ends, then write the footer and the summary.
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::Context as _;
use serde_json::{Value, json};

use tracer_common::event::nvdev;
use tracer_common::funcs::FuncId;

use crate::cli::args::{RecordArgs, Returns};
use crate::collect::cgroups::CgroupTable;
use crate::collect::collector::Collector;
use crate::collect::gpu_timestamps::GpuSession;
use crate::collect::libcuda_watch::{self, Watch};
use crate::collect::loader::{self, KernelCounters};
use crate::collect::replayable::recorder::Recorder;
use crate::collect::replayable::store::Store;
use crate::collect::selection::{Scope, Selection};
use crate::collect::spawn;
use crate::collect::writer::TraceWriter;
use crate::collect::{footer, privileges, procfs, session};
use crate::collect::{libcuda, sysinfo};
use crate::decode::calls::Assembler;
use crate::error::UsageError;

/// Trace format version written in the header.
pub const FORMAT_VERSION: u32 = 1;

pub fn run(args: RecordArgs) -> anyhow::Result<i32> {
    check_args(&args)?;
    let scope = selection(&args).resolve().map_err(UsageError)?;
    privileges::check_privileges()?;
    // Signal handlers exist before the command does, so an early Ctrl-C
    // cannot kill tracer and leave the command running untraced.
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let mut signals = rt.block_on(async { spawn::StopSignals::new() }).context("installing signal handlers")?;
    let run_as = spawn::invoking_user(args.as_root)?;
    let started = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    let Output { store, path: out_path, file } = create_output(&args, run_as.as_ref(), started)?;
    // Marker FIFO (its path goes into the command's environment) and NVML.
    let side_opts = crate::collect::side::SideOptions {
        no_markers: args.no_markers,
        attached: args.pid.is_some() || args.command.is_empty(),
        no_power: args.no_power,
        power_interval_ms: args.power_interval_ms,
    };
    let mut side = crate::collect::side::Side::new(&side_opts, run_as.as_ref());
    let mut gpu = start_gpu_timestamps(&args, run_as.as_ref(), &out_path)?;
    make_private(&args, &file, &out_path)?;
    let suspended = spawn_command(&args, run_as.as_ref(), &side)?;
    // Until the header is written, a failure removes the (empty) file we
    // created, so no trace that is not one is left behind.
    let cleanup = |e: anyhow::Error| {
        remove_output(&out_path);
        if let Some(s) = &store {
            let _ = std::fs::remove_dir_all(&s.dir);
        }
        e
    };
    let libcuda_path = find_libcuda(&args).map_err(cleanup)?;
    let symbols = match &libcuda_path {
        Some(p) => libcuda::exported_functions(p).map_err(cleanup)?,
        None => libcuda::ExportedSymbols::default(),
    };
    let initial = libcuda_path.clone().unwrap_or_default();
    // BPF statistics stay on while this fd is open (until tracer exits).
    let _stats = enable_bpf_stats(&args).map_err(cleanup)?;
    side.start(&side_opts, suspended.as_ref().map_or(args.pid.unwrap_or(0), |s| s.pid), &initial);
    let kscope = scope.kernel();
    let mut loaded = with_probe_options(&args, &initial, &symbols, kscope, loader::load).map_err(cleanup)?;
    let mut watch = Watch::new(Box::new(|loaded: &mut loader::Loaded, via: &Path| {
        let syms = libcuda::exported_functions(via)?;
        let r = with_probe_options(&args, via, &syms, kscope, |o| loader::attach_libcuda(loaded, o))?;
        Ok(r.probed.len())
    }));
    if libcuda_path.is_some() {
        watch.initial(&initial, loaded.report.probed.len());
    }
    let recorder = start_recorder(&args, store, &mut loaded)?;
    let root_pid =
        mark_traced(&args, &scope, suspended.as_ref(), &mut loaded).inspect_err(|_| remove_output(&out_path))?;
    // Libraries the selected processes mapped before the watch was on.
    for pid in libcuda_watch::running_selected(&scope, args.pid.as_slice()) {
        watch.scan(&mut loaded, pid);
    }
    let mut header = trace_header(&args, &loaded, root_pid, started, &mut side, gpu.as_ref());
    header["selection"] = scope.header();
    let header_copy = recorder.as_ref().map(|_| header.clone());
    let asm = assembler(&args, &loaded);
    let mut col = start_collector(&args, file, &out_path, asm, &mut side, recorder, header)?;
    if args.check_coverage {
        col.coverage = Some(Default::default());
    }
    let all_functions = args.all_functions;
    col.entry_points = Some(crate::collect::entry_points::EntryPoints::new(
        Box::new(move |id| left_out(all_functions, id)),
        libcuda_path.as_deref().map(|p| (p, &symbols)),
    ));
    if scope.is_machine_wide() {
        col.cgroups = Some(CgroupTable::new(crate::collect::selection::cgroup_root(), loaded.pid_cgroup.take()));
    }
    announce(&args, &loaded, libcuda_path.as_deref(), &scope, &out_path);

    let t0 = Instant::now();
    let (exit, counters) = rt.block_on(session::collect(
        &mut loaded,
        &mut col,
        suspended,
        args.pid,
        &mut signals,
        gpu.as_mut(),
        Some(&mut watch),
    ))?;
    let lost_opens = loaded.libopen_lost.get(&0, 0).map(|v| v.iter().sum::<u64>()).unwrap_or(0);
    if watch.files.is_empty() {
        eprintln!(
            "tracer: warning: no libcuda was probed: none in tracer's mount namespace and no recorded process opened one (pass --libcuda PATH if it has another name)"
        );
    }
    col.footer_extra.insert("libcuda_files".into(), watch.footer(lost_opens));
    if let Some(c) = &col.cgroups {
        let v = c.footer();
        col.footer_extra.insert("cgroups".into(), v);
    }
    write_counts(&mut col, loaded.counts.as_ref().filter(|_| args.counts));
    let undecoded = undecoded_calls(&loaded);
    let mut entry_lines = entry_points_footer(&mut col, &loaded, &undecoded);
    if let Some(g) = gpu.as_ref().filter(|_| args.check_coverage) {
        entry_lines.extend(coverage_footer(&mut col, &g.driver_counts_path(), &undecoded, args.all_functions));
    }
    let write_err = finish_trace(&mut col, &mut side, &counters, exit.as_ref(), t0.elapsed(), gpu.as_mut(), args.quiet);
    // The manifest last: it describes the finished recording.
    let manifest = write_manifest(&col, header_copy.as_ref());
    let code = report(&args, &col, gpu.as_ref(), &out_path, manifest, write_err, exit);
    // Last, where it is seen: what the program used that the trace does not hold.
    entry_lines.iter().for_each(|l| eprintln!("{l}"));
    Ok(code)
}

/// `--check-coverage`: the footer's `coverage` (coverage.rs), the trace's calls against
/// CUPTI's per function; returns the lines for stderr.
fn coverage_footer(
    col: &mut Collector,
    cupti_counts: &Path,
    undecoded: &BTreeMap<String, u64>,
    all_functions: bool,
) -> Vec<String> {
    let Some(c) = col.coverage.as_ref() else { return Vec::new() };
    let cupti = match crate::collect::coverage::read_cupti(cupti_counts) {
        Ok(m) => m,
        Err(e) => {
            let why =
                format!("no CUPTI driver call counts ({e:#}): did the command initialise CUDA and exit normally?");
            col.footer_extra.insert("coverage".into(), json!({ "error": why }));
            return vec![format!("tracer: --check-coverage: {why}")];
        }
    };
    let left_out = |name: &str| {
        tracer_common::funcs::lookup(name)
            .and_then(|id| left_out(all_functions, id))
            .or_else(|| crate::collect::coverage::cupti_silent(name))
    };
    let traced = c.split(&cupti.last_ns);
    let (footer, lines) = crate::collect::coverage::compare(&cupti.calls, &traced, undecoded, &left_out);
    col.footer_extra.insert("coverage".into(), footer);
    lines
}

/// The counting probes' calls of the exported functions outside the table, by name,
/// read once the probes are off (empty, with a warning, when the map cannot be read).
fn undecoded_calls(loaded: &loader::Loaded) -> BTreeMap<String, u64> {
    match loaded.counts.as_ref().map(|c| c.unrecorded_calls()) {
        Some(Ok(c)) => c,
        Some(Err(e)) => {
            eprintln!("tracer: reading the counts of undecoded driver functions failed: {e:#}");
            BTreeMap::new()
        }
        None => BTreeMap::new(),
    }
}

/// Why a table function is left out of this recording (None: it is probed).
fn left_out(all_functions: bool, id: FuncId) -> Option<&'static str> {
    (!all_functions && tracer_common::funcs::is_noisy(id))
        .then_some("a state getter left out by default (--all-functions records it)")
}

/// The footer's `entry_points` (entry_points.rs): every resolved entry point tracer does
/// not record, and the calls of undecoded functions; returns the lines for stderr.
fn entry_points_footer(col: &mut Collector, loaded: &loader::Loaded, calls: &BTreeMap<String, u64>) -> Vec<String> {
    let Some(ep) = col.entry_points.as_mut() else { return Vec::new() };
    let counted = crate::collect::counts::unrecorded_names().into_iter().collect();
    let not_counted = loaded.report.not_counted.iter().map(|(n, why)| (n.clone(), why.to_string())).collect();
    let (footer, lines) = ep.finish(calls, &counted, &not_counted);
    col.footer_extra.insert("entry_points".into(), footer);
    lines
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

/// Where the trace goes: the recording directory (`--replayable`) and the
/// trace file, created.
struct Output {
    store: Option<Store>,
    path: PathBuf,
    file: std::fs::File,
}

/// `-o -`: the trace goes to stdout (plain JSONL, or zstd with `--compress zstd`).
fn to_stdout(args: &RecordArgs) -> bool {
    args.output.as_deref() == Some(Path::new("-"))
}

/// Removes the trace file `path` (not stdout) after a failure before its header.
fn remove_output(path: &Path) {
    if path != Path::new("-") {
        let _ = std::fs::remove_file(path);
    }
}

/// Creates the recording directory (`--replayable`, the trace inside it) or
/// names the trace file, and creates the trace file.
fn create_output(args: &RecordArgs, run_as: Option<&spawn::RunAs>, started: Duration) -> anyhow::Result<Output> {
    let zstd = args.compress == crate::collect::zstd_out::Compress::Zstd;
    if to_stdout(args) {
        if args.replayable {
            return Err(UsageError(
                "-o - writes the trace to stdout: not with --replayable (a recording is a directory)".into(),
            )
            .into());
        }
        if std::io::IsTerminal::is_terminal(&std::io::stdout()) {
            return Err(UsageError("-o -: stdout is a terminal; redirect it to a file or a pipe".into()).into());
        }
        use std::os::fd::AsFd as _;
        let fd = std::io::stdout().as_fd().try_clone_to_owned().context("duplicating stdout")?;
        return Ok(Output { store: None, path: PathBuf::from("-"), file: std::fs::File::from(fd) });
    }
    let store = match args.replayable {
        true => {
            let dir = args
                .output
                .clone()
                .unwrap_or_else(|| PathBuf::from(format!("trace_{}.rec", sysinfo::compact_utc(started.as_secs()))));
            Some(
                Store::create(&dir, args.force, run_as, args.private_output())
                    .map_err(|e| UsageError(crate::error::one_line(&e)))?
                    .zstd(zstd),
            )
        }
        false => None,
    };
    let path = match &store {
        Some(s) => s.trace_path(),
        None => args
            .compress
            .output_path(args.output.as_deref(), &sysinfo::compact_utc(started.as_secs()))
            .map_err(UsageError)?,
    };
    let mode = if args.private_output() { 0o600 } else { 0o644 };
    let file = spawn::create_output_file(&path, args.force || store.is_some(), run_as, mode)
        .map_err(|e| UsageError(crate::error::one_line(&e)))?;
    Ok(Output { store, path, file })
}

/// `--gpu-timestamps`: the FIFO and the command's environment, before the
/// command exists (the trace file removed if that fails).
fn start_gpu_timestamps(
    args: &RecordArgs,
    run_as: Option<&spawn::RunAs>,
    out_path: &Path,
) -> anyhow::Result<Option<GpuSession>> {
    if !args.gpu_timestamps {
        return Ok(None);
    }
    let g = GpuSession::start(args.cupti_injection.as_deref(), args.cupti_lib.as_deref(), args.gpu_sample, run_as)
        .inspect_err(|_| {
            remove_output(out_path);
        })?;
    if args.check_coverage {
        // SAFETY: still single-threaded (as GpuSession::start); the command inherits it.
        unsafe { std::env::set_var(tracer_cupti::driver_counts::ENV, g.driver_counts_path()) };
    }
    Ok(Some(g))
}

/// `--private`: an existing file (`--force`) keeps its mode on open, so set
/// it (never on a device such as `--force -o /dev/null`).
fn make_private(args: &RecordArgs, file: &std::fs::File, out_path: &Path) -> anyhow::Result<()> {
    if args.private_output() && file.metadata().is_ok_and(|m| m.is_file()) {
        use std::os::unix::fs::PermissionsExt as _;
        file.set_permissions(std::fs::Permissions::from_mode(0o600))
            .with_context(|| format!("making {} private", out_path.display()))?;
    }
    Ok(())
}

/// Creates the command first (stopped before exec), so that a command that
/// does not exist is reported before anything else; it exits without
/// running if setting up the probes fails. None with `-p`.
fn spawn_command(
    args: &RecordArgs,
    run_as: Option<&spawn::RunAs>,
    side: &crate::collect::side::Side,
) -> anyhow::Result<Option<spawn::Suspended>> {
    if args.pid.is_some() || args.command.is_empty() {
        return Ok(None);
    }
    let s = if to_stdout(args) {
        // The trace owns stdout: the command writes its own output to stderr.
        use std::os::fd::AsFd as _;
        spawn::spawn_suspended_with_env_stdout(&args.command, run_as, &side.env(), std::io::stderr().as_fd())
    } else {
        spawn::spawn_suspended_with_env(&args.command, run_as, &side.env())
    }
    .map_err(|e| crate::error::CommandNotFound(crate::error::one_line(&e)))?;
    Ok(Some(s))
}

/// The libcuda probed from the start: `--libcuda`, else the one the `-p`
/// process mapped, else the one the target's library path finds in tracer's
/// mount namespace. None when there is none: the libcuda files the selected
/// processes open (in their own mount namespaces) are probed as they open
/// them (libcuda_watch.rs).
fn find_libcuda(args: &RecordArgs) -> anyhow::Result<Option<PathBuf>> {
    let found = match (&args.libcuda, args.pid.and_then(procfs::mapped_libcuda)) {
        (Some(p), _) => return libcuda::resolve_libcuda(Some(p), None).map(Some),
        (None, Some(mapped)) => return Ok(Some(mapped)),
        (None, None) => libcuda::resolve_libcuda(None, procfs::target_ld_library_path(args.pid).as_deref()),
    };
    match found {
        Ok(p) => Ok(Some(p)),
        Err(e) => {
            log::info!("{}", crate::error::one_line(&e));
            Ok(None)
        }
    }
}

/// `--bpf-stats`: BPF run-time statistics, on while the returned fd is open.
fn enable_bpf_stats(args: &RecordArgs) -> anyhow::Result<Option<std::os::fd::OwnedFd>> {
    if !args.bpf_stats {
        return Ok(None);
    }
    let fd =
        aya::sys::enable_stats(aya::sys::Stats::RunTime).context("enabling BPF run-time statistics (--bpf-stats)")?;
    Ok(Some(fd))
}

/// Calls `f` with the probe options the arguments ask for, on the libcuda
/// at `libcuda_path` (empty: none yet).
fn with_probe_options<R>(
    args: &RecordArgs,
    libcuda_path: &Path,
    symbols: &libcuda::ExportedSymbols,
    scope: crate::collect::selection::KernelScope,
    f: impl FnOnce(&loader::Options) -> R,
) -> R {
    f(&loader::Options {
        scope,
        sched: !args.no_sched,
        libcuda: libcuda_path,
        symbols,
        ebpf_log: args.ebpf_log,
        ioctls: args.ioctls.then(|| loader::IoctlOptions {
            path: match args.ioctl_path {
                crate::cli::args::IoctlPathArg::Auto => loader::IoctlPath::Auto,
                crate::cli::args::IoctlPathArg::Kprobe => loader::IoctlPath::Kprobe,
                crate::cli::args::IoctlPathArg::Tracepoint => loader::IoctlPath::Tracepoint,
            },
            frontend_fn: &args.kprobe_function,
            uvm_fn: &args.kprobe_uvm_function,
        }),
        return_probe: &|id| probed_return(args, id),
        programs: match args.bench_probe {
            None => loader::Programs::Tracer,
            Some(b) => {
                use crate::cli::args::BenchProbe as B;
                let (entry, ret) = match b {
                    B::Empty => ("cu_empty", None),
                    B::EmptyReturn => ("cu_empty", Some("cu_empty_ret")),
                    B::Filter => ("cu_bench_filter", None),
                    B::Ring => ("cu_bench_ring", None),
                };
                loader::Programs::Bench { entry, ret }
            }
        },
        bench_producer: args
            .bench_producer
            .then(|| tracer_common::funcs::lookup("cuLaunchKernel").expect("in the table")),
        wakeup_bytes: match args.wakeup {
            crate::cli::args::Wakeup::Batched => args.buffer_size as u64 * 1024 * 1024 / 8,
            crate::cli::args::Wakeup::Every => 0,
        },
        select: &|id| left_out(args.all_functions, id).is_none(),
        counted: &|id| counted(args, id),
        ring_bytes: args.buffer_size * 1024 * 1024,
        replay: crate::collect::replayable::probes::Mode {
            replayable: args.replayable,
            capture_data: args.capture_data,
        },
    })
}

/// `--replayable`: the recorder, given the eBPF maps it fills (the recording
/// directory is removed if they cannot be taken).
fn start_recorder(
    args: &RecordArgs,
    store: Option<Store>,
    loaded: &mut loader::Loaded,
) -> anyhow::Result<Option<Recorder>> {
    let Some(st) = store else { return Ok(None) };
    let maps = match loaded.ebpf.as_mut() {
        Some(e) => crate::collect::replayable::recorder::KernelMaps::take(e),
        None => Err(anyhow::anyhow!("eBPF object gone")),
    };
    let maps = match maps {
        Ok(m) => m,
        Err(e) => {
            let _ = std::fs::remove_dir_all(&st.dir);
            return Err(e);
        }
    };
    Ok(Some(Recorder::new(st, Some(maps), args.capture_data, args.data_cap_mib.saturating_mul(1 << 20))))
}

/// Marks the command traced (with `-p`, the process, its descendants and
/// the NVIDIA files they opened before we attached); returns its pid (0
/// with `--system` or `--cgroup` and no command). The command was started
/// stopped before exec: nothing it does after exec can be missed once it
/// runs. Under `--system` and `--cgroup` the command is not marked: the
/// selection decides what is recorded.
fn mark_traced(
    args: &RecordArgs,
    scope: &Scope,
    suspended: Option<&spawn::Suspended>,
    loaded: &mut loader::Loaded,
) -> anyhow::Result<u32> {
    let root_pid = match (suspended, args.pid) {
        (Some(s), _) => s.pid,
        (None, Some(pid)) => pid,
        (None, None) => return Ok(0),
    };
    if scope.is_machine_wide() {
        // Selected processes join the traced set at their first call (the
        // kernel side notes their cgroup then).
        return Ok(root_pid);
    }
    loaded.mark_traced(root_pid)?;
    if args.pid.is_some() {
        let mut procs = procfs::descendants(root_pid);
        procs.push(root_pid);
        for &d in &procs {
            loaded.mark_traced(d)?;
            // NVIDIA files the process opened before we attached.
            for (fd, dev) in procfs::nvidia_fds(d) {
                let _ = loaded.nvfds.insert(nvdev::fd_key(d, fd), dev, 0);
            }
        }
        if !Path::new(&format!("/proc/{root_pid}")).exists() {
            return Err(UsageError(format!(
                "-p {root_pid}: the process exited while tracer was attaching; nothing to record"
            ))
            .into());
        }
    }
    Ok(root_pid)
}

/// The header line: the run and its probes, the side channels, GPU
/// timestamps and `--replayable`.
fn trace_header(
    args: &RecordArgs,
    loaded: &loader::Loaded,
    root_pid: u32,
    started: Duration,
    side: &mut crate::collect::side::Side,
    gpu: Option<&GpuSession>,
) -> Value {
    let mut header = header(args, &loaded.report, root_pid, started);
    side.header(&mut header);
    header["gpu_timestamps"] = gpu.map_or_else(crate::collect::gpu_timestamps::header_off, |g| g.header());
    if args.replayable {
        header["replayable"] = json!({
            "capture_data": args.capture_data,
            "data_cap_bytes": args.data_cap_mib.saturating_mul(1 << 20),
            "schema_version": tracer_format::recording::SCHEMA_VERSION,
        });
    }
    header
}

/// The call assembler: which functions have no return probe, copy value
/// lines (`--capture-data`), the ioctl decoder of the probed path.
fn assembler(args: &RecordArgs, loaded: &loader::Loaded) -> Assembler {
    let mut asm = Assembler::with_string_reader(Box::new(crate::collect::procmem::read_proc_string));
    asm.set_entry_only(|id| !probed_return(args, id));
    asm.value_copy_lines = args.capture_data;
    if args.counts {
        asm.exited_names = Some(Default::default());
    }
    asm.ioctls = crate::decode::ioctls::Ioctls::new(loaded.report.ioctl_path.unwrap_or("none"));
    if !args.no_sched {
        asm.sched = crate::decode::sched::SchedTracker::with_fd_reader(Box::new(crate::collect::procfs::fd_kind));
    }
    asm
}

/// The collector writing the trace file (zstd when asked or named so), with
/// the header written and flushed.
fn start_collector(
    args: &RecordArgs,
    file: std::fs::File,
    out_path: &Path,
    asm: Assembler,
    side: &mut crate::collect::side::Side,
    recorder: Option<Recorder>,
    header: Value,
) -> anyhow::Result<Collector> {
    let zstd = args.compress == crate::collect::zstd_out::Compress::Zstd;
    let file = crate::collect::zstd_out::TraceFile::new(file, out_path, zstd).context("starting the zstd stream")?;
    let mut col = Collector::new(asm, TraceWriter::new(file));
    col.side = side.receiver();
    col.replay = recorder;
    col.emit(header);
    col.writer.flush();
    Ok(col)
}

/// Says what is probed and where the trace goes, and warns about probed
/// functions that are single-stepped.
fn announce(args: &RecordArgs, loaded: &loader::Loaded, libcuda_path: Option<&Path>, scope: &Scope, out_path: &Path) {
    if args.quiet {
        return;
    }
    let who = match scope {
        Scope::Traced => String::new(),
        Scope::System => " of every process".to_string(),
        Scope::Cgroup(c) => format!(" of cgroup {}", c.path),
    };
    match libcuda_path {
        Some(p) => eprintln!(
            "tracer: probing {} driver functions{who} in {} (and any other libcuda the processes open); writing {}",
            loaded.report.probed.len(),
            p.display(),
            out_path.display()
        ),
        None => eprintln!(
            "tracer: no libcuda.so.1 in tracer's mount namespace: probing the driver functions{who} in each libcuda the processes open; writing {}",
            out_path.display()
        ),
    }
    if !loaded.report.single_stepped.is_empty() {
        eprintln!(
            "tracer: warning: {} probed functions do not start with `push %rbp` (each call costs ~10x more): {}",
            loaded.report.single_stepped.len(),
            loaded.report.single_stepped.join(", ")
        );
    }
}

/// Writes the footer line (counters, exit, power, markers, GPU timestamps,
/// replay coverage) and finishes the trace file; returns its write error.
fn finish_trace(
    col: &mut Collector,
    side: &mut crate::collect::side::Side,
    counters: &KernelCounters,
    exit: Option<&spawn::ExitInfo>,
    elapsed: Duration,
    gpu: Option<&mut GpuSession>,
    quiet: bool,
) -> Option<String> {
    let mut side_footer = side.finish(col, quiet);
    let mut footer = footer::footer(col, counters, exit, elapsed);
    for (k, v) in std::mem::take(&mut col.footer_extra) {
        footer[k.as_str()] = v;
    }
    footer["power"] = side_footer["power"].take();
    footer["markers"] = side_footer["markers"].take();
    if let Some(g) = gpu {
        footer["gpu_timestamps"] = g.finish(col);
    }
    if let Some(r) = &col.replay {
        footer["replay"] = r.footer();
    }
    // (The file already belongs to the invoking user: create_output_file.)
    col.emit(footer);
    col.writer.finish().map(|e| e.to_string())
}

/// `--counts`: the kernel's counts as lines, before the footer. An error
/// reading them is reported, the trace stays valid.
fn write_counts(col: &mut Collector, counts: Option<&crate::collect::counts::CountMaps>) {
    let Some(c) = counts else { return };
    // Through the writer only: the summary counts recorded call lines.
    match c.lines(&col.asm, sysinfo::clock_ns(libc::CLOCK_MONOTONIC)) {
        Ok(lines) => lines.iter().for_each(|l| col.writer.write(l)),
        Err(e) => eprintln!("tracer: reading the kernel's counts failed: {e:#}"),
    }
}

/// `--replayable`: writes the manifest, which describes the finished
/// recording; returns the summary line about it.
fn write_manifest(col: &Collector, header: Option<&Value>) -> Option<String> {
    let (r, h) = (col.replay.as_ref()?, header?);
    match r.write_manifest(h) {
        Ok(p) => Some(crate::collect::replayable::summary_line(r, &p)),
        Err(e) => {
            eprintln!("tracer: writing the recording's manifest failed: {e:#}");
            None
        }
    }
}

/// Prints the summary; the exit code is the command's, or 1 (at least) when
/// the trace could not be written whole.
fn report(
    args: &RecordArgs,
    col: &Collector,
    gpu: Option<&GpuSession>,
    out_path: &Path,
    manifest: Option<String>,
    write_err: Option<String>,
    exit: Option<spawn::ExitInfo>,
) -> i32 {
    if !args.quiet {
        // Readable kernel names (short, like Nsight's base names).
        eprint!(
            "{}",
            col.summary.render_with(crate::cli::args::NamesOpt { names: args.names, mangled: false }.style())
        );
        if let Some(g) = gpu {
            eprintln!("{}", g.lines.summary_line());
        }
        eprintln!("trace: {} ({} lines)", out_path.display(), col.writer.lines);
        if let Some(m) = manifest {
            eprintln!("{m}");
        }
    }
    if let Some(e) = write_err {
        eprintln!(
            "tracer: writing {} failed ({e}): {} lines written are complete and valid, {} were not written",
            out_path.display(),
            col.writer.lines,
            col.writer.dropped
        );
        return exit.map(|e| e.exit_code()).filter(|&c| c != 0).unwrap_or(1);
    }
    exit.map(|e| e.exit_code()).unwrap_or(0)
}

fn header(args: &RecordArgs, report: &loader::ProbeReport, root_pid: u32, started: Duration) -> Value {
    let command: Vec<String> = args.command.iter().map(|a| a.to_string_lossy().into_owned()).collect();
    let driver = sysinfo::driver_version();
    json!({
        "type": "header",
        "format": "tracer-jsonl",
        "format_version": FORMAT_VERSION,
        "tracer_version": env!("CARGO_PKG_VERSION"),
        "tracer_commit": env!("TRACER_GIT_COMMIT"),
        "command": command,
        "attach_pid": args.pid,
        "pid": root_pid,
        "host": sysinfo::hostname(),
        "os_kernel": sysinfo::kernel_release(),
        "driver": driver,
        "gpus": sysinfo::gpus(),
        "libcuda": report.libcuda.display().to_string(),
        "libcuda_exported_functions": report.exported_functions,
        "libcuda_push_rbp_functions": report.exported_push_rbp,
        "probed_functions": report.probed.len(),
        "single_stepped_functions": report.single_stepped,
        "not_probed_functions": report.not_probed,
        "uprobe_attach": report.attach_mode,
        "return_probes": args.returns().name(),
        "entry_only_functions": entry_only_functions(|id| probed_return(args, id) || counted(args, id), &report.probed),
        // --counts: functions counted in the kernel, without lines (count lines at the end).
        "counted_functions": report.probed.iter().filter(|n| tracer_common::funcs::lookup(n).is_some_and(|id| counted(args, id))).collect::<Vec<_>>(),
        "ioctl_path": report.ioctl_path,
        // Scheduler events of the traced threads (`sched` lines, decode/sched.rs).
        "sched": !args.no_sched,
        "sched_path": report.sched_path,
        "ioctl_path_refused": report.ioctl_path_refusals.iter().map(|(p, e)| json!({ "path": p, "error": e })).collect::<Vec<_>>(),
        "started_at": sysinfo::iso_utc(started.as_secs()),
        // ts fields are CLOCK_MONOTONIC ns: wall = ts - monotonic_ns + realtime_ns
        "clock": {
            "ts": "CLOCK_MONOTONIC ns (bpf_ktime_get_ns)",
            "monotonic_ns": sysinfo::clock_ns(libc::CLOCK_MONOTONIC),
            "realtime_ns": sysinfo::clock_ns(libc::CLOCK_REALTIME),
        },
        "ring_buffer_bytes": args.buffer_size as u64 * 1024 * 1024,
    })
}

/// Whether a probed function gets the return probe.
fn returns_probed(mode: Returns, id: FuncId) -> bool {
    match mode {
        Returns::All => true,
        Returns::None => false,
        Returns::Default => !tracer_common::funcs::is_entry_only_by_default(id),
    }
}

/// Whether a probed function gets the return probe in this recording: the
/// `--returns` choice, and under `--replayable` always for the loads and
/// GetFunction calls (rare; the layout chain needs their results).
fn probed_return(args: &RecordArgs, id: FuncId) -> bool {
    if counted(args, id) {
        return false;
    }
    let m = crate::collect::replayable::probes::Mode { replayable: args.replayable, capture_data: args.capture_data };
    returns_probed(args.returns(), id) || crate::collect::replayable::probes::needs_return(id, m)
}

/// `--counts`: whether a function is counted in the kernel instead of
/// recorded (the functions probed entry-only by default).
fn counted(args: &RecordArgs, id: FuncId) -> bool {
    args.counts && tracer_common::funcs::is_entry_only_by_default(id)
}

/// The probed symbols whose lines have no return code nor duration.
fn entry_only_functions(probed_return: impl Fn(FuncId) -> bool, probed: &[String]) -> Vec<String> {
    probed.iter().filter(|n| tracer_common::funcs::lookup(n).is_some_and(|id| !probed_return(id))).cloned().collect()
}
