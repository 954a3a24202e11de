//! Hex strings of the trace: `"0x7f3a00000000"` handles and addresses, and the
//! lowercase hex of parameter buffers.

/// `"0x…"` (or plain decimal) to u64; `None` for anything else.
pub fn parse_addr(s: &str) -> Option<u64> {
    if let Some(h) = s.strip_prefix("0x") { u64::from_str_radix(h, 16).ok() } else { s.parse().ok() }
}

/// Lowercase hex (two digits a byte) to bytes, or why not.
pub fn decode(s: &str) -> Result<Vec<u8>, String> {
    let b = s.as_bytes();
    if !b.len().is_multiple_of(2) {
        return Err(format!("odd number of hex digits ({})", b.len()));
    }
    let mut out = Vec::with_capacity(b.len() / 2);
    for (i, pair) in b.chunks_exact(2).enumerate() {
        let hi = digit(pair[0]).ok_or_else(|| format!("not a lowercase hex digit at character {}", 2 * i))?;
        let lo = digit(pair[1]).ok_or_else(|| format!("not a lowercase hex digit at character {}", 2 * i + 1))?;
        out.push(hi << 4 | lo);
    }
    Ok(out)
}

fn digit(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    }
}

pub fn encode(b: &[u8]) -> String {
    const D: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(b.len() * 2);
    for &x in b {
        s.push(D[(x >> 4) as usize] as char);
        s.push(D[(x & 15) as usize] as char);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_errors() {
        assert_eq!(decode("00ff10").unwrap(), vec![0, 255, 16]);
        assert_eq!(encode(&[0, 255, 16]), "00ff10");
        assert_eq!(decode("abc").unwrap_err(), "odd number of hex digits (3)");
        assert_eq!(decode("0G").unwrap_err(), "not a lowercase hex digit at character 1");
        assert_eq!(decode("AB").unwrap_err(), "not a lowercase hex digit at character 0");
        assert_eq!(parse_addr("0x7f8cde000000"), Some(0x7f8c_de00_0000));
        assert_eq!(parse_addr("12"), Some(12));
        assert_eq!(parse_addr("x"), None);
    }
}
