//! The replay's own GPU time, measured with CUPTI activity records (the
//! measure `tracer record --gpu-timestamps` used for the recording's `gpu`
//! lines), so that recorded and replayed figures compare like for like:
//! busy time (union of the intervals), kernel, copy and set time.
//!
//! Pure functions over [`Activity`] records; the collection itself is
//! `tracer_cupti::collect` (started by `run`).
//! - [`figures`]: the report's figures from the records of measured passes;
//! - [`matching`]: which record measured which replayed op;
//! - [`recorded`]: the recording's own GPU time (its gpu lines, else launch-to-sync spans);
//! - [`segments`]: per phase/iteration (the recording's markers);
//! - [`timeline_file`]: the replayed pass as a tracer trace (`replay-timeline.jsonl`).

pub mod copy_kinds;
pub mod figures;
pub mod graph_launches;
pub mod in_context;
pub mod matching;
pub mod recorded;
pub mod segments;
pub mod timeline_file;

use serde::Serialize;
pub use tracer_cupti::collect::{Activity, Op, memory_kind_name};

/// Time of a set of intervals.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Totals {
    /// Union of the intervals: time the GPU had work of ours.
    pub busy_ns: u64,
    /// First start to last end.
    pub span_ns: u64,
    /// Summed durations per kind (overlapping work counted twice).
    pub kernels_ns: u64,
    pub copies_ns: u64,
    pub sets_ns: u64,
    pub kernels: u64,
    pub copies: u64,
    pub sets: u64,
}

/// Length of the union of `[start, end)` intervals (sorted in place).
pub fn union_ns(iv: &mut [(u64, u64)]) -> u64 {
    merge(iv, 0).iter().map(|(s, e)| e - s).sum()
}

/// `[start, end)` intervals sorted (in place) and merged, gaps of at most `join_ns` closed.
pub fn merge(iv: &mut [(u64, u64)], join_ns: u64) -> Vec<(u64, u64)> {
    iv.sort_unstable();
    let mut out: Vec<(u64, u64)> = Vec::new();
    // An interval that ends before it starts (an incomplete activity record) is none.
    for &(s, e) in iv.iter().filter(|x| x.1 >= x.0) {
        match out.last_mut() {
            Some(l) if s <= l.1.saturating_add(join_ns) => l.1 = l.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

impl Totals {
    pub fn of(acts: &[Activity]) -> Totals {
        let mut t = Totals::default();
        let mut iv: Vec<(u64, u64)> = Vec::with_capacity(acts.len());
        for a in acts {
            let d = a.end - a.start;
            iv.push((a.start, a.end));
            match a.op {
                Op::Kernel => (t.kernels += 1, t.kernels_ns += d),
                Op::Memcpy => (t.copies += 1, t.copies_ns += d),
                Op::Memset => (t.sets += 1, t.sets_ns += d),
            };
        }
        t.busy_ns = union_ns(&mut iv);
        t.span_ns = iv.last().map_or(0, |_| iv.iter().map(|x| x.1).max().unwrap_or(0) - iv[0].0);
        t
    }
}

/// Records sorted into disjoint `windows` (`[start, end]`, CLOCK_MONOTONIC,
/// sorted) by their start: one list per window. Also returns how many fell
/// in no window and how many had no usable timestamp (0, or end < start).
pub fn split(mut acts: Vec<Activity>, windows: &[(u64, u64)]) -> (Vec<Vec<Activity>>, usize, usize) {
    let before = acts.len();
    acts.retain(|a| a.start != 0 && a.end >= a.start);
    let no_ts = before - acts.len();
    acts.sort_by_key(|a| (a.start, a.end));
    let mut out: Vec<Vec<Activity>> = vec![Vec::new(); windows.len()];
    let mut outside = 0;
    for a in acts {
        let w = windows.partition_point(|w| w.1 < a.start);
        if w < windows.len() && windows[w].0 <= a.start {
            out[w].push(a);
        } else {
            outside += 1;
        }
    }
    (out, outside, no_ts)
}

/// Mean of a field over passes (NaN for none).
pub fn mean(v: impl IntoIterator<Item = u64>) -> f64 {
    let (s, n) = v.into_iter().fold((0f64, 0usize), |(s, n), x| (s + x as f64, n + 1));
    if n == 0 { f64::NAN } else { s / n as f64 }
}

/// The median of `v` (the mean of the middle two for an even count; NaN when empty).
pub fn median(v: &[f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    let n = s.len();
    if n % 2 == 1 { s[n / 2] } else { (s[n / 2 - 1] + s[n / 2]) / 2.0 }
}

/// Relative error (%) of `measured` against `reference`; None without a reference.
pub fn error_pct(measured: f64, reference: f64) -> Option<f64> {
    (reference > 0.0).then(|| 100.0 * (measured - reference) / reference)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub fn act(op: Op, start: u64, end: u64, stream: u32, name: Option<&str>) -> Activity {
        Activity {
            context: 1,
            name: name.map(std::sync::Arc::from),
            grid: [1, 1, 1],
            block: [32, 1, 1],
            bytes: if op == Op::Kernel { 0 } else { 4096 },
            copy_kind: if op == Op::Memcpy { 1 } else { 0 },
            ..Activity::new(op, start, end, stream)
        }
    }

    #[test]
    fn totals_union_and_sums() {
        let a = vec![
            act(Op::Kernel, 100, 200, 7, Some("k")),
            act(Op::Kernel, 150, 260, 13, Some("k")), // overlaps the first
            act(Op::Memcpy, 300, 350, 7, None),
            act(Op::Memset, 400, 401, 7, None),
        ];
        let t = Totals::of(&a);
        assert_eq!(
            t,
            Totals {
                busy_ns: 160 + 50 + 1,
                span_ns: 301,
                kernels_ns: 210,
                copies_ns: 50,
                sets_ns: 1,
                kernels: 2,
                copies: 1,
                sets: 1
            }
        );
        assert_eq!(Totals::of(&[]), Totals::default());
    }

    #[test]
    fn split_by_window() {
        let a = vec![
            act(Op::Kernel, 1050, 1100, 7, None),
            act(Op::Kernel, 10, 20, 7, None),     // before every window
            act(Op::Kernel, 2000, 2500, 7, None), // starts at window 2's start
            act(Op::Kernel, 1500, 1600, 7, None), // between windows
            act(Op::Kernel, 0, 0, 7, None),       // no timestamp
            act(Op::Kernel, 1000, 1010, 7, None),
        ];
        let (w, outside, no_ts) = split(a, &[(1000, 1200), (2000, 3000)]);
        assert_eq!(w[0].iter().map(|a| a.start).collect::<Vec<_>>(), vec![1000, 1050]);
        assert_eq!(w[1].iter().map(|a| a.start).collect::<Vec<_>>(), vec![2000]);
        assert_eq!((outside, no_ts), (2, 1));
    }
}
