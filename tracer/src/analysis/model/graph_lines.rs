//! [`GraphLines`]: the graph lines a summary keeps, read into a model of
//! their own when the graph figures are asked for.
use std::collections::HashMap;

use serde_json::Value;

use super::builder::TraceBuilder;
use super::graph_records::GraphStats;
use super::records::{Kind, NO_STR};

/// Graph lines and captured calls of a trace read line by line (the
/// summary), expanded when the figures are asked for.
#[derive(Debug, Default)]
pub struct GraphLines {
    lines: Vec<Vec<u8>>,
}

impl GraphLines {
    pub fn push_bytes(&mut self, b: &[u8]) {
        self.lines.push(b.to_vec());
    }
    pub fn push_value(&mut self, v: &Value) {
        self.lines.push(serde_json::to_vec(v).unwrap_or_default());
    }
    /// The graph figures, and `kernels` (launches per kernel name) with
    /// the kernels the graph launches ran added.
    pub fn with_graph_kernels<'a>(
        &self,
        kernels: &'a HashMap<String, u64>,
    ) -> (GraphStats, std::borrow::Cow<'a, HashMap<String, u64>>) {
        if self.lines.is_empty() {
            return (GraphStats::default(), std::borrow::Cow::Borrowed(kernels));
        }
        let mut b = TraceBuilder::new("graphs");
        for (i, l) in self.lines.iter().enumerate() {
            // Lines the summary already read: an unreadable one was reported there.
            let _ = b.add_line(i as u64 + 1, l);
        }
        let t = b.finish();
        let mut k = kernels.clone();
        for c in t.calls.iter().filter(|c| c.from_graph() && c.kind == Kind::Launch && c.kernel != NO_STR) {
            *k.entry(t.name(c.kernel).to_string()).or_default() += 1;
        }
        (t.graphs, std::borrow::Cow::Owned(k))
    }
}
