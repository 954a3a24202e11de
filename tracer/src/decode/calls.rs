//! Turns the record stream into trace lines: pairs each entry with its exit
//! (per thread, innermost first), resolves function handles to kernel names,
//! classifies copy directions, and reports process events. Pure: no I/O.
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;

use serde_json::{Map, Value, json};
use tracer_common::{
    decode::Record,
    event::{CallExit, Header},
    funcs::{Arg, Class, FuncId, FuncSpec, VARIANTS},
    stack::site,
};

use crate::decode::args::{self, Captured, Copy2D3D, LaunchConfig, Outs, Side, hex};
use crate::decode::cuda_names;
use crate::decode::event_line::base;
use crate::decode::fastcall::CallLine;
use crate::decode::fastcall::Returned;
use crate::decode::fastline::{LaunchLine, Line};
use crate::decode::params::CapturedParams;

struct Pending {
    hdr: Header,
    args: [u64; tracer_common::event::MAX_ARGS],
    string: Option<String>,
    string_truncated: bool,
    blob: Option<Vec<u8>>,
    nattrs: u32,
    /// A launch's parameter bytes (`--replayable`).
    params: Option<CapturedParams>,
    /// The id of the stack taken at its entry (decode/stacks.rs).
    stack: Option<u64>,
}

/// Counts the assembler keeps for the footer.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AssemblyStats {
    pub calls: u64,
    /// Calls whose exit never arrived (trace ended mid-call, thread died).
    pub incomplete: u64,
    /// Exits whose entry record was lost.
    pub entry_lost: u64,
    pub records_by_cpu: BTreeMap<u32, u64>,
    pub bad_records: u64,
    /// Records stamped after detaching began (see `Assembler::cut_after`):
    /// entries dropped, and returns whose entry is not there.
    pub after_detach: u64,
}

/// Reads a NUL-terminated string from a traced process when the kernel side
/// could not (the page was not resident yet: probes cannot fault pages in).
pub type StringReader = Box<dyn FnMut(u32, u64) -> Option<String>>;

#[derive(Default)]
pub struct Assembler {
    read_string: Option<StringReader>,
    /// Indexed by FuncId: functions without a return probe, whose entry is
    /// a complete line (see `set_entry_only`).
    entry_only: Vec<bool>,
    /// Every line through `call_line` (tests compare it with the fast path).
    pub reference_lines: bool,
    /// Copy lines as JSON values (`--capture-data` adds fields to them).
    pub value_copy_lines: bool,
    /// When detaching began (CLOCK_MONOTONIC ns): entry and return probes
    /// come off one after the other, so calls made meanwhile would show as
    /// half calls. The recording ends there: later entries are dropped, and
    /// later returns without their entry too (a return of a call entered
    /// before is kept).
    pub cut_after: Option<u64>,
    /// NVIDIA device-file events (ioctls in flight).
    pub ioctls: crate::decode::ioctls::Ioctls,
    pending: HashMap<u32, Vec<Pending>>,
    /// (pid, CUfunction or CUkernel) -> kernel name.
    names: HashMap<(u32, u64), Rc<str>>,
    /// `--counts`: the names of exited processes, kept for the count lines
    /// written at the end ([`Assembler::kernel_name`]); None: dropped.
    pub exited_names: Option<HashMap<(u32, u64), Rc<str>>>,
    /// pid -> start -> (end, side): known device and pinned-host ranges.
    ranges: HashMap<u32, BTreeMap<u64, (u64, Side)>>,
    /// Contexts, streams and each thread's current context: a line's device.
    devices: crate::decode::devices::Devices,
    /// Streams capturing into a graph (their work is marked `capture`).
    captures: crate::decode::graph_calls::Captures,
    pub stats: AssemblyStats,
    /// Scheduler events of the traced threads.
    pub sched: crate::decode::sched::SchedTracker,
    /// Stack records: the `stack` lines and fields.
    pub stacks: crate::decode::stacks::Stacks,
}

pub fn func_name(id: FuncId) -> String {
    match id.spec() {
        Some(s) => format!("{}{}", s.name, VARIANTS[id.variant()]),
        None => format!("func#{}", id.0),
    }
}

/// `cuStreamSynchronize_ptsz` -> `stream_synchronize`.
fn snake(name: &str) -> String {
    let base = name.strip_prefix("cu").unwrap_or(name);
    let base = base.split("_v").next().unwrap_or(base);
    let mut s = String::new();
    for (i, ch) in base.chars().enumerate() {
        if ch.is_ascii_uppercase() {
            if i > 0 {
                s.push('_');
            }
            s.push(ch.to_ascii_lowercase());
        } else {
            s.push(ch);
        }
    }
    s
}

fn type_op(spec: &FuncSpec) -> (&'static str, String) {
    let op = match spec.class {
        Class::Launch if spec.name == "cuLaunchHostFunc" => "host_func".to_string(),
        Class::Launch => "launch".to_string(),
        Class::Alloc => "alloc".to_string(),
        Class::Free => "free".to_string(),
        Class::Copy => "copy".to_string(),
        Class::Set => "set".to_string(),
        _ => snake(spec.name),
    };
    let ty = match spec.class {
        Class::Init => "init",
        Class::Device => "device",
        Class::Context => "context",
        Class::Module => "module",
        Class::Launch => "kernel",
        Class::Graph => "graph",
        Class::Alloc | Class::Free | Class::Memory => "memory",
        Class::Copy => "memcpy",
        Class::Set => "memset",
        Class::Sync => "sync",
        Class::Stream => "stream",
        Class::Event => "event",
        Class::Other => "other",
    };
    (ty, op)
}

fn str_param(id: FuncId) -> Option<usize> {
    id.spec()?.params.iter().position(|p| p.kind == Arg::Str)
}

fn param(spec: &FuncSpec, name: &str) -> Option<usize> {
    spec.params.iter().position(|p| p.name == name)
}

impl Assembler {
    #[cfg(test)]
    pub fn new() -> Self {
        Self::default()
    }

    pub fn with_string_reader(read_string: StringReader) -> Self {
        Assembler { read_string: Some(read_string), ..Self::default() }
    }

