//! Kernel name → parameter layout for a whole image: what the recorder needs
//! to copy a launch's parameters. Per container, the entry the driver would
//! use on the device is decoded: the cubin of the highest arch that runs on
//! it (same major version, not newer), else the newest PTX it can JIT, else
//! (no device given, or nothing compatible) the newest cubin, then PTX.
//! Layouts are the ABI's and identical across archs in every image checked
//! (docs/cuda-images.md), so the fallback still gives the right bytes.

use std::collections::BTreeMap;

use serde::Serialize;

use super::error::{ImageError, Result};
use super::fatbin::{self, Entry, EntryKind};
use super::{Format, detect, elf, nvinfo, ptx};

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ParamSlot {
    pub offset: u32,
    pub size: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KernelLayout {
    /// In ordinal order.
    pub params: Vec<ParamSlot>,
    /// Bytes of the parameter buffer.
    pub size: u32,
    /// Where it was read: `sm_90 cubin`, `compute_90 ptx`.
    pub source: String,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Layouts {
    pub kernels: BTreeMap<String, KernelLayout>,
    /// Kernels found twice (in two containers) with different layouts; the
    /// first is kept.
    pub conflicts: Vec<String>,
}

impl Layouts {
    fn add(&mut self, name: &str, l: KernelLayout) {
        match self.kernels.get(name) {
            Some(old) if old.params != l.params || old.size != l.size => {
                self.conflicts.push(format!("{name}: {} vs {}", old.source, l.source))
            }
            Some(_) => {}
            None => {
                self.kernels.insert(name.to_owned(), l);
            }
        }
    }

    fn add_cubin(&mut self, c: &nvinfo::CubinInfo) {
        for k in &c.kernels {
            let params = k.params.iter().map(|p| ParamSlot { offset: p.offset, size: p.size }).collect();
            self.add(&k.name, KernelLayout { params, size: k.param_size, source: format!("sm_{} cubin", c.arch) });
        }
    }

    fn add_ptx(&mut self, m: &ptx::PtxModule, arch: Option<u32>) {
        let src = match arch {
            Some(a) => format!("compute_{a} ptx"),
            None => format!("{} ptx", m.target.as_deref().unwrap_or("?")),
        };
        for k in &m.kernels {
            let params = k.params.iter().map(|p| ParamSlot { offset: p.offset, size: p.size }).collect();
            self.add(&k.name, KernelLayout { params, size: k.param_size, source: src.clone() });
        }
    }
}

/// The entry of a container the driver would load on `device_arch` (e.g. 90).
pub fn pick_entry<'a, 'b>(entries: &'b [Entry<'a>], device_arch: Option<u32>) -> Option<&'b Entry<'a>> {
    let cubins = entries.iter().filter(|e| e.kind == EntryKind::Cubin);
    let ptxs = entries.iter().filter(|e| e.kind == EntryKind::Ptx);
    if let Some(d) = device_arch {
        let native = cubins.clone().filter(|e| e.arch / 10 == d / 10 && e.arch <= d).max_by_key(|e| e.arch);
        let jit = ptxs.clone().filter(|e| e.arch <= d).max_by_key(|e| e.arch);
        if let Some(e) = native.or(jit) {
            return Some(e);
        }
    }
    cubins.max_by_key(|e| e.arch).or_else(|| ptxs.max_by_key(|e| e.arch))
}

fn add_container(out: &mut Layouts, c: &fatbin::Container<'_>, base: u64, device_arch: Option<u32>) -> Result<()> {
    let Some(e) = pick_entry(&c.entries, device_arch) else {
        return Ok(());
    };
    let code = e.code().map_err(|err| err.within(base, "fatbin"))?;
    let at = base + e.payload_offset() as u64;
    let ctx = |err: ImageError| {
        ImageError::new(
            at,
            format!("{} entry (sm {}), at {:#x} in its code: {}", e.kind.name(), e.arch, err.offset, err.what),
        )
    };
    match e.kind {
        EntryKind::Cubin => out.add_cubin(&nvinfo::parse_cubin(&code).map_err(ctx)?),
        EntryKind::Ptx => out.add_ptx(&ptx::parse_ptx(&code).map_err(ctx)?, Some(e.arch)),
        EntryKind::Other(_) => {}
    }
    Ok(())
}

/// All kernels' layouts of an image (fatbin, cubin, PTX) or of a host ELF's
/// `.nv_fatbin`. `device_arch` is the SM version of the GPU (90 for H100).
pub fn kernel_layouts(b: &[u8], device_arch: Option<u32>) -> Result<Layouts> {
    let mut out = Layouts::default();
    match detect(b) {
        Some(Format::Cubin) => out.add_cubin(&nvinfo::parse_cubin(b)?),
        Some(Format::Ptx) => out.add_ptx(&ptx::parse_ptx(b)?, None),
        Some(Format::Fatbin) => {
            let c = fatbin::parse_container(b)?;
            add_container(&mut out, &c, 0, device_arch)?;
        }
        Some(Format::HostElf) => {
            let e = elf::Elf::parse(b)?;
            let sec =
                e.section(".nv_fatbin").ok_or_else(|| ImageError::new(0, "host ELF without a .nv_fatbin section"))?;
            let data = e.bytes_of(sec)?;
            let (cs, err) = fatbin::parse_containers(data);
            if let Some(err) = err {
                return Err(err.within(sec.offset, ".nv_fatbin"));
            }
            for (off, c) in &cs {
                add_container(&mut out, c, sec.offset + *off as u64, device_arch)?;
            }
        }
        Some(Format::FatbinWrapper) => {
            return Err(ImageError::new(
                0,
                "a fatbin wrapper holds only a pointer: capture the container it points to",
            ));
        }
        None => return Err(ImageError::new(0, "not a CUDA image")),
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FAT: &[u8] =
        include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/cuda/kernels.compress-all.fatbin"));
    const SO: &[u8] = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/cuda/libkernels.so"));
    const PTX: &[u8] =
        include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/cuda/kernels.compute_80.ptx"));

    fn source_for(device: Option<u32>) -> String {
        let l = kernel_layouts(FAT, device).unwrap();
        assert_eq!(l.kernels.len(), 11);
        assert!(l.conflicts.is_empty());
        let k = &l.kernels["k_struct"];
        let slots: Vec<(u32, u32)> = k.params.iter().map(|p| (p.offset, p.size)).collect();
        assert_eq!(slots, vec![(0, 1), (8, 24), (32, 3), (36, 2), (40, 8)]);
        assert_eq!(k.size, 48);
        assert_eq!(l.kernels["k_huge"].size, 6008);
        k.source.clone()
    }

    #[test]
    fn the_driver_choice_of_entry() {
        assert_eq!(source_for(Some(90)), "sm_90 cubin");
        assert_eq!(source_for(Some(86)), "sm_80 cubin", "sm_80 SASS runs on sm_86");
        assert_eq!(source_for(Some(80)), "sm_80 cubin");
        assert_eq!(source_for(Some(100)), "compute_90 ptx", "Blackwell JITs the PTX");
        assert_eq!(source_for(Some(75)), "sm_90 cubin", "nothing runs on sm_75: newest cubin");
        assert_eq!(source_for(None), "sm_90 cubin");
    }

    #[test]
    fn library_and_ptx_file() {
        let l = kernel_layouts(SO, Some(90)).unwrap();
        assert_eq!(l.kernels.len(), 11, "22 kernels in two cubins, 11 names");
        assert!(l.conflicts.is_empty());
        assert_eq!(l.kernels["_Z10k_templateIdLi8EEvPT_S0_"].size, 16);
        let p = kernel_layouts(PTX, Some(90)).unwrap();
        assert_eq!(p.kernels["k_vec"].source, "sm_80 ptx");
        assert_eq!(p.kernels.len(), 11);
        for (name, k) in &p.kernels {
            assert_eq!(k.params, l.kernels[name].params, "{name}");
        }
    }
}
