//! The GPU timeline per device and stream, each interval labelled with how
//! it was obtained ([`Source`]):
//!
//! - `measured`: `gpu` lines (CUPTI activity records, `--gpu-timestamps`).
//! - `inferred`: launch submit times + per-kernel durations from a
//!   calibration file, simulated as one FIFO queue per stream:
//!   start = max(submit, end of the previous work on the stream, barriers),
//!   submit = the return of the launch/copy call. Barriers: the legacy default
//!   stream waits for all earlier work on the process's blocking streams and
//!   they wait for it (streams created with CU_STREAM_NON_BLOCKING do not);
//!   cuStreamWaitEvent waits for the work recorded before cuEventRecord.
//!   Synchronization returns bound the simulation: work queued before a
//!   cuStreamSynchronize / cuCtxSynchronize / cuEventSynchronize / blocking
//!   copy (h2d, d2h) / cuStreamQuery or cuEventQuery answering CUDA_SUCCESS
//!   finished before that call returned, so a simulated
//!   interval still running then is cut there (counted in
//!   [`Diagnostics::clamped`]); a synchronization of the legacy stream also
//!   bounds the blocking streams' work submitted before the legacy stream's
//!   last work (which waited for it). A blocking copy occupies its stream up to the
//!   copy call's return at the latest.
//! - `bound`: no durations known. Each stream is "possibly busy" from the
//!   entry of the first launch/copy after it was last known idle until the
//!   return of the call that proves that work complete (one interval per
//!   such stretch, with its number of operations). The proofs: a stream,
//!   context or event synchronization's return, a successful stream/event
//!   query, a device-to-host copy's return (a host-to-device copy's return
//!   proves the work before it; the copy itself may still run from a
//!   staging buffer). A proof covers the work whose submission call had
//!   returned when the proving call began. The gaps of this timeline are
//!   certain idle time (a lower bound on idle time). Work never proven
//!   complete leaves its stream possibly busy from its submission to the
//!   end of the trace, flagged `approximate` and counted in
//!   [`Diagnostics::unbounded_ops`]: after it, idle time is unknown, not idle.
//!
//! Every interval is on its call's device (the `device` of its line:
//! decode/devices.rs); streams are per device, so the legacy default streams
//! of two contexts are two streams. Calls without a device (traces recorded
//! before device tracking, threads whose context tracer never saw bound) go
//! to device 0, as every inferred interval did before. Measured intervals
//! carry CUPTI's device.
//!
//! Public entry points for plots and reports: [`gpu_intervals`] (best
//! available source), [`measured`], [`inferred`], [`bound`], and
//! [`link_measured_to_launches`].
use std::collections::{BTreeMap, HashMap, VecDeque};

use serde::Serialize;

use super::coverage::Timed;
use super::durations::{Durations, Found};
use super::model::{Call, Dir, GpuOpKind, Kind, NO_STR, NONE, Trace};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, PartialOrd, Ord, Hash)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    Measured,
    Inferred,
    Bound,
    /// `--gpu-timestamps sample`: measured inside the windows CUPTI was on,
    /// inferred elsewhere with durations calibrated from those windows.
    Sampled,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Measured => "measured",
            Source::Inferred => "inferred",
            Source::Bound => "bound",
            Source::Sampled => "sampled",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkKind {
    Kernel,
    Memcpy,
    Memset,
    Graph,
    /// `bound`: a stretch of possibly-busy time with `ops` operations.
    Pending,
}

impl WorkKind {
    pub fn as_str(self) -> &'static str {
        match self {
            WorkKind::Kernel => "kernel",
            WorkKind::Memcpy => "memcpy",
            WorkKind::Memset => "memset",
            WorkKind::Graph => "graph",
            WorkKind::Pending => "pending",
        }
    }
}

/// One interval of GPU work (ns, CLOCK_MONOTONIC).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GpuInterval {
    pub start: u64,
    pub end: u64,
    pub kind: WorkKind,
    /// Interned kernel name / copy kind ([`NO_STR`] if unknown).
    pub name: u32,
    /// Index into `Trace::calls` of the launch/copy call, or u32::MAX.
    pub call: u32,
    /// Operations covered (1, or more for `Pending`).
    pub ops: u32,
    /// `inferred`: the duration is a fallback (kernel by name only, copy
    /// model); `bound`: work never proven complete, so its end is unknown
    /// (the interval runs to the end of the trace).
    pub approximate: bool,
}

impl GpuInterval {
    pub fn dur(&self) -> u64 {
        self.end - self.start
    }

    /// The work of call `i` (`c`), one operation from `start` to `end`.
    fn of_call(i: usize, c: &Call, start: u64, end: u64, approximate: bool) -> Self {
        GpuInterval {
            start,
            end,
            kind: work_kind(c.kind),
            name: if c.kind == Kind::Launch { c.kernel } else { NO_STR },
            call: i as u32,
            ops: 1,
            approximate,
        }
    }
}

/// A stream: `(pid, handle)`, plus the thread for per-thread default streams.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct StreamKey {
    pub pid: u32,
    /// CUstream handle (0 = legacy default stream); measured lines without a
    /// handle use `stream_id` here and set `measured_id`.
    pub handle: u64,
    /// Thread of a per-thread default stream, else 0.
    pub tid: u32,
    /// The device (see the module header); last, so that a process's streams
    /// keep their order, and not serialized (the stream's timeline has it).
    #[serde(skip)]
    pub device: u32,
}

impl StreamKey {
    pub fn is_legacy(&self) -> bool {
        self.handle == 0 && self.tid == 0
    }
}

