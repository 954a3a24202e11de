//! `tracer export --format perfetto`: Chrome/Perfetto trace-event JSON
//! (opens in ui.perfetto.dev and chrome://tracing), written as a stream.
//!
//! Layout: one process per traced pid (`process_name` metadata) with a track
//! per thread: CUDA driver calls as complete (`X`) slices with their
//! arguments, process events as instants; per thread that made ioctls, an
//! "ioctls (tid N)" track; per process a "phases" and an "iterations" track
//! (`X`) and a "markers" track (instants). One process per GPU ("GPU 0
//! (measured|inferred|bound)") with a track per stream (its intervals as `X`
//! slices, labelled with their source) and counter (`C`) tracks for power,
//! energy, SM clock and utilization. Flow events (`s`/`f`) tie each launch
//! call to its GPU interval when that link is known.
//!
//! With scheduler events (`sched` lines), each traced thread has a "thread
//! state (tid N)" track: every interval it spent off its CPU as slices, the
//! blocked part (`blocked: read (pipe)`, `page fault`) then the runnable part
//! (`runnable: preempted by cpuhog (pid 7)`, `runnable: behind X`,
//! `runnable: wake-up latency`), `unknown` where a switch was lost; args
//! name the system call, file, waker and the task it waited behind. The gaps
//! between slices are on-CPU time. Per process, a "sched records lost" track
//! shows the windows where scheduler records were lost.
//!
//! User stacks (`stack` lines): a call slice whose line named a stack, and
//! the slices of an off-CPU interval taken at a switch-out with one, carry
//! `args.stack_id` and `args.stack`, the frames innermost first as text
//! (`load_batch /home/u/data.py:41`, `read [/usr/lib/libc.so.6+0x3000]`;
//! [`frame_text`]). The trace-event JSON has no interned callstacks that
//! ui.perfetto.dev reads, so they are arguments.
//!
//! Timestamps are µs (3 decimals) from the first event of the trace. Slices
//! of one track are properly nested: a CPU slice that would end after its
//! enclosing slice is cut at the enclosing slice's end (`args.clipped`), and
//! GPU slices of one stream are made sequential. Synthetic thread ids start
//! at 1,000,000,000 and GPU process ids at 2,000,000,000 (real ids are below
//! 2^22).
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::Write;

use serde_json::{Value, json};

use crate::analysis::basis::IdleBasis;
use crate::analysis::energy;
use crate::analysis::kernel_names::NameStyle;
use crate::analysis::model::sched::{OffCpu, OffState, TaskId};
use crate::analysis::model::stacks::{Frame, FrameKind, StackId};
use crate::analysis::model::{Call, Dir, Kind, MarkerOp, NO_STR, NONE, ProcOp, Trace};
use crate::analysis::phases::Phases;
use crate::analysis::short_names::ShortNames;
use crate::analysis::timeline::{GpuInterval, Source, Timeline, WorkKind, link_measured_to_launches};

pub const SYN_TID_BASE: u64 = 1_000_000_000;
pub const GPU_PID_BASE: u64 = 2_000_000_000;

struct Out<'a, W: Write> {
    w: W,
    first: bool,
    t0: u64,
    n: u64,
    tick: &'a mut dyn FnMut(u64),
    /// The last synthetic track id handed out (starts at [`SYN_TID_BASE`]).
    syn: u64,
    /// How GPU slices name their kernels (short names distinct over the
    /// trace), and the names so spelled (by id).
    names: NameStyle,
    short: ShortNames,
    spelled: HashMap<u32, String>,
    /// Each stack's `"stack_id":N,"stack":[…]` args, written once per stack.
    stack_args: HashMap<StackId, String>,
}

impl<W: Write> Out<'_, W> {
    fn ev(&mut self, v: &Value) -> std::io::Result<()> {
        self.ev_with(|w| serde_json::to_writer(w, v).map_err(std::io::Error::other))
    }
    /// An event written by `f` straight to the output (the hot path: one
    /// per driver call; building a JSON value each cost ~4x the time).
    fn ev_with(&mut self, f: impl FnOnce(&mut W) -> std::io::Result<()>) -> std::io::Result<()> {
        if !self.first {
            self.w.write_all(b",\n")?;
        }
        self.first = false;
        self.n += 1;
        if self.n.is_multiple_of(65536) {
            (self.tick)(self.n);
        }
        f(&mut self.w)
    }
    /// A new synthetic track id (ioctl, phase, iteration, marker and GPU stream tracks).
    fn next_syn(&mut self) -> u64 {
        self.syn += 1;
        self.syn
    }
    fn us(&self, ts: u64) -> f64 {
        ts.saturating_sub(self.t0) as f64 / 1000.0
    }
    fn meta(&mut self, pid: u64, tid: Option<u64>, what: &str, name: &str) -> std::io::Result<()> {
        let mut v = json!({"ph": "M", "pid": pid, "name": what, "args": {"name": name}});
        if let Some(t) = tid {
            v["tid"] = json!(t);
        }
        self.ev(&v)
    }
}

fn dur_us(d: u64) -> f64 {
    d as f64 / 1000.0
}

/// Keeps one track's slices properly nested.
#[derive(Default)]
struct Nest {
    ends: Vec<u64>,
}

impl Nest {
    /// Returns the end to use (≤ the enclosing slice's end).
    fn push(&mut self, ts: u64, end: u64) -> (u64, bool) {
        while self.ends.last().is_some_and(|&e| e <= ts) {
            self.ends.pop();
        }
        let (end, clipped) = match self.ends.last() {
            Some(&e) if end > e => (e, true),
            _ => (end, false),
        };
        self.ends.push(end);
        (end, clipped)
    }
}

/// Writes the trace as trace-event JSON; returns the number of events.
pub fn export<W: Write>(t: &Trace, ph: &Phases, tl: &Timeline, w: W) -> std::io::Result<u64> {
    export_with_progress(t, ph, tl, w, NameStyle::Short, &mut |_| {})
}

/// About how many events [`export`] writes (for progress).
pub fn estimated_events(t: &Trace, tl: &Timeline) -> u64 {
    let off: usize = t.sched.off.values().map(|v| 2 * v.len()).sum();
    (t.calls.len()
        + t.procs.len()
        + t.ioctls.len()
        + t.markers.len()
        + 4 * t.power.len()
        + 3 * tl.interval_count()
        + off) as u64
}

