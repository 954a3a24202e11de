//! The sampling loop: every GPU of the source at fixed instants
//! start + k * interval, the line each reading becomes, and the counts that
//! end up in the footer.
use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::energy_pacing::EnergyPacer;
use super::source::{GpuInfo, GpuSource, Reading};

/// Time and waiting, behind a trait for tests.
pub trait Ticker {
    /// CLOCK_MONOTONIC ns.
    fn now_ns(&mut self) -> u64;
    /// Sleeps until `deadline_ns`; false when asked to stop (at once, or
    /// while waiting).
    fn wait_until(&mut self, deadline_ns: u64) -> bool;
}

/// What a send into the writer's channel did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sent {
    Ok,
    /// The channel was full: the line is lost (counted).
    Full,
    /// The receiving side is gone: stop.
    Closed,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct SamplerStats {
    /// Sampling rounds (one reading of every GPU each).
    pub rounds: u64,
    /// Lines handed to the writer.
    pub samples: u64,
    /// Lines lost because the channel to the writer was full.
    pub dropped: u64,
    /// Instants of the grid skipped because a round ended after them.
    pub missed_ticks: u64,
    /// Time one round took (all GPUs), ns: sum and max.
    pub round_ns_total: u64,
    pub round_ns_max: u64,
    /// First error NVML gave for each field (a field always unsupported
    /// shows up here and as null in every line).
    pub field_errors: BTreeMap<&'static str, String>,
    pub field_error_count: u64,
    /// Readings that read the energy counter (the others leave it out:
    /// [`super::energy_pacing`]).
    pub energy_reads: u64,
    /// Per field: the NVML queries made and their time (ns).
    pub queries: BTreeMap<&'static str, (u64, u64)>,
}

impl SamplerStats {
    pub fn to_json(&self) -> Value {
        json!({
            "rounds": self.rounds,
            "samples": self.samples,
            "dropped": self.dropped,
            "missed_ticks": self.missed_ticks,
            "round_us_mean": (self.round_ns_total as f64 / self.rounds.max(1) as f64 / 1e3 * 10.0).round() / 10.0,
            "round_us_max": (self.round_ns_max as f64 / 1e2).round() / 10.0,
            "field_errors": self.field_errors,
            "field_error_count": self.field_error_count,
            "energy_reads": self.energy_reads,
            // per field: the queries and their mean time, µs
            "queries": self.queries.iter().map(|(f, &(n, ns))| {
                (f.to_string(), json!({ "count": n, "us_mean": (ns as f64 / n.max(1) as f64 / 1e2).round() / 10.0 }))
            }).collect::<serde_json::Map<String, Value>>(),
        })
    }
}

/// The trace line of one reading (docs/trace-format.md, "power").
pub fn sample_line(ts: u64, gpu: &GpuInfo, r: &Reading) -> Value {
    json!({
        "ts": ts,
        "pid": 0,
        "tid": 0,
        "type": "power",
        "op": "sample",
        "name": "nvml",
        "gpu": gpu.index,
        "bus_id": gpu.bus_id,
        "energy_mj": r.energy_mj,
        "power_mw": r.power_mw,
        "sm_clock_mhz": r.sm_clock_mhz,
        "mem_clock_mhz": r.mem_clock_mhz,
        "util_gpu_pct": r.util_gpu_pct,
        "util_mem_pct": r.util_mem_pct,
        "temp_c": r.temp_c,
    })
}

