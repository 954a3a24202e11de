//! `InitializeInjection` and the CUPTI callbacks.
//!
//! Life of the library in a traced process:
//! 1. cuInit → the driver dlopens us (CUDA_INJECTION64_PATH) and calls
//!    `InitializeInjection` once.
//! 2. We open the FIFO ($TRACER_CUPTI_FIFO), load libcupti, register a
//!    CLOCK_MONOTONIC timestamp callback (else measure an offset), register
//!    buffer callbacks, subscribe to resource callbacks (context and stream
//!    creation → stream id to CUstream handle), enable CONCURRENT_KERNEL,
//!    MEMCPY, MEMSET, start the flush thread and register an atexit handler.
//! 3. CUPTI hands us buffers (`buffer_completed`): full ones from its own
//!    worker thread, and every completed record from our flush thread, which
//!    calls `cuptiActivityFlushAll(0)` every TRACER_CUPTI_FLUSH_MS (default
//!    100; 0: no flush thread). Each record becomes a wire message.
//! 4. With TRACER_CUPTI_SAMPLE=WINDOW/PERIOD (`--gpu-sample`) a sampling
//!    thread turns the three kinds off after WINDOW ms and on again at the
//!    next PERIOD, and queues a `Window` message per window (crate::sample).
//! 5. exit(): the atexit handler stops the flush thread, forces a flush and
//!    sends `Bye`. A process that execs or `_exit`s skips atexit: what was not
//!    flushed yet (about one flush period) is lost, and the tracer's footer
//!    lists that process as not flushed.
//!
//! Locks: `out` (the sink) is taken only on the thread CUPTI delivers a
//! buffer on and at exit, never inside CUPTI's resource callbacks, which
//! queue stream ids in `streams` (a lock never held while calling CUPTI), so
//! no CUPTI-internal lock can be waited for while `out` is held elsewhere.
use std::collections::{HashMap, HashSet};
use std::ffi::{CStr, c_int, c_void};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock, TryLockError};

use crate::cupti::{self, Api, measure_offset, monotonic_ns};
use crate::demand::Demand;
use crate::driver_counts;
use crate::records::{self, kind};
use crate::sample::{self, Adaptive, Plan, Spec};
use crate::sink::Sink;
use crate::wire::{ClockMethod, Msg};

const BUFFER_SIZE: usize = 4 << 20;
/// Default period of the flush thread (TRACER_CUPTI_FLUSH_MS).
const FLUSH_PERIOD_MS: u64 = 100;

struct Out {
    sink: Sink,
    /// Kernel name → id, per process.
    names: HashMap<Vec<u8>, u32>,
    records: u64,
    buffers: u64,
    dropped_cupti: u64,
    /// Adaptive windows: keys of the work already known (the durations
    /// library's, then every record's of this process), and the library's alone.
    known: HashSet<u64>,
    library: HashSet<u64>,
}

struct State {
    api: Api,
    pid: u32,
    clock: ClockMethod,
    offset_ns: AtomicI64,
    out: Mutex<Out>,
    /// Stream messages from the resource callback and sampling windows,
    /// sent before the next records.
    streams: Mutex<Vec<Msg>>,
    /// Held by the flush and sampling threads while they are in CUPTI; `true`
    /// once exit began.
    flush_gate: Mutex<bool>,
    /// Sampling: when the open window started (None while records are off).
    window: Mutex<Option<u64>>,
    /// How records are switched (None: on all the time).
    plan: Option<Plan>,
    /// CUPTI is attached (false between adaptive windows, when no CUPTI
    /// function may be called: any call would attach it again).
    attached: AtomicBool,
    /// Adaptive windows: the next driver call's return detaches CUPTI.
    detach_wanted: AtomicBool,
    /// TRACER_CUPTI_DETACH_AT=any: detach at the return of any driver call ([`detach_point`]).
    detach_anywhere: bool,
    /// The callback subscriber (0: none), whose driver-API callbacks detach CUPTI.
    subscriber: AtomicUsize,
    /// Hardware timestamps are to be asked for when the driver has initialised
    /// (CUPTI's CU_INIT_FINISHED resource callback).
    hw_wanted: AtomicBool,
    /// The open window's records, new keys and attach time; how often it
    /// was extended, whether it was demanded, the gap planned before it;
    /// the last window's detach time.
    win_records: AtomicU64,
    win_new: AtomicU64,
    /// Records of the open window whose work the durations library already had.
    win_library: AtomicU64,
    win_attach_ns: AtomicU64,
    win_extensions: AtomicU64,
    win_demanded: AtomicBool,
    win_planned_gap_ns: AtomicU64,
    win_detach_ns: AtomicU64,
    /// The open window's launches ([`sample::launch_weight`], counted at their returns while
    /// `win_counting`), and the cap that ends it early ([`sample::WINDOW_LAUNCHES`]; 0: none).
    win_launches: AtomicU64,
    win_counting: AtomicBool,
    window_cap: u64,
    /// How long the window thread took to hand the ended window's completed buffers over
    /// (charged to its detach), and whether the window ended because it was full.
    win_handover_ns: AtomicU64,
    win_full: AtomicBool,
    /// Adaptive windows: what the window thread is doing ([`phase`]) and since when; the
    /// tracer's demands it saw and when the last one was seen (said at exit, so that a demand
    /// that opened no window shows where it waited).
    win_phase: AtomicU64,
    win_phase_since: AtomicU64,
    demands_seen: AtomicU64,
    last_demand_ns: AtomicU64,
}

/// What the adaptive window thread is doing (`State::win_phase`).
mod phase {
    pub const WINDOW: u64 = 0;
    pub const DETACH_WAIT: u64 = 1;
    pub const GAP: u64 = 2;
    pub const BUDGET_WAIT: u64 = 3;
    pub const ATTACHING: u64 = 4;
    pub const ENDED: u64 = 5;

