//! The steps after the collection: the footer's parts from elsewhere
//! (`--counts` lines, entry points, coverage), the footer itself, and the
//! manifest of a replayable recording.
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde_json::json;

use crate::collect::collector::Collector;
use crate::collect::gpu_timestamps::GpuSession;
use crate::collect::loader::{self, KernelCounters};
use crate::collect::{footer, spawn, sysinfo};

/// `--check-coverage`: the footer's `coverage` (coverage.rs), the trace's calls against
/// CUPTI's per function; returns the lines for stderr.
pub fn coverage_footer(
    col: &mut Collector,
    cupti_counts: &Path,
    undecoded: &BTreeMap<String, u64>,
    all_functions: bool,
) -> Vec<String> {
    let Some(c) = col.coverage.as_ref() else { return Vec::new() };
    let cupti = match crate::collect::coverage::read_cupti(cupti_counts) {
        Ok(m) => m,
        Err(e) => {
            let why =
                format!("no CUPTI driver call counts ({e:#}): did the command initialise CUDA and exit normally?");
            col.footer_extra.insert("coverage".into(), json!({ "error": why }));
            return vec![format!("tracer: --check-coverage: {why}")];
        }
    };
    let left_out = |name: &str| {
        tracer_common::funcs::lookup(name)
            .and_then(|id| crate::collect::probe_options::left_out(all_functions, id))
            .or_else(|| crate::collect::coverage::cupti_silent(name))
    };
    let traced = c.split(&cupti.last_ns);
    let (footer, lines) = crate::collect::coverage::compare(&cupti.calls, &traced, undecoded, &left_out);
    col.footer_extra.insert("coverage".into(), footer);
    lines
}

/// The counting probes' calls of the exported functions outside the table, by name,
/// read once the probes are off (empty, with a warning, when the map cannot be read).
pub fn undecoded_calls(loaded: &loader::Loaded) -> BTreeMap<String, u64> {
    match loaded.counts.as_ref().map(|c| c.unrecorded_calls()) {
        Some(Ok(c)) => c,
        Some(Err(e)) => {
            eprintln!("tracer: reading the counts of undecoded driver functions failed: {e:#}");
            BTreeMap::new()
        }
        None => BTreeMap::new(),
    }
}

/// The footer's `entry_points` (entry_points.rs): every resolved entry point tracer does
/// not record, and the calls of undecoded functions; returns the lines for stderr.
pub fn entry_points_footer(col: &mut Collector, loaded: &loader::Loaded, calls: &BTreeMap<String, u64>) -> Vec<String> {
    let Some(ep) = col.entry_points.as_mut() else { return Vec::new() };
    let counted = crate::collect::counts::unrecorded_names().into_iter().collect();
    let not_counted = loaded.report.not_counted.iter().map(|(n, why)| (n.clone(), why.to_string())).collect();
    let (footer, lines) = ep.finish(calls, &counted, &not_counted);
    col.footer_extra.insert("entry_points".into(), footer);
    lines
}

/// Writes the footer line (counters, exit, power, markers, GPU timestamps and
/// the durations library, replay coverage) and finishes the trace file;
/// returns its write error.
pub fn finish_trace(
    col: &mut Collector,
    side: &mut crate::collect::side::Side,
    counters: &KernelCounters,
    exit: Option<&spawn::ExitInfo>,
    elapsed: Duration,
    // the GPU side, the durations library, the host speed history
    (gpu, library, speed): (
        Option<&mut GpuSession>,
        Option<&crate::collect::record::durations::LibraryUse>,
        Option<&crate::collect::record::host_speed::SpeedUse>,
    ),
    quiet: bool,
) -> Option<String> {
    let mut side_footer = side.finish(col, quiet);
    let mut footer = footer::footer(col, counters, exit, elapsed);
    for (k, v) in std::mem::take(&mut col.footer_extra) {
        footer[k.as_str()] = v;
    }
    footer["power"] = side_footer["power"].take();
    footer["markers"] = side_footer["markers"].take();
    if let Some(g) = gpu {
        footer["gpu_timestamps"] = g.finish(col);
        if let Some(l) = library {
            footer["durations_library"] = crate::collect::record::durations::finish(col, g, l, quiet);
        }
    }
    if let Some(r) = &col.replay {
        footer["replay"] = r.footer();
    }
    // the probes' speed against this machine's usual for the command (with bpf_stats)
    if let Some(s) = speed.filter(|_| !footer["bpf_stats"].is_null()) {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
        footer["host_speed"] =
            crate::collect::host_speed_history::footer(&footer["bpf_stats"], s.path.as_deref(), &s.key, now, quiet);
    }
    // (The file already belongs to the invoking user: create_output_file.)
    col.emit(footer);
    col.writer.finish().map(|e| e.to_string())
}

/// `--counts`: the kernel's counts as lines, before the footer. An error
/// reading them is reported, the trace stays valid.
pub fn write_counts(col: &mut Collector, counts: Option<&crate::collect::counts::CountMaps>) {
    let Some(c) = counts else { return };
    // Through the writer only: the summary counts recorded call lines.
    match c.lines(&col.asm, sysinfo::clock_ns(libc::CLOCK_MONOTONIC)) {
        Ok(lines) => lines.iter().for_each(|l| col.writer.write(l)),
        Err(e) => eprintln!("tracer: reading the kernel's counts failed: {e:#}"),
    }
}

/// `--replayable`: writes the manifest, which describes the finished
/// recording; returns the summary line about it.
pub fn write_manifest(col: &Collector, header: Option<&serde_json::Value>) -> Option<String> {
    let (r, h) = (col.replay.as_ref()?, header?);
    match r.write_manifest(h) {
        Ok(p) => Some(crate::collect::replayable::summary_line(r, &p)),
        Err(e) => {
            eprintln!("tracer: writing the recording's manifest failed: {e:#}");
            None
        }
    }
}
