//! Kernel families for `tracer plot --compare`'s second figure: the shared
//! classification of tracer-common (also `replay`'s report's).
pub use tracer_common::family::{FAMILIES, index, of_op};
