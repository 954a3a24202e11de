//! What-if on another GPU: the workload of a trace recorded with
//! `--gpu-timestamps` on one GPU, its kernels given the durations measured
//! on another (a kernel-durations file: `replay REC` on that GPU, or `tracer
//! calibrate` of a trace made there), and how long its iterations, its GPU
//! busy time and each kernel family would take there (docs/what-if.md).
//!
//! The model keeps the recorded host program and changes only the GPU:
//! - every GPU operation starts when the recorded one started relative to
//!   what held it back, `start' = max(submit', ready') + slack`, where
//!   `submit'` is its launch call's entry moved by the process's host shift
//!   (below), `ready'` the predicted end of the work it waited for (the
//!   previous op of its stream, the events it waits on, the legacy default
//!   stream's implicit synchronization), and `slack = start − max(submit,
//!   ready)` the recorded launch latency (negative for a programmatic
//!   launch that overlapped its predecessor); `end' = start' + duration'`, the
//!   duration from the file (kernel and geometry, else the kernel's median
//!   over its geometries), the recorded one for kernels the file lacks and
//!   (unless `copy_model`) for copies and sets;
//! - a call that waited for the GPU (stream, context or event
//!   synchronization, a successful stream/event query, a copy call that
//!   returned after its copy ended: synchronous, or asynchronous from/to
//!   pageable memory) returns `lag = end − max(entry, awaited_end)` after the awaited
//!   work's predicted end, or its entry if later: `end' = max(entry',
//!   awaited_end') + lag`. The difference `end' − end` becomes the
//!   process's host shift: every later call, marker and exit of that
//!   process moves by it (one host clock per process);
//! - iterations and phases are the markers' (analysis/phases.rs), their
//!   predicted bounds the markers moved by the shift then in effect;
//! - the host program runs on the host clock of `Options::host`
//!   (analysis/host_clock.rs): without what tracing added to its host time
//!   (compensated pacing) and on a host `--host-speed` times as fast; the
//!   recorded host program on the same host is the identity.
//!
//! With the recorded durations the model gives back the recording exactly
//! (every slack and lag is then reproduced); what it cannot know: host work
//! that itself depends on the GPU's speed (a polling loop spins as recorded
//! until its last, successful query), and copies from pageable memory whose
//! time is the host's.
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

use serde::Serialize;

use super::durations::{Durations, Found};
use super::model::{Call, GpuOpKind, Kind, NO_STR, Trace};
use super::phases::{self, Phases};
use super::stats::{covered, fmt_ns, nearest_rank, union};
use super::text_table::{Align, Table};
use super::timeline::{self, StreamKey, WorkKind};

/// One GPU operation: its interval, family and kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpTime {
    pub start: u64,
    pub end: u64,
    pub family: &'static str,
    pub kind: WorkKind,
}

/// A phase or iteration: its label and bounds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Period {
    pub label: String,
    pub start: u64,
    pub end: u64,
}

/// A period's duration and the GPU busy time inside it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PeriodFigures {
    pub label: String,
    pub dur_ns: u64,
    pub busy_ns: u64,
}

/// The figures of one GPU timeline of the workload (recorded, predicted or measured on the target).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Figures {
    /// The GPU's model, where known.
    pub gpu: Option<String>,
    /// The main process's run: its first to last event.
    pub run_ns: u64,
    /// First GPU operation's start to the last one's end.
    pub gpu_span_ns: u64,
    /// Union of the GPU operations.
    pub busy_ns: u64,
    pub kernels_ns: u64,
    pub copies_ns: u64,
    pub sets_ns: u64,
    /// Summed durations per family (tracer-common's families, in their order; empty ones left out).
    pub families: Vec<(String, u64)>,
    pub phases: Vec<PeriodFigures>,
    pub iterations: Vec<PeriodFigures>,
}

