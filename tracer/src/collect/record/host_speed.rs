//! The recording's host speed (footer `host_speed`): its probes' gauge
//! against the machine's history of the same command and probe set
//! (`crate::collect::host_speed_history`).
use std::path::PathBuf;

use crate::analysis::host_speed_history::SpeedKey;
use crate::collect::host_speed_history as history;
use crate::collect::record::RecordOptions;

/// Where the recording's gauge goes, and what it is compared with.
pub struct SpeedUse {
    pub path: Option<PathBuf>,
    pub key: SpeedKey,
}

/// With BPF statistics only (the gauge is theirs); `-p PID` and machine-wide recordings
/// have no one command, and are not compared.
pub fn speed_use(o: &RecordOptions) -> Option<SpeedUse> {
    if !o.bpf_stats || o.command.is_empty() {
        return None;
    }
    let argv: Vec<String> = o.command.iter().map(|a| a.to_string_lossy().into_owned()).collect();
    Some(SpeedUse { path: history::default_path(), key: history::machine_key(&argv, probe_set(o)) })
}

/// What the entry programs do in this recording, in one line: the gauges of recordings
/// with another probe set are not compared.
pub fn probe_set(o: &RecordOptions) -> String {
    let p = &o.probes;
    let s = &p.stacks;
    format!(
        "replayable={} capture_data={} returns={} sched={} counts={} all_functions={} ioctls={:?} bench={:?} \
         stacks=native:{},python:{},calls:{},switch_outs:{},every_launch:{},sample_hz:{} gpu={}",
        o.replayable(),
        p.replay.capture_data,
        p.returns.name(),
        p.sched,
        p.counts,
        p.all_functions,
        p.ioctls,
        p.bench_probe,
        s.native,
        s.python,
        s.calls,
        s.switches,
        s.every_launch,
        s.sample_hz,
        o.gpu.is_some(),
    )
}
