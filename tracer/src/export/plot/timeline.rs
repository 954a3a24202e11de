//! Figure 1: the run on one time axis. Phases and markers on top, a row per
//! thread (CUDA driver calls), a row per GPU stream (busy intervals, measured
//! or inferred), the power curve underneath. Every row is reduced to one
//! column of values per pixel first (`bins::coverage`), so the drawing cost
//! does not depend on the number of events. A timeline with `sections`
//! (`tracer plot --compare`) draws those, each with its own markers band,
//! instead of the CPU and GPU sections.
use plotters::prelude::*;

use super::axis::nice_ticks;
use super::bins::{Grid, Row, coverage, instants, power_columns, select_rows, value_at};
use super::draw::*;
use super::input::{Kind, Mark, Timeline, Track};
use super::style::*;

#[derive(Clone, Copy, Debug)]
pub struct Opts {
    pub width: u32,
    /// Rows for threads (the busiest; the rest share the last row).
    pub max_threads: usize,
    /// Rows for GPU streams.
    pub max_gpu_rows: usize,
}

impl Default for Opts {
    fn default() -> Self {
        Opts { width: 1600, max_threads: 12, max_gpu_rows: 8 }
    }
}

/// The label column: as wide as the widest row label (never cut), at
/// least a fifth of the width (140 to 250 px), at most 40 % of it.
fn label_w(width: i32, sections: &[LSection]) -> i32 {
    let f = font(12.5);
    let widest = sections.iter().flat_map(|s| s.rows.iter()).map(|r| text_width(&f, &r.label) as i32 + 20).max();
    (width / 5).clamp(140, 250).max(widest.unwrap_or(0)).min(width * 2 / 5)
}

/// The x span of a phase in a plot area [x0, x1] over the timeline's window.
fn phase_span(tl: &Timeline, x0: i32, x1: i32, a: u64, b: u64) -> (i32, i32) {
    let w = (tl.t1_ns - tl.t0_ns).max(1) as f64;
    let x = |t: u64| x0 + ((t.clamp(tl.t0_ns, tl.t1_ns) - tl.t0_ns) as f64 / w * (x1 - x0) as f64).round() as i32;
    (x(a), x(b).max(x(a) + 1))
}

/// The phases in the window whose names do not fit inside their bands:
/// listed under the figure instead of being cut.
fn unlabelled_phases(tl: &Timeline, x0: i32, x1: i32) -> Vec<String> {
    let f = font(12.0);
    tl.phases
        .iter()
        .filter(|p| p.end_ns > tl.t0_ns && p.start_ns < tl.t1_ns)
        .filter(|p| {
            let (xa, xb) = phase_span(tl, x0, x1, p.start_ns, p.end_ns);
            text_width(&f, &p.label) as i32 + 6 > xb - xa
        })
        .map(|p| p.label.clone())
        .collect()
}
const RIGHT_M: i32 = 30;
const ROW_H: i32 = 20;
const ROW_GAP: i32 = 5;
const SECTION_H: i32 = 24;
const PHASE_H: i32 = 24;
/// The markers band: free marks (triangle, label) in the upper 16 px,
/// iteration ticks in the lower 9 px.
const MARK_H: i32 = 26;
const MARK_LABEL_H: i32 = 16;
const POWER_H: i32 = 170;
const AXIS_H: i32 = 48;
const LEGEND_LINE_H: i32 = 22;

/// One titled group of rows as laid out.
struct LSection<'a> {
    title: &'a str,
    /// Said in the single empty row when there are no rows.
    empty: &'a str,
    rows: Vec<Row<'a>>,
    /// The section's own markers band (under its title) when not empty.
    marks: &'a [Mark],
    /// y of the section's title.
    y: i32,
}

impl LSection<'_> {
    /// y of the first row.
    fn y_rows(&self) -> i32 {
        self.y + SECTION_H + if self.marks.is_empty() { 0 } else { MARK_H + 4 }
    }

    fn bottom(&self) -> i32 {
        self.y_rows() + self.rows.len().max(1) as i32 * (ROW_H + ROW_GAP)
    }
}

