//! Why the launching thread did not launch: the operating-system side of an
//! idle gap, from the scheduler events (`sched` lines, model/sched.rs).
//!
//! A gap's thread is the one that made the submission ending it (the first
//! GPU work call of the scope's processes at or after the gap's start). Each
//! instant of the gap is, for that thread:
//! - **unknown**: before its first scheduler event, or inside a window where
//!   records were lost, or in an interval whose switch was lost;
//! - **blocked**: switched out not runnable, until woken: in which system
//!   call, on which kind of file (`read (pipe)`), or in a page fault;
//! - **runnable**: switched out runnable (preempted) or woken but not yet
//!   back on a CPU: behind the task that held the CPU it got back;
//! - **on CPU**: otherwise.
use std::collections::BTreeMap;

use serde::Serialize;

use super::model::Trace;
use super::model::sched::{OffCpu, OffState};

/// The split of some time of one thread, or a sum of such splits.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct OsSplit {
    /// The thread the split is of (one gap's); None for a sum.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thread: Option<ThreadId>,
    pub total_ns: u64,
    pub on_cpu_ns: u64,
    pub blocked_ns: u64,
    pub runnable_ns: u64,
    pub page_fault_ns: u64,
    pub unknown_ns: u64,
    /// Blocked time by system call and file kind (`read (pipe)`), page
    /// faults as `page_fault`.
    pub blocked: BTreeMap<String, u64>,
    /// Runnable time by what the thread waited behind: `preempted by X`,
    /// `behind X` (after a wake-up), `wake-up latency` (the CPU was idle).
    pub runnable: BTreeMap<String, u64>,
}

#[derive(Clone, Copy, Debug, Serialize, PartialEq, Eq)]
pub struct ThreadId {
    pub pid: u32,
    pub tid: u32,
}

impl OsSplit {
    pub fn add(&mut self, o: &OsSplit) {
        self.total_ns += o.total_ns;
        self.on_cpu_ns += o.on_cpu_ns;
        self.blocked_ns += o.blocked_ns;
        self.runnable_ns += o.runnable_ns;
        self.page_fault_ns += o.page_fault_ns;
        self.unknown_ns += o.unknown_ns;
        for (k, v) in &o.blocked {
            *self.blocked.entry(k.clone()).or_default() += v;
        }
        for (k, v) in &o.runnable {
            *self.runnable.entry(k.clone()).or_default() += v;
        }
    }

    /// Every cause with its time, largest first (ties: on CPU, blocked,
    /// runnable, page faults, unknown; then by name): `on CPU`,
    /// `asleep in clock_nanosleep`, `blocked in read (pipe)`, `preempted by
    /// cpuhog (pid 7)`, `page faults`, `unknown`.
    pub fn causes(&self) -> Vec<(String, u64)> {
        let mut v: Vec<(usize, String, u64)> = vec![(0, "on CPU".into(), self.on_cpu_ns)];
        for (k, &ns) in &self.blocked {
            if k != "page_fault" {
                v.push((1, blocked_phrase(k), ns));
            }
        }
        for (k, &ns) in &self.runnable {
            v.push((2, k.clone(), ns));
        }
        v.push((3, "page faults".into(), self.page_fault_ns));
        v.push((4, "unknown".into(), self.unknown_ns));
        v.retain(|x| x.2 > 0);
        v.sort_by(|a, b| b.2.cmp(&a.2).then(a.0.cmp(&b.0)).then(a.1.cmp(&b.1)));
        v.into_iter().map(|(_, k, ns)| (k, ns)).collect()
    }

    /// The largest cause (`unknown` when nothing is known).
    pub fn main_cause(&self) -> String {
        self.causes().into_iter().next().map_or_else(|| "unknown".into(), |c| c.0)
    }

    /// `asleep in clock_nanosleep 99 %, on CPU 1 %` (causes of ≥ 1 %, at most `n`).
    pub fn sentence(&self, n: usize) -> String {
        let total = self.total_ns.max(1) as f64;
        let parts: Vec<String> = self
            .causes()
            .into_iter()
            .filter(|(_, ns)| *ns as f64 / total >= 0.01)
            .take(n)
            .map(|(k, ns)| format!("{k} {:.0} %", 100.0 * ns as f64 / total))
            .collect();
        if parts.is_empty() { "unknown".into() } else { parts.join(", ") }
    }
}

/// `clock_nanosleep` → `asleep in clock_nanosleep`; `read (pipe)` →
/// `blocked in read (pipe)`.
pub fn blocked_phrase(k: &str) -> String {
    let call = k.split(' ').next().unwrap_or(k);
    match call {
        "nanosleep" | "clock_nanosleep" => format!("asleep in {k}"),
        "stopped" => "stopped (a signal or a debugger)".into(),
        _ => format!("blocked in {k}"),
    }
}