    pub fn name(p: u64) -> &'static str {
        match p {
            WINDOW => "in a window",
            DETACH_WAIT => "waiting for a driver call's return to detach",
            GAP => "in the gap between windows (waiting for its end or a demand)",
            BUDGET_WAIT => "waiting for the budget after a demand",
            ATTACHING => "attaching CUPTI",
            _ => "ended",
        }
    }
}

fn set_phase(st: &State, p: u64) {
    st.win_phase_since.store(monotonic_ns(), Ordering::Release);
    st.win_phase.store(p, Ordering::Release);
}

/// The activity kinds measured, in the order they are enabled.
const KINDS: [(u32, &str); 3] =
    [(kind::CONCURRENT_KERNEL, "CONCURRENT_KERNEL"), (kind::MEMCPY, "MEMCPY"), (kind::MEMSET, "MEMSET")];

static STATE: OnceLock<State> = OnceLock::new();

fn pid() -> u32 {
    // SAFETY: getpid has no preconditions.
    unsafe { libc::getpid() as u32 }
}

fn lock() -> Option<std::sync::MutexGuard<'static, Out>> {
    let st = STATE.get()?;
    if st.pid != pid() {
        return None; // a forked child: not ours to report
    }
    Some(st.out.lock().unwrap_or_else(|e| e.into_inner()))
}

/// Called by the CUDA driver during cuInit.
///
/// # Safety
/// Called once by the CUDA driver; nothing to uphold for the caller.
#[unsafe(no_mangle)]
pub extern "C" fn InitializeInjection() -> c_int {
    std::panic::catch_unwind(init).unwrap_or(0)
}

fn init() -> c_int {
    if STATE.get().is_some() {
        return 1;
    }
    let Ok(path) = std::env::var("TRACER_CUPTI_FIFO") else {
        eprintln!("tracer-cupti: TRACER_CUPTI_FIFO is not set; run the program under `tracer record --gpu-timestamps`");
        return 0;
    };
    let mut sink = match Sink::open(&path) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("tracer-cupti: {e}; GPU timestamps are off for this process");
            return 0;
        }
    };
    let me = pid();
    let fail = |sink: &mut Sink, text: String| {
        sink.push(me, &Msg::Error { text });
        sink.flush();
        0
    };
    let api = match cupti::load(std::env::var("TRACER_CUPTI_LIB").ok().as_deref()) {
        Ok(a) => a,
        Err(e) => return fail(&mut sink, e),
    };
    let mut version = 0u32;
    // SAFETY: CUPTI writes one u32.
    unsafe { (api.get_version)(&mut version) };
    // The timestamp callback must come before any activity is enabled.
    let clock = match api.register_timestamp {
        // SAFETY: registering a plain extern "C" fn with no state.
        Some(f) if unsafe { f(monotonic_ns) } == 0 => ClockMethod::Callback,
        _ => ClockMethod::Offset,
    };
    let offset = if clock == ClockMethod::Offset { measure_offset(&api) } else { 0 };
    let plan = match std::env::var(sample::ENV).ok().map(|v| Plan::parse(&v)) {
        Some(Ok(Plan::Duty(s))) if s.always_on() => Ok(None),
        Some(Ok(p)) => Ok(Some(p)),
        Some(Err(e)) => Err(format!("sampling off ({} {e}): measuring all the time", sample::ENV)),
        None => Ok(None),
    };
    let mut warnings = vec![];
    let plan = plan.unwrap_or_else(|w| {
        warnings.push(w);
        None
    });
    let plan = match plan {
        Some(_) if api.activity_disable.is_none() => {
            warnings.push("sampling off (this CUPTI has no cuptiActivityDisable): measuring all the time".into());
            None
        }
        // --check-coverage counts every driver call with CUPTI attached all the time
        Some(Plan::Adaptive(_)) if std::env::var_os(driver_counts::ENV).is_some() => None,
        p => p,
    };
    let known = match plan {
        Some(Plan::Adaptive(_)) => std::env::var_os(sample::KNOWN_ENV)
            .and_then(|p| std::fs::read_to_string(p).ok())
            .map(|t| sample::parse_known(&t))
            .unwrap_or_default(),
        _ => HashSet::new(),
    };
    let library = known.clone();
    let out = Out { sink, names: HashMap::new(), records: 0, buffers: 0, dropped_cupti: 0, known, library };
    let _ = STATE.set(State {
        api,
        pid: me,
        clock,
        offset_ns: AtomicI64::new(offset),
        out: Mutex::new(out),
        streams: Mutex::new(Vec::new()),
        flush_gate: Mutex::new(false),
        window: Mutex::new(None),
        plan,
        attached: AtomicBool::new(false),
        detach_wanted: AtomicBool::new(false),
        detach_anywhere: std::env::var("TRACER_CUPTI_DETACH_AT").is_ok_and(|v| v == "any"),
        subscriber: AtomicUsize::new(0),
        hw_wanted: AtomicBool::new(false),
        win_records: AtomicU64::new(0),
        win_new: AtomicU64::new(0),
        win_library: AtomicU64::new(0),
        win_attach_ns: AtomicU64::new(0),
        win_extensions: AtomicU64::new(0),
        win_demanded: AtomicBool::new(false),
        win_planned_gap_ns: AtomicU64::new(0),
        win_detach_ns: AtomicU64::new(0),
        win_launches: AtomicU64::new(0),
        win_counting: AtomicBool::new(matches!(plan, Some(Plan::Adaptive(_)))),
        window_cap: sample::window_launches(std::env::var(sample::WINDOW_LAUNCHES_ENV).ok().as_deref()),
        win_handover_ns: AtomicU64::new(0),
        win_full: AtomicBool::new(false),
        win_phase: AtomicU64::new(phase::WINDOW),
        win_phase_since: AtomicU64::new(monotonic_ns()),
        demands_seen: AtomicU64::new(0),
        last_demand_ns: AtomicU64::new(0),
    });
    let Some(st) = STATE.get() else { return 0 };
    let mut notes = vec![];
    if let Err(text) = attach(st, true, &mut warnings, &mut notes) {
        let mut o = st.out.lock().unwrap_or_else(|e| e.into_inner());
        o.sink.push(me, &Msg::Error { text });
        o.sink.flush();
        return 0;
    }
    // the first sampling window opens now, after the records were enabled
    let opened = monotonic_ns();
    if plan.is_some() {
        *st.window.lock().unwrap_or_else(|e| e.into_inner()) = Some(opened);
    }
    let flush_ms = flush_period_ms(std::env::var("TRACER_CUPTI_FLUSH_MS").ok().as_deref());
    {
        let mut o = st.out.lock().unwrap_or_else(|e| e.into_inner());
        let cupti_path = st.api.path.clone();
        o.sink.push(me, &Msg::Hello { cupti_version: version, clock, offset_ns: offset, cupti_path });
        for w in warnings {
            o.sink.push(me, &Msg::Error { text: format!("warning: {w}") });
        }
        for text in notes {
            o.sink.push(me, &Msg::Note { text });
        }
        o.sink.flush();
    }
    // SAFETY: registering a plain extern "C" fn.
    unsafe { libc::atexit(at_exit) };
    if flush_ms > 0 {
        let _ = std::thread::Builder::new().name("tracer-cupti".into()).spawn(move || flush_loop(flush_ms));
    }
    match plan {
        Some(Plan::Duty(spec)) => {
            let _ =
                std::thread::Builder::new().name("tracer-cupti-sample".into()).spawn(move || sample_loop(spec, opened));
        }
        Some(Plan::Adaptive(a)) => {
            let _ =
                std::thread::Builder::new().name("tracer-cupti-sample".into()).spawn(move || adaptive_loop(a, opened));
        }
        None => {}
    }
    1
}

