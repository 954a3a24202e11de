//! Downsampling: everything a figure draws is first reduced to one value per
//! pixel column (or per histogram bucket), so drawing costs the same at ten
//! events and at ten million. Pure functions; exact integer arithmetic where
//! the tests need exact answers.
use super::input::{Kind, Slice, Track};

/// `ncols` columns splitting `[t0, t1)`; column `i` is `[edge(i), edge(i+1))`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Grid {
    pub t0: u64,
    pub t1: u64,
    pub ncols: usize,
}

impl Grid {
    /// An empty or reversed range becomes 1 ns long, zero columns become one.
    pub fn new(t0: u64, t1: u64, ncols: usize) -> Self {
        Grid { t0, t1: t1.max(t0 + 1), ncols: ncols.max(1) }
    }

    fn span(&self) -> u64 {
        self.t1 - self.t0
    }

    pub fn edge(&self, i: usize) -> u64 {
        self.t0 + (self.span() as u128 * i as u128 / self.ncols as u128) as u64
    }

    pub fn width(&self, i: usize) -> u64 {
        self.edge(i + 1) - self.edge(i)
    }

    /// The column holding `t` (clamped to the grid).
    pub fn col(&self, t: u64) -> usize {
        if t <= self.t0 {
            return 0;
        }
        if t >= self.t1 {
            return self.ncols - 1;
        }
        let d = (t - self.t0) as u128;
        let mut i = (d * self.ncols as u128 / self.span() as u128) as usize;
        while i + 1 < self.ncols && self.edge(i + 1) <= t {
            i += 1;
        }
        i
    }
}

/// Per column and kind, the share of the column's time covered by slices of
/// that kind: `out[col * Kind::COUNT + kind]`. Where slices overlap (more
/// than 100 % in total) the shares are scaled to add up to 1. O(slices +
/// columns): fully covered columns go through a difference array.
pub fn coverage<'a>(grid: &Grid, parts: impl IntoIterator<Item = &'a [Slice]>) -> Vec<f64> {
    let n = grid.ncols;
    let k = Kind::COUNT;
    let mut partial = vec![0u64; n * k];
    let mut full = vec![0i64; (n + 1) * k];
    for part in parts {
        for s in part {
            let (a, b) = (s.start_ns.max(grid.t0), s.end_ns.min(grid.t1));
            if b <= a {
                continue;
            }
            let kind = s.kind.index();
            let (ca, cb) = (grid.col(a), grid.col(b - 1));
            if ca == cb {
                partial[ca * k + kind] += b - a;
            } else {
                partial[ca * k + kind] += grid.edge(ca + 1) - a;
                partial[cb * k + kind] += b - grid.edge(cb);
                full[(ca + 1) * k + kind] += 1;
                full[cb * k + kind] -= 1;
            }
        }
    }
    let mut out = vec![0f64; n * k];
    let mut running = vec![0i64; k];
    for c in 0..n {
        let w = grid.width(c);
        let mut covered = [0u64; Kind::COUNT];
        for j in 0..k {
            running[j] += full[c * k + j];
            covered[j] = partial[c * k + j] + running[j] as u64 * w;
        }
        let total: u64 = covered.iter().sum();
        let denom = total.max(w).max(1) as f64;
        for j in 0..k {
            out[c * k + j] = covered[j] as f64 / denom;
        }
    }
    out
}

/// Per column and kind, the number of instants (slices with `end_ns ==
/// start_ns`: calls recorded without a return probe, such as launches in a
/// default recording) in the column: `out[col * Kind::COUNT + kind]`.
/// [`coverage`] gives them no time; they are drawn as ticks.
pub fn instants<'a>(grid: &Grid, parts: impl IntoIterator<Item = &'a [Slice]>) -> Vec<u32> {
    let mut out = vec![0u32; grid.ncols * Kind::COUNT];
    for part in parts {
        for s in part {
            if s.end_ns == s.start_ns && s.start_ns >= grid.t0 && s.start_ns < grid.t1 {
                let i = grid.col(s.start_ns) * Kind::COUNT + s.kind.index();
                out[i] = out[i].saturating_add(1);
            }
        }
    }
    out
}

