//! Fatbin wrapper and fatbin containers.
//!
//! Wrapper (`__fatBinC_Wrapper_t`, 24 bytes, what `__cudaRegisterFatBinary`
//! receives and what host objects keep in `.nvFatBinSegment`):
//! `u32 magic 0x466243b1, u32 version, u64 data (address of the container),
//! u64 filename_or_fatbins` (unused by plain builds; the prelinked fatbins
//! list of `-rdc` builds).
//!
//! Container (`.nv_fatbin` holds one per translation unit, back to back):
//! 16-byte header `u32 magic 0xBA55ED50, u16 version 1, u16 header_size 16,
//! u64 fat_size` (bytes of entries after the header), then entries, each an
//! entry header followed by its payload:
//!
//! | off | type | field |
//! |----:|------|-------|
//! | 0x00 | u16 | kind: 1 PTX, 2 ELF (cubin) |
//! | 0x02 | u16 | entry version, 0x0101 |
//! | 0x04 | u32 | header size: 64; 80 for PTX (options block); 112 for sm_100+ ELF |
//! | 0x08 | u64 | payload size (stored bytes, padded to 8) |
//! | 0x10 | u32 | compressed size (0 when not compressed) |
//! | 0x14 | u32 | offset of the options block in the header (0 if none) |
//! | 0x18 | u16 | code version minor |
//! | 0x1a | u16 | code version major (PTX ISA for PTX, cubin ABI for ELF) |
//! | 0x1c | u32 | sm arch (80, 90, 100, ...) |
//! | 0x20 | u32 | offset of the object name in the header (0 if none) |
//! | 0x24 | u32 | length of the object name |
//! | 0x28 | u64 | flags: 0x1 64-bit, 0x2 debug, 0x10 Linux, 0x2000 LZ4, 0x8000 Zstd |
//! | 0x30 | u64 | zero |
//! | 0x38 | u64 | decompressed size (0 when not compressed) |
//!
//! The entry's payload starts at entry + header size; the next entry at entry
//! + header size + payload size. See docs/cuda-images.md for the sources.

use std::borrow::Cow;

use serde::Serialize;

use super::decompress;
use super::error::{ImageError, Result, read_u16, read_u32, read_u64};

pub const WRAPPER_MAGIC: u32 = 0x466243b1;
pub const WRAPPER_SIZE: usize = 24;
pub const FATBIN_MAGIC: u32 = 0xba55ed50;
pub const HEADER_SIZE: usize = 16;
pub const ENTRY_MIN_HEADER: usize = 64;

pub const FLAG_64BIT: u64 = 0x1;
pub const FLAG_DEBUG: u64 = 0x2;
pub const FLAG_LINUX: u64 = 0x10;
pub const FLAG_LZ4: u64 = 0x2000;
pub const FLAG_ZSTD: u64 = 0x8000;

/// `__fatBinC_Wrapper_t` as found in the process (or in `.nvFatBinSegment`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Wrapper {
    pub version: u32,
    /// Address of the fatbin container in the process.
    pub data: u64,
    pub filename_or_fatbins: u64,
}

