//! [`RawLine`]: the fields any trace line may carry (docs/trace-format.md),
//! borrowed from the line's bytes where they need no unescaping. Every field
//! is optional; everything else on a line is ignored. Filled by
//! [`super::scan::scan_into`] (the fast path) or by serde_json (the
//! reference, and the errors).
use std::borrow::Cow;

use serde::Deserialize;

/// A field that is a string on some lines and a number on others.
#[derive(Deserialize, Debug, PartialEq)]
#[serde(untagged)]
pub enum StrOrNum<'a> {
    /// A non-negative integer.
    Num(u64),
    /// Any other number.
    Float(f64),
    /// A string.
    #[serde(borrow)]
    Str(Cow<'a, str>),
}

impl StrOrNum<'_> {
    /// The value as text (a number as Rust formats it).
    pub fn text(&self) -> String {
        match self {
            StrOrNum::Num(n) => n.to_string(),
            StrOrNum::Float(f) => f.to_string(),
            StrOrNum::Str(s) => s.to_string(),
        }
    }
}

/// The call arguments a reader looks at (`args.Flags`, `args.phStream` of
/// cuStreamCreate); the others are ignored.
#[derive(Deserialize, Debug, Default, PartialEq)]
pub struct RawArgs<'a> {
    /// `Flags` (a number or a `"0x…"` string).
    #[serde(rename = "Flags", borrow)]
    pub flags: Option<StrOrNum<'a>>,
    /// `phStream`: the created stream's handle.
    #[serde(rename = "phStream", borrow)]
    pub ph_stream: Option<Cow<'a, str>>,
}

/// The fields any line may carry; everything else is ignored. Read it with
/// [`super::scan::scan_into`], falling back to `serde_json::from_slice` when
/// that gives false.
#[derive(Deserialize, Debug, Default, PartialEq)]
pub struct RawLine<'a> {
    /// `type`: the line's kind (`header`, `footer`, `process`, `ioctl`, `marker`, `power`, `gpu`, a call type, ...).
    #[serde(rename = "type", borrow)]
    pub ty: Option<Cow<'a, str>>,
    /// Start time, CLOCK_MONOTONIC ns.
    pub ts: Option<u64>,
    /// End time (`gpu` lines), CLOCK_MONOTONIC ns.
    pub end_ts: Option<u64>,
    /// Process id.
    pub pid: Option<u32>,
    /// Thread id.
    pub tid: Option<u32>,
    /// The operation within the type (`fork`, `launch`, `phase`, `kernel`, ...).
    #[serde(borrow)]
    pub op: Option<Cow<'a, str>>,
    /// The CUDA function, ioctl or GPU operation name.
    #[serde(borrow)]
    pub name: Option<Cow<'a, str>>,
    /// Duration in µs.
    pub duration_us: Option<f64>,
    /// The call's return code (CUresult).
    pub ret: Option<i64>,
    /// The call had no return (the process ended inside it).
    pub incomplete: Option<bool>,
    /// The call's entry record was lost.
    pub entry_lost: Option<bool>,
    /// The CUresult's name when the call failed.
    #[serde(borrow)]
    pub error: Option<Cow<'a, str>>,
    /// The launched kernel's name.
    #[serde(borrow)]
    pub kernel: Option<Cow<'a, str>>,
    /// Launch grid dimensions.
    pub grid: Option<[u32; 3]>,
    /// Launch block dimensions.
    pub block: Option<[u32; 3]>,
    /// Dynamic shared memory of a launch, bytes.
    pub shared_mem: Option<u32>,
    /// The stream handle, `"0x…"`.
    #[serde(borrow)]
    pub stream: Option<Cow<'a, str>>,
    /// Bytes copied, set or allocated.
    pub size: Option<u64>,
    /// A copy's direction (`h2d`, `d2h`, `d2d`, ...).
    #[serde(borrow)]
    pub direction: Option<Cow<'a, str>>,
    /// The event handle, `"0x…"`.
    #[serde(borrow)]
    pub event: Option<Cow<'a, str>>,
    /// The CPU of the entry record.
    pub cpu: Option<u32>,
    /// The per-CPU sequence number of the entry record.
    pub seq: Option<u64>,
    /// The CPU of the return record.
    pub exit_cpu: Option<u32>,
    /// The per-CPU sequence number of the return record.
    pub exit_seq: Option<u64>,
    /// The child pid of a fork.
    pub child: Option<u32>,
    /// The file an exec ran.
    #[serde(borrow)]
    pub filename: Option<Cow<'a, str>>,
    /// The decoded call arguments (the ones readers use).
    #[serde(borrow)]
    pub args: Option<RawArgs<'a>>,
    // ioctl
    /// The CUDA call an ioctl was made in.
    #[serde(borrow)]
    pub cuda_call: Option<Cow<'a, str>>,
    /// An ioctl's NVIDIA status (0: success).
    pub status: Option<u64>,
    /// An ioctl's errno name when it failed.
    #[serde(borrow)]
    pub errno: Option<Cow<'a, str>>,
    // marker
    /// A marker's label.
    #[serde(borrow)]
    pub label: Option<StrOrNum<'a>>,
    /// Tokens of an iteration marker.
    pub tokens: Option<u64>,
    // power
    /// The GPU index of a power sample.
    pub gpu: Option<u32>,
    /// Total energy counter, mJ.
    pub energy_mj: Option<u64>,
    /// Power, mW.
    pub power_mw: Option<u64>,
    /// SM clock, MHz.
    pub sm_clock_mhz: Option<u32>,
    /// Memory clock, MHz.
    pub mem_clock_mhz: Option<u32>,
    /// GPU utilization, %.
    pub util_gpu_pct: Option<u32>,
    /// Memory utilization, %.
    pub util_mem_pct: Option<u32>,
    /// Temperature, °C.
    pub temp_c: Option<u32>,
    // gpu
    /// The device index of a `gpu` line.
    #[serde(borrow)]
    pub device: Option<StrOrNum<'a>>,
    /// CUPTI's stream id of a `gpu` line.
    pub stream_id: Option<u64>,
    /// CUPTI's correlation id of a `gpu` line.
    pub correlation_id: Option<u64>,
    /// The rank of a distributed job's process (`exec` lines: RANK).
    pub rank: Option<u64>,
    /// The stream capture a launch, copy, set or event call was recorded
    /// into (the work did not run then; docs/trace-format.md, "CUDA graphs").
    pub capture: Option<u64>,
    /// CUPTI's graphId and graphNodeId of a measured kernel a graph launch
    /// ran (`gpu` lines; docs/trace-format.md, "CUDA graphs").
    pub graph_id: Option<u64>,
    pub graph_node_id: Option<u64>,
    /// The id of the `stack` line giving the user stack taken at the
    /// call's entry (docs/trace-format.md, "Stack lines").
    pub stack: Option<u64>,
}
