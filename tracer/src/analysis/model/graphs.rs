//! CUDA graphs in the model: the graphs a trace built (stream capture and
//! explicit construction, docs/trace-format.md "CUDA graphs"), what each
//! executable graph held at each `cuGraphLaunch` (after updates), and the
//! expansion of every launch into the kernels, copies and sets it ran.
//!
//! After [`expand`], `Trace::calls` holds, right after each expanded
//! `cuGraphLaunch` (flagged [`FLAG_EXPANDED`]), one call per node that does
//! GPU work, in dependency order, flagged [`FLAG_FROM_GRAPH`], at the
//! launch's time and stream, with `obj` = the node. The analyses count
//! them as executed work (the inferred timeline runs them one after the
//! other on the launch stream, with calibrated durations); they are not
//! driver calls ([`Call::is_driver_call`]). Work recorded while a stream
//! captured gets [`Kind::Captured`]: it did not run then. A launch of an
//! exec whose construction is not in the trace stays one opaque
//! `GraphLaunch`, counted in [`GraphStats::opaque_launches`].
use std::collections::HashMap;
use std::rc::Rc;

use serde_json::Value;
use tracer_format::hex;

use super::graph_records::{CapturedAt, ExecNode, GraphLine, GraphStats};
use super::records::{Call, Dir, FLAG_EXPANDED, FLAG_FROM_GRAPH, Geom, Kind, NO_STR, NONE};
use super::trace::Trace;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum NodeKind {
    Kernel,
    Memcpy,
    Memset,
    Child(u64),
    /// Empty, event, host and other nodes: no work the model counts.
    Pass,
}

#[derive(Clone, Debug)]
struct Node {
    handle: u64,
    kind: NodeKind,
    kernel: u32,
    geom: u32,
    size: u64,
    dir: Dir,
    deps: Vec<u64>,
    /// `--replayable`: a kernel node's parameter bytes (hex, the line's `params`).
    params: Option<std::sync::Arc<str>>,
}

#[derive(Clone, Debug, Default)]
struct Graph {
    nodes: Vec<Node>,
}

fn dim3(v: &Value, k: &str) -> [u32; 3] {
    let a = v.get(k).and_then(Value::as_array);
    let at = |i: usize| a.and_then(|a| a.get(i)).and_then(Value::as_u64).unwrap_or(0) as u32;
    [at(0), at(1), at(2)]
}

/// (ts, pid, tid) of a cuGraphLaunch -> its exec handle and nodes.
type Launched = HashMap<(u64, u32, u32), (u64, Rc<Vec<ExecNode>>)>;

/// The state of graphs, execs and captures while the trace is walked in time order.
struct Walk<'a> {
    t: &'a mut Trace,
    geom_ids: HashMap<Geom, u32>,
    graphs: HashMap<(u32, u64), Graph>,
    /// node -> the graph holding it.
    node_graph: HashMap<(u32, u64), u64>,
    /// A clone's node (named by cuGraphNodeFindInClone) -> the handle the
    /// clone's copy of the structure has for it (the original's).
    clone_nodes: HashMap<(u32, u64), u64>,
    execs: HashMap<(u32, u64), Rc<Vec<ExecNode>>>,
    /// capture id -> its calls (indexes into t.calls), in time order.
    captured: HashMap<u64, Vec<usize>>,
    /// (ts, pid, tid) of a cuGraphLaunch -> what its exec held then.
    /// (ts, pid, tid) of a cuGraphLaunch -> its exec handle and nodes.
    launched: Launched,
    stats: GraphStats,
}

