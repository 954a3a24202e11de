//! The capabilities `tracer record` needs (CAP_BPF and CAP_PERFMON, or
//! CAP_SYS_ADMIN), checked before anything is loaded.
use anyhow::bail;

/// Capability numbers (linux/capability.h).
pub const CAP_SYS_ADMIN: u32 = 21;

pub const CAP_PERFMON: u32 = 38;

pub const CAP_BPF: u32 = 39;

/// Which of the capabilities tracer needs are missing from `cap_eff`.
pub fn missing_caps(cap_eff: u64) -> Vec<&'static str> {
    let has = |c: u32| cap_eff & (1u64 << c) != 0;
    if has(CAP_SYS_ADMIN) && has(CAP_PERFMON) || has(CAP_BPF) && has(CAP_PERFMON) {
        return vec![];
    }
    let mut v = vec![];
    if !has(CAP_BPF) && !has(CAP_SYS_ADMIN) {
        v.push("CAP_BPF");
    }
    if !has(CAP_PERFMON) && !has(CAP_SYS_ADMIN) {
        v.push("CAP_PERFMON");
    }
    v
}

pub fn check_privileges() -> anyhow::Result<()> {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let eff = status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|h| u64::from_str_radix(h.trim(), 16).ok())
        .unwrap_or(0);
    let missing = missing_caps(eff);
    if !missing.is_empty() {
        bail!("tracer needs root (or CAP_BPF and CAP_PERFMON); missing {}: run it with sudo", missing.join(" and "));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capabilities() {
        assert!(missing_caps(u64::MAX).is_empty());
        assert_eq!(missing_caps(0), vec!["CAP_BPF", "CAP_PERFMON"]);
        assert!(missing_caps((1 << CAP_BPF) | (1 << CAP_PERFMON)).is_empty());
        assert_eq!(missing_caps(1 << CAP_BPF), vec!["CAP_PERFMON"]);
    }
}
