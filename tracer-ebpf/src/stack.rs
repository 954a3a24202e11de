//! Stack records ([`tracer_common::stack`]): the user stack of a traced
//! thread at a driver call's entry (the functions user space marked in
//! [`STACK_FUNCS`]) and when it switches out of its CPU (sched.rs). The
//! record is output before the record it belongs to, by the same program
//! run, so it is that thread's previous record.
use aya_ebpf::{
    EbpfContext,
    helpers::{
        bpf_get_current_comm, bpf_get_current_task_btf, bpf_ktime_get_ns, bpf_probe_read_kernel, bpf_probe_read_user,
        bpf_task_pt_regs,
        generated::{bpf_get_stack, bpf_probe_read_user as read_user_raw},
    },
    macros::map,
    maps::{Array, LruHashMap, PerCpuArray},
};
use tracer_common::{
    event::{EventKind, Header, counter},
    stack::{NATIVE_CAP, PY_CAP, StackRec, count},
};

use crate::maps::{EVENTS, bump, header, submit_flags};
use crate::pystack;

/// What stacks are taken ([`tracer_common::stack`] user side sets it):
/// bit 0 native frames, bit 1 Python frames, bit 2 at calls, bit 3 at
/// switch-outs, bit 4 on-CPU samples (sample.rs). 0: no stacks (the verifier drops the code).
#[unsafe(no_mangle)]
static STACKS: u32 = 0;

pub const NATIVE: u32 = 1;
pub const PYTHON: u32 = 2;
pub const AT_CALLS: u32 = 4;
pub const AT_SWITCHES: u32 = 8;
pub const AT_SAMPLES: u32 = 16;

/// Function id -> [`ALWAYS`] or [`SAMPLED`] when its calls take a stack
/// (copies, sets, synchronizations always; launches sampled). Filled by
/// user space.
#[map]
pub static STACK_FUNCS: Array<u8> = Array::with_max_entries(4096, 0);

pub const ALWAYS: u8 = 1;
pub const SAMPLED: u8 = 2;

/// Sampled calls (launches) take a stack when the thread made no sampled
/// call for this long (ns; the launch ends a CPU-side gap), or was
/// switched out since its last one, ...
#[unsafe(no_mangle)]
static STACK_IDLE_NS: u64 = 50_000;
/// ... and otherwise at most once per this interval (ns) per thread.
#[unsafe(no_mangle)]
static STACK_INTERVAL_NS: u64 = 10_000_000;

/// Per thread: `[last sampled call, last stack taken at one]` (ns).
#[map]
static STACK_LAST: LruHashMap<u32, [u64; 2]> = LruHashMap::with_max_entries(65536, 0);

/// Per CPU counts, [`count`].
#[map]
pub static STACK_COUNTS: PerCpuArray<u64> = PerCpuArray::with_max_entries(count::N, 0);

#[inline(always)]
fn add(i: u32, v: u64) {
    if let Some(p) = STACK_COUNTS.get_ptr_mut(i) {
        unsafe { *p += v };
    }
}

#[inline(always)]
fn count(i: u32) {
    add(i, 1);
}

#[inline(always)]
fn global(v: &'static u64) -> u64 {
    unsafe { core::ptr::read_volatile(v) }
}

/// Whether a sampled call of thread `tid` now takes a stack (and notes the call).
#[inline(always)]
fn sample(tid: u32) -> bool {
    let now = unsafe { bpf_ktime_get_ns() };
    let Some(p) = STACK_LAST.get_ptr_mut(&tid) else {
        let _ = STACK_LAST.insert(&tid, &[now, now], 0);
        count(count::SAMPLED_IN);
        return true;
    };
    let [last_call, last_stack] = unsafe { *p };
    let take = now.wrapping_sub(last_call) >= global(&STACK_IDLE_NS)
        || now.wrapping_sub(last_stack) >= global(&STACK_INTERVAL_NS);
    unsafe { *p = [now, if take { now } else { last_stack }] };
    count(if take { count::SAMPLED_IN } else { count::SAMPLED_OUT });
    take
}

/// After a sampled call's stack walk: its "last call" becomes the walk's end, so that the next
/// call's gap is the thread's own time, without the walk's. Otherwise a walk (several µs) would
/// make the next gap look longer than the idle threshold, take another stack, and so on.
#[inline(always)]
fn walked(func: u16, tid: u32, end: u64) {
    if STACK_FUNCS.get(func as u32).copied() != Some(SAMPLED) {
        return;
    }
    if let Some(p) = STACK_LAST.get_ptr_mut(&tid) {
        unsafe { (*p)[0] = end };
    }
}

