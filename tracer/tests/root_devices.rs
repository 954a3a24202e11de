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

/// A two-process job traced as one: `sh` starts two workers with RANK and
/// LOCAL_RANK 0 and 1 (as torchrun does); each uses the device of its
/// LOCAL_RANK. The exec lines carry the ranks, every launch its rank's
/// device, and `tracer report` has a row per GPU with that rank's process.
#[test]
fn a_two_process_job_has_ranks_and_a_gpu_each() {
    if !common::root_tests_enabled() {
        return;
    }
    let worker = common::fake_program("worker");
    let w = worker.to_str().unwrap();
    let script = format!("RANK=0 LOCAL_RANK=0 {w} 3 & RANK=1 LOCAL_RANK=1 {w} 4 & wait");
    let out = common::fresh_output("ranks");
    let mut c = Command::new(common::tracer_bin());
    c.arg("-o").arg(&out).arg("--libcuda").arg(&common::fake().lib).args(["--", "sh", "-c", &script]);
    c.stdout(Stdio::from(File::create(out.with_extension("stdout")).unwrap()));
    c.stderr(Stdio::from(File::create(out.with_extension("stderr")).unwrap()));
    c.stdin(Stdio::null());
    let t0 = std::time::Instant::now();
    let mut child = c.spawn().expect("starting tracer");
    let status = common::wait_with_timeout(&mut child, Duration::from_secs(120), false, "tracer on two workers");
    let t = common::finish(out, status, t0.elapsed());
    assert_eq!(t.code(), 0, "{}", t.describe());
    // pid -> rank, from the workers' exec lines
    let ranks: std::collections::BTreeMap<u64, (u64, u64)> = t
        .process_lines()
        .filter(|l| l["op"] == "exec" && l["filename"].as_str().is_some_and(|f| f.ends_with("/worker")))
        .map(|l| (l["pid"].as_u64().unwrap(), (l["rank"].as_u64().unwrap(), l["local_rank"].as_u64().unwrap())))
        .collect();
    let mut by_rank: Vec<u64> = ranks.values().map(|r| r.0).collect();
    by_rank.sort();
    assert_eq!(by_rank, [0, 1], "{ranks:?}\n{}", t.describe());
    // (rank, device) -> launches; device None: null
    let mut launches = std::collections::BTreeMap::<(u64, Option<u64>), u64>::new();
    for l in t.named("cuLaunchKernel") {
        let pid = l["pid"].as_u64().unwrap();
        *launches.entry((ranks[&pid].0, l["device"].as_u64())).or_default() += 1;
    }
    assert_eq!(launches, [((0, Some(0)), 3), ((1, Some(1)), 4)].into_iter().collect(), "{}", t.describe());

    let pid_of = |rank: u64| *ranks.iter().find(|(_, r)| r.0 == rank).unwrap().0;
    let rep = Command::new(common::tracer_bin()).args(["report", "--json"]).arg(&t.out).output().unwrap();
    assert!(rep.status.success(), "{}", String::from_utf8_lossy(&rep.stderr));
    let r: Value = serde_json::from_slice(&rep.stdout).unwrap();
    let rows: Vec<(u64, Option<u64>, u64)> = r["per_gpu"]
        .as_array()
        .expect("per_gpu")
        .iter()
        .map(|g| (g["device"].as_u64().unwrap(), g["pid"].as_u64(), g["launches"].as_u64().unwrap()))
        .collect();
    assert_eq!(rows, [(0, None, 3), (0, Some(pid_of(0)), 3), (1, None, 4), (1, Some(pid_of(1)), 4)]);
    // The report lists processes by first appearance; the two ranks start
    // at the same time, so either may come first.
    let mut names: Vec<(u64, String)> = r["processes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| ranks.contains_key(&p[0].as_u64().unwrap()))
        .map(|p| (p[0].as_u64().unwrap(), p[1].as_str().unwrap().to_string()))
        .collect();
    names.sort();
    assert_eq!(names, {
        let mut v = vec![(pid_of(0), "worker rank 0".to_string()), (pid_of(1), "worker rank 1".to_string())];
        v.sort();
        v
    });
    t.cleanup();
}
