//! `tracer agent --listen ADDR [-p PID]... [--all-libcuda] [-- CMD]`: keeps
//! the probes attached until SIGTERM/SIGINT, serves OpenMetrics at
//! /metrics (docs/agent.md), optionally writes duty-cycled trace files.
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Context as _;
use clap::Args;
use serde_json::json;

use crate::analysis::agent::{AgentMetrics, Options, counters::Caps, snapshot};
use crate::collect::agent::recording::{Recording, RecordingOptions};
use crate::collect::agent::selection::{MappingLibcuda, Pids, Selection};
use crate::collect::agent::{Loop, Shared, http};
use crate::collect::libcuda_watch::{self, Watch};
use crate::collect::{libcuda, loader, privileges, procfs, spawn, sysinfo};
use crate::error::UsageError;
use crate::export::openmetrics;

#[derive(Args, Debug, Clone)]
pub struct AgentArgs {
    /// Address to serve /metrics on: HOST:PORT, :PORT (every address, IPv6
    /// and IPv4), 0.0.0.0:PORT or [::]:PORT; port 0 picks one (printed on stderr).
    #[arg(long, value_name = "ADDR")]
    pub listen: String,
    /// TLS and basic auth: a Prometheus exporter-toolkit web config file
    /// (tls_server_config.cert_file/key_file, basic_auth_users with bcrypt
    /// hashes; docs/agent.md).
    #[arg(long = "web.config.file", value_name = "FILE")]
    pub web_config_file: Option<PathBuf>,
    /// Serve POST /record (a recording window now; needs --record-dir).
    /// Off by default: the endpoint answers 403.
    #[arg(long = "web.enable-record", requires = "record_dir")]
    pub web_enable_record: bool,
    /// POST /record is accepted at most once in this long (429 otherwise).
    #[arg(long = "web.record-min-interval", value_name = "DURATION", default_value = "60s", value_parser = duration_arg)]
    pub web_record_min_interval: Duration,
    /// HTTP connections open at once at most (at the cap, the oldest one not
    /// being answered is closed to make room).
    #[arg(long = "web.max-connections", value_name = "N", default_value_t = 1024)]
    pub web_max_connections: usize,
    /// Attach the libcuda probes ON in every PERIOD only (e.g. 1s/10s): the
    /// counters count the calls of the windows (exact within each), the
    /// series are labelled sampled="true", and tracer_*_rate gauges give
    /// the last window's rates (docs/agent.md).
    #[arg(long, value_name = "ON/PERIOD", value_parser = duty_cycle_arg)]
    pub duty_cycle: Option<(Duration, Duration)>,
    /// The `command` label carries the program's arguments too (they may
    /// hold secrets; default: the executable's name only).
    #[arg(long)]
    pub label_command_args: bool,
    /// Trace this running process and its descendants (repeatable).
    #[arg(short, long = "pid", value_name = "PID")]
    pub pids: Vec<u32>,
    /// Trace every process that calls a probed libcuda, selected in the
    /// kernel at its first call (however short its life), and probe the
    /// other libcuda.so* files processes map, found by scanning /proc every
    /// --scan-interval-ms.
    #[arg(long)]
    pub all_libcuda: bool,
    /// Every process on the machine that calls the probed libcuda, also
    /// those started later, selected in the kernel (docs/containers.md).
    #[arg(long, conflicts_with = "cgroup")]
    pub system: bool,
    /// The processes of one cgroup v2 (a container or pod) and its
    /// children, selected in the kernel by cgroup id (docs/containers.md).
    #[arg(long, value_name = "PATH")]
    pub cgroup: Option<PathBuf>,
    /// Probe this libcuda (default: the one the first -p process mapped,
    /// else the one ld.so would load).
    #[arg(long, value_name = "PATH")]
    pub libcuda: Option<PathBuf>,
    /// Probe at most this many libcuda files (distinct inodes: the one
    /// chosen at start and those the selected processes map or open later);
    /// a file past the limit is not probed (tracer_libcuda_files_not_probed_total).
    #[arg(long, value_name = "N", default_value_t = 64)]
    pub max_libcuda_files: usize,
    /// How often --all-libcuda looks for libcuda files mapped by processes.
    #[arg(long, value_name = "MS", default_value_t = 1000)]
    pub scan_interval_ms: u64,
    /// Series of an exited process stay this long.
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = duration_arg)]
    pub grace: Duration,
    /// Also export launches by kernel name for each process's N most launched kernels.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub top_kernels: usize,
    /// Processes given series at most (more are counted in tracer_processes_not_kept_total).
    #[arg(long, value_name = "N", default_value_t = 4096)]
    pub max_processes: usize,
    /// Ring buffer size in MiB (a power of two).
    #[arg(long, value_name = "MIB", default_value_t = 64)]
    pub buffer_size: u32,
    /// Also probe the per-launch state getters (costlier).
    #[arg(long)]
    pub all_functions: bool,
    /// No NVML power sampling.
    #[arg(long)]
    pub no_power: bool,
    /// No scheduler events (tracer_off_cpu_seconds_total stays empty).
    #[arg(long)]
    pub no_sched: bool,
    /// NVML sampling period.
    #[arg(long, value_name = "MS", default_value_t = 1000)]
    pub power_interval_ms: u64,
    /// Write duty-cycled trace files (zstd JSONL) into this directory.
    #[arg(long, value_name = "DIR")]
    pub record_dir: Option<PathBuf>,
    /// Start a recording window this often (without it: only on SIGUSR1 or POST /record).
    #[arg(long, value_name = "DURATION", value_parser = duration_arg, requires = "record_dir")]
    pub record_every: Option<Duration>,
    /// Length of a recording window.
    #[arg(long, value_name = "DURATION", default_value = "2s", value_parser = duration_arg)]
    pub record_for: Duration,
    /// Cap of one trace file (MiB, compressed); the window ends there.
    #[arg(long, value_name = "MIB", default_value_t = 256)]
    pub record_file_max_mib: u64,
    /// Cap of all trace files in --record-dir (MiB): the oldest are deleted.
    #[arg(long, value_name = "MIB", default_value_t = 4096)]
    pub record_dir_max_mib: u64,
    /// Run the command as root (under sudo; default: the invoking user).
    #[arg(long)]
    pub as_root: bool,
    /// A command to start and trace (the agent keeps running after it ends).
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<OsString>,
}

