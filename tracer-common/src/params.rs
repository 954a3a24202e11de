//! Replayable recordings (`tracer record --replayable`): the kernel parameter
//! layouts userspace pushes to the eBPF side, the launch record that carries
//! a launch's parameter bytes, and the hash both sides use to find a
//! kernel's layout from its name.
//!
//! The chain, all in the kernel so that even a kernel's first launch,
//! microseconds after its handle was obtained, finds its layout:
//! 1. a load call's entry stops the thread (SIGSTOP); userspace reads the
//!    image, parses its layouts, fills [`layout_key`] -> layout id and
//!    `PENDING_IMAGE[tid] = image id`, and resumes the thread (SIGCONT);
//! 2. the load's return keys the returned CUmodule/CUlibrary by that image id;
//! 3. the return of cuModuleGetFunction / cuLibraryGetKernel hashes the name
//!    with the module's image id and keys the returned handle by the layout;
//! 4. a launch reads `kernelParams[0..n]` and, when the parameters lie
//!    within [`SPAN_CAP`] bytes of each other, the memory they span in one
//!    piece ([`status::SPAN`]; userspace cuts each parameter out to its
//!    offset with [`pack_span`]); further apart, it copies each to its
//!    offset itself ([`status::LAYOUT`]).
use crate::event::{BLOB_CAP, Header, MAX_ARGS};

/// Parameters per kernel the eBPF side copies one by one (the most seen in
/// PyTorch/cuBLAS/cuDNN's 403,341 kernels is 21, docs/cuda-images.md).
pub const MAX_PARAMS: usize = 64;
/// Largest parameter buffer captured: CUDA 12.1+ allows 32764 bytes.
pub const PARAMS_CAP: usize = 32768;
/// Bytes of a kernel name hashed (longer names: the first NAME_CAP - 1).
pub const NAME_CAP: usize = 4096;

/// One kernel's parameters, as the launch probe needs them.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Number of parameters (<= MAX_PARAMS).
    pub n: u32,
    /// Bytes of the parameter buffer (<= PARAMS_CAP - 4).
    pub size: u32,
    /// 1 when the parameters leave padding bytes (which the probe then
    /// zeroes first), 0 when they cover the buffer.
    pub padded: u32,
    /// `offset | size << 16` per parameter, in ordinal order.
    pub params: [u32; MAX_PARAMS],
}

impl Layout {
    pub const EMPTY: Layout = Layout { n: 0, size: 0, padded: 0, params: [0; MAX_PARAMS] };
}

/// What the launch record's `data` holds.
pub mod status {
    /// Copied from `kernelParams[i]` with the kernel's layout; padding zero.
    pub const LAYOUT: u32 = 1;
    /// The `CU_LAUNCH_PARAM_BUFFER_POINTER` buffer of `extra`.
    pub const EXTRA: u32 = 2;
    /// The function handle has no known layout.
    pub const NO_LAYOUT: u32 = 3;
    /// A user-memory read failed (`kernelParams`, a parameter, `extra`).
    pub const READ_FAILED: u32 = 4;
    /// More than MAX_PARAMS parameters.
    pub const TOO_MANY: u32 = 5;
    /// More than PARAMS_CAP - 4 bytes, or an `extra` without buffer/size.
    pub const TOO_BIG: u32 = 6;
    /// Neither `kernelParams` nor `extra` given although the kernel has
    /// parameters.
    pub const NONE_GIVEN: u32 = 7;
    /// `kernelParams[0..n]` (8 bytes each), then the memory from the lowest
    /// parameter address to the end of the highest (at most [`SPAN_CAP`]
    /// bytes): the parameters lie close together, and userspace cuts them
    /// out with the kernel's layout ([`pack_span`]) into a [`LAYOUT`]
    /// buffer. Never written to a trace.
    pub const SPAN: u32 = 8;
}

/// Parameters within this many bytes of each other are read by the launch
/// probe in one piece and sent as [`status::SPAN`].
pub const SPAN_CAP: usize = 4096;

