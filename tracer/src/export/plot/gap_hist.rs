//! Figure 2: idle-gap histogram. Buckets 1-2-5 per decade from 1 µs to 10 s
//! on a log time axis (plus "< 1 µs" and "≥ 10 s" at the ends); the upper
//! panel counts gaps (log scale), the lower one adds up their time. With a
//! second series (`Gaps::compare`, `tracer plot --compare`) each bucket's
//! bar is split in two, the first series left, the second right.
use plotters::prelude::*;

use super::bins::{Bucket, gap_histogram};
use super::draw::*;
use super::input::{Gaps, Kind};
use super::numbers::thousands;
use super::style::*;

const LEFT_W: i32 = 110;
const RIGHT_M: i32 = 30;
const PANEL_H: i32 = 230;

/// Percentile summary of the gaps (nearest rank), None when there are none.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GapStats {
    pub count: u64,
    pub total_ns: u64,
    pub median_ns: u64,
    pub p90_ns: u64,
    pub p99_ns: u64,
    pub max_ns: u64,
}

pub fn gap_stats(gaps: &[u64]) -> Option<GapStats> {
    if gaps.is_empty() {
        return None;
    }
    let mut v = gaps.to_vec();
    v.sort_unstable();
    let rank = |p: f64| v[((p * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1];
    Some(GapStats {
        count: v.len() as u64,
        total_ns: v.iter().sum(),
        median_ns: rank(0.5),
        p90_ns: rank(0.9),
        p99_ns: rank(0.99),
        max_ns: *v.last().unwrap(),
    })
}

pub fn size(g: &Gaps, width: u32) -> (u32, u32) {
    (width.clamp(500, 20_000), (header_h(g) + 2 * PANEL_H + 120) as u32)
}

/// Notes, one stats line per series, and a legend line with two series.
fn header_h(g: &Gaps) -> i32 {
    match g.compare {
        None => 34 + 17 * (g.notes.len() as i32 + 1) + 10,
        Some(_) => 34 + 17 * (g.notes.len() as i32 + 2) + 10 + LEGEND_H,
    }
}

const LEGEND_H: i32 = 24;

/// "12 gaps, 3.00 ms in total; median …, p90 …, p99 …, longest …" or "no gaps".
pub fn stats_line(gaps: &[u64]) -> String {
    match gap_stats(gaps) {
        None => "no gaps".to_string(),
        Some(s) => format!(
            "{}, {} in total; median {}, p90 {}, p99 {}, longest {}",
            super::numbers::plural(s.count, "gap"),
            fmt_ns(s.total_ns as f64),
            fmt_ns(s.median_ns as f64),
            fmt_ns(s.p90_ns as f64),
            fmt_ns(s.p99_ns as f64),
            fmt_ns(s.max_ns as f64)
        ),
    }
}

pub fn draw<DB: DrawingBackend>(a: &Area<DB>, g: &Gaps, width: u32) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    register_font();
    a.fill(&WHITE)?;
    let (w, _) = size(g, width);
    let (x0, x1) = (LEFT_W, w as i32 - RIGHT_M);
    text(a, &elide(&font(18.0), &g.title, w - 24), (12, 8), 18.0, TEXT, TOP_LEFT)?;
    let mut notes = g.notes.clone();
    match &g.compare {
        None => notes.push(stats_line(&g.gaps_ns)),
        Some(c) => {
            notes.push(format!("{}: {}", c.labels[0], stats_line(&g.gaps_ns)));
            notes.push(format!("{}: {}", c.labels[1], stats_line(&c.gaps_ns)));
        }
    }
    for (i, n) in notes.iter().enumerate() {
        let s = elide(&font(12.5), n, w - 24);
        text(a, &s, (12, 34 + 17 * i as i32), 12.5, MUTED, TOP_LEFT)?;
    }
    // Each series: its buckets, and the colours of its bars in the two panels.
    let mut series = vec![(gap_histogram(&g.gaps_ns), RGBColor(55, 110, 170), RGBColor(200, 95, 40))];
    if let Some(c) = &g.compare {
        let (first, second) = (kind_color(Kind::GpuMeasured), kind_color(Kind::GpuReplayed));
        series = vec![(gap_histogram(&g.gaps_ns), first, first), (gap_histogram(&c.gaps_ns), second, second)];
        let y = header_h(g) - LEGEND_H / 2 - 6;
        let x = legend_item(a, x0, y, first, &c.labels[0])?;
        legend_item(a, x, y, second, &c.labels[1])?;
    }
    let n_series = series.len() as i32;
    // The part of bucket `b`'s bar that series `k` draws.
    let part = |(xa, xb): (i32, i32), k: usize| -> (i32, i32) {
        let wdt = (xb - xa) as f64 / n_series as f64;
        (xa + (wdt * k as f64).round() as i32, xa + (wdt * (k + 1) as f64).round() as i32)
    };
    // x in log10(ns); the end buckets get a fixed width beyond 1 µs and 10 s.
    let (lo, hi) = (3.0 - END_W, 10.0 + END_W);
    let px = |l: f64| x0 + ((l - lo) / (hi - lo) * (x1 - x0) as f64).round() as i32;
    let top1 = header_h(g);
    let top2 = top1 + PANEL_H + 34;

    // Counts, log scale.
    let all = || series.iter().flat_map(|s| s.0.iter());
    let max_count = all().map(|b| b.count).max().unwrap_or(0).max(1);
    let decades = (max_count as f64).log10().floor() as i32 + 1;
    let (ylo, yhi) = (-0.3f64, decades as f64 + 0.2);
    let py1 = |c: f64| top1 + PANEL_H - (((c.log10() - ylo) / (yhi - ylo)) * PANEL_H as f64).round() as i32;
    panel_frame(a, x0, x1, top1, &px)?;
    for d in 0..=decades {
        let y = py1(10f64.powi(d));
        hline(a, x0, x1, y, GRID)?;
        text(a, &thousands(10u64.pow(d as u32)), (x0 - 8, y), 12.0, TEXT, RIGHT)?;
    }
    text(a, "gaps", (12, top1 + PANEL_H / 2 - 9), 13.5, TEXT, LEFT)?;
    text(a, "(count,", (12, top1 + PANEL_H / 2 + 8), 12.0, MUTED, LEFT)?;
    text(a, "log scale)", (12, top1 + PANEL_H / 2 + 24), 12.0, MUTED, LEFT)?;
    let mut bars = Vec::new();
    for (k, (buckets, bar_color, _)) in series.iter().enumerate() {
        for b in buckets {
            if b.count == 0 {
                continue;
            }
            let (xa, xb) = part(bucket_px(b, &px), k);
            let y = py1(b.count as f64);
            let (l, r) = if n_series == 1 { (xa + 1, xb - 1) } else { (xa + (k == 0) as i32, xb - (k == 1) as i32) };
            fill(a, l, y, r, top1 + PANEL_H, end_color(b, *bar_color))?;
            bars.push((xa, xb, y, thousands(b.count)));
        }
    }
    bars.sort_by_key(|b| b.0);
    bar_labels(a, &bars, top1)?;

    // Time per bucket, linear.
    let max_t = all().map(|b| b.total_ns).max().unwrap_or(0);
    let (unit, div) = time_unit(max_t);
    let top_val = (max_t as f64 / div * 1.15).max(1e-9);
    let (step, _) = super::axis::nice_ticks(0.0, top_val, 4);
    let ymax = (top_val / step).ceil() * step;
    let py2 = |v: f64| top2 + PANEL_H - ((v / ymax).clamp(0.0, 1.0) * PANEL_H as f64).round() as i32;
    panel_frame(a, x0, x1, top2, &px)?;
    let dec = decimals_for_step(step);
    let mut v = 0.0;
    while v <= ymax + step * 1e-6 {
        hline(a, x0, x1, py2(v), GRID)?;
        text(a, &format!("{v:.dec$}"), (x0 - 8, py2(v)), 12.0, TEXT, RIGHT)?;
        v += step;
    }
    text(a, "time in gaps", (12, top2 + PANEL_H / 2 - 9), 13.5, TEXT, LEFT)?;
    text(a, &format!("({unit})"), (12, top2 + PANEL_H / 2 + 8), 12.0, MUTED, LEFT)?;
    let mut bars = Vec::new();
    for (k, (buckets, _, time_color)) in series.iter().enumerate() {
        for b in buckets {
            if b.total_ns == 0 {
                continue;
            }
            let (xa, xb) = part(bucket_px(b, &px), k);
            let y = py2(b.total_ns as f64 / div).min(top2 + PANEL_H - 1);
            let (l, r) = if n_series == 1 { (xa + 1, xb - 1) } else { (xa + (k == 0) as i32, xb - (k == 1) as i32) };
            fill(a, l, y, r, top2 + PANEL_H, end_color(b, *time_color))?;
            bars.push((xa, xb, y, fmt_ns(b.total_ns as f64)));
        }
    }
    bars.sort_by_key(|b| b.0);
    bar_labels(a, &bars, top2)?;

    // The shared x axis under the lower panel.
    let ya = top2 + PANEL_H;
    hline(a, x0, x1, ya, TEXT)?;
    for d in 3..=10 {
        let x = px(d as f64);
        vline(a, x, ya, ya + 5, TEXT)?;
        text(a, &fmt_edge(10u64.pow(d)), (x, ya + 8), 12.0, TEXT, TOP_CENTER)?;
        if d < 10 {
            for m in [2.0f64, 5.0] {
                let x = px(d as f64 + m.log10());
                vline(a, x, ya, ya + 3, TEXT)?;
            }
        }
    }
    text(a, "< 1 µs", (px(3.0 - END_W / 2.0), ya + 24), 11.0, MUTED, TOP_CENTER)?;
    text(a, "≥ 10 s", (px(10.0 + END_W / 2.0), ya + 24), 11.0, MUTED, TOP_CENTER)?;
    text(a, "gap length (log scale; buckets 1-2-5 per decade)", ((x0 + x1) / 2, ya + 44), 13.0, TEXT, TOP_CENTER)?;
    Ok(())
}

/// Each bar's value centred over it, above every bar the text spans (so no
/// bar hides it); left out where it would touch the previous value.
fn bar_labels<DB: DrawingBackend>(a: &Area<DB>, bars: &[(i32, i32, i32, String)], top: i32) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    let mut free_from = i32::MIN;
    for (xa, xb, _, s) in bars {
        let w = text_width(&font(12.0), s) as i32;
        let (l, r) = ((xa + xb) / 2 - w / 2, (xa + xb) / 2 + w / 2);
        if l < free_from {
            continue;
        }
        let y = bars.iter().filter(|b| b.0 <= r && b.1 >= l).map(|b| b.2).min().unwrap_or(top);
        text(a, s, ((xa + xb) / 2, (y - 8).max(top + 6)), 12.0, TEXT, CENTER)?;
        free_from = r + 6;
    }
    Ok(())
}

