//! A replay session: the context, the recreated memory, the loaded images,
//! streams and events, and every op prepared for submission.

use std::collections::HashMap;
use std::ffi::{CString, c_void};
use std::time::{Duration, Instant};

use tracer_cupti::collect::monotonic_ns;

use anyhow::{Context as _, Result, bail};
use cudarc::driver::sys;
use serde::Serialize;

use super::cuda::{self, CUfunction, CUstream, Context, Event, Pinned, ck};
use super::graph_execs::GraphExecs;
use super::memory::AddressMap;
use super::probe::Probe;
use crate::plan::{Direction, LaunchApi, LaunchAttr, OpKind, Plan, RangeKind, StreamKind};
use crate::recording::Recording;

pub enum Prep {
    Launch {
        f: CUfunction,
        grid: [u32; 3],
        block: [u32; 3],
        shared_mem: u32,
        stream: usize,
        /// 8-byte aligned parameter buffer.
        params: Vec<u64>,
        len: usize,
        attrs: Vec<LaunchAttr>,
        ex: bool,
    },
    Copy {
        dir: Direction,
        dst: u64,
        src: u64,
        size: usize,
        stream: usize,
        is_async: bool,
        host: HostBuf,
    },
    Set {
        dst: u64,
        value: u32,
        elem: u8,
        count: usize,
        /// 2-D: (pitch, height).
        rows: Option<(usize, usize)>,
        stream: usize,
    },
    EventRecord {
        event: usize,
        stream: usize,
    },
    Wait {
        event: usize,
        stream: usize,
    },
    StreamSync {
        stream: usize,
    },
    CtxSync,
    EventSync {
        event: usize,
    },
    Nop,
}

#[derive(Clone, Copy)]
pub enum HostBuf {
    /// Index into the session's data buffers (recorded bytes).
    Data(usize),
    /// The zero-filled source buffer (0: page-locked, 1: pageable).
    Fill(usize),
    /// The shared device-to-host destination (0: page-locked, 1: pageable).
    Scratch(usize),
    None,
}

/// A device-to-host copy whose recorded bytes are known, compared bit for bit.
#[derive(Debug, Clone, Serialize)]
pub struct OutputCheck {
    pub line: usize,
    pub size: u64,
    pub matches: bool,
    pub mismatched_bytes: u64,
    pub first_mismatch: Option<u64>,
}

/// How the session sets up memory, and what it reports while it runs.
#[derive(Debug, Clone, Default)]
pub struct SessionOpts {
    /// Never ask for the recorded addresses (tests the relocation path).
    pub force_relocation: bool,
    /// Byte every device window holds initially and after each reset (0 by
    /// default; e.g. 0xff makes a read of memory no replayed op wrote show).
    pub fill: u8,
    /// Memory read back before given ops, in every pass (stderr).
    pub probes: Vec<Probe>,
    /// Copy from/to page-locked buffers even where the recorded host side
    /// was pageable (faster copies than recorded).
    pub pinned_copies: bool,
    /// Run graph launches as separate launches of their work instead of
    /// rebuilt graphs (graph_execs.rs).
    pub expand_graphs: bool,
    /// Where to write each rebuilt graph as a DOT file, and whether to
    /// rebuild graphs as chains (graph_execs.rs `Rebuild`).
    pub graph_rebuild: super::graph_execs::Rebuild,
    /// Time every rebuilt graph launch with two CUDA events around it
    /// (`Session::graph_launch_us`).
    pub time_graph_launches: bool,
    /// How the device windows are made (memory.rs).
    pub device_memory: super::memory::DeviceMemory,
    /// Ops left out of every pass (a diagnostic: `--skip-ops`).
    pub skip_ops: Vec<super::skip::SkipOp>,
}

/// How a pass paces its submissions.
#[derive(Clone, Copy)]
pub enum Pace<'a> {
    /// Each op's recorded offset (ns) from the first one, from the pass's start.
    Offsets(&'a [u64]),
    /// Each op's recorded host gap after the previous op.
    Gaps(&'a [HostGap]),
}

/// The recorded host time before an op's submission: from the previous
/// call's return (`after_return`, its duration was recorded) or its start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct HostGap {
    pub ns: u64,
    pub after_return: bool,
}

pub struct Session {
    pub ctx: Context,
    pub map: AddressMap,
    modules: Vec<ModuleHandle>,
    streams: Vec<CUstream>,
    events: Vec<sys::CUevent>,
    pub prep: Vec<Prep>,
    data: Vec<Pinned>,
    /// Zero-filled sources and D2H destinations: [page-locked, pageable].
    fill: [Pinned; 2],
    scratch: [Pinned; 2],
    /// Per op index: recorded bytes expected from a D2H copy (data file sha).
    expected: HashMap<usize, (String, usize)>,
    pub setup_notes: Vec<String>,
    pub setup_s: f64,
    /// Per op index: its trace.jsonl line (for error messages).
    op_lines: Vec<usize>,
    fill_byte: u8,
    /// (op index, probe), sorted by op.
    probes: Vec<(usize, Probe)>,
    passes: std::cell::Cell<u32>,
    /// The recorded graph execs, rebuilt (unless `expand_graphs`).
    pub graphs: GraphExecs,
    /// With `time_graph_launches`: each rebuilt graph launch's time (µs, CUDA
    /// events recorded right before and after it on its stream), every pass.
    pub graph_launch_us: std::cell::RefCell<Vec<f64>>,
    time_graph_launches: bool,
    /// What a pass does to a rebuilt exec before its first launch in the pass.
    graph_refresh: Option<super::graph_execs::Refresh>,
    /// Per op: left out of every pass (`SessionOpts::skip_ops`).
    skip: Vec<bool>,
}

#[derive(Clone, Copy)]
enum ModuleHandle {
    None,
    Module(sys::CUmodule),
    Library(sys::CUlibrary),
}

fn cstr(s: &str) -> Result<CString> {
    CString::new(s).with_context(|| format!("name with a NUL byte: {s:?}"))
}

/// Each --probe with the index of the op at its trace line, sorted by op.
fn probe_ops(plan: &Plan, probes: &[Probe]) -> Result<Vec<(usize, Probe)>> {
    let mut out = Vec::new();
    for p in probes {
        let Some(i) = plan.ops.iter().position(|o| o.line == p.line) else {
            bail!(crate::Misuse(format!(
                "--probe {}:{:#x}:{}: no replayed op at trace.jsonl line {}",
                p.line, p.addr, p.len, p.line
            )));
        };
        out.push((i, *p));
    }
    out.sort_by_key(|x| x.0);
    Ok(out)
}

