//! What each stack of a trace is worth, per sample type ([`TYPES`]):
//! calls and launches taken there, the GPU time of the work submitted
//! there, the GPU idle time it is held for, and the time its threads were
//! off CPU there. Work and time without a stack go to a per-process
//! [`Key::Missing`], so every sample type sums to the trace's own total.
use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::analysis::gap_stacks::Attributor;
use crate::analysis::gaps;
use crate::analysis::model::stacks::StackId;
use crate::analysis::model::{Call, Kind, Trace};
use crate::analysis::thread_states::gap_call;
use crate::analysis::timeline::{Source, Timeline, link_measured_to_launches};

/// The sample types, in the order of each sample's values.
pub const TYPES: [(&str, &str); 5] = [
    ("launches", "count"),
    ("calls", "count"),
    ("gpu_time", "nanoseconds"),
    ("gpu_idle", "nanoseconds"),
    ("off_cpu", "nanoseconds"),
];
pub const LAUNCHES: usize = 0;
pub const CALLS: usize = 1;
pub const GPU_TIME: usize = 2;
pub const GPU_IDLE: usize = 3;
pub const OFF_CPU: usize = 4;

/// Why a process's work has no stack.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Missing {
    /// The line named none (`--no-stacks`, sampled out, the record lost).
    NoStack,
    /// The line named an id no `stack` line defines.
    Undefined,
    /// Measured GPU work no call was matched to.
    NoCall,
}

impl Missing {
    /// The frame name its sample gets.
    pub fn frame(self) -> &'static str {
        match self {
            Missing::NoStack => "[no stack]",
            Missing::Undefined => "[stack not in trace]",
            Missing::NoCall => "[no call matched]",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Key {
    Stack(StackId),
    Missing(u32, Missing),
}

pub type Row = [i64; TYPES.len()];

/// The values per key, and what the GPU figures rest on.
#[derive(Debug, Default)]
pub struct Values {
    pub by_key: BTreeMap<Key, Row>,
    pub totals: Row,
}

impl Values {
    fn add(&mut self, k: Key, i: usize, v: u64) {
        let v = v as i64;
        self.by_key.entry(k).or_default()[i] += v;
        self.totals[i] += v;
    }
}

/// The key a line's stack id (or its absence) gives.
fn key_of(t: &Trace, pid: u32, id: Option<StackId>) -> Key {
    match id {
        Some(id) if t.stacks.get(id).is_some() => Key::Stack(id),
        Some(_) => Key::Missing(pid, Missing::Undefined),
        None => Key::Missing(pid, Missing::NoStack),
    }
}

fn call_key(t: &Trace, c: &Call) -> Key {
    key_of(t, c.pid, t.stacks.call_stack_id(c))
}

/// The calls that take a stack (docs/trace-format.md, Stack lines).
fn takes_stack(k: Kind) -> bool {
    k.is_gpu_work() || k.is_blocking_sync()
}

/// Every value of `t`: calls from the model, GPU time and idle gaps from
/// `tl` (no GPU time on a bound timeline: no durations; its idle gaps are
/// the certain ones).
pub fn of(t: &Trace, tl: &Timeline) -> Values {
    let mut v = Values::default();
    for c in t.calls.iter().filter(|c| c.is_driver_call() && takes_stack(c.kind)) {
        let k = call_key(t, c);
        v.add(k, CALLS, 1);
        if matches!(c.kind, Kind::Launch | Kind::GraphLaunch) {
            v.add(k, LAUNCHES, 1);
        }
    }
    gpu_time(&mut v, t, tl);
    gpu_idle(&mut v, t, tl);
    for off in t.sched.off.values().flatten() {
        v.add(key_of(t, off.pid, off.stack), OFF_CPU, off.end.saturating_sub(off.start));
    }
    v
}

/// The GPU time of each interval, at the stack of the call that submitted it.
fn gpu_time(v: &mut Values, t: &Trace, tl: &Timeline) {
    if tl.source == Source::Bound {
        return;
    }
    let linked: HashMap<(usize, usize), u32> = match tl.source {
        Source::Measured | Source::Sampled => {
            link_measured_to_launches(t, tl).into_iter().map(|(s, i, c)| ((s, i), c)).collect()
        }
        Source::Inferred | Source::Bound => HashMap::new(),
    };
    for (si, s) in tl.streams.iter().enumerate() {
        for (ii, iv) in s.intervals.iter().enumerate() {
            let call = if iv.call != u32::MAX { Some(iv.call) } else { linked.get(&(si, ii)).copied() };
            let k = match call.and_then(|i| t.calls.get(i as usize)) {
                Some(c) => call_key(t, c),
                None => Key::Missing(s.key.pid, Missing::NoCall),
            };
            v.add(k, GPU_TIME, iv.dur());
        }
    }
}

/// Every idle gap of every GPU, cut as `tracer report` cuts it
/// (analysis/gap_stacks.rs): the launching thread's off-CPU parts at the
/// stacks of its switch-outs, its on-CPU rest at the stack of the
/// submission that ended the gap; parts without a stack (no switch-out
/// stack, scheduler events missing) at the thread's process's `[no stack]`.
fn gpu_idle(v: &mut Values, t: &Trace, tl: &Timeline) {
    for d in tl.devices() {
        let pids: BTreeSet<u32> = tl.streams.iter().filter(|s| s.device == d).map(|s| s.key.pid).collect();
        let at = Attributor::new(t, &pids);
        let (_, gs) = gaps::gaps_of(&gaps::busy(tl.device_intervals(d)));
        for (a, b) in gs {
            let pid = gap_call(t, &pids, a).map_or_else(|| pids.first().copied().unwrap_or(0), |c| c.pid);
            for p in at.gap_pieces(a, b).into_iter().filter(|p| p.ns > 0) {
                let k = p.stack.map_or(Key::Missing(pid, Missing::NoStack), Key::Stack);
                v.add(k, GPU_IDLE, p.ns);
            }
        }
    }
}
