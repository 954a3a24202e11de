//! Reads a trace file (.jsonl, .jsonl.gz or .jsonl.zst, a recording
//! directory, or `-` for stdin) into a [`Trace`], with progress on a
//! terminal, under tracer-format's reading rule
//! (`tracer_format::read::check`), whose warnings it prints. The parsing
//! itself is in `model` (pure).
//!
//! A large plain file is read by several threads, each from its own part of
//! the file (cut at line ends) into its own builder; the builders are then
//! joined in file order ([`TraceBuilder::absorb`]), which gives the same
//! trace as reading it in one pass. If any part has an error, the file is
//! read again in one pass, so that the message names the right line.
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tracer_format::read::{Checker, Compression, Input};

use crate::analysis::model::{Trace, TraceBuilder};
use crate::cli::progress::Progress;

/// Plain files at least this large are read in parallel.
const PARALLEL_MIN_BYTES: u64 = 64 << 20;
/// Parts of at least this many bytes (fewer threads on smaller files).
const PART_MIN_BYTES: u64 = 32 << 20;
const MAX_THREADS: usize = 8;

pub fn load(path: &Path) -> anyhow::Result<Trace> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(MAX_THREADS);
    load_with(path, threads, PARALLEL_MIN_BYTES)
}

/// [`load`] with at most `threads` threads for plain files of at least
/// `parallel_min` bytes.
pub fn load_with(path: &Path, threads: usize, parallel_min: u64) -> anyhow::Result<Trace> {
    let input = Input::resolve(path)?;
    let total = input.len;
    let plain = input.compression == Compression::None;
    let parts = if plain && total >= parallel_min {
        threads.min((total / PART_MIN_BYTES.min(parallel_min.max(1))).max(1) as usize)
    } else {
        1
    };
    let mut progress = Progress::new(total, &format!("reading {}", input.name));
    let (b, warnings) = if parts > 1 {
        match load_parts(&input, total, parts, &mut progress) {
            Ok(b) => b,
            // Read again in one pass: the error then names its line.
            Err(_) => load_one(&input, &mut progress)?,
        }
    } else {
        load_one(&input, &mut progress)?
    };
    progress.message("sorting");
    let t = b.finish();
    progress.finish();
    for w in warnings {
        eprintln!("warning: {}", crate::analysis::inert::text(&w.to_string()));
    }
    Ok(t)
}

fn load_one(input: &Input, progress: &mut Progress) -> anyhow::Result<(TraceBuilder, Vec<String>)> {
    let counter = Arc::new(AtomicU64::new(0));
    let mut b = TraceBuilder::new(&input.name);
    let o = tracer_format::read::read_checked(input, counter.clone(), |n, bytes, raw| {
        if n % 4096 == 0 {
            progress.set(counter.load(Ordering::Relaxed));
        }
        b.add_raw(n, bytes, raw)
    })?;
    if o.truncated {
        b.set_truncated();
    }
    Ok((b, o.warnings))
}

/// Where the parts start: `parts` equal slices of the file, each start moved
/// to the line after it.
fn part_starts(file: &std::fs::File, total: u64, parts: usize) -> anyhow::Result<Vec<u64>> {
    use std::os::unix::fs::FileExt as _;
    let mut starts = vec![0u64];
    let mut buf = vec![0u8; 64 << 10];
    for k in 1..parts as u64 {
        let mut at = (total * k / parts as u64).max(*starts.last().unwrap_or(&0));
        // The first newline at or after `at`; the part starts after it.
        let start = loop {
            let got = file.read_at(&mut buf, at)?;
            if got == 0 {
                break total;
            }
            if let Some(i) = memchr::memchr(b'\n', &buf[..got]) {
                break at + i as u64 + 1;
            }
            at += got as u64;
        };
        starts.push(start);
    }
    starts.push(total);
    starts.dedup();
    Ok(starts)
}