impl Figures {
    /// Median iteration duration and busy time, if any iteration.
    pub fn iteration_medians(&self) -> Option<(u64, u64)> {
        if self.iterations.is_empty() {
            return None;
        }
        let med = |f: fn(&PeriodFigures) -> u64| {
            let mut v: Vec<u64> = self.iterations.iter().map(f).collect();
            v.sort_unstable();
            nearest_rank(&v, 50.0)
        };
        Some((med(|p| p.dur_ns), med(|p| p.busy_ns)))
    }

    fn family(&self, f: &str) -> u64 {
        self.families.iter().find(|x| x.0 == f).map_or(0, |x| x.1)
    }
}

/// Figures from the operations and the periods (phases, iterations).
pub fn figures(
    gpu: Option<String>,
    run: (u64, u64),
    ops: &[OpTime],
    phases: &[Period],
    iterations: &[Period],
) -> Figures {
    let busy = union(ops.iter().map(|o| (o.start, o.end)).collect());
    let sum = |k: WorkKind| ops.iter().filter(|o| o.kind == k).map(|o| o.end - o.start).sum::<u64>();
    let mut fam: HashMap<&str, u64> = HashMap::new();
    for o in ops {
        *fam.entry(o.family).or_default() += o.end - o.start;
    }
    let families = tracer_common::family::FAMILIES
        .iter()
        .filter_map(|f| fam.get(f).filter(|&&n| n > 0).map(|&n| (f.to_string(), n)))
        .collect();
    let period = |p: &Period| PeriodFigures {
        label: p.label.clone(),
        dur_ns: p.end.saturating_sub(p.start),
        busy_ns: covered(&busy, p.start, p.end),
    };
    Figures {
        gpu,
        run_ns: run.1.saturating_sub(run.0),
        gpu_span_ns: match (ops.iter().map(|o| o.start).min(), ops.iter().map(|o| o.end).max()) {
            (Some(a), Some(b)) => b - a,
            _ => 0,
        },
        busy_ns: busy.iter().map(|(a, b)| b - a).sum(),
        kernels_ns: sum(WorkKind::Kernel),
        copies_ns: sum(WorkKind::Memcpy),
        sets_ns: sum(WorkKind::Memset),
        families,
        phases: phases.iter().map(period).collect(),
        iterations: iterations.iter().map(period).collect(),
    }
}

/// The main process's phases and iterations, and its run (first to last event).
fn periods(t: &Trace, ph: &Phases) -> (Vec<Period>, Vec<Period>, (u64, u64)) {
    let main = ph.main_pid;
    let phases = ph.main().iter().map(|p| Period { label: p.name.clone(), start: p.start, end: p.end }).collect();
    let iterations = ph
        .iterations
        .iter()
        .filter(|i| Some(i.pid) == main)
        .map(|i| Period { label: i.label.clone(), start: i.start, end: i.end })
        .collect();
    let run = main.and_then(|p| phases::process_spans(t).get(&p).copied()).or(t.span()).unwrap_or((0, 0));
    (phases, iterations, run)
}

/// The measured GPU operations of a trace (its `gpu` lines).
pub fn measured_ops(t: &Trace) -> Vec<OpTime> {
    t.gpu
        .iter()
        .map(|g| {
            let (op, kind) = match g.kind {
                GpuOpKind::Kernel => ("kernel", WorkKind::Kernel),
                GpuOpKind::Memcpy => ("memcpy", WorkKind::Memcpy),
                GpuOpKind::Memset => ("memset", WorkKind::Memset),
            };
            OpTime { start: g.start, end: g.end, family: tracer_common::family::of_op(op, t.name(g.name)), kind }
        })
        .collect()
}

/// The figures of a trace's own measured GPU timeline.
pub fn measured_figures(t: &Trace) -> Figures {
    let ph = phases::phases(t);
    let (p, i, run) = periods(t, &ph);
    figures(t.gpu_model(0), run, &measured_ops(t), &p, &i)
}

