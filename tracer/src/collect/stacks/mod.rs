//! User stacks. Recording: which calls take one and what the kernel side is
//! told (`sites`), the Python interpreter layouts its frame walker follows
//! (`python_layout`) and their upkeep in the kernel's map while the
//! processes run (`python_procs`). Resolving the kernel side's stack records
//! to frames (decode/stacks.rs writes them): `maps` (a process's mappings),
//! `native` (symbols by file offset, blazesym), `python` and `linetable`
//! (CPython code objects read from the process; `python_version` the version
//! of a process from the files it maps), `merge` (the two chains as one),
//! `resolver` (all of it behind decode's `StackResolver`).
pub mod linetable;
pub mod maps;
pub mod merge;
pub mod native;
pub mod python;
pub mod python_layout;
pub mod python_procs;
pub mod python_version;
pub mod resolver;
#[cfg(test)]
mod resolver_tests;
pub mod sites;
