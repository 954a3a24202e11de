//! CUDA graph calls → line fields: stream capture (which later launches,
//! copies, sets and event calls were captured, and into which capture),
//! graph construction (nodes with their kind, parameters and
//! dependencies), updates, instantiation and launches. The fields are
//! described in docs/trace-format.md ("CUDA graphs"). Pure.
use std::collections::HashMap;
use std::rc::Rc;

use serde_json::{Map, Value, json};
use tracer_common::funcs::{Arg, Class, FuncSpec};

use crate::decode::args::{Captured, Copy2D3D, hex};
pub use crate::decode::graph_structs::{KernelNode, MemsetNode, Parts, node_type_name, parts};
use tracer_format::hex::json_list;

fn u32_at(b: &[u8], off: usize) -> Option<u32> {
    b.get(off..off + 4).map(|s| u32::from_le_bytes(s.try_into().unwrap()))
}
fn u64_at(b: &[u8], off: usize) -> Option<u64> {
    b.get(off..off + 8).map(|s| u64::from_le_bytes(s.try_into().unwrap()))
}

/// The streams capturing right now, per process, and the events recorded
/// in a capture (a stream that waits on one joins that capture).
#[derive(Default)]
pub struct Captures {
    next: u64,
    streams: HashMap<(u32, u64), u64>,
    events: HashMap<(u32, u64), u64>,
}

impl Captures {
    /// Whether some stream is capturing (launch lines then take the general
    /// path, which adds `capture`).
    pub fn active(&self) -> bool {
        !self.streams.is_empty()
    }

    /// Marks a launch, copy, set or event call made on a capturing stream
    /// with its capture (`capture`): the work was recorded into a graph, not
    /// run. An event recorded in a capture carries it to the streams that
    /// wait on it (they join the capture).
    pub fn mark(&mut self, spec: &FuncSpec, pid: u32, c: &Captured, m: &mut Map<String, Value>) {
        if self.streams.is_empty() {
            return;
        }
        let stream = m.get("stream").and_then(Value::as_str).and_then(tracer_format::hex::parse_addr);
        let Some(stream) = stream else { return };
        let cap = self.streams.get(&(pid, stream)).copied();
        let id = match (spec.class, spec.name) {
            (Class::Launch | Class::Copy | Class::Set, _) => cap,
            (Class::Event, "cuEventRecord" | "cuEventRecordWithFlags") => {
                if let Some(id) = cap {
                    self.events.insert((pid, c.args[0]), id);
                }
                cap
            }
            (Class::Sync, "cuStreamWaitEvent") => {
                let joined = self.events.get(&(pid, c.args[1])).copied();
                if let (None, Some(id)) = (cap, joined) {
                    self.streams.insert((pid, stream), id);
                }
                cap.or(joined)
            }
            _ => None,
        };
        if let Some(id) = id {
            m.insert("capture".into(), json!(id));
        }
    }

