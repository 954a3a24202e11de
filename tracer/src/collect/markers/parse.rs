//! The marker line protocol (docs/markers.md): one line per marker,
//!
//! ```text
//! OP LABEL... [ts=NS] [pid=PID] [tid=TID] [tokens=N]
//! ```
//!
//! OP is `phase`, `iteration` or `mark`. The fields are recognised only at
//! the end of the line (the label may contain anything, `=` included); every
//! word between OP and the fields is the label, inner spacing kept.
use serde_json::{Map, Value, json};

/// Longest accepted line (without its newline): PIPE_BUF, the size up to
/// which one write(2) to a pipe is atomic.
pub const MAX_LINE: usize = 4096;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarkerOp {
    Phase,
    Iteration,
    Mark,
}

impl MarkerOp {
    pub fn as_str(self) -> &'static str {
        match self {
            MarkerOp::Phase => "phase",
            MarkerOp::Iteration => "iteration",
            MarkerOp::Mark => "mark",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Marker {
    pub op: MarkerOp,
    pub label: String,
    /// CLOCK_MONOTONIC ns, as the program took it.
    pub ts: Option<u64>,
    pub pid: Option<u32>,
    pub tid: Option<u32>,
    pub tokens: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MarkerError {
    NotUtf8,
    TooLong(usize),
    UnknownOp(String),
    MissingLabel,
    BadValue {
        key: &'static str,
        value: String,
    },
    Duplicate(&'static str),
    /// ts later than the reader's clock: not CLOCK_MONOTONIC (e.g. time.time_ns()).
    TsInFuture {
        ts: u64,
        now: u64,
    },
}

impl std::fmt::Display for MarkerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MarkerError::NotUtf8 => write!(f, "not UTF-8"),
            MarkerError::TooLong(n) => write!(f, "line of {n} bytes, longer than {MAX_LINE}"),
            MarkerError::UnknownOp(op) => {
                write!(f, "unknown marker {op:?}: expected phase, iteration or mark")
            }
            MarkerError::MissingLabel => write!(f, "no label after the marker kind"),
            MarkerError::BadValue { key, value } => {
                write!(f, "{key}={value:?}: expected a non-negative integer")
            }
            MarkerError::Duplicate(key) => write!(f, "{key}= given twice"),
            MarkerError::TsInFuture { ts, now } => write!(
                f,
                "ts={ts} is {} s ahead of CLOCK_MONOTONIC: use time.monotonic_ns() / clock_gettime(CLOCK_MONOTONIC)",
                (ts - now) / 1_000_000_000
            ),
        }
    }
}

const FIELDS: [&str; 4] = ["ts", "pid", "tid", "tokens"];

/// Parses one line (without its newline; a trailing `\r` is ignored).
/// Returns `Ok(None)` for a blank line.
pub fn parse_line(line: &[u8]) -> Result<Option<Marker>, MarkerError> {
    if line.len() > MAX_LINE {
        return Err(MarkerError::TooLong(line.len()));
    }
    let text = std::str::from_utf8(line).map_err(|_| MarkerError::NotUtf8)?;
    let text = text.trim_matches(|c: char| c.is_ascii_whitespace());
    if text.is_empty() {
        return Ok(None);
    }
    let (op_word, rest) = match text.find(|c: char| c.is_ascii_whitespace()) {
        Some(i) => (&text[..i], text[i..].trim_start_matches(|c: char| c.is_ascii_whitespace())),
        None => (text, ""),
    };
    let op = match op_word {
        "phase" => MarkerOp::Phase,
        "iteration" => MarkerOp::Iteration,
        "mark" => MarkerOp::Mark,
        other => return Err(MarkerError::UnknownOp(other.chars().take(40).collect())),
    };
    let mut m = Marker { op, label: String::new(), ts: None, pid: None, tid: None, tokens: None };
    // Peel known fields off the end.
    let mut label = rest;
    loop {
        let (head, last) = match label.rfind(|c: char| c.is_ascii_whitespace()) {
            Some(i) => (label[..i].trim_end_matches(|c: char| c.is_ascii_whitespace()), &label[i + 1..]),
            None => ("", label),
        };
        let Some((key, value)) = last.split_once('=') else { break };
        let Some(&key) = FIELDS.iter().find(|&&k| k == key) else { break };
        let n: u64 = match value.parse() {
            Ok(n) if !value.starts_with('+') => n,
            _ => return Err(MarkerError::BadValue { key, value: value.chars().take(40).collect() }),
        };
        let small = |n: u64| u32::try_from(n).map_err(|_| MarkerError::BadValue { key, value: value.to_string() });
        let dup = match key {
            "ts" => m.ts.replace(n).is_some(),
            "pid" => m.pid.replace(small(n)?).is_some(),
            "tid" => m.tid.replace(small(n)?).is_some(),
            _ => m.tokens.replace(n).is_some(),
        };
        if dup {
            return Err(MarkerError::Duplicate(key));
        }
        label = head;
    }
    if label.is_empty() {
        return Err(MarkerError::MissingLabel);
    }
    m.label = label.to_string();
    Ok(Some(m))
}

/// The trace line for a marker (docs/trace-format.md, "marker"). `now` is the
/// reader's CLOCK_MONOTONIC when it read the line (the ts of a marker that
/// gives none); `default_pid` the pid of one that gives none.
pub fn marker_line(m: &Marker, now: u64, default_pid: u32) -> Result<Value, MarkerError> {
    // A little slack: the writer's clock read and our own are not ordered
    // exactly, but a real CLOCK_MONOTONIC stamp is never seconds ahead.
    if let Some(ts) = m.ts
        && ts > now.saturating_add(1_000_000_000)
    {
        return Err(MarkerError::TsInFuture { ts, now });
    }
    let mut o = Map::new();
    o.insert("ts".into(), json!(m.ts.unwrap_or(now)));
    o.insert("pid".into(), json!(m.pid.unwrap_or(default_pid)));
    o.insert("tid".into(), json!(m.tid.unwrap_or(0)));
    o.insert("type".into(), json!("marker"));
    o.insert("op".into(), json!(m.op.as_str()));
    o.insert("name".into(), json!("marker"));
    o.insert("label".into(), json!(m.label));
    if let Some(t) = m.tokens {
        o.insert("tokens".into(), json!(t));
    }
    Ok(Value::Object(o))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Result<Option<Marker>, MarkerError> {
        parse_line(s.as_bytes())
    }
    fn ok(s: &str) -> Marker {
        p(s).unwrap().unwrap()
    }

    #[test]
    fn plain_markers() {
        assert_eq!(
            ok("phase model_load"),
            Marker { op: MarkerOp::Phase, label: "model_load".into(), ts: None, pid: None, tid: None, tokens: None }
        );
        assert_eq!(
            ok("iteration 3 tokens=20"),
            Marker { op: MarkerOp::Iteration, label: "3".into(), ts: None, pid: None, tid: None, tokens: Some(20) }
        );
        let m = ok("mark  checkpoint   saved loss=3.2\r");
        assert_eq!(m.op, MarkerOp::Mark);
        assert_eq!(m.label, "checkpoint   saved loss=3.2");
    }

    #[test]
    fn fields_at_the_end_in_any_order() {
        let m = ok("iteration 7 tid=12 tokens=40 pid=1234 ts=5000000000");
        assert_eq!(
            m,
            Marker {
                op: MarkerOp::Iteration,
                label: "7".into(),
                ts: Some(5_000_000_000),
                pid: Some(1234),
                tid: Some(12),
                tokens: Some(40)
            }
        );
        // A known key inside the label stays part of it.
        let m = ok("mark tokens=5 reached ts=9");
        assert_eq!((m.label.as_str(), m.tokens, m.ts), ("tokens=5 reached", None, Some(9)));
        // Unknown keys at the end are label text.
        assert_eq!(ok("phase decode batch=8").label, "decode batch=8");
    }

    #[test]
    fn blank_lines_are_skipped() {
        assert_eq!(p(""), Ok(None));
        assert_eq!(p("  \t "), Ok(None));
    }

    #[test]
    fn malformed() {
        assert_eq!(p("phsae warmup"), Err(MarkerError::UnknownOp("phsae".into())));
        assert_eq!(p("phase"), Err(MarkerError::MissingLabel));
        assert_eq!(p("phase ts=5"), Err(MarkerError::MissingLabel));
        assert_eq!(p("iteration 1 tokens=-3"), Err(MarkerError::BadValue { key: "tokens", value: "-3".into() }));
        assert_eq!(p("iteration 1 tokens=+3"), Err(MarkerError::BadValue { key: "tokens", value: "+3".into() }));
        assert_eq!(p("mark x ts=1.5"), Err(MarkerError::BadValue { key: "ts", value: "1.5".into() }));
        assert_eq!(p("mark x pid=4294967296"), Err(MarkerError::BadValue { key: "pid", value: "4294967296".into() }));
        assert_eq!(p("mark x ts=1 ts=2"), Err(MarkerError::Duplicate("ts")));
        assert_eq!(parse_line(b"mark \xff\xfe"), Err(MarkerError::NotUtf8));
        let long = format!("mark {}", "x".repeat(MAX_LINE));
        assert_eq!(p(&long), Err(MarkerError::TooLong(MAX_LINE + 5)));
        assert_eq!(
            p("\x00\x01garbage").unwrap_err().to_string(),
            "unknown marker \"\\0\\u{1}garbage\": expected phase, iteration or mark"
        );
    }

    #[test]
    fn lines() {
        let m = ok("iteration 3 tokens=20 ts=1000 pid=42 tid=43");
        assert_eq!(
            marker_line(&m, 2000, 7).unwrap(),
            json!({"ts":1000,"pid":42,"tid":43,"type":"marker","op":"iteration","name":"marker","label":"3","tokens":20})
        );
        // Without ts, pid, tid: the reader's time, the traced command, tid 0.
        let m = ok("phase warmup");
        assert_eq!(
            marker_line(&m, 2000, 7).unwrap(),
            json!({"ts":2000,"pid":7,"tid":0,"type":"marker","op":"phase","name":"marker","label":"warmup"})
        );
        // time.time_ns() by mistake: decades ahead of CLOCK_MONOTONIC.
        let m = ok("mark x ts=1795350896000000000");
        assert_eq!(
            marker_line(&m, 5_000_000_000_000, 7),
            Err(MarkerError::TsInFuture { ts: 1_795_350_896_000_000_000, now: 5_000_000_000_000 })
        );
        // Up to a second ahead is accepted (clock reads are not ordered).
        assert!(marker_line(&ok("mark x ts=2999"), 2000, 7).is_ok());
    }
}
