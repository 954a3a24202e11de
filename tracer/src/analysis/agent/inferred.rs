//! The agent's inferred GPU timeline per process and GPU: the kernel
//! durations of the machine's durations library (docs/durations-library.md)
//! placed on the streams as the launches arrive, in constant memory.
//!
//! It is timeline.rs's queue model reduced to a stream's "free at" instant:
//! work submitted at a launch's (or copy's, set's) return starts when its
//! stream is free (the legacy stream `0x0` also waits for every other
//! stream, the others for the legacy stream) and runs for the library's
//! duration of its kernel and geometry (by name where the geometry is not
//! there; copies and sets by the library's copy model, else the default
//! one). Busy time is the union of that work as it arrives (a high-water
//! mark: work starting before it adds only what passes it), idle time the
//! gaps between, and a synchronization's return cuts what the model has
//! still running on the streams it proves complete. Work whose kernel the
//! library lacks is counted (`untimed`) and timed with [`UNTIMED_NS`]: the
//! basis stays `calibrated` only while most of the launches were timed
//! (snapshot.rs).
use super::busy::GAP_BUCKETS_S;
use crate::analysis::durations::Durations;
use crate::analysis::model::{Dir, Geom};

/// Streams kept per process; more are folded into one.
const MAX_STREAMS: usize = 64;

/// The duration given to a launch whose kernel the library does not have (ns).
pub const UNTIMED_NS: u64 = 2_000;

#[derive(Clone, Debug, Default)]
pub struct Inferred {
    /// (stream, the instant its last work ends in the model).
    free_at: Vec<(u64, u64)>,
    /// The end of the union of the work so far (0: no work yet).
    covered: u64,
    pub busy_ns: u64,
    pub idle_ns: u64,
    /// Idle-gap histogram as busy.rs's (counts per bucket, the last +Inf).
    pub gap_counts: [u64; 8],
    /// Launches timed from the library, and those it lacked.
    pub timed: u64,
    pub untimed: u64,
}

/// What is submitted: a kernel (name, geometry) or a copy/set (direction, bytes).
pub enum Work<'a> {
    Kernel(&'a str, Option<&'a Geom>),
    Copy(Option<Dir>, u64),
}

impl Inferred {
    /// Work submitted on `stream`, the submitting call returning at `submit`.
    pub fn work(&mut self, d: &Durations, submit: u64, stream: u64, w: Work<'_>) {
        let dur = match w {
            Work::Kernel(name, g) => match d.kernel(name, g) {
                Some((ns, _)) => {
                    self.timed += 1;
                    ns
                }
                None => {
                    self.untimed += 1;
                    UNTIMED_NS
                }
            },
            Work::Copy(dir, bytes) => d.copy(dir, bytes).0,
        };
        let stream = if self.free_at.len() >= MAX_STREAMS && !self.free_at.iter().any(|s| s.0 == stream) {
            u64::MAX
        } else {
            stream
        };
        let mut start = submit;
        for &(s, f) in &self.free_at {
            if s == stream || stream == 0 || s == 0 {
                start = start.max(f);
            }
        }
        let end = start + dur;
        match self.free_at.iter_mut().find(|s| s.0 == stream) {
            Some(s) => s.1 = end,
            None => self.free_at.push((stream, end)),
        }
        if self.covered == 0 || start >= self.covered {
            if self.covered > 0 && start > self.covered {
                self.gap(start - self.covered);
            }
            self.busy_ns += dur;
            self.covered = end;
        } else if end > self.covered {
            self.busy_ns += end - self.covered;
            self.covered = end;
        }
    }

    /// A synchronization returning at `exit` proves `stream`'s work (None:
    /// every stream's) complete: the model's work on it ends by then.
    pub fn sync(&mut self, exit: u64, stream: Option<u64>) {
        for s in &mut self.free_at {
            if stream.is_none_or(|x| x == s.0 || x == 0) {
                s.1 = s.1.min(exit);
            }
        }
        let still = self.free_at.iter().map(|s| s.1).max().unwrap_or(0);
        let cut = exit.max(still);
        if self.covered > cut {
            self.busy_ns = self.busy_ns.saturating_sub(self.covered - cut);
            self.covered = cut;
        }
    }

    fn gap(&mut self, ns: u64) {
        self.idle_ns += ns;
        let s = ns as f64 / 1e9;
        let i = GAP_BUCKETS_S.iter().position(|&b| s <= b).unwrap_or(GAP_BUCKETS_S.len());
        self.gap_counts[i] += 1;
    }

