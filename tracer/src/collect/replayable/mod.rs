//! `tracer record --replayable`: recordings that can be re-executed
//! (docs/recording-format.md).
pub mod probes;
pub mod recorder;
pub mod registry;
pub mod store;

/// One line for the end of `tracer record --replayable` (the coverage is
/// in the summary printed before it).
pub fn summary_line(r: &recorder::Recorder, manifest: &std::path::Path) -> String {
    let bytes: u64 = r.reg.images.iter().map(|i| i.bytes).sum();
    format!(
        "recording: {} distinct images ({:.1} MB), {} files of copy data ({:.1} MB); {}",
        r.reg.images.len(),
        bytes as f64 / 1e6,
        std::fs::read_dir(r.store.dir.join(tracer_format::recording::DATA)).map(|d| d.count()).unwrap_or(0),
        r.data_bytes as f64 / 1e6,
        manifest.display()
    )
}