/// The images the plan's kernels and globals come from, loaded (the others: `ModuleHandle::None`).
fn load_images(rec: &Recording, plan: &Plan) -> Result<Vec<ModuleHandle>> {
    let mut modules = vec![ModuleHandle::None; plan.loads.len()];
    let used: std::collections::BTreeSet<usize> = plan.kernels_used().iter().map(|k| k.0).collect();
    let globals: std::collections::BTreeSet<usize> =
        plan.ranges.iter().filter_map(|r| r.global.as_ref().map(|g| g.0)).collect();
    for &id in used.union(&globals) {
        let ld = &plan.loads[id];
        let Some(sha) = &ld.image else { continue };
        let mut bytes = rec.image_bytes(sha)?;
        // PTX is stored without its terminating NUL (recording-format.md); the driver needs it.
        if rec.manifest.image(sha).is_some_and(|i| i.kind == "ptx") && bytes.last() != Some(&0) {
            bytes.push(0);
        }
        let what = format!(
            "{} of image {sha} (recorded at line {})",
            if ld.library { "cuLibraryLoadData" } else { "cuModuleLoadData" },
            ld.line
        );
        modules[id] = load_image(&bytes, ld.library, &what)?;
    }
    Ok(modules)
}

/// One image loaded as a library (cuLibraryLoadData) or a module (cuModuleLoadData).
fn load_image(bytes: &[u8], library: bool, what: &str) -> Result<ModuleHandle> {
    // SAFETY: image bytes stay alive during the call (the driver copies them).
    unsafe {
        if library {
            let mut l: sys::CUlibrary = std::ptr::null_mut();
            ck(
                sys::cuLibraryLoadData(
                    &mut l,
                    bytes.as_ptr() as *const c_void,
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                    0,
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                    0,
                ),
                what,
            )?;
            Ok(ModuleHandle::Library(l))
        } else {
            let mut m: sys::CUmodule = std::ptr::null_mut();
            ck(sys::cuModuleLoadData(&mut m, bytes.as_ptr() as *const c_void), what)?;
            Ok(ModuleHandle::Module(m))
        }
    }
}

/// Module globals: map their recorded addresses to the replay's (one not found is a note).
fn map_globals(plan: &Plan, modules: &[ModuleHandle], map: &mut AddressMap, notes: &mut Vec<String>) -> Result<()> {
    for r in plan.ranges.iter().filter(|r| r.kind == RangeKind::ModuleGlobal) {
        let Some((load, name)) = &r.global else { continue };
        let n = cstr(name)?;
        let (mut p, mut size): (sys::CUdeviceptr, usize) = (0, 0);
        // SAFETY: valid handles and out-pointers.
        let res = unsafe {
            match modules[*load] {
                ModuleHandle::Library(l) => sys::cuLibraryGetGlobal(&mut p, &mut size, l, n.as_ptr()),
                ModuleHandle::Module(m) => sys::cuModuleGetGlobal_v2(&mut p, &mut size, m, n.as_ptr()),
                ModuleHandle::None => continue,
            }
        };
        if res == sys::CUresult::CUDA_SUCCESS {
            map.add_global(r.start, p, size as u64);
        } else {
            notes.push(format!("global {name} (line {}): {}", r.line, cuda::error_name(res)));
        }
    }
    Ok(())
}

/// The handle of every kernel the plan uses, from its loaded image.
fn functions(plan: &Plan, modules: &[ModuleHandle]) -> Result<Functions> {
    let mut funcs: Functions = HashMap::new();
    for (load, kernel, _) in plan.kernels_used() {
        let n = cstr(&kernel)?;
        let what = format!("kernel {kernel} of load line {}", plan.loads[load].line);
        // SAFETY: valid handles and out-pointers.
        let f = unsafe {
            match modules[load] {
                ModuleHandle::Library(l) => {
                    let mut k: sys::CUkernel = std::ptr::null_mut();
                    ck(sys::cuLibraryGetKernel(&mut k, l, n.as_ptr()), &format!("cuLibraryGetKernel: {what}"))?;
                    // A CUkernel may be passed wherever a CUfunction is (CUDA 12+).
                    (k as CUfunction, Some(k))
                }
                ModuleHandle::Module(m) => {
                    let mut f: CUfunction = std::ptr::null_mut();
                    ck(sys::cuModuleGetFunction(&mut f, m, n.as_ptr()), &format!("cuModuleGetFunction: {what}"))?;
                    (f, None)
                }
                ModuleHandle::None => bail!("{what}: image not loaded"),
            }
        };
        funcs.insert((load, kernel), f);
    }
    Ok(funcs)
}

/// Attributes (e.g. the maximum dynamic shared memory) once, in recorded order (a failure is a note).
fn set_attributes(plan: &Plan, funcs: &Functions, ctx: &Context, notes: &mut Vec<String>) {
    for op in &plan.ops {
        if let OpKind::SetAttribute { load, kernel, attrib, value, .. } = &op.kind {
            let Some(&(f, k)) = funcs.get(&(*load, kernel.clone())) else { continue };
            let r = match k {
                Some(k) => cuda::kernel_set_attribute(k, *attrib, *value, ctx.dev),
                None => cuda::func_set_attribute(f, *attrib, *value),
            };
            if let Err(e) = r {
                notes.push(format!("line {}: {e:#}", op.line));
            }
        }
    }
}

/// The plan's streams: the legacy and per-thread default streams as themselves, the others created.
fn create_streams(plan: &Plan) -> Result<Vec<CUstream>> {
    let mut streams = Vec::with_capacity(plan.streams.len());
    for s in &plan.streams {
        let h: CUstream = match s.kind {
            StreamKind::Legacy => std::ptr::null_mut(),
            StreamKind::PerThread => 2usize as CUstream,
            StreamKind::Created | StreamKind::Unknown => {
                let mut h: CUstream = std::ptr::null_mut();
                // SAFETY: out-pointer valid.
                ck(
                    unsafe { sys::cuStreamCreateWithPriority(&mut h, s.flags, s.priority) },
                    "cuStreamCreateWithPriority",
                )?;
                h
            }
        };
        streams.push(h);
    }
    Ok(streams)
}

/// The plan's events, created with their recorded flags.
fn create_events(plan: &Plan) -> Result<Vec<sys::CUevent>> {
    let mut events = Vec::with_capacity(plan.events.len());
    for e in &plan.events {
        let mut h: sys::CUevent = std::ptr::null_mut();
        // SAFETY: out-pointer valid.
        ck(unsafe { sys::cuEventCreate(&mut h, e.flags) }, "cuEventCreate")?;
        events.push(h);
    }
    Ok(events)
}