struct Layout<'a> {
    width: i32,
    x0: i32,
    x1: i32,
    title_h: i32,
    /// CPU threads and GPU streams, or the timeline's own `sections`.
    sections: Vec<LSection<'a>>,
    /// y of: phase band, marks band, power panel, axis, legend.
    y_phase: i32,
    y_marks: i32,
    y_power: i32,
    y_axis: i32,
    y_legend: i32,
    /// Legend entries, line by line.
    legend: Vec<Vec<Kind>>,
    height: i32,
}

fn layout<'a>(tl: &'a Timeline, o: &Opts) -> Layout<'a> {
    let width = o.width.clamp(400, 20_000) as i32;
    let title_h = 34 + 17 * tl.notes.len() as i32 + 6;
    let y_phase = title_h;
    let y_marks = y_phase + if tl.phases.is_empty() { 0 } else { PHASE_H + 4 };
    let mut y = y_marks + if tl.marks.is_empty() { 0 } else { MARK_H + 4 };
    let mut sections = Vec::new();
    for (title, empty, rows, marks) in section_rows(tl, o) {
        let s = LSection { title, empty, rows, marks, y };
        y = s.bottom();
        sections.push(s);
    }
    let y_power = y + 6;
    let y_axis = y_power + if tl.power.is_empty() { 0 } else { POWER_H + 8 };
    let y_legend = y_axis + AXIS_H;
    let legend = legend_lines(&kinds_present(tl), width - 24);
    let x0 = label_w(width, &sections);
    let unlabelled = !unlabelled_phases(tl, x0, width - RIGHT_M).is_empty();
    Layout {
        width,
        x0,
        x1: width - RIGHT_M,
        title_h,
        sections,
        y_phase,
        y_marks,
        y_power,
        y_axis,
        y_legend,
        height: y_legend + LEGEND_LINE_H * legend.len().max(1) as i32 + 30 + if unlabelled { LEGEND_LINE_H } else { 0 },
        legend,
    }
}

type SectionRows<'a> = (&'a str, &'a str, Vec<Row<'a>>, &'a [Mark]);

/// (title, empty text, rows, markers) of each section drawn.
fn section_rows<'a>(tl: &'a Timeline, o: &Opts) -> Vec<SectionRows<'a>> {
    if tl.sections.is_empty() {
        return vec![
            (
                "CPU: CUDA driver calls per thread",
                "no driver calls in this trace",
                select_rows(&tl.threads, o.max_threads, "threads"),
                &[],
            ),
            (
                "GPU: work per device and stream",
                "no GPU intervals: record with --gpu-timestamps for measured ones",
                select_rows(&tl.gpu, o.max_gpu_rows, "streams"),
                &[],
            ),
        ];
    }
    tl.sections
        .iter()
        .map(|s| {
            let mut rows: Vec<Row> =
                s.pinned.iter().map(|t| Row { label: t.label.clone(), parts: vec![&t.slices[..]] }).collect();
            rows.extend(select_rows(&s.tracks, o.max_gpu_rows, "streams"));
            (s.title.as_str(), s.empty.as_str(), rows, &s.marks[..])
        })
        .collect()
}

/// Every track a timeline draws rows from.
fn all_tracks(tl: &Timeline) -> Box<dyn Iterator<Item = &Track> + '_> {
    if tl.sections.is_empty() {
        Box::new(tl.threads.iter().chain(tl.gpu.iter()))
    } else {
        Box::new(tl.sections.iter().flat_map(|s| s.pinned.iter().chain(s.tracks.iter())))
    }
}