#[derive(Clone, Debug)]
pub struct StreamTimeline {
    pub device: u32,
    pub key: StreamKey,
    /// Human-readable: "stream 0x0 (legacy default)", "stream id 7".
    pub label: String,
    pub source: Source,
    /// In time order, non-overlapping.
    pub intervals: Vec<GpuInterval>,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct Diagnostics {
    /// GPU operations placed.
    pub ops: u64,
    /// Kernels whose duration came from another geometry of the same kernel.
    pub by_name_only: u64,
    /// Kernels the calibration did not know (given the median of all calibrated kernels).
    pub unknown_kernels: u64,
    /// Copies/sets timed by the built-in bandwidth model.
    pub default_copy_model: u64,
    /// Simulated intervals cut at a synchronization return.
    pub clamped: u64,
    pub clamped_ns: u64,
    /// Time synchronization calls waited (over 50 µs) although the simulated
    /// queue was already empty: the calibration underestimates, or work is missing.
    pub unexplained_sync_wait_ns: u64,
    /// Failed launches/copies skipped.
    pub failed_skipped: u64,
    /// `bound`: operations never proven complete (their end is unknown: their
    /// stream is possibly busy from the first of them to the end of the trace).
    pub unbounded_ops: u64,
    /// `inferred`: the launches whose kernels the calibration did not know,
    /// as a share of the launches and of the estimated kernel time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub coverage: Option<super::coverage::CalibrationCoverage>,
    /// `sampled`: the expected error of the inferred busy time, in % of the
    /// measured: over the launches measured in windows, Σ|measured − model|
    /// / Σ measured, the model being the duration the inference would have
    /// given each (sampled.rs); None where no window measured a kernel.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected_busy_error_pct: Option<f64>,
    /// `sampled`: the model's idle share in the measured windows, against the measured one
    /// (window_check.rs); None where no window measured work.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window_check: Option<WindowCheck>,
}

/// A sampled recording's check of its model in its own windows (computed in window_check.rs).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WindowCheck {
    /// Windows with measured work, and the time compared in them (ns).
    pub windows: u64,
    pub span_ns: u64,
    /// Windows with fewer than `window_check::MIN_RECORDS` measured records, not checked (a
    /// window of one record is that record: 0 % idle by construction).
    pub windows_too_few_records: u64,
    /// Idle share over that time: measured, and the model's.
    pub measured_idle_pct: f64,
    pub model_idle_pct: f64,
    /// model − measured, in points of the time compared.
    pub points: f64,
    /// The median over windows of |model − measured| (points of each window's time).
    pub median_abs_points: f64,
    /// "durations library" (out of sample where it knew the kernels) or "this run's own
    /// calibration" (in sample: the queue model only is checked).
    pub model: &'static str,
}

#[derive(Clone, Debug)]
pub struct Timeline {
    pub source: Source,
    pub streams: Vec<StreamTimeline>,
    pub diag: Diagnostics,
    /// `inferred`: where the kernel durations came from ([`Durations::origin`]).
    pub calibrated_from: Option<String>,
}

impl Timeline {
    /// All intervals of a device, any stream (unsorted across streams).
    pub fn device_intervals(&self, device: u32) -> impl Iterator<Item = &GpuInterval> {
        self.streams.iter().filter(move |s| s.device == device).flat_map(|s| s.intervals.iter())
    }
    pub fn devices(&self) -> Vec<u32> {
        let mut d: Vec<u32> = self.streams.iter().map(|s| s.device).collect();
        d.sort_unstable();
        d.dedup();
        d
    }
    pub fn pids(&self) -> Vec<u32> {
        let mut d: Vec<u32> = self.streams.iter().map(|s| s.key.pid).collect();
        d.sort_unstable();
        d.dedup();
        d
    }
    pub fn interval_count(&self) -> usize {
        self.streams.iter().map(|s| s.intervals.len()).sum()
    }
}

/// Measured if the trace has gpu lines, else inferred with `durations`, else
/// bound ([`super::sampled::gpu_intervals`] also knows sampled recordings).
pub fn gpu_intervals(t: &Trace, durations: Option<&Durations>) -> Timeline {
    if !t.gpu.is_empty() {
        measured(t)
    } else if let Some(d) = durations {
        inferred(t, d)
    } else {
        bound(t)
    }
}

fn label(k: &StreamKey) -> String {
    if k.tid != 0 {
        format!("stream per-thread default (tid {})", k.tid)
    } else if k.handle == 0 {
        "stream 0x0 (legacy default)".into()
    } else {
        format!("stream {:#x}", k.handle)
    }
}

/// The stream a call's work goes to.
pub fn stream_key(t: &Trace, c: &Call) -> StreamKey {
    let h = if c.stream == NONE { 0 } else { c.stream };
    let device = c.device().unwrap_or(0);
    if h == 2 || (h == 0 && c.per_thread_variant(&t.strings)) {
        StreamKey { pid: c.pid, handle: 2, tid: c.tid, device }
    } else if h == 1 {
        StreamKey { pid: c.pid, handle: 0, tid: 0, device }
    } else {
        StreamKey { pid: c.pid, handle: h, tid: 0, device }
    }
}

/// Whether a cuCtxSynchronize `c` waits for stream `k`: the process's
/// streams on the call's device (every stream of the process when the
/// call's device is unknown).
fn in_ctx_of(k: &StreamKey, c: &Call) -> bool {
    k.pid == c.pid && c.device().is_none_or(|d| d == k.device)
}

/// Whether stream `k` shares a context with the call's stream `key`: same
/// process and device.
fn same_ctx(k: &StreamKey, key: &StreamKey) -> bool {
    k.pid == key.pid && k.device == key.device
}

fn work_kind(k: Kind) -> WorkKind {
    match k {
        Kind::Launch => WorkKind::Kernel,
        Kind::GraphLaunch => WorkKind::Graph,
        Kind::Copy | Kind::CopyAsync => WorkKind::Memcpy,
        _ => WorkKind::Memset,
    }
}

/// What a call tells the timeline: a successful stream/event query is a
/// synchronization point like cuStreamSynchronize / cuEventSynchronize.
pub(crate) fn sync_kind(t: &Trace, c: &Call) -> Kind {
    if c.query_done() {
        if t.name(c.func).starts_with("cuStreamQuery") {
            return Kind::StreamSync;
        }
        if t.name(c.func).starts_with("cuEventQuery") {
            return Kind::EventSync;
        }
    }
    c.kind
}

/// A blocking copy that the host waits for (h2d, d2h; d2d copies are async to the host).
fn host_blocking_copy(c: &Call) -> bool {
    c.kind == Kind::Copy && matches!(c.dir, Dir::H2D | Dir::D2H | Dir::Default | Dir::H2H)
}

/// Timeline from the measured `gpu` lines, one stream per (device, pid, stream).
pub fn measured(t: &Trace) -> Timeline {
    let mut m: BTreeMap<(u32, StreamKey), Vec<GpuInterval>> = BTreeMap::new();
    let mut labels: HashMap<(u32, StreamKey), String> = HashMap::new();
    for g in &t.gpu {
        let (key, lab) = if g.stream != NONE {
            let k = StreamKey { pid: g.pid, handle: g.stream, tid: 0, device: g.device };
            (k, format!("{} (id {})", label(&k), g.stream_id))
        } else {
            (
                StreamKey { pid: g.pid, handle: g.stream_id, tid: 0, device: g.device },
                format!("stream id {}", g.stream_id),
            )
        };
        labels.entry((g.device, key)).or_insert(lab);
        m.entry((g.device, key)).or_default().push(GpuInterval {
            start: g.start,
            end: g.end,
            kind: match g.kind {
                GpuOpKind::Kernel => WorkKind::Kernel,
                GpuOpKind::Memcpy => WorkKind::Memcpy,
                GpuOpKind::Memset => WorkKind::Memset,
            },
            name: g.name,
            call: u32::MAX,
            ops: 1,
            approximate: false,
        });
    }
    let streams = m
        .into_iter()
        .map(|((device, key), intervals)| StreamTimeline {
            device,
            key,
            label: labels.remove(&(device, key)).unwrap_or_default(),
            source: Source::Measured,
            intervals,
        })
        .collect();
    Timeline {
        source: Source::Measured,
        streams,
        diag: Diagnostics { ops: t.gpu.len() as u64, ..Default::default() },
        calibrated_from: None,
    }
}

