//! Tests on the real nvcc output in tracer/tests/fixtures/cuda (see the
//! README there): exact layouts from the source, and agreement with
//! cuobjdump's decoding of the same files.

use std::collections::BTreeMap;

use super::fatbin::{self, Compression, EntryKind};
use super::nvinfo::{self, CubinInfo, KernelInfo};
use super::{Extent, Format, detect, image_extent, ptx, report};

macro_rules! fixture {
    ($name:literal) => {
        include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/cuda/", $name)).as_slice()
    };
}

const CUBIN_90: &[u8] = fixture!("kernels.sm_90.cubin");
const PTX_80: &[u8] = fixture!("kernels.compute_80.ptx");
const FAT_PLAIN: &[u8] = fixture!("kernels.no-compress.fatbin");
const FAT_ZSTD: &[u8] = fixture!("kernels.compress-all.fatbin");
const FAT_LZ4: &[u8] = fixture!("kernels.mode-speed.fatbin");
const HOST_SO: &[u8] = fixture!("libkernels.so");
const REF_CUBIN_90: &str =
    include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/cuda/cuobjdump-nvinfo.sm_90.cubin.txt"));
const REF_FAT_PLAIN: &str =
    include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/cuda/cuobjdump-nvinfo.no-compress.fatbin.txt"));

