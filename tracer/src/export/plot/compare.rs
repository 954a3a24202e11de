//! `tracer plot RECORDED --compare OTHER`: the measured GPU work of two
//! traces side by side (docs/plots.md, "Recorded vs replayed"), typically a
//! recording and the timeline `replay` measured re-executing it
//! (`NAME.rec/replay-timeline.jsonl`).
//!
//! [`Side`] collects one trace's `gpu` and `marker` lines, [`stats`] sums
//! them up, [`timeline`] lays both out on one axis for the timeline renderer
//! (`timeline.rs`: one section per trace), [`kernel_bars`] gives the second
//! figure's input (`compare_kernels.rs`) and [`summary`] the text. [`run`] is
//! the only part that reads or writes files.
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use serde_json::Value;

use super::compare_kernels::{FamilyRow, KernelBars};
use super::family;
use super::input::*;
use super::numbers::{Tally, diff_pct, fmt_pct, plural, thousands};
use super::style::fmt_ns;

/// What a GPU interval was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Kernel,
    Copy,
    Set,
}

/// Which stream an interval ran on: CUPTI's stream id, else the CUstream
/// handle, else unknown (rows in this order).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Stream {
    Id(u64),
    Handle(u64),
    Unknown,
}

impl std::fmt::Display for Stream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Stream::Id(id) => write!(f, "stream {id}"),
            Stream::Handle(h) => write!(f, "stream {h:#x}"),
            Stream::Unknown => f.write_str("stream ?"),
        }
    }
}

/// One measured GPU interval `[start_ns, end_ns)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GpuOp {
    pub device: u64,
    pub stream: Stream,
    pub start_ns: u64,
    pub end_ns: u64,
    pub op: Op,
    pub family: &'static str,
    /// A replay's link: the recording's trace line of the op this measured.
    pub line: Option<u64>,
    /// A replay's link: the recorded time of that op's call (`recorded_call_ts`).
    pub call_ts: Option<u64>,
}

/// One trace's measured GPU intervals and markers.
#[derive(Clone, Debug, Default)]
pub struct Side {
    /// The file as named on the command line.
    pub name: String,
    /// The header's `source` ("replay" in a replay's timeline).
    pub source: Option<String>,
    /// From a replay's header: "mode sequence, pass 3".
    pub replay: Option<String>,
    pub ops: Vec<GpuOp>,
    pub marks: Vec<Mark>,
    /// `gpu` lines without a start or an end (or ending before they start): skipped.
    pub skipped: u64,
    /// `gpu` lines that were inferred, not measured: skipped.
    pub inferred: u64,
    /// The `ts` of the lines asked for by [`load`]'s `wanted` (the lines a
    /// replay's `gpu` lines link to), by line number.
    pub line_ts: HashMap<u64, u64>,
}

fn u(v: &Value, k: &str) -> Option<u64> {
    v.get(k).and_then(Value::as_u64)
}

fn s<'a>(v: &'a Value, k: &str) -> &'a str {
    v.get(k).and_then(Value::as_str).unwrap_or("")
}

impl Side {
    pub fn new(name: &str) -> Self {
        Side { name: name.to_string(), ..Default::default() }
    }

    /// One trace line; lines other than header, `gpu` and `marker` are ignored.
    pub fn add(&mut self, v: &Value) {
        match s(v, "type") {
            "header" => {
                self.source = v.get("source").and_then(Value::as_str).map(str::to_string);
                if let Some(r) = v.get("replay").filter(|r| r.is_object()) {
                    let mut parts = vec![];
                    if let Some(m) = r.get("mode").and_then(Value::as_str) {
                        parts.push(format!("mode {m}"));
                    }
                    if let Some(p) = u(r, "pass") {
                        parts.push(format!("pass {p}"));
                    }
                    self.replay = Some(parts.join(", "));
                }
            }
            "marker" => {
                let Some(ts) = u(v, "ts") else { return };
                let label = s(v, "label").to_string();
                let iteration = s(v, "op") == "iteration";
                self.marks.push(Mark { ts_ns: ts, label, iteration });
            }
            "gpu" => {
                if s(v, "source").contains("infer") {
                    self.inferred += 1;
                    return;
                }
                let start = u(v, "ts");
                let end = u(v, "end_ts").or_else(|| {
                    let d = v.get("duration_us").and_then(Value::as_f64)?;
                    Some(start? + (d * 1000.0).round() as u64)
                });
                let (Some(start), Some(end)) = (start, end) else {
                    self.skipped += 1;
                    return;
                };
                if end < start {
                    self.skipped += 1;
                    return;
                }
                let handle = || {
                    let h = v.get("stream").and_then(Value::as_str)?;
                    u64::from_str_radix(h.strip_prefix("0x")?, 16).ok()
                };
                let stream = match (u(v, "stream_id"), handle()) {
                    (Some(id), _) => Stream::Id(id),
                    (None, Some(h)) => Stream::Handle(h),
                    _ => Stream::Unknown,
                };
                let opname = s(v, "op");
                let op = match opname {
                    "memcpy" => Op::Copy,
                    "memset" => Op::Set,
                    _ => Op::Kernel,
                };
                self.ops.push(GpuOp {
                    device: u(v, "device").unwrap_or(0),
                    stream,
                    start_ns: start,
                    end_ns: end,
                    op,
                    family: family::of_op(opname, s(v, "name")),
                    line: u(v, "line"),
                    call_ts: u(v, "recorded_call_ts"),
                });
            }
            _ => {}
        }
    }