#[derive(Default)]
struct SimStream {
    free_at: u64,
    barrier: u64,
    iv: Vec<GpuInterval>,
}

/// Cuts the intervals `[..upto]` of a stream that run past `r`.
fn clamp(s: &mut SimStream, upto: usize, r: u64, diag: &mut Diagnostics) {
    let upto = upto.min(s.iv.len());
    for iv in s.iv[..upto].iter_mut().rev() {
        if iv.end <= r {
            break;
        }
        diag.clamped += 1;
        diag.clamped_ns += iv.end - r.max(iv.start);
        iv.end = r;
        iv.start = iv.start.min(r);
    }
    if upto == s.iv.len() {
        s.free_at = s.free_at.min(r.max(s.iv.last().map_or(0, |i| i.end)));
    }
}

/// The queue simulation with durations (see the module header).
pub fn inferred(t: &Trace, d: &Durations) -> Timeline {
    inferred_with(t, d, SubmitAt::Return)
}

/// When submitted work may start on the GPU, at the earliest.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SubmitAt {
    /// The launch call's return (the default: the work is queued by then).
    #[default]
    Return,
    /// The launch call's entry (the GPU may start before the call returns;
    /// the probes' own cost lengthens the call).
    Entry,
}

/// [`inferred`] with a choice of submit point.
pub fn inferred_with(t: &Trace, d: &Durations, at: SubmitAt) -> Timeline {
    inferred_around(t, d, HashMap::new(), at)
}

/// [`inferred_with`] where the calls in `measured` (call index → measured
/// start and end) are placed where they were measured, and the queue
/// simulation goes on from there.
pub fn inferred_around(t: &Trace, d: &Durations, measured: HashMap<u32, (u64, u64)>, at: SubmitAt) -> Timeline {
    let median = |d: &Durations| {
        d.file.as_ref().and_then(|f| {
            let mut v: Vec<u64> = f.kernels.iter().map(|k| k.median_ns).collect();
            v.sort_unstable();
            (!v.is_empty()).then(|| super::stats::nearest_rank(&v, 50.0))
        })
    };
    // the median of these durations' kernels, else of the supplement's
    let all_median = median(d).or_else(|| d.supplement.as_deref().and_then(median));
    let mut sim = Sim {
        t,
        d,
        at,
        all_median,
        diag: Diagnostics::default(),
        streams: BTreeMap::new(),
        events: HashMap::new(),
        tally: Default::default(),
        measured,
    };
    for (i, c) in t.calls.iter().enumerate() {
        // An expanded graph launch runs as its nodes (the calls after it).
        if (c.incomplete() && !c.kind.is_gpu_work()) || c.expanded() {
            continue;
        }
        match sync_kind(t, c) {
            k if k.is_gpu_work() => sim.submit(i, c),
            Kind::StreamSync => sim.stream_sync(c),
            Kind::CtxSync => sim.ctx_sync(c),
            Kind::EventSync => sim.event_sync(c),
            Kind::EventRecord => sim.event_record(c),
            Kind::StreamWaitEvent => sim.stream_wait_event(c),
            _ => {}
        }
    }
    let mut coverage = std::mem::take(&mut sim.tally).finish();
    if coverage.library_launches > 0 {
        coverage.library = d.supplement.as_deref().map(|s| s.origin().to_string());
    }
    sim.diag.coverage = Some(coverage);
    let streams = sim
        .streams
        .into_iter()
        .filter(|(_, s)| !s.iv.is_empty())
        .map(|(key, s)| StreamTimeline {
            device: key.device,
            key,
            label: label(&key),
            source: Source::Inferred,
            intervals: s.iv,
        })
        .collect();
    Timeline { source: Source::Inferred, streams, diag: sim.diag, calibrated_from: Some(d.origin().to_string()) }
}

/// The queue simulation's state while it walks the calls.
struct Sim<'a> {
    t: &'a Trace,
    d: &'a Durations,
    at: SubmitAt,
    /// The median of the duration file's kernel medians (for unknown kernels).
    all_median: Option<u64>,
    diag: Diagnostics,
    streams: BTreeMap<StreamKey, SimStream>,
    /// (pid, event) -> (stream, intervals at record time, free_at at record time)
    events: HashMap<(u32, u64), (StreamKey, usize, u64)>,
    /// Launches timed, and those the calibration did not know.
    tally: super::coverage::Tally,
    /// Calls whose work was measured: call index → (start, end).
    measured: HashMap<u32, (u64, u64)>,
}

