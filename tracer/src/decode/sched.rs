//! Scheduler records (tracer-ebpf/src/sched.rs) → `sched` lines: one
//! `off_cpu` line per interval a traced thread spent off its CPU, with why
//! (blocked in which system call, on which kind of file; runnable behind
//! which task; a page fault), who woke it and who held the CPU it came back
//! to. Time a lost record makes uncertain is said so (`unknown`, `lost`),
//! never given a cause.
//!
//! Lines (docs/trace-format.md):
//! - `{"type":"sched","op":"thread_seen","ts","pid","tid"}`: the first
//!   scheduler event of a thread; its states are known from here on;
//! - `{"type":"sched","op":"off_cpu","name":CAUSE,"ts","end_ts","state",…}`;
//! - `{"type":"sched","op":"lost","ts","end_ts","cpu","records"}`: records
//!   of that CPU were lost between those times (its sequence numbers jump):
//!   every thread's state there is unknown.
use std::collections::{BTreeMap, HashMap};

use serde_json::{Map, Value, json};
use tracer_common::event::{Header, SchedSwitch, SchedWaking, sched_flags};

/// Reads what a process's file descriptor is (`/proc/PID/fd/FD`), from the
/// collector; None when it cannot tell.
pub type FdReader = Box<dyn FnMut(u32, u64) -> Option<String>>;

#[derive(Clone, Debug)]
struct Task {
    pid: u32,
    tid: u32,
    comm: String,
}

impl Task {
    /// `pid` only when known (a traced process's thread, or the current
    /// task of a record); 0 is the idle task's.
    fn json(&self) -> Value {
        match self.pid {
            0 if self.tid != 0 => json!({"tid": self.tid, "comm": self.comm}),
            p => json!({"pid": p, "tid": self.tid, "comm": self.comm}),
        }
    }
}

#[derive(Clone, Debug)]
struct Off {
    start: u64,
    cpu: u32,
    /// The tracepoint's prev_state.
    prev_state: u64,
    syscall: Option<i64>,
    arg0: u64,
    file: Option<String>,
    /// The task that got the CPU when this one left it.
    next: Task,
    woken: Option<(u64, Task)>,
    /// Preempted: the CPU it waits for, and until when its holders are counted.
    watch: Option<(u32, u64)>,
    /// Who held that CPU meanwhile (task key → ns).
    held: BTreeMap<(u32, u32, String), u64>,
    /// The stack taken at its switch-out (decode/stacks.rs).
    stack: Option<u64>,
}

#[derive(Clone, Debug)]
enum State {
    On {
        since: u64,
    },
    Off(Box<Off>),
    /// After a loss: what the thread did since `since` is unknown.
    Unknown {
        since: u64,
    },
}

/// Records of one CPU after which a missing sequence number counts as lost.
pub const LATE_RECORDS: u64 = 256;

#[derive(Clone, Copy, Debug)]
struct Missing {
    /// Sequence numbers [lo, hi) not received.
    lo: u64,
    hi: u64,
    /// The times of the records around them.
    from: u64,
    to: u64,
}

#[derive(Default)]
struct CpuSeq {
    next: Option<u64>,
    last_ts: u64,
    missing: Vec<Missing>,
}

#[derive(Default)]
pub struct SchedTracker {
    /// Scheduler events are recorded (else `seen` does nothing).
    pub enabled: bool,
    threads: HashMap<u32, (u32, State)>,
    /// Threads whose exit was seen: their last switch-out follows it.
    exited: std::collections::HashSet<u32>,
    /// Per CPU: the sequence numbers seen and missing.
    cpus: BTreeMap<u32, CpuSeq>,
    /// Per CPU: the task the last switch there switched in.
    occupant: HashMap<u32, Task>,
    fd_reader: Option<FdReader>,
    /// Scheduler records received (switches and wake-ups).
    pub records: u64,
    /// Lines written, by op.
    pub off_cpu_lines: u64,
    pub unknown_lines: u64,
    pub lost_windows: u64,
    last_ts: u64,
    /// The recorder's own process (its threads in `held_by` are marked `"recorder": true`).
    pub recorder_pid: Option<u32>,
    /// Runnable time of traced threads while the recorder's threads held their CPU, ns, by
    /// the holding thread's name (the footer's `sched.held_by_recorder`).
    pub held_by_recorder: BTreeMap<String, u64>,
}

