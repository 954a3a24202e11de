//! The report's CUPTI figures: the records of each measured pass turned into
//! per-mode totals (paired with the ops), per family, per kernel and per
//! segment, and the isolated durations.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::error_pct;
use super::recorded::RecordedTime;
use super::segments::Measured;
use super::{Activity, Op, Totals, matching, mean, split};
use crate::plan::{Plan, family::family};
use tracer_cupti::collect::Taken;

/// The recording's trace line of an op and the recorded time of its call.
pub type OpLink = (usize, u64);

/// What one mode's passes measured.
pub struct ModeGpu {
    pub json: Value,
    /// The measured ops of every pass whose records paired with its ops.
    pub matched: Vec<Vec<Measured>>,
    /// For each record of the last pass (`passes.last()`), the recording's
    /// line and call time of the op it measured (None where not paired).
    pub last_links: Vec<Option<OpLink>>,
    /// Every measured pass's records, sorted by start.
    pub passes: Vec<Vec<Activity>>,
    /// Per phase and iteration ([`segment_rows`] of `matched`), when the caller has them.
    pub segments: Option<Value>,
}

fn us(ns: f64) -> f64 {
    ns / 1e3
}

/// Figures of one mode from the records `taken` after its passes; `windows`:
/// each measured pass's CLOCK_MONOTONIC window (warm-ups left out); `sub`:
/// the ops each pass submitted, to pair the records with (None: a graph's
/// passes, whose records do not follow the ops' streams: totals only).
pub fn mode_gpu(
    plan: &Plan,
    sub: Option<&[matching::Submitted]>,
    taken: Taken,
    windows: &[(u64, u64)],
    rec: &RecordedTime,
) -> ModeGpu {
    let (passes, outside, no_ts) = split(taken.activities, windows);
    let totals: Vec<Totals> = passes.iter().map(|p| Totals::of(p)).collect();
    let m = |f: fn(&Totals) -> u64| us(mean(totals.iter().map(f)));
    let (busy, span, kern, copies, sets) =
        (m(|t| t.busy_ns), m(|t| t.span_ns), m(|t| t.kernels_ns), m(|t| t.copies_ns), m(|t| t.sets_ns));
    let gpu_lines = rec.source == "gpu_lines";
    let vs = |x: f64, r: u64| if gpu_lines { error_pct(x, us(r as f64)) } else { None };
    let mut matched = Vec::new();
    let mut match_errors = Vec::new();
    let mut last_links = passes.last().map_or(vec![], |p| vec![None; p.len()]);
    if let Some(sub) = sub {
        for (k, p) in passes.iter().enumerate() {
            let pairs = if sub.iter().any(|s| s.graph.is_some()) {
                matching::match_by_correlation(sub, p)
            } else {
                matching::match_ops(sub, p)
            };
            match pairs {
                Ok(pairs) => {
                    if k + 1 == passes.len() {
                        for &(op, i) in &pairs {
                            last_links[i] = Some((plan.ops[op].line, plan.ops[op].ts));
                        }
                    }
                    matched.push(pairs.iter().map(|&(op, i)| (op, p[i].start, p[i].end, p[i].op)).collect());
                }
                Err(e) => match_errors.push(format!("pass {}: {e}", k + 1)),
            }
        }
    }
    let mut json = json!({
        "source": "cupti",
        "busy_us": busy, "span_us": span, "kernels_us": kern, "copies_us": copies, "sets_us": sets,
        "busy_error_pct": vs(busy, rec.busy_ns),
        "kernels_error_pct": vs(kern, rec.kernels_ns), "copies_error_pct": vs(copies, rec.copies_ns),
        "sets_error_pct": vs(sets, rec.sets_ns),
        "passes": totals.iter().map(|t| json!({"busy_us": us(t.busy_ns as f64), "span_us": us(t.span_ns as f64),
            "kernels_us": us(t.kernels_ns as f64), "copies_us": us(t.copies_ns as f64), "sets_us": us(t.sets_ns as f64),
            "kernels": t.kernels, "copies": t.copies, "sets": t.sets})).collect::<Vec<_>>(),
        "records_outside_passes": outside, "records_without_timestamp": no_ts, "dropped_by_cupti": taken.dropped,
    });
    if gpu_lines && (totals.iter().any(|t| t.copies > 0) || rec.copies_ns > 0) {
        json["copies_by_host_memory"] = super::copy_kinds::by_class(&rec.copy_lines, &passes);
    }
    if let Some(sub) = sub {
        let expected = |op| sub.iter().filter(|s| s.kind == op).count();
        json["expected_per_pass"] =
            json!({"kernels": expected(Op::Kernel), "copies": expected(Op::Memcpy), "sets": expected(Op::Memset)});
        json["paired_passes"] = json!(matched.len());
        json["pairing_errors"] = json!(match_errors);
        let replayed = super::graph_launches::replayed(plan, &matched);
        if let Some(g) = super::graph_launches::figures(&rec.graph_launches, &replayed) {
            json["graph_launches"] = g;
            let rep_ops = super::graph_launches::replayed_ops(plan, &matched);
            if let Some(gaps) = super::graph_launches::gaps(&rec.graph_launch_ops, &rep_ops, 6) {
                json["graph_launches"]["gaps"] = gaps;
            }
        }
    }
    ModeGpu { json, matched, last_links, passes, segments: None }
}

