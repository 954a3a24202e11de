//! `cargo xtask bench …`: measurements, not tests. Each prints its table and
//! writes it as JSON (and Markdown) so figures can be committed with the
//! command that made them.

pub mod collector;
pub mod exit;
mod host;
pub mod overhead;
pub mod readers;
mod stats;
