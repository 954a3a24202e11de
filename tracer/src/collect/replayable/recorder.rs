//! The collector's side of `--replayable`: at a stopped load it copies the
//! image out of the process, stores it, gives its layouts to the eBPF maps
//! and resumes the process; it adds `image`/`data` fields to load and copy
//! lines, counts what launches carry, and writes the manifest.
use std::collections::HashMap;
use std::path::PathBuf;

use aya::maps::{HashMap as BpfHashMap, MapData};
use serde_json::{Value, json};
use tracer_common::decode::Record;
use tracer_common::funcs::{Arg, FuncId, lookup};
use tracer_common::params::{Layout, status};
use tracer_format::recording::{self, Coverage, DataSummary, ImageEntry, Manifest};

use super::probes::{self, LAUNCHES};
use super::registry::Registry;
use super::store::Store;
use crate::collect::procmem::ProcMem;
use crate::decode::cudaimage::{self, Format, capture::Memory as _};
use crate::decode::fastline::Line;

/// The eBPF maps userspace fills.
pub struct KernelMaps {
    pub layouts: aya::maps::Array<MapData, Layout>,
    pub by_name: BpfHashMap<MapData, u64, u32>,
    pub pending: BpfHashMap<MapData, u32, u32>,
}

impl KernelMaps {
    pub fn take(ebpf: &mut aya::Ebpf) -> anyhow::Result<KernelMaps> {
        use anyhow::Context as _;
        let mut map = |n: &str| ebpf.take_map(n).with_context(|| format!("{n} map"));
        Ok(KernelMaps {
            layouts: aya::maps::Array::try_from(map("LAYOUTS")?)?,
            by_name: BpfHashMap::try_from(map("LAYOUT_BY_NAME")?)?,
            pending: BpfHashMap::try_from(map("PENDING_IMAGE")?)?,
        })
    }
}

pub struct Recorder {
    pub store: Store,
    pub maps: Option<KernelMaps>,
    pub reg: Registry,
    pub cov: Coverage,
    pub capture_data: bool,
    /// Most bytes stored in data/ (--data-cap-mib).
    pub data_cap: u64,
    /// Bytes stored in data/ (each content once).
    pub data_bytes: u64,
    pub data_skipped_over_cap: u64,
    /// Send SIGCONT after handling a stopping call (off in unit tests,
    /// which are not stopped).
    pub resume: bool,
    /// Processes stopped at a load or copy, resumed once the records
    /// available now are handled (see [`Recorder::resume_stopped`]).
    to_resume: Vec<u32>,
    /// (tid, entry ts) of a load -> image hash or why there is none.
    loads: HashMap<(u32, u64), Result<String, String>>,
    /// (tid, entry ts) of a copy -> data hash or why not.
    copies: HashMap<(u32, u64), Result<String, String>>,
    /// Copies entered and not returned yet, per thread: their host side is
    /// read at their return (a device-to-host copy's, once the data is there).
    open: HashMap<u32, Vec<HostCopy>>,
    /// Asynchronous device-to-host copies returned, per process, waiting
    /// for a synchronization to complete them.
    d2h_async: HashMap<u32, Vec<HostCopy>>,
    /// Lines to write after the current one (`copy_data`).
    pub extra_lines: Vec<Value>,
}

/// A copy whose host side is to be read: a device-to-host copy's
/// destination, a host-to-device copy's source.
#[derive(Clone, Debug)]
struct HostCopy {
    func: FuncId,
    tid: u32,
    ts: u64,
    /// The host address: the destination of a device-to-host copy, the source of a host-to-device one.
    host: u64,
    size: u64,
}

fn arg_index(id: FuncId, kinds: &[Arg]) -> Option<usize> {
    id.spec()?.params.iter().position(|p| kinds.contains(&p.kind))
}

fn arg_named(id: FuncId, name: &str) -> Option<usize> {
    id.spec()?.params.iter().position(|p| p.name == name)
}

fn kind_name(f: Format) -> &'static str {
    match f {
        Format::Fatbin | Format::FatbinWrapper => "fatbin",
        Format::Cubin => "cubin",
        Format::Ptx => "ptx",
        Format::HostElf => "host_elf",
    }
}