/// Attaches CUPTI: the timestamp callback (at the first attach: `clock`
/// was decided by the caller), the buffer callbacks, the subscriber
/// (resource callbacks for the stream handles; driver-API callbacks for
/// `--check-coverage`'s counts and for adaptive windows' detach), hardware
/// timestamps where CUPTI has them, and the three activity kinds. A refused
/// kernel kind is fatal (Err), the rest are warnings.
fn attach(st: &State, first: bool, warnings: &mut Vec<String>, notes: &mut Vec<String>) -> Result<(), String> {
    let api = &st.api;
    if !first
        && st.clock == ClockMethod::Callback
        && let Some(f) = api.register_timestamp
    {
        // SAFETY: registering a plain extern "C" fn with no state.
        unsafe { f(monotonic_ns) };
    }
    // SAFETY: registering our extern "C" callbacks.
    let r = unsafe { (api.register_callbacks)(cupti::buffer_requested::<BUFFER_SIZE>, buffer_completed) };
    if r != 0 {
        return Err(format!("cuptiActivityRegisterCallbacks failed: {}", api.err(r)));
    }
    let adaptive = matches!(st.plan, Some(Plan::Adaptive(_)));
    match (api.subscribe, api.enable_domain, api.get_stream_id_ex) {
        (Some(sub), Some(en), Some(_)) => {
            let mut h: *mut c_void = std::ptr::null_mut();
            // SAFETY: CUPTI writes the subscriber handle.
            let r = unsafe { sub(&mut h, resource_callback, std::ptr::null_mut()) };
            // SAFETY: h is the handle just returned.
            let r = if r == 0 { unsafe { en(1, h, cupti::DOMAIN_RESOURCE) } } else { r };
            if r != 0 {
                warnings.push(format!(
                    "stream handles unknown (lines get \"stream\": null): CUPTI resource callbacks refused: {} \
                     (another CUPTI subscriber in this process, e.g. torch.profiler?)",
                    api.err(r)
                ));
            } else {
                st.subscriber.store(h as usize, Ordering::Release);
                let counts = std::env::var_os(driver_counts::ENV).is_some();
                if counts || adaptive {
                    // --check-coverage: every driver call counted by CUPTI (driver_counts.rs);
                    // adaptive windows: the first driver call to return after a window detaches CUPTI
                    // SAFETY: h is the live subscriber handle.
                    let r = unsafe { en(1, h, driver_counts::DOMAIN_DRIVER_API) };
                    if r != 0 && counts {
                        warnings.push(format!(
                            "driver call counts off: CUPTI driver-API callbacks refused: {}",
                            api.err(r)
                        ));
                    } else if r != 0 {
                        st.subscriber.store(0, Ordering::Release);
                    }
                }
            }
        }
        _ => warnings.push("stream handles unknown: this CUPTI lacks cuptiSubscribe/cuptiGetStreamIdEx".into()),
    }
    for (k, name) in KINDS {
        // SAFETY: plain CUPTI call.
        let r = unsafe { (api.activity_enable)(k) };
        if r != 0 {
            let text = format!("cuptiActivityEnable(CUPTI_ACTIVITY_KIND_{name}) failed: {}", api.err(r));
            if k == kind::CONCURRENT_KERNEL {
                return Err(text);
            }
            warnings.push(text);
        }
    }
    // Hardware timestamps (CUPTI's HES, Blackwell on): CUPTI takes them after the driver's
    // initialisation and before the first context, so they are asked for in the resource
    // callback at CU_INIT_FINISHED ([`ask_hw_trace`]); asked here, inside cuInit, CUPTI 13.0 on
    // an H200 answered CUPTI_ERROR_NOT_INITIALIZED, before the kinds and after them. They
    // support no late attach and cannot be switched off, so adaptive windows, which attach
    // CUPTI again after each detach, do not ask.
    if first {
        match (adaptive, api.enable_hw_trace) {
            (true, _) => notes.push(
                "hw_trace: not asked: adaptive windows attach CUPTI again after each detach, and hardware \
                 timestamps allow no late attach: software timestamps"
                    .into(),
            ),
            (false, None) => notes.push(NO_HW_TRACE.into()),
            (false, Some(_)) => st.hw_wanted.store(true, Ordering::Release),
        }
    }
    st.attached.store(true, Ordering::Release);
    Ok(())
}

