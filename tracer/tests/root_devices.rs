//! The device of every call line, for real (eBPF uprobes, root): the fake
//! libcuda exposes two devices; tests/fakecuda/devices.c makes contexts on
//! each (primary and created) and switches between them with
//! cuCtxSetCurrent, cuCtxPushCurrent and cuCtxPopCurrent on two threads,
//! launching on streams of both devices and on the legacy stream.
//!
//! `sudo -E TRACER_ROOT_TESTS=1 cargo test -p tracer --test root_devices -- --test-threads=1`
mod common;

use std::fs::File;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

#[test]
fn every_line_carries_the_device_of_its_context() {
    if !common::root_tests_enabled() {
        return;
    }
    let prog = common::fake_program("devices");
    let out = common::fresh_output("devices");
    let mut c = Command::new(common::tracer_bin());
    c.arg("-o").arg(&out).arg("--libcuda").arg(&common::fake().lib).arg("--").arg(&prog);
    c.stdout(Stdio::from(File::create(out.with_extension("stdout")).unwrap()));
    c.stderr(Stdio::from(File::create(out.with_extension("stderr")).unwrap()));
    c.stdin(Stdio::null());
    let t0 = std::time::Instant::now();
    let mut child = c.spawn().expect("starting tracer");
    let status = common::wait_with_timeout(&mut child, Duration::from_secs(120), false, "tracer on devices");
    let t = common::finish(out, status, t0.elapsed());
    assert_eq!(t.code(), 0, "{}", t.describe());
    assert!(t.stdout.contains("devices done"), "{}", t.describe());
    let pid = t.header()["pid"].as_u64().unwrap();
    // (thread, function, device, dst_device, src_device); "main" is the
    // process's first thread, "second" the other. `null`: unknown.
    let mut calls: Vec<&Value> = t.calls().collect();
    calls.sort_by_key(|l| l["ts"].as_u64());
    let got: Vec<Value> = calls
        .into_iter()
        .map(|l| {
            let who = if l["tid"].as_u64() == Some(pid) { "main" } else { "second" };
            let mut v = json!([who, l["name"], l["device"]]);
            if l.get("dst_device").is_some() {
                v.as_array_mut().unwrap().extend([l["dst_device"].clone(), l["src_device"].clone()]);
            }
            assert!(l.get("device").is_some(), "no device field: {l}");
            v
        })
        .collect();
    let n = Value::Null;
    let want = vec![
        json!(["main", "cuInit", n]),
        json!(["main", "cuDevicePrimaryCtxRetain", n]),
        json!(["main", "cuDevicePrimaryCtxRetain", n]),
        json!(["main", "cuCtxSetCurrent", 0]),
        json!(["main", "cuStreamCreate", 0]),
        json!(["main", "cuLaunchKernel", 0]),
        json!(["main", "cuCtxSetCurrent", 1]),
        json!(["main", "cuStreamCreate", 1]),
        json!(["main", "cuLaunchKernel", 1]),
        json!(["main", "cuLaunchKernel", 0]),
        json!(["main", "cuLaunchKernel", 1]),
        json!(["main", "cuCtxCreate_v2", 0]),
        json!(["main", "cuMemcpyHtoD_v2", 0]),
        json!(["main", "cuCtxPushCurrent_v2", 1]),
        json!(["main", "cuMemcpyDtoD_v2", 1]),
        json!(["main", "cuCtxPopCurrent_v2", 0]),
        json!(["main", "cuCtxPopCurrent_v2", 1]),
        json!(["main", "cuMemcpyPeer", 1, 0, 1]),
        json!(["main", "cuStreamSynchronize", 0]),
        json!(["second", "cuLaunchKernel", n]),
        json!(["second", "cuCtxSetCurrent", 1]),
        json!(["second", "cuLaunchKernel", 1]),
        json!(["second", "cuCtxPushCurrent_v2", 0]),
        json!(["second", "cuMemsetD8_v2", 0]),
        json!(["second", "cuCtxPopCurrent_v2", 1]),
        json!(["second", "cuLaunchKernel", 1]),
        json!(["main", "cuStreamSynchronize", 1]),
    ];
    assert_eq!(got, want, "{}", t.describe());
    t.cleanup();
}
