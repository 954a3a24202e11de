//! CUDA graphs in the plan (docs/trace-format.md "CUDA graphs"). Work made
//! on a capturing stream (lines with `capture`) did not run when recorded:
//! it is planned like a launch, copy or set of its own but kept aside, per
//! capture, instead of becoming an op, with what it waits for (its stream's
//! previous work; event records and waits in the capture join streams).
//! `cuStreamEndCapture` gives the capture's graph. An explicit graph
//! (`cuGraphCreate`, `cuGraphAdd*Node`, `cuGraphAddDependencies*`, child
//! graphs, `cuGraphClone` with `cuGraphNodeFindInClone`) is built from its
//! node lines: a kernel node is planned like a launch from the node's
//! recorded parameter bytes (`--replayable`), a memset node like a memset, a
//! one-row memcpy node like a copy (graph_nodes.rs reads the node lines,
//! graphs_explicit.rs keeps the structure). `cuGraphInstantiate*` /
//! `cuGraphExecUpdate_v2` give an exec that graph's work in dependency
//! order, child graphs inlined, each piece with what it waits for;
//! `cuGraph(Exec)*NodeSetParams*` replace a node's work in the graph or the
//! exec. Each `cuGraphLaunch` of the exec becomes that work again on the
//! launch's stream at the launch's time; a launch whose work is all
//! replayable is also listed for replay to rebuild its exec as a CUDA graph
//! (`Plan::graph_launches`, exec/graph_execs.rs), the others run as
//! separate launches in that order. A launch whose exec holds a node kind
//! not replayed (host, memory, conditional, …), a node changed in a way the
//! recording cannot follow, or an exec not built in the recording is
//! counted as not replayed, with the reason.

use std::collections::HashMap;
use std::rc::Rc;

use anyhow::Result;

use super::graph_node::Node;
use super::graphs_explicit::Explicit;
use super::{Builder, Direction, OpKind, is_launch};
use crate::recording::Call;

/// What a graph or exec runs.
#[derive(Debug, Clone)]
pub(super) enum Contents {
    /// Work in the order it runs: a stream capture's, or an exec's.
    Nodes(Rc<Vec<Node>>),
    /// An explicit graph being built.
    Explicit(Rc<Explicit>),
    /// Not replayable, with the reason.
    Opaque(String),
}

impl Contents {
    /// What an instantiation of this graph runs.
    pub(super) fn instantiated(&self) -> Contents {
        match self {
            Contents::Explicit(g) => Contents::Nodes(Rc::new(g.flatten())),
            other => other.clone(),
        }
    }
}

/// A stream capture in progress: its work, and what the next work on each of
/// its streams and each event recorded in it waits for (as CUDA tracks a
/// capture's dependencies: work on a stream waits for the stream's last
/// work; an event recorded in the capture carries its stream's last work to
/// the streams that wait on it).
#[derive(Default)]
struct Capture {
    nodes: Vec<Node>,
    stream_deps: HashMap<u64, Vec<usize>>,
    event_deps: HashMap<u64, Vec<usize>>,
}

impl Capture {
    fn event(&mut self, c: &Call, wait: bool) {
        let (Some(e), Some(s)) = (c.addr_arg("hEvent"), c.addr_field("stream").or(c.addr_arg("hStream"))) else {
            return;
        };
        if wait {
            let from = self.event_deps.get(&e).cloned().unwrap_or_default();
            let deps = self.stream_deps.entry(s).or_default();
            deps.extend(from);
            deps.sort_unstable();
            deps.dedup();
        } else {
            let deps = self.stream_deps.get(&s).cloned().unwrap_or_default();
            self.event_deps.insert(e, deps);
        }
    }

    /// Adds work made on stream `s`: it waits for the stream's dependencies.
    fn push(&mut self, s: u64, mut node: Node) {
        let k = self.nodes.len();
        node.after = Some(self.stream_deps.insert(s, vec![k]).unwrap_or_default());
        self.nodes.push(node);
    }
}

