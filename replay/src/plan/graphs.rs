//! CUDA graphs in the plan (docs/trace-format.md "CUDA graphs"). Work made
//! on a capturing stream (lines with `capture`) did not run when recorded:
//! it is planned like a launch, copy or set of its own but kept aside, per
//! capture, instead of becoming an op. `cuStreamEndCapture` gives the
//! capture's graph, `cuGraphInstantiate*` / `cuGraphExecUpdate_v2` give an
//! exec that graph's work, and each `cuGraphLaunch` of the exec becomes that
//! work again, in capture order, in stream order on the launch's stream at
//! the launch's time (graph nodes serialized: no node runs concurrently with
//! another of its graph, the captured dependencies hold). A launch whose exec
//! was not built from a capture (explicit graphs: their kernel nodes have no
//! parameter bytes; a node changed after capture; an exec not built in the
//! recording) is counted as not replayed, with the reason.

use std::collections::HashMap;
use std::rc::Rc;

use anyhow::Result;

use super::{Builder, Direction, OpKind, is_launch};
use crate::recording::Call;

/// One piece of captured work: what replay runs for it, or why it cannot.
#[derive(Debug, Clone)]
pub(super) struct Node {
    line: usize,
    name: String,
    kernel: Option<String>,
    is_kernel: bool,
    work: std::result::Result<OpKind, String>,
}

/// What a graph or exec runs.
#[derive(Debug, Clone)]
pub(super) enum Contents {
    /// The work of a stream capture, in capture order.
    Captured(Rc<Vec<Node>>),
    /// Not replayable, with the reason.
    Opaque(String),
}

#[derive(Default)]
pub(super) struct Graphs {
    /// Capture id -> its work so far.
    captures: HashMap<u64, Vec<Node>>,
    /// (pid, CUgraph) -> contents.
    graphs: HashMap<(u32, u64), Contents>,
    /// (pid, CUgraphExec) -> contents at instantiation (or update).
    execs: HashMap<(u32, u64), Contents>,
    /// (pid, CUgraphNode) -> graph, for nodes added with cuGraphAdd*Node.
    nodes: HashMap<(u32, u64), u64>,
}

const EXPLICIT: &str = "explicit graph (cuGraphCreate / cuGraphAdd*Node): kernel node parameter bytes are not recorded";

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
        let g = &mut self.graphs;
        match name {
            "cuStreamEndCapture" => {
                let nodes = c.u64_field("capture").and_then(|id| g.captures.remove(&id)).unwrap_or_default();
                // cuStreamBeginCaptureToGraph into a graph with nodes of its own: stays not replayable.
                if let Some(h) = graph
                    && !matches!(g.graphs.get(&(pid, h)), Some(Contents::Opaque(_)))
                {
                    g.graphs.insert((pid, h), Contents::Captured(Rc::new(nodes)));
                }
            }
            "cuGraphCreate" => {
                if let Some(h) = graph {
                    g.graphs.insert((pid, h), Contents::Opaque(EXPLICIT.into()));
                }
            }
            "cuGraphClone" => {
                if let Some(h) = graph {
                    let from = c.addr_field("original").and_then(|o| g.graphs.get(&(pid, o)).cloned());
                    let why = format!("clone of a graph not built in the recording (line {})", c.line);
                    g.graphs.insert((pid, h), from.unwrap_or(Contents::Opaque(why)));
                }
            }
            "cuGraphDestroy" => {
                if let Some(h) = graph {
                    g.graphs.remove(&(pid, h));
                }
            }
            "cuGraphInstantiateWithFlags"
            | "cuGraphInstantiateWithParams"
            | "cuGraphInstantiate_v2"
            | "cuGraphExecUpdate_v2" => {
                if let Some(e) = c.addr_field("graph_exec") {
                    let contents = graph.and_then(|h| g.graphs.get(&(pid, h)).cloned()).unwrap_or_else(|| {
                        Contents::Opaque(format!(
                            "instantiated from a graph not built in the recording (line {})",
                            c.line
                        ))
                    });
                    g.execs.insert((pid, e), contents);
                }
            }
            "cuGraphExecDestroy" => {
                if let Some(e) = c.addr_field("graph_exec") {
                    g.execs.remove(&(pid, e));
                }
            }
            n if n.starts_with("cuGraphExec") && n.contains("SetParams") => {
                if let Some(e) = c.addr_field("graph_exec") {
                    let why =
                        format!("exec node changed by {n} (line {}): the new parameter bytes are not recorded", c.line);
                    g.execs.insert((pid, e), Contents::Opaque(why));
                }
            }
            n if n.starts_with("cuGraphAdd") && n.contains("Node") => {
                if let (Some(h), Some(node)) = (graph, c.addr_field("node")) {
                    g.nodes.insert((pid, node), h);
                    let why = match g.graphs.get(&(pid, h)) {
                        Some(Contents::Captured(_)) => {
                            format!(
                                "node added to a captured graph by {n} (line {}): its parameter bytes are not recorded",
                                c.line
                            )
                        }
                        Some(Contents::Opaque(w)) => w.clone(),
                        None => EXPLICIT.into(),
                    };
                    g.graphs.insert((pid, h), Contents::Opaque(why));
                }
            }
            n if n.contains("SetParams") || n.starts_with("cuGraphAddDependencies") || n == "cuGraphDestroyNode" => {
                // A node changed: its graph if the node was added in the recording, else
                // (a captured graph's node, whose handle is not recorded) every captured graph of the pid.
                let why = format!("graph node changed by {n} (line {}): the change is not replayed", c.line);
                let owner = graph.or_else(|| c.addr_field("node").and_then(|nd| g.nodes.get(&(pid, nd)).copied()));
                match owner {
                    Some(h) => {
                        g.graphs.insert((pid, h), Contents::Opaque(why));
                    }
                    None => {
                        for ((p, _), v) in g.graphs.iter_mut() {
                            if *p == pid && matches!(v, Contents::Captured(_)) {
                                *v = Contents::Opaque(why.clone());
                            }
                        }
                    }
                }
            }
            _ => {}
        }
        Ok(true)
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
            // cuEventRecord / cuStreamWaitEvent inside a capture: graph edges, kept by the serialization.
            cov.captured_events += 1;
            return Ok(());
        }
        let saved = self.plan.coverage.clone();
        let (ops, relocs) = (self.plan.ops.len(), self.plan.relocations.len());
        let (skipped, other) = (saved.skipped.len(), saved.other_skipped.len());
        if let Some(api) = launch {
            self.launch(c, api)?;
        } else if c.failed() || c.incomplete {
            self.skip_other(c, "failed or incomplete when recorded");
        } else if copy {
            self.copy(c, name)?;
        } else {
            self.set(c, name)?;
        }
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
        let node = Node {
            line: c.line,
            name: c.name.clone(),
            kernel: c.str_field("kernel").map(str::to_owned),
            is_kernel: launch.is_some(),
            work,
        };
        self.graphs.captures.entry(cap).or_default().push(node);
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
            Contents::Captured(n) => n,
            Contents::Opaque(why) => {
                *self.plan.coverage.graph_launches_not_replayed.entry(why.clone()).or_default() += 1;
                self.skip_other(c, format!("graph launch not replayed: {why}"));
                return;
            }
        };
        self.plan.coverage.graph_launches_expanded += 1;
        let stream_h = c.addr_field("stream").or(c.addr_arg("hStream")).unwrap_or(0);
        let stream = self.stream(c, stream_h);
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
                    let reason = format!("{what} captured at line {}: {why}", n.line);
                    *cov.graph_skipped_by_reason.entry(reason).or_default() += 1;
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
    }
}
