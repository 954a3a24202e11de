//! Which code held the GPU idle: each idle gap's time on its launching
//! thread (the thread of the submission that ended it,
//! [`thread_states::gap_call`]) attributed to a cause and a user stack
//! (model/stacks.rs; method in docs/gaps.md, "Which code held the GPU idle"):
//! - each `off_cpu` interval overlapping the gap: its blocked part to
//!   `blocked in read (file)` (the system call and file kind), its runnable
//!   part to what it waited behind, both at the interval's switch-out stack;
//! - the rest, on CPU, to the code that ran: divided among the thread's
//!   on-CPU samples (`sample` lines) inside it, each stack its samples'
//!   share of the on-CPU ns ([`split_by_samples`]); when no sample falls in
//!   it (sampling off, or too short a time), to the stack of the call that
//!   ended the gap (the code that ran and then launched), counted in
//!   [`CodeSplit::unsampled_on_cpu_ns`];
//! - instants the scheduler events do not cover (before the thread's first
//!   event, a lost switch, a loss window) to `unknown`, with no stack;
//! - a trace without scheduler events: the whole gap to the ending call's
//!   stack, as [`NO_SCHED`] (on or off CPU is not known).
//!
//! A part without a stack (none taken, sampled out, an id no `stack` line
//! defines) is counted in `without_stack_ns`, never given another's stack.
//! Parts are summed by (cause, the program's frames): stacks that differ
//! only inside the runtime (libcuda, libc) are one row.
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;

use serde::Serialize;

use super::model::Trace;
use super::model::sched::OffState;
use super::model::stacks::{Frame, StackId};
use super::thread_states::{self, ThreadId, blocked_phrase};

/// The cause of on-CPU time: the thread ran (then launched).
pub const ON_CPU: &str = "on CPU";
/// The cause of a gap's time when the trace has no scheduler events.
pub const NO_SCHED: &str = "before the launch (no scheduler events)";
/// Time the scheduler events do not explain.
pub const UNKNOWN: &str = "unknown";
/// A gap no submission ends (none after it in the scope).
pub const NO_LAUNCH: &str = "no launch after the gap";

/// The most frames of a stack shown in a line of text.
pub const TEXT_FRAMES: usize = 4;

/// Some idle time of one cause at one place in the code.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct CodePart {
    /// `on CPU`, `blocked in read (file)`, `preempted by X`, `unknown`, …
    pub cause: String,
    /// The program's frames ([`super::model::stacks::Stack::code_frames`]),
    /// innermost first, each as [`Frame::short`]; empty: no stack.
    pub frames: Vec<String>,
    /// The ids of the stacks with these frames.
    pub stacks: Vec<StackId>,
    pub ns: u64,
}

impl CodePart {
    /// `blocked in read (file) at load_batch (data.py:41) ← main (train.py:88)`,
    /// names escaped (analysis/inert.rs); `… (no stack)` without frames.
    pub fn sentence(&self) -> String {
        let cause = super::inert::name(&self.cause);
        if self.frames.is_empty() {
            return format!("{cause} (no stack)");
        }
        format!("{cause} at {}", frames_text(&self.frames, TEXT_FRAMES))
    }
}

/// The first `n` frames joined by ` ← ` (`← …` when there are more),
/// escaped, the whole cut like a name (analysis/inert.rs).
pub fn frames_text(frames: &[String], n: usize) -> String {
    let mut v: Vec<String> = frames.iter().take(n).map(|f| super::inert::escape(f).into_owned()).collect();
    if frames.len() > n {
        v.push("…".into());
    }
    super::inert::cut(v.join(" ← ").into(), super::inert::CELL_CAP).into_owned()
}

