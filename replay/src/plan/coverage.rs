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
    /// cuGraphLaunch lines (graph contents are not recorded: not replayed).
    pub graph_launches: usize,
    pub copies: usize,
    pub copies_replayed: usize,
    /// H2D copies replayed with the recorded bytes / with a deterministic fill.
    pub h2d_with_data: usize,
    pub h2d_filled: usize,
    /// H2D/D2H copies whose host side was pageable memory when recorded
    /// (replay uses pinned buffers: those copies run faster than recorded).
    pub host_pageable: usize,
    pub sets: usize,
    pub sets_replayed: usize,
    /// Copies, sets, attribute settings and synchronizations that are not replayed, with the reason.
    pub other_skipped: Vec<Skipped>,
}

impl Coverage {
    pub fn percent(&self) -> f64 {
        if self.launches == 0 { 0.0 } else { 100.0 * self.launches_replayed as f64 / self.launches as f64 }
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
        if self.graph_launches > 0 {
            let _ =
                writeln!(s, "graph launches: {} (not replayed: graph contents are not recorded)", self.graph_launches);
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
