//! The JSONL trace file: one JSON object per line, header first, footer last.
//! Lines are written whole through a buffer flushed at least every 100 ms, so
//! a tracer killed with SIGKILL leaves at most one partial last line. A write
//! error (disk full) stops writing for good: every complete line stays valid
//! and the error is reported at the end.
use std::fs::File;
use std::io::{BufWriter, Write};

use serde_json::Value;

use crate::fastline::Line;

pub struct TraceWriter {
    out: BufWriter<File>,
    scratch: Vec<u8>,
    pub lines: u64,
    pub bytes: u64,
    /// Lines not written because of an earlier write error.
    pub dropped: u64,
    pub error: Option<std::io::Error>,
}

impl TraceWriter {
    pub fn new(file: File) -> Self {
        TraceWriter {
            out: BufWriter::with_capacity(1 << 20, file),
            scratch: Vec::with_capacity(4096),
            lines: 0,
            bytes: 0,
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
        }
    }

    fn put(&mut self, render: impl FnOnce(&mut Vec<u8>)) {
        if self.error.is_some() {
            self.dropped += 1;
            return;
        }
        self.scratch.clear();
        render(&mut self.scratch);
        self.scratch.push(b'\n');
        // Flush first if this line would not fit, so the buffer only ever
        // holds whole lines and a write error cuts between lines.
        if self.out.buffer().len() + self.scratch.len() > self.out.capacity() {
            self.flush();
            if self.error.is_some() {
                self.dropped += 1;
                return;
            }
        }
        if let Err(e) = self.out.write_all(&self.scratch) {
            self.error = Some(e);
            self.dropped += 1;
            return;
        }
        self.lines += 1;
        self.bytes += self.scratch.len() as u64;
    }

    pub fn flush(&mut self) {
        if self.error.is_none()
            && let Err(e) = self.out.flush()
        {
            self.error = Some(e);
        }
    }

    /// Flushes and fsyncs; returns the first error met, if any.
    pub fn finish(&mut self) -> Option<&std::io::Error> {
        self.flush();
        if self.error.is_none()
            && let Err(e) = self.out.get_ref().sync_all()
        {
            self.error = Some(e);
        }
        self.error.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn whole_lines_and_full_disk() {
        let dir = std::env::temp_dir().join(format!("tracer-writer-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("t.jsonl");
        let mut w = TraceWriter::new(File::create(&p).unwrap());
        w.write(&json!({"type":"header"}));
        w.write(&json!({"a":1}));
        assert!(w.finish().is_none());
        let text = std::fs::read_to_string(&p).unwrap();
        assert_eq!(text, "{\"type\":\"header\"}\n{\"a\":1}\n");
        assert_eq!(w.lines, 2);
        // /dev/full: every write fails with ENOSPC; lines are counted as dropped
        if let Ok(f) = File::options().write(true).open("/dev/full") {
            let mut w = TraceWriter::new(f);
            for i in 0..3 {
                w.write(&json!({ "i": i, "pad": "x".repeat(600_000) }));
            }
            assert!(w.finish().is_some());
            assert_eq!(w.error.as_ref().unwrap().raw_os_error(), Some(libc::ENOSPC));
            assert!(w.dropped >= 1);
            assert_eq!(w.lines + w.dropped, 3);
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
