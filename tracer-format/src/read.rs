//! Reads a JSONL trace (plain, .gz or .zst, a recording directory for its
//! trace, or `-`: standard input; [`input`]) under one rule ([`check`]):
//! a line the rule refuses is an error naming the file, the line and the
//! field; blank lines are skipped; a file cut off (a partial last line, a
//! compressed stream that ends early) gives every complete line and a
//! warning saying where it stopped.
//!
//! [`read_checked`] is the one loop every reader goes through: lines handed
//! out where they lie in one large buffer ([`lines_in_place`]), each read
//! into a checked [`RawLine`]. It prints nothing: the warnings come back in
//! the [`Outcome`]. [`for_each`], [`for_each_line`] and [`for_each_raw`]
//! are shorthands over it that print them.
pub mod check;
pub mod cut;
pub mod input;
pub mod zst;

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{Context as _, bail};
use serde_json::Value;

pub use check::Checker;
pub use input::{Compression, Input};

use crate::line::RawLine;

/// The decoded text of the trace `path` designates (`-`: stdin; a
/// recording directory stands for its trace), buffered.
pub fn open(path: &Path) -> anyhow::Result<Box<dyn BufRead>> {
    let (r, _) = Input::resolve(path)?.open()?;
    Ok(Box::new(BufReader::with_capacity(1 << 20, r)))
}

/// The file's text: gunzipped (.gz), zstd-decoded (.zst) or as is, by the
/// name's extension (a cut compressed stream just ends). `path` names the
/// file in messages.
pub fn decompressed(path: &Path, f: impl Read + 'static) -> anyhow::Result<Box<dyn Read>> {
    let input = Input {
        name: path.display().to_string(),
        path: path.to_owned(),
        compression: Compression::of_name(path),
        len: 0,
        held: None,
    };
    Ok(input.decode(f)?.0)
}

/// What [`read_checked`] read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Complete lines read, blank ones included (not a skipped partial
    /// last line).
    pub lines: u64,
    /// The file ended early (a partial last line skipped, a compressed
    /// stream cut off).
    pub truncated: bool,
    /// What the reader should be told, one line each, naming the file: a
    /// missing header or footer, where a cut file stopped.
    pub warnings: Vec<String>,
}

/// Reads `input` under the rule of [`check`]: `f(line_number, bytes, raw)`
/// for each non-blank complete line, `raw` the line's checked fields.
/// `read_bytes` counts the file bytes consumed (compressed bytes for a
/// compressed file), for progress.
pub fn read_checked(
    input: &Input,
    read_bytes: Arc<AtomicU64>,
    mut f: impl FnMut(u64, &[u8], &RawLine) -> anyhow::Result<()>,
) -> anyhow::Result<Outcome> {
    let file = std::fs::File::open(&input.path).with_context(|| format!("cannot open trace {}", input.name))?;
    let (r, cut) = input.decode(Counted { inner: file, n: read_bytes })?;
    let name = &input.name;
    let mut checker = Checker::new();
    let mut last = 0u64;
    let st = lines_in_place(r, name, MAX_LINE_BYTES, |n, bytes| {
        let raw = checker.line(n, bytes).map_err(|e| anyhow::anyhow!("{name}: line {}: {}", e.line, e.what))?;
        if let Some(raw) = raw {
            last = n;
            f(n, bytes, &raw)?;
        }
        Ok(())
    })?;
    let cut = cut.load(Ordering::Relaxed);
    let mut warnings = Vec::new();
    if let Some(n) = st.partial_line {
        warnings.push(format!("{name}: line {n} is incomplete (the recording was cut off); skipped"));
    }
    if cut {
        let kind = if input.compression == Compression::Gzip { "gzip" } else { "zstd" };
        warnings.push(format!(
            "{name}: the {kind} stream ends early (the recording was cut off); read up to its last complete line, line {last}"
        ));
    }
    let truncated = cut || st.partial_line.is_some();
    let more = checker.finish(truncated).map_err(|e| anyhow::anyhow!("{name}: {e}"))?;
    warnings.extend(more.into_iter().map(|w| format!("{name}: {w}")));
    let lines = st.lines - u64::from(st.partial_line.is_some());
    Ok(Outcome { lines, truncated, warnings })
}

/// Prints the warnings of a read, as `warning: …` lines on stderr.
pub fn print_warnings(o: &Outcome) {
    for w in &o.warnings {
        eprintln!("warning: {w}");
    }
}

/// The longest line a reader accepts. tracer's own lines are at most a few
/// KiB; a longer "line" is a file that is not a trace (or a hostile one), and
/// reading it whole would take memory without bound.
pub const MAX_LINE_BYTES: usize = 64 << 20;

