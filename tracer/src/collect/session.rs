//! The collection loop of `tracer record`: drains the ring buffer as it
//! fills (and every 10 ms), flushes the file every 100 ms, until the command
//! exits (or, attached with `-p`, a stop signal or the process is gone);
//! then detaches every program and takes what is left, so the counters are
//! final.
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use tokio::io::Interest;
use tokio::io::unix::AsyncFd;

use crate::collect::collector::Collector;
use crate::collect::gpu_timestamps::GpuSession;
use crate::collect::libcuda_watch::Watch;
use crate::collect::loader::{self, KernelCounters};
use crate::collect::{spawn, sysinfo};

/// Waits until the LIBOPENS ring buffer has records (never without one).
pub(crate) async fn readable(
    a: Option<&mut AsyncFd<aya::maps::RingBuf<aya::maps::MapData>>>,
) -> std::io::Result<tokio::io::unix::AsyncFdReadyMutGuard<'_, aya::maps::RingBuf<aya::maps::MapData>>> {
    match a {
        Some(a) => a.readable_mut().await,
        None => std::future::pending().await,
    }
}

/// Records are mostly submitted without a wakeup: the loop also polls.
pub const POLL_INTERVAL: Duration = Duration::from_millis(10);

/// The trace file is flushed at least this often: a tracer killed with
/// SIGKILL loses at most the lines written since the last flush.
pub const FLUSH_INTERVAL: Duration = Duration::from_millis(100);

/// Timed work of the collection loop: file flush and eBPF log.
pub fn periodic(col: &mut Collector, loaded: &mut loader::Loaded, last_flush: &mut Instant) {
    for k in col.stale_fds.drain(..) {
        let _ = loaded.nvfds.remove(&k);
    }
    col.drain_side();
    if last_flush.elapsed() >= FLUSH_INTERVAL {
        col.writer.flush();
        *last_flush = Instant::now();
    }
    if let Some(l) = loaded.logger.as_mut() {
        l.flush();
    }
}

/// How the command ended (None when attached with `-p`) and the kernel
/// side's final counters.
pub type Collected = (Option<spawn::ExitInfo>, KernelCounters);

/// Records drained between two looks at the GPU side (its lines, the window demands).
const DRAIN_CHUNK: usize = 8192;

/// Drains the ring buffer until it is empty, in chunks of [`DRAIN_CHUNK`] records: after each,
/// the GPU side's lines are taken and window demands checked, so that a collector that is
/// behind (a program whose stacks it resolves slower than they come) still asks for a window
/// while the work it is for runs, not once the buffer has emptied.
fn drain_in_chunks(
    col: &mut Collector,
    ring: &mut aya::maps::RingBuf<aya::maps::MapData>,
    mut gpu: Option<&mut GpuSession>,
) {
    loop {
        let n = col.drain_upto(ring, DRAIN_CHUNK);
        if let Some(g) = gpu.as_deref_mut() {
            g.drain(col);
            if let Some(c) = col.launch_configs.as_ref() {
                g.demand_windows(c);
            }
        }
        if n < DRAIN_CHUNK {
            break;
        }
    }
}

/// Runs the loop until the command ends, then detaches and drains what is left.
pub async fn collect(
    loaded: &mut loader::Loaded,
    col: &mut Collector,
    suspended: Option<spawn::Suspended>,
    attach_pid: Option<u32>,
    signals: &mut spawn::StopSignals,
    mut gpu: Option<&mut GpuSession>,
    mut watch: Option<&mut Watch<'_>>,
) -> anyhow::Result<Collected> {
    let ring = loaded.ring.take().context("ring buffer already taken")?;
    // Opens of libcuda files (their processes wait, stopped, for us).
    let mut libopens = match loaded.libopens.take() {
        // SAFETY: as for the ring buffer below.
        Some(r) => Some(unsafe { AsyncFd::register_with_interest(r, Interest::READABLE) }.context("polling LIBOPENS")?),
        None => None,
    };
    // SAFETY: the ring buffer owns its fd and outlives the registration
    // (into_inner below deregisters before it is used synchronously).
    let mut afd =
        unsafe { AsyncFd::register_with_interest(ring, Interest::READABLE) }.context("polling the ring buffer")?;
    // Records are mostly submitted without waking us: poll often.
    let mut tick = tokio::time::interval(POLL_INTERVAL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut last_flush = Instant::now();
    // What ends the recording: the command's exit, or with -p a stop signal
    // or the process being gone.
    let mut stop: std::pin::Pin<Box<dyn std::future::Future<Output = anyhow::Result<Option<spawn::ExitInfo>>> + '_>> =
        match suspended {
            Some(s) => {
                let child = s.release()?;
                Box::pin(async move {
                    spawn::wait_forwarding_signals_with(child, signals, |sig| {
                        log::info!("forwarded signal {sig} to the command")
                    })
                    .await
                    .map(Some)
                })
            }
            None if attach_pid.is_none() => {
                // --system / --cgroup without a command: until a stop signal.
                Box::pin(async move {
                    signals.recv().await;
                    Ok(None)
                })
            }
            None => {
                let pid = attach_pid.expect("pid mode");
                Box::pin(async move {
                    let mut check = tokio::time::interval(Duration::from_millis(100));
                    loop {
                        tokio::select! {
                            _ = signals.recv() => return Ok(None),
                            _ = check.tick() => if !Path::new(&format!("/proc/{pid}")).exists() {
                                return Ok(None);
                            },
                        }
                    }
                })
            }
        };
    let exit = loop {
        tokio::select! {
            r = &mut stop => break r?,
            g = readable(libopens.as_mut()) => {
                let mut g = g?;
                match watch.as_deref_mut() {
                    Some(w) => w.drain(loaded, g.get_inner_mut(), true, &mut |pid| col.before_resume(pid)),
                    // No watch: the processes are only continued.
                    None => crate::collect::libcuda_watch::continue_all(g.get_inner_mut()),
                };
                g.clear_ready();
            }
            g = afd.readable_mut() => {
                let mut g = g?;
                drain_in_chunks(col, g.get_inner_mut(), gpu.as_deref_mut());
                g.clear_ready();
            }
            _ = tick.tick() => {
                drain_in_chunks(col, afd.get_mut(), gpu.as_deref_mut());
                periodic(col, loaded, &mut last_flush);
            }
        }
    };
    drop(stop);
    // Opens still pending: their processes are continued (not probed).
    if let (Some(a), Some(w)) = (libopens.as_mut(), watch.as_deref_mut()) {
        w.drain(loaded, a.get_mut(), true, &mut |pid| col.before_resume(pid));
    }
    let programs = loader::program_stats(loaded);
    // Detach every program, then take what is still in the buffer: after
    // this nothing new can arrive and the counters are final.
    col.asm.cut_after = Some(sysinfo::clock_ns(libc::CLOCK_MONOTONIC));
    loader::detach_all(std::mem::take(&mut loaded.links));
    drop(loaded.ebpf.take());
    if let Some(l) = loaded.logger.as_mut() {
        l.flush();
    }
    if let Some(a) = libopens.as_mut() {
        match watch {
            Some(w) => w.drain(loaded, a.get_mut(), false, &mut |_| {}),
            None => crate::collect::libcuda_watch::continue_all(a.get_mut()),
        };
    }
    let mut ring = afd.into_inner();
    while col.drain(&mut ring) > 0 {}
    col.finish_calls();
    let mut counters = loader::read_counters(&loaded.counters)?;
    counters.programs = programs;
    Ok((exit, counters))
}
