//! Axis ticks: round values 1, 2 or 5 × 10^k apart.

/// Ticks between `lo` and `hi` (inclusive), at most about `max_ticks` of
/// them, at multiples of a 1-2-5 step. Returns the step and the values.
pub fn nice_ticks(lo: f64, hi: f64, max_ticks: usize) -> (f64, Vec<f64>) {
    let span = hi - lo;
    if span.is_nan() || span <= 0.0 || !span.is_finite() {
        return (1.0, vec![lo]);
    }
    let raw = span / max_ticks.max(1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * mag).find(|s| *s >= raw).unwrap_or(10.0 * mag);
    let first = (lo / step).ceil() as i64;
    let last = (hi / step + 1e-9).floor() as i64;
    let ticks = (first..=last).map(|i| i as f64 * step).collect();
    (step, ticks)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks() {
        let (s, t) = nice_ticks(0.0, 10.0, 10);
        assert_eq!(s, 1.0);
        assert_eq!(t.len(), 11);
        let (s, t) = nice_ticks(0.0, 37.0, 8);
        assert_eq!(s, 5.0);
        assert_eq!(t, vec![0.0, 5.0, 10.0, 15.0, 20.0, 25.0, 30.0, 35.0]);
        let (s, t) = nice_ticks(0.0, 0.0042, 5);
        assert!((s - 0.001).abs() < 1e-12, "{s}");
        assert_eq!(t.len(), 5);
        assert_eq!(nice_ticks(3.0, 3.0, 5), (1.0, vec![3.0]));
    }
}
