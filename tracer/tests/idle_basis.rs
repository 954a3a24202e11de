//! Without measured (`gpu` lines) or calibrated (`--durations`) kernel
//! durations, no command prints a busy time or a busy/idle share: the
//! idle share is "unknown", the idle time only "idle ≥ X (lower bound)"
//! (issue 16). With a calibration the figures say where it came from.
use std::path::{Path, PathBuf};

use serde_json::Value;

mod command;
use command::tracer;

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tracer-idle-basis-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

/// Lines that state a busy time as a figure ("busy 4.534 s", a "GPU busy"
/// column or legend; "GPU busy/idle share: unknown" is not one).
fn busy_figures(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| {
            l.match_indices("GPU busy").any(|(i, _)| !l[i + 8..].starts_with("/idle"))
                || l.match_indices("busy ").any(|(i, _)| l[i + 5..].starts_with(|c: char| c.is_ascii_digit()))
        })
        .map(str::to_string)
        .collect()
}

/// Every busy/idle-share field of a JSON output is null, every idle basis `lower_bound`.
fn json_has_no_busy(v: &Value, path: &str, found: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let p = format!("{path}.{k}");
                if (k == "busy_ns" || k == "gpu_busy_ns" || k == "idle_share" || k == "gpu_idle_share") && !x.is_null()
                {
                    found.push(format!("{p} = {x}"));
                }
                if k == "idle_basis" && x != "lower_bound" {
                    found.push(format!("{p} = {x}"));
                }
                json_has_no_busy(x, &p, found);
            }
        }
        Value::Array(a) => a.iter().enumerate().for_each(|(i, x)| json_has_no_busy(x, &format!("{path}[{i}]"), found)),
        _ => {}
    }
}

