//! The JSONL trace file: one JSON object per line, header first, footer last.
//! Lines are written whole through a buffer flushed at least every 100 ms, so
//! a tracer killed with SIGKILL leaves at most one partial last line. A write
//! error (disk full) stops writing for good: every complete line stays valid
//! and the error is reported at the end.
use std::io::{BufWriter, Write};

use serde_json::Value;

use crate::collect::output::Output;
use crate::decode::fastline::Line;

pub struct TraceWriter<W: Output = crate::collect::zstd_out::TraceFile> {
    /// `None` once a write failed.
    out: Option<BufWriter<W>>,
    scratch: Vec<u8>,
    /// Lines on disk (flushed whole).
    pub lines: u64,
    /// Bytes on disk: the file's length, every line complete.
    pub bytes: u64,
    /// Lines and bytes in the buffer, not yet flushed, and each line's length.
    buffered_lines: u64,
    buffered_bytes: u64,
    buffered_lens: Vec<u32>,
    /// Lines not written because of a write error (those that were in the
    /// buffer when it failed, and every later one).
    pub dropped: u64,
    pub error: Option<std::io::Error>,
}

impl<W: Output> TraceWriter<W> {
    pub fn new(file: impl Into<W>) -> Self {
        TraceWriter {
            out: Some(BufWriter::with_capacity(1 << 20, file.into())),
            scratch: Vec::with_capacity(4096),
            lines: 0,
            bytes: 0,
            buffered_lines: 0,
            buffered_bytes: 0,
            buffered_lens: Vec::new(),
            dropped: 0,
            error: None,
        }
    }

    pub fn write(&mut self, v: &Value) {
        self.put(|b| serde_json::to_writer(b, v).expect("serializing a Value cannot fail"))
    }

    /// Writes one line of either kind.
    pub fn write_line(&mut self, l: &Line) {
        match l {
            Line::Value(v) => self.write(v),
            Line::Launch(l) => self.put(|b| l.write(b)),
            Line::Call(l) => self.put(|b| l.write(b)),
        }
    }

    /// Writes a launch or call line with `tag` (`,"key":value`) added as
    /// its last field.
    pub fn write_line_tagged(&mut self, l: &Line, tag: &[u8]) {
        let add = |b: &mut Vec<u8>| {
            if b.last() == Some(&b'}') {
                b.pop();
                b.extend_from_slice(tag);
                b.push(b'}');
            }
        };
        match l {
            Line::Value(v) => self.write(v),
            Line::Launch(l) => self.put(|b| {
                l.write(b);
                add(b)
            }),
            Line::Call(l) => self.put(|b| {
                l.write(b);
                add(b)
            }),
        }
    }

    fn put(&mut self, render: impl FnOnce(&mut Vec<u8>)) {
        self.scratch.clear();
        render(&mut self.scratch);
        self.scratch.push(b'\n');
        // Flush first if this line would not fit, so the buffer only ever
        // holds whole lines.
        if self.out.as_ref().is_some_and(|o| o.buffer().len() + self.scratch.len() > o.capacity()) {
            self.flush();
        }
        let Some(out) = self.out.as_mut() else {
            self.dropped += 1;
            return;
        };
        let big = self.scratch.len() > out.capacity();
        match out.write_all(&self.scratch) {
            Ok(()) => {
                self.buffered_lines += 1;
                self.buffered_bytes += self.scratch.len() as u64;
                self.buffered_lens.push(self.scratch.len() as u32);
                if big {
                    // Written through: count it now (or fail cleanly).
                    self.flush();
                }
            }
            Err(e) => {
                self.dropped += 1;
                self.fail(e);
            }
        }
    }

    pub fn flush(&mut self) {
        let Some(out) = self.out.as_mut() else { return };
        match out.flush() {
            Ok(()) => {
                self.lines += self.buffered_lines;
                self.bytes += self.buffered_bytes;
                self.buffered_lines = 0;
                self.buffered_bytes = 0;
                self.buffered_lens.clear();
            }
            Err(e) => self.fail(e),
        }
    }

    /// Stops writing for good. A failed flush may have stored part of the
    /// buffer (a full file system takes what fits): the lines stored whole
    /// are kept and counted, the file is cut after the last of them, and the
    /// rest of the buffer is dropped.
    fn fail(&mut self, e: std::io::Error) {
        if let Some(out) = self.out.take() {
            // into_parts: what was not written comes back instead of being
            // flushed again on drop.
            let (file, rest) = out.into_parts();
            let unwritten = rest.map_or(self.buffered_bytes, |b| b.len() as u64);
            let mut written = self.buffered_bytes.saturating_sub(unwritten);
            if !file.partial_writes_kept() {
                written = 0;
            }
            for &len in &self.buffered_lens {
                if u64::from(len) > written {
                    break;
                }
                written -= u64::from(len);
                self.lines += 1;
                self.buffered_lines -= 1;
                self.bytes += u64::from(len);
            }
            if let Err(t) = file.set_len(self.bytes) {
                log::warn!("cutting the trace back to its last complete line failed: {t}");
            }
        }
        self.dropped += self.buffered_lines;
        self.buffered_lines = 0;
        self.buffered_bytes = 0;
        self.buffered_lens.clear();
        self.error = Some(e);
    }

