//! The host speed history's file (its form and reference:
//! `crate::analysis::host_speed_history`), and the footer's `host_speed`.
//!
//! Where: `$TRACER_HOST_SPEED_HISTORY` (empty: no history), else
//! `/var/lib/tracer/host_speed.json` as root, else
//! `$XDG_STATE_HOME/tracer/host_speed.json` or
//! `~/.local/state/tracer/host_speed.json`. Read and replaced as every kept
//! file is (`crate::collect::kept_file`: under `PATH.lock`, atomically; a
//! corrupt or foreign file moved aside, a newer version's left alone).
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use tracer_format::open::Kind;

use crate::analysis::host_speed_history::{self as hist, History, Reference, SpeedKey};
use crate::collect::kept_file::{self, Kept, KeptError};

/// The variable naming the history's file (empty: no history).
pub const ENV: &str = "TRACER_HOST_SPEED_HISTORY";
const FILE: &str = "host_speed.json";
const ELSEWHERE: &str = "or set TRACER_HOST_SPEED_HISTORY to another file (empty: no history)";
pub const KEPT: Kept =
    Kept { kind: Kind::HostSpeedHistory, form: hist::FORM, replaced_by: "the next recording", elsewhere: ELSEWHERE };

/// The history's path, or None when `$TRACER_HOST_SPEED_HISTORY` is empty (or no home is known).
pub fn default_path() -> Option<PathBuf> {
    kept_file::default_path(FILE, ENV)
}

/// The history at `path`; `Ok(None)` when there is no such file.
pub fn load(path: &Path) -> Result<Option<History>, KeptError> {
    KEPT.load(path, History::parse)
}

/// What [`update`] did.
#[derive(Debug, Clone, PartialEq)]
pub struct UpdateReport {
    pub reference: Reference,
    /// Where a corrupt or foreign file was moved (a new history was started), and why.
    pub moved_aside: Option<(PathBuf, String)>,
}

/// Adds a recording's gauge to the history at `path` and returns it against its key's.
pub fn update(path: &Path, key: &SpeedKey, gauge: f64, runs: u64, now_unix: u64) -> Result<UpdateReport, KeptError> {
    let (_, reference, moved_aside) =
        KEPT.update(path, (History::parse, History::to_json), now_unix, |h| h.add(key, gauge, runs, now_unix))?;
    Ok(UpdateReport { reference, moved_aside })
}

/// The key of a recording of `command` with the probe set `probes` on this machine.
pub fn machine_key(argv: &[String], probes: String) -> SpeedKey {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines().find_map(|l| l.strip_prefix("model name")?.split_once(':').map(|x| x.1.trim().to_string()))
        })
        .unwrap_or_else(|| "unknown".into());
    SpeedKey { command: hist::command_digest(argv), probes, cpu, kernel: crate::collect::sysinfo::kernel_release() }
}