/// Options of the prediction.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Copies and sets from the file's copy model (where it has one for
    /// their kind) instead of their recorded durations.
    pub copy_model: bool,
    /// The host program's pacing and speed (default: as recorded, same host).
    pub host: super::host_clock::Host,
}

/// How the predicted durations were found.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Sources {
    /// GPU operations placed.
    pub ops: u64,
    /// Kernels timed from the file: same geometry, or the kernel's median over other geometries.
    pub kernels_exact: u64,
    pub kernels_by_name: u64,
    /// Kernels the file lacks: their recorded duration kept.
    pub kernels_kept: u64,
    /// Copies and sets: from the file's model, or their recorded duration.
    pub copies_modelled: u64,
    pub copies_kept: u64,
    /// Launch/copy/set calls without a measured interval (not placed).
    pub calls_unmeasured: u64,
    /// Measured intervals tied to no call: kept at their recorded duration, moved by the host shift.
    pub intervals_unlinked: u64,
    /// Calls that waited for the GPU, whose return the prediction moved.
    pub waits: u64,
}

/// The prediction: the recording's figures and the predicted ones.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Prediction {
    pub durations_from: String,
    pub recorded: Figures,
    pub predicted: Figures,
    pub sources: Sources,
    /// Per process, the host shift at its last event (predicted − recorded, ns).
    pub final_shift_ns: BTreeMap<u32, i64>,
    /// How the host program was paced: compensated or recorded, what was removed, host speed.
    pub pacing: tracer_format::pacing::PacingReport,
}

#[derive(Default, Clone, Copy)]
struct StreamState {
    rec_free: u64,
    pred_free: u64,
    rec_barrier: u64,
    pred_barrier: u64,
}

struct Sim<'a> {
    t: &'a Trace,
    d: &'a Durations,
    o: Options,
    /// The recorded host time on the target host (analysis/host_clock.rs).
    clock: &'a super::host_clock::HostClock,
    streams: BTreeMap<StreamKey, StreamState>,
    /// (pid, event) -> (recorded, predicted) end of the work before its record.
    events: HashMap<(u32, u64), (u64, u64)>,
    /// Per pid: (recorded time from which it holds, shift), in time order.
    shifts: HashMap<u32, Vec<(u64, i64)>>,
    ops: Vec<OpTime>,
    src: Sources,
}

fn moved(ts: u64, shift: i64) -> u64 {
    (ts as i64).saturating_add(shift).max(0) as u64
}

