//! `tracer report`'s stacks (docs/analysis.md, "Stacks"): the top stacks by
//! GPU busy time (each GPU interval's time to the stack of the call that
//! submitted it, measured intervals tied to their calls by kernel name and
//! order as timeline.rs does: measured `gpu` lines, else calibrated durations; with
//! neither, busy time is unknown and stacks rank by launches) and by GPU
//! idle time (every gap of every GPU, analysis/gap_stacks.rs), and the
//! trees of the two flame graphs of the HTML report.
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;

use serde::Serialize;

use super::flame::Flame;
use super::gap_stacks::{self, Acc, Attributor, CodeSplit};
use super::gaps;
use super::model::Trace;
use super::model::stacks::{Frame, StackId};
use super::stats::fmt_ns;
use super::timeline::{Source, Timeline};

/// Rows of each table.
pub const TOP: usize = 10;
/// The flame graphs' node for time without a stack.
pub const NO_STACK: &str = "[no stack]";

/// The GPU time of the work submitted at one place in the code.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct BusyRow {
    /// The program's frames, innermost first ([`Frame::short`]); empty: no stack.
    pub frames: Vec<String>,
    pub stacks: Vec<StackId>,
    /// Submissions: kernel and graph launches, copies, sets.
    pub launches: u64,
    /// GPU time of their work; None when busy time is unknown.
    pub busy_ns: Option<u64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct StackReport {
    /// Distinct stacks in the trace.
    pub stacks: usize,
    /// What busy time rests on: `measured`, `calibrated`, `sampled`
    /// (measured where CUPTI was on, calibrated elsewhere) or `unknown`
    /// (stacks ranked by launches).
    pub busy_basis: &'static str,
    pub launches: u64,
    pub launches_without_stack: u64,
    pub busy_ns: Option<u64>,
    pub busy_without_stack_ns: Option<u64>,
    /// How launches took stacks (the header's `stacks.sampling`): `all`,
    /// `sampled` (then busy time per stack is that of the sampled launches:
    /// the shares are of their time), or None when the header does not say.
    pub launch_stacks: Option<String>,
    /// `sampled`: the header's rule, in words.
    #[serde(skip)]
    pub sampling_rule: Option<String>,
    /// The first [`TOP`] places by busy time (by launches when unknown).
    pub by_busy: Vec<BusyRow>,
    /// Distinct places with submissions.
    pub busy_places: usize,
    /// The idle time of every gap of every GPU by cause and place; `parts`
    /// cut to the first [`TOP`], the totals whole. With a bound timeline
    /// only the certain gaps (a lower bound).
    pub by_idle: CodeSplit,
    pub idle_places: usize,
    /// Lines naming an id no `stack` line defines.
    pub unknown_stack_refs: u64,
    /// Flame graph trees (root first: the outermost frame; the idle graph's
    /// leaves are the causes).
    #[serde(skip)]
    pub busy_flame: Flame,
    #[serde(skip)]
    pub idle_flame: Flame,
}

fn basis(s: Source) -> &'static str {
    match s {
        Source::Measured => "measured",
        Source::Inferred => "calibrated",
        Source::Sampled => "sampled",
        Source::Bound => "unknown",
    }
}

/// The path of a stack for a flame graph: every frame, outermost first.
fn flame_path(t: &Trace, id: Option<StackId>) -> Vec<String> {
    match id.and_then(|i| t.stacks.get(i)) {
        Some(s) if !s.frames.is_empty() => s.frames.iter().rev().map(Frame::short).collect(),
        _ => vec![NO_STACK.to_string()],
    }
}

