//! Stack records → `stack` lines and the `stack` field of the lines they
//! belong to (docs/trace-format.md, Stack lines). Pure: the frames' names
//! come from a [`StackResolver`] the collector passes in
//! (collect/stacks/), which reads the process and its files.
//!
//! A stack record is emitted right before the record it belongs to: a
//! `site::CALL` stack before the call's entry record (same `func` and
//! `ts`), a `site::SWITCH_OUT` stack before the `SchedSwitch` of the
//! thread switching out (same `ts`). Each is kept per thread and site until
//! that record comes; a stack whose record never comes (lost, or replaced
//! by the thread's next stack of the same site) is an orphan: counted, never
//! attached to another line. Distinct stacks of a process get one id each,
//! written as one `stack` line before the first line that refers to it.
//!
//! A `site::SAMPLE` stack (an on-CPU sample, tracer-ebpf/src/sample.rs)
//! belongs to no other record: it becomes a `sample` line of its own
//! ([`sample_line`]) at once.
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde_json::{Map, Value, json};
use tracer_common::decode::Stack;
use tracer_common::stack::{py_status, site};

pub use tracer_format::line::vocab::FrameKind;

/// `fn` of a frame whose module has no symbol for it.
pub const UNKNOWN_FN: &str = "[unknown]";
/// `fn` of an address in anonymous executable memory.
pub const JIT_FN: &str = "[jit]";
/// `fn` of a Python frame whose code object could not be read.
pub const PYTHON_UNKNOWN_FN: &str = "[python ?]";

/// One resolved frame (a `frames` element of a `stack` line).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Frame {
    pub kind: FrameKind,
    pub func: Arc<str>,
    /// The mapped file (native frames).
    pub module: Option<Arc<str>>,
    /// The address in the process (native, jit, unknown frames).
    pub addr: Option<u64>,
    /// The offset in `module`.
    pub offset: Option<u64>,
    pub file: Option<Arc<str>>,
    pub line: Option<u32>,
}

impl Frame {
    /// A frame with only a kind and a function name.
    pub fn named(kind: FrameKind, func: &str) -> Frame {
        Frame { kind, func: Arc::from(func), module: None, addr: None, offset: None, file: None, line: None }
    }

    pub fn json(&self) -> Value {
        let mut m = Map::new();
        m.insert("kind".into(), json!(self.kind.as_str()));
        m.insert("fn".into(), json!(&*self.func));
        if let Some(x) = &self.module {
            m.insert("module".into(), json!(&**x));
        }
        if let Some(a) = self.addr {
            m.insert("addr".into(), crate::decode::args::hex(a));
        }
        if let Some(o) = self.offset {
            m.insert("offset".into(), crate::decode::args::hex(o));
        }
        if let Some(f) = &self.file {
            m.insert("file".into(), json!(&**f));
        }
        if let Some(l) = self.line {
            m.insert("line".into(), json!(l));
        }
        Value::Object(m)
    }
}

/// Turns one stack record into its frames, innermost first (native frames
/// symbolized, Python frames read, the two merged), while the process may
/// still run. The collector's lives in collect/stacks/.
pub trait StackResolver {
    fn resolve(&mut self, s: &Stack) -> Vec<Frame>;
    /// A process exec'd: what was cached of its mappings and memory is
    /// stale. (Not called at its exit: records of a process may follow its
    /// exit record, and native frames still resolve from its files.)
    fn forget_process(&mut self, _pid: u32) {}
    /// The version of what the frames of raw stack `s` are read from (the
    /// Python code objects at its addresses), checked against the process
    /// when due. A raw stack seen before whose version differs from the one
    /// taken when it was resolved (a code object replaced at its address
    /// since) is resolved again.
    fn version(&mut self, _s: &Stack) -> u64 {
        0
    }
    /// What it could not do, by reason (the footer's `stacks.resolver_errors`).
    fn errors(&self) -> BTreeMap<String, u64> {
        BTreeMap::new()
    }
}

impl<F: FnMut(&Stack) -> Vec<Frame>> StackResolver for F {
    fn resolve(&mut self, s: &Stack) -> Vec<Frame> {
        self(s)
    }
}

/// Frames of a record when no resolver is given: addresses only.
fn unresolved(s: &Stack) -> Vec<Frame> {
    let mut v: Vec<Frame> =
        s.native().map(|a| Frame { addr: Some(a), ..Frame::named(FrameKind::Unknown, UNKNOWN_FN) }).collect();
    v.extend(s.py().map(|_| Frame::named(FrameKind::Unknown, PYTHON_UNKNOWN_FN)));
    v
}

