//! tracer's kernel side: one generic uprobe/uretprobe pair for every probed
//! libcuda function (the attach cookie says what to capture), and sched
//! tracepoints that keep the set of traced tasks.
#![no_std]
#![allow(
    clippy::needless_borrows_for_generic_args,
    reason = "map keys and values stay where the program built them on its 512-byte stack, as the verifier was shown them"
)]
#![allow(
    internal_features,
    reason = "core_intrinsics' atomic_xadd: the scheduler programs' cross-CPU counts (sched.rs)"
)]
#![feature(core_intrinsics)]
#![no_main]

mod args;
mod bench;
mod counts;
mod graph;
mod graph_params;
mod launch;
mod libwatch;
mod maps;
mod nvfile;
mod out_ptrs;
mod proc;
mod pystack;
mod replay;
mod sample;
mod sched;
mod select;
mod stack;
mod uprobe;

#[cfg(not(test))]
#[panic_handler]
fn panic(_info: &core::panic::PanicInfo) -> ! {
    loop {}
}

#[unsafe(link_section = "license")]
#[unsafe(no_mangle)]
static LICENSE: [u8; 13] = *b"Dual MIT/GPL\0";
