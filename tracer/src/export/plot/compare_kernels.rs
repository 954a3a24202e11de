//! `tracer plot --compare`'s second figure: GPU time per kernel family,
//! a recorded bar and a replayed (or compared) bar per family, each with its
//! time and count, the second with its difference from the first in %.
use plotters::prelude::*;

use super::axis::nice_ticks;
use super::draw::*;
use super::input::Kind;
use super::numbers::{Tally, diff_pct, fmt_pct, thousands};
use super::style::*;
use super::timeline::axis_unit;

/// One family's GPU time in both traces.
#[derive(Clone, Debug, PartialEq)]
pub struct FamilyRow {
    pub family: &'static str,
    pub recorded: Tally,
    pub other: Tally,
}

/// The figure's input.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KernelBars {
    pub title: String,
    pub notes: Vec<String>,
    /// "replayed" or "compared": the legend's name of the second bar.
    pub other_label: String,
    pub rows: Vec<FamilyRow>,
}

const LABEL_W: i32 = 130;
const RIGHT_M: i32 = 30;
const BAR_H: i32 = 18;
const BAR_GAP: i32 = 3;
const GROUP_GAP: i32 = 16;
const GROUP_H: i32 = 2 * BAR_H + BAR_GAP + GROUP_GAP;
const LEGEND_H: i32 = 28;
const AXIS_H: i32 = 50;

fn header_h(k: &KernelBars) -> i32 {
    34 + 17 * k.notes.len() as i32 + 8
}

pub fn size(k: &KernelBars, width: u32) -> (u32, u32) {
    let n = k.rows.len().max(1) as i32;
    (width.clamp(600, 20_000), (header_h(k) + LEGEND_H + n * GROUP_H + AXIS_H + 10) as u32)
}

pub fn recorded_color() -> RGBColor {
    kind_color(Kind::GpuMeasured)
}

pub fn other_color() -> RGBColor {
    kind_color(Kind::GpuReplayed)
}

/// "12.3 ms, 1,234 kernels" (copies and sets by their own name).
pub fn bar_label(family: &str, t: &Tally) -> String {
    let what = match (family, t.count == 1) {
        ("copy", true) => "copy",
        ("copy", false) => "copies",
        ("set", true) => "set",
        ("set", false) => "sets",
        (_, true) => "kernel",
        (_, false) => "kernels",
    };
    format!("{}, {} {what}", fmt_ns(t.ns as f64), thousands(t.count))
}

pub fn draw<DB: DrawingBackend>(a: &Area<DB>, k: &KernelBars, width: u32) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    register_font();
    a.fill(&WHITE)?;
    let (w, _) = size(k, width);
    let w = w as i32;
    text(a, &elide(&font(18.0), &k.title, (w - 24) as u32), (12, 8), 18.0, TEXT, TOP_LEFT)?;
    for (i, n) in k.notes.iter().enumerate() {
        let s = elide(&font(12.5), n, (w - 24) as u32);
        text(a, &s, (12, 34 + 17 * i as i32), 12.5, MUTED, TOP_LEFT)?;
    }
    let y_legend = header_h(k) + LEGEND_H / 2 - 4;
    let x = legend_item(a, LABEL_W, y_legend, recorded_color(), "recorded")?;
    legend_item(a, x, y_legend, other_color(), &k.other_label)?;
    let top = header_h(k) + LEGEND_H;
    let (x0, x1) = (LABEL_W, w - RIGHT_M);
    let bottom = top + k.rows.len().max(1) as i32 * GROUP_H;
    fill(a, x0, top, x1, bottom, RGBColor(250, 250, 250))?;
    if k.rows.is_empty() {
        text(a, "no GPU intervals", (x0 + 8, top + GROUP_H / 2), 13.0, MUTED, LEFT)?;
        return Ok(());
    }
    // The labels right of the bars: room for the longest one.
    let labels: Vec<[String; 2]> = k
        .rows
        .iter()
        .map(|r| {
            let pct = fmt_pct(diff_pct(r.recorded.ns, r.other.ns));
            [bar_label(r.family, &r.recorded), format!("{} ({pct})", bar_label(r.family, &r.other))]
        })
        .collect();
    let lf = font(12.0);
    let label_w = labels.iter().flatten().map(|s| text_width(&lf, s) as i32).max().unwrap_or(0) + 12;
    let bar_w = (x1 - x0 - label_w).max(60);
    let max = k.rows.iter().map(|r| r.recorded.ns.max(r.other.ns)).max().unwrap_or(0).max(1);
    let (unit, ns_per_unit) = axis_unit(max);
    let scale = bar_w as f64 / max as f64; // px per ns
    let (step, ticks) = nice_ticks(0.0, (x1 - x0) as f64 / scale / ns_per_unit, 6);
    let dec = decimals_for_step(step);
    for &t in &ticks {
        let x = x0 + (t * ns_per_unit * scale).round() as i32;
        if x > x1 {
            break;
        }
        vline(a, x, top, bottom + 4, GRID)?;
        text(a, &format!("{t:.dec$}"), (x, bottom + 8), 12.0, TEXT, TOP_CENTER)?;
    }
    vline(a, x0, top, bottom, TEXT)?;
    text(a, &format!("GPU time ({unit})"), ((x0 + x1) / 2, bottom + 28), 13.0, TEXT, TOP_CENTER)?;
    for (i, r) in k.rows.iter().enumerate() {
        let y = top + i as i32 * GROUP_H + GROUP_GAP / 2;
        text(a, r.family, (x0 - 10, y + BAR_H + BAR_GAP / 2), 13.0, TEXT, RIGHT)?;
        for (j, (t, c)) in [(&r.recorded, recorded_color()), (&r.other, other_color())].into_iter().enumerate() {
            let yb = y + j as i32 * (BAR_H + BAR_GAP);
            // Any time at all shows as at least 2 px.
            let xb = x0 + 1 + if t.ns > 0 { ((t.ns as f64 * scale).round() as i32).max(2) } else { 0 };
            fill(a, x0 + 1, yb, xb, yb + BAR_H, c)?;
            text(a, &labels[i][j], (xb + 6, yb + BAR_H / 2), 12.0, TEXT, LEFT)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_name_what_was_counted() {
        let t = |count, ns| Tally { count, ns };
        assert_eq!(bar_label("gemm", &t(1_234, 12_345_678)), "12.3 ms, 1,234 kernels");
        assert_eq!(bar_label("other", &t(1, 850)), "850 ns, 1 kernel");
        assert_eq!(bar_label("copy", &t(2, 2_250)), "2.25 µs, 2 copies");
        assert_eq!(bar_label("set", &t(1, 1)), "1 ns, 1 set");
    }

    #[test]
    fn size_grows_with_families() {
        let k = |n: usize| KernelBars {
            rows: (0..n)
                .map(|_| FamilyRow { family: "gemm", recorded: Tally::default(), other: Tally::default() })
                .collect(),
            ..Default::default()
        };
        let (w, h1) = size(&k(1), 1400);
        let (_, h3) = size(&k(3), 1400);
        assert_eq!(w, 1400);
        assert_eq!(h3 - h1, 2 * GROUP_H as u32);
        assert_eq!(size(&k(0), 100), (600, h1));
    }
}
