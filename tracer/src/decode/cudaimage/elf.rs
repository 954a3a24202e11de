//! Minimal, bounds-checked reader of 64-bit little-endian ELF files: the
//! section table, section names and the symbol table. Enough for cubins
//! (e_machine 190, EM_CUDA) and for finding `.nv_fatbin` in host libraries.

use super::error::{ImageError, Result, read_u16, read_u32, read_u64};

pub const ELF_MAGIC: [u8; 4] = [0x7f, b'E', b'L', b'F'];
pub const EM_CUDA: u16 = 190;
pub const SHT_NOBITS: u32 = 8;
pub const SHT_SYMTAB: u32 = 2;
const EHDR_SIZE: usize = 64;
const SHDR_SIZE: usize = 64;
const SYM_SIZE: usize = 24;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    pub index: usize,
    pub name: String,
    pub sh_type: u32,
    pub flags: u64,
    pub addr: u64,
    pub offset: u64,
    pub size: u64,
    pub link: u32,
    pub info: u32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Symbol {
    pub name: String,
    pub info: u8,
    pub other: u8,
    pub shndx: u16,
    pub value: u64,
    pub size: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Elf<'a> {
    pub data: &'a [u8],
    pub osabi: u8,
    pub abi_version: u8,
    pub e_type: u16,
    pub machine: u16,
    pub flags: u32,
    pub sections: Vec<Section>,
}

/// The header fields that give the extent of the section header table.
pub struct HeaderExtent {
    pub shoff: u64,
    pub shnum: u64,
    pub shentsize: u64,
    pub phoff: u64,
    pub phnum: u64,
    pub phentsize: u64,
}

pub fn check_ident(b: &[u8]) -> Result<()> {
    if b.len() < 4 || b[..4] != ELF_MAGIC {
        return Err(ImageError::new(0, "not an ELF file (magic 7f 45 4c 46 expected)"));
    }
    if b.len() < EHDR_SIZE {
        return Err(ImageError::new(0, format!("ELF header truncated: {} of {EHDR_SIZE} bytes", b.len())));
    }
    if b[4] != 2 || b[5] != 1 {
        return Err(ImageError::new(
            4,
            format!("ELF class {} / data {}: only 64-bit little-endian is supported", b[4], b[5]),
        ));
    }
    Ok(())
}

pub fn header_extent(b: &[u8]) -> Result<HeaderExtent> {
    check_ident(b)?;
    Ok(HeaderExtent {
        phoff: read_u64(b, 0x20, "e_phoff")?,
        shoff: read_u64(b, 0x28, "e_shoff")?,
        phentsize: read_u16(b, 0x36, "e_phentsize")? as u64,
        phnum: read_u16(b, 0x38, "e_phnum")? as u64,
        shentsize: read_u16(b, 0x3a, "e_shentsize")? as u64,
        shnum: read_u16(b, 0x3c, "e_shnum")? as u64,
    })
}

impl<'a> Elf<'a> {
    pub fn parse(b: &'a [u8]) -> Result<Elf<'a>> {
        let h = header_extent(b)?;
        let shstrndx = read_u16(b, 0x3e, "e_shstrndx")? as usize;
        let mut shnum = if h.shoff == 0 { 0 } else { h.shnum as usize };
        if h.shoff != 0 && h.shentsize as usize != SHDR_SIZE {
            return Err(ImageError::new(0x3a, format!("section header size {}, expected {SHDR_SIZE}", h.shentsize)));
        }
        let table_at = |i: usize| h.shoff as usize + i * SHDR_SIZE;
        if h.shoff != 0 && shnum == 0 {
            // More than 0xff00 sections: the count is in section 0's size.
            check_range(b, h.shoff, SHDR_SIZE as u64, "section header 0")?;
            shnum = read_u64(b, table_at(0) + 0x20, "section 0 size")? as usize;
        }
        if h.shoff != 0 {
            let len = (shnum as u64).saturating_mul(SHDR_SIZE as u64);
            check_range(b, h.shoff, len, "section header table")?;
        }
        let mut raw = Vec::with_capacity(shnum);
        for i in 0..shnum {
            let o = table_at(i);
            let s = Section {
                index: i,
                name: String::new(),
                sh_type: read_u32(b, o + 4, "sh_type")?,
                flags: read_u64(b, o + 8, "sh_flags")?,
                addr: read_u64(b, o + 0x10, "sh_addr")?,
                offset: read_u64(b, o + 0x18, "sh_offset")?,
                size: read_u64(b, o + 0x20, "sh_size")?,
                link: read_u32(b, o + 0x28, "sh_link")?,
                info: read_u32(b, o + 0x2c, "sh_info")?,
            };
            let name_off = read_u32(b, o, "sh_name")?;
            raw.push((s, name_off));
        }
        let mut elf = Elf {
            data: b,
            osabi: b[7],
            abi_version: b[8],
            e_type: read_u16(b, 0x10, "e_type")?,
            machine: read_u16(b, 0x12, "e_machine")?,
            flags: read_u32(b, 0x30, "e_flags")?,
            sections: Vec::with_capacity(shnum),
        };
        let strtab = if shstrndx < raw.len() && shstrndx != 0 {
            let s = &raw[shstrndx].0;
            Some(elf.bytes_of(s).map_err(|e| ImageError::new(e.offset, format!("section name table: {}", e.what)))?)
        } else {
            None
        };
        for (i, (mut s, name_off)) in raw.into_iter().enumerate() {
            if let Some(t) = strtab {
                s.name = c_str(t, name_off as usize).ok_or_else(|| {
                    ImageError::new(
                        table_at(i) as u64,
                        format!("section {i}: name offset {name_off:#x} outside the name table"),
                    )
                })?;
            }
            elf.sections.push(s);
        }
        Ok(elf)
    }

    /// A section's bytes (empty for NOBITS), checked against the file size.
    pub fn bytes_of(&self, s: &Section) -> Result<&'a [u8]> {
        if s.sh_type == SHT_NOBITS {
            return Ok(&[]);
        }
        check_range(self.data, s.offset, s.size, &format!("section {} ({})", s.index, s.name))?;
        Ok(&self.data[s.offset as usize..(s.offset + s.size) as usize])
    }

