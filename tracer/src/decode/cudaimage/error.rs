//! The one error type of the image parsers: what was expected, and where.

use std::fmt;

/// A parse error: `offset` is relative to the start of the bytes the
/// outermost parser was given (the image, or the host ELF file), so that the
/// message points at the exact byte.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageError {
    pub offset: u64,
    pub what: String,
}

impl ImageError {
    pub fn new(offset: u64, what: impl Into<String>) -> Self {
        ImageError { offset, what: what.into() }
    }

    /// The same error seen from an enclosing structure that starts `base`
    /// bytes into the outer buffer, with a prefix naming that structure.
    pub fn within(self, base: u64, context: &str) -> Self {
        ImageError { offset: self.offset.saturating_add(base), what: format!("{context}: {}", self.what) }
    }
}

impl fmt::Display for ImageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at offset {:#x}: {}", self.offset, self.what)
    }
}

impl std::error::Error for ImageError {}

pub type Result<T> = std::result::Result<T, ImageError>;

/// Little-endian reads that fail with the offset and the name of the field.
pub(crate) fn read_u16(b: &[u8], off: usize, field: &str) -> Result<u16> {
    bytes::<2>(b, off, field).map(u16::from_le_bytes)
}

pub(crate) fn read_u32(b: &[u8], off: usize, field: &str) -> Result<u32> {
    bytes::<4>(b, off, field).map(u32::from_le_bytes)
}

pub(crate) fn read_u64(b: &[u8], off: usize, field: &str) -> Result<u64> {
    bytes::<8>(b, off, field).map(u64::from_le_bytes)
}

fn bytes<const N: usize>(b: &[u8], off: usize, field: &str) -> Result<[u8; N]> {
    off.checked_add(N).and_then(|end| b.get(off..end)).map(|s| s.try_into().expect("slice of length N")).ok_or_else(
        || {
            ImageError::new(
                off as u64,
                format!("truncated: {field} needs {N} bytes, only {} left", b.len().saturating_sub(off)),
            )
        },
    )
}
