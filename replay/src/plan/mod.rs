//! Planning (pure: no GPU, no I/O): from a recording's manifest and trace to
//! the list of operations replay performs. Handles are resolved in recorded
//! order (calls sorted by `ts`, ties in line order: the trace's line order on
//! one thread), so a handle reused after an unload or destroy gets its new
//! meaning. The plan holds the ops per stream, the dependency graph, the
//! device address ranges, the relocation candidates and the coverage.

pub mod coverage;
pub mod deps;
pub mod family;
mod graph_node;
mod graph_nodes;
mod graphs;
mod graphs_explicit;
pub mod memory;
pub mod types;

use std::collections::HashMap;

use anyhow::{Result, bail};
use serde::Serialize;

pub use coverage::Coverage;
pub use types::*;

use crate::recording::{Call, KernelLayout, Manifest, Trace};
use tracer_common::funcs::base_name;

#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    pub loads: Vec<ImageLoad>,
    pub streams: Vec<StreamInfo>,
    pub events: Vec<EventInfo>,
    pub ops: Vec<Op>,
    /// Op indices per stream id.
    pub per_stream: Vec<Vec<usize>>,
    pub edges: Vec<Edge>,
    pub ranges: Vec<AddrRange>,
    pub relocations: Vec<RelocCandidate>,
    pub coverage: Coverage,
    /// The ops that expand graph launches (plan/graphs.rs), in op order.
    pub graph_ops: Vec<GraphOp>,
    /// The graph launches replay can run as rebuilt graphs (plan/graphs.rs), in op order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub graph_launches: Vec<GraphLaunch>,
    pub warnings: Vec<String>,
}

impl Plan {
    /// Distinct (load, kernel) pairs the ops launch or set attributes on.
    pub fn kernels_used(&self) -> Vec<(usize, String, bool)> {
        let mut v: Vec<(usize, String, bool)> = self
            .ops
            .iter()
            .filter_map(|o| match &o.kind {
                OpKind::Launch(l) => Some((l.load, l.kernel.clone(), l.via_library)),
                OpKind::SetAttribute { load, kernel, via_library, .. } => Some((*load, kernel.clone(), *via_library)),
                _ => None,
            })
            .collect();
        v.sort();
        v.dedup();
        v
    }

    /// Recorded submission span: first to last op `ts`.
    pub fn span_ns(&self) -> u64 {
        match (self.ops.first(), self.ops.last()) {
            (Some(a), Some(b)) => b.ts.saturating_sub(a.ts),
            _ => 0,
        }
    }

    /// One-paragraph summary.
    pub fn summary(&self) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        let work = self.ops.iter().filter(|o| o.is_work()).count();
        let by = |k: EdgeKind| self.edges.iter().filter(|e| e.kind == k).count();
        let _ = writeln!(
            s,
            "plan: {} ops ({} GPU work) on {} streams, {} events, {} image loads ({} captured)",
            self.ops.len(),
            work,
            self.per_stream.iter().filter(|v| !v.is_empty()).count(),
            self.events.len(),
            self.loads.len(),
            self.loads.iter().filter(|l| l.image.is_some()).count()
        );
        let _ = writeln!(s, "{}", self.streams_text());
        let _ = writeln!(
            s,
            "dependencies: {} edges ({} stream order, {} event, {} legacy default stream, {} host sync)",
            self.edges.len(),
            by(EdgeKind::Stream),
            by(EdgeKind::Event),
            by(EdgeKind::LegacyDefault),
            by(EdgeKind::HostSync)
        );
        let dev: Vec<&AddrRange> = self.ranges.iter().filter(|r| r.needs_device_memory()).collect();
        let _ = writeln!(
            s,
            "address ranges: {} ({} device, {} bytes; {} windows to map, {} bytes at 2 MiB granularity)",
            self.ranges.len(),
            dev.len(),
            dev.iter().map(|r| r.size).sum::<u64>(),
            memory::windows(&self.ranges, 2 << 20).len(),
            memory::windows(&self.ranges, 2 << 20).iter().map(|w| w.1).sum::<u64>()
        );
        let whole = self.relocations.iter().filter(|r| r.whole_param).count();
        let _ = writeln!(
            s,
            "relocation candidates: {} pointer words in parameters ({} whole 8-byte parameters, {} inside larger ones)",
            self.relocations.len(),
            whole,
            self.relocations.len() - whole
        );
        s.push_str(&self.coverage.text(5));
        for w in &self.warnings {
            let _ = writeln!(s, "warning: {w}");
        }
        s
    }
}

