//! Types shared by the eBPF programs (`tracer-ebpf`) and the user side (`tracer`).
//!
//! Everything here is `no_std`: fixed-size `#[repr(C)]` records with explicit
//! type ids ([`event::EventKind`]) and compile-time size asserts, the table of
//! probed libcuda functions ([`funcs`]) and the 64-bit attach cookie that tells
//! the one generic uprobe program what to capture for each function
//! ([`cookie::Cookie`]). The `user` feature adds decoding helpers and the
//! aya `Pod` impls of the map values (`user`), as kunai's `bpf_events/user.rs`.
#![no_std]

pub mod cookie;
pub mod event;
pub mod family;
pub mod funcs;
pub mod graph;
pub mod libopen;
pub mod params;
pub mod stack;

#[cfg(feature = "user")]
pub mod decode;
#[cfg(feature = "user")]
pub mod user;
