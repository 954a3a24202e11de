//! The typed trace model: every line of a trace parsed once into compact
//! structs (no `serde_json::Value` kept per event; names interned), sorted by
//! `ts` (lines are written in completion order).
//!
//! One call line costs 64 bytes, so a 10-million-call trace needs 0.64 GB.
//! Line types (docs/trace-format.md and docs/analysis.md): header, footer,
//! call lines (every `type` not listed below), `process`, `ioctl`,
//! `nvidia_fd`, `marker`, `power`, `gpu`. Unknown types with a `ts` are read as
//! calls; a line whose fields have the wrong type is an error naming the file
//! and line.
use std::collections::{BTreeMap, HashMap, HashSet};

use serde_json::Value;

use super::fasthash::FxHashMap;

pub mod graph_measured;
pub mod graphs;
pub mod sched;
use tracer_format::line::{RawLine, StrOrNum, scan_into};

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

    /// Classifies a call line by its `type` and exported-function `name`.
    pub fn classify(ty: &str, op: &str, name: &str) -> Kind {
        if ty == "kernel" && op == "launch" {
            return Kind::Launch; // most lines: before the name is looked at
        }
        let base = name.trim_end_matches("_ptsz").trim_end_matches("_ptds");
        match ty {
            "kernel" if op == "launch" => Kind::Launch,
            "graph" if op == "graph_launch" => Kind::GraphLaunch,
            "memcpy" => {
                if base.contains("Async") {
                    Kind::CopyAsync
                } else {
                    Kind::Copy
                }
            }
            "memset" => {
                if base.contains("Async") {
                    Kind::MemsetAsync
                } else {
                    Kind::Memset
                }
            }
            "memory" if op == "alloc" || base.starts_with("cuMemAlloc") || base == "cuMemCreate" => Kind::Alloc,
            "memory" if op == "free" || base.starts_with("cuMemFree") || base == "cuMemRelease" => Kind::Free,
            _ => match op {
                "stream_synchronize" => Kind::StreamSync,
                "ctx_synchronize" => Kind::CtxSync,
                "event_synchronize" => Kind::EventSync,
                "stream_query" | "event_query" => Kind::Query,
                "stream_wait_event" => Kind::StreamWaitEvent,
                "event_record" | "event_record_with_flags" => Kind::EventRecord,
                "stream_create" | "stream_create_with_priority" => Kind::StreamCreate,
                // a line without its op: the function's class from its name
                "" if ty == "sync" => match tracer_common::funcs::base_name(base) {
                    "cuStreamSynchronize" => Kind::StreamSync,
                    "cuCtxSynchronize" => Kind::CtxSync,
                    "cuEventSynchronize" => Kind::EventSync,
                    "cuStreamQuery" | "cuEventQuery" => Kind::Query,
                    _ => Kind::Other,
                },
                _ => match ty {
                    "module" => Kind::Module,
                    "init" => Kind::Init,
                    "context" => Kind::Context,
                    "memory" => Kind::Other,
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

impl Dir {
    pub fn parse(s: &str) -> Dir {
        match s {
            "h2d" => Dir::H2D,
            "d2h" => Dir::D2H,
            "d2d" => Dir::D2D,
            "h2h" => Dir::H2H,
            "peer" => Dir::Peer,
            _ => Dir::Default,
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Dir::None => "none",
            Dir::H2D => "h2d",
            Dir::D2H => "d2h",
            Dir::D2D => "d2d",
            Dir::H2H => "h2h",
            Dir::Peer => "peer",
            Dir::Default => "default",
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
        self.flags & graphs::FLAG_FROM_GRAPH == 0
    }
    /// A graph node's work expanded from a graph launch.
    pub fn from_graph(&self) -> bool {
        self.flags & graphs::FLAG_FROM_GRAPH != 0
    }
    /// A graph launch whose nodes follow it in `Trace::calls`.
    pub fn expanded(&self) -> bool {
        self.flags & graphs::FLAG_EXPANDED != 0
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

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProcOp {
    Fork,
    Exec,
    Exit,
    ThreadExit,
}

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

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MarkerOp {
    Phase,
    Iteration,
    Mark,
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

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum GpuOpKind {
    Kernel,
    Memcpy,
    Memset,
}

impl GpuOpKind {
    pub fn as_str(self) -> &'static str {
        match self {
            GpuOpKind::Kernel => "kernel",
            GpuOpKind::Memcpy => "memcpy",
            GpuOpKind::Memset => "memset",
        }
    }
}

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

/// A parsed trace.
#[derive(Default, Debug)]
pub struct Trace {
    pub path: String,
    pub header: Option<Value>,
    pub footer: Option<Value>,
    pub calls: Vec<Call>,
    pub procs: Vec<ProcEvent>,
    pub ioctls: Vec<Ioctl>,
    pub markers: Vec<Marker>,
    pub power: Vec<PowerSample>,
    pub gpu: Vec<GpuOp>,
    /// `--gpu-timestamps sample`: the windows in which CUPTI activity was on,
    /// per process: every launch of the process inside one has its `gpu` line.
    pub gpu_windows: Vec<GpuWindow>,
    pub strings: Strings,
    pub geoms: Vec<Geom>,
    /// Streams created with CU_STREAM_NON_BLOCKING: (pid, handle).
    pub nonblocking_streams: HashSet<(u32, u64)>,
    pub loss: LossScan,
    /// Lines read, header and footer included.
    pub lines: u64,
    /// Lines of types this version does not know (read as calls when they have `ts`).
    pub unknown_types: BTreeMap<String, u64>,
    /// The last line was cut off (recording killed).
    pub truncated: bool,
    /// CUDA graphs built, launched and expanded (analysis/graphs.rs).
    pub graphs: graphs::GraphStats,
    /// `--replayable`: (ts, pid, tid) of an expanded graph launch whose exec
    /// has kernel nodes with parameter bytes -> its nodes ([`Trace::node_params`]).
    pub graph_node_params: HashMap<(u64, u32, u32), std::sync::Arc<Vec<graphs::ExecNode>>>,
    /// Scheduler events of the traced threads (`sched` lines).
    pub sched: sched::Sched,
}

impl Trace {
    /// `--replayable`: the parameter bytes (hex) a kernel expanded from a
    /// graph launch ran with: its node's as of that launch (after updates).
    pub fn node_params(&self, c: &Call) -> Option<&str> {
        if !c.from_graph() {
            return None;
        }
        let ex = self.graph_node_params.get(&(c.ts, c.pid, c.tid))?;
        ex.iter().find(|n| n.node == c.obj)?.params.as_deref()
    }
    pub fn geom(&self, i: u32) -> Option<&Geom> {
        self.geoms.get(i as usize)
    }
    pub fn name(&self, i: u32) -> &str {
        self.strings.get(i)
    }
    /// First and last timestamp of any event (call ends included).
    pub fn span(&self) -> Option<(u64, u64)> {
        let mut lo = u64::MAX;
        let mut hi = 0u64;
        let mut upd = |a: u64, b: u64| {
            lo = lo.min(a);
            hi = hi.max(b);
        };
        for c in &self.calls {
            upd(c.ts, c.end());
        }
        for p in &self.procs {
            upd(p.ts, p.ts);
        }
        for i in &self.ioctls {
            upd(i.ts, i.ts + i.dur);
        }
        for m in &self.markers {
            upd(m.ts, m.ts);
        }
        for g in &self.gpu {
            upd(g.start, g.end);
        }
        for p in &self.power {
            upd(p.ts, p.ts);
        }
        (lo <= hi).then_some((lo, hi))
    }
    /// Pids of the traced processes, in order of first appearance in time.
    pub fn pids(&self) -> Vec<u32> {
        let mut first: HashMap<u32, u64> = HashMap::new();
        let mut add = |pid: u32, ts: u64| {
            if pid != 0 {
                let e = first.entry(pid).or_insert(ts);
                *e = (*e).min(ts);
            }
        };
        for c in &self.calls {
            add(c.pid, c.ts);
        }
        for p in &self.procs {
            add(p.pid, p.ts);
        }
        for g in &self.gpu {
            add(g.pid, g.start);
        }
        for m in &self.markers {
            add(m.pid, m.ts);
        }
        let mut v: Vec<(u64, u32)> = first.into_iter().map(|(p, t)| (t, p)).collect();
        v.sort();
        v.into_iter().map(|(_, p)| p).collect()
    }
    /// Program name of a pid (basename of its last exec, else the header's command).
    /// The program's name, and its rank when its exec line gave one
    /// (`python3 rank 1`).
    pub fn process_name(&self, pid: u32) -> String {
        let name = self.program_name(pid);
        match self.rank(pid) {
            Some(r) => format!("{name} rank {r}"),
            None => name,
        }
    }

    /// The rank of a distributed job's process, from its last exec line.
    pub fn rank(&self, pid: u32) -> Option<u64> {
        self.procs.iter().rev().filter(|p| p.pid == pid && p.op == ProcOp::Exec).find_map(|p| p.rank)
    }

    fn program_name(&self, pid: u32) -> String {
        let exec = self
            .procs
            .iter()
            .rev()
            .filter(|p| p.pid == pid && p.op == ProcOp::Exec)
            .find_map(|p| p.filename.as_deref());
        if let Some(f) = exec {
            return f.rsplit('/').next().unwrap_or(f).to_string();
        }
        if let Some(h) = &self.header
            && h["pid"].as_u64() == Some(pid as u64)
            && let Some(c) = h["command"][0].as_str()
        {
            return c.rsplit('/').next().unwrap_or(c).to_string();
        }
        format!("pid {pid}")
    }
    /// Model name of GPU `i` from the header.
    pub fn gpu_model(&self, i: usize) -> Option<String> {
        self.header.as_ref()?["gpus"][i]["model"].as_str().map(str::to_string)
    }
}

/// Parses "0x1f" (or a decimal) into a number.
pub fn parse_handle(s: &str) -> Option<u64> {
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

/// The when and who of one record line, as [`TraceBuilder::add_line`] checked them.
#[derive(Clone, Copy)]
struct At {
    ts: u64,
    pid: u32,
    tid: u32,
    /// `duration_us` in ns (0 without it).
    dur: u64,
}

/// A call's flags (incomplete, entry lost, failed, returned, not ready) from its line.
#[inline]
fn call_flags(raw: &RawLine, kind: Kind) -> u8 {
    let mut flags = 0u8;
    if raw.incomplete == Some(true) {
        flags |= FLAG_INCOMPLETE;
    }
    if raw.entry_lost == Some(true) {
        flags |= FLAG_ENTRY_LOST;
    }
    // CUDA_ERROR_NOT_READY from a query is an answer, not a failure
    let not_ready = kind == Kind::Query && raw.ret == Some(600);
    if (raw.ret.is_some_and(|r| r != 0) || raw.error.is_some()) && !not_ready {
        flags |= FLAG_FAILED;
    }
    if raw.ret.is_some() {
        flags |= FLAG_RETURNED;
    }
    if not_ready {
        flags |= FLAG_NOT_READY;
    }
    flags
}

/// Builds a [`Trace`] line by line; [`TraceBuilder::finish`] sorts and scans.
#[derive(Default)]
pub struct TraceBuilder {
    t: Trace,
    geom_ids: FxHashMap<Geom, u32>,
    seqs: BTreeMap<u32, Vec<u64>>,
    line: u64,
    /// `type: "graph"` lines, whole, and the captured calls.
    graph_lines: Vec<graphs::GraphLine>,
    captured: Vec<graphs::CapturedAt>,
    /// Every line through serde_json (the reference the fast scanner of
    /// tracer_format::line::scan is checked against).
    pub(crate) reference: bool,
}

impl TraceBuilder {
    pub fn new(path: &str) -> Self {
        let mut b = TraceBuilder::default();
        b.t.path = path.to_string();
        b
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

    fn err(&self, what: impl std::fmt::Display) -> anyhow::Error {
        anyhow::anyhow!("{}: line {}: {what}", self.t.path, self.line)
    }

    /// Adds one line (its bytes, without or with the newline). `line` is its 1-based number.
    pub fn add_line(&mut self, line: u64, bytes: &[u8]) -> anyhow::Result<()> {
        self.line = line;
        self.t.lines += 1;
        let mut raw = RawLine::default();
        if self.reference || !scan_into(bytes, &mut raw) {
            raw = serde_json::from_slice::<RawLine>(bytes).map_err(|e| self.err(format_args!("{e}")))?;
        }
        self.add_scanned(bytes, &raw)
    }

    /// [`Self::add_line`] for a line the reader already read into `raw`
    /// (`tracer_format::read::read_checked`).
    #[inline]
    pub fn add_raw(&mut self, line: u64, bytes: &[u8], raw: &RawLine) -> anyhow::Result<()> {
        self.line = line;
        self.t.lines += 1;
        self.add_scanned(bytes, raw)
    }

    #[inline]
    fn add_scanned(&mut self, bytes: &[u8], raw: &RawLine) -> anyhow::Result<()> {
        let ty = raw.ty.as_deref().ok_or_else(|| self.err("expected a `type` field (string)"))?;
        if ty == "header" || ty == "footer" {
            return self.add_header_or_footer(ty, bytes);
        }
        let at = self.record_at(ty, raw)?;
        let op = raw.op.as_deref().unwrap_or("");
        match ty {
            "process" => self.add_process(raw, op, at),
            "ioctl" | "nvidia_fd" => {
                self.add_ioctl(raw, ty, op, at);
                Ok(())
            }
            "marker" => self.add_marker(raw, op, at),
            "power" => {
                self.add_power(raw, at);
                Ok(())
            }
            "gpu" => self.add_gpu(raw, op, at),
            "sched" => {
                let v: Value = serde_json::from_slice(bytes).map_err(|e| self.err(e))?;
                self.t.sched.add(&v, at.ts, at.pid, at.tid).map_err(|e| self.err(e))
            }
            "gpu_window" => {
                let end = raw.end_ts.ok_or_else(|| self.err("a `gpu_window` line needs `end_ts`"))?;
                if end < at.ts {
                    return Err(self.err(format_args!("gpu_window ends ({end}) before it starts ({})", at.ts)));
                }
                self.t.gpu_windows.push(GpuWindow { pid: at.pid, start: at.ts, end });
                Ok(())
            }
            // --capture-data: the bytes of an earlier device-to-host copy
            // (docs/recording-format.md); not a call.
            "copy_data" => Ok(()),
            // --counts: the kernel's counts of the calls it did not record
            // one by one (collect/counts.rs); not calls themselves.
            "count" | "kernel_count" => Ok(()),
            "graph" => {
                let v: Value = serde_json::from_slice(bytes).map_err(|e| self.err(e))?;
                self.graph_lines.push(graphs::GraphLine { ts: at.ts, pid: at.pid, tid: at.tid, v });
                self.add_call(raw, ty, op, at)
            }
            _ => self.add_call(raw, ty, op, at),
        }
    }

    /// Keeps the header or footer line as JSON.
    #[cold]
    fn add_header_or_footer(&mut self, ty: &str, bytes: &[u8]) -> anyhow::Result<()> {
        let v: Value = serde_json::from_slice(bytes).map_err(|e| self.err(e))?;
        if ty == "header" {
            self.t.header = Some(v);
        } else {
            self.t.footer = Some(v);
        }
        Ok(())
    }

    /// The when and who of a record line (`ts`, `pid`, `tid`, duration), checked;
    /// notes its (cpu, seq) pairs for the loss scan.
    #[inline]
    fn record_at(&mut self, ty: &str, raw: &RawLine) -> anyhow::Result<At> {
        let ts = raw.ts.ok_or_else(|| self.err(format_args!("a `{ty}` line needs an integer `ts` (ns)")))?;
        let pid = raw.pid.ok_or_else(|| self.err(format_args!("a `{ty}` line needs an integer `pid`")))?;
        let tid = raw.tid.unwrap_or(0);
        for (c, s) in [(raw.cpu, raw.seq), (raw.exit_cpu, raw.exit_seq)] {
            if let (Some(c), Some(s)) = (c, s) {
                self.seqs.entry(c).or_default().push(s);
            }
        }
        let dur_ns = |d: Option<f64>| d.map_or(0, |d: f64| (d.max(0.0) * 1000.0).round() as u64);
        // Times beyond 2^62 ns (146 years of CLOCK_MONOTONIC) are corrupt, and
        // rejecting them keeps every sum of two times below 2^64.
        const MAX_NS: u64 = 1 << 62;
        let dur = dur_ns(raw.duration_us);
        for (what, v) in [("ts", Some(ts)), ("end_ts", raw.end_ts), ("duration_us (as ns)", Some(dur))] {
            if let Some(v) = v.filter(|&v| v > MAX_NS) {
                return Err(self.err(format_args!("`{what}` = {v} is out of range (at most 2^62 ns)")));
            }
        }
        Ok(At { ts, pid, tid, dur })
    }

    /// A `process` line (fork, exec, exit, thread_exit).
    #[inline]
    fn add_process(&mut self, raw: &RawLine, op: &str, at: At) -> anyhow::Result<()> {
        let op = match op {
            "fork" => ProcOp::Fork,
            "exec" => ProcOp::Exec,
            "exit" => ProcOp::Exit,
            "thread_exit" => ProcOp::ThreadExit,
            o => {
                return Err(self.err(format_args!("process line with op `{o}`, expected fork/exec/exit/thread_exit")));
            }
        };
        self.t.procs.push(ProcEvent {
            ts: at.ts,
            pid: at.pid,
            tid: at.tid,
            op,
            child: raw.child,
            filename: raw.filename.as_deref().map(str::to_owned),
            rank: raw.rank,
        });
        Ok(())
    }

    /// An `ioctl` or `nvidia_fd` line.
    #[inline]
    fn add_ioctl(&mut self, raw: &RawLine, ty: &str, op: &str, at: At) {
        let name = self.t.strings.intern(raw.name.as_deref().unwrap_or(op));
        let cuda_call = raw.cuda_call.as_deref().map_or(NO_STR, |c| self.t.strings.intern(c));
        self.t.ioctls.push(Ioctl {
            ts: at.ts,
            dur: at.dur,
            pid: at.pid,
            tid: at.tid,
            name,
            cuda_call,
            failed: raw.status.is_some_and(|s| s != 0) || raw.errno.is_some(),
            file_op: ty == "nvidia_fd",
        });
    }

    /// A `marker` line (phase, iteration, mark).
    #[inline]
    fn add_marker(&mut self, raw: &RawLine, op: &str, at: At) -> anyhow::Result<()> {
        let op = match op {
            "phase" => MarkerOp::Phase,
            "iteration" => MarkerOp::Iteration,
            "mark" => MarkerOp::Mark,
            o => return Err(self.err(format_args!("marker line with op `{o}`, expected phase/iteration/mark"))),
        };
        let label = raw.label.as_ref().map(|l| l.text()).unwrap_or_default();
        self.t.markers.push(Marker { ts: at.ts, pid: at.pid, tid: at.tid, op, label, tokens: raw.tokens });
        Ok(())
    }

    /// A `power` line (one NVML sample of one GPU).
    #[inline]
    fn add_power(&mut self, raw: &RawLine, at: At) {
        self.t.power.push(PowerSample {
            ts: at.ts,
            gpu: raw.gpu.unwrap_or(0),
            energy_mj: raw.energy_mj,
            power_mw: raw.power_mw,
            sm_clock_mhz: raw.sm_clock_mhz,
            mem_clock_mhz: raw.mem_clock_mhz,
            util_gpu_pct: raw.util_gpu_pct,
            util_mem_pct: raw.util_mem_pct,
            temp_c: raw.temp_c,
        });
    }

    /// The geometry id of the line's `grid`/`block`/`shared_mem`, or `u32::MAX` without them.
    #[inline]
    fn line_geom(&mut self, raw: &RawLine) -> u32 {
        if raw.grid.is_some() || raw.block.is_some() {
            self.geom(Geom {
                grid: raw.grid.unwrap_or_default(),
                block: raw.block.unwrap_or_default(),
                shared_mem: raw.shared_mem.unwrap_or(0),
            })
        } else {
            u32::MAX
        }
    }

    /// A `gpu` line (one measured kernel, memcpy or memset).
    #[inline]
    fn add_gpu(&mut self, raw: &RawLine, op: &str, at: At) -> anyhow::Result<()> {
        let ts = at.ts;
        let end = match (raw.end_ts, raw.duration_us) {
            (Some(e), _) => e,
            (None, Some(_)) => ts + at.dur,
            _ => return Err(self.err("a `gpu` line needs `end_ts` or `duration_us`")),
        };
        if end < ts {
            return Err(self.err(format_args!("gpu line ends ({end}) before it starts ({ts})")));
        }
        let kind = match op {
            "kernel" => GpuOpKind::Kernel,
            "memcpy" => GpuOpKind::Memcpy,
            "memset" => GpuOpKind::Memset,
            o => return Err(self.err(format_args!("gpu line with op `{o}`, expected kernel/memcpy/memset"))),
        };
        let device = match &raw.device {
            Some(StrOrNum::Num(n)) => *n as u32,
            None => 0,
            Some(_) => return Err(self.err("gpu line: `device` must be the device index (integer)")),
        };
        let geom = self.line_geom(raw);
        let name = self.t.strings.intern(raw.name.as_deref().unwrap_or(op));
        self.t.gpu.push(GpuOp {
            start: ts,
            end,
            pid: at.pid,
            device,
            stream_id: raw.stream_id.unwrap_or(0),
            stream: raw.stream.as_deref().and_then(parse_handle).unwrap_or(NONE),
            correlation_id: raw.correlation_id.unwrap_or(0),
            kind,
            name,
            geom,
            size: raw.size.unwrap_or(0),
            dir: raw.direction.as_deref().map_or(Dir::None, Dir::parse),
            graph_id: raw.graph_id.and_then(|g| u32::try_from(g).ok()).unwrap_or(0),
            graph_node_id: raw.graph_node_id.unwrap_or(0),
        });
        Ok(())
    }

    /// A CUDA driver call line (every other `type`; unknown ones are counted).
    #[inline]
    fn add_call(&mut self, raw: &RawLine, ty: &str, op: &str, at: At) -> anyhow::Result<()> {
        let device = match &raw.device {
            None => NO_DEVICE,
            Some(StrOrNum::Num(n)) if *n < u64::from(NO_DEVICE) => *n as u8,
            Some(_) => {
                return Err(self.err(format_args!(
                    "`{ty}` line: `device` must be the CUDA device ordinal (an integer below {NO_DEVICE}) or null"
                )));
            }
        };
        if !KNOWN_CALL_TYPES.contains(&ty) {
            *self.t.unknown_types.entry(ty.to_string()).or_default() += 1;
        }
        let name = raw.name.as_deref().unwrap_or(op);
        let kind = Kind::classify(ty, op, name);
        let func = self.t.strings.intern(name);
        let kernel = raw.kernel.as_deref().map_or(NO_STR, |k| self.t.strings.intern(k));
        let geom = if kind == Kind::Launch { self.line_geom(raw) } else { u32::MAX };
        let flags = call_flags(raw, kind);
        let obj = self.call_object(raw, kind, at.pid);
        if let Some(capture) = raw.capture.filter(|_| ty != "graph") {
            self.captured.push(graphs::CapturedAt { ts: at.ts, pid: at.pid, tid: at.tid, capture });
        }
        self.t.calls.push(Call {
            ts: at.ts,
            dur: at.dur,
            stream: raw.stream.as_deref().and_then(parse_handle).unwrap_or(NONE),
            obj,
            size: raw.size.unwrap_or(0),
            pid: at.pid,
            tid: at.tid,
            func,
            kernel,
            geom,
            kind,
            dir: raw.direction.as_deref().map_or(Dir::None, Dir::parse),
            flags,
            device,
        });
        Ok(())
    }

    /// The handle a call names (its event, or the stream a cuStreamCreate
    /// made); notes non-blocking streams.
    #[inline]
    fn call_object(&mut self, raw: &RawLine, kind: Kind, pid: u32) -> u64 {
        let mut obj = raw.event.as_deref().and_then(parse_handle).unwrap_or(NONE);
        if kind == Kind::StreamCreate
            && let Some(a) = &raw.args
            && let Some(h) = a.ph_stream.as_deref().and_then(parse_handle)
        {
            obj = h;
            let fl = match &a.flags {
                Some(StrOrNum::Num(n)) => *n,
                Some(StrOrNum::Str(s)) => parse_handle(s).unwrap_or(0),
                _ => 0,
            };
            // CU_STREAM_NON_BLOCKING
            if fl & 1 != 0 {
                self.t.nonblocking_streams.insert((pid, h));
            }
        }
        obj
    }

    /// Appends what `next` read from the lines that follow this builder's
    /// (the parallel loader: each thread reads a part of the file). The
    /// result is what one builder reading all the lines in order gives:
    /// `next`'s names and geometries take ids after this builder's, in the
    /// order `next` met them, and `finish` sorts stably.
    pub fn absorb(&mut self, next: TraceBuilder) {
        let TraceBuilder { t: n, geom_ids: _, seqs, line: _, reference: _, graph_lines, captured } = next;
        self.graph_lines.extend(graph_lines);
        self.captured.extend(captured);
        let t = &mut self.t;
        let names: Vec<u32> = n.strings.names.iter().map(|s| t.strings.intern(s)).collect();
        let name = |i: u32| if i == NO_STR { NO_STR } else { names[i as usize] };
        let geoms: Vec<u32> = n.geoms.iter().map(|g| self.geom(*g)).collect();
        let geom = |i: u32| geoms.get(i as usize).copied().unwrap_or(u32::MAX);
        let t = &mut self.t;
        t.calls.extend(n.calls.into_iter().map(|mut c| {
            c.func = name(c.func);
            c.kernel = name(c.kernel);
            c.geom = geom(c.geom);
            c
        }));
        t.procs.extend(n.procs);
        t.ioctls.extend(n.ioctls.into_iter().map(|mut i| {
            i.name = name(i.name);
            i.cuda_call = name(i.cuda_call);
            i
        }));
        t.markers.extend(n.markers);
        t.power.extend(n.power);
        t.gpu.extend(n.gpu.into_iter().map(|mut g| {
            g.name = name(g.name);
            g.geom = geom(g.geom);
            g
        }));
        t.gpu_windows.extend(n.gpu_windows);
        t.nonblocking_streams.extend(n.nonblocking_streams);
        t.lines += n.lines;
        for (k, v) in n.unknown_types {
            *t.unknown_types.entry(k).or_default() += v;
        }
        t.truncated |= n.truncated;
        if n.header.is_some() {
            t.header = n.header;
        }
        if n.footer.is_some() {
            t.footer = n.footer;
        }
        for (cpu, v) in seqs {
            self.seqs.entry(cpu).or_default().extend(v);
        }
    }

    /// Marks the trace as cut off (partial last line skipped).
    pub fn set_truncated(&mut self) {
        self.t.truncated = true;
    }

    /// Sorts everything by time and scans the sequence numbers.
    pub fn finish(mut self) -> Trace {
        let t = &mut self.t;
        t.calls.sort_by_key(|c| (c.ts, c.pid, c.tid));
        t.sched.finish();
        if t.header.as_ref().is_some_and(|h| h["sched"] == true) {
            t.sched.recorded = true;
        }
        t.procs.sort_by_key(|p| p.ts);
        t.ioctls.sort_by_key(|i| i.ts);
        t.markers.sort_by_key(|m| m.ts);
        t.power.sort_by_key(|p| (p.gpu, p.ts));
        t.gpu.sort_by_key(|g| (g.start, g.end));
        t.gpu_windows.sort_by_key(|w| (w.start, w.pid));
        for (cpu, mut v) in std::mem::take(&mut self.seqs) {
            v.sort_unstable();
            let mut s = CpuSeqs { seen: v.len() as u64, max: *v.last().unwrap_or(&0), ..Default::default() };
            let mut expect = 0u64;
            for &q in &v {
                if expect.checked_sub(1) == Some(q) {
                    s.duplicates += 1;
                    continue;
                }
                if q > expect {
                    s.missing = s.missing.saturating_add(q - expect);
                    if s.holes.len() < 20 {
                        s.holes.push((expect, q - 1));
                    }
                }
                expect = q.saturating_add(1);
            }
            t.loss.by_cpu.insert(cpu, s);
        }
        let (lines, captured) = (std::mem::take(&mut self.graph_lines), std::mem::take(&mut self.captured));
        self.t.graphs = graphs::expand(&mut self.t, lines, captured);
        self.t
    }
}

/// The call `type`s of format version 1.
pub const KNOWN_CALL_TYPES: [&str; 12] =
    ["init", "device", "context", "module", "kernel", "graph", "memory", "memcpy", "memset", "sync", "stream", "event"];

/// Builds a trace from in-memory JSONL text (tests, small inputs).
pub fn parse_str(name: &str, text: &str) -> anyhow::Result<Trace> {
    let mut b = TraceBuilder::new(name);
    for (i, l) in text.lines().enumerate() {
        if l.trim().is_empty() {
            continue;
        }
        b.add_line(i as u64 + 1, l.as_bytes())?;
    }
    Ok(b.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_line_type_and_sorts() {
        let text = r#"{"type":"header","pid":7,"command":["/usr/bin/python3","x.py"],"gpus":[{"model":"H100"}]}
{"ts":300,"pid":7,"tid":7,"type":"sync","op":"stream_synchronize","name":"cuStreamSynchronize","stream":"0x0","duration_us":5.5,"ret":0,"cpu":0,"seq":4,"exit_cpu":1,"exit_seq":0}
{"ts":100,"pid":7,"tid":7,"type":"kernel","op":"launch","name":"cuLaunchKernel","kernel":"k1","grid":[2,1,1],"block":[128,1,1],"shared_mem":0,"stream":"0x0","duration_us":2.0,"ret":0,"cpu":0,"seq":0,"exit_cpu":0,"exit_seq":1}
{"ts":150,"pid":7,"tid":7,"type":"stream","op":"stream_create","name":"cuStreamCreate","args":{"Flags":"0x1","phStream":"0x55"},"duration_us":1.0,"ret":0,"cpu":0,"seq":2,"exit_cpu":0,"exit_seq":3}
{"ts":160,"pid":7,"tid":7,"type":"memcpy","op":"copy","name":"cuMemcpyHtoD_v2","size":4096,"direction":"h2d","duration_us":1.0,"ret":2,"error":"CUDA_ERROR_OUT_OF_MEMORY"}
{"ts":50,"pid":7,"tid":7,"type":"process","op":"exec","name":"process","filename":"/opt/bin/python3"}
{"ts":60,"pid":7,"tid":7,"type":"marker","op":"phase","name":"marker","label":"warmup"}
{"ts":61,"pid":7,"tid":7,"type":"marker","op":"iteration","name":"marker","label":3,"tokens":20}
{"ts":70,"pid":0,"tid":0,"type":"power","op":"sample","name":"nvml","gpu":0,"energy_mj":1000,"power_mw":70000,"sm_clock_mhz":null}
{"ts":200,"end_ts":260,"duration_us":0.06,"pid":7,"tid":0,"type":"gpu","op":"kernel","name":"k1","source":"cupti","device":0,"context_id":1,"stream_id":7,"stream":"0x0","correlation_id":9,"grid":[2,1,1],"block":[128,1,1],"shared_mem":0}
{"ts":80,"pid":7,"tid":7,"type":"ioctl","op":"ioctl","name":"RM_ALLOC","device":"/dev/nvidiactl","duration_us":3.0,"status":0,"cuda_call":"cuInit"}
{"type":"footer","calls":4}"#;
        let t = parse_str("t.jsonl", text).unwrap();
        assert_eq!(t.lines, 12);
        assert_eq!(t.calls.iter().map(|c| c.ts).collect::<Vec<_>>(), [100, 150, 160, 300]);
        let l = &t.calls[0];
        assert_eq!((l.kind, t.name(l.kernel), l.stream, l.dur), (Kind::Launch, "k1", 0, 2000));
        assert_eq!(t.geom(l.geom).unwrap().grid, [2, 1, 1]);
        assert_eq!(t.calls[1].obj, 0x55);
        assert!(t.nonblocking_streams.contains(&(7, 0x55)));
        assert_eq!((t.calls[2].kind, t.calls[2].dir, t.calls[2].failed()), (Kind::Copy, Dir::H2D, true));
        assert_eq!((t.calls[3].kind, t.calls[3].dur), (Kind::StreamSync, 5500));
        assert_eq!(t.markers[1].label, "3");
        assert_eq!(t.markers[1].tokens, Some(20));
        assert_eq!(t.power[0].energy_mj, Some(1000));
        assert_eq!(t.power[0].sm_clock_mhz, None);
        assert_eq!((t.gpu[0].start, t.gpu[0].end, t.gpu[0].stream, t.gpu[0].stream_id), (200, 260, 0, 7));
        assert_eq!(t.ioctls.len(), 1);
        assert_eq!(t.process_name(7), "python3");
        assert_eq!(t.span(), Some((50, 5_800)));
        // seq 0..4 on cpu 0 with 3 and... cpu0 saw 0,1,2,3,4; cpu1 saw 0
        assert_eq!(t.loss.missing(), 0);
        assert!(t.footer.is_some());
    }

    #[test]
    fn loss_scan_finds_holes() {
        let mut text = String::new();
        for s in [0u64, 1, 2, 5, 6, 9] {
            text.push_str(&format!(
                "{{\"ts\":{s},\"pid\":1,\"tid\":1,\"type\":\"init\",\"op\":\"init\",\"name\":\"cuInit\",\"cpu\":3,\"seq\":{s}}}\n"
            ));
        }
        let t = parse_str("x", &text).unwrap();
        let c = &t.loss.by_cpu[&3];
        assert_eq!((c.seen, c.max, c.missing), (6, 9, 4));
        assert_eq!(c.holes, vec![(3, 4), (7, 8)]);
    }

    #[test]
    fn corrupt_lines_name_file_line_and_expectation() {
        let e =
            parse_str("f.jsonl", "{\"type\":\"header\"}\n{\"type\":\"kernel\",\"pid\":1}\n").unwrap_err().to_string();
        assert_eq!(e, "f.jsonl: line 2: a `kernel` line needs an integer `ts` (ns)");
        let e = parse_str("f.jsonl", "{\"type\":\"kernel\",\"ts\":\"x\",\"pid\":1}").unwrap_err().to_string();
        assert!(e.starts_with("f.jsonl: line 1: invalid type: string \"x\", expected u64"), "{e}");
        let e = parse_str("f.jsonl", "{\"ts\":1,\"pid\":1}").unwrap_err().to_string();
        assert_eq!(e, "f.jsonl: line 1: expected a `type` field (string)");
        let e = parse_str("f.jsonl", "{\"ts\":1,\"end_ts\":0,\"pid\":1,\"type\":\"gpu\",\"op\":\"kernel\"}")
            .unwrap_err()
            .to_string();
        assert_eq!(e, "f.jsonl: line 1: gpu line ends (0) before it starts (1)");
        let e =
            parse_str("f.jsonl", "{\"ts\":1,\"pid\":1,\"type\":\"marker\",\"op\":\"phasee\"}").unwrap_err().to_string();
        assert_eq!(e, "f.jsonl: line 1: marker line with op `phasee`, expected phase/iteration/mark");
    }

    #[test]
    fn compact_records() {
        // 10 million calls in 0.64 GB
        assert_eq!(std::mem::size_of::<Call>(), 64);
        // 72 before CUPTI's graph ids (u32 graphId, u64 graphNodeId) joined.
        assert!(std::mem::size_of::<GpuOp>() <= 80, "{}", std::mem::size_of::<GpuOp>());
    }

    #[test]
    fn classify() {
        assert_eq!(Kind::classify("memcpy", "copy", "cuMemcpyDtoHAsync_v2_ptsz"), Kind::CopyAsync);
        assert_eq!(Kind::classify("memcpy", "copy", "cuMemcpy"), Kind::Copy);
        assert_eq!(Kind::classify("sync", "ctx_synchronize", "cuCtxSynchronize"), Kind::CtxSync);
        assert_eq!(Kind::classify("sync", "stream_query", "cuStreamQuery"), Kind::Query);
        let t = parse_str(
            "q",
            r#"{"ts":1,"pid":1,"type":"sync","op":"stream_query","name":"cuStreamQuery","ret":600,"error":"CUDA_ERROR_NOT_READY"}"#,
        )
        .unwrap();
        assert!(!t.calls[0].failed());
        assert!(!t.calls[0].query_done());
        assert_eq!(Kind::classify("event", "event_record", "cuEventRecord"), Kind::EventRecord);
        assert_eq!(Kind::classify("memory", "alloc", "cuMemHostAlloc"), Kind::Alloc);
        assert_eq!(Kind::classify("module", "library_load_data", "cuLibraryLoadData"), Kind::Module);
        assert_eq!(Kind::classify("graph", "graph_launch", "cuGraphLaunch"), Kind::GraphLaunch);
    }
}
