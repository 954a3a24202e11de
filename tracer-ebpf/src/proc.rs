//! Process-tree tracking: the sched tracepoints keep TRACED up to date in the
//! kernel (so a forked child is traced before it can run) and report the
//! changes to userspace. Field offsets differ between kernel versions, so
//! userspace reads them from the tracepoint format files and sets them here.
use aya_ebpf::{
    EbpfContext, helpers::bpf_probe_read_kernel_str_bytes, macros::tracepoint, programs::TracePointContext,
};
use tracer_common::event::{EventKind, PATH_CAP, ProcExec, ProcExit, ProcFork, counter};

use crate::maps::{EVENTS, TRACED, bump, current, header, is_traced, submit_flags, traced_changed};

#[unsafe(no_mangle)]
static FORK_CHILD_PID_OFF: u32 = 20;
#[unsafe(no_mangle)]
static EXEC_FILENAME_OFF: u32 = 8;
#[unsafe(no_mangle)]
static EXIT_PID_OFF: u32 = 24;
/// 0 when the kernel's sched_process_exit has no group_dead field.
#[unsafe(no_mangle)]
static EXIT_GROUP_DEAD_OFF: u32 = 32;
/// Non-zero with `tracer --ebpf-log`: the programs' own diagnostics go to
/// aya-log. Only rare paths log; the uprobes never do.
#[unsafe(no_mangle)]
static LOG_ENABLED: u32 = 0;

#[inline(always)]
fn global(v: &'static u32) -> u32 {
    unsafe { core::ptr::read_volatile(v) }
}

#[tracepoint]
pub fn sched_fork(ctx: TracePointContext) -> u32 {
    let (pid, tid) = current();
    if !is_traced(pid) {
        return 0;
    }
    let child: u32 = match unsafe { ctx.read_at::<i32>(global(&FORK_CHILD_PID_OFF) as usize) } {
        Ok(c) => c as u32,
        Err(_) => return 0,
    };
    // A new process is traced from its first instruction. Thread ids are
    // inserted too (harmless: lookups are by tgid) and removed at their exit,
    // so a recycled tid never marks an unrelated process.
    match TRACED.insert(&child, &1, 0) {
        Ok(()) => traced_changed(),
        Err(_) if global(&LOG_ENABLED) != 0 => {
            aya_log_ebpf::warn!(&ctx, "traced-task map full: task {} (child of {}) is not traced", child, pid)
        }
        Err(_) => {}
    }
    let hdr = header(EventKind::ProcFork as u16, 0, pid, tid);
    match EVENTS.reserve::<ProcFork>(0) {
        Some(mut e) => {
            let rec = unsafe { &mut *e.as_mut_ptr() };
            rec.hdr = hdr;
            rec.child = child;
            rec._pad = 0;
            e.submit(submit_flags());
        }
        None => {
            bump(counter::RB_FULL);
        }
    }
    0
}

#[tracepoint]
pub fn sched_exec(ctx: TracePointContext) -> u32 {
    let (pid, tid) = current();
    if !is_traced(pid) {
        return 0;
    }
    let hdr = header(EventKind::ProcExec as u16, 0, pid, tid);
    match EVENTS.reserve::<ProcExec>(0) {
        Some(mut e) => {
            let rec = unsafe { &mut *e.as_mut_ptr() };
            rec.hdr = hdr;
            rec.len = 0;
            rec._pad = 0;
            // __data_loc: low 16 bits offset from the record start, high 16 length.
            if let Ok(loc) = unsafe { ctx.read_at::<u32>(global(&EXEC_FILENAME_OFF) as usize) } {
                let off = (loc & 0xffff) as usize;
                let src = unsafe { (ctx.as_ptr() as *const u8).add(off) };
                let buf: &mut [u8; PATH_CAP] = &mut rec.filename;
                if let Ok(s) = unsafe { bpf_probe_read_kernel_str_bytes(src, buf) } {
                    rec.len = s.len() as u32;
                }
            }
            e.submit(submit_flags());
        }
        None => {
            bump(counter::RB_FULL);
        }
    }
    0
}

#[tracepoint]
pub fn sched_exit(ctx: TracePointContext) -> u32 {
    let (pid, tid) = current();
    if !is_traced(pid) {
        return 0;
    }
    if global(&LOG_ENABLED) != 0 && pid == tid {
        aya_log_ebpf::debug!(&ctx, "traced process {} exits", pid);
    }
    let group_dead = match global(&EXIT_GROUP_DEAD_OFF) {
        0 => (pid == tid) as u32,
        off => unsafe { ctx.read_at::<u8>(off as usize) }.map(|v| v as u32).unwrap_or(0),
    };
    // Forget this task id. The process's own entry (tgid) goes when its
    // group is dead, so late threads of an exiting process are still seen.
    crate::sched::forget_thread(tid);
    if tid != pid && TRACED.remove(&tid).is_ok() {
        traced_changed();
    }
    if group_dead == 1 && TRACED.remove(&pid).is_ok() {
        traced_changed();
    }
    let hdr = header(EventKind::ProcExit as u16, 0, pid, tid);
    match EVENTS.reserve::<ProcExit>(0) {
        Some(mut e) => {
            let rec = unsafe { &mut *e.as_mut_ptr() };
            rec.hdr = hdr;
            rec.group_dead = group_dead;
            rec._pad = 0;
            e.submit(submit_flags());
        }
        None => {
            bump(counter::RB_FULL);
        }
    }
    0
}