/// The footer's `stacks` counts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StackStats {
    /// Stack records received.
    pub records: u64,
    pub call_records: u64,
    pub switch_out_records: u64,
    /// On-CPU samples (each one `sample` line).
    pub sample_records: u64,
    /// Records of a site this version does not know.
    pub other_site_records: u64,
    /// Stacks attached to the line of their record.
    pub attached: u64,
    /// Stacks whose record never came.
    pub orphans: u64,
    /// Stacks whose record came but makes no line (the last switch-out of
    /// an exited thread).
    pub unused: u64,
    /// Records with at least one native frame, with at least one Python frame.
    pub with_native: u64,
    pub with_python: u64,
    /// Records whose `bpf_get_stack` failed, by errno.
    pub native_errors: BTreeMap<u32, u64>,
    /// Records by `py_status`.
    pub py_ok: u64,
    pub py_truncated: u64,
    pub py_no_thread: u64,
    pub py_read_failed: u64,
    pub py_idle: u64,
    pub py_none: u64,
    pub py_other: u64,
    /// Frames of the received records, by what they resolved to.
    pub frames: u64,
    pub frames_unknown: u64,
    pub frames_jit: u64,
    pub frames_python_unknown: u64,
    /// Distinct stacks (stack lines written).
    pub distinct: u64,
}

impl StackStats {
    fn count(&mut self, s: &Stack, frames: &[Frame]) {
        self.records += 1;
        match s.site {
            site::CALL => self.call_records += 1,
            site::SWITCH_OUT => self.switch_out_records += 1,
            site::SAMPLE => self.sample_records += 1,
            _ => self.other_site_records += 1,
        }
        self.with_native += u64::from(s.native_len() > 0);
        self.with_python += u64::from(s.py_len() > 0);
        if s.native_err != 0 {
            *self.native_errors.entry(s.native_err).or_default() += 1;
        }
        *match s.py_status {
            py_status::OK => &mut self.py_ok,
            py_status::TRUNCATED => &mut self.py_truncated,
            py_status::NO_THREAD => &mut self.py_no_thread,
            py_status::READ_FAILED => &mut self.py_read_failed,
            py_status::IDLE => &mut self.py_idle,
            py_status::NONE => &mut self.py_none,
            _ => &mut self.py_other,
        } += 1;
        self.frames += frames.len() as u64;
        for f in frames {
            match &*f.func {
                UNKNOWN_FN => self.frames_unknown += 1,
                JIT_FN => self.frames_jit += 1,
                PYTHON_UNKNOWN_FN => self.frames_python_unknown += 1,
                _ => {}
            }
        }
    }

    /// The footer's `stacks` object (docs/trace-format.md, Footer).
    pub fn json(&self, resolver_errors: &BTreeMap<String, u64>) -> Value {
        json!({
            "records": self.records,
            "by_site": {
                "call": self.call_records,
                "switch_out": self.switch_out_records,
                "sample": self.sample_records,
                "other": self.other_site_records,
            },
            "attached": self.attached,
            "orphans": self.orphans,
            "unused": self.unused,
            "with_native": self.with_native,
            "with_python": self.with_python,
            "native_errors": self.native_errors.iter().map(|(k, v)| (k.to_string(), json!(v))).collect::<Map<_, _>>(),
            "py_status": {
                "ok": self.py_ok,
                "truncated": self.py_truncated,
                "no_thread": self.py_no_thread,
                "read_failed": self.py_read_failed,
                "idle": self.py_idle,
                "none": self.py_none,
                "other": self.py_other,
            },
            "frames": {
                "total": self.frames,
                "unknown": self.frames_unknown,
                "jit": self.frames_jit,
                "python_unknown": self.frames_python_unknown,
            },
            "distinct": self.distinct,
            "resolver_errors": resolver_errors,
        })
    }
}

/// A stack waiting for its record.
struct Waiting {
    func: u16,
    ts: u64,
    /// Its interned id.
    id: u64,
}

/// A raw stack resolved: its interned id and the resolver's version of it
/// then ([`StackResolver::version`]).
#[derive(Clone, Copy)]
struct Resolved {
    id: u64,
    version: u64,
}

/// An interned stack.
struct Interned {
    pid: u32,
    frames: Arc<[Frame]>,
    /// Its `stack` line was written.
    written: bool,
}

/// Stack records of the traced threads → stack ids on their lines.
#[derive(Default)]
pub struct Stacks {
    resolver: Option<Box<dyn StackResolver>>,
    /// (tid, site) → the stack waiting for that thread's next record of the site.
    waiting: HashMap<(u32, u32), Waiting>,
    /// (pid, frames) → id.
    ids: HashMap<(u32, Arc<[Frame]>), u64>,
    /// (pid, the record's native addresses and Python frames) → id and the
    /// resolver's version of it when resolved: a stack seen before is not
    /// resolved again while its version stands (until its process execs).
    raw: HashMap<(u32, Box<[u64]>), Resolved>,
    /// id → the interned stack.
    by_id: Vec<Interned>,
    pub stats: StackStats,
}

impl Stacks {
    pub fn with_resolver(r: Box<dyn StackResolver>) -> Self {
        Stacks { resolver: Some(r), ..Default::default() }
    }

    /// The resolver's errors (footer).
    pub fn resolver_errors(&self) -> BTreeMap<String, u64> {
        self.resolver.as_ref().map(|r| r.errors()).unwrap_or_default()
    }