impl Plan {
    /// The streams with their ops per kind, numbered as `replay --skip-ops` names them (the
    /// ops of graph launches counted apart: they run inside their launch).
    fn streams_text(&self) -> String {
        let mut in_graph = vec![false; self.ops.len()];
        let mut graphs: HashMap<usize, (usize, usize)> = HashMap::new();
        for g in &self.graph_launches {
            for x in in_graph.iter_mut().skip(g.first_op).take(g.ops) {
                *x = true;
            }
            let e = graphs.entry(g.stream).or_default();
            e.0 += 1;
            e.1 += g.ops;
        }
        let mut kinds: Vec<Vec<(&str, usize)>> = vec![Vec::new(); self.streams.len()];
        for (o, _) in self.ops.iter().zip(&in_graph).filter(|(_, g)| !**g) {
            let (Some(st), Some(k)) = (o.stream.filter(|&st| st < kinds.len()), o.class()) else { continue };
            match kinds[st].iter_mut().find(|(x, _)| *x == k) {
                Some((_, n)) => *n += 1,
                None => kinds[st].push((k, 1)),
            }
        }
        let mut parts = Vec::new();
        let mut idle = 0;
        for st in &self.streams {
            let mut what: Vec<String> = kinds[st.id].iter().map(|(k, n)| format!("{n} {k}")).collect();
            if let Some((l, n)) = graphs.get(&st.id) {
                what.push(format!("{l} graph launches ({n} ops inside)"));
            }
            if what.is_empty() {
                idle += 1;
                continue;
            }
            let kind = match st.kind {
                StreamKind::Legacy => "legacy".to_owned(),
                StreamKind::PerThread => "per-thread".to_owned(),
                StreamKind::Created => {
                    format!("created (flags {:#x}, priority {}, line {})", st.flags, st.priority, st.line.unwrap_or(0))
                }
                StreamKind::Unknown => "not seen created".to_owned(),
            };
            parts.push(format!("{} {kind}: {}", st.id, what.join(", ")));
        }
        let mut s = format!("streams (numbered as replay --skip-ops names them): {}", parts.join("; "));
        if idle > 0 {
            s.push_str(&format!("; {idle} more without ops"));
        }
        s
    }
}

/// Build the plan. Errors (a recording that contradicts itself) name the
/// trace file (`trace_name`) and line.
pub fn build(manifest: &Manifest, trace: &Trace, trace_name: &str) -> Result<Plan> {
    Builder::new(manifest, trace_name).run(trace)
}

/// The plan of one rank of a job of several (`replay --rank`, recording/ranks.rs): as [`build`],
/// its collective launches skipped (they need their peer ranks) and counted in the coverage.
pub fn build_rank(manifest: &Manifest, trace: &Trace, trace_name: &str) -> Result<Plan> {
    let mut b = Builder::new(manifest, trace_name);
    b.skip_collectives = true;
    b.run(trace)
}

#[derive(Default)]
struct PidState {
    /// CUmodule / CUlibrary handle -> load id.
    loads: HashMap<u64, usize>,
    /// CUfunction / CUkernel handle -> (load, kernel name, via library).
    funcs: HashMap<u64, (usize, String, bool)>,
    streams: HashMap<u64, usize>,
    legacy: Option<usize>,
    per_thread: HashMap<u32, usize>,
    events: HashMap<u64, usize>,
}

struct Builder<'a> {
    manifest: &'a Manifest,
    trace_name: &'a str,
    pids: HashMap<u32, PidState>,
    plan: Plan,
    ranges: memory::Ranges,
    graphs: graphs::Graphs,
    /// Skip collective launches ([`build_rank`]).
    skip_collectives: bool,
}

const STREAM_LEGACY: u64 = 1;
const STREAM_PER_THREAD: u64 = 2;

/// The launch attributes of a cuLaunchKernelEx (none for cuLaunchKernel); Err: why the launch is skipped.
fn launch_attrs(c: &Call, api: LaunchApi) -> std::result::Result<Vec<LaunchAttr>, String> {
    let mut attrs = Vec::new();
    if api == LaunchApi::KernelEx
        && let Some(list) = c.arg("config").and_then(|cfg| cfg.get("attrs")).and_then(|a| a.as_array())
    {
        for a in list {
            let id = a.get("id").and_then(|v| v.as_u64()).unwrap_or(u64::MAX);
            let val = a.get("value");
            let int = val.and_then(|v| v.as_i64()).unwrap_or(0) as i32;
            let attr = match id {
                2 => LaunchAttr::Cooperative(int),
                4 => {
                    let d = val
                        .and_then(|v| v.as_array())
                        .map(|d| d.iter().map(|x| x.as_u64().unwrap_or(1) as u32).collect::<Vec<_>>());
                    match d.as_deref() {
                        Some([x, y, z]) => LaunchAttr::ClusterDim([*x, *y, *z]),
                        _ => return Err("CLUSTER_DIMENSION attribute without [x, y, z]".into()),
                    }
                }
                5 => LaunchAttr::ClusterSchedulingPolicy(int),
                6 => LaunchAttr::ProgrammaticStreamSerialization(int),
                8 => LaunchAttr::Priority(int),
                10 => LaunchAttr::MemSyncDomain(int),
                _ => {
                    let n = a.get("name").and_then(|v| v.as_str()).unwrap_or("?");
                    return Err(format!("launch attribute {n} ({id}) not supported"));
                }
            };
            attrs.push(attr);
        }
    }
    Ok(attrs)
}

