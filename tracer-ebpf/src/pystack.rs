//! The CPython frame walker: the Python frames of the current thread, read
//! from its interpreter's frame chain with the offsets user space wrote for
//! the process ([`PY_PROCS`], tracer/src/collect/stacks/python_layout.rs).
//!
//! The thread's `PyThreadState` is found by walking the (most recently
//! created) interpreter's thread list for the one whose `native_thread_id`
//! is the kernel's tid, then cached per tid (re-checked on every use: a
//! freed thread state may be reused by another thread). Each frame costs one
//! read of its first bytes (code, previous, instruction, owner / is_entry
//! all lie in the first 72 bytes of a 3.11–3.13 `_PyInterpreterFrame`; a
//! 3.10 `PyFrameObject`'s `f_lasti` is at 96).
use aya_ebpf::{
    helpers::{
        bpf_get_current_task, bpf_probe_read_kernel, bpf_probe_read_user,
        generated::bpf_probe_read_user as read_user_raw,
    },
    macros::map,
    maps::{HashMap, LruHashMap, PerCpuArray},
};
use tracer_common::stack::{PY_CAP, PY_ENTRY, PyFrame, PyLayout, py_flags, py_status};

/// tgid -> the offsets of its interpreter. Written by user space.
#[map]
pub static PY_PROCS: HashMap<u32, PyLayout> = HashMap::with_max_entries(8192, 0);

/// tid -> its `PyThreadState *` (last found).
#[map]
static PY_TSTATE: LruHashMap<u32, u64> = LruHashMap::with_max_entries(65536, 0);

/// Bytes of a frame read at once are fewer than this: enough for every
/// offset the layouts use (user space rejects a layout whose frame fields
/// end at or beyond it).
pub const FRAME_READ: usize = 128;

/// Per CPU: the bytes of the frame being read (8 spare bytes so that a
/// masked offset + 8 stays inside).
#[map]
static FRAME_BUF: PerCpuArray<[u8; FRAME_READ + 8]> = PerCpuArray::with_max_entries(1, 0);

/// Threads of one interpreter looked at to find the current one.
const MAX_THREADS: u32 = 64;
/// Frames read per stack: Python frames plus the shim frames skipped.
const MAX_FRAMES: usize = PY_CAP + 16;

#[inline(always)]
fn read_u64(addr: u64) -> Option<u64> {
    unsafe { bpf_probe_read_user(addr as *const u64) }.ok()
}

#[inline(always)]
fn field(v: u32) -> u64 {
    v as u64
}

/// Offset of `thread.fsbase` in `struct task_struct` (BTF; 0: unknown).
#[unsafe(no_mangle)]
static TASK_FSBASE_OFF: u32 = 0;

/// What the thread state's id field holds for the current thread:
/// `native_thread_id` (3.11+) is the tid; before 3.11 only `thread_id`
/// exists, `pthread_self()`, which is the thread's fs base on x86-64.
#[inline(always)]
fn thread_key(l: &PyLayout, tid: u32) -> Option<u64> {
    if l.flags & py_flags::FRAME_OBJECTS == 0 {
        return Some(tid as u64);
    }
    let off = unsafe { core::ptr::read_volatile(&TASK_FSBASE_OFF) } as u64;
    if off == 0 {
        return None;
    }
    let task = unsafe { bpf_get_current_task() };
    unsafe { bpf_probe_read_kernel((task + off) as *const u64) }.ok()
}

/// The thread state of `tid` in the process of `l`, or None.
#[inline(always)]
fn thread_state(l: &PyLayout, tid: u32) -> Option<u64> {
    let tid_off = field(l.tstate_native_thread_id);
    let key = thread_key(l, tid)?;
    if let Some(&t) = unsafe { PY_TSTATE.get(&tid) }
        && read_u64(t + tid_off) == Some(key)
    {
        return Some(t);
    }
    let interp = read_u64(l.runtime + field(l.runtime_interp_head))?;
    if interp == 0 {
        return None;
    }
    let mut t = read_u64(interp + field(l.interp_threads_head))?;
    for _ in 0..MAX_THREADS {
        if t == 0 {
            return None;
        }
        if read_u64(t + tid_off) == Some(key) {
            let _ = PY_TSTATE.insert(&tid, &t, 0);
            return Some(t);
        }
        t = read_u64(t + field(l.tstate_next))?;
    }
    None
}

/// The thread's current (innermost) frame: Ok(0) when it runs no Python.
#[inline(always)]
fn current_frame(l: &PyLayout, tstate: u64) -> Option<u64> {
    if l.tstate_cframe != u32::MAX {
        let cframe = read_u64(tstate + field(l.tstate_cframe))?;
        if cframe == 0 {
            return Some(0);
        }
        read_u64(cframe + field(l.cframe_current_frame))
    } else {
        read_u64(tstate + field(l.tstate_current_frame))
    }
}

#[inline(always)]
fn u64_at(buf: &[u8; FRAME_READ + 8], off: u32) -> u64 {
    let o = (off as usize) & (FRAME_READ - 8);
    unsafe { core::ptr::read_unaligned(buf.as_ptr().add(o) as *const u64) }
}

#[inline(always)]
fn u32_at(buf: &[u8; FRAME_READ + 8], off: u32) -> u32 {
    let o = (off as usize) & (FRAME_READ - 4);
    unsafe { core::ptr::read_unaligned(buf.as_ptr().add(o) as *const u32) }
}

#[inline(always)]
fn u8_at(buf: &[u8; FRAME_READ + 8], off: u32) -> u8 {
    buf[(off as usize) & (FRAME_READ - 1)]
}

