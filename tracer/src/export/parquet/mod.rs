//! `tracer export --format parquet -o DIR`: the trace as Parquet tables, one
//! file per table (`DIR/calls.parquet`, `DIR/launches.parquet`, …), for
//! DuckDB, Spark, pandas or any Parquet reader. Schema (versioned) in
//! [`schema`] and docs/parquet.md.
//!
//! Every table begins with the context columns (host, trace id, GPU), so the
//! directories of many hosts' traces are queried as one table (e.g. DuckDB's
//! `read_parquet('fleet/*/calls.parquet')`). Every table file is written,
//! empty or not, so such globs always find them all.
use std::path::Path;

use anyhow::{Context as _, bail};

use crate::analysis::basis::IdleBasis;
use crate::analysis::gaps::GapReport;
use crate::analysis::model::Trace;
use crate::analysis::timeline::Timeline;

mod calls;
mod context;
mod gpu;
mod sched;
pub mod schema;
mod side;
mod stacks;
mod table;
#[cfg(test)]
mod tests;

use calls::Names;
pub use context::Context;
use schema::{SCHEMA_VERSION, TABLES, TRACES};
use table::TableWriter;

#[derive(Clone, Debug, Default)]
pub struct Options {
    /// The `host` column instead of the header's host.
    pub host: Option<String>,
    /// Overwrite table files that exist.
    pub force: bool,
}

/// What was written: rows per table, in [`TABLES`] order.
#[derive(Debug)]
pub struct Written {
    pub trace_id: String,
    pub rows: Vec<(&'static str, u64)>,
}

/// Writes every table of `t` into `dir` (created if missing). `tl` is the
/// GPU timeline (gpu_activity) and `gaps` the gap report on it with every
/// gap listed (idle_scopes, idle_gaps).
pub fn export(t: &Trace, tl: &Timeline, gaps: &GapReport, dir: &Path, o: &Options) -> anyhow::Result<Written> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create directory {}", dir.display()))?;
    if !o.force
        && let Some(p) = TABLES.iter().map(|t| dir.join(format!("{}.parquet", t.name))).find(|p| p.exists())
    {
        bail!("output file {} exists (use --force to overwrite)", p.display());
    }
    let ctx = Context::of(t, o.host.as_deref());
    let names = Names::of(t);
    let rows = vec![
        (TRACES.name, traces(dir, t, tl, &ctx)?),
        ("calls", calls::calls(dir, t, &ctx, &names)?),
        ("launches", calls::launches(dir, t, &ctx, &names)?),
        ("copies", calls::copies(dir, t, &ctx, &names)?),
        ("gpu_activity", gpu::activity(dir, t, tl, &ctx, &names)?),
        ("idle_scopes", gpu::scopes(dir, gaps, &ctx)?),
        ("idle_gaps", gpu::gap_rows(dir, t, tl, gaps, &ctx)?),
        ("ioctls", side::ioctls(dir, t, &ctx, &names)?),
        ("power", side::power(dir, t, &ctx)?),
        ("markers", side::markers(dir, t, &ctx)?),
        ("thread_states", sched::thread_states(dir, t, &ctx)?),
        ("sched_lost", sched::lost(dir, t, &ctx)?),
        ("stacks", stacks::stacks(dir, t, &ctx)?),
    ];
    debug_assert!(rows.iter().map(|r| r.0).eq(TABLES.iter().map(|t| t.name)));
    Ok(Written { trace_id: ctx.trace_id.clone(), rows })
}

/// The one row of the `traces` table: what the trace is and what it lacks.
fn traces(dir: &Path, t: &Trace, tl: &Timeline, ctx: &Context) -> anyhow::Result<u64> {
    let null = serde_json::Value::Null;
    let h = t.header.as_ref().unwrap_or(&null);
    let s = |k: &str| h[k].as_str();
    let command = h["command"].as_array().map(|a| a.iter().filter_map(|x| x.as_str()).collect::<Vec<_>>().join(" "));
    let span = t.span();
    let mut w = TableWriter::create(dir, &TRACES)?;
    let mut r = w.row();
    ctx.fill(&mut r, None);
    r.int32(SCHEMA_VERSION)
        .str(Some(&t.path))
        .str(command.as_deref())
        .int32(h["pid"].as_u64().map(|p| p as i32))
        .timestamp(h["clock"]["realtime_ns"].as_u64().map(|ns| (ns / 1000) as i64))
        .str(s("tracer_version"))
        .str(s("driver"))
        .str(s("os_kernel"))
        .int32(ctx.gpu_count() as i32)
        .str(Some(tl.source.as_str()))
        .str(Some(IdleBasis::of(tl).as_str()))
        .int64(t.lines as i64)
        .int64(t.calls.len() as i64)
        .int64(t.footer.as_ref().and_then(|f| f["lost"]["total"].as_u64()).map(|n| n as i64))
        .int64(t.loss.missing() as i64)
        .bool(t.truncated)
        .int64(span.map(|s| s.0 as i64))
        .int64(span.map(|s| s.1 as i64));
    r.done()?;
    w.finish()
}
