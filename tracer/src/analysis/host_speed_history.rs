//! The host speed history: how fast the probes ran in each recording made on
//! this machine, kept between runs per command and probe set, so that a
//! recording can say how fast its process ran against the speed this machine
//! usually runs that program at (footer `host_speed`; docs/replay.md, *The
//! machine's usual speed*). This file is the pure part: the gauge, the
//! history's form, [`History::add`] and the reference. Its file (path,
//! locking, atomic replacement) is `crate::collect::host_speed_history`.
//!
//! **The gauge** is the entry programs' cost per run (`cu_enter` and
//! `cu_launch` of the footer's `bpf_stats`: their run time over their runs):
//! the same work on the traced thread's own CPU at every call, so it moves
//! with the speed that CPU gives the process (a busy SMT sibling on the host,
//! which a guest cannot see, slows both it and the program's host code).
//! On the H200 it ran 1,300-1,999 ns over 12 recordings of one program and
//! correlated 0.9 with their replays' times (docs/replay.md). It depends on the
//! program (its call mix, its stack depth) and on the probe set, so gauges
//! are compared only within one key: command, probe set, CPU model, kernel.
//!
//! **The reference** is the median of the key's gauges, this recording's
//! included (one recording: itself, factor 1); the factor is gauge /
//! reference, within [`FACTOR_RANGE`].
//!
//! Form: `{"format":"tracer-host-speed-history","version":1,"entries":[{"key":
//! {"command" (sha256 of the argv),"probes","cpu","kernel"},"updated_unix","gauges":[{"ns","runs","unix"}…]}…]}`.
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub const FORMAT: &str = "tracer-host-speed-history";
pub const VERSION: u32 = 1;
/// Gauges kept per key (the newest).
pub const KEEP: usize = 32;
/// Keys kept (the most recently updated).
pub const MAX_KEYS: usize = 256;
/// Gauges older than this are dropped (s): the machine's load changes.
pub const MAX_AGE_S: u64 = 30 * 24 * 3600;
/// Entry-program runs below which a recording's gauge is not kept (a few calls say
/// little about the speed).
pub const MIN_RUNS: u64 = 200;
/// The programs whose cost per run is the gauge.
pub const GAUGE_PROGRAMS: [&str; 2] = ["cu_enter", tracer_format::pacing::LAUNCH_PROGRAM];
/// The factor's bounds: beyond them the gauge says more about the program than the speed.
pub const FACTOR_RANGE: (f64, f64) = (0.5, 2.0);

