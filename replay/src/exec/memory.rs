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
    /// A device window allocated by `cuMemAlloc` (`--device-memory malloc`), freed by `cuMemFree`.
    #[serde(skip)]
    mem_alloc: bool,
}

/// How the device windows are made (`--device-memory`).
#[derive(clap::ValueEnum, Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum DeviceMemory {
    /// Reserved at the recorded address and mapped (cuMemAddressReserve, cuMemCreate, cuMemMap)
    #[default]
    Vmm,
    /// cuMemAlloc, as cudaMalloc and PyTorch's caching allocator get memory; placed where the
    /// driver puts it, every pointer parameter relocated
    Malloc,
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

    pub fn build(
        ranges: &[AddrRange],
        dev: CUdevice,
        force_relocation: bool,
        fill: u8,
        how: DeviceMemory,
    ) -> Result<AddressMap> {
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
            if how == DeviceMemory::Malloc {
                let mut ptr: sys::CUdeviceptr = 0;
                // SAFETY: valid out-pointer; the window is filled as below.
                unsafe {
                    ck(sys::cuMemAlloc_v2(&mut ptr, size as usize), &format!("cuMemAlloc({size})"))?;
                    ck(sys::cuMemsetD8_v2(ptr, fill, size as usize), "cuMemsetD8")?;
                }
                m.windows.push(Window {
                    recorded: start,
                    actual: ptr,
                    size,
                    kind: "device",
                    at_recorded_address: ptr == start,
                    handle: None,
                    host_mmap: false,
                    mem_alloc: true,
                });
                continue;
            }
            let hint = if force_relocation { 0 } else { start };
            let mut ptr: sys::CUdeviceptr = 0;
            // Alignment = the granularity: with 0 (the default) the H100 driver placed
            // every reservation on a 32 MiB boundary, so recorded windows that do not
            // start on one were moved (docs/replay.md, *Measured*).
            // SAFETY: valid out-pointer; size and hint are multiples of the granularity.
            ck(unsafe { sys::cuMemAddressReserve(&mut ptr, size as usize, g, hint, 0) }, "cuMemAddressReserve")?;
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
                // Deterministic initial content: zeros (or the --fill byte).
                ck(sys::cuMemsetD8_v2(ptr, fill, size as usize), "cuMemsetD8")?;
            }
            m.windows.push(Window {
                recorded: start,
                actual: ptr,
                size,
                kind: "device",
                at_recorded_address: at,
                handle: Some(h),
                host_mmap: false,
                mem_alloc: false,
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
            mem_alloc: false,
        });
        self.sort();
    }
}

/// The parameter bytes to launch with: the recorded ones, with each
/// relocation candidate `(offset, recorded value)` translated, and every
/// 8-aligned word inside a parameter (of the layout; the whole buffer
/// without one) that points into a module global placed elsewhere translated
/// too (the recording often does not give a global's size, so the planner
/// cannot list those words).
pub fn relocate_params(
    params: &[u8],
    layout: Option<&crate::recording::KernelLayout>,
    cands: &[(u32, u64)],
    map: &AddressMap,
) -> Vec<u8> {
    let mut out = params.to_vec();
    if !map.relocated() {
        return out;
    }
    for &(off, v) in cands {
        let o = off as usize;
        if o + 8 <= out.len() {
            out[o..o + 8].copy_from_slice(&map.translate(v).to_le_bytes());
        }
    }
    let moved: Vec<&Window> =
        map.windows.iter().filter(|w| w.kind == "module_global" && !w.at_recorded_address).collect();
    if moved.is_empty() {
        return out;
    }
    let whole = [(0u32, params.len() as u32)];
    let spans: &[(u32, u32)] = layout.map(|l| l.params.as_slice()).unwrap_or(&whole);
    for &(off, size) in spans {
        let mut o = off.next_multiple_of(8) as usize;
        while o + 8 <= (off + size) as usize && o + 8 <= params.len() {
            let v = u64::from_le_bytes(params[o..o + 8].try_into().unwrap());
            if moved.iter().any(|w| v >= w.recorded && v < w.recorded + w.size) {
                out[o..o + 8].copy_from_slice(&map.translate(v).to_le_bytes());
            }
            o += 8;
        }
    }
    out
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
                    mem_alloc: false,
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
        mem_alloc: false,
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
                } else if w.mem_alloc {
                    sys::cuMemFree_v2(w.actual);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recording::KernelLayout;

    fn w(recorded: u64, actual: u64, size: u64, kind: &'static str) -> Window {
        Window {
            recorded,
            actual,
            size,
            kind,
            at_recorded_address: recorded == actual,
            handle: None,
            host_mmap: false,
            mem_alloc: false,
        }
    }

    #[test]
    fn translate_and_relocate_params() {
        let mut m = AddressMap::default();
        m.windows =
            vec![w(0x1000_0000, 0x5000_0000, 0x20_0000, "device"), w(0x7000_0000, 0x7000_0000, 0x20_0000, "device")];
        m.add_global(0x9000, 0xa000, 0x100);
        assert_eq!(m.translate(0x1000_0010), 0x5000_0010);
        assert_eq!(m.translate(0x7000_0010), 0x7000_0010);
        assert_eq!(m.translate(0x9008), 0xa008);
        assert_eq!(m.translate(0x9100), 0x9100); // one past the global
        assert_eq!(m.translate(0x42), 0x42);
        // k_struct-like layout: a 24-byte struct at 8 whose second word points into the global, a pointer at 40.
        let layout =
            KernelLayout { name: "k".into(), param_size: 48, params: vec![(0, 1), (8, 24), (32, 3), (36, 2), (40, 8)] };
        let mut p = vec![0u8; 48];
        p[16..24].copy_from_slice(&0x9010u64.to_le_bytes());
        p[40..48].copy_from_slice(&0x1000_0100u64.to_le_bytes());
        let got = relocate_params(&p, Some(&layout), &[(40, 0x1000_0100)], &m);
        assert_eq!(u64::from_le_bytes(got[16..24].try_into().unwrap()), 0xa010);
        assert_eq!(u64::from_le_bytes(got[40..48].try_into().unwrap()), 0x5000_0100);
        assert_eq!((&got[..16], &got[24..40]), (&p[..16], &p[24..40]));
        // Nothing moved: the bytes are returned as recorded.
        let mut same = AddressMap::default();
        same.windows = vec![w(0x1000_0000, 0x1000_0000, 0x20_0000, "device")];
        assert_eq!(relocate_params(&p, Some(&layout), &[(40, 0x1000_0100)], &same), p);
    }
}
