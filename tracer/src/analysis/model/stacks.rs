//! The user stacks of a trace (`stack` lines, docs/trace-format.md "Stack
//! lines"): each stack by its id, with its process and frames (innermost
//! first), and which call lines name which stack. `off_cpu` intervals keep
//! their stack id themselves (model/sched.rs).
//!
//! A line that names an id no `stack` line defines keeps its id (the
//! analyses find no stack for it) and is counted in
//! [`Stacks::unknown_refs`]; a second `stack` line for an id that differs
//! from the first is counted in [`Stacks::redefined`] (the first is kept).
use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use super::records::{Call, parse_handle};
use crate::analysis::fasthash::FxHashMap;

/// A stack's id, as the trace writes it (unique in the trace).
pub type StackId = u64;

pub use tracer_format::line::vocab::FrameKind;

/// One frame of a stack.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Frame {
    pub kind: FrameKind,
    /// The function (`fn`): a demangled symbol, a Python qualified name,
    /// `[unknown]`, `[jit]`, `[python ?]`.
    pub func: String,
    /// The source file (Python frames; native frames with line information).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// The mapped file of a native frame.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub module: Option<String>,
    /// The address in the process, and the offset in the module.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub addr: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offset: Option<u64>,
}

/// The last part of a path (`/home/u/data.py` → `data.py`).
pub fn basename(p: &str) -> &str {
    p.rsplit('/').next().unwrap_or(p)
}

impl Frame {
    /// The frame in a few words, not escaped (text outputs escape it,
    /// analysis/inert.rs): `load_batch (data.py:41)` (Python: the file's
    /// basename and line), `cuLaunchKernel (libcuda.so.1)` (native: the
    /// module's basename; its file and line instead when it has them),
    /// `[jit]`, `[unknown]`.
    pub fn short(&self) -> String {
        let place = match (&self.file, self.line, &self.module) {
            (Some(f), Some(l), _) => Some(format!("{}:{l}", basename(f))),
            (Some(f), None, _) => Some(basename(f).to_string()),
            (None, _, Some(m)) if self.kind == FrameKind::Native => Some(basename(m).to_string()),
            _ => None,
        };
        match place {
            Some(p) => format!("{} ({p})", self.func),
            None => self.func.clone(),
        }
    }

    /// The function could not be named: `[unknown]`, `[jit]`, `[python ?]`
    /// (or a frame of kind jit/unknown).
    pub fn unnamed(&self) -> bool {
        matches!(self.kind, FrameKind::Jit | FrameKind::Unknown) || self.func.starts_with('[')
    }

    /// A frame of the system's or CUDA's libraries rather than of the
    /// program: a native frame of libc, the dynamic loader, libpthread,
    /// libdl, libstdc++, the CUDA driver or runtime (wherever installed), or
    /// of any module under /lib, /lib64, /usr/lib, /usr/lib64; an `unknown`
    /// frame (no mapping: the vDSO, a trampoline).
    pub fn is_runtime(&self) -> bool {
        match (self.kind, self.module.as_deref()) {
            (FrameKind::Unknown, _) => true,
            (FrameKind::Native, Some(m)) => {
                const LIBS: [&str; 8] =
                    ["libc.so", "libc-", "ld-linux", "libpthread", "libdl", "libstdc++", "libcuda.so", "libcudart"];
                const DIRS: [&str; 4] = ["/lib/", "/lib64/", "/usr/lib/", "/usr/lib64/"];
                let b = basename(m);
                LIBS.iter().any(|l| b.starts_with(l)) || DIRS.iter().any(|d| m.starts_with(d))
            }
            _ => false,
        }
    }

    /// From one element of a `stack` line's `frames`.
    fn of(v: &Value) -> Result<Frame, String> {
        let kind = v["kind"].as_str().ok_or("needs `kind` (string)")?;
        let kind = FrameKind::parse(kind)
            .ok_or_else(|| format!("has `kind` `{kind}`, expected native, python, jit or unknown"))?;
        let func = v["fn"].as_str().ok_or("needs `fn` (string)")?.to_string();
        let text = |k: &str| -> Result<Option<String>, String> {
            match &v[k] {
                Value::Null => Ok(None),
                Value::String(s) => Ok(Some(s.clone())),
                _ => Err(format!("has a `{k}` that is not a string")),
            }
        };
        let hex = |k: &str| -> Result<Option<u64>, String> {
            match &v[k] {
                Value::Null => Ok(None),
                Value::String(s) => {
                    parse_handle(s).map(Some).ok_or_else(|| format!("has `{k}` `{s}`, expected a hex address"))
                }
                _ => Err(format!("has a `{k}` that is not a hex string")),
            }
        };
        let line = match &v["line"] {
            Value::Null => None,
            l => Some(l.as_u64().and_then(|l| u32::try_from(l).ok()).ok_or("has a `line` that is not a line number")?),
        };
        Ok(Frame {
            kind,
            func,
            file: text("file")?,
            line,
            module: text("module")?,
            addr: hex("addr")?,
            offset: hex("offset")?,
        })
    }
}