/// The kinds of the slices that overlap the drawn window, in legend order.
pub fn kinds_present(tl: &Timeline) -> Vec<Kind> {
    let mut seen = [false; Kind::COUNT];
    for t in all_tracks(tl) {
        for s in &t.slices {
            let inside = if s.end_ns == s.start_ns {
                // an instant (no duration)
                s.start_ns >= tl.t0_ns && s.start_ns < tl.t1_ns
            } else {
                s.end_ns > tl.t0_ns && s.start_ns < tl.t1_ns
            };
            if inside {
                seen[s.kind.index()] = true;
            }
        }
    }
    Kind::ALL.into_iter().filter(|k| seen[k.index()]).collect()
}

/// Whether the window holds an instant (a call without a return probe).
fn has_instants(tl: &Timeline) -> bool {
    all_tracks(tl)
        .any(|t| t.slices.iter().any(|s| s.end_ns == s.start_ns && s.start_ns >= tl.t0_ns && s.start_ns < tl.t1_ns))
}

/// Legend entries split into lines no wider than `max_w` px.
fn legend_lines(kinds: &[Kind], max_w: i32) -> Vec<Vec<Kind>> {
    let f = font(13.0);
    let mut lines: Vec<Vec<Kind>> = vec![];
    let mut x = 0;
    for &k in kinds {
        let w = 19 + text_width(&f, k.name()) as i32 + 22;
        if lines.is_empty() || (x + w > max_w && x > 0) {
            lines.push(vec![]);
            x = 0;
        }
        lines.last_mut().unwrap().push(k);
        x += w;
    }
    lines
}

/// The figure's size in pixels for these options.
pub fn size(tl: &Timeline, o: &Opts) -> (u32, u32) {
    let l = layout(tl, o);
    (l.width as u32, l.height as u32)
}

