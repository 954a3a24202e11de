//! Copying an image out of another process's memory, given only the pointer
//! a load call received (`cuModuleLoadData(image)` & co. pass no size).
//! The logic is here, the memory access behind [`Memory`], so that it tests
//! without a process (see procmem.rs for /proc/<pid>/mem).
//!
//! Reads grow step by step: 64 bytes tell the format; the fatbin header or
//! the ELF header + section table give the exact size; PTX is read in chunks
//! up to its NUL. A wrapper is followed once to its container.

use super::{Extent, Format, MAX_IMAGE, detect, fatbin, image_extent};

/// Reads `len` bytes at `addr` of the traced process. May return fewer
/// bytes when the range crosses the end of a mapping.
pub trait Memory {
    fn read(&mut self, addr: u64, len: usize) -> std::io::Result<Vec<u8>>;
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Captured {
    /// Where the image itself starts (the container's address when the
    /// pointer was a wrapper).
    pub addr: u64,
    pub format: Format,
    pub bytes: Vec<u8>,
    /// The wrapper the pointer designated, if it was one.
    pub wrapper: Option<fatbin::Wrapper>,
}

#[derive(Debug)]
pub enum CaptureError {
    /// The memory could not be read.
    Read { addr: u64, len: usize, err: std::io::Error },
    /// The bytes are not a (complete) image.
    Image { addr: u64, err: super::ImageError },
}

impl std::fmt::Display for CaptureError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CaptureError::Read { addr, len, err } => write!(f, "reading {len} bytes at {addr:#x}: {err}"),
            CaptureError::Image { addr, err } => write!(f, "image at {addr:#x}: {err}"),
        }
    }
}

impl std::error::Error for CaptureError {}

/// Bytes read first to tell the format.
const FIRST_READ: usize = 4096;
/// PTX is read in chunks of this size until its NUL.
const PTX_CHUNK: usize = 64 << 10;

fn read_exact(mem: &mut dyn Memory, addr: u64, len: usize) -> Result<Vec<u8>, CaptureError> {
    let mut out = mem.read(addr, len).map_err(|err| CaptureError::Read { addr, len, err })?;
    while out.len() < len {
        let at = addr + out.len() as u64;
        let more =
            mem.read(at, len - out.len()).map_err(|err| CaptureError::Read { addr: at, len: len - out.len(), err })?;
        if more.is_empty() {
            return Err(CaptureError::Read {
                addr: at,
                len: len - out.len(),
                err: std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "end of readable memory"),
            });
        }
        out.extend(more);
    }
    out.truncate(len);
    Ok(out)
}

/// Copies the image at `addr`.
pub fn capture(mem: &mut dyn Memory, addr: u64) -> Result<Captured, CaptureError> {
    let (format, bytes) = capture_one(mem, addr)?;
    if format != Format::FatbinWrapper {
        return Ok(Captured { addr, format, bytes, wrapper: None });
    }
    let w = fatbin::parse_wrapper(&bytes).map_err(|err| CaptureError::Image { addr, err })?;
    let (format, bytes) = capture_one(mem, w.data)?;
    if format != Format::Fatbin {
        return Err(CaptureError::Image {
            addr: w.data,
            err: super::ImageError::new(
                0,
                format!("the wrapper at {addr:#x} points to {format:?}, not a fatbin container"),
            ),
        });
    }
    Ok(Captured { addr: w.data, format, bytes, wrapper: Some(w) })
}

