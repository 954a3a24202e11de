//! Thin helpers over the CUDA driver API (cudarc's `driver::sys`, libcuda
//! loaded at run time).

use std::ffi::{CStr, c_int, c_void};

use anyhow::{Result, bail};
use cudarc::driver::sys;

pub use sys::{CUdevice, CUdeviceptr, CUevent, CUfunction, CUstream};

/// Check a CUresult; the error names the call.
pub fn ck(r: sys::CUresult, what: &str) -> Result<()> {
    if r == sys::CUresult::CUDA_SUCCESS {
        return Ok(());
    }
    bail!("{what}: {}", error_name(r))
}

pub fn error_name(r: sys::CUresult) -> String {
    let mut p: *const std::ffi::c_char = std::ptr::null();
    // SAFETY: cuGetErrorName writes a static string pointer.
    let ok = unsafe { sys::cuGetErrorName(r, &mut p) } == sys::CUresult::CUDA_SUCCESS;
    if ok && !p.is_null() {
        // SAFETY: NUL-terminated static string from the driver.
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    } else {
        format!("{r:?}")
    }
}

/// libcuda can be loaded (checked before any call, which would panic otherwise).
pub fn libcuda_present() -> bool {
    // SAFETY: only tries to dlopen the library.
    unsafe { sys::is_culib_present() }
}

pub struct Context {
    pub dev: CUdevice,
    pub ctx: sys::CUcontext,
    pub name: String,
    pub pci_bus_id: String,
}

impl Context {
    pub fn new(ordinal: i32) -> Result<Context> {
        if !libcuda_present() {
            bail!("libcuda.so could not be loaded (no NVIDIA driver on this machine?)");
        }
        // SAFETY: plain driver API calls with valid out-pointers.
        unsafe {
            ck(sys::cuInit(0), "cuInit")?;
            let mut dev: CUdevice = 0;
            ck(sys::cuDeviceGet(&mut dev, ordinal), &format!("cuDeviceGet({ordinal})"))?;
            let mut ctx: sys::CUcontext = std::ptr::null_mut();
            ck(sys::cuDevicePrimaryCtxRetain(&mut ctx, dev), "cuDevicePrimaryCtxRetain")?;
            ck(sys::cuCtxSetCurrent(ctx), "cuCtxSetCurrent")?;
            let mut buf = [0 as std::ffi::c_char; 256];
            ck(sys::cuDeviceGetName(buf.as_mut_ptr(), 256, dev), "cuDeviceGetName")?;
            let name = CStr::from_ptr(buf.as_ptr()).to_string_lossy().into_owned();
            let mut bus = [0 as std::ffi::c_char; 64];
            ck(sys::cuDeviceGetPCIBusId(bus.as_mut_ptr(), 64, dev), "cuDeviceGetPCIBusId")?;
            let pci_bus_id = CStr::from_ptr(bus.as_ptr()).to_string_lossy().into_owned();
            Ok(Context { dev, ctx, name, pci_bus_id })
        }
    }

    pub fn sync(&self) -> Result<()> {
        // SAFETY: the context is current.
        ck(unsafe { sys::cuCtxSynchronize() }, "cuCtxSynchronize")
    }
}

type FuncSetAttr = unsafe extern "C" fn(CUfunction, c_int, c_int) -> sys::CUresult;
type KernelSetAttr = unsafe extern "C" fn(c_int, c_int, sys::CUkernel, CUdevice) -> sys::CUresult;

/// cuFuncSetAttribute with the recorded attribute number as is (no enum conversion).
pub fn func_set_attribute(f: CUfunction, attrib: i32, value: i32) -> Result<()> {
    // SAFETY: the symbol has this C signature (CUfunction_attribute is an int enum).
    unsafe {
        let lib = sys::culib();
        let sym = lib.get::<FuncSetAttr>(b"cuFuncSetAttribute")?;
        ck(sym(f, attrib, value), &format!("cuFuncSetAttribute(attrib {attrib}, {value})"))
    }
}

pub fn kernel_set_attribute(k: sys::CUkernel, attrib: i32, value: i32, dev: CUdevice) -> Result<()> {
    // SAFETY: as above.
    unsafe {
        let lib = sys::culib();
        let sym = lib.get::<KernelSetAttr>(b"cuKernelSetAttribute")?;
        ck(sym(attrib, value, k, dev), &format!("cuKernelSetAttribute(attrib {attrib}, {value})"))
    }
}

/// A pinned host buffer (cuMemAllocHost).
pub struct Pinned {
    pub ptr: *mut u8,
    pub len: usize,
    /// false: ordinary (pageable) memory, for copies that were recorded
    /// from or to pageable memory (the driver stages those, which is
    /// slower than DMA from page-locked memory: replay keeps the cost).
    pub locked: bool,
}