fn is_launch(name: &str) -> Option<LaunchApi> {
    match base_name(name) {
        "cuLaunchKernel" => Some(LaunchApi::Kernel),
        "cuLaunchKernelEx" => Some(LaunchApi::KernelEx),
        "cuLaunchCooperativeKernel" => Some(LaunchApi::Cooperative),
        _ => None,
    }
}

/// Driver calls that change what the GPU does or waits for and that replay does not
/// re-execute (by base name, `base_name`), with the reason the coverage gives: never
/// dropped silently.
fn not_replayed(base: &str) -> Option<&'static str> {
    Some(match base {
        "cuCtxRecordEvent" | "cuCtxWaitEvent" => {
            "context-wide event record/wait (cuCtxRecordEvent, cuCtxWaitEvent) not replayed: the order it imposed is lost"
        }
        "cuStreamWaitValue32"
        | "cuStreamWaitValue64"
        | "cuStreamWriteValue32"
        | "cuStreamWriteValue64"
        | "cuStreamBatchMemOp" => "stream memory operation (wait/write value, batch) not replayed",
        "cuLaunchHostFunc" | "cuStreamAddCallback" => {
            "host function on a stream (the program's code) not replayed: its stream did not wait for it"
        }
        _ => return None,
    })
}

/// Driver calls on streams, events and synchronization that replay plans: each becomes an
/// op or updates the tables ops are resolved with (`Builder::call`; tested against
/// tracer-common's table, with `not_replayed` and `NO_GPU_EFFECT`).
#[cfg(test)]
const PLANNED: &[&str] = &[
    "cuCtxSynchronize",
    "cuStreamCreate",
    "cuStreamCreateWithPriority",
    "cuStreamDestroy",
    "cuStreamSynchronize",
    "cuStreamWaitEvent",
    "cuEventCreate",
    "cuEventDestroy",
    "cuEventRecord",
    "cuEventRecordWithFlags",
    "cuEventSynchronize",
];

/// Calls on streams, events and synchronization that change nothing replay must do: queries,
/// times, attributes, capture state (captures are planned from their own lines: graphs.rs).
#[cfg(test)]
const NO_GPU_EFFECT: &[&str] = &["cuStreamQuery", "cuEventQuery", "cuEventElapsedTime"];

impl<'a> Builder<'a> {
    fn new(manifest: &'a Manifest, trace_name: &'a str) -> Self {
        Builder {
            manifest,
            trace_name,
            pids: HashMap::new(),
            plan: Plan {
                loads: vec![],
                streams: vec![],
                events: vec![],
                ops: vec![],
                per_stream: vec![],
                edges: vec![],
                ranges: vec![],
                relocations: vec![],
                coverage: Coverage::default(),
                graph_ops: vec![],
                graph_launches: vec![],
                warnings: vec![],
            },
            ranges: memory::Ranges::default(),
            graphs: graphs::Graphs::default(),
            skip_collectives: false,
        }
    }

    fn run(mut self, trace: &Trace) -> Result<Plan> {
        let mut order: Vec<&Call> = trace.calls.iter().collect();
        order.sort_by_key(|c| (c.ts, c.line));
        let mut execs = trace.execs.clone();
        execs.sort_by_key(|e| (e.1, e.0));
        let mut next_exec = 0;
        for c in order {
            while next_exec < execs.len() && (execs[next_exec].1, execs[next_exec].0) < (c.ts, c.line) {
                // exec: the pid's handles are forgotten (address ranges end too).
                self.pids.remove(&execs[next_exec].2);
                next_exec += 1;
            }
            self.call(c)?;
        }
        self.plan.ranges = std::mem::take(&mut self.ranges.all);
        let mut per_stream = vec![Vec::new(); self.plan.streams.len()];
        for (i, op) in self.plan.ops.iter().enumerate() {
            if let Some(s) = op.stream {
                per_stream[s].push(i);
            }
        }
        self.plan.per_stream = per_stream;
        self.plan.edges = deps::edges(&self.plan.ops, &self.plan.streams);
        Ok(self.plan)
    }

    fn at(&self, c: &Call) -> String {
        format!("{}:{}: {}", self.trace_name, c.line, c.name)
    }

    fn stream(&mut self, c: &Call, handle: u64) -> usize {
        let per_thread_api = c.name.ends_with("_ptsz") || c.name.ends_with("_ptds");
        let st = self.pids.entry(c.pid).or_default();
        let (kind, tid) = match handle {
            0 if per_thread_api => (StreamKind::PerThread, Some(c.tid)),
            0 | STREAM_LEGACY => (StreamKind::Legacy, None),
            STREAM_PER_THREAD => (StreamKind::PerThread, Some(c.tid)),
            h => {
                if let Some(&id) = st.streams.get(&h) {
                    return id;
                }
                (StreamKind::Unknown, None)
            }
        };
        let existing = match kind {
            StreamKind::Legacy => st.legacy,
            StreamKind::PerThread => st.per_thread.get(&c.tid).copied(),
            _ => None,
        };
        if let Some(id) = existing {
            return id;
        }
        let id = self.plan.streams.len();
        self.plan.streams.push(StreamInfo { id, pid: c.pid, handle, kind, tid, flags: 0, priority: 0, line: None });
        match kind {
            StreamKind::Legacy => st.legacy = Some(id),
            StreamKind::PerThread => {
                st.per_thread.insert(c.tid, id);
            }
            _ => {
                st.streams.insert(handle, id);
            }
        }
        id
    }

