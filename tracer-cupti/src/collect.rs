//! In-process collection of this process's own GPU activity: the `replay`
//! binary times the kernels, copies and sets it replays with CUPTI, the same
//! clock and the same measure as `tracer record --gpu-timestamps` used for
//! the recording (no FIFO, no injection: the records stay in memory until
//! [`Collector::take`]).
//!
//! One collector per process (CUPTI's activity callbacks are global). Start
//! it before the first CUDA call so that every context is covered.
//! Timestamps are CLOCK_MONOTONIC ns ([`monotonic_ns`]): CUPTI's timestamp
//! callback when it has one, else its own clock shifted by an offset measured
//! at each delivery.
use std::collections::HashMap;
use std::ffi::{CStr, c_void};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

pub use crate::cupti::monotonic_ns;
use crate::cupti::{self, Api, measure_offset};
use crate::records::{self, kind};
use crate::wire::Msg;

const BUFFER_SIZE: usize = 8 << 20;

/// What a record measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    Kernel,
    Memcpy,
    Memset,
}

/// One CUPTI activity record, decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Activity {
    pub op: Op,
    /// CLOCK_MONOTONIC ns; 0 when CUPTI had no timestamp.
    pub start: u64,
    pub end: u64,
    pub device: u32,
    pub context: u32,
    /// CUPTI's stream id.
    pub stream: u32,
    pub correlation: u32,
    /// Kernels: the (mangled) name.
    pub name: Option<Arc<str>>,
    pub grid: [i32; 3],
    pub block: [i32; 3],
    pub shared_mem: i32,
    /// Copies and sets: bytes.
    pub bytes: u64,
    /// Copies: CUpti_ActivityMemcpyKind (1 HtoD, 2 DtoH, 8 DtoD, ...).
    pub copy_kind: u8,
    /// Copies: CUpti_ActivityMemoryKind of the source and destination
    /// (1 pageable, 2 pinned, 3 device, …: [`crate::wire::memory_kind_name`]).
    pub src_kind: u8,
    pub dst_kind: u8,
}

pub use crate::wire::memory_kind_name;

impl Activity {
    /// A record of `op` on `stream` over `[start, end]`, every other field 0 / none.
    pub fn new(op: Op, start: u64, end: u64, stream: u32) -> Activity {
        Activity {
            op,
            start,
            end,
            device: 0,
            context: 0,
            stream,
            correlation: 0,
            name: None,
            grid: [0; 3],
            block: [0; 3],
            shared_mem: 0,
            bytes: 0,
            copy_kind: 0,
            src_kind: 0,
            dst_kind: 0,
        }
    }
}

/// Records handed over by [`Collector::take`].
#[derive(Debug, Default)]
pub struct Taken {
    /// In delivery order (not sorted).
    pub activities: Vec<Activity>,
    /// Records CUPTI could not store (buffer exhausted), since the last take.
    pub dropped: u64,
}

struct Store {
    acts: Vec<Activity>,
    names: HashMap<u64, Arc<str>>,
    dropped: u64,
}

struct State {
    api: Api,
    offset_ns: Option<AtomicI64>,
    store: Mutex<Store>,
}

static STATE: OnceLock<State> = OnceLock::new();

pub struct Collector {
    state: &'static State,
}

/// Starts collecting kernels, copies and sets (`lib`: a libcupti to load
/// instead of searching for one). A second call returns the running one.
pub fn start(lib: Option<&str>) -> Result<Collector, String> {
    if let Some(state) = STATE.get() {
        return Ok(Collector { state });
    }
    let api = cupti::load(lib)?;
    // The timestamp callback must come before any activity is enabled.
    let callback = match api.register_timestamp {
        // SAFETY: registering a plain extern "C" fn with no state.
        Some(f) => (unsafe { f(monotonic_ns) }) == 0,
        None => false,
    };
    let offset_ns = (!callback).then(|| AtomicI64::new(measure_offset(&api)));
    let store = Mutex::new(Store { acts: Vec::new(), names: HashMap::new(), dropped: 0 });
    let state = STATE.get_or_init(|| State { api, offset_ns, store });
    // SAFETY: registering our extern "C" callbacks.
    let r = unsafe { (state.api.register_callbacks)(cupti::buffer_requested::<BUFFER_SIZE>, buffer_completed) };
    if r != 0 {
        return Err(format!("cuptiActivityRegisterCallbacks failed: {}", state.api.err(r)));
    }
    for (k, name) in
        [(kind::CONCURRENT_KERNEL, "CONCURRENT_KERNEL"), (kind::MEMCPY, "MEMCPY"), (kind::MEMSET, "MEMSET")]
    {
        // SAFETY: plain CUPTI call.
        let r = unsafe { (state.api.activity_enable)(k) };
        if r != 0 {
            return Err(format!(
                "cuptiActivityEnable(CUPTI_ACTIVITY_KIND_{name}) failed: {} (another CUPTI client in this process?)",
                state.api.err(r)
            ));
        }
    }
    Ok(Collector { state })
}

