//! The kernel durations of the replay's own passes, as CUPTI measured them
//! in context (each kernel after the ones it followed when recorded, on the
//! memory and L2 contents they left): `NAME.rec/sequence-durations.json`, in
//! the `tracer calibrate` format, so that `tracer whatif NAME.rec
//! --durations` predicts the recording on the GPU the replay ran on
//! (docs/what-if.md). Isolated mode's `kernel-durations.json` times each
//! kernel alone with the L2 flushed, which bounds it from above (+12 … +25 %
//! per family on GPT-2); these are the durations the kernels had in the
//! sequence (−0.3 … −1 % of the recording's when replayed on its own GPU).

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::segments::Measured;
use crate::plan::{OpKind, Plan};

fn rank(v: &[u64], p: f64) -> u64 {
    let k = ((p / 100.0) * v.len() as f64).ceil().max(1.0) as usize;
    v[k.min(v.len()) - 1]
}

/// The durations file of the measured ops of `passes` (every paired pass):
/// per kernel and geometry the median, p10 and p90 of its runs; per copy
/// direction and for sets a size model (median of the runs ≤ 64 KiB, and
/// the median extra time per byte of those over 1 MiB) where both sizes ran.
pub fn durations_file(plan: &Plan, passes: &[Vec<Measured>], gpu: Option<&str>) -> Value {
    type Geo = (String, [u32; 3], [u32; 3], u32);
    let mut kernels: BTreeMap<Geo, Vec<u64>> = BTreeMap::new();
    let mut copies: BTreeMap<&'static str, Vec<(u64, u64)>> = BTreeMap::new();
    for &(op, start, end, _) in passes.iter().flatten() {
        let d = end.saturating_sub(start);
        match &plan.ops[op].kind {
            OpKind::Launch(l) => {
                kernels.entry((l.kernel.clone(), l.grid, l.block, l.shared_mem)).or_default().push(d);
            }
            OpKind::Copy(c) => copies.entry(c.direction.as_str()).or_default().push((c.size, d)),
            OpKind::Set(s) => copies.entry("memset").or_default().push((s.bytes(), d)),
            _ => {}
        }
    }
    let n = passes.len().max(1) as u64;
    let kernels: Vec<Value> = kernels
        .into_iter()
        .map(|((kernel, grid, block, shared_mem), mut v)| {
            v.sort_unstable();
            json!({"kernel": kernel, "grid": grid, "block": block, "shared_mem": shared_mem,
                "count": v.len() as u64 / n, "median_ns": rank(&v, 50.0), "p10_ns": rank(&v, 10.0),
                "p90_ns": rank(&v, 90.0)})
        })
        .collect();
    let copies: Vec<Value> = copies
        .into_iter()
        .filter_map(|(kind, v)| {
            let mut small: Vec<u64> = v.iter().filter(|x| x.0 <= 64 << 10).map(|x| x.1).collect();
            if small.is_empty() || !v.iter().any(|x| x.0 > 1 << 20) {
                return None;
            }
            small.sort_unstable();
            let base = rank(&small, 50.0);
            let mut per_byte: Vec<f64> = v
                .iter()
                .filter(|x| x.0 > 1 << 20)
                .map(|&(size, d)| d.saturating_sub(base) as f64 / size as f64)
                .collect();
            per_byte.sort_by(f64::total_cmp);
            let k = ((per_byte.len() as f64) * 0.5).ceil().max(1.0) as usize - 1;
            Some(json!({"kind": kind, "count": v.len() as u64 / n, "base_ns": base, "ns_per_byte": per_byte[k]}))
        })
        .collect();
    json!({"format": "tracer-kernel-durations", "version": 1, "source": "replay sequence (cupti, in context)",
        "gpu": gpu, "passes": passes.len(), "kernels": kernels, "copies": copies})
}
