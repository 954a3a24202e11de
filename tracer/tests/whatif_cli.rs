//! `tracer whatif` end to end: a hand-built workload "recorded" on one GPU
//! and on another (its GEMM twice as fast there), the other's durations
//! calibrated by `tracer calibrate`, the prediction compared with the
//! other's trace; bad input; the committed GPT-2 trace.
use std::path::PathBuf;

use serde_json::Value;

mod command;
use command::{launch, tracer};

const US: u64 = 1000;
const GEOM: &str = r#","grid":[4,1,1],"block":[128,1,1],"shared_mem":0"#;

fn gpu(start: u64, end: u64, name: &str) -> String {
    format!(
        r#"{{"ts":{start},"end_ts":{end},"pid":1,"tid":0,"type":"gpu","op":"kernel","name":"{name}","source":"cupti","device":0,"context_id":1,"stream_id":7,"stream":"0x0","correlation_id":1{GEOM}}}"#
    )
}

fn marker(ts: u64, op: &str, label: &str) -> String {
    format!(r#"{{"ts":{ts},"pid":1,"tid":1,"type":"marker","op":"{op}","name":"marker","label":"{label}"}}"#)
}

/// Three iterations of GEMM (`gemm_us`), elementwise kernel (20 µs) and a
/// stream synchronization that returns 5 µs after the GPU is done; 65 µs of
/// host work before the next iteration. On `model`.
fn workload(model: &str, gemm_us: u64) -> String {
    let mut l = vec![
        format!(
            r#"{{"type":"header","format":"tracer-jsonl","format_version":1,"pid":1,"command":["./train"],"gpus":[{{"bus":"0000:00:06.0","model":"{model}"}}]}}"#
        ),
        marker(900 * US, "phase", "train"),
    ];
    let mut at = 1000 * US;
    for i in 0..3 {
        l.push(marker(at, "iteration", &i.to_string()));
        let g1 = at + (10 + gemm_us) * US;
        l.push(launch(at, "nvjet_sm90_gemm"));
        l.push(gpu(at + 10 * US, g1, "nvjet_sm90_gemm"));
        l.push(launch(at + 10 * US, "vectorized_elementwise_kernel"));
        l.push(gpu(g1, g1 + 20 * US, "vectorized_elementwise_kernel"));
        let ret = g1 + 25 * US;
        l.push(format!(
            r#"{{"ts":{},"pid":1,"tid":1,"type":"sync","op":"stream_synchronize","name":"cuStreamSynchronize","stream":"0x0","duration_us":{},"ret":0}}"#,
            at + 20 * US,
            (ret - at - 20 * US) as f64 / 1000.0
        ));
        at = ret + 65 * US;
    }
    l.push(marker(at, "phase", "end"));
    l.push(r#"{"type":"footer","lost":{"total":0}}"#.into());
    l.join("\n") + "\n"
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tracer-whatif-cli-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

#[test]
fn predicts_the_other_gpus_trace_from_its_durations() {
    let (src, dst, durs) = (tmp("h100.jsonl"), tmp("h200.jsonl"), tmp("h200.durations.json"));
    std::fs::write(&src, workload("NVIDIA H100 80GB HBM3", 100)).unwrap();
    std::fs::write(&dst, workload("NVIDIA H200", 50)).unwrap();
    let (rc, _, err) = tracer(&["calibrate", dst.to_str().unwrap(), "-o", durs.to_str().unwrap(), "--force"]);
    assert_eq!(rc, 0, "{err}");
    // the recorded host program: the other GPU's trace was made by the same host program
    let args =
        ["whatif", src.to_str().unwrap(), "--durations", durs.to_str().unwrap(), "--pacing", "recorded", "--against"];
    let (rc, out, err) = tracer(&[&args[..], &[dst.to_str().unwrap(), "--json"]].concat());
    assert_eq!(rc, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let p = &v["prediction"];
    assert_eq!(p["pacing"]["pacing"], "recorded");
    assert_eq!(p["recorded"]["gpu"], "NVIDIA H100 80GB HBM3");
    assert_eq!(p["sources"]["ops"], 6);
    assert_eq!(p["sources"]["kernels_exact"], 6);
    assert_eq!(p["sources"]["waits"], 3);
    // iterations 200 µs recorded, 150 µs predicted and measured; busy 120 -> 70 µs
    let it: Vec<(u64, u64)> = p["predicted"]["iterations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| (x["dur_ns"].as_u64().unwrap(), x["busy_ns"].as_u64().unwrap()))
        .collect();
    assert_eq!(it, [(150 * US, 70 * US); 3]);
    assert_eq!(v["measured"]["gpu"], "NVIDIA H200");
    let rows = v["comparison"]["rows"].as_array().unwrap();
    let row = |w: &str| rows.iter().find(|r| r["what"] == w).unwrap_or_else(|| panic!("{w}: {rows:?}"));
    assert_eq!(row("iteration time (median)")["recorded_ns"], 200 * US);
    assert_eq!(row("iteration time (median)")["predicted_ns"], 150 * US);
    assert_eq!(row("iteration time (median)")["actual_ns"], 150 * US);
    assert_eq!(row("iteration time (median)")["error_pct"], 0.0);
    assert_eq!(row("GPU busy")["actual_ns"], 210 * US);
    assert_eq!(row("GPU busy")["error_pct"], 0.0);
    assert_eq!(row("  gemm")["unchanged_error_pct"], 100.0);
    assert_eq!(row("run time")["predicted_ns"], 550 * US);
    assert_eq!(v["comparison"]["worst_error_pct"], 0.0);
    assert_eq!(v["comparison"]["iterations"], serde_json::json!([3, 3]));
    // the text
    let (rc, out, err) = tracer(&[&args[..], &[dst.to_str().unwrap()]].concat());
    assert_eq!(rc, 0, "{err}");
    assert!(out.starts_with("what-if: recorded on NVIDIA H100 80GB HBM3, kernel durations from "), "{out}");
    assert!(out.contains("against the trace measured on NVIDIA H200 (3 iterations recorded, 3 there):"), "{out}");
    assert!(out.contains("worst error (iteration time and busy, GPU busy, families over 5 % of the busy time): 0.0 %"));
    // report --durations on a measured trace says the file is not used, and what would use it
    let (rc, _, err) = tracer(&["report", src.to_str().unwrap(), "--durations", durs.to_str().unwrap()]);
    assert_eq!(rc, 0, "{err}");
    assert!(
        err.contains("has a measured GPU timeline, which is used: --durations") && err.contains("tracer whatif"),
        "{err}"
    );
    let line = out.lines().find(|l| l.starts_with("iteration time (median of 3)")).unwrap();
    assert_eq!(line.split_whitespace().collect::<Vec<_>>()[5..], ["200.0", "µs", "150.0", "µs", "-25.0", "%"]);
}

#[test]
fn bad_input_is_refused_in_one_line() {
    let (src, untimed, durs) = (tmp("b_h100.jsonl"), tmp("b_untimed.jsonl"), tmp("b_d.json"));
    std::fs::write(&src, workload("NVIDIA H100 80GB HBM3", 100)).unwrap();
    std::fs::write(&untimed, launch(1000, "k") + "\n").unwrap();
    let (rc, _, err) = tracer(&["calibrate", src.to_str().unwrap(), "-o", durs.to_str().unwrap(), "--force"]);
    assert_eq!(rc, 0, "{err}");
    let (rc, _, err) = tracer(&["whatif", untimed.to_str().unwrap(), "--durations", durs.to_str().unwrap()]);
    assert_eq!(rc, 2, "{err}");
    assert!(
        err.contains("b_untimed.jsonl: no measured GPU activity; the trace to predict from must be recorded with --gpu-timestamps"),
        "{err}"
    );
    let (rc, _, err) = tracer(&[
        "whatif",
        src.to_str().unwrap(),
        "--durations",
        durs.to_str().unwrap(),
        "--against",
        untimed.to_str().unwrap(),
    ]);
    assert_eq!(rc, 2, "{err}");
    assert!(err.contains("the --against trace must be recorded with --gpu-timestamps"), "{err}");
    let (rc, _, err) = tracer(&["whatif", src.to_str().unwrap(), "--durations", src.to_str().unwrap()]);
    assert_eq!(rc, 1, "{err}");
    assert!(err.contains("b_h100.jsonl") && err.contains("not a kernel-durations file"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

/// Host speed: the host program's time between calls divided by F, the calls' own time (the
/// synchronization) kept; compensated pacing (the default) takes the trap per probe hit out of
/// the host time and says what it could not correct.
#[test]
fn host_speed_and_compensated_pacing() {
    let (src, dst, durs) = (tmp("hs-h100.jsonl"), tmp("hs-h200.jsonl"), tmp("hs-h200.durations.json"));
    std::fs::write(&src, workload("NVIDIA H100 80GB HBM3", 100)).unwrap();
    std::fs::write(&dst, workload("NVIDIA H200", 50)).unwrap();
    let (rc, _, err) = tracer(&["calibrate", dst.to_str().unwrap(), "-o", durs.to_str().unwrap(), "--force"]);
    assert_eq!(rc, 0, "{err}");
    let base = ["whatif", src.to_str().unwrap(), "--durations", durs.to_str().unwrap(), "--json"];
    let iterations = |v: &Value| -> Vec<u64> {
        v["prediction"]["predicted"]["iterations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x["dur_ns"].as_u64().unwrap())
            .collect()
    };
    // Twice as fast a host: 20 µs to the sync's entry -> 10, 65 µs after its return -> 32.5; the
    // GEMM (50 µs there) still starts 10 µs after its launch, the sync returns 5 µs after the
    // GPU is done (at 85 µs): 117.5 µs an iteration instead of 150.
    let (rc, out, err) = tracer(&[&base[..], &["--pacing", "recorded", "--host-speed", "2"]].concat());
    assert_eq!(rc, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(iterations(&v), [117_500; 3]);
    assert_eq!(v["prediction"]["pacing"]["host_speed"], 2.0);
    // Half as fast: 40 µs to the sync's entry (the GPU done at 80), 130 after: 215 µs.
    let (rc, out, err) = tracer(&[&base[..], &["--pacing", "recorded", "--host-speed", "0.5"]].concat());
    assert_eq!(rc, 0, "{err}");
    assert_eq!(iterations(&serde_json::from_str(&out).unwrap()), [215_000; 3]);
    // Compensated (default), no bpf_stats nor sched lines: 700 ns a probe hit, the entries of 8
    // calls in the 9 host gaps between the return-probed calls (5 µs launches, the syncs; the
    // first launch's entry is before them, every return inside its call).
    let (rc, out, err) = tracer(&base);
    assert_eq!(rc, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let p = &v["prediction"]["pacing"];
    assert_eq!(
        (p["pacing"].clone(), p["removed_ns"].clone(), p["gaps"].clone(), p["calls"].clone(), p["clamped"].clone()),
        (
            serde_json::json!("compensated"),
            serde_json::json!(5_600),
            serde_json::json!(9),
            serde_json::json!(9),
            serde_json::json!(0)
        )
    );
    assert_eq!(p["missing"].as_array().unwrap().len(), 3);
    let (rc, out, err) = tracer(&base[..4]);
    assert_eq!(rc, 0, "{err}");
    assert!(out.contains("  pacing: compensated: 0.006 ms of tracing removed from 9 host gaps (622 ns per probed call, 9 calls), 0 gaps clamped at 0\n"), "{out}");
    assert!(out.contains("  pacing: not corrected: no bpf_stats in the footer"), "{out}");
    // the machine's usual speed: not in this footer, and said why, as replay says it; kept
    // with --recorded-speed, which asks for the recorded speed, so nothing is missing then
    assert!(
        out.contains("  pacing: not corrected: the machine's usual speed (no host_speed in the footer: recorded without BPF statistics, or before it was kept)\n"),
        "{out}"
    );
    let (rc, out, err) = tracer(&[&base[..], &["--recorded-speed"]].concat());
    assert_eq!(rc, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["prediction"]["pacing"]["missing"].as_array().unwrap().len(), 2);
    // A footer whose process ran twice as slow as its machine's usual speed: compensated pacing
    // halves its host gaps, exactly as --host-speed 2 does with the recorded speed kept; with
    // --recorded-speed the footer's factor is not applied
    let slow = workload("NVIDIA H100 80GB HBM3", 100).replacen(
        r#"{"type":"footer","lost":{"total":0}}"#,
        r#"{"type":"footer","lost":{"total":0},"host_speed":{"gauge_ns":2000.0,"reference_ns":1000.0,"recordings":5,"factor":2.0,"runs":900}}"#,
        1,
    );
    let src3 = tmp("hs-h100-slow.jsonl");
    std::fs::write(&src3, slow).unwrap();
    let slow_base = ["whatif", src3.to_str().unwrap(), "--durations", durs.to_str().unwrap(), "--json"];
    let (rc, out, err) = tracer(&slow_base);
    assert_eq!(rc, 0, "{err}");
    let usual: Value = serde_json::from_str(&out).unwrap();
    let (rc, out, err) = tracer(&[&base[..], &["--recorded-speed", "--host-speed", "2"]].concat());
    assert_eq!(rc, 0, "{err}");
    let twice: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(iterations(&usual), iterations(&twice));
    assert_eq!(usual["prediction"]["pacing"]["host_speed"], 2.0);
    assert_eq!(usual["prediction"]["pacing"]["missing"].as_array().unwrap().len(), 2);
    let (rc, out, err) = tracer(&[&slow_base[..], &["--recorded-speed"]].concat());
    assert_eq!(rc, 0, "{err}");
    let kept: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(kept["prediction"]["pacing"]["host_speed"], 1.0);
    let (rc, out, err) = tracer(&[&base[..], &["--recorded-speed"]].concat());
    assert_eq!(rc, 0, "{err}");
    assert_eq!(iterations(&kept), iterations(&serde_json::from_str(&out).unwrap()));
    // Bad values: one line naming the option; a calibration file against a trace without one.
    for (flag, val, want) in [
        ("--host-speed", "0", "invalid value '0' for '--host-speed <F|FILE>': 0: not a factor above 0"),
        ("--pacing", "raw", "invalid value 'raw' for '--pacing <HOW>': \"raw\": expected compensated or recorded"),
        ("--probe-trap-ns", "x", "invalid value 'x' for '--probe-trap-ns <NS>': x: not a time in ns (0 or more)"),
    ] {
        let (rc, _, err) = tracer(&[&base[..], &[flag, val]].concat());
        assert_eq!(rc, 2, "{err}");
        assert!(err.contains(want), "{flag} {val}: {err}");
    }
    let cal = tmp("hs-target.json");
    std::fs::write(&cal, r#"{"workload": "sha256-64KiB-x16+mix-2^18 v1", "ns": 4000000, "runs_ns": []}"#).unwrap();
    let (rc, _, err) = tracer(&[&base[..], &["--host-speed", cal.to_str().unwrap()]].concat());
    assert_eq!(rc, 2, "{err}");
    assert!(err.contains("the recording has no host_calibration in its header"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    // With one in the header: 8 ms recorded / 4 ms there = 2, the figures of --host-speed 2.
    let text = workload("NVIDIA H100 80GB HBM3", 100).replacen(
        r#""command":["./train"]"#,
        r#""command":["./train"],"host_calibration":{"workload":"sha256-64KiB-x16+mix-2^18 v1","ns":8000000,"runs_ns":[]}"#,
        1,
    );
    let src2 = tmp("hs-h100-cal.jsonl");
    std::fs::write(&src2, text).unwrap();
    let (rc, out, err) = tracer(&[
        "whatif",
        src2.to_str().unwrap(),
        "--durations",
        durs.to_str().unwrap(),
        "--json",
        "--pacing",
        "recorded",
        "--host-speed",
        cal.to_str().unwrap(),
    ]);
    assert_eq!(rc, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(iterations(&v), [117_500; 3]);
    assert_eq!(v["prediction"]["pacing"]["host_speed"], 2.0);
}

#[test]
fn committed_gpt2_trace_every_measured_op_placed_once() {
    let trace = concat!(env!("CARGO_MANIFEST_DIR"), "/../traces/transformer_inference_gpu.jsonl.gz");
    let durs = tmp("gpt2.durations.json");
    let (rc, _, err) = tracer(&["calibrate", trace, "-o", durs.to_str().unwrap(), "--force"]);
    assert_eq!(rc, 0, "{err}");
    let (rc, out, err) = tracer(&["whatif", trace, "--durations", durs.to_str().unwrap(), "--json"]);
    assert_eq!(rc, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let s = &v["prediction"]["sources"];
    // each of the 12,012 gpu lines is placed exactly once: tied to its call, or as recorded
    assert_eq!(s["ops"].as_u64().unwrap() + s["intervals_unlinked"].as_u64().unwrap(), 12_012, "{s}");
    assert_eq!(s["kernels_kept"], 0, "{s}");
    let rec = &v["prediction"]["recorded"];
    let pred = &v["prediction"]["predicted"];
    // the medians of its own durations: the kernels' summed time within 10 % of the recorded one
    let (a, b) = (rec["kernels_ns"].as_f64().unwrap(), pred["kernels_ns"].as_f64().unwrap());
    assert!((b - a).abs() / a < 0.10, "{a} {b}");
    assert_eq!(rec["iterations"].as_array().unwrap().len(), pred["iterations"].as_array().unwrap().len());
}
