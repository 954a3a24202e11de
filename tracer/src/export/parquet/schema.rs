//! The Parquet tables of `tracer export --format parquet`: names, columns,
//! types, nullability, the schema version. docs/parquet.md documents the
//! same columns (a test holds the two together).
//!
//! Every table starts with the [`CONTEXT`] columns (host, trace id, GPU), so
//! the files of many hosts and traces can be read as one table. Types are
//! the ones Spark reads natively: signed integers (handles and nanoseconds
//! fit in 63 bits), wall-clock times as TIMESTAMP(MICROS, UTC).

/// Bumped when a column is renamed, removed or changes meaning or type
/// (adding a column or a table keeps it). In every file's key-value
/// metadata ([`VERSION_KEY`]) and the `traces` table.
pub const SCHEMA_VERSION: i32 = 1;
/// The key of [`SCHEMA_VERSION`] in each file's key-value metadata.
pub const VERSION_KEY: &str = "tracer.parquet_schema_version";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ty {
    Int32,
    Int64,
    Bool,
    /// UTF-8 (BYTE_ARRAY, logical type STRING).
    Str,
    /// INT64 µs since the Unix epoch, UTC (logical type TIMESTAMP(MICROS, true)).
    Timestamp,
}

impl Ty {
    /// The column's type as DuckDB shows it (docs/parquet.md uses these names).
    pub fn sql(self) -> &'static str {
        match self {
            Ty::Int32 => "INTEGER",
            Ty::Int64 => "BIGINT",
            Ty::Bool => "BOOLEAN",
            Ty::Str => "VARCHAR",
            Ty::Timestamp => "TIMESTAMP WITH TIME ZONE",
        }
    }

    /// The primitive type and the annotation (after the name) in Parquet's message-type syntax.
    fn parquet(self) -> (&'static str, &'static str) {
        match self {
            Ty::Int32 => ("int32", ""),
            Ty::Int64 => ("int64", ""),
            Ty::Bool => ("boolean", ""),
            Ty::Str => ("binary", " (STRING)"),
            Ty::Timestamp => ("int64", " (TIMESTAMP(MICROS,true))"),
        }
    }
}

#[derive(Clone, Copy, Debug)]
pub struct Column {
    pub name: &'static str,
    pub ty: Ty,
    pub nullable: bool,
}

const fn req(name: &'static str, ty: Ty) -> Column {
    Column { name, ty, nullable: false }
}

const fn opt(name: &'static str, ty: Ty) -> Column {
    Column { name, ty, nullable: true }
}

/// One table: a file `NAME.parquet` in the output directory.
#[derive(Debug)]
pub struct Table {
    pub name: &'static str,
    /// The columns after [`CONTEXT`].
    pub columns: &'static [Column],
}

impl Table {
    /// Every column: [`CONTEXT`], then the table's own.
    pub fn all_columns(&self) -> impl Iterator<Item = &'static Column> {
        CONTEXT.iter().chain(self.columns.iter())
    }

    /// The schema in Parquet's message-type syntax.
    pub fn message_type(&self) -> String {
        let mut s = format!("message {} {{\n", self.name);
        for c in self.all_columns() {
            let rep = if c.nullable { "optional" } else { "required" };
            let (ty, annotation) = c.ty.parquet();
            s.push_str(&format!("  {rep} {ty} {}{annotation};\n", c.name));
        }
        s.push('}');
        s
    }
}

/// The first columns of every table: which host, trace and GPU a row is from.
pub const CONTEXT: &[Column] = &[
    opt("host", Ty::Str),
    req("trace_id", Ty::Str),
    opt("device", Ty::Int32),
    opt("gpu_model", Ty::Str),
    opt("gpu_bus", Ty::Str),
    opt("gpu_uuid", Ty::Str),
];

use Ty::*;

/// The columns a table of driver calls starts with (calls, launches,
/// copies; calls.rs fills them in `call_row`), then `$rest`.
macro_rules! call_columns {
    ($($rest:expr),* $(,)?) => {
        &[
            req("call_id", Int64),
            req("ts_ns", Int64),
            opt("time", Timestamp),
            opt("dur_ns", Int64),
            req("pid", Int32),
            req("tid", Int32),
            req("function", Str),
            $($rest),*
        ]
    };
}

/// The columns an idle table starts with (which scope, on which
/// timeline), then `$rest`.
macro_rules! scope_columns {
    ($($rest:expr),* $(,)?) => {
        &[
            req("scope", Str),
            req("scope_kind", Str),
            opt("pid", Int32),
            req("timeline", Str),
            req("idle_basis", Str),
            $($rest),*
        ]
    };
}

pub const TRACES: Table = Table {
    name: "traces",
    columns: &[
        req("schema_version", Int32),
        req("path", Str),
        opt("command", Str),
        opt("pid", Int32),
        opt("started_at", Timestamp),
        opt("tracer_version", Str),
        opt("driver", Str),
        opt("os_kernel", Str),
        req("gpus", Int32),
        req("timeline", Str),
        req("idle_basis", Str),
        req("lines", Int64),
        req("calls", Int64),
        opt("lost_records", Int64),
        req("missing_records", Int64),
        req("truncated", Bool),
        opt("first_ts_ns", Int64),
        opt("last_ts_ns", Int64),
    ],
};

pub const CALLS: Table = Table {
    name: "calls",
    columns: call_columns![
        req("kind", Str),
        opt("stream", Int64),
        opt("bytes", Int64),
        opt("direction", Str),
        opt("kernel", Str),
        opt("kernel_demangled", Str),
        opt("kernel_short", Str),
        req("failed", Bool),
        req("incomplete", Bool),
        req("entry_lost", Bool),
        opt("stack", Int64),
    ],
};