pub fn parse_wrapper(b: &[u8]) -> Result<Wrapper> {
    let magic = read_u32(b, 0, "fatbin wrapper magic")?;
    if magic != WRAPPER_MAGIC {
        return Err(ImageError::new(
            0,
            format!("not a fatbin wrapper: magic {magic:#010x}, expected {WRAPPER_MAGIC:#010x}"),
        ));
    }
    Ok(Wrapper {
        version: read_u32(b, 4, "fatbin wrapper version")?,
        data: read_u64(b, 8, "fatbin wrapper data pointer")?,
        filename_or_fatbins: read_u64(b, 16, "fatbin wrapper filename pointer")?,
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ContainerHeader {
    pub version: u16,
    pub header_size: u16,
    /// Bytes of entries after the header.
    pub fat_size: u64,
}

impl ContainerHeader {
    /// The container's whole size: what `cuModuleLoadData` reads from its
    /// pointer when the image is a fatbin.
    pub fn total_size(&self) -> u64 {
        self.header_size as u64 + self.fat_size
    }
}

/// Reads the 16-byte header only: enough to know a container's size from a
/// pointer to its start.
pub fn parse_header(b: &[u8]) -> Result<ContainerHeader> {
    let magic = read_u32(b, 0, "fatbin magic")?;
    if magic != FATBIN_MAGIC {
        return Err(ImageError::new(
            0,
            format!("not a fatbin container: magic {magic:#010x}, expected {FATBIN_MAGIC:#010x}"),
        ));
    }
    let version = read_u16(b, 4, "fatbin version")?;
    let header_size = read_u16(b, 6, "fatbin header size")?;
    let fat_size = read_u64(b, 8, "fatbin size")?;
    if version != 1 {
        return Err(ImageError::new(4, format!("fatbin version {version}, only 1 is known")));
    }
    if (header_size as usize) < HEADER_SIZE {
        return Err(ImageError::new(6, format!("fatbin header size {header_size}, at least {HEADER_SIZE} expected")));
    }
    if fat_size > i64::MAX as u64 {
        return Err(ImageError::new(8, format!("fatbin size {fat_size:#x} is not plausible")));
    }
    Ok(ContainerHeader { version, header_size, fat_size })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EntryKind {
    Ptx,
    Cubin,
    #[serde(untagged)]
    Other(u16),
}

impl EntryKind {
    fn from_raw(k: u16) -> Self {
        match k {
            1 => EntryKind::Ptx,
            2 => EntryKind::Cubin,
            n => EntryKind::Other(n),
        }
    }
    pub fn name(&self) -> String {
        match self {
            EntryKind::Ptx => "ptx".into(),
            EntryKind::Cubin => "cubin".into(),
            EntryKind::Other(n) => format!("kind{n}"),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Compression {
    None,
    Lz4,
    Zstd,
}

/// One entry of a container. Offsets are relative to the buffer given to
/// [`parse_container`] (the container's start).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry<'a> {
    pub offset: usize,
    pub kind: EntryKind,
    pub entry_version: u16,
    pub header_size: u32,
    /// Stored payload bytes (padded).
    pub payload_size: u64,
    pub compressed_size: u32,
    pub code_version: (u16, u16),
    pub arch: u32,
    pub flags: u64,
    pub decompressed_size: u64,
    pub obj_name: Option<String>,
    pub ptxas_options: Option<String>,
    /// The stored payload, cut to the compressed size when compressed.
    pub payload: &'a [u8],
}

impl Entry<'_> {
    pub fn payload_offset(&self) -> usize {
        self.offset + self.header_size as usize
    }

    pub fn compression(&self) -> Compression {
        if self.flags & FLAG_ZSTD != 0 {
            Compression::Zstd
        } else if self.flags & FLAG_LZ4 != 0 {
            Compression::Lz4
        } else {
            Compression::None
        }
    }

    /// Size of the code once decompressed.
    pub fn code_size(&self) -> u64 {
        match self.compression() {
            Compression::None => self.payload.len() as u64,
            _ => self.decompressed_size,
        }
    }

    /// The code (cubin ELF or PTX text), decompressed if needed. Error
    /// offsets are relative to the container start.
    pub fn code(&self) -> Result<Cow<'_, [u8]>> {
        let base = self.payload_offset() as u64;
        match self.compression() {
            Compression::None => Ok(Cow::Borrowed(self.payload)),
            Compression::Lz4 => decompress::lz4_block(self.payload, self.decompressed_size)
                .map(Cow::Owned)
                .map_err(|e| e.within(base, "compressed payload")),
            Compression::Zstd => decompress::zstd_frame(self.payload, self.decompressed_size)
                .map(Cow::Owned)
                .map_err(|e| e.within(base, "compressed payload")),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Container<'a> {
    pub header: ContainerHeader,
    pub entries: Vec<Entry<'a>>,
}

/// Parses the container at the start of `b` (`b` may extend past it).
pub fn parse_container(b: &[u8]) -> Result<Container<'_>> {
    let header = parse_header(b)?;
    let total = header.total_size();
    if total > b.len() as u64 {
        return Err(ImageError::new(
            8,
            format!(
                "fatbin of {total} bytes (header {} + entries {}) but only {} bytes available",
                header.header_size,
                header.fat_size,
                b.len()
            ),
        ));
    }
    let end = total as usize;
    let mut entries = Vec::new();
    let mut off = header.header_size as usize;
    while off < end {
        let e = parse_entry(&b[..end], off).map_err(|e| {
            let n = entries.len();
            ImageError::new(e.offset, format!("entry {n}: {}", e.what))
        })?;
        off = e.offset + e.header_size as usize + e.payload_size as usize;
        entries.push(e);
    }
    Ok(Container { header, entries })
}

fn parse_entry(b: &[u8], off: usize) -> Result<Entry<'_>> {
    let at = |rel: usize| off + rel;
    if b.len() - off < ENTRY_MIN_HEADER {
        return Err(ImageError::new(
            off as u64,
            format!("{} bytes left in the container, an entry header needs {ENTRY_MIN_HEADER}", b.len() - off),
        ));
    }
    let kind = read_u16(b, at(0), "entry kind")?;
    let entry_version = read_u16(b, at(2), "entry version")?;
    let header_size = read_u32(b, at(4), "entry header size")?;
    let payload_size = read_u64(b, at(8), "entry payload size")?;
    let compressed_size = read_u32(b, at(0x10), "entry compressed size")?;
    let options_offset = read_u32(b, at(0x14), "entry options offset")?;
    let minor = read_u16(b, at(0x18), "entry minor version")?;
    let major = read_u16(b, at(0x1a), "entry major version")?;
    let arch = read_u32(b, at(0x1c), "entry arch")?;
    let name_off = read_u32(b, at(0x20), "entry name offset")?;
    let name_len = read_u32(b, at(0x24), "entry name length")?;
    let flags = read_u64(b, at(0x28), "entry flags")?;
    let decompressed_size = read_u64(b, at(0x38), "entry decompressed size")?;

    let left = (b.len() - off) as u64;
    if (header_size as usize) < ENTRY_MIN_HEADER || header_size as u64 > left {
        return Err(ImageError::new(
            at(4) as u64,
            format!("entry header size {header_size} (at least {ENTRY_MIN_HEADER}, at most the {left} bytes left)"),
        ));
    }
    if payload_size > left - header_size as u64 {
        return Err(ImageError::new(
            at(8) as u64,
            format!(
                "entry payload of {payload_size} bytes but only {} bytes left in the container",
                left - header_size as u64
            ),
        ));
    }
    let hdr = &b[off..off + header_size as usize];
    let payload_start = off + header_size as usize;
    let mut payload = &b[payload_start..payload_start + payload_size as usize];
    if flags & (FLAG_LZ4 | FLAG_ZSTD) != 0 {
        if compressed_size as u64 > payload_size {
            return Err(ImageError::new(
                at(0x10) as u64,
                format!("compressed size {compressed_size} exceeds the payload size {payload_size}"),
            ));
        }
        payload = &payload[..compressed_size as usize];
    }
    let obj_name = header_string(hdr, name_off, name_len)
        .map_err(|w| ImageError::new(at(0x20) as u64, format!("object name: {w}")))?;
    let ptxas_options = if options_offset != 0 {
        // The options block: u32 offset of the options string, u32 its length.
        let o = options_offset as usize;
        let s_off = read_u32(hdr, o, "ptxas options offset").map_err(|e| e.within(off as u64, "entry"))?;
        let s_len = read_u32(hdr, o + 4, "ptxas options length").map_err(|e| e.within(off as u64, "entry"))?;
        header_string(hdr, s_off, s_len)
            .map_err(|w| ImageError::new((off + o) as u64, format!("ptxas options: {w}")))?
    } else {
        None
    };
    Ok(Entry {
        offset: off,
        kind: EntryKind::from_raw(kind),
        entry_version,
        header_size,
        payload_size,
        compressed_size,
        code_version: (major, minor),
        arch,
        flags,
        decompressed_size,
        obj_name,
        ptxas_options,
        payload,
    })
}

/// A string inside the entry header (offset relative to the header start).
fn header_string(hdr: &[u8], off: u32, len: u32) -> std::result::Result<Option<String>, String> {
    if off == 0 || len == 0 {
        return Ok(None);
    }
    let (o, l) = (off as usize, len as usize);
    let s = o
        .checked_add(l)
        .and_then(|e| hdr.get(o..e))
        .ok_or_else(|| format!("{len} bytes at {off:#x} lie outside the {}-byte entry header", hdr.len()))?;
    let s = s.split(|&c| c == 0).next().unwrap_or(&[]);
    Ok(Some(String::from_utf8_lossy(s).into_owned()))
}

/// All containers of a `.nv_fatbin` section (or of any buffer holding
/// containers back to back). Zero padding between containers is skipped.
/// Returns each container with its offset in `b`; stops at the first error,
/// returning what was parsed before it with the error.
pub fn parse_containers(b: &[u8]) -> (Vec<(usize, Container<'_>)>, Option<ImageError>) {
    let mut out = Vec::new();
    let mut off = 0usize;
    loop {
        while off < b.len() && b[off] == 0 {
            off += 1;
        }
        if off >= b.len() {
            return (out, None);
        }
        match parse_container(&b[off..]) {
            Ok(c) => {
                let size = c.header.total_size() as usize;
                out.push((off, c));
                off += size;
            }
            Err(e) => {
                let n = out.len();
                return (out, Some(e.within(off as u64, &format!("fatbin container {n}"))));
            }
        }
    }
}
