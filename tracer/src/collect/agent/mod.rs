//! `tracer agent`'s collection loop: the probes stay attached while the
//! agent runs; the processes the [`selection`] names are marked traced
//! (their children follow), and every libcuda file they map or open gets
//! the probes once per inode, as `tracer record` does (the same
//! [`Watch`]: a process opening a `libcuda.so*` waits, stopped, until its
//! file is probed); every line goes into the metrics
//! (`crate::analysis::agent`) and, inside a recording window, into a
//! duty-cycled trace file ([`recording`]). Every second: process facts for
//! new processes, exits (from the exit lines, and /proc for any whose line
//! was lost), the grace period, the agent's loss and own cost. SIGTERM or
//! SIGINT ends it: every probe detached, the open window finished.
pub mod exposure;
pub mod http;
pub mod options;
pub mod procinfo;
pub mod recording;
pub mod run;
pub mod selection;
pub mod webconfig;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use serde_json::Value;
use tokio::io::Interest;
use tokio::io::unix::AsyncFd;

use crate::analysis::agent::AgentMetrics;
use crate::collect::libcuda_watch::Watch;
use crate::collect::loader;
use crate::decode::calls::Assembler;
use recording::Recording;
use selection::Selection;

/// How often process facts, exits, loss and own cost are refreshed.
const HOUSEKEEPING: Duration = Duration::from_secs(1);

/// What the loop shares with the HTTP thread.
pub struct Shared {
    pub metrics: Mutex<AgentMetrics>,
    /// Set by `POST /record`, taken by the loop.
    pub record_requested: AtomicBool,
    /// True while a recording window is open (`POST /record` answers 409).
    pub recording_active: AtomicBool,
    /// What the HTTP server counts (refused, timed out, unauthorized).
    pub http: Arc<http::Stats>,
}

pub struct Loop<'a> {
    pub loaded: &'a mut loader::Loaded,
    pub asm: Assembler,
    pub selection: &'a mut dyn Selection,
    /// The libcuda files probed, and the probing of new ones.
    pub watch: Watch<'a>,
    pub shared: Arc<Shared>,
    pub recording: Option<Recording>,
    pub scan_interval: Duration,
    /// NVML power lines (side channel), if sampling.
    pub power: Option<std::sync::mpsc::Receiver<Value>>,
    /// The header line of a recording window.
    pub window_header: Box<dyn Fn() -> Value + 'a>,
    /// A command the agent started (reaped when it exits).
    pub command_pid: Option<u32>,
    /// Per CPU: records numbered but not received at the last housekeeping.
    pub missing_before: std::collections::BTreeMap<u32, u64>,
    /// Names and cgroups the lines do not carry.
    pub facts: procinfo::Facts,
    /// `--duty-cycle ON/PERIOD`: the libcuda probes attached ON in every PERIOD.
    pub duty: Option<Duty>,
}

/// The state of `--duty-cycle`.
pub struct Duty {
    pub on: Duration,
    pub period: Duration,
    pub attached: bool,
    /// When the current period began, and when the probes were attached.
    pub period_start: Instant,
    pub attached_at: Instant,
}

impl Duty {
    /// Attached now, the first period starting.
    pub fn new(on: Duration, period: Duration) -> Duty {
        let now = Instant::now();
        Duty { on, period, attached: true, period_start: now, attached_at: now }
    }
}

fn now_ns() -> u64 {
    crate::collect::sysinfo::clock_ns(libc::CLOCK_MONOTONIC)
}