    /// Feeds one record; completed lines go to `out`.
    pub fn push(&mut self, rec: &Record, out: &mut impl FnMut(Line)) {
        let hdr = match rec {
            Record::Enter { hdr, .. } | Record::Exec { hdr, .. } => *hdr,
            Record::Exit { x, .. } => x.hdr,
            Record::Fork(f) => f.hdr,
            Record::ProcExit(e) => e.hdr,
            Record::IoctlEnter { r, .. } => r.hdr,
            Record::IoctlExit { r, .. } => r.hdr,
            Record::NvFile { r, .. } => r.hdr,
            Record::Switch(r) => r.hdr,
            Record::Waking(r) => r.hdr,
            Record::Stack(s) => s.hdr,
        };
        *self.stats.records_by_cpu.entry(hdr.cpu).or_default() += 1;
        self.sched.seen(&hdr, &mut |v| out(Line::Value(v)));
        match *rec {
            Record::Enter { hdr, .. } if self.cut_after.is_some_and(|c| hdr.ts > c) => {
                self.stats.after_detach += 1;
            }
            Record::Exit { ref x, .. }
                if self.cut_after.is_some_and(|c| x.hdr.ts > c)
                    && !self.pending.get(&x.hdr.tid).is_some_and(|s| s.iter().any(|p| p.hdr.func == x.hdr.func)) =>
            {
                self.stats.after_detach += 1;
            }
            Record::Enter { hdr, args, string, string_truncated, blob, nattrs, params } => {
                let mut string = string.map(|s| String::from_utf8_lossy(s).into_owned());
                let mut string_truncated = string_truncated;
                // Not readable in the probe, or possibly cut at the capture
                // size: read it whole from the process while it still runs.
                if (string.is_none() || string_truncated)
                    && let (Some(i), Some(read)) = (str_param(FuncId(hdr.func)), self.read_string.as_mut())
                    && args[i] != 0
                    && let Some(full) = read(hdr.pid, args[i])
                    && string.as_deref().is_none_or(|p| full.starts_with(p))
                {
                    string = Some(full);
                    string_truncated = false;
                }
                let params =
                    params.map(|p| CapturedParams { status: p.status, layout: p.layout, data: p.data.to_vec() });
                let stack = self.stacks.take(hdr.tid, site::CALL, hdr.func, hdr.ts);
                if let Some(id) = stack {
                    self.stacks.attach(id, hdr.ts, &mut |v| out(Line::Value(v)));
                }
                let p = Pending {
                    hdr,
                    args,
                    string,
                    string_truncated,
                    blob: blob.map(<[u8]>::to_vec),
                    nattrs,
                    params,
                    stack,
                };
                if self.is_entry_only(hdr.func) {
                    // Without a return probe (`--returns none`) a context
                    // call is taken as done when entered.
                    if let Some(spec) = FuncId(hdr.func).spec() {
                        self.devices.observe(spec, hdr.pid, hdr.tid, &p.args, None, true);
                    }
                    if let Some(l) = self.fast_launch(&p, None) {
                        out(Line::Launch(l));
                        self.stats.calls += 1;
                    } else if let Some(l) = self.fast_call(&p, None) {
                        out(Line::Call(l));
                        self.stats.calls += 1;
                    } else if let Some(v) = self.call_line(FuncId(hdr.func), Some(&p), None) {
                        out(Line::Value(v));
                    }
                } else {
                    self.pending.entry(hdr.tid).or_default().push(p);
                }
            }
            Record::Exit { ref x, string, string_truncated } => {
                let stack = self.pending.entry(x.hdr.tid).or_default();
                let mut entry = stack.iter().rposition(|p| p.hdr.func == x.hdr.func).map(|i| stack.remove(i));
                match (&mut entry, string) {
                    (None, _) => self.stats.entry_lost += 1,
                    (Some(e), Some(s)) if e.string.is_none() => {
                        e.string = Some(String::from_utf8_lossy(s).into_owned());
                        e.string_truncated = string_truncated;
                    }
                    _ => {}
                }
                if let (Some(e), Some(spec)) = (&entry, FuncId(x.hdr.func).spec()) {
                    let out0 = (x.out_ok & 1 != 0).then_some(x.out[0]);
                    self.devices.observe(spec, e.hdr.pid, e.hdr.tid, &e.args, out0, x.ret as u32 == 0);
                }
                if let Some(l) = entry.as_ref().and_then(|e| self.fast_launch(e, Some(x))) {
                    out(Line::Launch(l));
                    self.stats.calls += 1;
                } else if let Some(l) = entry.as_ref().and_then(|e| self.fast_call(e, Some(x))) {
                    out(Line::Call(l));
                    self.stats.calls += 1;
                } else if let Some(v) = self.call_line(FuncId(x.hdr.func), entry.as_ref(), Some(x)) {
                    out(Line::Value(v));
                }
            }
            Record::Fork(f) => out(Line::Value(self.proc_line(&f.hdr, "fork", json!({ "child": f.child })))),
            Record::Exec { hdr, filename } => {
                // A new program image: its handles, ranges and mappings are gone.
                self.forget_process(hdr.pid);
                self.stacks.forget_process(hdr.pid);
                let f = String::from_utf8_lossy(filename).into_owned();
                out(Line::Value(self.proc_line(&hdr, "exec", json!({ "filename": f }))))
            }
            Record::IoctlEnter { ref r, data, tail } => {
                let call = self.current_call(r.hdr.tid);
                self.ioctls.enter(r, data, tail, call);
            }
            Record::IoctlExit { ref r, data, tail } => out(Line::Value(self.ioctls.exit(r, data, tail))),
            Record::NvFile { ref r, path } => {
                out(Line::Value(crate::decode::ioctls::file_line(r, path, self.current_call(r.hdr.tid))))
            }
            Record::Switch(ref r) => {
                let stack = (r.flags & tracer_common::event::sched_flags::PREV_TRACED != 0)
                    .then(|| self.stacks.take(r.hdr.tid, site::SWITCH_OUT, r.hdr.func, r.hdr.ts))
                    .flatten();
                let kept = self.sched.switch_with_stack(r, stack, &mut |v| out(Line::Value(v)));
                match (stack, kept) {
                    (Some(id), true) => self.stacks.attach(id, r.hdr.ts, &mut |v| out(Line::Value(v))),
                    (Some(_), false) => self.stacks.unused(),
                    (None, _) => {}
                }
            }
            Record::Waking(ref r) => self.sched.waking(r),
            Record::Stack(ref s) => self.stacks.record(s, &mut |v| out(Line::Value(v))),
            Record::ProcExit(e) => {
                self.sched.exited(e.hdr.tid);
                self.stacks.thread_exited(e.hdr.tid);
                if let Some(v) = self.ioctls.finish_thread(e.hdr.tid) {
                    out(Line::Value(v));
                }
                self.flush_thread(e.hdr.tid, out);
                self.devices.forget_thread(e.hdr.tid);
                let op = if e.group_dead == 1 { "exit" } else { "thread_exit" };
                if e.group_dead == 1 {
                    // Stacks keep its mappings: its last records may follow.
                    self.forget_process(e.hdr.pid);
                }
                out(Line::Value(self.proc_line(&e.hdr, op, json!({}))))
            }
        }
    }