    /// Sorts the intervals and markers by time.
    pub fn finish(mut self) -> Self {
        self.ops.sort_by_key(|o| (o.start_ns, o.end_ns));
        self.marks.sort_by_key(|m| m.ts_ns);
        self
    }
}

/// Where the replay reached each marker: a replay's timeline carries the
/// recording's markers with their recorded times, and its `gpu` lines the
/// recording's line of the op each measured (`line`). A marker is placed at
/// the replayed start of the first op the recording submitted at or after
/// it (ops in recorded submission order; a marker after the last op at the
/// replay's last end). None when no `gpu` line links to a line of
/// `recorded` whose time is known.
pub fn replayed_marks(recorded: &Side, replay: &Side) -> Option<Vec<Mark>> {
    let mut links: Vec<(u64, u64)> = replay
        .ops
        .iter()
        .filter_map(|o| Some((o.call_ts.or_else(|| recorded.line_ts.get(&o.line?).copied())?, o.start_ns)))
        .collect();
    if links.is_empty() {
        return None;
    }
    links.sort_unstable();
    let last_end = replay.ops.iter().map(|o| o.end_ns).max().unwrap_or(0);
    let mut out: Vec<Mark> = replay
        .marks
        .iter()
        .map(|m| {
            let i = links.partition_point(|l| l.0 < m.ts_ns);
            Mark { ts_ns: links.get(i).map_or(last_end, |l| l.1), ..m.clone() }
        })
        .collect();
    out.sort_by_key(|m| m.ts_ns);
    Some(out)
}

/// The lines of the recording a replay's `gpu` lines link to.
pub fn linked_lines(replay: &Side) -> HashSet<u64> {
    replay.ops.iter().filter_map(|o| o.line).collect()
}

/// One trace's GPU figures.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Stats {
    /// Start of the first interval, end of the last one.
    pub first_ns: u64,
    pub last_ns: u64,
    /// Time in which the GPU was busy: the union of the intervals of all its
    /// streams, summed over GPUs.
    pub busy_ns: u64,
    pub kernels: Tally,
    pub copies: Tally,
    pub sets: Tally,
    /// Per family, in [`family::FAMILIES`] order.
    pub families: [Tally; family::FAMILIES.len()],
    /// The idle gaps between the busy intervals of each GPU, in order.
    pub gaps_ns: Vec<u64>,
}

impl Stats {
    pub fn span_ns(&self) -> u64 {
        self.last_ns - self.first_ns
    }
}

/// The union of each GPU's intervals: device → sorted disjoint intervals.
pub fn busy_by_device(ops: &[GpuOp]) -> BTreeMap<u64, Vec<(u64, u64)>> {
    let mut by_dev: BTreeMap<u64, Vec<(u64, u64)>> = BTreeMap::new();
    for o in ops {
        by_dev.entry(o.device).or_default().push((o.start_ns, o.end_ns));
    }
    by_dev.into_iter().map(|(d, v)| (d, crate::analysis::stats::union(v))).collect()
}