/// Reads every GPU once and sends the lines; the energy counter where its
/// pacer says it is due (`every`: all of them), at rounds `interval_ns`
/// apart. False when the writer is gone.
fn round<S: GpuSource + ?Sized, T: Ticker + ?Sized>(
    src: &mut S,
    ticker: &mut T,
    send: &mut dyn FnMut(Value) -> Sent,
    stats: &mut SamplerStats,
    (pacers, interval_ns, every): (&mut Vec<EnergyPacer>, u64, bool),
) -> bool {
    let start = ticker.now_ns();
    let mut open = true;
    pacers.resize_with(src.gpus().len(), Default::default);
    for (slot, pacer) in pacers.iter_mut().enumerate() {
        // The line's time is the middle of the reading: on an H100 the
        // energy query alone takes ~3 ms (docs/power.md), the others µs.
        let t0 = ticker.now_ns();
        let energy = every || pacer.due(t0, interval_ns);
        let r = src.read(slot, energy);
        let ts = t0 + ticker.now_ns().saturating_sub(t0) / 2;
        if energy {
            stats.energy_reads += 1;
            pacer.saw(ts, r.energy_mj);
        }
        for &(field, ns) in &r.query_ns {
            let q = stats.queries.entry(field).or_default();
            *q = (q.0 + 1, q.1 + ns);
        }
        for (field, e) in &r.errors {
            stats.field_error_count += 1;
            stats.field_errors.entry(field).or_insert_with(|| e.clone());
        }
        match send(sample_line(ts, &src.gpus()[slot], &r)) {
            Sent::Ok => stats.samples += 1,
            Sent::Full => stats.dropped += 1,
            Sent::Closed => {
                stats.dropped += 1;
                open = false;
            }
        }
    }
    let took = ticker.now_ns().saturating_sub(start);
    stats.rounds += 1;
    stats.round_ns_total += took;
    stats.round_ns_max = stats.round_ns_max.max(took);
    open
}

