//! The recording's graph execs rebuilt as CUDA graphs. Each exec the plan
//! lists (`Plan::graph_launches`, plan/graphs.rs) is built once, before any
//! pass, by capturing its ops — the exec's kernels, copies and sets in
//! dependency order, prepared like every other op (translated addresses,
//! relocated parameters) — on a stream of its own, then instantiated. A pass
//! launches the exec with `cuGraphLaunch` on the recorded launch's stream in
//! place of those ops, so the driver's graph launch path and the graph's
//! scheduling on the GPU are replayed, not separate launches. The nodes keep
//! their recorded dependencies (each op's capture dependencies are set to
//! the nodes of the ops it waits for): an explicit graph's edges, and in a
//! stream capture each stream's order joined by the event records and
//! waits made in the capture, so parallel branches stay parallel. An exec
//! that cannot be rebuilt (capture or instantiation refused) has its
//! launches run as separate launches, with a note saying why.

use std::cell::RefCell;
use std::collections::HashMap;

use anyhow::Result;
use cudarc::driver::sys;

use super::cuda::{CUstream, ck};
use crate::plan::{Op, Plan};

/// A graph launch run as a rebuilt exec: its ops, the exec (an index into
/// `GraphExecs`'s execs: `GraphExecs::exec`), the plan stream.
#[derive(Clone, Copy)]
pub struct AsGraph {
    pub ops: usize,
    pub exec: usize,
    pub stream: usize,
}

/// What a pass does to a rebuilt exec before its first launch in the pass
/// (a diagnostic: `replay run --graph-refresh`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Refresh {
    /// `cuGraphUpload` on the launch's stream.
    Upload,
    /// A new exec instantiated from the rebuilt graph (the old one destroyed),
    /// as a program that captures its graph right before launching it has.
    Instantiate,
}

/// How graphs are rebuilt (diagnostics of `replay run`).
#[derive(Debug, Clone, Default)]
pub struct Rebuild {
    /// Write each rebuilt graph to DIR/graph-N.dot (N: the order of rebuilding).
    pub dot_dir: Option<std::path::PathBuf>,
    /// Ignore the recorded dependencies: one chain in recorded order.
    pub chain: bool,
    /// Instantiate with these flags instead of the recorded ones.
    pub flags: Option<u64>,
    /// Build the graphs after one whole pass with graph launches expanded (every
    /// kernel has run in the context before instantiation, as in the program).
    pub after_pass: bool,
    /// Before each pass's first launch of an exec.
    pub refresh: Option<Refresh>,
}

/// `CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD`: valid only with an upload stream
/// (`cuGraphInstantiateWithParams`); the first launch uploads instead.
const FLAG_UPLOAD: u64 = 2;

#[derive(Default)]
pub struct GraphExecs {
    /// First op of a graph launch -> how it runs.
    at: HashMap<usize, AsGraph>,
    graphs: Vec<sys::CUgraph>,
    /// Per rebuilt exec (index = `AsGraph::exec`): the exec now, and its graph and flags.
    execs: RefCell<Vec<sys::CUgraphExec>>,
    flags: Vec<u64>,
    /// Execs rebuilt, and launches that will run them.
    pub rebuilt: usize,
    pub launches: usize,
    /// Why an exec was not rebuilt (its launches run as separate launches).
    pub notes: Vec<String>,
}