pub fn draw<DB: DrawingBackend>(a: &Area<DB>, tl: &Timeline, o: &Opts) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    register_font();
    let l = layout(tl, o);
    a.fill(&WHITE)?;
    let grid = Grid::new(tl.t0_ns, tl.t1_ns, (l.x1 - l.x0) as usize);
    // Axis values in s, ms or µs since the origin: the largest unit that
    // shows the window's end as at least 1.
    let origin = tl.origin_ns.min(grid.t0);
    let (unit, ns_per_unit) = axis_unit(grid.t1 - origin);
    let (lo_s, hi_s) = ((grid.t0 - origin) as f64 / ns_per_unit, (grid.t1 - origin) as f64 / ns_per_unit);
    let px = |t_ns: u64| x_at(&l, &grid, t_ns);
    let px_s = |s: f64| -> i32 { l.x0 + ((s - lo_s) / (hi_s - lo_s) * (l.x1 - l.x0) as f64).round() as i32 };

    // Title and notes.
    text(a, &elide(&font(18.0), &tl.title, (l.width - 24) as u32), (12, 8), 18.0, TEXT, TOP_LEFT)?;
    for (i, n) in tl.notes.iter().enumerate() {
        let s = elide(&font(12.5), n, (l.width - 24) as u32);
        text(a, &s, (12, 34 + 17 * i as i32), 12.5, MUTED, TOP_LEFT)?;
    }

    // Vertical grid lines at the time ticks, over the whole height of the plot.
    let (step, ticks) = nice_ticks(lo_s, hi_s, ((l.x1 - l.x0) / 90).max(2) as usize);
    let grid_top = l.title_h;
    let grid_bottom = l.y_axis - 4;
    for &t in &ticks {
        vline(a, px_s(t), grid_top, grid_bottom, GRID)?;
    }

    // Phases: coloured bands with their names where they fit.
    if !tl.phases.is_empty() {
        let y = l.y_phase;
        text(a, "phases", (l.x0 - 10, y + PHASE_H / 2), 13.0, TEXT, RIGHT)?;
        // Thousands of phases shorter than a pixel cost one rectangle per column at most.
        let mut covered_to = i32::MIN;
        for (i, p) in tl.phases.iter().enumerate() {
            if p.end_ns <= grid.t0 || p.start_ns >= grid.t1 {
                continue;
            }
            let (xa, xb) = (px(p.start_ns), px(p.end_ns).max(px(p.start_ns) + 1));
            if xb <= covered_to {
                continue;
            }
            covered_to = xb;
            fill(a, xa, y, xb, y + PHASE_H, phase_color(i))?;
            vline(a, xa, y, y + PHASE_H, RGBColor(120, 120, 120))?;
            // whole names only: the others are listed under the figure
            if text_width(&font(12.0), &p.label) as i32 + 6 <= xb - xa {
                text(a, &p.label, ((xa + xb) / 2, y + PHASE_H / 2), 12.0, TEXT, CENTER)?;
            }
        }
    }

    // Marks: iteration starts as ticks, free marks as labelled triangles.
    if !tl.marks.is_empty() {
        draw_marks(a, &l, &grid, l.y_marks, &tl.marks)?;
    }

    // Rows.
    for s in &l.sections {
        draw_section(a, &l, &grid, s)?;
    }

    // Power.
    if !tl.power.is_empty() {
        draw_power(a, &l, &grid, tl)?;
    }

    // Time axis.
    let ya = l.y_axis;
    hline(a, l.x0, l.x1, ya - 4, TEXT)?;
    let dec = decimals_for_step(step);
    for &t in &ticks {
        let x = px_s(t);
        vline(a, x, ya - 4, ya + 1, TEXT)?;
        text(a, &format!("{t:.dec$}"), (x, ya + 4), 12.0, TEXT, TOP_CENTER)?;
    }
    let caption = tl.axis_label.as_deref().unwrap_or("time since start of trace");
    text(a, &format!("{caption} ({unit})"), ((l.x0 + l.x1) / 2, ya + 24), 13.0, TEXT, TOP_CENTER)?;

    // Legend: at the plot's left edge when it fits in one line, else from the figure's edge.
    let x_start = if l.legend.len() <= 1 { l.x0 } else { 12 };
    let mut y = l.y_legend + 12;
    for line in &l.legend {
        let mut x = x_start;
        for &k in line {
            x = legend_item(a, x, y, kind_color(k), k.name())?;
        }
        y += LEGEND_LINE_H;
    }
    let note = if has_instants(tl) {
        "Each pixel column: pale = some activity in that time, solid height = share of the time busy; thin top \
         strip = calls without a return probe (instants, no duration)."
    } else {
        "Each pixel column: pale = some activity in that time, solid height = share of the time busy."
    };
    let note = elide(&font(12.0), note, (l.width - x_start - 12) as u32);
    text(a, &note, (x_start, y), 12.0, MUTED, LEFT)?;
    let unlabelled = unlabelled_phases(tl, l.x0, l.x1);
    if !unlabelled.is_empty() {
        let s = format!("Phases too narrow here for their names (left to right): {}.", unlabelled.join(", "));
        text(a, &s, (x_start, y + LEGEND_LINE_H), 12.0, MUTED, LEFT)?;
    }
    Ok(())
}

/// The axis unit for times up to `end_ns`: s, ms or µs, and ns per unit.
pub fn axis_unit(end_ns: u64) -> (&'static str, f64) {
    if end_ns >= 1_000_000_000 {
        ("s", 1e9)
    } else if end_ns >= 1_000_000 {
        ("ms", 1e6)
    } else {
        ("µs", 1e3)
    }
}

/// The x of time `t_ns` (clamped to the window).
fn x_at(l: &Layout, grid: &Grid, t_ns: u64) -> i32 {
    let t = t_ns.clamp(grid.t0, grid.t1) - grid.t0;
    l.x0 + ((t as f64 / (grid.t1 - grid.t0) as f64) * (l.x1 - l.x0) as f64).round() as i32
}

