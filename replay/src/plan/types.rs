//! What a plan is made of.

use serde::Serialize;

use crate::recording::KernelLayout;

/// One recorded image load (module or library), in recorded order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ImageLoad {
    pub id: usize,
    pub line: usize,
    pub pid: u32,
    /// The CUmodule / CUlibrary handle the call returned.
    pub handle: u64,
    /// The function that loaded it (`cuLibraryLoadData`, `cuModuleLoadData`, …).
    pub api: String,
    pub library: bool,
    /// `images/<sha256>`, when captured.
    pub image: Option<String>,
    pub image_error: Option<String>,
    /// Line of the unload, if any.
    pub unloaded_line: Option<usize>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StreamKind {
    /// The context's legacy default stream (`0x0`, `CU_STREAM_LEGACY`).
    Legacy,
    /// A thread's per-thread default stream (`_ptsz` calls on `0x0`, `CU_STREAM_PER_THREAD`).
    PerThread,
    /// Created by `cuStreamCreate*` in the recording.
    Created,
    /// Used but never seen created (created before tracing started).
    Unknown,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StreamInfo {
    pub id: usize,
    pub pid: u32,
    pub handle: u64,
    pub kind: StreamKind,
    /// `tid` of a per-thread stream.
    pub tid: Option<u32>,
    /// `CU_STREAM_NON_BLOCKING` = 1.
    pub flags: u32,
    pub priority: i32,
    pub line: Option<usize>,
}

impl StreamInfo {
    /// Synchronizes with the legacy default stream.
    pub fn blocking(&self) -> bool {
        self.flags & 1 == 0
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EventInfo {
    pub id: usize,
    pub pid: u32,
    pub handle: u64,
    pub flags: u32,
    pub line: Option<usize>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LaunchApi {
    Kernel,
    KernelEx,
    Cooperative,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LaunchAttr {
    Cooperative(i32),
    ClusterDim([u32; 3]),
    ClusterSchedulingPolicy(i32),
    ProgrammaticStreamSerialization(i32),
    Priority(i32),
    MemSyncDomain(i32),
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Launch {
    pub api: LaunchApi,
    /// The image load whose kernel this is.
    pub load: usize,
    pub kernel: String,
    /// Launched through a CUkernel of a library (else a CUfunction of a module).
    pub via_library: bool,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub shared_mem: u32,
    #[serde(skip)]
    pub params: Vec<u8>,
    pub params_len: usize,
    /// `layout` or `extra`.
    pub params_from: String,
    pub layout: Option<KernelLayout>,
    pub attrs: Vec<LaunchAttr>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    H2d,
    D2h,
    D2d,
}

impl Direction {
    /// A line's `direction` (`h2d`, `d2h`, `d2d`; others are not replayed).
    pub fn parse(s: &str) -> Option<Direction> {
        match s {
            "h2d" => Some(Direction::H2d),
            "d2h" => Some(Direction::D2h),
            "d2d" => Some(Direction::D2d),
            _ => None,
        }
    }

    /// The name [`Direction::parse`] reads.
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::H2d => "h2d",
            Direction::D2h => "d2h",
            Direction::D2d => "d2d",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Copy {
    pub direction: Direction,
    pub dst: u64,
    pub src: u64,
    pub size: u64,
    pub is_async: bool,
    /// H2D: the captured source bytes `data/<sha256>` (else a deterministic fill).
    pub data: Option<String>,
    pub data_error: Option<String>,
    /// The host side (H2D source, D2H destination) lay in recorded pinned
    /// memory (cuMemAllocHost / cuMemHostAlloc / cuMemHostRegister); D2D: false.
    /// Replay always copies from/to pinned buffers.
    pub host_pinned: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Set {
    pub dst: u64,
    pub value: u32,
    /// Element size: 1, 2 or 4 bytes.
    pub elem: u8,
    /// Elements per row (a 1-D set: all of them).
    pub count: u64,
    pub is_async: bool,
    /// A 2-D set (cuMemsetD2D*, a memset node of height > 1): `height` rows `pitch` bytes apart.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rows: Option<Rows>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Rows {
    pub pitch: u64,
    pub height: u64,
}

impl Set {
    /// Bytes written.
    pub fn bytes(&self) -> u64 {
        self.count.saturating_mul(self.elem as u64).saturating_mul(self.rows.map_or(1, |r| r.height))
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OpKind {
    Launch(Launch),
    Copy(Copy),
    Set(Set),
    /// `cuFuncSetAttribute` / `cuKernelSetAttribute` on a kernel replay launches.
    SetAttribute {
        load: usize,
        kernel: String,
        via_library: bool,
        attrib: i32,
        value: i32,
    },
    EventRecord {
        event: usize,
    },
    StreamWaitEvent {
        event: usize,
    },
    StreamSync,
    CtxSync,
    EventSync {
        event: usize,
    },
}

/// One operation replay performs, in recorded order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Op {
    pub line: usize,
    pub ts: u64,
    /// Recorded call duration (return-probed calls only).
    pub duration_ns: Option<u64>,
    pub pid: u32,
    pub tid: u32,
    pub stream: Option<usize>,
    pub kind: OpKind,
}

/// The classes of ops `replay --skip-ops` and `replay plan`'s streams line name.
pub const OP_CLASSES: [&str; 6] = ["launch", "copy", "set", "event", "wait", "sync"];

impl Op {
    /// Work that runs on the GPU (a node of the dependency graph).
    pub fn is_work(&self) -> bool {
        matches!(self.kind, OpKind::Launch(_) | OpKind::Copy(_) | OpKind::Set(_))
    }

    /// Its class (one of [`OP_CLASSES`]); None for what submits nothing (an attribute setting).
    pub fn class(&self) -> Option<&'static str> {
        Some(match self.kind {
            OpKind::Launch(_) => "launch",
            OpKind::Copy(_) => "copy",
            OpKind::Set(_) => "set",
            OpKind::EventRecord { .. } => "event",
            OpKind::StreamWaitEvent { .. } => "wait",
            OpKind::StreamSync | OpKind::CtxSync | OpKind::EventSync { .. } => "sync",
            OpKind::SetAttribute { .. } => return None,
        })
    }
    pub fn launch(&self) -> Option<&Launch> {
        match &self.kind {
            OpKind::Launch(l) => Some(l),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EdgeKind {
    /// Previous work on the same stream.
    Stream,
    /// `cuStreamWaitEvent` on an event recorded after `from`.
    Event,
    /// Implicit synchronization with the legacy default stream.
    LegacyDefault,
    /// The host waited for `from` (stream/context/event synchronize, synchronous copy) before submitting `to`.
    HostSync,
}

/// `to` may not start before `from` ends (op indices).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Edge {
    pub from: usize,
    pub to: usize,
    pub kind: EdgeKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RangeKind {
    /// cuMemAlloc*, cuMemAllocAsync, cuMemAllocFromPoolAsync.
    Device,
    Managed,
    /// cuMemAllocHost / cuMemHostAlloc.
    HostPinned,
    /// cuMemHostRegister.
    HostRegistered,
    /// cuMemAddressReserve (virtual only).
    VmmReserve,
    /// cuMemMap inside a reservation.
    VmmMap,
    /// A `__device__` variable of a loaded image (cuLibraryGetGlobal / cuModuleGetGlobal).
    ModuleGlobal,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AddrRange {
    pub id: usize,
    pub pid: u32,
    pub start: u64,
    /// Bytes; 0 for a module global whose size the recording did not give.
    pub size: u64,
    pub kind: RangeKind,
    pub line: usize,
    pub freed_line: Option<usize>,
    /// ModuleGlobal: the load and the variable's name.
    pub global: Option<(usize, String)>,
}

impl AddrRange {
    pub fn end(&self) -> u64 {
        self.start.saturating_add(self.size)
    }
    /// Ranges replay must recreate at their addresses (device memory kernels can reach).
    pub fn needs_device_memory(&self) -> bool {
        matches!(self.kind, RangeKind::Device | RangeKind::Managed | RangeKind::VmmMap)
    }
}

/// An 8-byte, 8-aligned word of a launch's parameters whose value lies in a
/// recorded range live at the launch: the pointers to rewrite when that range
/// cannot be recreated at its address.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RelocCandidate {
    pub op: usize,
    pub line: usize,
    /// Byte offset in the parameter buffer.
    pub offset: u32,
    /// Index of the parameter (ordinal) it belongs to.
    pub param: usize,
    /// The parameter is exactly this pointer (else a word inside a larger parameter, e.g. a struct or array).
    pub whole_param: bool,
    pub value: u64,
    pub range: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Skipped {
    pub line: usize,
    pub name: String,
    pub kernel: Option<String>,
    pub reason: String,
}

/// A graph launch whose work is all replayable: its ops (`first_op`, the
/// `ops` after it, in dependency order on one stream) are what the exec
/// runs, so replay can rebuild the exec once as a CUDA graph and launch it
/// in their place (exec/graph_execs.rs). `exec` numbers the distinct execs
/// (an exec updated between launches is a new one).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GraphLaunch {
    pub first_op: usize,
    pub ops: usize,
    pub exec: usize,
    /// The cuGraphLaunch line.
    pub line: usize,
    /// The plan stream it was launched on.
    pub stream: usize,
    /// Per op of the launch, the ops (0-based within the launch) it waits for: an explicit
    /// graph's dependencies. None: each op waits for the one before it (a stream capture).
    pub after: Option<Vec<Vec<usize>>>,
    /// The flags the recorded exec was instantiated with (`CUDA_GRAPH_INSTANTIATE_FLAG_*`:
    /// auto-free on launch 1, upload 2, device launch 4, use node priority 8); 0 where the
    /// instantiate call carries none as a value (`cuGraphInstantiateWithParams`, `_v2`).
    pub instantiate_flags: u64,
}

/// An op that runs captured work in a graph launch: the launch's line and the captured call's line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct GraphOp {
    pub op: usize,
    pub launch_line: usize,
    pub captured_line: usize,
}
