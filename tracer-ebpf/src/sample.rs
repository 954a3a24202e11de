//! On-CPU stack samples of traced threads: a perf_event program attached
//! per online CPU to the software CPU clock at a fixed frequency
//! (`--stack-sample-hz`, collect/loader.rs). When the task it interrupts
//! belongs to a traced process, it outputs a `StackRec` of
//! [`tracer_common::stack::site::SAMPLE`] taken as stack.rs takes the
//! others (native frames from the task's user registers, Python frames):
//! the record is the sample, nothing follows it.
//!
//! The program runs from the CPU clock's hrtimer interrupt. It cannot
//! interrupt the uprobe programs (the kernel skips a perf_event program
//! while another tracing program runs on the CPU: `bpf_prog_active`) nor the
//! scheduler programs (they run with interrupts off), so the per-CPU
//! scratch record and counters are not shared with a program it interrupted.
use aya_ebpf::{
    helpers::{bpf_get_current_pid_tgid, bpf_ktime_get_ns},
    macros::perf_event,
    programs::PerfEventContext,
};
use tracer_common::event::{EventKind, Header};

use crate::maps::is_traced;

#[perf_event]
pub fn stack_sample(ctx: PerfEventContext) -> u32 {
    if !crate::stack::at_sample() {
        return 0;
    }
    let id = bpf_get_current_pid_tgid();
    let (pid, tid) = ((id >> 32) as u32, id as u32);
    // pid 0: the idle task. Only processes already in the traced set
    // (`select::wanted` would adopt whatever runs under --system).
    if pid == 0 || !is_traced(pid) {
        return 0;
    }
    // What emit copies from it: func, pid, tid, ts (it takes the record's
    // sequence number itself: one per record, as for the other stacks).
    let of =
        Header { kind: EventKind::Stack as u16, func: 0, cpu: 0, seq: 0, ts: unsafe { bpf_ktime_get_ns() }, pid, tid };
    crate::stack::emit(&ctx, tracer_common::stack::site::SAMPLE, &of);
    0
}