impl Sim<'_> {
    /// The shift of `pid` in effect at recorded time `ts`.
    fn shift_at(&self, pid: u32, ts: u64) -> i64 {
        let Some(v) = self.shifts.get(&pid) else { return 0 };
        let k = v.partition_point(|x| x.0 <= ts);
        if k == 0 { 0 } else { v[k - 1].1 }
    }

    /// When work on `key` (submitted by `c`) may start: recorded and predicted.
    fn ready(&self, key: StreamKey, c: &Call) -> (u64, u64) {
        let s = self.streams.get(&key).copied().unwrap_or_default();
        let (mut r, mut p) = (s.rec_free.max(s.rec_barrier), s.pred_free.max(s.pred_barrier));
        let blocking = |k: &StreamKey| !self.t.nonblocking_streams.contains(&(k.pid, k.handle));
        if key.is_legacy() {
            for (k, s2) in &self.streams {
                if k.pid == c.pid && k.device == key.device && !k.is_legacy() && blocking(k) {
                    (r, p) = (r.max(s2.rec_free), p.max(s2.pred_free));
                }
            }
        } else if blocking(&key)
            && let Some(l) = self.streams.get(&StreamKey { pid: c.pid, handle: 0, tid: 0, device: key.device })
        {
            (r, p) = (r.max(l.rec_free), p.max(l.pred_free));
        }
        (r, p)
    }

    /// The predicted duration of call `c`'s work, recorded as `rec` ns.
    fn duration(&mut self, c: &Call, rec: u64) -> u64 {
        let (t, d) = (self.t, self.d);
        if c.kind == Kind::Launch {
            let found = (c.kernel != NO_STR).then(|| d.kernel(t.name(c.kernel), t.geom(c.geom))).flatten();
            return match found {
                Some((ns, Found::Exact)) => {
                    self.src.kernels_exact += 1;
                    ns
                }
                Some((ns, _)) => {
                    self.src.kernels_by_name += 1;
                    ns
                }
                None => {
                    self.src.kernels_kept += 1;
                    rec
                }
            };
        }
        let dir = matches!(c.kind, Kind::Copy | Kind::CopyAsync).then_some(c.dir);
        match self.o.copy_model.then(|| d.copy(dir, c.size)) {
            Some((ns, Found::CopyModel)) => {
                self.src.copies_modelled += 1;
                ns
            }
            _ => {
                self.src.copies_kept += 1;
                rec
            }
        }
    }

    /// Work of call `c` measured at `(s, e)`.
    fn work(&mut self, c: &Call, s: u64, e: u64) {
        let key = timeline::stream_key(self.t, c);
        let (r_rec, r_pred) = self.ready(key, c);
        let sh = self.shift_at(c.pid, c.ts);
        // negative when it started before what it waited for ended (a programmatic launch overlapping its predecessor)
        let slack = s as i64 - c.ts.max(r_rec) as i64;
        let d = self.duration(c, e - s);
        let submit = moved(self.clock.at(c.pid, c.ts), sh);
        // not before its submission (less what the recorded start preceded the call's entry by: clock skew)
        let floor = moved(submit, (s as i64 - c.ts as i64).min(0));
        let s2 = moved(submit.max(r_pred), slack).max(floor);
        let e2 = s2 + d;
        let st = self.streams.entry(key).or_default();
        st.rec_free = st.rec_free.max(e);
        st.pred_free = st.pred_free.max(e2);
        let kind = match c.kind {
            Kind::Launch | Kind::GraphLaunch => WorkKind::Kernel,
            Kind::Copy | Kind::CopyAsync => WorkKind::Memcpy,
            _ => WorkKind::Memset,
        };
        let family = match kind {
            WorkKind::Kernel => tracer_common::family::family(self.t.name(c.kernel)),
            WorkKind::Memcpy => "copy",
            _ => "set",
        };
        self.ops.push(OpTime { start: s2, end: e2, family, kind });
        self.src.ops += 1;
        // a copy call that returned after its copy ended waited for it (and for the work before it):
        // a synchronous copy, or an asynchronous one from/to pageable memory (PyTorch's `.item()`)
        if matches!(c.kind, Kind::Copy | Kind::CopyAsync) && c.dur > 0 && e <= c.end() {
            self.wait(c, e, e2);
        }
    }

    /// Call `c` waited for work that ended at `a_rec` (recorded), `a_pred` (predicted).
    fn wait(&mut self, c: &Call, a_rec: u64, a_pred: u64) {
        if c.dur == 0 || a_rec > c.end() {
            return; // it did not wait for all of it (or its return is unknown): host time only
        }
        let sh = self.shift_at(c.pid, c.ts);
        let lag = c.end() - c.ts.max(a_rec);
        let end2 = moved(self.clock.at(c.pid, c.ts), sh).max(a_pred) + lag;
        let new = end2 as i64 - self.clock.at(c.pid, c.end()) as i64;
        self.src.waits += 1;
        if new != sh {
            // In time order (threads of one process return out of call order).
            let v = self.shifts.entry(c.pid).or_default();
            let at = v.partition_point(|x| x.0 <= c.end());
            v.insert(at, (c.end(), new));
        }
    }

    /// The awaited end (recorded, predicted) of what a synchronization of `kind` waits for.
    fn awaited(&self, c: &Call, kind: Kind) -> Option<(u64, u64)> {
        match kind {
            Kind::StreamSync => {
                let key = timeline::stream_key(self.t, c);
                let own = self.streams.get(&key).map(|s| (s.rec_free, s.pred_free));
                if key.is_legacy() {
                    let (r, p) = self.ready(key, c);
                    Some((r, p))
                } else {
                    own
                }
            }
            Kind::CtxSync => self
                .streams
                .iter()
                .filter(|(k, _)| k.pid == c.pid)
                .map(|(_, s)| (s.rec_free, s.pred_free))
                .reduce(|a, b| (a.0.max(b.0), a.1.max(b.1))),
            Kind::EventSync => self.events.get(&(c.pid, c.obj)).copied(),
            _ => None,
        }
    }
}