/// Host memory of the recorded kind: a copy from pageable memory is staged by
/// the driver (synchronous for the host, slower), one from page-locked memory
/// is DMA (unless --pinned-copies).
fn locked(c: &crate::plan::Copy, opts: &SessionOpts) -> bool {
    c.host_pinned || opts.pinned_copies
}

impl HostBuffers {
    /// Host buffers: recorded H2D bytes (pinned), one zero-filled source, one D2H scratch.
    fn new(rec: &Recording, plan: &Plan, opts: &SessionOpts) -> Result<HostBuffers> {
        let locked = |c: &crate::plan::Copy| locked(c, opts);
        let mut data: Vec<Pinned> = Vec::new();
        let mut data_idx: HashMap<(String, bool), usize> = HashMap::new();
        let (mut max_fill, mut max_scratch) = (1usize, 1usize);
        let mut expected = HashMap::new();
        for (i, op) in plan.ops.iter().enumerate() {
            if let OpKind::Copy(c) = &op.kind {
                match (c.direction, &c.data) {
                    (Direction::H2d, Some(sha)) if !data_idx.contains_key(&(sha.clone(), locked(c))) => {
                        let b = rec.data_bytes(sha, c.size)?;
                        let mut p = Pinned::with(b.len(), locked(c))?;
                        p.slice_mut().copy_from_slice(&b);
                        data_idx.insert((sha.clone(), locked(c)), data.len());
                        data.push(p);
                    }
                    (Direction::H2d, None) => max_fill = max_fill.max(c.size as usize),
                    (Direction::D2h, d) => {
                        max_scratch = max_scratch.max(c.size as usize);
                        if let Some(sha) = d {
                            expected.insert(i, (sha.clone(), op.line));
                        }
                    }
                    _ => {}
                }
            }
        }
        let fill = [Pinned::new(max_fill)?, Pinned::pageable(max_fill)?];
        let scratch = [Pinned::new(max_scratch)?, Pinned::pageable(max_scratch)?];
        Ok(HostBuffers { data, data_idx, fill, scratch, expected })
    }
}

/// Every op prepared for submission: handles, translated addresses, relocated parameters, host buffers.
fn prepare_ops(plan: &Plan, funcs: &Functions, map: &AddressMap, host: &HostBuffers, opts: &SessionOpts) -> Vec<Prep> {
    let reloc: HashMap<usize, Vec<(u32, u64)>> = plan.relocations.iter().fold(HashMap::new(), |mut m, c| {
        m.entry(c.op).or_default().push((c.offset, c.value));
        m
    });
    let mut prep = Vec::with_capacity(plan.ops.len());
    for (i, op) in plan.ops.iter().enumerate() {
        let stream = op.stream.unwrap_or(0);
        prep.push(match &op.kind {
            OpKind::Launch(l) => {
                let (f, _) = funcs[&(l.load, l.kernel.clone())];
                let cands = reloc.get(&i).map(|v| v.as_slice()).unwrap_or(&[]);
                prepare_launch(l, f, cands, map, stream)
            }
            OpKind::Copy(c) => prepare_copy(c, map, host, opts, stream),
            OpKind::Set(s) => Prep::Set {
                dst: map.translate(s.dst),
                value: s.value,
                elem: s.elem,
                count: s.count as usize,
                rows: s.rows.map(|r| (r.pitch as usize, r.height as usize)),
                stream,
            },
            OpKind::EventRecord { event } => Prep::EventRecord { event: *event, stream },
            OpKind::StreamWaitEvent { event } => Prep::Wait { event: *event, stream },
            OpKind::StreamSync => Prep::StreamSync { stream },
            OpKind::CtxSync => Prep::CtxSync,
            OpKind::EventSync { event } => Prep::EventSync { event: *event },
            OpKind::SetAttribute { .. } => Prep::Nop,
        });
    }
    prep
}

/// A launch with its parameters relocated (`cands`: pointer words to map) into an 8-byte aligned buffer.
fn prepare_launch(
    l: &crate::plan::Launch,
    f: CUfunction,
    cands: &[(u32, u64)],
    map: &AddressMap,
    stream: usize,
) -> Prep {
    let bytes = super::memory::relocate_params(&l.params, l.layout.as_ref(), cands, map);
    let mut params = vec![0u64; bytes.len().div_ceil(8)];
    // SAFETY: params has at least bytes.len() bytes.
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), params.as_mut_ptr() as *mut u8, bytes.len()) };
    Prep::Launch {
        f,
        grid: l.grid,
        block: l.block,
        shared_mem: l.shared_mem,
        stream,
        params,
        len: bytes.len(),
        attrs: l.attrs.clone(),
        ex: l.api != LaunchApi::Kernel,
    }
}

/// A copy with translated device addresses and its host buffer (recorded bytes, fill or scratch, of the recorded kind).
fn prepare_copy(
    c: &crate::plan::Copy,
    map: &AddressMap,
    host: &HostBuffers,
    opts: &SessionOpts,
    stream: usize,
) -> Prep {
    let locked = locked(c, opts);
    let host = match c.direction {
        Direction::H2d => c
            .data
            .as_ref()
            .map(|s| HostBuf::Data(host.data_idx[&(s.clone(), locked)]))
            .unwrap_or(HostBuf::Fill(!locked as usize)),
        Direction::D2h => HostBuf::Scratch(!locked as usize),
        Direction::D2d => HostBuf::None,
    };
    Prep::Copy {
        dir: c.direction,
        dst: map.translate(c.dst),
        src: map.translate(c.src),
        size: c.size as usize,
        stream,
        is_async: c.is_async,
        host,
    }
}

/// A kernel's handles, per (load, kernel name): the function, and the CUkernel of a library's.
type Functions = HashMap<(usize, String), (CUfunction, Option<sys::CUkernel>)>;

/// The host side of the copies: recorded H2D bytes, zero-filled sources, D2H destinations, and the
/// recorded bytes each D2H copy is checked against.
struct HostBuffers {
    data: Vec<Pinned>,
    /// Per (data sha, page-locked?): its index in `data`.
    data_idx: HashMap<(String, bool), usize>,
    fill: [Pinned; 2],
    scratch: [Pinned; 2],
    expected: HashMap<usize, (String, usize)>,
}