/// A file a process names, seen from here: relative to its cwd, absolute
/// within its root (containers, chroots).
fn process_path(pid: u32, p: &str) -> PathBuf {
    match p.strip_prefix('/') {
        Some(rest) => PathBuf::from(format!("/proc/{pid}/root")).join(rest),
        None => PathBuf::from(format!("/proc/{pid}/cwd")).join(p),
    }
}

impl Recorder {
    pub fn new(store: Store, maps: Option<KernelMaps>, capture_data: bool, data_cap: u64) -> Self {
        Recorder {
            store,
            maps,
            reg: Registry::default(),
            cov: Coverage::default(),
            capture_data,
            data_cap,
            data_bytes: 0,
            data_skipped_over_cap: 0,
            resume: true,
            to_resume: Vec::new(),
            loads: HashMap::new(),
            copies: HashMap::new(),
            open: HashMap::new(),
            d2h_async: HashMap::new(),
            extra_lines: Vec::new(),
        }
    }

    /// A launch record whose parameters came as a span (`status::SPAN`:
    /// the pointers and the memory they point into) gets its parameter
    /// buffer cut out with the layout the probe used, in `buf`, as the probe
    /// would have built it (`status::LAYOUT`). A span that does not cover
    /// the layout keeps `status::SPAN`, which the line reports as an error.
    /// Every other record is returned as it is.
    pub fn unpack<'a>(&self, rec: Record<'a>, buf: &'a mut Vec<u8>) -> Record<'a> {
        self.reg.unpack(rec, buf)
    }

    /// Called for every record before it is assembled into lines.
    pub fn before(&mut self, rec: &Record) {
        if let Record::Exit { x, .. } = rec {
            if self.capture_data {
                self.at_exit(x);
            }
            return;
        }
        let Record::Enter { hdr, args, string, .. } = *rec else { return };
        let id = FuncId(hdr.func);
        let (h2d, d2h) = (probes::is_h2d_copy(id), probes::is_d2h_copy(id));
        if self.capture_data && (h2d || d2h) {
            // The host side, read at the return (probes::H2D_COPIES, D2H_COPIES).
            let side = if h2d { "srcHost" } else { "dstHost" };
            match (arg_named(id, side), arg_named(id, "ByteCount")) {
                (Some(h), Some(n)) => {
                    let c = HostCopy { func: id, tid: hdr.tid, ts: hdr.ts, host: args[h], size: args[n] };
                    self.open.entry(hdr.tid).or_default().push(c);
                }
                _ if h2d => {
                    self.copies.insert((hdr.tid, hdr.ts), Err("not a host-to-device copy".to_string()));
                }
                _ => {}
            }
            return;
        }
        let stopped = if probes::is_load(id) {
            let r = self.load(id, hdr.pid, hdr.tid, &args, string);
            if let Err(e) = &r {
                log::warn!("{}: image not captured: {e}", crate::decode::calls::func_name(id));
            }
            self.loads.insert((hdr.tid, hdr.ts), r);
            true
        } else {
            false
        };
        if stopped {
            self.to_resume.push(hdr.pid);
        }
    }