impl Walk<'_> {
    /// The handle a graph's structure has for node `h` (a clone's node: the original's).
    fn node_handle(&self, pid: u32, h: u64) -> u64 {
        self.clone_nodes.get(&(pid, h)).copied().unwrap_or(h)
    }

    fn geom(&mut self, g: Geom) -> u32 {
        if let Some(&i) = self.geom_ids.get(&g) {
            return i;
        }
        let i = self.t.geoms.len() as u32;
        self.t.geoms.push(g);
        self.geom_ids.insert(g, i);
        i
    }

    /// A node's kind and parameters from its line (add or set-params).
    fn node_of(&mut self, v: &Value, handle: u64) -> Node {
        let kind = match v.get("node_type").and_then(Value::as_str) {
            Some("kernel") => NodeKind::Kernel,
            Some("memcpy") => NodeKind::Memcpy,
            Some("memset") => NodeKind::Memset,
            Some("graph") => NodeKind::Child(hex::field(v, "child_graph").unwrap_or(NONE)),
            _ => NodeKind::Pass,
        };
        let kernel = v.get("kernel").and_then(Value::as_str).map_or(NO_STR, |k| self.t.strings.intern(k));
        let geom = if kind == NodeKind::Kernel && v.get("grid").is_some() {
            self.geom(Geom {
                grid: dim3(v, "grid"),
                block: dim3(v, "block"),
                shared_mem: v.get("shared_mem").and_then(Value::as_u64).unwrap_or(0) as u32,
            })
        } else {
            u32::MAX
        };
        Node {
            handle,
            kind,
            kernel,
            geom,
            size: v.get("size").and_then(Value::as_u64).unwrap_or(0),
            dir: v.get("direction").and_then(Value::as_str).map_or(Dir::None, Dir::parse),
            deps: hex::fields(v, "deps"),
            params: v.get("params").and_then(Value::as_str).map(std::sync::Arc::from),
        }
    }

    /// Replaces a node's parameters (kind and dependencies kept).
    fn set_params(node: &mut Node, new: Node) {
        if new.kind != NodeKind::Pass {
            node.kind = new.kind;
        }
        if new.kernel != NO_STR || new.geom != u32::MAX {
            node.kernel = new.kernel;
            node.geom = new.geom;
            node.params = new.params;
        }
        node.size = new.size;
        node.dir = new.dir;
    }

    fn line(&mut self, gl: &GraphLine) {
        let (pid, v) = (gl.pid, &gl.v);
        let name = v.get("name").and_then(Value::as_str).unwrap_or("");
        let base = name.trim_end_matches("_ptsz").trim_end_matches("_ptds");
        if v.get("ret").and_then(Value::as_i64).is_some_and(|r| r != 0) {
            return;
        }
        let cut = v.get("deps_cut").and_then(Value::as_u64).unwrap_or(0);
        self.stats.deps_cut = self.stats.deps_cut.saturating_add(cut);
        match base {
            "cuGraphCreate" => {
                if let Some(g) = hex::field(v, "graph") {
                    self.graphs.insert((pid, g), Graph::default());
                    self.stats.graphs += 1;
                }
            }
            "cuGraphClone" => {
                if let (Some(g), Some(o)) = (hex::field(v, "graph"), hex::field(v, "original")) {
                    let copy = self.graphs.get(&(pid, o)).cloned().unwrap_or_default();
                    self.graphs.insert((pid, g), copy);
                    self.stats.graphs += 1;
                }
            }
            "cuGraphNodeFindInClone" => {
                if let (Some(n), Some(o), Some(g)) =
                    (hex::field(v, "node"), hex::field(v, "original_node"), hex::field(v, "graph"))
                {
                    let o = self.node_handle(pid, o);
                    self.clone_nodes.insert((pid, n), o);
                    self.node_graph.insert((pid, n), g);
                }
            }
            "cuGraphDestroy" => {
                if let Some(g) = hex::field(v, "graph") {
                    self.graphs.remove(&(pid, g));
                }
            }
            "cuStreamEndCapture" => self.end_capture(pid, v),
            "cuGraphAddDependencies" | "cuGraphAddDependencies_v2" => {
                let handles =
                    |k: &str| hex::fields(v, k).into_iter().map(|h| self.node_handle(pid, h)).collect::<Vec<_>>();
                let (from, to) = (handles("from"), handles("to"));
                if let Some(g) = hex::field(v, "graph").and_then(|g| self.graphs.get_mut(&(pid, g))) {
                    for (f, t) in from.iter().zip(&to) {
                        if let Some(n) = g.nodes.iter_mut().find(|n| n.handle == *t) {
                            n.deps.push(*f);
                        }
                    }
                }
            }
            "cuGraphDestroyNode" => {
                if let Some(n) = hex::field(v, "node")
                    && let Some(g) = self.node_graph.remove(&(pid, n))
                    && let h = self.node_handle(pid, n)
                    && let Some(g) = self.graphs.get_mut(&(pid, g))
                {
                    g.nodes.retain(|n| n.handle != h);
                    for n in &mut g.nodes {
                        n.deps.retain(|d| *d != h);
                    }
                }
            }
            n if n.starts_with("cuGraphAdd") => {
                if let (Some(h), Some(g)) = (hex::field(v, "node"), hex::field(v, "graph")) {
                    let mut node = self.node_of(v, h);
                    node.deps = node.deps.iter().map(|&d| self.node_handle(pid, d)).collect();
                    if let Some(gr) = self.graphs.get_mut(&(pid, g)) {
                        gr.nodes.push(node);
                        self.node_graph.insert((pid, h), g);
                    }
                }
            }
            "cuGraphKernelNodeSetParams" | "cuGraphKernelNodeSetParams_v2" | "cuGraphNodeSetParams" => {
                if let Some(raw) = hex::field(v, "node") {
                    let h = self.node_handle(pid, raw);
                    let new = self.node_of(v, h);
                    if let Some(g) = self.node_graph.get(&(pid, raw)).copied()
                        && let Some(n) =
                            self.graphs.get_mut(&(pid, g)).and_then(|g| g.nodes.iter_mut().find(|n| n.handle == h))
                    {
                        Self::set_params(n, new);
                    }
                }
            }
            "cuGraphExecKernelNodeSetParams" | "cuGraphExecKernelNodeSetParams_v2" | "cuGraphExecNodeSetParams" => {
                if let (Some(e), Some(h)) =
                    (hex::field(v, "graph_exec"), hex::field(v, "node").map(|n| self.node_handle(pid, n)))
                {
                    let new = self.node_of(v, h);
                    if let Some(ex) = self.execs.get_mut(&(pid, e)) {
                        let ex = Rc::make_mut(ex);
                        for n in ex.iter_mut().filter(|n| n.node == h) {
                            if new.kernel != NO_STR || new.geom != u32::MAX {
                                n.kernel = new.kernel;
                                n.geom = new.geom;
                                n.params = new.params.clone();
                            }
                            if new.kind != NodeKind::Kernel && new.kind != NodeKind::Pass {
                                n.size = new.size;
                                n.dir = new.dir;
                            }
                        }
                    }
                }
            }
            "cuGraphInstantiateWithFlags"
            | "cuGraphInstantiateWithParams"
            | "cuGraphInstantiate_v2"
            | "cuGraphInstantiate" => {
                if let (Some(e), Some(g)) = (hex::field(v, "graph_exec"), hex::field(v, "graph")) {
                    let flat = self.flatten(pid, g);
                    self.execs.insert((pid, e), Rc::new(flat));
                    self.stats.execs += 1;
                }
            }
            "cuGraphExecUpdate_v2" | "cuGraphExecUpdate" => {
                if let (Some(e), Some(g)) = (hex::field(v, "graph_exec"), hex::field(v, "graph")) {
                    let flat = self.flatten(pid, g);
                    self.execs.insert((pid, e), Rc::new(flat));
                }
            }
            "cuGraphExecDestroy" => {
                if let Some(e) = hex::field(v, "graph_exec") {
                    self.execs.remove(&(pid, e));
                }
            }
            "cuGraphLaunch" => {
                self.stats.launches += 1;
                if let Some((e, ex)) = hex::field(v, "graph_exec").and_then(|e| Some((e, self.execs.get(&(pid, e))?))) {
                    self.launched.insert((gl.ts, pid, gl.tid), (e, ex.clone()));
                } else {
                    self.stats.opaque_launches += 1;
                }
            }
            _ => {}
        }
    }

    /// A stream capture ended: its graph gets one node per captured
    /// launch, copy and set, each depending on the work before it on its
    /// stream (and, through event record/wait, on other streams').
    fn end_capture(&mut self, pid: u32, v: &Value) {
        let (Some(id), Some(g)) = (v.get("capture").and_then(Value::as_u64), hex::field(v, "graph")) else { return };
        self.stats.captures += 1;
        let calls = self.captured.remove(&id).unwrap_or_default();
        let mut last: HashMap<u64, Vec<u64>> = HashMap::new();
        let mut events: HashMap<u64, Vec<u64>> = HashMap::new();
        let mut nodes = Vec::new();
        for (k, &i) in calls.iter().enumerate() {
            let c = self.t.calls[i];
            let kind = match c.kind {
                Kind::Launch => NodeKind::Kernel,
                Kind::Copy | Kind::CopyAsync => NodeKind::Memcpy,
                Kind::Memset | Kind::MemsetAsync => NodeKind::Memset,
                Kind::EventRecord => {
                    events.insert(c.obj, last.get(&c.stream).cloned().unwrap_or_default());
                    continue;
                }
                Kind::StreamWaitEvent => {
                    let joined = events.get(&c.obj).cloned().unwrap_or_default();
                    let l = last.entry(c.stream).or_default();
                    l.extend(joined);
                    l.sort_unstable();
                    l.dedup();
                    continue;
                }
                _ => continue,
            };
            // Captured nodes have no handle in the trace: (capture, index).
            let handle = (1 << 63) | (id << 24) | k as u64;
            let deps = last.insert(c.stream, vec![handle]).unwrap_or_default();
            // (A captured launch's parameter bytes are on its own line.)
            let params = None;
            nodes.push(Node { handle, kind, kernel: c.kernel, geom: c.geom, size: c.size, dir: c.dir, deps, params });
        }
        let gr = self.graphs.entry((pid, g)).or_insert_with(|| {
            self.stats.graphs += 1;
            Graph::default()
        });
        gr.nodes.extend(nodes);
    }

    /// The graph's work nodes in dependency order, child graphs inlined.
    fn flatten(&self, pid: u32, g: u64) -> Vec<ExecNode> {
        let mut out = Vec::new();
        self.flatten_into(pid, g, &[], &mut out, 0);
        out
    }

    /// Appends graph `g`'s nodes to `out`, its roots depending on `entry`;
    /// returns the exec nodes that finish it (its sinks' completions).
    fn flatten_into(&self, pid: u32, g: u64, entry: &[usize], out: &mut Vec<ExecNode>, depth: u32) -> Vec<usize> {
        let Some(gr) = self.graphs.get(&(pid, g)).filter(|_| depth < 16) else { return entry.to_vec() };
        let index: HashMap<u64, usize> = gr.nodes.iter().enumerate().map(|(i, n)| (n.handle, i)).collect();
        // Kahn's order, insertion order among the ready ones.
        let n = gr.nodes.len();
        let mut indeg = vec![0usize; n];
        let mut users: Vec<Vec<usize>> = vec![vec![]; n];
        for (i, node) in gr.nodes.iter().enumerate() {
            for d in &node.deps {
                if let Some(&j) = index.get(d) {
                    indeg[i] += 1;
                    users[j].push(i);
                }
            }
        }
        let mut ready: std::collections::BTreeSet<usize> = (0..n).filter(|&i| indeg[i] == 0).collect();
        let mut done: Vec<Option<Vec<usize>>> = vec![None; n];
        while let Some(i) = ready.pop_first() {
            let node = &gr.nodes[i];
            let mut deps: Vec<usize> = node
                .deps
                .iter()
                .filter_map(|d| index.get(d))
                .flat_map(|&j| done[j].clone().unwrap_or_default())
                .collect();
            if deps.is_empty() {
                deps = entry.to_vec();
            }
            deps.sort_unstable();
            deps.dedup();
            let ends = match node.kind {
                NodeKind::Kernel | NodeKind::Memcpy | NodeKind::Memset => {
                    let kind = match node.kind {
                        NodeKind::Kernel => Kind::Launch,
                        NodeKind::Memcpy => Kind::CopyAsync,
                        _ => Kind::MemsetAsync,
                    };
                    out.push(ExecNode {
                        node: node.handle,
                        kind,
                        kernel: node.kernel,
                        geom: node.geom,
                        size: node.size,
                        dir: node.dir,
                        deps,
                        params: node.params.clone(),
                    });
                    vec![out.len() - 1]
                }
                NodeKind::Child(c) => self.flatten_into(pid, c, &deps, out, depth + 1),
                NodeKind::Pass => deps,
            };
            done[i] = Some(ends);
            for &u in &users[i] {
                indeg[u] -= 1;
                if indeg[u] == 0 {
                    ready.insert(u);
                }
            }
        }
        // The sinks' completions (nodes no other node of this graph waits for).
        let mut ends: Vec<usize> =
            (0..n).filter(|&i| users[i].is_empty()).flat_map(|i| done[i].clone().unwrap_or_default()).collect();
        ends.sort_unstable();
        ends.dedup();
        ends
    }
}

