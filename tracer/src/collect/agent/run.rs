//! `tracer agent`'s sequence: the HTTP listener, the command stopped before
//! exec, the libcuda found and probed with the options `tracer record`
//! builds its own from (probe_options.rs), the watch of further libcuda
//! files, the selection, the metrics, power, recording windows, then the
//! loop until SIGTERM or SIGINT.
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Context as _;
use serde_json::json;

use crate::analysis::agent::{AgentMetrics, Options, counters::Caps};
use crate::collect::agent::options::AgentOptions;
use crate::collect::agent::recording::{Recording, RecordingOptions};
use crate::collect::agent::{Loop, Shared, exposure, http};
use crate::collect::libcuda_watch;
use crate::collect::probe_options;
use crate::collect::{libcuda, loader, privileges, spawn, sysinfo};
use crate::error::UsageError;

/// Runs the agent until SIGTERM or SIGINT; returns the exit code.
pub fn run(a: &AgentOptions) -> anyhow::Result<i32> {
    // A bad web config file is a usage error, found before any privilege is needed.
    let web = match &a.web_config_file {
        Some(p) => {
            Some(crate::collect::agent::webconfig::WebConfig::load(p).map_err(|e| UsageError(format!("{e:#}")))?)
        }
        None => None,
    };
    privileges::check_privileges()?;
    crate::collect::own_sched::apply(crate::collect::own_sched::Role::Keeps);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let (mut signals, mut usr1) = rt
        .block_on(async {
            anyhow::Ok((
                spawn::StopSignals::new()?,
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::user_defined1())?,
            ))
        })
        .context("installing signal handlers")?;
    let listener = http::bind(&a.listen).map_err(UsageError)?;
    let files = http::raise_open_files_limit();
    if files < a.web_max_connections as u64 + 1024 {
        eprintln!(
            "tracer agent: warning: at most {files} open files (ulimit -n): fewer than --web.max-connections {} and the probes need",
            a.web_max_connections
        );
    }
    let addr = listener.local_addr()?;
    // Basic auth, or TLS that answers only clients with a certificate of its CA.
    let authenticated = web.as_ref().is_some_and(|w| w.auth.is_some() || w.client_certs_required);
    if let Some(w) = exposure::open_record_warning(addr, a.web_enable_record, authenticated) {
        eprintln!("{w}");
    }
    let run_as = spawn::invoking_user(a.as_root)?;
    let suspended = match a.command.is_empty() {
        true => None,
        false => Some(
            spawn::spawn_suspended_with_env(&a.command, run_as.as_ref(), &[])
                .map_err(|e| crate::error::CommandNotFound(crate::error::one_line(&e)))?,
        ),
    };
    // --libcuda, else the first -p process's, else ld.so's.
    let libcuda_path = probe_options::find_libcuda(a.libcuda.as_deref(), &a.pids, None)?;
    let symbols = libcuda::exported_functions(&libcuda_path)?;
    // --system / --cgroup: the kernel selects (collect/selection.rs); else
    // the processes the selection below marks traced.
    // --all-libcuda selects in the kernel too: every process that calls a
    // probed libcuda file is counted from its first call, however short its
    // life (its /proc scan finds the other libcuda files mapped).
    let system = a.system || (a.all_libcuda && a.cgroup.is_none());
    let scope =
        crate::collect::selection::Selection { system, cgroup: a.cgroup.clone() }.resolve().map_err(UsageError)?;
    let kscope = scope.kernel();
    let mut loaded = a.probes.with_loader_options(&libcuda_path, &symbols, kscope, loader::load)?;
    if a.duty_cycle.is_some() && loaded.report.attach_mode == "perf" {
        // Closing one perf event per function waits a grace period each
        // (loader::detach_all): minutes per window.
        return Err(UsageError(
            "--duty-cycle needs uprobe_multi links (Linux 6.6 or later); this kernel attaches one perf event per function, too slow to detach every window".into(),
        )
        .into());
    }
    // Further libcuda files (other inodes) as the selected processes map or
    // open them: the same watch as `tracer record` (libcuda_watch.rs).
    let mut watch = probe_options::watch(&a.probes, kscope).with_max_files(a.max_libcuda_files.max(1));
    watch.initial(&libcuda_path, loaded.report.probed.len());
    // Those the already running selected processes mapped (with -p and
    // --all-libcuda the selection's first poll does it).
    if scope.is_machine_wide() {
        for pid in libcuda_watch::running_selected(&scope, &[]) {
            watch.scan(&mut loaded, pid);
        }
    }
    let mut selection = crate::collect::agent::selection::for_options(
        &scope,
        a.all_libcuda,
        &a.pids,
        suspended.as_ref().map(|s| s.pid),
        &libcuda_path,
    )?;
    // the machine's durations library: busy/idle inferred where it times the launches
    let lib_path = crate::collect::durations_library::default_path();
    let key = crate::collect::durations_library::machine_key(0);
    let (durations, note) = crate::collect::durations_library::entries_for(lib_path.as_deref(), key.as_ref());
    eprintln!("tracer agent: {note}");
    let mut metrics = AgentMetrics::new(Options {
        caps: Caps { kernel_names: if a.top_kernels > 0 { 10_000 } else { 0 }, live_allocations: 1 << 20 },
        durations: durations.map(Arc::new),
        top_kernels: a.top_kernels,
        max_processes: a.max_processes,
        grace_ns: a.grace.as_nanos() as u64,
    });
    if let Some((on, period)) = a.duty_cycle {
        metrics.sample(on.as_secs_f64() / period.as_secs_f64());
    }
    let shared = Arc::new(Shared {
        metrics: std::sync::Mutex::new(metrics),
        record_requested: AtomicBool::new(false),
        recording_active: AtomicBool::new(false),
        http: Default::default(),
    });
    let power = start_power(a, &libcuda_path, &shared);
    let recording = match &a.record_dir {
        Some(dir) => Some(Recording::new(
            RecordingOptions {
                dir: dir.clone(),
                every: a.record_every,
                window: a.record_for,
                file_max_bytes: a.record_file_max_mib << 20,
                dir_max_bytes: a.record_dir_max_mib << 20,
            },
            std::time::Instant::now(),
        )?),
        None => None,
    };
    let scheme = if web.as_ref().is_some_and(|w| w.tls.is_some()) { "https" } else { "http" };
    serve(listener, &shared, a, web)?;
    let command_pid = match suspended {
        Some(s) => {
            loaded.mark_traced(s.pid)?;
            let pid = s.pid;
            // The child is reaped by the loop (waitpid) once it exits.
            std::mem::forget(s.release()?);
            Some(pid)
        }
        None => None,
    };
    eprintln!(
        "tracer agent: probing {} driver functions in {}; tracing {}; serving {scheme}://{addr}/metrics",
        loaded.report.probed.len(),
        libcuda_path.display(),
        selection.describe()
    );
    let header_libcuda = libcuda_path.display().to_string();
    let facts = crate::collect::agent::procinfo::Facts {
        comm: loaded.pid_comm.take(),
        cgroups: crate::collect::cgroups::CgroupTable::new(
            crate::collect::selection::cgroup_root(),
            loaded.pid_cgroup.take(),
        ),
        command_args: a.label_command_args,
    };
    // No file names: the agent's counters name causes only.
    let asm = probe_options::assembler(&a.probes, &loaded, false);
    let mut lp = Loop {
        loaded: &mut loaded,
        asm,
        selection: selection.as_mut(),
        watch,
        shared: shared.clone(),
        recording,
        scan_interval: Duration::from_millis(a.scan_interval_ms.max(10)),
        power,
        window_header: Box::new(move || window_header(&header_libcuda)),
        command_pid,
        missing_before: Default::default(),
        facts,
        duty: a.duty_cycle.map(|(on, period)| crate::collect::agent::Duty::new(on, period)),
    };
    rt.block_on(lp.run(&mut signals, &mut usr1))
}