/// The note of a CUPTI without hardware timestamps.
const NO_HW_TRACE: &str = "hw_trace: this CUPTI has no cuptiActivityEnableHWTrace: software timestamps";

/// Asks CUPTI for hardware kernel timestamps (at CU_INIT_FINISHED, before any context):
/// the note that says what CUPTI answered. Taken, the kinds are switched off and on
/// again so that their records use them.
fn ask_hw_trace(st: &State) -> String {
    let Some(f) = st.api.enable_hw_trace else { return NO_HW_TRACE.into() };
    // SAFETY: plain CUPTI call, attached, in CUPTI's resource callback.
    match unsafe { f(1) } {
        0 => {
            switch_kinds(st, false);
            switch_kinds(st, true);
            "hw_trace: on (hardware kernel timestamps)".to_string()
        }
        r => format!("hw_trace: refused ({}): software timestamps", st.api.err(r)),
    }
}

/// Whether adaptive windows can detach CUPTI: cuptiFinalize exists and the
/// subscriber gets driver-API callbacks (at whose return it is called, as
/// CUPTI's documentation asks). Otherwise the records are switched off
/// between windows with CUPTI left attached, as `--gpu-sample` does.
fn can_detach(st: &State) -> bool {
    st.api.finalize.is_some() && st.subscriber.load(Ordering::Acquire) != 0
}

fn gate(st: &State) -> std::sync::MutexGuard<'_, bool> {
    st.flush_gate.lock().unwrap_or_else(|e| e.into_inner())
}

/// Adaptive windows (crate::sample::Adaptive): a window from `opened` on,
/// extended while it meets new work; then CUPTI is detached at the return
/// of the next driver call ([`try_detach`]), or its records switched off
/// where it cannot be; attached again after the gap.
fn adaptive_loop(a: Adaptive, mut opened: u64) {
    let Some(st) = STATE.get() else { return };
    let ms = 1_000_000u64;
    let mut prev_gap = 0;
    let demand = std::env::var_os(sample::DEMAND_ENV).and_then(|p| Demand::open(std::path::Path::new(&p)));
    let mut asked = demand.as_ref().map_or(0, Demand::counter);
    if demand.as_ref().is_some_and(|d| !d.watched()) {
        let text = format!("inotify refused: the window demand file is read every {} ms", sample::DEMAND_POLL_MS);
        st.streams.lock().unwrap_or_else(|e| e.into_inner()).push(Msg::Note { text });
    }
    // the budget: the windows' cost so far, since the first window opened (cuInit);
    // and the records so far (none yet: nothing learned, the learning share)
    let (since, mut spent, mut seen) = (opened, sample::Spent::default(), 0u64);
    let _ = WINDOW_THREAD.set(std::thread::current());
    loop {
        let mut open_for = a.window_ms;
        let mut checked = 0u64;
        let mut full;
        let new_in_last = loop {
            full = wait_window(st, opened + open_for * ms);
            {
                let stopped = gate(st);
                if *stopped || st.pid != pid() {
                    return;
                }
                // the window's completed records, counted before deciding
                // SAFETY: plain CUPTI call while attached (under the gate).
                unsafe { (st.api.flush_all)(0) };
            }
            let new = st.win_new.load(Ordering::Acquire);
            let in_last = new - checked;
            checked = new;
            // a demanded window waits for the work it was demanded for (the kernel
            // may be named, in a graph or a module, before it runs), up to its longest
            let waiting = st.win_demanded.load(Ordering::Acquire)
                && st.win_records.load(Ordering::Acquire) == 0
                && open_for + a.window_ms <= a.max_window_ms;
            // a window whose launches reached the cap ends now, extended or not
            if full || (!a.extend(open_for, in_last) && !waiting) {
                break in_last;
            }
            open_for += a.window_ms;
            st.win_extensions.fetch_add(1, Ordering::AcqRel);
        };
        set_phase(st, phase::DETACH_WAIT);
        if can_detach(st) {
            // the window's completed buffers handed over on this thread (as the flush thread
            // does), so that the program's thread that detaches CUPTI at its next launch's
            // return has only the last, incomplete one left. The records are switched off
            // there, not here: switched off on this thread while the program launched a
            // graph, the graph's launch failed on the H200 (CUDA_ERROR_LAUNCH_FAILED).
            {
                let stopped = gate(st);
                if *stopped || st.pid != pid() {
                    return;
                }
                let t = monotonic_ns();
                // SAFETY: plain CUPTI call while attached, under the gate; completed
                // buffers go to buffer_completed on this thread.
                unsafe { (st.api.flush_all)(0) };
                st.win_handover_ns.store(monotonic_ns() - t, Ordering::Release);
                st.win_full.store(full, Ordering::Release);
            }
            st.detach_wanted.store(true, Ordering::Release);
            while st.attached.load(Ordering::Acquire) {
                std::thread::sleep(std::time::Duration::from_millis(1));
                if *gate(st) || st.pid != pid() {
                    return;
                }
            }
        } else {
            let stopped = gate(st);
            if *stopped || st.pid != pid() {
                return;
            }
            let end = monotonic_ns();
            st.win_counting.store(false, Ordering::Release);
            switch_kinds(st, false);
            // SAFETY: plain CUPTI call (still attached), under the gate.
            unsafe { (st.api.flush_all)(cupti::FLUSH_FORCED) };
            st.attached.store(false, Ordering::Release);
            close_window(st, end, 0, full);
        }
        let records = st.win_records.load(Ordering::Acquire);
        seen += records;
        let now = monotonic_ns();
        spent.add(
            now,
            sample::window_cost_ns(
                st.win_attach_ns.load(Ordering::Acquire),
                st.win_detach_ns.load(Ordering::Acquire),
                records,
            ),
        );
        // every record of work the library had: this run confirms it, the gaps can be long
        let confirmed = records > 0 && st.win_library.load(Ordering::Acquire) == records;
        let gap = a.next_gap(prev_gap, records, new_in_last, confirmed);
        prev_gap = gap;
        // learning (the window met new work, or no window has seen GPU work yet) may use more of the budget
        let learning = st.win_new.load(Ordering::Acquire) > 0 || seen == 0;
        let share = if learning { sample::LEARNING_SHARE } else { 1 };
        spent.forget_before(now.saturating_sub(a.horizon_ms.saturating_mul(ms)));
        let planned = (gap * ms).max(a.budget_wait(&spent, since, now, share));
        set_phase(st, phase::GAP);
        let demanded = match &demand {
            Some(d) => d.wait(&mut asked, now + planned),
            None => {
                sleep_until(now + planned);
                false
            }
        };
        if demanded {
            st.demands_seen.fetch_add(1, Ordering::AcqRel);
            st.last_demand_ns.store(monotonic_ns(), Ordering::Release);
            set_phase(st, phase::BUDGET_WAIT);
            prev_gap = 0; // asked for: something new is running
            // a demanded window is for new work: it may use the learning share, no more
            let t = monotonic_ns();
            sleep_until(t + a.budget_wait(&spent, since, t, sample::LEARNING_SHARE));
        }
        let stopped = gate(st);
        if *stopped || st.pid != pid() {
            return;
        }
        let t0 = monotonic_ns();
        st.win_records.store(0, Ordering::Release);
        st.win_new.store(0, Ordering::Release);
        st.win_library.store(0, Ordering::Release);
        st.win_extensions.store(0, Ordering::Release);
        st.win_launches.store(0, Ordering::Release);
        st.win_demanded.store(demanded, Ordering::Release);
        st.win_planned_gap_ns.store(planned, Ordering::Release);
        let (mut warnings, mut notes) = (vec![], vec![]);
        set_phase(st, phase::ATTACHING);
        let ok = if can_detach(st) {
            st.subscriber.store(0, Ordering::Release);
            attach(st, false, &mut warnings, &mut notes)
        } else {
            switch_kinds(st, true);
            st.attached.store(true, Ordering::Release);
            Ok(())
        };
        if let Err(text) = ok {
            warnings.push(format!("adaptive windows stop: attaching CUPTI again failed: {text}"));
        }
        if !warnings.is_empty() {
            let mut q = st.streams.lock().unwrap_or_else(|e| e.into_inner());
            q.extend(warnings.into_iter().map(|w| Msg::Error { text: format!("warning: {w}") }));
        }
        if !st.attached.load(Ordering::Acquire) {
            set_phase(st, phase::ENDED);
            return;
        }
        set_phase(st, phase::WINDOW);
        opened = monotonic_ns();
        st.win_counting.store(true, Ordering::Release);
        st.win_attach_ns.store(opened - t0, Ordering::Release);
        *st.window.lock().unwrap_or_else(|e| e.into_inner()) = Some(opened);
        drop(stopped);
    }
}

