//! The node lines of explicit CUDA graphs in the plan (see graphs.rs):
//! `cuGraphAdd*Node*`, `cuGraph(Exec)*SetParams*`,
//! `cuGraphAddDependencies*` and `cuGraphDestroyNode` change a graph's
//! [`Explicit`] structure or an exec's work; kernel nodes are planned like a
//! launch from the node line's parameter bytes, memset nodes like a memset
//! (2-D ones with their pitch), one-row memcpy nodes like a copy; a clone's
//! nodes are known through `cuGraphNodeFindInClone`; any other change makes
//! the graph's launches not replayed, with the reason.
use std::rc::Rc;

use anyhow::Result;

use super::graph_node::Node;
use super::graphs::Contents;
use super::graphs_explicit::Step;
use super::{Builder, Copy, Direction, LaunchApi, OpKind, Rows, Set};
use crate::recording::Call;

impl<'a> Builder<'a> {
    /// The graph that holds node `node` (added in the recording).
    fn owner(&self, pid: u32, node: Option<u64>) -> Option<u64> {
        node.and_then(|nd| self.graphs.nodes.get(&(pid, nd)).copied())
    }

    /// A graph changed in a way that is not replayed: its launches will say why. Without a known
    /// owner (a captured graph's node, whose handles are not recorded, or a clone's node not named by
    /// cuGraphNodeFindInClone), every graph of the pid built so far.
    fn spoil(&mut self, pid: u32, owner: Option<u64>, why: String) {
        match owner {
            Some(h) => {
                self.graphs.graphs.insert((pid, h), Contents::Opaque(why));
            }
            None => {
                for ((p, _), v) in self.graphs.graphs.iter_mut() {
                    if *p == pid && matches!(v, Contents::Nodes(_) | Contents::Explicit(_)) {
                        *v = Contents::Opaque(why.clone());
                    }
                }
            }
        }
    }

    /// cuGraphAdd*Node: a node of an explicit graph (a node added to a captured graph: not replayed).
    pub(super) fn add_node(&mut self, c: &Call, n: &str, graph: Option<u64>) -> Result<()> {
        let (Some(h), Some(node)) = (graph, c.addr_field("node")) else { return Ok(()) };
        let pid = c.pid;
        self.graphs.nodes.insert((pid, node), h);
        let explicit = match self.graphs.graphs.get(&(pid, h)) {
            Some(Contents::Explicit(e)) => e.clone(),
            Some(Contents::Opaque(_)) => return Ok(()),
            Some(Contents::Nodes(_)) => {
                let why = format!(
                    "node added to a captured graph by {n} (line {}): captured nodes have no recorded handles",
                    c.line
                );
                self.graphs.graphs.insert((pid, h), Contents::Opaque(why));
                return Ok(());
            }
            None => {
                let why = format!("node added by {n} (line {}) to a graph not built in the recording", c.line);
                self.graphs.graphs.insert((pid, h), Contents::Opaque(why));
                return Ok(());
            }
        };
        if let Some(cut) = c.u64_field("deps_cut").filter(|&k| k > 0) {
            let why = format!("{n} (line {}): {cut} dependencies not recorded (more than 14)", c.line);
            self.graphs.graphs.insert((pid, h), Contents::Opaque(why));
            return Ok(());
        }
        let step = match c.str_field("node_type") {
            Some("graph") => {
                let child = c.addr_field("child_graph").and_then(|g| self.graphs.graphs.get(&(pid, g)));
                let why = match child.map(Contents::instantiated) {
                    Some(Contents::Nodes(nodes)) => Ok(Step::Child(nodes)),
                    Some(Contents::Opaque(why)) => Err(format!("child graph added at line {}: {why}", c.line)),
                    _ => Err(format!("child graph added at line {} was not built in the recording", c.line)),
                };
                match why {
                    Ok(step) => step,
                    Err(why) => {
                        self.graphs.graphs.insert((pid, h), Contents::Opaque(why));
                        return Ok(());
                    }
                }
            }
            Some("empty" | "event_record" | "event_wait") => Step::Pass,
            _ => match self.node_work(c, node)? {
                Some(w) => Step::Work(Box::new(w)),
                None => {
                    let what = c.str_field("node_type").unwrap_or("unknown");
                    let why = format!("{what} node added by {n} (line {}): this node kind is not replayed", c.line);
                    self.graphs.graphs.insert((pid, h), Contents::Opaque(why));
                    return Ok(());
                }
            },
        };
        let deps = c.field("deps").and_then(|d| d.as_array()).map_or(vec![], |a| {
            a.iter()
                .filter_map(crate::recording::trace::as_addr)
                .map(|d| self.graphs.node(pid, d))
                .collect::<Vec<u64>>()
        });
        let mut e = Rc::unwrap_or_clone(explicit);
        e.add(node, deps, step);
        self.graphs.graphs.insert((pid, h), Contents::Explicit(Rc::new(e)));
        Ok(())
    }

