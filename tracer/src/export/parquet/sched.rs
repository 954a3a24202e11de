//! The `thread_states` and `sched_lost` tables: the traced threads'
//! off-CPU intervals (on-CPU time is the rest of a thread's time, not a
//! row) and the windows where scheduler records were lost.
use std::path::Path;

use super::context::Context;
use super::schema::{SCHED_LOST, THREAD_STATES};
use super::table::TableWriter;
use crate::analysis::model::Trace;
use crate::analysis::model::sched::{OffState, TaskId};

pub fn thread_states(dir: &Path, t: &Trace, ctx: &Context) -> anyhow::Result<u64> {
    let mut w = TableWriter::create(dir, &THREAD_STATES)?;
    let mut off: Vec<_> = t.sched.off.values().flatten().collect();
    off.sort_by_key(|o| (o.start, o.tid));
    let i32_of = |v: Option<u32>| v.map(|x| x as i32);
    for o in off {
        let (state, known) = match o.state {
            OffState::Blocked => ("blocked", true),
            OffState::Runnable => ("runnable", true),
            OffState::Unknown => ("unknown", false),
        };
        let task = |x: &Option<TaskId>| x.as_ref().map_or((None, None, None), |k| (k.pid, k.tid, Some(k.comm.clone())));
        let (wp, wt, wc) = task(&o.waker_task);
        let (bp, bt, bc) = task(&o.behind_task);
        // The runnable part of an open interval is not known: it was still off.
        let runnable = known && !(o.open && o.state == OffState::Blocked);
        let mut r = w.row();
        ctx.fill(&mut r, None);
        r.int32(o.pid as i32)
            .int32(o.tid as i32)
            .int64(o.start as i64)
            .int64(o.end as i64)
            .int64((o.end - o.start) as i64)
            .timestamp(ctx.wall_us(o.start))
            .str(Some(state))
            .str(Some(&o.cause))
            .str(o.syscall.as_deref())
            .str(o.file.as_deref())
            .int64((o.state == OffState::Blocked).then_some((o.ready - o.start) as i64))
            .int64(runnable.then_some(o.ready as i64))
            .int64(runnable.then_some((o.end - o.ready) as i64))
            .str((runnable && o.end > o.ready).then(|| o.runnable_label()).as_deref())
            .int32(i32_of(wp))
            .int32(i32_of(wt))
            .str(wc.as_deref())
            .int32(i32_of(bp))
            .int32(i32_of(bt))
            .str(bc.as_deref())
            .bool((o.state == OffState::Runnable).then_some(o.preempted))
            .bool(o.open)
            .int64(o.stack.map(|id| id as i64));
        r.done()?;
    }
    w.finish()
}

pub fn lost(dir: &Path, t: &Trace, ctx: &Context) -> anyhow::Result<u64> {
    let mut w = TableWriter::create(dir, &SCHED_LOST)?;
    for l in &t.sched.lost_lines {
        let mut r = w.row();
        ctx.fill(&mut r, None);
        r.int64(l.start as i64)
            .int64(l.end as i64)
            .int64((l.end - l.start) as i64)
            .timestamp(ctx.wall_us(l.start))
            .int32(l.cpu.map(|c| c as i32))
            .int64(l.records.map(|n| n as i64));
        r.done()?;
    }
    w.finish()
}
