//! The agent's GPU busy/idle time per process, streamed.
//!
//! Without measurements it is the `bound` timeline of timeline.rs reduced
//! to what can be kept in constant memory while lines arrive ([`Busy`]). A
//! process is "possibly busy" from the entry of its first launch/copy/set
//! after it was last known idle until the return of the call that proves
//! every stream's work complete; the time between two such stretches is
//! certain idle time (a lower bound on idle), and each such gap is one
//! observation of the idle-gap histogram. A stretch never proven complete
//! (a process that never synchronizes) counts as possibly busy up to the
//! latest instant seen of the process: busy time is an upper bound, idle
//! time a lower bound, and both only grow.
//!
//! Proofs: a cuStreamSynchronize (any variant) or a successful
//! cuStreamQuery closes its stream; cuCtxSynchronize closes every stream of
//! the process; one of the legacy stream (`0x0`) and a device-to-host copy
//! (not Async) close the legacy stream and the streams seen created
//! blocking whose work all came before the legacy stream's latest work (not
//! non-blocking streams, nor streams whose creation was not seen); a
//! cuEventSynchronize or a successful cuEventQuery closes the event's stream
//! if no work was submitted to it after the event was recorded.
//!
//! With measurements (`gpu` lines from CUPTI, [`Measured`]) the busy time
//! is the union of the measured work and the idle time its gaps, from the
//! process's first measured work on the GPU to its last.

/// Upper bounds (seconds) of the idle-gap histogram's buckets (+Inf after).
pub const GAP_BUCKETS_S: &[f64] = &[1e-5, 1e-4, 1e-3, 1e-2, 0.1, 1.0, 10.0];

/// Streams with unsynchronized work kept per process; more are folded into
/// one pseudo-stream that only a context synchronization closes.
const MAX_OPEN_STREAMS: usize = 64;

/// The pseudo-stream of the work of streams beyond [`MAX_OPEN_STREAMS`].
const FOLDED: u64 = u64::MAX;

/// Streams remembered as created blocking (waited for by the legacy stream).
const MAX_BLOCKING: usize = 256;

/// Events remembered (the stream they were recorded on); older ones are forgotten.
const MAX_EVENTS: usize = 256;

#[derive(Clone, Debug, Default)]
pub struct Busy {
    /// Streams with work submitted since their last synchronization, how
    /// many operations were submitted to each since then, and how many of
    /// them before the latest work on the legacy stream (which waited for them
    /// when the stream is a blocking one).
    open: Vec<(u64, u64, u64)>,
    /// Streams seen created without CU_STREAM_NON_BLOCKING: the legacy
    /// stream waits for their earlier work. Others (created non-blocking, or
    /// whose creation was not seen) are closed only by their own proofs.
    blocking: Vec<u64>,
    /// (event, stream, the stream's operations when it was recorded).
    events: Vec<(u64, u64, u64)>,
    /// The latest instant seen of the process (entries and returns).
    last_seen: u64,
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
    /// An instant of the process (a call's entry or return).
    pub fn seen(&mut self, ts: u64) {
        self.last_seen = self.last_seen.max(ts);
    }

    /// Possibly busy time: the closed stretches, and the open one up to the
    /// latest instant seen (an upper bound; it only grows).
    pub fn busy_total_ns(&self) -> u64 {
        self.busy_ns + self.stretch_start.map_or(0, |s| self.last_seen.saturating_sub(s))
    }

    /// Whether work was submitted and never proven complete.
    pub fn open_stretch(&self) -> bool {
        self.stretch_start.is_some()
    }

    /// A launch, copy or set submitted at `ts` on `stream`.
    pub fn work(&mut self, ts: u64, stream: u64) {
        self.seen(ts);
        if self.stretch_start.is_none() {
            self.stretch_start = Some(ts);
            if let Some(end) = self.last_end {
                self.gap(ts.saturating_sub(end));
            }
        }
        let stream = if self.open.len() >= MAX_OPEN_STREAMS && !self.open.iter().any(|o| o.0 == stream) {
            FOLDED
        } else {
            stream
        };
        if stream == 0 {
            // the legacy stream's work waits for the blocking streams' earlier work
            for o in self.open.iter_mut().filter(|o| self.blocking.contains(&o.0)) {
                o.2 = o.1;
            }
        }
        match self.open.iter_mut().find(|o| o.0 == stream) {
            Some(o) => o.1 += 1,
            None => self.open.push((stream, 1, 0)),
        }
    }

