//! The one reading rule every reader of a trace applies (tracer's
//! commands, replay), as pure checks: no files, no printing.
//!
//! - Blank lines are skipped (counted, never an error).
//! - Each other line is a JSON object that reads into a [`RawLine`]: a field
//!   of the wrong type is an error naming the line and the field.
//! - Every line but the header and the footer has a string `type`, an
//!   integer `ts` and `pid`; `ts`, `end_ts` and `duration_us` lie within
//!   2^62 ns (146 years of CLOCK_MONOTONIC: larger is corrupt, and sums of
//!   two times then stay below 2^64), `duration_us` is not negative.
//! - The first line is the header; a header of another `format` or of a
//!   newer `format_version` is refused, a missing header is a warning.
//! - A second header, or lines after the footer, is two traces in one
//!   file: refused. A missing footer (the recording was cut off) is a
//!   warning. A file without any line is refused.
//!
//! A [`Checker`] sees the lines in file order ([`Checker::line`]) and says
//! at the end what the file lacked ([`Checker::finish`]); a file read in
//! parts gets one checker per part, joined in order ([`Checker::absorb`]).
use serde::Deserialize as _;
use serde_json::Value;

use crate::header::{FORMAT, FORMAT_VERSION, Header};
use crate::line::{RawLine, scan_into};

/// The largest `ts`, `end_ts` or duration accepted, in ns.
pub const MAX_NS: u64 = 1 << 62;

/// A line the rule refuses: `line` (1-based) and what is wrong with it,
/// naming the field where one is at fault. Shown as `FILE: line N: WHAT`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineError {
    pub line: u64,
    pub what: String,
}

/// Reads one non-blank line into a [`RawLine`] and checks its fields
/// (header and footer lines only for their types). The error says which
/// field is wrong.
pub fn checked_line(bytes: &[u8]) -> Result<RawLine<'_>, String> {
    let mut raw = RawLine::default();
    if !scan_into(bytes, &mut raw) {
        raw = serde_json::from_slice::<RawLine>(bytes).map_err(|e| explain(bytes, e))?;
    }
    let Some(ty) = raw.ty.as_deref() else {
        return Err("no `type` field (a string): not a tracer trace line".into());
    };
    if ty == "header" || ty == "footer" {
        return Ok(raw);
    }
    let ts = raw.ts.ok_or_else(|| format!("a `{ty}` line needs an integer `ts` (ns)"))?;
    if raw.pid.is_none() {
        return Err(format!("a `{ty}` line needs an integer `pid`"));
    }
    for (what, v) in [("ts", Some(ts)), ("end_ts", raw.end_ts)] {
        if let Some(v) = v.filter(|&v| v > MAX_NS) {
            return Err(format!("field `{what}` = {v} is out of range (at most 2^62 ns)"));
        }
    }
    if let Some(d) = raw.duration_us
        && !(0.0..=(MAX_NS / 1000) as f64).contains(&d)
    {
        return Err(format!("field `duration_us` = {d} is out of range (0 to 2^62 ns)"));
    }
    Ok(raw)
}

/// Why serde_json refused the line, naming the field when one is at fault.
#[cold]
fn explain(bytes: &[u8], e: serde_json::Error) -> String {
    let v = match serde_json::from_slice::<Value>(bytes) {
        Ok(v) => v,
        Err(e) => return format!("not valid JSON ({e})"),
    };
    let Value::Object(map) = v else { return "expected a JSON object: not a tracer trace line".into() };
    for (k, v) in map {
        let one = Value::Object([(k.clone(), v)].into_iter().collect());
        if let Err(e) = RawLine::deserialize(&one) {
            return format!("field `{k}`: {e}");
        }
    }
    e.to_string()
}

/// The lines of one trace, in file order (or one part of them): the rule's
/// state between lines.
#[derive(Debug)]
pub struct Checker {
    /// The part starts at the file's first line.
    first_part: bool,
    /// Non-blank lines seen.
    content: u64,
    /// The line of the header (1 in a valid trace).
    header_at: Option<u64>,
    /// The first line's type, when it is not a header.
    first_type: Option<String>,
    footer_at: Option<u64>,
    warnings: Vec<String>,
}

impl Default for Checker {
    fn default() -> Self {
        Checker::new()
    }
}

impl Checker {
    /// For a whole file.
    pub fn new() -> Checker {
        Checker::part(true)
    }

    /// For a part of a file; `first`: the part that starts the file. Line
    /// numbers are the part's own; a later part's header is a second header.
    pub fn part(first: bool) -> Checker {
        Checker { first_part: first, content: 0, header_at: None, first_type: None, footer_at: None, warnings: vec![] }
    }