impl Session {
    pub fn new(rec: &Recording, plan: &Plan, device: i32, opts: &SessionOpts) -> Result<Session> {
        let t0 = Instant::now();
        let probes = probe_ops(plan, &opts.probes)?;
        let ctx = Context::new(device)?;
        // Memory first: before the images' own allocations can take the recorded addresses.
        let mut map = AddressMap::build(&plan.ranges, ctx.dev, opts.force_relocation, opts.fill, opts.device_memory)?;
        let mut notes = map.notes.clone();
        let modules = load_images(rec, plan)?;
        map_globals(plan, &modules, &mut map, &mut notes)?;
        let funcs = functions(plan, &modules)?;
        set_attributes(plan, &funcs, &ctx, &mut notes);
        let streams = create_streams(plan)?;
        let events = create_events(plan)?;
        let host = HostBuffers::new(rec, plan, opts)?;
        let prep = prepare_ops(plan, &funcs, &map, &host, opts);
        ctx.sync()?;
        let HostBuffers { data, fill, scratch, expected, .. } = host;
        let mut s = Session {
            ctx,
            map,
            modules,
            streams,
            events,
            prep,
            data,
            fill,
            scratch,
            expected,
            op_lines: plan.ops.iter().map(|o| o.line).collect(),
            fill_byte: opts.fill,
            probes,
            passes: std::cell::Cell::new(0),
            setup_notes: notes,
            setup_s: 0.0,
            graphs: GraphExecs::default(),
            graph_launch_us: Default::default(),
            time_graph_launches: opts.time_graph_launches,
            graph_refresh: opts.graph_rebuild.refresh,
            skip: Vec::new(),
        };
        if !opts.expand_graphs {
            if opts.graph_rebuild.after_pass {
                s.reset_memory()?;
                s.pass(None, None).context("the pass before the graphs are built")?;
                s.passes.set(0);
            }
            let graphs = GraphExecs::build(plan, &opts.graph_rebuild, |i, st| s.submit(i, Some(st)))?;
            s.setup_notes.extend(graphs.notes.iter().cloned());
            s.graphs = graphs;
        }
        let in_graph = s.graphs.inside(plan.ops.len());
        let (skip, classes) = super::skip::skipped_ops(&plan.ops, &opts.skip_ops, &in_graph);
        s.setup_notes.extend(super::graph_execs::eager_streams_note(&plan.ops, &in_graph, &skip, s.graphs.rebuilt));
        if !opts.skip_ops.is_empty() {
            let list: Vec<String> = classes.iter().map(|(c, n)| format!("{c} {n}")).collect();
            eprintln!("ops per kind@stream: {}", list.join(", "));
            eprintln!(
                "--skip-ops {}: {} of {} ops left out of every pass (a diagnostic: outputs and GPU time no longer stand for the recording)",
                opts.skip_ops.iter().map(|s| s.to_string()).collect::<Vec<_>>().join(","),
                skip.iter().filter(|x| **x).count(),
                skip.len()
            );
        }
        s.skip = skip;
        s.setup_s = t0.elapsed().as_secs_f64();
        Ok(s)
    }

    fn host_ptr(&self, h: HostBuf) -> *mut c_void {
        match h {
            HostBuf::Data(i) => self.data[i].ptr as *mut c_void,
            HostBuf::Fill(k) => self.fill[k & 1].ptr as *mut c_void,
            HostBuf::Scratch(k) => self.scratch[k & 1].ptr as *mut c_void,
            HostBuf::None => std::ptr::null_mut(),
        }
    }

    /// Submit op `i`; `on` overrides its stream (graph capture, isolated timing).
    pub fn submit(&self, i: usize, on: Option<CUstream>) -> Result<()> {
        let st = |s: usize| on.unwrap_or(self.streams[s]);
        let what = || format!("op {i} (trace.jsonl line {})", self.op_lines.get(i).copied().unwrap_or(0));
        // SAFETY: every handle comes from setup; buffers outlive the call
        // (parameters are copied by the driver at launch).
        unsafe {
            match &self.prep[i] {
                Prep::Launch { f, grid, block, shared_mem, stream, params, len, attrs, ex } => {
                    launch(*f, *grid, *block, *shared_mem, st(*stream), params, *len, attrs, *ex, &what())
                }
                Prep::Copy { dir, dst, src, size, stream, is_async, host } => {
                    let h = self.host_ptr(*host);
                    let s = st(*stream);
                    let r = match (dir, *is_async || on.is_some()) {
                        (Direction::H2d, true) => sys::cuMemcpyHtoDAsync_v2(*dst, h, *size, s),
                        (Direction::H2d, false) => sys::cuMemcpyHtoD_v2(*dst, h, *size),
                        (Direction::D2h, true) => sys::cuMemcpyDtoHAsync_v2(h, *src, *size, s),
                        (Direction::D2h, false) => sys::cuMemcpyDtoH_v2(h, *src, *size),
                        (Direction::D2d, true) => sys::cuMemcpyDtoDAsync_v2(*dst, *src, *size, s),
                        (Direction::D2d, false) => sys::cuMemcpyDtoD_v2(*dst, *src, *size),
                    };
                    ck(r, &format!("{}: copy {dir:?} {size} bytes", what()))
                }
                Prep::Set { dst, value, elem, count, rows, stream } => {
                    let s = st(*stream);
                    let r = match (elem, rows) {
                        (1, None) => sys::cuMemsetD8Async(*dst, *value as u8, *count, s),
                        (2, None) => sys::cuMemsetD16Async(*dst, *value as u16, *count, s),
                        (_, None) => sys::cuMemsetD32Async(*dst, *value, *count, s),
                        (1, Some((p, h))) => sys::cuMemsetD2D8Async(*dst, *p, *value as u8, *count, *h, s),
                        (2, Some((p, h))) => sys::cuMemsetD2D16Async(*dst, *p, *value as u16, *count, *h, s),
                        (_, Some((p, h))) => sys::cuMemsetD2D32Async(*dst, *p, *value, *count, *h, s),
                    };
                    ck(r, &format!("{}: memset", what()))
                }
                Prep::EventRecord { event, stream } => {
                    if on.is_some() {
                        return Ok(());
                    }
                    ck(sys::cuEventRecord(self.events[*event], st(*stream)), "cuEventRecord")
                }
                Prep::Wait { event, stream } => {
                    if on.is_some() {
                        return Ok(());
                    }
                    ck(sys::cuStreamWaitEvent(st(*stream), self.events[*event], 0), "cuStreamWaitEvent")
                }
                Prep::StreamSync { stream } => {
                    if on.is_some() {
                        return Ok(());
                    }
                    ck(sys::cuStreamSynchronize(st(*stream)), "cuStreamSynchronize")
                }
                Prep::CtxSync => {
                    if on.is_some() {
                        return Ok(());
                    }
                    ck(sys::cuCtxSynchronize(), "cuCtxSynchronize")
                }
                Prep::EventSync { event } => {
                    if on.is_some() {
                        return Ok(());
                    }
                    ck(sys::cuEventSynchronize(self.events[*event]), "cuEventSynchronize")
                }
                Prep::Nop => Ok(()),
            }
        }
    }

