//! Reads a JSONL trace (plain or .gz). A corrupt line gives an error naming
//! the file and line; a partial last line (tracer was killed mid-write) is
//! skipped with a warning.
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use anyhow::{Context as _, bail};
use serde_json::Value;

pub fn open(path: &Path) -> anyhow::Result<Box<dyn BufRead>> {
    let f = std::fs::File::open(path).with_context(|| format!("cannot open trace {}", path.display()))?;
    let r: Box<dyn Read> = if path.extension().is_some_and(|e| e == "gz") {
        Box::new(flate2::read::MultiGzDecoder::new(f))
    } else {
        Box::new(f)
    };
    Ok(Box::new(BufReader::with_capacity(1 << 20, r)))
}

/// Calls `f` for each line's JSON value.
pub fn for_each(path: &Path, mut f: impl FnMut(&Value)) -> anyhow::Result<u64> {
    let mut r = open(path)?;
    let mut buf = Vec::new();
    let mut n = 0u64;
    loop {
        buf.clear();
        let got =
            r.read_until(b'\n', &mut buf).with_context(|| format!("{}: read error after line {n}", path.display()))?;
        if got == 0 {
            break;
        }
        n += 1;
        let complete = buf.last() == Some(&b'\n');
        match serde_json::from_slice::<Value>(&buf) {
            Ok(v) if v.is_object() => f(&v),
            _ if !complete => {
                eprintln!("warning: {}: line {n} is incomplete (the recording was cut off); skipped", path.display());
                break;
            }
            Ok(_) => bail!("{}: line {n}: expected a JSON object", path.display()),
            Err(e) => bail!("{}: line {n}: not valid JSON ({e})", path.display()),
        }
    }
    Ok(n)
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
        let e = for_each(&dir.join("missing.jsonl"), |_| {}).unwrap_err().to_string();
        assert!(e.contains("cannot open trace"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