/// System calls whose first argument is a file descriptor worth naming.
const FD_CALLS: &[&str] = &[
    "read",
    "write",
    "readv",
    "writev",
    "pread64",
    "pwrite64",
    "preadv",
    "pwritev",
    "preadv2",
    "pwritev2",
    "recvfrom",
    "recvmsg",
    "recvmmsg",
    "sendto",
    "sendmsg",
    "sendmmsg",
    "accept",
    "accept4",
    "connect",
    "epoll_wait",
    "epoll_pwait",
    "epoll_pwait2",
    "flock",
    "fsync",
    "fdatasync",
    "ioctl",
    "splice",
    "sendfile",
];

pub fn syscall_name(nr: i64) -> String {
    usize::try_from(nr)
        .ok()
        .and_then(syscalls::x86_64::Sysno::new)
        .map_or_else(|| format!("syscall_{nr}"), |s| s.name().to_string())
}

/// `S`, `D`, … of a prev_state (empty for runnable).
fn task_state(s: u64) -> &'static str {
    const L: [(u64, &str); 8] =
        [(1, "S"), (2, "D"), (4, "T"), (8, "t"), (0x10, "X"), (0x20, "Z"), (0x40, "P"), (0x80, "I")];
    L.iter().find(|(b, _)| s & b != 0).map_or("", |(_, n)| n)
}

fn comm(b: &[u8]) -> String {
    let n = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..n]).into_owned()
}

impl Off {
    /// Switched out not runnable.
    fn blocked(&self) -> bool {
        self.prev_state & 0xff != 0
    }

    /// The cause it is named by: the system call it blocked in, `page_fault`
    /// (blocked outside one), `stopped` (a stopped or traced task), `blocked`,
    /// or `runnable`.
    fn name(&self) -> String {
        match (self.blocked(), self.syscall) {
            (false, _) => "runnable".to_string(),
            (true, _) if self.prev_state & 0x0c != 0 => "stopped".to_string(),
            (true, Some(nr)) if nr >= 0 => syscall_name(nr),
            (true, Some(_)) => "page_fault".to_string(),
            (true, None) => "blocked".to_string(),
        }
    }

    /// From when it waited for a CPU, up to `end`: the switch-out (runnable)
    /// or the wake-up (blocked); None when blocked and not woken.
    fn ready(&self, end: u64) -> Option<u64> {
        match (&self.woken, self.blocked()) {
            (_, false) => Some(self.start),
            (Some((w, _)), true) => Some((*w).clamp(self.start, end)),
            (None, true) => None,
        }
    }

    /// The `off_cpu` line of this interval up to `end`, with the fields every
    /// such line has (`name`, `end_ts`, `state`).
    fn line(&self, pid: u32, tid: u32, end: u64) -> Map<String, Value> {
        let mut m = line(self.start, pid, tid, "off_cpu", &self.name());
        m.insert("end_ts".into(), json!(end));
        m.insert("state".into(), json!(if self.blocked() { "blocked" } else { "runnable" }));
        if let Some(id) = self.stack {
            m.insert("stack".into(), json!(id));
        }
        m
    }
}

fn line(ts: u64, pid: u32, tid: u32, op: &str, name: &str) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("ts".into(), json!(ts));
    m.insert("pid".into(), json!(pid));
    m.insert("tid".into(), json!(tid));
    m.insert("type".into(), json!("sched"));
    m.insert("op".into(), json!(op));
    m.insert("name".into(), json!(name));
    m
}

impl SchedTracker {
    pub fn with_fd_reader(r: FdReader) -> Self {
        SchedTracker { enabled: true, fd_reader: Some(r), ..Default::default() }
    }

    /// Every record's header, scheduler or not. A CPU's sequence numbers may
    /// arrive slightly out of order (a probe preempted between numbering its
    /// record and reserving it, the switch that preempted it numbered after
    /// and written before); numbers still missing [`LATE_RECORDS`] records
    /// later on that CPU (or at the end) were lost: a `lost` line for the
    /// time between the records around them, and every thread's current
    /// state unknown.
    pub fn seen(&mut self, hdr: &Header, out: &mut impl FnMut(Value)) {
        if !self.enabled {
            return;
        }
        self.last_ts = self.last_ts.max(hdr.ts);
        let c = self.cpus.entry(hdr.cpu).or_default();
        match c.next {
            Some(next) if hdr.seq > next => {
                c.missing.push(Missing { lo: next, hi: hdr.seq, from: c.last_ts, to: hdr.ts })
            }
            Some(next) if hdr.seq < next => {
                // A late record: no longer missing.
                if let Some(i) = c.missing.iter().position(|m| (m.lo..m.hi).contains(&hdr.seq)) {
                    let m = c.missing.remove(i);
                    for (lo, hi) in [(m.lo, hdr.seq), (hdr.seq + 1, m.hi)] {
                        if lo < hi {
                            c.missing.push(Missing { lo, hi, ..m });
                        }
                    }
                }
            }
            _ => {}
        }
        if c.next.is_none_or(|n| hdr.seq >= n) {
            c.next = Some(hdr.seq.saturating_add(1));
            c.last_ts = hdr.ts;
        }
        let horizon = c.next.unwrap_or(0).saturating_sub(LATE_RECORDS);
        let lost: Vec<Missing> = c.missing.iter().filter(|m| m.hi <= horizon).copied().collect();
        c.missing.retain(|m| m.hi > horizon);
        self.report_lost(hdr.cpu, &lost, out);
    }

