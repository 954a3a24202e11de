//! Recorded vs replayed GPU time per phase and iteration, from the
//! recording's markers (docs/markers.md: a `phase` lasts until the next
//! `phase` of its process, `phase end` closes it; an `iteration` lasts until
//! the next `iteration` or `phase`).
//!
//! A replayed op belongs to the segment its recorded submission fell in; a
//! recorded GPU interval to the segment its start fell in.

use serde::Serialize;

use super::{Op, union_ns};
use crate::recording::trace::Marker;
use tracer_format::line::MarkerOp;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Segment {
    /// `phase` or `iteration`.
    pub op: String,
    pub label: String,
    pub pid: u32,
    pub start: u64,
    pub end: u64,
    pub tokens: Option<u64>,
}

/// The segments the markers open, in order of start; `end`: where the last
/// open ones end (the recording's end).
pub fn segments(markers: &[Marker], end: u64) -> Vec<Segment> {
    let mut ms: Vec<&Marker> =
        markers.iter().filter(|m| matches!(m.marker_op(), Some(MarkerOp::Phase | MarkerOp::Iteration))).collect();
    ms.sort_by_key(|m| m.ts);
    let mut out = Vec::new();
    for (i, m) in ms.iter().enumerate() {
        if m.marker_op() == Some(MarkerOp::Phase) && m.label == "end" {
            continue;
        }
        // A phase ends at the next phase; an iteration at the next iteration or phase.
        let stop = ms[i + 1..]
            .iter()
            .find(|n| {
                n.pid == m.pid && (n.marker_op() == Some(MarkerOp::Phase) || m.marker_op() == Some(MarkerOp::Iteration))
            })
            .map_or(end, |n| n.ts);
        out.push(Segment {
            op: m.op.clone(),
            label: m.label.clone(),
            pid: m.pid,
            start: m.ts,
            end: stop.max(m.ts),
            tokens: m.tokens,
        });
    }
    out
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SegmentRow {
    pub op: String,
    pub label: String,
    pub tokens: Option<u64>,
    /// Replayed GPU ops submitted in the segment when recorded.
    pub ops: usize,
    pub recorded_busy_us: f64,
    pub recorded_kernels_us: f64,
    /// Mean over the passes.
    pub replayed_busy_us: f64,
    pub replayed_kernels_us: f64,
    pub busy_error_pct: Option<f64>,
    pub kernels_error_pct: Option<f64>,
}

/// One measured op of a pass: (plan op, start, end, kind).
pub type Measured = (usize, u64, u64, Op);

/// Rows for the segments holding GPU work. `op_ts`: recorded submission
/// time of each plan op; `recorded`: the recording's GPU intervals (start,
/// end, kind); `passes`: the measured ops of each pass.
pub fn compare(
    segs: &[Segment],
    op_ts: &[u64],
    recorded: &[(u64, u64, Op)],
    passes: &[Vec<Measured>],
) -> Vec<SegmentRow> {
    let err = |m: f64, r: f64| (r > 0.0).then(|| 100.0 * (m - r) / r);
    let mut rows = Vec::new();
    for s in segs {
        let inside = |t: u64| s.start <= t && t < s.end;
        let mut rec: Vec<(u64, u64)> = recorded.iter().filter(|x| inside(x.0)).map(|x| (x.0, x.1)).collect();
        let rec_k: u64 = recorded.iter().filter(|x| inside(x.0) && x.2 == Op::Kernel).map(|x| x.1 - x.0).sum();
        let (mut busy, mut kern, mut ops) = (0f64, 0f64, 0usize);
        for p in passes {
            let mine: Vec<&Measured> = p.iter().filter(|m| inside(op_ts[m.0])).collect();
            ops = mine.len();
            let mut iv: Vec<(u64, u64)> = mine.iter().map(|m| (m.1, m.2)).collect();
            busy += union_ns(&mut iv) as f64;
            kern += mine.iter().filter(|m| m.3 == Op::Kernel).map(|m| (m.2 - m.1) as f64).sum::<f64>();
        }
        if rec.is_empty() && ops == 0 {
            continue;
        }
        let n = passes.len().max(1) as f64;
        let (rb, rk) = (union_ns(&mut rec) as f64 / 1e3, rec_k as f64 / 1e3);
        let (pb, pk) = (busy / n / 1e3, kern / n / 1e3);
        rows.push(SegmentRow {
            op: s.op.clone(),
            label: s.label.clone(),
            tokens: s.tokens,
            ops,
            recorded_busy_us: rb,
            recorded_kernels_us: rk,
            replayed_busy_us: pb,
            replayed_kernels_us: pk,
            busy_error_pct: err(pb, rb),
            kernels_error_pct: err(pk, rk),
        });
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(ts: u64, op: &str, label: &str, tokens: Option<u64>) -> Marker {
        Marker { ts, pid: 1, op: op.into(), label: label.into(), tokens }
    }

    #[test]
    fn phases_and_iterations() {
        let ms = vec![
            m(100, "phase", "warmup", None),
            m(200, "phase", "generate", None),
            m(210, "iteration", "0", Some(20)),
            m(300, "iteration", "1", Some(20)),
            m(350, "mark", "x", None),
            m(400, "phase", "end", None),
        ];
        let s = segments(&ms, 1000);
        let got: Vec<(&str, &str, u64, u64)> =
            s.iter().map(|x| (x.op.as_str(), x.label.as_str(), x.start, x.end)).collect();
        assert_eq!(
            got,
            vec![
                ("phase", "warmup", 100, 200),
                ("phase", "generate", 200, 400),
                ("iteration", "0", 210, 300),
                ("iteration", "1", 300, 400)
            ]
        );
        assert_eq!(s[2].tokens, Some(20));
        // Without `phase end`, the last ones run to the end.
        assert_eq!(segments(&ms[..4], 1000).last().unwrap().end, 1000);
    }

    #[test]
    fn busy_per_segment() {
        let segs = segments(&[m(100, "iteration", "0", None), m(200, "iteration", "1", None)], 300);
        // ops 0,1 submitted in iteration 0, op 2 in iteration 1
        let op_ts = [110, 150, 210];
        let recorded = [(120, 140, Op::Kernel), (130, 160, Op::Memcpy), (220, 260, Op::Kernel)];
        let passes = vec![
            vec![(0, 1000, 1010, Op::Kernel), (1, 1020, 1050, Op::Memcpy), (2, 1100, 1130, Op::Kernel)],
            vec![(0, 2000, 2030, Op::Kernel), (1, 2010, 2040, Op::Memcpy), (2, 2100, 2150, Op::Kernel)],
        ];
        let r = compare(&segs, &op_ts, &recorded, &passes);
        assert_eq!(r.len(), 2);
        assert_eq!((r[0].ops, r[0].recorded_busy_us, r[0].recorded_kernels_us), (2, 0.04, 0.02));
        // pass 1: 10 + 30 = 40 ns busy, pass 2: 2000..2040 = 40 ns; kernels 10 and 30
        assert_eq!((r[0].replayed_busy_us, r[0].replayed_kernels_us), (0.04, 0.02));
        assert_eq!(r[0].busy_error_pct, Some(0.0));
        assert_eq!((r[1].recorded_busy_us, r[1].replayed_busy_us), (0.04, 0.04));
        assert_eq!(r[1].replayed_kernels_us, 0.04);
    }
}