    /// A plain cuLaunchKernel line, built without a JSON value (see
    /// fastline.rs); None for everything else, which takes `call_line`.
    fn fast_launch<'a>(&'a self, p: &'a Pending, x: Option<&CallExit>) -> Option<LaunchLine<'a>> {
        const NAMES: [&str; 3] = ["cuLaunchKernel", "cuLaunchKernel_ptsz", "cuLaunchKernel_ptds"];
        static INDEX: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
        let index =
            *INDEX.get_or_init(|| tracer_common::funcs::lookup("cuLaunchKernel").expect("in the table").index());
        let id = FuncId(p.hdr.func);
        if self.reference_lines || id.index() != index || x.is_some_and(|x| x.ret as u32 != 0) || self.captures.active()
        {
            return None;
        }
        Some(LaunchLine {
            hdr: p.hdr,
            name: NAMES.get(id.variant())?,
            args: p.args,
            kernel: self.names.get(&(p.hdr.pid, p.args[0])).map(|n| &**n),
            returned: x.map(|x| Returned { exit_ts: x.hdr.ts, exit_cpu: x.hdr.cpu, exit_seq: x.hdr.seq }),
            params: p.params.as_ref(),
            device: self.devices.device(p.hdr.pid, p.hdr.tid, Some(p.args[8])),
            stack: p.stack,
        })
    }

