//! `tracer record --check-coverage`: CUPTI's driver-API callbacks count every driver
//! call of the process per function (callback id), the ground truth that the trace's
//! per-function counts are compared with (tracer/src/collect/coverage.rs).
//!
//! On with `TRACER_CUPTI_DRIVER_COUNTS=PATH`: the injection's one CUPTI subscriber also
//! gets CUPTI_CB_DOMAIN_DRIVER_API, each API_ENTER adds one to its callback id's counter
//! (an atomic add; the name CUPTI passes is kept once per id), and at exit the process
//! appends `pid<TAB>function<TAB>calls` lines to PATH in one write (O_APPEND: several
//! processes share the file). CUPTI sees the calls from the process's cuInit on, the
//! one that loaded this library excluded.
use std::ffi::{CStr, c_char, c_void};
use std::io::Write as _;
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};

/// The variable naming the file the counts are appended to.
pub const ENV: &str = "TRACER_CUPTI_DRIVER_COUNTS";
/// CUPTI_CB_DOMAIN_DRIVER_API.
pub const DOMAIN_DRIVER_API: u32 = 1;
/// CUPTI_API_ENTER.
const API_ENTER: u32 = 0;
/// Callback ids counted (CUDA 13.0 has about 810 driver ones).
const IDS: usize = 2048;

static CALLS: [AtomicU64; IDS] = [const { AtomicU64::new(0) }; IDS];
static NAMES: [AtomicPtr<c_char>; IDS] = [const { AtomicPtr::new(std::ptr::null_mut()) }; IDS];
/// Calls whose callback id was past IDS.
static OUT_OF_RANGE: AtomicU64 = AtomicU64::new(0);
/// CLOCK_MONOTONIC (ns) of the latest API_ENTER: calls the trace holds after it were
/// made once CUPTI stopped reporting (its own teardown at exit).
static LAST_NS: AtomicU64 = AtomicU64::new(0);

fn monotonic_ns() -> u64 {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: writes into a local timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) };
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// The start of CUpti_CallbackData (cupti_callbacks.h): the site, then the function name.
#[repr(C)]
struct CallbackData {
    site: u32,
    function_name: *const c_char,
}

/// Counts one driver-API callback (called from the injection's subscriber callback).
///
/// # Safety
/// `data` is CUPTI's CUpti_CallbackData for the driver-API domain.
pub unsafe fn count(cbid: u32, data: *const c_void) {
    if data.is_null() {
        return;
    }
    // SAFETY: the caller passes CUPTI's callback data.
    let d = unsafe { &*(data as *const CallbackData) };
    if d.site != API_ENTER {
        return;
    }
    let Some(c) = CALLS.get(cbid as usize) else {
        OUT_OF_RANGE.fetch_add(1, Ordering::Relaxed);
        return;
    };
    c.fetch_add(1, Ordering::Relaxed);
    LAST_NS.fetch_max(monotonic_ns(), Ordering::Relaxed);
    let n = &NAMES[cbid as usize];
    if n.load(Ordering::Relaxed).is_null() {
        n.store(d.function_name as *mut c_char, Ordering::Relaxed);
    }
}

/// The name of the line that gives the time of the latest callback.
pub const LAST_CALLBACK: &str = "#last_callback_ns";

/// The lines for one process: `pid\tname\tcalls`, then `pid\t(unnamed ids)\tcalls`, and
/// `pid\t#last_callback_ns\tNS`.
pub fn lines(pid: u32) -> String {
    let mut s = String::new();
    for (i, c) in CALLS.iter().enumerate() {
        let n = c.load(Ordering::Relaxed);
        if n == 0 {
            continue;
        }
        let p = NAMES[i].load(Ordering::Relaxed);
        let name = if p.is_null() {
            format!("cbid#{i}")
        } else {
            // SAFETY: CUPTI's function names are static NUL-terminated strings.
            unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
        };
        s.push_str(&format!("{pid}\t{name}\t{n}\n"));
    }
    let o = OUT_OF_RANGE.load(Ordering::Relaxed);
    if o > 0 {
        s.push_str(&format!("{pid}\t(callback ids past {IDS})\t{o}\n"));
    }
    s.push_str(&format!("{pid}\t{LAST_CALLBACK}\t{}\n", LAST_NS.load(Ordering::Relaxed)));
    s
}

/// Appends this process's lines to the file named by [`ENV`].
pub fn write(pid: u32) {
    let Ok(path) = std::env::var(ENV) else { return };
    let text = lines(pid);
    let r = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|mut f| f.write_all(text.as_bytes()));
    if let Err(e) = r {
        eprintln!("tracer-cupti: writing the driver call counts to {path}: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enter_callbacks_are_counted_by_id_with_their_name() {
        let name = c"cuCtxSynchronize_v2";
        let enter = CallbackData { site: 0, function_name: name.as_ptr() };
        let exit = CallbackData { site: 1, function_name: name.as_ptr() };
        for _ in 0..3 {
            unsafe { count(800, (&enter as *const CallbackData).cast()) };
            unsafe { count(800, (&exit as *const CallbackData).cast()) };
        }
        unsafe { count(5000, (&enter as *const CallbackData).cast()) };
        let last = LAST_NS.load(Ordering::Relaxed);
        assert!(last > 0);
        assert_eq!(
            lines(7),
            format!("7\tcuCtxSynchronize_v2\t3\n7\t(callback ids past 2048)\t1\n7\t{LAST_CALLBACK}\t{last}\n")
        );
    }
}