/// A parameter's offset and size from its [`Layout::params`] word, as the
/// launch probe reads them.
#[inline(always)]
pub const fn param_at(word: u32) -> (usize, usize) {
    ((word & 0x7fff) as usize, ((word >> 16) & 0x7fff) as usize)
}

/// The parameter buffer of a [`status::SPAN`] record: `data` is the `n`
/// pointers of `kernelParams`, then the bytes from the lowest of them to the
/// end of the highest parameter. Each parameter is copied to its offset of
/// `out` (`lay.size` bytes, zeroed by the caller: padding stays 0), exactly
/// the buffer the probe would have built with [`status::LAYOUT`]. False
/// when `data` does not hold the pointers and a span that covers every
/// parameter, or `out` is not `lay.size` bytes.
pub fn pack_span(lay: &Layout, data: &[u8], out: &mut [u8]) -> bool {
    let n = lay.n as usize;
    if n == 0 || n > MAX_PARAMS || out.len() != lay.size as usize || data.len() < 8 * n {
        return false;
    }
    let (ptrs, span) = data.split_at(8 * n);
    let ptr = |i: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&ptrs[8 * i..8 * i + 8]);
        u64::from_le_bytes(w)
    };
    let lo = (0..n).map(ptr).min().unwrap_or(0);
    for i in 0..n {
        let (off, size) = param_at(lay.params[i]);
        let at = ptr(i) - lo;
        let (Some(src), Some(dst)) =
            (span.get(at as usize..(at as usize).saturating_add(size)), out.get_mut(off..off + size))
        else {
            return false;
        };
        dst.copy_from_slice(src);
    }
    true
}

/// A launch with its parameter bytes ([`crate::event::EventKind::LaunchParams`]).
/// Emitted instead of the CallEnter/CallEnterBlob record of launch
/// functions; only `PARAMS_OFFSET + len` bytes are sent.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct LaunchParams {
    pub hdr: Header,
    pub args: [u64; MAX_ARGS],
    /// The CUlaunchConfig blob (cuLaunchKernelEx), as in CallEnterBlob.
    pub blob_len: u32,
    pub nattrs: u32,
    pub blob: [u8; BLOB_CAP],
    /// Layout id used (0: none).
    pub layout: u32,
    /// [`status`].
    pub status: u32,
    /// Bytes of `data` that follow.
    pub len: u32,
    pub _pad: u32,
    /// The parameter buffer. Twice PARAMS_CAP so that the verifier can see
    /// that every `offset < PARAMS_CAP` plus `size < PARAMS_CAP` copy fits.
    pub data: [u8; 2 * PARAMS_CAP],
}

/// Bytes before [`LaunchParams::data`].
pub const PARAMS_OFFSET: usize = core::mem::offset_of!(LaunchParams, data);

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// Start of a [`layout_key`]: mixes in the image id.
#[inline(always)]
pub const fn key_start(image: u32) -> u64 {
    (FNV_OFFSET ^ image as u64).wrapping_mul(FNV_PRIME)
}

/// One 8-byte little-endian word of the name (the last one zero-padded).
#[inline(always)]
pub const fn key_word(h: u64, word: u64) -> u64 {
    (h ^ word).wrapping_mul(FNV_PRIME)
}

/// Mixes in the name's length.
#[inline(always)]
pub const fn key_end(h: u64, len: u64) -> u64 {
    let h = (h ^ len).wrapping_mul(FNV_PRIME);
    h ^ (h >> 29)
}

/// The key of `LAYOUT_BY_NAME`: a kernel name within one image. A
/// word-wise FNV-1a variant (8 bytes per step, so the eBPF side hashes a
/// 1.5 KiB C++ name in ~200 steps). Names longer than NAME_CAP - 1 bytes are
/// hashed on their first NAME_CAP - 1 bytes, as the eBPF side reads them.
pub fn layout_key(image: u32, name: &[u8]) -> u64 {
    let name = &name[..name.len().min(NAME_CAP - 1)];
    let mut h = key_start(image);
    let mut chunks = name.chunks(8);
    for c in &mut chunks {
        let mut w = [0u8; 8];
        w[..c.len()].copy_from_slice(c);
        h = key_word(h, u64::from_le_bytes(w));
    }
    key_end(h, name.len() as u64)
}

