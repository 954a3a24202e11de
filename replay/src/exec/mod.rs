//! Execution on the GPU with the CUDA driver API (cudarc `driver::sys`,
//! libcuda loaded at run time: no link-time CUDA dependency).

pub mod cuda;
pub mod graph_execs;
pub mod memory;
pub mod probe;
pub mod session;
pub mod skip;

pub use session::{Graph, HostGap, L2Flush, OutputCheck, Pace, Session, SessionOpts, Timed};
