//! The CUDA-graph records of the model (model/graphs.rs builds them): the
//! graph lines and captured calls a builder keeps, an exec's nodes, and the
//! figures of the expansion.
use serde::Serialize;
use serde_json::Value;

use super::records::{Dir, Kind};

/// One `type: "graph"` line, kept whole (graph lines are rare).
#[derive(Clone, Debug)]
pub struct GraphLine {
    pub ts: u64,
    pub pid: u32,
    pub tid: u32,
    pub v: Value,
}

/// A captured call (its `capture` id), by when and who.
#[derive(Clone, Copy, Debug)]
pub struct CapturedAt {
    pub ts: u64,
    pub pid: u32,
    pub tid: u32,
    pub capture: u64,
}

/// What the graph analysis found (report notes, `summary`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct GraphStats {
    /// Graphs built (created, captured or cloned).
    pub graphs: u64,
    /// Executable graphs instantiated.
    pub execs: u64,
    /// `cuGraphLaunch` calls.
    pub launches: u64,
    /// Launches expanded into their nodes.
    pub expanded_launches: u64,
    /// Launches of an exec whose construction is not in the trace.
    pub opaque_launches: u64,
    /// Kernels, copies and sets run by the expanded launches.
    pub kernels_run: u64,
    pub copies_run: u64,
    pub sets_run: u64,
    /// Launches, copies, sets and event calls recorded by stream capture.
    pub captured_calls: u64,
    /// Stream captures ended.
    pub captures: u64,
    /// Dependencies the recording could not copy (`deps_cut`): the
    /// topology of those graphs is incomplete.
    pub deps_cut: u64,
}

/// A node of an executable graph, flattened (child graphs inlined), in
/// dependency order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExecNode {
    pub node: u64,
    pub kind: Kind,
    pub kernel: u32,
    pub geom: u32,
    pub size: u64,
    pub dir: Dir,
    /// Indexes of the exec nodes this one waits for.
    pub deps: Vec<usize>,
    /// `--replayable`: a kernel node's parameter bytes (hex) as of the launch.
    pub params: Option<std::sync::Arc<str>>,
}
