//! Stack records: where a traced thread was when it called the driver or
//! switched out. One [`StackRec`] is emitted right before the record it
//! belongs to (a call's entry record, a switch-out's `SchedSwitch`), by the
//! same program run, so it is the thread's previous record in the ring
//! buffer: the collector attaches it to the next record of that thread.
//!
//! Native frames are the return addresses `bpf_get_stack` (frame pointers)
//! found; Python frames are read from the thread's CPython frame chain by
//! the walker (tracer-ebpf/src/pystack.rs) with the offsets of
//! [`PyLayout`], which user space writes per process. Both are resolved to
//! names in user space (tracer/src/collect/stacks/).

use crate::event::Header;

/// Native return addresses captured per stack (leaf first).
pub const NATIVE_CAP: usize = 64;
/// Python frames captured per stack (innermost first).
pub const PY_CAP: usize = 64;

/// One Python frame as the walker found it.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PyFrame {
    /// The frame's code object (`PyCodeObject *`). Bit 0 set ([`PY_ENTRY`]):
    /// this frame is the outermost of one C-level run of the interpreter
    /// loop (`_PyEval_EvalFrameDefault`): 3.11's `is_entry`, the frame
    /// under a C-stack-owned shim frame in 3.12+, every frame before 3.11.
    pub code: u64,
    /// Address of the frame's current (last started) instruction:
    /// `prev_instr` (3.11, 3.12), `instr_ptr` (3.13+); before 3.11
    /// `f_lasti` (an instruction index, not an address). 0: unknown.
    pub instr: u64,
}

/// [`PyFrame::code`] bit 0: the frame ends one interpreter-loop run.
pub const PY_ENTRY: u64 = 1;

/// [`StackRec::py_status`].
pub mod py_status {
    /// The process has no [`super::PyLayout`] (not Python, or not yet known).
    pub const NONE: u32 = 0;
    /// `py_n` frames read, the whole chain.
    pub const OK: u32 = 1;
    /// The chain is longer than [`super::PY_CAP`]: the outermost frames are cut.
    pub const TRUNCATED: u32 = 2;
    /// No thread state for this thread (a thread Python does not know, or
    /// the thread list could not be walked).
    pub const NO_THREAD: u32 = 3;
    /// A read of the frame chain failed (the chain changed while it was
    /// read, or memory was not resident): the frames before it are kept.
    pub const READ_FAILED: u32 = 4;
    /// The thread has a thread state but runs no Python code now.
    pub const IDLE: u32 = 5;
}

/// Indices of the kernel side's per-CPU stack counters (`STACK_COUNTS`).
pub mod count {
    /// Sampled calls (launches) that took no stack.
    pub const SAMPLED_OUT: u32 = 0;
    /// Sampled calls that took one.
    pub const SAMPLED_IN: u32 = 1;
    /// Walks at `site` ([`super::site`], 1..=3): [`walks`], their time in ns ([`walk_ns`]) and the
    /// Python part of it ([`walk_py_ns`]), measured around the walk in the program that took it.
    pub const fn walks(site: u32) -> u32 {
        2 + 3 * (site - 1)
    }
    pub const fn walk_ns(site: u32) -> u32 {
        walks(site) + 1
    }
    pub const fn walk_py_ns(site: u32) -> u32 {
        walks(site) + 2
    }
    /// Switch-outs of the injection library's own threads (tracer-cupti's), which take no stack.
    pub const OWN_SWITCH_OUTS: u32 = walks(super::site::SAMPLE) + 3;
    /// Stacks of switch-outs and on-CPU samples not taken because the ring buffer held more
    /// unread data than `SHED_BYTES` (the collector behind): shed so that the records every
    /// line needs keep their room.
    pub const SHED_SWITCH_OUTS: u32 = OWN_SWITCH_OUTS + 1;
    pub const SHED_SAMPLES: u32 = OWN_SWITCH_OUTS + 2;
    pub const N: u32 = OWN_SWITCH_OUTS + 3;
}

/// What the stack was taken for: [`StackRec::site`].
pub mod site {
    /// A driver call's entry (launch, copy, set, synchronization).
    pub const CALL: u32 = 1;
    /// A traced thread switching out of its CPU.
    pub const SWITCH_OUT: u32 = 2;
    /// An on-CPU sample of a traced thread (the CPU clock's perf event):
    /// the stack is the record itself, no other record follows it.
    pub const SAMPLE: u32 = 3;
}