#[derive(Default)]
pub(super) struct Graphs {
    /// Capture id -> its work so far.
    captures: HashMap<u64, Capture>,
    /// (pid, CUgraph) -> contents.
    pub(super) graphs: HashMap<(u32, u64), Contents>,
    /// (pid, CUgraphExec) -> contents at instantiation (or update).
    pub(super) execs: HashMap<(u32, u64), Contents>,
    /// (pid, CUgraphExec) -> the flags it was instantiated with (`cuGraphInstantiateWithFlags`;
    /// 0 for the other instantiate calls, whose flags are not recorded as a value).
    pub(super) exec_flags: HashMap<(u32, u64), u64>,
    /// (pid, CUgraphNode) -> graph, for nodes added with cuGraphAdd*Node (and the nodes of a
    /// clone that cuGraphNodeFindInClone named).
    pub(super) nodes: HashMap<(u32, u64), u64>,
    /// (pid, a clone's node) -> the handle its graph's structure knows it by (the original's:
    /// a clone is a copy of the original's structure).
    pub(super) clone_nodes: HashMap<(u32, u64), u64>,
    /// The distinct exec contents launched, with their instantiate flags; the index is their
    /// `GraphLaunch::exec`.
    launched: Vec<(Rc<Vec<Node>>, u64)>,
}

impl Graphs {
    /// The handle a graph's structure knows node `h` by (a clone's node: the original's).
    pub(super) fn node(&self, pid: u32, h: u64) -> u64 {
        self.clone_nodes.get(&(pid, h)).copied().unwrap_or(h)
    }

    /// The number of the exec whose contents and flags these are (one per distinct pair).
    fn exec_id(&mut self, nodes: &Rc<Vec<Node>>, flags: u64) -> usize {
        match self.launched.iter().position(|(l, f)| Rc::ptr_eq(l, nodes) && *f == flags) {
            Some(id) => id,
            None => {
                self.launched.push((nodes.clone(), flags));
                self.launched.len() - 1
            }
        }
    }
}

fn base(name: &str) -> &str {
    name.trim_end_matches("_ptsz").trim_end_matches("_ptds")
}

impl<'a> Builder<'a> {
    /// A call of a graph or made during a capture: handled here (true), else left to the caller.
    pub(super) fn graph_call(&mut self, c: &Call) -> Result<bool> {
        let name = base(&c.name);
        if let Some(cap) = c.u64_field("capture")
            && !name.starts_with("cuStreamBeginCapture")
            && name != "cuStreamEndCapture"
        {
            self.captured(c, name, cap)?;
            return Ok(true);
        }
        if name == "cuGraphLaunch" {
            self.graph_launch(c);
            return Ok(true);
        }
        if !(name.starts_with("cuGraph") || name == "cuStreamEndCapture") {
            return Ok(false);
        }
        if c.failed() || c.entry_lost {
            return Ok(true);
        }
        let pid = c.pid;
        let graph = c.addr_field("graph");
        match name {
            "cuStreamEndCapture" => {
                let g = &mut self.graphs;
                let nodes =
                    c.u64_field("capture").and_then(|id| g.captures.remove(&id)).map(|c| c.nodes).unwrap_or_default();
                // cuStreamBeginCaptureToGraph into a graph with nodes of its own: not replayable.
                if let Some(h) = graph {
                    let into_nodes = match g.graphs.get(&(pid, h)) {
                        Some(Contents::Explicit(e)) => !e.is_empty(),
                        other => matches!(other, Some(Contents::Opaque(_))),
                    };
                    let contents = if into_nodes {
                        Contents::Opaque(format!("capture into a graph that had nodes (line {}): not replayed", c.line))
                    } else {
                        Contents::Nodes(Rc::new(nodes))
                    };
                    if !matches!(g.graphs.get(&(pid, h)), Some(Contents::Opaque(_))) {
                        g.graphs.insert((pid, h), contents);
                    }
                }
            }
            "cuGraphCreate" => {
                if let Some(h) = graph {
                    self.graphs.graphs.insert((pid, h), Contents::Explicit(Rc::default()));
                }
            }
            "cuGraphClone" => {
                if let Some(h) = graph {
                    let g = &mut self.graphs;
                    let from = c.addr_field("original").and_then(|o| g.graphs.get(&(pid, o)).cloned());
                    let why = format!("clone of a graph not built in the recording (line {})", c.line);
                    g.graphs.insert((pid, h), from.unwrap_or(Contents::Opaque(why)));
                }
            }
            "cuGraphNodeFindInClone" => {
                if let (Some(node), Some(orig), Some(g)) = (c.addr_field("node"), c.addr_field("original_node"), graph)
                {
                    let orig = self.graphs.node(pid, orig);
                    self.graphs.clone_nodes.insert((pid, node), orig);
                    self.graphs.nodes.insert((pid, node), g);
                }
            }
            "cuGraphDestroy" => {
                if let Some(h) = graph {
                    self.graphs.graphs.remove(&(pid, h));
                }
            }
            "cuGraphInstantiateWithFlags"
            | "cuGraphInstantiateWithParams"
            | "cuGraphInstantiate_v2"
            | "cuGraphInstantiate"
            | "cuGraphExecUpdate_v2"
            | "cuGraphExecUpdate" => {
                let g = &mut self.graphs;
                if let Some(e) = c.addr_field("graph_exec") {
                    let contents = graph.and_then(|h| g.graphs.get(&(pid, h))).map(Contents::instantiated);
                    let contents = contents.unwrap_or_else(|| {
                        Contents::Opaque(format!(
                            "instantiated from a graph not built in the recording (line {})",
                            c.line
                        ))
                    });
                    g.execs.insert((pid, e), contents);
                    if c.name != "cuGraphExecUpdate_v2" && c.name != "cuGraphExecUpdate" {
                        let flags = if c.name == "cuGraphInstantiateWithFlags" { c.u64_arg("flags") } else { None };
                        g.exec_flags.insert((pid, e), flags.unwrap_or(0));
                    }
                }
            }
            "cuGraphExecDestroy" => {
                if let Some(e) = c.addr_field("graph_exec") {
                    self.graphs.execs.remove(&(pid, e));
                }
            }
            n if n.starts_with("cuGraphExec") && n.contains("SetParams") => self.exec_set_params(c, n)?,
            n if n.starts_with("cuGraphAdd") && n.contains("Node") => self.add_node(c, n, graph)?,
            n if n.contains("SetParams") => self.set_params(c, n)?,
            n if n.starts_with("cuGraphAddDependencies") || n == "cuGraphDestroyNode" => self.change_edges(c, n, graph),
            _ => {}
        }
        Ok(true)
    }

