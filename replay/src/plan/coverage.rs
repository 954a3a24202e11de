//! Share of the recorded launches (and copies/sets) replay re-executes, and
//! why each skipped one is skipped.

use std::collections::BTreeMap;

use serde::Serialize;

use super::types::Skipped;

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Coverage {
    /// Kernel launch lines (cuLaunchKernel, cuLaunchKernelEx, cuLaunchCooperativeKernel and variants).
    pub launches: usize,
    pub launches_by_api: BTreeMap<String, usize>,
    pub launches_replayed: usize,
    /// Reason -> launches skipped for it.
    pub skipped_by_reason: BTreeMap<String, usize>,
    /// Every skipped launch, in recorded order.
    pub skipped: Vec<Skipped>,
    /// cuGraphLaunch lines (plan/graphs.rs).
    pub graph_launches: usize,
    /// Graph launches whose work was planned (their exec's work, in dependency order on the launch's stream).
    pub graph_launches_expanded: usize,
    /// Of those, the ones whose every node is replayable: replay rebuilds their exec as a CUDA
    /// graph and launches it (exec/graph_execs.rs); the others run as separate launches.
    #[serde(skip_serializing_if = "is_zero")]
    pub graph_launches_rebuildable: usize,
    /// Distinct execs among the rebuildable launches.
    #[serde(skip_serializing_if = "is_zero")]
    pub graph_execs: usize,
    /// Reason -> graph launches not replayed for it (exec not built in the recording, a node kind not replayed, …).
    pub graph_launches_not_replayed: BTreeMap<String, usize>,
    /// Kernels of the expanded graph launches (each launch × its exec's captured kernels), and those replayed.
    pub graph_kernels: usize,
    pub graph_kernels_replayed: usize,
    /// Copies and sets of the expanded graph launches, and those replayed.
    pub graph_copies_sets: usize,
    pub graph_copies_sets_replayed: usize,
    /// Reason -> expanded graph kernels, copies and sets not replayed for it.
    pub graph_skipped_by_reason: BTreeMap<String, usize>,
    /// Launches, copies/sets and event records/waits made while a stream captured: recorded
    /// into a graph, not run then (they run in the graph launches that expand them).
    pub captured_launches: usize,
    pub captured_copies_sets: usize,
    pub captured_events: usize,
    pub copies: usize,
    pub copies_replayed: usize,
    /// H2D copies replayed with the recorded bytes / with a deterministic fill.
    pub h2d_with_data: usize,
    pub h2d_filled: usize,
    /// H2D/D2H copies whose host side was pageable memory when recorded
    /// (replay copies them from/to pageable memory too).
    pub host_pageable: usize,
    pub sets: usize,
    pub sets_replayed: usize,
    /// Copies, sets, attribute settings and synchronizations that are not replayed, with the reason.
    pub other_skipped: Vec<Skipped>,
    /// One rank of several (`replay --rank`): its collective launches, skipped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub collectives: Option<SkippedCollectives>,
}

/// The reason a selected rank's collective launches are skipped.
pub const COLLECTIVE: &str = "collective: needs its peer ranks";

/// The collective launches a selected rank skips: how many, and the first (what runs after it
/// reads memory the collective would have written: its outputs are not comparable).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct SkippedCollectives {
    pub launches: usize,
    pub first_line: usize,
    pub first_ts: u64,
}

impl Coverage {
    /// Kernels replayed among the kernels recorded as run: launch lines and the kernels of expanded graph launches.
    pub fn percent(&self) -> f64 {
        let all = self.launches + self.graph_kernels;
        if all == 0 { 0.0 } else { 100.0 * (self.launches_replayed + self.graph_kernels_replayed) as f64 / all as f64 }
    }

    pub(crate) fn collective_skipped(&mut self, line: usize, ts: u64) {
        let c = self.collectives.get_or_insert(SkippedCollectives { launches: 0, first_line: line, first_ts: ts });
        c.launches += 1;
    }

    pub(crate) fn skip_launch(&mut self, s: Skipped) {
        *self.skipped_by_reason.entry(s.reason.clone()).or_default() += 1;
        self.skipped.push(s);
    }