    /// The fields of a graph call (`Class::Graph`). `name_of` gives a
    /// kernel handle's name.
    pub fn graph_fields(
        &mut self,
        spec: &FuncSpec,
        pid: u32,
        c: &Captured,
        ok: bool,
        name_of: &dyn Fn(u64) -> Option<Rc<str>>,
        m: &mut Map<String, Value>,
    ) {
        let out0 = c.outs.and_then(|o| o.get(0)).filter(|_| ok);
        let a = |i: usize| c.args.get(i).copied().unwrap_or(0);
        let p = parts(spec, c.args, c.blob, c.nattrs);
        match spec.name {
            "cuStreamBeginCapture_v2" | "cuStreamBeginCapture" | "cuStreamBeginCaptureToGraph" => {
                if ok {
                    self.next += 1;
                    self.streams.insert((pid, a(0)), self.next);
                    m.insert("capture".into(), json!(self.next));
                }
                if spec.name == "cuStreamBeginCaptureToGraph" {
                    m.insert("graph".into(), hex(a(1)));
                    deps(&p, m);
                }
            }
            "cuStreamEndCapture" => {
                if let Some(id) = self.streams.remove(&(pid, a(0))) {
                    self.streams.retain(|_, v| *v != id);
                    self.events.retain(|_, v| *v != id);
                    m.insert("capture".into(), json!(id));
                }
                if let Some(g) = out0 {
                    m.insert("graph".into(), hex(g));
                }
            }
            "cuGraphCreate" => put(m, "graph", out0),
            "cuGraphClone" => {
                put(m, "graph", out0);
                m.insert("original".into(), hex(a(1)));
            }
            "cuGraphNodeFindInClone" => {
                put(m, "node", out0);
                m.insert("original_node".into(), hex(a(1)));
                m.insert("graph".into(), hex(a(2)));
            }
            "cuGraphDestroy" => {
                m.insert("graph".into(), hex(a(0)));
            }
            "cuGraphExecDestroy" | "cuGraphUpload" | "cuGraphLaunch" => {
                m.insert("graph_exec".into(), hex(a(0)));
            }
            "cuGraphInstantiateWithFlags"
            | "cuGraphInstantiateWithParams"
            | "cuGraphInstantiate_v2"
            | "cuGraphInstantiate" => {
                put(m, "graph_exec", out0);
                m.insert("graph".into(), hex(a(1)));
            }
            "cuGraphExecUpdate_v2" | "cuGraphExecUpdate" => {
                m.insert("graph_exec".into(), hex(a(0)));
                m.insert("graph".into(), hex(a(1)));
            }
            "cuGraphAddDependencies" | "cuGraphAddDependencies_v2" => {
                m.insert("graph".into(), hex(a(0)));
                m.insert("from".into(), json_list(&p.first));
                m.insert("to".into(), json_list(&p.second));
                cut(&p, m);
            }
            "cuGraphDestroyNode" => {
                m.insert("node".into(), hex(a(0)));
            }
            n if n.starts_with("cuGraphAdd") => {
                put(m, "node", out0);
                m.insert("graph".into(), hex(a(1)));
                deps(&p, m);
                let strukt = spec.params.iter().map(|q| q.kind).find(|k| k.blob_size() > 0);
                match n {
                    "cuGraphAddEventRecordNode" => node_event(m, "event_record", a(4)),
                    "cuGraphAddEventWaitNode" => node_event(m, "event_wait", a(4)),
                    "cuGraphAddChildGraphNode" => {
                        m.insert("node_type".into(), json!("graph"));
                        m.insert("child_graph".into(), hex(a(4)));
                    }
                    "cuGraphAddEmptyNode" => {
                        m.insert("node_type".into(), json!("empty"));
                    }
                    _ => node_params(m, p.strukt, strukt.unwrap_or(Arg::Ptr), name_of),
                }
            }
            "cuGraphKernelNodeSetParams" | "cuGraphKernelNodeSetParams_v2" | "cuGraphNodeSetParams" => {
                m.insert("node".into(), hex(a(0)));
                node_params(m, p.strukt, spec.params[1].kind, name_of);
            }
            "cuGraphExecKernelNodeSetParams" | "cuGraphExecKernelNodeSetParams_v2" | "cuGraphExecNodeSetParams" => {
                m.insert("graph_exec".into(), hex(a(0)));
                m.insert("node".into(), hex(a(1)));
                node_params(m, p.strukt, spec.params[2].kind, name_of);
            }
            _ => {}
        }
    }
}

fn put(m: &mut Map<String, Value>, key: &str, v: Option<u64>) {
    if let Some(v) = v {
        m.insert(key.into(), hex(v));
    }
}

fn deps(p: &Parts, m: &mut Map<String, Value>) {
    m.insert("deps".into(), json_list(&p.first));
    cut(p, m);
}

/// Handles the call passed beyond what the probe copies (or all of them
/// when the list was unreadable): counted, never dropped silently.
fn cut(p: &Parts, m: &mut Map<String, Value>) {
    let n = p.total.saturating_sub(p.first.len() as u64);
    if n > 0 {
        m.insert("deps_cut".into(), json!(n));
    }
}

fn node_event(m: &mut Map<String, Value>, ty: &str, ev: u64) {
    m.insert("node_type".into(), json!(ty));
    m.insert("event".into(), hex(ev));
}

