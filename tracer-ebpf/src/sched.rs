//! Scheduler events of the traced threads (`tracer record`, unless
//! `--no-sched`): why a thread that should launch GPU work was not running.
//! `sched_switch` when the task switched out or in is traced, `sched_waking`
//! (in the waker's context) when the woken one is.
//!
//! A traced thread switched out while blocked carries the system call it is
//! blocked in, read from its saved user registers (`orig_ax`): no syscall
//! tracepoint is needed. While a traced thread preempted on a CPU waits for
//! it, every switch on that CPU is recorded too (flags 0): who held the CPU,
//! and for how long.
//!
//! The raw tracepoints are used where the kernel allows (task_struct offsets
//! from BTF, sched_switch's prev_state argument: 5.18), the classic ones
//! otherwise.
use aya_ebpf::{
    EbpfContext,
    helpers::{
        bpf_get_current_comm, bpf_get_current_task_btf, bpf_get_smp_processor_id, bpf_probe_read_kernel,
        bpf_task_pt_regs,
    },
    macros::{map, raw_tracepoint, tracepoint},
    maps::{Array, HashMap, LruHashMap},
    programs::{RawTracePointContext, TracePointContext},
};
use tracer_common::event::{COMM_CAP, EventKind, Header, SchedSwitch, SchedWaking, counter, sched_flags};

use crate::maps::{EVENTS, bump, current, header, is_traced, submit_flags};

/// Thread id -> its process, for the traced processes' threads seen
/// switching out (the switched-in and woken threads are looked up here).
/// An LRU map: a thread whose exit was missed cannot fill it.
#[map]
pub static THREAD_TGID: LruHashMap<u32, u32> = LruHashMap::with_max_entries(65536, 0);

/// Per CPU: how many traced threads preempted there wait for it. While
/// any does, every switch on the CPU is recorded (who held it, for how
/// long). Size set by userspace (the possible CPUs).
#[map]
static WATCH: Array<u32> = Array::with_max_entries(1, 0);

/// Traced threads preempted and not yet back on a CPU -> the CPU they were
/// preempted on (whose WATCH count they hold).
#[map]
static WAIT_CPU: HashMap<u32, u32> = HashMap::with_max_entries(65536, 0);

#[inline(always)]
fn watching(cpu: u32) -> bool {
    WATCH.get(cpu).is_some_and(|w| unsafe { core::ptr::read_volatile(w) } != 0)
}

#[inline(always)]
fn watch_add(cpu: u32, add: bool) {
    if let Some(p) = WATCH.get_ptr_mut(cpu) {
        // Other CPUs change the count too (a thread preempted on one CPU
        // runs again on another): atomic.
        // (BPF has an atomic add, not the atomic types: the intrinsic.)
        use core::intrinsics::{AtomicOrdering::Relaxed, atomic_xadd};
        let d: u32 = if add { 1 } else { u32::MAX };
        unsafe { atomic_xadd::<u32, u32, { Relaxed }>(p, d) };
    }
}

/// Keeps the watch counts: `tid` (traced) switched out runnable on `cpu`,
/// or switched in.
#[inline(always)]
fn watch_preempted(tid: u32, cpu: u32) {
    if unsafe { WAIT_CPU.get(&tid) }.is_none() && WAIT_CPU.insert(&tid, &cpu, 0).is_ok() {
        watch_add(cpu, true);
    }
}

#[inline(always)]
fn watch_running(tid: u32) {
    if let Some(&c) = unsafe { WAIT_CPU.get(&tid) }
        && WAIT_CPU.remove(&tid).is_ok()
    {
        watch_add(c, false);
    }
}

#[unsafe(no_mangle)]
static SWITCH_PREV_STATE_OFF: u32 = 32;
#[unsafe(no_mangle)]
static SWITCH_NEXT_COMM_OFF: u32 = 40;
#[unsafe(no_mangle)]
static SWITCH_NEXT_PID_OFF: u32 = 56;
#[unsafe(no_mangle)]
static WAKING_PID_OFF: u32 = 24;
#[unsafe(no_mangle)]
static WAKING_TARGET_CPU_OFF: u32 = 32;

/// Offsets of `orig_ax` and `di` in x86-64 `struct pt_regs` (an ABI).
const ORIG_AX: usize = 15 * 8;
const DI: usize = 14 * 8;

#[inline(always)]
fn global(v: &'static u32) -> usize {
    unsafe { core::ptr::read_volatile(v) as usize }
}