    fn report_lost(&mut self, cpu: u32, lost: &[Missing], out: &mut impl FnMut(Value)) {
        for m in lost {
            let mut l = line(m.from, 0, 0, "lost", "lost");
            l.insert("end_ts".into(), json!(m.to.max(m.from)));
            l.insert("cpu".into(), json!(cpu));
            l.insert("records".into(), json!(m.hi - m.lo));
            out(Value::Object(l));
            self.lost_windows += 1;
            let mut threads: Vec<u32> = self.threads.keys().copied().collect();
            threads.sort_unstable();
            for t in threads {
                self.taint(t, m.from, m.to, out);
            }
        }
    }

    /// A loss in [from, to): a thread whose current state began before `to`
    /// may have missed a switch there. What it did before `from` stays as
    /// known (an off-CPU interval is written up to `from`, marked `cut`); from
    /// `from` (or its state's start, if later) to its next event is unknown.
    fn taint(&mut self, tid: u32, from: u64, to: u64, out: &mut impl FnMut(Value)) {
        let Some((pid, st)) = self.threads.get(&tid).cloned() else { return };
        let since = match &st {
            State::On { since } | State::Unknown { since } => *since,
            State::Off(o) => o.start,
        };
        if since >= to {
            return;
        }
        if let State::Off(o) = &st
            && o.start < from
        {
            self.cut_line(pid, tid, o, from, out);
        }
        let since = match st {
            State::Unknown { since } => since,
            _ => since.max(from),
        };
        self.threads.insert(tid, (pid, State::Unknown { since }));
    }

    /// An off-CPU interval known up to `end` (a loss follows): its cause, `cut`.
    fn cut_line(&mut self, pid: u32, tid: u32, o: &Off, end: u64, out: &mut impl FnMut(Value)) {
        let mut m = o.line(pid, tid, end);
        m.insert("cpu".into(), json!(o.cpu));
        if let (true, Some(f)) = (o.blocked(), &o.file) {
            m.insert("file".into(), json!(f));
        }
        if let Some(r) = o.ready(end) {
            m.insert("runnable_ns".into(), json!(end - r));
        }
        m.insert("cut".into(), json!(true));
        self.off_cpu_lines += 1;
        out(Value::Object(m));
    }

    fn unknown(&mut self, pid: u32, tid: u32, from: u64, to: u64, out: &mut impl FnMut(Value)) {
        if to <= from {
            return;
        }
        let mut m = line(from, pid, tid, "off_cpu", "unknown");
        m.insert("end_ts".into(), json!(to));
        m.insert("state".into(), json!("unknown"));
        self.unknown_lines += 1;
        out(Value::Object(m));
    }

    fn first(&mut self, pid: u32, tid: u32, ts: u64, out: &mut impl FnMut(Value)) {
        out(Value::Object(line(ts, pid, tid, "thread_seen", "thread_seen")));
    }

    /// The time since the last mark of every preempted thread waiting for
    /// `cpu` goes to `holder`, which held it until `ts`.
    fn count_holders(&mut self, cpu: u32, ts: u64, holder: &Task) {
        for (_, st) in self.threads.values_mut() {
            if let State::Off(o) = st
                && let Some((c, mark)) = o.watch
                && c == cpu
                && ts > mark
            {
                *o.held.entry((holder.pid, holder.tid, holder.comm.clone())).or_default() += ts - mark;
                o.watch = Some((c, ts));
            }
        }
    }

    pub fn switch(&mut self, r: &SchedSwitch, out: &mut impl FnMut(Value)) {
        self.switch_with_stack(r, None, out);
    }

