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
use tracer_format::line::GpuActivity as Measured;

/// (span, busy) in ns of each recorded graph launch, in launch order.
pub fn recorded(gpu: &[&GpuActivity]) -> Vec<(u64, u64)> {
    let mut by: BTreeMap<(u32, u64), Vec<(u64, u64)>> = BTreeMap::new();
    for g in gpu.iter().filter(|g| g.graph_id != 0 && g.activity() == Some(Measured::Kernel)) {
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

/// One graph launch's work, by start: (start, end, label: the kernel's name, `memset` or `memcpy`).
pub type LaunchOps = Vec<(u64, u64, String)>;

fn label(op: &str, name: Option<&str>) -> String {
    match Measured::parse(op) {
        Some(Measured::Kernel) => name.unwrap_or("(unnamed kernel)").to_string(),
        _ => op.to_string(),
    }
}

/// Each recorded graph launch's work: the kernels with a graph id, and the
/// copies and sets CUPTI gave the same correlation id (their records carry
/// no graph id), by start.
pub fn recorded_ops(gpu: &[&GpuActivity]) -> Vec<LaunchOps> {
    let launches: std::collections::BTreeSet<(u32, u64)> = gpu
        .iter()
        .filter(|g| g.graph_id != 0 && g.activity() == Some(Measured::Kernel))
        .map(|g| (g.pid, g.correlation_id))
        .collect();
    let mut by: BTreeMap<(u32, u64), LaunchOps> = BTreeMap::new();
    for g in gpu.iter().filter(|g| launches.contains(&(g.pid, g.correlation_id))) {
        by.entry((g.pid, g.correlation_id)).or_default().push((g.ts, g.end_ts, label(&g.op, g.name.as_deref())));
    }
    let mut v: Vec<LaunchOps> = by.into_values().collect();
    v.iter_mut().for_each(|l| l.sort_by_key(|x| (x.0, x.1)));
    v
}

/// Each replayed graph launch's work (every pass), by start.
pub fn replayed_ops(plan: &Plan, matched: &[Vec<(usize, u64, u64, Op)>]) -> Vec<LaunchOps> {
    use crate::plan::OpKind;
    let launch_of: BTreeMap<usize, usize> = plan.graph_ops.iter().map(|g| (g.op, g.launch_line)).collect();
    let mut out = Vec::new();
    for pass in matched {
        let mut by: BTreeMap<usize, LaunchOps> = BTreeMap::new();
        for &(op, start, end, _) in pass {
            if let Some(&line) = launch_of.get(&op) {
                let l = match &plan.ops[op].kind {
                    OpKind::Launch(l) => l.kernel.clone(),
                    OpKind::Copy(_) => Measured::Memcpy.as_str().into(),
                    _ => Measured::Memset.as_str().into(),
                };
                by.entry(line).or_default().push((start, end, l));
            }
        }
        out.extend(by.into_values().map(|mut l| {
            l.sort_by_key(|x| (x.0, x.1));
            l
        }));
    }
    out
}

/// Per position of a launch of `n` ops (1..n): the median over `launches` of
/// the idle time before that op (its start − the latest end of the ops before
/// it, negative when it overlapped them: a programmatic launch), with the
/// position's (previous label, label) from the first launch.
fn position_gaps(launches: &[&LaunchOps], n: usize) -> Vec<(i64, (String, String))> {
    (1..n)
        .map(|i| {
            let mut g: Vec<i64> = launches
                .iter()
                .map(|l| {
                    let before = l[..i].iter().map(|x| x.1).max().unwrap_or(0);
                    l[i].0 as i64 - before as i64
                })
                .collect();
            g.sort_unstable();
            let k = launches[0];
            (g[(g.len() - 1) / 2], (k[i - 1].2.clone(), k[i].2.clone()))
        })
        .collect()
}

/// Where the idle time inside a graph launch goes, recorded vs replayed: the
/// launches of the most common number of ops on each side (the same graph),
/// the summed per-position median gaps, and the `top` transitions (previous
/// op → op, by label) whose summed gap differs most. None without launches of
/// the same size on both sides.
pub fn gaps(rec: &[LaunchOps], rep: &[LaunchOps], top: usize) -> Option<Value> {
    let modal = |v: &[LaunchOps]| {
        let mut c: BTreeMap<usize, usize> = BTreeMap::new();
        v.iter().for_each(|l| *c.entry(l.len()).or_default() += 1);
        c.into_iter().max_by_key(|&(n, k)| (k, n)).map(|x| x.0)
    };
    let n = modal(rec)?;
    if modal(rep)? != n || n < 2 {
        return None;
    }
    let r: Vec<&LaunchOps> = rec.iter().filter(|l| l.len() == n).collect();
    let p: Vec<&LaunchOps> = rep.iter().filter(|l| l.len() == n).collect();
    let (gr, gp) = (position_gaps(&r, n), position_gaps(&p, n));
    // per transition (recorded labels): positions, summed recorded and replayed gap
    let mut by: BTreeMap<(String, String), (u64, i64, i64)> = BTreeMap::new();
    for ((a, key), (b, _)) in gr.iter().zip(&gp) {
        let e = by.entry(key.clone()).or_default();
        *e = (e.0 + 1, e.1 + a, e.2 + b);
    }
    let mut rows: Vec<_> = by.into_iter().collect();
    rows.sort_by_key(|(k, (_, a, b))| (std::cmp::Reverse((b - a).abs()), k.clone()));
    let us = |ns: i64| ns as f64 / 1e3;
    let total = |g: &[(i64, (String, String))]| us(g.iter().map(|x| x.0).sum());
    Some(json!({
        "ops_per_launch": n,
        "launches": {"recorded": r.len(), "replayed": p.len()},
        "recorded_us": total(&gr),
        "replayed_us": total(&gp),
        "transitions": rows.into_iter().take(top).map(|((from, to), (k, a, b))| json!({
            "from": from, "to": to, "count": k, "recorded_us": us(a), "replayed_us": us(b)})).collect::<Vec<_>>(),
    }))
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
            src_kind: None,
            dst_kind: None,
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

    fn ops(v: &[(u64, u64, &str)]) -> LaunchOps {
        v.iter().map(|&(a, b, l)| (a, b, l.to_string())).collect()
    }

    #[test]
    fn gaps_inside_launches_by_transition() {
        // recorded: k1, memset, attn with 1 and 5 µs gaps; a splitK kernel overlapping k1's end by 1 µs
        let rec = [
            ops(&[(0, 10_000, "k1"), (9_000, 12_000, "splitK"), (13_000, 14_000, "memset"), (19_000, 30_000, "attn")]),
            ops(&[
                (100_000, 110_000, "k1"),
                (109_000, 112_000, "splitK"),
                (113_000, 114_000, "memset"),
                (119_000, 130_000, "attn"),
            ]),
            ops(&[(200_000, 210_000, "k1")]), // another size: left out
        ];
        // replayed: splitK after k1's end (+0.5 µs), memset → attn 9 µs
        let rep = [
            ops(&[(0, 10_000, "k1"), (10_500, 13_500, "splitK"), (14_500, 15_500, "memset"), (24_500, 35_500, "attn")]),
            ops(&[
                (50_000, 60_000, "k1"),
                (60_500, 63_500, "splitK"),
                (64_500, 65_500, "memset"),
                (74_500, 85_500, "attn"),
            ]),
            ops(&[
                (90_000, 100_000, "k1"),
                (100_500, 103_500, "splitK"),
                (104_500, 105_500, "memset"),
                (115_500, 126_500, "attn"),
            ]),
        ];
        let g = gaps(&rec, &rep, 5).unwrap();
        assert_eq!(g["ops_per_launch"], 4);
        assert_eq!(g["launches"], json!({"recorded": 2, "replayed": 3}));
        // recorded gaps -1 + 1 + 5 = 5 µs; replayed (medians) 0.5 + 1 + 9 = 10.5 µs
        assert_eq!((g["recorded_us"].as_f64(), g["replayed_us"].as_f64()), (Some(5.0), Some(10.5)));
        assert_eq!(
            g["transitions"],
            json!([
                {"from": "memset", "to": "attn", "count": 1, "recorded_us": 5.0, "replayed_us": 9.0},
                {"from": "k1", "to": "splitK", "count": 1, "recorded_us": -1.0, "replayed_us": 0.5},
                {"from": "splitK", "to": "memset", "count": 1, "recorded_us": 1.0, "replayed_us": 1.0}
            ])
        );
        assert!(gaps(&rec, &rep[..0], 5).is_none());
    }

    #[test]
    fn recorded_launch_ops_take_the_launchs_sets() {
        let mut set = gpu(1, 10, 0, 155, 158);
        set.op = "memset".into();
        let g = [gpu(1, 10, 3, 160, 200), set, gpu(1, 10, 3, 100, 150), gpu(1, 12, 0, 500, 900)];
        let refs: Vec<&GpuActivity> = g.iter().collect();
        let l = recorded_ops(&refs);
        assert_eq!(l.len(), 1);
        let labels: Vec<(u64, &str)> = l[0].iter().map(|x| (x.0, x.2.as_str())).collect();
        assert_eq!(labels, [(100, "(unnamed kernel)"), (155, "memset"), (160, "(unnamed kernel)")]);
    }
}
