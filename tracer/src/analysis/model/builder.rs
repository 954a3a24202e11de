//! [`TraceBuilder`]: every line of a trace read once into the model's
//! records (tracer-format's [`RawLine`], the format's words from its
//! vocabulary), then sorted and scanned for loss ([`TraceBuilder::finish`]).
use std::collections::BTreeMap;

use serde_json::Value;
use tracer_format::line::{GpuActivity, LineType, MarkerOp, ProcessOp, RawLine, StrOrNum, scan_into};

use super::graph_records::{CapturedAt, GraphLine};
use super::records::*;
use super::stacks::Stack;
use super::trace::Trace;
use crate::analysis::fasthash::FxHashMap;

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
    graph_lines: Vec<GraphLine>,
    captured: Vec<CapturedAt>,
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
        if ty == "stack" {
            return self.add_stack(bytes, raw);
        }
        let line_type = LineType::parse(ty);
        if let Some(t @ (LineType::Header | LineType::Footer)) = line_type {
            return self.add_header_or_footer(t, bytes);
        }
        let at = self.record_at(ty, raw)?;
        let op = raw.op.as_deref().unwrap_or("");
        let Some(line_type) = line_type else {
            // a type this version does not know: read as a call, counted
            *self.t.unknown_types.entry(ty.to_string()).or_default() += 1;
            return self.add_call(raw, None, ty, op, at);
        };
        match line_type {
            LineType::Process => self.add_process(raw, op, at),
            LineType::Ioctl | LineType::NvidiaFd => {
                self.add_ioctl(raw, line_type, op, at);
                Ok(())
            }
            LineType::Marker => self.add_marker(raw, op, at),
            LineType::Power => {
                self.add_power(raw, at);
                Ok(())
            }
            LineType::Gpu => self.add_gpu(raw, op, at),
            LineType::Sched => {
                let v: Value = serde_json::from_slice(bytes).map_err(|e| self.err(e))?;
                self.t.sched.add(&v, at.ts, at.pid, at.tid).map_err(|e| self.err(e))
            }
            LineType::GpuWindow => {
                let end = raw.end_ts.ok_or_else(|| self.err("a `gpu_window` line needs `end_ts`"))?;
                if end < at.ts {
                    return Err(self.err(format_args!("gpu_window ends ({end}) before it starts ({})", at.ts)));
                }
                self.t.gpu_windows.push(GpuWindow { pid: at.pid, start: at.ts, end });
                Ok(())
            }
            // --capture-data: the bytes of an earlier device-to-host copy
            // (docs/recording-format.md); not a call.
            LineType::CopyData => Ok(()),
            // --counts: the kernel's counts of the calls it did not record
            // one by one (collect/counts.rs); not calls themselves.
            LineType::Count | LineType::KernelCount => Ok(()),
            // Distinct stacks, referred to by the `stack` field of other
            // lines; not calls.
            LineType::Stack => Ok(()),
            // An on-CPU sample: its thread's stack at `ts` (gap_stacks.rs).
            LineType::Sample => {
                let id = raw.stack.ok_or_else(|| self.err("a `sample` line needs `stack`"))?;
                self.t.stacks.note_sample(at.ts, at.pid, at.tid, id);
                Ok(())
            }
            // The durations library's entries for this run's GPU (durations_file.rs).
            LineType::Durations => {
                let d = crate::analysis::durations_file::parse_durations_line(bytes).map_err(|e| self.err(e))?;
                self.t.library_durations = Some(d);
                Ok(())
            }
            LineType::Graph => {
                let v: Value = serde_json::from_slice(bytes).map_err(|e| self.err(e))?;
                self.graph_lines.push(GraphLine { ts: at.ts, pid: at.pid, tid: at.tid, v });
                self.add_call(raw, Some(line_type), ty, op, at)
            }
            LineType::Header | LineType::Footer => unreachable!("read above"),
            _ => self.add_call(raw, Some(line_type), ty, op, at),
        }
    }

    /// A `stack` line (model/stacks.rs): one stack of a process, by its id.
    #[cold]
    fn add_stack(&mut self, bytes: &[u8], raw: &RawLine) -> anyhow::Result<()> {
        let at = self.record_at("stack", raw)?;
        let v: Value = serde_json::from_slice(bytes).map_err(|e| self.err(e))?;
        let s = Stack::of(&v, at.pid).map_err(|e| self.err(e))?;
        self.t.stacks.define(s);
        Ok(())
    }

    /// Keeps the header or footer line as JSON.
    #[cold]
    fn add_header_or_footer(&mut self, ty: LineType, bytes: &[u8]) -> anyhow::Result<()> {
        let v: Value = serde_json::from_slice(bytes).map_err(|e| self.err(e))?;
        if ty == LineType::Header {
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
        let Some(op) = ProcessOp::parse(op) else {
            return Err(self.err(format_args!("process line with op `{op}`, expected fork/exec/exit/thread_exit")));
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
    fn add_ioctl(&mut self, raw: &RawLine, ty: LineType, op: &str, at: At) {
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
            file_op: ty == LineType::NvidiaFd,
        });
    }

    /// A `marker` line (phase, iteration, mark).
    #[inline]
    fn add_marker(&mut self, raw: &RawLine, op: &str, at: At) -> anyhow::Result<()> {
        let Some(op) = MarkerOp::parse(op) else {
            return Err(self.err(format_args!("marker line with op `{op}`, expected phase/iteration/mark")));
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
        let Some(kind) = GpuActivity::parse(op) else {
            return Err(self.err(format_args!("gpu line with op `{op}`, expected kernel/memcpy/memset")));
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

    /// A CUDA driver call line (a call type, or a type the format does not
    /// have: `line_type` None, `ty` its word).
    #[inline]
    fn add_call(
        &mut self,
        raw: &RawLine,
        line_type: Option<LineType>,
        ty: &str,
        op: &str,
        at: At,
    ) -> anyhow::Result<()> {
        let device = match &raw.device {
            None => NO_DEVICE,
            Some(StrOrNum::Num(n)) if *n < u64::from(NO_DEVICE) => *n as u8,
            Some(_) => {
                return Err(self.err(format_args!(
                    "`{ty}` line: `device` must be the CUDA device ordinal (an integer below {NO_DEVICE}) or null"
                )));
            }
        };
        let name = raw.name.as_deref().unwrap_or(op);
        let kind = Kind::classify(line_type, op, name);
        let func = self.t.strings.intern(name);
        let kernel = raw.kernel.as_deref().map_or(NO_STR, |k| self.t.strings.intern(k));
        let geom = if kind == Kind::Launch { self.line_geom(raw) } else { u32::MAX };
        let flags = call_flags(raw, kind);
        let obj = self.call_object(raw, kind, at.pid);
        if let Some(id) = raw.stack {
            self.t.stacks.note_call(at.ts, at.pid, at.tid, id);
        }
        if let Some(capture) = raw.capture.filter(|_| line_type != Some(LineType::Graph)) {
            self.captured.push(CapturedAt { ts: at.ts, pid: at.pid, tid: at.tid, capture });
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
        // Every field is named, so that a new one cannot be left out (a big trace read in
        // parts lost its `sched` and `durations` lines before).
        let Trace {
            path: _,
            header,
            footer,
            calls,
            procs,
            ioctls,
            markers,
            power,
            gpu,
            gpu_windows,
            strings,
            geoms,
            nonblocking_streams,
            // the sequence numbers' scan and the graphs' expansion: `finish`, over the joined lines
            loss: _,
            lines,
            unknown_types,
            truncated,
            graphs: _,
            graph_node_params: _,
            sched,
            stacks,
            library_durations,
        } = n;
        let t = &mut self.t;
        let names: Vec<u32> = strings.names().iter().map(|s| t.strings.intern(s)).collect();
        let name = |i: u32| if i == NO_STR { NO_STR } else { names[i as usize] };
        let geoms: Vec<u32> = geoms.iter().map(|g| self.geom(*g)).collect();
        let geom = |i: u32| geoms.get(i as usize).copied().unwrap_or(u32::MAX);
        let t = &mut self.t;
        t.calls.extend(calls.into_iter().map(|mut c| {
            c.func = name(c.func);
            c.kernel = name(c.kernel);
            c.geom = geom(c.geom);
            c
        }));
        t.procs.extend(procs);
        t.ioctls.extend(ioctls.into_iter().map(|mut i| {
            i.name = name(i.name);
            i.cuda_call = name(i.cuda_call);
            i
        }));
        t.markers.extend(markers);
        t.power.extend(power);
        t.gpu.extend(gpu.into_iter().map(|mut g| {
            g.name = name(g.name);
            g.geom = geom(g.geom);
            g
        }));
        t.gpu_windows.extend(gpu_windows);
        t.sched.absorb(sched);
        t.stacks.absorb(stacks);
        t.nonblocking_streams.extend(nonblocking_streams);
        t.lines += lines;
        for (k, v) in unknown_types {
            *t.unknown_types.entry(k).or_default() += v;
        }
        t.truncated |= truncated;
        if header.is_some() {
            t.header = header;
        }
        if footer.is_some() {
            t.footer = footer;
        }
        // of two `durations` lines, the last (as one pass reads them)
        if library_durations.is_some() {
            t.library_durations = library_durations;
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
        t.stacks.finish(t.sched.off.values().flatten().filter_map(|o| o.stack));
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
        self.t.graphs = super::graphs::expand(&mut self.t, lines, captured);
        self.t
    }
}

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
