//! The part of each recording a together run measures: from its `phase`
//! marker named `--phase` (default `generate`, as the examples mark their
//! timed part) to its next `phase` marker, or to its end; the whole recording
//! when it has no such marker. The ops before it run unpaced before each
//! pass's start barrier (they prepare the memory: weights uploaded, warm-up
//! done), so that the tenants' measured phases start together, as the real
//! programs' do behind their own barrier.

use std::ops::Range;

use serde::Serialize;

use crate::plan::Op;
use crate::recording::Marker;
use tracer_format::line::MarkerOp;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Phase {
    /// The marker's label; None: the whole recording.
    pub label: Option<String>,
    /// The ops it covers.
    pub ops: Range<usize>,
    /// Its recorded start and end (ns; None: open-ended).
    pub start_ts: Option<u64>,
    pub end_ts: Option<u64>,
}

impl Phase {
    /// A recorded interval (a gpu line's start) falls in the phase.
    pub fn contains(&self, ts: u64) -> bool {
        self.start_ts.is_none_or(|s| ts >= s) && self.end_ts.is_none_or(|e| ts < e)
    }
}

pub fn phase(ops: &[Op], markers: &[Marker], name: &str) -> Phase {
    let mut phases: Vec<&Marker> = markers.iter().filter(|m| m.marker_op() == Some(MarkerOp::Phase)).collect();
    phases.sort_by_key(|m| m.ts);
    let Some(k) = phases.iter().position(|m| m.label == name) else {
        return Phase { label: None, ops: 0..ops.len(), start_ts: None, end_ts: None };
    };
    let start = phases[k].ts;
    let end = phases.get(k + 1).map(|m| m.ts);
    let first = ops.iter().position(|o| o.ts >= start).unwrap_or(ops.len());
    let last = end.map_or(ops.len(), |e| ops.iter().position(|o| o.ts >= e).unwrap_or(ops.len()));
    Phase { label: Some(name.to_owned()), ops: first..last.max(first), start_ts: Some(start), end_ts: end }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::OpKind;

    fn op(ts: u64) -> Op {
        Op { line: 0, ts, duration_ns: None, pid: 1, tid: 1, stream: None, kind: OpKind::CtxSync }
    }
    fn mk(ts: u64, op: &str, label: &str) -> Marker {
        Marker { ts, pid: 1, op: op.into(), label: label.into(), tokens: None }
    }

    #[test]
    fn from_the_named_phase_to_the_next() {
        let ops: Vec<Op> = [10, 20, 30, 40, 50].into_iter().map(op).collect();
        let m =
            [mk(5, "phase", "warmup"), mk(25, "phase", "generate"), mk(26, "iteration", "0"), mk(45, "phase", "end")];
        let p = phase(&ops, &m, "generate");
        assert_eq!(p, Phase { label: Some("generate".into()), ops: 2..4, start_ts: Some(25), end_ts: Some(45) });
        assert!(p.contains(25) && p.contains(44) && !p.contains(45) && !p.contains(24));
        let whole = phase(&ops, &m, "nope");
        assert_eq!(whole, Phase { label: None, ops: 0..5, start_ts: None, end_ts: None });
        assert!(whole.contains(0));
        assert_eq!(phase(&ops, &m[..2], "generate").ops, 2..5);
    }
}
