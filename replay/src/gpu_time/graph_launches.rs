//! Graph launches timed one by one: for each `cuGraphLaunch`, the span from
//! its first node's start to its last node's end and its busy time (union),
//! recorded and replayed. This is what rebuilding the execs as graphs
//! reproduces and running their work as separate launches does not: the
//! graph's nodes follow each other on the GPU without waiting for the host.
//!
//! Recorded: the recording's measured graph kernels (`gpu` lines with a
//! `graph_id`), one launch per (process, correlation id): CUPTI gives every
//! kernel of a graph launch the correlation id of its `cuGraphLaunch`.
//! Replayed: the CUPTI records paired with the ops of each graph launch
//! (`Plan::graph_ops`), per measured pass. Pure.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::{Op, union_ns};
use crate::plan::Plan;
use crate::recording::GpuActivity;

/// (span, busy) in ns of each recorded graph launch, in launch order.
pub fn recorded(gpu: &[&GpuActivity]) -> Vec<(u64, u64)> {
    let mut by: BTreeMap<(u32, u64), Vec<(u64, u64)>> = BTreeMap::new();
    for g in gpu.iter().filter(|g| g.graph_id != 0 && g.op == "kernel") {
        by.entry((g.pid, g.correlation_id)).or_default().push((g.ts, g.end_ts));
    }
    by.into_values().map(|mut iv| span_busy(&mut iv)).collect()
}

/// (span, busy) in ns of each replayed graph launch of each pass; `matched`:
/// per pass, (op, start, end, kind) of the records paired with ops.
pub fn replayed(plan: &Plan, matched: &[Vec<(usize, u64, u64, Op)>]) -> Vec<(u64, u64)> {
    let launch_of: BTreeMap<usize, usize> = plan.graph_ops.iter().map(|g| (g.op, g.launch_line)).collect();
    let mut out = Vec::new();
    for pass in matched {
        let mut by: BTreeMap<usize, Vec<(u64, u64)>> = BTreeMap::new();
        for &(op, start, end, kind) in pass {
            if kind == Op::Kernel
                && let Some(&line) = launch_of.get(&op)
            {
                by.entry(line).or_default().push((start, end));
            }
        }
        out.extend(by.into_values().map(|mut iv| span_busy(&mut iv)));
    }
    out
}

fn span_busy(iv: &mut [(u64, u64)]) -> (u64, u64) {
    let start = iv.iter().map(|x| x.0).min().unwrap_or(0);
    let end = iv.iter().map(|x| x.1).max().unwrap_or(0);
    (end - start, union_ns(iv))
}

fn median(mut v: Vec<u64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_unstable();
    let n = v.len();
    Some(if n % 2 == 1 { v[n / 2] as f64 } else { (v[n / 2 - 1] + v[n / 2]) as f64 / 2.0 })
}

/// The report's figures: launches, median span and busy (µs) of each side,
/// and the replayed median span's error against the recorded one. None
/// when nothing was replayed as a graph launch.
pub fn figures(rec: &[(u64, u64)], rep: &[(u64, u64)]) -> Option<Value> {
    if rep.is_empty() {
        return None;
    }
    let us = |x: Option<f64>| x.map(|v| v / 1e3);
    let side = |v: &[(u64, u64)]| {
        json!({
            "launches": v.len(),
            "span_us_median": us(median(v.iter().map(|x| x.0).collect())),
            "busy_us_median": us(median(v.iter().map(|x| x.1).collect())),
        })
    };
    let (r, p) = (median(rec.iter().map(|x| x.0).collect()), median(rep.iter().map(|x| x.0).collect()));
    let err = match (r, p) {
        (Some(r), Some(p)) if r > 0.0 => Some(100.0 * (p - r) / r),
        _ => None,
    };
    Some(json!({"recorded": side(rec), "replayed": side(rep), "span_error_pct": err}))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gpu(pid: u32, corr: u64, graph: u64, ts: u64, end: u64) -> GpuActivity {
        GpuActivity {
            line: 0,
            ts,
            end_ts: end,
            pid,
            op: "kernel".into(),
            name: None,
            stream_id: 7,
            size: 0,
            correlation_id: corr,
            graph_id: graph,
        }
    }

    #[test]
    fn launches_are_grouped_by_correlation_and_timed_first_start_to_last_end() {
        let g = [
            gpu(1, 10, 3, 100, 150),
            gpu(1, 10, 3, 160, 200), // launch 10: span 100, busy 90
            gpu(1, 11, 3, 300, 400),
            gpu(1, 11, 3, 350, 420), // launch 11: span 120, busy 120 (overlap)
            gpu(1, 12, 0, 500, 900), // not a graph kernel
            gpu(2, 10, 5, 0, 10),    // another process's launch 10
        ];
        let refs: Vec<&GpuActivity> = g.iter().collect();
        assert_eq!(recorded(&refs), vec![(100, 90), (120, 120), (10, 10)]);
        let f = figures(&recorded(&refs), &[(110, 90), (130, 120)]).unwrap();
        assert_eq!(f["recorded"]["launches"], 3);
        assert_eq!(f["recorded"]["span_us_median"], 0.1);
        assert_eq!(f["replayed"]["span_us_median"], 0.12);
        assert_eq!(f["replayed"]["busy_us_median"], 0.105);
        assert_eq!(f["span_error_pct"], 20.0);
        assert!(figures(&[(1, 1)], &[]).is_none());
    }
}
