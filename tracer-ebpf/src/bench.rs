//! Programs used only by `cargo xtask bench collector` (hidden `tracer
//! --bench-probe` / `--bench-producer` options), never by a normal recording.
//!
//! - `cu_empty` / `cu_empty_ret`: empty programs attached exactly like the
//!   real ones (same uprobe_multi links, same functions), so the benchmark
//!   measures the mechanism's floor next to tracer's own cost in one run.
//! - `cu_bench_filter`, `cu_bench_ring`: the first steps of `cu_enter` alone
//!   (is the task traced, the cookie; then a header and an empty record
//!   through the ring buffer), to split the program's cost.
//! - `bench_producer`: a source that is not trap-bound: every getppid()
//!   syscall of a traced process emits a cuLaunchKernel-sized entry record,
//!   to find the collector's own ceiling (ring buffer to JSONL on disk).
use aya_ebpf::{EbpfContext, helpers::bpf_get_attach_cookie};
use aya_ebpf::{
    macros::{tracepoint, uprobe, uretprobe},
    programs::{ProbeContext, RetProbeContext, TracePointContext},
};
use tracer_common::event::{CallEnter, EventKind, MAX_ARGS, counter};

use crate::maps::{EVENTS, bump, current, header, is_traced, submit_flags};

#[uprobe]
pub fn cu_empty(_ctx: ProbeContext) -> u32 {
    0
}

#[uretprobe]
pub fn cu_empty_ret(_ctx: RetProbeContext) -> u32 {
    0
}

#[uprobe]
pub fn cu_bench_filter(ctx: ProbeContext) -> u32 {
    let (pid, _) = current();
    if !is_traced(pid) {
        return 0;
    }
    let c = unsafe { bpf_get_attach_cookie(ctx.as_ptr()) };
    c as u32 & 1
}

#[uprobe]
pub fn cu_bench_ring(ctx: ProbeContext) -> u32 {
    let (pid, tid) = current();
    if !is_traced(pid) {
        return 0;
    }
    let c = unsafe { bpf_get_attach_cookie(ctx.as_ptr()) };
    let hdr = header(EventKind::CallEnter as u16, c as u16, pid, tid);
    match EVENTS.reserve::<CallEnter>(0) {
        Some(mut e) => {
            let rec = unsafe { &mut *e.as_mut_ptr() };
            rec.hdr = hdr;
            // Word by word: `= [0; MAX_ARGS]` would call a byte-loop
            // memset, which cu_enter no longer does (uprobe.rs read_args).
            for k in 0..MAX_ARGS {
                unsafe { core::ptr::write_volatile(&mut rec.args[k], 0) };
            }
            e.submit(submit_flags());
        }
        None => {
            bump(counter::RB_FULL);
        }
    }
    0
}

/// The FuncId the producer's records carry (set by userspace).
#[unsafe(no_mangle)]
static BENCH_FUNC: u32 = 0;

#[tracepoint]
pub fn bench_producer(_ctx: TracePointContext) -> u32 {
    let (pid, tid) = current();
    if !is_traced(pid) {
        return 0;
    }
    let func = unsafe { core::ptr::read_volatile(&BENCH_FUNC) } as u16;
    let hdr = header(EventKind::CallEnter as u16, func, pid, tid);
    match EVENTS.reserve::<CallEnter>(0) {
        Some(mut e) => {
            let rec = unsafe { &mut *e.as_mut_ptr() };
            // A launch of a never-seen function handle: grid 1200x1x1,
            // block 256x1x1, 2 KiB shared memory, stream 0x5000.
            let mut args = [0u64; MAX_ARGS];
            args[0] = 0x7f00_0000_1000;
            args[1] = 1200;
            args[2] = 1;
            args[3] = 1;
            args[4] = 256;
            args[5] = 1;
            args[6] = 1;
            args[7] = 2048;
            args[8] = 0x5000;
            args[9] = 0x7ffd_0000_0000 + hdr.seq;
            args[10] = 0;
            rec.hdr = hdr;
            rec.args = args;
            e.submit(submit_flags());
        }
        None => {
            bump(counter::RB_FULL);
        }
    }
    0
}
