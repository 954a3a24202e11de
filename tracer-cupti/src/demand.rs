//! The tracer's requests for a window (crate::sample::DEMAND_ENV): a file of one counter
//! (u64, little-endian) that the tracer raises when the program launches a kernel nobody
//! knew. The window thread waits for it between windows. It used to read the file every
//! [`crate::sample::DEMAND_POLL_MS`] ms: a hundred wake-ups a second of a thread inside the
//! traced program, each a traced switch. It now sleeps in `poll` on an inotify watch of the
//! file until the gap ends or the file is written (every process of the traced tree has its
//! own watch, so one write wakes them all); where inotify is refused it polls as before.
use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileExt;
use std::path::Path;

use crate::cupti::monotonic_ns;

pub struct Demand {
    file: File,
    /// The inotify instance watching the file (None: poll the file).
    notify: Option<OwnedFd>,
}

impl Demand {
    pub fn open(path: &Path) -> Option<Demand> {
        let file = File::open(path).ok()?;
        Some(Demand { file, notify: watch(path) })
    }

    /// Whether the wait sleeps on an inotify watch (false: it polls the file).
    pub fn watched(&self) -> bool {
        self.notify.is_some()
    }

    /// The counter (0 when unreadable).
    pub fn counter(&self) -> u64 {
        let mut b = [0u8; 8];
        match self.file.read_exact_at(&mut b, 0) {
            Ok(()) => u64::from_le_bytes(b),
            Err(_) => 0,
        }
    }

    /// Sleeps until `until` (CLOCK_MONOTONIC ns), or until the counter moved past `asked`
    /// (which is updated): true then.
    pub fn wait(&self, asked: &mut u64, until: u64) -> bool {
        loop {
            let d = self.counter();
            if d != *asked {
                *asked = d;
                return true;
            }
            let now = monotonic_ns();
            if now >= until {
                return false;
            }
            match &self.notify {
                Some(fd) => {
                    let ms = (until - now).div_ceil(1_000_000).min(i32::MAX as u64) as i32;
                    let mut p = libc::pollfd { fd: fd.as_raw_fd(), events: libc::POLLIN, revents: 0 };
                    // SAFETY: one pollfd of a descriptor this struct owns.
                    if unsafe { libc::poll(&mut p, 1, ms) } > 0 {
                        drain(fd);
                    }
                }
                None => {
                    let step = crate::sample::DEMAND_POLL_MS * 1_000_000;
                    std::thread::sleep(std::time::Duration::from_nanos((until - now).min(step)));
                }
            }
        }
    }
}

/// A non-blocking inotify instance watching `path` for writes.
fn watch(path: &Path) -> Option<OwnedFd> {
    // SAFETY: plain system calls; the descriptor is owned from here on.
    let fd = unsafe { libc::inotify_init1(libc::IN_CLOEXEC | libc::IN_NONBLOCK) };
    if fd < 0 {
        return None;
    }
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut c = path.as_os_str().as_bytes().to_vec();
    c.push(0);
    // SAFETY: a NUL-terminated path.
    let w = unsafe {
        libc::inotify_add_watch(
            fd.as_raw_fd(),
            c.as_ptr() as *const libc::c_char,
            libc::IN_MODIFY | libc::IN_CLOSE_WRITE,
        )
    };
    (w >= 0).then_some(fd)
}

/// Reads the queued events away (their content does not matter: the counter is read again).
fn drain(fd: &OwnedFd) {
    let mut buf = [0u8; 512];
    // SAFETY: reads into a local buffer; the descriptor is non-blocking.
    while unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr() as *mut libc::c_void, buf.len()) } > 0 {}
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(tag: &str) -> (std::path::PathBuf, File) {
        let p = std::env::temp_dir().join(format!("tracer-cupti-demand-{tag}-{}", std::process::id()));
        std::fs::write(&p, 0u64.to_le_bytes()).unwrap();
        let f = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
        (p, f)
    }

    #[test]
    fn a_write_ends_the_wait_and_moves_the_counter() {
        let (p, f) = file("write");
        let d = Demand::open(&p).unwrap();
        assert!(d.watched(), "inotify refused here");
        let mut asked = 0;
        let writer = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(50));
            f.write_all_at(&7u64.to_le_bytes(), 0).unwrap();
        });
        // an hour's gap: only the write can end it
        assert!(d.wait(&mut asked, monotonic_ns() + 3_600_000_000_000));
        assert_eq!(asked, 7);
        writer.join().unwrap();
        let _ = std::fs::remove_file(&p);
    }

    #[test]
    fn without_a_write_the_wait_lasts_its_gap_and_a_counter_already_moved_ends_it_at_once() {
        let (p, f) = file("gap");
        let d = Demand::open(&p).unwrap();
        let mut asked = 0;
        let until = monotonic_ns() + 30_000_000;
        assert!(!d.wait(&mut asked, until));
        assert!(monotonic_ns() >= until);
        assert_eq!(asked, 0);
        f.write_all_at(&3u64.to_le_bytes(), 0).unwrap();
        assert!(d.wait(&mut asked, monotonic_ns() + 3_600_000_000_000));
        assert_eq!(asked, 3);
        let _ = std::fs::remove_file(&p);
    }
}
