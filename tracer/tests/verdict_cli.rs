//! The verdict at the top of `tracer report` on the committed recordings
//! (rules in docs/analysis.md#verdict), written out: eager GPT-2 at batch 1
//! and batch 8, CUDA-graph decode (captured once, replayed per token), and
//! the two-rank tensor-parallel job (no kernel durations: undetermined).
use std::path::Path;

use serde_json::Value;

mod command;
use command::tracer;

fn verdict(rel: &str) -> (Value, String) {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(rel);
    let p = p.to_str().unwrap();
    let (rc, out, err) = tracer(&["report", p, "--json"]);
    assert_eq!(rc, 0, "{err}");
    let r: Value = serde_json::from_str(&out).unwrap();
    let (rc, text, err) = tracer(&["report", p]);
    assert_eq!(rc, 0, "{err}");
    (r["verdict"].clone(), text)
}

/// (phase, verdict) of every phase, and the run's verdict and phase.
fn labels(v: &Value) -> (String, String, Vec<(String, String)>) {
    let s = |x: &Value| x.as_str().unwrap().to_string();
    let phases = v["phases"].as_array().unwrap().iter().map(|p| (s(&p["phase"]), s(&p["label"]))).collect();
    (s(&v["label"]), s(&v["phase"]), phases)
}

fn evidence(v: &Value, phase: &str) -> String {
    let p = v["phases"].as_array().unwrap().iter().find(|p| p["phase"] == phase).unwrap();
    p["evidence"].as_str().unwrap().to_string()
}

fn owned(v: &[(&str, &str)]) -> Vec<(String, String)> {
    v.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
}

#[test]
fn eager_gpt2_batch_1_is_launch_bound() {
    let (v, text) = verdict("docs/graphs/g_eager_b1.jsonl.zst");
    assert_eq!(
        labels(&v),
        (
            "launch/host-bound".into(),
            "run".into(),
            owned(&[("import", "idle between phases"), ("warmup", "launch/host-bound"), ("run", "launch/host-bound")])
        )
    );
    assert_eq!(evidence(&v, "run"), "GPU idle 99.1%; idle split: CPU between calls 99.6%, submission 0.3%");
    let split = &v["phases"][2]["idle_split"];
    assert_eq!(v["phases"][2]["bound"], "host");
    assert!(split["cpu_between_calls_ns"].as_u64().unwrap() > 100 * split["submission_ns"].as_u64().unwrap());
    // the text says it third line, before the tables
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[2], "verdict: launch/host-bound (phase run, the most GPU submissions)");
    assert_eq!(
        lines[8],
        "                     try: less host time between launches: CUDA graphs (torch.compile mode=\"reduce-overhead\"), \
         larger batches, less Python per step"
    );
}

#[test]
fn eager_gpt2_batch_8_is_still_launch_bound() {
    let (v, _) = verdict("docs/graphs/g_eager_b8.jsonl.zst");
    assert_eq!(
        labels(&v),
        (
            "launch/host-bound".into(),
            "run".into(),
            owned(&[("import", "idle between phases"), ("warmup", "launch/host-bound"), ("run", "launch/host-bound")])
        )
    );
    assert_eq!(evidence(&v, "run"), "GPU idle 98.2%; idle split: CPU between calls 99.8%, submission 0.2%");
}

#[test]
fn cuda_graph_decode_is_host_bound_between_replays() {
    let (v, text) = verdict("docs/graphs/g_capture.jsonl.zst");
    assert_eq!(
        labels(&v),
        (
            "launch/host-bound".into(),
            "run".into(),
            owned(&[
                ("import", "idle between phases"),
                ("warmup", "launch/host-bound"),
                ("capture", "idle between phases"),
                ("run", "launch/host-bound")
            ])
        )
    );
    assert_eq!(
        evidence(&v, "run"),
        "GPU idle 97.1%; idle split: CPU between calls 98.6%, other 1.4% (mostly module loading)"
    );
    assert!(v["phases"][3]["graph_launches"].as_u64().unwrap() > 0);
    assert!(
        text.contains(
            "try: it already replays CUDA graphs: capture more of each step in one graph, less host work between \
             replays, larger batches\n"
        ),
        "{text}"
    );
}

#[test]
fn tensor_parallel_job_without_kernel_durations_is_undetermined() {
    let (v, text) = verdict("docs/multi-gpu/tp.jsonl.zst");
    assert_eq!(
        labels(&v),
        (
            "undetermined".into(),
            "generate".into(),
            owned(&[
                ("import", "idle between phases"),
                ("model_load", "idle between phases"),
                ("warmup", "undetermined"),
                ("generate", "undetermined")
            ])
        )
    );
    assert_eq!(
        evidence(&v, "generate"),
        "GPU idle ≥ 0.0% (lower bound); the host blocked in synchronization 0.0% of the phase; the GPU's busy time \
         is unknown (no kernel durations)"
    );
    assert!(v["phases"][3]["idle_is_lower_bound"].as_bool().unwrap());
    assert!(
        text.contains("try: record with --gpu-timestamps (or pass --durations FILE) to measure the GPU's busy time\n")
    );
}