    /// [`Self::switch`] with the stack taken at the switch-out of the
    /// thread leaving the CPU; true when that thread's off-CPU interval
    /// begins here and keeps the stack (false: untraced, or a dead task's
    /// last switch, and no line will carry it).
    pub fn switch_with_stack(&mut self, r: &SchedSwitch, stack: Option<u64>, out: &mut impl FnMut(Value)) -> bool {
        self.records += 1;
        let mut kept = false;
        let ts = r.hdr.ts;
        // Whoever switches out held this CPU since the last switch here.
        let prev = Task { pid: r.hdr.pid, tid: r.hdr.tid, comm: comm(&r.prev_comm) };
        self.count_holders(r.hdr.cpu, ts, &prev);
        self.occupant.insert(r.hdr.cpu, Task { pid: r.next_tgid, tid: r.next_tid, comm: comm(&r.next_comm) });
        // A dead task's last switch (after its exit record) says nothing.
        let dead = self.exited.remove(&r.hdr.tid) || r.prev_state & 0x30 != 0;
        if r.flags & sched_flags::PREV_TRACED != 0 && !dead {
            let (pid, tid) = (r.hdr.pid, r.hdr.tid);
            match self.threads.get(&tid).map(|(_, s)| s.clone()) {
                None => self.first(pid, tid, ts, out),
                Some(State::On { .. }) => {}
                // Its switch-in was not seen: since when it ran is unknown.
                Some(State::Off(o)) => self.unknown(pid, tid, o.start, ts, out),
                Some(State::Unknown { since }) => self.unknown(pid, tid, since, ts, out),
            }
            let blocked = r.prev_state & 0xff != 0;
            let syscall = (r.flags & sched_flags::REGS_READ != 0).then_some(r.syscall);
            let file = match syscall {
                Some(nr) if blocked && nr >= 0 && FD_CALLS.contains(&syscall_name(nr).as_str()) => {
                    self.fd_reader.as_mut().and_then(|f| f(pid, r.arg0))
                }
                _ => None,
            };
            let next = Task { pid: r.next_tgid, tid: r.next_tid, comm: comm(&r.next_comm) };
            let off = Off {
                start: ts,
                cpu: r.hdr.cpu,
                prev_state: r.prev_state,
                syscall,
                arg0: r.arg0,
                file,
                next,
                woken: None,
                watch: (!blocked).then_some((r.hdr.cpu, ts)),
                held: BTreeMap::new(),
                stack,
            };
            self.threads.insert(tid, (pid, State::Off(Box::new(off))));
            kept = true;
        }
        if r.flags & sched_flags::NEXT_TRACED != 0 {
            let (pid, tid) = (r.next_tgid, r.next_tid);
            // A running task is not the dead one of a reused tid.
            self.exited.remove(&tid);
            let behind = Task { pid: r.hdr.pid, tid: r.hdr.tid, comm: comm(&r.prev_comm) };
            match self.threads.get(&tid).map(|(_, s)| s.clone()) {
                None => self.first(pid, tid, ts, out),
                Some(State::Off(mut o)) => {
                    // Waiting for another CPU than the one it got: that one's holder
                    // since the last switch there.
                    if let Some((c, mark)) = o.watch
                        && ts > mark
                        && let Some(h) = self.occupant.get(&c)
                    {
                        *o.held.entry((h.pid, h.tid, h.comm.clone())).or_default() += ts - mark;
                    }
                    self.off_line(pid, tid, &o, ts, r.hdr.cpu, &behind, out)
                }
                // Its switch-out was not seen.
                Some(State::On { since }) | Some(State::Unknown { since }) => self.unknown(pid, tid, since, ts, out),
            }
            self.threads.insert(tid, (pid, State::On { since: ts }));
        }
        kept
    }

    pub fn waking(&mut self, r: &SchedWaking) {
        self.records += 1;
        if let Some((_, State::Off(o))) = self.threads.get_mut(&r.tid)
            && o.woken.is_none()
            && r.hdr.ts >= o.start
        {
            o.woken = Some((r.hdr.ts, Task { pid: r.hdr.pid, tid: r.hdr.tid, comm: comm(&r.comm) }));
        }
    }

