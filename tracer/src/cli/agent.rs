//! `tracer agent --listen ADDR [-p PID]... [--all-libcuda] [-- CMD]`: keeps
//! the probes attached until SIGTERM/SIGINT, serves OpenMetrics at
//! /metrics (docs/agent.md), optionally writes duty-cycled trace files.
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::analysis::agent::snapshot;
use crate::collect::agent::options::{AgentOptions, MetricsPage};
use crate::collect::probe_options::ProbeOptions;
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

pub fn run(a: AgentArgs) -> anyhow::Result<i32> {
    check_args(&a)?;
    let code = crate::collect::agent::run::run(&options(a))?;
    eprintln!("tracer agent: stopped; every probe detached");
    Ok(code)
}

/// The agent's options from the arguments: the probes `tracer record`
/// makes by default, but the ring buffer, the state getters and the
/// scheduler events.
fn options(a: AgentArgs) -> AgentOptions {
    AgentOptions {
        listen: a.listen,
        web_config_file: a.web_config_file,
        web_enable_record: a.web_enable_record,
        web_record_min_interval: a.web_record_min_interval,
        web_max_connections: a.web_max_connections,
        page: MetricsPage {
            render: |m| openmetrics::render(&snapshot::families(m)),
            content_type: openmetrics::CONTENT_TYPE,
        },
        duty_cycle: a.duty_cycle,
        label_command_args: a.label_command_args,
        pids: a.pids,
        all_libcuda: a.all_libcuda,
        system: a.system,
        cgroup: a.cgroup,
        libcuda: a.libcuda,
        max_libcuda_files: a.max_libcuda_files,
        scan_interval_ms: a.scan_interval_ms,
        grace: a.grace,
        top_kernels: a.top_kernels,
        max_processes: a.max_processes,
        probes: ProbeOptions {
            sched: !a.no_sched,
            all_functions: a.all_functions,
            buffer_size_mib: a.buffer_size,
            ..Default::default()
        },
        no_power: a.no_power,
        power_interval_ms: a.power_interval_ms,
        record_dir: a.record_dir,
        record_every: a.record_every,
        record_for: a.record_for,
        record_file_max_mib: a.record_file_max_mib,
        record_dir_max_mib: a.record_dir_max_mib,
        as_root: a.as_root,
        command: a.command,
    }
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
