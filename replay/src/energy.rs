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
    /// Spread of those intervals (p90 − p10), ms: how precisely a change
    /// marks a point in time.
    pub jitter_ms: f64,
    pub changes: usize,
    pub polled_s: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Window {
    pub energy_mj: f64,
    pub seconds: f64,
    pub iterations: u64,
    /// Wait for the counter's change after the last iteration (counted at idle power).
    pub tail_s: f64,
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
        let q = |p: f64| d.get(((d.len() as f64 - 1.0) * p).round() as usize).copied().unwrap_or(f64::NAN);
        Ok(UpdatePeriod {
            jitter_ms: q(0.9) - q(0.1),
            median_ms: d.get(d.len() / 2).copied().unwrap_or(f64::NAN),
            changes: changes.len(),
            polled_s: secs,
        })
    }

    /// Waits for the counter's next change (polling every 250 µs, at most
    /// 1 s): its new value and when the change was seen. Windows whose ends
    /// are changes of the counter measure the energy between them exactly,
    /// up to the poll interval and the update's jitter, instead of up to one
    /// update period (100 ms on the H100) at each end.
    pub fn next_update(&self) -> Result<(u64, Instant)> {
        let (e0, t0) = (self.energy_mj()?, Instant::now());
        loop {
            std::thread::sleep(Duration::from_micros(POLL_US));
            let e = self.energy_mj()?;
            if e != e0 || t0.elapsed() > Duration::from_secs(1) {
                return Ok((e, Instant::now()));
            }
        }
    }

    /// Idle power (mW) over about `secs`, between two changes of the counter.
    pub fn idle_mw(&self, secs: f64) -> Result<f64> {
        let (e0, t0) = self.next_update()?;
        std::thread::sleep(Duration::from_secs_f64(secs));
        let (e1, t1) = self.next_update()?;
        Ok((e1 - e0) as f64 / (t1 - t0).as_secs_f64())
    }

    /// Run `f` (one iteration) until at least `secs` have passed. The window
    /// starts at a change of the counter and its energy is read at the first
    /// change after the last iteration, less `idle_mw` for the wait (`tail_s`).
    pub fn window(&self, secs: f64, idle_mw: f64, mut f: impl FnMut() -> Result<()>) -> Result<Window> {
        let (e0, t0) = self.next_update()?;
        let mut n = 0;
        while t0.elapsed().as_secs_f64() < secs || n == 0 {
            f()?;
            n += 1;
        }
        let end = Instant::now();
        let (e1, t1) = self.next_update()?;
        let tail_s = (t1 - end).as_secs_f64();
        Ok(Window {
            energy_mj: (e1 - e0) as f64 - idle_mw * tail_s,
            seconds: (end - t0).as_secs_f64(),
            iterations: n,
            tail_s,
        })
    }
}

/// How often [`Meter::next_update`] polls the counter (µs).
const POLL_US: u64 = 250;

impl UpdatePeriod {
    /// How precisely (s) a window's end placed on a change of the counter
    /// is known: the poll interval plus half the update jitter.
    pub fn edge_s(&self) -> f64 {
        (POLL_US as f64 / 1e3 + self.jitter_ms.max(0.0) / 2.0) / 1e3
    }
}

/// Uncertainty (mW) of an idle power measured over `secs` between two changes.
pub fn idle_uncertainty_mw(p: &UpdatePeriod, idle_mw: f64, secs: f64) -> f64 {
    2.0 * p.edge_s() * idle_mw / secs.max(1e-9)
}

/// Uncertainty (mJ) of the recording's energy over an interval at `power_mw`:
/// each end of the exact stretch is placed within one sampling interval of
/// the power lines plus half the update jitter.
pub fn recorded_uncertainty_mj(trace: &Trace, gpu: u32, p: &UpdatePeriod, power_mw: f64) -> f64 {
    let mut d: Vec<u64> = trace
        .power
        .iter()
        .filter(|x| x.gpu == gpu)
        .map(|x| x.ts)
        .collect::<Vec<_>>()
        .windows(2)
        .map(|w| w[1] - w[0])
        .collect();
    d.sort_unstable();
    let sample_ms = d.get(d.len() / 2).map_or(p.median_ms, |&ns| ns as f64 / 1e6);
    2.0 * (sample_ms + p.jitter_ms.max(0.0) / 2.0) / 1e3 * power_mw
}

/// Uncertainty (mJ) of a window of `seconds` at `power_mw` whose ends are
/// changes of the counter: each end is placed within the poll interval
/// (0.25 ms) plus half the update jitter; the tail after the last iteration,
/// counted at idle power, may have drawn up to the window's power.
pub fn window_uncertainty_mj(p: &UpdatePeriod, power_mw: f64, idle_mw: f64, tail_s: f64) -> f64 {
    2.0 * p.edge_s() * power_mw + tail_s * (power_mw - idle_mw).max(0.0)
}

/// Energy (mJ) the recording's power lines show between `t0` and `t1`
/// (CLOCK_MONOTONIC ns). The lines sample the counter (every 10 ms by
/// default), which itself moves every update period: between the first and
/// the last change seen inside the interval the energy is exact, and the
/// rest of the interval is counted at that stretch's mean power. With fewer
/// than two changes inside, the counter is interpolated linearly between
/// samples. `None` without samples covering the interval.
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
    let linear = at(t1)? - at(t0)?;
    // Samples where a change of the counter was first seen, inside [t0, t1].
    let changes: Vec<(u64, u64)> =
        s.windows(2).filter(|w| w[1].1 != w[0].1 && w[1].0 >= t0 && w[1].0 <= t1).map(|w| w[1]).collect();
    match (changes.first(), changes.last()) {
        (Some(&(ca, ea)), Some(&(cb, eb))) if cb > ca => {
            let exact = (eb - ea) as f64;
            let mw = exact / ((cb - ca) as f64 / 1e9);
            Some(exact + mw * ((ca - t0) + (t1 - cb)) as f64 / 1e9)
        }
        _ => Some(linear),
    }
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
    fn recorded_energy_between_counter_changes() {
        // 100 W; the counter moves every 100 ms, sampled every 10 ms.
        let mut t = Trace::default();
        for k in 0..100u64 {
            let ms = 10 * k;
            t.power.push(PowerSample {
                ts: ms * 1_000_000,
                gpu: 0,
                energy_mj: Some(ms / 100 * 10_000),
                power_mw: None,
            });
        }
        // 150 ms .. 680 ms at 100 W = 53 J; linear interpolation of the steps says 50 J.
        assert_eq!(recorded_energy_mj(&t, 0, 150_000_000, 680_000_000), Some(53_000.0));
    }

    #[test]
    fn window_uncertainty() {
        let p = UpdatePeriod { median_ms: 100.0, jitter_ms: 1.5, changes: 10, polled_s: 1.0 };
        // edges 2 × 1.0 ms at 200 W = 400 mJ; tail 50 ms × (200 − 100) W = 5000 mJ
        assert_eq!(window_uncertainty_mj(&p, 200_000.0, 100_000.0, 0.05), 400.0 + 5000.0);
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