fn switch_kinds(st: &State, on: bool) {
    for (k, _) in KINDS {
        match (on, st.api.activity_disable) {
            // SAFETY: plain CUPTI calls.
            (true, _) => unsafe {
                (st.api.activity_enable)(k);
            },
            (false, Some(disable)) => unsafe {
                disable(k);
            },
            (false, None) => {}
        }
    }
}

/// The driver function of a driver-API callback (`CUpti_CallbackData.functionName`), if named.
///
/// # Safety
/// `data` is CUPTI's CUpti_CallbackData for the driver-API domain.
unsafe fn callback_function<'a>(data: *const c_void) -> Option<&'a [u8]> {
    #[repr(C)]
    struct CallbackData {
        site: u32,
        function_name: *const std::ffi::c_char,
    }
    // SAFETY: the caller passes CUPTI's callback data; its names are static C strings.
    let p = unsafe { (*(data as *const CallbackData)).function_name };
    (!p.is_null()).then(|| unsafe { std::ffi::CStr::from_ptr(p) }.to_bytes())
}

/// Whether the return of `function` may detach CUPTI: the return of a kernel or graph launch, by
/// which the program's runtime has set itself up (its contexts, modules, export tables), not
/// any driver call. Detaching at an arbitrary return during that set-up (the default recording's
/// first window ends about 100 ms after cuInit when the durations library already knows the
/// program) was followed by a crash of the traced program on the H200 (GPT-2, CUDA 13.0).
/// `anywhere` (TRACER_CUPTI_DETACH_AT=any, for that experiment): every return, as before.
fn detach_point(function: Option<&[u8]>, anywhere: bool) -> bool {
    anywhere || function.is_some_and(|f| f.starts_with(b"cuLaunch") || f.starts_with(b"cuGraphLaunch"))
}

/// At the return of a driver call (CUPTI's driver-API callback, on the
/// program's thread), after an adaptive window's end: its end is stamped,
/// the records switched off, every buffer flushed and CUPTI finalized, so
/// that nothing of CUPTI stays on the launch path until the next window. A
/// flush or attach in progress (the gate taken) leaves it to the next return.
fn try_detach(st: &State) {
    if !st.detach_wanted.load(Ordering::Acquire) {
        return;
    }
    let stopped = match st.flush_gate.try_lock() {
        Ok(g) => g,
        Err(TryLockError::Poisoned(p)) => p.into_inner(),
        Err(TryLockError::WouldBlock) => return,
    };
    if *stopped || st.pid != pid() || !st.detach_wanted.swap(false, Ordering::AcqRel) {
        return;
    }
    let end = monotonic_ns();
    st.win_counting.store(false, Ordering::Release);
    switch_kinds(st, false);
    // SAFETY: plain CUPTI calls while attached, at an API exit as CUPTI's
    // documentation asks for cuptiFinalize; what the window thread's flush
    // left (the incomplete buffer) is delivered to buffer_completed on this
    // thread.
    unsafe {
        (st.api.flush_all)(cupti::FLUSH_FORCED);
        if let Some(f) = st.api.finalize {
            f();
        }
    }
    st.attached.store(false, Ordering::Release);
    let handover = st.win_handover_ns.swap(0, Ordering::AcqRel);
    let full = st.win_full.swap(false, Ordering::AcqRel);
    close_window(st, end, handover + (monotonic_ns() - end), full);
    drop(stopped);
}

