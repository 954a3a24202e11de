//! The `ioctls`, `power` and `markers` tables: what was recorded beside the
//! driver calls.
use std::path::Path;

use super::calls::Names;
use super::context::Context;
use super::schema::{IOCTLS, MARKERS, POWER};
use super::table::TableWriter;
use crate::analysis::model::{MarkerOp, Trace};

pub fn ioctls(dir: &Path, t: &Trace, ctx: &Context, names: &Names) -> anyhow::Result<u64> {
    let mut w = TableWriter::create(dir, &IOCTLS)?;
    for i in &t.ioctls {
        let mut r = w.row();
        ctx.fill(&mut r, None);
        r.int64(i.ts as i64)
            .timestamp(ctx.wall_us(i.ts))
            .int64(i.dur as i64)
            .int32(i.pid as i32)
            .int32(i.tid as i32)
            .bytes(names.get(i.name))
            .bool(i.file_op)
            .bytes(names.get(i.cuda_call))
            .bool(i.failed);
        r.done()?;
    }
    w.finish()
}

pub fn power(dir: &Path, t: &Trace, ctx: &Context) -> anyhow::Result<u64> {
    let mut w = TableWriter::create(dir, &POWER)?;
    let i32_of = |v: Option<u32>| v.map(|x| x as i32);
    for p in &t.power {
        let mut r = w.row();
        ctx.fill(&mut r, Some(p.gpu));
        r.int64(p.ts as i64)
            .timestamp(ctx.wall_us(p.ts))
            .int64(p.energy_mj.map(|x| x as i64))
            .int64(p.power_mw.map(|x| x as i64))
            .int32(i32_of(p.sm_clock_mhz))
            .int32(i32_of(p.mem_clock_mhz))
            .int32(i32_of(p.util_gpu_pct))
            .int32(i32_of(p.util_mem_pct))
            .int32(i32_of(p.temp_c));
        r.done()?;
    }
    w.finish()
}

pub fn markers(dir: &Path, t: &Trace, ctx: &Context) -> anyhow::Result<u64> {
    let mut w = TableWriter::create(dir, &MARKERS)?;
    for m in &t.markers {
        let op = match m.op {
            MarkerOp::Phase => "phase",
            MarkerOp::Iteration => "iteration",
            MarkerOp::Mark => "mark",
        };
        let mut r = w.row();
        ctx.fill(&mut r, None);
        r.int64(m.ts as i64)
            .timestamp(ctx.wall_us(m.ts))
            .int32(m.pid as i32)
            .int32(m.tid as i32)
            .str(Some(op))
            .str(Some(&m.label))
            .int64(m.tokens.map(|x| x as i64));
        r.done()?;
    }
    w.finish()
}