    /// A stream created (`nonblocking`: with CU_STREAM_NON_BLOCKING).
    pub fn stream_created(&mut self, stream: u64, nonblocking: bool) {
        self.blocking.retain(|&b| b != stream);
        if !nonblocking && self.blocking.len() < MAX_BLOCKING {
            self.blocking.push(stream);
        }
    }

    /// An event recorded on `stream`.
    pub fn event_record(&mut self, event: u64, stream: u64) {
        let n = self.open.iter().find(|o| o.0 == stream).map_or(0, |o| o.1);
        self.events.retain(|e| e.0 != event);
        if self.events.len() >= MAX_EVENTS {
            self.events.remove(0);
        }
        self.events.push((event, stream, n));
    }

    /// An event found complete at `exit_ts` (a synchronization or a successful query).
    pub fn event_done(&mut self, exit_ts: u64, event: u64) {
        self.seen(exit_ts);
        let Some(&(_, stream, n)) = self.events.iter().find(|e| e.0 == event) else { return };
        // only if nothing was submitted to the stream after the record
        let now = self.open.iter().find(|o| o.0 == stream).map_or(0, |o| o.1);
        if now == n && stream != 0 {
            self.sync(exit_ts, Some(stream));
        } else if now == n && now > 0 {
            self.open.retain(|o| o.0 != 0);
            self.close(exit_ts);
        }
    }

    /// A synchronization that returned at `exit_ts`: of one stream, or of
    /// every stream of the process (`None`). The legacy stream's (`Some(0)`)
    /// also covers the blocking streams' work submitted before its own latest
    /// work.
    pub fn sync(&mut self, exit_ts: u64, stream: Option<u64>) {
        self.seen(exit_ts);
        match stream {
            Some(0) => {
                let blocking = &self.blocking;
                self.open.retain(|o| o.0 != 0 && !(blocking.contains(&o.0) && o.2 == o.1));
            }
            Some(s) => self.open.retain(|o| o.0 != s),
            None => self.open.clear(),
        }
        self.close(exit_ts);
    }