/// Predicts the trace's figures with the kernel durations `d` (see the module header).
pub fn predict(t: &Trace, d: &Durations, o: Options) -> Prediction {
    let measured_tl = timeline::measured(t);
    let links = timeline::link_measured_to_launches(t, &measured_tl);
    let mut by_call: HashMap<u32, (u64, u64)> = HashMap::with_capacity(links.len());
    let mut linked = vec![Vec::new(); measured_tl.streams.len()];
    for &(si, ii, ci) in &links {
        let iv = &measured_tl.streams[si].intervals[ii];
        by_call.insert(ci, (iv.start, iv.end));
        linked[si].push(ii);
    }
    let clock = super::host_clock::HostClock::new(t, &o.host);
    let pacing =
        tracer_format::pacing::PacingReport::of(clock.compensation.clone(), clock.stats, clock.calls, &o.host.speed);
    let mut sim = Sim {
        t,
        d,
        o,
        clock: &clock,
        streams: BTreeMap::new(),
        events: HashMap::new(),
        shifts: HashMap::new(),
        ops: Vec::new(),
        src: Sources::default(),
    };
    for (i, c) in t.calls.iter().enumerate() {
        if c.expanded() || c.failed() {
            continue;
        }
        if c.kind.is_gpu_work() {
            match by_call.get(&(i as u32)) {
                Some(&(s, e)) => sim.work(c, s, e),
                None => sim.src.calls_unmeasured += 1,
            }
            continue;
        }
        let kind = timeline::sync_kind(t, c);
        match kind {
            Kind::StreamSync | Kind::CtxSync | Kind::EventSync => {
                if let Some((a, p)) = sim.awaited(c, kind) {
                    sim.wait(c, a, p);
                }
            }
            Kind::EventRecord => {
                let key = timeline::stream_key(t, c);
                let s = sim.streams.get(&key).copied().unwrap_or_default();
                sim.events.insert((c.pid, c.obj), (s.rec_free, s.pred_free));
            }
            Kind::StreamWaitEvent => {
                if let Some(&(r, p)) = sim.events.get(&(c.pid, c.obj)) {
                    let s = sim.streams.entry(timeline::stream_key(t, c)).or_default();
                    s.rec_barrier = s.rec_barrier.max(r);
                    s.pred_barrier = s.pred_barrier.max(p);
                }
            }
            _ => {}
        }
    }
    // measured work tied to no call: as recorded, moved with its process
    for (si, s) in measured_tl.streams.iter().enumerate() {
        let mut tied = std::mem::take(&mut linked[si]);
        tied.sort_unstable();
        for (ii, iv) in s.intervals.iter().enumerate() {
            if tied.binary_search(&ii).is_ok() {
                continue;
            }
            let sh = sim.shift_at(s.key.pid, iv.start);
            let family = match iv.kind {
                WorkKind::Memcpy => "copy",
                WorkKind::Memset => "set",
                _ => tracer_common::family::family(t.name(iv.name)),
            };
            let start = moved(clock.at(s.key.pid, iv.start), sh);
            sim.ops.push(OpTime { start, end: start + (iv.end - iv.start), family, kind: iv.kind });
            sim.src.intervals_unlinked += 1;
        }
    }
    let ph = phases::phases(t);
    let (p, i, run) = periods(t, &ph);
    let main = ph.main_pid.unwrap_or(0);
    let mv = |v: &[Period], pid: u32| -> Vec<Period> {
        v.iter()
            .map(|x| Period {
                label: x.label.clone(),
                start: moved(clock.at(pid, x.start), sim.shift_at(pid, x.start)),
                end: moved(clock.at(pid, x.end), sim.shift_at(pid, x.end)),
            })
            .collect()
    };
    let (pp, pi) = (mv(&p, main), mv(&i, main));
    let prun = (
        moved(clock.at(main, run.0), sim.shift_at(main, run.0)),
        moved(clock.at(main, run.1), sim.shift_at(main, run.1)),
    );
    let target_gpu = d.file.as_ref().and_then(|f| f.gpu.clone());
    let predicted = figures(target_gpu, prun, &sim.ops, &pp, &pi);
    let recorded = figures(t.gpu_model(0), run, &measured_ops(t), &p, &i);
    let final_shift_ns = sim.shifts.iter().map(|(&pid, v)| (pid, v.last().map_or(0, |x| x.1))).collect();
    Prediction { durations_from: d.origin().to_string(), recorded, predicted, sources: sim.src, final_shift_ns, pacing }
}