/// A traced thread switched out: its next sampled call takes a stack.
#[inline(always)]
pub fn switched_out(tid: u32) {
    if let Some(p) = STACK_LAST.get_ptr_mut(&tid) {
        unsafe { (*p)[0] = 0 };
    }
}

const BPF_F_USER_STACK: u64 = 1 << 8;

#[inline(always)]
fn stacks() -> u32 {
    unsafe { core::ptr::read_volatile(&STACKS) }
}

/// Whether a call of `func` by thread `tid` takes a stack.
#[inline(always)]
pub fn at_call(func: u16, tid: u32) -> bool {
    if stacks() & AT_CALLS == 0 {
        return false;
    }
    match STACK_FUNCS.get(func as u32).copied() {
        Some(ALWAYS) => true,
        Some(SAMPLED) => sample(tid),
        _ => false,
    }
}

/// Whether a traced thread's switch-out (the current task's) takes a stack: not one of the
/// injection library's own threads (tracer-cupti's flush and window threads, named
/// `tracer-cupti…`), whose switch-outs are the tracer's own sleeps, not the program's
/// (counted, [`count::OWN_SWITCH_OUTS`]).
#[inline(always)]
pub fn at_switch() -> bool {
    if stacks() & AT_SWITCHES == 0 {
        return false;
    }
    if own_thread() {
        count(count::OWN_SWITCH_OUTS);
        return false;
    }
    true
}

/// Whether the current task is one of tracer-cupti's threads (its name starts with `tracer-cupti`).
#[inline(always)]
fn own_thread() -> bool {
    let Ok(c) = bpf_get_current_comm() else { return false };
    let head = u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
    let tail = u32::from_le_bytes([c[8], c[9], c[10], c[11]]);
    head == u64::from_le_bytes(*b"tracer-c") && tail == u32::from_le_bytes(*b"upti")
}

/// Unread bytes in the ring buffer above which switch-out and sample stacks are not taken
/// (0: always taken). Set by userspace (collect/loader.rs `SHED_BYTES_MAX`): a collector that falls
/// behind (a stack-heavy program) then sheds these large, optional records first, and the
/// call, scheduler and graph records keep their room instead of being lost to a full ring.
#[unsafe(no_mangle)]
static SHED_BYTES: u64 = 0;

const BPF_RB_AVAIL_DATA: u64 = 0;

/// Whether a stack at `site` is shed (counted): a switch-out's or a sample's while the ring
/// holds more than `SHED_BYTES` unread. Call stacks are never shed (each belongs to its call).
#[inline(always)]
fn shed(site: u32) -> bool {
    let limit = global(&SHED_BYTES);
    if limit == 0 || site == tracer_common::stack::site::CALL {
        return false;
    }
    if EVENTS.query(BPF_RB_AVAIL_DATA) <= limit {
        return false;
    }
    count(if site == tracer_common::stack::site::SAMPLE { count::SHED_SAMPLES } else { count::SHED_SWITCH_OUTS });
    true
}

/// Whether on-CPU samples take stacks.
#[inline(always)]
pub fn at_sample() -> bool {
    stacks() & AT_SAMPLES != 0
}

/// Offsets in x86-64 `struct pt_regs` (an ABI).
const REG_BP: usize = 4 * 8;
const REG_IP: usize = 16 * 8;
const REG_SP: usize = 19 * 8;

/// Words above the user stack pointer looked at for the leaf's caller.
const SCAN_WORDS: usize = 16;

#[map]
static SP_WORDS: PerCpuArray<[u64; SCAN_WORDS]> = PerCpuArray::with_max_entries(1, 0);

/// The return address into the leaf function's caller, which the frame
/// pointer chain misses when the leaf has not pushed a frame (`bpf_get_stack`
/// starts at the leaf's ip, then follows the caller's `rbp` to the caller's
/// caller). At a call's entry (a uprobe on the function's first
/// instruction) it is the word at the stack pointer. At a switch-out inside
/// a system call, the leaf is usually a libc wrapper without a frame
/// (`read`): the first word between the stack pointer and the caller's
/// frame (`rbp`) that returns just after a call instruction.
#[inline(always)]
fn leaf_caller(site: u32) -> Option<u64> {
    let task = unsafe { bpf_get_current_task_btf() };
    let regs = unsafe { bpf_task_pt_regs(task) } as usize;
    if regs == 0 {
        return None;
    }
    let sp = unsafe { bpf_probe_read_kernel((regs + REG_SP) as *const u64) }.ok()?;
    if site == tracer_common::stack::site::CALL {
        return unsafe { bpf_probe_read_user(sp as *const u64) }.ok();
    }
    let bp = unsafe { bpf_probe_read_kernel((regs + REG_BP) as *const u64) }.ok()?;
    let _ip = unsafe { bpf_probe_read_kernel((regs + REG_IP) as *const u64) }.ok()?;
    let words = SP_WORDS.get_ptr_mut(0)?;
    let words = unsafe { &mut *words };
    if unsafe { read_user_raw(words.as_mut_ptr() as *mut _, (8 * SCAN_WORDS) as u32, sp as *const _) } != 0 {
        return None;
    }
    for (k, &w) in words.iter().enumerate() {
        if sp + 8 * k as u64 >= bp {
            break;
        }
        if w > 8 && returns_after_call(w) {
            return Some(w);
        }
    }
    None
}