    /// A plain 1-D copy, set or cuLaunchKernelEx line, built without a JSON
    /// value (see fastcall.rs); None for everything else, which takes
    /// `call_line`. The fields are those `normalize` gives these classes.
    fn fast_call(&self, p: &Pending, x: Option<&CallExit>) -> Option<CallLine<'_>> {
        use crate::decode::fastcall::{ConfigArg, Norm};
        let id = FuncId(p.hdr.func);
        let spec = id.spec()?;
        if self.reference_lines
            || x.is_some_and(|x| x.ret as u32 != 0)
            || !crate::decode::fastcall::eligible(spec)
            || self.captures.active()
        {
            return None;
        }
        // --replayable: launches with parameter bytes, and with
        // --capture-data copies (which get `data` fields), take the general
        // path, where those fields are added.
        if p.params.is_some() || (self.value_copy_lines && spec.class == Class::Copy) {
            return None;
        }
        let a = |n: &str| param(spec, n).map(|i| p.args[i]);
        let pid = p.hdr.pid;
        let norm = match spec.class {
            Class::Copy => {
                let (dst, src) = copy_ends(spec, &p.args);
                // As `normalize` (the variant suffixes contain none of these).
                let n = spec.name;
                let direction = named_direction(n).unwrap_or_else(|| {
                    let (s, d) = (self.side(pid, src), self.side(pid, dst));
                    let guess =
                        |x: Side, other: Side| if x == Side::Unknown && other == Side::Device { Side::Host } else { x };
                    args::direction(guess(s, d), guess(d, s))
                });
                Norm::Copy { size: a("ByteCount").unwrap_or(0), direction, dst, src }
            }
            Class::Set => {
                let elem: u64 = if spec.name.contains("D16") {
                    2
                } else if spec.name.contains("D32") {
                    4
                } else {
                    1
                };
                let count = match (a("N"), a("Width"), a("Height")) {
                    (Some(n), _, _) => n,
                    (None, Some(w), Some(h)) => w.saturating_mul(h),
                    _ => 0,
                };
                Norm::Set { size: count.saturating_mul(elem), dst: p.args[0] }
            }
            _ => {
                let f = p.args[1];
                let (cfg, config_arg) = match p.blob.as_deref() {
                    Some(b) => match LaunchConfig::parse(b, p.nattrs) {
                        Some(c) => (Some(c), ConfigArg::Parsed),
                        None => (None, ConfigArg::Null),
                    },
                    None => (None, ConfigArg::NotRead(p.args[0])),
                };
                Norm::LaunchEx { f, kernel: self.names.get(&(pid, f)).map(|n| &**n), cfg, config_arg }
            }
        };
        let mut line = CallLine {
            hdr: p.hdr,
            spec,
            variant: id.variant(),
            args: p.args,
            returned: x.map(|x| Returned { exit_ts: x.hdr.ts, exit_cpu: x.hdr.cpu, exit_seq: x.hdr.seq }),
            norm,
            device: Default::default(),
            stack: p.stack,
        };
        line.device = self.devices.line_device(spec, pid, p.hdr.tid, &p.args, line.stream());
        Some(line)
    }

    /// Declares which functions are probed without a return probe.
    pub fn set_entry_only(&mut self, f: impl Fn(FuncId) -> bool) {
        self.entry_only = (0..tracer_common::funcs::FUNCS.len() * 4).map(|i| f(FuncId(i as u16))).collect();
    }

    fn is_entry_only(&self, id: u16) -> bool {
        self.entry_only.get(id as usize).copied().unwrap_or(false)
    }

    /// Emits the calls still in progress (as `incomplete`).
    pub fn finish(&mut self, out: &mut impl FnMut(Line)) {
        for v in self.ioctls.finish() {
            out(Line::Value(v));
        }
        self.sched.finish(&mut |v| out(Line::Value(v)));
        self.stacks.finish();
        let mut tids: Vec<u32> = self.pending.keys().copied().collect();
        tids.sort_unstable();
        for tid in tids {
            self.flush_thread(tid, out);
        }
    }

    /// The driver call in progress on `tid` (innermost), if any: its name
    /// and entry timestamp (with the tid, the call's line's key).
    fn current_call(&self, tid: u32) -> Option<(String, u64)> {
        self.pending.get(&tid).and_then(|s| s.last()).map(|p| (func_name(FuncId(p.hdr.func)), p.hdr.ts))
    }

    fn flush_thread(&mut self, tid: u32, out: &mut impl FnMut(Line)) {
        if let Some(stack) = self.pending.remove(&tid) {
            for p in stack {
                if let Some(v) = self.call_line(FuncId(p.hdr.func), Some(&p), None) {
                    out(Line::Value(v));
                }
            }
        }
    }

    /// The kernel name process `pid` got for handle `h` (also after it
    /// exited when `exited_names` is on).
    pub fn kernel_name(&self, pid: u32, h: u64) -> Option<&str> {
        let k = (pid, h);
        self.names.get(&k).or_else(|| self.exited_names.as_ref()?.get(&k)).map(|n| &**n)
    }

    fn forget_process(&mut self, pid: u32) {
        if let Some(kept) = self.exited_names.as_mut() {
            kept.extend(self.names.iter().filter(|((p, _), _)| *p == pid).map(|(k, v)| (*k, v.clone())));
        }
        self.devices.forget_process(pid);
        self.names.retain(|(p, _), _| *p != pid);
        self.ranges.remove(&pid);
    }

    fn proc_line(&self, hdr: &Header, op: &str, extra: Value) -> Value {
        let mut m = base(hdr, "process", op, "process");
        if let Value::Object(e) = extra {
            m.extend(e);
        }
        Value::Object(m)
    }

    fn side(&self, pid: u32, addr: u64) -> Side {
        self.ranges
            .get(&pid)
            .and_then(|r| r.range(..=addr).next_back())
            .filter(|(_, (end, _))| addr < *end)
            .map(|(_, (_, s))| *s)
            .unwrap_or(Side::Unknown)
    }

    fn call_line(&mut self, id: FuncId, entry: Option<&Pending>, exit: Option<&CallExit>) -> Option<Value> {
        let spec = id.spec()?;
        let hdr = entry.map(|e| e.hdr).or(exit.map(|x| x.hdr))?;
        let name = func_name(id);
        let (ty, op) = type_op(spec);
        let mut m = base(&hdr, ty, &op, &name);
        let zero = [0u64; tracer_common::event::MAX_ARGS];
        let outs = exit.map(|x| Outs { values: x.out, ok: if x.ret as u32 == 0 { x.out_ok } else { 0 } });
        let args = entry.map(|e| &e.args[..]).unwrap_or(&zero);
        let blob = entry.and_then(|e| e.blob.as_deref());
        let cap = Captured {
            args,
            string: entry.and_then(|e| e.string.as_deref()),
            string_truncated: entry.is_some_and(|e| e.string_truncated),
            blob,
            nattrs: entry.map_or(0, |e| e.nattrs),
            outs,
        };
        let ret = exit.map(|x| x.ret as u32);
        match exit {
            Some(x) => {
                m.insert("ret".into(), json!(x.ret as u32));
                if x.ret as u32 != 0 {
                    m.insert("error".into(), json!(cuda_names::cu_result_name(x.ret as u32)));
                }
                if let Some(e) = entry {
                    let ns = x.hdr.ts.saturating_sub(e.hdr.ts);
                    m.insert("duration_us".into(), json!(ns as f64 / 1000.0));
                } else {
                    m.insert("ts".into(), json!(x.hdr.ts));
                    m.insert("entry_lost".into(), json!(true));
                }
                m.insert("exit_cpu".into(), json!(x.hdr.cpu));
                m.insert("exit_seq".into(), json!(x.hdr.seq));
            }
            None if self.is_entry_only(id.0) => {}
            None => {
                m.insert("incomplete".into(), json!(true));
            }
        }
        if entry.is_none() {
            m.remove("cpu");
            m.remove("seq");
        }
        self.stats.calls += 1;
        if exit.is_none() && !self.is_entry_only(id.0) {
            self.stats.incomplete += 1;
        }
        if let Some(id) = entry.and_then(|e| e.stack) {
            m.insert("stack".into(), json!(id));
        }
        if entry.is_some() {
            self.normalize(spec, &name, hdr.pid, &cap, ret, &mut m);
            m.insert("args".into(), Value::Object(args::decode_args(spec, &cap)));
            if let Some(p) = entry.and_then(|e| e.params.as_ref()) {
                p.insert_fields(&mut m);
            }
        }
        let stream = m.get("stream").and_then(Value::as_str).and_then(tracer_format::hex::parse_addr);
        self.devices.line_device(spec, hdr.pid, hdr.tid, cap.args, stream).insert_fields(&mut m);
        Some(Value::Object(m))
    }

    /// Adds the fields simple consumers look for (kernel, grid, size,
    /// direction, stream, ptr) and learns handles and address ranges.
    fn normalize(
        &mut self,
        spec: &FuncSpec,
        name: &str,
        pid: u32,
        c: &Captured,
        ret: Option<u32>,
        m: &mut Map<String, Value>,
    ) {
        let a = |n: &str| param(spec, n).map(|i| c.args[i]);
        let ok = ret == Some(0);
        // (`stream` in the stream memory operations' prototypes.)
        if let Some(s) = a("hStream").or_else(|| a("stream")) {
            m.insert("stream".into(), hex(s));
        }
        match spec.class {
            Class::Launch if spec.name == "cuLaunchKernelEx" => self.launch_ex_fields(pid, c, m),
            Class::Launch if spec.name != "cuLaunchHostFunc" => {
                self.put_kernel(pid, c.args[0], m);
                m.insert("grid".into(), json!([c.args[1] as u32, c.args[2] as u32, c.args[3] as u32]));
                m.insert("block".into(), json!([c.args[4] as u32, c.args[5] as u32, c.args[6] as u32]));
                m.insert("shared_mem".into(), json!(c.args[7] as u32));
            }
            Class::Module => self.module_fields(spec, pid, c, ok, m),
            Class::Alloc => self.alloc_fields(spec, pid, c, ok, m),
            Class::Free => {
                let p = c.args[0];
                if spec.name != "cuMemRelease" {
                    m.insert("ptr".into(), hex(p));
                }
                if ok && let Some(r) = self.ranges.get_mut(&pid) {
                    r.remove(&p);
                }
            }
            Class::Copy => self.copy_fields(spec, name, pid, c, m),
            Class::Set => set_fields(spec, name, c, m),
            Class::Graph => {
                let names = &self.names;
                let name_of = |h: u64| names.get(&(pid, h)).cloned();
                self.captures.graph_fields(spec, pid, c, ok, &name_of, m);
            }
            _ => {
                if let Some(e) = a("hEvent") {
                    m.insert("event".into(), hex(e));
                }
            }
        }
        self.captures.mark(spec, pid, c, m);
    }

    /// cuLaunchKernelEx: the kernel, and grid, block, shared memory and stream from its launch config.
    fn launch_ex_fields(&self, pid: u32, c: &Captured, m: &mut Map<String, Value>) {
        let f = c.args[1];
        self.put_kernel(pid, f, m);
        if let Some(cfg) = c.blob.and_then(|b| LaunchConfig::parse(b, c.nattrs)) {
            m.insert("grid".into(), json!(cfg.grid));
            m.insert("block".into(), json!(cfg.block));
            m.insert("shared_mem".into(), json!(cfg.shared_mem));
            m.insert("stream".into(), hex(cfg.stream));
        }
    }

    /// Function lookups: the kernel name, and the handle it now names (learned for later launches).
    fn module_fields(&mut self, spec: &FuncSpec, pid: u32, c: &Captured, ok: bool, m: &mut Map<String, Value>) {
        let out0 = c.outs.and_then(|o| o.get(0));
        match spec.name {
            "cuModuleGetFunction" | "cuLibraryGetKernel" => {
                if let Some(s) = c.string {
                    m.insert("kernel".into(), json!(s));
                    if let (true, Some(h)) = (ok, out0) {
                        self.names.insert((pid, h), Rc::from(s));
                        m.insert("handle".into(), hex(h));
                    }
                }
            }
            "cuKernelGetFunction" => {
                let k = c.args[1];
                let known = self.names.get(&(pid, k)).cloned();
                if let Some(n) = &known {
                    m.insert("kernel".into(), json!(&**n));
                }
                if let (true, Some(h), Some(n)) = (ok, out0, known) {
                    self.names.insert((pid, h), n);
                    m.insert("handle".into(), hex(h));
                }
            }
            _ => {}
        }
    }

    /// Allocations: size, pointer (its range learned, host or device) and memory handle.
    fn alloc_fields(&mut self, spec: &FuncSpec, pid: u32, c: &Captured, ok: bool, m: &mut Map<String, Value>) {
        let a = |n: &str| param(spec, n).map(|i| c.args[i]);
        let size = match spec.name {
            "cuMemAllocPitch_v2" => {
                let pitch = c.outs.and_then(|o| o.get(1)).unwrap_or(c.args[2]);
                pitch.saturating_mul(c.args[3])
            }
            _ => a("bytesize").or(a("size")).unwrap_or(0),
        };
        m.insert("size".into(), json!(size));
        let (ptr, side) = match spec.name {
            "cuMemHostRegister_v2" => (Some(c.args[0]), Side::Host),
            "cuMemAllocHost_v2" | "cuMemHostAlloc" => (c.outs.and_then(|o| o.get(0)), Side::Host),
            "cuMemCreate" => (None, Side::Device),
            _ => (c.outs.and_then(|o| o.get(0)), Side::Device),
        };
        if let Some(p) = ptr {
            m.insert("ptr".into(), hex(p));
            if ok && size > 0 {
                self.ranges.entry(pid).or_default().insert(p, (p.saturating_add(size), side));
            }
        }
        if spec.name == "cuMemCreate"
            && let Some(h) = c.outs.and_then(|o| o.get(0))
        {
            m.insert("handle".into(), hex(h));
        }
    }

    /// Copies: size, direction, destination and source.
    fn copy_fields(&self, spec: &FuncSpec, name: &str, pid: u32, c: &Captured, m: &mut Map<String, Value>) {
        let a = |n: &str| param(spec, n).map(|i| c.args[i]);
        let (size, dir, dst, src) = match spec.params[0].kind {
            Arg::Memcpy2D | Arg::Memcpy3D => match c.blob.and_then(|b| Copy2D3D::parse(spec.params[0].kind, b)) {
                Some(cp) => (cp.bytes(), cp.direction(), cp.dst, cp.src),
                None => (0, "default", 0, 0),
            },
            _ => {
                let size = a("ByteCount").unwrap_or(0);
                let (dst, src) = copy_ends(spec, c.args);
                (size, self.copy_direction(name, pid, dst, src), dst, src)
            }
        };
        m.insert("size".into(), json!(size));
        m.insert("direction".into(), json!(dir));
        m.insert("dst".into(), hex(dst));
        m.insert("src".into(), hex(src));
        if spec.params.iter().any(|p| p.kind == Arg::Nodes) {
            batch_fields(spec, c, m);
        }
    }

    /// A 1D copy's direction: from its name, else (unified addressing) from the address ranges seen.
    fn copy_direction(&self, name: &str, pid: u32, dst: u64, src: u64) -> &'static str {
        named_direction(name).unwrap_or_else(|| {
            // Unified addressing: classify by the ranges seen.
            let (s, d) = (self.side(pid, src), self.side(pid, dst));
            let guess = |x: Side, other: Side| {
                if x == Side::Unknown && other == Side::Device { Side::Host } else { x }
            };
            args::direction(guess(s, d), guess(d, s))
        })
    }

    fn put_kernel(&self, pid: u32, f: u64, m: &mut Map<String, Value>) {
        m.insert("func".into(), hex(f));
        m.insert(
            "kernel".into(),
            match self.names.get(&(pid, f)) {
                Some(n) => json!(&**n),
                None => Value::Null,
            },
        );
    }
}

