//! SHA-256 in lowercase hex: the content address of a recording's images
//! and data (`images/<sha256>`, `data/<sha256>`).
use std::io::Read;
use std::path::Path;

use sha2::{Digest as _, Sha256};

/// SHA-256 of `b`, 64 lowercase hex digits.
pub fn sha256_hex(b: &[u8]) -> String {
    crate::hex::bytes(&Sha256::digest(b))
}

/// SHA-256 of everything `r` gives, 64 lowercase hex digits.
pub fn sha256_reader(mut r: impl Read) -> std::io::Result<String> {
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = match r.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        h.update(&buf[..n]);
    }
    Ok(crate::hex::bytes(&h.finalize()))
}

/// SHA-256 of a file's content, read in 1 MiB pieces.
pub fn sha256_file(p: &Path) -> std::io::Result<String> {
    sha256_reader(std::fs::File::open(p)?)
}

/// Whether `s` is a SHA-256 as this crate writes it: 64 lowercase hex digits.
pub fn is_sha256(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_digests() {
        const ABC: &str = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
        const EMPTY: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
        assert_eq!(sha256_hex(b"abc"), ABC);
        assert_eq!(sha256_hex(b""), EMPTY);
        // Larger than one read: the streaming digest is the digest of the whole.
        let big = vec![7u8; (1 << 20) + 3];
        assert_eq!(sha256_reader(&big[..]).unwrap(), sha256_hex(&big));
        let p = std::env::temp_dir().join(format!("tracer-format-digest-{}", std::process::id()));
        std::fs::write(&p, b"abc").unwrap();
        assert_eq!(sha256_file(&p).unwrap(), ABC);
        std::fs::remove_file(&p).unwrap();
        assert!(sha256_file(&p).is_err());
        assert!(is_sha256(ABC));
        assert!(!is_sha256(&ABC.to_uppercase()));
        assert!(!is_sha256(&ABC[1..]));
        assert!(!is_sha256(&format!("{}g", &ABC[1..])));
    }
}
