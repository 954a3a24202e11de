//! The dependency graph between GPU work (launches, copies, sets): stream
//! order, events, the legacy default stream's implicit synchronization, and
//! host synchronization.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::types::{Edge, EdgeKind, Op, OpKind, StreamInfo, StreamKind};

/// The edges between the GPU work ops, found in one walk over the ops in recorded order.
pub fn edges(ops: &[Op], streams: &[StreamInfo]) -> Vec<Edge> {
    let mut w = Walk::new(ops, streams);
    for (i, op) in ops.iter().enumerate() {
        let Some(s) = op.stream else {
            if matches!(op.kind, OpKind::CtxSync) {
                w.ctx_sync(op.pid);
            }
            continue;
        };
        match &op.kind {
            OpKind::EventRecord { event } => w.event_record(s, *event),
            OpKind::StreamWaitEvent { event } => w.wait_event(s, *event),
            OpKind::StreamSync => w.stream_sync(op.pid, s),
            OpKind::EventSync { event } => w.event_sync(op.pid, *event),
            OpKind::SetAttribute { .. } | OpKind::CtxSync => {}
            OpKind::Launch(_) | OpKind::Copy(_) | OpKind::Set(_) => w.work(i, op, s),
        }
    }
    w.out
}

/// The walk over the ops in order: what it has seen so far, and the edges found.
struct Walk<'a> {
    ops: &'a [Op],
    streams: &'a [StreamInfo],
    out: Vec<Edge>,
    /// Per stream: its last work op.
    last_on: HashMap<usize, usize>,
    /// Work ops an event stands for (last work on its stream at record time, and waits pending there).
    event_src: HashMap<usize, Vec<usize>>,
    /// Dependencies from cuStreamWaitEvent for the next work op of a stream.
    pending: HashMap<usize, BTreeSet<usize>>,
    /// Legacy stream: per blocking stream, the last op of it already depended on.
    legacy_seen: HashMap<(usize, usize), usize>,
    /// Host barrier per pid: the last synced op of each stream, with a generation per change.
    barrier: HashMap<u32, (u64, BTreeMap<usize, usize>)>,
    /// Per stream: the barrier generation its work already depends on.
    applied: HashMap<usize, u64>,
}

/// An edge `from` -> `to`, unless `from` is `to`'s stream predecessor `pred` (that edge is there), `to`
/// itself, or among the last edges already.
fn add(out: &mut Vec<Edge>, from: usize, to: usize, pred: Option<usize>, kind: EdgeKind) {
    if Some(from) != pred && from != to && !out.iter().rev().take(64).any(|e: &Edge| e.to == to && e.from == from) {
        out.push(Edge { from, to, kind });
    }
}

impl<'a> Walk<'a> {
    /// Before the first op: nothing seen.
    fn new(ops: &'a [Op], streams: &'a [StreamInfo]) -> Self {
        Walk {
            ops,
            streams,
            out: Vec::new(),
            last_on: HashMap::new(),
            event_src: HashMap::new(),
            pending: HashMap::new(),
            legacy_seen: HashMap::new(),
            barrier: HashMap::new(),
            applied: HashMap::new(),
        }
    }

    /// cuCtxSynchronize: the host waited for the last work of every stream of the process.
    fn ctx_sync(&mut self, pid: u32) {
        let b = self.barrier.entry(pid).or_default();
        b.0 += 1;
        for st in self.streams.iter().filter(|st| st.pid == pid) {
            if let Some(&l) = self.last_on.get(&st.id) {
                b.1.insert(st.id, l);
            }
        }
    }

    /// cuEventRecord: the event stands for the stream's last work and the waits pending there.
    fn event_record(&mut self, s: usize, event: usize) {
        let mut src: Vec<usize> = self.last_on.get(&s).copied().into_iter().collect();
        if let Some(p) = self.pending.get(&s) {
            src.extend(p.iter().copied());
        }
        self.event_src.insert(event, src);
    }