/// Min, max and mean of the samples falling in each column (None: no sample).
pub fn power_columns(grid: &Grid, samples: &[(u64, f64)]) -> Vec<Option<(f64, f64, f64)>> {
    let mut acc: Vec<Option<(f64, f64, f64, u32)>> = vec![None; grid.ncols];
    for &(t, w) in samples {
        if t < grid.t0 || t >= grid.t1 || !w.is_finite() {
            continue;
        }
        let c = grid.col(t);
        acc[c] = Some(match acc[c] {
            None => (w, w, w, 1),
            Some((lo, hi, sum, n)) => (lo.min(w), hi.max(w), sum + w, n + 1),
        });
    }
    acc.into_iter().map(|a| a.map(|(lo, hi, sum, n)| (lo, hi, sum / n as f64))).collect()
}

/// The value at `t` of samples sorted by time, linearly interpolated; None
/// outside their range. Gives the power curve's ends at a window's edges.
pub fn value_at(samples: &[(u64, f64)], t: u64) -> Option<f64> {
    let i = samples.partition_point(|x| x.0 <= t);
    if i == 0 {
        return None;
    }
    let (ta, va) = samples[i - 1];
    if ta == t {
        return Some(va);
    }
    let &(tb, vb) = samples.get(i)?;
    Some(va + (vb - va) * (t - ta) as f64 / (tb - ta) as f64)
}

/// The idle periods between intervals: the gaps in their union, in order.
/// Input need not be sorted; intervals may overlap (several streams).
pub fn idle_gaps(intervals: &mut [(u64, u64)]) -> Vec<u64> {
    intervals.sort_unstable();
    let mut gaps = Vec::new();
    let mut end: Option<u64> = None;
    for &(a, b) in intervals.iter() {
        if b < a {
            continue;
        }
        match end {
            None => end = Some(b),
            Some(e) => {
                if a > e {
                    gaps.push(a - e);
                }
                end = Some(e.max(b));
            }
        }
    }
    gaps
}

/// One bucket of the gap histogram: `[lo_ns, hi_ns)` (`hi_ns` None: no upper
/// bound).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bucket {
    pub lo_ns: u64,
    pub hi_ns: Option<u64>,
    pub count: u64,
    pub total_ns: u64,
}

/// Bucket edges 1-2-5 per decade from 1 µs to 10 s: log-spaced, round labels.
pub fn gap_edges() -> Vec<u64> {
    let mut v = Vec::new();
    let mut decade = 1_000u64;
    while decade < 10_000_000_000 {
        v.extend([decade, 2 * decade, 5 * decade]);
        decade *= 10;
    }
    v.push(10_000_000_000);
    v
}

/// Histogram of gaps over `gap_edges()`: a first bucket `[0, 1 µs)`, one per
/// pair of edges, a last one `[10 s, ∞)`; count and summed length of each.
pub fn gap_histogram(gaps: &[u64]) -> Vec<Bucket> {
    let edges = gap_edges();
    let mut b: Vec<Bucket> = Vec::with_capacity(edges.len() + 1);
    b.push(Bucket { lo_ns: 0, hi_ns: Some(edges[0]), count: 0, total_ns: 0 });
    for w in edges.windows(2) {
        b.push(Bucket { lo_ns: w[0], hi_ns: Some(w[1]), count: 0, total_ns: 0 });
    }
    b.push(Bucket { lo_ns: *edges.last().unwrap(), hi_ns: None, count: 0, total_ns: 0 });
    for &g in gaps {
        let i = edges.partition_point(|&e| e <= g);
        b[i].count += 1;
        b[i].total_ns += g;
    }
    b
}

/// A row of the timeline: one track, or several folded into one.
pub struct Row<'a> {
    pub label: String,
    pub parts: Vec<&'a [Slice]>,
}

