//! `tracer export --format pprof`: the trace's stacks as a pprof profile
//! (profile.proto, gzip-compressed), for `go tool pprof`, speedscope and
//! other pprof readers.
pub mod builder;
pub mod proto;

use std::io::Write;

use prost::Message as _;

/// Writes `p` encoded and gzip-compressed (the on-disk form of profile.proto).
pub fn write_gz<W: Write>(p: &proto::Profile, w: W) -> std::io::Result<W> {
    let mut gz = flate2::write::GzEncoder::new(w, flate2::Compression::default());
    gz.write_all(&p.encode_to_vec())?;
    gz.finish()
}
