//! A together run's figures: each tenant's slowdown (median together pass
//! over median alone pass) with the alone-vs-alone spread beside it, and the
//! GPU's combined busy and idle time over each run.

use serde::Serialize;

/// What one tenant's paced pass gave.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct Pass {
    pub wall_ms: f64,
    /// CLOCK_MONOTONIC ns of the pass's start and end.
    pub t0_ns: u64,
    pub t1_ns: u64,
    /// CUPTI's busy intervals of the pass (merged, ns; None without CUPTI).
    pub busy: Option<Vec<(u64, u64)>>,
}

/// One run of a round: the passes of the tenants that ran (tenant index, pass).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunResult {
    pub run: super::Run,
    pub passes: Vec<(usize, Pass)>,
    /// NVML's energy over the run, mJ.
    pub energy_mj: Option<f64>,
}

impl RunResult {
    /// First start to last end of the run's passes, ns.
    pub fn window_ns(&self) -> u64 {
        let t0 = self.passes.iter().map(|p| p.1.t0_ns).min().unwrap_or(0);
        let t1 = self.passes.iter().map(|p| p.1.t1_ns).max().unwrap_or(0);
        t1.saturating_sub(t0)
    }
    /// The GPU's busy time over the run: the union of every pass's busy intervals (None without CUPTI).
    pub fn busy_ns(&self) -> Option<u64> {
        let mut all = Vec::new();
        for (_, p) in &self.passes {
            all.extend_from_slice(p.busy.as_ref()?);
        }
        Some(crate::gpu_time::union_ns(&mut all))
    }
}

use crate::gpu_time::median;

/// (max − min) / median, %.
pub fn spread_pct(v: &[f64]) -> f64 {
    let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let min = v.iter().copied().fold(f64::INFINITY, f64::min);
    100.0 * (max - min) / median(v)
}

/// One tenant's slowdown.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Slowdown {
    pub alone_ms: Vec<f64>,
    pub together_ms: Vec<f64>,
    pub alone_median_ms: f64,
    pub together_median_ms: f64,
    /// together median / alone median.
    pub slowdown: f64,
    /// Alone-vs-alone spread, % of the alone median: slowdowns within it are noise.
    pub alone_spread_pct: f64,
    pub together_spread_pct: f64,
    /// |slowdown − 1| exceeds the alone spread.
    pub above_noise: bool,
}

/// Each of `n` tenants' slowdown from the runs' passes.
pub fn slowdowns(n: usize, runs: &[RunResult]) -> Vec<Slowdown> {
    (0..n)
        .map(|i| {
            let pick = |together: bool| -> Vec<f64> {
                runs.iter()
                    .filter(|r| (r.run == super::Run::Together) == together)
                    .flat_map(|r| r.passes.iter().filter(|p| p.0 == i).map(|p| p.1.wall_ms))
                    .collect()
            };
            let (alone, together) = (pick(false), pick(true));
            let (am, tm) = (median(&alone), median(&together));
            let slowdown = tm / am;
            let alone_spread_pct = spread_pct(&alone);
            Slowdown {
                alone_median_ms: am,
                together_median_ms: tm,
                slowdown,
                alone_spread_pct,
                together_spread_pct: spread_pct(&together),
                // With one alone pass there is no spread to compare with.
                above_noise: alone.len() >= 2 && 100.0 * (slowdown - 1.0).abs() > alone_spread_pct,
                alone_ms: alone,
                together_ms: together,
            }
        })
        .collect()
}

/// The GPU over the runs of one kind (alone runs of a tenant, or together runs): medians.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Gpu {
    pub run: String,
    pub runs: usize,
    pub window_ms: f64,
    pub busy_ms: Option<f64>,
    pub idle_ms: Option<f64>,
    pub energy_j: Option<f64>,
}

