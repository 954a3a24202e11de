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

/// A handle or address as a JSON string value, `"0x…"` ([`addr`]).
pub fn json(v: u64) -> serde_json::Value {
    serde_json::Value::String(addr(v))
}

/// Handles as a JSON array of [`json`] strings.
pub fn json_list(v: &[u64]) -> serde_json::Value {
    serde_json::Value::Array(v.iter().map(|&h| json(h)).collect())
}

/// A handle or address field of a trace line: a [`parse_addr`] string or a
/// JSON number. `None` for anything else.
pub fn of_json(v: &serde_json::Value) -> Option<u64> {
    match v {
        serde_json::Value::String(s) => parse_addr(s),
        serde_json::Value::Number(n) => n.as_u64(),
        _ => None,
    }
}

/// The handle in string field `k` of `v` ([`parse_addr`]); `None` when it
/// is missing, not a string or not a handle.
pub fn field(v: &serde_json::Value, k: &str) -> Option<u64> {
    v.get(k).and_then(serde_json::Value::as_str).and_then(parse_addr)
}

/// The handles in array field `k` of `v` (its strings that [`parse_addr`]
/// reads, others skipped); empty when it is missing or not an array.
pub fn fields(v: &serde_json::Value, k: &str) -> Vec<u64> {
    v.get(k)
        .and_then(serde_json::Value::as_array)
        .map(|a| a.iter().filter_map(|x| x.as_str().and_then(parse_addr)).collect())
        .unwrap_or_default()
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

/// At most the first `max` bytes of `data` as [`bytes`], `…` after them
/// when there are more: a preview in messages.
pub fn preview(data: &[u8], max: usize) -> String {
    let s = bytes(&data[..data.len().min(max)]);
    if data.len() > max { format!("{s}…") } else { s }
}

/// A UUID's 16 bytes in memory order as nvidia-smi prints them (without
/// `GPU-`): [`bytes`] split 8-4-4-4-12; any other length plain [`bytes`].
pub fn uuid(data: &[u8]) -> String {
    let h = bytes(data);
    if h.len() != 32 {
        return h;
    }
    format!("{}-{}-{}-{}-{}", &h[0..8], &h[8..12], &h[12..16], &h[16..20], &h[20..32])
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
    fn json_values() {
        use serde_json::json;
        assert_eq!(json(0x7f3a_0000_0000), json!("0x7f3a00000000"));
        assert_eq!(json(0), json!("0x0"));
        assert_eq!(json_list(&[1, 0xab]), json!(["0x1", "0xab"]));
        assert_eq!(json_list(&[]), json!([]));
        assert_eq!(of_json(&json!("0x10")), Some(16));
        assert_eq!(of_json(&json!("16")), Some(16));
        assert_eq!(of_json(&json!(16)), Some(16));
        assert_eq!(of_json(&json!(-1)), None);
        assert_eq!(of_json(&json!(1.5)), None);
        assert_eq!(of_json(&json!("0xg")), None);
        assert_eq!(of_json(&json!(null)), None);
        let v = json!({"graph": "0x5000", "n": 7, "nodes": ["0x1", 2, "x", "0x3"]});
        assert_eq!(field(&v, "graph"), Some(0x5000));
        assert_eq!(field(&v, "n"), None);
        assert_eq!(field(&v, "missing"), None);
        assert_eq!(fields(&v, "nodes"), vec![1, 3]);
        assert_eq!(fields(&v, "graph"), Vec::<u64>::new());
        assert_eq!(fields(&v, "missing"), Vec::<u64>::new());
    }

    #[test]
    fn previews_and_uuids() {
        assert_eq!(preview(&[0xde, 0xad, 0xbe, 0xef], 4), "deadbeef");
        assert_eq!(preview(&[0xde, 0xad, 0xbe, 0xef], 2), "dead…");
        assert_eq!(preview(&[], 2), "");
        assert_eq!(preview(&[1, 2], 0), "…");
        let u: Vec<u8> = (0..16).collect();
        assert_eq!(uuid(&u), "00010203-0405-0607-0809-0a0b0c0d0e0f");
        assert_eq!(uuid(&[0xab, 0xcd]), "abcd");
        assert_eq!(uuid(&[]), "");
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