/// The adaptive window thread, woken early when a window's launches reach the cap.
static WINDOW_THREAD: OnceLock<std::thread::Thread> = OnceLock::new();

/// Sleeps until CLOCK_MONOTONIC reaches `until` (ns), or until the open window's launches
/// reach the cap ([`sample::WINDOW_LAUNCHES`]): whether they did.
fn wait_window(st: &State, until: u64) -> bool {
    loop {
        if st.window_cap > 0 && st.win_launches.load(Ordering::Acquire) >= st.window_cap {
            return true;
        }
        let now = monotonic_ns();
        if now >= until {
            return false;
        }
        std::thread::park_timeout(std::time::Duration::from_nanos(until - now));
    }
}

/// At the return of a driver call while a window is open: its launches counted, the window
/// thread woken once they reach the cap.
fn count_launch(st: &State, function: Option<&[u8]>) {
    let w = function.map_or(0, sample::launch_weight);
    if w == 0 || st.window_cap == 0 {
        return;
    }
    let n = st.win_launches.fetch_add(w, Ordering::AcqRel) + w;
    if n >= st.window_cap
        && n - w < st.window_cap
        && let Some(t) = WINDOW_THREAD.get()
    {
        t.unpark();
    }
}

/// Sleeps until CLOCK_MONOTONIC reaches `at` (ns).
fn sleep_until(at: u64) {
    let now = monotonic_ns();
    if at > now {
        std::thread::sleep(std::time::Duration::from_nanos(at - now));
    }
}

/// The sampling duty cycle: records on for `window_ms` from `opened` (the
/// first window for at least `lead_ms`), off until `period_ms` after the
/// window opened (after the lead-in: `period_ms − window_ms` after it
/// closed), on again, … Each window's end is stamped before the kinds are
/// disabled and the next one's start after they are enabled, so a launch
/// whose entry falls inside a window has its record.
fn sample_loop(spec: Spec, mut opened: u64) {
    let Some(st) = STATE.get() else { return };
    let (window, period) = (spec.window_ms * 1_000_000, spec.period_ms * 1_000_000);
    let mut this_window = spec.first_window_ms() * 1_000_000;
    loop {
        sleep_until(opened + this_window);
        {
            let stopped = gate(st);
            if *stopped || st.pid != pid() {
                return;
            }
            let end = monotonic_ns();
            if let Some(disable) = st.api.activity_disable {
                for (k, _) in KINDS {
                    // SAFETY: plain CUPTI call.
                    unsafe { disable(k) };
                }
            }
            close_window(st, end, 0, false);
        }
        sleep_until(opened + this_window + (period - window));
        this_window = window;
        let stopped = gate(st);
        if *stopped || st.pid != pid() {
            return;
        }
        for (k, _) in KINDS {
            // SAFETY: plain CUPTI call.
            unsafe { (st.api.activity_enable)(k) };
        }
        opened = monotonic_ns();
        *st.window.lock().unwrap_or_else(|e| e.into_inner()) = Some(opened);
    }
}

/// Queues the open window, if any, as ending at `end`, with what it cost
/// and held (adaptive windows; zeros for duty-cycle ones).
fn close_window(st: &State, end: u64, detach_ns: u64, full: bool) {
    if let Some(start) = st.window.lock().unwrap_or_else(|e| e.into_inner()).take() {
        let adaptive = matches!(st.plan, Some(Plan::Adaptive(_)));
        let w = Msg::Window {
            start,
            end,
            attach_ns: st.win_attach_ns.load(Ordering::Acquire),
            detach_ns,
            records: if adaptive { st.win_records.load(Ordering::Acquire) } else { 0 },
            new_keys: if adaptive { st.win_new.load(Ordering::Acquire) } else { 0 },
            extensions: st.win_extensions.load(Ordering::Acquire),
            demanded: st.win_demanded.load(Ordering::Acquire),
            planned_gap_ns: st.win_planned_gap_ns.load(Ordering::Acquire),
            launches: if adaptive { st.win_launches.load(Ordering::Acquire) } else { 0 },
            full,
        };
        st.win_detach_ns.store(detach_ns, Ordering::Release);
        st.streams.lock().unwrap_or_else(|e| e.into_inner()).push(w);
    }
}

/// TRACER_CUPTI_FLUSH_MS: milliseconds between flushes, 0 for none.
fn flush_period_ms(v: Option<&str>) -> u64 {
    v.and_then(|s| s.trim().parse().ok()).unwrap_or(FLUSH_PERIOD_MS)
}

/// Hands completed records over while the program runs ("default flush can
/// be done at a regular interval in a separate thread", CUPTI's docs): the
/// tracer gets them within about a period, and a process that execs or
/// crashes loses at most that much. CUPTI's own worker only returns full
/// buffers.
fn flush_loop(period_ms: u64) {
    let Some(st) = STATE.get() else { return };
    loop {
        std::thread::sleep(std::time::Duration::from_millis(period_ms));
        let stopped = gate(st);
        if *stopped || st.pid != pid() {
            return;
        }
        if !st.attached.load(Ordering::Acquire) || st.detach_wanted.load(Ordering::Acquire) {
            // between adaptive windows a CUPTI call would attach it again; a window that
            // ended had its records handed over by the window thread
            continue;
        }
        // SAFETY: plain CUPTI call; completed buffers go to buffer_completed
        // on this thread. Exit waits for the gate, so CUDA is not torn down
        // under this call.
        unsafe { (st.api.flush_all)(0) };
        drop(stopped);
    }
}