/// [`export`], calling `tick(events written)` every 65,536 events.
pub fn export_with_progress<W: Write>(
    t: &Trace,
    ph: &Phases,
    tl: &Timeline,
    w: W,
    names: NameStyle,
    tick: &mut dyn FnMut(u64),
) -> std::io::Result<u64> {
    let t0 = t.span().map_or(0, |s| s.0);
    let mut o = Out {
        w,
        first: true,
        t0,
        n: 0,
        tick,
        syn: SYN_TID_BASE,
        names,
        short: ShortNames::of_trace(t),
        spelled: HashMap::new(),
        stack_args: HashMap::new(),
    };
    o.w.write_all(b"{\"traceEvents\":[\n")?;
    let threads = write_threads(&mut o, t)?;
    let mut nests: HashMap<(u32, u32), Nest> = HashMap::new();
    write_calls(&mut o, t, &mut nests)?;
    write_procs(&mut o, t)?;
    write_ioctls(&mut o, t, &mut nests)?;
    write_phases(&mut o, ph)?;
    write_markers(&mut o, t, &threads)?;
    write_thread_states(&mut o, t)?;
    let mut named_gpu: BTreeSet<u32> = BTreeSet::new();
    write_gpu_tracks(&mut o, t, tl, &mut named_gpu)?;
    write_counters(&mut o, t, &mut named_gpu)?;
    let n = o.n;
    let other = json!({"trace": t.path, "gpu_timeline": tl.source.as_str(),
        "idle_basis": IdleBasis::of(tl).as_str(), "calibrated_from": tl.calibrated_from, "t0_monotonic_ns": t0,
        "generator": format!("tracer {}", env!("CARGO_PKG_VERSION"))});
    write!(o.w, "\n],\"displayTimeUnit\":\"ms\",\"otherData\":{other}}}\n")?;
    o.w.flush()?;
    Ok(n)
}

/// The threads of each process: names every process and thread track; returns pid -> tids.
fn write_threads<W: Write>(o: &mut Out<'_, W>, t: &Trace) -> std::io::Result<BTreeMap<u32, BTreeSet<u32>>> {
    let mut threads: BTreeMap<u32, BTreeSet<u32>> = BTreeMap::new();
    for c in &t.calls {
        threads.entry(c.pid).or_default().insert(c.tid);
    }
    for p in &t.procs {
        threads.entry(p.pid).or_default().insert(p.tid);
    }
    for pid in t.pids() {
        threads.entry(pid).or_default();
    }
    for (&tid, &(pid, _)) in &t.sched.seen {
        threads.entry(pid).or_default().insert(tid);
    }
    for (&pid, tids) in &threads {
        o.meta(pid as u64, None, "process_name", &format!("{} (pid {pid})", t.process_name(pid)))?;
        for &tid in tids {
            let n = if tid == pid { format!("main thread {tid}") } else { format!("thread {tid}") };
            o.meta(pid as u64, Some(tid as u64), "thread_name", &n)?;
        }
    }
    Ok(threads)
}

/// The CUDA driver calls, one `X` slice each on their thread's track.
fn write_calls<W: Write>(o: &mut Out<'_, W>, t: &Trace, nests: &mut HashMap<(u32, u32), Nest>) -> std::io::Result<()> {
    // Graph nodes are GPU work, not calls of the thread (their GPU slices come from the timeline).
    for c in t.calls.iter().filter(|c| c.is_driver_call()) {
        let (end, clipped) = nests.entry((c.pid, c.tid)).or_default().push(c.ts, c.end());
        let ts = o.us(c.ts);
        let stack = t.stacks.call_stack_id(c).and_then(|id| stack_args(&mut o.stack_args, t, id));
        o.ev_with(|w| write_call(w, t, c, ts, end, clipped, stack.as_deref()))?;
    }
    Ok(())
}

/// A frame as one line of text: the function, its source file and line,
/// then the module and offset (native) or the address (jit, unknown).
pub fn frame_text(f: &Frame) -> String {
    let mut s = f.func.clone();
    if let Some(file) = &f.file {
        s.push(' ');
        s.push_str(file);
        if let Some(l) = f.line {
            s.push_str(&format!(":{l}"));
        }
    }
    if f.kind != FrameKind::Python {
        match (&f.module, f.offset, f.addr) {
            (Some(m), Some(off), _) => s.push_str(&format!(" [{m}+{off:#x}]")),
            (Some(m), None, _) => s.push_str(&format!(" [{m}]")),
            (None, _, Some(a)) => s.push_str(&format!(" [{a:#x}]")),
            (None, _, None) => {}
        }
    }
    s
}

/// Stack `id`'s args (`"stack_id":N,"stack":[…]`), None when no line defines it.
fn stack_args(cache: &mut HashMap<StackId, String>, t: &Trace, id: StackId) -> Option<String> {
    if let Some(s) = cache.get(&id) {
        return Some(s.clone());
    }
    let st = t.stacks.get(id)?;
    let frames: Vec<String> = st.frames.iter().map(frame_text).collect();
    let s = format!("\"stack_id\":{id},\"stack\":{}", serde_json::to_string(&frames).ok()?);
    cache.insert(id, s.clone());
    Some(s)
}