    fn event(&mut self, c: &Call, handle: u64) -> usize {
        let st = self.pids.entry(c.pid).or_default();
        if let Some(&id) = st.events.get(&handle) {
            return id;
        }
        let id = self.plan.events.len();
        self.plan.events.push(EventInfo { id, pid: c.pid, handle, flags: 0, line: None });
        st.events.insert(handle, id);
        id
    }

    fn push(&mut self, c: &Call, stream: Option<usize>, kind: OpKind) -> usize {
        self.plan.ops.push(Op {
            line: c.line,
            ts: c.ts,
            duration_ns: c.duration_ns,
            pid: c.pid,
            tid: c.tid,
            stream,
            kind,
        });
        self.plan.ops.len() - 1
    }

    fn skip_other(&mut self, c: &Call, reason: impl Into<String>) {
        self.plan.coverage.other_skipped.push(Skipped {
            line: c.line,
            name: c.name.clone(),
            kernel: c.str_field("kernel").map(str::to_owned),
            reason: reason.into(),
        });
    }

    /// One recorded call: a launch, copy, set or synchronization becomes an op; a load, handle,
    /// attribute, stream, event or allocation call updates the tables the ops are resolved with.
    fn call(&mut self, c: &Call) -> Result<()> {
        let name = c.name.as_str();
        if self.graph_call(c)? {
            return Ok(());
        }
        if let Some(api) = is_launch(name) {
            return self.launch(c, api);
        }
        if self.skip_unreplayable(c, name) {
            return Ok(());
        }
        // Matched without variant and version: programs call versioned entry points
        // (CUDA 13's cudaDeviceSynchronize reaches the driver as cuCtxSynchronize_v2).
        let base = base_name(name);
        if let Some(reason) = not_replayed(base) {
            self.skip_other(c, reason);
            return Ok(());
        }
        match base {
            "cuModuleLoad"
            | "cuModuleLoadData"
            | "cuModuleLoadDataEx"
            | "cuModuleLoadFatBinary"
            | "cuLibraryLoadData"
            | "cuLibraryLoadFromFile" => return self.load(c),
            "cuModuleUnload" | "cuLibraryUnload" => self.unload(c, base),
            "cuModuleGetFunction" | "cuLibraryGetKernel" => self.get_function(c, base),
            "cuKernelGetFunction" => self.kernel_get_function(c),
            "cuLibraryGetModule" => self.library_get_module(c),
            "cuFuncSetAttribute" | "cuKernelSetAttribute" => self.set_attribute(c, base),
            "cuLibraryGetGlobal" | "cuModuleGetGlobal" => self.get_global(c, base),
            "cuStreamCreate" | "cuStreamCreateWithPriority" => self.stream_create(c),
            "cuStreamDestroy" => {
                if let Some(h) = c.addr_arg("hStream") {
                    self.pids.entry(c.pid).or_default().streams.remove(&h);
                }
            }
            "cuEventCreate" => self.event_create(c),
            "cuEventDestroy" => {
                if let Some(h) = c.addr_arg("hEvent") {
                    self.pids.entry(c.pid).or_default().events.remove(&h);
                }
            }
            "cuEventRecord" | "cuEventRecordWithFlags" => {
                self.event_on_stream(c, |event| OpKind::EventRecord { event })
            }
            "cuStreamWaitEvent" => self.event_on_stream(c, |event| OpKind::StreamWaitEvent { event }),
            "cuStreamSynchronize" => {
                let s = c.addr_field("stream").or(c.addr_arg("hStream")).unwrap_or(0);
                let stream = self.stream(c, s);
                self.push(c, Some(stream), OpKind::StreamSync);
            }
            // cuCtxSynchronize_v2 (CUDA 13's cudaDeviceSynchronize) names the context or null
            // for the current one: replay has one context per process.
            "cuCtxSynchronize" => {
                self.push(c, None, OpKind::CtxSync);
            }
            "cuEventSynchronize" => {
                if let Some(e) = c.addr_arg("hEvent") {
                    let event = self.event(c, e);
                    self.push(c, None, OpKind::EventSync { event });
                }
            }
            b if b.starts_with("cuMemcpy") => return self.copy(c, b),
            b if b.starts_with("cuMemset") => return self.set(c, b),
            b if b.starts_with("cuMem") => self.memory(c, b),
            _ => {}
        }
        Ok(())
    }

