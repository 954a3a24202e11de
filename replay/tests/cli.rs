//! The `replay` binary on a hand-built recording: `replay plan` output and
//! errors: a bad recording is a run-time failure (exit status 1, message
//! naming the file), a misuse of the command line exits with 2.

mod common;

use common::*;
use serde_json::json;

#[test]
fn plan_prints_coverage_and_summary() {
    let mut r = Rec::new();
    r.cubin_function("k_pointers");
    r.call("memory", "alloc", "cuMemAlloc_v2", json!({"ret": 0, "ptr": "0x7f0000000000", "size": 4096}));
    let p = params(20, &[(0, &0x7f00_0000_0000u64.to_le_bytes())]);
    r.call("kernel", "launch", "cuLaunchKernel", json!({"func": "0xf1", "kernel": "k_pointers", "grid": [1, 1, 1], "block": [1, 1, 1], "shared_mem": 0, "stream": "0x0", "params": p, "params_from": "layout"}));
    r.call("kernel", "launch", "cuLaunchKernel", json!({"func": "0xf1", "kernel": "k_pointers", "grid": [1, 1, 1], "block": [1, 1, 1], "shared_mem": 0, "stream": "0x0"}));
    let dir = r.write();
    let (code, out, err) = replay(&["plan", dir.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out,
        "plan: 1 ops (1 GPU work) on 1 streams, 0 events, 1 image loads (1 captured)\n\
         streams (numbered as replay --skip-ops names them): 0 legacy: 1 launch\n\
         dependencies: 0 edges (0 stream order, 0 event, 0 legacy default stream, 0 host sync)\n\
         address ranges: 1 (1 device, 4096 bytes; 1 windows to map, 2097152 bytes at 2 MiB granularity)\n\
         relocation candidates: 1 pointer words in parameters (1 whole 8-byte parameters, 0 inside larger ones)\n\
         launches: 2 (2 cuLaunchKernel), replayed 1 = 50.0 %\n  skipped 1: no params recorded (lines 6)\n\
         copies: 0, replayed 0 (h2d with recorded bytes 0, with a deterministic fill 0; 0 from/to pageable memory when recorded); sets: 0, replayed 0\n"
    );
    let (code, out, _) = replay(&["plan", "--json", dir.to_str().unwrap()]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["coverage"]["launches_replayed"], 1);
    assert_eq!(v["relocations"][0]["value"], 0x7f00_0000_0000u64);
}

#[test]
fn errors_exit_1_naming_the_file_misuse_2() {
    let (code, _, err) = replay(&["plan", "/nonexistent.rec"]);
    assert_eq!(code, 1);
    assert_eq!(err, "replay: error: /nonexistent.rec: not a directory (a recording is a NAME.rec/ directory)\n");
    let mut r = Rec::new();
    r.schema_version = 7;
    let dir = r.write();
    let (code, _, err) = replay(&[dir.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(
        err.contains("manifest.json: schema_version 7 is newer than this replay understands (schema_version 1)"),
        "{err}"
    );
    // Misuse of the command line: 2, before the recording is opened.
    let d = dir.to_str().unwrap();
    for args in [&["plan"][..], &["plan", d, "--no-such-option"], &["run", d, "--probe", "0:0x10:8"]] {
        let (code, _, err) = replay(args);
        assert_eq!(code, 2, "{args:?}: {err}");
    }
    let (_, _, err) = replay(&["run", d, "--probe", "0:0x10:8"]);
    assert!(err.contains("LINE must be > 0"), "{err}");
    let (code, _, err) = replay(&["run", d, "--device-memory", "cudamalloc"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("invalid value 'cudamalloc' for '--device-memory") && err.contains("vmm, malloc"), "{err}");
}