pub fn stats(ops: &[GpuOp]) -> Stats {
    let mut st = Stats {
        first_ns: ops.iter().map(|o| o.start_ns).min().unwrap_or(0),
        last_ns: ops.iter().map(|o| o.end_ns).max().unwrap_or(0),
        ..Default::default()
    };
    let busy = busy_by_device(ops);
    st.busy_ns = busy.values().flatten().fold(0u64, |acc, (a, b)| acc.saturating_add(b - a));
    st.gaps_ns = busy.values().flat_map(|iv| iv.windows(2).map(|w| w[1].0 - w[0].1)).collect();
    for o in ops {
        let d = o.end_ns - o.start_ns;
        match o.op {
            Op::Kernel => st.kernels.add(d),
            Op::Copy => st.copies.add(d),
            Op::Set => st.sets.add(d),
        }
        st.families[family::index(o.family)].add(d);
    }
    st
}

/// The two traces and what to call them ("recorded", and "replayed" when the
/// other trace is a replay's timeline, "compared" otherwise).
pub struct Pair {
    pub recorded: Side,
    pub other: Side,
}

impl Pair {
    pub fn other_label(&self) -> &'static str {
        if self.other.source.as_deref() == Some("replay") { "replayed" } else { "compared" }
    }

    fn labels(&self) -> [&'static str; 2] {
        ["recorded", self.other_label()]
    }

    fn sides(&self) -> [&Side; 2] {
        [&self.recorded, &self.other]
    }
}

/// "GPU busy 12.3 ms in a 15.0 ms span (82 %); 120 kernels 11.0 ms, 12
/// copies 1.20 ms, 3 sets 4.00 µs".
pub fn stat_line(st: &Stats) -> String {
    let share = if st.span_ns() > 0 { st.busy_ns as f64 / st.span_ns() as f64 * 100.0 } else { 0.0 };
    let t = |t: &Tally, one: &str, many: &str| {
        format!("{} {} {}", thousands(t.count), if t.count == 1 { one } else { many }, fmt_ns(t.ns as f64))
    };
    format!(
        "GPU busy {} in a {} span ({share:.0} %); {}, {}, {}",
        fmt_ns(st.busy_ns as f64),
        fmt_ns(st.span_ns() as f64),
        t(&st.kernels, "kernel", "kernels"),
        t(&st.copies, "copy", "copies"),
        t(&st.sets, "set", "sets")
    )
}

/// "idle gaps: 141, 119 ms in all; median 3.10 µs, p90 1.20 ms, longest 40.1 ms".
pub fn gap_line(st: &Stats) -> String {
    match super::gap_hist::gap_stats(&st.gaps_ns) {
        None => "no idle gaps".to_string(),
        Some(g) => format!(
            "idle gaps: {}, {} in all; median {}, p90 {}, p99 {}, longest {}",
            thousands(g.count),
            fmt_ns(g.total_ns as f64),
            fmt_ns(g.median_ns as f64),
            fmt_ns(g.p90_ns as f64),
            fmt_ns(g.p99_ns as f64),
            fmt_ns(g.max_ns as f64)
        ),
    }
}

/// "replayed / recorded: GPU busy ×0.987 (-1.3 %), span ×1.002 (+0.2 %),
/// kernel time ×1.000 (+0.0 %)".
pub fn ratio_line(label: &str, a: &Stats, b: &Stats) -> String {
    let r = |x: u64, y: u64| {
        if x == 0 { "n/a".to_string() } else { format!("×{:.3} ({})", y as f64 / x as f64, fmt_pct(diff_pct(x, y))) }
    };
    let idle = |s: &Stats| s.gaps_ns.iter().sum::<u64>();
    format!(
        "{label} / recorded: GPU busy {}, span {}, kernel time {}, idle {}",
        r(a.busy_ns, b.busy_ns),
        r(a.span_ns(), b.span_ns()),
        r(a.kernels.ns, b.kernels.ns),
        r(idle(a), idle(b))
    )
}

/// A signed duration: "+1.23 ms", "-850 ns", "0 ns".
fn fmt_signed_ns(d: i128) -> String {
    match d.signum() {
        0 => "0 ns".to_string(),
        1 => format!("+{}", fmt_ns(d as f64)),
        _ => format!("-{}", fmt_ns(-d as f64)),
    }
}