    /// Whether `c` is a call replay does not re-execute: a call that failed, was incomplete or
    /// lost its entry when recorded (copies and sets counted, skipped).
    fn skip_unreplayable(&mut self, c: &Call, name: &str) -> bool {
        if c.failed() || c.entry_lost || c.incomplete {
            if name.starts_with("cuMemcpy") {
                self.plan.coverage.copies += 1;
                self.skip_other(c, "failed, incomplete or entry lost when recorded");
            } else if name.starts_with("cuMemset") {
                self.plan.coverage.sets += 1;
                self.skip_other(c, "failed, incomplete or entry lost when recorded");
            }
            return true;
        }
        false
    }

    /// cuModuleUnload, cuLibraryUnload: the load's handles are forgotten (a reused handle is a new load).
    fn unload(&mut self, c: &Call, base: &str) {
        let key = if base == "cuModuleUnload" { "hmod" } else { "library" };
        if let Some(h) = c.addr_arg(key) {
            let st = self.pids.entry(c.pid).or_default();
            if let Some(id) = st.loads.remove(&h) {
                self.plan.loads[id].unloaded_line = Some(c.line);
                st.funcs.retain(|_, f| f.0 != id);
                st.loads.retain(|_, l| *l != id);
            }
        }
    }

    /// cuModuleGetFunction, cuLibraryGetKernel: the function handle names a kernel of a load.
    fn get_function(&mut self, c: &Call, base: &str) {
        let (owner, via_library) = if base == "cuModuleGetFunction" { ("hmod", false) } else { ("library", true) };
        let (Some(h), Some(owner), Some(kernel)) = (
            c.addr_field("handle"),
            c.addr_arg(owner),
            c.str_field("kernel").or(c.arg("name").and_then(|v| v.as_str())),
        ) else {
            return;
        };
        let st = self.pids.entry(c.pid).or_default();
        if let Some(&load) = st.loads.get(&owner) {
            st.funcs.insert(h, (load, kernel.to_owned(), via_library));
        }
    }

    /// cuKernelGetFunction: the function handle names the kernel's kernel.
    fn kernel_get_function(&mut self, c: &Call) {
        let (Some(h), Some(k)) = (c.addr_field("handle"), c.addr_arg("kernel")) else { return };
        let st = self.pids.entry(c.pid).or_default();
        if let Some(f) = st.funcs.get(&k).cloned() {
            st.funcs.insert(h, f);
        }
    }

    /// cuLibraryGetModule: the module handle names the library's load.
    fn library_get_module(&mut self, c: &Call) {
        let (Some(h), Some(lib)) = (c.addr_field("handle").or(c.addr_arg("pMod")), c.addr_arg("library")) else {
            return;
        };
        let st = self.pids.entry(c.pid).or_default();
        if let Some(&load) = st.loads.get(&lib) {
            st.loads.insert(h, load);
        }
    }

    /// cuFuncSetAttribute, cuKernelSetAttribute: an op that sets it on the replayed kernel.
    fn set_attribute(&mut self, c: &Call, base: &str) {
        let hkey = if base == "cuFuncSetAttribute" { "hfunc" } else { "kernel" };
        let vkey = if base == "cuFuncSetAttribute" { "value" } else { "val" };
        let (Some(h), Some(attrib), Some(value)) =
            (c.addr_arg(hkey), c.arg("attrib").and_then(|v| v.as_i64()), c.arg(vkey).and_then(|v| v.as_i64()))
        else {
            return;
        };
        let f = self.pids.entry(c.pid).or_default().funcs.get(&h).cloned();
        match f {
            Some((load, _, _)) if self.plan.loads[load].image.is_none() => {
                self.skip_other(c, "attribute of a kernel whose image was not captured")
            }
            Some((load, kernel, via_library)) => {
                self.push(
                    c,
                    None,
                    OpKind::SetAttribute { load, kernel, via_library, attrib: attrib as i32, value: value as i32 },
                );
            }
            None => self.skip_other(c, "attribute of an unknown function handle"),
        }
    }

    /// cuLibraryGetGlobal, cuModuleGetGlobal: the global's address range, mapped to the replay's.
    fn get_global(&mut self, c: &Call, base: &str) {
        let okey = if base == "cuLibraryGetGlobal" { "library" } else { "hmod" };
        let (Some(ptr), Some(owner), Some(var)) =
            (c.addr_arg("dptr"), c.addr_arg(okey), c.arg("name").and_then(|v| v.as_str()))
        else {
            return;
        };
        let size = c.u64_arg("bytes").unwrap_or(0);
        if let Some(&load) = self.pids.entry(c.pid).or_default().loads.get(&owner) {
            self.ranges.add(c.pid, ptr, size, RangeKind::ModuleGlobal, c.line, Some((load, var.to_owned())));
        }
    }

    /// cuStreamCreate(WithPriority): a stream the replay creates, with its flags and priority.
    fn stream_create(&mut self, c: &Call) {
        let Some(h) = c.addr_arg("phStream") else { return };
        let flags = c.u64_arg("Flags").or(c.u64_arg("flags")).unwrap_or(0) as u32;
        let priority = c.arg("priority").and_then(|v| v.as_i64()).unwrap_or(0) as i32;
        let id = self.plan.streams.len();
        self.plan.streams.push(StreamInfo {
            id,
            pid: c.pid,
            handle: h,
            kind: StreamKind::Created,
            tid: None,
            flags,
            priority,
            line: Some(c.line),
        });
        self.pids.entry(c.pid).or_default().streams.insert(h, id);
    }