/// One call's `X` event, written field by field (the hot path of the export).
#[inline]
fn write_call<W: Write>(
    w: &mut W,
    t: &Trace,
    c: &Call,
    ts: f64,
    end: u64,
    clipped: bool,
    stack: Option<&str>,
) -> std::io::Result<()> {
    let num = |w: &mut W, x: f64| serde_json::to_writer(&mut *w, &x).map_err(std::io::Error::other);
    let text = |w: &mut W, x: &str| serde_json::to_writer(&mut *w, x).map_err(std::io::Error::other);
    w.write_all(b"{\"ph\":\"X\",\"name\":")?;
    text(w, t.name(c.func))?;
    write!(w, ",\"cat\":\"cuda\",\"pid\":{},\"tid\":{},\"ts\":", c.pid, c.tid)?;
    num(w, ts)?;
    w.write_all(b",\"dur\":")?;
    num(w, dur_us(end - c.ts))?;
    w.write_all(b",\"args\":{")?;
    let mut sep = "";
    let mut key = |w: &mut W, k: &str| -> std::io::Result<()> {
        write!(w, "{sep}\"{k}\":")?;
        sep = ",";
        Ok(())
    };
    if c.kernel != NO_STR {
        key(w, "kernel")?;
        text(w, t.name(c.kernel))?;
    }
    if let Some(g) = t.geom(c.geom) {
        key(w, "grid")?;
        write!(w, "[{},{},{}]", g.grid[0], g.grid[1], g.grid[2])?;
        key(w, "block")?;
        write!(w, "[{},{},{}]", g.block[0], g.block[1], g.block[2])?;
        key(w, "shared_mem")?;
        write!(w, "{}", g.shared_mem)?;
    }
    if c.stream != NONE {
        key(w, "stream")?;
        write!(w, "\"{:#x}\"", c.stream)?;
    }
    if c.size > 0 {
        key(w, "size")?;
        write!(w, "{}", c.size)?;
    }
    if c.dir != Dir::None {
        key(w, "direction")?;
        text(w, c.dir.as_str())?;
    }
    if c.obj != NONE {
        key(w, "handle")?;
        write!(w, "\"{:#x}\"", c.obj)?;
    }
    for (flag, on) in [("failed", c.failed()), ("incomplete", c.incomplete()), ("clipped", clipped)] {
        if on {
            key(w, flag)?;
            w.write_all(b"true")?;
        }
    }
    if let Some(s) = stack {
        write!(w, "{sep}{s}")?;
    }
    w.write_all(b"}}")
}

/// The process events (fork, exec, exit, thread exit) as thread-scoped instants.
fn write_procs<W: Write>(o: &mut Out<'_, W>, t: &Trace) -> std::io::Result<()> {
    for p in &t.procs {
        let (name, args) = match p.op {
            ProcOp::Fork => ("fork", json!({"child": p.child})),
            ProcOp::Exec => ("exec", json!({"filename": p.filename})),
            ProcOp::Exit => ("exit", json!({})),
            ProcOp::ThreadExit => ("thread_exit", json!({})),
        };
        o.ev(&json!({"ph": "i", "s": "t", "name": name, "cat": "process", "pid": p.pid, "tid": p.tid, "ts": o.us(p.ts), "args": args}))?;
    }
    Ok(())
}

/// The ioctls as `X` slices, on one "ioctls (tid N)" track per thread that made them.
fn write_ioctls<W: Write>(o: &mut Out<'_, W>, t: &Trace, nests: &mut HashMap<(u32, u32), Nest>) -> std::io::Result<()> {
    let mut ioctl_tracks: HashMap<(u32, u32), u64> = HashMap::new();
    for i in &t.ioctls {
        let tid = match ioctl_tracks.get(&(i.pid, i.tid)) {
            Some(&x) => x,
            None => {
                let x = o.next_syn();
                ioctl_tracks.insert((i.pid, i.tid), x);
                o.meta(i.pid as u64, Some(x), "thread_name", &format!("ioctls (tid {})", i.tid))?;
                x
            }
        };
        let (end, clipped) = nests.entry((i.pid, tid as u32)).or_default().push(i.ts, i.ts + i.dur);
        let mut args = json!({"failed": i.failed});
        if i.cuda_call != NO_STR {
            args["cuda_call"] = json!(t.name(i.cuda_call));
        }
        if clipped {
            args["clipped"] = json!(true);
        }
        o.ev(&json!({"ph": "X", "name": t.name(i.name), "cat": if i.file_op { "nvidia_fd" } else { "ioctl" },
            "pid": i.pid, "tid": tid, "ts": o.us(i.ts), "dur": dur_us(end - i.ts), "args": args}))?;
    }
    Ok(())
}

/// Per process, a "phases" track and, when it has iterations, an "iterations" track.
fn write_phases<W: Write>(o: &mut Out<'_, W>, ph: &Phases) -> std::io::Result<()> {
    for (&pid, v) in &ph.by_pid {
        if v.is_empty() {
            continue;
        }
        let tid = o.next_syn();
        o.meta(pid as u64, Some(tid), "thread_name", "phases")?;
        for p in v {
            o.ev(&json!({"ph": "X", "name": p.name, "cat": "phase", "pid": pid, "tid": tid, "ts": o.us(p.start),
                "dur": dur_us(p.end - p.start), "args": {"source": p.source}}))?;
        }
        let its: Vec<_> = ph.iterations.iter().filter(|i| i.pid == pid).collect();
        if !its.is_empty() {
            let tid = o.next_syn();
            o.meta(pid as u64, Some(tid), "thread_name", "iterations")?;
            for i in its {
                o.ev(&json!({"ph": "X", "name": format!("iteration {}", i.label), "cat": "iteration", "pid": pid, "tid": tid,
                    "ts": o.us(i.start), "dur": dur_us(i.end - i.start), "args": {"tokens": i.tokens}}))?;
            }
        }
    }
    Ok(())
}

/// The `mark` and `phase` markers of traced processes as instants on a "markers" track per process.
fn write_markers<W: Write>(
    o: &mut Out<'_, W>,
    t: &Trace,
    threads: &BTreeMap<u32, BTreeSet<u32>>,
) -> std::io::Result<()> {
    let mut marker_tracks: HashMap<u32, u64> = HashMap::new();
    for m in t.markers.iter().filter(|m| m.op == MarkerOp::Mark || m.op == MarkerOp::Phase) {
        if !threads.contains_key(&m.pid) {
            continue;
        }
        let tid = match marker_tracks.get(&m.pid) {
            Some(&x) => x,
            None => {
                let x = o.next_syn();
                marker_tracks.insert(m.pid, x);
                o.meta(m.pid as u64, Some(x), "thread_name", "markers")?;
                x
            }
        };
        o.ev(
            &json!({"ph": "i", "s": "t", "name": m.label, "cat": "marker", "pid": m.pid, "tid": tid, "ts": o.us(m.ts)}),
        )?;
    }
    Ok(())
}

