//! Facts about the machine for the trace header: host, kernel, NVIDIA driver
//! and GPUs (from /proc/driver/nvidia, no NVML needed), clocks.
use serde_json::{Value, json};

fn read_trim(path: &str) -> Option<String> {
    std::fs::read_to_string(path).ok().map(|s| s.trim().to_string())
}

pub fn hostname() -> String {
    read_trim("/proc/sys/kernel/hostname").unwrap_or_default()
}

pub fn kernel_release() -> String {
    read_trim("/proc/sys/kernel/osrelease").unwrap_or_default()
}

/// "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  ..." -> "580.159.04".
pub fn parse_driver_version(text: &str) -> Option<String> {
    let line = text.lines().find(|l| l.starts_with("NVRM version"))?;
    line.split_whitespace()
        .find(|w| w.chars().next().is_some_and(|c| c.is_ascii_digit()) && w.contains('.'))
        .map(str::to_string)
}

pub fn driver_version() -> Option<String> {
    parse_driver_version(&std::fs::read_to_string("/proc/driver/nvidia/version").ok()?)
}

/// GPU model names from /proc/driver/nvidia/gpus/*/information, in PCI
/// bus id order, each with its index in that order as `ordinal`: the CUDA
/// device ordinal of the lines' `device` under CUDA_DEVICE_ORDER=PCI_BUS_ID,
/// and under CUDA's default order on a machine of identical GPUs (unless
/// CUDA_VISIBLE_DEVICES renumbers them).
pub fn gpus() -> Vec<Value> {
    let mut v = Vec::new();
    let Ok(rd) = std::fs::read_dir("/proc/driver/nvidia/gpus") else { return v };
    let mut dirs: Vec<_> = rd.flatten().collect();
    dirs.sort_by_key(|d| d.file_name());
    for (ordinal, d) in dirs.into_iter().enumerate() {
        let info = std::fs::read_to_string(d.path().join("information")).unwrap_or_default();
        let model = info.lines().find_map(|l| l.strip_prefix("Model:")).map(|s| s.trim().to_string());
        v.push(json!({ "bus": d.file_name().to_string_lossy(), "model": model, "ordinal": ordinal }));
    }
    v
}

pub fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Civil UTC time from Unix seconds (Howard Hinnant's algorithm).
pub fn utc(secs: u64) -> (i64, u32, u32, u32, u32, u32) {
    let days = (secs / 86400) as i64;
    let rem = secs % 86400;
    let z = days + 719468;
    let era = z.div_euclid(146097);
    let doe = z.rem_euclid(146097);
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + (m <= 2) as i64;
    (y, m, d, (rem / 3600) as u32, (rem / 60 % 60) as u32, (rem % 60) as u32)
}

/// ISO-8601 UTC, e.g. 2026-11-22T12:00:00Z.
pub fn iso_utc(secs: u64) -> String {
    let (y, mo, d, h, mi, s) = utc(secs);
    format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}Z")
}

/// Compact form for file names: 20261122T120000Z.
pub fn compact_utc(secs: u64) -> String {
    let (y, mo, d, h, mi, s) = utc(secs);
    format!("{y:04}{mo:02}{d:02}T{h:02}{mi:02}{s:02}Z")
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn dates_and_driver() {
        assert_eq!(iso_utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(iso_utc(1_795_350_896), "2026-11-22T12:34:56Z");
        assert_eq!(compact_utc(951_782_400), "20000229T000000Z");
        let t = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  (dvs-builder@U22)  Thu Oct  9 2025\nGCC version:  gcc version 12";
        assert_eq!(parse_driver_version(t).as_deref(), Some("580.159.04"));
        assert_eq!(parse_driver_version("garbage"), None);
    }
}
