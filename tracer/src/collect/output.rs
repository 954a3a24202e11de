//! What the trace writer writes to: a plain file or a zstd stream
//! (zstd_out.rs), and in tests a file that fills up.
use std::fs::File;
use std::io::Write;

/// What a trace is written to: a file (tests use a file that fills up).
pub trait Output: Write {
    /// Cuts the output back to `len` bytes.
    fn set_len(&self, len: u64) -> std::io::Result<()>;
    fn sync_all(&self) -> std::io::Result<()>;
    /// Whether the part of a failed write that was stored is readable (a
    /// plain file: yes; a compressed stream: only up to its last flush).
    fn partial_writes_kept(&self) -> bool {
        true
    }
    /// Ends the output (a compressed stream writes its end mark).
    fn finish(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Output for File {
    fn set_len(&self, len: u64) -> std::io::Result<()> {
        File::set_len(self, len)
    }
    fn sync_all(&self) -> std::io::Result<()> {
        File::sync_all(self)
    }
}
