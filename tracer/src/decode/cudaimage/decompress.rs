//! Decompression of compressed fatbin entries.
//!
//! Two schemes are in use (flags of the entry header, see fatbin.rs):
//! - 0x2000: LZ4 block format (no frame, no checksum), what nvcc used since
//!   CUDA 11 and what CUDA 13's `--compress-mode=speed` still writes;
//! - 0x8000: a Zstandard frame, the default of CUDA 12.8+/13
//!   (`--compress-mode=default|size|balance`).
//!
//! Both decoders write at most the size the entry header declares (itself
//! capped by [`MAX_DECOMPRESSED`]) and grow their output only as real data is
//! decoded, so a hostile header cannot make them allocate more than the
//! input can actually produce.

use std::io::Read as _;

use super::error::{ImageError, Result};

/// Largest decompressed entry accepted. The largest cubins of PyTorch,
/// cuBLAS and cuDNN are tens of MiB.
pub const MAX_DECOMPRESSED: u64 = 512 << 20;

/// LZ4 block decoder (https://github.com/lz4/lz4/blob/dev/doc/lz4_Block_format.md).
/// Fails unless the output is exactly `expected` bytes long. Error offsets are
/// relative to the start of `input`.
pub fn lz4_block(input: &[u8], expected: u64) -> Result<Vec<u8>> {
    check_cap(expected)?;
    let expected = expected as usize;
    // Each input byte yields at most 255 output bytes.
    let mut out = Vec::with_capacity(expected.min(input.len().saturating_mul(255)));
    let mut i = 0usize;
    while i < input.len() {
        let token_at = i;
        let token = input[i];
        i += 1;
        let lit = extended_len(input, &mut i, (token >> 4) as usize)?;
        let lit_end = i.checked_add(lit).filter(|&e| e <= input.len()).ok_or_else(|| {
            ImageError::new(
                token_at as u64,
                format!("lz4: {lit} literal bytes run past the end of the input ({} bytes)", input.len()),
            )
        })?;
        if out.len() + lit > expected {
            return Err(overflow(token_at, expected));
        }
        out.extend_from_slice(&input[i..lit_end]);
        i = lit_end;
        if i == input.len() {
            break; // the last sequence has literals only
        }
        let Some(off_bytes) = input.get(i..i + 2) else {
            return Err(ImageError::new(i as u64, "lz4: truncated match offset"));
        };
        let offset = u16::from_le_bytes([off_bytes[0], off_bytes[1]]) as usize;
        if offset == 0 || offset > out.len() {
            return Err(ImageError::new(
                i as u64,
                format!("lz4: match offset {offset} outside the {} bytes decoded so far", out.len()),
            ));
        }
        i += 2;
        let mlen = extended_len(input, &mut i, (token & 0xf) as usize)? + 4;
        if out.len() + mlen > expected {
            return Err(overflow(token_at, expected));
        }
        let start = out.len() - offset;
        for k in 0..mlen {
            let b = out[start + k];
            out.push(b);
        }
    }
    if out.len() != expected {
        return Err(ImageError::new(
            input.len() as u64,
            format!("lz4: decoded {} bytes, the entry header declares {expected}", out.len()),
        ));
    }
    Ok(out)
}

/// The LZ4 length extension: a nibble of 15 continues with bytes while they are 255.
fn extended_len(input: &[u8], i: &mut usize, nibble: usize) -> Result<usize> {
    let mut len = nibble;
    if nibble == 15 {
        loop {
            let Some(&b) = input.get(*i) else {
                return Err(ImageError::new(*i as u64, "lz4: truncated length"));
            };
            *i += 1;
            len = len.saturating_add(b as usize);
            if b != 255 {
                break;
            }
        }
    }
    Ok(len)
}

fn overflow(at: usize, expected: usize) -> ImageError {
    ImageError::new(at as u64, format!("lz4: output would exceed the {expected} bytes the entry header declares"))
}

fn check_cap(expected: u64) -> Result<()> {
    if expected > MAX_DECOMPRESSED {
        return Err(ImageError::new(
            0,
            format!("declared decompressed size {expected} exceeds the {MAX_DECOMPRESSED}-byte limit"),
        ));
    }
    Ok(())
}

/// One Zstandard frame, which must decode to exactly `expected` bytes.
pub fn zstd_frame(input: &[u8], expected: u64) -> Result<Vec<u8>> {
    check_cap(expected)?;
    check_zstd_window(input, expected)?;
    let mut src = input;
    let mut dec = ruzstd::decoding::StreamingDecoder::new(&mut src)
        .map_err(|e| ImageError::new(0, format!("zstd: bad frame header: {e}")))?;
    let mut out = Vec::with_capacity((expected as usize).min(input.len().saturating_mul(8)));
    // One byte more than declared, to detect frames that are longer.
    (&mut dec).take(expected + 1).read_to_end(&mut out).map_err(|e| ImageError::new(0, format!("zstd: {e}")))?;
    if out.len() as u64 != expected {
        return Err(ImageError::new(
            0,
            format!(
                "zstd: decoded {}{} bytes, the entry header declares {expected}",
                out.len(),
                if out.len() as u64 > expected { "+" } else { "" }
            ),
        ));
    }
    Ok(out)
}