/// A stack. Variable length: emitted up to `py[py_n]` ([`stack_rec_len`]).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct StackRec {
    /// `kind` = [`crate::event::EventKind::Stack`]; `func` the function id
    /// of the call it belongs to (0 for a switch-out and a sample); `ts`,
    /// `pid`, `tid` those of that record (a sample's own).
    pub hdr: Header,
    /// [`site`].
    pub site: u32,
    /// Native frames in `native` (0: none; see `native_err`).
    pub native_n: u32,
    /// `bpf_get_stack`'s error when it returned < 0 (as a positive errno), else 0.
    pub native_err: u32,
    /// [`py_status`].
    pub py_status: u32,
    /// Python frames in `py`.
    pub py_n: u32,
    pub _pad: u32,
    pub native: [u64; NATIVE_CAP],
    pub py: [PyFrame; PY_CAP],
}

/// Bytes of a `StackRec` up to its first `py_n` Python frames.
pub const fn stack_rec_len(py_n: usize) -> usize {
    STACK_REC_PY_OFFSET + (if py_n > PY_CAP { PY_CAP } else { py_n }) * core::mem::size_of::<PyFrame>()
}

/// Offset of [`StackRec::py`].
pub const STACK_REC_PY_OFFSET: usize = 32 + 24 + 8 * NATIVE_CAP;

/// Offsets the Python walker needs for one process (map `PY_PROCS`, keyed
/// by tgid). Written by user space once it has found the interpreter's
/// version and its `_PyRuntime`; `u32::MAX` marks a field that the version
/// does not have.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PyLayout {
    /// `PY_VERSION_HEX >> 16` (0x030b = 3.11).
    pub version: u32,
    /// [`py_flags`].
    pub flags: u32,
    /// Address of `_PyRuntime` in the process.
    pub runtime: u64,
    /// `_PyRuntime.interpreters.head`.
    pub runtime_interp_head: u32,
    /// `PyInterpreterState.threads.head`.
    pub interp_threads_head: u32,
    /// `PyThreadState.next`.
    pub tstate_next: u32,
    /// `PyThreadState.native_thread_id` (the kernel's tid of its thread).
    pub tstate_native_thread_id: u32,
    /// 3.11, 3.12: `PyThreadState.cframe`; then `_PyCFrame.current_frame`
    /// at `cframe_current_frame`. `u32::MAX` in 3.13+ (no cframe).
    pub tstate_cframe: u32,
    pub cframe_current_frame: u32,
    /// 3.13+: `PyThreadState.current_frame`; before 3.11: `PyThreadState.frame`.
    pub tstate_current_frame: u32,
    /// The frame's code object: `f_code` (3.11, 3.12, and `PyFrameObject`
    /// before 3.11), `f_executable` (3.13+).
    pub frame_code: u32,
    /// `previous` (3.11+), `f_back` (before).
    pub frame_previous: u32,
    /// `prev_instr` (3.11, 3.12), `instr_ptr` (3.13+), `f_lasti` (before 3.11, an int).
    pub frame_instr: u32,
    /// `owner` (3.11+; a char).
    pub frame_owner: u32,
    /// 3.11: `is_entry` (a bool); else `u32::MAX`.
    pub frame_is_entry: u32,
    /// The `owner` value of a C-stack-owned shim frame (3.12+), else `u32::MAX`.
    pub owner_cstack: u32,
    pub _pad: u32,
}

/// [`PyLayout::flags`].
pub mod py_flags {
    /// Before 3.11: frames are `PyFrameObject`s and `frame_instr` is the
    /// int `f_lasti`.
    pub const FRAME_OBJECTS: u32 = 1;
}

const _: () = assert!(core::mem::size_of::<PyFrame>() == 16);
const _: () = assert!(core::mem::offset_of!(StackRec, py) == STACK_REC_PY_OFFSET);
const _: () = assert!(core::mem::size_of::<StackRec>() == STACK_REC_PY_OFFSET + 16 * PY_CAP);
// Records are at most 2 KiB (maps.rs WAKEUP_WINDOW).
const _: () = assert!(core::mem::size_of::<StackRec>() <= 2048);
const _: () = assert!(core::mem::size_of::<PyLayout>() == 16 + 4 * 14);
