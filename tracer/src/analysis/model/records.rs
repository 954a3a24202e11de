//! The plain records of the typed trace model: one driver call ([`Call`],
//! 64 bytes), process, ioctl, marker and power lines, measured GPU work, and
//! what they are made of (interned [`Strings`], [`Kind`], [`Dir`], [`Geom`],
//! the flags). Words of the format come from tracer-format's vocabulary
//! (tracer_format::line::vocab).
use std::collections::BTreeMap;

use tracer_format::line::{CallOp, CopyDir, GpuActivity, LineType, ProcessOp};

use crate::analysis::fasthash::FxHashMap;

pub use tracer_format::line::MarkerOp;

/// Sentinel for "no stream / no handle".
pub const NONE: u64 = u64::MAX;
/// Sentinel for "no interned string".
pub const NO_STR: u32 = u32::MAX;
/// [`Call::device`] when the line gives none: `null` (the decoder did not
/// know the thread's context) or no `device` field (traces recorded before
/// device tracking).
pub const NO_DEVICE: u8 = u8::MAX;

/// Interned strings (function, kernel, ioctl names).
#[derive(Default, Debug, Clone)]
pub struct Strings {
    map: FxHashMap<Box<str>, u32>,
    names: Vec<Box<str>>,
}

impl Strings {
    pub fn intern(&mut self, s: &str) -> u32 {
        if let Some(&i) = self.map.get(s) {
            return i;
        }
        let i = self.names.len() as u32;
        self.names.push(s.into());
        self.map.insert(s.into(), i);
        i
    }
    /// The string of id `i` ("" for [`NO_STR`]).
    pub fn get(&self, i: u32) -> &str {
        self.names.get(i as usize).map_or("", |s| s)
    }
    pub fn lookup(&self, s: &str) -> Option<u32> {
        self.map.get(s).copied()
    }
    /// Every string, by id.
    pub fn names(&self) -> &[Box<str>] {
        &self.names
    }
}

/// What a driver call does, as far as the analyses care.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Kind {
    /// cuLaunchKernel, cuLaunchKernelEx, cuLaunchCooperativeKernel, …
    Launch,
    GraphLaunch,
    /// Async copy (name contains "Async").
    CopyAsync,
    /// Synchronous copy (cuMemcpyHtoD_v2, cuMemcpy, …).
    Copy,
    MemsetAsync,
    Memset,
    Alloc,
    Free,
    StreamSync,
    CtxSync,
    EventSync,
    /// cuStreamQuery / cuEventQuery: polling, does not block.
    Query,
    StreamWaitEvent,
    EventRecord,
    StreamCreate,
    /// Module/library loading and lookups.
    Module,
    Init,
    Context,
    Other,
    /// A launch, copy, set or event call made while its stream captured
    /// into a graph (`capture` on its line): recorded, not run
    /// (analysis/graphs.rs).
    Captured,
}

impl Kind {
    pub fn is_gpu_work(self) -> bool {
        matches!(
            self,
            Kind::Launch | Kind::GraphLaunch | Kind::CopyAsync | Kind::Copy | Kind::MemsetAsync | Kind::Memset
        )
    }
    pub fn is_blocking_sync(self) -> bool {
        matches!(self, Kind::StreamSync | Kind::CtxSync | Kind::EventSync)
    }

