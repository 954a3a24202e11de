//! Memory probes, a debugging aid for a replay that goes wrong (`--probe
//! LINE:ADDR:LEN`): read LEN bytes at the recorded address ADDR, translated
//! to the replay's, right before the op of trace line LINE is submitted, in
//! every pass.

use anyhow::{Context as _, Result, bail};

/// One `--probe LINE:ADDR:LEN`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Probe {
    /// trace.jsonl line of the op before which memory is read.
    pub line: usize,
    /// Recorded address (translated through the address map when read).
    pub addr: u64,
    pub len: usize,
}

/// Largest probe, so that a typo cannot ask for gigabytes of pinned memory.
pub const MAX_PROBE_BYTES: usize = 1 << 20;

fn num(s: &str) -> Result<u64> {
    let s = s.trim();
    let v = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16),
        None => s.parse::<u64>(),
    };
    v.with_context(|| format!("{s:?} is not a number (decimal or 0x-hex)"))
}

impl std::str::FromStr for Probe {
    type Err = anyhow::Error;
    fn from_str(s: &str) -> Result<Probe> {
        let parts: Vec<&str> = s.split(':').collect();
        if parts.len() != 3 {
            bail!("probe {s:?}: expected LINE:ADDR:LEN (e.g. 2998:0x7f8ce3e3c000:128)");
        }
        let line = num(parts[0]).with_context(|| format!("probe {s:?}: LINE"))? as usize;
        let addr = num(parts[1]).with_context(|| format!("probe {s:?}: ADDR"))?;
        let len = num(parts[2]).with_context(|| format!("probe {s:?}: LEN"))? as usize;
        if line == 0 || len == 0 || len > MAX_PROBE_BYTES {
            bail!("probe {s:?}: LINE must be > 0 and LEN in 1..={MAX_PROBE_BYTES}");
        }
        Ok(Probe { line, addr, len })
    }
}

/// The probed bytes as text: little-endian i64 values when the length is a
/// multiple of 8 (index tensors, counters), else hex; at most 32 values.
pub fn render(bytes: &[u8]) -> String {
    if bytes.len().is_multiple_of(8) {
        let v: Vec<String> =
            bytes.chunks_exact(8).take(32).map(|c| i64::from_le_bytes(c.try_into().unwrap()).to_string()).collect();
        let more = if bytes.len() > 256 { " …" } else { "" };
        format!("i64 [{}]{more}", v.join(", "))
    } else {
        format!("hex {}", tracer_format::hex::preview(bytes, 128))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_probe() {
        let p: Probe = "2998:0x7f8ce3e3c000:128".parse().unwrap();
        assert_eq!(p, Probe { line: 2998, addr: 0x7f8c_e3e3_c000, len: 128 });
        let p: Probe = "12:4096:8".parse().unwrap();
        assert_eq!(p, Probe { line: 12, addr: 4096, len: 8 });
        let e = "12:0x10".parse::<Probe>().unwrap_err().to_string();
        assert_eq!(e, "probe \"12:0x10\": expected LINE:ADDR:LEN (e.g. 2998:0x7f8ce3e3c000:128)");
        let e = format!("{:#}", "12:0xzz:8".parse::<Probe>().unwrap_err());
        assert_eq!(
            e,
            "probe \"12:0xzz:8\": ADDR: \"0xzz\" is not a number (decimal or 0x-hex): invalid digit found in string"
        );
        let e = "0:0x10:8".parse::<Probe>().unwrap_err().to_string();
        assert_eq!(e, "probe \"0:0x10:8\": LINE must be > 0 and LEN in 1..=1048576");
        assert!("1:0x10:2000000".parse::<Probe>().is_err());
    }

    #[test]
    fn render_values() {
        let mut b = Vec::new();
        for v in [5i64, -1, 50256] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        assert_eq!(render(&b), "i64 [5, -1, 50256]");
        assert_eq!(render(&[0xab, 0x01, 0xff]), "hex ab01ff");
        let big = vec![0u8; 8 * 40];
        assert!(render(&big).ends_with("0] …"));
    }
}
