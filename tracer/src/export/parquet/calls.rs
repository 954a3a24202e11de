//! The `calls`, `launches` and `copies` tables: driver calls from the model.
use parquet::data_type::ByteArray;

use super::context::Context;
use super::schema::{CALLS, COPIES, LAUNCHES};
use super::table::{Row, TableWriter};
use crate::analysis::model::{Call, Dir, FLAG_RETURNED, Kind, NO_STR, NONE, Trace};
use std::path::Path;

/// The interned strings of the trace as Parquet values (shared by the
/// rows), with each kernel name's demangled and short spellings
/// (analysis/kernel_names.rs; short names distinct over the trace,
/// analysis/short_names.rs).
pub struct Names {
    raw: Vec<ByteArray>,
    full: Vec<ByteArray>,
    short: Vec<ByteArray>,
}

impl Names {
    pub fn of(t: &Trace) -> Names {
        use crate::analysis::kernel_names::NameStyle;
        let names = t.strings.names();
        let short = crate::analysis::short_names::ShortNames::of_trace(t);
        let spell = |style| names.iter().map(|s| ByteArray::from(&*short.display(s, style))).collect();
        Names {
            raw: names.iter().map(|s| ByteArray::from(&**s)).collect(),
            full: spell(NameStyle::Full),
            short: spell(NameStyle::Short),
        }
    }
    /// The string of id `i`, None for [`NO_STR`].
    pub fn get(&self, i: u32) -> Option<&ByteArray> {
        if i == NO_STR { None } else { self.raw.get(i as usize) }
    }
    /// Kernel name `i` demangled (as recorded when not C++).
    pub fn full(&self, i: u32) -> Option<&ByteArray> {
        if i == NO_STR { None } else { self.full.get(i as usize) }
    }
    /// Kernel name `i`'s base name.
    pub fn short(&self, i: u32) -> Option<&ByteArray> {
        if i == NO_STR { None } else { self.short.get(i as usize) }
    }
}

/// The GPU a call's work went to. The model does not record it yet: GPU 0
/// when the header lists exactly one GPU, else unknown.
fn device(ctx: &Context, c: &Call) -> Option<u32> {
    c.device().or_else(|| (ctx.gpu_count() == 1).then_some(0))
}

/// The CUgraphExec a launch was expanded from (None: launched directly):
/// the expanded cuGraphLaunch before a graph node keeps it in `obj`.
fn graph_exec(exec: Option<u64>, c: &Call) -> Option<i64> {
    c.from_graph().then_some(exec).flatten().map(|e| e as i64)
}

pub fn kind_name(k: Kind) -> &'static str {
    match k {
        Kind::Launch => "launch",
        Kind::GraphLaunch => "graph_launch",
        Kind::CopyAsync => "copy_async",
        Kind::Copy => "copy",
        Kind::MemsetAsync => "memset_async",
        Kind::Memset => "memset",
        Kind::Alloc => "alloc",
        Kind::Free => "free",
        Kind::StreamSync => "stream_sync",
        Kind::CtxSync => "ctx_sync",
        Kind::EventSync => "event_sync",
        Kind::Query => "query",
        Kind::StreamWaitEvent => "stream_wait_event",
        Kind::EventRecord => "event_record",
        Kind::StreamCreate => "stream_create",
        Kind::Module => "module",
        Kind::Init => "init",
        Kind::Context => "context",
        Kind::Captured => "captured",
        Kind::Other => "other",
    }
}

/// Duration, unless the call has none (no return probe, or it never returned).
fn dur(c: &Call) -> Option<i64> {
    (c.flags & FLAG_RETURNED != 0 || c.dur > 0).then_some(c.dur as i64)
}

/// The stack id the call's line named (a graph node: its launch's).
fn stack(t: &Trace, c: &Call) -> Option<i64> {
    t.stacks.call_stack_id(c).map(|id| id as i64)
}

fn stream(c: &Call) -> Option<i64> {
    (c.stream != NONE).then_some(c.stream as i64)
}

fn is_copy(k: Kind) -> bool {
    matches!(k, Kind::Copy | Kind::CopyAsync)
}

fn sized(k: Kind) -> bool {
    matches!(k, Kind::Copy | Kind::CopyAsync | Kind::Memset | Kind::MemsetAsync | Kind::Alloc)
}

/// Starts the row of call `i` (`c`): the context columns, then those every
/// table of calls starts with (schema.rs `call_columns!`).
fn call_row<'w>(w: &'w mut TableWriter, ctx: &Context, names: &Names, i: usize, c: &Call) -> Row<'w> {
    let mut r = w.row();
    ctx.fill(&mut r, device(ctx, c));
    r.int64(i as i64)
        .int64(c.ts as i64)
        .timestamp(ctx.wall_us(c.ts))
        .int64(dur(c))
        .int32(c.pid as i32)
        .int32(c.tid as i32)
        .bytes(names.get(c.func));
    r
}

pub fn calls(dir: &Path, t: &Trace, ctx: &Context, names: &Names) -> anyhow::Result<u64> {
    let mut w = TableWriter::create(dir, &CALLS)?;
    for (i, c) in t.calls.iter().enumerate() {
        let mut r = call_row(&mut w, ctx, names, i, c);
        r.str(Some(kind_name(c.kind)))
            .int64(stream(c))
            .int64(sized(c.kind).then_some(c.size as i64))
            .str((is_copy(c.kind) && c.dir != Dir::None).then(|| c.dir.as_str()))
            .bytes(names.get(c.kernel))
            .bytes(names.full(c.kernel))
            .bytes(names.short(c.kernel))
            .bool(c.failed())
            .bool(c.incomplete())
            .bool(c.entry_lost())
            .int64(stack(t, c));
        r.done()?;
    }
    w.finish()
}

pub fn launches(dir: &Path, t: &Trace, ctx: &Context, names: &Names) -> anyhow::Result<u64> {
    let mut w = TableWriter::create(dir, &LAUNCHES)?;
    let mut exec = None;
    for (i, c) in t.calls.iter().enumerate() {
        if c.expanded() {
            exec = Some(c.obj);
        }
        if c.kind != Kind::Launch {
            continue;
        }
        let g = t.geom(c.geom);
        let dim = |f: fn(&crate::analysis::model::Geom) -> u32| g.map(|g| f(g) as i32);
        let mut r = call_row(&mut w, ctx, names, i, c);
        r.bytes(names.get(c.kernel))
            .bytes(names.full(c.kernel))
            .bytes(names.short(c.kernel))
            .int32(dim(|g| g.grid[0]))
            .int32(dim(|g| g.grid[1]))
            .int32(dim(|g| g.grid[2]))
            .int32(dim(|g| g.block[0]))
            .int32(dim(|g| g.block[1]))
            .int32(dim(|g| g.block[2]))
            .int32(dim(|g| g.shared_mem))
            .int64(stream(c))
            .int64(graph_exec(exec, c))
            .bool(c.failed())
            .int64(stack(t, c));
        r.done()?;
    }
    w.finish()
}

pub fn copies(dir: &Path, t: &Trace, ctx: &Context, names: &Names) -> anyhow::Result<u64> {
    let mut w = TableWriter::create(dir, &COPIES)?;
    for (i, c) in t.calls.iter().enumerate().filter(|(_, c)| is_copy(c.kind)) {
        let mut r = call_row(&mut w, ctx, names, i, c);
        r.str(Some(c.dir.as_str()))
            .int64(c.size as i64)
            .bool(c.kind == Kind::CopyAsync)
            .int64(stream(c))
            .bool(c.failed())
            .int64(stack(t, c));
        r.done()?;
    }
    w.finish()
}
