//! A recording, `tracer record`'s sequence behind plain options
//! ([`options`]): the output created ([`output`]), the side channels, GPU
//! timestamps and the command stopped before exec, the libcuda found and
//! probed, the watch of further libcuda files, the recorder, the traced
//! mark and the collector with its [`header`] ([`start`]), the collection
//! loop, then the footer and the manifest ([`finish`]). What is printed at
//! the end is left to the caller, from the returned [`options::Outcome`].
pub mod durations;
pub mod finish;
pub mod header;
pub mod host_speed;
pub mod options;
pub mod output;
pub mod start;

use std::time::{Instant, SystemTime, UNIX_EPOCH};

use anyhow::Context as _;

use crate::collect::cgroups::CgroupTable;
use crate::collect::libcuda_watch;
use crate::collect::probe_options;
use crate::collect::{libcuda, privileges, session, spawn};
use crate::error::UsageError;
use finish::{coverage_footer, entry_points_footer, finish_trace, undecoded_calls, write_counts, write_manifest};
use options::{Outcome, RecordOptions};
use output::{Output, create_output, make_private, remove_output};
use start::{
    announce, enable_bpf_stats, find_libcuda, mark_traced, spawn_command, start_collector, start_gpu_timestamps,
    start_recorder,
};

/// Records until the command ends (or, without one, until Ctrl-C): every
/// step from the output's creation to the manifest.
pub fn record(o: &RecordOptions) -> anyhow::Result<Outcome> {
    let scope = o.selection.resolve().map_err(UsageError)?;
    privileges::check_privileges()?;
    // Signal handlers exist before the command does, so an early Ctrl-C
    // cannot kill tracer and leave the command running untraced.
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let mut signals = rt.block_on(async { spawn::StopSignals::new() }).context("installing signal handlers")?;
    let run_as = spawn::invoking_user(o.as_root)?;
    let started = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    let Output { store, path: out_path, file } = create_output(o, run_as.as_ref(), started)?;
    // Marker FIFO (its path goes into the command's environment) and NVML.
    let side_opts = crate::collect::side::SideOptions {
        no_markers: o.no_markers,
        attached: o.attached(),
        no_power: o.no_power,
        power_interval_ms: o.power_interval_ms,
    };
    let mut side = crate::collect::side::Side::new(&side_opts, run_as.as_ref());
    let (mut gpu, gpu_off) = start_gpu_timestamps(o, run_as.as_ref(), &out_path)?;
    let library =
        durations::start(o.gpu.as_ref().and_then(|g| g.library.clone()), gpu.as_mut(), run_as.as_ref(), o.quiet);
    make_private(o, &file, &out_path)?;
    let suspended = spawn_command(o, run_as.as_ref(), &side)?;
    // the command exists: from here on this thread gives way to it on a CPU
    crate::collect::own_sched::apply(crate::collect::own_sched::Role::Keeps);
    // Until the header is written, a failure removes the (empty) file we
    // created, so no trace that is not one is left behind.
    let cleanup = |e: anyhow::Error| {
        remove_output(&out_path);
        if let Some(s) = &store {
            let _ = std::fs::remove_dir_all(&s.dir);
        }
        e
    };
    let libcuda_path = find_libcuda(o).map_err(cleanup)?;
    let symbols = match &libcuda_path {
        Some(p) => libcuda::exported_functions(p).map_err(cleanup)?,
        None => libcuda::ExportedSymbols::default(),
    };
    let initial = libcuda_path.clone().unwrap_or_default();
    // BPF statistics stay on while this fd is open (until the recording ends).
    let _stats = enable_bpf_stats(o).map_err(cleanup)?;
    side.start(&side_opts, suspended.as_ref().map_or(o.pid.unwrap_or(0), |s| s.pid), &initial);
    let kscope = scope.kernel();
    let probes = &o.probes;
    let mut loaded =
        probes.with_loader_options(&initial, &symbols, kscope, crate::collect::loader::load).map_err(cleanup)?;
    let mut watch = probe_options::watch(probes, kscope);
    if libcuda_path.is_some() {
        watch.initial(&initial, loaded.report.probed.len());
    }
    let recorder = start_recorder(o, store, &mut loaded)?;
    let root_pid = mark_traced(o, &scope, suspended.as_ref(), &mut loaded).inspect_err(|_| remove_output(&out_path))?;
    // Libraries the selected processes mapped before the watch was on.
    for pid in libcuda_watch::running_selected(&scope, o.pid.as_slice()) {
        watch.scan(&mut loaded, pid);
    }
    let mut header = header::trace_header(o, &loaded, root_pid, started, &mut side, gpu.as_ref(), &gpu_off);
    header["selection"] = scope.header();
    let header_copy = recorder.as_ref().map(|_| header.clone());
    let asm = probe_options::assembler(probes, &loaded, true);
    let mut col = start_collector(o, file, &out_path, asm, &mut side, recorder, header)?;
    if o.check_coverage() {
        col.coverage = Some(Default::default());
    }
    if gpu.as_ref().is_some_and(|g| g.on_demand()) {
        col.launch_configs = Some(Default::default());
    }
    if probes.stacks.python && probes.stacks.any() {
        col.python = loaded.py_procs.take().map(crate::collect::stacks::python_procs::PythonProcs::new);
    }
    let all_functions = probes.all_functions;
    col.entry_points = Some(crate::collect::entry_points::EntryPoints::new(
        Box::new(move |id| probe_options::left_out(all_functions, id)),
        libcuda_path.as_deref().map(|p| (p, &symbols)),
    ));
    if scope.is_machine_wide() {
        col.cgroups = Some(CgroupTable::new(crate::collect::selection::cgroup_root(), loaded.pid_cgroup.take()));
    }
    announce(o, &loaded, libcuda_path.as_deref(), &scope, &out_path);

    let t0 = Instant::now();
    col.cpu_before_command = crate::collect::footer::cpu_times();
    let (exit, counters) = rt.block_on(session::collect(
        &mut loaded,
        &mut col,
        suspended,
        o.pid,
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
    if let Some(mut p) = col.python.take() {
        col.footer_extra.insert("python_layouts".into(), p.footer());
    }
    if probes.stacks.any()
        && let Some(m) = loaded.stack_counts.as_ref()
    {
        let sum = |i: u32| m.get(&i, 0).map(|v| v.iter().sum::<u64>()).unwrap_or(0);
        // Launches that took a stack and that were sampled out (0 and 0
        // with --all-launch-stacks: every one took one).
        col.footer_extra.insert(
            "stack_sampling".into(),
            serde_json::json!({
                "launches_sampled_in": sum(tracer_common::stack::count::SAMPLED_IN),
                "launches_sampled_out": sum(tracer_common::stack::count::SAMPLED_OUT),
                "own_switch_outs": sum(tracer_common::stack::count::OWN_SWITCH_OUTS),
                // stacks not taken while the collector was behind (tracer-ebpf stack.rs `shed`)
                "shed_under_load": {
                    "switch_outs": sum(tracer_common::stack::count::SHED_SWITCH_OUTS),
                    "samples": sum(tracer_common::stack::count::SHED_SAMPLES),
                },
            }),
        );
        col.footer_extra.insert("stack_walks".into(), crate::collect::stacks::sites::stack_walks_footer(sum));
    }
    if let Some(c) = &col.cgroups {
        let v = c.footer();
        col.footer_extra.insert("cgroups".into(), v);
    }
    write_counts(&mut col, loaded.counts.as_ref().filter(|_| probes.counts));
    let undecoded = undecoded_calls(&loaded);
    let mut entry_lines = entry_points_footer(&mut col, &loaded, &undecoded);
    if let Some(g) = gpu.as_ref().filter(|_| o.check_coverage()) {
        entry_lines.extend(coverage_footer(&mut col, &g.driver_counts_path(), &undecoded, all_functions));
    }
    let write_err = finish_trace(
        &mut col,
        &mut side,
        &counters,
        exit.as_ref(),
        t0.elapsed(),
        (gpu.as_mut(), library.as_ref(), host_speed::speed_use(o).as_ref()),
        o.quiet,
    );
    // The manifest last: it describes the finished recording.
    let manifest = write_manifest(&col, header_copy.as_ref());
    Ok(Outcome {
        summary: std::mem::take(&mut col.summary),
        gpu_summary: gpu.as_ref().map(|g| g.lines.summary_line()).or_else(|| {
            // the default's GPU side asked for but not had
            o.gpu.as_ref().map(|_| format!("gpu: no GPU durations (the idle figures are lower bounds): {gpu_off}"))
        }),
        trace_path: out_path.clone(),
        lines: col.writer.lines,
        dropped: col.writer.dropped,
        manifest,
        write_err,
        exit,
        entry_lines,
    })
}