    /// A stack record: resolved now (the process may exit soon), kept for
    /// its thread's next record of its site; a sample's: its `stack` line
    /// (the first time) and its `sample` line go to `out` now.
    pub fn record(&mut self, s: &Stack, out: &mut impl FnMut(Value)) {
        let raw: Box<[u64]> =
            s.native().chain(s.py().flat_map(|f| [f.code, f.instr])).chain([s.native_len() as u64]).collect();
        let key = (s.hdr.pid, raw);
        let seen = self.raw.get(&key).copied();
        let id = match seen {
            Some(r) if self.resolver.as_mut().map_or(0, |x| x.version(s)) == r.version => r.id,
            _ => {
                let frames = match self.resolver.as_mut() {
                    Some(r) => r.resolve(s),
                    None => unresolved(s),
                };
                let id = self.intern(s.hdr.pid, frames);
                let version = self.resolver.as_mut().map_or(0, |r| r.version(s));
                self.raw.insert(key, Resolved { id, version });
                id
            }
        };
        let frames = self.by_id[id as usize].frames.clone();
        self.stats.count(s, &frames);
        if s.site == site::SAMPLE {
            self.define(id, s.hdr.ts, out);
            out(sample_line(s.hdr.ts, s.hdr.pid, s.hdr.tid, id));
            return;
        }
        if let Some(_old) = self.waiting.insert((s.hdr.tid, s.site), Waiting { func: s.hdr.func, ts: s.hdr.ts, id }) {
            self.stats.orphans += 1;
        }
    }

    fn intern(&mut self, pid: u32, frames: Vec<Frame>) -> u64 {
        let frames: Arc<[Frame]> = frames.into();
        let next = self.by_id.len() as u64;
        let id = *self.ids.entry((pid, frames.clone())).or_insert(next);
        if id == next {
            self.by_id.push(Interned { pid, frames, written: false });
        }
        id
    }

    /// The record of `tid` at `ts` for `site` came (a call's entry of
    /// `func`; a switch-out): the stack taken for it, if any (then
    /// [`Stacks::attach`] it, or [`Stacks::unused`] when no line will carry
    /// it). A waiting stack of an earlier record is an orphan.
    pub fn take(&mut self, tid: u32, site: u32, func: u16, ts: u64) -> Option<u64> {
        let key = (tid, site);
        let w = self.waiting.get(&key)?;
        if w.ts > ts {
            // Taken for a later record (records slightly out of order).
            return None;
        }
        let w = self.waiting.remove(&key)?;
        if w.ts != ts || w.func != func {
            self.stats.orphans += 1;
            return None;
        }
        Some(w.id)
    }

    /// Stack `id` goes on a line (of time `ts`): its `stack` line, when no
    /// line referred to it yet, goes to `out` first.
    pub fn attach(&mut self, id: u64, ts: u64, out: &mut impl FnMut(Value)) {
        self.stats.attached += 1;
        self.define(id, ts, out);
    }

    /// Writes stack `id`'s `stack` line to `out` unless written already.
    fn define(&mut self, id: u64, ts: u64, out: &mut impl FnMut(Value)) {
        if let Some(i) = self.by_id.get_mut(id as usize)
            && !i.written
        {
            i.written = true;
            self.stats.distinct += 1;
            out(stack_line(id, i.pid, ts, &i.frames));
        }
    }

    /// A stack taken whose record makes no line (a dead task's last switch).
    pub fn unused(&mut self) {
        self.stats.unused += 1;
    }

    /// A thread exited: a call stack still waiting for its record is an
    /// orphan (a switch-out stack waits for the last switch, which follows).
    pub fn thread_exited(&mut self, tid: u32) {
        if self.waiting.remove(&(tid, site::CALL)).is_some() {
            self.stats.orphans += 1;
        }
    }

    pub fn forget_process(&mut self, pid: u32) {
        self.raw.retain(|(p, _), _| *p != pid);
        if let Some(r) = self.resolver.as_mut() {
            r.forget_process(pid);
        }
    }

    /// End of the recording: stacks still waiting are orphans.
    pub fn finish(&mut self) {
        self.stats.orphans += self.waiting.len() as u64;
        self.waiting.clear();
    }
}

/// `{"type":"sample","op":"cpu","name":"sample","ts","pid","tid","stack"}`:
/// thread `tid` was on a CPU at `ts`, in stack `stack`.
pub fn sample_line(ts: u64, pid: u32, tid: u32, stack: u64) -> Value {
    json!({
        "type": "sample",
        "op": "cpu",
        "name": "sample",
        "ts": ts,
        "pid": pid,
        "tid": tid,
        "stack": stack,
    })
}

/// `{"type":"stack","op":"stack","name":"stack","id","pid","tid":0,"ts","frames"}`.
pub fn stack_line(id: u64, pid: u32, ts: u64, frames: &[Frame]) -> Value {
    json!({
        "type": "stack",
        "op": "stack",
        "name": "stack",
        "id": id,
        "pid": pid,
        "tid": 0,
        "ts": ts,
        "frames": frames.iter().map(Frame::json).collect::<Vec<_>>(),
    })
}