/// One compared figure: on the recording's GPU, predicted, and measured on the target.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Row {
    pub what: String,
    pub recorded_ns: u64,
    pub predicted_ns: u64,
    pub actual_ns: u64,
    /// (predicted − actual) / actual × 100.
    pub error_pct: Option<f64>,
    /// The error of assuming nothing changes: (recorded − actual) / actual × 100.
    pub unchanged_error_pct: Option<f64>,
}

/// The prediction against a trace of the same workload recorded on the target GPU.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Comparison {
    pub rows: Vec<Row>,
    /// Iterations in the recording, and in the target's trace (their medians are compared).
    pub iterations: (usize, usize),
    /// The largest |error| among the rows of iteration time, busy time and the families over 5 % of the busy time.
    pub worst_error_pct: Option<f64>,
}

fn pct(x: u64, reference: u64) -> Option<f64> {
    (reference > 0).then(|| (x as f64 - reference as f64) / reference as f64 * 100.0)
}

/// Compares the prediction with `actual` (the target trace's measured figures).
pub fn compare(p: &Prediction, actual: &Figures) -> Comparison {
    let (r, q) = (&p.recorded, &p.predicted);
    let mut rows = Vec::new();
    let mut push = |what: String, a: u64, b: u64, c: u64| {
        rows.push(Row {
            what,
            recorded_ns: a,
            predicted_ns: b,
            actual_ns: c,
            error_pct: pct(b, c),
            unchanged_error_pct: pct(a, c),
        })
    };
    if let (Some((rd, rb)), Some((qd, qb)), Some((ad, ab))) =
        (r.iteration_medians(), q.iteration_medians(), actual.iteration_medians())
    {
        push("iteration time (median)".into(), rd, qd, ad);
        push("iteration GPU busy (median)".into(), rb, qb, ab);
    }
    push("run time".into(), r.run_ns, q.run_ns, actual.run_ns);
    push("GPU busy".into(), r.busy_ns, q.busy_ns, actual.busy_ns);
    push("GPU span".into(), r.gpu_span_ns, q.gpu_span_ns, actual.gpu_span_ns);
    push("kernels".into(), r.kernels_ns, q.kernels_ns, actual.kernels_ns);
    for f in tracer_common::family::FAMILIES {
        let (a, b, c) = (r.family(f), q.family(f), actual.family(f));
        if a + b + c > 0 {
            push(format!("  {f}"), a, b, c);
        }
    }
    let worst = rows
        .iter()
        .filter(|row| {
            let fam = row.what.trim_start();
            row.what.starts_with("iteration")
                || row.what == "GPU busy"
                || (row.what.starts_with("  ") && actual.family(fam) * 20 >= actual.busy_ns)
        })
        .filter_map(|row| row.error_pct.map(f64::abs))
        .reduce(f64::max);
    Comparison { rows, iterations: (r.iterations.len(), actual.iterations.len()), worst_error_pct: worst }
}