impl Sim<'_> {
    /// Work submitted by call `i`: queued on its stream after what it must wait for.
    fn submit(&mut self, i: usize, c: &Call) {
        if c.failed() {
            self.diag.failed_skipped += 1;
            return;
        }
        let key = stream_key(self.t, c);
        if let Some(&(start, end)) = self.measured.get(&(i as u32)) {
            return self.place_measured(i, c, key, start, end);
        }
        let (dur, approx) = self.work_duration(c);
        // a blocking copy is done by the call's return: it can start at its entry; so can an
        // asynchronous copy between host and device whose call lasted at least half its work
        // (a pageable host buffer: the driver stages the bytes before it returns; GPT-2's 248 MB
        // of weights, queued at the returns, were cut at the next synchronization)
        let during_call =
            c.kind == Kind::CopyAsync && matches!(c.dir, Dir::H2D | Dir::D2H) && c.dur.saturating_mul(2) >= dur;
        let submit = if self.at == SubmitAt::Return && c.dur > 0 && !host_blocking_copy(c) && !during_call {
            c.end()
        } else {
            c.ts
        };
        let earliest = self.default_stream_wait(key, c, submit);
        let diag = &mut self.diag;
        let s = self.streams.entry(key).or_default();
        let mut start = earliest.max(s.free_at).max(s.barrier);
        let mut end = start + dur;
        if host_blocking_copy(c) && c.dur > 0 && end > c.end() {
            diag.clamped += 1;
            diag.clamped_ns += end - c.end().max(start);
            end = c.end();
            start = start.min(end);
        }
        s.free_at = end;
        diag.ops += 1;
        s.iv.push(GpuInterval::of_call(i, c, start, end, approx));
    }

    /// Work that was measured: placed where it ran; earlier simulated work
    /// still running then is cut there (counted as clamped).
    fn place_measured(&mut self, i: usize, c: &Call, key: StreamKey, start: u64, end: u64) {
        if matches!(c.kind, Kind::Launch | Kind::GraphLaunch) {
            let name = if c.kernel == NO_STR { "(unnamed handle)" } else { self.t.name(c.kernel) };
            self.tally.add(name, end - start, Timed::Calibrated);
        }
        let diag = &mut self.diag;
        let s = self.streams.entry(key).or_default();
        let n = s.iv.len();
        clamp(s, n, start, diag);
        s.free_at = s.free_at.max(end);
        diag.ops += 1;
        s.iv.push(GpuInterval::of_call(i, c, start, end, false));
    }

    /// The earliest start after `submit` that the implicit synchronization with the legacy default stream allows.
    fn default_stream_wait(&self, key: StreamKey, c: &Call, submit: u64) -> u64 {
        let t = self.t;
        let mut earliest = submit;
        if key.is_legacy() {
            for (k2, s2) in self.streams.range(StreamKey { pid: c.pid, handle: 0, tid: 0, device: 0 }..) {
                if k2.pid != c.pid {
                    break;
                }
                if k2.device == key.device && !t.nonblocking_streams.contains(&(k2.pid, k2.handle)) {
                    earliest = earliest.max(s2.free_at);
                }
            }
        } else if !t.nonblocking_streams.contains(&(key.pid, key.handle))
            && let Some(l) = self.streams.get(&StreamKey { pid: c.pid, handle: 0, tid: 0, device: key.device })
        {
            earliest = earliest.max(l.free_at);
        }
        earliest
    }

    /// How long the call's work runs on the GPU (from the durations), and whether that is approximate.
    fn work_duration(&mut self, c: &Call) -> (u64, bool) {
        let (t, d, diag) = (self.t, self.d, &mut self.diag);
        let fallback = self.all_median.unwrap_or(2000);
        match c.kind {
            Kind::Launch => {
                let name = if c.kernel == NO_STR { "(unnamed handle)" } else { t.name(c.kernel) };
                match (c.kernel != NO_STR).then(|| d.kernel(name, t.geom(c.geom))).flatten() {
                    Some((ns, f)) => {
                        if f.by_name() {
                            diag.by_name_only += 1;
                        }
                        self.tally.add(name, ns, if f.from_supplement() { Timed::Library } else { Timed::Calibrated });
                        (ns, !f.exact())
                    }
                    None => {
                        diag.unknown_kernels += 1;
                        self.tally.add(name, fallback, Timed::Fallback);
                        (fallback, true)
                    }
                }
            }
            Kind::GraphLaunch => {
                diag.unknown_kernels += 1;
                self.tally.add("(graph launch)", fallback, Timed::Fallback);
                (fallback, true)
            }
            Kind::Copy | Kind::CopyAsync => {
                let (ns, f) = d.copy(Some(c.dir), c.size);
                diag.default_copy_model += (f == Found::Default) as u64;
                (ns, true)
            }
            _ => {
                let (ns, f) = d.copy(None, c.size);
                diag.default_copy_model += (f == Found::Default) as u64;
                (ns, true)
            }
        }
    }

    /// A stream synchronization: its stream's work (and, for the legacy stream, the blocking streams' earlier work) ends by its return.
    fn stream_sync(&mut self, c: &Call) {
        let t = self.t;
        let key = stream_key(t, c);
        let mut last_legacy_submit = None;
        if let Some(s) = self.streams.get_mut(&key) {
            note_wait(c, s.free_at, &mut self.diag);
            let n = s.iv.len();
            clamp(s, n, c.end(), &mut self.diag);
            if key.is_legacy() {
                last_legacy_submit = s.iv.last().map(|iv| t.calls[iv.call as usize].ts);
            }
        }
        // the legacy stream's work waited for the blocking streams' earlier work
        if let Some(x) = last_legacy_submit {
            for (k, s) in self.streams.iter_mut().filter(|(k, _)| same_ctx(k, &key) && !k.is_legacy()) {
                if !t.nonblocking_streams.contains(&(k.pid, k.handle)) {
                    let n = s.iv.partition_point(|iv| t.calls[iv.call as usize].ts < x);
                    clamp(s, n, c.end(), &mut self.diag);
                }
            }
        }
    }

    /// A context synchronization: all the process's work ends by its return.
    fn ctx_sync(&mut self, c: &Call) {
        let mut latest = 0;
        for (_, s) in self.streams.iter_mut().filter(|(k, _)| in_ctx_of(k, c)) {
            latest = latest.max(s.free_at);
            let n = s.iv.len();
            clamp(s, n, c.end(), &mut self.diag);
        }
        note_wait(c, latest, &mut self.diag);
    }

    /// An event synchronization: the work before the event's record ends by its return.
    fn event_sync(&mut self, c: &Call) {
        if let Some(&(key, n, at)) = self.events.get(&(c.pid, c.obj))
            && let Some(s) = self.streams.get_mut(&key)
        {
            note_wait(c, at, &mut self.diag);
            clamp(s, n, c.end(), &mut self.diag);
        }
    }

    /// An event record: remembers its stream's position and free time.
    fn event_record(&mut self, c: &Call) {
        let key = stream_key(self.t, c);
        let s = self.streams.entry(key).or_default();
        self.events.insert((c.pid, c.obj), (key, s.iv.len(), s.free_at));
    }

    /// A stream waiting on an event: its later work starts after the event's work.
    fn stream_wait_event(&mut self, c: &Call) {
        if let Some(&(_, _, at)) = self.events.get(&(c.pid, c.obj)) {
            let key = stream_key(self.t, c);
            let s = self.streams.entry(key).or_default();
            s.barrier = s.barrier.max(at);
        }
    }
}

/// A synchronization waited although the simulated queue was empty before it began.
fn note_wait(c: &Call, sim_free_at: u64, diag: &mut Diagnostics) {
    if c.dur > 50_000 {
        let from = sim_free_at.max(c.ts);
        diag.unexplained_sync_wait_ns += c.end().saturating_sub(from);
    }
}

#[derive(Default)]
struct Pending {
    /// (submit time, call index)
    ops: Vec<(u64, u32)>,
    pushed: usize,
    flushed: usize,
}

