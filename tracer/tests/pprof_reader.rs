//! A real pprof reader opens `tracer export --format pprof`: Go's `go tool
//! pprof` (Debian's golang-go, which `cargo xtask setup` installs) reads
//! the profile of tests/fixtures/stacks/train.jsonl and shows exactly its
//! samples (`-raw`), the idle time per function and source line (`-top
//! -lines`) and the launches per stack (`-traces`).
//!
//! Go is `go` on PATH, /usr/lib/go/bin/go, or TRACER_GO; the test fails
//! (never skips) without it.

mod command;

use std::path::{Path, PathBuf};
use std::process::Command;

use command::tracer;

fn go() -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let on_path = std::env::split_paths(&path).map(|d| d.join("go"));
    let candidates = std::env::var_os("TRACER_GO").map(PathBuf::from).into_iter().chain(on_path);
    for p in candidates.chain([PathBuf::from("/usr/lib/go/bin/go")]) {
        if p.is_file() {
            return p;
        }
    }
    panic!(
        "go missing (`go tool pprof` reads the profile): run `cargo xtask setup` (apt package golang-go) or set TRACER_GO"
    );
}

fn fixture() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/stacks/train.jsonl").to_string_lossy().into_owned()
}

/// `go tool pprof -symbolize=none ARGS FILE`'s stdout.
fn pprof(profile: &Path, args: &[&str]) -> String {
    let home = profile.parent().unwrap();
    let out = Command::new(go())
        .args(["tool", "pprof", "-symbolize=none"])
        .args(args)
        .arg(profile)
        .env("HOME", home)
        .env("GOCACHE", home.join("gocache"))
        .env("PPROF_TMPDIR", home)
        .output()
        .expect("run go tool pprof");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "go tool pprof {args:?}: {err}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn export(dir: &Path) -> PathBuf {
    let out = dir.join("train.pb.gz");
    let (code, _, err) = tracer(&["export", &fixture(), "--format", "pprof", "-o", out.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains(
            "6 samples, 4 stacks; 4 launches, 6 calls, gpu_time 30000 ns, gpu_idle 83000 ns, off_cpu 62000 ns"
        ),
        "{err}"
    );
    out
}

/// The lines of `text` after the one that starts with `header`, up to one that starts with `end`.
fn section<'a>(text: &'a str, header: &str, end: &str) -> Vec<&'a str> {
    text.lines().skip_while(|l| !l.starts_with(header)).skip(1).take_while(|l| !l.starts_with(end)).collect()
}

#[test]
fn go_pprof_reads_every_sample_exactly() {
    let dir = tempdir();
    let p = export(&dir);
    let raw = pprof(&p, &["-raw"]);
    let samples: Vec<String> = section(&raw, "Samples:", "Locations")
        .iter()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    assert_eq!(
        samples,
        [
            "launches/count calls/count gpu_time/nanoseconds gpu_idle/nanoseconds[dflt] off_cpu/nanoseconds",
            "2 2 20000 21000 0: 1 2 3 4",
            "pid:[100] stack:[1]",
            "1 1 5000 0 0: 1 5 3 4",
            "pid:[100] stack:[2]",
            "0 1 0 0 0: 6 7 3 4",
            "pid:[100] stack:[3]",
            "0 0 0 60000 60000: 8 9 10 11 4",
            "pid:[100] stack:[4]",
            "1 1 5000 2000 2000: 12",
            "pid:[100]",
            "0 1 0 0 0: 13",
            "pid:[100]",
        ]
    );
    let locations: Vec<String> = section(&raw, "Locations", "Mappings")
        .iter()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    assert_eq!(locations[9], "10: 0x0 load_batch /home/u/data.py:41 s=0");
    assert_eq!(locations[7], "8: 0x7f1000003000 M=3 read /usr/lib/x86_64-linux-gnu/libc.so.6:0 s=0");
    assert_eq!(locations[11], "12: 0x0 [no stack] :0 s=0");
    assert_eq!(locations.len(), 13);
    assert!(raw.contains("Comment: gpu_time: measured GPU activity"), "{raw}");
    let top = pprof(&p, &["-top"]);
    assert_eq!(top.lines().next(), Some("File: python3.11"), "the executable is the main binary:\n{top}");
}

#[test]
fn go_pprof_attributes_idle_time_and_launches_to_lines() {
    let dir = tempdir();
    let p = export(&dir);
    let top = pprof(&p, &["-top", "-lines", "-sample_index=gpu_idle", "-nodecount=100"]);
    assert!(top.contains("Total samples = 83us"), "{top}");
    // cum per line: the loader's read holds 60 of the 83 µs, the step's launch 21, a preemption without a stack 2
    let cum = |name: &str| -> String {
        let l = top.lines().find(|l| l.ends_with(name)).unwrap_or_else(|| panic!("no {name} in\n{top}"));
        l.split_whitespace().nth(3).unwrap().to_string()
    };
    assert_eq!(cum("load_batch /home/u/data.py:41"), "60us");
    assert_eq!(cum("main /home/u/train.py:38"), "60us");
    assert_eq!(cum("Model.step /home/u/train.py:20"), "21us");
    assert_eq!(cum("[no stack]"), "2us");
    assert_eq!(cum("main Programs/python.c:15"), "81us");
    let traces = pprof(&p, &["-traces", "-sample_index=launches"]);
    assert!(traces.contains("Total samples = 4"), "{traces}");
    let step20: Vec<&str> = section(&traces, "     stack:  1", "-----").iter().map(|l| l.trim()).collect();
    assert_eq!(step20, ["2   cuLaunchKernel", "Model.step", "main", "main"]);
}