fn bound_only_outputs(trace: &str) {
    for args in [vec!["gaps", trace], vec!["report", trace], vec!["summary", trace]] {
        let (rc, out, err) = tracer(&args);
        assert_eq!(rc, 0, "{args:?}: {err}");
        assert_eq!(busy_figures(&out), Vec::<String>::new(), "{args:?}:\n{out}");
        if args[0] != "summary" {
            assert!(out.contains("unknown"), "{args:?} does not say the idle share is unknown:\n{out}");
            assert!(out.contains("lower bound"), "{args:?}:\n{out}");
        }
    }
    let (_, gaps, _) = tracer(&["gaps", trace]);
    assert!(gaps.contains("busy/idle share unknown, idle ≥ "), "{gaps}");
    assert!(
        gaps.contains("time a second tenant could use if a context switch costs X (Σ max(0, gap − 2X)), a lower bound")
    );
    let (_, report, _) = tracer(&["report", trace]);
    assert!(report.contains("GPU busy/idle share: unknown"), "{report}");
    for args in [vec!["gaps", trace, "--json", "--list"], vec!["report", trace, "--json"]] {
        let (rc, out, err) = tracer(&args);
        assert_eq!(rc, 0, "{args:?}: {err}");
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["idle_basis"], "lower_bound", "{args:?}");
        let mut found = vec![];
        json_has_no_busy(&v, "", &mut found);
        assert_eq!(found, Vec::<String>::new(), "{args:?}");
    }
    // plot --json: the GPU rows of the bound have no busy figure (the
    // threads' busy_ns is CPU time in calls, not GPU time).
    let (rc, out, err) = tracer(&["plot", trace, "--json"]);
    assert_eq!(rc, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let gpu = v["timeline"]["gpu"].as_array().unwrap();
    assert!(!gpu.is_empty());
    for row in gpu {
        let mut found = vec![];
        json_has_no_busy(row, "timeline.gpu[]", &mut found);
        assert_eq!(found, Vec::<String>::new());
        assert_eq!(row["idle_basis"], "lower_bound", "{row}");
        assert!(row["possibly_busy_ns"].as_u64().unwrap() > 0, "{row}");
    }
    let p = tmp("bound.perfetto.json");
    let (rc, _, err) = tracer(&["export", trace, "--format", "perfetto", "-o", p.to_str().unwrap()]);
    assert_eq!(rc, 0, "{err}");
    let e: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    assert_eq!(e["otherData"]["idle_basis"], "lower_bound");
    let gpu_names: Vec<&str> = e["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| x["name"] == "process_name")
        .filter_map(|x| x["args"]["name"].as_str())
        .filter(|n| n.starts_with("GPU "))
        .collect();
    assert!(!gpu_names.is_empty());
    assert!(gpu_names.iter().all(|n| n.contains("busy/idle share unknown")), "{gpu_names:?}");
    let dir = tmp("plots");
    let (rc, _, err) = tracer(&["plot", trace, "-o", dir.to_str().unwrap(), "--format", "svg"]);
    assert_eq!(rc, 0, "{err}");
    let mut svgs = 0;
    for f in std::fs::read_dir(&dir).unwrap() {
        let f = f.unwrap().path();
        let svg = std::fs::read_to_string(&f).unwrap();
        assert!(!svg.contains("GPU busy ("), "{} draws a busy legend", f.display());
        if f.to_string_lossy().ends_with("_timeline.svg") {
            assert!(svg.contains("GPU possibly busy (bound; idle ≥ the gaps)"), "{}", f.display());
        }
        if f.to_string_lossy().ends_with("_gaps.svg") {
            assert!(svg.contains("a lower bound"), "{}", f.display());
        }
        svgs += 1;
    }
    assert_eq!(svgs, 3);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn committed_recording_without_gpu_lines() {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../traces/simple_inference.jsonl.gz");
    bound_only_outputs(p.to_str().unwrap());
    let (_, gaps, _) = tracer(&["gaps", p.to_str().unwrap()]);
    assert!(
        gaps.contains(
            "== gpu 0 == window 236.31 ms (first GPU work to last), busy/idle share unknown, idle ≥ 188.54 ms (≥ \
             79.8%, lower bound) in 9 certain gaps"
        ),
        "{gaps}"
    );
}

fn launch(ts: u64) -> String {
    format!(
        r#"{{"ts":{ts},"pid":1,"tid":1,"type":"kernel","op":"launch","name":"cuLaunchKernel","kernel":"kA","grid":[4,1,1],"block":[128,1,1],"shared_mem":0,"stream":"0x0","duration_us":1.0,"ret":0}}"#
    )
}
fn sync(ts: u64) -> String {
    format!(
        r#"{{"ts":{ts},"pid":1,"tid":1,"type":"sync","op":"stream_synchronize","name":"cuStreamSynchronize","stream":"0x0","duration_us":50.0,"ret":0}}"#
    )
}

#[test]
fn hand_built_trace_bound_then_calibrated() {
    // launches at 1.000, 1.100 and 2.000 ms, each followed by a 50 µs synchronization
    let lines =
        [launch(1_000_000), sync(1_001_000), launch(1_100_000), sync(1_101_000), launch(2_000_000), sync(2_001_000)];
    let t = tmp("hand.jsonl");
    std::fs::write(&t, lines.join("\n") + "\n").unwrap();
    let ts = t.to_str().unwrap();
    bound_only_outputs(ts);
    // bound: possibly busy [1.000, 1.051] [1.100, 1.151] [2.000, 2.051] ms; certain gaps 49 + 849 µs
    let (_, out, _) = tracer(&["gaps", ts, "--json"]);
    let v: Value = serde_json::from_str(&out).unwrap();
    let o = &v["scopes"][0]["overall"];
    assert_eq!((o["idle_ns"].as_u64(), o["window_ns"].as_u64()), (Some(898_000), Some(1_051_000)));
    assert!((o["idle_share_lower_bound"].as_f64().unwrap() - 898_000.0 / 1_051_000.0).abs() < 1e-12, "{o}");

    // a calibration: kA runs 10 µs, from each launch's return (1.001, 1.101, 2.001 ms)
    let cal = tmp("cal.json");
    std::fs::write(
        &cal,
        r#"{"format":"tracer-kernel-durations","version":1,"source":"test","gpu":null,"kernels":[{"kernel":"kA","grid":[4,1,1],"block":[128,1,1],"shared_mem":0,"count":1,"median_ns":10000,"p10_ns":10000,"p90_ns":10000}]}"#,
    )
    .unwrap();
    let c = cal.to_str().unwrap();
    let (rc, out, err) = tracer(&["gaps", ts, "--durations", c, "--json"]);
    assert_eq!(rc, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!((&v["idle_basis"], v["calibrated_from"].as_str()), (&Value::from("calibrated"), Some(c)));
    let o = &v["scopes"][0]["overall"];
    // busy 3 x 10 µs in [1.001, 2.011] ms
    assert_eq!((o["busy_ns"].as_u64(), o["idle_ns"].as_u64()), (Some(30_000), Some(980_000)));
    assert!((o["idle_share"].as_f64().unwrap() - 980_000.0 / 1_010_000.0).abs() < 1e-12, "{o}");
    assert_eq!(o["idle_share_lower_bound"], Value::Null);
    let (_, text, _) = tracer(&["gaps", ts, "--durations", c]);
    assert!(text.contains(&format!("idle figures: inferred (calibrated from {c})")), "{text}");
    assert!(text.contains("busy 30.0 µs, idle 980.0 µs (97.0%) in 2 gaps"), "{text}");
    let (_, text, _) = tracer(&["report", ts, "--durations", c]);
    assert!(text.contains(&format!("GPU busy/idle: inferred (calibrated from {c})")), "{text}");
    std::fs::remove_dir_all(t.parent().unwrap()).ok();
}