    /// cuEventCreate: an event the replay creates, with its flags.
    fn event_create(&mut self, c: &Call) {
        let Some(h) = c.addr_arg("phEvent") else { return };
        let id = self.plan.events.len();
        let flags = c.u64_arg("Flags").unwrap_or(0) as u32;
        self.plan.events.push(EventInfo { id, pid: c.pid, handle: h, flags, line: Some(c.line) });
        self.pids.entry(c.pid).or_default().events.insert(h, id);
    }

    /// cuEventRecord, cuStreamWaitEvent: an op of an event on a stream.
    fn event_on_stream(&mut self, c: &Call, op: impl FnOnce(usize) -> OpKind) {
        let (Some(e), Some(s)) = (c.addr_arg("hEvent"), c.addr_field("stream").or(c.addr_arg("hStream"))) else {
            return;
        };
        let event = self.event(c, e);
        let stream = self.stream(c, s);
        self.push(c, Some(stream), op(event));
    }

    fn load(&mut self, c: &Call) -> Result<()> {
        let library = c.name.starts_with("cuLibrary");
        let Some(handle) = c.addr_arg(if library { "library" } else { "module" }) else { return Ok(()) };
        let image = c.str_field("image").map(str::to_owned);
        if let Some(sha) = &image
            && self.manifest.image(sha).is_none()
        {
            bail!("{}: image {sha} is not listed in manifest.json", self.at(c));
        }
        let id = self.plan.loads.len();
        self.plan.loads.push(ImageLoad {
            id,
            line: c.line,
            pid: c.pid,
            handle,
            api: c.name.clone(),
            library,
            image,
            image_error: c.str_field("image_error").map(str::to_owned),
            unloaded_line: None,
        });
        self.pids.entry(c.pid).or_default().loads.insert(handle, id);
        Ok(())
    }

    fn launch(&mut self, c: &Call, api: LaunchApi) -> Result<()> {
        let cov = &mut self.plan.coverage;
        cov.launches += 1;
        *cov.launches_by_api.entry(c.name.clone()).or_default() += 1;
        let kernel = c.str_field("kernel").map(str::to_owned);
        let skip = |b: &mut Self, reason: String| {
            b.plan.coverage.skip_launch(Skipped { line: c.line, name: c.name.clone(), kernel: kernel.clone(), reason });
            Ok(())
        };
        if c.entry_lost {
            return skip(self, "entry lost: no arguments".into());
        }
        if c.failed() {
            return skip(self, format!("failed when recorded ({})", c.str_field("error").unwrap_or("error")));
        }
        if self.skip_collectives && self.launches_collective(c) {
            self.plan.coverage.collective_skipped(c.line, c.ts);
            return skip(self, coverage::COLLECTIVE.into());
        }
        let Some(params) = &c.params else {
            return match c.str_field("params_error") {
                Some(e) => skip(self, format!("params not captured: {e}")),
                None => skip(self, "no params recorded".into()),
            };
        };
        let Some(fh) = c.addr_field("func").or(c.addr_arg("f")) else {
            return skip(self, "no function handle".into());
        };
        let Some((load, kname, via_library)) = self.pids.entry(c.pid).or_default().funcs.get(&fh).cloned() else {
            return skip(self, format!("unknown function handle {fh:#x} (not created in the recording)"));
        };
        let ld = &self.plan.loads[load];
        let Some(sha) = ld.image.clone() else {
            return skip(
                self,
                match &ld.image_error {
                    Some(e) => format!("image not captured: {e}"),
                    None => "image not captured (load line has no \"image\")".into(),
                },
            );
        };
        let layout = self.manifest.image(&sha).and_then(|i| i.kernels.iter().find(|k| k.name == kname)).cloned();
        let params_from = c.str_field("params_from").unwrap_or("layout").to_owned();
        if let Some(l) = &layout {
            self.check_param_size(c, params.len(), l, &sha, &kname, &params_from)?;
        }
        let (grid, block, shared_mem) = match (c.dim3("grid"), c.dim3("block")) {
            (Some(g), Some(b)) => (g, b, c.u64_field("shared_mem").unwrap_or(0) as u32),
            _ => return skip(self, "no grid/block".into()),
        };
        let attrs = match launch_attrs(c, api) {
            Ok(a) => a,
            Err(why) => return skip(self, why),
        };
        let stream_h = c.addr_field("stream").unwrap_or(0);
        let stream = self.stream(c, stream_h);
        let op_index = self.plan.ops.len();
        let cands = self.ranges.candidates(c.pid, op_index, c.line, params, layout.as_ref());
        self.plan.relocations.extend(cands);
        let l = Launch {
            api,
            load,
            kernel: kname,
            via_library,
            grid,
            block,
            shared_mem,
            params_len: params.len(),
            params: params.clone(),
            params_from,
            layout,
            attrs,
        };
        self.push(c, Some(stream), OpKind::Launch(l));
        self.plan.coverage.launches_replayed += 1;
        Ok(())
    }

