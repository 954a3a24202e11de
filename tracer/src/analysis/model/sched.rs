//! The `sched` lines of a trace (decode/sched.rs): each traced thread's
//! off-CPU intervals with their causes, when its scheduler events start, and
//! the windows where records were lost.
use std::collections::BTreeMap;

use serde_json::Value;

/// What an off-CPU interval was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OffState {
    /// Blocked (in a system call, or in a fault when `cause` says
    /// `page_fault`), then runnable from `ready` once woken.
    Blocked,
    /// Runnable all along (preempted, or yielded).
    Runnable,
    /// A switch was lost: what the thread did is unknown.
    Unknown,
}

#[derive(Clone, Debug)]
pub struct OffCpu {
    pub pid: u32,
    pub tid: u32,
    pub start: u64,
    pub end: u64,
    pub state: OffState,
    /// The system call (`read`), `page_fault`, `runnable` or `unknown`.
    pub cause: String,
    /// The kind of file a blocking call waited on (`pipe`, `socket`, …).
    pub file: Option<String>,
    /// From here to `end` the thread waited for a CPU (woken, or preempted).
    pub ready: u64,
    /// Switched out runnable, not in sched_yield (the line's `preempted`).
    pub preempted: bool,
    /// Preempted: who held the CPU it waited for, with their ns.
    pub held_by: Vec<(String, u64)>,
    /// Of that, the recorder's own threads' ns (tracer_format::pacing::OffCpu::recorder_ns_of).
    pub recorder_ns: u64,
    /// The system call it blocked in (`syscall` of the line).
    pub syscall: Option<String>,
    /// Still off its CPU when the recording ended (`end` is the last record's time).
    pub open: bool,
    /// The task that ran on the CPU just before the thread got it back
    /// (label: [`TaskId::label`]), and the one that woke it.
    pub behind_task: Option<TaskId>,
    pub waker_task: Option<TaskId>,
    /// The id of the user stack taken at the switch-out (model/stacks.rs).
    pub stack: Option<u64>,
}

/// A task named in a `sched` line (`{"pid","tid","comm"}`); the idle task
/// has pid and tid 0; `pid` is absent when the decoder did not know it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskId {
    pub pid: Option<u32>,
    pub tid: Option<u32>,
    pub comm: String,
}

impl TaskId {
    fn of(v: &Value) -> Option<TaskId> {
        let n = |k: &str| v[k].as_u64().and_then(|x| u32::try_from(x).ok());
        Some(TaskId { pid: n("pid"), tid: n("tid"), comm: v["comm"].as_str()?.to_string() })
    }

    /// `comm (pid N)`, `comm (tid N)` when the process is not known, the
    /// idle task (tid 0) as `idle`.
    pub fn label(&self) -> String {
        let comm = &self.comm;
        match (self.pid, self.tid) {
            (None, None) => comm.clone(),
            (Some(0), Some(0)) | (None, Some(0)) => "idle".to_string(),
            (Some(p), _) if p != 0 => format!("{comm} (pid {p})"),
            (_, Some(t)) => format!("{comm} (tid {t})"),
            _ => comm.clone(),
        }
    }
}

#[derive(Clone, Debug, Default)]
pub struct Sched {
    /// The trace recorded scheduler events (its header says so, or it has
    /// sched lines).
    pub recorded: bool,
    /// Per thread: its intervals by start.
    pub off: BTreeMap<u32, Vec<OffCpu>>,
    /// Per thread: (pid, its first scheduler event).
    pub seen: BTreeMap<u32, (u32, u64)>,
    /// Record losses: [from, to) per window, sorted.
    pub lost: Vec<(u64, u64)>,
    /// The `lost` lines as written, one per CPU and window (before
    /// [`Sched::finish`] makes their union `lost`).
    pub lost_lines: Vec<LostLine>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LostLine {
    pub start: u64,
    pub end: u64,
    pub cpu: Option<u32>,
    /// How many records of that CPU were lost.
    pub records: Option<u64>,
}

/// A task of a `sched` line as the analyses name it ([`TaskId::label`]).
fn task(v: &Value) -> Option<String> {
    TaskId::of(v).map(|t| t.label())
}

impl Sched {
    /// One `sched` line; an error names the missing field.
    pub fn add(&mut self, v: &Value, ts: u64, pid: u32, tid: u32) -> Result<(), String> {
        self.recorded = true;
        let end = || v["end_ts"].as_u64().filter(|&e| e >= ts).ok_or("needs `end_ts` (ns, not before `ts`)");
        match v["op"].as_str().unwrap_or("") {
            "thread_seen" => {
                self.seen.entry(tid).or_insert((pid, ts));
            }
            "lost" => {
                let end = end()?;
                self.lost.push((ts, end));
                let cpu = v["cpu"].as_u64().and_then(|c| u32::try_from(c).ok());
                self.lost_lines.push(LostLine { start: ts, end, cpu, records: v["records"].as_u64() });
            }
            "off_cpu" => {
                let end = end()?;
                let state = match v["state"].as_str() {
                    Some("blocked") => OffState::Blocked,
                    Some("runnable") => OffState::Runnable,
                    Some("unknown") => OffState::Unknown,
                    _ => return Err("an `off_cpu` line needs `state`: blocked, runnable or unknown".into()),
                };
                // Open at the end of the recording: only the time it was off is known.
                let ready = match (state, v["runnable_ns"].as_u64()) {
                    (OffState::Runnable, _) => ts,
                    (OffState::Blocked, Some(r)) => end.saturating_sub(r).max(ts),
                    _ => end,
                };
                self.seen.entry(tid).or_insert((pid, ts));
                self.off.entry(tid).or_default().push(OffCpu {
                    pid,
                    tid,
                    start: ts,
                    end,
                    state,
                    cause: v["name"].as_str().unwrap_or("unknown").to_string(),
                    file: v["file"].as_str().map(str::to_owned),
                    ready,
                    preempted: v["preempted"] == true,
                    held_by: v["held_by"]
                        .as_array()
                        .map(|a| a.iter().filter_map(|h| Some((task(h)?, h["ns"].as_u64()?))).collect())
                        .unwrap_or_default(),
                    recorder_ns: tracer_format::pacing::OffCpu::recorder_ns_of(v.get("held_by")),
                    syscall: v["syscall"].as_str().map(str::to_owned),
                    open: v["open"] == true,
                    behind_task: TaskId::of(&v["behind"]),
                    waker_task: TaskId::of(&v["waker"]),
                    stack: v["stack"].as_u64(),
                });
            }
            o => return Err(format!("sched line with op `{o}`, expected off_cpu/thread_seen/lost")),
        }
        Ok(())
    }