/// Adaptive windows at exit: where the window thread was and since when, and the demands it saw.
fn exit_note(st: &State, now: u64) -> String {
    let ago = |t: u64| format!("{:.1} ms before exit", now.saturating_sub(t) as f64 / 1e6);
    let p = st.win_phase.load(Ordering::Acquire);
    let mut text = format!(
        "windows at exit: {} since {}; demands seen: {}",
        phase::name(p),
        ago(st.win_phase_since.load(Ordering::Acquire)),
        st.demands_seen.load(Ordering::Acquire)
    );
    if st.demands_seen.load(Ordering::Acquire) > 0 {
        text += &format!(", the last {}", ago(st.last_demand_ns.load(Ordering::Acquire)));
    }
    text
}

extern "C" fn at_exit() {
    let _ = std::panic::catch_unwind(|| {
        let Some(st) = STATE.get() else { return };
        if st.pid != pid() {
            return;
        }
        // Stop the flush and sampling threads (waiting for a flush or switch in progress).
        *gate(st) = true;
        let now = monotonic_ns();
        if st.hw_wanted.swap(false, Ordering::AcqRel) {
            let text = "hw_trace: not asked: CUPTI made no callback when the driver had initialised (no \
                        resource callbacks): software timestamps"
                .to_string();
            st.streams.lock().unwrap_or_else(|e| e.into_inner()).push(Msg::Note { text });
        }
        if matches!(st.plan, Some(Plan::Adaptive(_))) {
            let text = exit_note(st, now);
            st.streams.lock().unwrap_or_else(|e| e.into_inner()).push(Msg::Note { text });
        }
        close_window(st, now, 0, false);
        if st.attached.load(Ordering::Acquire) {
            // SAFETY: plain CUPTI call; delivers the last buffers to buffer_completed.
            unsafe { (st.api.flush_all)(cupti::FLUSH_FORCED) };
        }
        if let Some(mut o) = lock() {
            send_streams(st, &mut o);
            let bye = Msg::Bye {
                records: o.records,
                buffers: o.buffers,
                dropped_cupti: o.dropped_cupti,
                dropped_sink: o.sink.dropped,
            };
            o.sink.push(st.pid, &bye);
            o.sink.flush();
        }
    });
}

extern "C" fn buffer_completed(ctx: *mut c_void, stream: u32, buffer: *mut u8, size: usize, valid: usize) {
    let _ = std::panic::catch_unwind(|| {
        if let Some(st) = STATE.get() {
            drain(st, ctx, stream, buffer, valid);
        }
    });
    // SAFETY: a buffer of ours, `size` bytes (buffer_requested).
    unsafe { cupti::free_buffer(buffer, size) }
}

fn drain(st: &State, ctx: *mut c_void, stream: u32, buffer: *mut u8, valid: usize) {
    let Some(mut o) = lock() else { return };
    if st.clock == ClockMethod::Offset {
        st.offset_ns.store(measure_offset(&st.api), Ordering::Relaxed);
    }
    let offset = st.offset_ns.load(Ordering::Relaxed);
    o.buffers += 1;
    send_streams(st, &mut o);
    let adaptive = matches!(st.plan, Some(Plan::Adaptive(_)));
    let on_record = |d: records::Decoded| {
        let mut msg = d.msg;
        if let Msg::Kernel { name_id, .. } = &mut msg {
            *name_id = intern(&mut o, st.pid, d.name_ptr);
        }
        if adaptive {
            st.win_records.fetch_add(1, Ordering::AcqRel);
            if let Some(k) = key(&msg, d.name_ptr) {
                if o.library.contains(&k) {
                    st.win_library.fetch_add(1, Ordering::AcqRel);
                }
                if o.known.insert(k) {
                    st.win_new.fetch_add(1, Ordering::AcqRel);
                }
            }
        }
        o.records += 1;
        o.sink.push(st.pid, &msg);
    };
    // SAFETY: CUPTI completed `valid` bytes of records in `buffer`.
    unsafe { cupti::walk(&st.api, buffer, valid, offset, on_record) };
    let mut dropped = 0usize;
    // SAFETY: CUPTI writes one usize.
    if unsafe { (st.api.get_num_dropped)(ctx, stream, &mut dropped) } == 0 && dropped > 0 {
        o.dropped_cupti += dropped as u64;
        let context = context_id(&st.api, ctx);
        o.sink.push(st.pid, &Msg::Dropped { context, stream, count: dropped as u64 });
    }
    o.sink.flush();
}

/// What a record is known by in adaptive windows (crate::sample::kernel_key, copy_key).
fn key(m: &Msg, name_ptr: u64) -> Option<u64> {
    match m {
        Msg::Kernel { grid, block, shared_mem, .. } => {
            if name_ptr == 0 {
                return None;
            }
            // SAFETY: CUPTI's kernel name, NUL-terminated, alive while the record is.
            let name = unsafe { CStr::from_ptr(name_ptr as *const std::ffi::c_char) }.to_bytes();
            let u = |v: &[i32; 3]| v.map(|x| x as u32);
            Some(sample::kernel_key(name, u(grid), u(block), *shared_mem as u32))
        }
        Msg::Memcpy { bytes, copy_kind, .. } => Some(sample::copy_key(records::copy_kind(*copy_kind).1, *bytes)),
        Msg::Memset { bytes, .. } => Some(sample::copy_key("memset", *bytes)),
        _ => None,
    }
}

/// Sends the stream ids learnt since the last call (before any record that
/// could use them).
fn send_streams(st: &State, o: &mut Out) {
    let pending = std::mem::take(&mut *st.streams.lock().unwrap_or_else(|e| e.into_inner()));
    for m in &pending {
        o.sink.push(st.pid, m);
    }
}

