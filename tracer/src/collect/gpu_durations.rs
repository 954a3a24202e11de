//! The durations a recording measured (its `gpu` lines as they are written),
//! kept compact for the durations library: per kernel configuration and per
//! copy kind at most [`CAP`] samples, evenly spread over the run (when a key
//! reaches the cap, every other sample is dropped and the stride doubles).
use std::collections::BTreeMap;

use serde_json::Value;

use crate::analysis::durations::{self, Config, DurationsFile};

/// Most samples kept per key.
pub const CAP: usize = 4096;

/// Every `stride`-th sample of a key, at most [`CAP`].
#[derive(Debug, Clone, Default)]
struct Samples<T> {
    kept: Vec<T>,
    stride: u64,
    seen: u64,
}

impl<T: Copy> Samples<T> {
    fn add(&mut self, x: T) {
        if self.stride == 0 {
            self.stride = 1;
        }
        if self.seen.is_multiple_of(self.stride) {
            self.kept.push(x);
            if self.kept.len() == CAP {
                let half: Vec<T> = self.kept.iter().copied().step_by(2).collect();
                self.kept = half;
                self.stride *= 2;
            }
        }
        self.seen += 1;
    }
}

#[derive(Debug, Default)]
pub struct Measured {
    kernels: BTreeMap<Config, Samples<u64>>,
    copies: BTreeMap<String, Samples<(u64, u64)>>,
    /// Samples seen, kept or not.
    pub records: u64,
}

/// A JSON `[x, y, z]` of grid or block dimensions.
pub(crate) fn u32x3(v: &Value) -> Option<[u32; 3]> {
    let a = v.as_array()?;
    let n = |i: usize| a.get(i).and_then(Value::as_u64).map(|x| x as u32);
    Some([n(0)?, n(1)?, n(2)?])
}

impl Measured {
    /// A trace line; anything but a `gpu` line with a duration is ignored.
    pub fn add(&mut self, v: &Value) {
        if v["type"] != "gpu" {
            return;
        }
        let (Some(ts), Some(end)) = (v["ts"].as_u64(), v["end_ts"].as_u64()) else { return };
        let d = end.saturating_sub(ts);
        match v["op"].as_str() {
            Some("kernel") => {
                let (Some(name), Some(grid), Some(block)) = (v["name"].as_str(), u32x3(&v["grid"]), u32x3(&v["block"]))
                else {
                    return;
                };
                let smem = v["shared_mem"].as_u64().unwrap_or(0) as u32;
                self.kernels.entry((name.to_string(), grid, block, smem)).or_default().add(d);
            }
            Some("memcpy") => {
                let kind = v["direction"].as_str().unwrap_or("default").to_string();
                self.copies.entry(kind).or_default().add((v["size"].as_u64().unwrap_or(0), d));
            }
            Some("memset") => self.copies.entry("memset".into()).or_default().add((v["size"].as_u64().unwrap_or(0), d)),
            _ => return,
        }
        self.records += 1;
    }

    /// The calibration of what was measured (None: nothing was), `gpu` its model.
    /// Counts are the samples seen, the statistics those of the samples kept.
    pub fn file(&self, gpu: Option<String>) -> Option<DurationsFile> {
        if self.records == 0 {
            return None;
        }
        let k = self.kernels.iter().map(|(c, s)| (c.clone(), s.kept.clone())).collect();
        let c = self.copies.iter().map(|(c, s)| (c.clone(), s.kept.clone())).collect();
        let mut f = durations::from_samples(k, c, gpu);
        let seen: BTreeMap<&Config, u64> = self.kernels.iter().map(|(c, s)| (c, s.seen)).collect();
        for e in &mut f.kernels {
            let key = (e.kernel.clone(), e.grid, e.block, e.shared_mem);
            e.count = seen.get(&key).copied().unwrap_or(e.count);
        }
        for e in &mut f.copies {
            e.count = self.copies.get(&e.kind).map_or(e.count, |s| s.seen);
        }
        Some(f)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn gpu_lines_become_a_calibration_with_every_sample_counted() {
        let mut m = Measured::default();
        let k = |ts: u64, d: u64, grid: u32| {
            json!({"ts": ts, "end_ts": ts + d, "type": "gpu", "op": "kernel", "name": "kA",
                   "grid": [grid, 1, 1], "block": [64, 1, 1], "shared_mem": 0})
        };
        for (i, d) in [10u64, 30, 20, 40, 50].iter().enumerate() {
            m.add(&k(1000 * i as u64, *d, 1));
        }
        m.add(&k(9000, 100, 2));
        m.add(&json!({"ts": 1, "end_ts": 2001, "type": "gpu", "op": "memcpy", "size": 100, "direction": "h2d"}));
        m.add(&json!({"ts": 1, "end_ts": 52001, "type": "gpu", "op": "memcpy", "size": 2000000, "direction": "h2d"}));
        m.add(&json!({"ts": 5, "type": "launch", "name": "kA"}));
        m.add(&json!({"ts": 5, "end_ts": 9, "type": "gpu_window"}));
        assert_eq!(m.records, 8);
        let f = m.file(Some("NVIDIA H200".into())).unwrap();
        assert_eq!(f.gpu.as_deref(), Some("NVIDIA H200"));
        let a = &f.kernels[0];
        assert_eq!((a.grid, a.count, a.median_ns, a.p10_ns, a.p90_ns), ([1, 1, 1], 5, 30, 10, 50));
        assert_eq!((f.kernels[1].grid, f.kernels[1].count), ([2, 1, 1], 1));
        assert_eq!((f.copies[0].kind.as_str(), f.copies[0].count, f.copies[0].base_ns), ("h2d", 2, 2000));
        assert_eq!(f.copies[0].ns_per_byte, 0.025);
        assert!(Measured::default().file(None).is_none());
    }

    #[test]
    fn a_key_keeps_at_most_the_cap_spread_over_the_run() {
        let mut s = Samples::default();
        for i in 0..(CAP as u64 * 3) {
            s.add(i);
        }
        assert_eq!(s.seen, CAP as u64 * 3);
        assert!(s.kept.len() < CAP && s.kept.len() >= CAP / 2, "{}", s.kept.len());
        // evenly spread: every stride-th sample from the first
        assert_eq!(s.stride, 4);
        assert!(s.kept.iter().enumerate().all(|(i, &x)| x == i as u64 * 4));
    }
}