/// The stacks of a report; None when the trace has none.
pub fn build(t: &Trace, tl: &Timeline) -> Option<StackReport> {
    if t.stacks.is_empty() {
        return None;
    }
    let known = tl.source != Source::Bound;
    let defined = |id: Option<StackId>| id.filter(|&i| t.stacks.get(i).is_some());
    // Per stack first (launches, busy ns), then per place.
    let mut per_stack: HashMap<Option<StackId>, (u64, u64)> = HashMap::new();
    let mut busy_flame = Flame::root("all");
    let (mut launches, mut launches_without) = (0u64, 0u64);
    for c in t.calls.iter().filter(|c| c.kind.is_gpu_work() && c.is_driver_call()) {
        let id = defined(t.stacks.call_stack_id(c));
        launches += 1;
        launches_without += u64::from(id.is_none());
        per_stack.entry(id).or_default().0 += 1;
    }
    let (mut busy, mut busy_without) = (0u64, 0u64);
    if known {
        // Measured intervals: their calls by kernel name and order (timeline.rs).
        let linked: HashMap<(usize, usize), u32> = match tl.source {
            Source::Measured | Source::Sampled => {
                super::timeline::link_measured_to_launches(t, tl).into_iter().map(|(s, i, c)| ((s, i), c)).collect()
            }
            _ => HashMap::new(),
        };
        let intervals = tl
            .streams
            .iter()
            .enumerate()
            .flat_map(|(si, s)| s.intervals.iter().enumerate().map(move |(ii, i)| (si, ii, i)));
        for (si, ii, i) in intervals {
            let call = if i.call != u32::MAX { Some(i.call) } else { linked.get(&(si, ii)).copied() };
            let id = call.and_then(|c| t.calls.get(c as usize)).and_then(|c| defined(t.stacks.call_stack_id(c)));
            busy = busy.saturating_add(i.dur());
            busy_without = busy_without.saturating_add(if id.is_none() { i.dur() } else { 0 });
            let e = per_stack.entry(id).or_default();
            e.1 = e.1.saturating_add(i.dur());
        }
    }
    let mut stacks_in_order: Vec<(Option<StackId>, (u64, u64))> = per_stack.into_iter().collect();
    stacks_in_order.sort_unstable_by_key(|x| x.0);
    // place -> (stacks, launches, busy ns)
    let mut by: BTreeMap<Vec<String>, (BTreeSet<StackId>, u64, u64)> = BTreeMap::new();
    for &(id, (n, ns)) in &stacks_in_order {
        busy_flame.add(&flame_path(t, id), if known { ns } else { n });
        let key = id
            .and_then(|i| t.stacks.get(i))
            .map_or_else(Vec::new, |s| s.code_frames().iter().map(Frame::short).collect());
        let e = by.entry(key).or_default();
        e.0.extend(id);
        e.1 += n;
        e.2 = e.2.saturating_add(ns);
    }
    let mut rows: Vec<BusyRow> = by
        .into_iter()
        .map(|(frames, (ids, n, ns))| BusyRow {
            frames,
            stacks: ids.into_iter().collect(),
            launches: n,
            busy_ns: known.then_some(ns),
        })
        .collect();
    rows.sort_by(|a, b| (b.busy_ns, b.launches).cmp(&(a.busy_ns, a.launches)).then_with(|| a.frames.cmp(&b.frames)));
    let busy_places = rows.len();
    rows.truncate(TOP);
    // Idle: every gap of every GPU, on the launching threads of its processes.
    let mut acc = Acc::default();
    let mut idle_flame = Flame::root("all");
    for d in tl.devices() {
        let pids: BTreeSet<u32> = tl.streams.iter().filter(|s| s.device == d).map(|s| s.key.pid).collect();
        let at = Attributor::new(t, &pids);
        let (_, gs) = gaps::gaps_of(&gaps::busy(tl.device_intervals(d)));
        for (a, b) in gs {
            let pieces = at.gap_pieces(a, b);
            for p in &pieces {
                let mut path = flame_path(t, p.stack);
                path.push(p.cause.clone());
                idle_flame.add(&path, p.ns);
            }
            acc.add(&|id| at.frames(id), pieces);
        }
    }
    let mut by_idle = acc.finish();
    let idle_places = by_idle.parts.len();
    by_idle.parts.truncate(TOP);
    let sampling = t.header.as_ref().map(|h| &h["stacks"]["sampling"]);
    let launch_stacks = sampling.and_then(|s| s["launches"].as_str()).map(str::to_string);
    let sampling_rule = sampling.filter(|s| s["launches"] == "sampled").map(|s| {
        let n = |k: &str| s[k].as_f64().map_or("?".to_string(), |x| x.to_string());
        format!(
            "a launch takes a stack after {} µs without a launch of its thread or a switch-out, else at most every {} ms per thread",
            n("idle_us"),
            n("interval_ms")
        )
    });
    Some(StackReport {
        stacks: t.stacks.len(),
        launch_stacks,
        sampling_rule,
        busy_basis: basis(tl.source),
        launches,
        launches_without_stack: launches_without,
        busy_ns: known.then_some(busy),
        busy_without_stack_ns: known.then_some(busy_without),
        by_busy: rows,
        busy_places,
        by_idle,
        idle_places,
        unknown_stack_refs: t.stacks.unknown_refs,
        busy_flame,
        idle_flame,
    })
}

