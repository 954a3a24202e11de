//! An explicit CUDA graph in the plan (cuGraphCreate + cuGraphAdd*Node +
//! cuGraphAddDependencies*): its nodes with their dependencies, and the
//! flattening an instantiation makes of it: the work nodes in dependency
//! (topological) order, child graphs inlined. Among the nodes ready at a
//! time, the one added first goes first (the order the analysis model
//! uses, tracer/src/analysis/model/graphs.rs). Pure.
use std::collections::{BTreeSet, HashMap};
use std::rc::Rc;

use super::graph_node::Node;

/// What a node does when its graph runs.
#[derive(Debug, Clone)]
pub(super) enum Step {
    /// A kernel, copy or set (or why it cannot be replayed).
    Work(Box<Node>),
    /// A child graph, as it was when the node was added (CUDA clones it then).
    Child(Rc<Vec<Node>>),
    /// Empty and event nodes: no work (their order is kept by the serialization).
    Pass,
}

#[derive(Debug, Clone)]
struct GraphNode {
    handle: u64,
    deps: Vec<u64>,
    step: Step,
}

#[derive(Debug, Clone, Default)]
pub(super) struct Explicit {
    nodes: Vec<GraphNode>,
}

impl Explicit {
    pub(super) fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    pub(super) fn add(&mut self, handle: u64, deps: Vec<u64>, step: Step) {
        self.nodes.push(GraphNode { handle, deps, step });
    }

    /// `from[i]` → `to[i]`; false if a `to` node is not in the graph.
    pub(super) fn add_dependencies(&mut self, from: &[u64], to: &[u64]) -> bool {
        for (f, t) in from.iter().zip(to) {
            match self.nodes.iter_mut().find(|n| n.handle == *t) {
                Some(n) => n.deps.push(*f),
                None => return false,
            }
        }
        true
    }

    pub(super) fn remove(&mut self, handle: u64) {
        self.nodes.retain(|n| n.handle != handle);
        for n in &mut self.nodes {
            n.deps.retain(|d| *d != handle);
        }
    }

    /// Replaces a node's work (cuGraph*NodeSetParams); false if it is not a work node of this graph.
    pub(super) fn set(&mut self, handle: u64, node: Node) -> bool {
        match self.nodes.iter_mut().find(|n| n.handle == handle) {
            Some(n) if matches!(n.step, Step::Work(_)) => {
                n.step = Step::Work(Box::new(node));
                true
            }
            _ => false,
        }
    }

    /// The work nodes in dependency order, child graphs inlined (Kahn's
    /// order, insertion order among the ready ones), each with the work
    /// nodes it waits for (`Node::after`: through empty and event nodes; a
    /// child graph's nodes run one after the other, the first after the
    /// child node's dependencies). A cycle's nodes (an invalid graph) are
    /// left out.
    pub(super) fn flatten(&self) -> Vec<Node> {
        let index: HashMap<u64, usize> = self.nodes.iter().enumerate().map(|(i, n)| (n.handle, i)).collect();
        let n = self.nodes.len();
        let mut indeg = vec![0usize; n];
        let mut users: Vec<Vec<usize>> = vec![vec![]; n];
        for (i, node) in self.nodes.iter().enumerate() {
            for d in &node.deps {
                if let Some(&j) = index.get(d) {
                    indeg[i] += 1;
                    users[j].push(i);
                }
            }
        }
        let mut ready: BTreeSet<usize> = (0..n).filter(|&i| indeg[i] == 0).collect();
        let mut out: Vec<Node> = Vec::new();
        // Per graph node: the work nodes (indices in `out`) whose end is its end.
        let mut ends: Vec<Vec<usize>> = vec![vec![]; n];
        while let Some(i) = ready.pop_first() {
            let mut before: Vec<usize> =
                self.nodes[i].deps.iter().filter_map(|d| index.get(d)).flat_map(|&j| ends[j].iter().copied()).collect();
            before.sort_unstable();
            before.dedup();
            ends[i] = match &self.nodes[i].step {
                Step::Work(w) => {
                    out.push(Node { after: Some(before), ..(**w).clone() });
                    vec![out.len() - 1]
                }
                Step::Child(c) if !c.is_empty() => {
                    for (k, node) in c.iter().enumerate() {
                        let after = if k == 0 { before.clone() } else { vec![out.len() - 1] };
                        out.push(Node { after: Some(after), ..node.clone() });
                    }
                    vec![out.len() - 1]
                }
                Step::Child(_) | Step::Pass => before,
            };
            for &u in &users[i] {
                indeg[u] -= 1;
                if indeg[u] == 0 {
                    ready.insert(u);
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn work(h: u64) -> Step {
        Step::Work(Box::new(Node::test_node(h)))
    }

    #[test]
    fn dependency_order_with_children_and_updates() {
        let mut g = Explicit::default();
        // Added out of order: 3 waits for 2, 2 for the child, the child for 1.
        g.add(3, vec![2], work(3));
        g.add(1, vec![], work(1));
        g.add(9, vec![], Step::Pass);
        let child = Rc::new(vec![Node::test_node(20), Node::test_node(21)]);
        g.add(2, vec![], Step::Child(child));
        assert!(g.add_dependencies(&[1], &[2]));
        assert!(!g.add_dependencies(&[1], &[77]));
        let order = |g: &Explicit| g.flatten().iter().map(|n| n.handle).collect::<Vec<_>>();
        assert_eq!(order(&g), [1, 20, 21, 3]);
        // What each waits for: the child's first node waits for 1, its second for its first, 3 for the child's end.
        let after: Vec<Option<Vec<usize>>> = g.flatten().into_iter().map(|n| n.after).collect();
        assert_eq!(after, [Some(vec![]), Some(vec![0]), Some(vec![1]), Some(vec![2])]);
        // Through an empty node: 4 waits for the empty node 9, which waits for 1 and 3.
        let mut d = g.clone();
        d.add(4, vec![9], work(4));
        assert!(d.add_dependencies(&[1, 3], &[9, 9]));
        let flat = d.flatten();
        assert_eq!(flat.iter().map(|n| n.handle).collect::<Vec<_>>(), [1, 20, 21, 3, 4]);
        assert_eq!(flat[4].after, Some(vec![0, 3]));
        assert!(g.set(3, Node::test_node(33)));
        assert!(!g.set(2, Node::test_node(2)), "a child graph node is not a work node");
        assert_eq!(order(&g), [1, 20, 21, 33]);
        g.remove(1);
        // 2 has no dependency left: the child runs first, 3 after it.
        assert_eq!(order(&g), [20, 21, 33]);
        // A cycle leaves its nodes out.
        let mut c = Explicit::default();
        c.add(1, vec![2], work(1));
        c.add(2, vec![1], work(2));
        c.add(3, vec![], work(3));
        assert_eq!(order(&c), [3]);
    }
}
