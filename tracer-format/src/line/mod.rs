//! One trace line, typed: [`RawLine`], the fields any line may carry
//! (docs/trace-format.md), and [`scan_into`], the byte scanner that fills it
//! without serde_json for the lines it is sure about (the readers' fast
//! path; serde_json reads the rest into the same type); [`vocab`], the
//! format's words (`type`, `op`, `direction`) as types.
//!
//! ```
//! use tracer_format::line::{RawLine, scan_into};
//! let bytes = br#"{"type":"kernel","ts":5,"pid":1,"name":"cuLaunchKernel","grid":[1,2,3]}"#;
//! let mut raw = RawLine::default();
//! if !scan_into(bytes, &mut raw) {
//!     raw = serde_json::from_slice(bytes).unwrap();
//! }
//! assert_eq!((raw.ty.as_deref(), raw.ts, raw.grid), (Some("kernel"), Some(5), Some([1, 2, 3])));
//! ```
pub mod raw;
pub mod scan;
#[cfg(test)]
mod scan_tests;
pub mod vocab;

pub use raw::{RawArgs, RawLine, StrOrNum};
pub use scan::{raw_line, scan_into};
pub use vocab::{CallOp, CopyDir, GpuActivity, LineType, MarkerOp, ProcessOp};
