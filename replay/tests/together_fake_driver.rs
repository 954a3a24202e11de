//! `replay A.rec B.rec --together` end to end on this CPU machine, against
//! tracer's fake libcuda (tracer/tests/fakecuda) with what replay needs
//! besides (tests/fakecuda_replay.c): the parent plans and checks the
//! device's memory, starts one `replay tenant` process per recording, waits
//! for every tenant's images to load, runs the rounds in the plan's order
//! with the armed/go barrier, the last together run with every output
//! checked, and writes the report and the table. And the architecture
//! refusal: a tenant whose image has no code for the GPU stops every tenant
//! before any runs.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::together::{finish, heavy, launches};
use serde_json::Value;

fn cc(args: &[&str]) {
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let o = Command::new(&cc).args(args).output().unwrap_or_else(|e| panic!("running {cc}: {e}"));
    assert!(o.status.success(), "{cc} {}: {}", args.join(" "), String::from_utf8_lossy(&o.stderr));
}

/// DIR/libcuda.so: the fake driver with replay's additions.
fn fake_driver(dir: &Path) -> PathBuf {
    let fake = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tracer/tests/fakecuda");
    let shim = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fakecuda_replay.c");
    let inc = format!("-I{}", fake.display());
    let (a, b) = (dir.join("fakecuda.o"), dir.join("shim.o"));
    let s = |p: &Path| p.to_str().unwrap().to_owned();
    cc(&[
        "-O0",
        "-fPIC",
        "-c",
        &inc,
        "-DcuMemAllocHost_v2=fake_cuMemAllocHost_v2",
        "-DcuMemFreeHost=fake_cuMemFreeHost",
        "-DcuModuleLoadData=fake_cuModuleLoadData",
        "-DcuDeviceTotalMem_v2=fake_cuDeviceTotalMem_v2",
        "-o",
        &s(&a),
        &s(&fake.join("fakecuda.c")),
    ]);
    cc(&["-O0", "-fPIC", "-c", &inc, "-o", &s(&b), &s(&shim)]);
    let lib = dir.join("libcuda.so");
    cc(&["-shared", "-Wl,-soname,libcuda.so.1", "-o", &s(&lib), &s(&a), &s(&b)]);
    lib
}

