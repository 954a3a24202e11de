//! User stacks: the kernel side's stack records resolved to frames
//! (decode/stacks.rs writes them): `maps` (a process's mappings), `native`
//! (symbols by file offset, blazesym), `python` and `linetable` (CPython
//! code objects read from the process; `python_version` the version of a
//! process from the files it maps), `merge` (the two chains as one),
//! `resolver` (all of it behind decode's `StackResolver`).
pub mod linetable;
pub mod maps;
pub mod merge;
pub mod native;
pub mod python;
pub mod python_version;
pub mod resolver;
#[cfg(test)]
mod resolver_tests;