/// NVML power samples into the metrics (through the loop); unavailable is
/// a metric with its reason, never an error.
fn start_power(
    a: &AgentOptions,
    libcuda: &std::path::Path,
    shared: &Shared,
) -> Option<std::sync::mpsc::Receiver<serde_json::Value>> {
    let mut m = shared.metrics.lock().unwrap_or_else(|e| e.into_inner());
    if a.no_power {
        m.health.power_unavailable = Some("--no-power".into());
        return None;
    }
    let (tx, rx) = std::sync::mpsc::sync_channel(1024);
    let opts =
        crate::collect::power::PowerOptions { interval_ms: a.power_interval_ms, libcuda: Some(libcuda.to_path_buf()) };
    let mut p = crate::collect::power::Power::start(&opts, std::process::id(), tx);
    let h = p.header().clone();
    if h["available"] != true {
        m.health.power_unavailable = Some(h["reason"].as_str().unwrap_or("NVML unavailable").to_string());
        return None;
    }
    // The sampler runs until the agent exits.
    std::mem::forget(p);
    Some(rx)
}

/// Starts the HTTP thread: /metrics, and `POST /record` if enabled.
fn serve(
    listener: std::net::TcpListener,
    shared: &Arc<Shared>,
    a: &AgentOptions,
    web: Option<crate::collect::agent::webconfig::WebConfig>,
) -> anyhow::Result<()> {
    let s1 = shared.clone();
    let record: Option<Box<dyn Fn() -> http::RecordAnswer + Send + Sync>> = match a.web_enable_record {
        false => None,
        true => Some(Box::new(record_handler(shared.clone(), a.record_for, a.web_record_min_interval))),
    };
    let (tls, auth) = web.map_or((None, None), |w| (w.tls, w.auth));
    let render = a.page.render;
    let server = http::Server {
        handlers: http::Handlers {
            metrics: Box::new(move || {
                let m = s1.metrics.lock().unwrap_or_else(|e| e.into_inner());
                render(&m)
            }),
            content_type: a.page.content_type,
            record,
        },
        limits: http::Limits { max_connections: a.web_max_connections.max(1), ..Default::default() },
        tls,
        auth,
        stats: shared.http.clone(),
    };
    http::spawn(listener, Arc::new(server)).context("starting the HTTP thread")
}