/// What recordings are compared by.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct SpeedKey {
    /// The command's argv as `sha256:HEX` of its arguments each followed by a NUL (the
    /// history is readable by every user of the machine; arguments may hold secrets).
    pub command: String,
    /// The probe set ("replayable capture_data=0 stacks=… …": what the entry programs do).
    pub probes: String,
    /// /proc/cpuinfo's model name.
    pub cpu: String,
    /// The kernel release.
    pub kernel: String,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Gauge {
    /// The entry programs' ns per run.
    pub ns: f64,
    /// Their runs.
    pub runs: u64,
    /// When (Unix seconds).
    pub unix: u64,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Entry {
    pub key: SpeedKey,
    pub updated_unix: u64,
    /// Oldest first.
    pub gauges: Vec<Gauge>,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct History {
    pub format: String,
    pub version: u32,
    pub entries: Vec<Entry>,
}

impl Default for History {
    fn default() -> Self {
        History { format: FORMAT.into(), version: VERSION, entries: Vec::new() }
    }
}

/// Why a text is not a history this version reads (the kept files' form: [`FORM`]).
pub type ParseError = crate::analysis::kept_form::FormError;

/// The history's form: its `format`, `version` and name in messages.
pub const FORM: crate::analysis::kept_form::Form =
    crate::analysis::kept_form::Form { format: FORMAT, version: VERSION, what: "host speed history" };

/// This recording against its key's history.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Reference {
    pub gauge_ns: f64,
    pub runs: u64,
    /// The median of the key's gauges, this one included.
    pub reference_ns: f64,
    /// The key's gauges, this one included.
    pub recordings: usize,
    /// gauge / reference within [`FACTOR_RANGE`]: the recording's host gaps ÷ factor are
    /// the machine's usual speed.
    pub factor: f64,
    /// The factor was cut to [`FACTOR_RANGE`].
    pub clamped: bool,
}

impl History {
    pub fn parse(text: &str) -> Result<History, ParseError> {
        let h: History = FORM.parse(text)?;
        if let Some(g) = h.entries.iter().flat_map(|e| &e.gauges).find(|g| !(g.ns.is_finite() && g.ns > 0.0)) {
            return Err(ParseError::Corrupt(format!("a gauge of {} ns", g.ns)));
        }
        Ok(h)
    }

    pub fn to_json(&self) -> String {
        FORM.line(self)
    }

    pub fn entry(&self, key: &SpeedKey) -> Option<&Entry> {
        self.entries.iter().find(|e| &e.key == key)
    }

    /// Adds `gauge` (ns per run over `runs` runs, at `now_unix`) to `key`'s gauges (the
    /// newest [`KEEP`] of the last [`MAX_AGE_S`] kept; at most [`MAX_KEYS`] keys, the least
    /// recently updated dropped) and returns the recording against them.
    pub fn add(&mut self, key: &SpeedKey, gauge: f64, runs: u64, now_unix: u64) -> Reference {
        let i = match self.entries.iter().position(|e| &e.key == key) {
            Some(i) => i,
            None => {
                self.entries.push(Entry { key: key.clone(), updated_unix: now_unix, gauges: Vec::new() });
                self.entries.len() - 1
            }
        };
        let e = &mut self.entries[i];
        e.gauges.retain(|g| g.unix.saturating_add(MAX_AGE_S) >= now_unix);
        e.gauges.push(Gauge { ns: gauge, runs, unix: now_unix });
        if e.gauges.len() > KEEP {
            e.gauges.drain(..e.gauges.len() - KEEP);
        }
        e.updated_unix = now_unix;
        let r = reference(gauge, runs, &e.gauges);
        if self.entries.len() > MAX_KEYS {
            self.entries.sort_by(|a, b| b.updated_unix.cmp(&a.updated_unix).then_with(|| a.key.cmp(&b.key)));
            self.entries.truncate(MAX_KEYS);
        }
        self.entries.sort_by(|a, b| a.key.cmp(&b.key));
        r
    }
}

/// The key's `command` of an argv: `sha256:HEX` of each argument followed by a NUL.
pub fn command_digest<S: AsRef<str>>(argv: &[S]) -> String {
    let mut b = Vec::new();
    for a in argv {
        b.extend_from_slice(a.as_ref().as_bytes());
        b.push(0);
    }
    format!("sha256:{}", tracer_format::digest::sha256_hex(&b))
}

/// `gauge` against `gauges` (which hold it).
pub fn reference(gauge: f64, runs: u64, gauges: &[Gauge]) -> Reference {
    let mut v: Vec<f64> = gauges.iter().map(|g| g.ns).collect();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let median = if n == 0 {
        gauge
    } else if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    };
    let raw = gauge / median;
    let factor = raw.clamp(FACTOR_RANGE.0, FACTOR_RANGE.1);
    Reference { gauge_ns: gauge, runs, reference_ns: median, recordings: n.max(1), factor, clamped: factor != raw }
}

