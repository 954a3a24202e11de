//! tracer as a library: the layers of docs/architecture.md, each importing
//! only the ones below it (tests/layers.rs checks it):
//!
//! `cli` → `collect`, `export` → `analysis` → `decode` → `tracer-format`,
//! `tracer-common`.
//!
//! `error` (exit codes) is a leaf any layer may use; trace files are read
//! with `tracer_format::read`.
pub mod analysis;
pub mod cli;
pub mod collect;
pub mod decode;
pub mod error;
pub mod export;

#[cfg(test)]
mod fuzz;
