//! Figure 3: time and energy per phase, as two horizontal bar panels that
//! share the phase names.
use plotters::prelude::*;

use super::axis::nice_ticks;
use super::draw::*;
use super::input::{PhaseBar, PhaseBars};
use super::style::*;

/// The label column: as wide as the longest phase name (never cut), 120 px
/// to a third of the figure.
fn label_w(bars: &[PhaseBar], w: i32) -> i32 {
    let f = font(12.5);
    let widest = bars.iter().map(|b| text_width(&f, &b.label) as i32).max().unwrap_or(0);
    (widest + 24).clamp(120, (w / 3).max(120))
}
const BAR_H: i32 = 22;
const BAR_GAP: i32 = 8;
/// More phases than this: the shortest are folded into one bar.
pub const MAX_BARS: usize = 24;

/// At most `max` bars: the longest `max - 1` in order, the rest summed into
/// "+N more phases" (energy summed only when every folded bar has one).
pub fn fold_bars(bars: &[PhaseBar], max: usize) -> Vec<PhaseBar> {
    let max = max.max(1);
    if bars.len() <= max {
        return bars.to_vec();
    }
    let mut idx: Vec<usize> = (0..bars.len()).collect();
    idx.sort_by(|&a, &b| bars[b].seconds.total_cmp(&bars[a].seconds).then(a.cmp(&b)));
    let mut keep = idx[..max - 1].to_vec();
    keep.sort_unstable();
    let rest = &idx[max - 1..];
    let mut out: Vec<PhaseBar> = keep.iter().map(|&i| bars[i].clone()).collect();
    out.push(PhaseBar {
        label: format!("+{} more phases", rest.len()),
        seconds: rest.iter().map(|&i| bars[i].seconds).sum(),
        joules: rest.iter().map(|&i| bars[i].joules).sum::<Option<f64>>(),
        uncertain: rest.iter().any(|&i| bars[i].uncertain),
    });
    out
}

fn header_h(p: &PhaseBars) -> i32 {
    34 + 17 * p.notes.len() as i32 + 14
}

pub fn size(p: &PhaseBars, width: u32) -> (u32, u32) {
    let n = fold_bars(&p.bars, MAX_BARS).len().max(1) as i32;
    (width.clamp(600, 20_000), (header_h(p) + 30 + n * (BAR_H + BAR_GAP) + 60) as u32)
}

pub fn draw<DB: DrawingBackend>(a: &Area<DB>, p: &PhaseBars, width: u32) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    register_font();
    a.fill(&WHITE)?;
    let (w, _) = size(p, width);
    let w = w as i32;
    text(a, &elide(&font(18.0), &p.title, (w - 24) as u32), (12, 8), 18.0, TEXT, TOP_LEFT)?;
    for (i, n) in p.notes.iter().enumerate() {
        let s = elide(&font(12.5), n, (w - 24) as u32);
        text(a, &s, (12, 34 + 17 * i as i32), 12.5, MUTED, TOP_LEFT)?;
    }
    let bars = fold_bars(&p.bars, MAX_BARS);
    let top = header_h(p) + 30;
    let n = bars.len().max(1) as i32;
    let bottom = top + n * (BAR_H + BAR_GAP);
    let label_w = label_w(&bars, w);
    // Without power samples there is no energy panel: time takes the width.
    let energy = bars.iter().any(|b| b.joules.is_some());
    let mid = label_w + (w - label_w) / 2;
    let panels = if energy { [(label_w, mid - 40), (mid + 20, w - 40)] } else { [(label_w, w - 40), (0, 0)] };
    if bars.is_empty() {
        text(a, "no phases", (label_w, top + BAR_H / 2), 13.0, MUTED, LEFT)?;
        return Ok(());
    }
    let lf = font(12.5);
    for (i, b) in bars.iter().enumerate() {
        let y = top + i as i32 * (BAR_H + BAR_GAP) + BAR_GAP / 2;
        let label = elide(&lf, &b.label, (label_w - 24).max(text_width(&lf, &b.label) as i32) as u32);
        text(a, &label, (label_w - 10, y + BAR_H / 2), 12.5, TEXT, RIGHT)?;
    }
    let total_s: f64 = bars.iter().map(|b| b.seconds).sum();
    let secs: Vec<Option<f64>> = bars.iter().map(|b| Some(b.seconds)).collect();
    panel(
        a,
        panels[0],
        top,
        bottom,
        "time (s)",
        &secs,
        |_, v| {
            let share = if total_s > 0.0 { v / total_s * 100.0 } else { 0.0 };
            format!("{} ({share:.0}%)", fmt_ns(v * 1e9))
        },
        phase_color_strong(0),
    )?;
    if energy {
        let joules: Vec<Option<f64>> = bars.iter().map(|b| b.joules).collect();
        panel(
            a,
            panels[1],
            top,
            bottom,
            "energy (J)",
            &joules,
            |i, v| {
                let s = bars[i].seconds;
                let q = if bars[i].uncertain { " ± (short or partly sampled)" } else { "" };
                if s > 0.0 { format!("{}{q} (avg {:.0} W)", fmt_j(v), v / s) } else { format!("{}{q}", fmt_j(v)) }
            },
            phase_color_strong(1),
        )?;
    }
    Ok(())
}

