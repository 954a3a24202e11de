//! Recreating the recorded device address ranges: reserve each window at its
//! recorded address (cuMemAddressReserve with the address as hint), back it
//! with physical memory (cuMemCreate + cuMemMap + cuMemSetAccess). A window the
//! driver places elsewhere is used where it lands, and the pointers into it are
//! relocated (parameters, copy and set addresses). Pinned host ranges are
//! mapped at their recorded address (mmap MAP_FIXED_NOREPLACE +
//! cuMemHostRegister) when the address is free, else relocated too.

use std::ffi::c_void;

use anyhow::Result;
use cudarc::driver::sys;
use serde::Serialize;

use super::cuda::{CUdevice, ck};
use crate::plan::{AddrRange, RangeKind};

#[derive(Debug, Clone, Serialize)]
pub struct Window {
    pub recorded: u64,
    pub actual: u64,
    pub size: u64,
    /// `device`, `host_pinned` or `module_global`.
    pub kind: &'static str,
    pub at_recorded_address: bool,
    #[serde(skip)]
    handle: Option<sys::CUmemGenericAllocationHandle>,
    #[serde(skip)]
    host_mmap: bool,
}

#[derive(Debug, Default, Serialize)]
pub struct AddressMap {
    /// Sorted by `recorded`.
    pub windows: Vec<Window>,
    pub granularity: u64,
    pub notes: Vec<String>,
}

impl AddressMap {
    pub fn translate(&self, addr: u64) -> u64 {
        let i = self.windows.partition_point(|w| w.recorded <= addr);
        if i > 0 {
            let w = &self.windows[i - 1];
            if addr < w.recorded + w.size.max(1) {
                return addr - w.recorded + w.actual;
            }
        }
        addr
    }

    /// Some window is not at its recorded address.
    pub fn relocated(&self) -> bool {
        self.windows.iter().any(|w| !w.at_recorded_address)
    }

    fn sort(&mut self) {
        self.windows.sort_by_key(|w| w.recorded);
    }

    pub fn build(ranges: &[AddrRange], dev: CUdevice, force_relocation: bool) -> Result<AddressMap> {
        let mut m = AddressMap::default();
        // SAFETY: zeroed POD struct, then fields set as the API documents.
        let mut prop: sys::CUmemAllocationProp = unsafe { std::mem::zeroed() };
        prop.type_ = sys::CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED;
        prop.location.type_ = sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE;
        prop.location.id = dev;
        let mut g = 0usize;
        // SAFETY: valid out-pointer and prop.
        ck(
            unsafe {
                sys::cuMemGetAllocationGranularity(
                    &mut g,
                    &prop,
                    sys::CUmemAllocationGranularity_flags::CU_MEM_ALLOC_GRANULARITY_MINIMUM,
                )
            },
            "cuMemGetAllocationGranularity",
        )?;
        m.granularity = g as u64;
        for (start, size) in crate::plan::memory::windows(ranges, g as u64) {
            let hint = if force_relocation { 0 } else { start };
            let mut ptr: sys::CUdeviceptr = 0;
            // SAFETY: valid out-pointer; size is a multiple of the granularity.
            ck(unsafe { sys::cuMemAddressReserve(&mut ptr, size as usize, 0, hint, 0) }, "cuMemAddressReserve")?;
            let at = ptr == start;
            if !at && !force_relocation {
                m.notes.push(format!(
                    "window {start:#x}+{size:#x}: the driver reserved {ptr:#x} instead of the recorded address; pointers into it are relocated"
                ));
            }
            let mut h: sys::CUmemGenericAllocationHandle = 0;
            // SAFETY: as documented: create, map the whole reservation, grant read/write to the device.
            unsafe {
                ck(sys::cuMemCreate(&mut h, size as usize, &prop, 0), &format!("cuMemCreate({size})"))?;
                ck(sys::cuMemMap(ptr, size as usize, 0, h, 0), "cuMemMap")?;
                let mut desc: sys::CUmemAccessDesc = std::mem::zeroed();
                desc.location.type_ = sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE;
                desc.location.id = dev;
                desc.flags = sys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
                ck(sys::cuMemSetAccess(ptr, size as usize, &desc, 1), "cuMemSetAccess")?;
                // Deterministic initial content: zeros.
                ck(sys::cuMemsetD8_v2(ptr, 0, size as usize), "cuMemsetD8")?;
            }
            m.windows.push(Window {
                recorded: start,
                actual: ptr,
                size,
                kind: "device",
                at_recorded_address: at,
                handle: Some(h),
                host_mmap: false,
            });
        }
        for r in ranges.iter().filter(|r| matches!(r.kind, RangeKind::HostPinned) && r.size > 0) {
            if m.windows
                .iter()
                .any(|w| w.kind == "host_pinned" && r.start >= w.recorded && r.end() <= w.recorded + w.size)
            {
                continue;
            }
            m.windows.push(host_window(r, force_relocation, &mut m.notes)?);
        }
        m.sort();
        Ok(m)
    }