/// Per traced thread with scheduler events, a "thread state (tid N)" track:
/// its off-CPU intervals, blocked part then runnable part; per process, the
/// windows where scheduler records were lost.
fn write_thread_states<W: Write>(o: &mut Out<'_, W>, t: &Trace) -> std::io::Result<()> {
    let mut pids: BTreeSet<u32> = BTreeSet::new();
    for (&tid, &(pid, _)) in &t.sched.seen {
        let off = t.sched.off.get(&tid).map_or(&[][..], |v| v.as_slice());
        pids.insert(pid);
        let track = o.next_syn();
        o.meta(pid as u64, Some(track), "thread_name", &format!("thread state (tid {tid})"))?;
        let mut nest = Nest::default();
        for x in off {
            let runnable = || format!("runnable: {}", x.runnable_label());
            let parts: Vec<(u64, u64, String)> = match x.state {
                OffState::Unknown => vec![(x.start, x.end, "unknown".into())],
                OffState::Runnable => vec![(x.start, x.end, runnable())],
                OffState::Blocked => {
                    let b = match x.cause.as_str() {
                        "page_fault" => "page fault".to_string(),
                        _ => format!("blocked: {}", x.blocked_label()),
                    };
                    vec![(x.start, x.ready, b), (x.ready, x.end, runnable())]
                }
            };
            for (a, b, name) in parts {
                let a = a.max(o.t0);
                if b <= a {
                    continue;
                }
                let (end, clipped) = nest.push(a, b);
                let mut args = state_args(x);
                if clipped {
                    args["clipped"] = json!(true);
                }
                if let Some(st) = x.stack.and_then(|id| t.stacks.get(id)) {
                    args["stack_id"] = json!(st.id);
                    args["stack"] = json!(st.frames.iter().map(frame_text).collect::<Vec<_>>());
                }
                o.ev(&json!({"ph": "X", "name": name, "cat": "thread_state", "pid": pid, "tid": track,
                    "ts": o.us(a), "dur": dur_us(end - a), "args": args}))?;
            }
        }
    }
    if t.sched.lost.is_empty() {
        return Ok(());
    }
    for pid in pids {
        let track = o.next_syn();
        o.meta(pid as u64, Some(track), "thread_name", "sched records lost")?;
        for &(a, b) in &t.sched.lost {
            let a = a.max(o.t0);
            if b > a {
                o.ev(&json!({"ph": "X", "name": "records lost: thread states unknown", "cat": "thread_state",
                    "pid": pid, "tid": track, "ts": o.us(a), "dur": dur_us(b - a)}))?;
            }
        }
    }
    Ok(())
}

/// The args of an off-CPU interval's slices.
fn state_args(x: &OffCpu) -> Value {
    let state = match x.state {
        OffState::Blocked => "blocked",
        OffState::Runnable => "runnable",
        OffState::Unknown => "unknown",
    };
    let mut a = json!({"tid": x.tid, "state": state, "cause": x.cause, "off_cpu_us": dur_us(x.end - x.start)});
    if x.state != OffState::Unknown {
        a["runnable_us"] = json!(dur_us(x.end - x.ready));
    }
    let task = |t: &TaskId| {
        let mut v = json!({"comm": t.comm});
        if let Some(p) = t.pid {
            v["pid"] = json!(p);
        }
        if let Some(p) = t.tid {
            v["tid"] = json!(p);
        }
        v
    };
    for (k, v) in [
        ("syscall", x.syscall.as_ref().map(|s| json!(s))),
        ("file", x.file.as_ref().map(|s| json!(s))),
        ("waker", x.waker_task.as_ref().map(task)),
        ("behind", x.behind_task.as_ref().map(task)),
        ("preempted", (x.state == OffState::Runnable).then_some(json!(x.preempted))),
        ("open", x.open.then_some(json!(true))),
    ] {
        if let Some(v) = v {
            a[k] = v;
        }
    }
    a
}

/// One process per GPU with a track per stream: its intervals as sequential `X` slices and the launch flows.
fn write_gpu_tracks<W: Write>(
    o: &mut Out<'_, W>,
    t: &Trace,
    tl: &Timeline,
    named_gpu: &mut BTreeSet<u32>,
) -> std::io::Result<()> {
    let links: HashMap<(usize, usize), u32> = if tl.source == Source::Measured {
        link_measured_to_launches(t, tl).into_iter().map(|(s, i, c)| ((s, i), c)).collect()
    } else {
        HashMap::new()
    };
    let mut flow_id = 0u64;
    for (si, s) in tl.streams.iter().enumerate() {
        let gpid = GPU_PID_BASE + s.device as u64;
        if named_gpu.insert(s.device) {
            let model = t.gpu_model(s.device as usize).unwrap_or_default();
            o.meta(gpid, None, "process_name", &format!("GPU {} {model} ({})", s.device, gpu_process_label(tl)))?;
        }
        let tid = o.next_syn();
        o.meta(gpid, Some(tid), "thread_name", &format!("pid {} {} [{}]", s.key.pid, s.label, s.source.as_str()))?;
        let mut prev_end = 0u64;
        for (ii, iv) in s.intervals.iter().enumerate() {
            let start = iv.start.max(prev_end);
            let end = iv.end.max(start);
            prev_end = end;
            let name = interval_name(t, iv, (&o.short, o.names), &mut o.spelled);
            let (ts, dur) = (o.us(start), dur_us(end - start));
            let src = s.source.as_str();
            o.ev_with(|w| write_interval(w, iv, &name, src, gpid, tid, ts, dur))?;
            let call = if tl.source == Source::Measured { links.get(&(si, ii)).copied() } else { Some(iv.call) };
            if let Some(ci) = call
                && let Some(c) = t.calls.get(ci as usize)
                && c.kind == Kind::Launch
                && start >= c.ts
            {
                flow_id += 1;
                write_flow(o, c, flow_id, (gpid, tid), start)?;
            }
        }
    }
    Ok(())
}

/// What a GPU's track group says its intervals are: "measured", "inferred,
/// calibrated from FILE", or for the bound timeline that its slices are
/// possibly-busy stretches and only its gaps are certain (idle time).
fn gpu_process_label(tl: &Timeline) -> String {
    match IdleBasis::of(tl) {
        IdleBasis::Measured => "measured".into(),
        IdleBasis::Calibrated => format!(
            "inferred, calibrated from {}",
            tl.calibrated_from.as_deref().unwrap_or(crate::analysis::basis::UNNAMED_CALIBRATION)
        ),
        IdleBasis::LowerBound => {
            "bound: possibly busy until a completion proof (synchronization, query, device-to-host copy) or the \
             trace's end, busy/idle share unknown; gaps are certain idle time, a lower bound"
                .into()
        }
    }
}