/// At most `max` rows: the busiest `max - 1` tracks in their original order,
/// and the others folded into one row labelled "+N other <what>" (all tracks
/// when they fit). Nothing is dropped.
pub fn select_rows<'a>(tracks: &'a [Track], max: usize, what: &str) -> Vec<Row<'a>> {
    let max = max.max(1);
    if tracks.len() <= max {
        return tracks.iter().map(|t| Row { label: t.label.clone(), parts: vec![&t.slices[..]] }).collect();
    }
    let mut by_busy: Vec<usize> = (0..tracks.len()).collect();
    by_busy.sort_by_key(|&i| (std::cmp::Reverse(tracks[i].busy_ns()), std::cmp::Reverse(tracks[i].slices.len()), i));
    let mut keep = by_busy[..max - 1].to_vec();
    keep.sort_unstable();
    let mut rows: Vec<Row> =
        keep.iter().map(|&i| Row { label: tracks[i].label.clone(), parts: vec![&tracks[i].slices[..]] }).collect();
    let rest = &by_busy[max - 1..];
    rows.push(Row {
        label: format!("+{} other {what}", rest.len()),
        parts: rest.iter().map(|&i| &tracks[i].slices[..]).collect(),
    });
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sl(a: u64, b: u64, kind: Kind) -> Slice {
        Slice { start_ns: a, end_ns: b, kind }
    }

    fn kind_col(v: &[f64], kind: Kind) -> Vec<f64> {
        v.chunks(Kind::COUNT).map(|c| c[kind.index()]).collect()
    }

    #[test]
    fn grid_edges_and_columns() {
        let g = Grid::new(100, 110, 3); // widths 3, 3, 4
        assert_eq!((0..=3).map(|i| g.edge(i)).collect::<Vec<_>>(), vec![100, 103, 106, 110]);
        assert_eq!([99, 100, 102, 103, 105, 106, 109, 110, 500].map(|t| g.col(t)), [0, 0, 0, 1, 1, 2, 2, 2, 2]);
        assert_eq!(Grid::new(5, 5, 0), Grid { t0: 5, t1: 6, ncols: 1 });
    }

    #[test]
    fn coverage_exact_bins() {
        let g = Grid::new(0, 100, 10);
        let a = [sl(5, 25, Kind::Launch), sl(40, 41, Kind::Sync), sl(95, 200, Kind::Sync)];
        let v = coverage(&g, [&a[..]]);
        assert_eq!(kind_col(&v, Kind::Launch), vec![0.5, 1.0, 0.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]);
        assert_eq!(kind_col(&v, Kind::Sync), vec![0.0, 0.0, 0.0, 0.0, 0.1, 0.0, 0.0, 0.0, 0.0, 0.5]);
        assert_eq!(kind_col(&v, Kind::Copy), vec![0.0; 10]);
    }

    #[test]
    fn coverage_long_slice_uses_full_columns_and_clips() {
        let g = Grid::new(1000, 1010, 5); // columns of 2 ns
        let a = [sl(0, 1007, Kind::GpuMeasured)];
        let v = coverage(&g, [&a[..]]);
        assert_eq!(kind_col(&v, Kind::GpuMeasured), vec![1.0, 1.0, 1.0, 0.5, 0.0]);
    }

    #[test]
    fn coverage_overlaps_scale_to_one_and_parts_add_up() {
        let g = Grid::new(0, 10, 1);
        let a = [sl(0, 10, Kind::Launch)];
        let b = [sl(0, 5, Kind::Copy), sl(7, 7, Kind::Copy)];
        let v = coverage(&g, [&a[..], &b[..]]);
        // 10 + 5 ns of calls in a 10 ns column: 2/3 and 1/3.
        assert_eq!(v[Kind::Launch.index()], 10.0 / 15.0);
        assert_eq!(v[Kind::Copy.index()], 5.0 / 15.0);
        let c = [sl(0, 2, Kind::Memory)];
        let d = [sl(6, 9, Kind::Memory)];
        assert_eq!(coverage(&g, [&c[..], &d[..]])[Kind::Memory.index()], 0.5);
    }

    #[test]
    fn coverage_of_many_slices_is_bounded_by_columns() {
        let g = Grid::new(0, 1_000_000, 4);
        let many: Vec<Slice> = (0..100_000u64).map(|i| sl(i * 10, i * 10 + 5, Kind::Launch)).collect();
        let v = coverage(&g, [&many[..]]);
        assert_eq!(v.len(), 4 * Kind::COUNT);
        assert_eq!(kind_col(&v, Kind::Launch), vec![0.5; 4]);
    }

    #[test]
    fn instants_counted_per_column_and_kind() {
        let g = Grid::new(0, 100, 4);
        let a = [sl(0, 0, Kind::Launch), sl(10, 10, Kind::Launch), sl(30, 30, Kind::Sync), sl(40, 60, Kind::Launch)];
        let b = [sl(99, 99, Kind::Launch), sl(100, 100, Kind::Launch)]; // 100: outside [0, 100)
        let v = instants(&g, [&a[..], &b[..]]);
        assert_eq!(v.chunks(Kind::COUNT).map(|c| c[Kind::Launch.index()]).collect::<Vec<_>>(), vec![2, 0, 0, 1]);
        assert_eq!(v.chunks(Kind::COUNT).map(|c| c[Kind::Sync.index()]).collect::<Vec<_>>(), vec![0, 1, 0, 0]);
        assert_eq!(v.iter().sum::<u32>(), 4);
        // They take no time.
        assert!(coverage(&g, [&a[..1]]).iter().all(|&x| x == 0.0));
    }

    #[test]
    fn power_min_max_mean_per_column() {
        let g = Grid::new(0, 40, 4);
        let s = [(0, 100.0), (5, 200.0), (9, 300.0), (25, 50.0), (40, 999.0), (31, f64::NAN)];
        assert_eq!(power_columns(&g, &s), vec![Some((100.0, 300.0, 200.0)), None, Some((50.0, 50.0, 50.0)), None]);
    }

    #[test]
    fn value_at_interpolates_inside_only() {
        let s = [(10, 100.0), (20, 200.0), (30, 0.0)];
        assert_eq!(
            [5, 10, 15, 20, 25, 30, 31].map(|t| value_at(&s, t)),
            [None, Some(100.0), Some(150.0), Some(200.0), Some(100.0), Some(0.0), None]
        );
    }

    #[test]
    fn idle_gaps_of_union() {
        let mut iv = vec![(50, 60), (0, 10), (5, 20), (20, 30), (31, 32), (100, 100)];
        assert_eq!(idle_gaps(&mut iv), vec![1, 18, 40]);
        assert_eq!(idle_gaps(&mut []), Vec::<u64>::new());
    }

    #[test]
    fn gap_histogram_buckets() {
        let edges = gap_edges();
        assert_eq!(edges.len(), 22);
        assert_eq!(&edges[..4], &[1_000, 2_000, 5_000, 10_000]);
        assert_eq!(*edges.last().unwrap(), 10_000_000_000);
        let h = gap_histogram(&[1, 999, 1_000, 1_999, 2_000, 7_500, 3_000_000_000, 20_000_000_000]);
        assert_eq!(h.len(), 23);
        assert_eq!(h[0], Bucket { lo_ns: 0, hi_ns: Some(1_000), count: 2, total_ns: 1_000 });
        assert_eq!(h[1], Bucket { lo_ns: 1_000, hi_ns: Some(2_000), count: 2, total_ns: 2_999 });
        assert_eq!(h[2], Bucket { lo_ns: 2_000, hi_ns: Some(5_000), count: 1, total_ns: 2_000 });
        assert_eq!(h[3], Bucket { lo_ns: 5_000, hi_ns: Some(10_000), count: 1, total_ns: 7_500 });
        assert_eq!(
            h[20],
            Bucket { lo_ns: 2_000_000_000, hi_ns: Some(5_000_000_000), count: 1, total_ns: 3_000_000_000 }
        );
        assert_eq!(h[22], Bucket { lo_ns: 10_000_000_000, hi_ns: None, count: 1, total_ns: 20_000_000_000 });
        assert_eq!(h.iter().map(|b| b.count).sum::<u64>(), 8);
    }

    #[test]
    fn rows_keep_busiest_and_fold_the_rest() {
        let t = |l: &str, len: u64| Track { label: l.into(), slices: vec![sl(0, len, Kind::OtherCall)] };
        let tracks = vec![t("a", 5), t("b", 50), t("c", 1), t("d", 40), t("e", 50)];
        let rows = select_rows(&tracks, 3, "threads");
        let labels: Vec<_> = rows.iter().map(|r| r.label.as_str()).collect();
        assert_eq!(labels, vec!["b", "e", "+3 other threads"]);
        assert_eq!(rows[2].parts.iter().map(|p| p[0].end_ns).collect::<Vec<_>>(), vec![40, 5, 1]);
        assert_eq!(select_rows(&tracks, 5, "threads").len(), 5);
    }
}