/// The thread whose submission ends the gap [a, b): the first GPU work call
/// of `pids` at or after `a` (else the last before it).
pub fn gap_thread(t: &Trace, pids: &std::collections::BTreeSet<u32>, a: u64) -> Option<ThreadId> {
    gap_call(t, pids, a).map(|c| ThreadId { pid: c.pid, tid: c.tid })
}

/// The submission that ends the gap beginning at `a` ([`gap_thread`]'s call).
pub fn gap_call<'t>(t: &'t Trace, pids: &std::collections::BTreeSet<u32>, a: u64) -> Option<&'t super::model::Call> {
    let i = t.calls.partition_point(|c| c.ts < a);
    let work = |c: &&super::model::Call| c.kind.is_gpu_work() && pids.contains(&c.pid);
    t.calls[i..].iter().find(work).or_else(|| t.calls[..i].iter().rev().find(work))
}

/// The split of [a, b) for thread `id`.
pub fn split(t: &Trace, id: ThreadId, a: u64, b: u64) -> OsSplit {
    let mut s = OsSplit { thread: Some(id), total_ns: b.saturating_sub(a), ..Default::default() };
    if b <= a {
        return s;
    }
    let sched = &t.sched;
    // Elementary pieces: (start, end, what) with what = None for on-CPU.
    enum What<'a> {
        Blocked(&'a OffCpu),
        Runnable(&'a OffCpu),
        Unknown,
    }
    let mut pieces: Vec<(u64, u64, What)> = Vec::new();
    let first = sched.seen.get(&id.tid).map_or(u64::MAX, |x| x.1);
    if first > a {
        pieces.push((a, first.min(b), What::Unknown));
    }
    let off = sched.off.get(&id.tid).map_or(&[][..], |v| v.as_slice());
    let from = off.partition_point(|o| o.end <= a);
    for o in off[from..].iter().take_while(|o| o.start < b) {
        match o.state {
            OffState::Unknown => pieces.push((o.start, o.end, What::Unknown)),
            OffState::Runnable => pieces.push((o.start, o.end, What::Runnable(o))),
            OffState::Blocked => {
                pieces.push((o.start, o.ready, What::Blocked(o)));
                pieces.push((o.ready, o.end, What::Runnable(o)));
            }
        }
    }
    // Loss windows override everything under them.
    let lost: Vec<(u64, u64)> =
        sched.lost.iter().copied().filter(|&(x, y)| x < b && y > a).map(|(x, y)| (x.max(a), y.min(b))).collect();
    for (x, y, w) in pieces {
        let (x, y) = (x.max(a), y.min(b));
        if y <= x {
            continue;
        }
        let len = y - x - overlap(&lost, x, y);
        match w {
            What::Unknown => s.unknown_ns += len,
            What::Blocked(o) if o.cause == "page_fault" => {
                s.page_fault_ns += len;
                *s.blocked.entry("page_fault".into()).or_default() += len;
            }
            What::Blocked(o) => {
                s.blocked_ns += len;
                *s.blocked.entry(o.blocked_label()).or_default() += len;
            }
            What::Runnable(o) => {
                s.runnable_ns += len;
                let held: u64 = o.held_by.iter().map(|h| h.1).sum();
                if o.state == OffState::Runnable && o.preempted && held > 0 {
                    // Shared out by who held the CPU it waited for (their shares of the
                    // whole interval; the rounding remainder to the largest).
                    let mut given = 0;
                    for (name, ns) in &o.held_by {
                        let part = (len as u128 * *ns as u128 / held as u128) as u64;
                        given += part;
                        *s.runnable.entry(format!("preempted by {name}")).or_default() += part;
                    }
                    *s.runnable.entry(format!("preempted by {}", o.held_by[0].0)).or_default() += len - given;
                } else {
                    *s.runnable.entry(o.runnable_label()).or_default() += len;
                }
            }
        }
        s.blocked.retain(|_, v| *v > 0);
        s.runnable.retain(|_, v| *v > 0);
    }
    s.unknown_ns += overlap(&lost, a, b);
    // The rest of the gap, outside the pieces and the loss windows: on CPU.
    // (Overlapping intervals are clipped when the trace is read, model/sched.rs:
    // the parts never exceed the whole.)
    s.on_cpu_ns = s.total_ns.saturating_sub(s.unknown_ns + s.blocked_ns + s.runnable_ns + s.page_fault_ns);
    s
}

/// Σ of the overlap of [x, y) with the (disjoint, sorted) windows.
fn overlap(w: &[(u64, u64)], x: u64, y: u64) -> u64 {
    w.iter().map(|&(p, q)| q.min(y).saturating_sub(p.max(x))).sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::model::parse_str;

    fn trace(extra: &[&str]) -> Trace {
        let mut l = vec![
            r#"{"type":"header","pid":1,"command":["app"],"sched":true}"#.to_string(),
            r#"{"ts":500,"pid":1,"tid":1,"type":"sched","op":"thread_seen","name":"thread_seen"}"#.to_string(),
            // blocked in read (pipe) 1000-5000, woken at 4000: runnable behind "hog (pid 9)" 4000-5000
            r#"{"ts":1000,"end_ts":5000,"pid":1,"tid":1,"type":"sched","op":"off_cpu","name":"read","state":"blocked","syscall":"read","file":"pipe","runnable_ns":1000,"behind":{"pid":9,"tid":9,"comm":"hog"},"waker":{"pid":1,"tid":2,"comm":"w"}}"#.to_string(),
            // preempted 6000-7000 by hog
            r#"{"ts":6000,"end_ts":7000,"pid":1,"tid":1,"type":"sched","op":"off_cpu","name":"runnable","state":"runnable","preempted":true,"runnable_ns":1000,"behind":{"pid":9,"tid":9,"comm":"hog"}}"#.to_string(),
            // a page fault 8000-8500, woken by the idle task's CPU: wake-up latency 8400-8500
            r#"{"ts":8000,"end_ts":8500,"pid":1,"tid":1,"type":"sched","op":"off_cpu","name":"page_fault","state":"blocked","task_state":"D","runnable_ns":100,"behind":{"pid":0,"tid":0,"comm":"swapper/0"}}"#.to_string(),
        ];
        l.extend(extra.iter().map(|s| s.to_string()));
        parse_str("t", &l.join("\n")).unwrap()
    }

    #[test]
    fn every_instant_in_one_state() {
        let t = trace(&[]);
        let s = split(&t, ThreadId { pid: 1, tid: 1 }, 0, 10_000);
        // unknown before the first event (0-500), blocked 3000, runnable 1000 + 1000, page fault 400,
        // wake-up latency 100, on CPU the rest.
        assert_eq!(s.unknown_ns, 500);
        assert_eq!(s.blocked_ns, 3000);
        assert_eq!(s.blocked.get("read (pipe)"), Some(&3000));
        assert_eq!(s.page_fault_ns, 400);
        assert_eq!(s.runnable_ns, 2100);
        assert_eq!(s.runnable.get("behind hog (pid 9)"), Some(&1000));
        assert_eq!(s.runnable.get("preempted by hog (pid 9)"), Some(&1000));
        assert_eq!(s.runnable.get("wake-up latency"), Some(&100));
        assert_eq!(s.on_cpu_ns, 10_000 - 500 - 3000 - 400 - 2100);
        assert_eq!(s.main_cause(), "on CPU");
        // A window inside the blocked part.
        let s = split(&t, ThreadId { pid: 1, tid: 1 }, 2000, 3000);
        assert_eq!((s.blocked_ns, s.on_cpu_ns, s.main_cause().as_str()), (1000, 0, "blocked in read (pipe)"));
        assert_eq!(s.sentence(4), "blocked in read (pipe) 100 %");
    }

    #[test]
    fn lost_windows_are_unknown_whatever_else_was_there() {
        let t = trace(&[
            r#"{"ts":2000,"end_ts":6500,"pid":0,"tid":0,"type":"sched","op":"lost","name":"lost","cpu":1,"records":4}"#,
        ]);
        let s = split(&t, ThreadId { pid: 1, tid: 1 }, 1000, 7000);
        // 2000-6500 unknown; blocked 1000-2000; preempted 6500-7000.
        assert_eq!((s.unknown_ns, s.blocked_ns, s.runnable_ns, s.on_cpu_ns), (4500, 1000, 500, 0));
    }

    #[test]
    fn the_gap_thread_is_the_next_submitter() {
        let t = parse_str(
            "t",
            &[
                r#"{"type":"header","pid":1,"command":["app"]}"#,
                r#"{"ts":100,"pid":1,"tid":1,"type":"kernel","op":"launch","name":"cuLaunchKernel","kernel":"k","grid":[1,1,1],"block":[1,1,1],"stream":"0x0","ret":0}"#,
                r#"{"ts":900,"pid":1,"tid":3,"type":"kernel","op":"launch","name":"cuLaunchKernel","kernel":"k","grid":[1,1,1],"block":[1,1,1],"stream":"0x0","ret":0}"#,
            ]
            .join("\n"),
        )
        .unwrap();
        let pids = std::collections::BTreeSet::from([1]);
        assert_eq!(gap_thread(&t, &pids, 200), Some(ThreadId { pid: 1, tid: 3 }));
        assert_eq!(gap_thread(&t, &pids, 1000), Some(ThreadId { pid: 1, tid: 3 }), "none after: the last before");
    }
}