    /// Whether the launch's kernel (the line's `kernel`, else its function handle's) is a collective.
    fn launches_collective(&self, c: &Call) -> bool {
        let by_handle = || {
            let h = c.addr_field("func").or(c.addr_arg("f"))?;
            Some(self.pids.get(&c.pid)?.funcs.get(&h)?.1.clone())
        };
        c.str_field("kernel")
            .map(str::to_owned)
            .or_else(by_handle)
            .is_some_and(|k| crate::recording::ranks::is_collective(&k))
    }

    /// The params' size against the kernel's `param_size` in the image's layout (with
    /// `params_from` `extra`: at most that size); a mismatch is an error of the recording.
    fn check_param_size(
        &self,
        c: &Call,
        len: usize,
        l: &KernelLayout,
        sha: &str,
        kname: &str,
        params_from: &str,
    ) -> Result<()> {
        let ok = match params_from {
            "extra" => len <= l.param_size as usize,
            _ => len == l.param_size as usize,
        };
        if !ok {
            bail!(
                "{}: params are {} bytes but kernel {kname} of image {sha} has param_size {} (params_from {params_from})",
                self.at(c),
                len,
                l.param_size
            );
        }
        Ok(())
    }

    /// Whether a copy's host side (an H2D source, a D2H destination) lay in recorded pinned memory.
    fn host_pinned(&self, pid: u32, dir: Direction, dst: u64, src: u64) -> bool {
        let host = match dir {
            Direction::H2d => src,
            Direction::D2h => dst,
            Direction::D2d => return false,
        };
        self.ranges
            .find(pid, host)
            .is_some_and(|id| matches!(self.ranges.all[id].kind, RangeKind::HostPinned | RangeKind::HostRegistered))
    }

    fn copy(&mut self, c: &Call, base: &str) -> Result<()> {
        self.plan.coverage.copies += 1;
        let Some(dir) = c.str_field("direction").and_then(Direction::parse) else {
            let what = c.str_field("direction").unwrap_or("unknown");
            self.skip_other(c, format!("copy direction {what} not replayed"));
            return Ok(());
        };
        if base.contains("2D")
            || base.contains("3D")
            || base.contains("Peer")
            || base.contains("Array")
            || base.contains("AtoH")
            || base.contains("HtoA")
        {
            self.skip_other(c, "2D/3D/array/peer copies are not replayed");
            return Ok(());
        }
        let (Some(dst), Some(src), Some(size)) = (c.addr_field("dst"), c.addr_field("src"), c.u64_field("size")) else {
            self.skip_other(c, "copy without dst/src/size");
            return Ok(());
        };
        let is_async = base.contains("Async");
        let stream_h = if is_async { c.addr_field("stream").or(c.addr_arg("hStream")).unwrap_or(0) } else { 0 };
        let stream = self.stream(c, stream_h);
        let data = c.str_field("data").map(str::to_owned);
        if let Some(d) = &data
            && (d.len() != 64 || !d.bytes().all(|b| b.is_ascii_hexdigit()))
        {
            bail!("{}: \"data\" {d:?} is not a SHA-256 (64 hex digits)", self.at(c));
        }
        if dir == Direction::H2d {
            if data.is_some() {
                self.plan.coverage.h2d_with_data += 1;
            } else {
                self.plan.coverage.h2d_filled += 1;
            }
        }
        let data_error = c.str_field("data_error").map(str::to_owned);
        let host_pinned = self.host_pinned(c.pid, dir, dst, src);
        if dir != Direction::D2d && !host_pinned {
            self.plan.coverage.host_pageable += 1;
        }
        self.push(
            c,
            Some(stream),
            OpKind::Copy(Copy { direction: dir, dst, src, size, is_async, data, data_error, host_pinned }),
        );
        self.plan.coverage.copies_replayed += 1;
        Ok(())
    }

    fn set(&mut self, c: &Call, base: &str) -> Result<()> {
        self.plan.coverage.sets += 1;
        let two_d = base.starts_with("cuMemsetD2D");
        let (elem, vkey) = if base.starts_with("cuMemsetD8") || base.starts_with("cuMemsetD2D8") {
            (1u8, "uc")
        } else if base.starts_with("cuMemsetD16") || base.starts_with("cuMemsetD2D16") {
            (2, "us")
        } else {
            (4, "ui")
        };
        let count = c.u64_arg(if two_d { "Width" } else { "N" });
        let (Some(dst), Some(value), Some(count)) = (c.addr_arg("dstDevice"), c.u64_arg(vkey), count) else {
            self.skip_other(c, "memset without dstDevice/value/N (Width)");
            return Ok(());
        };
        let rows = match (two_d, c.u64_arg("dstPitch"), c.u64_arg("Height")) {
            (false, ..) => None,
            (true, Some(pitch), Some(height)) => Some(Rows { pitch, height }),
            _ => {
                self.skip_other(c, "2D memset without dstPitch/Height");
                return Ok(());
            }
        };
        let is_async = base.contains("Async");
        let stream_h = if is_async { c.addr_field("stream").or(c.addr_arg("hStream")).unwrap_or(0) } else { 0 };
        let stream = self.stream(c, stream_h);
        self.push(c, Some(stream), OpKind::Set(Set { dst, value: value as u32, elem, count, is_async, rows }));
        self.plan.coverage.sets_replayed += 1;
        Ok(())
    }