/// The node kind and its parameters as top-level fields (kernel, grid,
/// block, shared_mem / size, direction, dst, src / value).
fn node_params(m: &mut Map<String, Value>, b: Option<&[u8]>, kind: Arg, name_of: &dyn Fn(u64) -> Option<Rc<str>>) {
    let Some(b) = b else {
        if matches!(kind, Arg::KernelNode | Arg::KernelNodeV1) {
            m.insert("node_type".into(), json!("kernel"));
        } else if kind == Arg::MemsetNode {
            m.insert("node_type".into(), json!("memset"));
        } else if kind == Arg::Memcpy3D {
            m.insert("node_type".into(), json!("memcpy"));
        }
        m.insert("params_unread".into(), json!(true));
        return;
    };
    match kind {
        Arg::KernelNode | Arg::KernelNodeV1 => {
            if let Some(k) = KernelNode::parse(b, kind == Arg::KernelNode) {
                kernel_fields(m, &k, name_of);
            }
        }
        Arg::MemsetNode => {
            if let Some(s) = MemsetNode::parse(b) {
                memset_fields(m, &s);
            }
        }
        Arg::Memcpy3D => {
            m.insert("node_type".into(), json!("memcpy"));
            if let Some(cp) = Copy2D3D::parse(Arg::Memcpy3D, b) {
                m.insert("size".into(), json!(cp.bytes()));
                m.insert("direction".into(), json!(cp.direction()));
                m.insert("dst".into(), hex(cp.dst));
                m.insert("src".into(), hex(cp.src));
                // What a replay needs of a one-row copy: its shape and where it starts.
                m.insert("width".into(), json!(cp.width));
                m.insert("height".into(), json!(cp.height));
                m.insert("depth".into(), json!(cp.depth));
                m.insert("src_offset".into(), json!(cp.src_offset));
                m.insert("dst_offset".into(), json!(cp.dst_offset));
            }
        }
        Arg::GraphNodeParams => {
            let Some(t) = u32_at(b, 0) else { return };
            let u = &b[16.min(b.len())..];
            match t {
                0 => {
                    if let Some(k) = KernelNode::parse(u, true) {
                        kernel_fields(m, &k, name_of);
                    }
                }
                1 => node_params(m, u.get(16..), Arg::Memcpy3D, name_of),
                2 => {
                    if let Some(s) = MemsetNode::parse(u) {
                        memset_fields(m, &s);
                    }
                }
                4 => {
                    m.insert("node_type".into(), json!("graph"));
                    put(m, "child_graph", u64_at(u, 0));
                }
                6 | 7 => {
                    m.insert("node_type".into(), json!(node_type_name(t)));
                    put(m, "event", u64_at(u, 0));
                }
                _ => {
                    m.insert("node_type".into(), json!(node_type_name(t)));
                }
            }
        }
        _ => {}
    }
}

fn kernel_fields(m: &mut Map<String, Value>, k: &KernelNode, name_of: &dyn Fn(u64) -> Option<Rc<str>>) {
    m.insert("node_type".into(), json!("kernel"));
    m.insert("func".into(), hex(k.handle()));
    m.insert("kernel".into(), name_of(k.handle()).map_or(Value::Null, |n| json!(&*n)));
    m.insert("grid".into(), json!(k.grid));
    m.insert("block".into(), json!(k.block));
    m.insert("shared_mem".into(), json!(k.shared_mem));
}

fn memset_fields(m: &mut Map<String, Value>, s: &MemsetNode) {
    m.insert("node_type".into(), json!("memset"));
    m.insert("size".into(), json!(s.bytes()));
    m.insert("dst".into(), hex(s.dst));
    m.insert("value".into(), json!(s.value));
    // What a replay needs of the set (cuGraphAddNode has no memsetParams argument).
    m.insert("element_size".into(), json!(s.element_size));
    m.insert("width".into(), json!(s.width));
    m.insert("height".into(), json!(s.height));
    if s.height > 1 {
        m.insert("pitch".into(), json!(s.pitch));
    }
}

#[cfg(test)]
#[path = "graph_calls_tests.rs"]
mod tests;