/// Samples every GPU of `src` at start, start + interval, start + 2 interval,
/// ... until the ticker says stop, then once more (so the last reading is
/// the end of the recording). A round that ends after the next instant skips
/// the instants already past (counted as missed) instead of catching up in a
/// burst, so the grid stays put. `between` runs after each round (other
/// periodic work of the sampling thread), with the time.
pub fn run<S: GpuSource + ?Sized, T: Ticker + ?Sized>(
    src: &mut S,
    ticker: &mut T,
    interval_ns: u64,
    send: &mut dyn FnMut(Value) -> Sent,
    between: &mut dyn FnMut(u64),
    stats: &mut SamplerStats,
) {
    let interval_ns = interval_ns.max(1);
    let mut next = ticker.now_ns();
    let mut pacers = Vec::new();
    // the first and the last rounds read every counter: they bracket the recording
    let mut first = true;
    loop {
        if !round(src, ticker, send, stats, (&mut pacers, interval_ns, first)) {
            return;
        }
        first = false;
        let now = ticker.now_ns();
        between(now);
        next += interval_ns;
        let now = ticker.now_ns().max(now);
        if now >= next {
            let missed = (now - next) / interval_ns + 1;
            stats.missed_ticks += missed;
            next += missed * interval_ns;
        }
        if !ticker.wait_until(next) {
            round(src, ticker, send, stats, (&mut pacers, interval_ns, true));
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake GPU set whose readings are a function of the call number, and
    /// whose reads advance a fake clock by `read_ns`.
    struct Fake {
        gpus: Vec<GpuInfo>,
        clock: std::rc::Rc<std::cell::Cell<u64>>,
        read_ns: Vec<u64>,
        reads: usize,
        /// The energy counter goes up once per this many reads.
        energy_every: usize,
    }
    // The fake is only used on one thread.
    unsafe impl Send for Fake {}

    impl GpuSource for Fake {
        fn gpus(&self) -> &[GpuInfo] {
            &self.gpus
        }
        fn read(&mut self, slot: usize, energy: bool) -> Reading {
            let n = self.reads;
            self.reads += 1;
            let cost = self.read_ns.get(n).copied().unwrap_or(100);
            self.clock.set(self.clock.get() + cost);
            Reading {
                energy_mj: energy.then_some(1000 + (n / self.energy_every) as u64),
                power_mw: Some(70_000 + slot as u32),
                sm_clock_mhz: Some(1980),
                mem_clock_mhz: Some(2619),
                util_gpu_pct: Some(37),
                util_mem_pct: Some(12),
                temp_c: if slot == 1 { None } else { Some(41) },
                errors: if slot == 1 { vec![("temp_c", "NotSupported".into())] } else { vec![] },
                query_ns: [("energy_mj", 3000), ("power_mw", 10)]
                    .into_iter()
                    .filter(|q| energy || q.0 != "energy_mj")
                    .collect(),
            }
        }
    }

    struct FakeTicker {
        clock: std::rc::Rc<std::cell::Cell<u64>>,
        /// wait_until returns false from this deadline on.
        stop_at: u64,
        waits: Vec<u64>,
    }
    impl Ticker for FakeTicker {
        fn now_ns(&mut self) -> u64 {
            self.clock.get()
        }
        fn wait_until(&mut self, d: u64) -> bool {
            self.waits.push(d);
            if d >= self.stop_at {
                self.clock.set(self.clock.get().max(self.stop_at));
                return false;
            }
            self.clock.set(self.clock.get().max(d));
            true
        }
    }

    fn gpu(i: u32) -> GpuInfo {
        GpuInfo {
            index: i,
            name: Some("NVIDIA H100 80GB HBM3".into()),
            bus_id: Some(format!("00000000:{:02X}:00.0", 0x19 + i)),
            uuid: None,
            minor: Some(i),
        }
    }

    fn setup(ngpu: u32, read_ns: Vec<u64>, start: u64, stop_at: u64) -> (Fake, FakeTicker) {
        let clock = std::rc::Rc::new(std::cell::Cell::new(start));
        (
            Fake { gpus: (0..ngpu).map(gpu).collect(), clock: clock.clone(), read_ns, reads: 0, energy_every: 1 },
            FakeTicker { clock, stop_at, waits: vec![] },
        )
    }

    /// Runs the sampler on a 10 ms grid: its lines, its stats and the times `between` ran.
    fn every_10_ms(src: &mut Fake, t: &mut FakeTicker) -> (Vec<Value>, SamplerStats, Vec<u64>) {
        let (mut lines, mut stats, mut betweens) = (vec![], SamplerStats::default(), vec![]);
        let mut send = |v| {
            lines.push(v);
            Sent::Ok
        };
        run(src, t, 10_000_000, &mut send, &mut |now| betweens.push(now), &mut stats);
        (lines, stats, betweens)
    }

    #[test]
    fn exact_line() {
        let r = Reading {
            energy_mj: Some(123_456),
            power_mw: Some(71_000),
            sm_clock_mhz: Some(1980),
            mem_clock_mhz: Some(2619),
            util_gpu_pct: Some(37),
            util_mem_pct: None,
            temp_c: Some(41),
            errors: vec![],
            query_ns: vec![],
        };
        assert_eq!(
            sample_line(5_000, &gpu(0), &r),
            json!({"ts":5000,"pid":0,"tid":0,"type":"power","op":"sample","name":"nvml","gpu":0,
                   "bus_id":"00000000:19:00.0","energy_mj":123456,"power_mw":71000,"sm_clock_mhz":1980,
                   "mem_clock_mhz":2619,"util_gpu_pct":37,"util_mem_pct":null,"temp_c":41})
        );
    }

    #[test]
    fn fixed_grid_and_final_sample() {
        // 10 ms grid from t=1,000,000; reads take 100 ns; stop requested for
        // the wait at 41 ms: rounds at 1, 11, 21, 31 ms, then the final one.
        let (mut src, mut t) = setup(2, vec![], 1_000_000, 41_000_000);
        let (lines, stats, betweens) = every_10_ms(&mut src, &mut t);
        assert_eq!(t.waits, vec![11_000_000, 21_000_000, 31_000_000, 41_000_000]);
        assert_eq!(stats.rounds, 5);
        assert_eq!(stats.samples, 10);
        assert_eq!((stats.dropped, stats.missed_ticks), (0, 0));
        let ts: Vec<u64> = lines.iter().map(|l| l["ts"].as_u64().unwrap()).collect();
        // Each read takes 100 ns: a line's ts is its middle.
        assert_eq!(
            ts,
            vec![
                1_000_050, 1_000_150, 11_000_050, 11_000_150, 21_000_050, 21_000_150, 31_000_050, 31_000_150,
                41_000_050, 41_000_150
            ]
        );
        let gpus: Vec<u64> = lines.iter().map(|l| l["gpu"].as_u64().unwrap()).collect();
        assert_eq!(gpus, vec![0, 1, 0, 1, 0, 1, 0, 1, 0, 1]);
        assert_eq!(lines[3]["energy_mj"], json!(1003));
        assert_eq!(lines[3]["temp_c"], Value::Null);
        assert_eq!(betweens, vec![1_000_200, 11_000_200, 21_000_200, 31_000_200]);
        assert_eq!(stats.field_errors.get("temp_c").map(String::as_str), Some("NotSupported"));
        assert_eq!(stats.field_error_count, 5);
        assert_eq!((stats.round_ns_total, stats.round_ns_max), (1000, 200));
    }

    #[test]
    fn the_energy_counter_is_read_around_its_updates_and_in_the_first_and_last_rounds() {
        // one GPU, 10 ms rounds from 0 for 1 s; the counter goes up every 10 reads
        let (mut src, mut t) = setup(1, vec![], 0, 1_000_000_000);
        src.energy_every = 10;
        let (lines, stats, _) = every_10_ms(&mut src, &mut t);
        assert_eq!(stats.rounds, 101);
        let read: Vec<u64> = lines
            .iter()
            .filter(|l| !l["energy_mj"].is_null())
            .map(|l| l["ts"].as_u64().unwrap() / 10_000_000)
            .collect();
        // every round until three changes were seen (rounds 10, 20, 30), then from the round
        // before each change is due until it shows: 2 reads a period instead of 10; the
        // last round (100) is one of them
        assert_eq!(stats.energy_reads, read.len() as u64);
        let mut want: Vec<u64> = (0..=30).collect();
        want.extend((4..=10).flat_map(|k| [k * 10 - 1, k * 10]));
        assert_eq!(read, want);
        assert_eq!(read.last(), Some(&100), "the last round reads it");
        // the lines without it still carry everything else
        assert!(lines.iter().all(|l| l["power_mw"] == json!(70_000)));
        // the queries made, and their time
        let q = stats.to_json()["queries"].clone();
        assert_eq!(
            q,
            json!({"energy_mj": {"count": want.len(), "us_mean": 3.0}, "power_mw": {"count": 101, "us_mean": 0.0}})
        );
    }

    #[test]
    fn slow_round_skips_instants_and_keeps_the_grid() {
        // The second round's read takes 25 ms: instants 20 and 30 ms are past
        // when it ends (at 35 ms), so the next wait is for 40 ms.
        let (mut src, mut t) = setup(1, vec![100, 25_000_000], 0, 50_000_000);
        let mut stats = SamplerStats::default();
        run(&mut src, &mut t, 10_000_000, &mut |_| Sent::Ok, &mut |_| {}, &mut stats);
        assert_eq!(t.waits, vec![10_000_000, 40_000_000, 50_000_000]);
        assert_eq!(stats.missed_ticks, 2);
        assert_eq!(stats.rounds, 4);
        assert_eq!(stats.round_ns_max, 25_000_000);
    }

    #[test]
    fn full_channel_counts_drops_and_closed_stops() {
        let (mut src, mut t) = setup(1, vec![], 0, 100_000_000);
        let mut stats = SamplerStats::default();
        let mut n = 0;
        run(
            &mut src,
            &mut t,
            10_000_000,
            &mut |_| {
                n += 1;
                match n {
                    2 | 3 => Sent::Full,
                    5 => Sent::Closed,
                    _ => Sent::Ok,
                }
            },
            &mut |_| {},
            &mut stats,
        );
        assert_eq!((stats.samples, stats.dropped, stats.rounds), (2, 3, 5));
        assert_eq!(t.waits.len(), 4);
    }
}