    #[allow(clippy::too_many_arguments, reason = "the fields of one off_cpu line")]
    fn off_line(
        &mut self,
        pid: u32,
        tid: u32,
        o: &Off,
        end: u64,
        cpu_in: u32,
        behind: &Task,
        out: &mut impl FnMut(Value),
    ) {
        // Records of different CPUs with clocks a hair apart (or corrupt ones):
        // never an interval that ends before it starts.
        let end = end.max(o.start);
        let blocked = o.blocked();
        let mut m = o.line(pid, tid, end);
        m.insert("cpu".into(), json!(o.cpu));
        m.insert("cpu_in".into(), json!(cpu_in));
        if blocked {
            m.insert("task_state".into(), json!(task_state(o.prev_state)));
            if let Some(nr) = o.syscall.filter(|&n| n >= 0) {
                m.insert("syscall".into(), json!(syscall_name(nr)));
                m.insert("arg0".into(), json!(o.arg0));
            }
            if let Some(f) = &o.file {
                m.insert("file".into(), json!(f));
            }
        } else {
            // Runnable at switch-out: preempted (in user mode the tracepoint's
            // preemption flag is not set), unless it called sched_yield.
            let yielded = o.syscall.is_some_and(|nr| syscall_name(nr) == "sched_yield");
            m.insert("preempted".into(), json!(!yielded));
            if yielded {
                m.insert("yielded".into(), json!(true));
            }
            m.insert("preempted_by".into(), o.next.json());
            // Who held the CPU it waited for, longest first (at most 8, the rest as one).
            if !o.held.is_empty() {
                let mut h: Vec<(&(u32, u32, String), &u64)> = o.held.iter().collect();
                h.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
                let mut v: Vec<Value> = h
                    .iter()
                    .take(8)
                    .map(|((p, t, c), ns)| {
                        let mut t = Task { pid: *p, tid: *t, comm: c.clone() }.json();
                        t["ns"] = json!(ns);
                        if self.recorder_pid.is_some_and(|r| r == *p) {
                            t["recorder"] = json!(true);
                        }
                        t
                    })
                    .collect();
                if let Some(r) = self.recorder_pid {
                    for ((_, _, c), ns) in o.held.iter().filter(|((p, _, _), _)| *p == r) {
                        *self.held_by_recorder.entry(c.clone()).or_default() += ns;
                    }
                }
                let rest: u64 = h.iter().skip(8).map(|x| *x.1).sum();
                if rest > 0 {
                    v.push(json!({"comm": "other", "ns": rest}));
                }
                m.insert("held_by".into(), Value::Array(v));
            }
        }
        if let Some((w, waker)) = &o.woken {
            m.insert("woken_ts".into(), json!(w));
            m.insert("waker".into(), waker.json());
        }
        // Runnable from the wake-up (or the switch-out) until back on a CPU.
        if let Some(r) = o.ready(end) {
            m.insert("runnable_ns".into(), json!(end - r));
        }
        m.insert("behind".into(), behind.json());
        self.off_cpu_lines += 1;
        out(Value::Object(m));
    }

    /// A thread exited: forget it.
    pub fn exited(&mut self, tid: u32) {
        if self.threads.remove(&tid).is_some() {
            self.exited.insert(tid);
        }
    }

