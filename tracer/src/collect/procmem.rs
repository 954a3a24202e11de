//! Reading another process's memory through /proc/<pid>/mem (needs the
//! same rights as ptrace: root, or the same user with ptrace_scope 0), for
//! copying CUDA images out of traced processes (cudaimage::capture).
use std::fs::File;
use std::os::unix::fs::FileExt as _;

use crate::decode::cudaimage::capture::Memory;

pub struct ProcMem {
    file: File,
}

impl ProcMem {
    pub fn open(pid: u32) -> std::io::Result<Self> {
        Ok(ProcMem { file: File::open(format!("/proc/{pid}/mem"))? })
    }
}

/// Reads are done in pieces of this size, so that a bogus length costs no
/// more memory than the bytes that really are there.
const PIECE: usize = 16 << 20;

impl Memory for ProcMem {
    fn read(&mut self, addr: u64, len: usize) -> std::io::Result<Vec<u8>> {
        let mut out = Vec::new();
        while out.len() < len {
            let want = (len - out.len()).min(PIECE);
            let start = out.len();
            out.resize(start + want, 0);
            let at = addr + start as u64;
            let n = match self.file.read_at(&mut out[start..], at) {
                Ok(n) => n,
                // Past the end of a mapping: what was read so far is the answer.
                Err(e) if start > 0 && e.raw_os_error() == Some(libc::EIO) => 0,
                Err(e) => return Err(e),
            };
            out.truncate(start + n);
            if n < want {
                break;
            }
        }
        Ok(out)
    }
}

/// Reads the spans `(address, length)` of process `pid`, one after the other, into `buf` (as
/// long as their lengths together) with one `process_vm_readv`: the bytes read, which stop at
/// the first span the process has not mapped (`EFAULT` when that is the first).
pub fn read_spans(pid: u32, spans: &[(u64, usize)], buf: &mut [u8]) -> std::io::Result<usize> {
    assert_eq!(spans.iter().map(|s| s.1).sum::<usize>(), buf.len(), "the spans fill the buffer");
    let local = libc::iovec { iov_base: buf.as_mut_ptr() as *mut libc::c_void, iov_len: buf.len() };
    let remote: Vec<libc::iovec> =
        spans.iter().map(|&(a, n)| libc::iovec { iov_base: a as *mut libc::c_void, iov_len: n }).collect();
    // SAFETY: the local iovec is `buf`, alive for the call; the remote ones are only read by the
    // kernel, from process `pid`.
    let n = unsafe { libc::process_vm_readv(pid as libc::pid_t, &local, 1, remote.as_ptr(), remote.len() as _, 0) };
    if n < 0 { Err(std::io::Error::last_os_error()) } else { Ok(n as usize) }
}

/// Reads up to STR_CAP bytes of a C string from /proc/PID/mem.
pub fn read_proc_string(pid: u32, addr: u64) -> Option<String> {
    use std::os::unix::fs::FileExt as _;
    let f = std::fs::File::open(format!("/proc/{pid}/mem")).ok()?;
    let mut buf = vec![0u8; tracer_common::event::STR_CAP];
    let n = f.read_at(&mut buf, addr).ok()?;
    let end = buf[..n].iter().position(|&b| b == 0)?;
    Some(String::from_utf8_lossy(&buf[..end]).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::cudaimage::{Format, capture::capture, fatbin};

    const FAT: &[u8] =
        include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/cuda/kernels.compress-all.fatbin"));

    #[test]
    fn captures_an_image_from_this_process() {
        let mut mem = ProcMem::open(std::process::id()).unwrap();
        let mut buf = FAT.to_vec();
        buf.extend(std::iter::repeat_n(0x5a, 4096));
        let c = capture(&mut mem, buf.as_ptr() as u64).unwrap();
        assert_eq!((c.format, c.bytes.as_slice()), (Format::Fatbin, FAT));

        // Through a wrapper, as __cudaRegisterFatBinary receives it.
        let mut w = fatbin::WRAPPER_MAGIC.to_le_bytes().to_vec();
        w.extend(1u32.to_le_bytes());
        w.extend((buf.as_ptr() as u64).to_le_bytes());
        w.extend(0u64.to_le_bytes());
        let c = capture(&mut mem, w.as_ptr() as u64).unwrap();
        assert_eq!(c.bytes, FAT);
        assert_eq!(c.addr, buf.as_ptr() as u64);
    }

    #[test]
    fn unmapped_address_is_an_error() {
        let mut mem = ProcMem::open(std::process::id()).unwrap();
        let e = capture(&mut mem, 8).unwrap_err().to_string();
        assert!(e.starts_with("reading 4096 bytes at 0x8: "), "{e}");
    }
}