const _: () = assert!(PARAMS_OFFSET == 32 + 88 + 8 + BLOB_CAP + 16);
const _: () = assert!(PARAMS_OFFSET.is_multiple_of(8));
const _: () = assert!(core::mem::size_of::<Layout>() == 12 + 4 * MAX_PARAMS);

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(size: u32, params: &[(u32, u32)]) -> Layout {
        let mut l = Layout { n: params.len() as u32, size, padded: 1, params: [0; MAX_PARAMS] };
        for (slot, &(off, sz)) in l.params.iter_mut().zip(params) {
            *slot = off | sz << 16;
        }
        l
    }

    /// `n` pointers, then the span from the lowest one.
    fn span_record(ptrs: &[u64], span: &[u8]) -> [u8; 256] {
        let mut d = [0u8; 256];
        for (i, p) in ptrs.iter().enumerate() {
            d[8 * i..8 * i + 8].copy_from_slice(&p.to_le_bytes());
        }
        d[8 * ptrs.len()..8 * ptrs.len() + span.len()].copy_from_slice(span);
        d
    }

    #[test]
    fn span_cut_into_the_layout_buffer_with_zero_padding() {
        // A launch stub's locals: an int at 0x1008, a pointer at 0x1010 and
        // a char at 0x1000, passed in that order; the kernel's buffer is
        // int @0, pointer @8, char @16 (24 bytes: 4 + 7 bytes of padding).
        let lay = layout(24, &[(0, 4), (8, 8), (16, 1)]);
        let mut span = [0xeeu8; 24];
        span[8..12].copy_from_slice(&7u32.to_le_bytes());
        span[16..24].copy_from_slice(&0xdead_beef_0000_0001u64.to_le_bytes());
        span[0] = 0x5a;
        let rec = span_record(&[0x1008, 0x1010, 0x1000], &span);
        let mut out = [0u8; 24];
        assert!(pack_span(&lay, &rec[..3 * 8 + 24], &mut out));
        let mut want = [0u8; 24];
        want[0..4].copy_from_slice(&7u32.to_le_bytes());
        want[8..16].copy_from_slice(&0xdead_beef_0000_0001u64.to_le_bytes());
        want[16] = 0x5a;
        assert_eq!(out, want);
    }

    #[test]
    fn span_that_misses_a_parameter_is_refused() {
        let lay = layout(16, &[(0, 8), (8, 8)]);
        let rec = span_record(&[0x2000, 0x2008], &[1; 16]);
        let mut out = [0u8; 16];
        assert!(pack_span(&lay, &rec[..16 + 16], &mut out));
        // One byte short of the second parameter's end.
        assert!(!pack_span(&lay, &rec[..16 + 15], &mut out));
        // Not even the pointers.
        assert!(!pack_span(&lay, &rec[..15], &mut out));
        // A buffer of another size than the layout's.
        assert!(!pack_span(&lay, &rec[..32], &mut [0u8; 17]));
        // A parameter past the buffer's end.
        let bad = layout(12, &[(0, 8), (8, 8)]);
        assert!(!pack_span(&bad, &rec[..32], &mut [0u8; 12]));
        // No parameters: nothing to cut (the probe sends LAYOUT with 0 bytes).
        assert!(!pack_span(&layout(0, &[]), &rec, &mut []));
    }

    #[test]
    fn key_depends_on_every_byte_the_image_and_the_length() {
        let a = layout_key(1, b"k_struct");
        assert_eq!(a, layout_key(1, b"k_struct"));
        assert_ne!(a, layout_key(2, b"k_struct"));
        assert_ne!(a, layout_key(1, b"k_strucT"));
        assert_ne!(layout_key(1, b"ab"), layout_key(1, b"ab\0"));
        let long = [b'x'; 5000];
        assert_eq!(layout_key(3, &long), layout_key(3, &long[..NAME_CAP - 1]));
        assert_ne!(layout_key(3, &long[..NAME_CAP - 2]), layout_key(3, &long[..NAME_CAP - 1]));
    }
}
