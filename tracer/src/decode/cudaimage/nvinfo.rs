//! `.nv.info` attributes of cubins and the per-kernel parameter layouts
//! they give.
//!
//! A `.nv.info*` section (type SHT_CUDA_INFO 0x70000000) is a sequence of
//! records `u8 format, u8 attribute, ...`:
//! - format 1 (EIFMT_NVAL): no value, 2 bytes of padding;
//! - format 2 (EIFMT_BVAL): u8 value, 1 byte of padding;
//! - format 3 (EIFMT_HVAL): u16 value;
//! - format 4 (EIFMT_SVAL): u16 size, then `size` bytes.
//!
//! `.nv.info` holds module-wide records indexed by function symbol
//! (REGCOUNT, FRAME_SIZE, MIN/MAX_STACK_SIZE); `.nv.info.<kernel>` the
//! kernel's own, among them one KPARAM_INFO per parameter:
//! `u32 index, u16 ordinal, u16 offset, u32 bits` with bits 0-7 the pointee's
//! log2 alignment, 8-11 the space, 12-16 the constant bank, bit 17 set when
//! the parameter is not in the constant bank, 18-31 the size in bytes.
//! Kernels with more than 4 KiB of parameters (CUDA 12.1+) carry
//! KPARAM_INFO_V2 instead: `u32 index, u16 ordinal, u16 offset, u16 size,
//! u16 bits` (bits 0-7 log2 alignment, 8-11 space).
//! PARAM_CBANK: `u32 symbol (.nv.constant0.<kernel>), u16 offset of the
//! parameters in bank 0, u16 their size`; CBANK_PARAM_SIZE: u16 size.

use std::collections::BTreeMap;

use serde::Serialize;

use super::elf::{Elf, SHT_SYMTAB};
use super::error::{ImageError, Result, read_u16, read_u32};

pub const SHT_CUDA_INFO: u32 = 0x7000_0000;
/// st_other bit of kernel (entry function) symbols.
pub const STO_CUDA_ENTRY: u8 = 0x10;

pub const EIFMT_NVAL: u8 = 1;
pub const EIFMT_BVAL: u8 = 2;
pub const EIFMT_HVAL: u8 = 3;
pub const EIFMT_SVAL: u8 = 4;

pub const EIATTR_MAX_THREADS: u8 = 0x05;
pub const EIATTR_PARAM_CBANK: u8 = 0x0a;
pub const EIATTR_REQNTID: u8 = 0x10;
pub const EIATTR_FRAME_SIZE: u8 = 0x11;
pub const EIATTR_MIN_STACK_SIZE: u8 = 0x12;
pub const EIATTR_KPARAM_INFO: u8 = 0x17;
pub const EIATTR_CBANK_PARAM_SIZE: u8 = 0x19;
pub const EIATTR_MAXREG_COUNT: u8 = 0x1b;
pub const EIATTR_MAX_STACK_SIZE: u8 = 0x23;
pub const EIATTR_REGCOUNT: u8 = 0x2f;
pub const EIATTR_CUDA_API_VERSION: u8 = 0x37;
pub const EIATTR_CTA_PER_CLUSTER: u8 = 0x3d;
pub const EIATTR_EXPLICIT_CLUSTER: u8 = 0x3e;
pub const EIATTR_KPARAM_INFO_V2: u8 = 0x45;
pub const EIATTR_NUM_BARRIERS: u8 = 0x4c;