/// Both traces on one axis: each shifted so that its first GPU interval
/// starts at the axis's 0 (`origin_ns`), one section per trace (a "busy"
/// row per GPU, the union of its streams, then a row per stream), their
/// markers in each section's band, and the stat lines under the title.
pub fn timeline(p: &Pair) -> Timeline {
    let sides = p.sides();
    let labels = p.labels();
    let st = sides.map(|s| stats(&s.ops));
    // The later of the two starts: shifting the other trace forward keeps every time ≥ 0.
    let origin = st[0].first_ns.max(st[1].first_ns);
    let span = st[0].span_ns().max(st[1].span_ns());
    let kinds = [Kind::GpuMeasured, if labels[1] == "replayed" { Kind::GpuReplayed } else { Kind::GpuCompared }];
    let other_marks = replayed_marks(&p.recorded, &p.other);
    let mut sections = Vec::new();
    for i in 0..2 {
        let shift = origin - st[i].first_ns;
        let kind = kinds[i];
        let sl = |a: u64, b: u64| Slice { start_ns: a.saturating_add(shift), end_ns: b.saturating_add(shift), kind };
        let pinned = busy_by_device(&sides[i].ops)
            .into_iter()
            .map(|(dev, iv)| Track {
                label: format!("{} · GPU {dev} busy", labels[i]),
                slices: iv.iter().map(|&(a, b)| sl(a, b)).collect(),
            })
            .collect();
        let mut streams: BTreeMap<(u64, Stream), Vec<Slice>> = BTreeMap::new();
        for o in &sides[i].ops {
            streams.entry((o.device, o.stream)).or_default().push(sl(o.start_ns, o.end_ns));
        }
        let tracks = streams
            .into_iter()
            .map(|((dev, stream), slices)| Track { label: format!("GPU {dev} · {stream}"), slices })
            .collect();
        let own = if i == 1 { other_marks.as_ref() } else { None };
        let marks = own
            .unwrap_or(&sides[i].marks)
            .iter()
            .map(|m| Mark { ts_ns: m.ts_ns.saturating_add(shift), ..m.clone() })
            .collect();
        let what = sides[i].replay.as_ref().map(|r| format!(" (replay, {r})")).unwrap_or_default();
        sections.push(Section {
            title: format!("{}: {}{what}", labels[i], sides[i].name),
            pinned,
            tracks,
            marks,
            empty: "no GPU intervals".to_string(),
        });
    }
    let offset = st[1].first_ns as i128 - st[0].first_ns as i128;
    let mut notes = vec![
        format!("recorded: {}", stat_line(&st[0])),
        format!("recorded {}", gap_line(&st[0])),
        format!("{}: {}", labels[1], stat_line(&st[1])),
        format!("{} {}", labels[1], gap_line(&st[1])),
        ratio_line(labels[1], &st[0], &st[1]),
        format!(
            "Starts aligned: time 0 is each trace's first GPU interval (the {} one began {} from the recorded one \
             on the clock).",
            labels[1],
            fmt_signed_ns(offset)
        ),
    ];
    if !p.other.marks.is_empty() {
        notes.push(if other_marks.is_some() {
            format!(
                "{} markers: where the replay started the first GPU op the recording submitted after each marker \
                 (linked by the gpu lines' `line`); recorded markers: when the program marked them.",
                labels[1]
            )
        } else {
            format!("{} markers: at their times in that trace (its gpu lines have no `line` links).", labels[1])
        });
    }
    notes.extend(skipped_notes(p));
    Timeline {
        title: format!("Recorded vs {} GPU timeline — {} vs {}", labels[1], sides[0].name, sides[1].name),
        origin_ns: origin,
        t0_ns: origin,
        t1_ns: origin.saturating_add(span.max(1)),
        notes,
        sections,
        axis_label: Some("time since each trace's first GPU interval".to_string()),
        ..Default::default()
    }
}

/// GPU busy time of a section's busy rows (the union per GPU) within the
/// timeline's window.
pub fn window_busy_ns(tl: &Timeline, section: usize) -> u64 {
    tl.sections[section]
        .pinned
        .iter()
        .flat_map(|t| &t.slices)
        .map(|s| s.end_ns.min(tl.t1_ns).saturating_sub(s.start_ns.max(tl.t0_ns)))
        .sum()
}

/// The note for a zoomed timeline: busy time of each trace in the window.
pub fn window_note(tl: &Timeline) -> String {
    let w = tl.t1_ns - tl.t0_ns;
    let b: Vec<u64> = (0..tl.sections.len()).map(|i| window_busy_ns(tl, i)).collect();
    let part = |i: usize| {
        let label = tl.sections[i].title.split(':').next().unwrap_or("");
        format!("{label} {} ({:.0} %)", fmt_ns(b[i] as f64), b[i] as f64 / w as f64 * 100.0)
    };
    format!(
        "In this {} window: GPU busy {}, {}; ratio {}",
        fmt_ns(w as f64),
        part(0),
        part(1),
        if b[0] > 0 {
            format!("×{:.3} ({})", b[1] as f64 / b[0] as f64, fmt_pct(diff_pct(b[0], b[1])))
        } else {
            "n/a".into()
        }
    )
}