/// Closes the stretch of the first `upto` pending ops of a stream at `end`,
/// the return of the call that proved them complete. Only the ops whose
/// submission call had returned by `proof_entry` (the proving call's entry,
/// or the event record's) count: work another thread was still submitting
/// may have been queued after the proof began (it stays pending).
fn flush(t: &Trace, p: &mut Pending, upto: usize, proof_entry: u64, end: u64, out: &mut Vec<GpuInterval>) {
    let upto = upto.min(p.ops.len());
    let upto = p.ops[..upto].iter().take_while(|o| t.calls[o.1 as usize].end() <= proof_entry).count();
    if upto == 0 {
        return;
    }
    let start = p.ops[0].0;
    out.push(GpuInterval {
        start,
        end: end.max(start),
        kind: WorkKind::Pending,
        name: NO_STR,
        call: p.ops[0].1,
        ops: upto as u32,
        approximate: false,
    });
    p.ops.drain(..upto);
    p.flushed += upto;
}

/// What a host-synchronous copy proves when it returns (CUDA's "API
/// synchronization behavior"): a device-to-host copy returns once it and
/// the earlier work of its stream are done; a host-to-device copy waits for
/// the earlier work before it starts, but from pageable memory it returns
/// once the data is staged, so the copy itself may still be running.
/// Device-to-device, peer and copies of unknown direction prove nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CopyProof {
    None,
    EarlierWork,
    EarlierWorkAndCopy,
}

fn copy_proof(c: &Call) -> CopyProof {
    if c.kind != Kind::Copy || c.dur == 0 || c.incomplete() || c.failed() {
        return CopyProof::None;
    }
    match c.dir {
        Dir::D2H => CopyProof::EarlierWorkAndCopy,
        Dir::H2D => CopyProof::EarlierWork,
        _ => CopyProof::None,
    }
}

/// The bound timeline (see the module header): each stream is possibly busy
/// from the submission of work not yet proven complete until the return of
/// the call that proves it (a synchronization, a device-to-host copy, a
/// successful query); work never proven complete keeps its stream possibly
/// busy to the end of the trace.
pub fn bound(t: &Trace) -> Timeline {
    let trace_end = t.span().map_or(0, |s| s.1);
    let mut diag = Diagnostics::default();
    let mut pend: BTreeMap<StreamKey, Pending> = BTreeMap::new();
    let mut out: BTreeMap<StreamKey, Vec<GpuInterval>> = BTreeMap::new();
    // (pid, event) -> (stream, ops pushed before the record, the record's entry)
    let mut events: HashMap<(u32, u64), (StreamKey, usize, u64)> = HashMap::new();
    // pid -> submission time of the latest work on the legacy stream
    let mut legacy_last: HashMap<u32, u64> = HashMap::new();
    for (i, c) in t.calls.iter().enumerate() {
        match sync_kind(t, c) {
            _ if c.expanded() => {}
            k if k.is_gpu_work() => {
                if c.failed() {
                    diag.failed_skipped += 1;
                    continue;
                }
                let key = stream_key(t, c);
                diag.ops += 1;
                if key.is_legacy() {
                    legacy_last.insert(c.pid, c.ts);
                }
                let p = pend.entry(key).or_default();
                let proof = copy_proof(c);
                if proof == CopyProof::EarlierWork {
                    let n = p.ops.len();
                    flush(t, p, n, c.ts, c.end(), out.entry(key).or_default());
                }
                p.ops.push((c.ts, i as u32));
                p.pushed += 1;
                if proof == CopyProof::EarlierWorkAndCopy {
                    // the copy's own entry: it has returned by its return
                    let n = p.ops.len();
                    flush(t, p, n, c.end(), c.end(), out.entry(key).or_default());
                }
            }
            Kind::StreamSync if !c.incomplete() => {
                let key = stream_key(t, c);
                if let Some(p) = pend.get_mut(&key) {
                    let n = p.ops.len();
                    flush(t, p, n, c.ts, c.end(), out.entry(key).or_default());
                }
                // the legacy stream's work waited for the blocking streams' earlier work
                if key.is_legacy()
                    && let Some(&x) = legacy_last.get(&c.pid)
                {
                    for (k, p) in pend.iter_mut().filter(|(k, _)| same_ctx(k, &key) && !k.is_legacy()) {
                        if !t.nonblocking_streams.contains(&(k.pid, k.handle)) {
                            let n = p.ops.partition_point(|o| o.0 < x);
                            flush(t, p, n, c.ts, c.end(), out.entry(*k).or_default());
                        }
                    }
                }
            }
            Kind::CtxSync if !c.incomplete() => {
                for (k, p) in pend.iter_mut().filter(|(k, _)| in_ctx_of(k, c)) {
                    let n = p.ops.len();
                    flush(t, p, n, c.ts, c.end(), out.entry(*k).or_default());
                }
            }
            Kind::EventRecord => {
                let key = stream_key(t, c);
                let n = pend.get(&key).map_or(0, |p| p.pushed);
                events.insert((c.pid, c.obj), (key, n, c.ts));
            }
            Kind::EventSync if !c.incomplete() => {
                if let Some(&(key, n, rec)) = events.get(&(c.pid, c.obj))
                    && let Some(p) = pend.get_mut(&key)
                {
                    // the ops pushed before the record that are still pending
                    let n = n.saturating_sub(p.flushed);
                    flush(t, p, n, rec.min(c.ts), c.end(), out.entry(key).or_default());
                }
            }
            _ => {}
        }
    }
    for (k, p) in pend {
        if p.ops.is_empty() {
            continue;
        }
        // Never proven complete: the stream may be busy from the first such
        // submission to the end of the trace (its end is unknown).
        diag.unbounded_ops += p.ops.len() as u64;
        let (start, call) = p.ops[0];
        out.entry(k).or_default().push(GpuInterval {
            start,
            end: trace_end.max(start),
            kind: WorkKind::Pending,
            name: NO_STR,
            call,
            ops: p.ops.len() as u32,
            approximate: true,
        });
    }
    let streams = out
        .into_iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(key, intervals)| StreamTimeline {
            device: key.device,
            key,
            label: label(&key),
            source: Source::Bound,
            intervals,
        })
        .collect();
    Timeline { source: Source::Bound, streams, diag, calibrated_from: None }
}

/// For each measured interval (by stream, then index), the launch/copy call it
/// came from: matched per process in submission order by kernel name (copies
/// by direction, sets in order). Returns (stream index, interval index, call index).
pub fn link_measured_to_launches(t: &Trace, tl: &Timeline) -> Vec<(usize, usize, u32)> {
    link_measured_to_launches_of(t, tl, |_| true)
}