    /// Plans `f` (a launch, copy or set) but keeps its op aside: the op's kind, or why it was not planned.
    /// The coverage and relocations are left as they were, and for a node line (no stream) the streams.
    pub(super) fn aside(
        &mut self,
        c: &Call,
        node_line: bool,
        f: impl FnOnce(&mut Self) -> Result<()>,
    ) -> Result<std::result::Result<OpKind, String>> {
        let saved = self.plan.coverage.clone();
        let (ops, relocs, streams) = (self.plan.ops.len(), self.plan.relocations.len(), self.plan.streams.len());
        let legacy = self.pids.get(&c.pid).and_then(|p| p.legacy);
        let (skipped, other) = (saved.skipped.len(), saved.other_skipped.len());
        f(self)?;
        let work = if self.plan.ops.len() > ops {
            let op = self.plan.ops.pop().expect("an op was pushed");
            Ok(op.kind)
        } else {
            let cov = &self.plan.coverage;
            let why = cov.skipped.get(skipped).or(cov.other_skipped.get(other)).map(|s| s.reason.clone());
            Err(why.unwrap_or_else(|| "not planned".into()))
        };
        self.plan.relocations.truncate(relocs);
        self.plan.coverage = saved;
        if node_line
            && self.plan.streams.len() > streams
            && self.plan.streams[streams..].iter().all(|s| s.kind == super::StreamKind::Legacy)
        {
            // A node line has no stream: the one its planning made is not the plan's.
            self.plan.streams.truncate(streams);
            if let Some(p) = self.pids.get_mut(&c.pid) {
                p.legacy = legacy;
            }
        }
        Ok(work)
    }

    /// Work on a capturing stream: planned as usual, then taken out of the ops into its capture.
    fn captured(&mut self, c: &Call, name: &str, cap: u64) -> Result<()> {
        let launch = is_launch(&c.name);
        let copy = name.starts_with("cuMemcpy");
        let set = name.starts_with("cuMemset");
        let cov = &mut self.plan.coverage;
        if launch.is_some() {
            cov.captured_launches += 1;
        } else if copy || set {
            cov.captured_copies_sets += 1;
        } else {
            // cuEventRecord / cuStreamWaitEvent inside a capture: edges between its streams' work.
            cov.captured_events += 1;
            let wait = name == "cuStreamWaitEvent";
            if wait || name.starts_with("cuEventRecord") {
                self.graphs.captures.entry(cap).or_default().event(c, wait);
            }
            return Ok(());
        }
        let work = self.aside(c, false, |b| {
            if let Some(api) = launch {
                b.launch(c, api)
            } else if c.failed() || c.incomplete {
                b.skip_other(c, "failed or incomplete when recorded");
                Ok(())
            } else if copy {
                b.copy(c, name)
            } else {
                b.set(c, name)
            }
        })?;
        let node = Node {
            handle: 0,
            line: c.line,
            name: c.name.clone(),
            kernel: c.str_field("kernel").map(str::to_owned),
            is_kernel: launch.is_some(),
            work,
            after: None,
        };
        let stream = c.addr_field("stream").or(c.addr_arg("hStream")).unwrap_or(0);
        self.graphs.captures.entry(cap).or_default().push(stream, node);
        Ok(())
    }

