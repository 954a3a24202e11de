//! Writing messages to the tracer's FIFO without ever stopping the process
//! for long: writes of whole messages up to PIPE_BUF (atomic, so processes
//! sharing the FIFO never interleave), non-blocking, with a bounded wait when
//! the pipe is full, and SIGPIPE blocked so a vanished tracer cannot kill the
//! traced program.
use std::ffi::CString;
use std::time::{Duration, Instant};

use crate::wire::{MAX_WRITE, Msg};

/// Longest wait for room in the pipe before a chunk is dropped.
const PATIENCE: Duration = Duration::from_secs(2);
/// After a drop, how long later chunks wait (until a write succeeds again).
const DEGRADED_PATIENCE: Duration = Duration::from_millis(10);

pub struct Sink {
    fd: i32,
    dead: bool,
    degraded: bool,
    chunk: Vec<u8>,
    /// Activity records in `chunk` (counted as dropped if it cannot be written).
    chunk_records: u64,
    scratch: Vec<u8>,
    /// Activity records we could not send (pipe full for too long, tracer gone).
    pub dropped: u64,
}

impl Sink {
    pub fn open(path: &str) -> Result<Sink, String> {
        let c = CString::new(path).map_err(|_| format!("{path}: path contains a NUL byte"))?;
        // SAFETY: valid C string. O_NONBLOCK: a FIFO with no reader fails at
        // once (ENXIO) instead of hanging the process.
        let fd =
            unsafe { libc::open(c.as_ptr(), libc::O_WRONLY | libc::O_NONBLOCK | libc::O_CLOEXEC | libc::O_APPEND) };
        if fd < 0 {
            return Err(format!("cannot open {path}: {}", std::io::Error::last_os_error()));
        }
        Ok(Sink {
            fd,
            dead: false,
            degraded: false,
            chunk: Vec::with_capacity(MAX_WRITE),
            chunk_records: 0,
            scratch: Vec::with_capacity(MAX_WRITE),
            dropped: 0,
        })
    }

    /// Queues a message; writes the current chunk first if it would not fit.
    pub fn push(&mut self, pid: u32, m: &Msg) {
        self.scratch.clear();
        m.encode(pid, &mut self.scratch);
        if self.chunk.len() + self.scratch.len() > MAX_WRITE {
            self.flush();
        }
        self.chunk.extend_from_slice(&self.scratch);
        if matches!(m, Msg::Kernel { .. } | Msg::Memcpy { .. } | Msg::Memset { .. }) {
            self.chunk_records += 1;
        }
    }

    /// Writes the queued chunk (one atomic write).
    pub fn flush(&mut self) {
        if self.chunk.is_empty() {
            return;
        }
        if !self.dead && self.write_all_or_nothing() {
            self.degraded = false;
        } else {
            self.dropped += self.chunk_records;
            self.degraded = true;
        }
        self.chunk.clear();
        self.chunk_records = 0;
    }