/// [`link_measured_to_launches`] with only the calls `keep` accepts (e.g.
/// those made while CUPTI's activity was on).
pub fn link_measured_to_launches_of(
    t: &Trace,
    tl: &Timeline,
    keep: impl Fn(&Call) -> bool,
) -> Vec<(usize, usize, u32)> {
    #[derive(Hash, PartialEq, Eq)]
    enum K {
        // (pid, interned kernel name: launch lines and gpu lines share the table)
        Kernel(u32, u32),
        Copy(u32, Dir),
        Set(u32),
    }
    let mut queues: HashMap<K, VecDeque<u32>> = HashMap::new();
    for (i, c) in t.calls.iter().enumerate() {
        if c.failed() || !keep(c) {
            continue;
        }
        let k = match c.kind {
            Kind::Launch => K::Kernel(c.pid, c.kernel),
            Kind::Copy | Kind::CopyAsync => K::Copy(c.pid, c.dir),
            Kind::Memset | Kind::MemsetAsync => K::Set(c.pid),
            _ => continue,
        };
        queues.entry(k).or_default().push_back(i as u32);
    }
    let mut all: Vec<(u64, usize, usize)> = Vec::new();
    for (si, s) in tl.streams.iter().enumerate() {
        for (ii, iv) in s.intervals.iter().enumerate() {
            all.push((iv.start, si, ii));
        }
    }
    all.sort_unstable();
    let mut out = Vec::new();
    // the measured copies' directions, by (start, name)
    let dirs: HashMap<(u64, u32), Dir> =
        t.gpu.iter().filter(|g| g.kind == GpuOpKind::Memcpy).map(|g| ((g.start, g.name), g.dir)).collect();
    let dir_of = |si: usize, ii: usize| -> Dir {
        let iv = &tl.streams[si].intervals[ii];
        dirs.get(&(iv.start, iv.name)).copied().unwrap_or(Dir::Default)
    };
    for (_, si, ii) in all {
        let s = &tl.streams[si];
        let iv = &s.intervals[ii];
        let k = match iv.kind {
            WorkKind::Kernel => K::Kernel(s.key.pid, iv.name),
            WorkKind::Memcpy => K::Copy(s.key.pid, dir_of(si, ii)),
            WorkKind::Memset => K::Set(s.key.pid),
            _ => continue,
        };
        if let Some(q) = queues.get_mut(&k)
            && let Some(ci) = q.pop_front()
        {
            out.push((si, ii, ci));
        }
    }
    out
}