    /// The return of a copy or a synchronization
    /// (`--capture-data`; the thread is stopped): reads what is complete.
    fn at_exit(&mut self, x: &tracer_common::event::CallExit) {
        let id = FuncId(x.hdr.func);
        let (pid, tid) = (x.hdr.pid, x.hdr.tid);
        let h2d = probes::is_h2d_copy(id);
        let stopped = x.flags & tracer_common::event::EXIT_STOPPED != 0;
        if stopped {
            // Only a stopped thread is resumed: a SIGCONT would also cancel a stop another
            // thread's probe has just sent, before its record is handled.
            self.to_resume.push(pid);
        }
        if h2d || probes::is_d2h_copy(id) {
            let open = self.open.entry(tid).or_default();
            let Some(i) = open.iter().rposition(|c| c.func == id) else { return };
            let c = open.remove(i);
            if x.ret as u32 != 0 {
                if h2d {
                    let e = format!("not captured: the copy failed (CUDA error {})", x.ret as u32);
                    self.copies.insert((c.tid, c.ts), Err(e));
                }
                return;
            }
            if !h2d && probes::is_async(id) {
                self.d2h_async.entry(pid).or_default().push(c);
            } else {
                let r = self.read_data(pid, c.host, c.size);
                self.copies.insert((c.tid, c.ts), r);
            }
        } else if probes::is_sync(id) {
            if x.ret as u32 != 0 {
                return;
            }
            for c in self.d2h_async.remove(&pid).unwrap_or_default() {
                // The kernel side stops a synchronization's thread when it marked the process at
                // the copy's return; without the mark (its table full) the thread runs on, and
                // its memory is not read under it.
                let r = if stopped {
                    self.read_data(pid, c.host, c.size)
                } else {
                    Err("not captured: the thread was not stopped at the synchronization (the kernel side could not mark the copy: out_param_saves_failed)".to_string())
                };
                let mut m = json!({
                    "type": "copy_data",
                    "op": "d2h",
                    "ts": x.hdr.ts,
                    "pid": pid,
                    "tid": tid,
                    "synchronized_by": crate::decode::calls::func_name(id),
                    "copy": { "name": crate::decode::calls::func_name(c.func), "tid": c.tid, "ts": c.ts },
                    "dst": format!("{:#x}", c.host),
                    "size": c.size,
                });
                match r {
                    Ok(sha) => {
                        self.cov.d2h_captured += 1;
                        m["data"] = json!(sha);
                    }
                    Err(e) => m["data_error"] = json!(e),
                }
                self.extra_lines.push(m);
            }
        }
    }

    /// Reads `size` bytes at `addr` of `pid` into data/ (within the cap).
    fn read_data(&mut self, pid: u32, addr: u64, size: u64) -> Result<String, String> {
        if self.data_bytes.saturating_add(size) > self.data_cap {
            self.data_skipped_over_cap += 1;
            return Err(format!("not captured: the {} MiB data cap is reached (--data-cap-mib)", self.data_cap >> 20));
        }
        let mut mem = ProcMem::open(pid).map_err(|e| format!("opening /proc/{pid}/mem: {e}"))?;
        let b = mem.read(addr, size as usize).map_err(|e| format!("reading {size} bytes at {addr:#x}: {e}"))?;
        if (b.len() as u64) < size {
            return Err(format!("only {} of {size} bytes at {addr:#x} are readable", b.len()));
        }
        let (sha, new) = self.store.put(recording::DATA, &b).map_err(|e| format!("{e:#}"))?;
        if new {
            self.data_bytes += size;
        }
        Ok(sha)
    }

    /// Resumes the processes stopped by the records handled so far. Called
    /// after the collector has drained what the ring buffer holds, so that
    /// two threads stopping at once are both handled before either runs on
    /// (a SIGCONT also cancels a SIGSTOP still pending for another thread).
    pub fn resume_stopped(&mut self) {
        self.to_resume.sort_unstable();
        self.to_resume.dedup();
        for pid in self.to_resume.drain(..) {
            if self.resume {
                // SAFETY: plain syscall. The probe's SIGSTOP group-stopped
                // the process; this resumes it.
                unsafe { libc::kill(pid as i32, libc::SIGCONT) };
            }
        }
    }

    fn load(&mut self, id: FuncId, pid: u32, tid: u32, args: &[u64], string: Option<&[u8]>) -> Result<String, String> {
        let (bytes, format) = if let Some(i) = arg_index(id, &[Arg::Str]) {
            let name = match string {
                Some(s) => String::from_utf8_lossy(s).into_owned(),
                None => {
                    crate::collect::procmem::read_proc_string(pid, args[i]).ok_or("the file name could not be read")?
                }
            };
            let path = process_path(pid, &name);
            let b = std::fs::read(&path).map_err(|e| format!("reading {name}: {e}"))?;
            let f = cudaimage::detect(&b).ok_or_else(|| format!("{name} is not a fatbin, cubin or PTX file"))?;
            (b, f)
        } else {
            let i = arg_index(id, &[Arg::Ptr]).ok_or("no image argument")?;
            let mut mem = ProcMem::open(pid).map_err(|e| format!("opening /proc/{pid}/mem: {e}"))?;
            let mut c = cudaimage::capture::capture(&mut mem, args[i]).map_err(|e| e.to_string())?;
            // PTX is stored as its text, like a .ptx file: without the NUL
            // the call needs (replay adds it back).
            if c.format == Format::Ptx && c.bytes.last() == Some(&0) {
                c.bytes.pop();
            }
            (c.bytes, c.format)
        };
        let (sha, _) = self.store.put(recording::IMAGES, &bytes).map_err(|e| format!("{e:#}"))?;
        let (image, updates) = self.reg.add(&sha, bytes.len() as u64, kind_name(format), || {
            cudaimage::layouts::kernel_layouts(&bytes, None).map_err(|e| e.to_string())
        });
        if let Some(m) = self.maps.as_mut() {
            let mut failed = 0;
            if let Some(up) = updates {
                for (lid, l) in up.layouts {
                    failed += m.layouts.set(lid, l, 0).is_err() as u64;
                }
                for (key, lid) in up.names {
                    failed += m.by_name.insert(key, lid, 0).is_err() as u64;
                }
            }
            failed += m.pending.insert(tid, image, 0).is_err() as u64;
            self.cov.map_update_errors += failed;
        }
        Ok(sha)
    }

