//! Energy with NVML's total energy counter (`nvmlDeviceGetTotalEnergyConsumption`,
//! mJ since the driver loaded): its update period, an idle baseline, and the
//! energy of a window of work at least 2 s long (the counter moves in steps).

use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use nvml_wrapper::Nvml;
use serde::Serialize;

use crate::recording::Trace;

pub struct Meter {
    nvml: Nvml,
    index: u32,
}

#[derive(Debug, Clone, Serialize)]
pub struct UpdatePeriod {
    /// Median interval between changes of the counter, ms.
    pub median_ms: f64,
    pub changes: usize,
    pub polled_s: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Window {
    pub energy_mj: f64,
    pub seconds: f64,
    pub iterations: u64,
}

impl Meter {
    /// The NVML device with this PCI bus id (as cuDeviceGetPCIBusId gives it).
    pub fn new(pci_bus_id: &str) -> Result<Meter> {
        let nvml = Nvml::init().context("NVML init")?;
        let index = {
            let want = pci_bus_id.to_ascii_lowercase();
            let n = nvml.device_count()?;
            let mut found = None;
            for i in 0..n {
                let d = nvml.device_by_index(i)?;
                let bus = d.pci_info()?.bus_id.to_ascii_lowercase();
                // NVML: 00000000:19:00.0; CUDA: 0000:19:00.0.
                if bus.ends_with(want.trim_start_matches('0')) || want.ends_with(bus.trim_start_matches('0')) {
                    found = Some(i);
                }
            }
            found.with_context(|| format!("no NVML device with bus id {pci_bus_id}"))?
        };
        Ok(Meter { nvml, index })
    }

    pub fn energy_mj(&self) -> Result<u64> {
        Ok(self.nvml.device_by_index(self.index)?.total_energy_consumption()?)
    }

    /// Poll the counter every ms for `secs`; the median interval between changes.
    pub fn update_period(&self, secs: f64) -> Result<UpdatePeriod> {
        let t0 = Instant::now();
        let mut last = self.energy_mj()?;
        let mut changes: Vec<Instant> = Vec::new();
        while t0.elapsed().as_secs_f64() < secs {
            std::thread::sleep(Duration::from_millis(1));
            let e = self.energy_mj()?;
            if e != last {
                changes.push(Instant::now());
                last = e;
            }
        }
        let mut d: Vec<f64> = changes.windows(2).map(|w| (w[1] - w[0]).as_secs_f64() * 1e3).collect();
        d.sort_by(f64::total_cmp);
        Ok(UpdatePeriod {
            median_ms: d.get(d.len() / 2).copied().unwrap_or(f64::NAN),
            changes: changes.len(),
            polled_s: secs,
        })
    }

    /// Idle power (mW) over `secs`.
    pub fn idle_mw(&self, secs: f64) -> Result<f64> {
        let (e0, t0) = (self.energy_mj()?, Instant::now());
        std::thread::sleep(Duration::from_secs_f64(secs));
        let (e1, dt) = (self.energy_mj()?, t0.elapsed().as_secs_f64());
        Ok((e1 - e0) as f64 / dt)
    }

    /// Run `f` (one iteration) until at least `secs` have passed.
    pub fn window(&self, secs: f64, mut f: impl FnMut() -> Result<()>) -> Result<Window> {
        let (e0, t0) = (self.energy_mj()?, Instant::now());
        let mut n = 0;
        while t0.elapsed().as_secs_f64() < secs || n == 0 {
            f()?;
            n += 1;
        }
        let (e1, dt) = (self.energy_mj()?, t0.elapsed().as_secs_f64());
        Ok(Window { energy_mj: (e1 - e0) as f64, seconds: dt, iterations: n })
    }
}

/// Energy (mJ) the recording's power lines show between `t0` and `t1`
/// (CLOCK_MONOTONIC ns), interpolating the counter linearly between samples;
/// `None` without samples covering the interval.
pub fn recorded_energy_mj(trace: &Trace, gpu: u32, t0: u64, t1: u64) -> Option<f64> {
    let s: Vec<(u64, u64)> =
        trace.power.iter().filter(|p| p.gpu == gpu).filter_map(|p| Some((p.ts, p.energy_mj?))).collect();
    let at = |t: u64| -> Option<f64> {
        let i = s.partition_point(|x| x.0 <= t);
        if i == 0 || i >= s.len() {
            return None;
        }
        let (a, b) = (s[i - 1], s[i]);
        let f = (t - a.0) as f64 / (b.0 - a.0).max(1) as f64;
        Some(a.1 as f64 + f * (b.1 as f64 - a.1 as f64))
    };
    Some(at(t1)? - at(t0)?)
}

/// The recording's GPU energy (mJ) over `[t0, t1]` less `idle_mw` over the
/// same time, or why it cannot be had: the counter moves in steps of one
/// update period, so a window shorter than `min_s` is not measurable.
pub fn recorded_net_mj(trace: &Trace, gpu: u32, t0: u64, t1: u64, idle_mw: f64, min_s: f64) -> Result<f64, String> {
    let secs = t1.saturating_sub(t0) as f64 / 1e9;
    if secs < min_s {
        return Err(format!(
            "the recording's GPU work lasts {:.3} s, under the {min_s} s the energy counter needs",
            secs
        ));
    }
    match recorded_energy_mj(trace, gpu, t0, t1) {
        Some(e) => Ok(e - idle_mw * secs),
        None => Err("the recording has no power samples around its GPU work".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recording::PowerSample;

    #[test]
    fn recorded_energy_interpolates() {
        let mut t = Trace::default();
        for (ts, e) in [(0u64, 1000u64), (10, 1100), (20, 1300)] {
            t.power.push(PowerSample { ts, gpu: 0, energy_mj: Some(e), power_mw: None });
        }
        assert_eq!(recorded_energy_mj(&t, 0, 5, 15), Some(1200.0 - 1050.0));
        assert_eq!(recorded_energy_mj(&t, 0, 5, 25), None);
        assert_eq!(recorded_energy_mj(&t, 1, 5, 15), None);
    }

    #[test]
    fn recorded_net_energy_needs_a_long_enough_window() {
        let mut t = Trace::default();
        for (ts, e) in [(0u64, 0u64), (3_000_000_000, 600_000)] {
            t.power.push(PowerSample { ts, gpu: 0, energy_mj: Some(e), power_mw: None });
        }
        // 2.5 s at 200 W, less 2.5 s at 100 W idle.
        assert_eq!(recorded_net_mj(&t, 0, 250_000_000, 2_750_000_000, 100_000.0, 2.0), Ok(250_000.0));
        assert_eq!(
            recorded_net_mj(&t, 0, 0, 6_600_000, 100_000.0, 2.0),
            Err("the recording's GPU work lasts 0.007 s, under the 2 s the energy counter needs".into())
        );
        assert_eq!(
            recorded_net_mj(&Trace::default(), 0, 0, 3_000_000_000, 1.0, 2.0),
            Err("the recording has no power samples around its GPU work".into())
        );
    }
}