/// Refuses frames whose window (the buffer the decoder allocates up front)
/// is far larger than the declared output: nvcc writes single-segment frames
/// (window = content size) or windows of at most twice the content.
fn check_zstd_window(input: &[u8], expected: u64) -> Result<()> {
    const MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];
    if input.len() < 6 || input[..4] != MAGIC {
        return Err(ImageError::new(0, "zstd: payload does not start with the frame magic 28 b5 2f fd"));
    }
    let fhd = input[4];
    let single_segment = fhd & 0x20 != 0;
    // The frame content size, when the header has one, must be the declared
    // size: the decoder sizes its window from it.
    let did_len = [0usize, 1, 2, 4][(fhd & 3) as usize];
    let fcs_len = match fhd >> 6 {
        0 if single_segment => 1,
        0 => 0,
        1 => 2,
        2 => 4,
        _ => 8,
    };
    let fcs_at = 5 + usize::from(!single_segment) + did_len;
    if fcs_len > 0 {
        let Some(f) = input.get(fcs_at..fcs_at + fcs_len) else {
            return Err(ImageError::new(4, "zstd: frame header truncated"));
        };
        let mut v = [0u8; 8];
        v[..fcs_len].copy_from_slice(f);
        let fcs = u64::from_le_bytes(v) + if fcs_len == 2 { 256 } else { 0 };
        if fcs != expected {
            return Err(ImageError::new(
                fcs_at as u64,
                format!("zstd: frame content size {fcs}, the entry header declares {expected}"),
            ));
        }
    }
    if single_segment {
        return Ok(()); // window = frame content size
    }
    let wd = input[5];
    let log = 10 + (wd >> 3) as u32;
    let base = 1u64 << log;
    let window = base + (base / 8) * (wd & 7) as u64;
    let limit = expected.max(1 << 20).saturating_mul(4);
    if window > limit {
        return Err(ImageError::new(5, format!("zstd: window of {window} bytes for a {expected}-byte entry")));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lz4_literals_and_overlapping_match() {
        // "abc" then a match of offset 3, length 6 → "abcabcabc", then literal "Z".
        let input = [0x32, b'a', b'b', b'c', 3, 0, 0x10, b'Z'];
        assert_eq!(lz4_block(&input, 10).unwrap(), b"abcabcabcZ");
    }

    #[test]
    fn lz4_long_lengths_use_extension_bytes() {
        // 15+3 = 18 literals, then offset 1, match 15+4+2 = 21.
        let mut input = vec![0xff, 3];
        input.extend(std::iter::repeat_n(b'x', 18));
        input.extend([1, 0, 2]);
        let out = lz4_block(&input, 39).unwrap();
        assert_eq!(out, vec![b'x'; 39]);
    }

    #[test]
    fn lz4_errors_name_the_offset() {
        let e = lz4_block(&[0x50, b'a'], 5).unwrap_err();
        assert_eq!(e.offset, 0);
        assert!(e.what.contains("literal bytes run past the end"), "{e}");
        let e = lz4_block(&[0x10, b'a', 2, 0], 10).unwrap_err();
        assert_eq!(e.offset, 2);
        assert!(e.what.contains("match offset 2 outside the 1 bytes"), "{e}");
        let e = lz4_block(&[0x10, b'a'], 2).unwrap_err();
        assert!(e.what.contains("decoded 1 bytes, the entry header declares 2"), "{e}");
        let e = lz4_block(&[0x30, b'a', b'b', b'c'], 2).unwrap_err();
        assert!(e.what.contains("exceed the 2 bytes"), "{e}");
    }

    #[test]
    fn caps_refuse_before_allocating() {
        let e = lz4_block(&[], MAX_DECOMPRESSED + 1).unwrap_err();
        assert!(e.what.contains("exceeds the"), "{e}");
        // Single segment, 1-byte content size 200 for a declared 10.
        let e = zstd_frame(&[0x28, 0xb5, 0x2f, 0xfd, 0x20, 200], 10).unwrap_err();
        assert_eq!(e.offset, 5);
        assert!(e.what.contains("frame content size 200, the entry header declares 10"), "{e}");
        let e = zstd_frame(&[0x28, 0xb5, 0x2f, 0xfd, 0x00, 0xff], 10).unwrap_err();
        assert_eq!(e.offset, 5);
        assert!(e.what.contains("window of"), "{e}");
        let e = zstd_frame(b"not zstd", 10).unwrap_err();
        assert!(e.what.contains("frame magic"), "{e}");
    }
}
