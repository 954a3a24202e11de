//! Small drawing helpers over any plotters backend (bitmap or SVG).
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::style::font;

pub type Area<DB> = DrawingArea<DB, Shift>;

pub const LEFT: Pos = Pos { h_pos: HPos::Left, v_pos: VPos::Center };
pub const RIGHT: Pos = Pos { h_pos: HPos::Right, v_pos: VPos::Center };
pub const CENTER: Pos = Pos { h_pos: HPos::Center, v_pos: VPos::Center };
pub const TOP_CENTER: Pos = Pos { h_pos: HPos::Center, v_pos: VPos::Top };
pub const TOP_LEFT: Pos = Pos { h_pos: HPos::Left, v_pos: VPos::Top };

/// Text at (x, y), anchored at `pos`.
pub fn text<DB: DrawingBackend>(
    a: &Area<DB>,
    s: &str,
    (x, y): (i32, i32),
    size: f64,
    color: RGBColor,
    pos: Pos,
) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    if s.is_empty() {
        return Ok(());
    }
    a.draw(&Text::new(s.to_string(), (x, y), font(size).color(&color).pos(pos)))?;
    Ok(())
}

/// Filled rectangle covering pixels x0..x1, y0..y1 (exclusive ends: both
/// backends fill [x0, x1) × [y0, y1) for a filled rectangle).
pub fn fill<DB: DrawingBackend>(a: &Area<DB>, x0: i32, y0: i32, x1: i32, y1: i32, c: RGBColor) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    if x1 <= x0 || y1 <= y0 {
        return Ok(());
    }
    a.draw(&Rectangle::new([(x0, y0), (x1, y1)], c.filled()))?;
    Ok(())
}

pub fn hline<DB: DrawingBackend>(a: &Area<DB>, x0: i32, x1: i32, y: i32, c: RGBColor) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    a.draw(&PathElement::new(vec![(x0, y), (x1, y)], c))?;
    Ok(())
}

pub fn vline<DB: DrawingBackend>(a: &Area<DB>, x: i32, y0: i32, y1: i32, c: RGBColor) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    a.draw(&PathElement::new(vec![(x, y0), (x, y1)], c))?;
    Ok(())
}

/// A legend entry: swatch then label; returns the x after it.
pub fn legend_item<DB: DrawingBackend>(a: &Area<DB>, x: i32, y: i32, c: RGBColor, label: &str) -> anyhow::Result<i32>
where
    DB::ErrorType: 'static,
{
    fill(a, x, y - 6, x + 14, y + 7, c)?;
    text(a, label, (x + 19, y), 13.0, super::style::TEXT, LEFT)?;
    Ok(x + 19 + super::style::text_width(&font(13.0), label) as i32 + 22)
}
