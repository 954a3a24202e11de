//! tracer as a library: the layers of docs/architecture.md, each importing
//! only the ones below it (tests/layers.rs checks it):
//!
//! `cli` → `collect`, `export` → `analysis` → `decode` → `tracer-format`,
//! `tracer-common`.
//!
//! `error` (exit codes) and `reader` (trace files) are leaves any layer may use.
pub mod analysis;
pub mod cli;
pub mod collect;
pub mod decode;
pub mod error;
pub mod export;
pub mod reader;

#[cfg(test)]
mod fuzz;
