//! The recording's graph execs rebuilt as CUDA graphs. Each exec the plan
//! lists (`Plan::graph_launches`, plan/graphs.rs) is built once, before any
//! pass, by capturing its ops — the exec's kernels, copies and sets in
//! dependency order, prepared like every other op (translated addresses,
//! relocated parameters) — on a stream of its own, then instantiated. A pass
//! launches the exec with `cuGraphLaunch` on the recorded launch's stream in
//! place of those ops, so the driver's graph launch path and the graph's
//! scheduling on the GPU are replayed, not separate launches. The nodes form
//! one chain (the recorded order, which keeps every dependency; parallel
//! branches of an explicit graph are serialized). An exec that cannot be
//! rebuilt (capture or instantiation refused) has its launches run as
//! separate launches, with a note saying why.

use std::collections::HashMap;

use anyhow::Result;
use cudarc::driver::sys;

use super::cuda::{CUstream, ck};
use crate::plan::Plan;

/// A graph launch run as a rebuilt exec: its ops, the exec, the plan stream.
#[derive(Clone, Copy)]
pub struct AsGraph {
    pub ops: usize,
    pub exec: sys::CUgraphExec,
    pub stream: usize,
}

#[derive(Default)]
pub struct GraphExecs {
    /// First op of a graph launch -> how it runs.
    at: HashMap<usize, AsGraph>,
    graphs: Vec<sys::CUgraph>,
    execs: Vec<sys::CUgraphExec>,
    /// Execs rebuilt, and launches that will run them.
    pub rebuilt: usize,
    pub launches: usize,
    /// Why an exec was not rebuilt (its launches run as separate launches).
    pub notes: Vec<String>,
}

impl GraphExecs {
    /// Rebuilds every exec of `plan.graph_launches`; `submit(op, stream)`
    /// submits a prepared op to the capturing stream.
    pub fn build(plan: &Plan, submit: impl Fn(usize, CUstream) -> Result<()>) -> Result<GraphExecs> {
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
        let mut built: HashMap<usize, Option<sys::CUgraphExec>> = HashMap::new();
        for l in &plan.graph_launches {
            let exec = match built.get(&l.exec) {
                Some(e) => *e,
                None => {
                    let e = match capture(s, l.first_op, l.ops, &submit) {
                        Ok((graph, exec)) => {
                            g.graphs.push(graph);
                            g.execs.push(exec);
                            g.rebuilt += 1;
                            Some(exec)
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
}

/// Captures ops `first..first + n` on `s` into a graph and instantiates it.
fn capture(
    s: CUstream,
    first: usize,
    n: usize,
    submit: &impl Fn(usize, CUstream) -> Result<()>,
) -> Result<(sys::CUgraph, sys::CUgraphExec)> {
    // SAFETY: plain driver calls on our own stream; the capture is always ended.
    unsafe {
        ck(
            sys::cuStreamBeginCapture_v2(s, sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED),
            "cuStreamBeginCapture",
        )?;
        let mut err = None;
        for i in first..first + n {
            if let Err(e) = submit(i, s) {
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
        if let Err(e) = ck(sys::cuGraphInstantiateWithFlags(&mut exec, graph, 0), "cuGraphInstantiate") {
            sys::cuGraphDestroy(graph);
            return Err(e);
        }
        Ok((graph, exec))
    }
}

impl Drop for GraphExecs {
    fn drop(&mut self) {
        // SAFETY: handles created by build; errors ignored at teardown.
        unsafe {
            for &e in &self.execs {
                sys::cuGraphExecDestroy(e);
            }
            for &g in &self.graphs {
                sys::cuGraphDestroy(g);
            }
        }
    }
}
