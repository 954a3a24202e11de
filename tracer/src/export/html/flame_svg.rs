//! A flame graph as inline SVG for the HTML report (analysis/flame.rs
//! builds the tree): the root at the bottom, each frame a box as wide as
//! its share of the root's weight, its callees above it in name order.
//! Each box is a `<g class=fr>` with `data-name`, `data-value` (ns or
//! launches) and `data-depth`; its `<title>` gives the frame, its weight and
//! its share. Boxes narrower than [`MIN_PX`] are left out and counted on
//! the `<svg>` (`data-hidden`); the page's script writes each drawn box's
//! rendered width into `data-px` and the number drawn into the svg's
//! `data-frames` (what the browser test reads).
use std::fmt::Write as _;

use super::esc;
use crate::analysis::flame::Flame;

/// The graph's width in px.
pub const WIDTH: f64 = 1200.0;
/// The height of a row in px.
const ROW: f64 = 17.0;
/// Boxes narrower than this are not drawn.
pub const MIN_PX: f64 = 0.3;
/// The width of a character of the boxes' labels (11 px font), for cutting them.
const CHAR_PX: f64 = 6.6;

/// A weight as text: ns as a duration, else a count.
pub enum Unit {
    Ns,
    Launches,
}

impl Unit {
    fn text(&self, v: u64) -> String {
        match self {
            Unit::Ns => crate::analysis::stats::fmt_ns(v),
            Unit::Launches => format!("{v} launches"),
        }
    }
}

/// The label of a box `px` wide: the name, cut with `…` to fit, or nothing.
fn label(name: &str, px: f64) -> String {
    let fit = ((px - 6.0) / CHAR_PX).floor();
    if fit < 3.0 {
        return String::new();
    }
    let fit = fit as usize;
    let n = name.chars().count();
    if n <= fit { name.to_string() } else { format!("{}…", name.chars().take(fit - 1).collect::<String>()) }
}

/// A stable colour per name: warm for code, grey for `[…]` nodes, blue for
/// the idle graph's causes (`cause` says which names are causes).
fn colour(name: &str, cause: bool) -> String {
    if cause {
        return "#7aa6d6".into();
    }
    if name.starts_with('[') {
        return "#c8c8c8".into();
    }
    let h = name.bytes().fold(2166136261u32, |h, b| (h ^ u32::from(b)).wrapping_mul(16777619));
    format!("hsl({},{}%,{}%)", 10 + h % 40, 70 + (h >> 8) % 20, 55 + (h >> 16) % 12)
}

/// Writes the graph; `id` names the svg, `leaves_are_causes` colours the
/// leaves of the idle graph.
pub fn svg(out: &mut String, id: &str, title: &str, f: &Flame, unit: Unit, leaves_are_causes: bool) {
    let total = f.value.max(1) as f64;
    let depth = f.depth();
    let h = ROW * depth as f64 + 4.0;
    let boxes = f.boxes();
    let hidden = boxes.iter().filter(|(_, _, n)| n.value as f64 / total * WIDTH < MIN_PX).count();
    let _ = write!(
        out,
        "<figure><figcaption>{}</figcaption><svg class=flame id={id} width=\"{WIDTH}\" height=\"{h}\" viewBox=\"0 0 {WIDTH} {h}\" role=img data-total=\"{}\" data-hidden=\"{hidden}\"><title>{}</title>",
        esc(title),
        f.value,
        esc(title)
    );
    for (d, x, n) in boxes {
        let w = n.value as f64 / total * WIDTH;
        if w < MIN_PX {
            continue;
        }
        let (px, py) = (x as f64 / total * WIDTH, h - ROW * (d as f64 + 1.0));
        let cause = leaves_are_causes && n.children.is_empty() && d > 0;
        let _ = write!(
            out,
            "<g class=fr data-name=\"{}\" data-value=\"{}\" data-depth=\"{d}\"><title>{} — {} ({:.1} %)</title>\
             <rect x=\"{px:.2}\" y=\"{py:.1}\" width=\"{w:.2}\" height=\"{:.1}\" fill=\"{}\"></rect>",
            esc(&n.name),
            n.value,
            esc(&n.name),
            esc(&unit.text(n.value)),
            100.0 * n.value as f64 / total,
            ROW - 1.0,
            colour(&n.name, cause)
        );
        let l = label(&n.name, w);
        if !l.is_empty() {
            let _ = write!(out, "<text x=\"{:.2}\" y=\"{:.1}\">{}</text>", px + 3.0, py + ROW - 5.0, esc(&l));
        }
        out.push_str("</g>");
    }
    out.push_str("</svg></figure>\n");
}

/// The page's script part that measures the drawn boxes.
pub const SCRIPT: &str = r#"
(function(){
  document.querySelectorAll('svg.flame').forEach(function(s){
    var n=0;
    s.querySelectorAll('g.fr').forEach(function(g){
      var r=g.querySelector('rect'); g.setAttribute('data-px',r.getBBox().width.toFixed(1)); n++;
    });
    s.setAttribute('data-frames',String(n));
  });
})();
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_fit_their_boxes() {
        assert_eq!(label("train_step (train.py:60)", 1200.0), "train_step (train.py:60)");
        assert_eq!(label("train_step (train.py:60)", 6.5 + 6.6 * 6.0), "train…");
        assert_eq!(label("train_step", 20.0), "");
    }

    #[test]
    fn boxes_as_wide_as_their_share() {
        let mut f = Flame::root("all");
        f.add(&["main".to_string(), "a<b>".to_string()], 3);
        f.add(&["main".to_string()], 1);
        f.add(&["tiny".to_string()], 0);
        let mut s = String::new();
        svg(&mut s, "busy", "busy: 4", &f, Unit::Ns, false);
        assert!(s.contains("data-total=\"4\" data-hidden=\"0\""), "{s}");
        assert!(s.contains("<g class=fr data-name=\"a&lt;b&gt;\" data-value=\"3\" data-depth=\"2\"><title>a&lt;b&gt; — 3 ns (75.0 %)</title><rect x=\"0.00\" y=\"4.0\" width=\"900.00\""), "{s}");
        assert_eq!(s.matches("<g class=fr").count(), 3);
    }
}
