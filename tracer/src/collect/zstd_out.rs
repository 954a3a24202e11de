//! zstd-compressed trace output (`tracer record -o TRACE.jsonl.zst`, or
//! `--compress zstd`). On a launch-bound program the collector writes
//! ~430 bytes per call; this VM's disk takes ~220 MB/s once the page cache
//! is full, so plain JSONL cannot be written faster than ~500,000 lines/s.
//! zstd level 1 compresses tracer's lines ~10-40× at ~1.8 GB/s (≈0.25 µs
//! per line), less than the write(2) it saves (docs/overhead.md).
//!
//! The writer's guarantees hold: every flush of the trace writer (at least
//! every 100 ms) ends a zstd block, so a tracer killed with SIGKILL leaves a
//! file whose complete blocks decode to whole lines (readers warn that the
//! stream was cut off). After a write error the file is cut back to the end
//! of the last block flushed whole, and the lines since are counted as not
//! written. Reading is tracer_format::read::zst.
use std::fs::File;
use std::io::{self, Write};

use crate::collect::output::Output;

/// zstd level: 1 is the fastest of the standard levels with a good ratio on
/// trace lines (negative levels compress 1.3× worse for ~15 % less time).
pub const LEVEL: i32 = 1;

/// Counts the compressed bytes that reached the file.
struct Counting {
    file: File,
    written: u64,
}

impl Write for Counting {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        let n = self.file.write(b)?;
        self.written += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

pub struct ZstdFile {
    enc: zstd::stream::write::Encoder<'static, Counting>,
    /// File length after the last successful flush: whole blocks only.
    good_len: u64,
}

impl ZstdFile {
    pub fn new(file: File) -> io::Result<Self> {
        let mut enc = zstd::stream::write::Encoder::new(Counting { file, written: 0 }, LEVEL)?;
        enc.include_checksum(true)?;
        Ok(ZstdFile { enc, good_len: 0 })
    }
}

impl Write for ZstdFile {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        self.enc.write(b)
    }
    /// Ends a block and writes it out.
    fn flush(&mut self) -> io::Result<()> {
        self.enc.flush()?;
        self.good_len = self.enc.get_ref().written;
        Ok(())
    }
}

impl Output for ZstdFile {
    /// Cuts the file back to the last block flushed whole (`len`, the
    /// uncompressed length the trace writer counts, does not apply).
    fn set_len(&self, _len: u64) -> io::Result<()> {
        self.enc.get_ref().file.set_len(self.good_len)
    }
    fn sync_all(&self) -> io::Result<()> {
        self.enc.get_ref().file.sync_all()
    }
    fn partial_writes_kept(&self) -> bool {
        false
    }
    /// Writes the end of the frame (and its checksum).
    fn finish(&mut self) -> io::Result<()> {
        self.enc.do_finish()?;
        self.enc.get_mut().flush()?;
        self.good_len = self.enc.get_ref().written;
        Ok(())
    }
}

/// How the trace is compressed (`tracer record --compress`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Compress {
    /// Plain JSONL, unless the output name ends in `.zst`.
    #[default]
    None,
    /// zstd (level 1); the default output name ends in `.jsonl.zst`.
    Zstd,
}

impl Compress {
    /// The output name: the one given (which must end in `.zst` with
    /// `zstd`: readers tell the format by the name), else `trace_<stamp>.jsonl[.zst]`.
    pub fn output_path(self, given: Option<&std::path::Path>, stamp: &str) -> Result<std::path::PathBuf, String> {
        match given {
            Some(p) if self == Compress::Zstd && !is_zst(p) => Err(format!(
                "--compress zstd: the output name must end in .zst (readers tell the format by it): {}",
                p.display()
            )),
            Some(p) => Ok(p.to_path_buf()),
            None if self == Compress::Zstd => Ok(format!("trace_{stamp}.jsonl.zst").into()),
            None => Ok(format!("trace_{stamp}.jsonl").into()),
        }
    }
}

/// The trace file tracer writes: plain JSONL or zstd-compressed.
pub enum TraceFile {
    Plain(File),
    Zstd(Box<ZstdFile>),
}

impl TraceFile {
    /// zstd when `compress` or when the name ends in `.zst`.
    pub fn new(file: File, path: &std::path::Path, compress: bool) -> io::Result<Self> {
        Ok(if compress || is_zst(path) {
            TraceFile::Zstd(Box::new(ZstdFile::new(file)?))
        } else {
            TraceFile::Plain(file)
        })
    }
}

/// Whether a trace file name says zstd.
pub fn is_zst(path: &std::path::Path) -> bool {
    path.extension().is_some_and(|e| e == "zst")
}

impl From<File> for TraceFile {
    fn from(f: File) -> Self {
        TraceFile::Plain(f)
    }
}

impl Write for TraceFile {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        match self {
            TraceFile::Plain(f) => f.write(b),
            TraceFile::Zstd(z) => z.write(b),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            TraceFile::Plain(f) => f.flush(),
            TraceFile::Zstd(z) => z.flush(),
        }
    }
}