/// The code of some gaps (one gap, a phase's, a scope's).
#[derive(Clone, Debug, Default, Serialize, PartialEq, Eq)]
pub struct CodeSplit {
    pub gaps: u64,
    pub total_ns: u64,
    /// Gaps none of whose time has a stack.
    pub gaps_without_stack: u64,
    /// Time whose part had no stack.
    pub without_stack_ns: u64,
    /// On-CPU time divided among the thread's samples in it.
    pub sampled_on_cpu_ns: u64,
    /// On-CPU time in which no sample fell: given to the ending call's stack.
    pub unsampled_on_cpu_ns: u64,
    /// The samples that divided `sampled_on_cpu_ns`.
    pub samples: u64,
    /// Largest first (ties: by cause, then frames).
    pub parts: Vec<CodePart>,
}

impl CodeSplit {
    /// `blocked in read (file) at f (a.py:3) 90 %; on CPU at g (a.py:9) 10 %`:
    /// the parts of ≥ 1 %, at most `n`.
    pub fn sentence(&self, n: usize) -> String {
        let total = self.total_ns.max(1) as f64;
        let v: Vec<String> = self
            .parts
            .iter()
            .filter(|p| p.ns as f64 / total >= 0.01)
            .take(n)
            .map(|p| format!("{} {:.0} %", p.sentence(), 100.0 * p.ns as f64 / total))
            .collect();
        if v.is_empty() { "nothing".into() } else { v.join("; ") }
    }
}

/// One long gap's code.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct GapCode {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thread: Option<ThreadId>,
    /// The stack of the submission that ended the gap.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ended_by: Option<StackId>,
    /// Where the launching thread was when the gap began: the stack of its
    /// last call with a stack before the gap (a synchronization, a launch).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub began_at: Option<StackId>,
    /// [`began_at`](Self::began_at)'s program frames.
    pub began_at_frames: Vec<String>,
    pub code: CodeSplit,
}

/// Attributes gaps of one scope (its processes) to code.
pub struct Attributor<'t> {
    t: &'t Trace,
    pids: BTreeSet<u32>,
    /// Per thread: (ts, stack) of its calls whose stack is defined, by ts.
    by_thread: HashMap<u32, Vec<(u64, StackId)>>,
    frames: std::cell::RefCell<HashMap<StackId, Vec<String>>>,
}

/// A piece of a gap: its cause, its stack (defined), its ns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Piece {
    pub cause: String,
    pub stack: Option<StackId>,
    pub ns: u64,
    /// On-CPU pieces: how the stack was found.
    pub on_cpu: Option<OnCpu>,
}

/// How an on-CPU piece got its stack.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnCpu {
    /// From this many samples of the thread inside the on-CPU time.
    Sampled(u64),
    /// No sample in it: the stack of the call that ended the gap.
    Unsampled,
}

impl Piece {
    fn new(cause: impl Into<String>, stack: Option<StackId>, ns: u64) -> Piece {
        Piece { cause: cause.into(), stack, ns, on_cpu: None }
    }
}

/// Divides `ns` among the stacks of `samples` (in time order) in proportion
/// to their counts: the stacks in the order of their first sample, stack
/// i's share `⌊ns·Cᵢ/n⌋ − ⌊ns·Cᵢ₋₁/n⌋` with Cᵢ the samples of stacks 0..=i,
/// so the shares sum to `ns` exactly. (stack, samples, ns) per stack.
pub fn split_by_samples(ns: u64, samples: &[StackId]) -> Vec<(StackId, u64, u64)> {
    let mut counts: Vec<(StackId, u64)> = Vec::new();
    for &s in samples {
        match counts.iter_mut().find(|c| c.0 == s) {
            Some(c) => c.1 += 1,
            None => counts.push((s, 1)),
        }
    }
    let n = samples.len() as u128;
    let (mut cum, mut given) = (0u128, 0u64);
    counts
        .into_iter()
        .map(|(s, c)| {
            cum += c as u128;
            let upto = (ns as u128 * cum / n) as u64;
            let share = upto - given;
            given = upto;
            (s, c, share)
        })
        .collect()
}