    /// The work of a kernel or memset node line (add or set-params), None for other node kinds.
    fn node_work(&mut self, c: &Call, handle: u64) -> Result<Option<Node>> {
        let work = match c.str_field("node_type") {
            Some("kernel") => self.aside(c, true, |b| b.launch(c, LaunchApi::Kernel))?,
            Some("memset") => memset_node(c),
            Some("memcpy") => self.memcpy_node(c),
            _ => return Ok(None),
        };
        Ok(Some(Node {
            handle,
            line: c.line,
            name: c.name.clone(),
            kernel: c.str_field("kernel").map(str::to_owned),
            is_kernel: c.str_field("node_type") == Some("kernel"),
            work,
            after: None,
        }))
    }

    /// cuGraphKernelNodeSetParams* / cuGraphNodeSetParams: the node's new work in its graph.
    pub(super) fn set_params(&mut self, c: &Call, n: &str) -> Result<()> {
        let node = c.addr_field("node");
        let owner = self.owner(c.pid, node);
        let why = format!("graph node changed by {n} (line {}): the change is not replayed", c.line);
        let explicit = owner.and_then(|h| match self.graphs.graphs.get(&(c.pid, h)) {
            Some(Contents::Explicit(e)) => Some((h, e.clone())),
            _ => None,
        });
        let (Some(nd), Some((h, e))) = (node, explicit) else {
            if !owner.is_some_and(|h| matches!(self.graphs.graphs.get(&(c.pid, h)), Some(Contents::Opaque(_)))) {
                self.spoil(c.pid, owner, why);
            }
            return Ok(());
        };
        let nd = self.graphs.node(c.pid, nd);
        let mut e = Rc::unwrap_or_clone(e);
        let done = match self.node_work(c, nd)? {
            Some(w) => e.set(nd, w),
            None => false,
        };
        let contents = if done { Contents::Explicit(Rc::new(e)) } else { Contents::Opaque(why) };
        self.graphs.graphs.insert((c.pid, h), contents);
        Ok(())
    }

    /// cuGraphExec*NodeSetParams*: the node's new work in the exec.
    pub(super) fn exec_set_params(&mut self, c: &Call, n: &str) -> Result<()> {
        let Some(e) = c.addr_field("graph_exec") else { return Ok(()) };
        let why = format!("exec node changed by {n} (line {}): the change is not replayed", c.line);
        let node = c.addr_field("node").map(|nd| self.graphs.node(c.pid, nd));
        let nodes = match (self.graphs.execs.get(&(c.pid, e)), node) {
            (Some(Contents::Nodes(x)), Some(nd)) if nd != 0 && x.iter().any(|w| w.handle == nd) => (x.clone(), nd),
            (Some(Contents::Opaque(_)), _) => return Ok(()),
            _ => {
                self.graphs.execs.insert((c.pid, e), Contents::Opaque(why));
                return Ok(());
            }
        };
        let (x, nd) = nodes;
        let contents = match self.node_work(c, nd)? {
            Some(w) => {
                let mut x = Rc::unwrap_or_clone(x);
                for old in x.iter_mut().filter(|o| o.handle == nd) {
                    // The node's place in the exec's graph stays.
                    *old = Node { after: old.after.take(), ..w.clone() };
                }
                Contents::Nodes(Rc::new(x))
            }
            None => Contents::Opaque(why),
        };
        self.graphs.execs.insert((c.pid, e), contents);
        Ok(())
    }

