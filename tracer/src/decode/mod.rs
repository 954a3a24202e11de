//! The decode layer: eBPF records and captured bytes into trace lines. Pure
//! functions, no I/O: the collector (`crate::collect`) feeds them records,
//! the analyses read what they write.
//!
//! - [`calls`]: the record stream → call lines (entry/exit pairing, kernel
//!   names, copy directions, process events); [`fastline`] and [`fastcall`]
//!   write the frequent lines (launches, 1-D copies, sets) straight to bytes;
//! - [`args`]: captured arguments and structs → JSON; [`cuda_names`]: CUresult
//!   and enum names; [`params`]: a kernel's captured parameter bytes;
//! - [`devices`]: contexts and streams → the device each call ran on;
//! - [`ioctls`] and [`nvioctl`]: ioctls on /dev/nvidia* → decoded lines
//!   (escapes, RM control commands, classes, UVM);
//! - [`sched`]: scheduler switches and wake-ups → off-CPU intervals;
//! - [`stacks`]: stack records → `stack` lines and the `stack` field of
//!   call and `off_cpu` lines (the frames resolved by collect/stacks/);
//! - [`graph_calls`]: CUDA graph calls (stream capture, nodes, execs);
//! - [`gpu_lines`]: CUPTI activity (tracer-cupti's wire format) → `gpu` lines;
//! - [`cudaimage`]: fatbins, cubins and PTX → entries and kernel layouts.
pub mod args;
pub mod calls;
pub mod cuda_names;
pub mod cudaimage;
pub mod devices;
pub mod event_line;
pub mod fastcall;
#[cfg(test)]
mod fastcall_tests;
pub mod fastline;
pub mod gpu_lines;
pub mod graph_calls;
pub mod graph_structs;
pub mod ioctls;
pub mod nvioctl;
pub mod params;
pub mod sched;
pub mod stacks;
#[cfg(test)]
mod stacks_tests;
