//! Kernel families for the report's breakdown: the shared classification of
//! tracer-common (also `tracer plot --compare`'s): GEMM, attention,
//! elementwise, reduction, other; copies and sets are their own family.
pub use tracer_common::family::{FAMILIES, family};
