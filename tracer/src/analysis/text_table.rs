//! Text tables whose columns are as wide as their widest cell (header
//! included): nothing cut, nothing padded beyond need. Width is counted in
//! characters (`µ`, `≥`, `…` are one column each). A cell is a name made
//! inert ([`inert::name`]: control characters escaped, cut past
//! [`inert::CELL_CAP`] characters).
use std::fmt::Write as _;

use super::inert;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
}

#[derive(Clone, Debug, Default)]
pub struct Table {
    heads: Vec<(String, Align)>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column headers and alignments.
    pub fn new(heads: &[(&str, Align)]) -> Table {
        Table { heads: heads.iter().map(|(h, a)| (h.to_string(), *a)).collect(), rows: Vec::new() }
    }

    /// Adds a column (header and alignment) after the others.
    pub fn column(&mut self, head: &str, align: Align) {
        self.heads.push((head.to_string(), align));
    }

    /// Adds a row (missing cells are empty); each cell escaped and cut
    /// ([`inert::name`]).
    pub fn row(&mut self, cells: Vec<String>) {
        let cells = cells
            .into_iter()
            .map(|c| match inert::name(&c) {
                std::borrow::Cow::Borrowed(_) => c,
                std::borrow::Cow::Owned(o) => o,
            })
            .collect();
        self.rows.push(cells);
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    fn widths(&self) -> Vec<usize> {
        let mut w: Vec<usize> = self.heads.iter().map(|(h, _)| h.chars().count()).collect();
        for r in &self.rows {
            for (i, c) in r.iter().enumerate().take(w.len()) {
                w[i] = w[i].max(c.chars().count());
            }
        }
        w
    }

    /// The header line and one line per row, columns separated by two
    /// spaces, no trailing blanks; each line ends with [`KEEP`] so that
    /// [`wrap`] leaves it whole (and removes the mark).
    pub fn render(&self, out: &mut String) {
        let w = self.widths();
        let line = |out: &mut String, cells: &mut dyn Iterator<Item = &str>| {
            let mut l = String::new();
            for (i, (_, a)) in self.heads.iter().enumerate() {
                let c = cells.next().unwrap_or("");
                if i > 0 {
                    l.push_str("  ");
                }
                let pad = w[i] - c.chars().count().min(w[i]);
                match a {
                    Align::Left => {
                        l.push_str(c);
                        l.extend(std::iter::repeat_n(' ', pad));
                    }
                    Align::Right => {
                        l.extend(std::iter::repeat_n(' ', pad));
                        l.push_str(c);
                    }
                }
            }
            let _ = writeln!(out, "{}{KEEP}", l.trim_end());
        };
        line(out, &mut self.heads.iter().map(|(h, _)| h.as_str()));
        for r in &self.rows {
            line(out, &mut r.iter().map(String::as_str));
        }
    }
}

/// The widest line of a report or summary (docs/analysis.md): prose lines
/// longer than this are wrapped by [`wrap`].
pub const MAX_COLUMNS: usize = 160;

/// Marks the end of a line that [`wrap`] must not wrap (a table row whose
/// long cell, such as a whole C++ kernel name, the user asked for).
pub const KEEP: char = '\u{1}';

/// `text` with every line longer than `width` columns wrapped at spaces
/// (lines marked [`KEEP`] excepted, their mark removed);
/// the continuation lines are indented by the line's own indentation plus
/// `extra` columns. A word longer than the width stays whole, up to
/// [`inert::CELL_CAP`] characters (then cut with a mark). Control
/// characters left in the text are escaped ([`inert::text`]).
pub fn wrap(text: &str, width: usize, extra: usize) -> String {
    let mut out = String::with_capacity(text.len() + 64);
    for line in text.split_inclusive('\n') {
        let (body, nl) = match line.strip_suffix('\n') {
            Some(b) => (b, "\n"),
            None => (line, ""),
        };
        if let Some(kept) = body.strip_suffix(KEEP) {
            out.push_str(&inert::text(kept));
            out.push_str(nl);
            continue;
        }
        let body = inert::text(body);
        if body.chars().count() <= width {
            out.push_str(&body);
            out.push_str(nl);
            continue;
        }
        let lead = body.chars().take_while(|c| *c == ' ').count();
        let indent = " ".repeat(lead + extra);
        let mut cur = String::new();
        let mut cur_w = 0;
        for (i, word) in body[lead..].split(' ').enumerate() {
            let word = inert::cut(std::borrow::Cow::Borrowed(word), inert::CELL_CAP);
            let ww = word.chars().count();
            if i == 0 {
                cur = format!("{}{word}", " ".repeat(lead));
                cur_w = lead + ww;
            } else if cur_w + 1 + ww > width && cur_w > indent.len() {
                out.push_str(cur.trim_end());
                out.push('\n');
                cur = format!("{indent}{word}");
                cur_w = indent.len() + ww;
            } else {
                cur.push(' ');
                cur.push_str(&word);
                cur_w += 1 + ww;
            }
        }
        out.push_str(cur.trim_end());
        out.push_str(nl);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_fit_their_widest_cell() {
        let mut t = Table::new(&[("phase", Align::Left), ("time", Align::Right)]);
        t.row(vec!["generate_tokens".into(), "1.0 s".into()]);
        t.row(vec!["load".into(), "12.25 ms".into()]);
        t.column("idle ≥", Align::Right);
        let mut s = String::new();
        t.render(&mut s);
        let s = wrap(&s, 10, 2);
        assert_eq!(s, "phase                time  idle ≥\ngenerate_tokens     1.0 s\nload             12.25 ms\n");
    }

    #[test]
    fn long_lines_wrap_at_spaces() {
        assert_eq!(wrap("note: aaa bbb ccc\n  x\n", 12, 6), "note: aaa\n      bbb\n      ccc\n  x\n");
        assert_eq!(wrap("  abcdefghijklmnop q", 8, 2), "  abcdefghijklmnop\n    q");
    }
}
