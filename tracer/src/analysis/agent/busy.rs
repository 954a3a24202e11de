//! The agent's GPU busy/idle time per process, streamed: the `bound`
//! timeline of timeline.rs reduced to what can be kept in constant memory
//! while lines arrive. A process is "possibly busy" from the entry of its
//! first launch/copy/set after it was last known idle until the return of
//! the synchronization that leaves no stream with unsynchronized work; the
//! time between two such stretches is certain idle time (a lower bound on
//! idle), and each such gap is one observation of the idle-gap histogram.
//!
//! Streams: a cuStreamSynchronize of a non-legacy stream closes that
//! stream; one of the legacy stream (`0x0`), cuCtxSynchronize,
//! cuEventSynchronize and a blocking (non-Async) copy close every stream
//! of the process (for the event synchronization this is an approximation:
//! the event may cover fewer streams). Only closed stretches are counted,
//! so both totals only grow.

/// Upper bounds (seconds) of the idle-gap histogram's buckets (+Inf after).
pub const GAP_BUCKETS_S: &[f64] = &[1e-5, 1e-4, 1e-3, 1e-2, 0.1, 1.0, 10.0];

/// Streams with unsynchronized work kept per process; more are folded into
/// the legacy stream (closed by any synchronization of the process).
const MAX_OPEN_STREAMS: usize = 64;

#[derive(Clone, Debug, Default)]
pub struct Busy {
    /// Streams with work submitted since their last synchronization.
    open: Vec<u64>,
    /// Entry of the first work of the current stretch.
    stretch_start: Option<u64>,
    /// Return of the synchronization that ended the last stretch.
    last_end: Option<u64>,
    /// Closed stretches, summed (ns).
    pub busy_ns: u64,
    /// Gaps between stretches, summed (ns).
    pub idle_ns: u64,
    /// Idle-gap histogram: counts per bucket of [`GAP_BUCKETS_S`] (not
    /// cumulative; the last is +Inf), and the sum of the gaps (ns).
    pub gap_counts: [u64; 8],
}

impl Busy {
    /// A launch, copy or set submitted at `ts` on `stream`.
    pub fn work(&mut self, ts: u64, stream: u64) {
        if self.stretch_start.is_none() {
            self.stretch_start = Some(ts);
            if let Some(end) = self.last_end {
                self.gap(ts.saturating_sub(end));
            }
        }
        if !self.open.contains(&stream) {
            if self.open.len() >= MAX_OPEN_STREAMS {
                if !self.open.contains(&0) {
                    self.open.push(0);
                }
            } else {
                self.open.push(stream);
            }
        }
    }

    /// A synchronization that returned at `exit_ts`: of one stream, or of
    /// every stream of the process (`None`).
    pub fn sync(&mut self, exit_ts: u64, stream: Option<u64>) {
        match stream {
            Some(s) if s != 0 => self.open.retain(|&o| o != s),
            _ => self.open.clear(),
        }
        if self.open.is_empty()
            && let Some(start) = self.stretch_start.take()
        {
            self.busy_ns += exit_ts.saturating_sub(start);
            self.last_end = Some(self.last_end.map_or(exit_ts, |e| e.max(exit_ts)));
        }
    }

    fn gap(&mut self, ns: u64) {
        self.idle_ns += ns;
        let s = ns as f64 / 1e9;
        let i = GAP_BUCKETS_S.iter().position(|&b| s <= b).unwrap_or(GAP_BUCKETS_S.len());
        self.gap_counts[i] += 1;
    }

    /// Number of gaps observed.
    pub fn gaps(&self) -> u64 {
        self.gap_counts.iter().sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stretches_end_when_every_stream_is_synchronized() {
        let mut b = Busy::default();
        b.work(1_000, 0x10);
        b.work(2_000, 0x20);
        b.sync(5_000, Some(0x10));
        assert_eq!(b.busy_ns, 0, "stream 0x20 still has work");
        b.sync(9_000, Some(0x20));
        assert_eq!(b.busy_ns, 8_000);
        // 2 ms idle, then a stretch closed by a context synchronization.
        b.work(2_009_000, 0x10);
        b.sync(2_010_000, None);
        assert_eq!((b.busy_ns, b.idle_ns), (9_000, 2_000_000));
        assert_eq!(b.gap_counts, [0, 0, 0, 1, 0, 0, 0, 0]);
        // 20 s idle: the +Inf bucket.
        b.work(22_010_000_000, 0);
        b.sync(22_010_000_500, Some(0));
        assert_eq!(b.gap_counts, [0, 0, 0, 1, 0, 0, 0, 1]);
        assert_eq!(b.gaps(), 2);
    }

    #[test]
    fn a_synchronization_without_work_counts_nothing() {
        let mut b = Busy::default();
        b.sync(100, None);
        b.work(200, 0);
        b.sync(300, None);
        assert_eq!((b.busy_ns, b.idle_ns, b.gaps()), (100, 0, 0));
    }

    #[test]
    fn open_streams_are_bounded() {
        let mut b = Busy::default();
        for s in 1..=(MAX_OPEN_STREAMS as u64 + 50) {
            b.work(s, s);
        }
        assert!(b.open.len() <= MAX_OPEN_STREAMS + 1);
        b.sync(1_000, None);
        assert_eq!(b.busy_ns, 999);
    }
}