/// Calls `f` for each line's JSON value (the rule of [`read_checked`];
/// its warnings printed). Returns the number of lines.
pub fn for_each(path: &Path, mut f: impl FnMut(&Value)) -> anyhow::Result<u64> {
    let input = Input::resolve(path)?;
    let name = input.name.clone();
    let o = read_checked(&input, Arc::default(), |n, bytes, _| {
        let v: Value = serde_json::from_slice(bytes).with_context(|| format!("{name}: line {n}: not valid JSON"))?;
        f(&v);
        Ok(())
    })?;
    print_warnings(&o);
    Ok(o.lines)
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

/// Calls `f(line_number, bytes)` for each non-blank complete line (the
/// rule of [`read_checked`]; its warnings printed). Returns the number of
/// lines.
pub fn for_each_line(path: &Path, mut f: impl FnMut(u64, &[u8]) -> anyhow::Result<()>) -> anyhow::Result<u64> {
    let o = read_checked(&Input::resolve(path)?, Arc::default(), |n, bytes, _| f(n, bytes))?;
    print_warnings(&o);
    Ok(o.lines)
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

/// Calls `f(line_number, bytes)` for each non-blank complete line (the
/// rule of [`read_checked`]; its warnings printed); `read_bytes` counts the
/// file bytes consumed so far (for progress). Returns the number of lines
/// and whether the file was cut off.
pub fn for_each_raw(
    path: &Path,
    read_bytes: Arc<AtomicU64>,
    mut f: impl FnMut(u64, &[u8]) -> anyhow::Result<()>,
) -> anyhow::Result<(u64, bool)> {
    let o = read_checked(&Input::resolve(path)?, read_bytes, |n, bytes, _| f(n, bytes))?;
    print_warnings(&o);
    Ok((o.lines, o.truncated))
}

/// The loop of [`read_checked`] on any reader: lines are handed out where
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

    /// A line of the rule's: `a` in the `i` field.
    fn l(a: u64) -> String {
        format!("{{\"ts\":{a},\"pid\":1,\"type\":\"kernel\",\"a\":{a}}}\n")
    }

    #[test]
    fn partial_last_line_and_corrupt_line() {
        let dir = std::env::temp_dir().join(format!("tracer-reader-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("a.jsonl");
        std::fs::write(&p, format!("{}{}{{\"a\":", l(1), l(2))).unwrap();
        let mut seen = vec![];
        assert_eq!(for_each(&p, |v| seen.push(v["a"].as_u64().unwrap())).unwrap(), 2);
        assert_eq!(seen, vec![1, 2]);
        let o = read_checked(&Input::resolve(&p).unwrap(), Arc::default(), |_, _, _| Ok(())).unwrap();
        let name = p.display();
        assert_eq!(
            o,
            Outcome {
                lines: 2,
                truncated: true,
                warnings: vec![
                    format!("{name}: line 3 is incomplete (the recording was cut off); skipped"),
                    format!(
                        "{name}: no header (line 1 is a `kernel` line): the trace's format version is unknown; read as version 2"
                    ),
                ]
            }
        );
        std::fs::write(&p, format!("{}not json\n{}", l(1), l(2))).unwrap();
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
        let text = format!("{}{}", l(1), l(2));
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
            assert_eq!(raw, [(1, l(1).into_bytes()), (2, l(2).into_bytes())]);
            // Compressed bytes read, for progress: the whole file.
            let file = crate::recording::trace_path(p).unwrap().into_owned();
            assert_eq!(n.load(std::sync::atomic::Ordering::Relaxed), std::fs::metadata(file).unwrap().len());
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_cut_gzip_file_gives_every_complete_line_and_says_where_it_stopped() {
        use std::io::Write as _;
        let dir = std::env::temp_dir().join(format!("tracer-format-cut-gz-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let text: String = (1..=20_000).map(l).collect();
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(text.as_bytes()).unwrap();
        let gz = e.finish().unwrap();
        let p = dir.join("cut.jsonl.gz");
        std::fs::write(&p, &gz[..gz.len() / 2]).unwrap();
        let mut seen = vec![];
        let o = read_checked(&Input::resolve(&p).unwrap(), Arc::default(), |n, _, raw| {
            seen.push((n, raw.ts.unwrap()));
            Ok(())
        })
        .unwrap();
        // Every complete line, in order, up to where the stream stops.
        let last = seen.len() as u64;
        assert!(last > 1000 && last < 20_000, "{last}");
        assert!(seen.iter().enumerate().all(|(i, &(n, ts))| n == i as u64 + 1 && ts == n));
        assert!(o.truncated);
        let name = p.display();
        assert_eq!(
            o.warnings[..2],
            [
                format!("{name}: line {} is incomplete (the recording was cut off); skipped", last + 1),
                format!(
                    "{name}: the gzip stream ends early (the recording was cut off); read up to its last complete line, line {last}"
                ),
            ]
        );
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