    /// Checks line `n` (1-based): `None` for a blank line, else the line
    /// read into a [`RawLine`].
    pub fn line<'a>(&mut self, n: u64, bytes: &'a [u8]) -> Result<Option<RawLine<'a>>, LineError> {
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(None);
        }
        let err = |what: String| LineError { line: n, what };
        let raw = checked_line(bytes).map_err(err)?;
        let ty = raw.ty.as_deref().unwrap_or("");
        if let Some(f) = self.footer_at {
            return Err(err(format!(
                "a `{ty}` line after the footer (line {f}): two traces in one file? Read each trace on its own"
            )));
        }
        let first = self.first_part && self.content == 0;
        self.content += 1;
        match ty {
            "header" if first => {
                self.header_at = Some(n);
                check_header(bytes).map_err(err)?;
            }
            "header" => {
                let at = self.header_at.map_or(String::new(), |h| format!(" (the first at line {h})"));
                return Err(err(format!("a second header{at}: two traces in one file? Read each trace on its own")));
            }
            "footer" => self.footer_at = Some(n),
            t if first => self.first_type = Some(t.to_string()),
            _ => {}
        }
        Ok(Some(raw))
    }

    /// A later part of the same file, read after this one: an error when
    /// this part ended with the footer and the later one has lines.
    pub fn absorb(&mut self, later: Checker) -> Result<(), String> {
        if let Some(f) = self.footer_at
            && later.content > 0
        {
            return Err(format!(
                "lines after the footer (line {f}): two traces in one file? Read each trace on its own"
            ));
        }
        self.content += later.content;
        self.footer_at = self.footer_at.or(later.footer_at);
        self.warnings.extend(later.warnings);
        Ok(())
    }

    /// Whether a footer line was seen.
    pub fn has_footer(&self) -> bool {
        self.footer_at.is_some()
    }

    /// The end of the file: an error for a file without lines, else the
    /// warnings (a missing header, a missing footer). `cut`: the file ended
    /// early (a partial last line, a compressed stream cut off): the missing
    /// footer is no news then.
    pub fn finish(self, cut: bool) -> Result<Vec<String>, String> {
        if self.content == 0 {
            return Err("no trace lines (an empty file): not a tracer trace".into());
        }
        let mut w = self.warnings;
        if self.header_at.is_none() {
            let t = self.first_type.as_deref().unwrap_or("?");
            w.push(format!(
                "no header (line 1 is a `{t}` line): the trace's format version is unknown; read as version {FORMAT_VERSION}"
            ));
        }
        if self.footer_at.is_none() && !cut {
            w.push(
                "no footer: the recording did not end normally (tracer killed, or its disk full?); its loss counts are unknown"
                    .into(),
            );
        }
        Ok(w)
    }
}

