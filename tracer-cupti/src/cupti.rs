//! Finding libcupti at run time (dlopen, no link-time CUDA dependency) and
//! resolving the few functions we call.
use std::ffi::{CStr, CString, c_char, c_int, c_void};
use std::path::{Path, PathBuf};

pub type CuptiResult = u32;
pub type BufferRequested = extern "C" fn(*mut *mut u8, *mut usize, *mut usize);
pub type BufferCompleted = extern "C" fn(*mut c_void, u32, *mut u8, usize, usize);
pub type TimestampFn = extern "C" fn() -> u64;
pub type CallbackFn = extern "C" fn(*mut c_void, u32, u32, *const c_void);

/// CUPTI_CB_DOMAIN_RESOURCE and its callback ids (cupti_callbacks.h).
pub const DOMAIN_RESOURCE: u32 = 3;
pub const CBID_CONTEXT_CREATED: u32 = 1;
pub const CBID_STREAM_CREATED: u32 = 3;
/// The driver has finished initialising (CUPTI_CBID_RESOURCE_CU_INIT_FINISHED).
pub const CBID_CU_INIT_FINISHED: u32 = 5;
/// CUPTI_CB_DOMAIN_DRIVER_API and CUPTI_API_EXIT (cupti_callbacks.h).
pub const DOMAIN_DRIVER_API: u32 = 1;
pub const API_EXIT: u32 = 1;
/// CUPTI_ACTIVITY_FLAG_FLUSH_FORCED: also flush buffers of work still running.
pub const FLUSH_FORCED: u32 = 1;

pub struct Api {
    pub path: String,
    pub activity_enable: unsafe extern "C" fn(u32) -> CuptiResult,
    /// cuptiActivityDisable (sampling turns records off between windows).
    pub activity_disable: Option<unsafe extern "C" fn(u32) -> CuptiResult>,
    pub register_callbacks: unsafe extern "C" fn(BufferRequested, BufferCompleted) -> CuptiResult,
    pub get_next_record: unsafe extern "C" fn(*mut u8, usize, *mut *mut u8) -> CuptiResult,
    pub get_num_dropped: unsafe extern "C" fn(*mut c_void, u32, *mut usize) -> CuptiResult,
    pub flush_all: unsafe extern "C" fn(u32) -> CuptiResult,
    pub get_timestamp: unsafe extern "C" fn(*mut u64) -> CuptiResult,
    pub get_version: unsafe extern "C" fn(*mut u32) -> CuptiResult,
    pub register_timestamp: Option<unsafe extern "C" fn(TimestampFn) -> CuptiResult>,
    pub subscribe: Option<unsafe extern "C" fn(*mut *mut c_void, CallbackFn, *mut c_void) -> CuptiResult>,
    pub enable_domain: Option<unsafe extern "C" fn(u32, *mut c_void, u32) -> CuptiResult>,
    pub get_stream_id_ex: Option<unsafe extern "C" fn(*mut c_void, *mut c_void, u8, *mut u32) -> CuptiResult>,
    pub get_context_id: Option<unsafe extern "C" fn(*mut c_void, *mut u32) -> CuptiResult>,
    pub result_string: Option<unsafe extern "C" fn(CuptiResult, *mut *const c_char) -> CuptiResult>,
    /// cuptiFinalize: detaches CUPTI from the process (adaptive windows).
    pub finalize: Option<unsafe extern "C" fn() -> CuptiResult>,
    /// cuptiActivityEnableHWTrace (CUDA 13.0: Blackwell only).
    pub enable_hw_trace: Option<unsafe extern "C" fn(u8) -> CuptiResult>,
}

impl Api {
    /// "CUPTI_ERROR_… (N)" for a result code.
    pub fn err(&self, r: CuptiResult) -> String {
        let mut s: *const c_char = std::ptr::null();
        if let Some(f) = self.result_string
            // SAFETY: CUPTI writes a pointer to a static string.
            && unsafe { f(r, &mut s) } == 0
            && !s.is_null()
        {
            // SAFETY: non-null static NUL-terminated string from CUPTI.
            return format!("{} ({r})", unsafe { CStr::from_ptr(s) }.to_string_lossy());
        }
        format!("CUptiResult {r}")
    }
}

