//! Names from a trace made inert for a terminal: tracer-format's
//! [`tracer_format::inert`], shared with replay's text reports.
pub use tracer_format::inert::*;