pub const LAUNCHES: Table = Table {
    name: "launches",
    columns: call_columns![
        opt("kernel", Str),
        opt("kernel_demangled", Str),
        opt("kernel_short", Str),
        opt("grid_x", Int32),
        opt("grid_y", Int32),
        opt("grid_z", Int32),
        opt("block_x", Int32),
        opt("block_y", Int32),
        opt("block_z", Int32),
        opt("shared_mem_bytes", Int32),
        opt("stream", Int64),
        opt("graph_exec", Int64),
        req("failed", Bool),
        opt("stack", Int64),
    ],
};

pub const COPIES: Table = Table {
    name: "copies",
    columns: call_columns![
        req("direction", Str),
        req("bytes", Int64),
        req("async", Bool),
        opt("stream", Int64),
        req("failed", Bool),
        opt("stack", Int64),
    ],
};

pub const GPU_ACTIVITY: Table = Table {
    name: "gpu_activity",
    columns: &[
        req("source", Str),
        req("kind", Str),
        opt("name", Str),
        req("start_ns", Int64),
        req("end_ns", Int64),
        req("dur_ns", Int64),
        opt("time", Timestamp),
        req("pid", Int32),
        req("stream", Int64),
        opt("stream_tid", Int32),
        req("ops", Int32),
        req("approximate", Bool),
        opt("call_id", Int64),
    ],
};

pub const IDLE_GAPS: Table = Table {
    name: "idle_gaps",
    columns: scope_columns![
        req("start_ns", Int64),
        req("end_ns", Int64),
        req("dur_ns", Int64),
        opt("time", Timestamp),
        req("main_cause", Str),
    ],
};

pub const IDLE_SCOPES: Table = Table {
    name: "idle_scopes",
    columns: scope_columns![
        req("window_start_ns", Int64),
        req("window_end_ns", Int64),
        req("window_ns", Int64),
        opt("busy_ns", Int64),
        req("idle_ns", Int64),
        req("gaps", Int64),
    ],
};

pub const IOCTLS: Table = Table {
    name: "ioctls",
    columns: &[
        req("ts_ns", Int64),
        opt("time", Timestamp),
        req("dur_ns", Int64),
        req("pid", Int32),
        req("tid", Int32),
        req("name", Str),
        req("file_op", Bool),
        opt("cuda_call", Str),
        req("failed", Bool),
    ],
};

pub const POWER: Table = Table {
    name: "power",
    columns: &[
        req("ts_ns", Int64),
        opt("time", Timestamp),
        opt("energy_mj", Int64),
        opt("power_mw", Int64),
        opt("sm_clock_mhz", Int32),
        opt("mem_clock_mhz", Int32),
        opt("util_gpu_pct", Int32),
        opt("util_mem_pct", Int32),
        opt("temp_c", Int32),
    ],
};

pub const MARKERS: Table = Table {
    name: "markers",
    columns: &[
        req("ts_ns", Int64),
        opt("time", Timestamp),
        req("pid", Int32),
        req("tid", Int32),
        req("op", Str),
        req("label", Str),
        opt("tokens", Int64),
    ],
};

/// The traced threads' off-CPU intervals (`sched` off_cpu lines); on-CPU
/// time is not a row (it is the rest of the thread's time).
pub const THREAD_STATES: Table = Table {
    name: "thread_states",
    columns: &[
        req("pid", Int32),
        req("tid", Int32),
        req("start_ns", Int64),
        req("end_ns", Int64),
        req("dur_ns", Int64),
        opt("time", Timestamp),
        req("state", Str),
        req("cause", Str),
        opt("syscall", Str),
        opt("file", Str),
        opt("blocked_ns", Int64),
        opt("ready_ns", Int64),
        opt("runnable_ns", Int64),
        opt("runnable_cause", Str),
        opt("waker_pid", Int32),
        opt("waker_tid", Int32),
        opt("waker_comm", Str),
        opt("behind_pid", Int32),
        opt("behind_tid", Int32),
        opt("behind_comm", Str),
        opt("preempted", Bool),
        req("open", Bool),
        opt("stack", Int64),
    ],
};

/// The user stacks (`stack` lines): one row per frame, innermost first
/// (`depth` 0); the `stack` columns of the call tables and
/// `thread_states` name `stack_id`.
pub const STACKS: Table = Table {
    name: "stacks",
    columns: &[
        req("stack_id", Int64),
        req("pid", Int32),
        req("depth", Int32),
        req("kind", Str),
        req("function", Str),
        opt("file", Str),
        opt("line", Int32),
        opt("module", Str),
        opt("address", Int64),
        opt("offset", Int64),
    ],
};

/// Windows where scheduler records of a CPU were lost (`sched` lost lines).
pub const SCHED_LOST: Table = Table {
    name: "sched_lost",
    columns: &[
        req("start_ns", Int64),
        req("end_ns", Int64),
        req("dur_ns", Int64),
        opt("time", Timestamp),
        opt("cpu", Int32),
        opt("records", Int64),
    ],
};

/// Every table, in the order they are written.
pub const TABLES: &[&Table] = &[
    &TRACES,
    &CALLS,
    &LAUNCHES,
    &COPIES,
    &GPU_ACTIVITY,
    &IDLE_SCOPES,
    &IDLE_GAPS,
    &IOCTLS,
    &POWER,
    &MARKERS,
    &THREAD_STATES,
    &SCHED_LOST,
    &STACKS,
];