/// `2s`, `500ms`, `1m`, `1h`, or plain seconds (`1.5`).
pub fn duration_arg(s: &str) -> Result<Duration, String> {
    let (num, unit) = match s.find(|c: char| c.is_ascii_alphabetic()) {
        Some(i) => s.split_at(i),
        None => (s, "s"),
    };
    let v: f64 = num.parse().map_err(|_| format!("{s:?}: not a duration (e.g. 2s, 500ms, 1m)"))?;
    let secs = match unit {
        "ms" => v / 1e3,
        "s" => v,
        "m" => v * 60.0,
        "h" => v * 3600.0,
        _ => return Err(format!("{s:?}: unknown unit {unit:?} (ms, s, m, h)")),
    };
    if !secs.is_finite() || secs < 0.0 {
        return Err(format!("{s:?}: not a duration (e.g. 2s, 500ms, 1m)"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// `1s/10s`: (on, period), 0 < on < period.
pub fn duty_cycle_arg(s: &str) -> Result<(Duration, Duration), String> {
    let (on, period) = s.split_once('/').ok_or_else(|| format!("{s:?}: ON/PERIOD, e.g. 1s/10s"))?;
    let (on, period) = (duration_arg(on)?, duration_arg(period)?);
    if on.is_zero() || on >= period {
        return Err(format!("{s:?}: ON must be more than 0 and less than PERIOD (e.g. 1s/10s)"));
    }
    Ok((on, period))
}

fn check_args(a: &AgentArgs) -> anyhow::Result<()> {
    if a.pids.is_empty() && !a.all_libcuda && !a.system && a.cgroup.is_none() && a.command.is_empty() {
        return Err(UsageError(
            "tracer agent: nothing to trace: give -p PID, --all-libcuda, --system, --cgroup PATH or -- CMD".into(),
        )
        .into());
    }
    for p in &a.pids {
        crate::cli::arg_checks::check_pid(*p)?;
    }
    crate::cli::arg_checks::check_buffer_size(a.buffer_size)?;
    if a.record_dir.is_some() && a.record_for.is_zero() {
        return Err(UsageError("--record-for 0: a recording window needs a length".into()).into());
    }
    Ok(())
}

/// The libcuda to probe: --libcuda, else the first -p process's, else ld.so's.
fn find_libcuda(a: &AgentArgs) -> anyhow::Result<PathBuf> {
    match (&a.libcuda, a.pids.iter().find_map(|&p| procfs::mapped_libcuda(p))) {
        (Some(p), _) => libcuda::resolve_libcuda(Some(p), None),
        (None, Some(mapped)) => Ok(mapped),
        (None, None) => libcuda::resolve_libcuda(None, procfs::target_ld_library_path(None).as_deref()),
    }
}

pub fn run(a: AgentArgs) -> anyhow::Result<i32> {
    check_args(&a)?;
    // A bad web config file is a usage error, found before any privilege is needed.
    let web = match &a.web_config_file {
        Some(p) => {
            Some(crate::collect::agent::webconfig::WebConfig::load(p).map_err(|e| UsageError(format!("{e:#}")))?)
        }
        None => None,
    };
    privileges::check_privileges()?;
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
    let run_as = spawn::invoking_user(a.as_root)?;
    let suspended = match a.command.is_empty() {
        true => None,
        false => Some(
            spawn::spawn_suspended_with_env(&a.command, run_as.as_ref(), &[])
                .map_err(|e| crate::error::CommandNotFound(crate::error::one_line(&e)))?,
        ),
    };
    let libcuda_path = find_libcuda(&a)?;
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
    let mut loaded = with_probe_options(&a, &libcuda_path, &symbols, kscope, loader::load)?;
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
    let mut watch = Watch::new(Box::new(|loaded: &mut loader::Loaded, via: &Path| {
        let syms = libcuda::exported_functions(via)?;
        let r = with_probe_options(&a, via, &syms, kscope, |o| loader::attach_libcuda(loaded, o))?;
        Ok(r.probed.len())
    }))
    .with_max_files(a.max_libcuda_files.max(1));
    watch.initial(&libcuda_path, loaded.report.probed.len());
    // Those the already running selected processes mapped (with -p and
    // --all-libcuda the selection's first poll does it).
    if scope.is_machine_wide() {
        for pid in libcuda_watch::running_selected(&scope, &[]) {
            watch.scan(&mut loaded, pid);
        }
    }
    let mut selection = selection(&a, &scope, suspended.as_ref().map(|s| s.pid), &libcuda_path)?;
    let mut metrics = AgentMetrics::new(Options {
        caps: Caps { kernel_names: if a.top_kernels > 0 { 10_000 } else { 0 }, live_allocations: 1 << 20 },
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
    let power = start_power(&a, &libcuda_path, &shared);
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
    serve(listener, &shared, &a, web)?;
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
    let mut lp = Loop {
        loaded: &mut loaded,
        asm: assembler(&a),
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
    let code = rt.block_on(lp.run(&mut signals, &mut usr1))?;
    eprintln!("tracer agent: stopped; every probe detached");
    Ok(code)
}

/// Calls `f` with the agent's probe options on the libcuda at `libcuda`.
fn with_probe_options<R>(
    a: &AgentArgs,
    libcuda: &Path,
    symbols: &libcuda::ExportedSymbols,
    scope: crate::collect::selection::KernelScope,
    f: impl FnOnce(&loader::Options) -> R,
) -> R {
    f(&loader::Options {
        scope,
        sched: !a.no_sched,
        counted: &|_| false,
        libcuda,
        symbols,
        ebpf_log: false,
        ioctls: None,
        return_probe: &|id| !tracer_common::funcs::is_entry_only_by_default(id),
        programs: loader::Programs::Tracer,
        bench_producer: None,
        wakeup_bytes: a.buffer_size as u64 * 1024 * 1024 / 8,
        select: &|id| a.all_functions || !tracer_common::funcs::is_noisy(id),
        ring_bytes: a.buffer_size * 1024 * 1024,
        replay: crate::collect::replayable::probes::Mode { replayable: false, capture_data: false },
    })
}

fn selection(
    a: &AgentArgs,
    scope: &crate::collect::selection::Scope,
    command: Option<u32>,
    libcuda: &Path,
) -> anyhow::Result<Box<dyn Selection>> {
    if scope.is_machine_wide() && !a.all_libcuda {
        return Ok(Box::new(KernelSide(scope.header().to_string())));
    }
    let mut pids = a.pids.clone();
    pids.extend(command);
    match a.all_libcuda {
        true => Ok(Box::new(Both(Pids::new(pids), MappingLibcuda::new(libcuda)?))),
        false => Ok(Box::new(Pids::new(pids))),
    }
}

/// `--system` / `--cgroup`: the probes select in the kernel; nothing to mark.
struct KernelSide(String);

impl Selection for KernelSide {
    fn poll(&mut self) -> Vec<u32> {
        vec![]
    }
    fn describe(&self) -> String {
        format!("selected in the kernel: {}", self.0)
    }
    fn kernel_side(&self) -> bool {
        true
    }
}

/// `-p` and `--all-libcuda` together.
struct Both(Pids, MappingLibcuda);

impl Selection for Both {
    fn poll(&mut self) -> Vec<u32> {
        let mut v = self.0.poll();
        v.extend(self.1.poll());
        v
    }
    fn describe(&self) -> String {
        format!("every process that calls a probed libcuda (selected in the kernel); {}", self.1.describe())
    }
}

fn assembler(a: &AgentArgs) -> crate::decode::calls::Assembler {
    let mut asm =
        crate::decode::calls::Assembler::with_string_reader(Box::new(crate::collect::procmem::read_proc_string));
    asm.set_entry_only(tracer_common::funcs::is_entry_only_by_default);
    if !a.no_sched {
        // No file names: the agent's counters name causes only.
        asm.sched.enabled = true;
    }
    asm
}

/// NVML power samples into the metrics (through the loop); unavailable is
/// a metric with its reason, never an error.
fn start_power(a: &AgentArgs, libcuda: &Path, shared: &Shared) -> Option<std::sync::mpsc::Receiver<serde_json::Value>> {
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

fn serve(
    listener: std::net::TcpListener,
    shared: &Arc<Shared>,
    a: &AgentArgs,
    web: Option<crate::collect::agent::webconfig::WebConfig>,
) -> anyhow::Result<()> {
    let s1 = shared.clone();
    let record: Option<Box<dyn Fn() -> http::RecordAnswer + Send + Sync>> = match a.web_enable_record {
        false => None,
        true => Some(Box::new(record_handler(shared.clone(), a.record_for, a.web_record_min_interval))),
    };
    let (tls, auth) = web.map_or((None, None), |w| (w.tls, w.auth));
    let server = http::Server {
        handlers: http::Handlers {
            metrics: Box::new(move || {
                let m = s1.metrics.lock().unwrap_or_else(|e| e.into_inner());
                openmetrics::render(&snapshot::families(&m))
            }),
            content_type: openmetrics::CONTENT_TYPE,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(duration_arg("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(duration_arg("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(duration_arg("1m"), Ok(Duration::from_secs(60)));
        assert_eq!(duration_arg("1.5"), Ok(Duration::from_millis(1500)));
        assert!(duration_arg("2d").unwrap_err().contains("unknown unit"));
        assert!(duration_arg("-1s").is_err());
        assert_eq!(duty_cycle_arg("1s/10s"), Ok((Duration::from_secs(1), Duration::from_secs(10))));
        assert_eq!(duty_cycle_arg("500ms/2s"), Ok((Duration::from_millis(500), Duration::from_secs(2))));
        assert!(duty_cycle_arg("10s/1s").unwrap_err().contains("less than PERIOD"));
        assert!(duty_cycle_arg("1s").unwrap_err().contains("ON/PERIOD"));
    }
}
