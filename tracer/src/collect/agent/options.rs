//! What `tracer agent` is asked to do (its arguments, checked and converted
//! by the cli).
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use crate::analysis::agent::AgentMetrics;
use crate::collect::probe_options::ProbeOptions;

/// The agent's options.
#[derive(Debug, Clone)]
pub struct AgentOptions {
    /// Where /metrics is served (HOST:PORT, :PORT).
    pub listen: String,
    /// TLS and basic auth (a Prometheus exporter-toolkit web config file).
    pub web_config_file: Option<PathBuf>,
    /// Serve `POST /record`.
    pub web_enable_record: bool,
    /// `POST /record` accepted at most once in this long.
    pub web_record_min_interval: Duration,
    pub web_max_connections: usize,
    /// The body of /metrics and its content type.
    pub page: MetricsPage,
    /// The probes attached ON in every PERIOD only.
    pub duty_cycle: Option<(Duration, Duration)>,
    /// The `command` label carries the program's arguments too.
    pub label_command_args: bool,
    /// `-p`: running processes traced with their descendants.
    pub pids: Vec<u32>,
    /// Every process that calls a probed libcuda, and the other libcuda files mapped.
    pub all_libcuda: bool,
    pub system: bool,
    pub cgroup: Option<PathBuf>,
    /// `--libcuda`.
    pub libcuda: Option<PathBuf>,
    pub max_libcuda_files: usize,
    pub scan_interval_ms: u64,
    /// Series of an exited process stay this long.
    pub grace: Duration,
    pub top_kernels: usize,
    pub max_processes: usize,
    pub probes: ProbeOptions,
    pub no_power: bool,
    pub power_interval_ms: u64,
    /// Duty-cycled trace files into this directory.
    pub record_dir: Option<PathBuf>,
    pub record_every: Option<Duration>,
    pub record_for: Duration,
    pub record_file_max_mib: u64,
    pub record_dir_max_mib: u64,
    /// Run the command as root even under sudo.
    pub as_root: bool,
    /// A command to start and trace (empty: none).
    pub command: Vec<OsString>,
}

/// How /metrics renders the metrics (the export layer's format, given by the cli).
#[derive(Debug, Clone, Copy)]
pub struct MetricsPage {
    pub render: fn(&AgentMetrics) -> String,
    pub content_type: &'static str,
}