impl<'t> Attributor<'t> {
    pub fn new(t: &'t Trace, pids: &BTreeSet<u32>) -> Self {
        let mut by_thread: HashMap<u32, Vec<(u64, StackId)>> = HashMap::new();
        for c in t.calls.iter().filter(|c| c.is_driver_call() && pids.contains(&c.pid)) {
            if let Some(id) = t.stacks.call_stack_id(c).filter(|&id| t.stacks.get(id).is_some()) {
                by_thread.entry(c.tid).or_default().push((c.ts, id));
            }
        }
        Attributor { t, pids: pids.clone(), by_thread, frames: Default::default() }
    }

    /// Whether the trace has stacks at all.
    pub fn has_stacks(&self) -> bool {
        !self.t.stacks.is_empty()
    }

    /// A defined stack id.
    fn defined(&self, id: Option<StackId>) -> Option<StackId> {
        id.filter(|&i| self.t.stacks.get(i).is_some())
    }

    /// The program frames of stack `id`, short.
    pub fn frames(&self, id: StackId) -> Vec<String> {
        self.frames
            .borrow_mut()
            .entry(id)
            .or_insert_with(|| {
                self.t.stacks.get(id).map_or_else(Vec::new, |s| s.code_frames().iter().map(Frame::short).collect())
            })
            .clone()
    }

    /// The gap [a, b): its thread, stacks and pieces.
    pub fn gap(&self, a: u64, b: u64) -> GapCode {
        let call = thread_states::gap_call(self.t, &self.pids, a);
        let thread = call.map(|c| ThreadId { pid: c.pid, tid: c.tid });
        let ended_by = call.and_then(|c| self.defined(self.t.stacks.call_stack_id(c)));
        let began_at = thread.and_then(|id| {
            let v = self.by_thread.get(&id.tid)?;
            let i = v.partition_point(|x| x.0 < a);
            i.checked_sub(1).map(|i| v[i].1)
        });
        let mut acc = Acc::default();
        acc.add(&|id| self.frames(id), self.pieces(thread, ended_by, a, b));
        GapCode {
            thread,
            ended_by,
            began_at,
            began_at_frames: began_at.map(|id| self.frames(id)).unwrap_or_default(),
            code: acc.finish(),
        }
    }

    /// The pieces of [a, b) of a gap whose launching thread is `thread`
    /// and whose ending submission has the stack `ended_by`.
    fn pieces(&self, thread: Option<ThreadId>, ended_by: Option<StackId>, a: u64, b: u64) -> Vec<Piece> {
        let total = b.saturating_sub(a);
        let Some(id) = thread else {
            return vec![Piece::new(NO_LAUNCH, None, total)];
        };
        let sched = &self.t.sched;
        if !sched.recorded {
            return vec![Piece::new(NO_SCHED, ended_by, total)];
        }
        let mut raw: Vec<(u64, u64, String, Option<StackId>)> = Vec::new();
        let first = sched.seen.get(&id.tid).map_or(u64::MAX, |x| x.1);
        if first > a {
            raw.push((a, first.min(b), UNKNOWN.into(), None));
        }
        let off = sched.off.get(&id.tid).map_or(&[][..], |v| v.as_slice());
        let from = off.partition_point(|o| o.end <= a);
        for o in off[from..].iter().take_while(|o| o.start < b) {
            let stack = self.defined(o.stack);
            match o.state {
                OffState::Unknown => raw.push((o.start, o.end, UNKNOWN.into(), None)),
                OffState::Runnable => raw.push((o.start, o.end, o.runnable_label(), stack)),
                OffState::Blocked => {
                    let cause =
                        if o.cause == "page_fault" { "page faults".into() } else { blocked_phrase(&o.blocked_label()) };
                    raw.push((o.start, o.ready, cause, stack));
                    raw.push((o.ready, o.end, o.runnable_label(), stack));
                }
            }
        }
        let lost: Vec<(u64, u64)> =
            sched.lost.iter().copied().filter(|&(x, y)| x < b && y > a).map(|(x, y)| (x.max(a), y.min(b))).collect();
        let overlap = |x: u64, y: u64| -> u64 { lost.iter().map(|&(p, q)| q.min(y).saturating_sub(p.max(x))).sum() };
        let mut out = Vec::new();
        let mut off_ns = 0;
        // The thread's samples in [a, b) outside its off-CPU, unknown and
        // lost times: those of its on-CPU time.
        let samples = self.t.stacks.samples(id.tid);
        let outside =
            |ts: u64| !lost.iter().any(|&(p, q)| p <= ts && ts < q) && !raw.iter().any(|r| r.0 <= ts && ts < r.1);
        let on_samples: Vec<StackId> = samples[samples.partition_point(|s| s.0 < a)..]
            .iter()
            .take_while(|s| s.0 < b)
            .filter(|s| self.t.stacks.get(s.1).is_some() && outside(s.0))
            .map(|s| s.1)
            .collect();
        for (x, y, cause, stack) in raw {
            let (x, y) = (x.max(a), y.min(b));
            if y <= x {
                continue;
            }
            let ns = y - x - overlap(x, y);
            off_ns += ns;
            out.push(Piece::new(cause, stack, ns));
        }
        let lost_ns = overlap(a, b);
        out.push(Piece::new(UNKNOWN, None, lost_ns));
        let on_ns = total.saturating_sub(off_ns + lost_ns);
        if on_samples.is_empty() || on_ns == 0 {
            out.push(Piece { on_cpu: Some(OnCpu::Unsampled), ..Piece::new(ON_CPU, ended_by, on_ns) });
        } else {
            for (stack, n, ns) in split_by_samples(on_ns, &on_samples) {
                out.push(Piece { on_cpu: Some(OnCpu::Sampled(n)), ..Piece::new(ON_CPU, Some(stack), ns) });
            }
        }
        out
    }