    /// The GPU ops a pass submits, in order, with the stream each goes to
    /// (the legacy default stream, where synchronous copies also run, as 0),
    /// for pairing CUPTI's records with them (`gpu_time::matching`).
    pub fn submitted(&self, plan: &Plan) -> Vec<crate::gpu_time::matching::Submitted> {
        use crate::gpu_time::{Op, matching::Submitted};
        let key = |s: usize| self.streams[s] as u64;
        // The rebuilt graph launch each op runs in (its first op).
        let mut graph_of: Vec<Option<usize>> = vec![None; self.prep.len()];
        for i in 0..self.prep.len() {
            if let Some(g) = self.graphs.at(i) {
                graph_of[i..i + g.ops].fill(Some(i));
            }
        }
        self.prep
            .iter()
            .enumerate()
            .filter_map(|(i, p)| {
                let (stream, kind) = match p {
                    Prep::Launch { stream, .. } => (key(*stream), Op::Kernel),
                    Prep::Copy { stream, is_async, .. } => (if *is_async { key(*stream) } else { 0 }, Op::Memcpy),
                    Prep::Set { stream, .. } => (key(*stream), Op::Memset),
                    _ => return None,
                };
                let kernel = plan.ops[i].launch().map(|l| l.kernel.clone());
                Some(Submitted { op: i, stream, kind, kernel, graph: graph_of[i] })
            })
            .collect()
    }

    /// Streams the ops use (for the end-of-run events).
    fn used_streams(&self) -> Vec<CUstream> {
        let mut v: Vec<CUstream> = Vec::new();
        for p in &self.prep {
            let s = match p {
                Prep::Launch { stream, .. } | Prep::Copy { stream, .. } | Prep::Set { stream, .. } => {
                    self.streams[*stream]
                }
                _ => continue,
            };
            if !v.contains(&s) {
                v.push(s);
            }
        }
        v
    }

    /// One pass over every op in recorded order. `pace`: the recorded
    /// submission offsets (ns from the first op) to wait for (timed mode).
    /// Returns GPU ms (first submission to the last stream's end, CUDA events)
    /// and wall ms.
    /// Puts device memory back in its initial state (zeros, as set up) so
    /// that every pass starts from the same memory as the first: a pass
    /// leaves the values of its last iteration behind, and a kernel that
    /// reads memory its recorded run found fresh (an index or counter never
    /// written before it) would otherwise read them. Not timed.
    pub fn reset_memory(&self) -> Result<()> {
        for w in self.map.windows.iter().filter(|w| w.kind == "device") {
            // SAFETY: the window is mapped read/write for this context.
            ck(unsafe { sys::cuMemsetD8_v2(w.actual, self.fill_byte, w.size as usize) }, "cuMemsetD8 (reset)")?;
        }
        // SAFETY: plain call on the current context.
        ck(unsafe { sys::cuCtxSynchronize() }, "cuCtxSynchronize (reset)")
    }

    pub fn pass(&self, pace: Option<&[u64]>, check: Option<&Recording>) -> Result<(f64, f64, Vec<OutputCheck>)> {
        self.pass_paced(pace.map(Pace::Offsets), check)
    }

    /// A pass paced by recorded offsets from its start (`timed` mode) or by the
    /// recorded host gaps between calls (together runs: together/pacing.rs).
    pub fn pass_paced(&self, pace: Option<Pace>, check: Option<&Recording>) -> Result<(f64, f64, Vec<OutputCheck>)> {
        self.pass_ops(0..self.prep.len(), pace, check)
    }

