//! When the sampler reads a GPU's energy counter. The query costs milliseconds of CPU in the
//! kernel (2.9 ms median on an H100, 3.8 ms a round on the H200: the driver waits on the GPU's
//! firmware), while the counter itself changes only about every 100 ms (docs/power.md). Read at
//! every 10 ms round it cost the recording about 40 % of a CPU for values that repeat nine times
//! in ten. So the counter is read at every round until its update period is known (three
//! changes), then only from one round before its next update is due (less a margin of 5 % of
//! the period for its jitter) until the update is seen: an update is still placed at the first
//! round after it, as when every round read it, at two or three reads a period. A counter that
//! changes at every round, or stops changing, is read at every round.
use std::collections::VecDeque;

/// Change instants kept for the period's median.
const KEEP: usize = 9;

#[derive(Debug, Clone, Default)]
pub struct EnergyPacer {
    value: Option<u64>,
    /// When the counter was seen to change (ns), oldest first.
    changes: VecDeque<u64>,
}

impl EnergyPacer {
    /// The counter's update period: the median of the intervals between the changes seen
    /// (None before three changes).
    pub fn period_ns(&self) -> Option<u64> {
        if self.changes.len() < 3 {
            return None;
        }
        let mut d: Vec<u64> = self.changes.iter().zip(self.changes.iter().skip(1)).map(|(a, b)| b - a).collect();
        d.sort_unstable();
        Some(d[(d.len() - 1) / 2])
    }

    /// Whether the round at `now` (rounds every `interval_ns`) reads the counter.
    pub fn due(&self, now: u64, interval_ns: u64) -> bool {
        let (Some(period), Some(&last)) = (self.period_ns(), self.changes.back()) else { return true };
        now + interval_ns + period / 20 >= last + period
    }

    /// A reading of the counter at `ts` (None: NVML gave none).
    pub fn saw(&mut self, ts: u64, value: Option<u64>) {
        let Some(v) = value else { return };
        if let Some(old) = self.value
            && old != v
        {
            if self.changes.len() == KEEP {
                self.changes.pop_front();
            }
            self.changes.push_back(ts);
        }
        self.value = Some(v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    /// A counter that changes at `offset + k * period` (ms), sampled every 10 ms: the rounds
    /// that read it and the instant each change was first seen.
    fn run(period: u64, offset: u64, until: u64) -> (Vec<u64>, Vec<u64>) {
        let mut p = EnergyPacer::default();
        let (mut reads, mut seen) = (vec![], vec![]);
        let mut last = None;
        for now in (0..until).step_by(10) {
            if !p.due(now * MS, 10 * MS) {
                continue;
            }
            reads.push(now);
            let v = if now < offset { 0 } else { 1 + (now - offset) / period };
            if last.is_some_and(|l| l != v) {
                seen.push(now);
            }
            last = Some(v);
            p.saw(now * MS, Some(v));
        }
        (reads, seen)
    }

    #[test]
    fn the_counter_is_read_around_its_updates_only_and_every_update_is_seen_at_once() {
        // updates every 100 ms, at 5, 105, 205, … ms
        let (reads, seen) = run(100, 5, 1000);
        // learning: every round until three changes (at 10, 110, 210 ms); then from one round
        // before the next is due (less 5 ms) until it is seen
        let mut want: Vec<u64> = (0..=210).step_by(10).collect();
        for k in 3..10 {
            want.extend([k * 100, k * 100 + 10]);
        }
        assert_eq!(reads, want);
        // every update seen in the first round after it, as if every round read the counter
        assert_eq!(seen, (0..10).map(|k| k * 100 + 10).collect::<Vec<u64>>());
        // 22 reads in learning, then 2 a period instead of 10
        assert_eq!(reads.len(), 22 + 7 * 2);
    }

    #[test]
    fn a_counter_that_changes_every_round_or_never_is_read_every_round() {
        let (reads, seen) = run(10, 0, 300);
        assert_eq!(reads.len(), 30);
        assert_eq!(seen.len(), 29);
        let (reads, seen) = run(1_000_000, 1_000_000, 300);
        assert_eq!((reads.len(), seen.len()), (30, 0));
    }

    #[test]
    fn no_reading_changes_nothing() {
        let mut p = EnergyPacer::default();
        for (t, v) in [(0, Some(1)), (10, None), (20, Some(2)), (30, None), (40, Some(3)), (60, Some(4))] {
            p.saw(t, v);
        }
        assert_eq!(p.period_ns(), Some(20));
    }
}