fn dl_error() -> String {
    // SAFETY: dlerror returns a thread-local string or null.
    let e = unsafe { libc::dlerror() };
    if e.is_null() {
        "unknown error".into()
    } else {
        // SAFETY: non-null NUL-terminated string from libdl.
        unsafe { CStr::from_ptr(e) }.to_string_lossy().into_owned()
    }
}

const SONAMES: [&str; 3] = ["libcupti.so.13", "libcupti.so.12", "libcupti.so"];

/// Directories to look in, in order: $CUDA_HOME / $CUDA_PATH, then every
/// /usr/local/cuda* (the `cuda` link first, then newest version first).
pub fn candidate_dirs(cuda_home: &[String], usr_local: &[String]) -> Vec<PathBuf> {
    let mut roots: Vec<PathBuf> = cuda_home.iter().filter(|h| !h.is_empty()).map(PathBuf::from).collect();
    let mut cudas: Vec<&String> = usr_local.iter().filter(|n| n.starts_with("cuda")).collect();
    // "cuda" first, then versions newest first (cuda-13.0 before cuda-12.9).
    cudas.sort_by(|a, b| {
        let v = |s: &str| -> Vec<u32> {
            s.trim_start_matches("cuda").trim_start_matches('-').split('.').filter_map(|x| x.parse().ok()).collect()
        };
        (a.as_str() != "cuda").cmp(&(b.as_str() != "cuda")).then(v(b).cmp(&v(a)))
    });
    roots.extend(cudas.into_iter().map(|n| Path::new("/usr/local").join(n)));
    let mut dirs = vec![];
    for r in roots {
        for sub in ["targets/x86_64-linux/lib", "lib64", "extras/CUPTI/lib64"] {
            let d = r.join(sub);
            if !dirs.contains(&d) {
                dirs.push(d);
            }
        }
    }
    dirs
}

unsafe fn open(path: &str, flags: c_int) -> *mut c_void {
    let Ok(c) = CString::new(path) else { return std::ptr::null_mut() };
    // SAFETY: valid C string; dlopen has no other precondition.
    unsafe { libc::dlopen(c.as_ptr(), flags) }
}

/// The file a loaded library came from (dladdr on one of its symbols).
fn loaded_path(h: *mut c_void, fallback: &str) -> String {
    // SAFETY: h is a live handle; dladdr fills `info` for an address in it.
    unsafe {
        let sym = libc::dlsym(h, c"cuptiGetVersion".as_ptr());
        let mut info: libc::Dl_info = std::mem::zeroed();
        if !sym.is_null() && libc::dladdr(sym, &mut info) != 0 && !info.dli_fname.is_null() {
            return CStr::from_ptr(info.dli_fname).to_string_lossy().into_owned();
        }
    }
    fallback.to_string()
}