/// `POST /record`: 409 while a window is open or requested, 429 within
/// `min_interval` of the last accepted request, else a window now.
fn record_handler(
    shared: Arc<Shared>,
    window: Duration,
    min_interval: Duration,
) -> impl Fn() -> http::RecordAnswer + Send + Sync {
    let last = std::sync::Mutex::new(None::<std::time::Instant>);
    move || {
        if shared.recording_active.load(Ordering::Relaxed) || shared.record_requested.load(Ordering::Relaxed) {
            return http::RecordAnswer::Busy("a recording window is open: wait for it to end\n".into());
        }
        let mut last = last.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(t) = *last
            && t.elapsed() < min_interval
        {
            return http::RecordAnswer::TooSoon((min_interval - t.elapsed()).as_secs_f64().ceil().max(1.0) as u64);
        }
        *last = Some(std::time::Instant::now());
        shared.record_requested.store(true, Ordering::Relaxed);
        http::RecordAnswer::Started(format!("recording window of {} s requested\n", window.as_secs_f64()))
    }
}

/// The header line of a duty-cycled trace file.
fn window_header(libcuda: &str) -> serde_json::Value {
    json!({
        "type": "header",
        "format": "tracer-jsonl",
        "format_version": tracer_format::header::FORMAT_VERSION,
        "tracer_version": env!("CARGO_PKG_VERSION"),
        "tracer_commit": env!("TRACER_GIT_COMMIT"),
        "agent_window": true,
        "command": [],
        "host": sysinfo::hostname(),
        "os_kernel": sysinfo::kernel_release(),
        "driver": sysinfo::driver_version(),
        "gpus": sysinfo::gpus(),
        "libcuda": libcuda,
        "return_probes": "default",
        "started_at": sysinfo::iso_utc(
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_secs()
        ),
        "clock": {
            "ts": "CLOCK_MONOTONIC ns (bpf_ktime_get_ns)",
            "monotonic_ns": sysinfo::clock_ns(libc::CLOCK_MONOTONIC),
            "realtime_ns": sysinfo::clock_ns(libc::CLOCK_REALTIME),
        },
    })
}