const PAGEABLE_ALIGN: usize = 4096;

impl Pinned {
    /// Zeroed pageable memory of `len` bytes. Resident, every page written,
    /// as the program's own buffers were: with an alignment over the
    /// allocator's minimum, `alloc_zeroed` writes the zeros itself (it does
    /// not hand out untouched pages mapping the kernel's shared zero page,
    /// which a copy would read from cache); `pageable_buffers_are_resident`.
    pub fn pageable(len: usize) -> Result<Pinned> {
        let layout = std::alloc::Layout::from_size_align(len.max(1), PAGEABLE_ALIGN)?;
        // SAFETY: non-zero size.
        let p = unsafe { std::alloc::alloc_zeroed(layout) };
        if p.is_null() {
            anyhow::bail!("out of host memory ({len} bytes)");
        }
        Ok(Pinned { ptr: p, len, locked: false })
    }
    /// Page-locked (`locked`) or pageable memory.
    pub fn with(len: usize, locked: bool) -> Result<Pinned> {
        if locked { Pinned::new(len) } else { Pinned::pageable(len) }
    }
    pub fn new(len: usize) -> Result<Pinned> {
        let mut p: *mut c_void = std::ptr::null_mut();
        // SAFETY: out-pointer valid; len > 0 enforced.
        ck(unsafe { sys::cuMemAllocHost_v2(&mut p, len.max(1)) }, &format!("cuMemAllocHost({len})"))?;
        // SAFETY: fresh allocation of len bytes.
        unsafe { std::ptr::write_bytes(p as *mut u8, 0, len.max(1)) };
        Ok(Pinned { ptr: p as *mut u8, len, locked: true })
    }
    pub fn slice(&self) -> &[u8] {
        // SAFETY: allocated with len bytes, alive while self is.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
    pub fn slice_mut(&mut self) -> &mut [u8] {
        // SAFETY: as above, unique borrow.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        if !self.locked {
            // SAFETY: allocated by `pageable` with this layout.
            unsafe {
                std::alloc::dealloc(
                    self.ptr,
                    std::alloc::Layout::from_size_align_unchecked(self.len.max(1), PAGEABLE_ALIGN),
                )
            };
            return;
        }
        // SAFETY: allocated by cuMemAllocHost.
        unsafe {
            sys::cuMemFreeHost(self.ptr as *mut c_void);
        }
    }
}

/// A CUDA event for timing.
pub struct Event(pub CUevent);

impl Event {
    pub fn new() -> Result<Event> {
        let mut e: CUevent = std::ptr::null_mut();
        // SAFETY: out-pointer valid.
        ck(unsafe { sys::cuEventCreate(&mut e, 0) }, "cuEventCreate")?;
        Ok(Event(e))
    }
    #[allow(
        clippy::not_unsafe_ptr_arg_deref,
        reason = "the stream is an opaque driver handle, never dereferenced here"
    )]
    pub fn record(&self, s: CUstream) -> Result<()> {
        // SAFETY: valid event and stream.
        ck(unsafe { sys::cuEventRecord(self.0, s) }, "cuEventRecord")
    }
    pub fn sync(&self) -> Result<()> {
        // SAFETY: valid event.
        ck(unsafe { sys::cuEventSynchronize(self.0) }, "cuEventSynchronize")
    }
    /// Milliseconds from `start` to `self` (both completed).
    pub fn since(&self, start: &Event) -> Result<f64> {
        let mut ms = 0f32;
        // SAFETY: valid events.
        ck(unsafe { sys::cuEventElapsedTime_v2(&mut ms, start.0, self.0) }, "cuEventElapsedTime")?;
        Ok(ms as f64)
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        // SAFETY: created by cuEventCreate.
        unsafe {
            sys::cuEventDestroy_v2(self.0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pages of `[p, p + len)` the kernel has in memory (mincore).
    fn resident_pages(p: *mut u8, len: usize) -> (usize, usize) {
        let page = 4096usize;
        let start = (p as usize) & !(page - 1);
        let n = (p as usize + len - start).div_ceil(page);
        let mut v = vec![0u8; n];
        // SAFETY: the range is mapped (inside one allocation); v has one byte per page.
        let r = unsafe { libc::mincore(start as *mut libc::c_void, n * page, v.as_mut_ptr()) };
        assert_eq!(r, 0, "mincore");
        (v.iter().filter(|&&b| b & 1 == 1).count(), n)
    }

    #[test]
    fn pageable_buffers_are_resident() {
        // 64 MiB: glibc maps it fresh (over the mmap threshold), untouched unless written
        let b = Pinned::pageable(64 << 20).unwrap();
        let (resident, pages) = resident_pages(b.ptr, b.len);
        assert_eq!(resident, pages);
        assert!(b.slice().iter().all(|&x| x == 0));
        assert!(!b.locked);
    }
}