/// Bytes to read of each frame: up to the last field the layout names.
#[inline(always)]
fn frame_len(l: &PyLayout) -> u32 {
    let mut n = l.frame_code + 8;
    if l.frame_previous + 8 > n {
        n = l.frame_previous + 8;
    }
    let instr_end = l.frame_instr + if l.flags & py_flags::FRAME_OBJECTS != 0 { 4 } else { 8 };
    if instr_end > n {
        n = instr_end;
    }
    if l.frame_owner != u32::MAX && l.frame_owner + 1 > n {
        n = l.frame_owner + 1;
    }
    if l.frame_is_entry != u32::MAX && l.frame_is_entry + 1 > n {
        n = l.frame_is_entry + 1;
    }
    n
}

/// The walk's state, kept in a per-CPU map ([`WALK`]) and read and
/// written with volatile accesses: the verifier then sees each frame's
/// step start from the same register state whichever way the previous one
/// went (a shim skipped or a frame written), so it verifies one path per
/// step instead of one per number of frames written so far.
#[repr(C)]
struct Walk {
    /// The next frame to read (0: the chain's end).
    frame: u64,
    /// Frames written.
    n: u32,
    status: u32,
    /// Bytes read of each frame.
    len: u32,
    code: u32,
    previous: u32,
    instr: u32,
    owner: u32,
    is_entry: u32,
    owner_cstack: u32,
    /// Before 3.11: frame objects, a 4-byte `f_lasti`, each its own run.
    objects: u32,
}

#[map]
static WALK: PerCpuArray<Walk> = PerCpuArray::with_max_entries(1, 0);

macro_rules! get {
    ($w:expr, $f:ident) => {
        unsafe { core::ptr::read_volatile(core::ptr::addr_of!((*$w).$f)) }
    };
}
macro_rules! set {
    ($w:expr, $f:ident, $v:expr) => {
        unsafe { core::ptr::write_volatile(core::ptr::addr_of_mut!((*$w).$f), $v) }
    };
}

/// One frame of the walk: false to stop.
#[inline(always)]
fn walk_step(w: *mut Walk, buf: &mut [u8; FRAME_READ + 8], out: &mut [PyFrame; PY_CAP]) -> bool {
    let frame = get!(w, frame);
    if frame == 0 {
        set!(w, status, py_status::OK);
        return false;
    }
    let size = get!(w, len) & (FRAME_READ as u32 - 1);
    if unsafe { read_user_raw(buf.as_mut_ptr() as *mut _, size, frame as *const _) } != 0 {
        set!(w, status, py_status::READ_FAILED);
        return false;
    }
    let previous = u64_at(buf, get!(w, previous));
    let cstack = get!(w, owner_cstack);
    let n = get!(w, n) as usize;
    if cstack != u32::MAX && u8_at(buf, get!(w, owner)) as u32 == cstack {
        // A shim frame of a C-level entry into the interpreter: the frame
        // above it (the last written) began that run.
        if let Some(f) = out.get_mut(n.wrapping_sub(1)) {
            f.code |= PY_ENTRY;
        }
        set!(w, frame, previous);
        return true;
    }
    let Some(slot) = out.get_mut(n) else {
        // More frames than PY_CAP: the status stays TRUNCATED.
        return false;
    };
    let code = u64_at(buf, get!(w, code));
    let objects = get!(w, objects) != 0;
    let is_entry = get!(w, is_entry);
    let entry = objects || (is_entry != u32::MAX && u8_at(buf, is_entry) != 0);
    let instr_off = get!(w, instr);
    let instr = if objects { u32_at(buf, instr_off) as u64 } else { u64_at(buf, instr_off) };
    *slot = PyFrame { code: code | entry as u64, instr };
    set!(w, n, n as u32 + 1);
    set!(w, frame, previous);
    true
}

/// Walks the Python frames of thread `tid` of process `pid` into `out`;
/// returns (status, frames written).
#[inline(always)]
pub fn walk(pid: u32, tid: u32, out: &mut [PyFrame; PY_CAP]) -> (u32, u32) {
    let Some(l) = (unsafe { PY_PROCS.get(&pid) }) else {
        return (py_status::NONE, 0);
    };
    let Some(tstate) = thread_state(l, tid) else {
        return (py_status::NO_THREAD, 0);
    };
    let Some(frame) = current_frame(l, tstate) else {
        return (py_status::READ_FAILED, 0);
    };
    if frame == 0 {
        return (py_status::IDLE, 0);
    }
    let len = frame_len(l);
    if len >= FRAME_READ as u32 {
        return (py_status::READ_FAILED, 0);
    }
    let (Some(w), Some(buf)) = (WALK.get_ptr_mut(0), FRAME_BUF.get_ptr_mut(0)) else {
        return (py_status::READ_FAILED, 0);
    };
    unsafe {
        *w = Walk {
            frame,
            n: 0,
            status: py_status::TRUNCATED,
            len,
            code: l.frame_code,
            previous: l.frame_previous,
            instr: l.frame_instr,
            owner: l.frame_owner,
            is_entry: l.frame_is_entry,
            owner_cstack: l.owner_cstack,
            objects: (l.flags & py_flags::FRAME_OBJECTS != 0) as u32,
        }
    };
    let buf = unsafe { &mut *buf };
    for _ in 0..MAX_FRAMES {
        if !walk_step(w, buf, out) {
            break;
        }
    }
    (get!(w, status), get!(w, n))
}
