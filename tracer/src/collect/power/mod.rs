//! NVML sampling during `tracer record`: a dedicated thread reads every GPU
//! NVML reports (energy counter, power, clocks, utilization, temperature) on
//! a fixed grid (10 ms by default) and queues `power` lines for the writer
//! through a bounded channel; a full channel drops and counts, it never
//! blocks the sampler or the collector. The footer lists the GPUs the traced
//! processes held open (see [`usage`]). docs/power.md has the details and
//! the measured update periods of the counters.
pub mod energy_pacing;
pub mod nvml;
pub mod sampler;
pub mod source;
pub mod usage;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, SyncSender, TrySendError};
use std::time::Duration;

use serde_json::{Value, json};

use sampler::{SamplerStats, Sent, Ticker};
use source::{GpuInfo, GpuSource};

/// How often the sampling thread looks for the GPUs the traced processes
/// have open.
const USAGE_SCAN_NS: u64 = 1_000_000_000;
/// How long tracer waits for NVML to initialise before it gives up on power.
const INIT_TIMEOUT: Duration = Duration::from_secs(20);
/// How long tracer waits for the last sample at the end.
const STOP_TIMEOUT: Duration = Duration::from_secs(5);

pub struct PowerOptions {
    pub interval_ms: u64,
    /// The libcuda being probed (NVML is looked for beside it too).
    pub libcuda: Option<PathBuf>,
}

struct Done {
    stats: SamplerStats,
    minors: BTreeSet<u32>,
}

type InitResult = Result<(Vec<GpuInfo>, String), String>;

pub struct Power {
    /// The header's "power" object (once NVML's initialisation is known).
    header: Value,
    gpus: Vec<GpuInfo>,
    running: Option<(Sender<()>, Receiver<Done>)>,
    /// NVML still initialising: (its answer, interval).
    pending: Option<(Receiver<InitResult>, u64)>,
}

struct RealTicker {
    stop: Receiver<()>,
}

impl Ticker for RealTicker {
    fn now_ns(&mut self) -> u64 {
        crate::collect::sysinfo::clock_ns(libc::CLOCK_MONOTONIC)
    }
    fn wait_until(&mut self, deadline: u64) -> bool {
        loop {
            let now = self.now_ns();
            let wait = Duration::from_nanos(deadline.saturating_sub(now));
            match self.stop.recv_timeout(wait) {
                Err(RecvTimeoutError::Timeout) if self.now_ns() >= deadline => return true,
                Err(RecvTimeoutError::Timeout) => {}
                Ok(()) | Err(RecvTimeoutError::Disconnected) => return false,
            }
        }
    }
}

fn header_json(
    available: bool,
    reason: Option<&str>,
    interval_ms: Option<u64>,
    library: Option<&str>,
    gpus: &[GpuInfo],
) -> Value {
    json!({
        "available": available,
        "reason": reason,
        "interval_ms": interval_ms,
        "library": library,
        "sampled": if available { Some("every GPU NVML reports; footer power.gpus_used: those the traced processes held open") } else { None },
        "gpus": gpus.iter().map(|g| json!({
            "index": g.index, "name": g.name, "bus_id": g.bus_id, "uuid": g.uuid, "minor": g.minor,
        })).collect::<Vec<_>>(),
    })
}

impl Power {
    pub fn disabled(reason: &str) -> Power {
        Power { header: header_json(false, Some(reason), None, None, &[]), gpus: vec![], running: None, pending: None }
    }

    /// Opens NVML on a new thread, which starts sampling at once (samples
    /// before the command runs are the idle baseline). Returns at once:
    /// NVML initialises while tracer loads its probes; [`header`](Power::header)
    /// waits for it.
    pub fn start(opts: &PowerOptions, root_pid: u32, tx: SyncSender<Value>) -> Power {
        let candidates = nvml::library_candidates(opts.libcuda.as_deref());
        let interval_ns = opts.interval_ms.max(1) * 1_000_000;
        let (init_tx, init_rx) = mpsc::channel::<InitResult>();
        let (stop_tx, stop_rx) = mpsc::channel::<()>();
        let (done_tx, done_rx) = mpsc::channel::<Done>();
        let spawned = std::thread::Builder::new().name("tracer-nvml".into()).spawn(move || {
            crate::collect::own_sched::apply(crate::collect::own_sched::Role::Background);
            let mut src = match nvml::NvmlSource::open(&candidates) {
                Ok(s) => s,
                Err(e) => {
                    let _ = init_tx.send(Err(e));
                    return;
                }
            };
            let _ = init_tx.send(Ok((src.gpus().to_vec(), src.library.clone())));
            let mut stats = SamplerStats::default();
            let mut minors = BTreeSet::new();
            let mut last_scan = 0u64;
            let mut ticker = RealTicker { stop: stop_rx };
            let mut send = |v: Value| match tx.try_send(v) {
                Ok(()) => Sent::Ok,
                Err(TrySendError::Full(_)) => Sent::Full,
                Err(TrySendError::Disconnected(_)) => Sent::Closed,
            };
            let mut between = |now: u64| {
                if now.saturating_sub(last_scan) >= USAGE_SCAN_NS {
                    minors.extend(usage::tree_gpu_minors(root_pid));
                    last_scan = now;
                }
            };
            sampler::run(&mut src, &mut ticker, interval_ns, &mut send, &mut between, &mut stats);
            let _ = done_tx.send(Done { stats, minors });
        });
        if let Err(e) = spawned {
            return Power::disabled(&format!("cannot start the sampling thread: {e}"));
        }
        Power {
            header: Value::Null,
            gpus: vec![],
            running: Some((stop_tx, done_rx)),
            pending: Some((init_rx, opts.interval_ms)),
        }
    }