/// A markers band at `y`: iteration starts as ticks along its bottom, free
/// marks as red triangles with their label where it fits.
fn draw_marks<DB: DrawingBackend>(a: &Area<DB>, l: &Layout, grid: &Grid, y: i32, marks: &[Mark]) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    let px = |t: u64| x_at(l, grid, t);
    let n_iter = marks.iter().filter(|m| m.iteration).count();
    let n_mark = marks.len() - n_iter;
    let what = match (n_iter > 0, n_mark > 0) {
        (true, true) => "iterations, marks",
        (true, false) => "iterations",
        _ => "marks",
    };
    text(a, what, (l.x0 - 10, y + MARK_H / 2), 13.0, TEXT, RIGHT)?;
    fill(a, l.x0, y, l.x1, y + MARK_H, ROW_BG)?;
    let mut last_tick = i32::MIN;
    let visible = |m: &&Mark| m.ts_ns >= grid.t0 && m.ts_ns < grid.t1;
    for m in marks.iter().filter(|m| m.iteration).filter(visible) {
        let x = px(m.ts_ns);
        if x != last_tick {
            vline(a, x, y + MARK_LABEL_H + 1, y + MARK_H - 1, RGBColor(60, 60, 60))?;
            last_tick = x;
        }
    }
    // Triangles first; a label goes right of its triangle only where it
    // reaches neither the next triangle nor the previous label.
    let f = font(12.0);
    let xs: Vec<(i32, &str)> =
        marks.iter().filter(|m| !m.iteration).filter(visible).map(|m| (px(m.ts_ns), m.label.as_str())).collect();
    let mut last_x = i32::MIN;
    for &(x, _) in &xs {
        if x == last_x {
            continue; // one triangle per pixel column
        }
        last_x = x;
        a.draw(&Polygon::new(vec![(x - 4, y + 1), (x + 4, y + 1), (x, y + 8)], RGBColor(200, 30, 30).filled()))?;
    }
    let mut free_from = i32::MIN;
    for (i, &(x, label)) in xs.iter().enumerate() {
        let w = text_width(&f, label) as i32;
        let next = xs.get(i + 1).map_or(l.x1, |n| n.0 - 5);
        if x + 6 >= free_from && x + 6 + w <= next {
            text(a, label, (x + 6, y + MARK_LABEL_H / 2 + 1), 12.0, TEXT, LEFT)?;
            free_from = x + 6 + w + 8;
        }
    }
    Ok(())
}

fn draw_section<DB: DrawingBackend>(a: &Area<DB>, l: &Layout, grid: &Grid, s: &LSection) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    text(a, &elide(&font(13.5), s.title, (l.width - 24) as u32), (12, s.y + SECTION_H / 2), 13.5, TEXT, LEFT)?;
    if !s.marks.is_empty() {
        draw_marks(a, l, grid, s.y + SECTION_H, s.marks)?;
    }
    let label_font = font(12.5);
    if s.rows.is_empty() {
        let y = s.y_rows();
        fill(a, l.x0, y, l.x1, y + ROW_H, ROW_BG)?;
        text(a, s.empty, (l.x0 + 8, y + ROW_H / 2), 12.0, MUTED, LEFT)?;
        return Ok(());
    }
    for (i, row) in s.rows.iter().enumerate() {
        let y = s.y_rows() + i as i32 * (ROW_H + ROW_GAP);
        let label = elide(&label_font, &row.label, (l.x0 - 20) as u32);
        text(a, &label, (l.x0 - 10, y + ROW_H / 2), 12.5, TEXT, RIGHT)?;
        fill(a, l.x0, y, l.x1, y + ROW_H, ROW_BG)?;
        let cov = coverage(grid, row.parts.iter().copied());
        let ins = instants(grid, row.parts.iter().copied());
        draw_row(a, l.x0, y, &cov)?;
        draw_instants(a, l.x0, y, &ins)?;
    }
    Ok(())
}

