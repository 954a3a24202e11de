//! The real recordings in traces/ (made on an H100, see traces/README.md)
//! parse completely and summarize to stable figures.
use std::process::Command;

fn summary(file: &str) -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../traces/").to_string() + file;
    let out = Command::new(env!("CARGO_BIN_EXE_tracer")).args(["summary", &path]).output().expect("run tracer summary");
    assert!(out.status.success(), "tracer summary {file}: {}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stderr.is_empty(), "warnings reading {file}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn transformer_recording_summary() {
    let s = summary("transformer_inference.jsonl.gz");
    assert!(s.contains("29290 driver calls in 1 process(es)"), "{s}");
    assert!(s.contains("22758 kernel launches (50 distinct kernels), 21 allocations (356.2 MiB), 2 frees"), "{s}");
    assert!(s.contains("copies h2d: 160 (237.4 MiB)"), "{s}");
    assert!(s.contains("copies d2d: 736 (38.3 MiB)"), "{s}");
    assert!(s.contains("records: 58678 received, 0 lost"), "{s}");
    assert!(!s.contains("unnamed handles"), "every launch has a kernel name: {s}");
}

#[test]
fn simple_recording_summary() {
    let s = summary("simple_inference.jsonl.gz");
    assert!(s.contains("88 kernel launches (2 distinct kernels)"), "{s}");
    assert!(s.contains("records: 3918 received, 0 lost"), "{s}");
}

#[test]
fn missing_and_corrupt_traces_are_clear_errors() {
    let dir = std::env::temp_dir().join(format!("tracer-rec-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.jsonl");
    std::fs::write(&bad, "{\"type\":\"header\"}\n{oops\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_tracer")).arg("summary").arg(&bad).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.jsonl: line 2: not valid JSON"), "{err}");
    let out = Command::new(env!("CARGO_BIN_EXE_tracer")).arg("summary").arg(dir.join("none.jsonl")).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot open trace"), "{:?}", out);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn transformer_ioctl_recording_analysis() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../traces/transformer_inference_ioctls.jsonl.gz");
    let out = Command::new(env!("CARGO_BIN_EXE_tracer")).args(["ioctls", "--json", path]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["total"], 635);
    assert_eq!(v["undecoded"], 0);
    assert_eq!(v["ioctl_path"], "tracepoint");
    let steady = &v["phases"]["steady"];
    assert_eq!(steady["ioctls"], 0, "steady-state generation makes no ioctl");
    assert_eq!(steady["launches"], 17340);
    assert_eq!(v["phases"]["startup"]["ioctls"], 495);
    assert!(v["errors"].as_object().unwrap().is_empty());
    let by_escape = v["by_escape"].as_array().unwrap();
    assert_eq!(by_escape[0]["name"], "RM_CONTROL");
    assert_eq!(by_escape[0]["count"], 250);
    let calls = v["by_cuda_call"].as_array().unwrap();
    let alloc = calls.iter().find(|c| c["name"] == "cuMemAlloc_v2").unwrap();
    assert_eq!(alloc["count"], 64);
}

/// Made with the defaults of 2026-11-22 (launches entry-only, NVML power,
/// markers) plus --gpu-timestamps: every line type of a recording.
#[test]
fn full_recording_summary() {
    let s = summary("transformer_inference_full.jsonl.gz");
    assert!(s.contains("29335 driver calls in 1 process(es)"), "{s}");
    assert!(s.contains("22758 kernel launches (50 distinct kernels), 21 allocations (356.2 MiB), 2 frees"), "{s}");
    // Entry-only launches: no duration to show.
    let launch = s.lines().find(|l| l.starts_with("cuLaunchKernel ")).expect("a cuLaunchKernel row");
    assert_eq!(launch.split_whitespace().collect::<Vec<_>>(), ["cuLaunchKernel", "16998", "–", "–", "0"], "{s}");
    assert!(!s.contains("unnamed handles"), "every launch has a kernel name: {s}");
}