/// Notes on `gpu` lines left out, if any.
fn skipped_notes(p: &Pair) -> Vec<String> {
    let mut out = vec![];
    for (label, s) in p.labels().into_iter().zip(p.sides()) {
        if s.skipped > 0 {
            out.push(format!("{label}: {} without a start or an end left out", plural(s.skipped, "gpu line")));
        }
        if s.inferred > 0 {
            out.push(format!("{label}: {} (not measured) left out", plural(s.inferred, "inferred gpu line")));
        }
    }
    out
}

/// The second figure's input: GPU time per kernel family in both traces
/// (families that neither has are left out).
pub fn kernel_bars(p: &Pair) -> KernelBars {
    let labels = p.labels();
    let st = p.sides().map(|s| stats(&s.ops));
    let rows = family::FAMILIES
        .iter()
        .enumerate()
        .filter(|(i, _)| st[0].families[*i].count + st[1].families[*i].count > 0)
        .map(|(i, f)| FamilyRow { family: f, recorded: st[0].families[i], other: st[1].families[i] })
        .collect();
    KernelBars {
        title: format!(
            "GPU time per kernel family, recorded vs {} — {} vs {}",
            labels[1], p.recorded.name, p.other.name
        ),
        notes: vec![
            format!("recorded: {}", stat_line(&st[0])),
            format!("{}: {}", labels[1], stat_line(&st[1])),
            "Families by kernel name (gemm, attention, elementwise, reduction, other); copy and set are the \
             memcpy/memset intervals. The % is the second bar's difference from the first."
                .to_string(),
        ],
        other_label: labels[1].to_string(),
        rows,
    }
}

/// The third figure's input: both traces' idle gaps in one histogram.
pub fn gap_bars(p: &Pair) -> Gaps {
    let labels = p.labels();
    let st = p.sides().map(|s| stats(&s.ops));
    Gaps {
        title: format!("GPU idle gaps, recorded vs {} — {} vs {}", labels[1], p.recorded.name, p.other.name),
        notes: vec![
            "Periods in which no stream of a GPU was busy, between its first and last interval (measured); each \
             bucket's bar split in two, the recorded trace left."
                .to_string(),
        ],
        gaps_ns: st[0].gaps_ns.clone(),
        compare: Some(GapSeries { labels: labels.map(str::to_string), gaps_ns: st[1].gaps_ns.clone() }),
    }
}

/// The text printed on stdout: the stat lines and a table per family.
pub fn summary(p: &Pair) -> String {
    let labels = p.labels();
    let st = p.sides().map(|s| stats(&s.ops));
    let mut out = String::new();
    for i in 0..2 {
        let what = p.sides()[i].replay.as_ref().map(|r| format!(" (replay, {r})")).unwrap_or_default();
        out += &format!(
            "{:<9} {}{what}\n          {}\n          {}\n",
            labels[i],
            p.sides()[i].name,
            stat_line(&st[i]),
            gap_line(&st[i])
        );
    }
    out += &ratio_line(labels[1], &st[0], &st[1]);
    out += "\n";
    for n in skipped_notes(p) {
        out += &format!("note: {n}\n");
    }
    out += &format!("\n{:<12} {:>24} {:>24} {:>10}\n", "family", "recorded", labels[1], "diff");
    let cell = |t: &Tally| format!("{} ({})", fmt_ns(t.ns as f64), thousands(t.count));
    for (i, f) in family::FAMILIES.iter().enumerate() {
        let (a, b) = (st[0].families[i], st[1].families[i]);
        if a.count + b.count == 0 {
            continue;
        }
        out += &format!("{f:<12} {:>24} {:>24} {:>10}\n", cell(&a), cell(&b), fmt_pct(diff_pct(a.ns, b.ns)));
    }
    out
}

