//! Metric families as OpenMetrics 1.0 text (what `tracer agent` serves at
//! /metrics; Prometheus reads it): `# TYPE` and `# HELP` per family,
//! counters' samples with `_total`, histograms as `_bucket`/`_count`/`_sum`,
//! label values escaped (`\\`, `\"`, `\n`), `# EOF` last.
use std::fmt::Write as _;

use crate::analysis::agent::metric::{Family, Kind, Value};

/// The Content-Type of [`render`]'s text.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// A label value with `\`, `"` and newlines escaped.
pub fn escape_label(v: &str) -> String {
    let mut s = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => s.push_str("\\\\"),
            '"' => s.push_str("\\\""),
            '\n' => s.push_str("\\n"),
            c => s.push(c),
        }
    }
    s
}

/// HELP text escaping (`\` and newlines).
fn escape_help(v: &str) -> String {
    v.replace('\\', "\\\\").replace('\n', "\\n")
}

/// A number as OpenMetrics writes it (integers without a fraction, +Inf).
fn number(v: f64) -> String {
    if v.is_infinite() {
        if v > 0.0 { "+Inf".into() } else { "-Inf".into() }
    } else if v.is_nan() {
        "NaN".into()
    } else if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

fn labels(out: &mut String, l: &[(&'static str, String)], extra: Option<(&str, &str)>) {
    if l.is_empty() && extra.is_none() {
        return;
    }
    out.push('{');
    let mut first = true;
    for (k, v) in l.iter().map(|(k, v)| (*k, v.as_str())).chain(extra) {
        if !first {
            out.push(',');
        }
        first = false;
        let _ = write!(out, "{k}=\"{}\"", escape_label(v));
    }
    out.push('}');
}

/// The whole exposition, `# EOF` included.
pub fn render(families: &[Family]) -> String {
    let mut out = String::with_capacity(64 * 1024);
    for f in families {
        let _ = writeln!(out, "# TYPE {} {}", f.name, f.kind.as_str());
        let _ = writeln!(out, "# HELP {} {}", f.name, escape_help(f.help));
        for s in &f.samples {
            match (&s.value, f.kind) {
                (Value::Number(v), Kind::Counter) => {
                    let _ = write!(out, "{}_total", f.name);
                    labels(&mut out, &s.labels, None);
                    let _ = writeln!(out, " {}", number(*v));
                }
                (Value::Number(v), _) => {
                    out.push_str(f.name);
                    labels(&mut out, &s.labels, None);
                    let _ = writeln!(out, " {}", number(*v));
                }
                (Value::Histogram(h), _) => {
                    for &(le, n) in &h.buckets {
                        let _ = write!(out, "{}_bucket", f.name);
                        labels(&mut out, &s.labels, Some(("le", &number(le))));
                        let _ = writeln!(out, " {n}");
                    }
                    let _ = write!(out, "{}_count", f.name);
                    labels(&mut out, &s.labels, None);
                    let _ = writeln!(out, " {}", h.count);
                    let _ = write!(out, "{}_sum", f.name);
                    labels(&mut out, &s.labels, None);
                    let _ = writeln!(out, " {}", number(h.sum));
                }
            }
        }
    }
    out.push_str("# EOF\n");
    out
}

#[cfg(test)]
#[path = "openmetrics_tests.rs"]
mod tests;