    /// A module `__device__` variable: its recorded address maps to where the
    /// replay's load put it.
    pub fn add_global(&mut self, recorded: u64, actual: u64, size: u64) {
        self.windows.push(Window {
            recorded,
            actual,
            size: size.max(1),
            kind: "module_global",
            at_recorded_address: recorded == actual,
            handle: None,
            host_mmap: false,
        });
        self.sort();
    }
}

fn host_window(r: &AddrRange, force_relocation: bool, notes: &mut Vec<String>) -> Result<Window> {
    let page = 4096u64;
    let start = r.start / page * page;
    let size = (r.end().div_ceil(page) * page) - start;
    if !force_relocation {
        // SAFETY: MAP_FIXED_NOREPLACE never replaces an existing mapping.
        let p = unsafe {
            libc::mmap(
                start as *mut c_void,
                size as usize,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED_NOREPLACE,
                -1,
                0,
            )
        };
        if p != libc::MAP_FAILED && p as u64 == start {
            // CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP
            // SAFETY: the mapping is ours and page aligned.
            let rr = unsafe { sys::cuMemHostRegister_v2(p, size as usize, 0x1 | 0x2) };
            if rr == sys::CUresult::CUDA_SUCCESS {
                return Ok(Window {
                    recorded: start,
                    actual: start,
                    size,
                    kind: "host_pinned",
                    at_recorded_address: true,
                    handle: None,
                    host_mmap: true,
                });
            }
            // SAFETY: unmapping our own mapping.
            unsafe { libc::munmap(p, size as usize) };
            notes.push(format!(
                "pinned host range {start:#x}+{size:#x}: cuMemHostRegister failed ({}); relocated",
                super::cuda::error_name(rr)
            ));
        } else {
            if p != libc::MAP_FAILED {
                // SAFETY: our mapping, at another address.
                unsafe { libc::munmap(p, size as usize) };
            }
            notes.push(format!("pinned host range {start:#x}+{size:#x}: address in use in this process; relocated"));
        }
    }
    let mut p: *mut c_void = std::ptr::null_mut();
    // SAFETY: out-pointer valid. CU_MEMHOSTALLOC_PORTABLE | DEVICEMAP.
    ck(unsafe { sys::cuMemHostAlloc(&mut p, size as usize, 0x1 | 0x2) }, "cuMemHostAlloc")?;
    Ok(Window {
        recorded: start,
        actual: p as u64,
        size,
        kind: "host_pinned",
        at_recorded_address: false,
        handle: None,
        host_mmap: false,
    })
}

impl Drop for AddressMap {
    fn drop(&mut self) {
        for w in &self.windows {
            // SAFETY: releasing what build() created; errors at teardown are ignored.
            unsafe {
                if let Some(h) = w.handle {
                    sys::cuMemUnmap(w.actual, w.size as usize);
                    sys::cuMemRelease(h);
                    sys::cuMemAddressFree(w.actual, w.size as usize);
                } else if w.host_mmap {
                    sys::cuMemHostUnregister(w.actual as *mut c_void);
                    libc::munmap(w.actual as *mut c_void, w.size as usize);
                } else if w.kind == "host_pinned" {
                    sys::cuMemFreeHost(w.actual as *mut c_void);
                }
            }
        }
    }
}
