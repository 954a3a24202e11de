//! The host clock of what-if (docs/what-if.md, *Host speed and compensated
//! pacing*): per process, the recorded time mapped to the time its host
//! program would take without what tracing added (compensated pacing,
//! tracer_format::pacing) and on a host `speed` times as fast.
//!
//! A process's time is cut into its calls' own time (from the entry to the
//! return of every return-probed call, merged: the driver's time, a wait for
//! the GPU) and the host time between them. Host time loses the tracing costs
//! that fell in it (the probes of every call of the process there, the
//! recorder's `--capture-data` stops, its hold of the CPU) and is divided by
//! the host speed; a call's own time is kept (what-if's waits move it). The
//! map is linear inside each piece and the identity before the process's
//! first call.
use std::collections::HashMap;

use tracer_format::pacing::{Compensation, Costs, GapStats, HostSpeed, OffCpu, Overrides, Pacing, Probed, Sample};

use super::model::Trace;
use super::model::sched::OffState;

/// The host clock: per pid, breakpoints `(recorded, host)` in recorded order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HostClock {
    points: HashMap<u32, Vec<(u64, u64)>>,
    /// The host gaps and what was removed from them.
    pub stats: GapStats,
    /// The probed calls counted.
    pub calls: u64,
    pub compensation: Option<Costs>,
}

/// How the host is modelled: compensated or recorded, its speed, the cost overrides.
#[derive(Debug, Clone)]
pub struct Host {
    pub pacing: Pacing,
    pub speed: HostSpeed,
    pub overrides: Overrides,
}

impl Default for Host {
    /// The host program as recorded, on the same host (the map is the identity).
    fn default() -> Host {
        Host { pacing: Pacing::Recorded, speed: HostSpeed::default(), overrides: Overrides::default() }
    }
}

impl Host {
    pub fn is_identity(&self) -> bool {
        self.pacing == Pacing::Recorded && self.speed.factor == 1.0
    }
}

/// The costs `t`'s header and footer give, and every probed call, off-CPU interval and on-CPU
/// sample keyed by pid (one host clock per process).
fn compensation(t: &Trace, o: Overrides) -> Compensation {
    let sched = t.sched.recorded;
    let costs = Costs::of_recording(t.header.as_ref(), t.footer.as_ref(), sched, o);
    let replayable = t.header.as_ref().is_some_and(|h| h.get("replayable").is_some_and(|r| !r.is_null()));
    let calls: Vec<Probed> = t
        .calls
        .iter()
        .filter(|c| !c.from_graph())
        .map(|c| Probed {
            tid: c.pid,
            ts: c.ts,
            ret_ts: (c.flags & super::model::FLAG_RETURNED != 0).then(|| c.end()),
            launch: replayable && c.kind == super::model::Kind::Launch,
            gpu_work: c.kind.is_gpu_work(),
        })
        .collect();
    let off: Vec<OffCpu> = t
        .sched
        .off
        .values()
        .flatten()
        .filter(|o| o.state != OffState::Unknown)
        .map(|o| OffCpu {
            tid: o.pid,
            ts: o.start,
            end_ts: o.end,
            recorder_ns: o.recorder_ns,
            stack: o.stack.is_some(),
        })
        .collect();
    let samples: Vec<Sample> = t.stacks.all_samples().map(|(pid, _, ts)| Sample { tid: pid, ts }).collect();
    Compensation::new(costs, &calls, &off, &samples)
}

/// Each pid's stopped intervals (`stopped` off-CPU lines of any of its threads), merged.
fn stops(t: &Trace) -> HashMap<u32, Vec<(u64, u64)>> {
    let mut m: HashMap<u32, Vec<(u64, u64)>> = HashMap::new();
    for o in t.sched.off.values().flatten().filter(|o| o.cause == "stopped") {
        m.entry(o.pid).or_default().push((o.start, o.end));
    }
    for v in m.values_mut() {
        *v = merge(std::mem::take(v));
    }
    m
}