    /// Takes in the scheduler events another builder read from the lines after this one's
    /// (the parallel loader); every field is named, so that a new one cannot be left out.
    pub fn absorb(&mut self, n: Sched) {
        let Sched { recorded, off, seen, lost, lost_lines } = n;
        self.recorded |= recorded;
        for (tid, v) in off {
            self.off.entry(tid).or_default().extend(v);
        }
        // a thread's first sighting is the earliest line's: this builder's lines come first
        for (tid, s) in seen {
            self.seen.entry(tid).or_insert(s);
        }
        self.lost.extend(lost);
        self.lost_lines.extend(lost_lines);
    }

    pub fn finish(&mut self) {
        for v in self.off.values_mut() {
            v.sort_by_key(|o| o.start);
            // A thread is off its CPU once at a time: overlapping intervals (a
            // concatenated or hand-made trace) are clipped to the earlier one's end.
            let mut end = 0u64;
            v.retain_mut(|o| {
                if o.end <= end {
                    return false;
                }
                if o.start < end {
                    o.start = end;
                    o.ready = o.ready.max(end);
                }
                end = o.end;
                true
            });
        }
        // Windows of several CPUs may overlap: their union.
        self.lost.sort_unstable();
        let mut u: Vec<(u64, u64)> = Vec::with_capacity(self.lost.len());
        for &(a, b) in &self.lost {
            match u.last_mut() {
                Some(l) if a <= l.1 => l.1 = l.1.max(b),
                _ => u.push((a, b)),
            }
        }
        self.lost = u;
        self.lost_lines.sort_by_key(|l| (l.start, l.cpu));
    }

    /// Keeps what the processes `pid_ok` take and overlaps `[a, b)`
    /// (analysis/filter.rs): an interval begun before the window is kept
    /// whole (the window's gaps need it).
    pub fn retain(&mut self, pid_ok: impl Fn(u32) -> bool, a: u64, b: u64) {
        for v in self.off.values_mut() {
            v.retain(|o| pid_ok(o.pid) && o.end > a && o.start < b);
        }
        self.off.retain(|_, v| !v.is_empty());
        self.seen.retain(|_, (pid, _)| pid_ok(*pid));
        self.lost.retain(|&(x, y)| y > a && x < b);
        self.lost_lines.retain(|l| l.end > a && l.start < b);
    }
}

impl OffCpu {
    /// What a blocked interval waited on: `read (pipe)`, `futex`,
    /// `page_fault`.
    pub fn blocked_label(&self) -> String {
        match self.file.as_deref() {
            // One label per kind: the paths are in the lines.
            Some(f) if f.starts_with("file ") => format!("{} (file)", self.cause),
            Some(f) => format!("{} ({f})", self.cause),
            None => self.cause.clone(),
        }
    }

    /// What the runnable part waited behind: `preempted by X` (X held the
    /// CPU longest meanwhile), `yielded, behind X` (switched out in
    /// sched_yield), `behind X` (after
    /// a wake-up), `wake-up latency` (the CPU it got back was idle),
    /// `waiting for a CPU` (not known).
    pub fn runnable_label(&self) -> String {
        let behind = self.behind_task.as_ref().map(TaskId::label);
        match (behind.as_deref(), self.state) {
            // Preempted: the task that held the CPU longest while it waited.
            (_, OffState::Runnable) if self.preempted && !self.held_by.is_empty() => {
                format!("preempted by {}", self.held_by[0].0)
            }
            (None, _) => "waiting for a CPU".into(),
            (Some("idle"), _) => "wake-up latency".into(),
            (Some(b), OffState::Runnable) if self.preempted => format!("preempted by {b}"),
            (Some(b), OffState::Runnable) => format!("yielded, behind {b}"),
            (Some(b), _) => format!("behind {b}"),
        }
    }
}
