//! A whole-image report (what `tracer image` prints): containers, entries,
//! architectures and each kernel's parameter layout.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use serde::Serialize;

use super::error::{ImageError, Result};
use super::fatbin::{self, Compression, EntryKind};
use super::nvinfo::{self, CubinInfo};
use super::ptx::{self, PtxModule};
use super::{Format, detect, elf};

#[derive(Debug, Clone, Serialize)]
pub struct EntryReport {
    pub index: usize,
    /// Offset of the entry header in the file.
    pub offset: u64,
    pub kind: String,
    pub arch: u32,
    /// "major.minor": PTX ISA version for PTX, cubin ABI for cubins.
    pub code_version: String,
    pub compression: Compression,
    pub stored_size: u64,
    pub code_size: u64,
    pub flags: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub obj_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cubin: Option<CubinInfo>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ptx: Option<PtxModule>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ContainerReport {
    pub offset: u64,
    pub size: u64,
    pub entries: Vec<EntryReport>,
}

#[derive(Debug, Clone, Serialize)]
pub struct HostReport {
    /// File offset and size of `.nv_fatbin`.
    pub nv_fatbin_offset: u64,
    pub nv_fatbin_size: u64,
    /// `__fatBinC_Wrapper_t` records in `.nvFatBinSegment`.
    pub wrappers: Vec<WrapperRef>,
}

#[derive(Debug, Clone, Serialize)]
pub struct WrapperRef {
    pub version: u32,
    /// Link-time address of the container.
    pub data: u64,
    /// File offset of that container, when `data` lies in `.nv_fatbin`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub container_offset: Option<u64>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Totals {
    pub containers: usize,
    pub cubins: usize,
    pub ptx: usize,
    pub other_entries: usize,
    pub kernels: usize,
    pub failed_entries: usize,
    pub archs: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ImageReport {
    pub format: Format,
    /// Bytes in the file.
    pub size: u64,
    /// Bytes the image occupies according to its own headers (what the
    /// recorder copies from a `cuModuleLoadData` pointer); absent for host ELF files.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extent: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wrapper: Option<fatbin::Wrapper>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<HostReport>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub containers: Vec<ContainerReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cubin: Option<CubinInfo>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ptx: Option<PtxModule>,
    pub totals: Totals,
    /// Errors that stopped parsing part of the image (entries' own errors
    /// are in the entries).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
}

fn flags_text(f: u64) -> String {
    let mut v = Vec::new();
    for (bit, name) in [
        (fatbin::FLAG_64BIT, "64bit"),
        (fatbin::FLAG_DEBUG, "debug"),
        (fatbin::FLAG_LINUX, "linux"),
        (fatbin::FLAG_LZ4, "lz4"),
        (fatbin::FLAG_ZSTD, "zstd"),
    ] {
        if f & bit != 0 {
            v.push(name.to_owned());
        }
    }
    let rest =
        f & !(fatbin::FLAG_64BIT | fatbin::FLAG_DEBUG | fatbin::FLAG_LINUX | fatbin::FLAG_LZ4 | fatbin::FLAG_ZSTD);
    if rest != 0 {
        v.push(format!("{rest:#x}"));
    }
    v.join("|")
}

fn entry_report(index: usize, base: u64, e: &fatbin::Entry<'_>) -> EntryReport {
    let mut r = EntryReport {
        index,
        offset: base + e.offset as u64,
        kind: e.kind.name(),
        arch: e.arch,
        code_version: format!("{}.{}", e.code_version.0, e.code_version.1),
        compression: e.compression(),
        stored_size: e.payload.len() as u64,
        code_size: e.code_size(),
        flags: flags_text(e.flags),
        obj_name: e.obj_name.clone(),
        cubin: None,
        ptx: None,
        error: None,
    };
    let code = match e.code() {
        Ok(c) => c,
        Err(err) => {
            r.error = Some(err.within(base, "").to_string().replace(": : ", ": "));
            return r;
        }
    };
    let code_at = base + e.payload_offset() as u64;
    let what = |err: ImageError| {
        if e.compression() == Compression::None {
            err.within(code_at, &format!("{} entry", r.kind)).to_string()
        } else {
            format!("{} entry at {code_at:#x}, decompressed {err}", r.kind)
        }
    };
    match e.kind {
        EntryKind::Cubin => match nvinfo::parse_cubin(&code) {
            Ok(c) => r.cubin = Some(c),
            Err(err) => r.error = Some(what(err)),
        },
        EntryKind::Ptx => match ptx::parse_ptx(&code) {
            Ok(p) => r.ptx = Some(p),
            Err(err) => r.error = Some(what(err)),
        },
        EntryKind::Other(_) => {}
    }
    r
}

fn containers_report(b: &[u8], base: u64, out: &mut ImageReport) {
    let (containers, err) = fatbin::parse_containers(b);
    for (off, c) in containers {
        let coff = base + off as u64;
        out.containers.push(ContainerReport {
            offset: coff,
            size: c.header.total_size(),
            entries: c.entries.iter().enumerate().map(|(i, e)| entry_report(i, coff, e)).collect(),
        });
    }
    if let Some(e) = err {
        out.errors.push(e.within(base, "").to_string().replace(": : ", ": "));
    }
}

/// Parses a whole image or host ELF file. Fails only when the format is not
/// recognised or its outermost structure is unreadable; errors inside
/// entries are kept in the report.
pub fn inspect(b: &[u8]) -> Result<ImageReport> {
    let format = detect(b).ok_or_else(|| {
        ImageError::new(0, "not a CUDA image: no fatbin wrapper/container magic, ELF header or PTX text")
    })?;
    let mut r = ImageReport {
        format,
        size: b.len() as u64,
        extent: None,
        wrapper: None,
        host: None,
        containers: Vec::new(),
        cubin: None,
        ptx: None,
        totals: Totals::default(),
        errors: Vec::new(),
    };
    match format {
        Format::FatbinWrapper => r.wrapper = Some(fatbin::parse_wrapper(b)?),
        Format::Fatbin => {
            fatbin::parse_header(b)?;
            containers_report(b, 0, &mut r);
        }
        Format::Cubin => r.cubin = Some(nvinfo::parse_cubin(b)?),
        Format::Ptx => r.ptx = Some(ptx::parse_ptx(b)?),
        Format::HostElf => {
            let e = elf::Elf::parse(b)?;
            let sec = e
                .section(".nv_fatbin")
                .ok_or_else(|| ImageError::new(0, "host ELF without a .nv_fatbin section: it carries no CUDA code"))?;
            let data = e.bytes_of(sec)?;
            let mut wrappers = Vec::new();
            if let Some(s) = e.section(".nvFatBinSegment") {
                let seg = e.bytes_of(s)?;
                for (i, w) in seg.chunks_exact(fatbin::WRAPPER_SIZE).enumerate() {
                    let at = s.offset + (i * fatbin::WRAPPER_SIZE) as u64;
                    let w = fatbin::parse_wrapper(w).map_err(|e| e.within(at, ".nvFatBinSegment"))?;
                    let rel = w.data.wrapping_sub(sec.addr);
                    wrappers.push(WrapperRef {
                        version: w.version,
                        data: w.data,
                        container_offset: (w.data >= sec.addr && rel < sec.size).then_some(sec.offset + rel),
                    });
                }
            }
            r.host = Some(HostReport { nv_fatbin_offset: sec.offset, nv_fatbin_size: sec.size, wrappers });
            containers_report(data, sec.offset, &mut r);
        }
    }
    if format != Format::HostElf
        && let Ok(super::Extent::Complete(n)) = super::image_extent(b)
    {
        r.extent = Some(n);
    }
    r.totals = totals(&r);
    Ok(r)
}

fn totals(r: &ImageReport) -> Totals {
    let mut t = Totals { containers: r.containers.len(), ..Default::default() };
    let mut archs = BTreeSet::new();
    for e in r.containers.iter().flat_map(|c| &c.entries) {
        match e.kind.as_str() {
            "cubin" => {
                t.cubins += 1;
                archs.insert((e.arch, format!("sm_{}", e.arch)));
            }
            "ptx" => {
                t.ptx += 1;
                archs.insert((e.arch, format!("compute_{}", e.arch)));
            }
            _ => t.other_entries += 1,
        }
        if e.error.is_some() {
            t.failed_entries += 1;
        }
        t.kernels += e.cubin.as_ref().map_or(0, |c| c.kernels.len());
    }
    if let Some(c) = &r.cubin {
        t.cubins = 1;
        t.kernels = c.kernels.len();
        archs.insert((c.arch, format!("sm_{}", c.arch)));
    }
    if let Some(p) = &r.ptx {
        t.ptx = 1;
        if let Some(tg) = &p.target {
            archs.insert((0, tg.clone()));
        }
    }
    t.archs = archs.into_iter().map(|a| a.1).collect();
    t
}

fn render_cubin(out: &mut String, c: &CubinInfo, indent: &str) {
    let _ = writeln!(
        out,
        "{indent}cubin sm_{} (ELF ABI {}, e_flags {:#x}), {} kernels",
        c.arch,
        c.abi_version,
        c.e_flags,
        c.kernels.len()
    );
    for k in &c.kernels {
        let mut extra = Vec::new();
        if let Some(o) = k.cbank_param_offset {
            extra.push(format!("c[0x0][{o:#x}]"));
        }
        if let Some(n) = k.regcount {
            extra.push(format!("{n} regs"));
        }
        if let Some(m) = k.max_threads {
            extra.push(format!("max threads {}x{}x{}", m[0], m[1], m[2]));
        }
        if let Some(m) = k.reqntid {
            extra.push(format!("reqntid {}x{}x{}", m[0], m[1], m[2]));
        }
        let _ = writeln!(
            out,
            "{indent}  {}: {} params, {} bytes{}{}",
            k.name,
            k.params.len(),
            k.param_size,
            if extra.is_empty() { String::new() } else { format!(" ({})", extra.join(", ")) },
            if k.entry { "" } else { " [not an entry symbol]" }
        );
        for p in &k.params {
            let _ = writeln!(
                out,
                "{indent}    #{:<3} offset {:>5}  size {:>5}{}",
                p.ordinal,
                p.offset,
                p.size,
                if p.v2 { "  (v2)" } else { "" }
            );
        }
        for w in &k.warnings {
            let _ = writeln!(out, "{indent}    warning: {w}");
        }
    }
}

fn render_ptx(out: &mut String, p: &PtxModule, indent: &str) {
    let _ = writeln!(
        out,
        "{indent}PTX {} for {}, {} kernels",
        p.version.as_deref().unwrap_or("?"),
        p.target.as_deref().unwrap_or("?"),
        p.kernels.len()
    );
    for k in &p.kernels {
        let _ = writeln!(out, "{indent}  {}: {} params, {} bytes", k.name, k.params.len(), k.param_size);
        for q in &k.params {
            let _ = writeln!(
                out,
                "{indent}    #{:<3} offset {:>5}  size {:>5}  align {:>2}  {}",
                q.ordinal, q.offset, q.size, q.align, q.ty
            );
        }
    }
}

pub fn render_text(r: &ImageReport, path: &str) -> String {
    let mut out = String::new();
    let t = &r.totals;
    let _ = writeln!(out, "{path}: {:?}, {} bytes", r.format, r.size);
    match r.extent {
        Some(n) if n != r.size => {
            let _ = writeln!(
                out,
                "note: the headers at the start give {n} bytes (what a load call reads from there), the file has {}",
                r.size
            );
        }
        _ => {}
    }
    if let Some(w) = &r.wrapper {
        let _ = writeln!(
            out,
            "fatbin wrapper version {}, data {:#x}, filename {:#x}",
            w.version, w.data, w.filename_or_fatbins
        );
    }
    if let Some(h) = &r.host {
        let _ = writeln!(
            out,
            ".nv_fatbin at {:#x}, {} bytes; {} wrappers in .nvFatBinSegment",
            h.nv_fatbin_offset,
            h.nv_fatbin_size,
            h.wrappers.len()
        );
        for w in &h.wrappers {
            let at = w.container_offset.map(|o| format!(" (container at {o:#x})")).unwrap_or_default();
            let _ = writeln!(out, "  wrapper version {} data {:#x}{at}", w.version, w.data);
        }
    }
    if !r.containers.is_empty() {
        let _ = writeln!(
            out,
            "{} containers, {} cubins, {} PTX, {} kernels in cubins; archs {}{}",
            t.containers,
            t.cubins,
            t.ptx,
            t.kernels,
            t.archs.join(" "),
            if t.failed_entries > 0 { format!("; {} entries failed", t.failed_entries) } else { String::new() }
        );
    }
    for c in &r.containers {
        let _ = writeln!(out, "container at {:#x}, {} bytes, {} entries", c.offset, c.size, c.entries.len());
        for e in &c.entries {
            let _ = writeln!(
                out,
                "  entry {} at {:#x}: {} arch {} v{} {:?} stored {} code {} flags {}",
                e.index, e.offset, e.kind, e.arch, e.code_version, e.compression, e.stored_size, e.code_size, e.flags
            );
            if let Some(err) = &e.error {
                let _ = writeln!(out, "    error: {err}");
            }
            if let Some(c) = &e.cubin {
                render_cubin(&mut out, c, "    ");
            }
            if let Some(p) = &e.ptx {
                render_ptx(&mut out, p, "    ");
            }
        }
    }
    if let Some(c) = &r.cubin {
        render_cubin(&mut out, c, "");
    }
    if let Some(p) = &r.ptx {
        render_ptx(&mut out, p, "");
    }
    for e in &r.errors {
        let _ = writeln!(out, "error: {e}");
    }
    out
}