fn merge(mut v: Vec<(u64, u64)>) -> Vec<(u64, u64)> {
    v.sort_unstable();
    let mut out: Vec<(u64, u64)> = Vec::with_capacity(v.len());
    for (s, e) in v {
        match out.last_mut() {
            Some(l) if s <= l.1 => l.1 = l.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

fn overlap(v: &[(u64, u64)], a: u64, b: u64) -> u64 {
    let first = v.partition_point(|&(_, e)| e <= a);
    v[first..].iter().take_while(|&&(s, _)| s < b).map(|&(s, e)| e.min(b).saturating_sub(s.max(a))).sum()
}

impl HostClock {
    /// The host clock of `t` under `h` (the identity for the recorded host program on the same
    /// host).
    pub fn new(t: &Trace, h: &Host) -> HostClock {
        let mut clock = HostClock::default();
        if h.is_identity() {
            return clock;
        }
        let comp = if h.pacing == Pacing::Compensated { compensation(t, h.overrides) } else { Compensation::none() };
        let stopped = if h.pacing == Pacing::Compensated { stops(t) } else { HashMap::new() };
        clock.compensation = comp.costs.clone();
        // per pid: its first call, its return-probed calls' own intervals, its last event
        let mut first: HashMap<u32, u64> = HashMap::new();
        let mut own: HashMap<u32, Vec<(u64, u64)>> = HashMap::new();
        let mut last: HashMap<u32, u64> = HashMap::new();
        for c in t.calls.iter().filter(|c| !c.from_graph()) {
            let f = first.entry(c.pid).or_insert(c.ts);
            *f = (*f).min(c.ts);
            if c.dur > 0 {
                own.entry(c.pid).or_default().push((c.ts, c.end()));
            }
            let l = last.entry(c.pid).or_insert(0);
            *l = (*l).max(c.end());
            clock.calls += 1;
        }
        for m in &t.markers {
            if let Some(l) = last.get_mut(&m.pid) {
                *l = (*l).max(m.ts);
            }
        }
        let no_stops = Vec::new();
        for (&pid, &start) in &first {
            let busy = merge(own.remove(&pid).unwrap_or_default());
            let st = stopped.get(&pid).unwrap_or(&no_stops);
            let mut pts = vec![(start, start)];
            let (mut at, mut host) = (start, start);
            let mut step = |to: u64, is_host: bool, at: &mut u64, host: &mut u64| {
                if to <= *at {
                    return;
                }
                let raw = to - *at;
                *host += if is_host {
                    let stop = overlap(st, *at, to).min(raw);
                    let left = clock.stats.take(raw - stop, comp.within(pid, *at, to));
                    clock.stats.removed_ns += stop;
                    h.speed.scale(left)
                } else {
                    raw
                };
                *at = to;
                pts.push((to, *host));
            };
            for &(s, e) in &busy {
                step(s, true, &mut at, &mut host);
                step(e, false, &mut at, &mut host);
            }
            step(last[&pid], true, &mut at, &mut host);
            clock.points.insert(pid, pts);
        }
        clock
    }

    /// Recorded time `ts` of process `pid` on the host clock.
    pub fn at(&self, pid: u32, ts: u64) -> u64 {
        let Some(p) = self.points.get(&pid) else { return ts };
        let k = p.partition_point(|x| x.0 <= ts);
        if k == 0 {
            return ts; // before the process's first call
        }
        let (r0, h0) = p[k - 1];
        match p.get(k) {
            // inside a piece: linear between its ends
            Some(&(r1, h1)) => h0 + ((ts - r0) as u128 * (h1 - h0) as u128 / (r1 - r0) as u128) as u64,
            None => h0 + (ts - r0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::model::parse_str;

    fn call(ts: u64, name: &str, ty: &str, op: &str, dur_us: Option<f64>) -> String {
        let d = dur_us.map_or(String::new(), |d| format!(r#","duration_us":{d},"ret":0"#));
        format!(r#"{{"ts":{ts},"pid":1,"tid":1,"type":"{ty}","op":"{op}","name":"{name}"{d}}}"#)
    }

    /// A launch at 1,000 ns, two calls replay would not make, a 2 µs sync at 10,000, a launch at
    /// 20,000; the footer's cu_enter 300 ns a run, the trap 700 (the default), cu_exit 100.
    fn trace(footer: bool) -> Trace {
        let mut l = vec![
            call(1_000, "cuLaunchKernel", "kernel", "launch", None),
            call(3_000, "cuCtxGetCurrent", "context", "ctx_get_current", None),
            call(4_000, "cuCtxGetCurrent", "context", "ctx_get_current", None),
            call(10_000, "cuCtxSynchronize", "sync", "ctx_synchronize", Some(2.0)),
            call(20_000, "cuLaunchKernel", "kernel", "launch", None),
        ];
        if footer {
            l.push(
                r#"{"type":"footer","bpf_stats":{"cu_enter":{"runs":10,"run_time_ns":3000},"cu_exit":{"runs":1,"run_time_ns":100}}}"#
                    .into(),
            );
        }
        parse_str("t", &l.join("\n")).unwrap()
    }

    #[test]
    fn identity_when_recorded_on_the_same_host() {
        let t = trace(true);
        let c = HostClock::new(&t, &Host::default());
        assert_eq!((c.at(1, 12_345), c.stats, c.calls), (12_345, GapStats::default(), 0));
    }

    #[test]
    fn compensated_and_twice_as_fast() {
        let t = trace(true);
        let h = Host { pacing: Pacing::Compensated, ..Host::default() };
        let c = HostClock::new(&t, &h);
        // 1,000-10,000: 9,000 less 3 entries of 1,000 ns = 6,000; the sync's 2,000 kept (its
        // return's 800 ns is inside it); 12,000-20,000: 8,000 less the launch's entry = 7,000.
        assert_eq!(c.at(1, 1_000), 1_000);
        assert_eq!(c.at(1, 10_000), 7_000);
        assert_eq!(c.at(1, 12_000), 9_000);
        assert_eq!(c.at(1, 20_000), 16_000);
        assert_eq!(c.at(1, 11_000), 8_000);
        assert_eq!(c.at(1, 500), 500);
        assert_eq!(c.at(2, 777), 777);
        assert_eq!(c.stats, GapStats { gaps: 2, removed_ns: 4_000, clamped: 0, clamped_excess_ns: 0 });
        assert!(c.compensation.as_ref().unwrap().missing[0].starts_with("no scheduler lines"));
        let h =
            Host { pacing: Pacing::Compensated, speed: HostSpeed { factor: 2.0, from: "t".into() }, ..Host::default() };
        let c = HostClock::new(&t, &h);
        assert_eq!((c.at(1, 10_000), c.at(1, 12_000), c.at(1, 20_000)), (4_000, 6_000, 9_500));
        let h =
            Host { pacing: Pacing::Recorded, speed: HostSpeed { factor: 0.5, from: "t".into() }, ..Host::default() };
        let c = HostClock::new(&t, &h);
        assert_eq!((c.at(1, 10_000), c.at(1, 12_000), c.at(1, 20_000)), (19_000, 21_000, 37_000));
        // without bpf_stats: the trap only, named
        let c = HostClock::new(&trace(false), &Host { pacing: Pacing::Compensated, ..Host::default() });
        assert_eq!(c.at(1, 20_000), 20_000 - 3 * 700 - 700);
        assert!(c.compensation.as_ref().unwrap().missing[0].starts_with("no bpf_stats"));
    }

    /// An on-CPU sample of the process's other thread (tid 2) at 15,000: the sample program's
    /// 9,000 ns over the footer's 3 samples, 3,000 ns, out of the 12,000-20,000 gap.
    #[test]
    fn samples_cost_their_process_the_sample_program() {
        let l = [
            call(12_000, "cuLaunchKernel", "kernel", "launch", None),
            r#"{"type":"sample","op":"cpu","name":"sample","ts":15000,"pid":1,"tid":2,"stack":4}"#.into(),
            call(20_000, "cuLaunchKernel", "kernel", "launch", None),
            r#"{"type":"footer","bpf_stats":{"cu_enter":{"runs":10,"run_time_ns":3000},"stack_sample":{"runs":30,"run_time_ns":9000}},"stacks":{"by_site":{"sample":3}}}"#.into(),
        ];
        let t = parse_str("t", &l.join("\n")).unwrap();
        let c = HostClock::new(&t, &Host { pacing: Pacing::Compensated, ..Host::default() });
        // 8,000 less the second launch's entry (700 + 300) and the sample's 3,000
        assert_eq!(c.at(1, 20_000) - c.at(1, 12_000), 4_000);
        assert_eq!(c.compensation.as_ref().unwrap().sample_ns, 3_000.0);
    }
}