    /// Called for every line before it is written.
    pub fn annotate(&mut self, line: &mut Line) {
        match line {
            Line::Launch(l) => {
                self.cov.launches += 1;
                self.count_params(l.params.map(|p| p.status));
            }
            Line::Value(v) => self.annotate_value(v),
            // Fast-path lines (copies, sets, launches without parameter
            // bytes): counted only.
            Line::Call(c) => match &c.norm {
                crate::decode::fastcall::Norm::Copy { direction: "h2d", .. } => self.cov.h2d_copies += 1,
                crate::decode::fastcall::Norm::Copy { direction: "d2h", .. } => self.cov.d2h_copies += 1,
                crate::decode::fastcall::Norm::LaunchEx { .. } => {
                    self.cov.launches += 1;
                    self.count_params(None);
                }
                _ => {}
            },
        }
    }

    /// Counts a launch by its capture status (None: no parameter record;
    /// [`UNKNOWN_ERROR`]: an error text that is none of ours).
    fn count_params(&mut self, st: Option<u32>) {
        match st {
            Some(status::LAYOUT | status::EXTRA) => {
                self.cov.params_exact += 1;
                self.cov.params_from_extra += (st == Some(status::EXTRA)) as u64;
            }
            Some(s) => {
                self.cov.params_missing += 1;
                let key =
                    if s == UNKNOWN_ERROR { "other" } else { crate::decode::params::reason_key(s).unwrap_or("other") };
                *self.cov.params_missing_reasons.entry(key.to_string()).or_default() += 1;
            }
            None => {
                self.cov.params_missing += 1;
                *self.cov.params_missing_reasons.entry("no parameter record".into()).or_default() += 1;
            }
        }
    }