/// The footer's `host_speed` of a recording whose footer has `bpf_stats`: its gauge, added
/// to the history at `path` (None: no history), against its key's gauges. Failures are said
/// in the field's `note` and on stderr (unless `quiet`); the recording is not touched.
pub fn footer(bpf_stats: &Value, path: Option<&Path>, key: &SpeedKey, now_unix: u64, quiet: bool) -> Value {
    let gauge_what = format!("{} ns per run", hist::GAUGE_PROGRAMS.join("+"));
    let Some((gauge, runs)) = hist::gauge_of(bpf_stats) else {
        return json!({
            "gauge": gauge_what,
            "gauge_ns": null,
            "note": format!("under {} runs of the entry programs: no gauge", hist::MIN_RUNS),
        });
    };
    let alone = |note: String| {
        let r = hist::reference(gauge, runs, &[]);
        json!({ "gauge": gauge_what, "gauge_ns": r.gauge_ns, "runs": runs, "reference_ns": null,
                "recordings": 0, "factor": 1.0, "history": path.map(|p| p.display().to_string()), "note": note })
    };
    let Some(path) = path else { return alone(format!("no host speed history (${ENV} is empty)")) };
    match update(path, key, gauge, runs, now_unix) {
        Ok(u) => {
            if let Some(m) = &u.moved_aside
                && !quiet
            {
                eprintln!("tracer: {}", KEPT.moved_aside_line(path, m));
            }
            let r = &u.reference;
            json!({
                "gauge": gauge_what,
                "gauge_ns": r.gauge_ns,
                "runs": r.runs,
                "reference_ns": r.reference_ns,
                "recordings": r.recordings,
                "factor": r.factor,
                "clamped": r.clamped,
                "history": path.display().to_string(),
                "key": key,
            })
        }
        Err(e) => {
            if !quiet {
                eprintln!("tracer: warning: {e}");
            }
            alone(e.message)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> SpeedKey {
        SpeedKey {
            command: hist::command_digest(&["python3", "loop.py"]),
            probes: "p".into(),
            cpu: "c".into(),
            kernel: "k".into(),
        }
    }

    fn stats(ns_per_run: u64) -> Value {
        json!({ "cu_enter": { "runs": 1000, "run_time_ns": 1000 * ns_per_run }, "cu_launch": { "runs": 0, "run_time_ns": 0 } })
    }

    #[test]
    fn three_recordings_meet_their_median_and_a_corrupt_file_is_moved_aside() {
        let dir = std::env::temp_dir().join(format!("tracer-host-speed-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let path = dir.join("sub/host_speed.json");
        let f1 = footer(&stats(1500), Some(&path), &key(), 100, true);
        assert_eq!(
            (f1["gauge_ns"].as_f64(), f1["recordings"].as_u64(), f1["factor"].as_f64()),
            (Some(1500.0), Some(1), Some(1.0))
        );
        footer(&stats(1300), Some(&path), &key(), 101, true);
        let f3 = footer(&stats(1950), Some(&path), &key(), 102, true);
        assert_eq!(
            (f3["reference_ns"].as_f64(), f3["recordings"].as_u64(), f3["factor"].as_f64()),
            (Some(1500.0), Some(3), Some(1.3))
        );
        assert_eq!(f3["key"]["command"], json!(hist::command_digest(&["python3", "loop.py"])));
        assert_eq!(load(&path).unwrap().unwrap().entry(&key()).unwrap().gauges.len(), 3);
        // a corrupt file: moved aside, a new history started with this recording
        std::fs::write(&path, "{ nope").unwrap();
        let f = footer(&stats(1000), Some(&path), &key(), 200, true);
        assert_eq!((f["recordings"].as_u64(), f["factor"].as_f64()), (Some(1), Some(1.0)));
        assert!(dir.join("sub/host_speed.json.corrupt-200").is_file());
        // a newer version's file is left alone, and the footer says why
        std::fs::write(&path, r#"{"format":"tracer-host-speed-history","version":9,"entries":[]}"#).unwrap();
        let f = footer(&stats(1000), Some(&path), &key(), 300, true);
        assert_eq!(f["reference_ns"], Value::Null);
        assert!(
            f["note"].as_str().unwrap().contains("version 9, newer than this tracer reads (1): use a newer tracer"),
            "{f}"
        );
        assert!(std::fs::read_to_string(&path).unwrap().contains("\"version\":9"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn no_history_and_no_gauge_are_said() {
        let f = footer(&stats(1500), None, &key(), 1, true);
        assert_eq!((f["gauge_ns"].as_f64(), f["factor"].as_f64()), (Some(1500.0), Some(1.0)));
        assert_eq!(f["note"], "no host speed history ($TRACER_HOST_SPEED_HISTORY is empty)");
        let f = footer(&json!({ "cu_enter": { "runs": 10, "run_time_ns": 10_000 } }), None, &key(), 1, true);
        assert_eq!(f["gauge_ns"], Value::Null);
        assert_eq!(f["note"], "under 200 runs of the entry programs: no gauge");
    }

    #[test]
    fn the_path_follows_the_kept_files() {
        let p = |env: Option<&str>, euid| {
            kept_file::path_from(FILE, env.map(Into::into), euid, None, Some("/home/u".into()))
        };
        assert_eq!(p(None, 0), Some(PathBuf::from("/var/lib/tracer/host_speed.json")));
        assert_eq!(p(None, 1000), Some(PathBuf::from("/home/u/.local/state/tracer/host_speed.json")));
        assert_eq!(p(Some(""), 0), None);
        assert_eq!(p(Some("/tmp/h.json"), 1000), Some(PathBuf::from("/tmp/h.json")));
    }
}