impl Loop<'_> {
    /// Probes the libcuda files the selection's new processes map, then
    /// marks them traced.
    fn scan(&mut self) {
        for pid in self.selection.poll() {
            self.watch.scan(self.loaded, pid);
            if let Err(e) = self.loaded.mark_traced(pid) {
                log::warn!("{e:#}");
            }
        }
    }

    /// Reads every record available now into the metrics (and the window),
    /// in batches: the lock is let go between them, so that a scrape is
    /// answered while a busy process keeps the ring buffer full.
    fn drain(&mut self, ring: &mut aya::maps::RingBuf<aya::maps::MapData>) -> usize {
        const BATCH: usize = 4096;
        let now = now_ns();
        let shared = self.shared.clone();
        let mut n = 0;
        let mut forks = vec![];
        let mut exits = vec![];
        loop {
            let mut m = shared.metrics.lock().unwrap_or_else(|e| e.into_inner());
            let rec = &mut self.recording;
            let mut empty = false;
            for _ in 0..BATCH {
                let Some(item) = ring.next() else {
                    empty = true;
                    break;
                };
                n += 1;
                match tracer_common::decode::parse(&item) {
                    Ok(r) => self.asm.push(&r, &mut |l| {
                        if let crate::decode::fastline::Line::Value(v) = &l
                            && v["type"] == "process"
                            && let Some(pid) = v["pid"].as_u64()
                        {
                            match v["op"].as_str() {
                                Some("fork") => forks.push((pid as u32, v["child"].as_u64().unwrap_or(0) as u32)),
                                Some("exit") => exits.push(pid as u32),
                                _ => {}
                            }
                        }
                        m.add_line(&l, now);
                        if let Some(w) = rec.as_mut() {
                            w.line(&l);
                        }
                    }),
                    Err(e) => {
                        self.asm.stats.bad_records += 1;
                        log::warn!("undecodable record: {e}");
                    }
                }
            }
            // The facts of the processes met in this batch, before their
            // exits make the kernel's and /proc's forget them.
            for (parent, child) in forks.drain(..) {
                self.facts.forked(parent, child);
            }
            for pid in std::mem::take(&mut m.fresh) {
                let (name, cgroup) = self.facts.of(pid);
                m.set_info(pid, name, cgroup, self.facts.command_args);
            }
            for pid in exits.drain(..) {
                self.facts.exited(pid);
            }
            drop(m);
            if empty {
                return n;
            }
            std::thread::yield_now();
        }
    }

    /// `counters` were read before the ring buffer was last drained.
    fn housekeeping(&mut self, counters: Option<loader::KernelCounters>) {
        let now = now_ns();
        let mut m = self.shared.metrics.lock().unwrap_or_else(|e| e.into_inner());
        for pid in m.unknown_processes() {
            let (name, cgroup) = self.facts.of(pid);
            m.set_info(pid, name, cgroup, self.facts.command_args);
        }
        for pid in m.live_pids() {
            if !procinfo::alive(pid) {
                m.exited(pid, now);
            }
        }
        m.expire(now);
        if m.health.libcuda_files.len() != self.watch.files.len() {
            m.health.libcuda_files =
                self.watch.files.iter().map(|f| (f.path.clone(), f.ino, f.probed_functions)).collect();
        }
        m.health.libcuda_files_not_probed = self.watch.not_probed;
        m.health.libcuda_opens = self.watch.opens;
        // The counting probes on the functions outside the table (loader.rs).
        if let Some(Ok(u)) = self.loaded.counts.as_ref().map(|c| c.unrecorded_calls()) {
            m.health.undecoded_calls = u;
        }
        if let Some(k) = counters {
            let missing = crate::collect::footer::loss_by_cpu(&k.attempted, &self.asm.stats.records_by_cpu);
            let lost = settled_loss(&self.missing_before, &missing);
            self.missing_before = missing;
            // A counter: never goes down.
            m.health.lost_records = m.health.lost_records.max(lost + self.asm.stats.bad_records);
            m.health.ring_buffer_full = k.ring_full;
        }
        m.health.http_refused = self.shared.http.refused.load(Ordering::Relaxed);
        m.health.http_evicted = self.shared.http.evicted.load(Ordering::Relaxed);
        m.health.http_timed_out = self.shared.http.timed_out.load(Ordering::Relaxed);
        m.health.http_unauthorized = self.shared.http.unauthorized.load(Ordering::Relaxed);
        let (rss, cpu) = own_cost();
        m.health.rss_bytes = rss;
        m.health.cpu_seconds = cpu;
        if let Some(r) = &self.recording {
            m.health.recordings = r.files;
            m.health.recorded_bytes = r.bytes;
            if r.paused.is_some() && m.health.recording_paused != r.paused {
                log::warn!("recording paused ({}): {}", r.paused.unwrap_or(""), r.last_error.as_deref().unwrap_or(""));
                eprintln!(
                    "tracer agent: recording paused ({}): {}; metrics go on",
                    r.paused.unwrap_or(""),
                    r.last_error.as_deref().unwrap_or("")
                );
            }
            m.health.recording_paused = r.paused;
        }
        drop(m);
        if let Some(pid) = self.command_pid {
            let mut st = 0;
            // SAFETY: waitpid on our own child with WNOHANG.
            if unsafe { libc::waitpid(pid as i32, &mut st, libc::WNOHANG) } == pid as i32 {
                self.command_pid = None;
            }
        }
    }

    /// `--duty-cycle`: detaches the libcuda probes at the end of a window
    /// (the sched and open tracepoints stay: processes are followed
    /// throughout) and attaches them again at the start of the next period.
    fn duty_tick(&mut self, ring: &mut aya::maps::RingBuf<aya::maps::MapData>) {
        let Some(d) = self.duty.as_ref() else { return };
        let (attached, on, period, period_start, attached_at) =
            (d.attached, d.on, d.period, d.period_start, d.attached_at);
        let now = Instant::now();
        if attached && now >= period_start + on {
            let links = loader::Links {
                uprobes: std::mem::take(&mut self.loaded.links.uprobes),
                multi: std::mem::take(&mut self.loaded.links.multi),
                ..Default::default()
            };
            loader::detach_all(links);
            let seconds = attached_at.elapsed().as_secs_f64();
            self.drain(ring);
            self.shared.metrics.lock().unwrap_or_else(|e| e.into_inner()).window_ended(seconds);
            if let Some(d) = self.duty.as_mut() {
                d.attached = false;
            }
        } else if !attached && now >= period_start + period {
            self.drain(ring);
            let (functions, failed) = self.watch.reattach_all(self.loaded);
            log::debug!("duty cycle: {functions} functions probed again ({failed} files failed)");
            self.shared.metrics.lock().unwrap_or_else(|e| e.into_inner()).window_started();
            if let Some(d) = self.duty.as_mut() {
                // The next period starts on time (not late by the attach).
                d.period_start = if now < period_start + period * 2 { period_start + period } else { now };
                d.attached = true;
                d.attached_at = Instant::now();
            }
        }
    }

    fn side(&mut self) {
        let Some(rx) = &self.power else { return };
        let now = now_ns();
        let mut m = self.shared.metrics.lock().unwrap_or_else(|e| e.into_inner());
        while let Ok(v) = rx.try_recv() {
            m.add_value(&v, now);
            if let Some(w) = self.recording.as_mut() {
                w.line(&crate::decode::fastline::Line::Value(v));
            }
        }
    }

    fn recording_tick(&mut self) {
        let Some(r) = self.recording.as_mut() else { return };
        if self.shared.record_requested.load(Ordering::SeqCst) {
            // Active before the request is cleared: a POST in between sees one of the two
            // (409), never neither (it was answered 429 as if the window were over).
            self.shared.recording_active.store(true, Ordering::SeqCst);
            self.shared.record_requested.store(false, Ordering::SeqCst);
            r.request();
        }
        let lost = self.shared.metrics.lock().map(|m| m.health.lost_records).unwrap_or(0);
        r.tick(Instant::now(), &*self.window_header, &|n, s| recording::footer(n, s, lost));
        self.shared.recording_active.store(r.active(), Ordering::Relaxed);
    }

    /// Runs until SIGTERM/SIGINT/SIGHUP; then detaches every probe and
    /// takes what is left.
    pub async fn run(
        &mut self,
        signals: &mut crate::collect::spawn::StopSignals,
        usr1: &mut tokio::signal::unix::Signal,
    ) -> anyhow::Result<i32> {
        let ring = self.loaded.ring.take().context("ring buffer already taken")?;
        // SAFETY: the ring buffer owns its fd and outlives the registration.
        let mut afd =
            unsafe { AsyncFd::register_with_interest(ring, Interest::READABLE) }.context("polling the ring buffer")?;
        // Opens of libcuda files (their processes wait, stopped, for us).
        let mut libopens = match self.loaded.libopens.take() {
            // SAFETY: as for the ring buffer above.
            Some(r) => {
                Some(unsafe { AsyncFd::register_with_interest(r, Interest::READABLE) }.context("polling LIBOPENS")?)
            }
            None => None,
        };
        self.scan();
        let mut tick = tokio::time::interval(crate::collect::session::POLL_INTERVAL);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let (mut last_scan, mut last_house) = (Instant::now(), Instant::now() - HOUSEKEEPING);
        let sig = loop {
            tokio::select! {
                s = signals.recv() => break s,
                _ = usr1.recv() => {
                    if let Some(r) = self.recording.as_mut() && r.request() {
                        eprintln!("tracer agent: SIGUSR1: recording {} s", r.window().as_secs_f64());
                    }
                }
                g = crate::collect::session::readable(libopens.as_mut()) => {
                    let mut g = g?;
                    self.watch.drain(self.loaded, g.get_inner_mut(), true, &mut |_| {});
                    g.clear_ready();
                }
                g = afd.readable_mut() => {
                    let mut g = g?;
                    self.drain(g.get_inner_mut());
                    g.clear_ready();
                }
                _ = tick.tick() => {
                    self.drain(afd.get_mut());
                    self.duty_tick(afd.get_mut());
                    self.side();
                    self.recording_tick();
                    if last_scan.elapsed() >= self.scan_interval {
                        self.scan();
                        last_scan = Instant::now();
                    }
                    if last_house.elapsed() >= HOUSEKEEPING {
                        // The counters first, then what they numbered.
                        let counters = loader::read_counters(&self.loaded.counters).ok();
                        self.drain(afd.get_mut());
                        self.housekeeping(counters);
                        last_house = Instant::now();
                    }
                }
            }
        };
        log::info!("signal {sig}: detaching");
        // Opens still pending, then those made while detaching: their
        // processes are continued (not probed).
        if let Some(a) = libopens.as_mut() {
            self.watch.drain(self.loaded, a.get_mut(), true, &mut |_| {});
        }
        loader::detach_all(std::mem::take(&mut self.loaded.links));
        if let Some(a) = libopens.as_mut() {
            self.watch.drain(self.loaded, a.get_mut(), false, &mut |_| {});
        }
        drop(self.loaded.ebpf.take());
        let mut ring = afd.into_inner();
        while self.drain(&mut ring) > 0 {}
        let lost = self.shared.metrics.lock().map(|m| m.health.lost_records).unwrap_or(0);
        if let Some(r) = self.recording.as_mut() {
            r.finish(&|n, s| recording::footer(n, s, lost));
        }
        Ok(0)
    }
}