    pub fn section(&self, name: &str) -> Option<&Section> {
        self.sections.iter().find(|s| s.name == name)
    }

    /// Symbols of the section `symtab` (an SHT_SYMTAB), names resolved
    /// through its linked string table.
    pub fn symbols(&self, symtab: &Section) -> Result<Vec<Symbol>> {
        let data = self.bytes_of(symtab)?;
        let strs = self
            .sections
            .get(symtab.link as usize)
            .ok_or_else(|| {
                ImageError::new(symtab.offset, format!("symbol table links to missing section {}", symtab.link))
            })
            .and_then(|s| self.bytes_of(s))?;
        let n = data.len() / SYM_SIZE;
        let mut out = Vec::with_capacity(n);
        for i in 0..n {
            let o = i * SYM_SIZE;
            let name_off = read_u32(data, o, "st_name")?;
            out.push(Symbol {
                name: c_str(strs, name_off as usize).ok_or_else(|| {
                    ImageError::new(
                        symtab.offset + o as u64,
                        format!("symbol {i}: name offset {name_off:#x} outside the string table"),
                    )
                })?,
                info: data[o + 4],
                other: data[o + 5],
                shndx: read_u16(data, o + 6, "st_shndx")?,
                value: read_u64(data, o + 8, "st_value")?,
                size: read_u64(data, o + 16, "st_size")?,
            });
        }
        Ok(out)
    }
}

/// The extent of an ELF file from a prefix that holds its header and its
/// section header table (the contents need not be there).
pub fn extent_from_headers(b: &[u8]) -> Result<u64> {
    let h = header_extent(b)?;
    if h.shoff == 0 {
        return Ok(extent_of(b, &[]).unwrap_or(EHDR_SIZE as u64));
    }
    if h.shentsize as usize != SHDR_SIZE {
        return Err(ImageError::new(0x3a, format!("section header size {}, expected {SHDR_SIZE}", h.shentsize)));
    }
    let len = h.shnum.saturating_mul(SHDR_SIZE as u64);
    check_range(b, h.shoff, len, "section header table")?;
    let mut sections = Vec::with_capacity(h.shnum as usize);
    for i in 0..h.shnum as usize {
        let o = h.shoff as usize + i * SHDR_SIZE;
        sections.push(Section {
            index: i,
            name: String::new(),
            sh_type: read_u32(b, o + 4, "sh_type")?,
            flags: 0,
            addr: 0,
            offset: read_u64(b, o + 0x18, "sh_offset")?,
            size: read_u64(b, o + 0x20, "sh_size")?,
            link: 0,
            info: 0,
        });
    }
    Ok(extent_of(b, &sections).unwrap_or(b.len() as u64))
}

fn extent_of(b: &[u8], sections: &[Section]) -> Option<u64> {
    let h = header_extent(b).ok()?;
    let shnum = h.shnum.max(sections.len() as u64);
    let mut end = (EHDR_SIZE as u64)
        .max(h.shoff.saturating_add(shnum.saturating_mul(h.shentsize)))
        .max(h.phoff.saturating_add(h.phnum.saturating_mul(h.phentsize)));
    for s in sections {
        if s.sh_type != SHT_NOBITS {
            end = end.max(s.offset.saturating_add(s.size));
        }
    }
    Some(end)
}

fn check_range(b: &[u8], off: u64, len: u64, what: &str) -> Result<()> {
    match off.checked_add(len) {
        Some(end) if end <= b.len() as u64 => Ok(()),
        _ => Err(ImageError::new(
            off,
            format!("{what}: {len} bytes at {off:#x} run past the end of the {}-byte file", b.len()),
        )),
    }
}

fn c_str(t: &[u8], off: usize) -> Option<String> {
    let s = t.get(off..)?;
    let end = s.iter().position(|&c| c == 0)?;
    Some(String::from_utf8_lossy(&s[..end]).into_owned())
}