/// Attribute names as cuobjdump prints them.
pub fn attr_name(code: u8) -> Option<&'static str> {
    const NAMES: [&str; 0x5b] = [
        "EIATTR_ERROR",
        "EIATTR_PAD",
        "EIATTR_IMAGE_SLOT",
        "EIATTR_JUMPTABLE_RELOCS",
        "EIATTR_CTAIDZ_USED",
        "EIATTR_MAX_THREADS",
        "EIATTR_IMAGE_OFFSET",
        "EIATTR_IMAGE_SIZE",
        "EIATTR_TEXTURE_NORMALIZED",
        "EIATTR_SAMPLER_INIT",
        "EIATTR_PARAM_CBANK",
        "EIATTR_SMEM_PARAM_OFFSETS",
        "EIATTR_CBANK_PARAM_OFFSETS",
        "EIATTR_SYNC_STACK",
        "EIATTR_TEXID_SAMPID_MAP",
        "EIATTR_EXTERNS",
        "EIATTR_REQNTID",
        "EIATTR_FRAME_SIZE",
        "EIATTR_MIN_STACK_SIZE",
        "EIATTR_SAMPLER_FORCE_UNNORMALIZED",
        "EIATTR_BINDLESS_IMAGE_OFFSETS",
        "EIATTR_BINDLESS_TEXTURE_BANK",
        "EIATTR_BINDLESS_SURFACE_BANK",
        "EIATTR_KPARAM_INFO",
        "EIATTR_SMEM_PARAM_SIZE",
        "EIATTR_CBANK_PARAM_SIZE",
        "EIATTR_QUERY_NUMATTRIB",
        "EIATTR_MAXREG_COUNT",
        "EIATTR_EXIT_INSTR_OFFSETS",
        "EIATTR_S2RCTAID_INSTR_OFFSETS",
        "EIATTR_CRS_STACK_SIZE",
        "EIATTR_NEED_CNP_WRAPPER",
        "EIATTR_NEED_CNP_PATCH",
        "EIATTR_EXPLICIT_CACHING",
        "EIATTR_ISTYPEP_USED",
        "EIATTR_MAX_STACK_SIZE",
        "EIATTR_SUQ_USED",
        "EIATTR_LD_CACHEMOD_INSTR_OFFSETS",
        "EIATTR_LOAD_CACHE_REQUEST",
        "EIATTR_ATOM_SYS_INSTR_OFFSETS",
        "EIATTR_COOP_GROUP_INSTR_OFFSETS",
        "EIATTR_COOP_GROUP_MASK_REGIDS",
        "EIATTR_SW1850030_WAR",
        "EIATTR_WMMA_USED",
        "EIATTR_HAS_PRE_V10_OBJECT",
        "EIATTR_ATOMF16_EMUL_INSTR_OFFSETS",
        "EIATTR_ATOM16_EMUL_INSTR_REG_MAP",
        "EIATTR_REGCOUNT",
        "EIATTR_SW2393858_WAR",
        "EIATTR_INT_WARP_WIDE_INSTR_OFFSETS",
        "EIATTR_SHARED_SCRATCH",
        "EIATTR_STATISTICS",
        "EIATTR_INDIRECT_BRANCH_TARGETS",
        "EIATTR_SW2861232_WAR",
        "EIATTR_SW_WAR",
        "EIATTR_CUDA_API_VERSION",
        "EIATTR_NUM_MBARRIERS",
        "EIATTR_MBARRIER_INSTR_OFFSETS",
        "EIATTR_COROUTINE_RESUME_ID_OFFSETS",
        "EIATTR_SAM_REGION_STACK_SIZE",
        "EIATTR_PER_REG_TARGET_PERF_STATS",
        "EIATTR_CTA_PER_CLUSTER",
        "EIATTR_EXPLICIT_CLUSTER",
        "EIATTR_MAX_CLUSTER_RANK",
        "EIATTR_INSTR_REG_MAP",
        "EIATTR_RESERVED_SMEM_USED",
        "EIATTR_RESERVED_SMEM_0_SIZE",
        "EIATTR_UCODE_SECTION_DATA",
        "EIATTR_UNUSED_LOAD_BYTE_OFFSET",
        "EIATTR_KPARAM_INFO_V2",
        "EIATTR_SYSCALL_OFFSETS",
        "EIATTR_SW_WAR_MEMBAR_SYS_INSTR_OFFSETS",
        "EIATTR_GRAPHICS_GLOBAL_CBANK",
        "EIATTR_SHADER_TYPE",
        "EIATTR_VRC_CTA_INIT_COUNT",
        "EIATTR_TOOLS_PATCH_FUNC",
        "EIATTR_NUM_BARRIERS",
        "EIATTR_TEXMODE_INDEPENDENT",
        "EIATTR_PERF_STATISTICS",
        "EIATTR_AT_ENTRY_FRAGMENTS",
        "EIATTR_SPARSE_MMA_MASK",
        "EIATTR_TCGEN05_1CTA_USED",
        "EIATTR_TCGEN05_2CTA_USED",
        "EIATTR_GEN_ERRBAR_AT_EXIT",
        "EIATTR_REG_RECONFIG",
        "EIATTR_ANNOTATIONS",
        "EIATTR_SANITIZE",
        "EIATTR_STACK_CANARY_TRAP_OFFSETS",
        "EIATTR_STUB_FUNCTION_KIND",
        "EIATTR_LOCAL_CTA_ASYNC_STORE_OFFSETS",
        "EIATTR_MERCURY_FINALIZER_OPTIONS",
    ];
    match code {
        0x5f => Some("EIATTR_MERCURY_ISA_VERSION"),
        c => NAMES.get(c as usize).copied(),
    }
}