/// Whether the bytes before `ra` end with a call instruction: `e8 rel32`,
/// `ff 15 disp32` (through the GOT), `ff /2` register forms.
#[inline(always)]
fn returns_after_call(ra: u64) -> bool {
    let Ok(b) = (unsafe { bpf_probe_read_user((ra - 8) as *const [u8; 8]) }) else { return false };
    b[3] == 0xe8 || (b[2] == 0xff && b[3] == 0x15) || (b[6] == 0xff && b[7] & 0xf8 == 0xd0)
}

/// Puts `ra` after the leaf (native[0]) unless the chain has it already.
#[inline(always)]
fn insert_caller(rec: &mut StackRec, ra: u64) {
    let n = rec.native_n as usize;
    if n == 0 || n >= NATIVE_CAP || rec.native[1] == ra && n > 1 {
        return;
    }
    let mut i = NATIVE_CAP - 1;
    while i > 1 {
        rec.native[i] = rec.native[i - 1];
        i -= 1;
    }
    rec.native[1] = ra;
    rec.native_n = n as u32 + 1;
}

/// Takes and outputs the stack of the current thread for the record whose
/// header is `of` (a call's entry, a switch-out), before that record: the
/// stack has its `func`, `ts`, `pid` and `tid` and the next sequence
/// number.
#[inline(always)]
pub fn emit<C: EbpfContext>(ctx: &C, site: u32, of: &Header) {
    let (func, pid, tid) = (of.func, of.pid, of.tid);
    if shed(site) {
        return;
    }
    let t0 = unsafe { bpf_ktime_get_ns() };
    // Built in its own ring-buffer slot, not a per-CPU scratch: a uprobe
    // program runs preemptible (migrate-disabled only), so another program
    // on this CPU (the switch-out it is preempted by, another thread's
    // call) would overwrite a shared scratch mid-walk.
    let Some(mut slot) = EVENTS.reserve::<StackRec>(0) else {
        bump(counter::RB_FULL);
        return;
    };
    let rec = unsafe { &mut *slot.as_mut_ptr() };
    let on = stacks();
    rec.hdr = header(EventKind::Stack as u16, func, pid, tid);
    rec.hdr.ts = of.ts;
    rec.site = site;
    rec.native_n = 0;
    rec.native_err = 0;
    rec._pad = 0;
    if on & NATIVE != 0 {
        let r = unsafe {
            bpf_get_stack(ctx.as_ptr(), rec.native.as_mut_ptr() as *mut _, (8 * NATIVE_CAP) as u32, BPF_F_USER_STACK)
        };
        if r < 0 {
            rec.native_err = (-r) as u32;
        } else {
            rec.native_n = (r as u32) / 8;
            if let Some(ra) = leaf_caller(site) {
                insert_caller(rec, ra);
            }
        }
    }
    let t1 = unsafe { bpf_ktime_get_ns() };
    let (status, n) = if on & PYTHON != 0 {
        pystack::walk(pid, tid, &mut rec.py)
    } else {
        (tracer_common::stack::py_status::NONE, 0)
    };
    let t2 = unsafe { bpf_ktime_get_ns() };
    rec.py_status = status;
    let n = if n as usize > PY_CAP { PY_CAP } else { n as usize };
    rec.py_n = n as u32;
    slot.submit(submit_flags());
    if (tracer_common::stack::site::CALL..=tracer_common::stack::site::SAMPLE).contains(&site) {
        count(count::walks(site));
        add(count::walk_ns(site), t2.wrapping_sub(t0));
        add(count::walk_py_ns(site), t2.wrapping_sub(t1));
    }
    if site == tracer_common::stack::site::CALL {
        walked(func, tid, t2);
    }
}