fn replay(lib_dir: &Path, args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_replay"))
        .args(args)
        .env("LD_LIBRARY_PATH", lib_dir)
        .envs(env.iter().copied())
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn together_run_against_the_fake_driver() {
    let d = tempfile::tempdir().unwrap();
    fake_driver(d.path());
    let (a, b) = (heavy(), launches());
    let (da, db) = (finish(&a, "580.159.04"), finish(&b, "580.159.04"));
    let (sa, sb) = (da.to_str().unwrap(), db.to_str().unwrap());
    let report = d.path().join("together.json");
    let args = [
        sa,
        sb,
        "--together",
        "--rounds",
        "3",
        "--no-cupti",
        "--no-energy",
        "--switch-us",
        "25",
        "--settle-ms",
        "100",
        // the predictions of together_plan.rs's recorded pacing
        "--pacing",
        "recorded",
        "--report",
        report.to_str().unwrap(),
    ];
    let t0 = std::time::Instant::now();
    let (code, out, err) = replay(d.path(), &args, &[]);
    assert_eq!(code, 0, "{out}{err}");
    // The GPU idles 100 ms before each of the 9 runs and the final check.
    assert!(t0.elapsed() >= std::time::Duration::from_millis(1000), "{:?}", t0.elapsed());
    // The plan first (stderr), with the device's memory.
    assert!(err.contains("memory: 1028.1 MiB together of 81920.0 MiB (cuDeviceTotalMem of device 0)\n"), "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0],
        "     tenant                                     alone ms    tog. ms  slowdown   spread predicted     error"
    );
    assert!(
        lines[1].starts_with(&format!("1    {:<40}", Path::new(sa).file_name().unwrap().to_str().unwrap())),
        "{out}"
    );
    assert!(lines[1].contains("1.026×"), "{out}"); // together_plan.rs computes the predictions
    assert!(lines[2].contains("6.661×"), "{out}");
    assert_eq!(lines[4], "GPU, run      runs   window ms    busy ms    idle ms   energy J");
    assert!(lines[5].starts_with("alone 1          3 "), "{out}");
    assert!(lines[7].starts_with("together         3 "), "{out}");
    assert_eq!(lines[8], "outputs: none compared (no device-to-host copies recorded)");
    assert_eq!(lines[9], format!("report: {}", report.display()));

    let v: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(v["settle_ms"], 100);
    let runs: Vec<&str> = v["runs"].as_array().unwrap().iter().map(|r| r["run"].as_str().unwrap()).collect();
    assert_eq!(
        runs,
        ["alone 1", "alone 2", "together", "together", "alone 2", "alone 1", "alone 1", "alone 2", "together"]
    );
    // Together runs: both tenants' passes; alone runs: one.
    assert_eq!(v["runs"][2]["passes"].as_array().unwrap().len(), 2);
    assert_eq!(v["runs"][0]["passes"][0]["tenant"], 1);
    assert_eq!(v["runs"][1]["passes"][0]["tenant"], 2);
    assert_eq!(v["runs"][0]["busy_ns"], Value::Null); // --no-cupti
    let t = &v["tenants"];
    for (i, tenant) in t.as_array().unwrap().iter().enumerate() {
        // Each run starts from the memory kept at the phase's start (not the ops before it again).
        assert_eq!(tenant["setup"]["phase_start"], "snapshot", "tenant {i}");
        let m = &tenant["measured"];
        assert_eq!(m["alone_ms"].as_array().unwrap().len(), 3, "tenant {i}");
        assert_eq!(m["together_ms"].as_array().unwrap().len(), 3, "tenant {i}");
        // Paced by the recorded host gaps: a pass lasts at least the gaps it waits.
        let min = m["alone_ms"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).fold(f64::INFINITY, f64::min);
        assert!(min >= [0.99, 0.3][i], "tenant {i}: {min} ms");
        assert_eq!(tenant["final_checks"]["checked"], 0);
        assert_eq!(tenant["setup"]["gpu"], "Fake GPU");
    }
    assert_eq!(v["outputs_identical"], true);
    assert_eq!(v["gpu"][2]["run"], "together");
    assert_eq!(v["gpu"][2]["runs"], 3);

    // CUPTI that cannot start: the run goes on without busy times, a note per tenant says so.
    let args = [
        sa,
        sb,
        "--together",
        "--rounds",
        "1",
        "--cupti-lib",
        "/nonexistent/libcupti.so",
        "--no-energy",
        "--report",
        report.to_str().unwrap(),
    ];
    let (code, out, err) = replay(d.path(), &args, &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains(&format!("note: {sa}: no GPU busy time (CUPTI: ")), "{out}");
    assert!(out.contains(&format!("note: {sb}: no GPU busy time (CUPTI: ")), "{out}");
    assert!(out.contains("\ntogether         1 "), "{out}");

    // An image without code for this GPU (the second tenant's): one line, nothing run.
    let b2 = launches();
    let db2 = finish(&b2, "580.159.04");
    let sb2 = db2.to_str().unwrap();
    let report2 = d.path().join("refused.json");
    let args =
        [sa, sb2, "--together", "--rounds", "3", "--no-cupti", "--no-energy", "--report", report2.to_str().unwrap()];
    let (code, out, err) = replay(d.path(), &args, &[("FAKECUDA_NO_BINARY_FOR", sb2)]);
    assert_eq!(code, 1, "{err}");
    assert_eq!(out, "");
    let last = err.lines().last().unwrap();
    assert!(last.starts_with(&format!("replay: error: {sb2}: cuModuleLoadData of image ")), "{last}");
    assert!(
        last.ends_with(
            ": CUDA_ERROR_NO_BINARY_FOR_GPU (an image without code for this GPU's architecture: record this tenant on this GPU model)"
        ),
        "{last}"
    );
    assert!(!err.contains("round 1/"), "{err}");
    assert!(!report2.exists());

    // More memory than this device has (the recorded GPU's would do): one line, no tenant started.
    let (code, out, err) = replay(d.path(), &args, &[("FAKECUDA_TOTAL_MEM", "1000000000")]);
    assert_eq!(code, 1, "{err}");
    assert_eq!(out, "");
    assert!(err.starts_with("replay: error: the tenants need 1028.1 MiB of GPU memory together ("), "{err}");
    assert!(
        err.ends_with("more than the GPU's 953.7 MiB (cuDeviceTotalMem of device 0): run fewer of them together\n"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
}
