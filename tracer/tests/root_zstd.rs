//! zstd-compressed recordings (`-o TRACE.jsonl.zst`, `--compress zstd`),
//! end to end on the fake libcuda: the same lines as a plain recording, a
//! standard zstd stream, read by tracer's readers, and a recording killed
//! with SIGKILL readable up to its last flush.
//!
//! `sudo -E TRACER_ROOT_TESTS=1 cargo test -p tracer --test root_zstd -- --test-threads=1`.
mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

fn zst_output(tag: &str) -> PathBuf {
    common::fresh_output(tag).with_extension("jsonl.zst")
}

/// The decoded lines of a .zst trace, and whether the stream was complete.
fn decode(p: &Path) -> (Vec<Value>, bool) {
    let mut text = Vec::new();
    let mut d = zstd::stream::read::Decoder::new(std::fs::File::open(p).unwrap()).unwrap();
    let complete = std::io::Read::read_to_end(&mut d, &mut text).is_ok();
    let lines = text
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).unwrap_or_else(|e| panic!("{}: {e}", String::from_utf8_lossy(l))))
        .collect();
    (lines, complete)
}

/// type, op, name and the fields that do not depend on the run.
fn shape(l: &Value) -> String {
    let keys: Vec<&String> = l.as_object().map(|o| o.keys().collect()).unwrap_or_default();
    format!("{} {} {} {:?} size={} dir={}", l["type"], l["op"], l["name"], keys, l["size"], l["direction"])
}

#[test]
fn zstd_recording_has_the_lines_of_a_plain_one() {
    if !common::root_tests_enabled() {
        return;
    }
    let plain = common::trace("zstd-plain", &["all"], &[], Duration::from_secs(180));
    assert_eq!(plain.code(), 0, "{}", plain.describe());
    let out = zst_output("zstd-all");
    let mut child = common::tracer_cmd(&out, &[], &["all"]).spawn().unwrap();
    let st = common::wait_with_timeout(&mut child, Duration::from_secs(180), false, "tracer -o .jsonl.zst");
    let stderr = std::fs::read_to_string(out.with_extension("stderr")).unwrap_or_default();
    assert_eq!(common::shell_code(&st), 0, "{stderr}");
    let (lines, complete) = decode(&out);
    assert!(complete, "the zstd stream is not finished");
    assert_eq!(lines.first().unwrap()["type"], "header");
    let footer = lines.last().unwrap();
    assert_eq!(footer["type"], "footer");
    assert_eq!(footer["lost"]["total"], 0);
    assert_eq!(footer["calls"], plain.footer()["calls"]);
    // Line for line the same calls (times, pids and addresses differ; the
    // scheduler lines and the stacks of switch-outs depend on the run's timing).
    let not_sched = |l: &&Value| !matches!(l["type"].as_str(), Some("sched" | "stack" | "sample"));
    let a: Vec<String> = lines[1..lines.len() - 1].iter().filter(not_sched).map(shape).collect();
    let b: Vec<String> = plain.lines[1..plain.lines.len() - 1].iter().filter(not_sched).map(shape).collect();
    assert_eq!(a.len(), b.len());
    assert_eq!(a, b);
    // Smaller than the plain file, and tracer's readers read it.
    let zbytes = std::fs::metadata(&out).unwrap().len();
    let pbytes = std::fs::metadata(&plain.out).unwrap().len();
    assert!(zbytes * 3 < pbytes, "{zbytes} vs {pbytes}");
    for sub in ["summary", "report"] {
        let o = Command::new(common::tracer_bin()).arg(sub).arg(&out).output().unwrap();
        assert!(o.status.success(), "tracer {sub}: {}", String::from_utf8_lossy(&o.stderr));
        let text = String::from_utf8_lossy(&o.stdout);
        let po = Command::new(common::tracer_bin()).arg(sub).arg(&plain.out).output().unwrap();
        // The same calls per function (the summary's table).
        if sub == "summary" {
            let calls = |t: &str| {
                t.lines()
                    .filter(|l| l.starts_with("cu"))
                    .map(|l| l.split_whitespace().take(2).collect::<Vec<_>>().join(" "))
                    .collect::<Vec<_>>()
            };
            assert_eq!(calls(&text), calls(&String::from_utf8_lossy(&po.stdout)));
            assert!(calls(&text).len() >= 15, "{text}");
        }
    }
    plain.cleanup();
    for p in [out.clone(), out.with_extension("stdout"), out.with_extension("stderr")] {
        let _ = std::fs::remove_file(p);
    }
}

#[test]
fn compress_option_needs_a_zst_name() {
    if !common::root_tests_enabled() {
        return;
    }
    let out = common::fresh_output("zstd-name");
    let o = common::tracer_cmd(&out, &["--compress", "zstd"], &["loop", "1"]).output().unwrap();
    assert!(!o.status.success());
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned()
        + &std::fs::read_to_string(out.with_extension("stderr")).unwrap_or_default();
    assert!(stderr.contains("--compress zstd: the output name must end in .zst"), "{stderr}");
    assert!(!out.exists(), "no trace file for a refused output name");
    let _ = std::fs::remove_file(out.with_extension("stdout"));
    let _ = std::fs::remove_file(out.with_extension("stderr"));
}

#[test]
fn killed_zstd_recording_reads_up_to_its_last_flush() {
    if !common::root_tests_enabled() {
        return;
    }
    let out = zst_output("zstd-kill");
    let mut child = common::tracer_cmd(&out, &["--compress", "zstd"], &["sleep_loop"]).spawn().unwrap();
    // The file grows by a zstd block per flush (every 100 ms with new lines).
    let t0 = Instant::now();
    while std::fs::metadata(&out).map_or(0, |m| m.len()) < 2000 && t0.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(500));
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    let st = common::wait_with_timeout(&mut child, Duration::from_secs(60), false, "tracer after SIGKILL");
    assert_eq!(common::shell_code(&st), 137);
    let (lines, complete) = decode(&out);
    assert!(!complete, "a killed recording has no end of frame");
    // The traced command outlives a killed tracer: stop it.
    if let Some(p) = lines.first().and_then(|h| h["pid"].as_i64()) {
        unsafe { libc::kill(p as i32, libc::SIGKILL) };
    }
    assert_eq!(lines[0]["type"], "header");
    let calls = lines
        .iter()
        .filter(|l| !matches!(l["type"].as_str(), Some("header" | "footer" | "process" | "sched" | "stack" | "sample")))
        .count();
    assert!(calls >= 5, "only {calls} calls decoded");
    // tracer's readers take it, with a warning that it was cut off.
    let o = Command::new(common::tracer_bin()).arg("summary").arg(&out).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stderr).contains("the zstd stream ends early"));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains(&format!("{calls} driver calls")),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    for p in [out.clone(), out.with_extension("stdout"), out.with_extension("stderr")] {
        let _ = std::fs::remove_file(p);
    }
}
