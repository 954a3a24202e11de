//! `tracer gaps` and `tracer report` on a hand-built trace of a native
//! program with stacks (frame pointers; a stripped library) and scheduler
//! events: the long gaps go to the function that blocked and to the one
//! that launched, the launches' GPU time to the launching function.
use std::path::PathBuf;

use serde_json::Value;

mod command;
use command::tracer;

const APP: &str = "/home/u/app";
const LIBCUDA: &str = "/usr/lib/x86_64-linux-gnu/libcuda.so.1";
const LIBC: &str = "/usr/lib/x86_64-linux-gnu/libc.so.6";

fn frame(f: &str, module: &str, at: Option<(&str, u32)>) -> String {
    let line = at.map_or(String::new(), |(file, l)| format!(r#","file":"/src/{file}","line":{l}"#));
    format!(r#"{{"kind":"native","fn":"{f}","module":"{module}","addr":"0x401000","offset":"0x1000"{line}}}"#)
}

fn stack(id: u64, frames: &[String]) -> String {
    format!(
        r#"{{"type":"stack","op":"stack","name":"stack","id":{id},"pid":7,"tid":0,"ts":1,"frames":[{}]}}"#,
        frames.join(",")
    )
}

fn call(ts: u64, ty: &str, op: &str, name: &str, dur_us: u64, stack: u64) -> String {
    format!(
        r#"{{"ts":{ts},"pid":7,"tid":7,"type":"{ty}","op":"{op}","name":"{name}","kernel":"k","grid":[1,1,1],"block":[1,1,1],"stream":"0x0","duration_us":{dur_us},"ret":0,"stack":{stack}}}"#
    )
}

fn gpu(a: u64, b: u64) -> String {
    format!(
        r#"{{"ts":{a},"end_ts":{b},"pid":7,"tid":0,"type":"gpu","op":"kernel","name":"k","source":"cupti","device":0,"stream":"0x0","stream_id":7}}"#
    )
}

fn off_cpu(a: u64, b: u64, name: &str, file: &str, stack: u64) -> String {
    format!(
        r#"{{"ts":{a},"end_ts":{b},"pid":7,"tid":7,"type":"sched","op":"off_cpu","name":"{name}","state":"blocked","syscall":"{name}"{file},"runnable_ns":0,"stack":{stack}}}"#
    )
}

/// Launches at 1, 6.5 and 8 ms from launch_step (kernels 990, 490 and 990
/// µs), each followed by a cuCtxSynchronize from wait_gpu; between them the
/// thread blocks in a file read at load_file (2.0-6.0 ms) and in a futex in
/// a stripped library (7.0-7.5 ms).
fn trace(name: &str) -> PathBuf {
    let ms = 1_000_000u64;
    let launch_stack = [
        frame("cuLaunchKernel", LIBCUDA, None),
        frame("launch_step", APP, Some(("app.c", 30))),
        frame("main", APP, Some(("app.c", 50))),
        frame("__libc_start_main", LIBC, None),
    ];
    let l = [
        r#"{"type":"header","pid":7,"command":["/home/u/app"],"sched":true,"stacks":true}"#.to_string(),
        stack(1, &launch_stack),
        stack(
            2,
            &[
                frame("cuCtxSynchronize", LIBCUDA, None),
                frame("wait_gpu", APP, None),
                frame("main", APP, Some(("app.c", 52))),
            ],
        ),
        stack(3, &[frame("read", LIBC, None), frame("load_file", APP, None), frame("main", APP, Some(("app.c", 48)))]),
        stack(
            4,
            &[
                frame("syscall", LIBC, None),
                frame("[unknown]", "/opt/lib/libstripped.so", None),
                frame("main", APP, Some(("app.c", 49))),
            ],
        ),
        r#"{"ts":500,"pid":7,"tid":7,"type":"sched","op":"thread_seen","name":"thread_seen"}"#.into(),
        call(ms, "kernel", "launch", "cuLaunchKernel", 5, 1),
        gpu(ms + 10_000, 2 * ms),
        call(ms + 20_000, "sync", "ctx_synchronize", "cuCtxSynchronize", 980, 2),
        off_cpu(2 * ms, 6 * ms, "read", r#","file":"file /data/in.bin""#, 3),
        call(6_500_000, "kernel", "launch", "cuLaunchKernel", 5, 1),
        gpu(6_510_000, 7 * ms),
        call(6_520_000, "sync", "ctx_synchronize", "cuCtxSynchronize", 480, 2),
        off_cpu(7 * ms, 7_500_000, "futex", "", 4),
        call(8 * ms, "kernel", "launch", "cuLaunchKernel", 5, 1),
        gpu(8_010_000, 9 * ms),
    ];
    let p = std::env::temp_dir().join(format!("tracer-stacks-cli-{}-{name}.jsonl", std::process::id()));
    std::fs::write(&p, l.join("\n") + "\n").unwrap();
    p
}

#[test]
fn gaps_name_the_blocking_and_the_launching_functions() {
    let p = trace("gaps");
    let (rc, out, err) = tracer(&["gaps", p.to_str().unwrap()]);
    assert_eq!(rc, 0, "{err}");
    // gaps 2.0-6.51 ms (read 4 ms, then on CPU) and 7.0-8.01 ms (futex 0.5 ms, then on CPU)
    let lines: Vec<&str> = out.lines().map(str::trim).collect();
    let at = lines.iter().position(|l| l.starts_with("which code held the GPU idle")).expect(&out);
    assert_eq!(
        lines[at..at + 4],
        [
            "which code held the GPU idle in gaps ≥ threshold (the launching threads' stacks):",
            "72.5%    4.00 ms  blocked in read (file) at load_file (app) ← main (app.c:48)",
            "18.5%    1.02 ms  on CPU at launch_step (app.c:30) ← main (app.c:50)",
            "9.1%   500.0 µs  blocked in futex at [unknown] (libstripped.so) ← main (app.c:49)",
        ],
        "{out}"
    );
    assert!(out.contains("when it began the thread was at wait_gpu (app) ← main (app.c:52)\n"), "{out}");
    let (rc, out, err) = tracer(&["gaps", p.to_str().unwrap(), "--json"]);
    assert_eq!(rc, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let c = &v["scopes"][0]["long_gap_code"];
    assert_eq!(
        (c["gaps"].as_u64(), c["total_ns"].as_u64(), c["without_stack_ns"].as_u64()),
        (Some(2), Some(5_520_000), Some(0))
    );
    let parts: Vec<(String, u64)> = c["parts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["cause"].as_str().unwrap().to_string(), p["ns"].as_u64().unwrap()))
        .collect();
    assert_eq!(
        parts,
        [
            ("blocked in read (file)".to_string(), 4_000_000),
            ("on CPU".into(), 1_020_000),
            ("blocked in futex".into(), 500_000)
        ]
    );
    let _ = std::fs::remove_file(&p);
}

#[test]
fn report_ranks_stacks_by_busy_and_idle_time() {
    let p = trace("report");
    let (rc, out, err) = tracer(&["report", p.to_str().unwrap(), "--json"]);
    assert_eq!(rc, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let s = &v["stacks"];
    assert_eq!(
        (s["stacks"].as_u64(), s["busy_basis"].as_str(), s["busy_ns"].as_u64()),
        (Some(4), Some("measured"), Some(2_470_000))
    );
    let top = &s["by_busy"][0];
    assert_eq!(top["frames"], serde_json::json!(["launch_step (app.c:30)", "main (app.c:50)"]));
    assert_eq!((top["launches"].as_u64(), top["busy_ns"].as_u64()), (Some(3), Some(2_470_000)));
    assert_eq!(s["by_idle"]["total_ns"].as_u64(), Some(5_520_000));
    assert_eq!(s["by_idle"]["parts"][0]["frames"], serde_json::json!(["load_file (app)", "main (app.c:48)"]));
    let (rc, out, err) = tracer(&["report", p.to_str().unwrap()]);
    assert_eq!(rc, 0, "{err}");
    assert!(out.contains("100.0%    2.47 ms         3  launch_step (app.c:30) ← main (app.c:50)"), "{out}");
    let _ = std::fs::remove_file(&p);
}