    /// cuGraphAddDependencies* / cuGraphDestroyNode.
    pub(super) fn change_edges(&mut self, c: &Call, n: &str, graph: Option<u64>) {
        let pid = c.pid;
        let owner = graph.or_else(|| self.owner(pid, c.addr_field("node")));
        let why = format!("graph node changed by {n} (line {}): the change is not replayed", c.line);
        let Some(Contents::Explicit(e)) = owner.and_then(|h| self.graphs.graphs.get(&(pid, h))) else {
            if !owner.is_some_and(|h| matches!(self.graphs.graphs.get(&(pid, h)), Some(Contents::Opaque(_)))) {
                self.spoil(pid, owner, why);
            }
            return;
        };
        let mut e = (**e).clone();
        let ok = if n == "cuGraphDestroyNode" {
            c.addr_field("node").map(|nd| e.remove(self.graphs.node(pid, nd))).is_some()
        } else {
            let list = |k: &str| {
                c.field(k).and_then(|d| d.as_array()).map_or(vec![], |a| {
                    a.iter()
                        .filter_map(crate::recording::trace::as_addr)
                        .map(|d| self.graphs.node(pid, d))
                        .collect::<Vec<u64>>()
                })
            };
            c.u64_field("deps_cut").unwrap_or(0) == 0 && e.add_dependencies(&list("from"), &list("to"))
        };
        let h = owner.expect("checked above");
        let contents = if ok { Contents::Explicit(Rc::new(e)) } else { Contents::Opaque(why) };
        self.graphs.graphs.insert((pid, h), contents);
    }
}

impl Builder<'_> {
    /// A memcpy node of one row (height and depth 1) as an async copy on the launch's stream;
    /// the source of a host-to-device copy is a deterministic fill (its bytes at launch time
    /// were not recorded).
    fn memcpy_node(&self, c: &Call) -> std::result::Result<OpKind, String> {
        let f = |k: &str| c.u64_field(k);
        let (Some(dst), Some(src), Some(width)) = (c.addr_field("dst"), c.addr_field("src"), f("width")) else {
            return Err("memcpy node parameters not recorded".into());
        };
        if f("height") != Some(1) || f("depth") != Some(1) {
            return Err("2D/3D memcpy node: not replayed".into());
        }
        let Some(direction) = c.str_field("direction").and_then(Direction::parse) else {
            let what = c.str_field("direction").unwrap_or("unknown");
            return Err(format!("memcpy node direction {what} not replayed"));
        };
        let (dst, src) =
            (dst.wrapping_add(f("dst_offset").unwrap_or(0)), src.wrapping_add(f("src_offset").unwrap_or(0)));
        let host_pinned = self.host_pinned(c.pid, direction, dst, src);
        let (data, data_error) = (None, None);
        Ok(OpKind::Copy(Copy { direction, dst, src, size: width, is_async: true, data, data_error, host_pinned }))
    }
}

/// A memset node as a memset on the launch's stream (height > 1: a 2-D memset with its pitch).
fn memset_node(c: &Call) -> std::result::Result<OpKind, String> {
    // memsetParams (cuGraphAddMemsetNode), else the line's own fields (also cuGraphAddNode's).
    let p = c.arg("memsetParams").filter(|p| p.is_object());
    let top = |k: &str| c.field(k).and_then(crate::recording::trace::as_addr);
    let get =
        |k: &str, line_key: &str| p.and_then(|p| p.get(k)).and_then(crate::recording::trace::as_addr).or(top(line_key));
    let (Some(dst), Some(value), Some(elem), Some(width)) =
        (get("dst", "dst"), get("value", "value"), get("elementSize", "element_size"), get("width", "width"))
    else {
        return Err("memset node parameters not recorded".into());
    };
    let height = get("height", "height").unwrap_or(1);
    let rows = match (height > 1, get("pitch", "pitch")) {
        (false, _) => None,
        (true, Some(pitch)) => Some(Rows { pitch, height }),
        (true, None) => return Err("2D memset node without its pitch (recorded before tracer read it)".into()),
    };
    if !matches!(elem, 1 | 2 | 4) {
        return Err(format!("memset node element size {elem}: not 1, 2 or 4"));
    }
    Ok(OpKind::Set(Set { dst, value: value as u32, elem: elem as u8, count: width, is_async: true, rows }))
}