/// A fresh directory under the target dir.
fn tempdir() -> PathBuf {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("pprof_reader.{}.{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The profile's GPU time and idle time per stack, as go tool pprof reads
/// them, are `tracer report --json`'s (its stacks section: by busy time, by
/// idle time), and the totals are the report's.
#[test]
fn go_pprof_agrees_with_tracer_report() {
    use std::collections::BTreeMap;
    let dir = tempdir();
    let p = export(&dir);
    let raw = pprof(&p, &["-raw"]);
    // stack id (None: no stack) -> (gpu_time, gpu_idle)
    let mut profile: BTreeMap<Option<u64>, (u64, u64)> = BTreeMap::new();
    let lines = section(&raw, "Samples:", "Locations");
    for pair in lines[1..].chunks(2) {
        let v: Vec<u64> = pair[0].split(':').next().unwrap().split_whitespace().map(|x| x.parse().unwrap()).collect();
        let stack = pair[1].split("stack:[").nth(1).map(|s| s.trim_end_matches(']').parse::<u64>().unwrap());
        let e = profile.entry(stack).or_default();
        e.0 += v[2];
        e.1 += v[3];
    }
    let (code, out, err) = tracer(&["report", &fixture(), "--json"]);
    assert_eq!(code, 0, "{err}");
    let r: serde_json::Value = serde_json::from_str(&out).unwrap();
    let s = &r["stacks"];
    let mut report: BTreeMap<Option<u64>, (u64, u64)> = BTreeMap::new();
    for row in s["by_busy"].as_array().unwrap() {
        report.entry(row["stacks"][0].as_u64()).or_default().0 += row["busy_ns"].as_u64().unwrap();
    }
    for part in s["by_idle"]["parts"].as_array().unwrap() {
        report.entry(part["stacks"][0].as_u64()).or_default().1 += part["ns"].as_u64().unwrap();
    }
    report.entry(Some(3)).or_default(); // the synchronization: no GPU time, no idle time
    assert_eq!(profile, report);
    assert_eq!(profile.values().map(|v| v.0).sum::<u64>(), s["busy_ns"].as_u64().unwrap());
    assert_eq!(profile.values().map(|v| v.1).sum::<u64>(), s["by_idle"]["total_ns"].as_u64().unwrap());
}

/// The output: never over a file without --force (one line naming it),
/// `-o -` the same gzip bytes on stdout, a trace without stacks a profile
/// of `[no stack]` samples with a note.
#[test]
fn output_rules_and_a_trace_without_stacks() {
    let dir = tempdir();
    let p = export(&dir);
    let first = std::fs::read(&p).unwrap();
    let (code, _, err) = tracer(&["export", &fixture(), "--format", "pprof", "-o", p.to_str().unwrap()]);
    assert_eq!(code, 1, "{err}");
    assert_eq!(err.trim(), format!("tracer: output file {} exists (use --force to overwrite)", p.display()));
    let (code, _, err) = tracer(&["export", &fixture(), "--format", "pprof", "-o", p.to_str().unwrap(), "--force"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(std::fs::read(&p).unwrap(), first);
    let out = Command::new(env!("CARGO_BIN_EXE_tracer"))
        .args(["export", &fixture(), "--format", "pprof", "-o", "-"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(out.stdout, first);
    let (code, _, err) = tracer(&["export", &fixture(), "--format", "pprof", "--host", "h"]);
    assert_eq!((code, err.trim()), (2, "tracer: --host applies to --format parquet only"));

    let plain: String = std::fs::read_to_string(fixture())
        .unwrap()
        .lines()
        .filter(|l| !l.contains("\"type\":\"stack\""))
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
            v.as_object_mut().unwrap().remove("stack");
            format!("{v}\n")
        })
        .collect();
    let trace = dir.join("plain.jsonl");
    std::fs::write(&trace, plain).unwrap();
    let (code, _, err) = tracer(&["export", trace.to_str().unwrap(), "--format", "pprof"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains(
            "(1 samples, 0 stacks; 4 launches, 6 calls, gpu_time 30000 ns, gpu_idle 83000 ns, off_cpu 62000 ns"
        ),
        "{err}"
    );
    assert!(err.contains("has no stack lines"), "{err}");
    let top = pprof(&dir.join("plain.pb.gz"), &["-top", "-sample_index=launches"]);
    assert!(
        top.lines()
            .any(|l| l.split_whitespace().collect::<Vec<_>>() == ["4", "100%", "100%", "4", "100%", "[no", "stack]"]),
        "{top}"
    );
}
