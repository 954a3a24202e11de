//! Parsers for CUDA code images: fatbin wrappers and containers, cubins
//! (ELF with `.nv.info` kernel attributes) and PTX text. Pure functions over
//! byte slices; see docs/cuda-images.md.

pub mod capture;
pub mod decompress;
pub mod elf;
pub mod error;
pub mod fatbin;
#[cfg(test)]
mod fuzz;
pub mod layouts;
pub mod nvinfo;
pub mod ptx;
pub mod report;
#[cfg(test)]
mod tests;

pub use error::{ImageError, Result};

/// What a buffer given to cuModuleLoadData & co. (or a file) starts with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Format {
    /// `__fatBinC_Wrapper_t` (magic 0x466243b1): points to a container.
    FatbinWrapper,
    /// Fatbin container (magic 0xBA55ED50).
    Fatbin,
    /// ELF with e_machine EM_CUDA.
    Cubin,
    /// Any other ELF: a host object or library, whose `.nv_fatbin` section
    /// holds the containers.
    HostElf,
    /// PTX source text.
    Ptx,
}

pub fn detect(b: &[u8]) -> Option<Format> {
    let magic = b.get(..4).map(|m| u32::from_le_bytes([m[0], m[1], m[2], m[3]]));
    match magic {
        Some(fatbin::WRAPPER_MAGIC) => return Some(Format::FatbinWrapper),
        Some(fatbin::FATBIN_MAGIC) => return Some(Format::Fatbin),
        _ => {}
    }
    if b.starts_with(&elf::ELF_MAGIC) {
        let machine = b.get(0x12..0x14).map(|m| u16::from_le_bytes([m[0], m[1]]));
        return Some(if machine == Some(elf::EM_CUDA) { Format::Cubin } else { Format::HostElf });
    }
    looks_like_ptx(b).then_some(Format::Ptx)
}

/// PTX modules start with comments, blank lines or directives (`.version`).
fn looks_like_ptx(b: &[u8]) -> bool {
    let head = &b[..b.len().min(4096)];
    let head = head.split(|&c| c == 0).next().unwrap_or(&[]);
    let Ok(text) = std::str::from_utf8(head) else {
        // A multi-byte character cut at 4096 bytes is still text.
        return std::str::from_utf8(&head[..head.len().saturating_sub(3)]).is_ok_and(|t| t.contains(".version"));
    };
    let mut rest = text.trim_start();
    while let Some(r) = rest.strip_prefix("//") {
        rest = r.split_once('\n').map(|x| x.1).unwrap_or("").trim_start();
    }
    rest.starts_with(".version") || (rest.starts_with('.') && text.contains(".version"))
}

/// How many bytes an image occupies, from a prefix of it: what the recorder
/// needs to copy a `cuModuleLoadData` image, whose size the call does not give.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Extent {
    /// The image is this many bytes long.
    Complete(u64),
    /// Read at least this many bytes from the start and ask again.
    NeedAtLeast(u64),
}

/// Largest image [`image_extent`] accepts: larger sizes come from corrupt headers.
pub const MAX_IMAGE: u64 = 4 << 30;

pub fn image_extent(prefix: &[u8]) -> Result<Extent> {
    let ext = match detect(prefix) {
        None if prefix.len() < 4 => return Ok(Extent::NeedAtLeast(4)),
        None => return Err(ImageError::new(0, "not a CUDA image (no fatbin, ELF or PTX signature)")),
        Some(Format::FatbinWrapper) => Extent::Complete(fatbin::WRAPPER_SIZE as u64),
        Some(Format::Fatbin) => {
            if prefix.len() < fatbin::HEADER_SIZE {
                return Ok(Extent::NeedAtLeast(fatbin::HEADER_SIZE as u64));
            }
            Extent::Complete(fatbin::parse_header(prefix)?.total_size())
        }
        Some(Format::Cubin) | Some(Format::HostElf) => {
            if prefix.len() < 64 {
                return Ok(Extent::NeedAtLeast(64));
            }
            let h = elf::header_extent(prefix)?;
            let table_end = h
                .shoff
                .checked_add(h.shnum.saturating_mul(h.shentsize))
                .ok_or_else(|| ImageError::new(0x28, "section header table offset overflows"))?;
            if (prefix.len() as u64) < table_end {
                Extent::NeedAtLeast(table_end)
            } else {
                Extent::Complete(elf::extent_from_headers(prefix)?)
            }
        }
        Some(Format::Ptx) => match prefix.iter().position(|&c| c == 0) {
            Some(n) => Extent::Complete(n as u64 + 1),
            None => Extent::NeedAtLeast(prefix.len() as u64 * 2),
        },
    };
    match ext {
        Extent::Complete(n) | Extent::NeedAtLeast(n) if n > MAX_IMAGE => {
            Err(ImageError::new(0, format!("image size {n} exceeds the {MAX_IMAGE}-byte limit: corrupt header?")))
        }
        e => Ok(e),
    }
}
