//! One piece of CUDA graph work in the plan, shared by the graphs
//! (graphs.rs), their node lines (graph_nodes.rs) and the explicit graph
//! structure (graphs_explicit.rs).

use super::types::OpKind;

/// One piece of graph work: what replay runs for it, or why it cannot.
#[derive(Debug, Clone)]
pub(super) struct Node {
    /// The graph node (0 for captured work: its node handle is not recorded).
    pub(super) handle: u64,
    /// The line that gave its parameters (the captured call, or the node's add / set-params line).
    pub(super) line: usize,
    pub(super) name: String,
    pub(super) kernel: Option<String>,
    pub(super) is_kernel: bool,
    pub(super) work: std::result::Result<OpKind, String>,
    /// In a graph's work list (a capture's, or an instantiated explicit graph's): the nodes
    /// (indices in that list) this one waits for; None: the one before it.
    pub(super) after: Option<Vec<usize>>,
}

#[cfg(test)]
impl Node {
    pub(super) fn test_node(handle: u64) -> Node {
        Node {
            handle,
            line: 0,
            name: String::new(),
            kernel: None,
            is_kernel: false,
            work: Err(String::new()),
            after: None,
        }
    }
}
