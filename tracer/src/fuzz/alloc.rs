//! Allocation accounting for the fuzz harness: a global allocator (test
//! builds only) that counts, per thread and only while a fuzz case runs on
//! that thread, the bytes live and their peak. A parser that trusts a size
//! field (`Vec::with_capacity(n)` with n from the input) shows up either as a
//! peak over the case's budget (a test failure, minimized like a panic) or,
//! for a request too large to grant, as a clear message with the input saved
//! before the process aborts (the allocator may not unwind).
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// A single request above this while a case runs is reported and aborts.
pub const HARD_LIMIT: usize = 1 << 30;

/// Where the input of a case that requested more than [`HARD_LIMIT`] is saved.
pub const OVERSIZED_INPUT_PATH: &std::ffi::CStr = c"/tmp/tracer-fuzz-oversized-input.bin";

pub struct Counting;

thread_local! {
    static ACTIVE: Cell<bool> = const { Cell::new(false) };
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
    static INPUT: Cell<(*const u8, usize)> = const { Cell::new((std::ptr::null(), 0)) };
}

fn note(delta: isize) {
    let _ = ACTIVE.try_with(|a| {
        if !a.get() {
            return;
        }
        if delta > HARD_LIMIT as isize {
            a.set(false);
            oversized(delta as usize);
        }
        let live = LIVE.with(|l| {
            let v = l.get() + delta;
            l.set(v);
            v
        });
        PEAK.with(|p| p.set(p.get().max(live)));
    });
}

/// Writes a message and the input without allocating, then aborts.
#[cold]
fn oversized(size: usize) -> ! {
    fn put(b: &[u8]) {
        // SAFETY: writing a valid buffer to stderr.
        unsafe { libc::write(2, b.as_ptr().cast(), b.len()) };
    }
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    let mut n = size;
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    put(b"\nfuzz: a fuzz input made the parser request ");
    put(&digits[i..]);
    put(b" bytes at once (an untrusted size field?); the input is saved in ");
    put(OVERSIZED_INPUT_PATH.to_bytes());
    put(b"\n");
    let (ptr, len) = INPUT.with(|c| c.get());
    // SAFETY: the path is a valid C string; ptr/len describe the input slice
    // the harness registered, alive while the case runs.
    unsafe {
        let fd = libc::open(OVERSIZED_INPUT_PATH.as_ptr(), libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC, 0o644);
        if fd >= 0 && !ptr.is_null() {
            libc::write(fd, ptr.cast(), len);
            libc::close(fd);
        }
    }
    std::process::abort()
}

// SAFETY: every call is forwarded to the system allocator unchanged.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        note(l.size() as isize);
        // SAFETY: forwarded with the caller's layout.
        unsafe { System.alloc(l) }
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        note(l.size() as isize);
        // SAFETY: as above.
        unsafe { System.alloc_zeroed(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        note(-(l.size() as isize));
        // SAFETY: as above.
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new_size: usize) -> *mut u8 {
        note(new_size as isize - l.size() as isize);
        // SAFETY: as above.
        unsafe { System.realloc(p, l, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Runs `f` with accounting on for this thread; returns the peak number of
/// bytes live above what was live when it started.
pub fn measure<R>(input: &[u8], f: impl FnOnce() -> R) -> (R, usize) {
    INPUT.with(|c| c.set((input.as_ptr(), input.len())));
    LIVE.with(|l| l.set(0));
    PEAK.with(|p| p.set(0));
    ACTIVE.with(|a| a.set(true));
    let r = f();
    ACTIVE.with(|a| a.set(false));
    INPUT.with(|c| c.set((std::ptr::null(), 0)));
    (r, PEAK.with(|p| p.get()).max(0) as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peak_is_measured_per_case() {
        let (_, peak) = measure(b"", || {
            let v = vec![0u8; 3 << 20];
            drop(v);
            let w = vec![0u8; 1 << 20];
            w.len()
        });
        assert!((3 << 20..(3 << 20) + 4096).contains(&peak), "peak {peak}");
        let (_, peak) = measure(b"", || 1 + 1);
        assert_eq!(peak, 0);
    }
}
