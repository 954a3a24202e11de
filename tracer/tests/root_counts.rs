//! `tracer record --counts` on the fake libcuda: the functions probed
//! entry-only by default are counted in the kernel (no lines), with exact
//! counts per function and per kernel, kernel names resolved from the
//! recorded cuModuleGetFunction / cuLibraryGetKernel calls; every other
//! call is recorded as without --counts; the readers read the trace.
//!
//! `sudo -E TRACER_ROOT_TESTS=1 cargo test -p tracer --test root_counts -- --test-threads=1`.
mod common;

use std::collections::BTreeMap;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

fn counted(t: &common::Traced) -> Vec<String> {
    t.header()["counted_functions"].as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_string()).collect()
}

/// type, op and name of the lines that are calls (not count lines).
fn call_shapes(t: &common::Traced) -> Vec<String> {
    t.calls()
        .filter(|l| !matches!(l["type"].as_str(), Some("count" | "kernel_count" | "power" | "marker")))
        .map(|l| format!("{} {} {}", l["type"], l["op"], l["name"]))
        .collect()
}

#[test]
fn counts_replace_the_hot_lines_and_match_a_full_recording() {
    if !common::root_tests_enabled() {
        return;
    }
    let limit = Duration::from_secs(180);
    let full = common::trace_with("counts-full", &["--no-power"], &["all"], &[], limit);
    assert_eq!(full.code(), 0, "{}", full.describe());
    let t = common::trace_with("counts", &["--no-power", "--counts"], &["all"], &[], limit);
    assert_eq!(t.code(), 0, "{}", t.describe());
    assert_eq!(t.lost(), 0);
    assert_eq!(t.footer()["kernel_counts_without_room"], 0);
    let names = counted(&t);
    for f in ["cuLaunchKernel", "cuLaunchKernel_ptsz", "cuLaunchKernelEx", "cuEventRecord", "cuStreamWaitEvent"] {
        assert!(names.iter().any(|n| n == f), "{f} not in counted_functions {names:?}");
    }
    assert!(full.header()["counted_functions"].as_array().unwrap().is_empty());
    // No line of a counted function; one count line per counted function
    // called, with the number of lines the full recording has.
    let mut want: BTreeMap<String, u64> = BTreeMap::new();
    for l in full.calls() {
        if let Some(n) = l["name"].as_str().filter(|n| names.iter().any(|c| c == n)) {
            *want.entry(n.to_string()).or_default() += 1;
        }
    }
    assert!(want["cuLaunchKernel"] >= 2, "{want:?}");
    let got: BTreeMap<String, u64> = t
        .lines
        .iter()
        .filter(|l| l["type"] == "count")
        .map(|l| (l["name"].as_str().unwrap().to_string(), l["calls"].as_u64().unwrap()))
        .collect();
    assert_eq!(got, want);
    for l in t.calls().filter(|l| !matches!(l["type"].as_str(), Some("count" | "kernel_count"))) {
        assert!(!names.iter().any(|n| l["name"] == n.as_str()), "a line of a counted function: {l}");
    }
    // Launches per (function, kernel name): the kernel_count lines against
    // the launch lines of the full recording.
    let mut want_k: BTreeMap<(String, String), u64> = BTreeMap::new();
    for l in full.calls().filter(|l| l["op"] == "launch" && l["kernel"].is_string()) {
        let n = l["name"].as_str().unwrap();
        if names.iter().any(|c| c == n) {
            *want_k.entry((n.to_string(), l["kernel"].as_str().unwrap().to_string())).or_default() += 1;
        }
    }
    let pid = t.header()["pid"].as_u64();
    let mut got_k: BTreeMap<(String, String), u64> = BTreeMap::new();
    for l in t.lines.iter().filter(|l| l["type"] == "kernel_count") {
        assert_eq!(l["pid"].as_u64(), pid, "{l}");
        let k = l["kernel"].as_str().unwrap_or_else(|| panic!("kernel not named: {l}"));
        *got_k.entry((l["name"].as_str().unwrap().to_string(), k.to_string())).or_default() +=
            l["launches"].as_u64().unwrap();
    }
    assert!(!want_k.is_empty());
    assert_eq!(got_k, want_k);
    // Every other call is recorded as without --counts, in the same order.
    let rest: Vec<String> =
        call_shapes(&full).into_iter().filter(|s| !names.iter().any(|n| s.ends_with(&format!("\"{n}\"")))).collect();
    assert_eq!(call_shapes(&t), rest);
    // The readers take the trace (count lines are not calls).
    for sub in ["summary", "report"] {
        let o = Command::new(common::tracer_bin()).arg(sub).arg(&t.out).output().unwrap();
        assert!(o.status.success(), "tracer {sub}: {}", String::from_utf8_lossy(&o.stderr));
    }
    full.cleanup();
    t.cleanup();
}

/// Two threads launching 5,000 + 1,000 times each, one kernel handle per
/// thread: exact counts from every CPU.
#[test]
fn counts_are_exact_across_threads() {
    if !common::root_tests_enabled() {
        return;
    }
    let bench = common::fake_program("bench");
    let out = common::fresh_output("counts-threads");
    let f = common::fake();
    let mut c = Command::new(common::tracer_bin());
    c.arg("-o").arg(&out).args(["--libcuda"]).arg(&f.lib).args(["--no-power", "--counts", "--"]);
    c.arg(&bench).args(["calls", "launch", "5000", "2"]).stdin(Stdio::null()).stdout(Stdio::null());
    c.stderr(Stdio::from(std::fs::File::create(out.with_extension("stderr")).unwrap()));
    let mut child = c.spawn().unwrap();
    let st = common::wait_with_timeout(&mut child, Duration::from_secs(120), false, "tracer --counts bench");
    let t = common::finish(out, st, Duration::ZERO);
    assert_eq!(t.code(), 0, "{}", t.describe());
    let counts: Vec<&Value> = t.lines.iter().filter(|l| l["type"] == "count").collect();
    assert_eq!(counts.len(), 1, "{counts:?}");
    assert_eq!((counts[0]["name"].as_str(), counts[0]["calls"].as_u64()), (Some("cuLaunchKernel"), Some(12_000)));
    let mut k: Vec<(String, u64)> = t
        .lines
        .iter()
        .filter(|l| l["type"] == "kernel_count")
        .map(|l| (l["handle"].as_str().unwrap().to_string(), l["launches"].as_u64().unwrap()))
        .collect();
    k.sort();
    assert_eq!(k, [("0x7f0000001000".to_string(), 6000), ("0x7f0000001001".to_string(), 6000)]);
    let kinds = |l: &&Value| !matches!(l["type"].as_str(), Some("count" | "kernel_count"));
    assert_eq!(t.calls().filter(kinds).filter(|l| l["name"] == "cuLaunchKernel").count(), 0);
    t.cleanup();
}