/// Id of a kernel name, sending the name the first time (0: no name).
fn intern(o: &mut Out, pid: u32, ptr: u64) -> u32 {
    if ptr == 0 {
        return 0;
    }
    // SAFETY: CUPTI's kernel name, NUL-terminated, alive while the record is.
    let name = unsafe { CStr::from_ptr(ptr as *const std::ffi::c_char) }.to_bytes();
    if let Some(&id) = o.names.get(name) {
        return id;
    }
    let id = o.names.len() as u32 + 1;
    o.names.insert(name.to_vec(), id);
    o.sink.push(pid, &Msg::Name { id, name: String::from_utf8_lossy(name).into_owned() });
    id
}

fn context_id(api: &Api, ctx: *mut c_void) -> u32 {
    let mut id = u32::MAX;
    if let Some(f) = api.get_context_id
        && !ctx.is_null()
    {
        // SAFETY: ctx is a live context handed to us by CUPTI.
        unsafe { f(ctx, &mut id) };
    }
    id
}

/// CUpti_ResourceData: the context, then the stream (a union with other handles).
#[repr(C)]
struct ResourceData {
    context: *mut c_void,
    stream: *mut c_void,
    descriptor: *mut c_void,
}

/// Stream (and context) creation: learn which CUPTI stream id each CUstream
/// handle has. One call per stream/context created, nothing per launch.
/// `--check-coverage`: the driver call counts are written when this library is unloaded
/// at exit (its destructor runs from the loader's fini, after every atexit handler), so
/// that the runtime's own teardown calls (cuLibraryUnload, cuDevicePrimaryCtxRelease),
/// made in its atexit handlers after ours, are counted too.
extern "C" fn write_driver_counts() {
    let _ = std::panic::catch_unwind(|| {
        if let Some(st) = STATE.get()
            && st.pid == pid()
        {
            driver_counts::write(st.pid);
        }
    });
}

#[used]
#[unsafe(link_section = ".fini_array")]
static WRITE_DRIVER_COUNTS: extern "C" fn() = write_driver_counts;

extern "C" fn resource_callback(_: *mut c_void, domain: u32, cbid: u32, data: *const c_void) {
    if domain == driver_counts::DOMAIN_DRIVER_API {
        // SAFETY: CUPTI's callback data of the driver-API domain.
        unsafe { driver_counts::count(cbid, data) };
        // SAFETY: CUpti_CallbackData starts with its u32 site.
        if !data.is_null() && unsafe { *(data as *const u32) } == cupti::API_EXIT {
            let _ = std::panic::catch_unwind(|| {
                let Some(st) = STATE.get() else { return };
                let (counting, detach) =
                    (st.win_counting.load(Ordering::Acquire), st.detach_wanted.load(Ordering::Acquire));
                if !counting && !detach {
                    return;
                }
                // SAFETY: the driver-API domain's CUpti_CallbackData.
                let function = unsafe { callback_function(data) };
                // a launch made while the records were on counts, the one whose return detaches too
                if counting {
                    count_launch(st, function);
                }
                if detach && detach_point(function, st.detach_anywhere) {
                    try_detach(st);
                }
            });
        }
        return;
    }
    let _ = std::panic::catch_unwind(|| {
        if domain != cupti::DOMAIN_RESOURCE {
            return;
        }
        let Some(st) = STATE.get() else { return };
        // (its resource data has no context yet: not needed)
        if cbid == cupti::CBID_CU_INIT_FINISHED {
            if st.pid == pid() && st.hw_wanted.swap(false, Ordering::AcqRel) {
                let text = ask_hw_trace(st);
                // sent at once, as the notes of the first attach are (still inside cuInit)
                if let Some(mut o) = lock() {
                    o.sink.push(st.pid, &Msg::Note { text });
                    o.sink.flush();
                }
            }
            return;
        }
        if data.is_null() {
            return;
        }
        let Some(get_id) = st.api.get_stream_id_ex else { return };
        // SAFETY: for the resource domain, CUPTI passes a CUpti_ResourceData.
        let d = unsafe { &*(data as *const ResourceData) };
        let handle = match cbid {
            cupti::CBID_CONTEXT_CREATED => std::ptr::null_mut(), // its legacy default stream
            cupti::CBID_STREAM_CREATED => d.stream,
            _ => return,
        };
        let mut id = 0u32;
        // SAFETY: live context and stream from CUPTI; CUPTI writes one u32.
        if unsafe { get_id(d.context, handle, 0, &mut id) } != 0 {
            return;
        }
        let context = context_id(&st.api, d.context);
        if st.pid == pid() {
            let m = Msg::Stream { context, stream: id, handle: handle as u64 };
            st.streams.lock().unwrap_or_else(|e| e.into_inner()).push(m);
        }
    });
}

#[cfg(test)]
mod tests {
    #[test]
    fn cupti_detaches_at_the_return_of_launches_only() {
        use super::detach_point;
        for f in ["cuLaunchKernel", "cuLaunchKernelEx_ptsz", "cuLaunchCooperativeKernel", "cuGraphLaunch"] {
            assert!(detach_point(Some(f.as_bytes()), false), "{f}");
        }
        for f in ["cuGetExportTable", "cuGetProcAddress_v2", "cuModuleLoadData", "cuStreamSynchronize", "cuInit"] {
            assert!(!detach_point(Some(f.as_bytes()), false), "{f}");
            assert!(detach_point(Some(f.as_bytes()), true), "{f}");
        }
        assert!(!detach_point(None, false));
    }

    #[test]
    fn flush_period_from_the_environment() {
        assert_eq!(super::flush_period_ms(None), 100);
        assert_eq!(super::flush_period_ms(Some("0")), 0);
        assert_eq!(super::flush_period_ms(Some(" 25 ")), 25);
        assert_eq!(super::flush_period_ms(Some("soon")), 100);
    }
}