/// Measured GPU work (`gpu` lines) tied to graph nodes: of the kernels,
/// copies and sets the expanded launches ran, how many a measured record
/// was matched to (per process in submission order by kernel name, copy
/// direction, set: [`link_measured_to_launches`]), and how many
/// graph nodes there were. Each matched record is tied to its node
/// (`Call::obj`) and its launch (the expanded launch before it).
pub fn measured_matches(t: &Trace, measured: &Timeline) -> (u64, u64) {
    let nodes = t.calls.iter().filter(|c| c.from_graph()).count() as u64;
    if nodes == 0 {
        return (0, 0);
    }
    let links = link_measured_to_launches(t, measured);
    let matched = links.iter().filter(|(_, _, c)| t.calls.get(*c as usize).is_some_and(|c| c.from_graph())).count();
    (matched as u64, nodes)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::analysis::durations::{DurationsFile, KernelEntry};
    use crate::analysis::model::parse_str;

    pub(crate) fn launch(ts: u64, dur_us: f64, kernel: &str, stream: &str) -> String {
        format!(
            r#"{{"ts":{ts},"pid":1,"tid":1,"type":"kernel","op":"launch","name":"cuLaunchKernel","kernel":"{kernel}","grid":[1,1,1],"block":[32,1,1],"shared_mem":0,"stream":"{stream}","duration_us":{dur_us},"ret":0}}"#
        )
    }
    pub(crate) fn sync(ts: u64, dur_us: f64, stream: &str) -> String {
        format!(
            r#"{{"ts":{ts},"pid":1,"tid":1,"type":"sync","op":"stream_synchronize","name":"cuStreamSynchronize","stream":"{stream}","duration_us":{dur_us},"ret":0}}"#
        )
    }
    pub(crate) fn durs(k: &[(&str, u64)]) -> Durations {
        Durations::new(DurationsFile {
            format: "tracer-kernel-durations".into(),
            version: 1,
            source: "test".into(),
            gpu: None,
            kernels: k
                .iter()
                .map(|(n, d)| KernelEntry {
                    kernel: n.to_string(),
                    grid: [1, 1, 1],
                    block: [32, 1, 1],
                    shared_mem: 0,
                    count: 1,
                    median_ns: *d,
                    p10_ns: *d,
                    p90_ns: *d,
                })
                .collect(),
            copies: vec![],
        })
    }
    fn spans(tl: &Timeline) -> Vec<(u64, u64, u64)> {
        tl.streams.iter().flat_map(|s| s.intervals.iter().map(move |i| (s.key.handle, i.start, i.end))).collect()
    }

    #[test]
    fn submit_at_entry() {
        let l = [launch(0, 1.0, "k", "0x10"), launch(30_000, 1.0, "k", "0x10")];
        let t = parse_str("q", &l.join("\n")).unwrap();
        let tl = inferred_with(&t, &durs(&[("k", 10_000)]), SubmitAt::Entry);
        assert_eq!(spans(&tl), [(0x10, 0, 10_000), (0x10, 30_000, 40_000)]);
    }

    #[test]
    fn an_async_copy_whose_call_did_the_work_runs_during_the_call() {
        use crate::analysis::durations::CopyEntry;
        let copy = |ts: u64, dur_us: f64| {
            format!(
                r#"{{"ts":{ts},"pid":1,"tid":1,"type":"memcpy","op":"copy","name":"cuMemcpyHtoDAsync_v2","size":1000000,"direction":"h2d","stream":"0x0","duration_us":{dur_us},"ret":0}}"#
            )
        };
        let mut d = durs(&[]);
        d = Durations::new(DurationsFile {
            copies: vec![CopyEntry { kind: "h2d".into(), count: 9, base_ns: 1_000, ns_per_byte: 0.09 }],
            ..d.file.take().unwrap()
        });
        // 91 µs of work. A call of 100 µs (a pageable buffer, staged by the driver before it
        // returns) ran it during the call: from its entry, and the synchronization after it
        // cuts nothing. A call of 5 µs (page-locked) queues it at its return; the
        // synchronization that returns at 130 µs cuts what the model put after that.
        let l = [copy(0, 100.0), sync(100_000, 1.0, "0x0"), copy(110_000, 5.0), sync(116_000, 14.0, "0x0")];
        let t = parse_str("c", &l.join("\n")).unwrap();
        let tl = inferred(&t, &d);
        assert_eq!(spans(&tl), [(0, 0, 91_000), (0, 115_000, 130_000)]);
        assert_eq!((tl.diag.clamped, tl.diag.clamped_ns), (1, 76_000));
    }

    #[test]
    fn fifo_queue_per_stream() {
        // 3 launches 1 µs apart (each call takes 1 µs) of a 10 µs kernel: back to back.
        let l = [launch(0, 1.0, "k", "0x10"), launch(1000, 1.0, "k", "0x10"), launch(2000, 1.0, "k", "0x10")];
        let t = parse_str("q", &l.join("\n")).unwrap();
        let tl = inferred(&t, &durs(&[("k", 10_000)]));
        assert_eq!(tl.source, Source::Inferred);
        assert_eq!(spans(&tl), [(0x10, 1000, 11_000), (0x10, 11_000, 21_000), (0x10, 21_000, 31_000)]);
        assert_eq!(tl.diag.ops, 3);
    }

    #[test]
    fn sync_return_clamps_and_legacy_serializes() {
        // k (10 µs) on stream 0x10, then on legacy: waits for 0x10; the sync at
        // 12 µs returns at 15 µs although the sim says legacy work ends at 21 µs.
        let l = [
            launch(0, 1.0, "k", "0x10"),
            launch(2000, 1.0, "k", "0x0"),
            sync(12_000, 3.0, "0x0"),
            launch(20_000, 1.0, "short", "0x0"),
        ];
        let t = parse_str("q", &l.join("\n")).unwrap();
        let tl = inferred(&t, &durs(&[("k", 10_000), ("short", 1_000)]));
        assert_eq!(spans(&tl), [(0, 11_000, 15_000), (0, 21_000, 22_000), (0x10, 1000, 11_000)]);
        assert_eq!((tl.diag.clamped, tl.diag.clamped_ns), (1, 6000));
    }

    #[test]
    fn nonblocking_streams_do_not_wait_for_legacy() {
        let l = [
            r#"{"ts":0,"pid":1,"tid":1,"type":"stream","op":"stream_create","name":"cuStreamCreate","args":{"Flags":"0x1","phStream":"0x20"},"duration_us":0.5,"ret":0}"#.to_string(),
            launch(1000, 1.0, "k", "0x0"),
            launch(3000, 1.0, "k", "0x20"),
            launch(4000, 1.0, "k", "0x30"),
        ];
        let t = parse_str("q", &l.join("\n")).unwrap();
        let tl = inferred(&t, &durs(&[("k", 10_000)]));
        assert_eq!(spans(&tl), [(0, 2000, 12_000), (0x20, 4000, 14_000), (0x30, 12_000, 22_000)]);
    }

    #[test]
    fn events_order_streams() {
        let ev = |ts: u64, op: &str, name: &str, stream: &str| {
            format!(
                r#"{{"ts":{ts},"pid":1,"tid":1,"type":"event","op":"{op}","name":"{name}","event":"0xe","stream":"{stream}","duration_us":1.0,"ret":0}}"#
            )
        };
        let l = [
            r#"{"ts":0,"pid":1,"tid":1,"type":"stream","op":"stream_create","name":"cuStreamCreate","args":{"Flags":"0x1","phStream":"0x20"},"duration_us":0.5,"ret":0}"#.to_string(),
            r#"{"ts":1,"pid":1,"tid":1,"type":"stream","op":"stream_create","name":"cuStreamCreate","args":{"Flags":1,"phStream":"0x30"},"duration_us":0.5,"ret":0}"#.to_string(),
            launch(1000, 1.0, "k", "0x20"),
            ev(3000, "event_record", "cuEventRecord", "0x20"),
            ev(4000, "stream_wait_event", "cuStreamWaitEvent", "0x30"),
            launch(5000, 1.0, "k", "0x30"),
            r#"{"ts":6000,"pid":1,"tid":1,"type":"sync","op":"event_synchronize","name":"cuEventSynchronize","event":"0xe","duration_us":2.0,"ret":0}"#.to_string(),
        ];
        let t = parse_str("q", &l.join("\n")).unwrap();
        let tl = inferred(&t, &durs(&[("k", 10_000)]));
        // 0x20 runs 2..12 µs, event sync returns at 8 µs: cut to 8; 0x30 waits for the event (12 µs, recorded before the cut).
        assert_eq!(spans(&tl), [(0x20, 2000, 8000), (0x30, 12_000, 22_000)]);
    }

    #[test]
    fn legacy_sync_bounds_blocking_streams() {
        // 0x10 (blocking) work, then legacy work (waits for it), then a legacy sync: both bounded
        let l = [
            launch(0, 1.0, "k", "0x10"),
            launch(2000, 1.0, "k", "0x0"),
            launch(2500, 1.0, "k", "0x10"),
            sync(5000, 3.0, "0x0"),
        ];
        let t = parse_str("q", &l.join("\n")).unwrap();
        let b = bound(&t);
        let got: Vec<(u64, u64, u64, u32)> = b
            .streams
            .iter()
            .flat_map(|s| s.intervals.iter().map(move |i| (s.key.handle, i.start, i.end, i.ops)))
            .collect();
        // the 0x10 launch at 2.5 µs came after the legacy launch: not covered, never
        // synchronized, so possibly busy to the end of the trace (8 µs)
        assert_eq!(got, [(0, 2000, 8000, 1), (0x10, 0, 8000, 1), (0x10, 2500, 8000, 1)]);
        let tl = inferred(&t, &durs(&[("k", 10_000)]));
        // sim: 0x10 [1, 11], legacy waits -> [11, 21], the second 0x10 launch waits for it -> [21, 31];
        // the sync returns at 8 µs: the legacy work is cut to an empty interval at 8 µs, the first
        // 0x10 work (submitted before the legacy work) to [1, 8]; the one-pass simulation does not
        // move the second 0x10 work back (docs/analysis.md, limits)
        assert_eq!(spans(&tl), [(0, 8000, 8000), (0x10, 1000, 8000), (0x10, 21_000, 31_000)]);
    }

    #[test]
    fn successful_queries_are_synchronization_points() {
        let q = |ts: u64, ret: u32| {
            let err = if ret == 600 { r#","error":"CUDA_ERROR_NOT_READY""# } else { "" };
            format!(
                r#"{{"ts":{ts},"pid":1,"tid":1,"type":"sync","op":"stream_query","name":"cuStreamQuery","stream":"0x0","duration_us":1.0,"ret":{ret}{err}}}"#
            )
        };
        let l = [launch(0, 1.0, "k", "0x0"), q(5000, 600), q(9000, 0), launch(20_000, 1.0, "k", "0x0"), q(30_000, 0)];
        let t = parse_str("q", &l.join("\n")).unwrap();
        let got: Vec<(u64, u64)> = bound(&t).streams[0].intervals.iter().map(|i| (i.start, i.end)).collect();
        // NOT_READY at 5 µs says nothing; CUDA_SUCCESS at 9..10 µs closes the stretch
        assert_eq!(got, [(0, 10_000), (20_000, 31_000)]);
        let tl = inferred(&t, &durs(&[("k", 50_000)]));
        assert_eq!(spans(&tl), [(0, 1000, 10_000), (0, 21_000, 31_000)]);
    }

    #[test]
    fn bound_timeline_gives_certain_idle() {
        let l = [
            launch(1000, 1.0, "k", "0x0"),
            launch(3000, 1.0, "k", "0x0"),
            sync(4000, 20.0, "0x0"),
            launch(50_000, 1.0, "k", "0x0"),
            r#"{"ts":60000,"pid":1,"tid":1,"type":"memcpy","op":"copy","name":"cuMemcpyDtoH_v2","size":4,"direction":"d2h","duration_us":5.0,"ret":0}"#.to_string(),
            launch(70_000, 1.0, "k", "0x0"),
            r#"{"ts":90000,"pid":1,"tid":1,"type":"process","op":"exit","name":"process"}"#.to_string(),
        ];
        let t = parse_str("b", &l.join("\n")).unwrap();
        let tl = bound(&t);
        let got: Vec<(u64, u64, u32)> = tl.streams[0].intervals.iter().map(|i| (i.start, i.end, i.ops)).collect();
        assert_eq!(got, [(1000, 24_000, 2), (50_000, 65_000, 2), (70_000, 90_000, 1)]);
        assert!(tl.streams[0].intervals[2].approximate && !tl.streams[0].intervals[1].approximate);
        assert_eq!(tl.diag.unbounded_ops, 1);
        assert_eq!(tl.source, Source::Bound);
        let auto = gpu_intervals(&t, None);
        assert_eq!(auto.source, Source::Bound);
    }

    /// The reported case: a launch loop with no synchronization visible (a
    /// CUDA 13 program whose syncs went through entry points not recorded)
    /// read "idle ≥ 2.181 s (≥ 100.0 %)" in 108000 certain gaps: each launch
    /// was a zero-length interval. Work never proven complete leaves the
    /// rest of the trace possibly busy: no certain idle time at all.
    #[test]
    fn a_launch_loop_without_synchronization_has_no_certain_idle() {
        let mut l: Vec<String> = (0..1000u64).map(|i| launch(1_000_000 + i * 20_000, 0.0, "k", "0x0")).collect();
        l.push(r#"{"ts":30000000,"pid":1,"tid":1,"type":"process","op":"exit","name":"process"}"#.to_string());
        let t = parse_str("loop", &l.join("\n")).unwrap();
        let tl = bound(&t);
        let got: Vec<(u64, u64, u32, bool)> =
            tl.streams[0].intervals.iter().map(|i| (i.start, i.end, i.ops, i.approximate)).collect();
        assert_eq!(got, [(1_000_000, 30_000_000, 1000, true)]);
        assert_eq!(tl.diag.unbounded_ops, 1000);
        // (tracer gaps on it: analysis::gaps::tests::a_launch_loop_without_synchronization_reads_no_idle)
        // the same loop ending in a context synchronization: idle is certain after it only
        let mut l2 = l.clone();
        l2.insert(1000, r#"{"ts":25000000,"pid":1,"tid":1,"type":"sync","op":"ctx_synchronize","name":"cuCtxSynchronize_v2","duration_us":100.0,"ret":0}"#.to_string());
        let t2 = parse_str("loop2", &l2.join("\n")).unwrap();
        let got: Vec<(u64, u64, u32)> =
            bound(&t2).streams[0].intervals.iter().map(|i| (i.start, i.end, i.ops)).collect();
        assert_eq!(got, [(1_000_000, 25_100_000, 1000)]);
    }

    #[test]
    fn copies_prove_what_the_driver_guarantees() {
        let copy = |ts: u64, name: &str, dir: &str| {
            format!(
                r#"{{"ts":{ts},"pid":1,"tid":1,"type":"memcpy","op":"copy","name":"{name}","size":4,"direction":"{dir}","duration_us":5.0,"ret":0}}"#
            )
        };
        let l = [
            launch(0, 1.0, "k", "0x0"),
            copy(10_000, "cuMemcpyHtoD_v2", "h2d"),
            copy(30_000, "cuMemcpyDtoD_v2", "d2d"),
            launch(40_000, 1.0, "k", "0x0"),
            copy(50_000, "cuMemcpyDtoH_v2", "d2h"),
            r#"{"ts":90000,"pid":1,"tid":1,"type":"process","op":"exit","name":"process"}"#.to_string(),
        ];
        let t = parse_str("c", &l.join("\n")).unwrap();
        let got: Vec<(u64, u64, u32)> =
            bound(&t).streams[0].intervals.iter().map(|i| (i.start, i.end, i.ops)).collect();
        // h2d: the launch before it is done by its return (15 µs), the copy itself
        // not; the d2d copy proves nothing; the d2h copy proves everything by 55 µs
        assert_eq!(got, [(0, 15_000, 1), (10_000, 55_000, 4)]);
    }

    #[test]
    fn a_sync_does_not_prove_work_another_thread_was_still_submitting() {
        let on = |tid: u32, s: String| s.replace(r#""tid":1"#, &format!(r#""tid":{tid}"#));
        let l = [
            launch(0, 1.0, "k", "0x0"),
            // thread 2's launch is in flight (5..25 µs) when thread 1's sync begins (10 µs)
            on(2, launch(5_000, 20.0, "k", "0x0")),
            sync(10_000, 30.0, "0x0"),
            r#"{"ts":90000,"pid":1,"tid":1,"type":"process","op":"exit","name":"process"}"#.to_string(),
        ];
        let t = parse_str("mt", &l.join("\n")).unwrap();
        let got: Vec<(u64, u64, u32)> =
            bound(&t).streams[0].intervals.iter().map(|i| (i.start, i.end, i.ops)).collect();
        assert_eq!(got, [(0, 40_000, 1), (5_000, 90_000, 1)]);
    }

    #[test]
    fn measured_and_linking() {
        let l = [
            launch(1000, 1.0, "kA", "0x0"),
            launch(2000, 1.0, "kB", "0x0"),
            r#"{"ts":2500,"end_ts":3000,"pid":1,"type":"gpu","op":"kernel","name":"kA","device":0,"stream_id":7,"stream":"0x0"}"#.to_string(),
            r#"{"ts":3000,"end_ts":3500,"pid":1,"type":"gpu","op":"kernel","name":"kB","device":0,"stream_id":7,"stream":"0x0"}"#.to_string(),
        ];
        let t = parse_str("m", &l.join("\n")).unwrap();
        let tl = gpu_intervals(&t, None);
        assert_eq!(tl.source, Source::Measured);
        assert_eq!(tl.streams.len(), 1);
        assert_eq!(tl.streams[0].label, "stream 0x0 (legacy default) (id 7)");
        assert_eq!(link_measured_to_launches(&t, &tl), [(0, 0, 0), (0, 1, 1)]);
    }
}
