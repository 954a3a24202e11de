//! Two hand-built recordings for the together tests: a GPU-heavy one with a
//! `generate` phase and a launch-bound one, with gpu lines, a driver and a
//! GPU model in their manifests.

use std::path::PathBuf;

use serde_json::{Value, json};

use super::*;

fn launch(r: &mut Rec) {
    let p = params(20, &[(0, &0x7f00_0000_0000u64.to_le_bytes())]);
    r.call("kernel", "launch", "cuLaunchKernel", json!({"func": "0xf1", "kernel": "k_pointers", "grid": [1, 1, 1], "block": [1, 1, 1], "shared_mem": 0, "stream": "0x0", "params": p, "params_from": "layout"}));
}

/// Sets the ts (ns) of the last call line.
fn at(r: &mut Rec, ts: u64) {
    r.lines.last_mut().unwrap()["ts"] = json!(ts);
}

fn gpu(r: &mut Rec, ts: u64, end: u64) {
    r.lines.push(
        json!({"type": "gpu", "op": "kernel", "pid": 7, "name": "k_pointers", "ts": ts, "end_ts": end, "stream_id": 7}),
    );
}

/// Writes the recording with a driver and a GPU model in its manifest.
pub fn finish(r: &Rec, driver: &str) -> PathBuf {
    set_manifest(&r.write(), driver)
}

/// Puts a driver and a GPU model into the manifest of the recording written at `dir`.
pub fn set_manifest(dir: &std::path::Path, driver: &str) -> PathBuf {
    let dir = dir.to_owned();
    let m = dir.join("manifest.json");
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&m).unwrap()).unwrap();
    v["driver"] = json!(driver);
    v["gpus"] = json!([{"bus": "0000:00:06.0", "model": "NVIDIA H100 80GB HBM3"}]);
    std::fs::write(&m, v.to_string()).unwrap();
    dir
}

/// Tenant A, GPU-heavy: three launches, a 3 ms synchronization, its phase
/// `generate` from the second launch on; kernels busy 2.005–5.020 ms and
/// 6.005–6.505 ms (3.515 ms busy in a 4.5 ms span).
pub fn heavy() -> Rec {
    let mut r = Rec::new();
    r.cubin_function("k_pointers");
    r.call("memory", "alloc", "cuMemAlloc_v2", json!({"ret": 0, "ptr": "0x7f0000000000", "size": 4096}));
    at(&mut r, 1_000_000);
    launch(&mut r);
    at(&mut r, 2_000_000);
    launch(&mut r);
    at(&mut r, 2_010_000);
    r.call("sync", "ctx_synchronize", "cuCtxSynchronize", json!({"ret": 0, "duration_us": 3000.0}));
    at(&mut r, 2_020_000);
    launch(&mut r);
    at(&mut r, 6_000_000);
    // The measured phase starts after the first launch.
    r.lines.push(json!({"type": "marker", "op": "phase", "label": "generate", "pid": 7, "ts": 2_005_000}));
    gpu(&mut r, 2_005_000, 3_005_000);
    gpu(&mut r, 3_005_000, 5_020_000);
    gpu(&mut r, 6_005_000, 6_505_000);
    r
}

/// Tenant B, launch-bound: four launches 100 µs apart, each kernel 10 µs
/// (40 µs busy in a 310 µs span).
pub fn launches() -> Rec {
    let mut r = Rec::new();
    r.cubin_function("k_pointers");
    r.call("memory", "alloc", "cuMemAlloc_v2", json!({"ret": 0, "ptr": "0x7f0000000000", "size": 4096}));
    at(&mut r, 1_000_000);
    for k in 0..4u64 {
        launch(&mut r);
        at(&mut r, 1_995_000 + k * 100_000);
    }
    for k in 0..4u64 {
        gpu(&mut r, 2_000_000 + k * 100_000, 2_010_000 + k * 100_000);
    }
    r
}