/// Builds the graphs of `t`, marks captured work and expands every graph
/// launch (see the module doc). `lines`: the trace's graph lines;
/// `captured`: the captured calls. `t.calls` must be sorted.
pub fn expand(t: &mut Trace, mut lines: Vec<GraphLine>, captured: Vec<CapturedAt>) -> GraphStats {
    if lines.is_empty() && captured.is_empty() {
        return GraphStats::default();
    }
    lines.sort_by_key(|l| (l.ts, l.pid, l.tid));
    let capture_of: HashMap<(u64, u32, u32), u64> =
        captured.iter().map(|c| ((c.ts, c.pid, c.tid), c.capture)).collect();
    let geom_ids = t.geoms.iter().enumerate().map(|(i, g)| (*g, i as u32)).collect();
    let mut w = Walk {
        t,
        geom_ids,
        graphs: HashMap::new(),
        node_graph: HashMap::new(),
        clone_nodes: HashMap::new(),
        execs: HashMap::new(),
        captured: HashMap::new(),
        launched: HashMap::new(),
        stats: GraphStats::default(),
    };
    // Graph lines and captured calls in time order.
    let mut j = 0;
    for i in 0..w.t.calls.len() {
        let c = w.t.calls[i];
        while j < lines.len() && (lines[j].ts, lines[j].pid, lines[j].tid) < (c.ts, c.pid, c.tid) {
            w.line(&lines[j]);
            j += 1;
        }
        if let Some(&id) = capture_of.get(&(c.ts, c.pid, c.tid)) {
            w.captured.entry(id).or_default().push(i);
            w.stats.captured_calls += 1;
        }
    }
    for gl in &lines[j..] {
        w.line(gl);
    }
    let Walk { t, launched, mut stats, .. } = w;
    for c in t.calls.iter_mut() {
        if capture_of.contains_key(&(c.ts, c.pid, c.tid)) {
            c.kind = Kind::Captured;
        }
    }
    if launched.is_empty() {
        return stats;
    }
    let node_func = t.strings.intern("(graph node)");
    // Shared per exec state (an exec's launches hold the same nodes until it changes).
    let mut shared: HashMap<*const Vec<ExecNode>, std::sync::Arc<Vec<ExecNode>>> = HashMap::new();
    for (k, (_, ex)) in launched.iter().filter(|(_, (_, ex))| ex.iter().any(|n| n.params.is_some())) {
        let a = shared.entry(Rc::as_ptr(ex)).or_insert_with(|| std::sync::Arc::new((**ex).clone()));
        t.graph_node_params.insert(*k, a.clone());
    }
    let mut out = Vec::with_capacity(t.calls.len());
    for c in std::mem::take(&mut t.calls) {
        let ex = (c.kind == Kind::GraphLaunch && !c.failed()).then(|| launched.get(&(c.ts, c.pid, c.tid))).flatten();
        let Some((exec, ex)) = ex else {
            out.push(c);
            continue;
        };
        stats.expanded_launches += 1;
        // The expanded launch keeps its exec in `obj` (the nodes after it
        // have theirs there).
        out.push(Call { flags: c.flags | FLAG_EXPANDED, obj: *exec, ..c });
        for n in ex.iter() {
            match n.kind {
                Kind::Launch => stats.kernels_run += 1,
                Kind::CopyAsync => stats.copies_run += 1,
                _ => stats.sets_run += 1,
            }
            out.push(Call {
                ts: c.ts,
                dur: 0,
                stream: c.stream,
                obj: n.node,
                size: n.size,
                pid: c.pid,
                tid: c.tid,
                func: node_func,
                kernel: n.kernel,
                geom: n.geom,
                kind: n.kind,
                dir: n.dir,
                flags: FLAG_FROM_GRAPH,
                device: c.device,
            });
        }
    }
    t.calls = out;
    stats
}

/// The report's sentence about CUDA graphs (None without any).
pub fn note(g: &GraphStats) -> Option<String> {
    if g.launches == 0 && g.captured_calls == 0 && g.graphs == 0 {
        return None;
    }
    let mut s = format!(
        "CUDA graphs: {} launches ran {} kernels, {} copies and {} sets from the graphs built in the trace",
        g.expanded_launches, g.kernels_run, g.copies_run, g.sets_run
    );
    if g.opaque_launches > 0 {
        s += &format!(
            "; {} launches of graphs built before the recording (or not recorded) are counted as one opaque operation each",
            g.opaque_launches
        );
    }
    if g.captured_calls > 0 {
        s += &format!("; {} calls were captured into graphs (not run when captured, not counted)", g.captured_calls);
    }
    if g.deps_cut > 0 {
        s += &format!(
            "; {} node dependencies were not recorded (more than 14 per call): topology incomplete",
            g.deps_cut
        );
    }
    Some(s)
}

#[cfg(test)]
#[path = "graphs_tests.rs"]
pub(crate) mod tests;
