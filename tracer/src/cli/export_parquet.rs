//! `tracer export TRACE --format parquet [-o DIR] [--host NAME]`: the GPU
//! timeline and gap report the other analysis commands use, written as
//! Parquet tables (`crate::export::parquet`, docs/parquet.md).
use std::path::Path;

use anyhow::bail;

use crate::analysis::model::Trace;
use crate::analysis::timeline::Timeline;
use crate::analysis::{gaps, phases};
use crate::export::parquet;

/// Rejects an output or host the export cannot use, before the trace is read.
pub fn check(dir: &Path, o: &parquet::Options) -> anyhow::Result<()> {
    if dir.as_os_str() == "-" {
        bail!(crate::error::UsageError("--format parquet writes a directory of files: -o DIR, not -".into()));
    }
    if o.host.as_deref().is_some_and(|h| h.trim().is_empty()) {
        bail!(crate::error::UsageError("--host: an empty host name".into()));
    }
    Ok(())
}

/// Writes the tables of `t` on timeline `tl` into `dir` and says what it wrote.
pub fn run(t: &Trace, tl: &Timeline, dir: &Path, o: &parquet::Options) -> anyhow::Result<()> {
    let g = gaps::analyze(t, tl, &phases::phases(t), &gaps::GapOptions::default());
    let w = parquet::export(t, tl, &g, dir, o)?;
    let rows: Vec<String> = w.rows.iter().map(|(name, n)| format!("{name} {n}")).collect();
    eprintln!(
        "wrote {} (trace id {}, schema {}, GPU timeline: {}): {}",
        dir.display(),
        w.trace_id,
        parquet::schema::SCHEMA_VERSION,
        tl.source.as_str(),
        rows.join(", ")
    );
    Ok(())
}