    fn annotate_value(&mut self, v: &mut Value) {
        let Some(id) = v.get("name").and_then(Value::as_str).and_then(lookup) else { return };
        let base = id.spec().map_or("", |s| s.name);
        let key = || Some((v.get("tid")?.as_u64()? as u32, v.get("ts")?.as_u64()?));
        if LAUNCHES.iter().any(|l| l.0 == base) {
            self.cov.launches += 1;
            let st = if v.get("params").and_then(Value::as_str).is_some() {
                let extra = v.get("params_from").and_then(Value::as_str) == Some("extra");
                Some(if extra { status::EXTRA } else { status::LAYOUT })
            } else {
                v.get("params_error")
                    .and_then(Value::as_str)
                    .map(|e| crate::decode::params::status_of_error(e).unwrap_or(UNKNOWN_ERROR))
            };
            self.count_params(st);
        } else if base == "cuGraphLaunch" {
            self.cov.graph_launches += 1;
        } else if probes::is_graph_node(id) && v.get("node_type").and_then(Value::as_str) == Some("kernel") {
            self.cov.graph_kernel_nodes += 1;
            self.cov.graph_node_params_exact += v.get("params").is_some_and(Value::is_string) as u64;
        } else if probes::is_load(id) {
            self.cov.image_loads += 1;
            let r = key().and_then(|k| self.loads.remove(&k));
            let m = v.as_object_mut().expect("a line is an object");
            match r {
                Some(Ok(sha)) => {
                    self.cov.images_captured += 1;
                    m.insert("image".into(), json!(sha));
                }
                Some(Err(e)) => {
                    self.cov.image_errors += 1;
                    m.insert("image_error".into(), json!(e));
                }
                None => {
                    self.cov.image_errors += 1;
                    m.insert("image_error".into(), json!("the load's entry record was not seen"));
                }
            }
        } else if v.get("direction").and_then(Value::as_str) == Some("d2h") {
            self.cov.d2h_copies += 1;
            if !self.capture_data || !probes::is_d2h_copy(id) {
                return;
            }
            // Synchronous: read at its return. Asynchronous: a `copy_data`
            // line follows the synchronization that completed it.
            if let Some(r) = key().and_then(|k| self.copies.remove(&k)) {
                let m = v.as_object_mut().expect("a line is an object");
                match r {
                    Ok(sha) => {
                        self.cov.d2h_captured += 1;
                        m.insert("data".into(), json!(sha));
                    }
                    Err(e) => {
                        m.insert("data_error".into(), json!(e));
                    }
                }
            }
        } else if v.get("direction").and_then(Value::as_str) == Some("h2d") {
            self.cov.h2d_copies += 1;
            if !self.capture_data {
                return;
            }
            let r = if probes::is_h2d_copy(id) { key().and_then(|k| self.copies.remove(&k)) } else { None };
            let m = v.as_object_mut().expect("a line is an object");
            match r {
                Some(Ok(sha)) => {
                    self.cov.h2d_captured += 1;
                    m.insert("data".into(), json!(sha));
                }
                Some(Err(e)) => {
                    m.insert("data_error".into(), json!(e));
                }
                None => {
                    let why = if probes::is_h2d_copy(id) {
                        "the copy's entry or return record was not seen"
                    } else {
                        "not captured: only cuMemcpyHtoD and cuMemcpyHtoDAsync sources are read"
                    };
                    m.insert("data_error".into(), json!(why));
                }
            }
        }
    }

    /// The footer's `replay` object.
    pub fn footer(&self) -> Value {
        serde_json::to_value(&self.cov).expect("plain struct")
    }

    /// The recording's manifest: the images, layouts and data stored, the
    /// coverage, and the header's command, start, GPUs and driver.
    pub fn manifest(&self, header: &Value) -> Manifest {
        let images = self
            .reg
            .images
            .iter()
            .map(|i| ImageEntry {
                sha256: i.sha256.clone(),
                file: recording::image_file(&i.sha256),
                bytes: i.bytes,
                kind: i.kind.to_string(),
                loads: i.loads,
                kernels: i.kernels.clone(),
                layout_error: i.layout_error.clone(),
                key_collisions: i.key_collisions.clone(),
            })
            .collect();
        let files = std::fs::read_dir(self.store.dir.join(recording::DATA)).map(|d| d.count()).unwrap_or(0);
        let field = |k: &str| header.get(k).filter(|v| !v.is_null());
        Manifest {
            format: recording::FORMAT.into(),
            schema_version: recording::SCHEMA_VERSION,
            tracer_version: Some(env!("CARGO_PKG_VERSION").into()),
            trace: self.store.trace.into(),
            command: field("command").and_then(|v| serde_json::from_value(v.clone()).ok()),
            started_at: field("started_at").and_then(Value::as_str).map(str::to_owned),
            gpus: field("gpus").cloned(),
            driver: field("driver").and_then(Value::as_str).map(str::to_owned),
            capture_data: self.capture_data,
            images,
            layouts: Some(self.reg.layout_count() as u64),
            data: Some(DataSummary {
                files: files as u64,
                bytes: self.data_bytes,
                skipped_over_cap: self.data_skipped_over_cap,
                cap_bytes: self.data_cap,
            }),
            coverage: Some(self.cov.clone()),
        }
    }

    /// Writes `manifest.json` (under a temporary name, then renamed).
    pub fn write_manifest(&self, header: &Value) -> anyhow::Result<PathBuf> {
        let path = self.store.dir.join(recording::MANIFEST);
        self.store.write_atomic(&path, &self.manifest(header).to_pretty_json())?;
        Ok(path)
    }
}

/// A `params_error` text that is none of the recorder's (counted as "other").
const UNKNOWN_ERROR: u32 = u32::MAX;
