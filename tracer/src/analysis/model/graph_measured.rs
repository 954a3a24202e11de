//! Measured kernels of graph launches (`gpu` lines with `graph_id` and
//! `graph_node_id`, CUPTI's ids) tied to the graph nodes and launches the
//! model expanded (model/graphs.rs).
//!
//! CUPTI gives every kernel a graph launch ran the correlation id of that
//! `cuGraphLaunch`, the graph's id and the node's id; the trace's launch
//! and node calls carry CUgraphExec and CUgraphNode handles instead, and
//! nothing in the trace maps one to the other. So, per process:
//! - the records of one launch are those sharing a correlation id, and the
//!   launches are taken in correlation id order (CUPTI numbers API calls in
//!   call order);
//! - the k-th distinct graph id is the k-th distinct exec launched (each
//!   exec keeps the id its first measured launch had), and the n-th
//!   measured launch of a graph id is the n-th expanded launch of its exec;
//! - within a launch, the records in graph node id order are the exec's
//!   kernel nodes in node order (CUPTI numbers nodes as they are created,
//!   which is the order the trace recorded them); a record is tied only
//!   when its kernel name is the node's.
//!
//! Records that cannot be tied (no expanded launch left for them, another
//! kernel at that place, more records than kernel nodes) are counted, not
//! dropped silently.
use std::collections::{BTreeMap, HashMap, VecDeque};

use super::records::{GpuOpKind, Kind};
use super::trace::Trace;

/// The ties and what could not be tied.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GraphKernelTies {
    /// (index in `Trace::gpu`, index in `Trace::calls` of the node's
    /// call, index in `Trace::calls` of its expanded launch).
    pub ties: Vec<(usize, usize, usize)>,
    /// Measured kernel records with a graph id.
    pub records: u64,
    /// Kernel nodes of the expanded launches.
    pub kernel_nodes: u64,
}

impl GraphKernelTies {
    /// The report's sentence (None without measured graph kernels).
    pub fn sentence(&self) -> Option<String> {
        if self.records == 0 {
            return None;
        }
        Some(format!(
            "CUDA graphs: {} of {} measured graph kernels tied to their node and launch by CUPTI's graph, node and correlation ids ({} kernel nodes ran in the expanded launches)",
            self.ties.len(),
            self.records,
            self.kernel_nodes
        ))
    }
}

/// An expanded launch: its call, its exec and its kernel nodes' calls in node order.
struct Launch {
    call: usize,
    exec: u64,
    kernels: Vec<usize>,
}

/// Ties the measured graph kernels of `t` (see the module doc).
pub fn tie_by_ids(t: &Trace) -> GraphKernelTies {
    let mut out = GraphKernelTies::default();
    // pid -> correlation id -> (graph id, record indices)
    let mut measured: HashMap<u32, BTreeMap<u64, (u64, Vec<usize>)>> = HashMap::new();
    for (i, g) in t.gpu.iter().enumerate() {
        if g.kind == GpuOpKind::Kernel && g.graph_id != 0 {
            out.records += 1;
            let e = measured
                .entry(g.pid)
                .or_default()
                .entry(g.correlation_id)
                .or_insert((u64::from(g.graph_id), Vec::new()));
            e.1.push(i);
        }
    }
    // pid -> exec -> its expanded launches in call order; pid -> execs in first-launch order
    let mut launches: HashMap<u32, HashMap<u64, VecDeque<Launch>>> = HashMap::new();
    let mut exec_order: HashMap<u32, Vec<u64>> = HashMap::new();
    // The expanded launch whose nodes follow (they come right after it).
    let mut current: Option<(u32, u64)> = None;
    for (i, c) in t.calls.iter().enumerate() {
        if c.from_graph() {
            if c.kind == Kind::Launch {
                out.kernel_nodes += 1;
                let l = current.and_then(|(pid, exec)| launches.get_mut(&pid)?.get_mut(&exec)?.back_mut());
                if let Some(l) = l {
                    l.kernels.push(i);
                }
            }
        } else if c.expanded() {
            let per = launches.entry(c.pid).or_default();
            if !per.contains_key(&c.obj) {
                exec_order.entry(c.pid).or_default().push(c.obj);
            }
            per.entry(c.obj).or_default().push_back(Launch { call: i, exec: c.obj, kernels: Vec::new() });
            current = Some((c.pid, c.obj));
        } else {
            current = None;
        }
    }
    for (pid, by_corr) in &measured {
        let Some(per) = launches.get_mut(pid) else { continue };
        let order = exec_order.remove(pid).unwrap_or_default();
        let mut exec_of: HashMap<u64, u64> = HashMap::new();
        let mut next_exec = order.into_iter();
        for (graph_id, records) in by_corr.values() {
            let exec = match exec_of.get(graph_id) {
                Some(&e) => e,
                None => {
                    let Some(e) = next_exec.next() else { continue };
                    exec_of.insert(*graph_id, e);
                    e
                }
            };
            let Some(l) = per.get_mut(&exec).and_then(VecDeque::pop_front) else { continue };
            debug_assert_eq!(l.exec, exec);
            let mut recs = records.clone();
            recs.sort_by_key(|&r| (t.gpu[r].graph_node_id, t.gpu[r].start));
            for (&r, &node) in recs.iter().zip(&l.kernels) {
                if t.gpu[r].name == t.calls[node].kernel {
                    out.ties.push((r, node, l.call));
                }
            }
        }
    }
    out.ties.sort_unstable();
    out
}

#[cfg(test)]
#[path = "graph_measured_tests.rs"]
mod tests;