/// The header's `format` and `format_version`.
#[cold]
fn check_header(bytes: &[u8]) -> Result<(), String> {
    let v: Value = serde_json::from_slice(bytes).map_err(|e| format!("not valid JSON ({e})"))?;
    let h = Header::from_value(&v).ok_or_else(|| {
        let bad = ["format", "format_version", "tracer_version", "command", "pid", "started_at", "replayable"]
            .into_iter()
            .find(|k| {
                v.get(*k).is_some_and(|x| {
                    let one: Value = serde_json::json!({"type": "header", *k: x});
                    Header::from_value(&one).is_none()
                })
            })
            .unwrap_or("?");
        format!("header field `{bad}` has an unexpected type")
    })?;
    if let Some(f) = h.format.as_deref()
        && f != FORMAT
    {
        return Err(format!("header field `format` = {f:?}: not a tracer trace (expected {FORMAT:?})"));
    }
    if let Some(n) = h.format_version
        && n > FORMAT_VERSION
    {
        return Err(format!(
            "header field `format_version` = {n}: written by a newer tracer (this one reads version {FORMAT_VERSION}); use a newer tracer"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(text: &str) -> Result<Vec<String>, String> {
        let mut c = Checker::new();
        for (i, l) in text.split_inclusive('\n').enumerate() {
            c.line(i as u64 + 1, l.as_bytes()).map_err(|e| format!("line {}: {}", e.line, e.what))?;
        }
        c.finish(false)
    }

    const H: &str = "{\"type\":\"header\",\"format\":\"tracer-jsonl\",\"format_version\":1}\n";
    const L: &str = "{\"ts\":5,\"pid\":1,\"type\":\"kernel\",\"op\":\"launch\"}\n";
    const F: &str = "{\"type\":\"footer\"}\n";

    #[test]
    fn a_whole_trace_passes_and_blank_lines_are_skipped() {
        assert_eq!(run(&format!("{H}\n{L}  \n{L}{F}")), Ok(vec![]));
    }

    #[test]
    fn what_the_file_lacks_or_has_twice() {
        assert_eq!(run(""), Err("no trace lines (an empty file): not a tracer trace".into()));
        assert_eq!(run("\n \n"), Err("no trace lines (an empty file): not a tracer trace".into()));
        let w = run(&format!("{L}{F}")).unwrap();
        assert_eq!(
            w,
            ["no header (line 1 is a `kernel` line): the trace's format version is unknown; read as version 2"]
        );
        let w = run(&format!("{H}{L}")).unwrap();
        assert_eq!(
            w,
            [
                "no footer: the recording did not end normally (tracer killed, or its disk full?); its loss counts are unknown"
            ]
        );
        assert_eq!(
            run(&format!("{H}{L}{F}{H}{L}{F}")),
            Err(
                "line 4: a `header` line after the footer (line 3): two traces in one file? Read each trace on its own"
                    .into()
            )
        );
        assert_eq!(
            run(&format!("{H}{L}{H}{L}{F}")),
            Err("line 3: a second header (the first at line 1): two traces in one file? Read each trace on its own"
                .into())
        );
        let mut c = Checker::new();
        c.line(1, H.as_bytes()).unwrap();
        assert_eq!(c.finish(true), Ok(vec![]));
    }

    #[test]
    fn headers_of_other_formats_and_newer_versions_are_refused() {
        let e = run("{\"type\":\"header\",\"format\":\"tracer-jsonl\",\"format_version\":999}\n").unwrap_err();
        assert_eq!(
            e,
            "line 1: header field `format_version` = 999: written by a newer tracer (this one reads version 2); use a newer tracer"
        );
        let e = run("{\"type\":\"header\",\"format\":\"other\"}\n").unwrap_err();
        assert_eq!(e, "line 1: header field `format` = \"other\": not a tracer trace (expected \"tracer-jsonl\")");
        let e = run("{\"type\":\"header\",\"format_version\":\"1\"}\n").unwrap_err();
        assert_eq!(e, "line 1: header field `format_version` has an unexpected type");
    }

    #[test]
    fn fields_are_named() {
        let one = |l: &str| checked_line(l.as_bytes()).map(|_| ()).unwrap_err();
        assert_eq!(one("{\"a\":1,\"b\":2}"), "no `type` field (a string): not a tracer trace line");
        assert_eq!(one("[1]"), "expected a JSON object: not a tracer trace line");
        assert!(one("{\"ts\":").starts_with("not valid JSON (EOF while parsing"), "{}", one("{\"ts\":"));
        assert_eq!(
            one("{\"ts\":1,\"pid\":1,\"type\":\"memory\",\"size\":-5}"),
            "field `size`: invalid value: integer `-5`, expected u64"
        );
        assert_eq!(
            one("{\"ts\":9223372036854775808,\"pid\":1,\"type\":\"kernel\"}"),
            "field `ts` = 9223372036854775808 is out of range (at most 2^62 ns)"
        );
        assert_eq!(
            one("{\"ts\":-1,\"pid\":1,\"type\":\"kernel\"}"),
            "field `ts`: invalid value: integer `-1`, expected u64"
        );
        assert_eq!(
            one("{\"ts\":1,\"pid\":1,\"type\":\"kernel\",\"duration_us\":-2.5}"),
            "field `duration_us` = -2.5 is out of range (0 to 2^62 ns)"
        );
        assert_eq!(one("{\"pid\":1,\"type\":\"kernel\"}"), "a `kernel` line needs an integer `ts` (ns)");
        assert_eq!(one("{\"ts\":1,\"type\":\"kernel\"}"), "a `kernel` line needs an integer `pid`");
        assert!(checked_line(b"{\"type\":\"footer\",\"ts\":1}").is_ok());
    }

    #[test]
    fn parts_join_in_order() {
        let mut a = Checker::part(true);
        a.line(1, H.as_bytes()).unwrap();
        let mut b = Checker::part(false);
        b.line(1, L.as_bytes()).unwrap();
        b.line(2, F.as_bytes()).unwrap();
        // A later part's header is never the file's first line.
        let mut c = Checker::part(false);
        assert!(c.line(1, H.as_bytes()).unwrap_err().what.starts_with("a second header: two traces"));
        a.absorb(b).unwrap();
        assert!(a.has_footer());
        let mut d = Checker::part(false);
        d.line(1, L.as_bytes()).unwrap();
        assert!(a.absorb(d).unwrap_err().starts_with("lines after the footer"));
        assert_eq!(a.finish(false), Ok(vec![]));
    }
}