impl GraphExecs {
    /// Rebuilds every exec of `plan.graph_launches`; `submit(op, stream)`
    /// submits a prepared op to the capturing stream.
    pub fn build(plan: &Plan, how: &Rebuild, submit: impl Fn(usize, CUstream) -> Result<()>) -> Result<GraphExecs> {
        let mut g = GraphExecs::default();
        if plan.graph_launches.is_empty() {
            return Ok(g);
        }
        let mut s: CUstream = std::ptr::null_mut();
        // SAFETY: plain driver call.
        ck(
            unsafe { sys::cuStreamCreate(&mut s, sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32) },
            "cuStreamCreate",
        )?;
        let mut built: HashMap<usize, Option<usize>> = HashMap::new();
        for l in &plan.graph_launches {
            let exec = match built.get(&l.exec) {
                Some(e) => *e,
                None => {
                    let after = if how.chain { None } else { l.after.as_deref() };
                    let flags = how.flags.unwrap_or(l.instantiate_flags) & !FLAG_UPLOAD;
                    let e = match capture(s, l.first_op, l.ops, after, flags, &submit) {
                        Ok((graph, exec)) => {
                            if let Some(dir) = &how.dot_dir {
                                let path = dir.join(format!("graph-{}.dot", g.rebuilt));
                                if let Err(e) = write_dot(graph, &path) {
                                    g.notes.push(format!("{}: not written ({e:#})", path.display()));
                                }
                            }
                            g.graphs.push(graph);
                            g.execs.get_mut().push(exec);
                            g.flags.push(flags);
                            g.rebuilt += 1;
                            Some(g.rebuilt - 1)
                        }
                        Err(e) => {
                            g.notes.push(format!(
                                "graph exec of the launch at line {} not rebuilt ({e:#}): its launches run as separate launches",
                                l.line
                            ));
                            None
                        }
                    };
                    built.insert(l.exec, e);
                    e
                }
            };
            if let Some(exec) = exec {
                g.at.insert(l.first_op, AsGraph { ops: l.ops, exec, stream: l.stream });
                g.launches += 1;
            }
        }
        // SAFETY: the capture stream is idle (captures do not run work).
        unsafe { sys::cuStreamDestroy_v2(s) };
        Ok(g)
    }

    /// The graph launch whose first op is `op`, if it runs as a rebuilt exec.
    pub fn at(&self, op: usize) -> Option<AsGraph> {
        self.at.get(&op).copied()
    }

    /// The exec `AsGraph::exec` names.
    pub fn exec(&self, i: usize) -> sys::CUgraphExec {
        self.execs.borrow()[i]
    }

    /// Uploads exec `i` on `s`, or replaces it by a new instantiation of its graph.
    pub(crate) fn refresh(&self, i: usize, how: Refresh, s: CUstream) -> Result<()> {
        let mut execs = self.execs.borrow_mut();
        // SAFETY: exec and graph from build; the old exec is destroyed only once a new one exists.
        unsafe {
            match how {
                Refresh::Upload => ck(sys::cuGraphUpload(execs[i], s), "cuGraphUpload"),
                Refresh::Instantiate => {
                    let mut exec: sys::CUgraphExec = std::ptr::null_mut();
                    ck(
                        sys::cuGraphInstantiateWithFlags(&mut exec, self.graphs[i], self.flags[i]),
                        "cuGraphInstantiateWithFlags",
                    )?;
                    sys::cuGraphExecDestroy(execs[i]);
                    execs[i] = exec;
                    Ok(())
                }
            }
        }
    }

    /// Per op of `n`: whether it runs inside a rebuilt graph launch (not submitted on its own).
    pub fn inside(&self, n: usize) -> Vec<bool> {
        let mut v = vec![false; n];
        for (&first, g) in &self.at {
            for x in v.iter_mut().skip(first).take(g.ops) {
                *x = true;
            }
        }
        v
    }
}

/// The note a report carries when rebuilt graphs run in a process that launches kernels
/// outside graphs on more than one stream: on the H100 (driver 580) a graph launched after
/// such work takes +0.18 µs per kernel node, the program's own graph as much as replay's
/// (docs/replay.md, *The program's own graph slows the same way*). `ops`: the plan's ops;
/// `in_graph`: run inside a rebuilt graph launch; `skipped`: left out of every pass.
pub fn eager_streams_note(ops: &[Op], in_graph: &[bool], skipped: &[bool], rebuilt: usize) -> Option<String> {
    if rebuilt == 0 {
        return None;
    }
    let mut streams: Vec<Option<usize>> = Vec::new();
    for (i, o) in ops.iter().enumerate() {
        let outside = !in_graph.get(i).copied().unwrap_or(false) && !skipped.get(i).copied().unwrap_or(false);
        if outside && o.class() == Some("launch") && !streams.contains(&o.stream) {
            streams.push(o.stream);
        }
    }
    if streams.len() < 2 {
        return None;
    }
    let names: Vec<String> = streams.iter().map(|s| s.map_or("none".to_string(), |n| n.to_string())).collect();
    Some(format!(
        "each pass launches kernels outside graphs on {} streams ({}) after the rebuilt graphs exist: a graph \
         launched after that takes about 0.18 us more per kernel node on an H100 (driver 580), the \
         program's own graph too once it has done the same since its capture; a program that ran \
         kernels outside graphs on one stream at most since capturing its graph measured faster \
         graphs than this (docs/replay.md, \"The program's own graph slows the same way\")",
        streams.len(),
        names.join(", ")
    ))
}