    /// The pieces of the gap [a, b) (each gap whole).
    pub fn gap_pieces(&self, a: u64, b: u64) -> Vec<Piece> {
        let call = thread_states::gap_call(self.t, &self.pids, a);
        let thread = call.map(|c| ThreadId { pid: c.pid, tid: c.tid });
        let ended_by = call.and_then(|c| self.defined(self.t.stacks.call_stack_id(c)));
        self.pieces(thread, ended_by, a, b)
    }

    /// The code of the gaps `gaps` (each whole).
    pub fn split(&self, gaps: &[(u64, u64)]) -> CodeSplit {
        let mut acc = Acc::default();
        for &(a, b) in gaps {
            acc.add(&|id| self.frames(id), self.gap_pieces(a, b));
        }
        acc.finish()
    }

    /// The code of the parts inside [lo, hi) of gaps whose codes are
    /// `codes` (a phase's share of the long gaps).
    pub fn split_within(&self, gaps: &[(u64, u64)], codes: &[GapCode], lo: u64, hi: u64) -> CodeSplit {
        let mut acc = Acc::default();
        for (&(a, b), g) in gaps.iter().zip(codes) {
            let (x, y) = (a.max(lo), b.min(hi));
            if y > x {
                acc.add(&|id| self.frames(id), self.pieces(g.thread, g.ended_by, x, y));
            }
        }
        acc.finish()
    }
}

/// Sums of pieces by (cause, frames): [`Acc::add`] one gap's pieces at a
/// time, then [`Acc::finish`]. Summed by (stack, cause) first, so a stack's
/// frames are looked up once per distinct pair, not once per piece.
#[derive(Default)]
pub struct Acc {
    /// stack -> cause -> index into `rows`.
    seen: HashMap<Option<StackId>, HashMap<String, usize>>,
    /// (cause, stack, its frames, ns).
    rows: Vec<(String, Option<StackId>, Vec<String>, u64)>,
    gaps: u64,
    total_ns: u64,
    gaps_without_stack: u64,
    without_stack_ns: u64,
    sampled_on_cpu_ns: u64,
    unsampled_on_cpu_ns: u64,
    samples: u64,
}