/// One `stack` line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Stack {
    pub id: StackId,
    /// The process whose addresses the frames are.
    pub pid: u32,
    /// Innermost first.
    pub frames: Vec<Frame>,
}

impl Stack {
    /// From a `stack` line; the error names the field.
    pub fn of(v: &Value, pid: u32) -> Result<Stack, String> {
        let id = v["id"].as_u64().ok_or("a `stack` line needs an integer `id`")?;
        let frames = v["frames"].as_array().ok_or("a `stack` line needs `frames` (an array)")?;
        let frames = frames
            .iter()
            .enumerate()
            .map(|(i, f)| Frame::of(f).map_err(|e| format!("stack {id}: frame {i} {e}")))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Stack { id, pid, frames })
    }

    /// The first `n` frames, innermost first, as `a (x.py:3) ← b (y.py:9)`
    /// (not escaped), with `← …` when frames were left out; `(no frames)`
    /// for an empty stack.
    pub fn short(&self, n: usize) -> String {
        if self.frames.is_empty() {
            return "(no frames)".into();
        }
        let mut s: Vec<String> = self.frames.iter().take(n).map(Frame::short).collect();
        if self.frames.len() > n {
            s.push("…".into());
        }
        s.join(" ← ")
    }

    /// The frames that name the program's code: from the innermost to the
    /// outermost Python frame when the stack has Python frames (the
    /// interpreter's own frames around them left out); else without the
    /// runtime frames ([`Frame::is_runtime`]) at either end (a launch's
    /// stack starts in libcuda, a blocked thread's in libc, and every
    /// thread's ends in libc's start); every frame when nothing is left.
    pub fn code_frames(&self) -> &[Frame] {
        let python = self.frames.iter().any(|f| f.kind == FrameKind::Python);
        let code = |f: &Frame| if python { f.kind == FrameKind::Python } else { !f.is_runtime() };
        match (self.frames.iter().position(code), self.frames.iter().rposition(code)) {
            (Some(a), Some(b)) => &self.frames[a..=b],
            _ => &self.frames,
        }
    }
}

/// The stacks of a trace.
#[derive(Clone, Debug, Default)]
pub struct Stacks {
    by_id: BTreeMap<StackId, Stack>,
    /// (ts, pid, tid) of a call line → its `stack`. A CUDA graph's nodes
    /// (model/graphs.rs) share their launch's key, so they find its stack.
    of_call: FxHashMap<(u64, u32, u32), StackId>,
    /// Lines (calls and `off_cpu` intervals) naming an id that no `stack`
    /// line defines ([`Stacks::finish`]).
    pub unknown_refs: u64,
    /// `stack` lines redefining an id with other content (the first kept).
    pub redefined: u64,
    /// Per thread: its on-CPU samples (`sample` lines) as (ts, stack), by
    /// ts after [`Stacks::finish`].
    samples: FxHashMap<u32, Vec<(u64, StackId)>>,
    /// Each sampled thread's process.
    sample_pid: FxHashMap<u32, u32>,
}