/// The slice name of a GPU interval: its kernel (spelled `names`; kept in
/// `spelled`), "memcpy DIR", its kind, or "≤N ops pending".
fn interval_name(
    t: &Trace,
    iv: &GpuInterval,
    (short, names): (&ShortNames, NameStyle),
    spelled: &mut HashMap<u32, String>,
) -> String {
    if iv.kind == WorkKind::Pending {
        format!("≤{} ops pending", iv.ops)
    } else if iv.name != NO_STR {
        spelled.entry(iv.name).or_insert_with(|| short.display(t.name(iv.name), names).into_owned()).clone()
    } else if iv.kind == WorkKind::Memcpy
        && let Some(c) = t.calls.get(iv.call as usize)
    {
        format!("memcpy {}", c.dir.as_str())
    } else {
        iv.kind.as_str().to_string()
    }
}

/// One GPU interval's `X` event, written field by field.
#[allow(clippy::too_many_arguments, reason = "the fields of one X event, written without a struct on the hot path")]
#[inline]
fn write_interval<W: Write>(
    w: &mut W,
    iv: &GpuInterval,
    name: &str,
    src: &str,
    gpid: u64,
    tid: u64,
    ts: f64,
    dur: f64,
) -> std::io::Result<()> {
    w.write_all(b"{\"ph\":\"X\",\"name\":")?;
    serde_json::to_writer(&mut *w, name).map_err(std::io::Error::other)?;
    write!(w, ",\"cat\":\"gpu_{src}\",\"pid\":{gpid},\"tid\":{tid},\"ts\":")?;
    serde_json::to_writer(&mut *w, &ts).map_err(std::io::Error::other)?;
    w.write_all(b",\"dur\":")?;
    serde_json::to_writer(&mut *w, &dur).map_err(std::io::Error::other)?;
    write!(w, ",\"args\":{{\"source\":\"{src}\",\"kind\":\"{}\"", iv.kind.as_str())?;
    if iv.approximate {
        w.write_all(b",\"approximate\":true")?;
    }
    if iv.ops > 1 {
        write!(w, ",\"ops\":{}", iv.ops)?;
    }
    w.write_all(b"}}")
}

/// The flow (`s` on the launch call, `f` on the GPU track `(gpid, tid)` at `start`) tying a launch to its interval.
fn write_flow<W: Write>(
    o: &mut Out<'_, W>,
    c: &Call,
    flow_id: u64,
    (gpid, gtid): (u64, u64),
    start: u64,
) -> std::io::Result<()> {
    let (ts_s, ts_f) = (o.us(c.ts), o.us(start));
    for (ph, pid, tid, ts) in [("s", c.pid as u64, c.tid as u64, ts_s), ("f", gpid, gtid, ts_f)] {
        o.ev_with(|w| {
            let bp = if ph == "f" { ",\"bp\":\"e\"" } else { "" };
            write!(
                w,
                "{{\"ph\":\"{ph}\"{bp},\"id\":{flow_id},\"name\":\"launch\",\"cat\":\"launch\",\"pid\":{pid},\"tid\":{tid},\"ts\":"
            )?;
            serde_json::to_writer(&mut *w, &ts).map_err(std::io::Error::other)?;
            w.write_all(b"}")
        })?;
    }
    Ok(())
}

