//! Small statistics helpers: nearest-rank percentiles, log-scale histogram
//! buckets (1-2-5 per decade), interval unions, durations as text.
use serde::Serialize;

/// A duration for text output: "850 ns", "12.5 µs", "3.40 ms", "1.234 s".
pub fn fmt_ns(ns: u64) -> String {
    let x = ns as f64;
    if ns < 1000 {
        format!("{ns} ns")
    } else if ns < 1_000_000 {
        format!("{:.1} µs", x / 1e3)
    } else if ns < 1_000_000_000 {
        format!("{:.2} ms", x / 1e6)
    } else {
        format!("{:.3} s", x / 1e9)
    }
}

/// Nearest-rank percentile of an ascending slice (0 when empty).
pub fn nearest_rank(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil().max(1.0) as usize;
    sorted[rank.min(sorted.len()) - 1]
}

/// Bucket edges in ns: 0, 1 µs, 2 µs, 5 µs, 10 µs, … 50 s (1-2-5 per decade).
pub fn log_edges_ns() -> Vec<u64> {
    let mut v = vec![0];
    let mut d = 1000u64;
    while d <= 10_000_000_000 {
        v.extend([d, 2 * d, 5 * d]);
        d *= 10;
    }
    v
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Bucket {
    /// Lower edge, inclusive (ns).
    pub lo_ns: u64,
    /// Upper edge, exclusive (ns); None for the last, open bucket.
    pub hi_ns: Option<u64>,
    pub count: u64,
    pub total_ns: u64,
}

/// Log-scale histogram of `values` (ns); only non-empty buckets are returned.
pub fn log_histogram(values: &[u64]) -> Vec<Bucket> {
    let edges = log_edges_ns();
    let mut b: Vec<Bucket> = edges
        .iter()
        .enumerate()
        .map(|(i, &lo)| Bucket { lo_ns: lo, hi_ns: edges.get(i + 1).copied(), count: 0, total_ns: 0 })
        .collect();
    for &v in values {
        let i = edges.partition_point(|&e| e <= v) - 1;
        b[i].count += 1;
        b[i].total_ns += v;
    }
    b.retain(|x| x.count > 0);
    b
}

/// Merges intervals (any order) into sorted, disjoint ones. Touching intervals merge.
pub fn union(mut v: Vec<(u64, u64)>) -> Vec<(u64, u64)> {
    v.sort_unstable();
    let mut out: Vec<(u64, u64)> = Vec::with_capacity(v.len());
    for (a, b) in v {
        if b < a {
            continue;
        }
        match out.last_mut() {
            Some(l) if a <= l.1 => l.1 = l.1.max(b),
            _ => out.push((a, b)),
        }
    }
    out
}

/// The parts of [lo, hi) not covered by the sorted disjoint `busy` intervals.
pub fn complement(busy: &[(u64, u64)], lo: u64, hi: u64) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    let mut at = lo;
    for &(a, b) in busy {
        if b <= at {
            continue;
        }
        if a >= hi {
            break;
        }
        if a > at {
            out.push((at, a.min(hi)));
        }
        at = at.max(b);
        if at >= hi {
            break;
        }
    }
    if at < hi {
        out.push((at, hi));
    }
    out
}

/// Total length of sorted disjoint intervals clipped to [lo, hi).
pub fn covered(v: &[(u64, u64)], lo: u64, hi: u64) -> u64 {
    v.iter().map(|&(a, b)| b.min(hi).saturating_sub(a.max(lo))).sum()
}

/// The time two sorted lists of disjoint intervals have in common.
pub fn overlap(a: &[(u64, u64)], b: &[(u64, u64)]) -> u64 {
    let (mut i, mut j, mut n) = (0, 0, 0u64);
    while i < a.len() && j < b.len() {
        let lo = a[i].0.max(b[j].0);
        let hi = a[i].1.min(b[j].1);
        n += hi.saturating_sub(lo);
        if a[i].1 < b[j].1 { i += 1 } else { j += 1 }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlap_of_interval_lists() {
        assert_eq!(overlap(&[(0, 10), (20, 30)], &[(5, 25), (28, 40)]), 5 + 5 + 2);
        assert_eq!(overlap(&[], &[(0, 1)]), 0);
    }

    #[test]
    fn percentiles_and_buckets() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!((nearest_rank(&v, 50.0), nearest_rank(&v, 90.0), nearest_rank(&v, 99.0)), (50, 90, 99));
        assert_eq!(nearest_rank(&v, 100.0), 100);
        assert_eq!(nearest_rank(&[], 50.0), 0);
        let e = log_edges_ns();
        assert_eq!(&e[..5], &[0, 1000, 2000, 5000, 10_000]);
        let h = log_histogram(&[500, 1500, 1999, 2000, 7000, 60_000_000_000]);
        let got: Vec<(u64, Option<u64>, u64, u64)> =
            h.iter().map(|b| (b.lo_ns, b.hi_ns, b.count, b.total_ns)).collect();
        assert_eq!(
            got,
            [
                (0, Some(1000), 1, 500),
                (1000, Some(2000), 2, 3499),
                (2000, Some(5000), 1, 2000),
                (5000, Some(10_000), 1, 7000),
                (50_000_000_000, None, 1, 60_000_000_000)
            ]
        );
    }

    #[test]
    fn union_complement() {
        let u = union(vec![(5, 10), (0, 3), (3, 4), (8, 12), (20, 25)]);
        assert_eq!(u, [(0, 4), (5, 12), (20, 25)]);
        assert_eq!(complement(&u, 0, 30), [(4, 5), (12, 20), (25, 30)]);
        assert_eq!(complement(&u, 6, 22), [(12, 20)]);
        assert_eq!(complement(&[], 1, 2), [(1, 2)]);
        assert_eq!(covered(&u, 2, 21), 2 + 7 + 1);
    }
}