/// Per column: a pale full-height tint (in the colour of the row's dominant
/// kind) where anything happened, and solid stacked segments whose heights are the
/// kinds' shares of the column's time. Equal neighbouring columns are drawn
/// as one rectangle.
fn draw_row<DB: DrawingBackend>(a: &Area<DB>, x0: i32, y: i32, cov: &[f64]) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    let ncols = cov.len() / Kind::COUNT;
    // The tint is the row's dominant kind (over all columns), so that a row
    // mixing kinds does not flicker from column to column.
    let mut row_total = [0f64; Kind::COUNT];
    for (i, &v) in cov.iter().enumerate() {
        row_total[i % Kind::COUNT] += v;
    }
    let tint = pale(kind_color(
        Kind::ALL[(0..Kind::COUNT).max_by(|&i, &j| row_total[i].total_cmp(&row_total[j])).unwrap_or(0)],
    ));
    // Per column: (dominant kind or none, segment heights in px per kind).
    let cols: Vec<(Option<usize>, [u8; Kind::COUNT])> =
        (0..ncols).map(|c| column_segments(&cov[c * Kind::COUNT..(c + 1) * Kind::COUNT], ROW_H)).collect();
    let mut start = 0;
    while start < ncols {
        let mut end = start + 1;
        while end < ncols && cols[end] == cols[start] {
            end += 1;
        }
        let (dom, segs) = cols[start];
        if dom.is_some() {
            let (xa, xb) = (x0 + start as i32, x0 + end as i32);
            fill(a, xa, y, xb, y + ROW_H, tint)?;
            let mut bottom = y + ROW_H;
            for (k, &h) in segs.iter().enumerate() {
                if h > 0 {
                    fill(a, xa, bottom - h as i32, xb, bottom, kind_color(Kind::ALL[k]))?;
                    bottom -= h as i32;
                }
            }
        }
        start = end;
    }
    Ok(())
}

/// Instants (calls without a return probe: no duration): in each column
/// holding any, a tick in the colour of its most frequent kind over the top
/// `INSTANT_H` pixels of the row, over the time-share segments (which stack
/// from the bottom). Equal neighbouring columns are drawn as one rectangle.
fn draw_instants<DB: DrawingBackend>(a: &Area<DB>, x0: i32, y: i32, counts: &[u32]) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    let ncols = counts.len() / Kind::COUNT;
    let dom = |c: usize| {
        let col = &counts[c * Kind::COUNT..(c + 1) * Kind::COUNT];
        (0..Kind::COUNT).filter(|&k| col[k] > 0).max_by(|&i, &j| col[i].cmp(&col[j]).then(j.cmp(&i)))
    };
    let mut start = 0;
    while start < ncols {
        let k = dom(start);
        let mut end = start + 1;
        while end < ncols && dom(end) == k {
            end += 1;
        }
        if let Some(k) = k {
            fill(a, x0 + start as i32, y, x0 + end as i32, y + INSTANT_H, kind_color(Kind::ALL[k]))?;
        }
        start = end;
    }
    Ok(())
}

/// Height in px of the instants' ticks at the top of a row.
const INSTANT_H: i32 = 6;

/// The dominant kind of a column and the heights (px, stacked, adding up to
/// round(total share × h)) of each kind; any activity gets at least 1 px.
pub fn column_segments(shares: &[f64], h: i32) -> (Option<usize>, [u8; Kind::COUNT]) {
    let mut segs = [0u8; Kind::COUNT];
    let total: f64 = shares.iter().sum();
    if total <= 0.0 {
        return (None, segs);
    }
    let dom = (0..shares.len()).max_by(|&i, &j| shares[i].total_cmp(&shares[j]).then(j.cmp(&i))).unwrap();
    let mut cum = 0.0;
    let mut prev_px = 0i32;
    for (k, &s) in shares.iter().enumerate() {
        cum += s;
        let px = (cum.min(1.0) * h as f64).round() as i32;
        segs[k] = (px - prev_px).max(0) as u8;
        prev_px = px;
    }
    if segs.iter().all(|&s| s == 0) {
        segs[dom] = 1;
    }
    (Some(dom), segs)
}

fn pale(c: RGBColor) -> RGBColor {
    let mix = |v: u8| (v as f64 * 0.3 + 255.0 * 0.7).round() as u8;
    RGBColor(mix(c.0), mix(c.1), mix(c.2))
}

