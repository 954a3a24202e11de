//! Names from a trace made inert for a terminal (docs/analysis.md, "How
//! names are shown"): a kernel name, command line, host, phase or marker
//! label may hold any character, and the text outputs must not let one
//! clear the screen, set the window title, colour the text, start a new
//! line or reorder one. Control characters (C0 with ESC, BEL, CR, LF, TAB;
//! DEL; C1) and the bidi overrides and isolates are shown as escapes the way
//! git quotes a path (`\x1b`, `\n`, `\u{202e}`); everything else (`δ_kernel`,
//! `≥`) is left as it is. A name longer than [`CELL_CAP`] characters is cut
//! with a visible mark. JSON, Parquet and HTML keep names whole (they escape
//! for themselves).
use std::borrow::Cow;
use std::fmt::Write as _;

/// The most characters a name shows in a table cell or a line of text:
/// whole C++ kernel names (`--names full`) are a few hundred characters,
/// a name of 100 KB is cut to this.
pub const CELL_CAP: usize = 1000;

/// Whether `c` must not reach a terminal raw.
pub fn is_unsafe(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `c` as its visible escape (for an [`is_unsafe`] character).
pub fn push_escape(out: &mut String, c: char) {
    match c {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        c if (c as u32) < 0x80 => {
            let _ = write!(out, "\\x{:02x}", c as u32);
        }
        c => {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        }
    }
}

/// `s` with every [`is_unsafe`] character escaped, line ends included.
pub fn escape(s: &str) -> Cow<'_, str> {
    escape_but(s, |_| false)
}

/// `s` with every [`is_unsafe`] character escaped except those `keep`
/// allows.
fn escape_but(s: &str, keep: impl Fn(char) -> bool) -> Cow<'_, str> {
    if !s.chars().any(|c| is_unsafe(c) && !keep(c)) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        if is_unsafe(c) && !keep(c) {
            push_escape(&mut out, c);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `s` escaped and, past [`CELL_CAP`] characters, cut: the first
/// `CELL_CAP` characters, then `…[+N chars]` for the N left out.
pub fn name(s: &str) -> Cow<'_, str> {
    cut(escape(s), CELL_CAP)
}

/// `s` cut to `cap` characters with the mark `…[+N chars]`.
pub fn cut(s: Cow<'_, str>, cap: usize) -> Cow<'_, str> {
    match s.char_indices().nth(cap) {
        None => s,
        Some((at, _)) => {
            let left = s[at..].chars().count();
            Cow::Owned(format!("{}…[+{left} chars]", &s[..at]))
        }
    }
}

/// A whole text output (lines of a report or summary) with every unsafe
/// character escaped except its line ends: the last guard behind the
/// names escaped where they become a cell or a line.
pub fn text(s: &str) -> Cow<'_, str> {
    escape_but(s, |c| c == '\n')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_and_bidi_are_escaped_the_rest_kept() {
        assert_eq!(escape("gemm\u{1b}[2J\u{7}"), "gemm\\x1b[2J\\x07");
        assert_eq!(escape("a\nb\tc\rd\u{7f}"), "a\\nb\\tc\\rd\\x7f");
        assert_eq!(escape("x\u{85}y\u{9f}"), "x\\u{85}y\\u{9f}");
        assert_eq!(escape("\u{202e}evil\u{2066}\u{2069}"), "\\u{202e}evil\\u{2066}\\u{2069}");
        assert_eq!(escape("\u{1b}]0;title\u{7}"), "\\x1b]0;title\\x07");
        assert!(matches!(escape("δ_kernel<…> ≥ µs"), Cow::Borrowed("δ_kernel<…> ≥ µs")));
    }

    #[test]
    fn long_names_are_cut_with_a_mark() {
        let long = "k".repeat(100_000);
        let n = name(&long);
        assert_eq!(n, format!("{}…[+99000 chars]", "k".repeat(1000)));
        assert_eq!(name(&"é".repeat(1000)), "é".repeat(1000));
        assert_eq!(cut(Cow::Borrowed("abcdef"), 3), "abc…[+3 chars]");
        // escapes count as what they show
        assert_eq!(cut(escape("\u{1b}\u{1b}"), 5), "\\x1b\\…[+3 chars]");
    }

    #[test]
    fn text_keeps_its_lines() {
        assert_eq!(text("a\u{1b}b\nc\r\n"), "a\\x1bb\nc\\r\n");
    }
}
