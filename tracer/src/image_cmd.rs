//! `tracer image FILE`: decode a CUDA code image (see docs/cuda-images.md).
use std::io::Write as _;
use std::path::Path;

use anyhow::Context as _;

use crate::cudaimage::report;

pub fn run(path: &Path, json: bool) -> anyhow::Result<()> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let r = report::inspect(&bytes).with_context(|| path.display().to_string())?;
    let text = if json {
        serde_json::to_string_pretty(&r)? + "\n"
    } else {
        report::render_text(&r, &path.display().to_string())
    };
    match std::io::stdout().lock().write_all(text.as_bytes()) {
        // `tracer image lib.so | head` is fine.
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => return Err(e.into()),
        _ => {}
    }
    // Partial results were printed; the exit code still says the image is damaged.
    let failed = r.errors.len() + r.totals.failed_entries;
    if failed > 0 {
        anyhow::bail!(
            "{}: {} part(s) could not be decoded ({} container errors, {} entries), see above",
            path.display(),
            failed,
            r.errors.len(),
            r.totals.failed_entries
        );
    }
    Ok(())
}