    /// Whether the figures can stand for the process: most of its launches timed from the library.
    pub fn covers(&self) -> bool {
        self.timed > 0 && self.timed >= 9 * self.untimed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::durations_file::{DurationsFile, FORMAT, KernelEntry};

    fn lib() -> Durations {
        let k = |name: &str, grid: u32, ns: u64| KernelEntry {
            kernel: name.into(),
            grid: [grid, 1, 1],
            block: [128, 1, 1],
            shared_mem: 0,
            count: 10,
            median_ns: ns,
            p10_ns: ns,
            p90_ns: ns,
        };
        Durations::new(DurationsFile {
            format: FORMAT.into(),
            version: 1,
            source: "durations library".into(),
            gpu: Some("NVIDIA H200".into()),
            kernels: vec![k("kA", 1, 10_000), k("kA", 2, 30_000), k("kB", 1, 5_000)],
            copies: vec![],
        })
    }

    fn g(grid: u32) -> Geom {
        Geom { grid: [grid, 1, 1], block: [128, 1, 1], shared_mem: 0 }
    }

    #[test]
    fn launches_queue_on_their_stream_and_gaps_are_idle() {
        let d = lib();
        let mut m = Inferred::default();
        // kA (10 µs) at 0, kA grid 2 (30 µs) queued behind it at 5 µs, kB (5 µs) at 100 µs
        m.work(&d, 1_000, 0, Work::Kernel("kA", Some(&g(1))));
        m.work(&d, 5_000, 0, Work::Kernel("kA", Some(&g(2))));
        m.work(&d, 100_000, 0, Work::Kernel("kB", Some(&g(1))));
        // busy 10 + 30 + 5 µs; idle from 41 µs to 100 µs
        assert_eq!((m.busy_ns, m.idle_ns, m.timed, m.untimed), (45_000, 59_000, 3, 0));
        assert_eq!(m.gap_counts, [0, 1, 0, 0, 0, 0, 0, 0]); // 59 µs: (10 µs, 100 µs]
        // a kernel the library lacks: 2 µs, counted
        m.work(&d, 200_000, 0, Work::Kernel("kZ", None));
        assert_eq!((m.busy_ns, m.untimed), (47_000, 1));
    }

    #[test]
    fn a_synchronization_cuts_what_the_model_still_runs() {
        let d = lib();
        let mut m = Inferred::default();
        // two 30 µs kernels on stream 5 at 0: the model runs them to 60 µs
        m.work(&d, 0, 5, Work::Kernel("kA", Some(&g(2))));
        m.work(&d, 1, 5, Work::Kernel("kA", Some(&g(2))));
        assert_eq!(m.busy_ns, 60_000);
        // the program's synchronization of stream 5 returned at 40 µs: the work was done by then
        m.sync(40_000, Some(5));
        assert_eq!(m.busy_ns, 40_000);
        // another stream's work overlapping it adds only what passes the union
        m.work(&d, 20_000, 6, Work::Kernel("kB", Some(&g(1))));
        assert_eq!(m.busy_ns, 40_000);
        m.work(&d, 38_000, 6, Work::Kernel("kA", Some(&g(1))));
        // stream 6 free at 25 µs; kA from 38 µs to 48 µs: 8 µs past 40
        assert_eq!((m.busy_ns, m.idle_ns), (48_000, 0));
        // the legacy stream waits for stream 6
        m.work(&d, 41_000, 0, Work::Kernel("kB", Some(&g(1))));
        assert_eq!(m.busy_ns, 53_000);
        // a context synchronization at 50 µs cuts everything to it
        m.sync(50_000, None);
        assert_eq!(m.busy_ns, 50_000);
    }

    #[test]
    fn mostly_untimed_is_not_a_basis() {
        let d = lib();
        let mut m = Inferred::default();
        m.work(&d, 0, 0, Work::Kernel("kA", Some(&g(1))));
        for i in 0..9 {
            m.work(&d, 100_000 * (i + 1), 0, Work::Kernel("kZ", None));
        }
        assert!(!m.covers(), "1 of 10 timed");
        assert!(!Inferred::default().covers());
        let mut m = Inferred::default();
        for i in 0..9 {
            m.work(&d, 100_000 * i, 0, Work::Kernel("kB", Some(&g(1))));
        }
        m.work(&d, 1_000_000, 0, Work::Kernel("kZ", None));
        assert!(m.covers(), "9 of 10 timed");
    }
}