/// The switch record's header, and before it the stack of the traced thread
/// switching out (the current task: its user stack and memory are the ones
/// the helpers see). A dying task's last switch has no user stack left (its
/// memory is gone): none taken. Called before the switch's state is
/// decoded, on one path: the verifier walks the stack code once instead of
/// once per state (Linux 6.1 gave up at 1M instructions otherwise).
#[inline(always)]
fn switch_header<C: EbpfContext>(ctx: &C, pid: u32, tid: u32, prev_traced: bool, dying: bool) -> Header {
    let hdr = header(EventKind::SchedSwitch as u16, 0, pid, tid);
    if prev_traced && !dying && crate::stack::at_switch() {
        crate::stack::emit(ctx, tracer_common::stack::site::SWITCH_OUT, &hdr);
        crate::stack::switched_out(tid);
    }
    hdr
}

/// One switch where `prev` (the current task) or `next` is traced.
/// `state` is in the tracepoint's report format (0 runnable, 0x100
/// preempted, S=1, D=2, …).
#[inline(always)]
fn emit_switch(hdr: Header, prev_traced: bool, state: u64, next: (u32, u32, bool), next_comm: [u8; COMM_CAP]) {
    let (next_tid, next_tgid, next_traced) = next;
    let mut flags = 0;
    let (mut syscall, mut arg0) = (-1i64, 0u64);
    if prev_traced {
        flags |= sched_flags::PREV_TRACED;
        // Which system call it is in (blocked in, or yielding by), from the
        // user registers: -1 when not in one (preempted in user mode, a fault).
        let task = unsafe { bpf_get_current_task_btf() };
        let regs = unsafe { bpf_task_pt_regs(task) } as usize;
        if regs != 0
            && let (Ok(nr), Ok(a)) = unsafe {
                (
                    bpf_probe_read_kernel((regs + ORIG_AX) as *const i64),
                    bpf_probe_read_kernel((regs + DI) as *const u64),
                )
            }
        {
            syscall = nr;
            arg0 = a;
            flags |= sched_flags::REGS_READ;
        }
    }
    if next_traced {
        flags |= sched_flags::NEXT_TRACED;
    }
    match EVENTS.reserve::<SchedSwitch>(0) {
        Some(mut e) => {
            let rec = unsafe { &mut *e.as_mut_ptr() };
            rec.hdr = hdr;
            rec.prev_state = state;
            rec.flags = flags;
            rec.next_tid = next_tid;
            rec.next_tgid = next_tgid;
            rec._pad = 0;
            rec.syscall = syscall;
            rec.arg0 = arg0;
            rec.prev_comm = bpf_get_current_comm().unwrap_or([0; COMM_CAP]);
            rec.next_comm = next_comm;
            e.submit(submit_flags());
        }
        None => {
            bump(counter::RB_FULL);
        }
    }
}

#[inline(always)]
fn emit_waking(tid: u32, tgid: u32, target_cpu: u32) {
    let (pid, wtid) = current();
    let hdr = header(EventKind::SchedWaking as u16, 0, pid, wtid);
    match EVENTS.reserve::<SchedWaking>(0) {
        Some(mut e) => {
            let rec = unsafe { &mut *e.as_mut_ptr() };
            rec.hdr = hdr;
            rec.tid = tid;
            rec.tgid = tgid;
            rec.target_cpu = target_cpu;
            rec._pad = 0;
            rec.comm = bpf_get_current_comm().unwrap_or([0; COMM_CAP]);
            e.submit(submit_flags());
        }
        None => {
            bump(counter::RB_FULL);
        }
    }
}

/// Byte offsets in `struct task_struct`, from the kernel's BTF
/// (tracer/src/collect/btf.rs).
#[unsafe(no_mangle)]
static TASK_PID_OFF: u32 = 0;
#[unsafe(no_mangle)]
static TASK_TGID_OFF: u32 = 0;
#[unsafe(no_mangle)]
static TASK_COMM_OFF: u32 = 0;

#[inline(always)]
fn task_ids(task: usize) -> Option<(u32, u32)> {
    let tid = unsafe { bpf_probe_read_kernel((task + global(&TASK_PID_OFF)) as *const i32) }.ok()?;
    let tgid = unsafe { bpf_probe_read_kernel((task + global(&TASK_TGID_OFF)) as *const i32) }.ok()?;
    Some((tid as u32, tgid as u32))
}

