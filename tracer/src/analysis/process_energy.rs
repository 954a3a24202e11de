//! Energy per process on a shared GPU (`tracer report`'s process rows;
//! docs/analysis.md, "Energy per process"). NVML measures a whole GPU, so a
//! process's joules are taken from the report's GPU timeline (measured,
//! inferred or bound), device by device:
//!
//! - **own**: the GPU's energy over the instants when this process, and no
//!   other, had work on it (the union of its streams' intervals on that
//!   device, where no other process's intervals are);
//! - **shared**: the GPU's energy over the instants when this process and
//!   at least one other had work on it; not split (no rule would be right
//!   for every pair of kernels), so the shared joules of two processes
//!   overlap;
//! - the rest of the GPU's energy (instants when no process had work on the
//!   timeline: idle, or work the timeline does not show) is no process's.
//!
//! Summed over the devices (NVML index = CUDA ordinal, as in per_gpu.rs).
//! The own energy is an [`Energy`] like the others: `uncertain` when the
//! samples cover only part of the own time or it is shorter than two
//! counter updates, `uncertainty_j` = the own time's mean power × one
//! counter update period.
use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::energy::{Energy, EnergySeries, energy_between};
use super::stats::union;
use super::timeline::Timeline;

/// One process's attributed energy.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ProcessEnergy {
    /// Energy while only this process had GPU work (None: no sample covers
    /// any of that time, or it has none).
    pub own: Option<Energy>,
    /// Energy while this process and others had GPU work (None: no such
    /// time covered by samples).
    pub shared_j: Option<f64>,
}

/// Sums of one process on one device.
#[derive(Default)]
struct Acc {
    own_j: f64,
    own_ns: u64,
    own_covered_ns: u64,
    shared_j: f64,
    shared_covered_ns: u64,
}

/// Every process of the timeline that had GPU work, with its energy.
pub fn attribute(tl: &Timeline, series: &[EnergySeries]) -> BTreeMap<u32, ProcessEnergy> {
    let mut out: BTreeMap<u32, ProcessEnergy> = tl.pids().into_iter().map(|p| (p, ProcessEnergy::default())).collect();
    for d in tl.devices() {
        let Some(s) = series.iter().find(|s| s.gpu == d) else { continue };
        for (pid, acc) in on_device(tl, d, s) {
            let e = out.entry(pid).or_default();
            e.own = add(e.own.take(), own_energy(&acc, s));
            if acc.shared_covered_ns > 0 {
                e.shared_j = Some(e.shared_j.unwrap_or(0.0) + acc.shared_j);
            }
        }
    }
    out
}

/// Sweeps the processes' busy intervals on device `d`: every stretch with
/// one process busy is its own, with several shared by each.
fn on_device(tl: &Timeline, d: u32, s: &EnergySeries) -> BTreeMap<u32, Acc> {
    let mut busy: BTreeMap<u32, Vec<(u64, u64)>> = BTreeMap::new();
    for st in tl.streams.iter().filter(|st| st.device == d) {
        busy.entry(st.key.pid).or_default().extend(st.intervals.iter().map(|i| (i.start, i.end)));
    }
    // (instant, pid, starts): ends sort before starts at the same instant.
    let mut edges: Vec<(u64, bool, u32)> = Vec::new();
    for (&pid, v) in busy.iter_mut() {
        for (a, b) in union(std::mem::take(v)) {
            edges.push((a, true, pid));
            edges.push((b, false, pid));
        }
    }
    edges.sort_unstable();
    let mut acc: BTreeMap<u32, Acc> = BTreeMap::new();
    let mut active: BTreeSet<u32> = BTreeSet::new();
    let mut last = 0;
    for (t, starts, pid) in edges {
        if t > last && !active.is_empty() {
            let (j, covered) = joules(s, last, t);
            let one = active.len() == 1;
            for p in &active {
                let a = acc.entry(*p).or_default();
                if one {
                    a.own_j += j;
                    a.own_ns += t - last;
                    a.own_covered_ns += covered;
                } else {
                    a.shared_j += j;
                    a.shared_covered_ns += covered;
                }
            }
        }
        last = t;
        if starts {
            active.insert(pid);
        } else {
            active.remove(&pid);
        }
    }
    acc
}

/// The energy of `[a, b)` and the time of it the samples cover.
fn joules(s: &EnergySeries, a: u64, b: u64) -> (f64, u64) {
    match energy_between(s, a, b) {
        Some(e) => (e.joules, ((b - a) as f64 * e.covered_share).round() as u64),
        None => (0.0, 0),
    }
}

fn own_energy(acc: &Acc, s: &EnergySeries) -> Option<Energy> {
    if acc.own_covered_ns == 0 {
        return None;
    }
    let period = if s.points.len() >= 2 { s.update_period_ns.unwrap_or(0) } else { 0 };
    let mean_w = acc.own_j / (acc.own_covered_ns as f64 / 1e9);
    let covered_share = acc.own_covered_ns as f64 / acc.own_ns as f64;
    Some(Energy {
        joules: acc.own_j,
        method: if s.points.len() >= 2 { "counter" } else { "power_integral" },
        uncertain: covered_share < 1.0 || acc.own_ns < 2 * period,
        uncertainty_j: mean_w * period as f64 / 1e9,
        covered_share,
    })
}