fn fmt_j(j: f64) -> String {
    if j >= 1000.0 {
        format!("{:.2} kJ", j / 1000.0)
    } else if j >= 10.0 {
        format!("{j:.0} J")
    } else {
        format!("{j:.2} J")
    }
}

fn phase_color_strong(i: usize) -> RGBColor {
    [RGBColor(55, 110, 170), RGBColor(200, 95, 40)][i % 2]
}

#[allow(clippy::too_many_arguments, reason = "one panel: its area, span, bars and their labels")]
fn panel<DB: DrawingBackend>(
    a: &Area<DB>,
    (xa, xb): (i32, i32),
    top: i32,
    bottom: i32,
    title: &str,
    values: &[Option<f64>],
    label: impl Fn(usize, f64) -> String,
    color: RGBColor,
) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    text(a, title, ((xa + xb) / 2, top - 22), 13.5, TEXT, CENTER)?;
    fill(a, xa, top, xb, bottom, RGBColor(250, 250, 250))?;
    let max = values.iter().flatten().copied().fold(0.0f64, f64::max);
    // Leave room right of the longest bar for its value.
    let lf = font(11.5);
    let label_w = values
        .iter()
        .enumerate()
        .filter_map(|(i, v)| v.map(|v| text_width(&lf, &label(i, v)) as i32))
        .max()
        .unwrap_or(0)
        + 10;
    let bar_w = (xb - xa - label_w).max(40);
    let top_val = if max > 0.0 { max } else { 1.0 };
    let (step, ticks) = nice_ticks(0.0, top_val * (xb - xa) as f64 / bar_w as f64, 5);
    let scale = bar_w as f64 / top_val;
    let dec = decimals_for_step(step);
    for &t in &ticks {
        let x = xa + (t * scale).round() as i32;
        if x > xb {
            break;
        }
        vline(a, x, top, bottom + 4, GRID)?;
        text(a, &format!("{t:.dec$}"), (x, bottom + 8), 12.0, TEXT, TOP_CENTER)?;
    }
    vline(a, xa, top, bottom, TEXT)?;
    for (i, v) in values.iter().enumerate() {
        let y = top + i as i32 * (BAR_H + BAR_GAP) + BAR_GAP / 2;
        match *v {
            Some(v) => {
                let x = xa + (v * scale).round() as i32;
                fill(a, xa + 1, y, x.max(xa + 2), y + BAR_H, color)?;
                text(a, &label(i, v), (x.max(xa + 2) + 6, y + BAR_H / 2), 11.5, TEXT, LEFT)?;
            }
            None => text(a, "n/a", (xa + 6, y + BAR_H / 2), 11.5, MUTED, LEFT)?,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bar(l: &str, s: f64, j: Option<f64>) -> PhaseBar {
        PhaseBar { label: l.into(), seconds: s, joules: j, uncertain: false }
    }

    #[test]
    fn fold_keeps_longest_in_order() {
        let bars =
            vec![bar("a", 1.0, Some(10.0)), bar("b", 5.0, Some(50.0)), bar("c", 0.5, Some(1.0)), bar("d", 3.0, None)];
        let f = fold_bars(&bars, 3);
        assert_eq!(f, vec![bar("b", 5.0, Some(50.0)), bar("d", 3.0, None), bar("+2 more phases", 1.5, Some(11.0))]);
        let g = fold_bars(&bars, 2);
        assert_eq!(g[1], bar("+3 more phases", 4.5, None));
        assert_eq!(fold_bars(&bars, 10), bars);
    }
}
