//! `tracer plot` on a committed recording: the six files, valid and of the
//! expected sizes; a zoom gets its own timeline file; misuse is exit code 2.
//! `tracer plot RECORDED --compare OTHER` as a user runs it: a committed
//! H100 recording against itself (summary on stdout, the six files), a
//! trace without GPU intervals (exit 1, the message), a reversed window
//! (exit 2).
use std::path::Path;
use std::process::Command;

fn png_size(p: &Path) -> (u32, u32) {
    let b = std::fs::read(p).unwrap();
    assert_eq!(&b[..8], b"\x89PNG\r\n\x1a\n", "{}", p.display());
    (u32::from_be_bytes(b[16..20].try_into().unwrap()), u32::from_be_bytes(b[20..24].try_into().unwrap()))
}

#[test]
fn plot_simple_recording() {
    let trace = concat!(env!("CARGO_MANIFEST_DIR"), "/../traces/simple_inference.jsonl.gz");
    let dir = std::env::temp_dir().join(format!("tracer-plot-cli-{}", std::process::id()));
    let out = Command::new(env!("CARGO_BIN_EXE_tracer"))
        .args(["plot", trace, "--width", "1000", "-o"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let listed: Vec<String> = String::from_utf8(out.stdout).unwrap().lines().map(String::from).collect();
    let names = ["timeline", "gaps", "phases"];
    let mut expect = Vec::new();
    for e in ["png", "svg"] {
        for n in names {
            expect.push(dir.join(format!("simple_inference_{n}.{e}")).display().to_string());
        }
    }
    assert_eq!(listed, expect);
    // One thread row, one GPU row, no power panel, one legend line, the
    // start-up note and the line naming the phases too narrow to label: 1000 × 345.
    assert_eq!(png_size(&dir.join("simple_inference_timeline.png")), (1000, 345));
    assert_eq!(png_size(&dir.join("simple_inference_gaps.png")).0, 1000);
    let svg = std::fs::read_to_string(dir.join("simple_inference_timeline.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    assert!(svg.contains("tid 409 (main) · 1,941 calls"), "thread label missing");
    assert!(svg.contains("time since start of trace (s)"));
    assert!(svg.contains("Start-up not drawn: the first 6.2 s of the trace, before the first GPU work"), "{svg}");
    assert!(svg.contains("Phases too narrow here for their names (left to right): startup, warmup."), "{svg}");
    assert!(svg.contains("GPU 0 · legacy default (bound)"), "stream named");

    let out = Command::new(env!("CARGO_BIN_EXE_tracer"))
        .args(["plot", trace, "--format", "png", "--from", "5.8", "--to", "6.5", "-o"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(dir.join("simple_inference_timeline_5.8-6.5s.png").exists());

    let out = Command::new(env!("CARGO_BIN_EXE_tracer"))
        .args(["plot", trace, "--from", "6", "--to", "5", "-o"])
        .arg(&dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--from must be before --to"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn compare_committed_recording_with_itself() {
    let trace = concat!(env!("CARGO_MANIFEST_DIR"), "/../traces/simple_inference_gpu.jsonl.gz");
    let dir = std::env::temp_dir().join(format!("tracer-plot-compare-cli-{}", std::process::id()));
    let out = Command::new(env!("CARGO_BIN_EXE_tracer"))
        .args(["plot", trace, "--compare", trace, "--width", "1000", "-o"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines[1],
        "          GPU busy 2.16 ms in a 121 ms span (2 %); 88 kernels 659 µs, 10 copies 1.47 ms, 44 sets 33.3 µs"
    );
    assert_eq!(lines[1], lines[4]);
    assert_eq!(
        lines[6],
        "compared / recorded: GPU busy ×1.000 (+0.0 %), span ×1.000 (+0.0 %), kernel time ×1.000 (+0.0 %), idle \
         ×1.000 (+0.0 %)"
    );
    let families: Vec<(&str, &str)> = lines[9..13]
        .iter()
        .map(|l| (l.split_whitespace().next().unwrap(), l.split_whitespace().last().unwrap()))
        .collect();
    assert_eq!(families, [("gemm", "%"), ("elementwise", "%"), ("copy", "%"), ("set", "%")]);
    assert!(lines[9..13].iter().all(|l| l.ends_with("+0.0 %")), "{stdout}");
    let files: Vec<String> = lines[14..].iter().map(|s| s.to_string()).collect();
    let want: Vec<String> = ["timeline.png", "kernels.png", "gaps.png", "timeline.svg", "kernels.svg", "gaps.svg"]
        .iter()
        .map(|f| dir.join(format!("compare_{f}")).display().to_string())
        .collect();
    assert_eq!(files, want);
    assert_eq!(png_size(&dir.join("compare_timeline.png")).0, 1000);
    assert_eq!(png_size(&dir.join("compare_kernels.png")).0, 1000);
    assert_eq!(png_size(&dir.join("compare_gaps.png")).0, 1000);
    let svg = std::fs::read_to_string(dir.join("compare_timeline.svg")).unwrap();
    for label in ["recorded · GPU 0 busy", "compared · GPU 0 busy", "GPU 0 · stream 7"] {
        assert!(svg.contains(label), "{label} missing");
    }

    // OTHER without measured GPU intervals: exit 1, the reason and the remedy.
    let calls_only = concat!(env!("CARGO_MANIFEST_DIR"), "/../traces/simple_inference.jsonl.gz");
    let out = Command::new(env!("CARGO_BIN_EXE_tracer"))
        .args(["plot", trace, "--compare", calls_only, "-o"])
        .arg(&dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("OTHER ")
            && err.contains("simple_inference.jsonl.gz has no measured GPU intervals: make it with `replay`"),
        "{err}"
    );

    // A reversed window: a usage error.
    let out = Command::new(env!("CARGO_BIN_EXE_tracer"))
        .args(["plot", trace, "--compare", trace, "--from", "0.1", "--to", "0.05", "-o"])
        .arg(&dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--from must be before --to"));
    std::fs::remove_dir_all(&dir).unwrap();
}

fn tracer_json(args: &[&str]) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_tracer")).args(args).output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// `tracer report` and `tracer plot` give each phase the same energy (one
/// rule: analysis::energy), on a committed H100 recording with NVML samples.
#[test]
fn plot_and_report_agree_on_phase_energy() {
    let trace = concat!(env!("CARGO_MANIFEST_DIR"), "/../traces/transformer_inference_full.jsonl.gz");
    let from_plot = report_and_plot_phases(trace);
    let names: Vec<(&str, String)> = from_plot.iter().map(|p| (p.0.as_str(), format!("{:.2}", p.3.unwrap()))).collect();
    assert_eq!(
        names,
        [("import", "998.39"), ("model_load", "181.79"), ("warmup", "231.40"), ("generate", "98.56")]
            .map(|(n, j)| (n, j.to_string()))
    );
}

/// Without markers the plot's phases are the ones `tracer report` detects
/// (startup, loading, warmup, steady), not a rule of its own.
#[test]
fn plot_and_report_agree_on_detected_phases() {
    let trace = concat!(env!("CARGO_MANIFEST_DIR"), "/../traces/transformer_inference.jsonl.gz");
    let p = report_and_plot_phases(trace);
    let names: Vec<&str> = p.iter().map(|p| p.0.as_str()).collect();
    assert_eq!(names, ["startup", "loading", "warmup", "steady"]);
    assert!(p.iter().all(|p| p.3.is_none()), "{p:?}");
}

/// (name, start, end, joules) of every phase, asserted equal between
/// `report --json` and `plot --json`.
fn report_and_plot_phases(trace: &str) -> Vec<(String, u64, u64, Option<f64>)> {
    let report = tracer_json(&["report", trace, "--json"]);
    let plot = tracer_json(&["plot", trace, "--json"]);
    let from_report: Vec<(String, u64, u64, Option<f64>)> = report["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let j = p["energy"]["joules"].as_f64();
            (p["name"].as_str().unwrap().to_string(), p["start"].as_u64().unwrap(), p["end"].as_u64().unwrap(), j)
        })
        .collect();
    let from_plot: Vec<(String, u64, u64, Option<f64>)> = plot["phases"]["bars"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            (
                b["label"].as_str().unwrap().to_string(),
                b["start_ns"].as_u64().unwrap(),
                b["end_ns"].as_u64().unwrap(),
                b["joules"].as_f64(),
            )
        })
        .collect();
    assert_eq!(from_plot, from_report);
    from_plot
}

/// A default recording has no return probe on launches: those calls are
/// instants, drawn and counted (24,692 of the 29,335 calls; 7,999 calls,
/// 7,629 of them instants and 7,033 launches, between 17 and 17.3 s).
#[test]
fn plot_counts_entry_only_calls() {
    let trace = concat!(env!("CARGO_MANIFEST_DIR"), "/../traces/transformer_inference_full.jsonl.gz");
    let f = tracer_json(&["plot", trace, "--from", "17", "--to", "17.3", "--json"]);
    let tl = &f["timeline"];
    assert_eq!(
        tl["notes"][0],
        "29,335 CUDA calls (24,692 without a return probe, drawn as ticks) on 1 thread; 23,872 GPU intervals on \
         2 streams; 1,903 power samples; 8 markers"
    );
    let row = &tl["threads"][0];
    assert_eq!(row["label"], "tid 502 (main) · 29,335 calls");
    assert_eq!((row["calls"].as_u64(), row["instants"].as_u64()), (Some(7_999), Some(7_629)));
    assert_eq!(
        row["by_kind"],
        serde_json::json!({"launch": 7_033, "memcpy/memset": 306, "other call": 602, "synchronize": 58})
    );
    // The picture: launches (blue ticks) in the CPU row.
    let dir = std::env::temp_dir().join(format!("tracer-plot-instants-{}", std::process::id()));
    let out = Command::new(env!("CARGO_BIN_EXE_tracer"))
        .args(["plot", trace, "--format", "svg", "--from", "17", "--to", "17.3", "-o"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let svg = std::fs::read_to_string(dir.join("transformer_inference_full_timeline_17-17.3s.svg")).unwrap();
    assert!(svg.contains("calls without a return probe (instants, no duration)"));
    assert!(svg.contains(">\nlaunch\n</text>"), "no launch legend entry");
    std::fs::remove_dir_all(&dir).unwrap();
}