    /// The ops `ops` of a pass (a together run's measured phase: together/), from the memory the
    /// ops before them left.
    pub fn pass_ops(
        &self,
        ops: std::ops::Range<usize>,
        pace: Option<Pace>,
        check: Option<&Recording>,
    ) -> Result<(f64, f64, Vec<OutputCheck>)> {
        self.ctx.sync()?;
        let pass_no = self.passes.get() + 1;
        self.passes.set(pass_no);
        let mut next_probe = 0;
        let start = Event::new()?;
        let t0 = Instant::now();
        let (mut last_start, mut last_return) = (t0, t0);
        start.record(std::ptr::null_mut())?;
        let mut checks = Vec::new();
        let mut graph_events: Vec<(Event, Event)> = Vec::new();
        // The events timing the graph launches, made before the pass (not between its launches).
        let mut spare_events: Vec<(Event, Event)> = Vec::new();
        if self.time_graph_launches {
            for _ in 0..self.graphs.launches {
                spare_events.push((Event::new()?, Event::new()?));
            }
        }
        // With time_graph_launches: how long each cuGraphLaunch call took on the CPU (µs).
        let mut launch_cpu_us: Vec<f64> = Vec::new();
        // With graph_refresh: the execs refreshed in this pass.
        let mut refreshed = std::collections::HashSet::new();
        let mut i = ops.start;
        while i < ops.end.min(self.prep.len()) {
            match pace {
                Some(Pace::Offsets(p)) => {
                    let due = Duration::from_nanos(p[i]);
                    while t0.elapsed() < due {
                        std::hint::spin_loop();
                    }
                }
                Some(Pace::Gaps(g)) => {
                    let from = if g[i].after_return { last_return } else { last_start };
                    let due = Duration::from_nanos(g[i].ns);
                    while from.elapsed() < due {
                        std::hint::spin_loop();
                    }
                }
                None => {}
            }
            last_start = Instant::now();
            let graph = self.graphs.at(i);
            // A rebuilt graph launch stands for its ops: probes before any of them run before it.
            let last = i + graph.map_or(1, |g| g.ops);
            while let Some(&(op, p)) = self.probes.get(next_probe)
                && op < last
            {
                next_probe += 1;
                if op >= i {
                    self.probe(pass_no, &p)?;
                }
            }
            if let Some(g) = graph {
                let what = format!("graph launch (trace.jsonl line {})", self.op_lines[i]);
                let s = self.streams[g.stream];
                let timed = match (self.time_graph_launches, spare_events.pop()) {
                    (false, _) => None,
                    (true, Some(e)) => Some(e),
                    (true, None) => Some((Event::new()?, Event::new()?)),
                };
                // Before the timing event, so that an upload is not timed as the launch.
                if let Some(how) = self.graph_refresh
                    && refreshed.insert(g.exec)
                {
                    self.graphs.refresh(g.exec, how, s).with_context(|| what.clone())?;
                }
                if let Some((a, _)) = &timed {
                    a.record(s)?;
                }
                let c0 = Instant::now();
                // SAFETY: exec and stream from setup.
                ck(unsafe { sys::cuGraphLaunch(self.graphs.exec(g.exec), s) }, &what)?;
                if let Some((_, b)) = &timed {
                    launch_cpu_us.push(c0.elapsed().as_secs_f64() * 1e6);
                    b.record(s)?;
                }
                graph_events.extend(timed);
                last_return = Instant::now();
                i = last;
                continue;
            }
            if !self.skip.get(i).copied().unwrap_or(false) {
                self.submit(i, None)?;
            }
            last_return = Instant::now();
            if let Some(rec) = check
                && let Some((sha, line)) = self.expected.get(&i)
                && let Prep::Copy { size, stream, host, .. } = &self.prep[i]
            {
                // SAFETY: valid stream.
                ck(unsafe { sys::cuStreamSynchronize(self.streams[*stream]) }, "cuStreamSynchronize")?;
                let want = rec.data_bytes(sha, *size as u64)?;
                let k = if let HostBuf::Scratch(k) = host { *k & 1 } else { 0 };
                let got = &self.scratch[k].slice()[..*size];
                let bad: Vec<usize> = (0..*size).filter(|&k| got[k] != want[k]).collect();
                checks.push(OutputCheck {
                    line: *line,
                    size: *size as u64,
                    matches: bad.is_empty(),
                    mismatched_bytes: bad.len() as u64,
                    first_mismatch: bad.first().map(|&b| b as u64),
                });
            }
            i += 1;
        }
        let mut ends = Vec::new();
        for s in self.used_streams() {
            let e = Event::new()?;
            e.record(s)?;
            ends.push(e);
        }
        let mut gpu_ms = 0f64;
        for e in &ends {
            e.sync()?;
            gpu_ms = gpu_ms.max(e.since(&start)?);
        }
        self.ctx.sync()?;
        let wall_ms = t0.elapsed().as_secs_f64() * 1e3;
        let mut this_pass = Vec::with_capacity(graph_events.len());
        for (a, b) in &graph_events {
            this_pass.push(b.since(a)? * 1e3);
        }
        if !this_pass.is_empty() {
            let (gpu, cpu) = (graph_launch_median(&this_pass), graph_launch_median(&launch_cpu_us));
            eprintln!(
                "\npass {pass_no}: {} graph launches, median {gpu:.1} us (CUDA events); cuGraphLaunch took {cpu:.1} us on the CPU (median)",
                this_pass.len()
            );
        }
        self.graph_launch_us.borrow_mut().extend(this_pass);
        Ok((gpu_ms, wall_ms, checks))
    }

    /// Read a probe's bytes after everything submitted so far completed.
    fn probe(&self, pass_no: u32, p: &Probe) -> Result<()> {
        self.ctx.sync().with_context(|| format!("before the probe at line {}", p.line))?;
        let at = self.map.translate(p.addr);
        let mut buf = vec![0u8; p.len];
        // SAFETY: buf has len bytes; a bad address is reported by the driver.
        let r = unsafe { sys::cuMemcpyDtoH_v2(buf.as_mut_ptr() as *mut c_void, at, p.len) };
        let text = if r == sys::CUresult::CUDA_SUCCESS { super::probe::render(&buf) } else { cuda::error_name(r) };
        eprintln!(
            "\nprobe: pass {pass_no} before line {} {:#x} (replay {at:#x}) {} bytes: {text}",
            p.line, p.addr, p.len
        );
        Ok(())
    }

    /// Capture every GPU op, in recorded order, on one stream into a CUDA graph
    /// (events and host synchronizations are dropped: the single stream keeps
    /// every dependency, at the cost of the recorded concurrency).
    pub fn graph(&self) -> Result<Graph> {
        let mut s: CUstream = std::ptr::null_mut();
        // SAFETY: plain driver API calls; capture ends before returning.
        unsafe {
            ck(sys::cuStreamCreateWithPriority(&mut s, 1, 0), "cuStreamCreate")?;
            ck(
                sys::cuStreamBeginCapture_v2(s, sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED),
                "cuStreamBeginCapture",
            )?;
            let mut err = None;
            for i in 0..self.prep.len() {
                if let Err(e) = self.submit(i, Some(s)) {
                    err = Some(e);
                    break;
                }
            }
            let mut g: sys::CUgraph = std::ptr::null_mut();
            let r = sys::cuStreamEndCapture(s, &mut g);
            if let Some(e) = err {
                return Err(e.context("while capturing the graph"));
            }
            ck(r, "cuStreamEndCapture")?;
            let mut ge: sys::CUgraphExec = std::ptr::null_mut();
            ck(sys::cuGraphInstantiateWithFlags(&mut ge, g, 0), "cuGraphInstantiate")?;
            Ok(Graph { stream: s, exec: ge })
        }
    }

    /// Times op `i` alone, `reps` times after `warmup` runs (then synchronized:
    /// the returned window holds the timed runs only). `prologue`: ops
    /// submitted (untimed) before each run: the memsets that prepared it in
    /// the recording, e.g. the zeroed semaphores of a split-K GEMM, which
    /// otherwise waits forever for counters its previous run left behind.
    pub fn time_alone(
        &self,
        i: usize,
        prologue: &[usize],
        stream: CUstream,
        warmup: u32,
        reps: u32,
        flush: Option<&L2Flush>,
    ) -> Result<Timed> {
        for _ in 0..warmup {
            for &j in prologue {
                self.submit(j, Some(stream))?;
            }
            self.submit(i, Some(stream))?;
        }
        // The warm-ups are done before the window opens.
        self.ctx.sync()?;
        let t0 = monotonic_ns();
        let pairs: Vec<(Event, Event)> =
            (0..reps.max(1)).map(|_| Ok((Event::new()?, Event::new()?))).collect::<Result<_>>()?;
        for (k, (a, b)) in pairs.iter().enumerate() {
            if let Some(f) = flush {
                f.submit(stream, k as u8)?;
            }
            for &j in prologue {
                self.submit(j, Some(stream))?;
            }
            a.record(stream)?;
            self.submit(i, Some(stream))?;
            b.record(stream)?;
        }
        let mut v = Vec::with_capacity(pairs.len());
        for (a, b) in &pairs {
            b.sync()?;
            v.push(b.since(a)?);
        }
        v.sort_by(f64::total_cmp);
        Ok(Timed { ms: v, window: (t0, monotonic_ns()) })
    }

