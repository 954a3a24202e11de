//! Hex in traces: handles and addresses as `"0x7f3a00000000"` (lowercase,
//! no leading zeros, as `format!("{v:#x}")`), and byte strings (`params`,
//! SHA-256 digests) as lowercase hex, two digits a byte.

const DIGITS: &[u8; 16] = b"0123456789abcdef";

/// `0x…`, as `format!("{v:#x}")`: the text of a handle or address field.
pub fn addr(v: u64) -> String {
    format!("{v:#x}")
}

/// Appends `"0x…"` (quotes included: a JSON string) to `b`, as
/// `format!("\"{v:#x}\"")` but without allocating: the writer's fast path.
#[inline]
pub fn push_addr(b: &mut Vec<u8>, v: u64) {
    // `"0x` + at most 16 digits + `"`.
    let mut buf = [0u8; 20];
    let mut start = buf.len() - 1;
    buf[start] = b'"';
    let mut x = v;
    loop {
        start -= 1;
        buf[start] = DIGITS[(x & 15) as usize];
        x >>= 4;
        if x == 0 {
            break;
        }
    }
    start -= 3;
    buf[start..start + 3].copy_from_slice(b"\"0x");
    b.extend_from_slice(&buf[start..]);
}

/// A handle or address as traces and command lines give it: `0x…` or `0X…`
/// hex, or decimal. `None` for anything else (empty, out of range, other
/// characters).
pub fn parse_addr(s: &str) -> Option<u64> {
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

/// Lowercase hex, two digits a byte.
pub fn bytes(data: &[u8]) -> String {
    let mut b = Vec::with_capacity(data.len() * 2);
    push_bytes(&mut b, data);
    String::from_utf8(b).expect("hex digits are ASCII")
}

/// Appends [`bytes`]' text (without quotes) to `b`.
pub fn push_bytes(b: &mut Vec<u8>, data: &[u8]) {
    b.reserve(data.len() * 2);
    for &x in data {
        b.push(DIGITS[(x >> 4) as usize]);
        b.push(DIGITS[(x & 15) as usize]);
    }
}

/// The inverse of [`bytes`]; `None` on an odd length or a character that is
/// not a lowercase hex digit.
pub fn parse_bytes(s: &str) -> Option<Vec<u8>> {
    decode_bytes(s).ok()
}

/// [`parse_bytes`], saying why not: `odd number of hex digits (N)` or
/// `not a lowercase hex digit at character I`.
pub fn decode_bytes(s: &str) -> Result<Vec<u8>, String> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses() {
        assert_eq!(addr(0), "0x0");
        assert_eq!(addr(0x7f3a_0000_0000), "0x7f3a00000000");
        assert_eq!(addr(u64::MAX), "0xffffffffffffffff");
        for v in [0u64, 1, 0xf, 0x10, 0xdead_beef, u64::MAX, 1 << 63] {
            let mut b = b"x".to_vec();
            push_addr(&mut b, v);
            assert_eq!(String::from_utf8(b).unwrap(), format!("x\"{v:#x}\""));
            assert_eq!(parse_addr(&addr(v)), Some(v));
        }
        let mut b = Vec::new();
        push_addr(&mut b, 0x5000);
        assert_eq!(b, b"\"0x5000\"");
        assert_eq!(parse_addr("0x7f8cde000000"), Some(0x7f8c_de00_0000));
        assert_eq!(parse_addr("0X7F8CDE000000"), Some(0x7f8c_de00_0000));
        assert_eq!(parse_addr("0xAbC"), Some(0xabc));
        assert_eq!(parse_addr("12"), Some(12));
        assert_eq!(parse_addr("0"), Some(0));
        assert_eq!(parse_addr("18446744073709551615"), Some(u64::MAX));
        for bad in ["", "x", "0x", "0x10000000000000000", "18446744073709551616", "-1", "1f", "0xg", " 1", "0x 1"] {
            assert_eq!(parse_addr(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn byte_strings() {
        assert_eq!(bytes(&[0, 255, 16]), "00ff10");
        assert_eq!(bytes(&[]), "");
        assert_eq!(bytes(&[0x01, 0xab, 0xcd, 0xef]), "01abcdef");
        let all: Vec<u8> = (0..=255).collect();
        assert_eq!(parse_bytes(&bytes(&all)).unwrap(), all);
        let mut b = b"\"".to_vec();
        push_bytes(&mut b, &[0xde, 0xad]);
        assert_eq!(b, b"\"dead");
        assert_eq!(parse_bytes("00ff10"), Some(vec![0, 255, 16]));
        assert_eq!(parse_bytes(""), Some(vec![]));
        assert_eq!(parse_bytes("abc"), None);
        assert_eq!(parse_bytes("0g"), None);
        assert_eq!(parse_bytes("AB"), None);
        assert_eq!(decode_bytes("abc").unwrap_err(), "odd number of hex digits (3)");
        assert_eq!(decode_bytes("0G").unwrap_err(), "not a lowercase hex digit at character 1");
        assert_eq!(decode_bytes("AB").unwrap_err(), "not a lowercase hex digit at character 0");
        assert_eq!(decode_bytes("00 1").unwrap_err(), "not a lowercase hex digit at character 2");
    }
}