    /// cuStreamWaitEvent: the stream's next work depends on what the event stands for.
    fn wait_event(&mut self, s: usize, event: usize) {
        if let Some(src) = self.event_src.get(&event) {
            self.pending.entry(s).or_default().extend(src.iter().copied());
        }
    }

    /// cuStreamSynchronize: the host waited for the stream's last work.
    fn stream_sync(&mut self, pid: u32, s: usize) {
        if let Some(&l) = self.last_on.get(&s) {
            let b = self.barrier.entry(pid).or_default();
            b.0 += 1;
            b.1.insert(s, l);
        }
    }

    /// cuEventSynchronize: the host waited for what the event stands for.
    fn event_sync(&mut self, pid: u32, event: usize) {
        if let Some(src) = self.event_src.get(&event) {
            let b = self.barrier.entry(pid).or_default();
            b.0 += 1;
            for &f in src {
                if let Some(fs) = self.ops[f].stream {
                    let e = b.1.entry(fs).or_insert(f);
                    *e = (*e).max(f);
                }
            }
        }
    }

    /// A launch, copy or set: its edges (stream order, events, legacy stream, host sync); a
    /// synchronous copy is also a host barrier.
    fn work(&mut self, i: usize, op: &Op, s: usize) {
        let pred = self.last_on.get(&s).copied();
        if let Some(p) = pred {
            self.out.push(Edge { from: p, to: i, kind: EdgeKind::Stream });
        }
        if let Some(p) = self.pending.remove(&s) {
            for f in p {
                add(&mut self.out, f, i, pred, EdgeKind::Event);
            }
        }
        self.legacy_edges(i, s, pred);
        self.host_sync_edges(i, op.pid, s, pred);
        self.last_on.insert(s, i);
        // A synchronous copy returns once it is done: the host waited for it.
        if let OpKind::Copy(c) = &op.kind
            && !c.is_async
        {
            let b = self.barrier.entry(op.pid).or_default();
            b.0 += 1;
            b.1.insert(s, i);
        }
    }

    /// The legacy default stream's implicit synchronization: work on it waits for the blocking
    /// streams' last work, work on a blocking stream for the legacy stream's.
    fn legacy_edges(&mut self, i: usize, s: usize, pred: Option<usize>) {
        let streams = self.streams;
        let st = &streams[s];
        if st.kind == StreamKind::Legacy {
            for b in streams.iter().filter(|b| b.pid == st.pid && b.id != s && b.blocking()) {
                if let Some(&l) = self.last_on.get(&b.id)
                    && self.legacy_seen.get(&(s, b.id)) != Some(&l)
                {
                    self.legacy_seen.insert((s, b.id), l);
                    add(&mut self.out, l, i, pred, EdgeKind::LegacyDefault);
                }
            }
        } else if st.blocking()
            && let Some(leg) = streams.iter().find(|x| x.pid == st.pid && x.kind == StreamKind::Legacy).map(|x| x.id)
            && let Some(&l) = self.last_on.get(&leg)
            && self.legacy_seen.get(&(s, leg)) != Some(&l)
        {
            self.legacy_seen.insert((s, leg), l);
            add(&mut self.out, l, i, pred, EdgeKind::LegacyDefault);
        }
    }

    /// The first work of a stream after a host barrier of its process depends on the other
    /// streams' ops the host waited for.
    fn host_sync_edges(&mut self, i: usize, pid: u32, s: usize, pred: Option<usize>) {
        if let Some((generation, ops_synced)) = self.barrier.get(&pid)
            && self.applied.get(&s) != Some(generation)
        {
            self.applied.insert(s, *generation);
            for &f in ops_synced.values() {
                if self.ops[f].stream != Some(s) {
                    add(&mut self.out, f, i, pred, EdgeKind::HostSync);
                }
            }
        }
    }
}