/// Captures ops `first..first + n` on `s` into a graph and instantiates it with `flags`.
/// `after`: per op, the ops it waits for (the capture's dependencies are set
/// to their nodes before it is submitted); None: the stream's order.
fn capture(
    s: CUstream,
    first: usize,
    n: usize,
    after: Option<&[Vec<usize>]>,
    flags: u64,
    submit: &impl Fn(usize, CUstream) -> Result<()>,
) -> Result<(sys::CUgraph, sys::CUgraphExec)> {
    // SAFETY: plain driver calls on our own stream; the capture is always ended.
    unsafe {
        ck(
            sys::cuStreamBeginCapture_v2(s, sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED),
            "cuStreamBeginCapture",
        )?;
        let mut err = None;
        let mut nodes: Vec<sys::CUgraphNode> = Vec::with_capacity(n);
        for k in 0..n {
            let r = match after {
                None => submit(first + k, s),
                Some(after) => set_dependencies(s, &after[k], &nodes)
                    .and_then(|()| submit(first + k, s))
                    .and_then(|()| captured_node(s))
                    .map(|node| nodes.push(node)),
            };
            if let Err(e) = r {
                err = Some(e);
                break;
            }
        }
        let mut graph: sys::CUgraph = std::ptr::null_mut();
        let r = sys::cuStreamEndCapture(s, &mut graph);
        if let Some(e) = err {
            if !graph.is_null() {
                sys::cuGraphDestroy(graph);
            }
            return Err(e);
        }
        ck(r, "cuStreamEndCapture")?;
        let mut exec: sys::CUgraphExec = std::ptr::null_mut();
        let what = format!("cuGraphInstantiateWithFlags({flags:#x})");
        if let Err(e) = ck(sys::cuGraphInstantiateWithFlags(&mut exec, graph, flags), &what) {
            sys::cuGraphDestroy(graph);
            return Err(e);
        }
        Ok((graph, exec))
    }
}

/// The graph as DOT, with node parameters and kernel node attributes.
fn write_dot(graph: sys::CUgraph, path: &std::path::Path) -> Result<()> {
    if let Some(d) = path.parent() {
        std::fs::create_dir_all(d)?;
    }
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes())?;
    const VERBOSE: u32 = 1; // CU_GRAPH_DEBUG_DOT_FLAGS_VERBOSE: every parameter and attribute
    // SAFETY: a live graph and a NUL-terminated path.
    ck(unsafe { sys::cuGraphDebugDotPrint(graph, c.as_ptr(), VERBOSE) }, "cuGraphDebugDotPrint")
}

/// Makes the next node captured on `s` wait for exactly `after`'s nodes.
///
/// # Safety
/// `s` is capturing; `nodes` are its captured nodes.
unsafe fn set_dependencies(s: CUstream, after: &[usize], nodes: &[sys::CUgraphNode]) -> Result<()> {
    let Some(mut deps) = after.iter().map(|&k| nodes.get(k).copied()).collect::<Option<Vec<_>>>() else {
        anyhow::bail!("a node waits for one captured after it");
    };
    const SET: u32 = 1; // CU_STREAM_SET_CAPTURE_DEPENDENCIES
    // SAFETY: deps outlives the call; no edge data.
    let r =
        unsafe { sys::cuStreamUpdateCaptureDependencies_v2(s, deps.as_mut_ptr(), std::ptr::null(), deps.len(), SET) };
    ck(r, "cuStreamUpdateCaptureDependencies")
}