/// Reads a plain file in `parts` parts at once, each under its own
/// [`Checker`], joined in order: the builder and the warnings. An error in
/// any part is an error (the caller reads again in one pass for the line).
pub(crate) fn load_parts(
    input: &Input,
    total: u64,
    parts: usize,
    progress: &mut Progress,
) -> anyhow::Result<(TraceBuilder, Vec<String>)> {
    use std::io::{Read as _, Seek as _, SeekFrom};
    let (path, name) = (&input.path, input.name.clone());
    let file = std::fs::File::open(path)?;
    let starts = part_starts(&file, total, parts)?;
    let done = AtomicU64::new(0);
    let counter = AtomicU64::new(0);
    let results: Vec<anyhow::Result<(TraceBuilder, Checker, bool)>> = std::thread::scope(|s| {
        let handles: Vec<_> = starts
            .windows(2)
            .enumerate()
            .map(|(k, w)| {
                let (start, end, last) = (w[0], w[1], k + 2 == starts.len());
                let (name, done, counter) = (&name, &done, &counter);
                s.spawn(move || {
                    let r = (|| {
                        let mut f = std::fs::File::open(path)?;
                        f.seek(SeekFrom::Start(start))?;
                        let mut b = TraceBuilder::new(name);
                        let mut check = Checker::part(k == 0);
                        let mut read = 0u64;
                        let st = tracer_format::read::lines_in_place(
                            f.take(end - start),
                            name,
                            tracer_format::read::MAX_LINE_BYTES,
                            |n, bytes| {
                                read += bytes.len() as u64;
                                if n % 4096 == 0 {
                                    counter.fetch_add(std::mem::take(&mut read), Ordering::Relaxed);
                                }
                                match check.line(n, bytes) {
                                    Ok(Some(raw)) => b.add_raw(n, bytes, &raw),
                                    Ok(None) => Ok(()),
                                    Err(e) => anyhow::bail!("{name}: part {k}, line {}: {}", e.line, e.what),
                                }
                            },
                        )?;
                        if st.partial_line.is_some() {
                            // Only the last part can end inside a line.
                            anyhow::ensure!(last, "a part ends inside a line");
                            b.set_truncated();
                        }
                        Ok((b, check, st.partial_line.is_some()))
                    })();
                    done.fetch_add(1, Ordering::Relaxed);
                    r
                })
            })
            .collect();
        let n = handles.len() as u64;
        while done.load(Ordering::Relaxed) < n {
            progress.set(counter.load(Ordering::Relaxed));
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err(anyhow::anyhow!("a reader thread panicked"))))
            .collect()
    });
    let mut all: Option<(TraceBuilder, Checker)> = None;
    let mut cut = false;
    for r in results {
        let (b, c, partial) = r?;
        cut |= partial;
        match all.as_mut() {
            None => all = Some((b, c)),
            Some((ab, ac)) => {
                ac.absorb(c).map_err(|e| anyhow::anyhow!("{name}: {e}"))?;
                ab.absorb(b);
            }
        }
    }
    let (b, c) = all.ok_or_else(|| anyhow::anyhow!("{name}: nothing to read"))?;
    let mut warnings = Vec::new();
    if cut {
        warnings.push(format!("{name}: the last line is incomplete (the recording was cut off); skipped"));
    }
    let more = c.finish(cut).map_err(|e| anyhow::anyhow!("{name}: {e}"))?;
    warnings.extend(more.into_iter().map(|w| format!("{name}: {w}")));
    Ok((b, warnings))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loads_the_committed_recording() {
        let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../traces/simple_inference.jsonl.gz");
        let t = load(&p).unwrap();
        assert_eq!(t.lines, 1979);
        assert_eq!(t.calls.len(), 1979 - 2 - 36);
        assert_eq!(t.procs.len(), 36);
        assert_eq!(t.calls.iter().filter(|c| c.kind == crate::analysis::model::Kind::Launch).count(), 88);
        assert!(t.calls.windows(2).all(|w| w[0].ts <= w[1].ts));
        assert_eq!(t.loss.missing(), 0);
        assert!(t.footer.is_some() && t.header.is_some() && !t.truncated);
    }

    #[test]
    fn parts_start_at_line_starts_also_around_a_long_line() {
        let dir = std::env::temp_dir().join(format!("tracer-load-parts-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("long.jsonl");
        let line = |ts: u64, pad: usize| {
            format!(
                "{{\"ts\":{ts},\"pid\":1,\"tid\":1,\"type\":\"init\",\"op\":\"init\",\"name\":\"cuInit\",\"pad\":\"{}\"}}\n",
                "x".repeat(pad)
            )
        };
        // A line longer than a part in the middle, short ones around it.
        let mut text = String::new();
        for i in 0..40 {
            text += &line(i, if i == 17 { 5000 } else { i as usize });
        }
        std::fs::write(&p, &text).unwrap();
        let f = std::fs::File::open(&p).unwrap();
        let total = text.len() as u64;
        for parts in [2, 5, 9, 40, 200] {
            let starts = part_starts(&f, total, parts).unwrap();
            assert_eq!((starts[0], *starts.last().unwrap()), (0, total));
            assert!(starts.windows(2).all(|w| w[0] < w[1]), "{starts:?}");
            assert!(starts[1..starts.len() - 1].iter().all(|&s| text.as_bytes()[s as usize - 1] == b'\n'));
            let mut pr = Progress::new(0, "");
            let input = Input::resolve(&p).unwrap();
            let t = load_parts(&input, total, parts, &mut pr).unwrap().0.finish();
            assert_eq!((t.lines, t.calls.len()), (40, 40), "{parts} parts");
            assert_eq!(t.calls.iter().map(|c| c.ts).collect::<Vec<_>>(), (0..40).collect::<Vec<u64>>());
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn partial_last_line_is_skipped_and_flagged() {
        let dir = std::env::temp_dir().join(format!("tracer-load-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("cut.jsonl");
        std::fs::write(
            &p,
            "{\"type\":\"header\"}\n{\"ts\":1,\"pid\":1,\"tid\":1,\"type\":\"init\",\"op\":\"init\",\"name\":\"cuInit\"}\n{\"ts\":2,\"pid\"",
        )
        .unwrap();
        let t = load(&p).unwrap();
        assert!(t.truncated);
        assert_eq!(t.calls.len(), 1);
        // Read in parts (one per line or so): the same.
        let t = load_with(&p, 4, 0).unwrap();
        assert!(t.truncated);
        assert_eq!((t.calls.len(), t.lines), (1, 2));
        std::fs::write(
            &p,
            "{\"type\":\"header\"}\n{\"ts\":1,\"pid\":1,\"type\":\"kernel\",\"op\":\"launch\",\"grid\":[1,2]}\n",
        )
        .unwrap();
        let e = load(&p).unwrap_err().to_string();
        assert!(e.contains("cut.jsonl: line 2: field `grid`: invalid length 2, expected an array of length 3"), "{e}");
        // An error in a later part still names the line of the whole file.
        let e = load_with(&p, 2, 0).unwrap_err().to_string();
        assert!(e.contains("cut.jsonl: line 2: field `grid`: invalid length 2, expected an array of length 3"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
