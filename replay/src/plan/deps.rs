//! The dependency graph between GPU work (launches, copies, sets): stream
//! order, events, the legacy default stream's implicit synchronization, and
//! host synchronization.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::types::{Edge, EdgeKind, Op, OpKind, StreamInfo, StreamKind};

pub fn edges(ops: &[Op], streams: &[StreamInfo]) -> Vec<Edge> {
    let mut out = Vec::new();
    let mut last_on: HashMap<usize, usize> = HashMap::new();
    // Work ops an event stands for (last work on its stream at record time, and waits pending there).
    let mut event_src: HashMap<usize, Vec<usize>> = HashMap::new();
    // Dependencies from cuStreamWaitEvent for the next work op of a stream.
    let mut pending: HashMap<usize, BTreeSet<usize>> = HashMap::new();
    // Legacy stream: per blocking stream, the last op of it already depended on.
    let mut legacy_seen: HashMap<(usize, usize), usize> = HashMap::new();
    // Host barrier per pid: the last synced op of each stream, with a generation per change.
    let mut barrier: HashMap<u32, (u64, BTreeMap<usize, usize>)> = HashMap::new();
    let mut applied: HashMap<usize, u64> = HashMap::new();

    let legacy_of = |pid: u32| streams.iter().find(|s| s.pid == pid && s.kind == StreamKind::Legacy).map(|s| s.id);

    for (i, op) in ops.iter().enumerate() {
        let Some(s) = op.stream else {
            if matches!(op.kind, OpKind::CtxSync) {
                let b = barrier.entry(op.pid).or_default();
                b.0 += 1;
                for st in streams.iter().filter(|st| st.pid == op.pid) {
                    if let Some(&l) = last_on.get(&st.id) {
                        b.1.insert(st.id, l);
                    }
                }
            }
            continue;
        };
        match &op.kind {
            OpKind::EventRecord { event } => {
                let mut src: Vec<usize> = last_on.get(&s).copied().into_iter().collect();
                if let Some(p) = pending.get(&s) {
                    src.extend(p.iter().copied());
                }
                event_src.insert(*event, src);
            }
            OpKind::StreamWaitEvent { event } => {
                if let Some(src) = event_src.get(event) {
                    pending.entry(s).or_default().extend(src.iter().copied());
                }
            }
            OpKind::StreamSync => {
                if let Some(&l) = last_on.get(&s) {
                    let b = barrier.entry(op.pid).or_default();
                    b.0 += 1;
                    b.1.insert(s, l);
                }
            }
            OpKind::EventSync { event } => {
                if let Some(src) = event_src.get(event) {
                    let b = barrier.entry(op.pid).or_default();
                    b.0 += 1;
                    for &f in src {
                        if let Some(fs) = ops[f].stream {
                            let e = b.1.entry(fs).or_insert(f);
                            *e = (*e).max(f);
                        }
                    }
                }
            }
            OpKind::SetAttribute { .. } | OpKind::CtxSync => {}
            OpKind::Launch(_) | OpKind::Copy(_) | OpKind::Set(_) => {
                let pred = last_on.get(&s).copied();
                let add = |from: usize, kind: EdgeKind, out: &mut Vec<Edge>| {
                    if Some(from) != pred
                        && from != i
                        && !out.iter().rev().take(64).any(|e: &Edge| e.to == i && e.from == from)
                    {
                        out.push(Edge { from, to: i, kind });
                    }
                };
                if let Some(p) = pred {
                    out.push(Edge { from: p, to: i, kind: EdgeKind::Stream });
                }
                if let Some(p) = pending.remove(&s) {
                    for f in p {
                        add(f, EdgeKind::Event, &mut out);
                    }
                }
                let st = &streams[s];
                if st.kind == StreamKind::Legacy {
                    for b in streams.iter().filter(|b| b.pid == st.pid && b.id != s && b.blocking()) {
                        if let Some(&l) = last_on.get(&b.id)
                            && legacy_seen.get(&(s, b.id)) != Some(&l)
                        {
                            legacy_seen.insert((s, b.id), l);
                            add(l, EdgeKind::LegacyDefault, &mut out);
                        }
                    }
                } else if st.blocking()
                    && let Some(leg) = legacy_of(st.pid)
                    && let Some(&l) = last_on.get(&leg)
                    && legacy_seen.get(&(s, leg)) != Some(&l)
                {
                    legacy_seen.insert((s, leg), l);
                    add(l, EdgeKind::LegacyDefault, &mut out);
                }
                if let Some((generation, ops_synced)) = barrier.get(&op.pid)
                    && applied.get(&s) != Some(generation)
                {
                    applied.insert(s, *generation);
                    for &f in ops_synced.values() {
                        if ops[f].stream != Some(s) {
                            add(f, EdgeKind::HostSync, &mut out);
                        }
                    }
                }
                last_on.insert(s, i);
                // A synchronous copy returns once it is done: the host waited for it.
                if let OpKind::Copy(c) = &op.kind
                    && !c.is_async
                {
                    let b = barrier.entry(op.pid).or_default();
                    b.0 += 1;
                    b.1.insert(s, i);
                }
            }
        }
    }
    out
}