    /// Times op `i` alone with the L2 left warm by its previous run, then,
    /// with `flush`, after an L2 flush before each run (no more warm-ups).
    pub fn time_warm_and_cold(
        &self,
        i: usize,
        prologue: &[usize],
        stream: CUstream,
        warmup: u32,
        reps: u32,
        flush: Option<&L2Flush>,
    ) -> Result<(Timed, Option<Timed>)> {
        let warm = self.time_alone(i, prologue, stream, warmup, reps, None)?;
        let cold = match flush {
            Some(f) => Some(self.time_alone(i, prologue, stream, 0, reps, Some(f))?),
            None => None,
        };
        Ok((warm, cold))
    }

    /// Isolated timing *in context*: one pass in recorded order from the
    /// initial memory; at each target op (sorted by op index), everything
    /// before it has run, so the op finds the memory its recorded run found
    /// (index tensors, counters, cache positions). The device windows are
    /// saved, the op is timed alone (`time_alone`), the windows are put back
    /// and the pass goes on. Out of context, a gather or embedding lookup
    /// reads whatever the end of the run left in its index buffer (which the
    /// program's allocator had reused): GPT-2's `indexSelectSmallIndex` then
    /// fails its `srcIndex < srcSelectDimSize` device assertion.
    /// `progress(k)` is called before the k-th target.
    #[allow(clippy::too_many_arguments, reason = "one timing pass: its snapshot, targets, stream and callbacks")]
    pub fn time_in_context(
        &self,
        snap: &Snapshot,
        targets: &[(usize, Vec<usize>)],
        stream: CUstream,
        warmup: u32,
        reps: u32,
        flush: Option<&L2Flush>,
        mut progress: impl FnMut(usize),
    ) -> Result<Vec<(Timed, Option<Timed>)>> {
        self.reset_memory()?;
        let mut out = Vec::with_capacity(targets.len());
        let mut next = 0;
        for i in 0..self.prep.len() {
            while next < targets.len() && targets[next].0 == i {
                progress(next);
                self.ctx.sync()?;
                snap.save()?;
                out.push(self.time_warm_and_cold(i, &targets[next].1, stream, warmup, reps, flush)?);
                self.ctx.sync()?;
                snap.restore()?;
                next += 1;
            }
            self.submit(i, None)?;
        }
        self.ctx.sync()?;
        if next < targets.len() {
            bail!("isolated target op {} is not in the plan ({} ops)", targets[next].0, self.prep.len());
        }
        Ok(out)
    }

    /// Device memory to save the windows into for `time_in_context` (their
    /// total size once more); an error when the device has not that much free.
    pub fn snapshot(&self) -> Result<Snapshot> {
        Snapshot::new(&self.map)
    }

    pub fn new_stream(&self) -> Result<CUstream> {
        let mut s: CUstream = std::ptr::null_mut();
        // SAFETY: out-pointer valid.
        ck(unsafe { sys::cuStreamCreateWithPriority(&mut s, 1, 0) }, "cuStreamCreate")?;
        Ok(s)
    }

    pub fn loaded_images(&self) -> usize {
        self.modules.iter().filter(|m| !matches!(m, ModuleHandle::None)).count()
    }
}

/// A device buffer twice the size of the L2 cache, written before each timed
/// run of an isolated op so that the op starts with a cold L2, as nvbench and
/// Triton's do_bench time kernels: in the recorded run a kernel rarely finds
/// its inputs in L2 (other kernels' data evicted them), while the same kernel
/// repeated alone would find them there every time after the first.
pub struct L2Flush {
    ptr: u64,
    /// Twice the L2's size.
    pub bytes: usize,
}

impl L2Flush {
    pub fn new(ctx: &super::cuda::Context) -> Result<L2Flush> {
        let mut l2: i32 = 0;
        // SAFETY: out-pointer valid, device from the context.
        ck(
            unsafe {
                sys::cuDeviceGetAttribute(&mut l2, sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, ctx.dev)
            },
            "cuDeviceGetAttribute(L2_CACHE_SIZE)",
        )?;
        let bytes = (l2.max(1) as usize) * 2;
        let mut ptr: sys::CUdeviceptr = 0;
        // SAFETY: out-pointer valid.
        ck(unsafe { sys::cuMemAlloc_v2(&mut ptr, bytes) }, &format!("cuMemAlloc({bytes}) for the L2 flush"))?;
        Ok(L2Flush { ptr, bytes })
    }

    fn submit(&self, stream: CUstream, value: u8) -> Result<()> {
        // SAFETY: the buffer is ours, `bytes` long.
        ck(unsafe { sys::cuMemsetD8Async(self.ptr, value, self.bytes, stream) }, "cuMemsetD8Async (L2 flush)")
    }
}

impl Drop for L2Flush {
    fn drop(&mut self) {
        // SAFETY: allocated in new.
        unsafe { sys::cuMemFree_v2(self.ptr) };
    }
}

/// An op timed alone: the event-measured ms of each run, sorted, and the
/// CLOCK_MONOTONIC window the timed runs (and their prologues) ran in, from
/// which CUPTI's records of the same runs are taken.
pub struct Timed {
    pub ms: Vec<f64>,
    pub window: (u64, u64),
}

/// A device-memory copy of every device window (same sizes), to save and put
/// back the replay's memory around an isolated timing.
pub struct Snapshot {
    /// (window address, copy address, bytes)
    bufs: Vec<(u64, u64, usize)>,
}

impl Snapshot {
    fn new(map: &AddressMap) -> Result<Snapshot> {
        let mut s = Snapshot { bufs: Vec::new() };
        for w in map.windows.iter().filter(|w| w.kind == "device") {
            let mut p: sys::CUdeviceptr = 0;
            // SAFETY: out-pointer valid; freed in Drop.
            ck(
                unsafe { sys::cuMemAlloc_v2(&mut p, w.size as usize) },
                &format!("cuMemAlloc({}) for the memory snapshot", w.size),
            )?;
            s.bufs.push((w.actual, p, w.size as usize));
        }
        Ok(s)
    }
    /// Copies every device window into the snapshot (device to device).
    pub fn save(&self) -> Result<()> {
        for &(w, c, n) in &self.bufs {
            // SAFETY: both ranges are mapped device memory of n bytes.
            ck(unsafe { sys::cuMemcpyDtoD_v2(c, w, n) }, "cuMemcpyDtoD (snapshot)")?;
        }
        // SAFETY: plain call on the current context.
        ck(unsafe { sys::cuCtxSynchronize() }, "cuCtxSynchronize (snapshot)")
    }
    /// Copies the snapshot back into every device window (device to device).
    pub fn restore(&self) -> Result<()> {
        for &(w, c, n) in &self.bufs {
            // SAFETY: as in save.
            ck(unsafe { sys::cuMemcpyDtoD_v2(w, c, n) }, "cuMemcpyDtoD (restore)")?;
        }
        // SAFETY: plain call on the current context.
        ck(unsafe { sys::cuCtxSynchronize() }, "cuCtxSynchronize (restore)")
    }
}