    fn memory(&mut self, c: &Call, base: &str) {
        let pid = c.pid;
        let r = &mut self.ranges;
        match base {
            "cuMemAlloc" | "cuMemAllocAsync" | "cuMemAllocFromPoolAsync" | "cuMemAllocPitch" => {
                let size = if base.starts_with("cuMemAllocPitch") {
                    c.u64_arg("pPitch").unwrap_or(0) * c.u64_arg("Height").unwrap_or(0)
                } else {
                    c.u64_field("size").or(c.u64_arg("bytesize")).unwrap_or(0)
                };
                if let Some(p) = c.addr_field("ptr").or(c.addr_arg("dptr")) {
                    r.add(pid, p, size, RangeKind::Device, c.line, None);
                }
            }
            "cuMemAllocManaged" => {
                if let Some(p) = c.addr_field("ptr").or(c.addr_arg("dptr")) {
                    r.add(pid, p, c.u64_field("size").unwrap_or(0), RangeKind::Managed, c.line, None);
                }
            }
            "cuMemAllocHost" | "cuMemHostAlloc" => {
                if let Some(p) = c.addr_field("ptr").or(c.addr_arg("pp")) {
                    r.add(
                        pid,
                        p,
                        c.u64_field("size").or(c.u64_arg("bytesize")).unwrap_or(0),
                        RangeKind::HostPinned,
                        c.line,
                        None,
                    );
                }
            }
            "cuMemHostRegister" => {
                if let (Some(p), Some(n)) = (c.addr_arg("p"), c.u64_arg("bytesize")) {
                    r.add(pid, p, n, RangeKind::HostRegistered, c.line, None);
                }
            }
            "cuMemAddressReserve" => {
                if let (Some(p), Some(n)) = (c.addr_arg("ptr"), c.u64_arg("size")) {
                    r.add(pid, p, n, RangeKind::VmmReserve, c.line, None);
                }
            }
            "cuMemCreate" => {
                if let (Some(h), Some(n)) = (c.addr_field("handle").or(c.addr_arg("handle")), c.u64_arg("size")) {
                    r.vmm_handles.insert((pid, h), n);
                }
            }
            "cuMemMap" => {
                if let (Some(p), Some(n)) = (c.addr_arg("ptr"), c.u64_arg("size")) {
                    r.add(pid, p, n, RangeKind::VmmMap, c.line, None);
                }
            }
            "cuMemUnmap" => {
                if let (Some(p), Some(n)) = (c.addr_arg("ptr"), c.u64_arg("size")) {
                    r.unmap(pid, p, n, c.line);
                }
            }
            "cuMemAddressFree" => {
                if let Some(p) = c.addr_arg("ptr") {
                    r.free(pid, p, c.line, true);
                }
            }
            "cuMemFree" | "cuMemFreeAsync" | "cuMemFreeHost" | "cuMemHostUnregister" => {
                let key = if base == "cuMemFreeHost" || base == "cuMemHostUnregister" { "p" } else { "dptr" };
                if let Some(p) = c.addr_field("ptr").or(c.addr_arg(key))
                    && p != 0
                    && !r.free(pid, p, c.line, false)
                {
                    self.plan.warnings.push(format!("{}: frees {p:#x}, which was not seen allocated", self.at(c)));
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod table_tests {
    use super::{NO_GPU_EFFECT, PLANNED, is_launch, not_replayed};
    use tracer_common::funcs::{Class, FUNCS, base_name};

    /// Every traced launch, stream, event and synchronization call is planned, reported as not
    /// replayed, or known to change nothing replay does: a call added to tracer-common's table
    /// fails here until replay decides what to do with it.
    #[test]
    fn every_traced_stream_event_sync_and_launch_call_is_decided() {
        let mut seen = 0;
        for f in FUNCS.iter().filter(|f| matches!(f.class, Class::Sync | Class::Event | Class::Stream | Class::Launch))
        {
            let base = base_name(f.name);
            let decided = [
                PLANNED.contains(&base) || is_launch(f.name).is_some(),
                not_replayed(base).is_some(),
                NO_GPU_EFFECT.contains(&base),
            ];
            assert_eq!(decided.iter().filter(|d| **d).count(), 1, "{}: {decided:?}", f.name);
            seen += 1;
        }
        assert!(seen >= 30, "{seen}");
        for name in PLANNED.iter().chain(NO_GPU_EFFECT) {
            assert!(FUNCS.iter().any(|f| base_name(f.name) == *name), "{name} is not traced");
        }
    }
}
