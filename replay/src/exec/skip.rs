//! `replay --skip-ops`: the ops a diagnostic pass leaves out, by kind and stream.

use super::session::Prep;

/// A class of ops `--skip-ops` leaves out of every pass: a kind (launch, copy,
/// set, event, wait, sync), on one stream of the plan or on any. (The counts
/// printed also name "graph", the ops run inside rebuilt graph launches, and
/// "nop"; neither is ever left out.)
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkipOp {
    pub kind: &'static str,
    pub stream: Option<usize>,
}

const OP_KINDS: [&str; 6] = ["launch", "copy", "set", "event", "wait", "sync"];

impl std::str::FromStr for SkipOp {
    type Err = String;
    fn from_str(s: &str) -> Result<SkipOp, String> {
        let (k, st) = match s.split_once('@') {
            Some((k, n)) => {
                (k, Some(n.parse::<usize>().map_err(|_| format!("{s:?}: the stream after @ is not a number"))?))
            }
            None => (s, None),
        };
        let Some(kind) = OP_KINDS.iter().find(|x| **x == k) else {
            return Err(format!("{s:?}: unknown kind {k:?} (one of {})", OP_KINDS.join(", ")));
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

/// An op's kind and stream as `--skip-ops` names them (synchronizations have no stream).
fn op_class(p: &Prep) -> SkipOp {
    let (kind, stream) = match p {
        Prep::Launch { stream, .. } => ("launch", Some(*stream)),
        Prep::Copy { stream, .. } => ("copy", Some(*stream)),
        Prep::Set { stream, .. } => ("set", Some(*stream)),
        Prep::EventRecord { stream, .. } => ("event", Some(*stream)),
        Prep::Wait { stream, .. } => ("wait", Some(*stream)),
        Prep::StreamSync { stream } => ("sync", Some(*stream)),
        Prep::CtxSync | Prep::EventSync { .. } => ("sync", None),
        Prep::Nop => ("nop", None),
    };
    SkipOp { kind, stream }
}

/// Per op: whether `skip` leaves it out; and the count of ops per class, in order of first
/// appearance (printed, so that the streams can be named). Ops inside a rebuilt graph launch
/// (`in_graph`) run with their launch: class "graph", never left out.
pub(super) fn skipped_ops(prep: &[Prep], skip: &[SkipOp], in_graph: &[bool]) -> (Vec<bool>, Vec<(SkipOp, usize)>) {
    let mut counts: Vec<(SkipOp, usize)> = Vec::new();
    let v = prep
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let c = if in_graph.get(i).copied().unwrap_or(false) {
                SkipOp { kind: "graph", stream: None }
            } else {
                op_class(p)
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
    use super::{Prep, SkipOp, skipped_ops};

    fn set(stream: usize) -> Prep {
        Prep::Set { dst: 0, value: 0, elem: 1, count: 4, rows: None, stream }
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
        let prep = vec![
            set(0),
            Prep::EventRecord { event: 0, stream: 0 },
            Prep::Wait { event: 0, stream: 1 },
            set(1),
            set(1),
            Prep::CtxSync,
            Prep::StreamSync { stream: 1 },
            Prep::Nop,
        ];
        let skip: Vec<SkipOp> = vec!["set@1".parse().unwrap(), "sync".parse().unwrap()];
        let (v, counts) = skipped_ops(&prep, &skip, &[]);
        assert_eq!(v, [false, false, false, true, true, true, true, false]);
        let text: Vec<String> = counts.iter().map(|(c, n)| format!("{c} {n}")).collect();
        assert_eq!(text, ["set@0 1", "event@0 1", "wait@1 1", "set@1 2", "sync 1", "sync@1 1", "nop 1"]);
        // nothing named: nothing left out
        assert!(skipped_ops(&prep, &[], &[]).0.iter().all(|x| !x));
        // the sets of a rebuilt graph launch run with it
        let in_graph = [false, false, false, true, true, false, false, false];
        let (v, counts) = skipped_ops(&prep, &skip, &in_graph);
        assert_eq!(v, [false, false, false, false, false, true, true, false]);
        let text: Vec<String> = counts.iter().map(|(c, n)| format!("{c} {n}")).collect();
        assert_eq!(text, ["set@0 1", "event@0 1", "wait@1 1", "graph 2", "sync 1", "sync@1 1", "nop 1"]);
    }
}
