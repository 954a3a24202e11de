//! The recording's own GPU time: from its measured GPU activity (`gpu` lines,
//! `--gpu-timestamps`) when present, else from launch-to-sync spans.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::plan::{GraphOp, Op, OpKind, Plan};
use crate::recording::{GpuActivity, Trace};
use tracer_format::line::GpuActivity as Measured;

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
            copy_lines: acts.iter().filter(|g| g.activity() == Some(Measured::Memcpy)).map(|g| (*g).clone()).collect(),
            ..Default::default()
        };
        r.span_ns = iv.iter().map(|x| x.1).max().unwrap_or(0) - iv[0].0;
        for g in &acts {
            let d = g.end_ts - g.ts;
            match g.activity() {
                Some(Measured::Kernel) => {
                    r.kernels_ns += d;
                    let e = r.per_kernel.entry(g.name.clone().unwrap_or_default()).or_default();
                    e.0 += 1;
                    e.1 += d;
                }
                Some(Measured::Memcpy) => r.copies_ns += d,
                Some(Measured::Memset) => r.sets_ns += d,
                None => {}
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

/// Each plan op's recorded GPU duration (ns): the `gpu` line that measured it,
/// None for ops that are no GPU work or that no line pairs with.
///
/// Per process, the lines in correlation id order (the order of the calls
/// that submitted them; one id: one call, a graph launch's records included)
/// pair with the work ops in op order, the ops of one graph launch as one
/// call: a call pairs with the first of the next [`LOOKAHEAD`] calls' records
/// whose kinds and kernel names are its ops' (records of calls the plan does
/// not replay are skipped; an op whose records are missing, as outside
/// `--gpu-sample` windows, stays unpaired).
pub fn op_durations(gpu: &[GpuActivity], ops: &[Op], graph_ops: &[GraphOp]) -> Vec<Option<u64>> {
    let mut out = vec![None; ops.len()];
    // The call each op was submitted by: a graph launch's ops share their launch's line.
    let launch_of: std::collections::HashMap<usize, usize> = graph_ops.iter().map(|g| (g.op, g.launch_line)).collect();
    let pids: std::collections::BTreeSet<u32> = ops.iter().map(|o| o.pid).collect();
    for pid in pids {
        let mut recs: Vec<&GpuActivity> = gpu.iter().filter(|g| g.pid == pid).collect();
        recs.sort_by_key(|g| (g.correlation_id, g.ts, g.line));
        // Calls: runs of one nonzero correlation id (an id of 0: unknown, a record alone).
        let mut calls: Vec<&[&GpuActivity]> = Vec::new();
        let mut k = 0;
        while k < recs.len() {
            let c = recs[k].correlation_id;
            let n = if c == 0 { 1 } else { recs[k..].iter().take_while(|g| g.correlation_id == c).count() };
            calls.push(&recs[k..k + n]);
            k += n;
        }
        let work: Vec<usize> = (0..ops.len()).filter(|&i| ops[i].pid == pid && ops[i].is_work()).collect();
        let mut next = 0;
        let mut w = 0;
        while w < work.len() {
            let key = |i: usize| launch_of.get(&work[i]).copied();
            let n = match key(w) {
                Some(l) => work[w..].iter().take_while(|&&i| launch_of.get(&i) == Some(&l)).count(),
                None => 1,
            };
            let unit = &work[w..w + n];
            w += n;
            for (j, call) in calls.iter().enumerate().skip(next).take(LOOKAHEAD) {
                if let Some(d) = pair(ops, unit, call) {
                    for (&op, ns) in unit.iter().zip(d) {
                        out[op] = Some(ns);
                    }
                    next = j + 1;
                    break;
                }
            }
        }
    }
    out
}

/// How many calls' records ahead a call's own may be.
pub const LOOKAHEAD: usize = 32;

/// The durations of `unit`'s ops from `call`'s records, each op taking the
/// first record of its kind and kernel name left (an op alone: all of them,
/// as a copy CUPTI measured in pieces); None unless all pair.
fn pair(ops: &[Op], unit: &[usize], call: &[&GpuActivity]) -> Option<Vec<u64>> {
    let mut free: Vec<bool> = vec![true; call.len()];
    let mut d = Vec::with_capacity(unit.len());
    for &i in unit {
        let (op, name) = match &ops[i].kind {
            OpKind::Launch(l) => ("kernel", Some(l.kernel.as_str())),
            OpKind::Copy(_) => ("memcpy", None),
            _ => ("memset", None),
        };
        let fits = |g: &GpuActivity| g.op == op && name.is_none_or(|n| g.name.as_deref().is_none_or(|m| m == n));
        let k = (0..call.len()).find(|&k| free[k] && fits(call[k]))?;
        free[k] = false;
        d.push(if unit.len() == 1 {
            call.iter().filter(|g| fits(g)).map(|g| g.end_ts - g.ts).sum()
        } else {
            call[k].end_ts - call[k].ts
        });
    }
    Some(d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{Launch, LaunchApi, Set};

    fn op(pid: u32, kernel: Option<&str>) -> Op {
        let kind = match kernel {
            Some(k) => OpKind::Launch(Launch {
                api: LaunchApi::Kernel,
                load: 0,
                kernel: k.into(),
                via_library: false,
                grid: [1; 3],
                block: [1; 3],
                shared_mem: 0,
                params: vec![],
                params_len: 0,
                params_from: "layout".into(),
                layout: None,
                attrs: vec![],
            }),
            None => OpKind::Set(Set { dst: 0, value: 0, elem: 1, count: 1, is_async: true, rows: None }),
        };
        Op { line: 0, ts: 0, duration_ns: None, pid, tid: pid, stream: Some(0), kind }
    }
    fn rec(pid: u32, op: &str, name: Option<&str>, corr: u64, ts: u64, ns: u64) -> GpuActivity {
        GpuActivity {
            line: 0,
            ts,
            end_ts: ts + ns,
            pid,
            op: op.into(),
            name: name.map(str::to_owned),
            stream_id: 7,
            size: 0,
            correlation_id: corr,
            graph_id: 0,
            src_kind: None,
            dst_kind: None,
        }
    }

    #[test]
    fn records_pair_with_ops_in_call_order() {
        // Process 1: a, a set, a graph launch (b, c: one call, records in any order), a, a.
        // Process 2: one kernel a.
        let ops = vec![
            op(1, Some("a")),
            op(1, None),
            op(1, Some("b")),
            op(1, Some("c")),
            op(1, Some("a")),
            op(2, Some("a")),
            op(1, Some("a")),
        ];
        let graph = [
            GraphOp { op: 2, launch_line: 40, captured_line: 10 },
            GraphOp { op: 3, launch_line: 40, captured_line: 11 },
        ];
        let gpu = vec![
            rec(1, "kernel", Some("c"), 12, 500, 3),
            rec(1, "memset", None, 11, 300, 2),
            rec(1, "kernel", Some("b"), 12, 400, 4),
            rec(1, "kernel", Some("a"), 10, 100, 1),
            // A call the plan does not replay (skipped), then op 4's kernel.
            rec(1, "kernel", Some("z"), 13, 600, 9),
            rec(1, "kernel", Some("a"), 14, 700, 5),
            // A copy measured in two pieces where a kernel a is expected: op 6 stays unpaired.
            rec(1, "memcpy", None, 15, 800, 6),
            rec(1, "memcpy", None, 15, 900, 6),
            rec(2, "kernel", Some("a"), 3, 100, 8),
        ];
        assert_eq!(op_durations(&gpu, &ops, &graph), vec![Some(1), Some(2), Some(4), Some(3), Some(5), Some(8), None]);
        // Without correlation ids: start order, each record a call of its own.
        let plain: Vec<GpuActivity> =
            [(100, 1), (300, 2)].iter().map(|&(ts, ns)| rec(1, "kernel", Some("a"), 0, ts, ns)).collect();
        let two = [op(1, Some("a")), op(1, Some("a"))];
        assert_eq!(op_durations(&plain, &two, &[]), vec![Some(1), Some(2)]);
    }
}