/// Per kind of run (each tenant alone, then together): median window, busy, idle and energy.
pub fn gpu(n: usize, runs: &[RunResult]) -> Vec<Gpu> {
    let kinds: Vec<super::Run> = (0..n).map(super::Run::Alone).chain([super::Run::Together]).collect();
    kinds
        .iter()
        .map(|k| {
            let of: Vec<&RunResult> = runs.iter().filter(|r| r.run == *k).collect();
            let win: Vec<f64> = of.iter().map(|r| r.window_ns() as f64 / 1e6).collect();
            let busy: Option<Vec<f64>> = of.iter().map(|r| r.busy_ns().map(|b| b as f64 / 1e6)).collect();
            let idle: Option<Vec<f64>> =
                of.iter().map(|r| r.busy_ns().map(|b| (r.window_ns().saturating_sub(b)) as f64 / 1e6)).collect();
            let energy: Option<Vec<f64>> = of.iter().map(|r| r.energy_mj.map(|e| e / 1e3)).collect();
            Gpu {
                run: k.to_string(),
                runs: of.len(),
                window_ms: median(&win),
                busy_ms: busy.filter(|v| !v.is_empty()).map(|v| median(&v)),
                idle_ms: idle.filter(|v| !v.is_empty()).map(|v| median(&v)),
                energy_j: energy.filter(|v| !v.is_empty()).map(|v| median(&v)),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::together::Run;

    fn pass(wall_ms: f64, t0: u64, t1: u64, busy: &[(u64, u64)]) -> Pass {
        Pass { wall_ms, t0_ns: t0, t1_ns: t1, busy: Some(busy.to_vec()) }
    }

    #[test]
    fn slowdown_spread_and_combined_busy() {
        let runs = vec![
            RunResult { run: Run::Alone(0), passes: vec![(0, pass(10.0, 0, 10, &[(0, 4)]))], energy_mj: Some(1000.0) },
            RunResult { run: Run::Alone(1), passes: vec![(1, pass(20.0, 0, 20, &[(5, 6)]))], energy_mj: Some(3000.0) },
            RunResult {
                run: Run::Together,
                passes: vec![
                    (0, pass(12.0, 100, 112, &[(100, 104)])),
                    (1, pass(21.0, 101, 122, &[(103, 106), (110, 111)])),
                ],
                energy_mj: Some(3500.0),
            },
            RunResult { run: Run::Alone(0), passes: vec![(0, pass(11.0, 0, 11, &[(0, 4)]))], energy_mj: Some(1200.0) },
            RunResult { run: Run::Alone(1), passes: vec![(1, pass(20.0, 0, 20, &[(5, 6)]))], energy_mj: None },
            RunResult {
                run: Run::Together,
                passes: vec![(0, pass(13.0, 200, 213, &[(200, 204)])), (1, pass(23.0, 200, 223, &[(204, 208)]))],
                energy_mj: Some(3700.0),
            },
        ];
        let s = slowdowns(2, &runs);
        assert_eq!(s[0].alone_ms, vec![10.0, 11.0]);
        assert_eq!(s[0].together_ms, vec![12.0, 13.0]);
        assert_eq!(s[0].slowdown, 12.5 / 10.5);
        assert_eq!(s[0].alone_spread_pct, 100.0 * 1.0 / 10.5);
        assert_eq!(s[0].together_spread_pct, 100.0 * 1.0 / 12.5);
        assert!(s[0].above_noise); // 19 % > 9.5 %
        assert_eq!(s[1].slowdown, 22.0 / 20.0);
        assert_eq!(s[1].alone_spread_pct, 0.0);
        // Together: (100..106) ∪ (110..111) = 7 ns busy in a 22 ns window; then (200..208) 8 ns in 23.
        assert_eq!(runs[2].busy_ns(), Some(7));
        assert_eq!(runs[2].window_ns(), 22);
        let g = gpu(2, &runs);
        assert_eq!(
            g[2],
            Gpu {
                run: "together".into(),
                runs: 2,
                window_ms: (22.0 / 1e6 + 23.0 / 1e6) / 2.0,
                busy_ms: Some((7.0 / 1e6 + 8.0 / 1e6) / 2.0),
                idle_ms: Some(15e-6),
                energy_j: Some(3.6)
            }
        );
        assert_eq!(g[0].energy_j, Some(1.1));
        // An alone run without its energy: no median of a partial set.
        assert_eq!(g[1].energy_j, None);
        assert_eq!(g[1].busy_ms, Some(1e-6));
    }

    #[test]
    fn median_of_even_and_odd() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&[]).is_nan());
    }
}
