//! `replay --skip-ops`: the ops a diagnostic pass leaves out, by kind and stream.

use crate::plan::{OP_CLASSES, Op};

/// A class of ops `--skip-ops` leaves out of every pass: a kind (launch, copy,
/// set, event, wait, sync), on one stream of the plan or on any. (The counts
/// printed also name "graph", the ops run inside rebuilt graph launches, and
/// "nop"; neither is ever left out.)
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkipOp {
    pub kind: &'static str,
    pub stream: Option<usize>,
}

impl std::str::FromStr for SkipOp {
    type Err = String;
    fn from_str(s: &str) -> Result<SkipOp, String> {
        let (k, st) = match s.split_once('@') {
            Some((k, n)) => {
                (k, Some(n.parse::<usize>().map_err(|_| format!("{s:?}: the stream after @ is not a number"))?))
            }
            None => (s, None),
        };
        let Some(kind) = OP_CLASSES.iter().find(|x| **x == k) else {
            return Err(format!("{s:?}: unknown kind {k:?} (one of {})", OP_CLASSES.join(", ")));
        };
        Ok(SkipOp { kind, stream: st })
    }
}

impl std::fmt::Display for SkipOp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.stream {
            Some(s) => write!(f, "{}@{s}", self.kind),
            None => f.write_str(self.kind),
        }
    }
}

/// Per op: whether `skip` leaves it out; and the count of ops per class, in order of first
/// appearance (printed, so that the streams can be named). Ops inside a rebuilt graph launch
/// (`in_graph`) run with their launch: class "graph", never left out.
pub(super) fn skipped_ops(ops: &[Op], skip: &[SkipOp], in_graph: &[bool]) -> (Vec<bool>, Vec<(SkipOp, usize)>) {
    let mut counts: Vec<(SkipOp, usize)> = Vec::new();
    let v = ops
        .iter()
        .enumerate()
        .map(|(i, o)| {
            let c = if in_graph.get(i).copied().unwrap_or(false) {
                SkipOp { kind: "graph", stream: None }
            } else {
                // a synchronization of the context or of an event names no stream
                SkipOp { kind: o.class().unwrap_or("nop"), stream: o.stream }
            };
            let left_out = !matches!(c.kind, "nop" | "graph")
                && skip.iter().any(|s| s.kind == c.kind && (s.stream.is_none() || s.stream == c.stream));
            match counts.iter_mut().find(|(k, _)| *k == c) {
                Some((_, n)) => *n += 1,
                None => counts.push((c, 1)),
            }
            left_out
        })
        .collect();
    (v, counts)
}

#[cfg(test)]
mod tests {
    use super::{SkipOp, skipped_ops};
    use crate::plan::{Op, OpKind, Set};

    fn op(stream: Option<usize>, kind: OpKind) -> Op {
        Op { line: 0, ts: 0, duration_ns: None, pid: 1, tid: 1, stream, kind }
    }

    fn set(stream: usize) -> Op {
        op(Some(stream), OpKind::Set(Set { dst: 0, value: 0, elem: 1, count: 4, is_async: true, rows: None }))
    }

    #[test]
    fn skip_ops_parse_with_and_without_a_stream() {
        assert_eq!("launch".parse::<SkipOp>(), Ok(SkipOp { kind: "launch", stream: None }));
        assert_eq!("wait@3".parse::<SkipOp>(), Ok(SkipOp { kind: "wait", stream: Some(3) }));
        assert_eq!("wait@3".parse::<SkipOp>().unwrap().to_string(), "wait@3");
        let e = "launches@1".parse::<SkipOp>().unwrap_err();
        assert!(e.contains("unknown kind \"launches\"") && e.contains("launch, copy, set, event, wait, sync"), "{e}");
        assert!("set@x".parse::<SkipOp>().unwrap_err().contains("not a number"));
    }

    #[test]
    fn skipped_ops_by_kind_and_stream_with_counts_in_order() {
        let ops = vec![
            set(0),
            op(Some(0), OpKind::EventRecord { event: 0 }),
            op(Some(1), OpKind::StreamWaitEvent { event: 0 }),
            set(1),
            set(1),
            op(None, OpKind::CtxSync),
            op(Some(1), OpKind::StreamSync),
            op(None, OpKind::SetAttribute { load: 0, kernel: "k".into(), via_library: true, attrib: 8, value: 0 }),
        ];
        let skip: Vec<SkipOp> = vec!["set@1".parse().unwrap(), "sync".parse().unwrap()];
        let (v, counts) = skipped_ops(&ops, &skip, &[]);
        assert_eq!(v, [false, false, false, true, true, true, true, false]);
        let text: Vec<String> = counts.iter().map(|(c, n)| format!("{c} {n}")).collect();
        assert_eq!(text, ["set@0 1", "event@0 1", "wait@1 1", "set@1 2", "sync 1", "sync@1 1", "nop 1"]);
        // nothing named: nothing left out
        assert!(skipped_ops(&ops, &[], &[]).0.iter().all(|x| !x));
        // the sets of a rebuilt graph launch run with it
        let in_graph = [false, false, false, true, true, false, false, false];
        let (v, counts) = skipped_ops(&ops, &skip, &in_graph);
        assert_eq!(v, [false, false, false, false, false, true, true, false]);
        let text: Vec<String> = counts.iter().map(|(c, n)| format!("{c} {n}")).collect();
        assert_eq!(text, ["set@0 1", "event@0 1", "wait@1 1", "graph 2", "sync 1", "sync@1 1", "nop 1"]);
    }
}
