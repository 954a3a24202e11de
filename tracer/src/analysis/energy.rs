//! Energy between two instants from NVML samples (lines.md #2).
//!
//! The device's energy counter (`energy_mj`) is read every sampling period
//! but the driver updates it less often on some GPUs, so successive samples
//! repeat a value. The instants where the value changed ("update points")
//! are taken as when the counter was right, and E(t) is interpolated linearly
//! between them (and held from the last update point to the last sample).
//! Energy over [a, b] = E(b) − E(a). The counter's update period is the
//! median time between update points; an interval shorter than two periods
//! is flagged `uncertain`, and `uncertainty_j` = mean power × one period
//! (up to half a period of misplacement at each end).
//! Without a counter (all `energy_mj` null), power samples are integrated
//! (trapezoids, linear interpolation at the ends). An interval only partly
//! covered by samples gets the energy of the covered part, flagged
//! uncertain, with `covered_share`.
//!
//! Public: [`series`] / [`series_of`] (per-GPU, also the power curve for plots),
//! [`energy_between`], [`energy_all_gpus`].
use serde::Serialize;

use super::model::{PowerSample, Trace};

#[derive(Clone, Debug, Default)]
pub struct EnergySeries {
    pub gpu: u32,
    /// Update points of the energy counter: (ts, mJ).
    pub points: Vec<(u64, f64)>,
    /// Median time between counter updates.
    pub update_period_ns: Option<u64>,
    /// Power samples (ts, W).
    pub power: Vec<(u64, f64)>,
    /// SM clock samples (ts, MHz).
    pub sm_clock: Vec<(u64, f64)>,
    /// Utilization samples (ts, %).
    pub util: Vec<(u64, f64)>,
    pub sample_period_ns: Option<u64>,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Energy {
    pub joules: f64,
    /// "counter" or "power_integral".
    pub method: &'static str,
    pub uncertain: bool,
    pub uncertainty_j: f64,
    /// Share of the interval the samples cover (1 unless the interval starts
    /// before the first or ends after the last sample; then `joules` is the
    /// energy of the covered part only).
    pub covered_share: f64,
}

fn median(mut v: Vec<u64>) -> Option<u64> {
    v.sort_unstable();
    (!v.is_empty()).then(|| v[(v.len() - 1) / 2])
}

/// One series per GPU that has samples.
pub fn series(t: &Trace) -> Vec<EnergySeries> {
    series_of(&t.power)
}

/// One series per GPU from NVML samples in any order (a trace's `power`
/// lines): the one rule behind every energy figure (`tracer report`, the
/// phase chart of `tracer plot`).
pub fn series_of(samples: &[PowerSample]) -> Vec<EnergySeries> {
    let mut sorted: Vec<&PowerSample> = samples.iter().collect();
    sorted.sort_by_key(|p| (p.gpu, p.ts));
    let mut out: Vec<EnergySeries> = Vec::new();
    for &p in &sorted {
        if out.last().is_none_or(|s| s.gpu != p.gpu) {
            out.push(EnergySeries { gpu: p.gpu, ..Default::default() });
        }
        let s = out.last_mut().unwrap();
        if let Some(e) = p.energy_mj {
            let e = e as f64;
            match s.points.last() {
                Some(&(_, last)) if last == e => {}
                _ => s.points.push((p.ts, e)),
            }
        }
        if let Some(w) = p.power_mw {
            s.power.push((p.ts, w as f64 / 1000.0));
        }
        if let Some(c) = p.sm_clock_mhz {
            s.sm_clock.push((p.ts, c as f64));
        }
        if let Some(u) = p.util_gpu_pct {
            s.util.push((p.ts, u as f64));
        }
    }
    for s in &mut out {
        let samples: Vec<&PowerSample> = sorted.iter().copied().filter(|p| p.gpu == s.gpu).collect();
        s.sample_period_ns = median(samples.windows(2).map(|w| w[1].ts - w[0].ts).collect());
        s.update_period_ns = median(s.points.windows(2).map(|w| w[1].0 - w[0].0).collect());
        // hold the last value until the last sample that carried a counter
        if let (Some(&(lt, lv)), Some(last)) = (s.points.last(), samples.iter().rev().find(|p| p.energy_mj.is_some()))
            && last.ts > lt
        {
            s.points.push((last.ts, lv));
        }
    }
    out
}

/// Linear interpolation in sorted (x, y) points; None outside their range.
fn interp(p: &[(u64, f64)], x: u64) -> Option<f64> {
    let i = p.partition_point(|q| q.0 < x);
    if i < p.len() && p[i].0 == x {
        return Some(p[i].1);
    }
    if i == 0 || i == p.len() {
        return None;
    }
    let (x0, y0) = p[i - 1];
    let (x1, y1) = p[i];
    Some(y0 + (y1 - y0) * (x - x0) as f64 / (x1 - x0) as f64)
}

/// Energy over [a, b]. If the samples cover only part of it, the energy of
/// the covered part, flagged uncertain with `covered_share` < 1; None if they
/// cover none of it.
pub fn energy_between(s: &EnergySeries, a: u64, b: u64) -> Option<Energy> {
    if b <= a {
        return None;
    }
    let (lo, hi) = match (s.points.len() >= 2, s.power.len() >= 2) {
        (true, _) => (s.points[0].0, s.points[s.points.len() - 1].0),
        (false, true) => (s.power[0].0, s.power[s.power.len() - 1].0),
        _ => return None,
    };
    let (ca, cb) = (a.max(lo), b.min(hi));
    if cb <= ca {
        return None;
    }
    let covered = (cb - ca) as f64 / (b - a) as f64;
    let mut e = energy_covered(s, ca, cb)?;
    if cb - ca < b - a {
        e.uncertain = true;
        e.covered_share = covered;
    }
    Some(e)
}

fn energy_covered(s: &EnergySeries, a: u64, b: u64) -> Option<Energy> {
    if s.points.len() >= 2 {
        let ea = interp(&s.points, a)?;
        let eb = interp(&s.points, b)?;
        let j = (eb - ea) / 1000.0;
        let period = s.update_period_ns.unwrap_or(0);
        let mean_w = j / ((b - a) as f64 / 1e9);
        return Some(Energy {
            joules: j,
            method: "counter",
            uncertain: b - a < 2 * period,
            uncertainty_j: mean_w * period as f64 / 1e9,
            covered_share: 1.0,
        });
    }
    if s.power.len() >= 2 {
        let p = &s.power;
        let pa = interp(p, a)?;
        let pb = interp(p, b)?;
        let mut pts = vec![(a, pa)];
        pts.extend(p.iter().copied().filter(|q| q.0 > a && q.0 < b));
        pts.push((b, pb));
        let j: f64 = pts.windows(2).map(|w| (w[1].0 - w[0].0) as f64 / 1e9 * (w[0].1 + w[1].1) / 2.0).sum();
        let inside = pts.len() - 2;
        return Some(Energy {
            joules: j,
            method: "power_integral",
            uncertain: inside < 2,
            uncertainty_j: 0.0,
            covered_share: 1.0,
        });
    }
    None
}

/// Sum over all GPUs with samples; None if no GPU covers [a, b].
pub fn energy_all_gpus(series: &[EnergySeries], a: u64, b: u64) -> Option<Energy> {
    let mut acc: Option<Energy> = None;
    for s in series {
        if let Some(e) = energy_between(s, a, b) {
            acc = Some(match acc {
                None => e,
                Some(x) => Energy {
                    joules: x.joules + e.joules,
                    method: if x.method == e.method { x.method } else { "mixed" },
                    uncertain: x.uncertain || e.uncertain,
                    uncertainty_j: x.uncertainty_j + e.uncertainty_j,
                    covered_share: x.covered_share.min(e.covered_share),
                },
            });
        }
    }
    acc
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::model::parse_str;

    fn sample(ts_ms: u64, e: Option<u64>, p: u64) -> String {
        let e = e.map_or("null".to_string(), |e| e.to_string());
        format!(
            r#"{{"ts":{},"pid":0,"tid":0,"type":"power","op":"sample","name":"nvml","gpu":0,"energy_mj":{e},"power_mw":{p},"sm_clock_mhz":1980}}"#,
            ts_ms * 1_000_000
        )
    }

    #[test]
    fn counter_with_slow_updates() {
        // sampled every 10 ms, counter updates every 20 ms at 100 W (2000 mJ / 20 ms)
        let l: Vec<String> = (0..=10).map(|i| sample(i * 10, Some(1_000_000 + 2000 * (i / 2)), 100_000)).collect();
        let t = parse_str("p", &l.join("\n")).unwrap();
        let s = series(&t);
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].points.len(), 6);
        assert_eq!(s[0].update_period_ns, Some(20_000_000));
        assert_eq!(s[0].sample_period_ns, Some(10_000_000));
        // 20 ms .. 80 ms: 6000 mJ
        let e = energy_between(&s[0], 20_000_000, 80_000_000).unwrap();
        assert!((e.joules - 6.0).abs() < 1e-9, "{e:?}");
        assert_eq!(e.method, "counter");
        assert!(!e.uncertain);
        assert!((e.uncertainty_j - 2.0).abs() < 1e-9);
        // 30 ms interval: interpolated between update points (20, 40 ms): 10..40 -> 1000 + 2000 = 3 J
        let e = energy_between(&s[0], 30_000_000, 60_000_000).unwrap();
        assert!((e.joules - 3.0).abs() < 1e-9, "{e:?}");
        assert!(e.uncertain);
        // held after the last update (100 ms is both)
        assert!(energy_between(&s[0], 90_000_000, 100_000_000).is_some());
        // partly covered: the covered part, flagged
        let e = energy_between(&s[0], 90_000_000, 110_000_000).unwrap();
        assert!((e.joules - 1.0).abs() < 1e-9 && e.uncertain && e.covered_share == 0.5, "{e:?}");
        assert!(energy_between(&s[0], 100_000_000, 110_000_000).is_none());
    }

    #[test]
    fn power_integral_without_counter() {
        let l = [sample(0, None, 100_000), sample(10, None, 200_000), sample(20, None, 200_000)];
        let t = parse_str("p", &l.join("\n")).unwrap();
        let s = series(&t);
        let e = energy_between(&s[0], 5_000_000, 20_000_000).unwrap();
        // 5..10 ms: (150+200)/2 W * 5 ms = 0.875 J; 10..20 ms: 200 W * 10 ms = 2 J
        assert!((e.joules - 2.875).abs() < 1e-9, "{e:?}");
        assert_eq!(e.method, "power_integral");
        assert!(e.uncertain);
        let all = energy_all_gpus(&s, 0, 20_000_000).unwrap();
        assert!((all.joules - 3.5).abs() < 1e-9);
    }

    /// The known answer: 100 W until 500 ms, 300 W after; NVML sampled every
    /// 10 ms, its counter updated every 100 ms (a sample repeats the value of
    /// the last update). E(t) is linear between updates, so the energy of any
    /// interval is exact: [230, 770] ms = 0.27 s × 100 W + 0.27 s × 300 W.
    /// (Interpolating between the repeated samples instead, as `tracer plot`
    /// once did, gives 90 J here.)
    #[test]
    fn exact_between_counter_updates() {
        let e_at = |ms: u64| if ms <= 500 { 100 * ms } else { 50_000 + 300 * (ms - 500) }; // mJ
        let l: Vec<String> = (0..=100).map(|i| sample(i * 10, Some(e_at(i * 10 / 100 * 100)), 0)).collect();
        let mut samples = parse_str("p", &l.join("\n")).unwrap().power;
        samples.reverse(); // any order
        let s = series_of(&samples);
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].update_period_ns, Some(100_000_000));
        let e = energy_between(&s[0], 230_000_000, 770_000_000).unwrap();
        assert!((e.joules - 108.0).abs() < 1e-9, "{e:?}");
        assert_eq!((e.method, e.uncertain, e.covered_share), ("counter", false, 1.0));
        assert!((e.uncertainty_j - 20.0).abs() < 1e-9, "{e:?}"); // 200 W mean × 100 ms
        let e = energy_between(&s[0], 0, 500_000_000).unwrap();
        assert!((e.joules - 50.0).abs() < 1e-9, "{e:?}");
        let e = energy_between(&s[0], 650_000_000, 1_000_000_000).unwrap();
        assert!((e.joules - 105.0).abs() < 1e-9, "{e:?}");
    }
}