/// A batch of copies (`cuMemcpyBatchAsync`): `copies`, the `sizes` read (the first
/// NODES_CAP), and `size`, their sum; `sizes_cut` when the batch had more copies than
/// were read (`size` is then the first ones' bytes only).
fn batch_fields(spec: &FuncSpec, c: &Captured, m: &mut Map<String, Value>) {
    let p = crate::decode::graph_structs::parts(spec, c.args, c.blob, c.nattrs);
    m.insert("copies".into(), json!(p.total));
    m.insert("size".into(), json!(p.first.iter().fold(0u64, |a, &s| a.saturating_add(s))));
    m.insert("sizes".into(), json!(p.first));
    if (p.first.len() as u64) < p.total {
        m.insert("sizes_cut".into(), json!(true));
    }
}

/// A 1D copy's destination and source by their parameters' names (a device or host
/// address, or a CUDA array's handle); 0 for a copy without them (batches, whose lists
/// are in user memory, and 3D peer copies, whose struct is not read).
fn copy_ends(spec: &FuncSpec, args: &[u64]) -> (u64, u64) {
    let find = |names: &[&str]| spec.params.iter().position(|p| names.contains(&p.name)).map_or(0, |i| args[i]);
    (find(&["dst", "dstDevice", "dstHost", "dstArray"]), find(&["src", "srcDevice", "srcHost", "srcArray"]))
}

/// A copy's direction where its name says it (CUDA arrays are device memory); a batch
/// of copies has one per copy ("batch"). None: unified addressing, found from the ranges.
fn named_direction(name: &str) -> Option<&'static str> {
    let base = name.strip_prefix("cuMemcpy").unwrap_or("");
    Some(if base.starts_with("HtoD") || base.starts_with("HtoA") {
        "h2d"
    } else if base.starts_with("DtoH") || base.starts_with("AtoH") {
        "d2h"
    } else if base.starts_with("DtoD")
        || base.starts_with("DtoA")
        || base.starts_with("AtoD")
        || base.starts_with("AtoA")
    {
        "d2d"
    } else if base.starts_with("Peer") || base.starts_with("3DPeer") {
        "peer"
    } else if base.starts_with("BatchAsync") || base.starts_with("3DBatchAsync") {
        "batch"
    } else {
        return None;
    })
}