impl Output for TraceFile {
    fn set_len(&self, len: u64) -> io::Result<()> {
        match self {
            TraceFile::Plain(f) => f.set_len(len),
            TraceFile::Zstd(z) => z.set_len(len),
        }
    }
    fn sync_all(&self) -> io::Result<()> {
        match self {
            TraceFile::Plain(f) => f.sync_all(),
            TraceFile::Zstd(z) => z.sync_all(),
        }
    }
    fn partial_writes_kept(&self) -> bool {
        matches!(self, TraceFile::Plain(_))
    }
    fn finish(&mut self) -> io::Result<()> {
        match self {
            TraceFile::Plain(_) => Ok(()),
            TraceFile::Zstd(z) => z.finish(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collect::writer::TraceWriter;
    use serde_json::json;
    use std::path::{Path, PathBuf};

    fn dir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("tracer-zstd-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn read_lines(p: &Path) -> (Vec<u64>, bool) {
        let mut v = Vec::new();
        let (_, truncated) = tracer_format::read::for_each_raw(p, Default::default(), |_, b| {
            v.push(serde_json::from_slice::<serde_json::Value>(b).unwrap()["i"].as_u64().unwrap());
            Ok(())
        })
        .unwrap();
        (v, truncated)
    }

    fn line(i: u64) -> serde_json::Value {
        json!({"i": i, "ts": i, "pid": 1, "type": "kernel", "name": "cuLaunchKernel", "stream": "0x5000", "grid": [1200, 1, 1]})
    }

    #[test]
    fn round_trip_and_every_reader_reads_it() {
        let d = dir("rt");
        let p = d.join("t.jsonl.zst");
        let f = std::fs::File::create(&p).unwrap();
        let mut w: TraceWriter = TraceWriter::new(TraceFile::new(f, &p, false).unwrap());
        for i in 0..20_000 {
            w.write(&line(i));
        }
        assert!(w.finish().is_none());
        assert_eq!((w.lines, w.dropped), (20_000, 0));
        let plain_bytes = w.bytes;
        let zst_bytes = std::fs::metadata(&p).unwrap().len();
        assert!(zst_bytes * 20 < plain_bytes, "{zst_bytes} of {plain_bytes}");
        assert_eq!(read_lines(&p), ((0..20_000).collect(), false));
        // The BufRead path (summary, ioctls) reads it too.
        let mut n = 0;
        tracer_format::read::for_each(&p, |_| n += 1).unwrap();
        assert_eq!(n, 20_000);
        // A standard zstd stream: what `zstd -d` reads.
        let text = zstd::stream::decode_all(std::fs::File::open(&p).unwrap()).unwrap();
        assert_eq!(text.len() as u64, plain_bytes);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_killed_recording_reads_up_to_its_last_flush() {
        let d = dir("cut");
        let p = d.join("t.jsonl.zst");
        let f = std::fs::File::create(&p).unwrap();
        let mut w: TraceWriter = TraceWriter::new(TraceFile::new(f, &p, false).unwrap());
        for i in 0..1000 {
            w.write(&line(i));
        }
        w.flush();
        let flushed = std::fs::metadata(&p).unwrap().len();
        for i in 1000..1500 {
            w.write(&line(i));
        }
        w.flush();
        // As if killed now: no end of frame. Both flushes are readable.
        let cut = d.join("cut.jsonl.zst");
        std::fs::copy(&p, &cut).unwrap();
        assert_eq!(read_lines(&cut).0, (0..1500).collect::<Vec<_>>());
        // Killed in the middle of writing the second block: the first reads whole.
        let f = std::fs::OpenOptions::new().write(true).open(&cut).unwrap();
        f.set_len(flushed + 7).unwrap();
        assert_eq!(read_lines(&cut).0, (0..1000).collect::<Vec<_>>());
        drop(w);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn full_disk_counts_the_unflushed_lines_as_not_written() {
        let Ok(f) = std::fs::File::options().write(true).open("/dev/full") else { return };
        let mut w: TraceWriter = TraceWriter::new(TraceFile::Zstd(Box::new(ZstdFile::new(f).unwrap())));
        for i in 0..100 {
            w.write(&line(i));
        }
        assert!(w.finish().is_some());
        assert_eq!(w.error.as_ref().unwrap().raw_os_error(), Some(libc::ENOSPC));
        assert_eq!((w.lines, w.dropped), (0, 100));
    }

    #[test]
    fn output_names() {
        let c = Compress::Zstd;
        assert_eq!(c.output_path(None, "20261122T1").unwrap(), PathBuf::from("trace_20261122T1.jsonl.zst"));
        assert_eq!(Compress::None.output_path(None, "X").unwrap(), PathBuf::from("trace_X.jsonl"));
        assert_eq!(c.output_path(Some(Path::new("a.jsonl.zst")), "X").unwrap(), PathBuf::from("a.jsonl.zst"));
        assert_eq!(
            c.output_path(Some(Path::new("a.jsonl")), "X").unwrap_err(),
            "--compress zstd: the output name must end in .zst (readers tell the format by it): a.jsonl"
        );
        assert!(is_zst(Path::new("x.zst")) && !is_zst(Path::new("x.jsonl")));
    }
}
