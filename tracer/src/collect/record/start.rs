//! The steps before the collection: GPU timestamps, the command (stopped
//! before exec), the libcuda, BPF statistics, the recorder, the traced
//! mark, the collector with its header, and what is said about them.
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use serde_json::Value;

use tracer_common::event::nvdev;

use crate::collect::collector::Collector;
use crate::collect::gpu_timestamps::GpuSession;
use crate::collect::record::options::RecordOptions;
use crate::collect::record::output::remove_output;
use crate::collect::replayable::recorder::Recorder;
use crate::collect::replayable::store::Store;
use crate::collect::selection::Scope;
use crate::collect::writer::TraceWriter;
use crate::collect::{loader, procfs, spawn};
use crate::decode::calls::Assembler;
use crate::error::UsageError;

/// The GPU side (`--gpu-timestamps`, or the default recording's adaptive
/// windows): the FIFO and the command's environment, before the command
/// exists (the trace file removed if an asked-for one fails). Returns the
/// session, or why there is none (the header's `reason`): the default's
/// failures (no injection library, another injection) are one line of the
/// end-of-run summary, and the recording goes on without GPU durations.
pub fn start_gpu_timestamps(
    o: &RecordOptions,
    run_as: Option<&spawn::RunAs>,
    out_path: &Path,
) -> anyhow::Result<(Option<GpuSession>, String)> {
    let Some(g) = &o.gpu else {
        let why = if o.attached() {
            "attached to running processes: nothing can be injected (GPU durations need a command tracer starts)"
        } else if o.replayable() {
            "off with --replayable unless asked for (--gpu-timestamps)"
        } else {
            "off (--no-gpu)"
        };
        return Ok((None, why.into()));
    };
    let s = match GpuSession::start(g.cupti_injection.as_deref(), g.cupti_lib.as_deref(), g.plan, g.implicit, run_as) {
        Ok(s) => s,
        Err(e) if g.implicit => {
            // said in the end-of-run summary (a start that fails for another reason says only that)
            let why = format!("{e:#}").replace("--gpu-timestamps: ", "").replace("--gpu-timestamps", "GPU durations");
            return Ok((None, why));
        }
        Err(e) => {
            remove_output(out_path);
            return Err(e);
        }
    };
    if g.check_coverage {
        // SAFETY: still single-threaded (as GpuSession::start); the command inherits it.
        unsafe { std::env::set_var(tracer_cupti::driver_counts::ENV, s.driver_counts_path()) };
    }
    Ok((Some(s), String::new()))
}

/// Creates the command first (stopped before exec), so that a command that
/// does not exist is reported before anything else; it exits without
/// running if setting up the probes fails. None with `-p`.
pub fn spawn_command(
    o: &RecordOptions,
    run_as: Option<&spawn::RunAs>,
    side: &crate::collect::side::Side,
) -> anyhow::Result<Option<spawn::Suspended>> {
    if o.attached() {
        return Ok(None);
    }
    let s = if o.to_stdout() {
        // The trace owns stdout: the command writes its own output to stderr.
        use std::os::fd::AsFd as _;
        spawn::spawn_suspended_with_env_stdout(&o.command, run_as, &side.env(), std::io::stderr().as_fd())
    } else {
        spawn::spawn_suspended_with_env(&o.command, run_as, &side.env())
    }
    .map_err(|e| crate::error::CommandNotFound(crate::error::one_line(&e)))?;
    Ok(Some(s))
}

/// The libcuda probed from the start: `--libcuda`, else the one the `-p`
/// process mapped, else the one the target's library path finds in tracer's
/// mount namespace. None when there is none: the libcuda files the selected
/// processes open (in their own mount namespaces) are probed as they open
/// them (libcuda_watch.rs).
pub fn find_libcuda(o: &RecordOptions) -> anyhow::Result<Option<PathBuf>> {
    let found = crate::collect::probe_options::find_libcuda(o.libcuda.as_deref(), o.pid.as_slice(), o.pid);
    match found {
        Ok(p) => Ok(Some(p)),
        Err(e) if o.libcuda.is_some() => Err(e),
        Err(e) => {
            log::info!("{}", crate::error::one_line(&e));
            Ok(None)
        }
    }
}

/// `--bpf-stats`: BPF run-time statistics, on while the returned fd is open.
pub fn enable_bpf_stats(o: &RecordOptions) -> anyhow::Result<Option<std::os::fd::OwnedFd>> {
    if !o.bpf_stats {
        return Ok(None);
    }
    match aya::sys::enable_stats(aya::sys::Stats::RunTime) {
        Ok(fd) => Ok(Some(fd)),
        Err(e) if o.bpf_stats_implied => {
            log::warn!(
                "BPF run-time statistics not available ({e}): the footer has no bpf_stats, and replay's compensated pacing removes only a default trap cost per probe hit"
            );
            Ok(None)
        }
        Err(e) => Err(anyhow::Error::new(e).context("enabling BPF run-time statistics (--bpf-stats)")),
    }
}

/// `--replayable`: the recorder, given the eBPF maps it fills (the recording
/// directory is removed if they cannot be taken).
pub fn start_recorder(
    o: &RecordOptions,
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
    Ok(Some(Recorder::new(st, Some(maps), o.probes.replay.capture_data, o.data_cap_mib.saturating_mul(1 << 20))))
}

/// Marks the command traced (with `-p`, the process, its descendants and
/// the NVIDIA files they opened before we attached); returns its pid (0
/// with `--system` or `--cgroup` and no command). The command was started
/// stopped before exec: nothing it does after exec can be missed once it
/// runs. Under `--system` and `--cgroup` the command is not marked: the
/// selection decides what is recorded.
pub fn mark_traced(
    o: &RecordOptions,
    scope: &Scope,
    suspended: Option<&spawn::Suspended>,
    loaded: &mut loader::Loaded,
) -> anyhow::Result<u32> {
    let root_pid = match (suspended, o.pid) {
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
    if o.pid.is_some() {
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

/// The collector writing the trace file (zstd when asked or named so), with
/// the header written and flushed.
pub fn start_collector(
    o: &RecordOptions,
    file: std::fs::File,
    out_path: &Path,
    asm: Assembler,
    side: &mut crate::collect::side::Side,
    recorder: Option<Recorder>,
    header: Value,
) -> anyhow::Result<Collector> {
    let zstd = o.compress == crate::collect::zstd_out::Compress::Zstd;
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
pub fn announce(
    o: &RecordOptions,
    loaded: &loader::Loaded,
    libcuda_path: Option<&Path>,
    scope: &Scope,
    out_path: &Path,
) {
    if o.quiet {
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