    /// Human-readable lines.
    pub fn text(&self, examples: usize) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        let apis: Vec<String> = self.launches_by_api.iter().map(|(k, v)| format!("{v} {k}")).collect();
        let _ = writeln!(
            s,
            "launches: {} ({}), replayed {} = {:.1} %",
            self.launches,
            if apis.is_empty() { "none".to_owned() } else { apis.join(" + ") },
            self.launches_replayed,
            self.percent()
        );
        for (reason, n) in &self.skipped_by_reason {
            let lines: Vec<String> = self
                .skipped
                .iter()
                .filter(|k| &k.reason == reason)
                .take(examples)
                .map(|k| k.line.to_string())
                .collect();
            let _ = writeln!(
                s,
                "  skipped {n}: {reason} (lines {}{})",
                lines.join(", "),
                if *n > examples { ", …" } else { "" }
            );
        }
        if self.graph_launches > 0 || self.captured_launches + self.captured_copies_sets + self.captured_events > 0 {
            self.graph_text(&mut s);
        }
        let _ = writeln!(
            s,
            "copies: {}, replayed {} (h2d with recorded bytes {}, with a deterministic fill {}; {} from/to pageable memory when recorded); sets: {}, replayed {}",
            self.copies,
            self.copies_replayed,
            self.h2d_with_data,
            self.h2d_filled,
            self.host_pageable,
            self.sets,
            self.sets_replayed
        );
        let mut other: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
        for o in &self.other_skipped {
            let e = other.entry(&o.reason).or_insert((0, o.line));
            e.0 += 1;
        }
        for (reason, (n, first)) in other {
            let _ = writeln!(s, "  not replayed {n}: {reason} (first at line {first})");
        }
        s
    }
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl Coverage {
    /// The graph lines of [`Coverage::text`].
    fn graph_text(&self, s: &mut String) {
        use std::fmt::Write;
        let _ = writeln!(
            s,
            "graph launches: {}, planned {} ({} kernels, replayed {}; {} copies/sets, replayed {}), not replayed {}",
            self.graph_launches,
            self.graph_launches_expanded,
            self.graph_kernels,
            self.graph_kernels_replayed,
            self.graph_copies_sets,
            self.graph_copies_sets_replayed,
            self.graph_launches - self.graph_launches_expanded
        );
        if self.graph_launches_expanded > 0 {
            let _ = writeln!(
                s,
                "  as rebuilt CUDA graphs {} ({} execs); as separate launches {} (a node not replayable)",
                self.graph_launches_rebuildable,
                self.graph_execs,
                self.graph_launches_expanded - self.graph_launches_rebuildable
            );
        }
        for (reason, n) in &self.graph_launches_not_replayed {
            let _ = writeln!(s, "  graph launches not replayed {n}: {reason}");
        }
        for (reason, n) in &self.graph_skipped_by_reason {
            let _ = writeln!(s, "  graph work not replayed {n}: {reason}");
        }
        let _ = writeln!(
            s,
            "captured into graphs (not run when captured): {} launches, {} copies/sets, {} event records/waits",
            self.captured_launches, self.captured_copies_sets, self.captured_events
        );
    }

    /// A note for reports whose recording captured host-to-device bytes
    /// (`--capture-data`) of copies from or to pageable memory: its recorded
    /// copy times carry the recorder's work beside them.
    pub fn capture_cost_note(&self) -> Option<String> {
        (self.h2d_with_data > 0 && self.host_pageable > 0).then(|| {
            format!(
                "the recording captured the bytes of {} host-to-device copies (--capture-data) and {} copies \
                 went from or to pageable memory: its recorded copy times carry the recorder's stops and reads \
                 beside them (on an H100, 4.7 MB pageable copies took 302-719 us on the GPU recorded so, \
                 267-489 us recorded with --gpu-timestamps alone); compare copy times with a recording of the \
                 same program made with --gpu-timestamps only (--copies-against FILE; docs/replay.md, \
                 \"What the recorder costs a copy\")",
                self.h2d_with_data, self.host_pageable
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::Coverage;

    #[test]
    fn capture_cost_note_only_with_captured_bytes_and_pageable_copies() {
        let mut c = Coverage { h2d_with_data: 148, host_pageable: 148, ..Coverage::default() };
        let n = c.capture_cost_note().unwrap();
        assert!(
            n.starts_with(
                "the recording captured the bytes of 148 host-to-device copies (--capture-data) and 148 copies"
            ),
            "{n}"
        );
        c.host_pageable = 0;
        assert_eq!(c.capture_cost_note(), None);
        c = Coverage { h2d_filled: 3, host_pageable: 3, ..Coverage::default() };
        assert_eq!(c.capture_cost_note(), None);
    }
}