impl Acc {
    /// One gap's pieces; `frames` gives a stack's program frames.
    pub fn add(&mut self, frames: &dyn Fn(StackId) -> Vec<String>, pieces: Vec<Piece>) {
        self.gaps += 1;
        let mut with_stack = false;
        for p in pieces.into_iter().filter(|p| p.ns > 0) {
            self.total_ns += p.ns;
            match p.on_cpu {
                Some(OnCpu::Sampled(n)) => {
                    self.sampled_on_cpu_ns += p.ns;
                    self.samples += n;
                }
                Some(OnCpu::Unsampled) => self.unsampled_on_cpu_ns += p.ns,
                None => {}
            }
            match p.stack {
                Some(_) => with_stack = true,
                None => self.without_stack_ns += p.ns,
            }
            let by_cause = self.seen.entry(p.stack).or_default();
            match by_cause.get(p.cause.as_str()) {
                Some(&i) => self.rows[i].3 += p.ns,
                None => {
                    by_cause.insert(p.cause.clone(), self.rows.len());
                    let f = p.stack.map(frames).unwrap_or_default();
                    self.rows.push((p.cause, p.stack, f, p.ns));
                }
            }
        }
        self.gaps_without_stack += u64::from(!with_stack);
    }

    pub fn finish(self) -> CodeSplit {
        let mut by: BTreeMap<(String, Vec<String>), (BTreeSet<StackId>, u64)> = BTreeMap::new();
        for (cause, stack, frames, ns) in self.rows {
            let e = by.entry((cause, frames)).or_default();
            e.0.extend(stack);
            e.1 += ns;
        }
        let mut parts: Vec<CodePart> = by
            .into_iter()
            .map(|((cause, frames), (ids, ns))| CodePart { cause, frames, stacks: ids.into_iter().collect(), ns })
            .collect();
        parts.sort_by(|a, b| b.ns.cmp(&a.ns).then_with(|| a.cause.cmp(&b.cause)).then_with(|| a.frames.cmp(&b.frames)));
        CodeSplit {
            gaps: self.gaps,
            total_ns: self.total_ns,
            gaps_without_stack: self.gaps_without_stack,
            without_stack_ns: self.without_stack_ns,
            sampled_on_cpu_ns: self.sampled_on_cpu_ns,
            unsampled_on_cpu_ns: self.unsampled_on_cpu_ns,
            samples: self.samples,
            parts,
        }
    }
}

/// One gap's code as lines of text: `code: 58 % blocked in … at …`, then
/// the next parts under it (at most `n`, those of ≥ 1 %).
pub fn render_gap(s: &mut String, pad: &str, c: &CodeSplit, n: usize) {
    let total = c.total_ns.max(1) as f64;
    let parts: Vec<&CodePart> = c.parts.iter().filter(|p| p.ns as f64 / total >= 0.01).take(n).collect();
    for (i, p) in parts.iter().enumerate() {
        let head = if i == 0 { "code:" } else { "" };
        let _ = writeln!(s, "{pad}{head:<5} {:>3.0} % {}", 100.0 * p.ns as f64 / total, p.sentence());
    }
}

/// Lines of text for a scope's or phase's split: one part per line with
/// its share and time, at most `n`, then the time without stacks.
pub fn render_split(s: &mut String, indent: &str, c: &CodeSplit, n: usize) {
    let total = c.total_ns.max(1) as f64;
    for p in c.parts.iter().take(n) {
        let _ = writeln!(
            s,
            "{indent}{:>5.1}% {:>10}  {}",
            100.0 * p.ns as f64 / total,
            super::stats::fmt_ns(p.ns),
            p.sentence()
        );
    }
    if c.parts.len() > n {
        let rest: u64 = c.parts[n..].iter().map(|p| p.ns).sum();
        let _ = writeln!(
            s,
            "{indent}{:>5.1}% {:>10}  {} other causes and places",
            100.0 * rest as f64 / total,
            super::stats::fmt_ns(rest),
            c.parts.len() - n
        );
    }
    if c.without_stack_ns > 0 {
        let _ = writeln!(
            s,
            "{indent}without a stack: {} of {} ({} of {} gaps had none)",
            super::stats::fmt_ns(c.without_stack_ns),
            super::stats::fmt_ns(c.total_ns),
            c.gaps_without_stack,
            c.gaps
        );
    }
}

#[cfg(test)]
#[path = "gap_stacks_tests.rs"]
mod tests;