/// Finds and loads libcupti. `override_path`: TRACER_CUPTI_LIB (from
/// `--cupti-lib`): only that file. Otherwise a libcupti the process already
/// loaded (e.g. PyTorch's own; two CUPTI copies in one process would fight
/// over the driver's callbacks), then $CUDA_HOME and /usr/local/cuda*, then
/// the dynamic loader's search (LD_LIBRARY_PATH, ld.so.cache).
pub fn load(override_path: Option<&str>) -> Result<Api, String> {
    let flags = libc::RTLD_NOW | libc::RTLD_LOCAL;
    if let Some(p) = override_path {
        // SAFETY: plain dlopen.
        let h = unsafe { open(p, flags) };
        if h.is_null() {
            return Err(format!("cannot load the CUPTI library {p} (--cupti-lib): {}", dl_error()));
        }
        return resolve(h, loaded_path(h, p));
    }
    for name in SONAMES {
        // SAFETY: plain dlopen; RTLD_NOLOAD only finds a loaded library.
        let h = unsafe { open(name, flags | libc::RTLD_NOLOAD) };
        if !h.is_null() {
            return resolve(h, loaded_path(h, name));
        }
    }
    let homes: Vec<String> = ["CUDA_HOME", "CUDA_PATH"].iter().filter_map(|k| std::env::var(k).ok()).collect();
    let usr_local: Vec<String> = std::fs::read_dir("/usr/local")
        .map(|rd| rd.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    let mut tried = vec![];
    for d in candidate_dirs(&homes, &usr_local) {
        for name in SONAMES {
            let p = d.join(name);
            if !p.exists() {
                continue;
            }
            let ps = p.to_string_lossy().into_owned();
            // SAFETY: plain dlopen.
            let h = unsafe { open(&ps, flags) };
            if !h.is_null() {
                return resolve(h, loaded_path(h, &ps));
            }
            tried.push(format!("{ps}: {}", dl_error()));
        }
    }
    for name in SONAMES {
        // SAFETY: plain dlopen.
        let h = unsafe { open(name, flags) };
        if !h.is_null() {
            return resolve(h, loaded_path(h, name));
        }
    }
    let mut msg = String::from(
        "libcupti not found (looked for an already loaded one, in $CUDA_HOME, $CUDA_PATH, \
         /usr/local/cuda*/{targets/x86_64-linux/lib,lib64,extras/CUPTI/lib64} and the loader's path); \
         pass --cupti-lib PATH",
    );
    if !tried.is_empty() {
        msg.push_str("; failed to load: ");
        msg.push_str(&tried.join("; "));
    }
    Err(msg)
}

fn resolve(h: *mut c_void, path: String) -> Result<Api, String> {
    macro_rules! sym {
        ($name:literal: $t:ty) => {{
            // SAFETY: h is a live handle, the name a C string literal.
            let p = unsafe { libc::dlsym(h, concat!($name, "\0").as_ptr().cast()) };
            if p.is_null() {
                None
            } else {
                // SAFETY: the symbol is CUPTI's function of this name; $t is
                // its C prototype from cupti_activity.h / cupti_events.h.
                Some(unsafe { std::mem::transmute::<*mut c_void, $t>(p) })
            }
        }};
    }
    macro_rules! need {
        ($name:literal: $t:ty) => {
            sym!($name: $t).ok_or_else(|| format!("{path} has no {}: not a CUPTI library, or too old", $name))?
        };
    }
    type U32Fn = unsafe extern "C" fn(u32) -> CuptiResult;
    Ok(Api {
        activity_enable: need!("cuptiActivityEnable": U32Fn),
        activity_disable: sym!("cuptiActivityDisable": U32Fn),
        register_callbacks: need!(
            "cuptiActivityRegisterCallbacks": unsafe extern "C" fn(BufferRequested, BufferCompleted) -> CuptiResult
        ),
        get_next_record: need!(
            "cuptiActivityGetNextRecord": unsafe extern "C" fn(*mut u8, usize, *mut *mut u8) -> CuptiResult
        ),
        get_num_dropped: need!(
            "cuptiActivityGetNumDroppedRecords": unsafe extern "C" fn(*mut c_void, u32, *mut usize) -> CuptiResult
        ),
        flush_all: need!("cuptiActivityFlushAll": U32Fn),
        get_timestamp: need!("cuptiGetTimestamp": unsafe extern "C" fn(*mut u64) -> CuptiResult),
        get_version: need!("cuptiGetVersion": unsafe extern "C" fn(*mut u32) -> CuptiResult),
        register_timestamp: sym!(
            "cuptiActivityRegisterTimestampCallback": unsafe extern "C" fn(TimestampFn) -> CuptiResult
        ),
        subscribe: sym!(
            "cuptiSubscribe": unsafe extern "C" fn(*mut *mut c_void, CallbackFn, *mut c_void) -> CuptiResult
        ),
        enable_domain: sym!("cuptiEnableDomain": unsafe extern "C" fn(u32, *mut c_void, u32) -> CuptiResult),
        get_stream_id_ex: sym!(
            "cuptiGetStreamIdEx": unsafe extern "C" fn(*mut c_void, *mut c_void, u8, *mut u32) -> CuptiResult
        ),
        get_context_id: sym!("cuptiGetContextId": unsafe extern "C" fn(*mut c_void, *mut u32) -> CuptiResult),
        result_string: sym!(
            "cuptiGetResultString": unsafe extern "C" fn(CuptiResult, *mut *const c_char) -> CuptiResult
        ),
        finalize: sym!("cuptiFinalize": unsafe extern "C" fn() -> CuptiResult),
        enable_hw_trace: sym!("cuptiActivityEnableHWTrace": unsafe extern "C" fn(u8) -> CuptiResult),
        path,
    })
}

/// CLOCK_MONOTONIC in ns (the trace's clock), also CUPTI's timestamp callback.
pub extern "C" fn monotonic_ns() -> u64 {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: writes into a local timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) };
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// CLOCK_MONOTONIC − CUPTI clock: cuptiGetTimestamp bracketed by two
/// monotonic reads, the tightest of 5 brackets, midpoint.
pub fn measure_offset(api: &Api) -> i64 {
    let mut best = (u64::MAX, 0i64);
    for _ in 0..5 {
        let a = monotonic_ns();
        let mut c = 0u64;
        // SAFETY: CUPTI writes one u64.
        unsafe { (api.get_timestamp)(&mut c) };
        let b = monotonic_ns();
        if b - a < best.0 {
            best = (b - a, (a / 2 + b / 2) as i64 - c as i64);
        }
    }
    best.1
}