/// The attribute's name, or `EIATTR_0x..` for codes this table lacks.
pub fn attr_label(code: u8) -> String {
    attr_name(code).map(str::to_owned).unwrap_or_else(|| format!("EIATTR_{code:#04x}"))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttrValue<'a> {
    None,
    Byte(u8),
    Half(u16),
    Bytes(&'a [u8]),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attr<'a> {
    /// Offset of the record in the section.
    pub offset: usize,
    pub format: u8,
    pub code: u8,
    pub value: AttrValue<'a>,
}

/// Splits a `.nv.info*` section into records. Offsets in errors are
/// relative to the section.
pub fn parse_attrs(b: &[u8]) -> Result<Vec<Attr<'_>>> {
    let mut out = Vec::new();
    let mut off = 0usize;
    while off < b.len() {
        if b.len() - off < 4 {
            return Err(ImageError::new(
                off as u64,
                format!("attribute record truncated: {} bytes left, 4 needed", b.len() - off),
            ));
        }
        let (format, code) = (b[off], b[off + 1]);
        let (value, next) = match format {
            EIFMT_NVAL => (AttrValue::None, off + 4),
            EIFMT_BVAL => (AttrValue::Byte(b[off + 2]), off + 4),
            EIFMT_HVAL => (AttrValue::Half(u16::from_le_bytes([b[off + 2], b[off + 3]])), off + 4),
            EIFMT_SVAL => {
                let size = u16::from_le_bytes([b[off + 2], b[off + 3]]) as usize;
                let Some(v) = b.get(off + 4..off + 4 + size) else {
                    return Err(ImageError::new(
                        off as u64 + 2,
                        format!(
                            "{}: value of {size} bytes runs past the end of the section ({} bytes left)",
                            attr_label(code),
                            b.len() - off - 4
                        ),
                    ));
                };
                (AttrValue::Bytes(v), off + 4 + size)
            }
            f => {
                return Err(ImageError::new(
                    off as u64,
                    format!("unknown attribute format {f} (1-4 expected) for {}", attr_label(code)),
                ));
            }
        };
        out.push(Attr { offset: off, format, code, value });
        off = next;
    }
    Ok(out)
}

/// Where the driver takes a parameter from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KernelParam {
    pub ordinal: u16,
    /// Byte offset in the parameter buffer.
    pub offset: u32,
    pub size: u32,
    /// log2 of the pointee's alignment (0 when not given).
    pub log_align: u8,
    pub space: u8,
    /// Constant bank (KPARAM_INFO only; 0x1f in every cubin seen).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cbank: Option<u8>,
    /// False when the record says the parameter is not in the constant bank.
    pub in_cbank: bool,
    /// From KPARAM_INFO_V2 (kernels with more than 4 KiB of parameters).
    pub v2: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
pub struct KernelInfo {
    /// Symbol name (mangled for C++ kernels).
    pub name: String,
    /// Symbol flagged STO_CUDA_ENTRY (a __global__ function).
    pub entry: bool,
    /// Ordered by ordinal.
    pub params: Vec<KernelParam>,
    /// Size of the parameter buffer the driver copies for a launch: the
    /// CBANK_PARAM_SIZE record, else PARAM_CBANK's, else the end of the last parameter.
    pub param_size: u32,
    /// Offset of the parameters in constant bank 0 (0x160 before sm_90, 0x210 on sm_90).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cbank_param_offset: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_threads: Option<[u32; 3]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reqntid: Option<[u32; 3]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cta_per_cluster: Option<[u32; 3]>,
    pub explicit_cluster: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_reg_count: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub regcount: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frame_size: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_stack_size: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_stack_size: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub num_barriers: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cuda_api_version: Option<u32>,
    /// Names of all records of the kernel's .nv.info section, in order.
    pub attributes: Vec<String>,
    /// Inconsistencies found (overlapping parameters, missing ordinals, ...).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// A cubin's architecture and kernels.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CubinInfo {
    /// SM version from e_flags (90 for sm_90).
    pub arch: u32,
    pub abi_version: u8,
    pub e_flags: u32,
    pub kernels: Vec<KernelInfo>,
}

/// SM version from a cubin's e_flags: ABI version 8 (CUDA 12.8+) keeps it in
/// bits 8-15, older ABIs in bits 0-7.
pub fn cubin_arch(abi_version: u8, e_flags: u32) -> u32 {
    if abi_version >= 8 { (e_flags >> 8) & 0xff } else { e_flags & 0xff }
}

/// Decodes all kernels of a cubin.
pub fn parse_cubin(b: &[u8]) -> Result<CubinInfo> {
    let elf = Elf::parse(b)?;
    if elf.machine != super::elf::EM_CUDA {
        return Err(ImageError::new(0x12, format!("e_machine {} is not EM_CUDA (190): not a cubin", elf.machine)));
    }
    let symbols = match elf.sections.iter().find(|s| s.sh_type == SHT_SYMTAB) {
        Some(s) => elf.symbols(s)?,
        None => Vec::new(),
    };
    // Module-wide records, keyed by function symbol index.
    let mut per_sym: BTreeMap<u32, Vec<(u8, u32)>> = BTreeMap::new();
    if let Some(s) = elf.sections.iter().find(|s| s.name == ".nv.info" && s.sh_type == SHT_CUDA_INFO) {
        let data = elf.bytes_of(s)?;
        let attrs = parse_attrs(data).map_err(|e| e.within(s.offset, ".nv.info"))?;
        for a in attrs {
            if let AttrValue::Bytes(v) = a.value
                && v.len() == 8
                && matches!(a.code, EIATTR_REGCOUNT | EIATTR_FRAME_SIZE | EIATTR_MIN_STACK_SIZE | EIATTR_MAX_STACK_SIZE)
            {
                let sym = u32::from_le_bytes([v[0], v[1], v[2], v[3]]);
                let val = u32::from_le_bytes([v[4], v[5], v[6], v[7]]);
                per_sym.entry(sym).or_default().push((a.code, val));
            }
        }
    }
    // Function symbols (STT_FUNC) by name, with their symbol index.
    let funcs: std::collections::HashMap<&str, (usize, &super::elf::Symbol)> =
        symbols.iter().enumerate().filter(|(_, y)| y.info & 0xf == 2).map(|(i, y)| (y.name.as_str(), (i, y))).collect();
    let mut kernels = Vec::new();
    for s in &elf.sections {
        let Some(name) = s.name.strip_prefix(".nv.info.") else {
            continue;
        };
        if s.sh_type != SHT_CUDA_INFO {
            continue;
        }
        let data = elf.bytes_of(s)?;
        let ctx = format!("section {} ({})", s.index, s.name);
        let mut k = kernel_from_attrs(name, data).map_err(|e| e.within(s.offset, &ctx))?;
        if let Some(&(idx, y)) = funcs.get(name) {
            k.entry = y.other & STO_CUDA_ENTRY != 0;
            for &(code, val) in per_sym.get(&(idx as u32)).map(|v| v.as_slice()).unwrap_or(&[]) {
                match code {
                    EIATTR_REGCOUNT => k.regcount = Some(val),
                    EIATTR_FRAME_SIZE => k.frame_size = Some(val),
                    EIATTR_MIN_STACK_SIZE => k.min_stack_size = Some(val),
                    EIATTR_MAX_STACK_SIZE => k.max_stack_size = Some(val),
                    _ => {}
                }
            }
        } else {
            k.warnings.push(format!("no function symbol named {name}"));
        }
        kernels.push(k);
    }
    Ok(CubinInfo {
        arch: cubin_arch(elf.abi_version, elf.flags),
        abi_version: elf.abi_version,
        e_flags: elf.flags,
        kernels,
    })
}

fn u32_triple(v: &[u8]) -> Option<[u32; 3]> {
    if v.len() != 12 {
        return None;
    }
    let w = |i: usize| u32::from_le_bytes([v[i], v[i + 1], v[i + 2], v[i + 3]]);
    Some([w(0), w(4), w(8)])
}

/// A kernel's layout from its `.nv.info.<name>` section. Offsets in errors
/// are relative to the section.
pub fn kernel_from_attrs(name: &str, section: &[u8]) -> Result<KernelInfo> {
    let attrs = parse_attrs(section)?;
    let mut k = KernelInfo { name: name.to_owned(), ..Default::default() };
    let mut cbank_param_size = None;
    let mut param_cbank_size = None;
    for a in &attrs {
        k.attributes.push(attr_label(a.code));
        let bad = |what: &str| ImageError::new(a.offset as u64, format!("{}: {what}", attr_label(a.code)));
        match (a.code, a.value) {
            (EIATTR_KPARAM_INFO, AttrValue::Bytes(v)) => {
                if v.len() != 12 {
                    return Err(bad(&format!("{} bytes, 12 expected", v.len())));
                }
                let bits = read_u32(v, 8, "bits")?;
                k.params.push(KernelParam {
                    ordinal: read_u16(v, 4, "ordinal")?,
                    offset: read_u16(v, 6, "offset")? as u32,
                    size: bits >> 18,
                    log_align: (bits & 0xff) as u8,
                    space: ((bits >> 8) & 0xf) as u8,
                    cbank: Some(((bits >> 12) & 0x1f) as u8),
                    in_cbank: bits & (1 << 17) == 0,
                    v2: false,
                });
            }
            (EIATTR_KPARAM_INFO_V2, AttrValue::Bytes(v)) => {
                if v.len() != 12 {
                    return Err(bad(&format!("{} bytes, 12 expected", v.len())));
                }
                let bits = read_u16(v, 10, "bits")?;
                k.params.push(KernelParam {
                    ordinal: read_u16(v, 4, "ordinal")?,
                    offset: read_u16(v, 6, "offset")? as u32,
                    size: read_u16(v, 8, "size")? as u32,
                    log_align: (bits & 0xff) as u8,
                    space: ((bits >> 8) & 0xf) as u8,
                    cbank: None,
                    in_cbank: true,
                    v2: true,
                });
            }
            (EIATTR_CBANK_PARAM_SIZE, AttrValue::Half(h)) => cbank_param_size = Some(h as u32),
            (EIATTR_PARAM_CBANK, AttrValue::Bytes(v)) => {
                if v.len() != 8 {
                    return Err(bad(&format!("{} bytes, 8 expected", v.len())));
                }
                k.cbank_param_offset = Some(read_u16(v, 4, "offset")?);
                param_cbank_size = Some(read_u16(v, 6, "size")? as u32);
            }
            (EIATTR_MAX_THREADS, AttrValue::Bytes(v)) => k.max_threads = u32_triple(v),
            (EIATTR_REQNTID, AttrValue::Bytes(v)) => k.reqntid = u32_triple(v),
            (EIATTR_CTA_PER_CLUSTER, AttrValue::Bytes(v)) => k.cta_per_cluster = u32_triple(v),
            (EIATTR_EXPLICIT_CLUSTER, _) => k.explicit_cluster = true,
            (EIATTR_MAXREG_COUNT, AttrValue::Half(h)) => k.max_reg_count = Some(h),
            (EIATTR_NUM_BARRIERS, AttrValue::Byte(b)) => k.num_barriers = Some(b),
            (EIATTR_CUDA_API_VERSION, AttrValue::Bytes(v)) if v.len() == 4 => {
                k.cuda_api_version = Some(read_u32(v, 0, "version")?)
            }
            _ => {}
        }
    }
    k.params.sort_by_key(|p| p.ordinal);
    let end = k.params.iter().map(|p| p.offset + p.size).max().unwrap_or(0);
    k.param_size = cbank_param_size.or(param_cbank_size).unwrap_or(end);
    check_layout(&mut k, end, cbank_param_size, param_cbank_size);
    Ok(k)
}

fn check_layout(k: &mut KernelInfo, end: u32, cbank_size: Option<u32>, param_cbank: Option<u32>) {
    for (i, p) in k.params.iter().enumerate() {
        if p.ordinal as usize != i {
            k.warnings.push(format!(
                "parameter ordinals are not 0..{}: found {} at position {i}",
                k.params.len(),
                p.ordinal
            ));
            break;
        }
    }
    let mut by_off: Vec<&KernelParam> = k.params.iter().collect();
    by_off.sort_by_key(|p| p.offset);
    for w in by_off.windows(2) {
        if w[0].offset + w[0].size > w[1].offset {
            k.warnings.push(format!(
                "parameters {} ({}+{}) and {} (at {}) overlap",
                w[0].ordinal, w[0].offset, w[0].size, w[1].ordinal, w[1].offset
            ));
        }
    }
    if end > k.param_size {
        k.warnings.push(format!("parameters end at {end}, past the parameter size {}", k.param_size));
    }
    if let (Some(a), Some(b)) = (cbank_size, param_cbank)
        && a != b
    {
        k.warnings.push(format!("CBANK_PARAM_SIZE {a} differs from PARAM_CBANK size {b}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sval(code: u8, v: &[u8]) -> Vec<u8> {
        let mut r = vec![EIFMT_SVAL, code];
        r.extend((v.len() as u16).to_le_bytes());
        r.extend_from_slice(v);
        r
    }

    fn kparam(ordinal: u16, offset: u16, bits: u32) -> Vec<u8> {
        let mut v = 0u32.to_le_bytes().to_vec();
        v.extend(ordinal.to_le_bytes());
        v.extend(offset.to_le_bytes());
        v.extend(bits.to_le_bytes());
        sval(EIATTR_KPARAM_INFO, &v)
    }

    #[test]
    fn hand_built_records_decode() {
        let mut s = Vec::new();
        s.extend([EIFMT_NVAL, EIATTR_EXPLICIT_CLUSTER, 0, 0]);
        s.extend([EIFMT_BVAL, EIATTR_NUM_BARRIERS, 3, 0]);
        s.extend([EIFMT_HVAL, EIATTR_MAXREG_COUNT, 0x80, 0]);
        // ordinal 1 at 8, 24 bytes, pointee log2 align 3, space 1, bank 0x1f.
        s.extend(kparam(1, 8, 3 | (1 << 8) | (0x1f << 12) | (24 << 18)));
        // ordinal 0 at 0, 1 byte, bit 17: not in the constant bank.
        s.extend(kparam(0, 0, (1 << 17) | (1 << 18)));
        let mut cta = Vec::new();
        for d in [2u32, 1, 1] {
            cta.extend(d.to_le_bytes());
        }
        s.extend(sval(EIATTR_CTA_PER_CLUSTER, &cta));
        s.extend([EIFMT_HVAL, EIATTR_CBANK_PARAM_SIZE, 0x20, 0]);
        let mut pc = 5u32.to_le_bytes().to_vec();
        pc.extend(0x210u16.to_le_bytes());
        pc.extend(0x20u16.to_le_bytes());
        s.extend(sval(EIATTR_PARAM_CBANK, &pc));
        s.extend(sval(0x99, &[1, 2, 3]));

        let k = kernel_from_attrs("k", &s).unwrap();
        assert!(k.explicit_cluster);
        assert_eq!(k.num_barriers, Some(3));
        assert_eq!(k.max_reg_count, Some(0x80));
        assert_eq!(k.cta_per_cluster, Some([2, 1, 1]));
        assert_eq!(k.cbank_param_offset, Some(0x210));
        assert_eq!(k.param_size, 0x20);
        let p: Vec<_> =
            k.params.iter().map(|p| (p.ordinal, p.offset, p.size, p.log_align, p.space, p.cbank, p.in_cbank)).collect();
        assert_eq!(p, vec![(0, 0, 1, 0, 0, Some(0), false), (1, 8, 24, 3, 1, Some(0x1f), true)]);
        assert_eq!(k.attributes.last().unwrap(), "EIATTR_0x99");
        assert_eq!(k.attributes[0], "EIATTR_EXPLICIT_CLUSTER");
        assert!(k.warnings.is_empty(), "{:?}", k.warnings);
    }

    #[test]
    fn inconsistent_layouts_are_warned_about() {
        let mut s = kparam(0, 0, 16 << 18);
        s.extend(kparam(2, 8, 8 << 18));
        s.extend([EIFMT_HVAL, EIATTR_CBANK_PARAM_SIZE, 12, 0]);
        let k = kernel_from_attrs("k", &s).unwrap();
        assert_eq!(
            k.warnings,
            vec![
                "parameter ordinals are not 0..2: found 2 at position 1".to_owned(),
                "parameters 0 (0+16) and 2 (at 8) overlap".to_owned(),
                "parameters end at 16, past the parameter size 12".to_owned(),
            ]
        );
    }

    #[test]
    fn malformed_records_name_their_offset() {
        let e = parse_attrs(&[EIFMT_HVAL, 0x1b, 0, 0, 7, 0x17, 0, 0]).unwrap_err();
        assert_eq!(e.to_string(), "at offset 0x4: unknown attribute format 7 (1-4 expected) for EIATTR_KPARAM_INFO");
        let e = parse_attrs(&[EIFMT_HVAL, 0x1b, 0, 0, 4, 0x17]).unwrap_err();
        assert_eq!(e.to_string(), "at offset 0x4: attribute record truncated: 2 bytes left, 4 needed");
        let e = parse_attrs(&[EIFMT_SVAL, 0x17, 12, 0, 1, 2]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "at offset 0x2: EIATTR_KPARAM_INFO: value of 12 bytes runs past the end of the section (2 bytes left)"
        );
        let e = kernel_from_attrs("k", &sval(EIATTR_KPARAM_INFO, &[0; 8])).unwrap_err();
        assert_eq!(e.to_string(), "at offset 0x0: EIATTR_KPARAM_INFO: 8 bytes, 12 expected");
    }

    #[test]
    fn arch_from_e_flags() {
        assert_eq!(cubin_arch(8, 0x0600_5a04), 90);
        assert_eq!(cubin_arch(8, 0x0600_6402), 100);
        assert_eq!(cubin_arch(7, 0x0050_0550), 80, "ABI v1: low byte");
    }
}
