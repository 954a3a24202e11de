//! The analysis layer: pure functions over a parsed [`model::Trace`] and
//! over trace lines. No file access, no printing, no command line: the
//! commands that read files and print are in `crate::cli` (`cli::analysis`,
//! `cli::load`), the renderers that write files in `crate::export`.
//!
//! For other modules (plots, reports) the entry points are:
//! - [`model::parse_str`] (text → `Trace`), [`model::TraceBuilder`] (lines
//!   → `Trace`; `crate::cli::load` feeds it from a file);
//! - [`phases::phases`] → per-process phases and iterations;
//! - [`sampled::gpu_intervals`] (also for `--gpu-sample` recordings) or
//!   [`timeline::gpu_intervals`] → per-device/stream GPU intervals
//!   (`Timeline.streams[i].intervals`, each stream labelled measured /
//!   inferred / bound), or [`timeline::measured`], [`timeline::inferred`],
//!   [`timeline::bound`] explicitly;
//! - [`cpu_slices`] → per-thread CPU slices (driver calls);
//! - [`thread_states::split`] → what a thread did in an interval, from the
//!   scheduler events (on CPU, blocked in which call, runnable behind whom);
//! - [`gaps::analyze`] → idle-gap report; `ScopeReport::gaps` are the gap
//!   intervals, [`gaps::busy`] / [`gaps::gaps_of`] compute them from intervals;
//! - [`energy::series`] → power / energy / clock series per GPU,
//!   [`energy::energy_between`] → energy of an interval;
//! - [`report::build`] → per-phase / per-iteration time, counts and energy;
//! - [`durations::calibrate`], [`compare::compare`];
//! - [`durations_library::merge`], [`durations_library::select`] (the
//!   durations library of a machine; its file: `crate::collect::durations_library`);
//! - [`filter::apply`] (`--pid`, `--from`/`--to`), [`filter::window_ns`];
//! - [`summary::Summary`] (the end-of-run summary, live and from a file),
//!   [`ioctl_report::IoctlReport`] (`tracer ioctls`).
//!
//! Methods: docs/analysis.md and docs/gaps.md.
// Public API for the plot and replay code too; not all of it is used by the commands yet.
pub mod agent;
pub mod basis;
#[cfg(test)]
mod bound_check_tests;
pub mod compare;
pub mod coverage;
pub mod durations;
pub mod durations_file;
pub mod durations_library;
pub mod energy;
mod fasthash;
pub mod figures;
pub mod filter;
pub mod flame;
pub mod gap_causes;
pub mod gap_stacks;
pub mod gaps;
pub mod host_clock;
pub mod host_speed_history;
pub mod inert;
pub mod ioctl_report;
pub mod kept_form;
pub mod kernel_names;
pub mod model;
pub mod per_gpu;
pub mod phases;
pub mod process_energy;
#[cfg(test)]
mod recordings_tests;
pub mod report;
pub mod sampled;
#[cfg(test)]
mod scan_tests;
pub mod short_names;
pub mod side_summary;
pub mod stack_report;
pub mod stats;
pub mod stream_names;
pub mod summary;
pub mod text_table;
pub mod thread_states;
pub mod timeline;
pub mod verdict;
pub mod whatif;
pub mod window_check;

/// One CPU slice: a driver call on a thread.
#[derive(Clone, Debug, PartialEq)]
pub struct CpuSlice<'a> {
    pub pid: u32,
    pub tid: u32,
    pub start: u64,
    pub end: u64,
    /// Exported function name.
    pub name: &'a str,
    pub kind: model::Kind,
}

/// Per-thread CPU slices (driver calls), keyed by (pid, tid), each in time order.
pub fn cpu_slices(t: &model::Trace) -> std::collections::BTreeMap<(u32, u32), Vec<CpuSlice<'_>>> {
    let mut m: std::collections::BTreeMap<(u32, u32), Vec<CpuSlice<'_>>> = Default::default();
    for c in t.calls.iter().filter(|c| c.is_driver_call()) {
        m.entry((c.pid, c.tid)).or_default().push(CpuSlice {
            pid: c.pid,
            tid: c.tid,
            start: c.ts,
            end: c.end(),
            name: t.name(c.func),
            kind: c.kind,
        });
    }
    m
}