/// The report's text section.
pub fn render(s: &mut String, r: &StackReport) {
    let _ = writeln!(s, "\nStacks ({} distinct):", r.stacks);
    if let Some(rule) = &r.sampling_rule {
        let _ = writeln!(
            s,
            "launch stacks are sampled ({rule}): busy time and launches per stack are those of the sampled launches, \
             the shares of their GPU time; the rest is under (no stack)"
        );
    }
    let sampled = r.sampling_rule.is_some();
    match r.busy_ns {
        Some(busy) => {
            // Sampled: shares of the sampled launches' time.
            let base = if sampled { busy.saturating_sub(r.busy_without_stack_ns.unwrap_or(0)) } else { busy };
            let _ = writeln!(
                s,
                "top stacks by GPU busy time ({} GPU time, {} of {} with no stack; {} launches, {} with no stack):",
                r.busy_basis,
                fmt_ns(r.busy_without_stack_ns.unwrap_or(0)),
                fmt_ns(busy),
                r.launches,
                r.launches_without_stack
            );
            let _ = writeln!(s, "  {:>6} {:>10} {:>9}  where", "busy %", "busy", "launches");
            for row in &r.by_busy {
                let ns = row.busy_ns.unwrap_or(0);
                let share = if sampled && row.frames.is_empty() {
                    "     -".to_string()
                } else {
                    format!("{:>5.1}%", 100.0 * ns as f64 / base.max(1) as f64)
                };
                let _ = writeln!(s, "  {share} {:>10} {:>9}  {}", fmt_ns(ns), row.launches, place(&row.frames));
            }
        }
        None => {
            let _ = writeln!(
                s,
                "top stacks by launches (GPU busy time unknown: no measured or calibrated kernel durations; {} launches, {} with no stack):",
                r.launches, r.launches_without_stack
            );
            let _ = writeln!(s, "  {:>9} {:>6}  where", "launches", "share");
            let base = if sampled { r.launches - r.launches_without_stack } else { r.launches };
            for row in &r.by_busy {
                let share = if sampled && row.frames.is_empty() {
                    "     -".to_string()
                } else {
                    format!("{:>5.1}%", 100.0 * row.launches as f64 / base.max(1) as f64)
                };
                let _ = writeln!(s, "  {:>9} {share}  {}", row.launches, place(&row.frames));
            }
        }
    }
    if r.busy_places > r.by_busy.len() {
        let _ = writeln!(s, "  ({} more places)", r.busy_places - r.by_busy.len());
    }
    let c = &r.by_idle;
    let _ = writeln!(
        s,
        "top stacks by GPU idle time ({} in {} gaps of the GPUs, {}; the launching threads' stacks):",
        fmt_ns(c.total_ns),
        c.gaps,
        if r.busy_basis == "unknown" { "certain gaps only, a lower bound" } else { "every gap" }
    );
    gap_stacks::render_split(s, "  ", c, TOP);
    if r.idle_places > c.parts.len() {
        let _ = writeln!(s, "  ({} more causes and places)", r.idle_places - c.parts.len());
    }
    if r.unknown_stack_refs > 0 {
        let _ = writeln!(
            s,
            "{} lines name a stack id that no stack line defines (counted without a stack)",
            r.unknown_stack_refs
        );
    }
}

/// A place's frames for text (`(no stack)` without frames).
fn place(frames: &[String]) -> String {
    if frames.is_empty() { "(no stack)".into() } else { gap_stacks::frames_text(frames, gap_stacks::TEXT_FRAMES) }
}

#[cfg(test)]
#[path = "stack_report_tests.rs"]
mod tests;
