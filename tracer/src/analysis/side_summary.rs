//! The summary's lines about markers and NVML samples: how many markers of
//! each kind, and per GPU the samples, the energy between the first and
//! last sample, and the mean and peak power.
use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::Value;

#[derive(Default, Debug)]
struct Gpu {
    samples: u64,
    first: Option<(u64, u64)>,
    last: Option<(u64, u64)>,
    peak_mw: u64,
}

#[derive(Default, Debug)]
pub struct SideSummary {
    markers: BTreeMap<String, u64>,
    gpus: BTreeMap<u64, Gpu>,
}

impl SideSummary {
    pub fn add(&mut self, v: &Value) {
        match v["type"].as_str() {
            Some("marker") => *self.markers.entry(v["op"].as_str().unwrap_or("?").to_string()).or_default() += 1,
            Some("power") => {
                let g = self.gpus.entry(v["gpu"].as_u64().unwrap_or(0)).or_default();
                g.samples += 1;
                g.peak_mw = g.peak_mw.max(v["power_mw"].as_u64().unwrap_or(0));
                if let (Some(ts), Some(e)) = (v["ts"].as_u64(), v["energy_mj"].as_u64()) {
                    g.first.get_or_insert((ts, e));
                    g.last = Some((ts, e));
                }
            }
            _ => {}
        }
    }

    /// The same figures as [`SideSummary::render`], for `tracer summary --json`.
    pub fn to_json(&self) -> (Value, Value) {
        let gpus: Vec<Value> = self
            .gpus
            .iter()
            .map(|(i, g)| {
                let energy = match (g.first, g.last) {
                    (Some((t0, e0)), Some((t1, e1))) if t1 > t0 => serde_json::json!({
                        "joules": e1.saturating_sub(e0) as f64 / 1e3, "seconds": (t1 - t0) as f64 / 1e9}),
                    _ => Value::Null,
                };
                serde_json::json!({"gpu": i, "samples": g.samples, "energy": energy, "peak_w": g.peak_mw as f64 / 1e3})
            })
            .collect();
        (serde_json::json!(self.markers), Value::Array(gpus))
    }

    pub fn render(&self, s: &mut String) {
        if !self.markers.is_empty() {
            let parts: Vec<String> =
                self.markers.iter().map(|(op, n)| format!("{n} {}", super::inert::name(op))).collect();
            let _ = writeln!(s, "markers: {}", parts.join(", "));
        }
        for (i, g) in &self.gpus {
            let _ = write!(s, "power: GPU {i}: {} samples", g.samples);
            if let (Some((t0, e0)), Some((t1, e1))) = (g.first, g.last)
                && t1 > t0
            {
                let (j, secs) = (e1.saturating_sub(e0) as f64 / 1e3, (t1 - t0) as f64 / 1e9);
                let _ = write!(s, ", {j:.1} J over {secs:.2} s ({:.1} W mean)", j / secs);
            }
            let _ = writeln!(s, ", peak {:.1} W", g.peak_mw as f64 / 1e3);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn counts_and_energy() {
        let mut m = SideSummary::default();
        for (ts, e, p) in
            [(1_000_000_000u64, 5_000u64, 70_000u64), (2_000_000_000, 75_000, 90_000), (3_000_000_000, 155_000, 80_000)]
        {
            m.add(&json!({"type":"power","gpu":0,"ts":ts,"energy_mj":e,"power_mw":p}));
        }
        m.add(&json!({"type":"power","gpu":1,"ts":5,"energy_mj":null,"power_mw":null}));
        m.add(&json!({"type":"marker","op":"phase"}));
        m.add(&json!({"type":"marker","op":"iteration"}));
        m.add(&json!({"type":"marker","op":"iteration"}));
        let mut s = String::new();
        m.render(&mut s);
        assert_eq!(
            s,
            "markers: 2 iteration, 1 phase\npower: GPU 0: 3 samples, 150.0 J over 2.00 s (75.0 W mean), peak 90.0 W\npower: GPU 1: 1 samples, peak 0.0 W\n"
        );
    }
}
