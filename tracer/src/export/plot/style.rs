//! Colours, fonts and text helpers shared by the figures.
use std::sync::Once;

use plotters::style::{FontStyle, RGBColor, TextStyle};

use super::input::Kind;

/// The one font: DejaVu Sans, embedded so that no fontconfig or system font
/// is needed (license: fonts/LICENSE-DejaVu.txt).
static FONT: &[u8] = include_bytes!("fonts/DejaVuSans.ttf");
pub const FAMILY: &str = "sans-serif";

pub fn register_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        if plotters::style::register_font(FAMILY, FontStyle::Normal, FONT).is_err() {
            // The file is part of the binary; this cannot happen at run time.
            panic!("the embedded DejaVu Sans font does not parse");
        }
    });
}

/// The font at `size` px, rounded to an even number: plotters' ab_glyph
/// renderer places each glyph at `trunc(size / 2 + glyph top)`, so odd or
/// fractional sizes move some glyphs (the period, the comma) a pixel up.
pub fn font(size: f64) -> TextStyle<'static> {
    // Registered before first use, also when only measuring text (layout).
    register_font();
    TextStyle::from((FAMILY, ((size / 2.0).round() * 2.0).max(2.0)))
}

pub const TEXT: RGBColor = RGBColor(30, 30, 30);
pub const MUTED: RGBColor = RGBColor(110, 110, 110);
pub const ROW_BG: RGBColor = RGBColor(242, 242, 242);
pub const GRID: RGBColor = RGBColor(215, 215, 215);

pub fn kind_color(k: Kind) -> RGBColor {
    match k {
        Kind::Launch => RGBColor(31, 119, 180),
        Kind::Sync => RGBColor(214, 39, 40),
        Kind::Copy => RGBColor(148, 103, 189),
        Kind::Memory => RGBColor(255, 127, 14),
        Kind::OtherCall => RGBColor(140, 140, 140),
        Kind::GpuMeasured => RGBColor(26, 135, 70),
        Kind::GpuInferred => RGBColor(222, 170, 20),
        // The second trace of `--compare`, in all three of its figures.
        Kind::GpuReplayed | Kind::GpuCompared => RGBColor(0, 128, 160),
        // pale: a stretch that may or may not have been busy
        Kind::GpuBound => RGBColor(200, 200, 200),
    }
}

/// Pastel colours for phase bands, cycled.
pub fn phase_color(i: usize) -> RGBColor {
    const P: [RGBColor; 8] = [
        RGBColor(199, 224, 244),
        RGBColor(253, 219, 176),
        RGBColor(200, 235, 196),
        RGBColor(246, 200, 200),
        RGBColor(222, 210, 236),
        RGBColor(230, 212, 205),
        RGBColor(246, 215, 236),
        RGBColor(225, 225, 190),
    ];
    P[i % P.len()]
}

pub fn power_color(i: usize) -> RGBColor {
    const P: [RGBColor; 4] =
        [RGBColor(200, 60, 30), RGBColor(40, 90, 200), RGBColor(20, 140, 90), RGBColor(150, 60, 160)];
    P[i % P.len()]
}

/// Width in pixels of `text` in `style` (0 if the font cannot measure it).
pub fn text_width(style: &TextStyle, text: &str) -> u32 {
    style.font.box_size(text).map(|(w, _)| w).unwrap_or(0)
}

/// `text`, shortened with "…" in the middle-right so that it fits `max_px`
/// (empty if not even "…" fits).
pub fn elide(style: &TextStyle, text: &str, max_px: u32) -> String {
    if text_width(style, text) <= max_px {
        return text.to_string();
    }
    let chars: Vec<char> = text.chars().collect();
    let (mut lo, mut hi) = (0usize, chars.len());
    // Largest prefix length n with prefix + "…" fitting.
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        let s: String = chars[..mid].iter().collect::<String>() + "…";
        if text_width(style, &s) <= max_px {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    let s: String = chars[..lo].iter().collect::<String>() + "…";
    if text_width(style, &s) <= max_px { s } else { String::new() }
}

/// A duration in ns as "850 ns", "12.5 µs", "3.20 ms", "1.50 s".
pub fn fmt_ns(ns: f64) -> String {
    let (v, unit) = if ns < 1e3 {
        (ns, "ns")
    } else if ns < 1e6 {
        (ns / 1e3, "µs")
    } else if ns < 1e9 {
        (ns / 1e6, "ms")
    } else {
        (ns / 1e9, "s")
    };
    if v >= 100.0 || unit == "ns" {
        format!("{v:.0} {unit}")
    } else if v >= 10.0 {
        format!("{v:.1} {unit}")
    } else {
        format!("{v:.2} {unit}")
    }
}

/// A bucket edge (1-2-5 values): "1 µs", "20 ms", "5 s".
pub fn fmt_edge(ns: u64) -> String {
    if ns >= 1_000_000_000 && ns.is_multiple_of(1_000_000_000) {
        format!("{} s", ns / 1_000_000_000)
    } else if ns >= 1_000_000 && ns.is_multiple_of(1_000_000) {
        format!("{} ms", ns / 1_000_000)
    } else if ns >= 1_000 && ns.is_multiple_of(1_000) {
        format!("{} µs", ns / 1_000)
    } else {
        format!("{ns} ns")
    }
}

/// Decimals that make ticks `step` apart distinct.
pub fn decimals_for_step(step: f64) -> usize {
    if step <= 0.0 || !step.is_finite() {
        return 3;
    }
    (-step.log10().floor()).clamp(0.0, 9.0) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_edges() {
        assert_eq!(fmt_ns(850.0), "850 ns");
        assert_eq!(fmt_ns(12_500.0), "12.5 µs");
        assert_eq!(fmt_ns(3_200_000.0), "3.20 ms");
        assert_eq!(fmt_ns(1.5e9), "1.50 s");
        assert_eq!(fmt_ns(250e9), "250 s");
        assert_eq!(fmt_edge(1_000), "1 µs");
        assert_eq!(fmt_edge(20_000_000), "20 ms");
        assert_eq!(fmt_edge(5_000_000_000), "5 s");
        assert_eq!(decimals_for_step(0.5), 1);
        assert_eq!(decimals_for_step(0.02), 2);
        assert_eq!(decimals_for_step(10.0), 0);
    }

    #[test]
    fn elide_fits_the_width() {
        register_font();
        let f = font(13.0);
        let full = "tid 12345 python3 (main thread)";
        let w = text_width(&f, full);
        assert!(w > 100, "{w}");
        assert_eq!(elide(&f, full, w), full);
        let short = elide(&f, full, w / 2);
        assert!(short.ends_with('…') && short.len() < full.len(), "{short}");
        assert!(text_width(&f, &short) <= w / 2);
        assert!(full.starts_with(short.trim_end_matches('…')));
        assert_eq!(elide(&f, full, 1), "");
    }
}
