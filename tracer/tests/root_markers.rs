//! Phase markers and power through a real `tracer record` (root): a C
//! program writes markers to the FIFO tracer gives it (TRACER_MARKER_FIFO),
//! the trace must hold exactly those markers; on this machine (no NVIDIA
//! driver) the header must say power is unavailable and why.
//!
//! `TRACER_ROOT_TESTS=1 cargo test -p tracer --test root_markers -- --test-threads=1`
mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

fn marker_program() -> &'static PathBuf {
    static P: OnceLock<PathBuf> = OnceLock::new();
    P.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("markers-prog");
        std::fs::create_dir_all(&dir).unwrap();
        let _ = Command::new("chmod").arg("755").arg(&dir).status();
        let out = dir.join("markers");
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/markers/markers.c");
        let st = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
            .args(["-O1", "-Wall", "-o"])
            .arg(&out)
            .arg(&src)
            .status()
            .unwrap();
        assert!(st.success(), "building {}", src.display());
        out
    })
}

/// `tracer -o OUT --libcuda FAKE ARGS -- CMD...`, waited for.
fn record(tag: &str, tracer_args: &[&str], cmd: &[&str]) -> common::Traced {
    record_env(tag, tracer_args, cmd, &[])
}

fn record_env(tag: &str, tracer_args: &[&str], cmd: &[&str], env: &[(&str, &str)]) -> common::Traced {
    let out = common::fresh_output(tag);
    let mut c = Command::new(common::tracer_bin());
    c.envs(env.iter().copied());
    c.arg("-o").arg(&out).arg("--libcuda").arg(&common::fake().lib).args(tracer_args).arg("--").args(cmd);
    c.stdout(Stdio::from(std::fs::File::create(out.with_extension("stdout")).unwrap()));
    c.stderr(Stdio::from(std::fs::File::create(out.with_extension("stderr")).unwrap()));
    c.stdin(Stdio::null());
    let t0 = Instant::now();
    let mut child = c.spawn().unwrap();
    let st = common::wait_with_timeout(&mut child, Duration::from_secs(60), false, tag);
    common::finish(out, st, t0.elapsed())
}

/// The marker line a "OP LABEL[ EXTRA] ts=T pid=P tid=I" line becomes.
fn expected(written: &str) -> Value {
    let w: Vec<&str> = written.split_whitespace().collect();
    let field = |k: &str| -> u64 {
        w.iter()
            .find_map(|x| x.strip_prefix(k))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{k} in {written}"))
    };
    let label: Vec<&str> = w[1..].iter().copied().take_while(|x| !x.contains('=')).collect();
    let mut v = json!({
        "ts": field("ts="), "pid": field("pid="), "tid": field("tid="),
        "type": "marker", "op": w[0], "name": "marker", "label": label.join(" "),
    });
    if written.contains("tokens=") {
        v["tokens"] = json!(field("tokens="));
    }
    v
}

#[test]
fn markers_from_a_program_and_its_child() {
    if !common::root_tests_enabled() {
        return;
    }
    let prog = marker_program().to_str().unwrap().to_string();
    let t = record("markers", &[], &[&prog]);
    assert_eq!(t.code(), 0, "{}", t.describe());
    let h = t.header();
    let root = h["pid"].as_u64().unwrap();
    assert_eq!(h["markers"]["enabled"], json!(true), "{h}");
    assert_eq!(h["markers"]["env"], json!("TRACER_MARKER_FIFO"));
    let fifo = h["markers"]["path"].as_str().unwrap();
    assert!(!Path::new(fifo).exists(), "FIFO {fifo} left behind");

    let written: Vec<&str> = t.stdout.lines().collect();
    assert_eq!(written.len(), 6, "{}", t.describe());
    let markers: Vec<&Value> = t.lines.iter().filter(|l| l["type"] == "marker").collect();
    assert_eq!(markers.len(), 5, "{}", t.describe());
    // Exact lines for the ones that carry ts/pid/tid, in order.
    for (got, w) in markers.iter().zip([written[0], written[1], written[2]]) {
        assert_eq!(**got, expected(w));
    }
    assert_eq!(*markers[4], expected(written[5]));
    // The child's iteration carries the child's pid, not the root's.
    assert_ne!(markers[2]["pid"].as_u64().unwrap(), root);
    assert_eq!(markers[1]["label"], json!("model load"));
    // "mark no fields here": the traced command's pid, tid 0, stamped when read.
    let m = markers[3];
    assert_eq!(
        (m["op"].clone(), m["label"].clone(), m["pid"].as_u64(), m["tid"].as_u64()),
        (json!("mark"), json!("no fields here"), Some(root), Some(0))
    );
    let ts = m["ts"].as_u64().unwrap();
    assert!(ts >= markers[2]["ts"].as_u64().unwrap(), "{m}");

    let f = &t.footer()["markers"];
    assert_eq!(
        (f["markers"].as_u64(), f["malformed"].as_u64(), f["dropped"].as_u64(), f["without_ts"].as_u64()),
        (Some(5), Some(1), Some(0), Some(1)),
        "{f}"
    );
    assert_eq!(
        f["malformed_examples"],
        json!(["line 4: unknown marker \"bogus\": expected phase, iteration or mark: \"bogus line\""])
    );
    assert!(t.stderr.contains("tracer: 1 malformed marker line(s) ignored"), "{}", t.describe());
    t.cleanup();
}