/// Width, in decades, of the open-ended buckets drawn at both ends.
const END_W: f64 = 0.35;

fn bucket_px(b: &Bucket, px: &impl Fn(f64) -> i32) -> (i32, i32) {
    let l = if b.lo_ns == 0 { 3.0 - END_W } else { (b.lo_ns as f64).log10() };
    let h = match b.hi_ns {
        Some(h) => (h as f64).log10(),
        None => 10.0 + END_W,
    };
    (px(l), px(h))
}

fn end_color(b: &Bucket, c: RGBColor) -> RGBColor {
    if b.lo_ns == 0 || b.hi_ns.is_none() { RGBColor(c.0 / 2 + 100, c.1 / 2 + 100, c.2 / 2 + 100) } else { c }
}

fn panel_frame<DB: DrawingBackend>(
    a: &Area<DB>,
    x0: i32,
    x1: i32,
    top: i32,
    px: &impl Fn(f64) -> i32,
) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    fill(a, x0, top, x1, top + PANEL_H, RGBColor(250, 250, 250))?;
    for d in 3..=10 {
        vline(a, px(d as f64), top, top + PANEL_H, GRID)?;
    }
    vline(a, x0, top, top + PANEL_H, TEXT)?;
    Ok(())
}

/// The unit making `max_ns` readable, and ns per unit.
fn time_unit(max_ns: u64) -> (&'static str, f64) {
    if max_ns >= 1_000_000_000 {
        ("s", 1e9)
    } else if max_ns >= 1_000_000 {
        ("ms", 1e6)
    } else {
        ("µs", 1e3)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_nearest_rank() {
        assert_eq!(gap_stats(&[]), None);
        let g: Vec<u64> = (1..=100).rev().collect();
        let s = gap_stats(&g).unwrap();
        assert_eq!((s.count, s.total_ns, s.median_ns, s.p90_ns, s.p99_ns, s.max_ns), (100, 5050, 50, 90, 99, 100));
        assert_eq!(gap_stats(&[7]).unwrap().median_ns, 7);
    }
}