const BUFFER_ALIGN: usize = 8;

/// CUPTI's buffer-requested callback: a new `BYTES`-long buffer (a null
/// one, which makes CUPTI drop and count records, when there is no memory).
pub(crate) extern "C" fn buffer_requested<const BYTES: usize>(
    buffer: *mut *mut u8,
    size: *mut usize,
    max_records: *mut usize,
) {
    let layout = std::alloc::Layout::from_size_align(BYTES, BUFFER_ALIGN).expect("valid layout");
    // SAFETY: non-zero size; the buffer comes back to free_buffer.
    let p = unsafe { std::alloc::alloc(layout) };
    // SAFETY: CUPTI passes valid out-pointers.
    unsafe {
        *buffer = p;
        *size = if p.is_null() { 0 } else { BYTES };
        *max_records = 0;
    }
}

/// Frees a buffer CUPTI completed (`size`: its size as given by [`buffer_requested`]).
///
/// # Safety
/// `buffer` was allocated by [`buffer_requested`] with `size` bytes, or is null.
pub unsafe fn free_buffer(buffer: *mut u8, size: usize) {
    if !buffer.is_null() && size > 0 {
        let layout = std::alloc::Layout::from_size_align(size, BUFFER_ALIGN).expect("valid layout");
        // SAFETY: allocated in buffer_requested with this size and alignment.
        unsafe { std::alloc::dealloc(buffer, layout) };
    }
}

/// Every record of a completed buffer that we read, decoded (timestamps
/// shifted by `offset_ns`), in CUPTI's order.
///
/// # Safety
/// `buffer` holds `valid` bytes of records CUPTI completed.
pub unsafe fn walk(
    api: &Api,
    buffer: *mut u8,
    valid: usize,
    offset_ns: i64,
    mut f: impl FnMut(crate::records::Decoded),
) {
    if buffer.is_null() || valid == 0 {
        return;
    }
    let mut rec: *mut u8 = std::ptr::null_mut();
    // SAFETY: CUPTI walks its own buffer; rec points at a record in it.
    while unsafe { (api.get_next_record)(buffer, valid, &mut rec) } == 0 {
        // SAFETY: every record starts with its u32 kind.
        let k = unsafe { (rec as *const u32).read_unaligned() };
        let Some(n) = crate::records::min_len(k) else { continue };
        // SAFETY: a record of this kind is at least `n` bytes (the struct's
        // leading fields, checked against cupti_activity.h).
        let bytes = unsafe { std::slice::from_raw_parts(rec as *const u8, n) };
        if let Some(d) = crate::records::decode(k, bytes, offset_ns) {
            f(d);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn search_order() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let dirs = candidate_dirs(&s(&["/opt/cuda", ""]), &s(&["bin", "cuda-12.9", "cuda", "cuda-13.0", "cuda-12.10"]));
        let roots: Vec<String> = dirs
            .iter()
            .step_by(3)
            .map(|d| d.display().to_string().trim_end_matches("/targets/x86_64-linux/lib").to_string())
            .collect();
        assert_eq!(
            roots,
            vec![
                "/opt/cuda",
                "/usr/local/cuda",
                "/usr/local/cuda-13.0",
                "/usr/local/cuda-12.10",
                "/usr/local/cuda-12.9"
            ]
        );
        assert_eq!(dirs[0], PathBuf::from("/opt/cuda/targets/x86_64-linux/lib"));
        assert_eq!(dirs[1], PathBuf::from("/opt/cuda/lib64"));
        assert_eq!(dirs[2], PathBuf::from("/opt/cuda/extras/CUPTI/lib64"));
    }

    #[test]
    fn missing_library_is_a_clear_error() {
        let e = load(Some("/nonexistent/libcupti.so")).err().unwrap();
        assert!(e.starts_with("cannot load the CUPTI library /nonexistent/libcupti.so (--cupti-lib): "), "{e}");
    }
}