/// The node the op just submitted to `s` became (the capture's one dependency now).
///
/// # Safety
/// `s` is capturing.
unsafe fn captured_node(s: CUstream) -> Result<sys::CUgraphNode> {
    let mut status = sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
    let (mut id, mut graph) = (0u64, std::ptr::null_mut());
    let (mut deps, mut edges, mut n): (*const sys::CUgraphNode, *const sys::CUgraphEdgeData, usize) =
        (std::ptr::null(), std::ptr::null(), 0);
    // SAFETY: out-pointers to locals.
    let r =
        unsafe { sys::cuStreamGetCaptureInfo_v3(s, &mut status, &mut id, &mut graph, &mut deps, &mut edges, &mut n) };
    ck(r, "cuStreamGetCaptureInfo")?;
    if n != 1 || deps.is_null() {
        anyhow::bail!("an op captured as {n} graph nodes, not 1");
    }
    // SAFETY: the driver's array of n (= 1) nodes, valid until the next capture call.
    Ok(unsafe { *deps })
}

impl Drop for GraphExecs {
    fn drop(&mut self) {
        // SAFETY: handles created by build; errors ignored at teardown.
        unsafe {
            for &e in self.execs.get_mut().iter() {
                sys::cuGraphExecDestroy(e);
            }
            for &g in &self.graphs {
                sys::cuGraphDestroy(g);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{AsGraph, GraphExecs, eager_streams_note};
    use crate::plan::{Launch, LaunchApi, Op, OpKind};

    fn launch(stream: usize) -> Op {
        let l = Launch {
            api: LaunchApi::Kernel,
            load: 0,
            kernel: "k".into(),
            via_library: true,
            grid: [1; 3],
            block: [1; 3],
            shared_mem: 0,
            params: Vec::new(),
            params_len: 0,
            params_from: "extra".into(),
            layout: None,
            attrs: Vec::new(),
        };
        Op { line: 0, ts: 0, duration_ns: None, pid: 1, tid: 1, stream: Some(stream), kind: OpKind::Launch(l) }
    }

    fn sync() -> Op {
        Op { line: 0, ts: 0, duration_ns: None, pid: 1, tid: 1, stream: None, kind: OpKind::CtxSync }
    }

    /// The note names the streams with launches outside rebuilt graphs, only where there are
    /// two or more of them and a graph was rebuilt.
    #[test]
    fn eager_launches_on_several_streams_are_noted() {
        // ops: a launch on stream 0, a sync, a launch on 2, a launch on 1 inside a graph, one on 0
        let ops = [launch(0), sync(), launch(2), launch(1), launch(0)];
        let in_graph = [false, false, false, true, false];
        let none = [false; 5];
        let note = eager_streams_note(&ops, &in_graph, &none, 1).unwrap();
        assert!(note.starts_with("each pass launches kernels outside graphs on 2 streams (0, 2) after"), "{note}");
        // no graph rebuilt: nothing to say
        assert_eq!(eager_streams_note(&ops, &in_graph, &none, 0), None);
        // the launch on stream 2 left out (--skip-ops): one stream only
        assert_eq!(eager_streams_note(&ops, &in_graph, &[false, false, true, false, false], 1), None);
        // a launch inside the graph does not count: stream 1 alone outside is one stream
        assert_eq!(eager_streams_note(&ops[3..], &[false, true], &[false; 2], 1), None);
        let three = eager_streams_note(&ops, &[false; 5], &none, 2).unwrap();
        assert!(three.contains("on 3 streams (0, 2, 1)"), "{three}");
    }

    /// The ops of each rebuilt launch run inside it (`--skip-ops` never leaves them out).
    #[test]
    fn ops_inside_rebuilt_launches() {
        let mut g = GraphExecs::default();
        for (first, ops) in [(2, 3), (6, 1)] {
            g.at.insert(first, AsGraph { ops, exec: 0, stream: 0 });
        }
        assert_eq!(g.inside(8), [false, false, true, true, true, false, true, false]);
        // a launch running past the ops asked about is cut there
        assert_eq!(g.inside(3), [false, false, true]);
        assert!(GraphExecs::default().inside(4).iter().all(|x| !x));
    }
}