    /// cuGraphLaunch: the exec's captured work as ops on the launch's stream, or counted as not replayed.
    fn graph_launch(&mut self, c: &Call) {
        self.plan.coverage.graph_launches += 1;
        let contents = if c.failed() || c.entry_lost {
            Contents::Opaque("graph launch failed or lost its entry when recorded".into())
        } else {
            match c.addr_field("graph_exec").and_then(|e| self.graphs.execs.get(&(c.pid, e))) {
                Some(x) => x.clone(),
                None => Contents::Opaque("graph exec not instantiated in the recording (opaque graph launch)".into()),
            }
        };
        let nodes = match contents {
            Contents::Nodes(n) => n,
            Contents::Explicit(_) => unreachable!("execs hold instantiated contents"),
            Contents::Opaque(why) => {
                *self.plan.coverage.graph_launches_not_replayed.entry(why.clone()).or_default() += 1;
                self.skip_other(c, format!("graph launch not replayed: {why}"));
                return;
            }
        };
        self.plan.coverage.graph_launches_expanded += 1;
        let stream_h = c.addr_field("stream").or(c.addr_arg("hStream")).unwrap_or(0);
        let stream = self.stream(c, stream_h);
        let first_op = self.plan.ops.len();
        let mut whole = true;
        for n in nodes.iter() {
            let cov = &mut self.plan.coverage;
            if n.is_kernel {
                cov.graph_kernels += 1;
            } else {
                cov.graph_copies_sets += 1;
            }
            let mut kind = match &n.work {
                Ok(k) => k.clone(),
                Err(why) => {
                    let what = match &n.kernel {
                        Some(k) => format!("{} of {k}", n.name),
                        None => n.name.clone(),
                    };
                    let how = if n.handle == 0 { "captured" } else { "set" };
                    let reason = format!("{what} {how} at line {}: {why}", n.line);
                    *cov.graph_skipped_by_reason.entry(reason).or_default() += 1;
                    if why == super::coverage::COLLECTIVE {
                        // A selected rank's collective run by this graph launch: what runs after it
                        // reads memory the collective would have written.
                        cov.collective_skipped(c.line, c.ts);
                    }
                    whole = false;
                    continue;
                }
            };
            match &mut kind {
                OpKind::Launch(l) => {
                    let op_index = self.plan.ops.len();
                    let cands = self.ranges.candidates(c.pid, op_index, c.line, &l.params, l.layout.as_ref());
                    self.plan.relocations.extend(cands);
                    self.plan.coverage.graph_kernels_replayed += 1;
                }
                OpKind::Copy(cp) => {
                    // A D2H copy's recorded bytes are the host buffer at capture time, not this launch's output.
                    if cp.direction == Direction::D2h {
                        cp.data = None;
                    }
                    self.plan.coverage.graph_copies_sets_replayed += 1;
                }
                _ => self.plan.coverage.graph_copies_sets_replayed += 1,
            }
            let i = self.push(c, Some(stream), kind);
            self.plan.ops[i].duration_ns = None;
            self.plan.graph_ops.push(super::GraphOp { op: i, launch_line: c.line, captured_line: n.line });
        }
        // Every node replayable: the exec can be rebuilt as a graph and launched in place of its ops.
        let ops = self.plan.ops.len() - first_op;
        if whole && ops > 0 {
            let exec_h = c.addr_field("graph_exec").unwrap_or(0);
            let flags = self.graphs.exec_flags.get(&(c.pid, exec_h)).copied().unwrap_or(0);
            let exec = self.graphs.exec_id(&nodes, flags);
            self.plan.coverage.graph_launches_rebuildable += 1;
            self.plan.coverage.graph_execs = self.plan.coverage.graph_execs.max(exec + 1);
            let after = nodes.iter().map(|n| n.after.clone()).collect::<Option<Vec<_>>>();
            self.plan.graph_launches.push(super::GraphLaunch {
                first_op,
                ops,
                exec,
                line: c.line,
                stream,
                after,
                instantiate_flags: flags,
            });
        }
    }
}
