//! Reads a JSONL trace (plain, .gz or .zst, or a recording directory for
//! its trace). A corrupt line gives an error naming the file and line; a
//! partial last line (tracer was killed mid-write) is skipped with a warning.
//!
//! Two loops: [`for_each_line_in`] (a `BufRead`, one copy per line) and
//! [`lines_in_place`] (lines handed out where they lie in one large buffer:
//! the fast path of the analyses). Both number lines from 1, count a partial
//! last line and skip it.
pub mod zst;

use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use anyhow::{Context as _, bail};
use serde_json::Value;

/// The decoded text of the trace `path` designates (a recording directory
/// stands for its trace), buffered.
pub fn open(path: &Path) -> anyhow::Result<Box<dyn BufRead>> {
    let path = &*crate::recording::trace_path(path)?;
    let f = std::fs::File::open(path).with_context(|| format!("cannot open trace {}", path.display()))?;
    Ok(Box::new(BufReader::with_capacity(1 << 20, decompressed(path, f)?)))
}

/// The file's text: gunzipped (.gz), zstd-decoded (.zst) or as is, by the
/// name's extension. `path` names the file in messages.
pub fn decompressed(path: &Path, f: impl Read + 'static) -> anyhow::Result<Box<dyn Read>> {
    Ok(match path.extension().and_then(|e| e.to_str()) {
        Some("gz") => Box::new(flate2::read::MultiGzDecoder::new(f)),
        Some("zst") => zst::decoder(f, path.display().to_string())
            .with_context(|| format!("{}: cannot start the zstd decoder", path.display()))?,
        _ => Box::new(f),
    })
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

/// [`for_each_line_in`] on a trace file (plain, .gz or .zst), warning about a
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
    f: impl FnMut(u64, &[u8]) -> anyhow::Result<()>,
) -> anyhow::Result<(u64, bool)> {
    let path = &*crate::recording::trace_path(path)?;
    let file = std::fs::File::open(path).with_context(|| format!("cannot open trace {}", path.display()))?;
    let r = decompressed(path, Counted { inner: file, n: read_bytes })?;
    let name = path.display().to_string();
    let read = lines_in_place(r, &name, MAX_LINE_BYTES, f)?;
    if let Some(n) = read.partial_line {
        eprintln!("warning: {name}: line {n} is incomplete (the recording was cut off); skipped");
        return Ok((n - 1, true));
    }
    Ok((read.lines, false))
}

