//! The recording's own GPU time: from its measured GPU activity (`gpu` lines,
//! `--gpu-timestamps`) when present, else from launch-to-sync spans.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::plan::{OpKind, Plan};
use crate::recording::{GpuActivity, Trace};

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RecordedTime {
    /// `gpu_lines` or `launch_to_sync`.
    pub source: String,
    /// GPU busy time: union of the measured intervals (gpu lines), or the sum
    /// of the spans from the first submission after a host synchronization to
    /// the synchronization's return (an upper bound of the busy time).
    pub busy_ns: u64,
    /// First start to last end.
    pub span_ns: u64,
    /// gpu lines only: summed durations per kind and per kernel name.
    pub kernels_ns: u64,
    pub copies_ns: u64,
    pub sets_ns: u64,
    pub per_kernel: BTreeMap<String, (u64, u64)>,
    /// gpu lines only: (span, busy) ns of each measured graph launch (graph_launches.rs).
    #[serde(skip)]
    pub graph_launches: Vec<(u64, u64)>,
    /// gpu lines only: each measured graph launch's work by start (graph_launches.rs).
    #[serde(skip)]
    pub graph_launch_ops: Vec<super::graph_launches::LaunchOps>,
    /// gpu lines only: the measured copies (copy_kinds.rs).
    #[serde(skip)]
    pub copy_lines: Vec<GpuActivity>,
}

impl RecordedTime {
    /// gpu lines only: summed durations (ns) per kernel family (`copy` and
    /// `set` for copies and sets).
    pub fn per_family_ns(&self) -> BTreeMap<&'static str, u64> {
        let mut m: BTreeMap<&'static str, u64> = BTreeMap::new();
        for (name, (_, ns)) in &self.per_kernel {
            *m.entry(crate::plan::family::family(name)).or_default() += ns;
        }
        *m.entry("copy").or_default() += self.copies_ns;
        *m.entry("set").or_default() += self.sets_ns;
        m
    }
}

/// The recording's `gpu` lines of the processes the plan replays.
pub fn plan_gpu_lines<'a>(trace: &'a Trace, plan: &Plan) -> Vec<&'a GpuActivity> {
    let pids: std::collections::BTreeSet<u32> = plan.ops.iter().map(|o| o.pid).collect();
    trace.gpu.iter().filter(|g| pids.is_empty() || pids.contains(&g.pid)).collect()
}

pub fn recorded_time(trace: &Trace, plan: &Plan) -> RecordedTime {
    let acts = plan_gpu_lines(trace, plan);
    if !acts.is_empty() {
        let mut iv: Vec<(u64, u64)> = acts.iter().map(|g| (g.ts, g.end_ts)).collect();
        let busy = super::union_ns(&mut iv);
        let mut r = RecordedTime {
            source: "gpu_lines".into(),
            busy_ns: busy,
            graph_launches: super::graph_launches::recorded(&acts),
            graph_launch_ops: super::graph_launches::recorded_ops(&acts),
            copy_lines: acts.iter().filter(|g| g.op == "memcpy").map(|g| (*g).clone()).collect(),
            ..Default::default()
        };
        r.span_ns = iv.iter().map(|x| x.1).max().unwrap_or(0) - iv[0].0;
        for g in &acts {
            let d = g.end_ts - g.ts;
            match g.op.as_str() {
                "kernel" => {
                    r.kernels_ns += d;
                    let e = r.per_kernel.entry(g.name.clone().unwrap_or_default()).or_default();
                    e.0 += 1;
                    e.1 += d;
                }
                "memcpy" => r.copies_ns += d,
                "memset" => r.sets_ns += d,
                _ => {}
            }
        }
        return r;
    }
    let mut r = RecordedTime { source: "launch_to_sync".into(), ..Default::default() };
    let mut open: Option<u64> = None;
    let mut last_work = 0u64;
    let mut last_end = 0u64;
    for op in &plan.ops {
        let sync_copy = matches!(&op.kind, OpKind::Copy(c) if !c.is_async);
        if op.is_work() {
            open.get_or_insert(op.ts);
            last_work = op.ts;
            last_end = last_end.max(op.ts);
        }
        let is_sync = sync_copy || matches!(op.kind, OpKind::StreamSync | OpKind::CtxSync | OpKind::EventSync { .. });
        if is_sync && let (Some(s), Some(d)) = (open, op.duration_ns) {
            let end = op.ts + d;
            r.busy_ns += end.saturating_sub(s);
            last_end = last_end.max(end);
            open = None;
        }
    }
    if let Some(s) = open {
        r.busy_ns += last_work - s;
    }
    r.span_ns = plan.ops.iter().find(|o| o.is_work()).map(|o| last_end.saturating_sub(o.ts)).unwrap_or(0);
    r
}
