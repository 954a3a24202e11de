//! Reads a JSONL trace (plain or .gz). A corrupt line gives an error naming
//! the file and line; a partial last line (tracer was killed mid-write) is
//! skipped with a warning.
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use anyhow::{Context as _, bail};
use serde_json::Value;

pub fn open(path: &Path) -> anyhow::Result<Box<dyn BufRead>> {
    let path = &*crate::replayable::open::trace_path(path)?;
    let f = std::fs::File::open(path).with_context(|| format!("cannot open trace {}", path.display()))?;
    let r: Box<dyn Read> = if path.extension().is_some_and(|e| e == "gz") {
        Box::new(flate2::read::MultiGzDecoder::new(f))
    } else {
        Box::new(f)
    };
    Ok(Box::new(BufReader::with_capacity(1 << 20, r)))
}

/// The longest line a reader accepts. tracer's own lines are at most a few
/// KiB; a longer "line" is a file that is not a trace (or a hostile one), and
/// reading it whole would take memory without bound.
pub const MAX_LINE_BYTES: usize = 64 << 20;

/// Calls `f` for each line's JSON value.
pub fn for_each(path: &Path, f: impl FnMut(&Value)) -> anyhow::Result<u64> {
    let r = open(path)?;
    let read = for_each_in(r, &path.display().to_string(), MAX_LINE_BYTES, f)?;
    if let Some(n) = read.partial_line {
        eprintln!("warning: {}: line {n} is incomplete (the recording was cut off); skipped", path.display());
    }
    Ok(read.lines)
}

/// What [`for_each_in`] read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadStats {
    /// Lines read, a partial last one included.
    pub lines: u64,
    /// The number of a partial last line that was skipped (tracer was
    /// killed mid-write).
    pub partial_line: Option<u64>,
}

/// [`for_each`] on any reader; `name` names the input in messages. Lines
/// longer than `max_line` bytes are an error (memory stays bounded).
pub fn for_each_in(
    r: impl BufRead,
    name: &str,
    max_line: usize,
    mut f: impl FnMut(&Value),
) -> anyhow::Result<ReadStats> {
    for_each_line_in(r, name, max_line, |n, buf| match serde_json::from_slice::<Value>(buf) {
        Ok(v) if v.is_object() => {
            f(&v);
            Ok(())
        }
        Ok(_) => bail!("{name}: line {n}: expected a JSON object"),
        Err(e) => bail!("{name}: line {n}: not valid JSON ({e})"),
    })
}

/// Calls `f(line_number, bytes)` for each line (bounded by `max_line`),
/// without parsing it; a partial last line (one that is not valid JSON) is
/// skipped and reported in the stats. For readers that parse lines
/// themselves, e.g. into borrowed typed views.
pub fn for_each_line_in(
    mut r: impl BufRead,
    name: &str,
    max_line: usize,
    mut f: impl FnMut(u64, &[u8]) -> anyhow::Result<()>,
) -> anyhow::Result<ReadStats> {
    let mut buf = Vec::new();
    let mut n = 0u64;
    loop {
        buf.clear();
        let limit = u64::try_from(max_line).unwrap_or(u64::MAX).saturating_add(1);
        let got = (&mut r)
            .take(limit)
            .read_until(b'\n', &mut buf)
            .with_context(|| format!("{name}: read error after line {n}"))?;
        if got == 0 {
            break;
        }
        n += 1;
        let complete = buf.last() == Some(&b'\n');
        if !complete && buf.len() > max_line {
            bail!("{name}: line {n} is longer than {max_line} bytes: not a tracer trace");
        }
        if !complete && serde_json::from_slice::<serde::de::IgnoredAny>(&buf).is_err() {
            return Ok(ReadStats { lines: n, partial_line: Some(n) });
        }
        f(n, &buf)?;
    }
    Ok(ReadStats { lines: n, partial_line: None })
}

