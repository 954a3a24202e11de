//! The trace's header line: the run and its probes, the side channels, GPU
//! timestamps and `--replayable`.
use std::time::Duration;

use serde_json::{Value, json};

use tracer_common::funcs::FuncId;

use crate::collect::gpu_timestamps::GpuSession;
use crate::collect::loader;
use crate::collect::record::options::RecordOptions;
use crate::collect::sysinfo;

/// Trace format version written in the header.
pub const FORMAT_VERSION: u32 = 1;

/// The header line, with the side channels', GPU timestamps' and the
/// recording's parts.
pub fn trace_header(
    o: &RecordOptions,
    loaded: &loader::Loaded,
    root_pid: u32,
    started: Duration,
    side: &mut crate::collect::side::Side,
    gpu: Option<&GpuSession>,
    gpu_off: &str,
) -> Value {
    let mut header = header(o, &loaded.report, root_pid, started);
    // the recorder's own process: its threads are marked in `held_by` ("recorder": true)
    header["recorder_pid"] = json!(std::process::id());
    // The host's CPU speed (a fixed single-thread workload, ~10-30 ms; the command is still
    // suspended): `--host-speed FILE` in replay and whatif divides it by the target's.
    header["host_calibration"] = json!(tracer_format::pacing::HostCalibration::measure(None));
    // The trap per probe hit on this machine (collect/trap_cost.rs, some 30 ms) where compensated
    // pacing will need it: recordings with BPF statistics (--replayable turns them on); not under
    // the benchmark's empty programs, whose own runs the benchmark counts. Only those load the
    // empty programs it attaches (ProbeOptions::trap_programs).
    if o.probes.trap_programs {
        use crate::collect::trap_cost;
        match loader::trap_programs(loaded).and_then(trap_cost::measure) {
            Ok(t) => t.header_fields(&mut header),
            Err(e) => header["probe_trap"] = json!({ "error": format!("{e:#}") }),
        }
        let sizes = trap_cost::cold_sizes();
        if !sizes.is_empty() && header["probe_trap"].is_object() {
            header["probe_trap"]["cold"] =
                match loader::trap_programs(loaded).and_then(|p| trap_cost::measure_cold(p, &sizes)) {
                    Ok(c) => trap_cost::cold_fields(&c),
                    Err(e) => json!({ "error": format!("{e:#}") }),
                };
        }
    }
    side.header(&mut header);
    header["gpu_timestamps"] = gpu.map_or_else(|| crate::collect::gpu_timestamps::header_off(gpu_off), |g| g.header());
    if o.replayable() {
        header["replayable"] = json!({
            "capture_data": o.probes.replay.capture_data,
            "data_cap_bytes": o.data_cap_mib.saturating_mul(1 << 20),
            "schema_version": tracer_format::recording::SCHEMA_VERSION,
        });
    }
    header
}

fn header(o: &RecordOptions, report: &loader::ProbeReport, root_pid: u32, started: Duration) -> Value {
    let command: Vec<String> = o.command.iter().map(|a| a.to_string_lossy().into_owned()).collect();
    let driver = sysinfo::driver_version();
    let p = &o.probes;
    json!({
        "type": "header",
        "format": "tracer-jsonl",
        "format_version": FORMAT_VERSION,
        "tracer_version": env!("CARGO_PKG_VERSION"),
        "tracer_commit": env!("TRACER_GIT_COMMIT"),
        "command": command,
        "attach_pid": o.pid,
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
        "return_probes": p.returns.name(),
        "entry_only_functions": entry_only_functions(|id| p.probed_return(id) || p.counted(id), &report.probed),
        // --counts: functions counted in the kernel, without lines (count lines at the end).
        "counted_functions": report.probed.iter().filter(|n| tracer_common::funcs::lookup(n).is_some_and(|id| p.counted(id))).collect::<Vec<_>>(),
        "ioctl_path": report.ioctl_path,
        // Scheduler events of the traced threads (`sched` lines, decode/sched.rs).
        "sched": p.sched,
        "sched_path": report.sched_path,
        "ioctl_path_refused": report.ioctl_path_refusals.iter().map(|(p, e)| json!({ "path": p, "error": e })).collect::<Vec<_>>(),
        "started_at": sysinfo::iso_utc(started.as_secs()),
        // ts fields are CLOCK_MONOTONIC ns: wall = ts - monotonic_ns + realtime_ns
        "clock": {
            "ts": "CLOCK_MONOTONIC ns (bpf_ktime_get_ns)",
            "monotonic_ns": sysinfo::clock_ns(libc::CLOCK_MONOTONIC),
            "realtime_ns": sysinfo::clock_ns(libc::CLOCK_REALTIME),
        },
        "ring_buffer_bytes": p.buffer_size_mib as u64 * 1024 * 1024,
        "stacks": stacks_header(&p.stacks, report),
    })
}

/// What stacks are taken (docs/trace-format.md, Header): `null` without.
fn stacks_header(s: &crate::collect::stacks::sites::StackOptions, report: &loader::ProbeReport) -> Value {
    if !s.any() {
        return Value::Null;
    }
    json!({
        "native": s.native,
        // Asked for and loaded; else `python_error` says why not.
        "python": s.python && report.python_frames_error.is_none(),
        "python_error": report.python_frames_error,
        "calls": if s.calls { crate::collect::stacks::sites::stack_functions() } else { vec![] },
        "switch_outs": s.switches,
        // On-CPU samples per second and CPU (0: off, or the perf events
        // were refused: `sample_error`).
        "sample_hz": report.stack_sample_hz,
        "sample_error": report.stack_sample_error,
        // Copies, sets, synchronizations and switch-outs: every one takes a
        // stack; launches every one, or sampled (docs/stacks.md).
        "sampling": if s.every_launch {
            json!({ "launches": "all" })
        } else {
            json!({
                "launches": "sampled",
                "idle_us": crate::collect::stacks::sites::LAUNCH_IDLE_US,
                "interval_ms": crate::collect::stacks::sites::LAUNCH_INTERVAL_MS,
            })
        },
    })
}

/// The probed symbols whose lines have no return code nor duration.
fn entry_only_functions(probed_return: impl Fn(FuncId) -> bool, probed: &[String]) -> Vec<String> {
    probed.iter().filter(|n| tracer_common::funcs::lookup(n).is_some_and(|id| !probed_return(id))).cloned().collect()
}