/// Records lost for good: per CPU, missing now and a second ago too (a
/// record still being written when the counters were read is missing only
/// once). Exact up to the records in flight at two reads in a row.
pub fn settled_loss(before: &std::collections::BTreeMap<u32, u64>, now: &std::collections::BTreeMap<u32, u64>) -> u64 {
    now.iter().map(|(cpu, &n)| n.min(before.get(cpu).copied().unwrap_or(0))).sum()
}

/// The agent's resident bytes and CPU seconds (user + system).
fn own_cost() -> (u64, f64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let rss_kib = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
        .unwrap_or(0);
    // SAFETY: getrusage writes the struct it is given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let cpu = if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } == 0 {
        let s = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
        s(ru.ru_utime) + s(ru.ru_stime)
    } else {
        0.0
    };
    (rss_kib * 1024, cpu)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_loss_counts_once_it_is_seen_twice() {
        let m = |v: &[(u32, u64)]| v.iter().copied().collect::<std::collections::BTreeMap<u32, u64>>();
        // CPU 0: 3 in flight at one read only; CPU 1: 5 lost for good.
        assert_eq!(super::settled_loss(&m(&[(1, 5)]), &m(&[(0, 3), (1, 5)])), 5);
        assert_eq!(super::settled_loss(&m(&[(0, 3), (1, 5)]), &m(&[(1, 7)])), 5);
        assert_eq!(super::settled_loss(&m(&[]), &m(&[(0, 9)])), 0);
    }
}