/// [`for_each_line_in`] on a trace file (plain or .gz), warning about a
/// partial last line.
pub fn for_each_line(path: &Path, f: impl FnMut(u64, &[u8]) -> anyhow::Result<()>) -> anyhow::Result<u64> {
    let r = open(path)?;
    let read = for_each_line_in(r, &path.display().to_string(), MAX_LINE_BYTES, f)?;
    if let Some(n) = read.partial_line {
        eprintln!("warning: {}: line {n} is incomplete (the recording was cut off); skipped", path.display());
    }
    Ok(read.lines)
}

/// Counts the bytes read from the file (compressed bytes for .gz), for progress.
struct Counted<R> {
    inner: R,
    n: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let k = self.inner.read(buf)?;
        self.n.fetch_add(k as u64, std::sync::atomic::Ordering::Relaxed);
        Ok(k)
    }
}

/// Calls `f(line_number, bytes)` for each complete line, without parsing it;
/// `read_bytes` counts the file bytes consumed so far (for progress). Returns
/// the number of lines and whether a partial last line was skipped.
pub fn for_each_raw(
    path: &Path,
    read_bytes: std::sync::Arc<std::sync::atomic::AtomicU64>,
    mut f: impl FnMut(u64, &[u8]) -> anyhow::Result<()>,
) -> anyhow::Result<(u64, bool)> {
    let path = &*crate::replayable::open::trace_path(path)?;
    let file = std::fs::File::open(path).with_context(|| format!("cannot open trace {}", path.display()))?;
    let counted = Counted { inner: file, n: read_bytes };
    let r: Box<dyn Read> = if path.extension().is_some_and(|e| e == "gz") {
        Box::new(flate2::read::MultiGzDecoder::new(counted))
    } else {
        Box::new(counted)
    };
    let mut r = BufReader::with_capacity(1 << 20, r);
    let mut buf = Vec::new();
    let mut n = 0u64;
    loop {
        buf.clear();
        let got =
            r.read_until(b'\n', &mut buf).with_context(|| format!("{}: read error after line {n}", path.display()))?;
        if got == 0 {
            return Ok((n, false));
        }
        n += 1;
        if buf.last() != Some(&b'\n') {
            // A last line without newline: complete if it parses as JSON.
            if serde_json::from_slice::<serde::de::IgnoredAny>(&buf).is_err() {
                eprintln!("warning: {}: line {n} is incomplete (the recording was cut off); skipped", path.display());
                return Ok((n - 1, true));
            }
        }
        if buf.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        f(n, &buf)?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partial_last_line_and_corrupt_line() {
        let dir = std::env::temp_dir().join(format!("tracer-reader-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("a.jsonl");
        std::fs::write(&p, "{\"a\":1}\n{\"a\":2}\n{\"a\":").unwrap();
        let mut seen = vec![];
        for_each(&p, |v| seen.push(v["a"].as_u64().unwrap())).unwrap();
        assert_eq!(seen, vec![1, 2]);
        std::fs::write(&p, "{\"a\":1}\nnot json\n{\"a\":2}\n").unwrap();
        let e = for_each(&p, |_| {}).unwrap_err().to_string();
        assert!(e.contains("line 2: not valid JSON"), "{e}");
        // A line over the limit is an error, not an allocation of its size.
        let long = format!("{{\"a\":1}}\n{{\"pad\":\"{}\"}}\n", "x".repeat(100));
        let e = for_each_in(long.as_bytes(), "long", 64, |_| {}).unwrap_err().to_string();
        assert_eq!(e, "long: line 2 is longer than 64 bytes: not a tracer trace");
        let mut n = 0;
        assert_eq!(
            for_each_in(long.as_bytes(), "long", 200, |_| n += 1).unwrap(),
            ReadStats { lines: 2, partial_line: None }
        );
        let cut = for_each_in(&b"{\"a\":1}\n{\"a\""[..], "cut", 200, |_| {}).unwrap();
        assert_eq!(cut, ReadStats { lines: 2, partial_line: Some(2) });
        assert_eq!(n, 2);
        let e = for_each(&dir.join("missing.jsonl"), |_| {}).unwrap_err().to_string();
        assert!(e.contains("cannot open trace"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