/// Reads one trace's GPU intervals and markers, and the `ts` of the `wanted`
/// line numbers (1-based, as a replay's `line`); an error when it has no
/// measured GPU intervals (`role`: "RECORDED" or "OTHER", as in the usage).
pub fn load(path: &Path, role: &str, wanted: &HashSet<u64>) -> anyhow::Result<Side> {
    let name = path.display().to_string();
    let mut side = Side::new(&name);
    let progress = super::ReadProgress::new(name.clone());
    let lines = tracer_format::read::for_each_line(path, |n, buf| {
        let v = match serde_json::from_slice::<Value>(buf) {
            Ok(v) if v.is_object() => v,
            Ok(_) => anyhow::bail!("{name}: line {n}: expected a JSON object"),
            Err(e) => anyhow::bail!("{name}: line {n}: not valid JSON ({e})"),
        };
        side.add(&v);
        if wanted.contains(&n)
            && let Some(ts) = u(&v, "ts")
        {
            side.line_ts.insert(n, ts);
        }
        progress.line(n);
        Ok(())
    })?;
    progress.done(lines);
    if side.ops.is_empty() {
        let how = if role == "OTHER" {
            "make it with `replay` (which writes NAME.rec/replay-timeline.jsonl) or `tracer record --gpu-timestamps`"
        } else {
            "record it with `tracer record --gpu-timestamps`"
        };
        anyhow::bail!("{role} {name} has no measured GPU intervals: {how}");
    }
    Ok(side.finish())
}

/// OTHER as given, or the replay timeline inside a recording directory (a
/// directory without one is an error: its own trace would be the recording).
pub fn other_path(other: &Path) -> anyhow::Result<PathBuf> {
    if !other.is_dir() {
        return Ok(other.to_path_buf());
    }
    let inner = other.join("replay-timeline.jsonl");
    if !inner.is_file() {
        anyhow::bail!(
            "OTHER {} is a directory without replay-timeline.jsonl: run `replay {}` first (it writes it there), or \
             name a trace file",
            other.display(),
            other.display()
        );
    }
    Ok(inner)
}

/// `tracer plot RECORDED --compare OTHER`: writes `compare_timeline.<ext>`
/// (`compare_timeline_<from>-<to>s.<ext>` zoomed), `compare_kernels.<ext>`
/// and `compare_gaps.<ext>` into `dir`, prints the summary and the paths.
pub fn run(recorded: &Path, other: &Path, dir: &Path, o: &super::Opts) -> anyhow::Result<Vec<PathBuf>> {
    let t = std::time::Instant::now();
    let other = other_path(other)?;
    // OTHER first: the recording's lines its `gpu` lines link to are read with RECORDED.
    let other = load(&other, "OTHER", &HashSet::new())?;
    let pair = Pair { recorded: load(recorded, "RECORDED", &linked_lines(&other))?, other };
    let mut tl = timeline(&pair);
    super::zoom(&mut tl, o.from_s, o.to_s).map_err(|e| crate::error::UsageError(e.to_string()))?;
    if o.from_s.is_some() || o.to_s.is_some() {
        tl.notes.push(window_note(&tl));
    }
    let bars = kernel_bars(&pair);
    let gaps = gap_bars(&pair);
    let read_s = t.elapsed().as_secs_f64();
    let t = std::time::Instant::now();
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create directory {}", dir.display()))?;
    let tl_opts = super::timeline::Opts { width: o.width, ..Default::default() };
    let w = o.width.min(1400);
    let mut paths = Vec::new();
    for ext in o.format.exts() {
        let p = dir.join(format!("compare_timeline{}.{ext}", super::window_suffix(o)));
        super::save(
            &p,
            super::timeline::size(&tl, &tl_opts),
            |a| super::timeline::draw(a, &tl, &tl_opts),
            |a| super::timeline::draw(a, &tl, &tl_opts),
        )?;
        paths.push(p);
        let p = dir.join(format!("compare_kernels.{ext}"));
        let size = super::compare_kernels::size(&bars, w);
        super::save(
            &p,
            size,
            |a| super::compare_kernels::draw(a, &bars, w),
            |a| super::compare_kernels::draw(a, &bars, w),
        )?;
        paths.push(p);
        let p = dir.join(format!("compare_gaps.{ext}"));
        let size = super::gap_hist::size(&gaps, w);
        super::save(&p, size, |a| super::gap_hist::draw(a, &gaps, w), |a| super::gap_hist::draw(a, &gaps, w))?;
        paths.push(p);
    }
    print!("{}", summary(&pair));
    if o.from_s.is_some() || o.to_s.is_some() {
        println!("{}", window_note(&tl));
    }
    println!();
    for p in &paths {
        println!("{}", p.display());
    }
    eprintln!("read both traces in {read_s:.1} s, drew {} files in {:.1} s", paths.len(), t.elapsed().as_secs_f64());
    Ok(paths)
}
