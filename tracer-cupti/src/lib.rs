//! `libtracer_cupti.so`: the injection library of `tracer record --gpu-timestamps`.
//!
//! The CUDA driver loads the library named by `CUDA_INJECTION64_PATH` during
//! `cuInit` and calls its exported `InitializeInjection`. We then dlopen
//! libcupti (no link-time CUDA dependency), enable CUPTI's activity records
//! for kernels, copies and sets, have them timestamped with CLOCK_MONOTONIC,
//! and send them, encoded by [`wire`], to the FIFO named by
//! `TRACER_CUPTI_FIFO`, where the tracer turns them into trace lines.
//! See docs/gpu-timestamps.md.

pub mod driver_counts;
pub mod records;
pub mod sample;
pub mod wire;

#[cfg(feature = "collect")]
pub mod collect;
#[cfg(any(feature = "injection", feature = "collect"))]
pub mod cupti;
#[cfg(feature = "injection")]
mod demand;
#[cfg(feature = "injection")]
mod inject;
#[cfg(feature = "injection")]
mod sink;