    /// Ends the stretch when no stream has work left: at the latest instant
    /// seen (not before: the busy total already counted up to it).
    fn close(&mut self, exit_ts: u64) {
        if self.open.is_empty()
            && let Some(start) = self.stretch_start.take()
        {
            let end = exit_ts.max(self.last_seen);
            self.busy_ns += end.saturating_sub(start);
            self.last_end = Some(self.last_end.map_or(end, |e| e.max(end)));
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

/// Measured work kept out of order before it is merged (CUPTI delivers
/// records in buffers, not in time order across streams).
const REORDER: usize = 4096;

/// The measured busy/idle time of a process on a GPU, from its `gpu` lines.
#[derive(Clone, Debug, Default)]
pub struct Measured {
    /// Not yet merged, by start.
    pending: std::collections::BinaryHeap<std::cmp::Reverse<(u64, u64)>>,
    /// The merged interval still growing.
    cur: Option<(u64, u64)>,
    pub busy_ns: u64,
    pub idle_ns: u64,
    pub gap_counts: [u64; 8],
    /// Work that arrived after later work was merged (its time may be missing from busy).
    pub late: u64,
}

impl Measured {
    pub fn work(&mut self, start: u64, end: u64) {
        self.pending.push(std::cmp::Reverse((start, end.max(start))));
        if self.pending.len() > REORDER
            && let Some(std::cmp::Reverse((s, e))) = self.pending.pop()
        {
            self.merge(s, e);
        }
    }

    fn merge(&mut self, s: u64, e: u64) {
        match &mut self.cur {
            None => self.cur = Some((s, e)),
            Some(c) if s < c.0 => {
                self.late += 1;
                c.1 = c.1.max(e);
            }
            Some(c) if s <= c.1 => c.1 = c.1.max(e),
            Some(c) => {
                let (a, b) = *c;
                self.busy_ns += b - a;
                self.idle_ns += s - b;
                let g = (s - b) as f64 / 1e9;
                self.gap_counts[GAP_BUCKETS_S.iter().position(|&x| g <= x).unwrap_or(GAP_BUCKETS_S.len())] += 1;
                *c = (s, e);
            }
        }
    }

    /// (busy ns, idle ns, gap counts) with every interval received merged.
    pub fn totals(&self) -> (u64, u64, [u64; 8]) {
        let mut m = self.clone();
        while let Some(std::cmp::Reverse((s, e))) = m.pending.pop() {
            m.merge(s, e);
        }
        (m.busy_ns + m.cur.map_or(0, |c| c.1 - c.0), m.idle_ns, m.gap_counts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measured_work_out_of_order() {
        let mut m = Measured::default();
        for (a, b) in [(5_000, 6_000), (1_000, 2_000), (1_500, 3_000), (10_000, 10_500)] {
            m.work(a, b);
        }
        // busy [1, 3] + [5, 6] + [10, 10.5] µs, gaps 2 and 4 µs
        assert_eq!(m.totals(), (3_500, 6_000, [2, 0, 0, 0, 0, 0, 0, 0]));
    }

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
        // the folded work is closed by no stream's synchronization, only the context's
        b.sync(900, Some(0));
        assert!(b.open_stretch());
        b.sync(1_000, None);
        assert_eq!(b.busy_ns, 999);
    }

    /// The legacy stream waits for the earlier work of the streams created
    /// blocking, not for that of non-blocking (or unknown) streams.
    #[test]
    fn a_legacy_synchronization_covers_blocking_streams_only() {
        let mut b = Busy::default();
        b.stream_created(0x20, false);
        b.stream_created(0x30, true);
        b.work(1_000, 0x20);
        b.work(1_100, 0x30);
        b.work(1_200, 0);
        b.sync(2_000, Some(0));
        assert!(b.open_stretch(), "0x30 is non-blocking: not proven");
        assert_eq!(b.open.iter().map(|o| o.0).collect::<Vec<_>>(), [0x30]);
        b.sync(3_000, Some(0x30));
        assert_eq!((b.busy_total_ns(), b.open_stretch()), (2_000, false));
        // work on a blocking stream after the legacy stream's last work is not covered
        b.work(4_000, 0);
        b.work(4_100, 0x20);
        b.sync(5_000, Some(0));
        assert!(b.open_stretch());
        // a stream whose creation was not seen: not covered either
        b.sync(5_500, None);
        b.work(6_000, 0x99);
        b.work(6_100, 0);
        b.sync(7_000, Some(0));
        assert!(b.open_stretch());
    }

    /// A process that never synchronizes (the reported case: 108,001
    /// launches, busy and idle 0): possibly busy from its first launch to
    /// the latest instant seen, no certain idle time.
    #[test]
    fn a_process_that_never_synchronizes_is_possibly_busy() {
        let mut b = Busy::default();
        for i in 0..1000u64 {
            b.work(1_000 + i * 10_000, 0);
            b.seen(1_000 + i * 10_000 + 4_000);
        }
        assert_eq!((b.busy_total_ns(), b.idle_ns, b.gaps()), (9_994_000, 0, 0));
        assert!(b.open_stretch());
        // it only grows: a later synchronization closes the stretch at its return
        b.sync(20_000_000, None);
        assert_eq!((b.busy_total_ns(), b.open_stretch()), (19_999_000, false));
    }

    #[test]
    fn an_event_proves_the_work_before_its_record_only() {
        let mut b = Busy::default();
        b.work(1_000, 0x10);
        b.event_record(0xe, 0x10);
        b.work(2_000, 0x10);
        b.event_done(5_000, 0xe);
        assert!(b.open_stretch(), "work after the record is not proven");
        b.event_record(0xe, 0x10);
        b.event_done(9_000, 0xe);
        assert_eq!((b.busy_total_ns(), b.open_stretch()), (8_000, false));
    }
}