fn capture_one(mem: &mut dyn Memory, addr: u64) -> Result<(Format, Vec<u8>), CaptureError> {
    let image_err = |err| CaptureError::Image { addr, err };
    // The first bytes (enough for PTX's comment header before `.version`);
    // a short read is fine here (a small image at the end of a mapping).
    let mut buf = mem.read(addr, FIRST_READ).map_err(|err| CaptureError::Read { addr, len: FIRST_READ, err })?;
    let format = detect(&buf)
        .ok_or_else(|| image_err(super::ImageError::new(0, "not a CUDA image (no fatbin, ELF or PTX signature)")))?;
    if format == Format::Ptx {
        while !buf.contains(&0) {
            if buf.len() as u64 >= MAX_IMAGE {
                return Err(image_err(super::ImageError::new(0, "PTX without a NUL in the first 4 GiB")));
            }
            let at = addr + buf.len() as u64;
            let more = mem.read(at, PTX_CHUNK);
            match more {
                Ok(m) if !m.is_empty() => buf.extend(m),
                Ok(_) | Err(_) => {
                    let why = more.err().map(|e| format!(" ({e})")).unwrap_or_default();
                    return Err(image_err(super::ImageError::new(
                        buf.len() as u64,
                        format!("PTX text runs to the end of readable memory without a NUL{why}"),
                    )));
                }
            }
        }
    }
    loop {
        match image_extent(&buf).map_err(image_err)? {
            Extent::Complete(n) => {
                let n = n as usize;
                if buf.len() < n {
                    let rest = read_exact(mem, addr + buf.len() as u64, n - buf.len())?;
                    buf.extend(rest);
                }
                buf.truncate(n);
                return Ok((format, buf));
            }
            Extent::NeedAtLeast(n) => {
                let n = n as usize;
                if n <= buf.len() {
                    return Err(image_err(super::ImageError::new(0, "image size undecidable")));
                }
                let rest = read_exact(mem, addr + buf.len() as u64, n - buf.len())?;
                buf.extend(rest);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake address space: (start, bytes) regions.
    struct Fake(Vec<(u64, Vec<u8>)>, usize);

    impl Memory for Fake {
        fn read(&mut self, addr: u64, len: usize) -> std::io::Result<Vec<u8>> {
            self.1 += 1;
            for (start, b) in &self.0 {
                if addr >= *start && addr < start + b.len() as u64 {
                    let off = (addr - start) as usize;
                    return Ok(b[off..(off + len).min(b.len())].to_vec());
                }
            }
            Err(std::io::Error::from_raw_os_error(libc::EIO))
        }
    }

    const CUBIN: &[u8] =
        include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/cuda/kernels.sm_90.cubin"));
    const FAT: &[u8] =
        include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/cuda/kernels.compress-all.fatbin"));
    const PTX: &[u8] =
        include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/cuda/kernels.compute_80.ptx"));

    fn with_tail(b: &[u8]) -> Vec<u8> {
        let mut v = b.to_vec();
        v.extend(std::iter::repeat_n(0xab, 100_000)); // what follows in memory
        v
    }

    #[test]
    fn cubin_and_fatbin_are_cut_at_their_real_size() {
        let mut m = Fake(vec![(0x1000, with_tail(CUBIN)), (0x100000, with_tail(FAT))], 0);
        let c = capture(&mut m, 0x1000).unwrap();
        assert_eq!((c.format, c.bytes.as_slice()), (Format::Cubin, CUBIN));
        let f = capture(&mut m, 0x100000).unwrap();
        assert_eq!((f.format, f.bytes.as_slice(), f.addr), (Format::Fatbin, FAT, 0x100000));
    }

    #[test]
    fn wrapper_is_followed_to_its_container() {
        let mut w = fatbin::WRAPPER_MAGIC.to_le_bytes().to_vec();
        w.extend(1u32.to_le_bytes());
        w.extend(0x200000u64.to_le_bytes());
        w.extend(0u64.to_le_bytes());
        let mut m = Fake(vec![(0x5000, w), (0x200000, FAT.to_vec())], 0);
        let c = capture(&mut m, 0x5000).unwrap();
        assert_eq!(c.addr, 0x200000);
        assert_eq!(c.bytes, FAT);
        assert_eq!(c.wrapper.unwrap().data, 0x200000);
    }

    #[test]
    fn ptx_is_read_up_to_its_nul_across_chunks() {
        let mut big = Vec::new();
        while big.len() < 3 * PTX_CHUNK {
            big.extend_from_slice(PTX);
        }
        big.push(0);
        let want = big.clone();
        big.extend(b"after the NUL");
        let mut m = Fake(vec![(0x9000, big)], 0);
        let c = capture(&mut m, 0x9000).unwrap();
        assert_eq!(c.format, Format::Ptx);
        assert_eq!(c.bytes, want);
    }

    #[test]
    fn unreadable_or_truncated_memory_is_an_error() {
        // The container is cut by the end of the mapping.
        let mut m = Fake(vec![(0x1000, FAT[..4000].to_vec())], 0);
        let e = capture(&mut m, 0x1000).unwrap_err().to_string();
        assert!(e.starts_with("reading 3368 bytes at 0x1fa0: "), "{e}");
        let mut m = Fake(vec![], 0);
        let e = capture(&mut m, 0x1000).unwrap_err().to_string();
        assert!(e.starts_with("reading 4096 bytes at 0x1000: "), "{e}");
        let mut m = Fake(vec![(0x1000, b"hello world, not an image".to_vec())], 0);
        let e = capture(&mut m, 0x1000).unwrap_err().to_string();
        assert_eq!(e, "image at 0x1000: at offset 0x0: not a CUDA image (no fatbin, ELF or PTX signature)");
        let mut m = Fake(vec![(0x1000, b".version 9.0\n.target sm_90".to_vec())], 0);
        let e = capture(&mut m, 0x1000).unwrap_err().to_string();
        assert!(e.contains("PTX text runs to the end of readable memory"), "{e}");
    }
}