    /// The header's "power" object; waits for NVML's initialisation (at
    /// most 20 s) the first time.
    pub fn header(&mut self) -> &Value {
        if let Some((rx, interval_ms)) = self.pending.take() {
            match rx.recv_timeout(INIT_TIMEOUT) {
                Ok(Ok((gpus, library))) => {
                    self.header = header_json(true, None, Some(interval_ms), Some(&library), &gpus);
                    self.gpus = gpus;
                }
                Ok(Err(reason)) => *self = Power::disabled(&reason),
                Err(_) => {
                    // Dropping the stop sender ends the thread if NVML ever answers.
                    *self = Power::disabled(&format!("NVML did not initialise within {} s", INIT_TIMEOUT.as_secs()))
                }
            }
        }
        &self.header
    }

    /// Stops sampling after one last round; the footer's "power" object.
    pub fn stop(&mut self) -> Value {
        let Some((stop, done)) = self.running.take() else {
            return json!({ "available": false });
        };
        let _ = stop.send(());
        if self.pending.take().is_some() {
            // Stopped before the header was written (an early error): the
            // thread ends by itself once NVML answers; nothing to wait for.
            return json!({ "available": false });
        }
        match done.recv_timeout(STOP_TIMEOUT) {
            Ok(d) => footer_json(&self.gpus, &d.stats, &d.minors),
            Err(_) => json!({ "available": true, "error": "the sampling thread did not stop within 5 s" }),
        }
    }
}

/// The footer's "power" object: counts, and the GPUs the traced processes
/// held open (NVML indices; minors without an NVML device are listed apart).
pub fn footer_json(gpus: &[GpuInfo], stats: &SamplerStats, minors: &BTreeSet<u32>) -> Value {
    let used: Vec<u32> =
        gpus.iter().filter(|g| g.minor.is_some_and(|m| minors.contains(&m))).map(|g| g.index).collect();
    let unmatched: Vec<u32> = minors.iter().copied().filter(|m| !gpus.iter().any(|g| g.minor == Some(*m))).collect();
    let mut v = stats.to_json();
    v["available"] = json!(true);
    v["gpus_used"] = json!(used);
    v["unmatched_minors"] = json!(unmatched);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn footer_maps_minors_to_indices() {
        let gpus: Vec<GpuInfo> =
            [(0, 3), (1, 1)].iter().map(|&(i, m)| GpuInfo { index: i, minor: Some(m), ..Default::default() }).collect();
        let stats = SamplerStats { rounds: 2, samples: 4, ..Default::default() };
        let f = footer_json(&gpus, &stats, &[3, 9].into_iter().collect());
        assert_eq!(f["gpus_used"], json!([0]));
        assert_eq!(f["unmatched_minors"], json!([9]));
        assert_eq!(f["samples"], json!(4));
    }

    /// Here (no NVIDIA driver) power is unavailable, with the reason, and
    /// no line is produced.
    #[test]
    fn unavailable_without_driver() {
        if std::path::Path::new("/proc/driver/nvidia/version").exists() {
            return;
        }
        let (tx, rx) = mpsc::sync_channel(4);
        let mut p = Power::start(&PowerOptions { interval_ms: 10, libcuda: None }, std::process::id(), tx);
        let h = p.header().clone();
        assert_eq!(h["available"], json!(false));
        assert!(h["reason"].as_str().unwrap().contains("libnvidia-ml.so.1"), "{h}");
        assert_eq!(p.stop(), json!({ "available": false }));
        assert!(rx.try_recv().is_err());
    }
}
