//! `tracer-format`: the files tracer writes and every reader reads, with no
//! dependency on eBPF, the CUDA driver or a terminal.
//!
//! - [`hex`]: the one formatter and parser of `"0x…"` handles and addresses
//!   and of lowercase hex byte strings (`params`);
//! - [`digest`]: SHA-256 in hex, the content addresses of a recording;
//! - [`line`]: one trace line, typed ([`line::RawLine`]), and the byte
//!   scanner that fills it without serde_json ([`line::scan_into`]);
//! - [`inert`]: names from a trace made inert for a terminal (control
//!   characters and bidi overrides escaped, long names cut with a mark), for
//!   every text output of tracer and replay;
//! - [`open`]: the one way a tool opens a file it reads: regular files
//!   only, a size cap per kind of input, and below a recording directory no
//!   link followed and nothing outside reached;
//! - [`read`]: the streaming trace reader (`.jsonl`, `.jsonl.gz`,
//!   `.jsonl.zst`, or a recording directory), with its in-place fast path;
//! - [`recording`]: the recording directory `NAME.rec/`
//!   (docs/recording-format.md): the typed manifest, its schema check, where
//!   its trace, images and data lie;
//! - [`pacing`]: what tracing added to the host gaps (the cost model replay
//!   and what-if take out of them) and the host speed of another machine;
//! - [`header`], [`footer`]: the first and last lines of a trace
//!   (docs/trace-format.md), typed where readers look, every other field kept.

pub mod digest;
pub mod footer;
pub mod header;
pub mod hex;
pub mod inert;
pub mod line;
pub mod open;
pub mod pacing;
pub mod read;
pub mod recording;
