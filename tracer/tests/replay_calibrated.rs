//! A replayable recording calibrated from its own replay (issue 16):
//! `replay NAME.rec --mode isolated` writes NAME.rec/kernel-durations.json,
//! and `tracer gaps|report|export NAME.rec` then infer the GPU timeline from
//! it, say so, and report the kernels it lacks (share of launches and of
//! estimated time). The recording and the durations file here are hand-built
//! in the shapes tracer and replay write, with known answers.

use serde_json::{Value, json};

mod command;
use command::{launch, tracer};

fn entry(kernel: &str, ns: u64) -> Value {
    json!({"kernel": kernel, "grid": [4, 1, 1], "block": [128, 1, 1], "shared_mem": 0, "count": 1,
        "median_ns": ns, "p10_ns": ns, "p90_ns": ns})
}

#[test]
fn a_recording_is_calibrated_from_its_replay_and_missing_kernels_are_reported() {
    let dir = std::env::temp_dir().join(format!("tracer-replay-calibrated-{}", std::process::id()));
    let rec = dir.join("run.rec");
    std::fs::create_dir_all(&rec).unwrap();
    // gemm at 0 and 1 ms, softmax (never timed by the replay) at 0.5 ms, a sync at 1.1 ms (returns at 1.2 ms)
    let lines = [
        launch(0, "gemm"),
        launch(500_000, "softmax"),
        launch(1_000_000, "gemm"),
        r#"{"ts":1100000,"pid":1,"tid":1,"type":"sync","op":"stream_synchronize","name":"cuStreamSynchronize","stream":"0x0","duration_us":100.0,"ret":0}"#.to_string(),
    ];
    std::fs::write(rec.join("trace.jsonl"), lines.join("\n") + "\n").unwrap();
    let r = rec.to_str().unwrap();

    // before the replay: the bound only
    let (rc, out, err) = tracer(&["gaps", r, "--json"]);
    assert_eq!(rc, 0, "{err}");
    assert_eq!(serde_json::from_str::<Value>(&out).unwrap()["idle_basis"], "lower_bound");
    assert!(!err.contains("kernel-durations.json"), "{err}");

    // what `replay run.rec --mode isolated` writes: gemm 100 µs; also two kernels
    // of other runs (30 and 50 µs), so the median of the file's kernels is 50 µs
    let durations = rec.join("kernel-durations.json");
    let file = json!({"format": "tracer-kernel-durations", "version": 1, "source": "replay isolated", "gpu": "H100",
        "kernels": [entry("gemm", 100_000), entry("other_a", 30_000), entry("other_b", 50_000)], "copies": []});
    std::fs::write(&durations, file.to_string()).unwrap();
    let d = durations.to_str().unwrap();

    let (rc, out, err) = tracer(&["gaps", r, "--json"]);
    assert_eq!(rc, 0, "{err}");
    assert!(err.contains(&format!("GPU timeline inferred with {d} (replay --mode isolated)")), "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        (&v["timeline"], &v["idle_basis"], v["calibrated_from"].as_str()),
        (&json!("inferred"), &json!("calibrated"), Some(d))
    );
    // gemm [1, 101] µs, softmax [501, 551] µs (the median, 50 µs), gemm [1001, 1101] µs
    let o = &v["scopes"][0]["overall"];
    assert_eq!(
        (o["window_ns"].as_u64(), o["busy_ns"].as_u64(), o["idle_ns"].as_u64()),
        (Some(1_100_000), Some(250_000), Some(850_000))
    );
    assert_eq!(
        v["diagnostics"]["coverage"],
        json!({"kernel_launches": 3, "kernel_ns": 250_000, "missing_launches": 1, "missing_ns": 50_000,
            "fallback_ns": 50_000, "missing_kernels": [{"kernel": "softmax", "launches": 1, "estimated_ns": 50_000}]})
    );
    let (rc, text, _) = tracer(&["report", r]);
    assert_eq!(rc, 0);
    assert!(text.contains(&format!("GPU busy/idle: inferred (calibrated from {d})")), "{text}");
    // report wraps prose at 160 columns (continuation lines indented by 2)
    let flat = text.replace("\n  ", " ");
    assert!(
        flat.contains(
            "note: calibration coverage: 1 of 3 kernel launches (33.3%) of 1 kernel(s) missing from the calibration, \
             timed at 50.0 µs each (the median of the calibrated kernels): 50.0 µs of 250.0 µs estimated kernel time \
             (20.0%); most launched: softmax ×1"
        ),
        "{text}"
    );
    let (rc, text, _) = tracer(&["gaps", r]);
    assert_eq!(rc, 0);
    assert!(text.contains("calibration coverage: 1 of 3 kernel launches (33.3%)"), "{text}");
    // --timeline bound ignores it; an explicit --durations wins over it
    let (_, out, err) = tracer(&["gaps", r, "--json", "--timeline", "bound"]);
    assert_eq!(serde_json::from_str::<Value>(&out).unwrap()["idle_basis"], "lower_bound", "{err}");
    let other = dir.join("other.json");
    std::fs::write(
        &other,
        json!({"format": "tracer-kernel-durations", "version": 1, "source": "cupti", "gpu": null,
        "kernels": [entry("gemm", 10_000), entry("softmax", 10_000)]})
        .to_string(),
    )
    .unwrap();
    let (_, out, err) = tracer(&["gaps", r, "--json", "--durations", other.to_str().unwrap()]);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["calibrated_from"].as_str(), other.to_str(), "{err}");
    assert_eq!(v["diagnostics"]["coverage"]["missing_launches"], 0);
    std::fs::remove_dir_all(&dir).ok();
}