/// Two devices' energy summed (as `energy_all_gpus` sums them).
fn add(a: Option<Energy>, b: Option<Energy>) -> Option<Energy> {
    match (a, b) {
        (None, b) => b,
        (a, None) => a,
        (Some(x), Some(e)) => Some(Energy {
            joules: x.joules + e.joules,
            method: if x.method == e.method { x.method } else { "mixed" },
            uncertain: x.uncertain || e.uncertain,
            uncertainty_j: x.uncertainty_j + e.uncertainty_j,
            covered_share: x.covered_share.min(e.covered_share),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::model::NO_STR;
    use crate::analysis::timeline::{GpuInterval, Source, StreamKey, StreamTimeline, WorkKind};

    const MS: u64 = 1_000_000;

    fn stream(pid: u32, device: u32, spans_ms: &[(u64, u64)]) -> StreamTimeline {
        StreamTimeline {
            device,
            key: StreamKey { pid, handle: 0, tid: 0, device },
            label: String::new(),
            source: Source::Measured,
            intervals: spans_ms
                .iter()
                .map(|&(a, b)| GpuInterval {
                    start: a * MS,
                    end: b * MS,
                    kind: WorkKind::Kernel,
                    name: NO_STR,
                    call: u32::MAX,
                    ops: 1,
                    approximate: false,
                })
                .collect(),
        }
    }

    /// A counter that updates every 10 ms: 100 W on [0, 100) ms, then 300 W.
    fn series(gpu: u32) -> EnergySeries {
        let mut points = vec![];
        let mut mj = 0.0;
        for i in 0..=20u64 {
            points.push((i * 10 * MS, mj));
            mj += if i < 10 { 1000.0 } else { 3000.0 };
        }
        EnergySeries { gpu, points, update_period_ns: Some(10 * MS), ..Default::default() }
    }

    fn timeline(streams: Vec<StreamTimeline>) -> Timeline {
        Timeline { source: Source::Measured, streams, diag: Default::default(), calibrated_from: None }
    }

    #[test]
    fn alone_is_own_together_is_shared_idle_is_nobodys() {
        // pid 1 busy 0-40 ms (two streams overlapping: counted once), pid 2
        // busy 30-60 ms and 120-150 ms; nobody 60-120 and 150-200.
        let tl = timeline(vec![
            stream(1, 0, &[(0, 20), (25, 40)]),
            stream(1, 0, &[(15, 30)]),
            stream(2, 0, &[(30, 60), (120, 150)]),
        ]);
        let e = attribute(&tl, &[series(0)]);
        // pid 1: own 0-30 ms at 100 W = 3 J; shared 30-40 ms = 1 J.
        let p1 = &e[&1];
        let own = p1.own.as_ref().unwrap();
        assert!((own.joules - 3.0).abs() < 1e-9, "{own:?}");
        assert_eq!((own.method, own.uncertain, own.covered_share), ("counter", false, 1.0));
        assert!((own.uncertainty_j - 1.0).abs() < 1e-9, "100 W × 10 ms: {own:?}");
        assert!((p1.shared_j.unwrap() - 1.0).abs() < 1e-9);
        // pid 2: own 40-60 ms at 100 W (2 J) + 120-150 ms at 300 W (9 J);
        // shared the same 1 J.
        let p2 = &e[&2];
        assert!((p2.own.as_ref().unwrap().joules - 11.0).abs() < 1e-9, "{p2:?}");
        assert!((p2.shared_j.unwrap() - 1.0).abs() < 1e-9);
        // The idle 60-120 and 150-200 ms (25 J of the GPU's 40) are no one's.
    }

    #[test]
    fn each_gpu_counts_on_its_own_and_unsampled_time_is_flagged() {
        // pid 1 on GPU 0 (0-20 ms) and GPU 1 (0-30 ms, where pid 2 also runs
        // 10-20 ms): own 2 J + 2 J, shared 1 J. pid 2 also runs 190-210 ms on
        // GPU 1, half after the last sample: 10 ms at 300 W = 3 J, covered 1/2.
        let tl =
            timeline(vec![stream(1, 0, &[(0, 20)]), stream(1, 1, &[(0, 30)]), stream(2, 1, &[(10, 20), (190, 210)])]);
        let e = attribute(&tl, &[series(0), series(1)]);
        let own1 = e[&1].own.as_ref().unwrap();
        assert!((own1.joules - 4.0).abs() < 1e-9, "{own1:?}");
        assert!(!own1.uncertain);
        assert!((e[&1].shared_j.unwrap() - 1.0).abs() < 1e-9);
        let own2 = e[&2].own.as_ref().unwrap();
        assert!((own2.joules - 3.0).abs() < 1e-9, "{own2:?}");
        assert_eq!((own2.uncertain, own2.covered_share), (true, 0.5));
        // No series for a device: nothing attributed there.
        let e = attribute(&tl, &[series(1)]);
        assert!((e[&1].own.as_ref().unwrap().joules - 2.0).abs() < 1e-9);
        assert_eq!(attribute(&tl, &[]).get(&1), Some(&ProcessEnergy::default()));
    }
}