#[test]
fn power_unavailable_without_driver_and_tracing_still_works() {
    if !common::root_tests_enabled() {
        return;
    }
    if Path::new("/proc/driver/nvidia/version").exists() {
        println!("skipped: this machine has an NVIDIA driver");
        return;
    }
    let driver = common::fake().driver.to_str().unwrap().to_string();
    let t = record("power", &["--power-interval-ms", "5"], &[&driver, "all"]);
    assert_eq!(t.code(), 0, "{}", t.describe());
    let p = &t.header()["power"];
    assert_eq!(p["available"], json!(false), "{p}");
    let reason = p["reason"].as_str().unwrap();
    assert!(reason.starts_with("no NVIDIA driver: libnvidia-ml.so.1 not found"), "{reason}");
    assert_eq!(p["gpus"], json!([]));
    assert_eq!(t.footer()["power"], json!({ "available": false }));
    assert_eq!(t.lines.iter().filter(|l| l["type"] == "power").count(), 0);
    // The driver's calls are all there.
    assert!(t.named("cuInit").count() >= 1, "{}", t.describe());
    assert_eq!(t.lost(), 0);
    t.cleanup();

    let t = record("nopower", &["--no-power"], &[&driver, "all"]);
    assert_eq!(t.code(), 0, "{}", t.describe());
    assert_eq!(
        t.header()["power"],
        json!({"available": false, "reason": "disabled (--no-power)", "interval_ms": null, "library": null, "sampled": null, "gpus": []})
    );
    t.cleanup();
}

#[test]
fn no_markers_and_shell_writers() {
    if !common::root_tests_enabled() {
        return;
    }
    // --no-markers: the program does not get the variable (it exits 3, and
    // tracer with it).
    let prog = marker_program().to_str().unwrap().to_string();
    let t = record("nomarkers", &["--no-markers"], &[&prog]);
    assert_eq!(t.code(), 3, "{}", t.describe());
    assert_eq!(t.stdout, "no marker FIFO\n");
    assert_eq!(t.header()["markers"], json!({"enabled": false, "reason": "disabled (--no-markers)"}));

    // A shell script: echo to the path, as the docs show.
    let t = record(
        "shellmarkers",
        &[],
        &[
            "sh",
            "-c",
            "echo \"phase shell pid=$$\" > \"$TRACER_MARKER_FIFO\"; printf 'iteration 1 tokens=7' > \"$TRACER_MARKER_FIFO\"",
        ],
    );
    assert_eq!(t.code(), 0, "{}", t.describe());
    let root = t.header()["pid"].as_u64().unwrap();
    let m: Vec<(Value, Value, Value, Value)> = t
        .lines
        .iter()
        .filter(|l| l["type"] == "marker")
        .map(|l| (l["op"].clone(), l["label"].clone(), l["pid"].clone(), l["tokens"].clone()))
        .collect();
    assert_eq!(
        m,
        vec![
            (json!("phase"), json!("shell"), json!(root), Value::Null),
            // Unterminated last line: taken at the end.
            (json!("iteration"), json!("1"), json!(root), json!(7)),
        ]
    );
    t.cleanup();
}

/// Under sudo the command runs as the invoking user: the FIFO and its
/// directory belong to that user, who can write markers to it.
#[test]
fn markers_from_the_invoking_user() {
    if !common::root_tests_enabled() {
        return;
    }
    let t = record_env(
        "sudomarkers",
        &[],
        &[
            "sh",
            "-c",
            "id -u; ls -ld \"$TRACER_MARKER_FIFO\" | cut -d' ' -f1,3; echo \"mark as nobody\" > \"$TRACER_MARKER_FIFO\"",
        ],
        &[("SUDO_UID", "65534"), ("SUDO_GID", "65534"), ("SUDO_USER", "nobody")],
    );
    assert_eq!(t.code(), 0, "{}", t.describe());
    assert_eq!(t.stdout, "65534\nprw------- nobody\n", "{}", t.describe());
    let m: Vec<&Value> = t.lines.iter().filter(|l| l["type"] == "marker").collect();
    assert_eq!(m.len(), 1, "{}", t.describe());
    assert_eq!(m[0]["label"], json!("as nobody"));
    t.cleanup();
}