fn pct_text(x: Option<f64>) -> String {
    x.map_or("–".into(), |v| format!("{v:+.1} %"))
}

/// Text of a prediction, with its comparison when there is one.
pub fn render(p: &Prediction, c: Option<&Comparison>, actual_gpu: Option<&str>) -> String {
    let mut s = String::new();
    let gpu = |g: &Option<String>| g.clone().unwrap_or_else(|| "unknown GPU".into());
    let _ = writeln!(
        s,
        "what-if: recorded on {}, kernel durations from {} ({})",
        gpu(&p.recorded.gpu),
        p.durations_from,
        gpu(&p.predicted.gpu)
    );
    let x = &p.sources;
    let _ = writeln!(
        s,
        "  {} GPU ops: kernels {} timed exactly, {} by name (other geometry), {} not in the file (recorded duration \
         kept); copies/sets {} modelled, {} as recorded; {} calls waited for the GPU; {} launch calls without a \
         measured interval, {} measured intervals without a call",
        x.ops,
        x.kernels_exact,
        x.kernels_by_name,
        x.kernels_kept,
        x.copies_modelled,
        x.copies_kept,
        x.waits,
        x.calls_unmeasured,
        x.intervals_unlinked
    );
    for l in p.pacing.text().lines() {
        let _ = writeln!(s, "  {l}");
    }
    let mut t = Table::new(&[
        ("", Align::Left),
        ("recorded", Align::Right),
        ("predicted", Align::Right),
        ("change", Align::Right),
    ]);
    let mut row = |what: &str, a: u64, b: u64| {
        t.row(vec![what.to_string(), fmt_ns(a), fmt_ns(b), pct_text(pct(b, a))]);
    };
    let (r, q) = (&p.recorded, &p.predicted);
    if let (Some((rd, rb)), Some((qd, qb))) = (r.iteration_medians(), q.iteration_medians()) {
        row(&format!("iteration time (median of {})", r.iterations.len()), rd, qd);
        row("iteration GPU busy (median)", rb, qb);
    }
    row("run time", r.run_ns, q.run_ns);
    row("GPU busy", r.busy_ns, q.busy_ns);
    row("GPU span", r.gpu_span_ns, q.gpu_span_ns);
    row("kernels", r.kernels_ns, q.kernels_ns);
    for (f, a) in &r.families {
        row(&format!("  {f}"), *a, q.family(f));
    }
    for (a, b) in r.phases.iter().zip(&q.phases) {
        row(&format!("phase {}", a.label), a.dur_ns, b.dur_ns);
    }
    t.render(&mut s);
    if let Some(c) = c {
        let _ = writeln!(
            s,
            "\nagainst the trace measured on {} ({} iterations recorded, {} there):",
            actual_gpu.unwrap_or("the target GPU"),
            c.iterations.0,
            c.iterations.1
        );
        let mut t = Table::new(&[
            ("", Align::Left),
            ("recorded", Align::Right),
            ("predicted", Align::Right),
            ("measured", Align::Right),
            ("error", Align::Right),
            ("error if unchanged", Align::Right),
        ]);
        for r in &c.rows {
            t.row(vec![
                r.what.clone(),
                fmt_ns(r.recorded_ns),
                fmt_ns(r.predicted_ns),
                fmt_ns(r.actual_ns),
                pct_text(r.error_pct),
                pct_text(r.unchanged_error_pct),
            ]);
        }
        t.render(&mut s);
        let _ = writeln!(
            s,
            "worst error (iteration time and busy, GPU busy, families over 5 % of the busy time): {}",
            c.worst_error_pct.map_or("–".into(), |v| format!("{v:.1} %"))
        );
    }
    s
}

#[cfg(test)]
#[path = "whatif_tests.rs"]
mod tests;
