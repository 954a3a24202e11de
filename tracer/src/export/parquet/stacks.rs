//! The `stacks` table: every frame of every user stack (`stack` lines),
//! innermost first, so a call's or an off-CPU interval's `stack` joins its
//! frames (e.g. its leaf Python frame: the lowest `depth` of kind `python`).
use std::path::Path;

use super::context::Context;
use super::schema::STACKS;
use super::table::TableWriter;
use crate::analysis::model::Trace;

pub fn stacks(dir: &Path, t: &Trace, ctx: &Context) -> anyhow::Result<u64> {
    let mut w = TableWriter::create(dir, &STACKS)?;
    for s in t.stacks.iter() {
        for (depth, f) in s.frames.iter().enumerate() {
            let mut r = w.row();
            ctx.fill(&mut r, None);
            r.int64(Some(s.id as i64))
                .int32(Some(s.pid as i32))
                .int32(Some(depth as i32))
                .str(Some(f.kind.as_str()))
                .str(Some(&f.func))
                .str(f.file.as_deref())
                .int32(f.line.map(|l| l as i32))
                .str(f.module.as_deref())
                .int64(f.addr.map(|a| a as i64))
                .int64(f.offset.map(|o| o as i64));
            r.done()?;
        }
    }
    w.finish()
}