/// The counter (`C`) tracks of each GPU: power, energy, SM clock and utilization.
fn write_counters<W: Write>(o: &mut Out<'_, W>, t: &Trace, named_gpu: &mut BTreeSet<u32>) -> std::io::Result<()> {
    for s in energy::series(t) {
        let gpid = GPU_PID_BASE + s.gpu as u64;
        if named_gpu.insert(s.gpu) {
            let model = t.gpu_model(s.gpu as usize).unwrap_or_default();
            o.meta(gpid, None, "process_name", &format!("GPU {} {model}", s.gpu))?;
        }
        let base = s.points.first().map_or(0.0, |p| p.1);
        for (name, unit, pts, scale, off) in [
            ("power", "W", &s.power, 1.0, 0.0),
            ("energy", "J", &s.points, 1e-3, base),
            ("SM clock", "MHz", &s.sm_clock, 1.0, 0.0),
            ("GPU utilization", "%", &s.util, 1.0, 0.0),
        ] {
            for &(ts, v) in pts.iter() {
                o.ev(&json!({"ph": "C", "name": format!("{name} ({unit})"), "pid": gpid, "ts": o.us(ts),
                    "args": {unit: ((v - off) * scale * 1000.0).round() / 1000.0}}))?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::analysis::model::parse_str;
    use crate::analysis::phases::phases;
    use crate::analysis::timeline;
    use std::collections::{BTreeSet, HashSet};

    /// Checks the trace-event format's rules; returns the number of events per `ph`.
    pub(crate) fn validate(text: &str) -> Result<BTreeMap<String, usize>, String> {
        let v: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
        let evs = v["traceEvents"].as_array().ok_or("no traceEvents array")?;
        let mut by_ph: BTreeMap<String, usize> = BTreeMap::new();
        let mut proc_named: HashSet<u64> = HashSet::new();
        let mut thread_named: HashSet<(u64, u64)> = HashSet::new();
        let mut used_pids: HashSet<u64> = HashSet::new();
        let mut used_threads: HashSet<(u64, u64)> = HashSet::new();
        let mut slices: BTreeMap<(u64, u64), Vec<(f64, f64)>> = BTreeMap::new();
        let mut flows: BTreeMap<u64, (usize, usize)> = BTreeMap::new();
        let id = |x: &Value, f: &str| -> Result<u64, String> {
            let n = x[f].as_u64().ok_or(format!("{f} not a non-negative integer: {x}"))?;
            if n >= 1 << 31 {
                return Err(format!("{f} over 2^31: {x}"));
            }
            Ok(n)
        };
        for e in evs {
            let ph = e["ph"].as_str().ok_or(format!("no ph: {e}"))?;
            *by_ph.entry(ph.to_string()).or_default() += 1;
            let pid = id(e, "pid")?;
            e["name"].as_str().ok_or(format!("no name: {e}"))?;
            let ts = || e["ts"].as_f64().ok_or(format!("no numeric ts: {e}"));
            match ph {
                "M" => {
                    let what = e["name"].as_str().unwrap();
                    let n = e["args"]["name"].as_str().ok_or(format!("metadata without args.name: {e}"))?;
                    if n.is_empty() {
                        return Err(format!("empty name: {e}"));
                    }
                    match what {
                        "process_name" => {
                            proc_named.insert(pid);
                        }
                        "thread_name" => {
                            thread_named.insert((pid, id(e, "tid")?));
                        }
                        _ => return Err(format!("unknown metadata {what}")),
                    }
                }
                "X" => {
                    let tid = id(e, "tid")?;
                    let d = e["dur"].as_f64().ok_or(format!("X without dur: {e}"))?;
                    if d < 0.0 {
                        return Err(format!("negative dur: {e}"));
                    }
                    let t = ts()?;
                    if t < 0.0 {
                        return Err(format!("negative ts: {e}"));
                    }
                    used_pids.insert(pid);
                    used_threads.insert((pid, tid));
                    slices.entry((pid, tid)).or_default().push((t, t + d));
                }
                "i" => {
                    ts()?;
                    let s = e["s"].as_str().ok_or(format!("instant without scope: {e}"))?;
                    if !["g", "p", "t"].contains(&s) {
                        return Err(format!("bad instant scope {s}"));
                    }
                    let tid = id(e, "tid")?;
                    used_pids.insert(pid);
                    used_threads.insert((pid, tid));
                }
                "C" => {
                    ts()?;
                    let a = e["args"].as_object().ok_or(format!("counter without args: {e}"))?;
                    if a.is_empty() || !a.values().all(Value::is_number) {
                        return Err(format!("counter args must be numbers: {e}"));
                    }
                    used_pids.insert(pid);
                }
                "s" | "f" => {
                    ts()?;
                    id(e, "tid")?;
                    e["cat"].as_str().ok_or(format!("flow without cat: {e}"))?;
                    let fid = e["id"].as_u64().ok_or(format!("flow without id: {e}"))?;
                    let f = flows.entry(fid).or_default();
                    if ph == "s" {
                        f.0 += 1;
                    } else {
                        if e["bp"] != "e" {
                            return Err(format!("flow end without bp=e: {e}"));
                        }
                        f.1 += 1;
                    }
                }
                _ => return Err(format!("unexpected ph {ph}")),
            }
        }
        for p in &used_pids {
            if !proc_named.contains(p) {
                return Err(format!("pid {p} has events but no process_name"));
            }
        }
        for t in &used_threads {
            if !thread_named.contains(t) {
                return Err(format!("track {t:?} has events but no thread_name"));
            }
        }
        for (k, v) in slices.iter_mut() {
            v.sort_by(|a, b| a.0.total_cmp(&b.0).then(b.1.total_cmp(&a.1)));
            let mut stack: Vec<f64> = Vec::new();
            for &(a, b) in v.iter() {
                while stack.last().is_some_and(|&e| e <= a + 1e-9) {
                    stack.pop();
                }
                if let Some(&e) = stack.last()
                    && b > e + 1e-6
                {
                    return Err(format!("track {k:?}: slice [{a}, {b}] overlaps its parent ending at {e}"));
                }
                stack.push(b);
            }
        }
        for (fid, (s, f)) in flows {
            if s != 1 || f != 1 {
                return Err(format!("flow {fid}: {s} starts, {f} ends"));
            }
        }
        Ok(by_ph)
    }

    fn export_str(t: &Trace, tl: &Timeline) -> String {
        let mut buf = Vec::new();
        export(t, &phases(t), tl, &mut buf).unwrap();
        String::from_utf8(buf).unwrap()
    }

    #[test]
    fn structure_of_a_small_trace() {
        let l = [
            r#"{"type":"header","pid":1,"command":["python3"],"gpus":[{"model":"H100"}]}"#.to_string(),
            r#"{"ts":500,"pid":1,"tid":1,"type":"process","op":"exec","name":"process","filename":"/usr/bin/python3"}"#.into(),
            timeline::tests::launch(1000, 2.0, "kA", "0x0"),
            // a call nested in the launch (the runtime calling the driver from a driver callback) and one overlapping its end
            r#"{"ts":1500,"pid":1,"tid":1,"type":"init","op":"get_proc_address","name":"cuGetProcAddress_v2","duration_us":5.0,"ret":0}"#.into(),
            r#"{"ts":1200,"pid":1,"tid":1,"type":"ioctl","op":"ioctl","name":"RM_CONTROL","device":"/dev/nvidiactl","duration_us":0.5,"status":0,"cuda_call":"cuLaunchKernel"}"#.into(),
            timeline::tests::sync(4000, 10.0, "0x0"),
            r#"{"ts":100,"pid":1,"tid":0,"type":"marker","op":"phase","name":"marker","label":"warmup"}"#.into(),
            r#"{"ts":3000,"pid":1,"tid":0,"type":"marker","op":"iteration","name":"marker","label":"0","tokens":2}"#.into(),
            r#"{"ts":3500,"pid":1,"tid":0,"type":"marker","op":"mark","name":"marker","label":"hello"}"#.into(),
            r#"{"ts":900,"pid":0,"tid":0,"type":"power","op":"sample","name":"nvml","gpu":0,"energy_mj":1000,"power_mw":70000,"sm_clock_mhz":1980,"util_gpu_pct":50}"#.into(),
            r#"{"ts":20000,"pid":0,"tid":0,"type":"power","op":"sample","name":"nvml","gpu":0,"energy_mj":1002,"power_mw":71000,"sm_clock_mhz":1980,"util_gpu_pct":40}"#.into(),
        ];
        let t = parse_str("p", &l.join("\n")).unwrap();
        let tl = timeline::inferred(&t, &timeline::tests::durs(&[("kA", 1000)]).with_origin("h100.json"));
        let text = export_str(&t, &tl);
        let by_ph = validate(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        // X: 3 calls + 1 ioctl + 1 phase + 1 iteration + 1 GPU kernel; i: exec + 2 markers (phase, mark)
        assert_eq!(by_ph["X"], 7);
        assert_eq!(by_ph["i"], 3);
        assert_eq!(by_ph["C"], 8);
        assert_eq!((by_ph["s"], by_ph["f"]), (1, 1));
        let v: Value = serde_json::from_str(&text).unwrap();
        let evs = v["traceEvents"].as_array().unwrap();
        let gp = evs.iter().find(|e| e["cat"] == "gpu_inferred").unwrap();
        // launch 1000..3000 ns returns at 3 µs; t0 = 100 ns (the phase marker)
        assert_eq!(
            (gp["ts"].as_f64(), gp["dur"].as_f64(), gp["pid"].as_u64()),
            (Some(2.9), Some(1.0), Some(GPU_PID_BASE))
        );
        let gpi = evs.iter().find(|e| e["cat"] == "cuda" && e["name"] == "cuGetProcAddress_v2").unwrap();
        assert_eq!((gpi["dur"].as_f64(), gpi["args"]["clipped"].as_bool()), (Some(1.5), Some(true)));
        let names: BTreeSet<&str> =
            evs.iter().filter(|e| e["ph"] == "M").filter_map(|e| e["args"]["name"].as_str()).collect();
        assert!(names.contains("python3 (pid 1)"), "{names:?}");
        assert!(names.contains("GPU 0 H100 (inferred, calibrated from h100.json)"), "{names:?}");
        assert!(names.contains("ioctls (tid 1)") && names.contains("phases") && names.contains("iterations"));
        assert_eq!(v["otherData"]["gpu_timeline"], "inferred");
        assert_eq!(
            (&v["otherData"]["idle_basis"], &v["otherData"]["calibrated_from"]),
            (&json!("calibrated"), &json!("h100.json"))
        );
        // without durations: the GPU's tracks say their slices are not busy time
        let b: Value = serde_json::from_str(&export_str(&t, &timeline::bound(&t))).unwrap();
        assert_eq!(
            (&b["otherData"]["idle_basis"], &b["otherData"]["calibrated_from"]),
            (&json!("lower_bound"), &Value::Null)
        );
        let gpu_name = b["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["ph"] == "M" && e["name"] == "process_name")
            .filter_map(|e| e["args"]["name"].as_str())
            .find(|n| n.starts_with("GPU 0"))
            .unwrap()
            .to_string();
        assert_eq!(
            gpu_name,
            "GPU 0 H100 (bound: possibly busy until a completion proof (synchronization, query, device-to-host \
             copy) or the trace's end, busy/idle share unknown; gaps are certain idle time, a lower bound)"
        );
        let power = evs.iter().find(|e| e["name"] == "power (W)").unwrap();
        assert_eq!(power["args"]["W"], 70.0);
        let en: Vec<f64> =
            evs.iter().filter(|e| e["name"] == "energy (J)").map(|e| e["args"]["J"].as_f64().unwrap()).collect();
        assert_eq!(en, [0.0, 0.002]);
    }

    /// Sched lines of a blocked read, a preemption, a lost window and an
    /// interval still open at the end (times in ns; t0 = the exec at 1000).
    pub(crate) const SCHED_LINES: &[&str] = &[
        r#"{"type":"header","pid":7,"command":["app"],"sched":true}"#,
        r#"{"ts":1000,"pid":7,"tid":7,"type":"process","op":"exec","name":"process","filename":"/bin/app"}"#,
        r#"{"type":"sched","op":"thread_seen","name":"thread_seen","ts":2000,"pid":7,"tid":7}"#,
        r#"{"type":"sched","op":"off_cpu","name":"read","ts":2000,"end_ts":12000,"pid":7,"tid":7,"state":"blocked","cpu":1,"cpu_in":1,"task_state":"S","syscall":"read","arg0":3,"file":"pipe","woken_ts":9000,"waker":{"pid":7,"tid":8,"comm":"writer"},"runnable_ns":3000,"behind":{"pid":9,"tid":9,"comm":"cpuhog"}}"#,
        r#"{"type":"sched","op":"off_cpu","name":"runnable","ts":15000,"end_ts":20000,"pid":7,"tid":7,"state":"runnable","cpu":1,"cpu_in":0,"preempted":true,"preempted_by":{"tid":9,"comm":"cpuhog"},"runnable_ns":5000,"behind":{"pid":9,"tid":9,"comm":"cpuhog"}}"#,
        r#"{"type":"sched","op":"off_cpu","name":"clock_nanosleep","ts":21000,"end_ts":24000,"pid":7,"tid":7,"state":"blocked","cpu":0,"cpu_in":0,"task_state":"S","syscall":"clock_nanosleep","arg0":0,"woken_ts":23500,"waker":{"pid":0,"tid":0,"comm":"swapper/0"},"runnable_ns":500,"behind":{"pid":0,"tid":0,"comm":"swapper/0"}}"#,
        r#"{"type":"sched","op":"lost","name":"lost","ts":25000,"end_ts":26000,"pid":0,"tid":0,"cpu":0,"records":4}"#,
        r#"{"type":"sched","op":"off_cpu","name":"unknown","ts":24500,"end_ts":27000,"pid":7,"tid":7,"state":"unknown"}"#,
        r#"{"type":"sched","op":"thread_seen","name":"thread_seen","ts":3000,"pid":7,"tid":8}"#,
        r#"{"type":"sched","op":"off_cpu","name":"futex","ts":28000,"end_ts":30000,"pid":7,"tid":8,"state":"blocked","syscall":"futex","open":true}"#,
    ];

    #[test]
    fn thread_state_tracks() {
        let t = parse_str("p", &SCHED_LINES.join("\n")).unwrap();
        let text = export_str(&t, &timeline::bound(&t));
        validate(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        let v: Value = serde_json::from_str(&text).unwrap();
        let evs = v["traceEvents"].as_array().unwrap();
        let track_name = |tid: &Value| {
            evs.iter()
                .find(|e| e["ph"] == "M" && e["name"] == "thread_name" && &e["tid"] == tid)
                .map(|e| e["args"]["name"].as_str().unwrap().to_string())
                .unwrap()
        };
        let got: Vec<(String, String, f64, f64)> = evs
            .iter()
            .filter(|e| e["cat"] == "thread_state")
            .map(|e| {
                let n = e["name"].as_str().unwrap().to_string();
                (track_name(&e["tid"]), n, e["ts"].as_f64().unwrap(), e["dur"].as_f64().unwrap())
            })
            .collect();
        let s = |a: &str, b: &str, ts: f64, d: f64| (a.to_string(), b.to_string(), ts, d);
        assert_eq!(
            got,
            vec![
                s("thread state (tid 7)", "blocked: read (pipe)", 1.0, 7.0),
                s("thread state (tid 7)", "runnable: behind cpuhog (pid 9)", 8.0, 3.0),
                s("thread state (tid 7)", "runnable: preempted by cpuhog (pid 9)", 14.0, 5.0),
                s("thread state (tid 7)", "blocked: clock_nanosleep", 20.0, 2.5),
                s("thread state (tid 7)", "runnable: wake-up latency", 22.5, 0.5),
                s("thread state (tid 7)", "unknown", 23.5, 2.5),
                s("thread state (tid 8)", "blocked: futex", 27.0, 2.0),
                s("sched records lost", "records lost: thread states unknown", 24.0, 1.0),
            ]
        );
        let read = evs.iter().find(|e| e["name"] == "blocked: read (pipe)").unwrap();
        assert_eq!(
            read["args"],
            json!({"tid": 7, "state": "blocked", "cause": "read", "off_cpu_us": 10.0, "runnable_us": 3.0,
                "syscall": "read", "file": "pipe", "waker": {"pid": 7, "tid": 8, "comm": "writer"},
                "behind": {"pid": 9, "tid": 9, "comm": "cpuhog"}})
        );
        let pre = evs.iter().find(|e| e["name"] == "runnable: preempted by cpuhog (pid 9)").unwrap();
        assert_eq!(
            pre["args"],
            json!({"tid": 7, "state": "runnable", "cause": "runnable", "off_cpu_us": 5.0, "runnable_us": 5.0,
                "behind": {"pid": 9, "tid": 9, "comm": "cpuhog"}, "preempted": true})
        );
        let futex = evs.iter().find(|e| e["name"] == "blocked: futex").unwrap();
        assert_eq!((&futex["args"]["open"], &futex["args"]["runnable_us"]), (&json!(true), &json!(0.0)));
        let unknown = evs.iter().find(|e| e["name"] == "unknown").unwrap();
        assert_eq!(unknown["args"], json!({"tid": 7, "state": "unknown", "cause": "unknown", "off_cpu_us": 2.5}));
        // the thread tracks of the sched threads are named too
        let names: BTreeSet<&str> =
            evs.iter().filter(|e| e["ph"] == "M").filter_map(|e| e["args"]["name"].as_str()).collect();
        assert!(names.contains("main thread 7") && names.contains("thread 8") && names.contains("app (pid 7)"));
        // without sched lines: no thread-state track
        let plain = parse_str("p", &SCHED_LINES[..2].join("\n")).unwrap();
        assert!(!export_str(&plain, &timeline::bound(&plain)).contains("thread state"));
    }

    #[test]
    fn validator_rejects_broken_traces() {
        let bad_nest = r#"{"traceEvents":[{"ph":"M","pid":1,"name":"process_name","args":{"name":"p"}},{"ph":"M","pid":1,"tid":1,"name":"thread_name","args":{"name":"t"}},
            {"ph":"X","pid":1,"tid":1,"name":"a","ts":0,"dur":10},{"ph":"X","pid":1,"tid":1,"name":"b","ts":5,"dur":10}]}"#;
        assert!(validate(bad_nest).unwrap_err().contains("overlaps its parent"));
        let unnamed = r#"{"traceEvents":[{"ph":"X","pid":1,"tid":1,"name":"a","ts":0,"dur":10}]}"#;
        assert!(validate(unnamed).unwrap_err().contains("no process_name"));
        let flow = r#"{"traceEvents":[{"ph":"s","pid":1,"tid":1,"name":"a","cat":"c","id":3,"ts":0}]}"#;
        assert!(validate(flow).unwrap_err().contains("flow 3: 1 starts, 0 ends"));
        let tid = r#"{"traceEvents":[{"ph":"i","s":"t","pid":1,"tid":"x","name":"a","ts":0}]}"#;
        assert!(validate(tid).unwrap_err().contains("tid not a non-negative integer"));
    }

    #[test]
    fn call_and_off_cpu_slices_carry_their_stacks() {
        let text = include_str!("../../tests/fixtures/stacks/train.jsonl");
        let t = parse_str("train.jsonl", text).unwrap();
        let out = export_str(&t, &timeline::measured(&t));
        validate(&out).unwrap();
        let v: Value = serde_json::from_str(&out).unwrap();
        let evs = v["traceEvents"].as_array().unwrap();
        let us = |ns: u64| (ns - t.span().unwrap().0) as f64 / 1000.0;
        let at = |cat: &str, ts: u64| -> Vec<&Value> {
            evs.iter().filter(|e| e["ph"] == "X" && e["cat"] == cat && e["ts"].as_f64() == Some(us(ts))).collect()
        };
        let args = |e: &Value| (e["args"]["stack_id"].as_u64(), e["args"]["stack"].clone());
        let step20 = json!([
            "cuLaunchKernel [/usr/lib/x86_64-linux-gnu/libcuda.so.1+0x1000]",
            "Model.step /home/u/train.py:20",
            "main /home/u/train.py:40",
            "main Programs/python.c:15 [/usr/bin/python3.11+0x1234]"
        ]);
        // both k1 launches (1 and 90 µs) named stack 1; the second k2 launch none; the
        // second synchronization stack 9, which no line defines
        for ts in [1000, 90_000] {
            assert_eq!(at("cuda", ts).iter().map(|e| args(e)).collect::<Vec<_>>(), [(Some(1), step20.clone())]);
        }
        assert_eq!(args(at("cuda", 1100)[0]).0, Some(2));
        assert_eq!(args(at("cuda", 1200)[0]).0, Some(3));
        for ts in [90_100, 90_200] {
            assert_eq!(args(at("cuda", ts)[0]), (None, Value::Null));
        }
        assert_eq!(evs.iter().filter(|e| e["cat"] == "cuda" && e["args"]["stack_id"].is_u64()).count(), 4);
        // the blocked read (20-79 µs) and its runnable part (79-80 µs): stack 4; the preemption none
        let read = json!([
            "read [/usr/lib/x86_64-linux-gnu/libc.so.6+0x3000]",
            "[unknown] [/opt/lib/libstripped.so+0x400]",
            "load_batch /home/u/data.py:41",
            "main /home/u/train.py:38",
            "main Programs/python.c:15 [/usr/bin/python3.11+0x1234]"
        ]);
        let blocked = at("thread_state", 20_000);
        assert_eq!(blocked.len(), 1);
        assert_eq!(blocked[0]["name"], "blocked: read (file)");
        assert_eq!(args(blocked[0]), (Some(4), read.clone()));
        assert_eq!(args(at("thread_state", 79_000)[0]), (Some(4), read));
        assert_eq!(args(at("thread_state", 85_000)[0]), (None, Value::Null));
        assert_eq!(evs.iter().filter(|e| e["cat"] == "thread_state" && e["args"]["stack_id"].is_u64()).count(), 2);
    }
}