    /// Classifies a call line by its `type` (None: a type the format does
    /// not have), `op` and exported-function `name`.
    pub fn classify(ty: Option<LineType>, op: &str, name: &str) -> Kind {
        if ty == Some(LineType::Kernel) && op == CallOp::Launch.as_str() {
            return Kind::Launch; // most lines: before the name is looked at
        }
        let base = name.trim_end_matches("_ptsz").trim_end_matches("_ptds");
        let call_op = CallOp::parse(op);
        match ty {
            Some(LineType::Graph) if call_op == Some(CallOp::GraphLaunch) => Kind::GraphLaunch,
            Some(LineType::Memcpy) => {
                if base.contains("Async") {
                    Kind::CopyAsync
                } else {
                    Kind::Copy
                }
            }
            Some(LineType::Memset) => {
                if base.contains("Async") {
                    Kind::MemsetAsync
                } else {
                    Kind::Memset
                }
            }
            Some(LineType::Memory)
                if call_op == Some(CallOp::Alloc) || base.starts_with("cuMemAlloc") || base == "cuMemCreate" =>
            {
                Kind::Alloc
            }
            Some(LineType::Memory)
                if call_op == Some(CallOp::Free) || base.starts_with("cuMemFree") || base == "cuMemRelease" =>
            {
                Kind::Free
            }
            _ => match call_op {
                Some(CallOp::StreamSynchronize) => Kind::StreamSync,
                Some(CallOp::CtxSynchronize) => Kind::CtxSync,
                Some(CallOp::EventSynchronize) => Kind::EventSync,
                Some(CallOp::StreamQuery | CallOp::EventQuery) => Kind::Query,
                Some(CallOp::StreamWaitEvent) => Kind::StreamWaitEvent,
                Some(CallOp::EventRecord | CallOp::EventRecordWithFlags) => Kind::EventRecord,
                Some(CallOp::StreamCreate | CallOp::StreamCreateWithPriority) => Kind::StreamCreate,
                // a line without its op: the function's class from its name
                None if op.is_empty() && ty == Some(LineType::Sync) => match tracer_common::funcs::base_name(base) {
                    "cuStreamSynchronize" => Kind::StreamSync,
                    "cuCtxSynchronize" => Kind::CtxSync,
                    "cuEventSynchronize" => Kind::EventSync,
                    "cuStreamQuery" | "cuEventQuery" => Kind::Query,
                    _ => Kind::Other,
                },
                _ => match ty {
                    Some(LineType::Module) => Kind::Module,
                    Some(LineType::Init) => Kind::Init,
                    Some(LineType::Context) => Kind::Context,
                    _ => Kind::Other,
                },
            },
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Dir {
    None,
    H2D,
    D2H,
    D2D,
    H2H,
    Peer,
    Default,
}

impl From<CopyDir> for Dir {
    fn from(d: CopyDir) -> Dir {
        match d {
            CopyDir::H2D => Dir::H2D,
            CopyDir::D2H => Dir::D2H,
            CopyDir::D2D => Dir::D2D,
            CopyDir::H2H => Dir::H2H,
            CopyDir::Peer => Dir::Peer,
            CopyDir::Default => Dir::Default,
        }
    }
}

impl Dir {
    /// A line's `direction` ([`Dir::Default`] for a word the format does
    /// not have, e.g. `batch`).
    pub fn parse(s: &str) -> Dir {
        CopyDir::parse(s).map_or(Dir::Default, Dir::from)
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Dir::None => "none",
            Dir::H2D => CopyDir::H2D.as_str(),
            Dir::D2H => CopyDir::D2H.as_str(),
            Dir::D2D => CopyDir::D2D.as_str(),
            Dir::H2H => CopyDir::H2H.as_str(),
            Dir::Peer => CopyDir::Peer.as_str(),
            Dir::Default => CopyDir::Default.as_str(),
        }
    }
}

/// Launch geometry, interned (most launches share a few).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Geom {
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub shared_mem: u32,
}

pub const FLAG_INCOMPLETE: u8 = 1;
pub const FLAG_ENTRY_LOST: u8 = 2;
pub const FLAG_FAILED: u8 = 4;
/// The call had a `ret` (a return probe fired).
pub const FLAG_RETURNED: u8 = 8;
/// A query answered CUDA_ERROR_NOT_READY (work still pending).
pub const FLAG_NOT_READY: u8 = 16;
/// A graph launch whose work is in the calls that follow it (model/graphs.rs).
pub const FLAG_EXPANDED: u8 = 32;
/// A node's work, expanded from the graph launch before it.
pub const FLAG_FROM_GRAPH: u8 = 64;

/// One driver call.
#[derive(Clone, Copy, Debug)]
pub struct Call {
    /// Entry, CLOCK_MONOTONIC ns.
    pub ts: u64,
    /// Duration ns (0 when the call did not return or no return probes).
    pub dur: u64,
    /// CUstream handle or [`NONE`].
    pub stream: u64,
    /// The CUevent (event calls), the created stream (cuStreamCreate), the
    /// CUgraphExec of an expanded graph launch, a graph node (work expanded
    /// from a graph launch), else [`NONE`].
    pub obj: u64,
    /// Bytes (alloc, copy, set), else 0.
    pub size: u64,
    pub pid: u32,
    pub tid: u32,
    /// Interned exported-function name.
    pub func: u32,
    /// Interned kernel name or [`NO_STR`].
    pub kernel: u32,
    /// Index into [`Trace::geoms`] or u32::MAX.
    pub geom: u32,
    pub kind: Kind,
    pub dir: Dir,
    pub flags: u8,
    /// The CUDA device ordinal the call ran on, or [`NO_DEVICE`].
    pub device: u8,
}

impl Call {
    /// The device ordinal, if the line gave one.
    pub fn device(&self) -> Option<u32> {
        (self.device != NO_DEVICE).then_some(u32::from(self.device))
    }
    /// A call the program made (not a node of a graph launch, which the
    /// model adds after the launch: analysis/graphs.rs).
    pub fn is_driver_call(&self) -> bool {
        self.flags & FLAG_FROM_GRAPH == 0
    }
    /// A graph node's work expanded from a graph launch.
    pub fn from_graph(&self) -> bool {
        self.flags & FLAG_FROM_GRAPH != 0
    }
    /// A graph launch whose nodes follow it in `Trace::calls`.
    pub fn expanded(&self) -> bool {
        self.flags & FLAG_EXPANDED != 0
    }
    pub fn end(&self) -> u64 {
        self.ts.saturating_add(self.dur)
    }
    pub fn failed(&self) -> bool {
        self.flags & FLAG_FAILED != 0
    }
    pub fn incomplete(&self) -> bool {
        self.flags & FLAG_INCOMPLETE != 0
    }
    pub fn entry_lost(&self) -> bool {
        self.flags & FLAG_ENTRY_LOST != 0
    }
    /// cuStreamQuery / cuEventQuery answered CUDA_SUCCESS: the work was done
    /// when it returned.
    pub fn query_done(&self) -> bool {
        self.kind == Kind::Query
            && self.flags & FLAG_RETURNED != 0
            && self.flags & (FLAG_FAILED | FLAG_NOT_READY | FLAG_INCOMPLETE) == 0
    }
    /// `_ptsz`/`_ptds` variant: stream 0 is the per-thread default stream.
    pub fn per_thread_variant(&self, s: &Strings) -> bool {
        let n = s.get(self.func);
        n.ends_with("_ptsz") || n.ends_with("_ptds")
    }
}

/// A `process` line's op.
pub type ProcOp = ProcessOp;

#[derive(Clone, Debug)]
pub struct ProcEvent {
    pub ts: u64,
    pub pid: u32,
    pub tid: u32,
    pub op: ProcOp,
    /// fork: the new task.
    pub child: Option<u32>,
    /// exec: the program.
    pub filename: Option<String>,
    /// exec: the process's rank in a distributed job (its RANK variable).
    pub rank: Option<u64>,
}

/// An ioctl on an NVIDIA device file, or (`file_op`) an open/close/mmap/munmap of one.
#[derive(Clone, Copy, Debug)]
pub struct Ioctl {
    pub ts: u64,
    pub dur: u64,
    pub pid: u32,
    pub tid: u32,
    /// Interned escape name (or file op).
    pub name: u32,
    /// Interned name of the CUDA call in progress, or [`NO_STR`].
    pub cuda_call: u32,
    pub failed: bool,
    pub file_op: bool,
}

#[derive(Clone, Debug)]
pub struct Marker {
    pub ts: u64,
    pub pid: u32,
    pub tid: u32,
    pub op: MarkerOp,
    pub label: String,
    pub tokens: Option<u64>,
}

/// One NVML sample (lines.md #2); absent values are None.
#[derive(Clone, Copy, Debug, Default)]
pub struct PowerSample {
    pub ts: u64,
    pub gpu: u32,
    pub energy_mj: Option<u64>,
    pub power_mw: Option<u64>,
    pub sm_clock_mhz: Option<u32>,
    pub mem_clock_mhz: Option<u32>,
    pub util_gpu_pct: Option<u32>,
    pub util_mem_pct: Option<u32>,
    pub temp_c: Option<u32>,
}

/// What a `gpu` line measured (its `op`).
pub type GpuOpKind = GpuActivity;

/// Measured GPU activity (lines.md #3, CUPTI).
#[derive(Clone, Copy, Debug)]
pub struct GpuOp {
    pub start: u64,
    pub end: u64,
    pub pid: u32,
    pub device: u32,
    pub stream_id: u64,
    /// CUstream handle or [`NONE`].
    pub stream: u64,
    pub correlation_id: u64,
    pub kind: GpuOpKind,
    /// Interned kernel name or copy kind.
    pub name: u32,
    pub geom: u32,
    pub size: u64,
    pub dir: Dir,
    /// CUPTI's graphId and graphNodeId of a kernel a graph launch ran (0
    /// otherwise): tied to nodes by model/graph_measured.rs.
    pub graph_id: u32,
    pub graph_node_id: u64,
}

/// Where records are missing, found from the (cpu, seq) pairs.
#[derive(Clone, Debug, Default)]
pub struct LossScan {
    /// cpu -> (sequence numbers seen, highest seen, missing ranges [a, b]).
    pub by_cpu: BTreeMap<u32, CpuSeqs>,
}

#[derive(Clone, Debug, Default)]
pub struct CpuSeqs {
    pub seen: u64,
    pub max: u64,
    /// Up to 20 missing ranges (inclusive).
    pub holes: Vec<(u64, u64)>,
    pub missing: u64,
    pub duplicates: u64,
}

impl LossScan {
    pub fn missing(&self) -> u64 {
        self.by_cpu.values().map(|c| c.missing).sum()
    }
}

/// A window of measured GPU activity (`type: "gpu_window"`): CUPTI's kernel,
/// copy and set records were on from `start` to `end` in process `pid`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GpuWindow {
    pub pid: u32,
    pub start: u64,
    pub end: u64,
}

/// Parses "0x1f" (or a decimal) into a number.
pub fn parse_handle(s: &str) -> Option<u64> {
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}