fn family_of(a: &Activity) -> &'static str {
    match a.op {
        Op::Kernel => family(a.name.as_deref().unwrap_or("")),
        Op::Memcpy => "copy",
        Op::Memset => "set",
    }
}

/// Recorded vs replayed (CUPTI, mean per pass) time per family and per
/// kernel name (top `top` by recorded time, then replayed).
pub fn families_and_kernels(last_passes: &[Vec<Activity>], rec: &RecordedTime, top: usize) -> (Value, Value) {
    let n = last_passes.len().max(1) as f64;
    let mut fam: BTreeMap<&'static str, f64> = BTreeMap::new();
    let mut ker: BTreeMap<String, (u64, f64)> = BTreeMap::new();
    for p in last_passes {
        for a in p {
            let d = (a.end - a.start) as f64;
            *fam.entry(family_of(a)).or_default() += d;
            if a.op == Op::Kernel {
                let e = ker.entry(a.name.as_deref().unwrap_or("").to_owned()).or_default();
                e.0 += 1;
                e.1 += d;
            }
        }
    }
    let rec_fam = rec.per_family_ns();
    let fams: Vec<Value> = crate::plan::family::FAMILIES
        .iter()
        .filter(|f| fam.contains_key(**f) || rec_fam.get(**f).is_some_and(|x| *x > 0))
        .map(|f| {
            let (r, p) = (us(rec_fam.get(f).copied().unwrap_or(0) as f64), us(fam.get(f).copied().unwrap_or(0.0) / n));
            json!({"family": f, "recorded_us": r, "replayed_us": p, "error_pct": error_pct(p, r)})
        })
        .collect();
    let mut names: Vec<&String> = ker.keys().chain(rec.per_kernel.keys()).collect();
    names.sort();
    names.dedup();
    let mut rows: Vec<(f64, f64, Value)> = names
        .into_iter()
        .map(|k| {
            let (rn, rns) = rec.per_kernel.get(k).copied().unwrap_or((0, 0));
            let (pn, pns) = ker.get(k).copied().unwrap_or((0, 0.0));
            let (r, p) = (us(rns as f64), us(pns / n));
            (r, p, json!({"kernel": k, "family": family(k), "recorded_launches": rn, "replayed_launches_per_pass": pn as f64 / n,
                "recorded_us": r, "replayed_us": p, "error_pct": error_pct(p, r)}))
        })
        .collect();
    rows.sort_by(|a, b| b.0.total_cmp(&a.0).then(b.1.total_cmp(&a.1)));
    (Value::Array(fams), Value::Array(rows.into_iter().take(top).map(|x| x.2).collect()))
}

/// CUPTI's durations (ms, sorted) of each isolated target's timed runs:
/// the records of the target's kind inside its window, less those of
/// `exclude_bytes` (the L2 flush's memsets); None where their number is not
/// `reps` (the caller keeps the event timing and says so).
pub fn isolated_durations(
    plan: &Plan,
    targets: &[usize],
    windows: &[(u64, u64)],
    taken: Taken,
    reps: u32,
    exclude_bytes: Option<u64>,
) -> Vec<Option<Vec<f64>>> {
    let (per, _, _) = split(taken.activities, windows);
    targets
        .iter()
        .zip(per)
        .map(|(&op, acts)| {
            let kind = match &plan.ops[op].kind {
                crate::plan::OpKind::Launch(_) => Op::Kernel,
                crate::plan::OpKind::Copy(_) => Op::Memcpy,
                _ => Op::Memset,
            };
            let mut v: Vec<f64> = acts
                .iter()
                .filter(|a| a.op == kind && (a.op == Op::Kernel || Some(a.bytes) != exclude_bytes))
                .map(|a| (a.end - a.start) as f64 / 1e6)
                .collect();
            if v.len() != reps.max(1) as usize {
                return None;
            }
            v.sort_by(f64::total_cmp);
            Some(v)
        })
        .collect()
}

/// Recorded vs replayed busy time per phase and iteration (the recording's
/// markers), over the passes whose records paired with their ops; None
/// without markers or paired passes.
pub fn segment_rows(rec: &crate::recording::Recording, p: &Plan, matched: &[Vec<Measured>]) -> Option<Value> {
    use super::segments;
    let end = rec.trace.gpu.iter().map(|x| x.end_ts).chain(p.ops.iter().map(|o| o.ts)).max().unwrap_or(0);
    let segs = segments::segments(&rec.trace.markers, end);
    if segs.is_empty() || matched.is_empty() {
        return None;
    }
    let op_ts: Vec<u64> = p.ops.iter().map(|o| o.ts).collect();
    let recorded: Vec<(u64, u64, Op)> =
        super::recorded::plan_gpu_lines(&rec.trace, p).iter().map(|x| (x.ts, x.end_ts, x.measured_op())).collect();
    Some(json!(segments::compare(&segs, &op_ts, &recorded, matched)))
}