impl Stacks {
    /// The stack of id `id`, if a `stack` line defined it.
    pub fn get(&self, id: StackId) -> Option<&Stack> {
        self.by_id.get(&id)
    }
    /// Every stack, by id.
    pub fn iter(&self) -> impl Iterator<Item = &Stack> {
        self.by_id.values()
    }
    pub fn len(&self) -> usize {
        self.by_id.len()
    }
    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }
    /// The id a call's line named (its `stack`), whether or not it is defined.
    pub fn call_stack_id(&self, c: &Call) -> Option<StackId> {
        self.of_call.get(&(c.ts, c.pid, c.tid)).copied()
    }
    /// The stack taken at a call's entry (a graph node: its launch's).
    pub fn of_call(&self, c: &Call) -> Option<&Stack> {
        self.call_stack_id(c).and_then(|id| self.get(id))
    }
    /// Calls whose line named a stack.
    pub fn calls_with_stack(&self) -> usize {
        self.of_call.len()
    }

    /// Adds a parsed `stack` line.
    pub fn define(&mut self, s: Stack) {
        match self.by_id.get(&s.id) {
            Some(old) if *old != s => self.redefined += 1,
            Some(_) => {}
            None => {
                self.by_id.insert(s.id, s);
            }
        }
    }

    /// Notes a `sample` line: thread `tid` ran in stack `id` at `ts`.
    pub fn note_sample(&mut self, ts: u64, pid: u32, tid: u32, id: StackId) {
        self.samples.entry(tid).or_default().push((ts, id));
        self.sample_pid.insert(tid, pid);
    }

    /// Every sample as (pid, tid, ts), in no particular order.
    pub fn all_samples(&self) -> impl Iterator<Item = (u32, u32, u64)> + '_ {
        self.samples.iter().flat_map(move |(&tid, v)| {
            v.iter().map(move |&(ts, _)| (self.sample_pid.get(&tid).copied().unwrap_or(0), tid, ts))
        })
    }

    /// Thread `tid`'s samples as (ts, stack), by ts.
    pub fn samples(&self, tid: u32) -> &[(u64, StackId)] {
        self.samples.get(&tid).map_or(&[], |v| v.as_slice())
    }

    /// Whether the trace has on-CPU samples.
    pub fn has_samples(&self) -> bool {
        !self.samples.is_empty()
    }

    /// Notes the `stack` of a call line.
    pub fn note_call(&mut self, ts: u64, pid: u32, tid: u32, id: StackId) {
        self.of_call.insert((ts, pid, tid), id);
    }

    /// Takes in the stacks another builder read (the parallel loader).
    /// Every field is named, so that a new one cannot be left out.
    pub fn absorb(&mut self, n: Stacks) {
        // unknown_refs: counted by finish, over the joined stacks
        let Stacks { by_id, of_call, unknown_refs: _, redefined, samples, sample_pid } = n;
        for s in by_id.into_values() {
            self.define(s);
        }
        self.redefined += redefined;
        self.of_call.extend(of_call);
        for (tid, v) in samples {
            self.samples.entry(tid).or_default().extend(v);
        }
        self.sample_pid.extend(sample_pid);
    }

    /// Everything, in a fixed order (tests: two ways of reading a trace give the same stacks).
    #[cfg(test)]
    pub(crate) fn digest(&self) -> String {
        let mut calls: Vec<_> = self.of_call.iter().collect();
        calls.sort();
        let mut samples: Vec<_> = self.samples.iter().collect();
        samples.sort();
        let mut pids: Vec<_> = self.sample_pid.iter().collect();
        pids.sort();
        format!("{:?} {calls:?} {samples:?} {pids:?} {} {}", self.by_id, self.unknown_refs, self.redefined)
    }

    /// Counts the references to undefined ids: the calls' and `others`
    /// (the `off_cpu` intervals' ids); sorts the samples.
    pub fn finish(&mut self, others: impl Iterator<Item = StackId>) {
        for v in self.samples.values_mut() {
            v.sort_unstable();
        }
        let undefined = |id: &StackId| !self.by_id.contains_key(id);
        self.unknown_refs = (self.of_call.values().filter(|id| undefined(id)).count()
            + others.filter(|id| undefined(id)).count()) as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::model::parse_str;

    const STACK_3: &str = r#"{"type":"stack","op":"stack","name":"stack","id":3,"pid":4242,"tid":0,"ts":100,"frames":[{"kind":"native","fn":"cuLaunchKernel","module":"/usr/lib/x86_64-linux-gnu/libcuda.so.1","addr":"0x7f3a12345678","offset":"0x345678"},{"kind":"python","fn":"load_batch","file":"/home/u/data.py","line":41},{"kind":"python","fn":"main","file":"/home/u/train.py","line":88},{"kind":"native","fn":"main","module":"/usr/bin/python3.12","addr":"0x55d0c0a01234","offset":"0x1234","file":"Programs/python.c","line":15}]}"#;

    #[test]
    fn stack_lines_calls_and_off_cpu_intervals() {
        let text = [
            r#"{"type":"header","pid":4242,"command":["python3","train.py"],"sched":true}"#,
            STACK_3,
            r#"{"type":"stack","op":"stack","name":"stack","id":5,"pid":4242,"tid":0,"ts":300,"frames":[{"kind":"jit","fn":"[jit]","addr":"0x7f0000001000"},{"kind":"unknown","fn":"[unknown]","addr":"0x10"}]}"#,
            r#"{"ts":200,"pid":4242,"tid":4243,"type":"kernel","op":"launch","name":"cuLaunchKernel","kernel":"k","grid":[1,1,1],"block":[1,1,1],"stream":"0x0","stack":3}"#,
            r#"{"ts":100,"pid":4242,"tid":4243,"type":"kernel","op":"launch","name":"cuLaunchKernel","kernel":"k","grid":[1,1,1],"block":[1,1,1],"stream":"0x0","stack":3}"#,
            r#"{"ts":400,"pid":4242,"tid":4243,"type":"kernel","op":"launch","name":"cuLaunchKernel","kernel":"k","grid":[1,1,1],"block":[1,1,1],"stream":"0x0"}"#,
            r#"{"ts":500,"pid":4242,"tid":4243,"type":"sync","op":"stream_synchronize","name":"cuStreamSynchronize","stream":"0x0","stack":9}"#,
            r#"{"ts":300,"end_ts":350,"pid":4242,"tid":4243,"type":"sched","op":"off_cpu","name":"read","state":"blocked","syscall":"read","file":"file /d","stack":5}"#,
            r#"{"ts":360,"end_ts":370,"pid":4242,"tid":4243,"type":"sched","op":"off_cpu","name":"futex","state":"blocked","syscall":"futex","stack":11}"#,
        ]
        .join("\n");
        let t = parse_str("t", &text).unwrap();
        assert_eq!(t.stacks.len(), 2);
        let s = t.stacks.get(3).unwrap();
        assert_eq!((s.pid, s.frames.len()), (4242, 4));
        assert_eq!(
            s.frames[0],
            Frame {
                kind: FrameKind::Native,
                func: "cuLaunchKernel".into(),
                file: None,
                line: None,
                module: Some("/usr/lib/x86_64-linux-gnu/libcuda.so.1".into()),
                addr: Some(0x7f3a12345678),
                offset: Some(0x345678),
            }
        );
        assert_eq!(s.short(3), "cuLaunchKernel (libcuda.so.1) ← load_batch (data.py:41) ← main (train.py:88) ← …");
        assert_eq!(s.frames[3].short(), "main (python.c:15)");
        assert_eq!(t.stacks.get(5).unwrap().short(9), "[jit] ← [unknown]");
        // calls sorted by ts: 100, 200 (stack 3), 400 (none), 500 (9: no such stack)
        let ids: Vec<Option<u64>> = t.calls.iter().map(|c| t.stacks.call_stack_id(c)).collect();
        assert_eq!(ids, [Some(3), Some(3), None, Some(9)]);
        assert_eq!(t.stacks.of_call(&t.calls[0]).map(|s| s.id), Some(3));
        assert!(t.stacks.of_call(&t.calls[3]).is_none());
        let off = &t.sched.off[&4243];
        assert_eq!((off[0].stack, off[1].stack), (Some(5), Some(11)));
        // the sync's 9 and the futex interval's 11 are defined nowhere
        assert_eq!((t.stacks.unknown_refs, t.stacks.redefined, t.stacks.calls_with_stack()), (2, 0, 3));
        assert_eq!(t.unknown_types.len(), 0, "stack lines are not calls");
        assert_eq!(t.calls.len(), 4);
    }

    #[test]
    fn a_redefinition_is_counted_and_the_first_kept() {
        let other = STACK_3.replace("\"line\":41", "\"line\":42");
        let t = parse_str("t", &[STACK_3, STACK_3, other.as_str()].join("\n")).unwrap();
        assert_eq!((t.stacks.len(), t.stacks.redefined), (1, 1));
        assert_eq!(t.stacks.get(3).unwrap().frames[1].line, Some(41));
    }

    #[test]
    fn bad_stack_lines_name_the_line_and_field() {
        let e = |l: &str| parse_str("s.jsonl", l).unwrap_err().to_string();
        assert_eq!(
            e(r#"{"type":"stack","pid":1,"ts":1,"frames":[]}"#),
            "s.jsonl: line 1: a `stack` line needs an integer `id`"
        );
        assert_eq!(
            e(r#"{"type":"stack","id":2,"pid":1,"ts":1}"#),
            "s.jsonl: line 1: a `stack` line needs `frames` (an array)"
        );
        assert_eq!(
            e(
                r#"{"type":"stack","id":2,"pid":1,"ts":1,"frames":[{"kind":"native","fn":"a"},{"kind":"wasm","fn":"b"}]}"#
            ),
            "s.jsonl: line 1: stack 2: frame 1 has `kind` `wasm`, expected native, python, jit or unknown"
        );
        assert_eq!(
            e(r#"{"type":"stack","id":2,"pid":1,"ts":1,"frames":[{"kind":"python","fn":"a","line":"x"}]}"#),
            "s.jsonl: line 1: stack 2: frame 0 has a `line` that is not a line number"
        );
        assert_eq!(
            e(r#"{"type":"stack","id":2,"pid":1,"ts":1,"frames":[{"kind":"native","fn":"a","addr":"zz"}]}"#),
            "s.jsonl: line 1: stack 2: frame 0 has `addr` `zz`, expected a hex address"
        );
        assert_eq!(
            e(r#"{"type":"stack","id":2,"pid":1,"ts":1,"frames":[{"kind":"native"}]}"#),
            "s.jsonl: line 1: stack 2: frame 0 needs `fn` (string)"
        );
    }

    #[test]
    fn code_frames_skip_the_runtime() {
        let t = parse_str("t", STACK_3).unwrap();
        let s = t.stacks.get(3).unwrap();
        let funcs = |s: &Stack| s.code_frames().iter().map(|f| f.func.clone()).collect::<Vec<_>>();
        assert_eq!(funcs(s), ["load_batch", "main"], "Python frames: the innermost to the outermost");
        let c = r#"{"type":"stack","id":4,"pid":1,"ts":1,"frames":[{"kind":"native","fn":"read","module":"/opt/conda/lib/libc.so.6"},{"kind":"unknown","fn":"[unknown]","addr":"0x1"},{"kind":"native","fn":"load_file","module":"/home/u/app"},{"kind":"native","fn":"main","module":"/home/u/app"},{"kind":"native","fn":"__libc_start_main","module":"/usr/lib/x86_64-linux-gnu/libc.so.6"}]}"#;
        let t = parse_str("t", c).unwrap();
        let s = t.stacks.get(4).unwrap();
        assert_eq!(funcs(s), ["load_file", "main"], "libc at both ends left out");
        let all_runtime = r#"{"type":"stack","id":4,"pid":1,"ts":1,"frames":[{"kind":"native","fn":"read","module":"/lib/libc.so.6"}]}"#;
        assert_eq!(
            parse_str("t", all_runtime).unwrap().stacks.get(4).unwrap().code_frames().len(),
            1,
            "all runtime: all kept"
        );
    }

    #[test]
    fn the_parallel_loader_merges_stacks_and_references() {
        use crate::analysis::model::TraceBuilder;
        let lines = [
            STACK_3,
            r#"{"ts":200,"pid":4242,"tid":4243,"type":"kernel","op":"launch","name":"cuLaunchKernel","kernel":"k","stream":"0x0","stack":3}"#,
            r#"{"type":"stack","id":5,"pid":4242,"ts":300,"frames":[]}"#,
            r#"{"ts":400,"pid":4242,"tid":4243,"type":"kernel","op":"launch","name":"cuLaunchKernel","kernel":"k","stream":"0x0","stack":5}"#,
            r#"{"ts":500,"pid":4242,"tid":4243,"type":"kernel","op":"launch","name":"cuLaunchKernel","kernel":"k","stream":"0x0","stack":6}"#,
        ];
        let (mut a, mut b) = (TraceBuilder::new("t"), TraceBuilder::new("t"));
        for (i, l) in lines.iter().enumerate() {
            let part = if i < 2 { &mut a } else { &mut b };
            part.add_line(i as u64 + 1, l.as_bytes()).unwrap();
        }
        a.absorb(b);
        let t = a.finish();
        let one = parse_str("t", &lines.join("\n")).unwrap();
        assert_eq!((t.stacks.len(), t.stacks.calls_with_stack(), t.stacks.unknown_refs), (2, 3, 1));
        let ids = |t: &crate::analysis::model::Trace| -> Vec<Option<u64>> {
            t.calls.iter().map(|c| t.stacks.call_stack_id(c)).collect()
        };
        assert_eq!(ids(&t), ids(&one));
        assert_eq!(t.stacks.get(5).unwrap().short(3), "(no frames)");
    }
}
