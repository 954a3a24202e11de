//! A compressed stream that may end early (tracer was killed mid-write):
//! read what its complete blocks hold, then end, with the cut flagged for
//! the reader's warning instead of an error.
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Ends at the first "unexpected end of file" of `inner` (a gzip or zstd
/// decoder on a cut file), raising [`CutTolerant::cut_flag`].
pub struct CutTolerant<R> {
    inner: R,
    cut: Arc<AtomicBool>,
}

impl<R> CutTolerant<R> {
    pub fn new(inner: R) -> Self {
        CutTolerant { inner, cut: Arc::default() }
    }

    /// Raised once the stream was found cut.
    pub fn cut_flag(&self) -> Arc<AtomicBool> {
        self.cut.clone()
    }
}

impl<R: io::Read> io::Read for CutTolerant<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.cut.load(Ordering::Relaxed) {
            return Ok(0);
        }
        match self.inner.read(buf) {
            // flate2 and zstd report a stream that stops inside a block as UnexpectedEof.
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                self.cut.store(true, Ordering::Relaxed);
                Ok(0)
            }
            r => r,
        }
    }
}
