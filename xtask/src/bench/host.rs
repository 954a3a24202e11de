//! The machine a benchmark ran on, for the files it writes.
use std::fs;

use serde_json::{Value, json};

/// CPU model, cores and kernel release.
pub fn machine() -> Value {
    let cpu = fs::read_to_string("/proc/cpuinfo").ok().and_then(|s| {
        s.lines().find_map(|l| l.strip_prefix("model name").map(|v| v.trim_start_matches([' ', '\t', ':']).to_string()))
    });
    json!({
        "cpu": cpu,
        "cores": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
        "kernel": fs::read_to_string("/proc/sys/kernel/osrelease").ok().map(|s| s.trim().to_string()),
    })
}