/// (name, [(offset, size)], param buffer size), from the comments in kernels.cu.
type Layout = (&'static str, Vec<(u32, u32)>, u32);

fn expected_layouts() -> Vec<Layout> {
    vec![
        ("k_pointers", vec![(0, 8), (8, 8), (16, 4)], 20),
        ("k_scalars", vec![(0, 1), (2, 2), (4, 4), (8, 8), (16, 4), (24, 8), (32, 8)], 40),
        ("k_struct", vec![(0, 1), (8, 24), (32, 3), (36, 2), (40, 8)], 48),
        ("k_vec", vec![(0, 16), (16, 1), (24, 8)], 32),
        ("k_big", vec![(0, 1028), (1032, 8)], 1040),
        ("k_huge", vec![(0, 6000), (6000, 8)], 6008),
        ("k_gridconst", vec![(0, 24), (24, 8)], 32),
        ("k_noparams", vec![], 0),
        ("_Z5k_cppPif", vec![(0, 8), (8, 4)], 12),
        ("_Z10k_templateIfLi4EEvPT_S0_", vec![(0, 8), (8, 4)], 12),
        ("_Z10k_templateIdLi8EEvPT_S0_", vec![(0, 8), (8, 8)], 16),
    ]
}

fn by_name(c: &CubinInfo) -> BTreeMap<&str, &KernelInfo> {
    c.kernels.iter().map(|k| (k.name.as_str(), k)).collect()
}

/// Every kernel of a cubin has exactly the layout the source gives.
fn assert_cubin_layouts(c: &CubinInfo, arch: u32) {
    assert_eq!(c.arch, arch);
    assert_eq!(c.abi_version, 8);
    let ks = by_name(c);
    assert_eq!(ks.len(), 11, "{:?}", ks.keys());
    for (name, params, total) in expected_layouts() {
        let k = ks.get(name).unwrap_or_else(|| panic!("sm_{arch}: kernel {name} missing"));
        let got: Vec<(u32, u32)> = k.params.iter().map(|p| (p.offset, p.size)).collect();
        assert_eq!(got, params, "sm_{arch} {name}");
        let ords: Vec<u16> = k.params.iter().map(|p| p.ordinal).collect();
        assert_eq!(ords, (0..params.len() as u16).collect::<Vec<_>>(), "{name}");
        assert_eq!(k.param_size, total, "sm_{arch} {name}");
        assert!(k.entry, "{name} is a __global__ entry");
        assert!(k.warnings.is_empty(), "{name}: {:?}", k.warnings);
        assert!(k.params.iter().all(|p| p.v2 == (name == "k_huge")), "{name}");
        assert!(k.params.iter().all(|p| p.in_cbank && p.log_align == 0 && p.space == 0), "{name}");
        // The parameters' place in constant bank 0 moved with sm_90, and
        // ptxas moves it again for > 4 KiB of parameters.
        let want_off = match (arch, name) {
            (_, "k_noparams") => None,
            (80, "k_huge") => Some(0x1a80),
            (80, _) => Some(0x160),
            _ => Some(0x210),
        };
        assert_eq!(k.cbank_param_offset, want_off, "sm_{arch} {name}");
    }
    assert_eq!(ks["k_pointers"].max_threads, Some([256, 1, 1]));
    assert_eq!(ks["k_pointers"].max_reg_count, Some(0x80), "__launch_bounds__(256, 2)");
    assert_eq!(ks["k_scalars"].max_threads, None);
    assert_eq!(ks["k_noparams"].num_barriers, Some(1));
    assert_eq!(ks["k_noparams"].cuda_api_version, Some(0x82));
    assert_eq!(ks["k_struct"].params[1].cbank, Some(0x1f));
    assert_eq!(ks["k_huge"].params[0].cbank, None);
}

#[test]
fn cubin_sm90_layouts() {
    assert_eq!(detect(CUBIN_90), Some(Format::Cubin));
    let c = nvinfo::parse_cubin(CUBIN_90).unwrap();
    assert_cubin_layouts(&c, 90);
    assert_eq!(c.e_flags, 0x0600_5a04);
    let ks = by_name(&c);
    // Register counts from the module-wide .nv.info (cuobjdump: "register count").
    assert_eq!(ks["k_struct"].regcount, Some(14));
    assert_eq!(ks["k_noparams"].regcount, Some(4));
    assert_eq!(ks["k_pointers"].frame_size, Some(0));
    assert_eq!(ks["k_pointers"].min_stack_size, Some(0));
}

// ---------------------------------------------------------------- cuobjdump

#[derive(Debug, Default, PartialEq)]
struct RefKernel {
    attrs: Vec<String>,
    /// (ordinal, offset, size), as listed.
    params: Vec<(u16, u32, u32)>,
    cbank_param_size: Option<u32>,
}

fn hex(s: &str) -> u32 {
    u32::from_str_radix(s.trim().trim_start_matches("0x"), 16).unwrap_or_else(|_| panic!("hex {s:?}"))
}

/// Per cubin (split on cuobjdump's `arch = sm_XX` lines): kernel name →
/// what cuobjdump printed for its .nv.info section, and register counts.
fn parse_cuobjdump(text: &str) -> Vec<(BTreeMap<String, RefKernel>, BTreeMap<String, u32>)> {
    let mut out: Vec<(BTreeMap<String, RefKernel>, BTreeMap<String, u32>)> = vec![Default::default()];
    let mut section: Option<String> = None;
    let mut last_attr = String::new();
    for line in text.lines() {
        if line.starts_with("arch = ") && !(out.last().unwrap().0.is_empty() && out.last().unwrap().1.is_empty()) {
            out.push(Default::default());
        }
        let (kernels, regs) = out.last_mut().unwrap();
        if let Some(name) = line.strip_prefix(".nv.info.") {
            section = Some(name.to_owned());
            kernels.insert(name.to_owned(), RefKernel::default());
        } else if line == ".nv.info" {
            section = None;
        } else if let Some(a) = line.strip_prefix("\tAttribute:\t") {
            last_attr = a.trim().to_owned();
            if let Some(s) = &section {
                kernels.get_mut(s).unwrap().attrs.push(last_attr.clone());
            }
        } else if let Some(v) = line.strip_prefix("\tValue:\t") {
            match (&section, last_attr.as_str()) {
                (Some(s), "EIATTR_KPARAM_INFO" | "EIATTR_KPARAM_INFO_V2") => {
                    let f: Vec<&str> = v.split('\t').collect();
                    let field = |name: &str| {
                        let x = f.iter().find(|x| x.trim_start().starts_with(name)).unwrap();
                        hex(x.split(':').nth(1).unwrap())
                    };
                    let p = (field("Ordinal") as u16, field("Offset"), field("Size"));
                    kernels.get_mut(s).unwrap().params.push(p);
                }
                (Some(s), "EIATTR_CBANK_PARAM_SIZE") => kernels.get_mut(s).unwrap().cbank_param_size = Some(hex(v)),
                (None, "EIATTR_REGCOUNT") => {
                    // "function: k_pointers(0x1c)\tregister count: 10"
                    let name = v.strip_prefix("function: ").unwrap().split('(').next().unwrap();
                    let n = v.rsplit(": ").next().unwrap().trim().parse().unwrap();
                    regs.insert(name.to_owned(), n);
                }
                _ => {}
            }
        }
    }
    out
}

fn assert_matches_cuobjdump(c: &CubinInfo, refs: &(BTreeMap<String, RefKernel>, BTreeMap<String, u32>)) {
    let ks = by_name(c);
    assert_eq!(ks.keys().copied().collect::<Vec<_>>(), refs.0.keys().map(String::as_str).collect::<Vec<_>>());
    for (name, r) in &refs.0 {
        let k = ks[name.as_str()];
        assert_eq!(k.attributes, r.attrs, "{name}: attribute names and order");
        let mut want = r.params.clone();
        want.sort();
        let got: Vec<(u16, u32, u32)> = k.params.iter().map(|p| (p.ordinal, p.offset, p.size)).collect();
        assert_eq!(got, want, "{name}: parameters");
        assert_eq!(Some(k.param_size).filter(|&s| s > 0), r.cbank_param_size, "{name}: CBANK_PARAM_SIZE");
        assert_eq!(k.regcount, refs.1.get(name).copied(), "{name}: register count");
    }
}

#[test]
fn cubin_agrees_with_cuobjdump() {
    let refs = parse_cuobjdump(REF_CUBIN_90);
    assert_eq!(refs.len(), 1);
    assert_eq!(refs[0].0.len(), 11);
    assert_eq!(refs[0].0["k_struct"].params.len(), 5);
    assert_eq!(refs[0].1["k_struct"], 14);
    assert_matches_cuobjdump(&nvinfo::parse_cubin(CUBIN_90).unwrap(), &refs[0]);
}

#[test]
fn fatbin_cubins_agree_with_cuobjdump() {
    let refs = parse_cuobjdump(REF_FAT_PLAIN);
    assert_eq!(refs.len(), 2, "sm_80 and sm_90 blocks");
    let c = fatbin::parse_container(FAT_PLAIN).unwrap();
    let cubins: Vec<CubinInfo> = c
        .entries
        .iter()
        .filter(|e| e.kind == EntryKind::Cubin)
        .map(|e| nvinfo::parse_cubin(&e.code().unwrap()).unwrap())
        .collect();
    assert_eq!(cubins.len(), 2);
    for (cubin, r) in cubins.iter().zip(&refs) {
        assert_matches_cuobjdump(cubin, r);
    }
}

// ------------------------------------------------------------------ fatbins

#[test]
fn uncompressed_fatbin_structure() {
    assert_eq!(detect(FAT_PLAIN), Some(Format::Fatbin));
    assert_eq!(image_extent(&FAT_PLAIN[..16]).unwrap(), Extent::Complete(67624));
    assert_eq!(image_extent(&FAT_PLAIN[..10]).unwrap(), Extent::NeedAtLeast(16));
    let c = fatbin::parse_container(FAT_PLAIN).unwrap();
    assert_eq!(c.header.total_size(), FAT_PLAIN.len() as u64);
    assert_eq!(c.header.fat_size, 0x10818);
    let summary: Vec<_> = c
        .entries
        .iter()
        .map(|e| (e.offset, e.kind, e.arch, e.header_size, e.payload_size, e.code_version, e.flags))
        .collect();
    assert_eq!(
        summary,
        vec![
            (0x10, EntryKind::Cubin, 80, 64, 0x7e28, (1, 8), 0x11),
            (0x7e78, EntryKind::Cubin, 90, 64, 0x6ee8, (1, 8), 0x11),
            (0xeda0, EntryKind::Ptx, 90, 80, 0x1a38, (9, 0), 0x11),
        ]
    );
    assert!(c.entries.iter().all(|e| e.compression() == Compression::None && e.obj_name.is_none()));
    assert_eq!(c.entries[2].ptxas_options, None, "options block present but empty");
}

/// Entries of the compressed fatbins decompress to the bytes of the
/// uncompressed one (the PTX is stored with one NUL of padding).
fn assert_same_code(fat: &[u8], compression: Compression, stored: [usize; 3]) {
    let plain = fatbin::parse_container(FAT_PLAIN).unwrap();
    let c = fatbin::parse_container(fat).unwrap();
    assert_eq!(c.header.total_size(), fat.len() as u64);
    assert_eq!(c.entries.len(), 3);
    for (i, (e, p)) in c.entries.iter().zip(&plain.entries).enumerate() {
        assert_eq!(e.compression(), compression);
        assert_eq!((e.kind, e.arch), (p.kind, p.arch));
        assert_eq!(e.payload.len(), stored[i], "entry {i} compressed size");
        let code = e.code().unwrap();
        let want = p.code().unwrap();
        let want = if e.kind == EntryKind::Ptx { &want[..want.len() - 1] } else { &want[..] };
        assert_eq!(&code[..], want, "entry {i}");
    }
}

#[test]
fn zstd_fatbin_decompresses_exactly() {
    assert_same_code(FAT_ZSTD, Compression::Zstd, [0xb0c, 0xb10, 0x5c4]);
}

#[test]
fn lz4_fatbin_decompresses_exactly() {
    assert_same_code(FAT_LZ4, Compression::Lz4, [0x1180, 0x110f, 0x926]);
}

#[test]
fn all_fatbins_give_the_source_layouts() {
    for fat in [FAT_PLAIN, FAT_ZSTD, FAT_LZ4] {
        let c = fatbin::parse_container(fat).unwrap();
        for e in &c.entries {
            let code = e.code().unwrap();
            match e.kind {
                EntryKind::Cubin => assert_cubin_layouts(&nvinfo::parse_cubin(&code).unwrap(), e.arch),
                EntryKind::Ptx => assert_ptx_layouts(&ptx::parse_ptx(&code).unwrap(), "sm_90"),
                k => panic!("unexpected {k:?}"),
            }
        }
    }
}

// ---------------------------------------------------------------------- PTX

fn assert_ptx_layouts(m: &ptx::PtxModule, target: &str) {
    assert_eq!(m.version.as_deref(), Some("9.0"));
    assert_eq!(m.target.as_deref(), Some(target));
    assert_eq!(m.address_size, Some(64));
    let ks: BTreeMap<&str, &ptx::PtxKernel> = m.kernels.iter().map(|k| (k.name.as_str(), k)).collect();
    assert_eq!(ks.len(), 11);
    for (name, params, total) in expected_layouts() {
        let k = ks[name];
        let got: Vec<(u32, u32)> = k.params.iter().map(|p| (p.offset, p.size)).collect();
        assert_eq!(got, params, "{target} {name}");
        assert_eq!(k.param_size, total, "{target} {name}");
    }
    assert_eq!(ks["k_pointers"].maxntid, Some(vec![256, 1, 1]));
    assert_eq!(ks["k_pointers"].minnctapersm, Some(2));
    assert_eq!(ks["k_vec"].params[0].align, 16);
    assert_eq!(ks["k_struct"].params[1].ty, ".b8");
    assert_eq!(ks["k_struct"].params[1].array_len, Some(24));
}

#[test]
fn ptx_file_layouts() {
    assert_eq!(detect(PTX_80), Some(Format::Ptx));
    assert_ptx_layouts(&ptx::parse_ptx(PTX_80).unwrap(), "sm_80");
}

// ----------------------------------------------------------------- host ELF

#[test]
fn host_library_report() {
    assert_eq!(detect(HOST_SO), Some(Format::HostElf));
    let r = report::inspect(HOST_SO).unwrap();
    let h = r.host.as_ref().unwrap();
    assert_eq!((h.nv_fatbin_offset, h.nv_fatbin_size), (0x3090, 0x10018));
    let w: Vec<_> = h.wrappers.iter().map(|w| (w.version, w.data, w.container_offset)).collect();
    assert_eq!(w, vec![(2, 0x3090, Some(0x3090)), (1, 0x3cf0, Some(0x3cf0))]);
    let c: Vec<_> = r.containers.iter().map(|c| (c.offset, c.size, c.entries.len())).collect();
    assert_eq!(c, vec![(0x3090, 3168, 2), (0x3cf0, 62392, 3)]);
    assert_eq!(r.totals.cubins, 4);
    assert_eq!(r.totals.ptx, 1);
    assert_eq!(r.totals.kernels, 22);
    assert_eq!(r.totals.failed_entries, 0);
    assert_eq!(r.totals.archs, vec!["sm_80", "compute_90", "sm_90"]);
    assert!(r.errors.is_empty());
    // nvcc's default: cubins stored as is, PTX compressed.
    let comp: Vec<_> = r.containers[1].entries.iter().map(|e| e.compression).collect();
    assert_eq!(comp, vec![Compression::None, Compression::None, Compression::Zstd]);
    // The kernel-less cubins of the first container.
    assert!(r.containers[0].entries.iter().all(|e| e.cubin.as_ref().unwrap().kernels.is_empty()));
    let text = report::render_text(&r, "libkernels.so");
    assert!(text.contains("wrapper version 1 data 0x3cf0 (container at 0x3cf0)"), "{text}");
    assert!(text.contains("    #1   offset     8  size    24\n"), "{text}");
}

#[test]
fn report_json_has_the_layouts() {
    let r = report::inspect(CUBIN_90).unwrap();
    assert_eq!(r.extent, Some(CUBIN_90.len() as u64));
    let v = serde_json::to_value(&r).unwrap();
    let k = v["cubin"]["kernels"].as_array().unwrap().iter().find(|k| k["name"] == "k_struct").unwrap();
    assert_eq!(k["param_size"], 48);
    assert_eq!(k["params"][2]["offset"], 32);
    assert_eq!(k["params"][2]["size"], 3);
    assert_eq!(v["format"], "cubin");
    assert_eq!(v["totals"]["archs"][0], "sm_90");
}

// ------------------------------------------------------------ image extent

#[test]
fn extent_of_a_cubin_from_its_headers() {
    // The header says where the section table is; then the table gives the size.
    match image_extent(&CUBIN_90[..64]).unwrap() {
        Extent::NeedAtLeast(n) => {
            assert!(n > 64 && n as usize <= CUBIN_90.len());
            assert_eq!(image_extent(&CUBIN_90[..n as usize]).unwrap(), Extent::Complete(CUBIN_90.len() as u64));
        }
        e => panic!("{e:?}"),
    }
    assert_eq!(image_extent(&CUBIN_90[..3]).unwrap(), Extent::NeedAtLeast(4));
}

#[test]
fn extent_of_ptx_is_up_to_the_nul() {
    let mut p = PTX_80.to_vec();
    assert_eq!(image_extent(&p).unwrap(), Extent::NeedAtLeast(2 * p.len() as u64));
    p.extend_from_slice(b"\0garbage");
    assert_eq!(image_extent(&p).unwrap(), Extent::Complete(PTX_80.len() as u64 + 1));
}

#[test]
fn wrapper_decodes() {
    let mut w = Vec::new();
    w.extend_from_slice(&fatbin::WRAPPER_MAGIC.to_le_bytes());
    w.extend_from_slice(&1u32.to_le_bytes());
    w.extend_from_slice(&0x7f00_1234_5678u64.to_le_bytes());
    w.extend_from_slice(&0u64.to_le_bytes());
    assert_eq!(detect(&w), Some(Format::FatbinWrapper));
    assert_eq!(image_extent(&w).unwrap(), Extent::Complete(24));
    let p = fatbin::parse_wrapper(&w).unwrap();
    assert_eq!((p.version, p.data, p.filename_or_fatbins), (1, 0x7f00_1234_5678, 0));
    let e = fatbin::parse_wrapper(&w[..20]).unwrap_err();
    assert_eq!(e.to_string(), "at offset 0x10: truncated: fatbin wrapper filename pointer needs 8 bytes, only 4 left");
}

// ------------------------------------------------------------------ errors

#[test]
fn truncated_and_corrupt_fatbins_name_the_offset() {
    let e = fatbin::parse_container(&FAT_PLAIN[..1000]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "at offset 0x8: fatbin of 67624 bytes (header 16 + entries 67608) but only 1000 bytes available"
    );
    let mut bad = FAT_PLAIN.to_vec();
    bad[0x7e78 + 8..0x7e78 + 16].copy_from_slice(&u64::MAX.to_le_bytes());
    let e = fatbin::parse_container(&bad).unwrap_err();
    assert_eq!(e.offset, 0x7e80);
    assert!(e.what.starts_with("entry 1: entry payload of 18446744073709551615 bytes"), "{e}");
    let mut bad = FAT_ZSTD.to_vec();
    bad[0x10 + 0x38..0x10 + 0x40].copy_from_slice(&(1u64 << 40).to_le_bytes());
    let c = fatbin::parse_container(&bad).unwrap();
    let e = c.entries[0].code().unwrap_err();
    assert_eq!(e.offset, 0x50);
    assert!(e.what.contains("exceeds the 536870912-byte limit"), "{e}");
    let e = fatbin::parse_header(b"\x50\xed\x55\xba\x02\x00\x10\x00").unwrap_err();
    assert_eq!(e.to_string(), "at offset 0x8: truncated: fatbin size needs 8 bytes, only 0 left");
}

#[test]
fn corrupt_nvinfo_names_section_and_offset() {
    let elf = super::elf::Elf::parse(CUBIN_90).unwrap();
    let s = elf.section(".nv.info.k_struct").unwrap().clone();
    let mut bad = CUBIN_90.to_vec();
    // First record's size (SVAL, CUDA_API_VERSION) made to run past the section.
    let at = s.offset as usize + 2;
    bad[at..at + 2].copy_from_slice(&0x4000u16.to_le_bytes());
    let e = nvinfo::parse_cubin(&bad).unwrap_err();
    assert_eq!(e.offset, s.offset + 2);
    assert!(
        e.what.starts_with(&format!(
            "section {} (.nv.info.k_struct): EIATTR_CUDA_API_VERSION: value of 16384 bytes",
            s.index
        )),
        "{e}"
    );
}

/// `cuobjdump --dump-resource-usage`: per function REG and CONSTANT[0], the
/// size of constant bank 0, which is where the parameters start plus their size.
#[test]
fn resource_usage_agrees_with_cbank_layout() {
    let text = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/cuda/cuobjdump-resource-usage.no-compress.fatbin.txt"
    ));
    // arch → function → (REG, CONSTANT[0])
    let mut usage: BTreeMap<u32, BTreeMap<String, (u32, u32)>> = BTreeMap::new();
    let (mut arch, mut func) = (0u32, String::new());
    for line in text.lines() {
        if let Some(a) = line.strip_prefix("arch = sm_") {
            arch = a.trim().parse().unwrap();
        } else if let Some(f) = line.strip_prefix(" Function ") {
            func = f.trim_end_matches(':').to_owned();
        } else if let Some(rest) = line.strip_prefix("  REG:") {
            let reg = rest.split_whitespace().next().unwrap().parse().unwrap();
            let c0 = rest.split("CONSTANT[0]:").nth(1).unwrap().split_whitespace().next().unwrap().parse().unwrap();
            usage.entry(arch).or_default().insert(func.clone(), (reg, c0));
        }
    }
    assert_eq!(usage.keys().copied().collect::<Vec<_>>(), vec![80, 90]);
    let c = fatbin::parse_container(FAT_PLAIN).unwrap();
    let mut checked = 0;
    for e in c.entries.iter().filter(|e| e.kind == EntryKind::Cubin) {
        let cubin = nvinfo::parse_cubin(&e.code().unwrap()).unwrap();
        let want = &usage[&cubin.arch];
        assert_eq!(want.len(), 11);
        let base = if cubin.arch >= 90 { 0x210 } else { 0x160 };
        for k in &cubin.kernels {
            let (reg, c0) = want[&k.name];
            assert_eq!(k.regcount, Some(reg), "sm_{} {}", cubin.arch, k.name);
            let start = k.cbank_param_offset.map_or(base, u32::from);
            assert_eq!(start + k.param_size, c0, "sm_{} {}: CONSTANT[0]", cubin.arch, k.name);
            checked += 1;
        }
    }
    assert_eq!(checked, 22);
}