impl Collector {
    /// The libcupti file in use.
    pub fn library(&self) -> &str {
        &self.state.api.path
    }

    /// CUPTI's version number (cuptiGetVersion).
    pub fn version(&self) -> u32 {
        let mut v = 0u32;
        // SAFETY: CUPTI writes one u32.
        unsafe { (self.state.api.get_version)(&mut v) };
        v
    }

    /// "callback" when CUPTI stamps with CLOCK_MONOTONIC itself, "offset" otherwise.
    pub fn clock(&self) -> &'static str {
        if self.state.offset_ns.is_some() { "offset" } else { "callback" }
    }

    /// Every record of work completed so far (call after synchronizing the
    /// work of interest): CUPTI's buffers are flushed, forced.
    pub fn take(&self) -> Taken {
        // SAFETY: plain CUPTI call; completed buffers reach buffer_completed on this thread.
        unsafe { (self.state.api.flush_all)(cupti::FLUSH_FORCED) };
        let mut st = self.state.store.lock().unwrap_or_else(|e| e.into_inner());
        Taken { activities: std::mem::take(&mut st.acts), dropped: std::mem::take(&mut st.dropped) }
    }
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
    let offset = match &st.offset_ns {
        Some(o) => {
            o.store(measure_offset(&st.api), Ordering::Relaxed);
            o.load(Ordering::Relaxed)
        }
        None => 0,
    };
    let mut store = st.store.lock().unwrap_or_else(|e| e.into_inner());
    let on_record = |d: records::Decoded| {
        let name = (d.name_ptr != 0).then(|| {
            store
                .names
                .entry(d.name_ptr)
                .or_insert_with(|| {
                    // SAFETY: CUPTI's kernel name: a NUL-terminated string it keeps alive.
                    let s = unsafe { CStr::from_ptr(d.name_ptr as *const std::ffi::c_char) };
                    Arc::from(s.to_string_lossy().as_ref())
                })
                .clone()
        });
        if let Some(a) = activity(d.msg, name) {
            store.acts.push(a);
        }
    };
    // SAFETY: CUPTI completed `valid` bytes of records in `buffer`.
    unsafe { cupti::walk(&st.api, buffer, valid, offset, on_record) };
    let mut dropped = 0usize;
    // SAFETY: CUPTI writes one usize.
    if unsafe { (st.api.get_num_dropped)(ctx, stream, &mut dropped) } == 0 {
        store.dropped += dropped as u64;
    }
}

/// A decoded wire message as an [`Activity`] (None for other messages).
pub fn activity(m: Msg, name: Option<Arc<str>>) -> Option<Activity> {
    let blank = |op, span: crate::wire::Span| Activity {
        device: span.device,
        context: span.context,
        correlation: span.correlation,
        ..Activity::new(op, span.start, span.end, span.stream)
    };
    Some(match m {
        Msg::Kernel { span, grid, block, shared_mem, .. } => {
            Activity { name, grid, block, shared_mem, ..blank(Op::Kernel, span) }
        }
        Msg::Memcpy { span, bytes, copy_kind, src_kind, dst_kind, .. } => {
            Activity { bytes, copy_kind, src_kind, dst_kind, ..blank(Op::Memcpy, span) }
        }
        Msg::Memset { span, bytes, .. } => Activity { bytes, ..blank(Op::Memset, span) },
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Span;

    #[test]
    fn messages_become_activities() {
        let span = Span { start: 10, end: 25, device: 0, context: 1, stream: 13, correlation: 7 };
        let k = activity(
            Msg::Kernel {
                span,
                grid: [80, 1, 1],
                block: [256, 1, 1],
                shared_mem: 1024,
                name_id: 0,
                graph_id: 0,
                graph_node_id: 0,
            },
            Some(Arc::from("_Z6vecAddPfS_S_i")),
        )
        .unwrap();
        assert_eq!((k.op, k.start, k.end, k.stream, k.correlation), (Op::Kernel, 10, 25, 13, 7));
        assert_eq!((k.grid, k.block, k.shared_mem), ([80, 1, 1], [256, 1, 1], 1024));
        assert_eq!(k.name.as_deref(), Some("_Z6vecAddPfS_S_i"));
        let c = activity(Msg::Memcpy { span, bytes: 4096, copy_kind: 2, src_kind: 1, dst_kind: 2, flags: 0 }, None)
            .unwrap();
        assert_eq!((c.op, c.bytes, c.copy_kind, c.name), (Op::Memcpy, 4096, 2, None));
        assert_eq!((memory_kind_name(c.src_kind), memory_kind_name(c.dst_kind)), ("pageable", "pinned"));
        let s = activity(Msg::Memset { span, bytes: 64, value: 0, mem_kind: 3 }, None).unwrap();
        assert_eq!((s.op, s.bytes), (Op::Memset, 64));
        assert_eq!(activity(Msg::Error { text: "x".into() }, None), None);
    }
}