/// The gauge of a footer's `bpf_stats`: ns per run of [`GAUGE_PROGRAMS`] together, and
/// their runs; None without them or under [`MIN_RUNS`] runs.
pub fn gauge_of(bpf_stats: &Value) -> Option<(f64, u64)> {
    let (mut ns, mut runs) = (0u64, 0u64);
    for p in GAUGE_PROGRAMS {
        let s = &bpf_stats[p];
        ns += s["run_time_ns"].as_u64().unwrap_or(0);
        runs += s["runs"].as_u64().unwrap_or(0);
    }
    (runs >= MIN_RUNS && ns > 0).then(|| (ns as f64 / runs as f64, runs))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn key(cmd: &str) -> SpeedKey {
        SpeedKey { command: cmd.into(), probes: "replayable".into(), cpu: "Xeon".into(), kernel: "6.18".into() }
    }

    #[test]
    fn the_gauge_is_the_entry_programs_run_time_over_their_runs() {
        let s = json!({
            "cu_enter": {"runs": 100, "run_time_ns": 150_000},
            "cu_launch": {"runs": 300, "run_time_ns": 330_000},
            "cu_exit": {"runs": 400, "run_time_ns": 999_999},
        });
        assert_eq!(gauge_of(&s), Some((1_200.0, 400)));
        // too few runs to say anything, or no statistics
        assert_eq!(gauge_of(&json!({"cu_enter": {"runs": 199, "run_time_ns": 1000}})), None);
        assert_eq!(gauge_of(&Value::Null), None);
    }

    #[test]
    fn the_reference_is_the_median_of_the_keys_gauges_this_one_included() {
        let mut h = History::default();
        let r = h.add(&key("a"), 1_500.0, 1000, 10);
        // alone: itself
        assert_eq!((r.reference_ns, r.recordings, r.factor, r.clamped), (1_500.0, 1, 1.0, false));
        h.add(&key("b"), 9_000.0, 1000, 11); // another key is not compared
        h.add(&key("a"), 1_300.0, 1000, 12);
        let r = h.add(&key("a"), 1_950.0, 1000, 13);
        assert_eq!((r.reference_ns, r.recordings), (1_500.0, 3));
        assert_eq!(r.factor, 1.3);
        let r = h.add(&key("a"), 1_200.0, 1000, 14);
        assert_eq!((r.reference_ns, r.recordings, r.factor), (1_400.0, 4, 1_200.0 / 1_400.0));
        // a factor past the range is cut, and says so
        let r = h.add(&key("a"), 6_000.0, 1000, 15);
        assert_eq!((r.factor, r.clamped), (2.0, true));
        // the history round-trips, keys sorted
        let back = History::parse(&h.to_json()).unwrap();
        assert_eq!(back, h);
        assert_eq!(back.entries.iter().map(|e| e.key.command.as_str()).collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(back.entry(&key("a")).unwrap().gauges.len(), 5);
    }

    #[test]
    fn old_gauges_and_old_keys_go() {
        let mut h = History::default();
        for i in 0..40u64 {
            h.add(&key("a"), 1_000.0 + i as f64, 300, 100 + i);
        }
        let g = &h.entry(&key("a")).unwrap().gauges;
        assert_eq!((g.len(), g[0].ns, g[KEEP - 1].ns), (KEEP, 1_008.0, 1_039.0));
        // a month later the old ones are gone
        let r = h.add(&key("a"), 2_000.0, 300, 140 + MAX_AGE_S);
        assert_eq!((r.recordings, r.factor), (1, 1.0));
        // past MAX_KEYS, the least recently updated key goes
        for i in 0..MAX_KEYS as u64 {
            h.add(&key(&format!("k{i:03}")), 1_000.0, 300, 200 + MAX_AGE_S + i);
        }
        assert_eq!(h.entries.len(), MAX_KEYS);
        assert!(h.entry(&key("a")).is_none());
        assert!(h.entry(&key("k000")).is_some());
    }

    #[test]
    fn the_command_is_kept_as_a_digest_of_its_arguments() {
        let d = command_digest(&["python3", "a b"]);
        assert_eq!(d, format!("sha256:{}", tracer_format::digest::sha256_hex(b"python3\0a b\0")));
        // the arguments' boundaries count
        assert_ne!(d, command_digest(&["python3 a", "b"]));
    }

    #[test]
    fn other_files_are_refused_by_name() {
        assert_eq!(History::parse("{}"), Err(ParseError::Foreign(None)));
        assert_eq!(
            History::parse(r#"{"format":"tracer-durations-library","version":1,"gpus":[]}"#),
            Err(ParseError::Foreign(Some("tracer-durations-library".into())))
        );
        assert_eq!(
            History::parse(r#"{"format":"tracer-host-speed-history","version":7,"entries":[]}"#),
            Err(ParseError::Newer(7))
        );
        assert!(matches!(History::parse("not json"), Err(ParseError::Corrupt(_))));
        let bad = r#"{"format":"tracer-host-speed-history","version":1,"entries":[{"key":{"command":"a","probes":"p","cpu":"c","kernel":"k"},"updated_unix":1,"gauges":[{"ns":-3.0,"runs":1,"unix":1}]}]}"#;
        assert_eq!(History::parse(bad), Err(ParseError::Corrupt("a gauge of -3 ns".into())));
    }
}