impl Drop for Snapshot {
    fn drop(&mut self) {
        for &(_, c, _) in &self.bufs {
            // SAFETY: allocated in new().
            unsafe { sys::cuMemFree_v2(c) };
        }
    }
}

pub struct Graph {
    pub stream: CUstream,
    pub exec: sys::CUgraphExec,
}

impl Graph {
    /// Launch the graph once; GPU ms.
    pub fn launch_timed(&self) -> Result<f64> {
        let (a, b) = (Event::new()?, Event::new()?);
        a.record(self.stream)?;
        // SAFETY: valid graph exec and stream.
        ck(unsafe { sys::cuGraphLaunch(self.exec, self.stream) }, "cuGraphLaunch")?;
        b.record(self.stream)?;
        b.sync()?;
        b.since(&a)
    }
}

/// One launch with its parameters as one buffer: cuLaunchKernelEx for a recorded
/// cuLaunchKernelEx or a launch with attributes, else cuLaunchKernel.
///
/// # Safety
/// `f` and `stream` are handles of the current context.
#[allow(clippy::too_many_arguments, reason = "cuLaunchKernel's own arguments")]
unsafe fn launch(
    f: CUfunction,
    grid: [u32; 3],
    block: [u32; 3],
    shared_mem: u32,
    stream: CUstream,
    params: &[u64],
    len: usize,
    attrs: &[LaunchAttr],
    ex: bool,
    what: &str,
) -> Result<()> {
    // SAFETY: the caller's handles; params and size outlive the call (the driver copies the parameters).
    unsafe {
        let mut size = len;
        let mut extra: [*mut c_void; 5] = [
            std::ptr::without_provenance_mut::<c_void>(1), // CU_LAUNCH_PARAM_BUFFER_POINTER
            params.as_ptr() as *mut c_void,
            std::ptr::without_provenance_mut::<c_void>(2), // CU_LAUNCH_PARAM_BUFFER_SIZE
            &mut size as *mut usize as *mut c_void,
            std::ptr::null_mut(),
        ];
        let extra_p = if len == 0 { std::ptr::null_mut() } else { extra.as_mut_ptr() };
        if ex || !attrs.is_empty() {
            let mut a: Vec<sys::CUlaunchAttribute> = attrs.iter().map(|x| launch_attr(*x)).collect();
            let cfg = sys::CUlaunchConfig {
                gridDimX: grid[0],
                gridDimY: grid[1],
                gridDimZ: grid[2],
                blockDimX: block[0],
                blockDimY: block[1],
                blockDimZ: block[2],
                sharedMemBytes: shared_mem,
                hStream: stream,
                attrs: a.as_mut_ptr(),
                numAttrs: a.len() as u32,
            };
            ck(sys::cuLaunchKernelEx(&cfg, f, std::ptr::null_mut(), extra_p), &format!("{what}: cuLaunchKernelEx"))
        } else {
            ck(
                sys::cuLaunchKernel(
                    f,
                    grid[0],
                    grid[1],
                    grid[2],
                    block[0],
                    block[1],
                    block[2],
                    shared_mem,
                    stream,
                    std::ptr::null_mut(),
                    extra_p,
                ),
                &format!("{what}: cuLaunchKernel"),
            )
        }
    }
}

fn launch_attr(a: LaunchAttr) -> sys::CUlaunchAttribute {
    use sys::CUlaunchAttributeID as Id;
    // SAFETY: zeroed POD (a union of plain values), then one member set.
    let mut x: sys::CUlaunchAttribute = unsafe { std::mem::zeroed() };
    match a {
        LaunchAttr::Cooperative(v) => {
            x.id = Id::CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
            x.value.cooperative = v;
        }
        LaunchAttr::ClusterDim([cx, cy, cz]) => {
            x.id = Id::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
            x.value.clusterDim = sys::CUlaunchAttributeValue_union__bindgen_ty_1 { x: cx, y: cy, z: cz };
        }
        LaunchAttr::ClusterSchedulingPolicy(v) => {
            x.id = Id::CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE;
            x.value.clusterSchedulingPolicyPreference = match v {
                1 => sys::CUclusterSchedulingPolicy::CU_CLUSTER_SCHEDULING_POLICY_SPREAD,
                2 => sys::CUclusterSchedulingPolicy::CU_CLUSTER_SCHEDULING_POLICY_LOAD_BALANCING,
                _ => sys::CUclusterSchedulingPolicy::CU_CLUSTER_SCHEDULING_POLICY_DEFAULT,
            };
        }
        LaunchAttr::ProgrammaticStreamSerialization(v) => {
            x.id = Id::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
            x.value.programmaticStreamSerializationAllowed = v;
        }
        LaunchAttr::Priority(v) => {
            x.id = Id::CU_LAUNCH_ATTRIBUTE_PRIORITY;
            x.value.priority = v;
        }
        LaunchAttr::MemSyncDomain(v) => {
            x.id = Id::CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN;
            // SAFETY: the union's first 4 bytes hold the enum's value.
            unsafe { *(x.value.pad.as_mut_ptr() as *mut i32) = v };
        }
    }
    x
}

impl Drop for Session {
    fn drop(&mut self) {
        // SAFETY: teardown of what setup created; errors ignored.
        unsafe {
            sys::cuCtxSynchronize();
            // The rebuilt graphs before the modules their kernel nodes use.
            drop(std::mem::take(&mut self.graphs));
            for &e in &self.events {
                sys::cuEventDestroy_v2(e);
            }
            for m in &self.modules {
                match m {
                    ModuleHandle::Library(l) => {
                        sys::cuLibraryUnload(*l);
                    }
                    ModuleHandle::Module(m) => {
                        sys::cuModuleUnload(*m);
                    }
                    ModuleHandle::None => {}
                }
            }
        }
    }
}

/// The median of graph launch times (µs) as `--time-graph-launches` reports it, per pass and
/// over the run: the upper middle value for an even count, as examples/graphs_inference.py
/// --time-launches prints its own launches' median (the two sides compare like for like); 0
/// for none.
pub fn graph_launch_median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}