    /// End of the recording: threads still off their CPU get their interval
    /// up to the last record's time, marked `open`.
    pub fn finish(&mut self, out: &mut impl FnMut(Value)) {
        let pending: Vec<(u32, Vec<Missing>)> =
            self.cpus.iter_mut().map(|(c, s)| (*c, std::mem::take(&mut s.missing))).collect();
        for (cpu, lost) in pending {
            self.report_lost(cpu, &lost, out);
        }
        let end = self.last_ts;
        let mut tids: Vec<u32> = self.threads.keys().copied().collect();
        tids.sort_unstable();
        for tid in tids {
            let Some((pid, st)) = self.threads.remove(&tid) else { continue };
            match st {
                State::Off(o) if end > o.start => {
                    let mut m = o.line(pid, tid, end);
                    m.insert("open".into(), json!(true));
                    out(Value::Object(m));
                }
                State::Unknown { since } => self.unknown(pid, tid, since, end, out),
                _ => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracer_common::event::EventKind;

    fn hdr(kind: EventKind, cpu: u32, seq: u64, ts: u64, pid: u32, tid: u32) -> Header {
        Header { kind: kind as u16, func: 0, cpu, seq, ts, pid, tid }
    }

    fn c16(s: &str) -> [u8; 16] {
        let mut b = [0u8; 16];
        b[..s.len()].copy_from_slice(s.as_bytes());
        b
    }

    /// Thread 10 of process 10 switched out on `cpu` at `ts`, `next` switched in.
    fn out(cpu: u32, seq: u64, ts: u64, state: u64, syscall: i64, next: (u32, &str)) -> SchedSwitch {
        SchedSwitch {
            hdr: hdr(EventKind::SchedSwitch, cpu, seq, ts, 10, 10),
            prev_state: state,
            flags: sched_flags::PREV_TRACED | sched_flags::REGS_READ,
            next_tid: next.0,
            next_tgid: 0,
            _pad: 0,
            syscall,
            arg0: 3,
            prev_comm: c16("app"),
            next_comm: c16(next.1),
        }
    }

    /// `prev` switched out on `cpu` at `ts`, thread 10 switched in.
    fn into(cpu: u32, seq: u64, ts: u64, prev: (u32, &str)) -> SchedSwitch {
        SchedSwitch {
            hdr: hdr(EventKind::SchedSwitch, cpu, seq, ts, prev.0, prev.0),
            prev_state: 0,
            flags: sched_flags::NEXT_TRACED,
            next_tid: 10,
            next_tgid: 10,
            _pad: 0,
            syscall: -1,
            arg0: 0,
            prev_comm: c16(prev.1),
            next_comm: c16("app"),
        }
    }

    fn run(t: &mut SchedTracker, recs: &[Result<SchedSwitch, SchedWaking>]) -> Vec<Value> {
        let mut v = vec![];
        for r in recs {
            let h = match r {
                Ok(s) => s.hdr,
                Err(w) => w.hdr,
            };
            t.seen(&h, &mut |l| v.push(l));
            match r {
                Ok(s) => t.switch(s, &mut |l| v.push(l)),
                Err(w) => t.waking(w),
            }
        }
        t.finish(&mut |l| v.push(l));
        v
    }

    fn tracker() -> SchedTracker {
        SchedTracker::with_fd_reader(Box::new(|pid, fd| (pid == 10 && fd == 3).then(|| "pipe".to_string())))
    }

    #[test]
    fn blocked_in_read_woken_then_waiting_behind_a_task() {
        let waking = SchedWaking {
            hdr: hdr(EventKind::SchedWaking, 1, 1, 5_000, 20, 21),
            tid: 10,
            tgid: 10,
            target_cpu: 0,
            _pad: 0,
            comm: c16("writer"),
        };
        let v = run(
            &mut tracker(),
            &[Ok(out(0, 1, 1_000, 1, 0, (0, "swapper/0"))), Err(waking), Ok(into(0, 2, 7_000, (30, "hog")))],
        );
        assert_eq!(v.len(), 2, "{v:?}");
        assert_eq!(v[0]["op"], "thread_seen");
        let l = &v[1];
        assert_eq!(
            (l["op"].as_str(), l["name"].as_str(), l["state"].as_str()),
            (Some("off_cpu"), Some("read"), Some("blocked"))
        );
        assert_eq!(
            (l["ts"].as_u64(), l["end_ts"].as_u64(), l["runnable_ns"].as_u64()),
            (Some(1_000), Some(7_000), Some(2_000))
        );
        assert_eq!(l["file"], "pipe");
        assert_eq!(l["task_state"], "S");
        assert_eq!(l["waker"], json!({"pid": 20, "tid": 21, "comm": "writer"}));
        assert_eq!(l["behind"], json!({"pid": 30, "tid": 30, "comm": "hog"}));
    }

    #[test]
    fn runnable_is_preempted_unless_yielding() {
        let v = run(
            &mut tracker(),
            &[
                Ok(out(0, 1, 1_000, 0, -1, (40, "hog"))),
                Ok(into(0, 2, 3_000, (40, "hog"))),
                Ok(out(0, 3, 4_000, 0, 24, (41, "other"))), // sched_yield
                Ok(into(0, 4, 4_500, (41, "other"))),
            ],
        );
        let off: Vec<&Value> = v.iter().filter(|l| l["op"] == "off_cpu").collect();
        assert_eq!(off.len(), 2, "{v:?}");
        assert_eq!((off[0]["preempted"].as_bool(), off[0]["runnable_ns"].as_u64()), (Some(true), Some(2_000)));
        assert_eq!(off[0]["preempted_by"], json!({"tid": 40, "comm": "hog"}));
        assert_eq!(off[0]["held_by"], json!([{"pid": 40, "tid": 40, "comm": "hog", "ns": 2000}]));
        assert_eq!((off[1]["preempted"].as_bool(), off[1]["yielded"].as_bool()), (Some(false), Some(true)));
    }

    #[test]
    fn a_lost_switch_is_unknown_time_never_a_cause() {
        // Switched out blocked at 1000, its switch-in lost, switched out again at 9000:
        // 1000-9000 is unknown, not "blocked in read".
        let v = run(
            &mut tracker(),
            &[
                Ok(out(0, 1, 1_000, 1, 0, (0, "swapper/0"))),
                Ok(out(1, 1, 9_000, 0, -1, (5, "x"))),
                Ok(into(1, 2, 9_500, (5, "x"))),
            ],
        );
        let off: Vec<(&str, u64, u64)> = v
            .iter()
            .filter(|l| l["op"] == "off_cpu")
            .map(|l| (l["name"].as_str().unwrap(), l["ts"].as_u64().unwrap(), l["end_ts"].as_u64().unwrap()))
            .collect();
        assert_eq!(off, [("unknown", 1_000, 9_000), ("runnable", 9_000, 9_500)]);
        // Its switch-out lost: switched in twice; the time between is unknown.
        let v = run(&mut tracker(), &[Ok(into(0, 1, 1_000, (5, "x"))), Ok(into(0, 2, 4_000, (5, "x")))]);
        let off: Vec<(&str, u64, u64)> = v
            .iter()
            .filter(|l| l["op"] == "off_cpu")
            .map(|l| (l["name"].as_str().unwrap(), l["ts"].as_u64().unwrap(), l["end_ts"].as_u64().unwrap()))
            .collect();
        assert_eq!(off, [("unknown", 1_000, 4_000)]);
    }

    #[test]
    fn a_sequence_gap_is_a_lost_window() {
        let mut t = tracker();
        // CPU 0: seq 1 at 1000 (switch-out, blocked), then seq 5 at 8000: 3 records lost,
        // known as lost at the end (they could still have come late).
        let v = run(&mut t, &[Ok(out(0, 1, 1_000, 1, 0, (0, "swapper/0"))), Ok(into(0, 5, 8_000, (5, "x")))]);
        let lost: Vec<&Value> = v.iter().filter(|l| l["op"] == "lost").collect();
        assert_eq!(lost.len(), 1, "{v:?}");
        assert_eq!(
            (lost[0]["ts"].as_u64(), lost[0]["end_ts"].as_u64(), lost[0]["records"].as_u64()),
            (Some(1_000), Some(8_000), Some(3))
        );
        // The analysis takes the window's time as unknown whatever the lines in it say
        // (analysis/thread_states.rs, lost_windows_are_unknown_whatever_else_was_there).
        assert_eq!(t.lost_windows, 1);
        // Found LATE_RECORDS records later: the threads' current states become unknown.
        let mut t = tracker();
        let mut recs = vec![Ok(out(0, 1, 1_000, 1, 0, (0, "swapper/0"))), Ok(into(0, 5, 8_000, (5, "x")))];
        for i in 0..LATE_RECORDS {
            recs.push(Ok(out(1, 100 + i, 9_000 + i, 1, 0, (0, "swapper/1"))));
        }
        let v = run(&mut t, &recs);
        assert_eq!(v.iter().filter(|l| l["op"] == "lost").count(), 1);
        assert!(v.iter().any(|l| l["name"] == "unknown"), "the current interval became unknown: {v:?}");
    }

    #[test]
    fn a_loss_makes_unknown_only_what_it_may_have_changed() {
        // Thread 10 blocked in read from 1000; a loss on CPU 1 in [5000, 6000): the read
        // is known to 5000 (written, `cut`), unknown from there to its next event (9000).
        let mut t = tracker();
        let mut v = vec![];
        t.switch(&out(0, 1, 1_000, 1, 0, (0, "swapper/0")), &mut |l| v.push(l));
        t.report_lost(1, &[Missing { lo: 3, hi: 5, from: 5_000, to: 6_000 }], &mut |l| v.push(l));
        t.switch(&into(0, 2, 9_000, (5, "x")), &mut |l| v.push(l));
        let off: Vec<(&str, u64, u64, bool)> = v
            .iter()
            .filter(|l| l["op"] == "off_cpu")
            .map(|l| {
                (
                    l["name"].as_str().unwrap(),
                    l["ts"].as_u64().unwrap(),
                    l["end_ts"].as_u64().unwrap(),
                    l["cut"] == true,
                )
            })
            .collect();
        assert_eq!(off, [("read", 1_000, 5_000, true), ("unknown", 5_000, 9_000, false)]);
        // A thread on its CPU since before the loss: on CPU up to it, unknown after.
        let mut t = tracker();
        let mut v = vec![];
        t.switch(&into(0, 1, 1_000, (5, "x")), &mut |l| v.push(l));
        t.report_lost(1, &[Missing { lo: 3, hi: 5, from: 5_000, to: 6_000 }], &mut |l| v.push(l));
        t.switch(&out(0, 2, 9_000, 1, 0, (0, "swapper/0")), &mut |l| v.push(l));
        let off: Vec<(&str, u64, u64)> = v
            .iter()
            .filter(|l| l["op"] == "off_cpu")
            .map(|l| (l["name"].as_str().unwrap(), l["ts"].as_u64().unwrap(), l["end_ts"].as_u64().unwrap()))
            .collect();
        assert_eq!(off, [("unknown", 5_000, 9_000)]);
        // A state that began after the loss window is not touched.
        let mut t = tracker();
        let mut v = vec![];
        t.switch(&into(0, 1, 7_000, (5, "x")), &mut |l| v.push(l));
        t.report_lost(1, &[Missing { lo: 3, hi: 5, from: 5_000, to: 6_000 }], &mut |l| v.push(l));
        t.switch(&out(0, 2, 9_000, 1, 0, (0, "swapper/0")), &mut |l| v.push(l));
        t.switch(&into(0, 3, 9_500, (5, "x")), &mut |l| v.push(l));
        assert!(!v.iter().any(|l| l["name"] == "unknown"), "{v:?}");
    }

    #[test]
    fn records_out_of_order_within_a_cpu_are_not_a_loss() {
        // seq 1, 3, 2, 4 on CPU 0: a probe numbered 2, preempted, the switch numbered 3 first.
        let v = run(
            &mut tracker(),
            &[
                Ok(out(0, 1, 1_000, 0, -1, (5, "x"))),
                Ok(into(0, 3, 2_000, (5, "x"))),
                Ok(out(0, 2, 1_500, 0, -1, (6, "y"))),
                Ok(into(0, 4, 3_000, (6, "y"))),
            ],
        );
        assert!(!v.iter().any(|l| l["op"] == "lost"), "{v:?}");
    }

    #[test]
    fn a_dead_tasks_last_switch_is_ignored() {
        let mut t = tracker();
        let mut v = vec![];
        t.switch(&out(0, 1, 1_000, 0, -1, (5, "x")), &mut |l| v.push(l));
        t.switch(&into(0, 2, 2_000, (5, "x")), &mut |l| v.push(l));
        t.exited(10);
        t.switch(&out(0, 3, 3_000, 0x10, -1, (5, "x")), &mut |l| v.push(l));
        t.finish(&mut |l| v.push(l));
        assert_eq!(v.iter().filter(|l| l["op"] == "thread_seen").count(), 1, "{v:?}");
        assert_eq!(v.iter().filter(|l| l["op"] == "off_cpu").count(), 1, "{v:?}");
    }

    #[test]
    fn the_cpu_a_preempted_thread_waits_for_is_counted_by_holder() {
        // Preempted on CPU 0 at 1000 by ksoftirqd, which runs to 1200; the hog (pid 7) then
        // holds CPU 0 to 9000; the thread gets CPU 1 at 9500 (CPU 0's holder since 9000:
        // "other" (pid 8), switched in at 9000).
        let sw = |cpu: u32, seq: u64, ts: u64, prev: (u32, &str), next: (u32, &str)| SchedSwitch {
            hdr: hdr(EventKind::SchedSwitch, cpu, seq, ts, prev.0, prev.0),
            prev_state: 0,
            flags: 0,
            next_tid: next.0,
            next_tgid: next.0,
            _pad: 0,
            syscall: -1,
            arg0: 0,
            prev_comm: c16(prev.1),
            next_comm: c16(next.1),
        };
        let v = run(
            &mut tracker(),
            &[
                Ok(out(0, 1, 1_000, 0, -1, (14, "ksoftirqd/0"))),
                Ok(sw(0, 2, 1_200, (14, "ksoftirqd/0"), (7, "hog"))),
                Ok(sw(0, 3, 9_000, (7, "hog"), (8, "other"))),
                Ok(into(1, 1, 9_500, (0, "swapper/1"))),
            ],
        );
        let l = v.iter().find(|l| l["op"] == "off_cpu").unwrap();
        assert_eq!(
            l["held_by"],
            json!([
                {"pid": 7, "tid": 7, "comm": "hog", "ns": 7800},
                {"pid": 8, "tid": 8, "comm": "other", "ns": 500},
                {"pid": 14, "tid": 14, "comm": "ksoftirqd/0", "ns": 200},
            ])
        );
    }

    #[test]
    fn syscall_names() {
        assert_eq!(syscall_name(0), "read");
        assert_eq!(syscall_name(230), "clock_nanosleep");
        assert_eq!(syscall_name(202), "futex");
        assert_eq!(syscall_name(100_000), "syscall_100000");
    }
}
