//! `replay`: re-execute the kernels and memory operations of a replayable
//! tracer recording (`tracer record --replayable`, docs/recording-format.md)
//! without the program that made it, and compare its GPU time and energy
//! with the recording's (docs/replay.md).
//!
//! - [`recording`]: read and validate `NAME.rec/`;
//! - [`plan`]: pure planning (handles, streams, dependencies, address ranges,
//!   relocation candidates, coverage);
//! - [`selection`]: open and plan one process of a multi-process recording (`--pid`, `--rank`);
//! - [`data_check`]: the data files a plan's copies need are in the recording;
//! - [`exec`]: execution with the CUDA driver API (cudarc, libcuda loaded at run time);
//! - [`report`]: the validation report (JSON and text);
//! - [`energy`]: NVML energy windows;
//! - [`gpu_time`]: the replay's GPU time from CUPTI records, and the recording's own.

/// A misuse of the command line found after parsing (e.g. a `--probe` line
/// with no replayed op): `replay` exits with 2 for it, as for clap's own
/// errors; every other error is a run-time failure (exit 1).
#[derive(Debug)]
pub struct Misuse(pub String);

impl std::fmt::Display for Misuse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Misuse {}

pub mod data_check;
pub mod energy;
pub mod exec;
pub mod gpu_time;
pub mod plan;
pub mod recording;
pub mod report;
pub mod selection;
pub mod together;