/// The loop of [`for_each_raw`] on any reader: lines are handed out where
/// they lie in one large buffer (no copy per line); only the partial line at
/// the end of a chunk moves to the front before the next read. Lines of
/// whitespace only are counted but not handed out; a line longer than
/// `max_line` is an error (memory stays bounded).
pub fn lines_in_place(
    mut r: impl Read,
    name: &str,
    max_line: usize,
    mut f: impl FnMut(u64, &[u8]) -> anyhow::Result<()>,
) -> anyhow::Result<ReadStats> {
    const CHUNK: usize = 1 << 20;
    let mut buf = vec![0u8; CHUNK];
    // buf[start..end]: bytes read, not yet handed out.
    let (mut start, mut end) = (0usize, 0usize);
    let mut n = 0u64;
    let mut eof = false;
    loop {
        // Every complete line in the buffer.
        while let Some(k) = memchr::memchr(b'\n', &buf[start..end]) {
            let line = &buf[start..start + k + 1];
            start += k + 1;
            n += 1;
            if !line.iter().all(u8::is_ascii_whitespace) {
                f(n, line)?;
            }
        }
        if eof {
            break;
        }
        if end - start > max_line {
            bail!("{name}: line {} is longer than {max_line} bytes: not a tracer trace", n + 1);
        }
        // Make room: move the partial line to the front, grow for a long one.
        if start > 0 {
            buf.copy_within(start..end, 0);
            end -= start;
            start = 0;
        }
        if end == buf.len() {
            buf.resize(buf.len() * 2, 0);
        }
        let got = loop {
            match r.read(&mut buf[end..]) {
                Ok(k) => break k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e).with_context(|| format!("{name}: read error after line {n}")),
            }
        };
        end += got;
        eof = got == 0;
    }
    // A last line without newline: complete if it parses as JSON.
    let last = &buf[start..end];
    if last.is_empty() {
        return Ok(ReadStats { lines: n, partial_line: None });
    }
    n += 1;
    if serde_json::from_slice::<serde::de::IgnoredAny>(last).is_err() {
        return Ok(ReadStats { lines: n, partial_line: Some(n) });
    }
    if !last.iter().all(u8::is_ascii_whitespace) {
        f(n, last)?;
    }
    Ok(ReadStats { lines: n, partial_line: None })
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

    #[test]
    fn gz_zst_and_recording_directories_read_alike() {
        use std::io::Write as _;
        let dir = std::env::temp_dir().join(format!("tracer-format-kinds-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let text = "{\"a\":1}\n{\"a\":2}\n";
        let gz = dir.join("t.jsonl.gz");
        let mut e = flate2::write::GzEncoder::new(std::fs::File::create(&gz).unwrap(), flate2::Compression::fast());
        e.write_all(text.as_bytes()).unwrap();
        e.finish().unwrap();
        let rec = dir.join("x.rec");
        std::fs::create_dir(&rec).unwrap();
        std::fs::write(rec.join("trace.jsonl.zst"), zstd::stream::encode_all(text.as_bytes(), 1).unwrap()).unwrap();
        for p in [&gz, &rec] {
            let mut seen = vec![];
            assert_eq!(for_each(p, |v| seen.push(v["a"].as_u64().unwrap())).unwrap(), 2);
            assert_eq!(seen, [1, 2]);
            let mut raw = vec![];
            let n = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
            let got = for_each_raw(p, n.clone(), |k, b| {
                raw.push((k, b.to_vec()));
                Ok(())
            });
            assert_eq!(got.unwrap(), (2, false));
            assert_eq!(raw, [(1, b"{\"a\":1}\n".to_vec()), (2, b"{\"a\":2}\n".to_vec())]);
            // Compressed bytes read, for progress: the whole file.
            let file = crate::recording::trace_path(p).unwrap().into_owned();
            assert_eq!(n.load(std::sync::atomic::Ordering::Relaxed), std::fs::metadata(file).unwrap().len());
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Hands out at most 7 bytes per read, so lines cross every boundary.
    struct Trickle<'a>(&'a [u8], usize);
    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            self.1 = self.1 % 7 + 1;
            let k = self.1.min(buf.len()).min(self.0.len());
            buf[..k].copy_from_slice(&self.0[..k]);
            self.0 = &self.0[k..];
            Ok(k)
        }
    }

    fn lines(input: &[u8], max: usize) -> anyhow::Result<(Vec<(u64, String)>, ReadStats)> {
        let mut v = Vec::new();
        let st = lines_in_place(Trickle(input, 0), "in", max, |n, b| {
            v.push((n, String::from_utf8_lossy(b).into_owned()));
            Ok(())
        })?;
        Ok((v, st))
    }

    #[test]
    fn lines_in_place_numbers_skips_and_flags_like_read_until() {
        let (v, st) = lines(b"{\"a\":1}\n  \n{\"a\":2}\n{\"a\":3}", 100).unwrap();
        let want = [(1, "{\"a\":1}\n"), (3, "{\"a\":2}\n"), (4, "{\"a\":3}")];
        assert_eq!(v, want.map(|(n, s)| (n, s.to_string())));
        assert_eq!(st, ReadStats { lines: 4, partial_line: None });
        let (v, st) = lines(b"{\"a\":1}\n{\"a\"", 100).unwrap();
        assert_eq!((v.len(), st), (1, ReadStats { lines: 2, partial_line: Some(2) }));
        let (v, st) = lines(b"", 100).unwrap();
        assert_eq!((v.len(), st), (0, ReadStats { lines: 0, partial_line: None }));
        // Whitespace without a newline at the end is a cut line, as before.
        let (_, st) = lines(b"{}\n  ", 100).unwrap();
        assert_eq!(st, ReadStats { lines: 2, partial_line: Some(2) });
        let e = lines(b"{}\n{\"pad\":\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"}\n", 16).unwrap_err();
        assert_eq!(e.to_string(), "in: line 2 is longer than 16 bytes: not a tracer trace");
        // Lines longer than the 1 MiB chunk grow the buffer; errors stop the loop.
        let long = format!("{{\"k\":\"{}\"}}\n", "x".repeat(3 << 20));
        let input = format!("{long}{{}}\n{long}");
        let mut seen = Vec::new();
        let st = lines_in_place(input.as_bytes(), "in", 8 << 20, |n, b| {
            seen.push((n, b.len()));
            Ok(())
        })
        .unwrap();
        assert_eq!(seen, [(1, long.len()), (2, 3), (3, long.len())]);
        assert_eq!(st.lines, 3);
        let e = lines_in_place(input.as_bytes(), "in", 8 << 20, |n, _| {
            anyhow::ensure!(n < 2, "stop at {n}");
            Ok(())
        });
        assert_eq!(e.unwrap_err().to_string(), "stop at 2");
    }
}
