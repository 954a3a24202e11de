//! The structs of CUDA graph calls, read from captured bytes: kernel and
//! memset node parameters, the node type, and the split of a graph call's
//! record into its struct and node lists (tracer-common/src/graph.rs).
//! Pure; a leaf of the decode layer (args.rs and graph_calls.rs use it).
use serde_json::{Value, json};
use tracer_common::event::BLOB_CAP;
use tracer_common::funcs::{Arg, FuncSpec};
use tracer_common::graph::{NODES_OFF, STRUCT_READ};

use tracer_format::hex::json as hex;

fn u32_at(b: &[u8], off: usize) -> Option<u32> {
    b.get(off..off + 4).map(|s| u32::from_le_bytes(s.try_into().unwrap()))
}
fn u64_at(b: &[u8], off: usize) -> Option<u64> {
    b.get(off..off + 8).map(|s| u64::from_le_bytes(s.try_into().unwrap()))
}

/// A kernel node's parameters (CUDA_KERNEL_NODE_PARAMS v1/v2/v3 share the prefix).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelNode {
    pub func: u64,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub shared_mem: u32,
    pub kernel_params: u64,
    pub extra: u64,
    /// v2+: the CUkernel (used when `func` is 0).
    pub kern: u64,
}

impl KernelNode {
    pub fn parse(b: &[u8], v2: bool) -> Option<Self> {
        let w = |i: usize| u32_at(b, 8 + 4 * i);
        Some(KernelNode {
            func: u64_at(b, 0)?,
            grid: [w(0)?, w(1)?, w(2)?],
            block: [w(3)?, w(4)?, w(5)?],
            shared_mem: w(6)?,
            kernel_params: u64_at(b, 40)?,
            extra: u64_at(b, 48)?,
            kern: if v2 { u64_at(b, 56)? } else { 0 },
        })
    }
    /// The handle the kernel's name is known by.
    pub fn handle(&self) -> u64 {
        if self.func == 0 { self.kern } else { self.func }
    }
}

/// CUDA_MEMSET_NODE_PARAMS.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemsetNode {
    pub dst: u64,
    /// Bytes between rows (2-D sets).
    pub pitch: u64,
    pub value: u32,
    pub element_size: u32,
    pub width: u64,
    pub height: u64,
}

impl MemsetNode {
    pub fn parse(b: &[u8]) -> Option<Self> {
        Some(MemsetNode {
            dst: u64_at(b, 0)?,
            pitch: u64_at(b, 8)?,
            value: u32_at(b, 16)?,
            element_size: u32_at(b, 20)?,
            width: u64_at(b, 24)?,
            height: u64_at(b, 32)?,
        })
    }
    pub fn bytes(&self) -> u64 {
        (self.element_size as u64).saturating_mul(self.width).saturating_mul(self.height.max(1))
    }
}

/// The name of a CUgraphNodeType.
pub fn node_type_name(t: u32) -> &'static str {
    match t {
        0 => "kernel",
        1 => "memcpy",
        2 => "memset",
        3 => "host",
        4 => "graph",
        5 => "empty",
        6 => "event_wait",
        7 => "event_record",
        8 => "ext_semas_signal",
        9 => "ext_semas_wait",
        10 => "mem_alloc",
        11 => "mem_free",
        12 => "batch_mem_op",
        13 => "conditional",
        _ => "unknown",
    }
}

/// The struct part of a graph call's captured blob (None when the struct
/// was not readable), and its node lists: (first list, second list, handles
/// the call passed per list).
pub struct Parts<'a> {
    pub strukt: Option<&'a [u8]>,
    pub first: Vec<u64>,
    pub second: Vec<u64>,
    pub total: u64,
}

fn words(b: &[u8], n: usize) -> Vec<u64> {
    b.chunks_exact(8).take(n).map(|c| u64::from_le_bytes(c.try_into().unwrap())).collect()
}

/// Splits a graph call's record (tracer-common/src/graph.rs) into struct
/// and node lists. Functions without node lists: the blob as it is.
pub fn parts<'a>(spec: &FuncSpec, args: &[u64], blob: Option<&'a [u8]>, nattrs: u32) -> Parts<'a> {
    let lists: Vec<usize> =
        spec.params.iter().enumerate().filter(|(_, p)| p.kind == Arg::Nodes).map(|(i, _)| i).collect();
    if lists.is_empty() {
        return Parts { strukt: blob, first: vec![], second: vec![], total: 0 };
    }
    let count =
        spec.params.iter().position(|p| p.name == "numDependencies" || p.name == "count").map_or(0, |i| args[i]);
    let Some(b) = blob.filter(|b| b.len() == BLOB_CAP) else {
        return Parts { strukt: None, first: vec![], second: vec![], total: count };
    };
    let got = (nattrs & 0xffff) as usize;
    let struct_size = spec.params.iter().map(|p| p.kind.blob_size()).max().unwrap_or(0);
    let strukt = (nattrs & STRUCT_READ != 0 && struct_size > 0).then(|| &b[..struct_size]);
    if lists.len() == 2 {
        Parts { strukt: None, first: words(&b[..NODES_OFF], got), second: words(&b[NODES_OFF..], got), total: count }
    } else {
        Parts { strukt, first: words(&b[NODES_OFF..], got), second: vec![], total: count }
    }
}

/// The struct argument's JSON for `args` (the node kinds' structs).
pub fn decode_struct(kind: Arg, b: &[u8]) -> Value {
    match kind {
        Arg::KernelNode | Arg::KernelNodeV1 => match KernelNode::parse(b, kind == Arg::KernelNode) {
            Some(k) => json!({
                "func": hex(k.func), "gridDim": k.grid, "blockDim": k.block, "sharedMemBytes": k.shared_mem,
                "kernelParams": hex(k.kernel_params), "extra": hex(k.extra), "kern": hex(k.kern),
            }),
            None => Value::Null,
        },
        Arg::MemsetNode => match MemsetNode::parse(b) {
            Some(s) => json!({
                "dst": hex(s.dst), "pitch": s.pitch, "value": s.value, "elementSize": s.element_size,
                "width": s.width, "height": s.height,
            }),
            None => Value::Null,
        },
        Arg::GraphNodeParams => match u32_at(b, 0) {
            Some(t) => json!({ "type": node_type_name(t) }),
            None => Value::Null,
        },
        _ => Value::Null,
    }
}
