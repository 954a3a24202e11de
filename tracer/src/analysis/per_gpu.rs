//! `tracer report`'s rows per GPU and per process on each GPU: busy time
//! and idle share on each device's own timeline (the union of its streams),
//! launches made on it, and its NVML energy. Only for traces whose timeline
//! has several devices (a one-GPU trace's figures are the phase rows').
//!
//! The NVML energy of a GPU row is that of the NVML index equal to the CUDA
//! ordinal: the two agree when CUDA orders devices by PCI bus id, as NVML
//! does (CUDA_DEVICE_ORDER=PCI_BUS_ID, or identical GPUs without
//! CUDA_VISIBLE_DEVICES reordering them).
use serde::Serialize;

use super::basis::IdleBasis;
use super::energy::{self, Energy, EnergySeries};
use super::figures::gpu_window;
use super::model::{Kind, Trace};
use super::stats::{covered, union};
use super::timeline::Timeline;

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct GpuRow {
    /// CUDA device ordinal.
    pub device: u32,
    /// `None`: the whole GPU; else this process's work on it.
    pub pid: Option<u32>,
    /// The period: the GPU window (analysis/figures.rs): from the first GPU
    /// work on the device to the last (GPU rows), from the process's first
    /// work on it to its last (process rows), as `tracer gaps` uses them.
    pub start: u64,
    pub end: u64,
    /// Launches made on this device (by this process).
    pub launches: u64,
    /// Busy time (union of the intervals); `None` on a lower-bound timeline.
    pub busy_ns: Option<u64>,
    pub idle_share: Option<f64>,
    /// Lower-bound timeline: certain idle time and its share.
    pub idle_lower_bound_ns: Option<u64>,
    pub idle_share_lower_bound: Option<f64>,
    /// GPU rows: this GPU's NVML energy over the period.
    pub energy: Option<Energy>,
}

/// The rows, GPU by GPU (each followed by its processes); empty when the
/// timeline has fewer than two devices.
pub fn rows(t: &Trace, tl: &Timeline, series: &[EnergySeries], basis: IdleBasis) -> Vec<GpuRow> {
    let devices = tl.devices();
    if devices.len() < 2 {
        return vec![];
    }
    let known = basis.share_known();
    let mut out = Vec::new();
    for d in devices {
        let busy_of = |pid: Option<u32>| {
            union(
                tl.streams
                    .iter()
                    .filter(|s| s.device == d && pid.is_none_or(|p| s.key.pid == p))
                    .flat_map(|s| s.intervals.iter().map(|i| (i.start, i.end)))
                    .collect(),
            )
        };
        let launches = |pid: Option<u32>| {
            t.calls
                .iter()
                .filter(|c| matches!(c.kind, Kind::Launch | Kind::GraphLaunch) && !c.failed())
                .filter(|c| c.device().unwrap_or(0) == d && pid.is_none_or(|p| c.pid == p))
                .count() as u64
        };
        let row = |pid: Option<u32>, busy: &[(u64, u64)], a: u64, b: u64, energy: Option<Energy>| {
            let dur = b.saturating_sub(a);
            let busy_ns = covered(busy, a, b);
            let share = (dur > 0 && !busy.is_empty()).then(|| 1.0 - busy_ns as f64 / dur as f64);
            GpuRow {
                device: d,
                pid,
                start: a,
                end: b,
                launches: launches(pid),
                busy_ns: known.then_some(busy_ns),
                idle_share: share.filter(|_| known),
                idle_lower_bound_ns: (!known && !busy.is_empty()).then(|| dur - busy_ns),
                idle_share_lower_bound: share.filter(|_| !known),
                energy,
            }
        };
        let all = busy_of(None);
        let (a, b) = gpu_window(&all).unwrap_or((0, 0));
        let energy = series.iter().find(|s| s.gpu == d).and_then(|s| energy::energy_between(s, a, b));
        out.push(row(None, &all, a, b, energy));
        let mut pids: Vec<u32> = tl.streams.iter().filter(|s| s.device == d).map(|s| s.key.pid).collect();
        pids.sort_unstable();
        pids.dedup();
        for p in pids {
            let own = busy_of(Some(p));
            let (a, b) = gpu_window(&own).unwrap_or((0, 0));
            out.push(row(Some(p), &own, a, b, None));
        }
    }
    out
}
