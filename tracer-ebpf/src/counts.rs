//! `tracer record --counts`: the hot functions (launches and the other
//! calls probed entry-only by default) are counted in kernel maps instead
//! of recorded one by one: no ring-buffer record, no user-memory read,
//! no timestamp. Per function: calls; per launched kernel (process and
//! function handle): launches. Userspace reads both once the probes are
//! detached and writes them as `count` and `kernel_count` lines.
use aya_ebpf::{
    bindings::BPF_F_NO_PREALLOC,
    macros::{map, uprobe},
    maps::{PerCpuArray, PerCpuHashMap},
    programs::ProbeContext,
};
use tracer_common::event::counter;

use crate::args::cookie;
use crate::maps::{bump, current, is_traced};

/// Calls per function id (FuncId), per CPU. Size set by userspace.
#[map]
pub static CALL_COUNTS: PerCpuArray<u64> = PerCpuArray::with_max_entries(1, 0);

/// (tgid << 32 | function id, CUfunction / CUkernel handle) -> launches,
/// per CPU (values allocated when a CPU first launches that kernel). Size
/// set by userspace; a launch whose kernel finds no room is still in
/// CALL_COUNTS and counted in COUNTERS[KERNEL_COUNT_FULL].
#[map]
pub static KERNEL_COUNTS: PerCpuHashMap<[u64; 2], u64> = PerCpuHashMap::with_max_entries(1, BPF_F_NO_PREALLOC);

#[uprobe]
pub fn cu_count(ctx: ProbeContext) -> u32 {
    let (pid, _) = current();
    if !is_traced(pid) {
        return 0;
    }
    let c = cookie(&ctx);
    let f = c.func() as u32;
    if let Some(p) = CALL_COUNTS.get_ptr_mut(f) {
        // Per CPU (see maps.rs bump): a plain increment.
        unsafe { *p += 1 };
    }
    // Launch functions carry where their handle is (cookie bits 55..64).
    if c.kernel_params_arg().is_none() {
        return 0;
    }
    let regs = unsafe { &*ctx.regs };
    // Both read at constant offsets: a selected field address would be a
    // modified context pointer, which the verifier refuses.
    let (rdi, rsi) = unsafe { (core::ptr::read_volatile(&regs.rdi), core::ptr::read_volatile(&regs.rsi)) };
    let handle = if c.func_handle_arg() == 1 { rsi } else { rdi };
    let key = [((pid as u64) << 32) | f as u64, handle];
    // Per CPU, like COUNTERS (maps.rs bump): a plain increment.
    match KERNEL_COUNTS.get_ptr_mut(&key) {
        Some(v) => unsafe { *v += 1 },
        None => {
            if KERNEL_COUNTS.insert(&key, &1, 0).is_err() {
                bump(counter::KERNEL_COUNT_FULL);
            }
        }
    }
    0
}
