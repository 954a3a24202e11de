//! What the pictures are drawn from: plain data, independent of where it came
//! from (a trace file through `from_trace`, or another module's GPU timeline).
//! All times are CLOCK_MONOTONIC ns, like the trace's `ts`.

/// What a slice of a row is; gives its colour and its legend entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// CPU: kernel or graph launches.
    Launch,
    /// CPU: synchronization (stream/event/context synchronize, waits).
    Sync,
    /// CPU: memcpy / memset calls.
    Copy,
    /// CPU: allocations and frees.
    Memory,
    /// CPU: any other driver call.
    OtherCall,
    /// GPU: an interval measured on the device (CUPTI activity records).
    GpuMeasured,
    /// GPU: an interval inferred from launch times and kernel durations.
    GpuInferred,
    /// GPU: an interval measured while `replay` re-executed a recording
    /// (`tracer plot --compare`).
    GpuReplayed,
    /// GPU: a measured interval of the second trace of `tracer plot
    /// --compare` when that is not a replay.
    GpuCompared,
    /// GPU: a possibly-busy stretch of the bound timeline (no measured or
    /// calibrated durations): not busy time; only the gaps between such
    /// stretches are certain (idle time, a lower bound).
    GpuBound,
}

impl Kind {
    pub const ALL: [Kind; 10] = [
        Kind::Launch,
        Kind::Sync,
        Kind::Copy,
        Kind::Memory,
        Kind::OtherCall,
        Kind::GpuMeasured,
        Kind::GpuInferred,
        Kind::GpuReplayed,
        Kind::GpuCompared,
        Kind::GpuBound,
    ];
    pub const COUNT: usize = Self::ALL.len();

    pub fn index(self) -> usize {
        self as usize
    }

    pub fn name(self) -> &'static str {
        match self {
            Kind::Launch => "launch",
            Kind::Sync => "synchronize",
            Kind::Copy => "memcpy/memset",
            Kind::Memory => "alloc/free",
            Kind::OtherCall => "other call",
            Kind::GpuMeasured => "GPU busy (measured)",
            Kind::GpuInferred => "GPU busy (inferred)",
            Kind::GpuReplayed => "GPU busy (replayed)",
            Kind::GpuCompared => "GPU busy (compared)",
            Kind::GpuBound => "GPU possibly busy (bound; idle ≥ the gaps)",
        }
    }
}

/// One interval `[start_ns, end_ns)` on a row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slice {
    pub start_ns: u64,
    pub end_ns: u64,
    pub kind: Kind,
}

/// One row of the timeline: a thread's driver calls, or one GPU stream.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Track {
    pub label: String,
    pub slices: Vec<Slice>,
}

impl Track {
    /// Sum of the slices' lengths (overlaps counted twice): how "busy" the
    /// row is, to pick the rows shown when there are too many.
    pub fn busy_ns(&self) -> u64 {
        self.slices.iter().map(|s| s.end_ns.saturating_sub(s.start_ns)).sum()
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Phase {
    pub label: String,
    pub start_ns: u64,
    pub end_ns: u64,
}

/// An instant marker: an iteration start or a free-text mark.
#[derive(Clone, Debug, PartialEq)]
pub struct Mark {
    pub ts_ns: u64,
    pub label: String,
    pub iteration: bool,
}

/// Power samples of one GPU, sorted by time.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PowerSeries {
    pub label: String,
    pub samples: Vec<(u64, f64)>,
}

/// The three figures' inputs.
#[derive(Debug, Default)]
pub struct PlotData {
    pub timeline: Timeline,
    pub gaps: Gaps,
    pub phases: PhaseBars,
}

/// Figure 1: everything on one time axis.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Timeline {
    pub title: String,
    /// Time 0 of the axis: times are shown as seconds since this.
    pub origin_ns: u64,
    /// The window drawn (the whole trace, or a zoom).
    pub t0_ns: u64,
    pub t1_ns: u64,
    pub threads: Vec<Track>,
    pub gpu: Vec<Track>,
    pub phases: Vec<Phase>,
    pub marks: Vec<Mark>,
    pub power: Vec<PowerSeries>,
    /// Lines printed under the title (where the data came from, what is missing).
    pub notes: Vec<String>,
    /// When not empty, drawn instead of the CPU and GPU sections (`threads`
    /// and `gpu` are then not drawn): `tracer plot --compare`.
    pub sections: Vec<Section>,
    /// The time axis's caption before its unit; None: "time since start of trace".
    pub axis_label: Option<String>,
}

/// A titled group of rows with its own markers band (one per trace in
/// `tracer plot --compare`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Section {
    pub title: String,
    /// Rows always shown, first (the union "busy" rows).
    pub pinned: Vec<Track>,
    /// Rows shown after them, the busiest `max_gpu_rows - 1` and the rest
    /// folded into one, like GPU streams.
    pub tracks: Vec<Track>,
    /// Drawn in a band under the title when not empty.
    pub marks: Vec<Mark>,
    /// Said in the empty row when there are no rows at all.
    pub empty: String,
}

/// Figure 2: idle gaps, in ns.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Gaps {
    pub title: String,
    pub notes: Vec<String>,
    pub gaps_ns: Vec<u64>,
    /// A second set of gaps drawn beside these (`tracer plot --compare`).
    pub compare: Option<GapSeries>,
}

/// The second series of a two-series gap histogram: each bucket's bar is
/// split in two, `Gaps::gaps_ns` on the left, these on the right.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GapSeries {
    /// Legend names of the first and of this series ("recorded", "replayed").
    pub labels: [String; 2],
    pub gaps_ns: Vec<u64>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct PhaseBar {
    pub label: String,
    pub seconds: f64,
    /// Energy over the phase, all GPUs together; None without power samples.
    pub joules: Option<f64>,
    /// The energy is uncertain (`Energy::uncertain`: shorter than two counter
    /// updates, or only partly covered by samples): drawn with "± (short or partly sampled)".
    pub uncertain: bool,
}

/// Figure 3: time and energy per phase.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PhaseBars {
    pub title: String,
    pub notes: Vec<String>,
    pub bars: Vec<PhaseBar>,
}
