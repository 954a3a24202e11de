//! The `gpu_activity`, `idle_scopes` and `idle_gaps` tables: the GPU
//! timeline the export was given and `tracer gaps`' scopes and gaps on it.
use std::collections::HashMap;
use std::path::Path;

use super::calls::Names;
use super::context::Context;
use super::schema::{GPU_ACTIVITY, IDLE_GAPS, IDLE_SCOPES};
use super::table::TableWriter;
use crate::analysis::gap_causes::main_causes;
use crate::analysis::gaps::{self, GapReport};
use crate::analysis::model::Trace;
use crate::analysis::timeline::{Source, Timeline, link_measured_to_launches};

pub fn activity(dir: &Path, t: &Trace, tl: &Timeline, ctx: &Context, names: &Names) -> anyhow::Result<u64> {
    // measured intervals carry no call: matched to their launches as Perfetto's flows are
    let linked: HashMap<(usize, usize), u32> = if tl.streams.iter().any(|s| s.source == Source::Measured) {
        link_measured_to_launches(t, tl).into_iter().map(|(s, i, c)| ((s, i), c)).collect()
    } else {
        HashMap::new()
    };
    let mut w = TableWriter::create(dir, &GPU_ACTIVITY)?;
    for (si, s) in tl.streams.iter().enumerate() {
        for (ii, iv) in s.intervals.iter().enumerate() {
            let call = if iv.call != u32::MAX { Some(iv.call) } else { linked.get(&(si, ii)).copied() };
            let mut r = w.row();
            ctx.fill(&mut r, Some(s.device));
            r.str(Some(s.source.as_str()))
                .str(Some(iv.kind.as_str()))
                .bytes(names.get(iv.name))
                .int64(iv.start as i64)
                .int64(iv.end as i64)
                .int64(iv.dur() as i64)
                .timestamp(ctx.wall_us(iv.start))
                .int32(s.key.pid as i32)
                .int64(s.key.handle as i64)
                .int32((s.key.tid != 0).then_some(s.key.tid as i32))
                .int32(iv.ops as i32)
                .bool(iv.approximate)
                .int64(call.map(|c| c as i64));
            r.done()?;
        }
    }
    w.finish()
}

/// One row per scope of the gap report (a GPU, a process): its window and idle time.
pub fn scopes(dir: &Path, g: &GapReport, ctx: &Context) -> anyhow::Result<u64> {
    let mut w = TableWriter::create(dir, &IDLE_SCOPES)?;
    for s in &g.scopes {
        let o = &s.overall;
        let mut r = w.row();
        ctx.fill(&mut r, s.device);
        r.str(Some(&s.scope))
            .str(Some(s.kind))
            .int32(scope_pid(s))
            .str(Some(g.timeline.as_str()))
            .str(Some(g.idle_basis.as_str()))
            .int64(s.window.0 as i64)
            .int64(s.window.1 as i64)
            .int64(o.window_ns as i64)
            .int64(o.busy_ns.map(|b| b as i64))
            .int64(o.idle_ns as i64)
            .int64(o.count as i64);
        r.done()?;
    }
    w.finish()
}

/// Every gap of every scope, with its main cause.
pub fn gap_rows(dir: &Path, t: &Trace, tl: &Timeline, g: &GapReport, ctx: &Context) -> anyhow::Result<u64> {
    let first_work = gaps::first_work(t, tl);
    let mut w = TableWriter::create(dir, &IDLE_GAPS)?;
    for s in &g.scopes {
        let causes = main_causes(t, s, &first_work);
        // zero-length gaps are none (`tracer gaps` counts the same way)
        for (&(a, b), cause) in s.gaps.iter().zip(causes).filter(|((a, b), _)| b > a) {
            let mut r = w.row();
            ctx.fill(&mut r, s.device);
            r.str(Some(&s.scope))
                .str(Some(s.kind))
                .int32(scope_pid(s))
                .str(Some(g.timeline.as_str()))
                .str(Some(g.idle_basis.as_str()))
                .int64(a as i64)
                .int64(b as i64)
                .int64((b - a) as i64)
                .timestamp(ctx.wall_us(a))
                .str(Some(cause));
            r.done()?;
        }
    }
    w.finish()
}

/// The process of a process scope.
fn scope_pid(s: &gaps::ScopeReport) -> Option<i32> {
    if s.kind == "process" { s.pids.iter().next().map(|&p| p as i32) } else { None }
}