/// The raw `sched_switch(bool preempt, struct task_struct *prev, struct
/// task_struct *next, unsigned int prev_state)` (kernel ≥ 5.18). Preferred
/// to the classic tracepoint: a raw tracepoint program is skipped only when
/// the same program is already running on the CPU, while a classic one is
/// skipped whenever any BPF program or map operation from user space (the
/// collector's) is in progress on that CPU, which loses switches.
#[raw_tracepoint(tracepoint = "sched_switch")]
pub fn sched_switch_raw(ctx: RawTracePointContext) -> u32 {
    let (pid, tid) = current();
    let prev_traced = pid != 0 && is_traced(pid);
    let next: usize = ctx.arg(2);
    let Some((next_tid, next_tgid)) = task_ids(next) else { return 0 };
    let next_traced = next_tgid != 0 && is_traced(next_tgid);
    let cpu = unsafe { bpf_get_smp_processor_id() };
    if !prev_traced && !next_traced && !watching(cpu) {
        return 0;
    }
    let preempt: u64 = ctx.arg(0);
    let raw: u64 = ctx.arg(3);
    let raw = raw & 0xffff_ffff;
    // TASK_DEAD, EXIT_DEAD, EXIT_ZOMBIE (X and Z below).
    let dying = preempt & 0xff == 0 && raw & 0xb0 != 0;
    let hdr = switch_header(&ctx, pid, tid, prev_traced, dying);
    // As the tracepoint reports it (__trace_sched_switch_state).
    let state = if preempt & 0xff != 0 {
        0x100
    } else if raw == 0 {
        0
    } else if raw & 0x80 != 0 {
        0x10 // TASK_DEAD: reported as X
    } else if raw & 0x402 == 0x402 {
        0x80 // TASK_IDLE
    } else if raw & 0x7f != 0 {
        raw & 0x7f
    } else {
        2 // a state with no reported letter: blocked, not runnable
    };
    let comm = unsafe { bpf_probe_read_kernel((next + global(&TASK_COMM_OFF)) as *const [u8; COMM_CAP]) }
        .unwrap_or([0; COMM_CAP]);
    // A waiting thread switched in (its process may have left the traced set
    // meanwhile: looked up whenever this CPU is watched).
    if next_traced || watching(cpu) {
        watch_running(next_tid);
    }
    if prev_traced && state & 0xff == 0 {
        watch_preempted(tid, cpu);
    }
    emit_switch(hdr, prev_traced, state, (next_tid, next_tgid, next_traced), comm);
    0
}

/// The raw `sched_waking(struct task_struct *p)`, in the waker's context.
#[raw_tracepoint(tracepoint = "sched_waking")]
pub fn sched_waking_raw(ctx: RawTracePointContext) -> u32 {
    let p: usize = ctx.arg(0);
    let Some((tid, tgid)) = task_ids(p) else { return 0 };
    if tgid == 0 || !is_traced(tgid) {
        return 0;
    }
    emit_waking(tid, tgid, u32::MAX);
    0
}

/// The classic `sched_switch` tracepoint (kernels without the raw one's
/// `prev_state` argument, or without BTF): field offsets from its format
/// file; the switched-in thread's process from [`THREAD_TGID`].
#[tracepoint]
pub fn sched_switch(ctx: TracePointContext) -> u32 {
    let (pid, tid) = current();
    let prev_traced = pid != 0 && is_traced(pid);
    let next_tid = match unsafe { ctx.read_at::<i32>(global(&SWITCH_NEXT_PID_OFF)) } {
        Ok(n) => n as u32,
        Err(_) => return 0,
    };
    let next_tgid = if next_tid == 0 { None } else { unsafe { THREAD_TGID.get(&next_tid) }.copied() };
    let cpu = unsafe { bpf_get_smp_processor_id() };
    if !prev_traced && next_tgid.is_none() && !watching(cpu) {
        return 0;
    }
    if prev_traced && unsafe { THREAD_TGID.get(&tid) }.is_none() {
        // Known from now on when it is switched in or woken.
        let _ = THREAD_TGID.insert(&tid, &pid, 0);
    }
    let state = unsafe { ctx.read_at::<u32>(global(&SWITCH_PREV_STATE_OFF)) }.unwrap_or(0) as u64;
    // X and Z in the report format.
    let hdr = switch_header(&ctx, pid, tid, prev_traced, state & 0x30 != 0);
    let comm = unsafe { ctx.read_at::<[u8; COMM_CAP]>(global(&SWITCH_NEXT_COMM_OFF)) }.unwrap_or([0; COMM_CAP]);
    if next_tgid.is_some() || watching(cpu) {
        watch_running(next_tid);
    }
    if prev_traced && state & 0xff == 0 {
        watch_preempted(tid, cpu);
    }
    emit_switch(hdr, prev_traced, state, (next_tid, next_tgid.unwrap_or(0), next_tgid.is_some()), comm);
    0
}

#[tracepoint]
pub fn sched_waking(ctx: TracePointContext) -> u32 {
    let tid = match unsafe { ctx.read_at::<i32>(global(&WAKING_PID_OFF)) } {
        Ok(n) => n as u32,
        Err(_) => return 0,
    };
    let Some(tgid) = unsafe { THREAD_TGID.get(&tid) }.copied() else {
        return 0;
    };
    let target_cpu = unsafe { ctx.read_at::<i32>(global(&WAKING_TARGET_CPU_OFF)) }.unwrap_or(-1) as u32;
    emit_waking(tid, tgid, target_cpu);
    0
}

/// A traced thread exited: forget it (sched_exit in proc.rs).
#[inline(always)]
pub fn forget_thread(tid: u32) {
    let _ = THREAD_TGID.remove(&tid);
    watch_running(tid);
}