fn draw_power<DB: DrawingBackend>(a: &Area<DB>, l: &Layout, grid: &Grid, tl: &Timeline) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    let (top, bottom) = (l.y_power + 6, l.y_power + POWER_H);
    let series: Vec<Vec<Option<(f64, f64, f64)>>> = tl.power.iter().map(|p| power_columns(grid, &p.samples)).collect();
    let max = series.iter().flatten().flatten().map(|c| c.1).fold(0.0f64, f64::max);
    let top_val = if max > 0.0 { max * 1.08 } else { 100.0 };
    let (ystep, _) = nice_ticks(0.0, top_val, 5);
    let ymax = (top_val / ystep).ceil() * ystep;
    let py = |w: f64| bottom - ((w / ymax).clamp(0.0, 1.0) * (bottom - top) as f64).round() as i32;
    text(a, "GPU power (W)", (12, (top + bottom) / 2), 13.5, TEXT, LEFT)?;
    fill(a, l.x0, top, l.x1, bottom, RGBColor(250, 250, 250))?;
    let dec = decimals_for_step(ystep);
    let mut w = 0.0;
    while w <= ymax + 1e-9 {
        let y = py(w);
        hline(a, l.x0, l.x1, y, GRID)?;
        text(a, &format!("{w:.dec$}"), (l.x0 - 8, y), 12.0, TEXT, RIGHT)?;
        w += ystep;
    }
    vline(a, l.x0, top, bottom, TEXT)?;
    for (i, cols) in series.iter().enumerate() {
        let color = power_color(i);
        let band = pale(color);
        // The curve runs to the window's edges, interpolated from the samples beyond them.
        let mut pts = Vec::new();
        let edge = |t: u64| value_at(&tl.power[i].samples, t);
        let first_col = cols.iter().position(Option::is_some);
        if first_col != Some(0)
            && let Some(v) = edge(grid.t0)
        {
            pts.push((l.x0, py(v)));
        }
        for (c, v) in cols.iter().enumerate() {
            if let Some((lo, hi, mean)) = *v {
                let x = l.x0 + c as i32;
                if py(lo) - py(hi) >= 2 {
                    vline(a, x, py(hi), py(lo), band)?;
                }
                pts.push((x, py(mean)));
            }
        }
        if cols.last().is_some_and(Option::is_none)
            && let Some(v) = edge(grid.t1)
        {
            pts.push((l.x1, py(v)));
        }
        if pts.len() == 1 {
            a.draw(&Circle::new(pts[0], 2, color.filled()))?;
        } else if !pts.is_empty() {
            a.draw(&PathElement::new(pts, color.stroke_width(2)))?;
        }
    }
    // Series legend, top right inside the panel.
    let f = font(12.0);
    let mut y = top + 10;
    for (i, p) in tl.power.iter().enumerate() {
        let wdt = text_width(&f, &p.label) as i32;
        let x = l.x1 - wdt - 30;
        fill(a, x, y - 1, x + 16, y + 2, power_color(i))?;
        text(a, &p.label, (x + 22, y), 12.0, TEXT, LEFT)?;
        y += 16;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_stack_and_round() {
        let mut s = [0.0; Kind::COUNT];
        assert_eq!(column_segments(&s, 18), (None, [0; Kind::COUNT]));
        s[Kind::Launch.index()] = 0.5;
        s[Kind::Sync.index()] = 0.25;
        let (d, seg) = column_segments(&s, 20);
        assert_eq!(d, Some(Kind::Launch.index()));
        assert_eq!(seg[..2], [10, 5]);
        assert_eq!(seg.iter().map(|&v| v as u32).sum::<u32>(), 15);
        // A 1 µs call in a 5 ms column still shows as one pixel.
        let mut t = [0.0; Kind::COUNT];
        t[Kind::GpuInferred.index()] = 0.0002;
        let (d, seg) = column_segments(&t, 18);
        assert_eq!(d, Some(Kind::GpuInferred.index()));
        assert_eq!(seg[Kind::GpuInferred.index()], 1);
    }
}