    /// Flushes and fsyncs; returns the first error met, if any. (A file
    /// that cannot be synced, such as `-o /dev/null`, is not an error.)
    pub fn finish(&mut self) -> Option<&std::io::Error> {
        self.flush();
        if let Some(out) = self.out.as_mut()
            && let Err(e) = out.get_mut().finish()
        {
            self.fail(e);
        }
        if let Some(out) = self.out.as_ref()
            && let Err(e) = out.get_ref().sync_all()
            && e.raw_os_error() != Some(libc::EINVAL)
        {
            self.out = None;
            self.error = Some(e);
        }
        self.error.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use std::fs::File;

    use super::*;
    use serde_json::json;

    #[test]
    fn whole_lines_and_full_disk() {
        let dir = std::env::temp_dir().join(format!("tracer-writer-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("t.jsonl");
        let mut w = TraceWriter::<File>::new(File::create(&p).unwrap());
        w.write(&json!({"type":"header"}));
        w.write(&json!({"a":1}));
        assert!(w.finish().is_none());
        let text = std::fs::read_to_string(&p).unwrap();
        assert_eq!(text, "{\"type\":\"header\"}\n{\"a\":1}\n");
        assert_eq!(w.lines, 2);
        // /dev/full: every write fails with ENOSPC; lines are counted as dropped
        if let Ok(f) = File::options().write(true).open("/dev/full") {
            let mut w = TraceWriter::<File>::new(f);
            for i in 0..3 {
                w.write(&json!({ "i": i, "pad": "x".repeat(600_000) }));
            }
            assert!(w.finish().is_some());
            assert_eq!(w.error.as_ref().unwrap().raw_os_error(), Some(libc::ENOSPC));
            assert_eq!((w.lines, w.dropped), (0, 3));
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A file system that takes `room` bytes, then fails with ENOSPC, also
    /// in the middle of a write.
    struct Filling {
        data: std::rc::Rc<std::cell::RefCell<Vec<u8>>>,
        room: usize,
    }
    impl Write for Filling {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            if self.room == 0 {
                return Err(std::io::Error::from_raw_os_error(libc::ENOSPC));
            }
            let n = b.len().min(self.room);
            self.room -= n;
            self.data.borrow_mut().extend_from_slice(&b[..n]);
            Ok(n)
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    impl Output for Filling {
        fn set_len(&self, len: u64) -> std::io::Result<()> {
            self.data.borrow_mut().truncate(len as usize);
            Ok(())
        }
        fn sync_all(&self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn dev_null_is_not_a_write_error() {
        let mut w = TraceWriter::<File>::new(File::options().write(true).open("/dev/null").unwrap());
        w.write(&json!({"type": "header"}));
        assert!(w.finish().is_none(), "{:?}", w.error);
        assert_eq!((w.lines, w.dropped), (1, 0));
    }

    #[test]
    fn full_disk_mid_buffer_leaves_only_complete_lines() {
        // Lines of 300,001 bytes; the buffer (1 MiB) holds 3. Room for 5.5 lines.
        let line = |i: u64| json!({ "i": i, "pad": "x".repeat(299_985 - i.to_string().len()) });
        assert_eq!(serde_json::to_vec(&line(0)).unwrap().len() + 1, 300_001);
        let data = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
        let mut w = TraceWriter::<Filling>::new(Filling { data: data.clone(), room: 5 * 300_001 + 150_000 });
        for i in 0..3 {
            w.write(&line(i));
        }
        assert_eq!((w.lines, w.buffered_lines), (0, 3));
        w.write(&line(3)); // flushes lines 0-2
        assert_eq!((w.lines, w.bytes, w.buffered_lines), (3, 900_003, 1));
        w.write(&line(4));
        w.write(&line(5));
        // Line 6 does not fit the buffer: the flush of lines 3-5 stores 2.5 lines, then fails.
        w.write(&line(6));
        assert_eq!(w.error.as_ref().unwrap().raw_os_error(), Some(libc::ENOSPC));
        w.write(&line(7));
        assert!(w.finish().is_some());
        // Lines 3 and 4 were stored whole, line 5 in part: kept 0-4, the
        // file cut after line 4; dropped 5, 6 and 7.
        assert_eq!((w.lines, w.bytes, w.dropped), (5, 1_500_005, 3));
        let text = String::from_utf8(data.borrow().clone()).unwrap();
        assert_eq!(text.len(), 1_500_005);
        let is: Vec<u64> =
            text.lines().map(|l| serde_json::from_str::<Value>(l).unwrap()["i"].as_u64().unwrap()).collect();
        assert_eq!(is, [0, 1, 2, 3, 4]);
    }
}