/// Memsets: size in bytes (count × element size) and destination.
fn set_fields(spec: &FuncSpec, name: &str, c: &Captured, m: &mut Map<String, Value>) {
    let a = |n: &str| param(spec, n).map(|i| c.args[i]);
    let elem: u64 = if name.contains("D16") {
        2
    } else if name.contains("D32") {
        4
    } else {
        1
    };
    let count = match (a("N"), a("Width"), a("Height")) {
        (Some(n), _, _) => n,
        (None, Some(w), Some(h)) => w.saturating_mul(h),
        _ => 0,
    };
    m.insert("size".into(), json!(count.saturating_mul(elem)));
    m.insert("dst".into(), hex(c.args[0]));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A batch copy's sizes: summed; a batch longer than the sizes read is marked cut.
    #[test]
    fn batch_copies_sum_the_sizes_read() {
        use tracer_common::graph::{NODES_CAP, NODES_OFF};
        let spec = tracer_common::funcs::lookup("cuMemcpyBatchAsync_v2").unwrap().spec().unwrap();
        let mut blob = vec![0u8; tracer_common::event::BLOB_CAP];
        for i in 0..NODES_CAP {
            blob[NODES_OFF + 8 * i..NODES_OFF + 8 * i + 8].copy_from_slice(&(1000 + i as u64).to_le_bytes());
        }
        let fields = |count: u64, got: u32| {
            let args = [0x10, 0x20, 0x30, count, 0, 0, 0, 0x5000, 0, 0, 0];
            let c = Captured {
                args: &args,
                string: None,
                string_truncated: false,
                blob: Some(&blob),
                nattrs: got,
                outs: None,
            };
            let mut m = Map::new();
            batch_fields(spec, &c, &mut m);
            Value::Object(m)
        };
        assert_eq!(fields(2, 2), json!({"copies": 2, "size": 2001, "sizes": [1000, 1001]}));
        let cut = fields(20, NODES_CAP as u32);
        assert_eq!(cut["copies"], 20);
        assert_eq!(cut["size"], (0..NODES_CAP as u64).map(|i| 1000 + i).sum::<u64>());
        assert_eq!(cut["sizes_cut"], true);
    }
    use tracer_common::event::{EventKind, MAX_ARGS};
    use tracer_common::funcs::lookup;

    fn hdr(kind: EventKind, name: &str, ts: u64, seq: u64) -> Header {
        let func = if name.is_empty() { 0 } else { lookup(name).unwrap().0 };
        Header { kind: kind as u16, func, cpu: 0, seq, ts, pid: 100, tid: 101 }
    }
    fn enter<'a>(name: &str, ts: u64, args: &[u64], s: Option<&'a [u8]>) -> Record<'a> {
        let mut a = [0u64; MAX_ARGS];
        a[..args.len()].copy_from_slice(args);
        Record::Enter {
            hdr: hdr(EventKind::CallEnter, name, ts, ts),
            args: a,
            string: s,
            string_truncated: false,
            blob: None,
            nattrs: 0,
            params: None,
        }
    }
    fn with_params<'a>(r: Record<'a>, status: u32, data: &'a [u8]) -> Record<'a> {
        match r {
            Record::Enter { hdr, args, string, string_truncated, blob, nattrs, .. } => {
                let params = Some(tracer_common::decode::Params { layout: 1, status, data });
                Record::Enter { hdr, args, string, string_truncated, blob, nattrs, params }
            }
            other => other,
        }
    }
    fn exit(name: &str, ts: u64, ret: u64, out: [u64; 2], ok: u32) -> Record<'static> {
        Record::Exit {
            x: CallExit { hdr: hdr(EventKind::CallExit, name, ts, ts), ret, out, out_ok: ok, flags: 0 },
            string: None,
            string_truncated: false,
        }
    }
    fn run(recs: &[Record]) -> Vec<Value> {
        let mut a = Assembler::new();
        let mut v = Vec::new();
        for r in recs {
            a.push(r, &mut |x| v.push(x.into_value()));
        }
        a.finish(&mut |x| v.push(x.into_value()));
        v
    }

    #[test]
    fn kernel_name_resolved_through_library_and_function() {
        let v = run(&[
            enter("cuLibraryGetKernel", 10, &[0x10, 0xaaa, 0x20], Some(b"my_kernel")),
            exit("cuLibraryGetKernel", 20, 0, [0xbbb, 0], 1),
            enter("cuKernelGetFunction", 30, &[0x30, 0xbbb], None),
            exit("cuKernelGetFunction", 40, 0, [0xccc, 0], 1),
            enter("cuLaunchKernel", 50, &[0xccc, 2, 3, 4, 128, 1, 1, 256, 0x5, 0x6, 0], None),
            exit("cuLaunchKernel", 57, 0, [0, 0], 0),
        ]);
        assert_eq!(v.len(), 3);
        assert_eq!(v[1]["kernel"], "my_kernel");
        let l = &v[2];
        assert_eq!(l["type"], "kernel");
        assert_eq!(l["op"], "launch");
        assert_eq!(l["kernel"], "my_kernel");
        assert_eq!(l["grid"], json!([2, 3, 4]));
        assert_eq!(l["block"], json!([128, 1, 1]));
        assert_eq!(l["shared_mem"], 256);
        assert_eq!(l["stream"], "0x5");
        assert_eq!(l["duration_us"], json!(0.007));
        assert_eq!(l["ret"], 0);
    }

    #[test]
    fn alloc_copy_direction_and_errors() {
        let v = run(&[
            enter("cuMemAlloc_v2", 1, &[0x7ffe00, 4096], None),
            exit("cuMemAlloc_v2", 2, 0, [0x10_0000, 0], 1),
            enter("cuMemcpy", 3, &[0x10_0010, 0x5555_0000, 64], None),
            exit("cuMemcpy", 4, 0, [0, 0], 0),
            enter("cuMemcpy", 5, &[0x5555_0000, 0x10_0000, 64], None),
            exit("cuMemcpy", 6, 0, [0, 0], 0),
            enter("cuMemAlloc_v2", 7, &[0x7ffe00, 1 << 40], None),
            exit("cuMemAlloc_v2", 8, 2, [0, 0], 0),
            enter("cuMemsetD32Async", 9, &[0x10_0000, 7, 10, 0x9], None),
            exit("cuMemsetD32Async", 10, 0, [0, 0], 0),
        ]);
        assert_eq!(v[0]["size"], 4096);
        assert_eq!(v[0]["ptr"], "0x100000");
        assert_eq!(v[1]["direction"], "h2d");
        assert_eq!(v[2]["direction"], "d2h");
        assert_eq!(v[3]["error"], "CUDA_ERROR_OUT_OF_MEMORY");
        assert_eq!(v[3]["args"]["dptr"], Value::Null);
        assert_eq!(v[4]["size"], 40);
        assert_eq!(v[4]["stream"], "0x9");
    }

    #[test]
    fn nesting_lost_entries_and_incomplete_calls() {
        let v = run(&[
            enter("cuStreamSynchronize", 1, &[0], None),
            exit("cuCtxSynchronize", 2, 0, [0, 0], 0),
            enter("cuCtxSynchronize", 3, &[], None),
        ]);
        // exit without entry, then two calls in progress at the end
        assert_eq!(v.len(), 3);
        assert_eq!(v[0]["entry_lost"], true);
        assert_eq!(v[0]["name"], "cuCtxSynchronize");
        assert!(v[1..].iter().all(|l| l["incomplete"] == true));
    }

    #[test]
    fn unreadable_strings_fall_back_to_the_reader() {
        let mut a = Assembler::with_string_reader(Box::new(|pid, addr| {
            (pid == 100 && addr == 0x20).then(|| "late".to_string())
        }));
        let mut v = Vec::new();
        for r in [
            enter("cuModuleGetFunction", 1, &[0x10, 0x11, 0x20], None),
            exit("cuModuleGetFunction", 2, 0, [0xf0, 0], 1),
        ] {
            a.push(&r, &mut |x| v.push(x.into_value()));
        }
        assert_eq!(v[0]["kernel"], "late");
        assert_eq!(v[0]["args"]["name"], "late");
    }

    #[test]
    fn failed_calls_have_no_out_values_and_host_funcs_are_not_launches() {
        let v = run(&[
            enter("cuMemAlloc_v2", 1, &[0x7ffe00, 1 << 41], None),
            exit("cuMemAlloc_v2", 2, 2, [0xdead_beef, 0], 1),
            enter("cuLaunchHostFunc", 3, &[0x5, 0x6, 0x7], None),
            exit("cuLaunchHostFunc", 4, 0, [0, 0], 0),
        ]);
        assert_eq!(v[0]["args"]["dptr"], Value::Null);
        assert!(v[0].get("ptr").is_none());
        assert_eq!((v[1]["type"].as_str(), v[1]["op"].as_str()), (Some("kernel"), Some("host_func")));
    }

    #[test]
    fn cut_strings_are_completed_from_the_process() {
        let long = "k".repeat(2000);
        let l2 = long.clone();
        let mut a = Assembler::with_string_reader(Box::new(move |_, _| Some(l2.clone())));
        let cut = &long.as_bytes()[..1023];
        let mut v = Vec::new();
        let mut args = [0u64; MAX_ARGS];
        args[..3].copy_from_slice(&[0x10, 0x11, 0x20]);
        let e = Record::Enter {
            hdr: hdr(EventKind::CallEnterStr, "cuModuleGetFunction", 1, 1),
            args,
            string: Some(cut),
            string_truncated: true,
            blob: None,
            nattrs: 0,
            params: None,
        };
        a.push(&e, &mut |x| v.push(x.into_value()));
        a.push(&exit("cuModuleGetFunction", 2, 0, [0xf0, 0], 1), &mut |x| v.push(x.into_value()));
        assert_eq!(v[0]["kernel"].as_str().map(str::len), Some(2000));
    }

    #[test]
    fn string_read_at_return_completes_the_entry() {
        let x = CallExit {
            hdr: hdr(EventKind::CallExitStr, "cuLibraryGetKernel", 2, 2),
            ret: 0,
            out: [0xabc, 0],
            out_ok: 1,
            flags: 0,
        };
        let v = run(&[
            enter("cuLibraryGetKernel", 1, &[0x10, 0x11, 0x20], None),
            Record::Exit { x, string: Some(b"k_at_exit"), string_truncated: false },
            enter("cuLaunchKernel", 3, &[0xabc, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0], None),
            exit("cuLaunchKernel", 4, 0, [0, 0], 0),
        ]);
        assert_eq!(v[0]["args"]["name"], "k_at_exit");
        assert_eq!(v[1]["kernel"], "k_at_exit");
    }

    #[test]
    fn entry_only_mode_emits_at_entry() {
        let mut a = Assembler::default();
        a.set_entry_only(|_| true);
        let mut v = Vec::new();
        a.push(&enter("cuMemAlloc_v2", 1, &[0x10, 4096], None), &mut |x| v.push(x.into_value()));
        assert_eq!(v.len(), 1);
        assert_eq!(v[0]["size"], 4096);
        assert!(v[0].get("incomplete").is_none() && v[0].get("ret").is_none());
        assert_eq!(a.stats.incomplete, 0);
    }

    /// The fast launch lines equal the general path's, field for field,
    /// and give the same summary.
    #[test]
    fn fast_launch_lines_equal_the_reference_lines() {
        let recs = [
            enter("cuModuleGetFunction", 1, &[0x10, 0x20, 0x30], Some("k\"quoted\"\\ é\u{1}".as_bytes())),
            exit("cuModuleGetFunction", 2, 0, [0xf1, 0], 1),
            enter("cuLaunchKernel", 10, &[0xf1, 2, 3, 4, 128, 2, 1, 256, 0x5, 0x6, 0x7], None),
            exit("cuLaunchKernel", 1_010_017, 0, [0, 0], 0),
            enter("cuLaunchKernel_ptsz", 20, &[0xdead, u32::MAX as u64, 1, 1, 1, 1, 1, 0, 0, 0, 0], None),
            exit("cuLaunchKernel_ptsz", 21, 0, [0, 0], 0),
            // Errors, lost entries and unfinished calls take the general path.
            enter("cuLaunchKernel", 30, &[0xf1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0], None),
            exit("cuLaunchKernel", 31, 1, [0, 0], 0),
            exit("cuLaunchKernel_ptds", 41, 0, [0, 0], 0),
            enter("cuLaunchKernel", 50, &[0xf1, 9, 1, 1, 32, 1, 1, 0, 0x5, 0, 0], None),
            // --replayable: parameter bytes, and a launch without them.
            with_params(enter("cuLaunchKernel", 60, &[0xf1, 1, 1, 1, 1, 1, 1, 0, 0, 0x9, 0], None), 1, b"\x01\xab\x00"),
            exit("cuLaunchKernel", 61, 0, [0, 0], 0),
            with_params(enter("cuLaunchKernel", 70, &[0xf2, 1, 1, 1, 1, 1, 1, 0, 0, 0x9, 0], None), 3, b""),
            exit("cuLaunchKernel", 71, 0, [0, 0], 0),
        ];
        let lines = |reference: bool, entry_only: bool| {
            let mut a = Assembler { reference_lines: reference, ..Assembler::default() };
            a.set_entry_only(|_| entry_only);
            let mut sum = crate::analysis::summary::Summary::default();
            let mut v = Vec::new();
            let mut fast = 0;
            let mut out = |l: Line| {
                sum.add_line(&l);
                fast += matches!(l, Line::Launch(_)) as usize;
                v.push(l.into_value());
            };
            for r in &recs {
                a.push(r, &mut out);
            }
            a.finish(&mut out);
            (v, sum.render(), a.stats.clone(), fast)
        };
        for (entry_only, n_fast) in [(false, 4), (true, 6)] {
            let (fast, fast_sum, fast_stats, n) = lines(false, entry_only);
            let (slow, slow_sum, slow_stats, none) = lines(true, entry_only);
            assert_eq!((n, none), (n_fast, 0), "lines taking the fast path");
            assert_eq!(fast, slow, "entry_only={entry_only}");
            assert_eq!(fast_sum, slow_sum);
            assert_eq!(fast_stats, slow_stats);
        }
        let (v, _, _, _) = lines(false, false);
        assert_eq!(v.len(), 8);
        assert_eq!((&v[5]["params"], &v[5]["params_from"]), (&json!("01ab00"), &json!("layout")));
        assert!(v[6]["params_error"].as_str().unwrap().starts_with("no parameter layout"));
        assert!(v[6].get("params").is_none());
        assert_eq!(v[1]["kernel"], "k\"quoted\"\\ é\u{1}");
        assert_eq!(v[1]["duration_us"], 1010.007);
        assert_eq!(v[1]["args"]["extra"], "0x7");
        assert_eq!(v[2]["grid"], json!([u32::MAX, 1, 1]));
        assert_eq!(v[2]["kernel"], Value::Null);
        assert_eq!(v[3]["error"], "CUDA_ERROR_INVALID_VALUE");
        assert_eq!(v[4]["entry_lost"], true);
        assert_eq!(v[7]["incomplete"], true);
    }

    #[test]
    fn calls_after_the_detach_cut_are_dropped() {
        let mut a = Assembler { cut_after: Some(100), ..Assembler::default() };
        let mut v = Vec::new();
        for r in [
            enter("cuCtxSetCurrent", 90, &[1], None),
            exit("cuCtxSetCurrent", 101, 0, [0, 0], 0), // entered before the cut: kept
            exit("cuCtxSetCurrent", 102, 0, [0, 0], 0), // entry after the cut (its probe came off first)
            enter("cuCtxSetCurrent", 103, &[2], None),  // entry after the cut
        ] {
            a.push(&r, &mut |l| v.push(l.into_value()));
        }
        a.finish(&mut |l| v.push(l.into_value()));
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0]["args"]["ctx"], "0x1");
        assert!(v[0].get("entry_lost").is_none() && v[0].get("incomplete").is_none());
        assert_eq!((a.stats.after_detach, a.stats.entry_lost, a.stats.incomplete), (2, 0, 0));
        assert_eq!(a.stats.records_by_cpu.values().sum::<u64>(), 4, "every record is counted as received");
    }

    #[test]
    fn replayable_lines_take_the_general_path() {
        let lines = |value_copy_lines: bool, recs: &[Record]| {
            let mut a = Assembler { value_copy_lines, ..Assembler::default() };
            a.set_entry_only(|_| true);
            let mut out = Vec::new();
            for r in recs {
                a.push(r, &mut |l| {
                    out.push(match l {
                        Line::Value(v) => v["params_from"].as_str().unwrap_or("value").to_string(),
                        Line::Call(_) => "fast".to_string(),
                        Line::Launch(_) => "launch".to_string(),
                    })
                });
            }
            out
        };
        let ex = enter("cuLaunchKernelEx", 5, &[0, 0xf1, 0, 0x7000], None);
        let ex_params = with_params(enter("cuLaunchKernelEx", 6, &[0, 0xf1, 0, 0x7000], None), 2, b"\x01\x02");
        assert_eq!(lines(false, &[ex, ex_params]), ["fast", "extra"]);
        let copy = enter("cuMemcpyHtoDAsync_v2", 7, &[0x7f00_0000_0000, 0x1000, 64, 0], None);
        assert_eq!(lines(false, std::slice::from_ref(&copy)), ["fast"]);
        assert_eq!(lines(true, &[copy]), ["value"]);
    }

    #[test]
    fn entry_only_launches_between_a_call_and_its_return() {
        // Default mode: launches have no return probe, synchronization has.
        let mut a = Assembler::default();
        a.set_entry_only(tracer_common::funcs::is_entry_only_by_default);
        let mut v = Vec::new();
        a.push(&enter("cuStreamSynchronize", 1, &[0x5000], None), &mut |x| v.push(x.into_value()));
        a.push(&enter("cuLaunchKernel", 2, &[0xf0, 8, 1, 1, 128, 1, 1, 0, 0x5000, 0, 0], None), &mut |x| {
            v.push(x.into_value())
        });
        assert_eq!(v.len(), 1, "the launch is complete at entry");
        assert_eq!(v[0]["op"], "launch");
        assert_eq!(v[0]["grid"], json!([8, 1, 1]));
        assert!(v[0].get("ret").is_none() && v[0].get("duration_us").is_none() && v[0].get("incomplete").is_none());
        a.push(&exit("cuStreamSynchronize", 10, 0, [0, 0], 0), &mut |x| v.push(x.into_value()));
        assert_eq!(v.len(), 2);
        assert_eq!(v[1]["name"], "cuStreamSynchronize");
        assert_eq!(v[1]["duration_us"], 0.009);
        a.finish(&mut |x| v.push(x.into_value()));
        assert_eq!(v.len(), 2);
        assert_eq!((a.stats.calls, a.stats.incomplete, a.stats.entry_lost), (2, 0, 0));
    }

    #[test]
    fn variant_names_and_ops() {
        assert_eq!(func_name(lookup("cuStreamSynchronize_ptsz").unwrap()), "cuStreamSynchronize_ptsz");
        assert_eq!(snake("cuStreamSynchronize"), "stream_synchronize");
        assert_eq!(snake("cuCtxCreate_v4"), "ctx_create");
    }
}