    fn write_all_or_nothing(&mut self) -> bool {
        let patience = if self.degraded { DEGRADED_PATIENCE } else { PATIENCE };
        let deadline = Instant::now() + patience;
        // Block SIGPIPE on this thread while writing: EPIPE instead of death.
        // SAFETY: plain signal-mask calls on local sets.
        let mut old: libc::sigset_t = unsafe { std::mem::zeroed() };
        let mut pipe: libc::sigset_t = unsafe { std::mem::zeroed() };
        unsafe {
            libc::sigemptyset(&mut pipe);
            libc::sigaddset(&mut pipe, libc::SIGPIPE);
            libc::pthread_sigmask(libc::SIG_BLOCK, &pipe, &mut old);
        }
        let ok = loop {
            // SAFETY: writing our own buffer to our fd. A pipe write of at
            // most PIPE_BUF bytes is all or nothing.
            let n = unsafe { libc::write(self.fd, self.chunk.as_ptr().cast(), self.chunk.len()) };
            if n == self.chunk.len() as isize {
                break true;
            }
            let e = std::io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EINTR) => continue,
                Some(libc::EAGAIN) => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        break false;
                    }
                    let mut p = libc::pollfd { fd: self.fd, events: libc::POLLOUT, revents: 0 };
                    // SAFETY: one valid pollfd.
                    unsafe { libc::poll(&mut p, 1, left.as_millis().max(1) as i32) };
                }
                Some(libc::EPIPE) => {
                    // Consume the SIGPIPE this write raised before unblocking.
                    let zero = libc::timespec { tv_sec: 0, tv_nsec: 0 };
                    // SAFETY: waits for nothing longer than zero.
                    unsafe { libc::sigtimedwait(&pipe, std::ptr::null_mut(), &zero) };
                    self.dead = true;
                    break false;
                }
                _ => {
                    self.dead = true;
                    break false;
                }
            }
        };
        // SAFETY: restores the mask saved above.
        unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut()) };
        ok
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{Span, StreamDecoder};

    fn fifo(tag: &str) -> (String, i32) {
        let p = std::env::temp_dir().join(format!("tracer-cupti-sink-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_file(&p);
        let c = CString::new(p.to_str().unwrap()).unwrap();
        // SAFETY: plain syscalls on a test path.
        unsafe {
            assert_eq!(libc::mkfifo(c.as_ptr(), 0o600), 0);
            let rd = libc::open(c.as_ptr(), libc::O_RDWR | libc::O_NONBLOCK);
            assert!(rd >= 0);
            (p.to_str().unwrap().to_string(), rd)
        }
    }

    fn read_all(fd: i32) -> Vec<u8> {
        let mut out = vec![];
        let mut buf = [0u8; 65536];
        loop {
            // SAFETY: reading into a local buffer.
            let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
            if n <= 0 {
                return out;
            }
            out.extend_from_slice(&buf[..n as usize]);
        }
    }

    fn kernel(i: u32) -> Msg {
        let span = Span { start: i as u64, end: i as u64 + 1, device: 0, context: 1, stream: 7, correlation: i };
        Msg::Kernel {
            span,
            grid: [1, 1, 1],
            block: [32, 1, 1],
            shared_mem: 0,
            name_id: 1,
            graph_id: 0,
            graph_node_id: 0,
        }
    }

    #[test]
    fn messages_arrive_whole_and_in_order() {
        let (path, rd) = fifo("order");
        let mut s = Sink::open(&path).unwrap();
        for i in 0..1000 {
            s.push(42, &kernel(i));
            if i % 100 == 0 {
                // keep the pipe from filling during the test
                let _ = read_all(rd);
            }
        }
        s.flush();
        let _ = std::fs::remove_file(&path);
        assert_eq!(s.dropped, 0);
        // Re-run with everything read at the end to check exact content.
        let (path, rd) = fifo("content");
        let mut s = Sink::open(&path).unwrap();
        for i in 0..500 {
            s.push(42, &kernel(i));
        }
        s.flush();
        let bytes = read_all(rd);
        let _ = std::fs::remove_file(&path);
        assert_eq!(bytes.len(), 500 * 84);
        let mut d = StreamDecoder::default();
        let mut n = 0;
        d.feed(&bytes, &mut |pid, m| {
            assert_eq!(pid, 42);
            assert_eq!(m.unwrap(), kernel(n));
            n += 1;
        });
        assert_eq!(n, 500);
    }

    #[test]
    fn no_reader_is_an_error_not_a_hang() {
        let p = std::env::temp_dir().join(format!("tracer-cupti-sink-{}-noreader", std::process::id()));
        let _ = std::fs::remove_file(&p);
        let c = CString::new(p.to_str().unwrap()).unwrap();
        // SAFETY: plain syscall.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = Sink::open(p.to_str().unwrap()).err().unwrap();
        let _ = std::fs::remove_file(&p);
        assert!(e.ends_with("No such device or address (os error 6)"), "{e}");
    }
}
