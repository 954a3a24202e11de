//! The analysis commands end to end on a hand-built trace with every line
//! type (markers, NVML samples, measured GPU activity) and on a committed
//! recording.
use std::path::{Path, PathBuf};

use serde_json::Value;

mod command;
use command::{launch, tracer};

fn gpu(start: u64, end: u64, op: &str, name: &str, extra: &str) -> String {
    format!(
        r#"{{"ts":{start},"end_ts":{end},"duration_us":{},"pid":1,"tid":0,"type":"gpu","op":"{op}","name":"{name}","source":"cupti","device":0,"context_id":1,"stream_id":7,"stream":"0x0","correlation_id":1{extra}}}"#,
        (end - start) as f64 / 1000.0
    )
}
fn sync(ts: u64) -> String {
    format!(
        r#"{{"ts":{ts},"pid":1,"tid":1,"type":"sync","op":"stream_synchronize","name":"cuStreamSynchronize","stream":"0x0","duration_us":50.0,"ret":0}}"#
    )
}
fn marker(ts: u64, op: &str, label: &str, extra: &str) -> String {
    format!(r#"{{"ts":{ts},"pid":1,"tid":1,"type":"marker","op":"{op}","name":"marker","label":"{label}"{extra}}}"#)
}

const GEOM: &str = r#","grid":[4,1,1],"block":[128,1,1],"shared_mem":0"#;

fn hand_built() -> String {
    let ms = 1_000_000u64;
    let mut l = vec![
        r#"{"type":"header","format":"tracer-jsonl","format_version":1,"pid":1,"command":["./app"],"gpus":[{"bus":"0000:00:06.0","model":"NVIDIA H100 80GB HBM3"}]}"#.to_string(),
        r#"{"ts":0,"pid":1,"tid":1,"type":"process","op":"exec","name":"process","filename":"/usr/bin/app"}"#.into(),
        marker(0, "phase", "load", ""),
        r#"{"ts":1000000,"pid":1,"tid":1,"type":"memory","op":"alloc","name":"cuMemAlloc_v2","size":1048576,"duration_us":100.0,"ret":0}"#.into(),
        marker(10 * ms, "phase", "generate", ""),
        marker(10 * ms, "iteration", "0", r#","tokens":2"#),
        launch(11 * ms, "kA"),
        launch(11 * ms + 100_000, "kA"),
        sync(11 * ms + 200_000),
        launch(12 * ms, "kB"),
        r#"{"ts":12100000,"pid":1,"tid":1,"type":"memcpy","op":"copy","name":"cuMemcpyDtoHAsync_v2","size":4,"direction":"d2h","stream":"0x0","duration_us":3.0,"ret":0}"#.into(),
        sync(12 * ms + 200_000),
        marker(13 * ms, "iteration", "1", r#","tokens":2"#),
        launch(13 * ms, "kA"),
        sync(13 * ms + 100_000),
        marker(20 * ms, "phase", "end", ""),
        gpu(11_010_000, 11_030_000, "kernel", "kA", GEOM),
        gpu(11_110_000, 11_130_000, "kernel", "kA", GEOM),
        gpu(12_010_000, 12_060_000, "kernel", "kB", GEOM),
        gpu(12_110_000, 12_112_000, "memcpy", "memcpy_dtoh", r#","size":4,"direction":"d2h""#),
        gpu(13_010_000, 13_030_000, "kernel", "kA", GEOM),
    ];
    for i in 0..=20u64 {
        l.push(format!(
            r#"{{"ts":{},"pid":0,"tid":0,"type":"power","op":"sample","name":"nvml","gpu":0,"bus_id":"00000000:00:06.0","energy_mj":{},"power_mw":100000,"sm_clock_mhz":1980,"mem_clock_mhz":2619,"util_gpu_pct":10,"util_mem_pct":1,"temp_c":40}}"#,
            i * ms,
            500_000 + 100 * i
        ));
    }
    l.push(r#"{"type":"footer","lost":{"total":0}}"#.into());
    l.join("\n") + "\n"
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tracer-analysis-cli-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

#[test]
fn gaps_report_export_calibrate_compare_on_a_hand_built_trace() {
    let t = tmp("t.jsonl");
    std::fs::write(&t, hand_built()).unwrap();
    let ts = t.to_str().unwrap();

    let (rc, out, err) = tracer(&["gaps", ts, "--json", "--switch-cost-us", "10,100"]);
    assert_eq!(rc, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["timeline"], "measured");
    let g = &v["scopes"][0];
    assert_eq!(g["scope"], "gpu 0");
    let o = &g["overall"];
    // gaps 80, 880, 50, 898 µs in a 2.020 ms window
    assert_eq!(
        (o["window_ns"].as_u64(), o["count"].as_u64(), o["idle_ns"].as_u64()),
        (Some(2_020_000), Some(4), Some(1_908_000))
    );
    assert_eq!(
        (o["long_count"].as_u64(), o["long_ns"].as_u64(), o["max_ns"].as_u64()),
        (Some(2), Some(1_778_000), Some(898_000))
    );
    // X = 10 µs: 60 + 860 + 30 + 878; X = 100 µs: 680 + 698
    assert_eq!(o["switch"][0]["usable_ns"].as_u64(), Some(1_828_000));
    assert_eq!(o["switch"][1]["usable_ns"].as_u64(), Some(1_378_000));
    // per phase, each phase's whole window (as `tracer report`): the load phase had no GPU work
    let ph: Vec<(&str, u64, u64)> = g["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["phase"].as_str().unwrap(),
                p["stats"]["window_ns"].as_u64().unwrap(),
                p["stats"]["idle_ns"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(ph[0], ("load", 10_000_000, 10_000_000));
    assert_eq!(ph[1].0, "generate");
    assert!(g.get("gaps").is_none());
    let (rc, out, _) = tracer(&["gaps", ts, "--json", "--list"]);
    assert_eq!(rc, 0);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["scopes"][0]["gaps"][0], serde_json::json!([11_030_000, 11_110_000]));
    assert_eq!(v["scopes"][0]["gaps"].as_array().unwrap().len(), 4);

    let (rc, out, err) = tracer(&["report", ts, "--json"]);
    assert_eq!(rc, 0, "{err}");
    let r: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(r["phase_source"], "marker");
    let names: Vec<&str> = r["phases"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["load", "generate"]);
    // 100 W: 1 J in the 10 ms load phase
    assert!((r["phases"][0]["energy"]["joules"].as_f64().unwrap() - 1.0).abs() < 1e-9);
    assert_eq!(r["iterations"][0]["counts"]["launches"], 3);
    assert!((r["iterations"][0]["joules_per_token"].as_f64().unwrap() - 0.15).abs() < 1e-9);
    assert_eq!(r["top_by_gpu_time"][0]["kernel"], "kA");
    assert_eq!(r["top_by_gpu_time"][0]["gpu_ns"], 60_000);
    let (rc, text, _) = tracer(&["report", ts]);
    assert_eq!(rc, 0);
    assert!(text.contains("GPU timeline: measured GPU activity (CUPTI)"), "{text}");

    let d = tmp("d.json");
    let (rc, _, err) = tracer(&["calibrate", ts, "-o", d.to_str().unwrap()]);
    assert_eq!(rc, 0, "{err}");
    assert!(err.contains("2 kernel configurations (4 measured kernels), 1 copy kinds"), "{err}");
    let cal: Value = serde_json::from_str(&std::fs::read_to_string(&d).unwrap()).unwrap();
    assert_eq!(cal["format"], "tracer-kernel-durations");
    assert_eq!(cal["kernels"][0]["kernel"], "kA");
    assert_eq!(cal["kernels"][0]["median_ns"], 20_000);

    let (rc, out, err) = tracer(&["gaps", ts, "--timeline", "inferred", "--durations", d.to_str().unwrap(), "--json"]);
    assert_eq!(rc, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["timeline"], "inferred");
    assert_eq!(v["diagnostics"]["ops"], 5);

    let (rc, out, err) = tracer(&["compare", ts, "--json"]);
    assert_eq!(rc, 0, "{err}");
    let c: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(c["self_calibrated"], true);
    // each kernel inferred to start at its launch's return, 9 µs before the measured start
    assert_eq!(c["inferred"][0]["launches_compared"], 4);
    assert_eq!(c["inferred"][0]["start_err_p50_ns"], 9_000);
    assert_eq!(c["inferred"][0]["matched"], 2);
    // with the work allowed to start at the launch call's entry: 10 µs early
    assert_eq!(c["inferred_submit_at_entry"][0]["start_err_p50_ns"], 10_000);
    assert_eq!(c["inferred_submit_at_entry"][0]["start_err_mean_ns"], -10_000.0);

    let p = tmp("t.perfetto.json");
    let (rc, _, err) = tracer(&["export", ts, "--format", "perfetto", "-o", p.to_str().unwrap()]);
    assert_eq!(rc, 0, "{err}");
    let e: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    let evs = e["traceEvents"].as_array().unwrap();
    assert!(evs.iter().any(|x| x["args"]["name"] == "GPU 0 NVIDIA H100 80GB HBM3 (measured)"));
    assert_eq!(evs.iter().filter(|x| x["cat"] == "gpu_measured").count(), 5);
    assert_eq!(evs.iter().filter(|x| x["ph"] == "f").count(), 4); // launch -> kernel flows
    assert_eq!(evs.iter().filter(|x| x["name"] == "power (W)").count(), 21);
    // An existing file is not overwritten without --force; a .gz name gets gzip.
    let (rc, _, err) = tracer(&["export", ts, "-o", p.to_str().unwrap()]);
    assert_eq!(
        (rc, err.trim_end()),
        (1, format!("tracer: output file {} exists (use --force to overwrite)", p.display()).as_str())
    );
    let (rc, _, err) = tracer(&["export", ts, "-o", p.to_str().unwrap(), "--force"]);
    assert_eq!(rc, 0, "{err}");
    assert_eq!(serde_json::from_str::<Value>(&std::fs::read_to_string(&p).unwrap()).unwrap(), e);
    let gz = tmp("t.perfetto.json.gz");
    let (rc, _, err) = tracer(&["export", ts, "-o", gz.to_str().unwrap()]);
    assert_eq!(rc, 0, "{err}");
    let mut unzipped = String::new();
    std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(std::fs::File::open(&gz).unwrap()), &mut unzipped)
        .unwrap();
    assert_eq!(serde_json::from_str::<Value>(&unzipped).unwrap(), e);
    std::fs::remove_dir_all(t.parent().unwrap()).ok();
}

#[test]
fn errors_name_the_line() {
    let t = tmp("bad.jsonl");
    std::fs::write(&t, format!("{}\n{{\"ts\":5,\"pid\":1,\"type\":\"gpu\",\"op\":\"kernel\"}}\n", launch(1, "k")))
        .unwrap();
    let (rc, _, err) = tracer(&["gaps", t.to_str().unwrap()]);
    assert_eq!(rc, 1);
    assert!(err.contains("bad.jsonl: line 2: a `gpu` line needs `end_ts` or `duration_us`"), "{err}");
    let (rc, _, err) = tracer(&["gaps", t.to_str().unwrap(), "--timeline", "inferred"]);
    assert_eq!(rc, 2, "{err}");
    let (rc, _, err) = tracer(&["gaps", t.to_str().unwrap(), "--threshold-us", "nan"]);
    assert_eq!(rc, 2, "{err}");
}

#[test]
fn report_and_gaps_on_the_committed_recording() {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../traces/simple_inference.jsonl.gz");
    let (rc, out, err) = tracer(&["report", p.to_str().unwrap()]);
    assert_eq!(rc, 0, "{err}");
    assert!(out.contains("1941 calls, 88 launches (2 kernels)"), "{out}");
    let (rc, out, err) = tracer(&["gaps", p.to_str().unwrap()]);
    assert_eq!(rc, 0, "{err}");
    assert!(out.contains("idle ≥ 188.54 ms (≥ 79.8%, lower bound) in 9 certain gaps"), "{out}");
}

/// `--pid`, `--from`, `--to` on report, gaps and export: the same events
/// (analysis::filter); a bad pid or window is a misuse (exit 2).
#[test]
fn pid_and_window_filters() {
    let t = tmp("filtered.jsonl");
    std::fs::write(&t, hand_built()).unwrap();
    let ts = t.to_str().unwrap();
    // [10.5, 12.5) ms: launches at 11, 11.1, 12 ms, syncs at 11.2, 12.2 ms, the copy at 12.1 ms.
    let w = ["--from", "0.0105", "--to", "0.0125"];
    let (rc, out, err) = tracer(&[&["report", ts, "--json"][..], &w].concat());
    assert_eq!(rc, 0, "{err}");
    let r: Value = serde_json::from_str(&out).unwrap();
    assert_eq!((r["total"]["calls"].as_u64(), r["total"]["launches"].as_u64()), (Some(6), Some(3)));
    assert_eq!((r["total"]["copies"].as_u64(), r["total"]["sync_calls"].as_u64()), (Some(1), Some(2)));
    // The phase in effect at 10.5 ms goes on from there.
    let phases: Vec<(&str, u64)> = r["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["name"].as_str().unwrap(), p["start"].as_u64().unwrap()))
        .collect();
    assert_eq!(phases, [("generate", 10_500_000)]);
    let (rc, out, err) = tracer(&[&["gaps", ts, "--json"][..], &w].concat());
    assert_eq!(rc, 0, "{err}");
    let g: Value = serde_json::from_str(&out).unwrap();
    // GPU intervals starting in the window: kA 11.01, 11.11 ms, kB 12.01 ms, the copy 12.11 ms: gaps 80, 880, 50 µs.
    let o = &g["scopes"][0]["overall"];
    assert_eq!((o["count"].as_u64(), o["idle_ns"].as_u64()), (Some(3), Some(1_010_000)), "{o}");
    let p = tmp("filtered.perfetto.json");
    let (rc, _, err) = tracer(&[&["export", ts, "-o", p.to_str().unwrap(), "--pid", "1"][..], &w].concat());
    assert_eq!(rc, 0, "{err}");
    let e: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    assert_eq!(e["traceEvents"].as_array().unwrap().iter().filter(|x| x["cat"] == "gpu_measured").count(), 4);
    // --phase: the span of the phase "generate" [10, 20) ms: 4 launches, 3 syncs, the copy.
    let (rc, out, err) = tracer(&["report", ts, "--json", "--phase", "generate"]);
    assert_eq!(rc, 0, "{err}");
    let r: Value = serde_json::from_str(&out).unwrap();
    assert_eq!((r["total"]["calls"].as_u64(), r["total"]["launches"].as_u64()), (Some(8), Some(4)));
    let (rc, _, err) = tracer(&["report", ts, "--phase", "nope"]);
    assert_eq!(
        (rc, err.as_str()),
        (2, format!("tracer: --phase nope: no such phase in {ts} (its phases: pid 1: load, generate)\n").as_str())
    );
    // Misuse: exit 2, one line.
    let (rc, _, err) = tracer(&["report", ts, "--pid", "7"]);
    assert_eq!(
        (rc, err.as_str()),
        (2, format!("tracer: --pid 7: no such process in {ts} (its processes: 1)\n").as_str())
    );
    let (rc, _, err) = tracer(&["gaps", ts, "--from", "0.02", "--to", "0.01"]);
    assert_eq!((rc, err.as_str()), (2, "tracer: --from must be before --to (the trace lasts 0.020 s)\n"));
    std::fs::remove_file(&t).ok();
    std::fs::remove_file(&p).ok();
}

/// `tracer summary --json`: the text's figures, every function and kernel.
#[test]
fn summary_json_on_the_committed_recording() {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../traces/simple_inference.jsonl.gz");
    let (rc, out, err) = tracer(&["summary", p.to_str().unwrap(), "--json"]);
    assert_eq!(rc, 0, "{err}");
    let s: Value = serde_json::from_str(&out).unwrap();
    assert_eq!((s["calls"].as_u64(), s["processes"].as_u64()), (Some(1941), Some(1)));
    assert_eq!((s["launches"].as_u64(), s["distinct_kernels"].as_u64()), (Some(88), Some(2)));
    assert_eq!((s["allocs"].as_u64(), s["frees"].as_u64()), (Some(6), Some(1)));
    assert_eq!(s["copies"]["h2d"]["count"], 9);
    assert_eq!(s["copies"]["d2h"], serde_json::json!({"count": 1, "bytes": 131072}));
    let f = &s["functions"][0];
    assert_eq!(
        (f["name"].as_str(), f["calls"].as_u64(), f["errors"].as_u64()),
        (Some("cuGetProcAddress_v2"), Some(1323), Some(0))
    );
    let total: u64 = s["functions"].as_array().unwrap().iter().map(|f| f["calls"].as_u64().unwrap()).sum();
    assert_eq!(total, 1941);
    let launches: u64 = s["kernels"].as_array().unwrap().iter().map(|k| k["launches"].as_u64().unwrap()).sum();
    assert_eq!(launches + s["launches_unnamed"].as_u64().unwrap(), 88);
}

/// Kernel names: short by default (Nsight's base names), whole with
/// `--names full`, as recorded with `--names mangled` (or `--mangled`), in
/// report and summary; the JSON has every spelling.
#[test]
fn kernel_names_short_full_and_mangled() {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../traces/transformer_inference_full.jsonl.gz");
    let p = p.to_str().unwrap();
    let raw = "_ZN2at6native29vectorized_elementwise_kernelILi8ENS0_13AUnaryFunctorIN3c104HalfES4_S4_NS0_15binary_internal10MulFunctorIfEEEESt5arrayIPcLm2EEEEviT0_T1_";
    let full = "void at::native::vectorized_elementwise_kernel<8, at::native::AUnaryFunctor<c10::Half, c10::Half, \
                c10::Half, at::native::binary_internal::MulFunctor<float> >, std::array<char*, (unsigned long)2> >(int, \
                at::native::AUnaryFunctor<c10::Half, c10::Half, c10::Half, at::native::binary_internal::MulFunctor<float> >, \
                std::array<char*, (unsigned long)2>)";
    // seven instantiations of vectorized_elementwise_kernel in the tables: each keeps what tells it apart
    let short = "vectorized_elementwise_kernel<…AUnaryFunctor<Half, Half, Half, MulFunctor<float> >…>";
    let (rc, out, err) = tracer(&["report", p]);
    assert_eq!(rc, 0, "{err}");
    assert!(out.contains(&format!("    2880   3.20 ms  {short}\n")), "{out}");
    assert!(out.contains("    2960   4.04 ms  vectorized_elementwise_kernel<…CUDAFunctor_add<Half>…>\n"), "{out}");
    assert!(out.contains("     960   1.13 ms  vectorized_elementwise_kernel<…tanh_kernel_cuda…>\n"), "{out}");
    assert!(!out.contains("share a short name"), "{out}");
    let (_, out, _) = tracer(&["report", p, "--names", "full"]);
    assert!(out.contains(&format!("    2880   3.20 ms  {full}\n")), "{out}");
    assert!(!out.contains("share a short name"), "{out}");
    let (_, out, _) = tracer(&["report", p, "--names", "mangled"]);
    assert!(out.contains(&format!("    2880   3.20 ms  {raw}\n")), "{out}");
    let (_, out2, _) = tracer(&["report", p, "--mangled"]);
    assert_eq!(out2, out);
    let (_, out, _) = tracer(&["report", p, "--json"]);
    let r: Value = serde_json::from_str(&out).unwrap();
    let k = &r["top_by_count"][1];
    assert_eq!(
        (k["kernel"].as_str(), k["demangled"].as_str(), k["short"].as_str()),
        (Some(raw), Some(full), Some(short))
    );
    let (_, out, _) = tracer(&["summary", p]);
    assert!(out.contains(&format!("      2880  {short}\n")), "{out}");
    let (_, out, _) = tracer(&["summary", p, "--names", "full"]);
    assert!(out.contains(&format!("      2880  {full}\n")), "{out}");
    let (_, out, _) = tracer(&["summary", p, "--names", "mangled"]);
    assert!(out.contains(&format!("      2880  {raw}\n")), "{out}");
    let (rc, _, err) = tracer(&["summary", p, "--names", "pretty"]);
    assert_eq!(rc, 2, "{err}");
}

/// Summary, report and gaps lines are at most 160 columns on every
/// committed trace (short names, columns as wide as their contents, prose
/// wrapped).
#[test]
fn summary_report_and_gaps_fit_160_columns() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut traces: Vec<std::path::PathBuf> = Vec::new();
    for dir in ["traces", "docs/graphs", "docs/multi-gpu"] {
        for e in std::fs::read_dir(repo.join(dir)).unwrap() {
            let p = e.unwrap().path();
            let n = p.to_string_lossy().to_string();
            if n.ends_with(".jsonl.gz") || n.ends_with(".jsonl.zst") || n.ends_with(".rec") {
                traces.push(p);
            }
        }
    }
    traces.sort();
    assert_eq!(traces.len(), 16, "{traces:?}");
    for t in &traces {
        for cmd in ["summary", "report", "gaps"] {
            let (rc, out, err) = tracer(&[cmd, t.to_str().unwrap()]);
            assert_eq!(rc, 0, "{cmd} {}: {err}", t.display());
            let widest = out.lines().map(|l| l.chars().count()).max().unwrap();
            assert!(widest <= 160, "{cmd} {}: a line of {widest} columns:\n{out}", t.display());
            assert!(widest >= 100, "{cmd} {}: {widest}", t.display());
        }
    }
}

/// A real recording of tests/fakecuda/fourgaps.c (fixtures/sched): its
/// `sched` lines become the main thread's thread-state track in the Perfetto
/// export, interval by interval, and `--pid` keeps them.
#[test]
fn thread_states_of_a_recording_in_perfetto() {
    let trace = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sched/fourgaps.jsonl");
    let p = tmp("fourgaps.perfetto.json");
    let (rc, _, err) = tracer(&[
        "export",
        trace.to_str().unwrap(),
        "--format",
        "perfetto",
        "--pid",
        "20421",
        "-o",
        p.to_str().unwrap(),
    ]);
    assert_eq!(rc, 0, "{err}");
    let e: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    let evs = e["traceEvents"].as_array().unwrap();
    let track = |name: &str| {
        evs.iter()
            .find(|x| x["ph"] == "M" && x["args"]["name"] == name)
            .unwrap_or_else(|| panic!("no track {name}"))["tid"]
            .clone()
    };
    let slices = |tid: &Value| -> Vec<(String, f64)> {
        evs.iter()
            .filter(|x| x["cat"] == "thread_state" && &x["tid"] == tid)
            .map(|x| (x["name"].as_str().unwrap().to_string(), x["dur"].as_f64().unwrap()))
            .collect()
    };
    let s = |n: &str, d: f64| (n.to_string(), d);
    assert_eq!(
        slices(&track("thread state (tid 20421)")),
        vec![
            s("blocked: openat", 357.479),
            s("runnable: wake-up latency", 51.647),
            s("blocked: mmap", 3.295),
            s("runnable: wake-up latency", 47.56),
            s("blocked: clock_nanosleep", 80103.631),
            s("runnable: wake-up latency", 22.614),
            s("blocked: read (pipe)", 80139.505),
            s("runnable: behind pipewriter (pid 20421)", 78.055),
            s("runnable: preempted by cpuhog (pid 20425)", 80301.254),
        ]
    );
    assert_eq!(
        slices(&track("thread state (tid 20424)")),
        vec![s("blocked: clock_nanosleep", 80078.955), s("runnable: wake-up latency", 18.858)]
    );
    let read = evs.iter().find(|x| x["name"] == "blocked: read (pipe)").unwrap();
    assert_eq!(read["args"]["waker"], serde_json::json!({"pid": 20421, "tid": 20424, "comm": "pipewriter"}));
    // the writer thread's track is named in the process
    assert!(evs.iter().any(|x| x["ph"] == "M" && x["tid"] == 20424 && x["args"]["name"] == "thread 20424"));
    // Scheduler lines are not driver calls in the summary of the file.
    let (rc, out, err) = tracer(&["summary", trace.to_str().unwrap()]);
    assert_eq!(rc, 0, "{err}");
    assert!(out.contains("11 driver calls"), "{out}");
    assert!(!out.contains("clock_nanosleep") && !out.contains("thread_seen"), "{out}");
    std::fs::remove_file(&p).ok();
}

#[test]
fn a_trace_with_a_durations_library_line_is_inferred_with_it() {
    // the hand-built trace without its gpu lines, and the library's kA and kB
    let origin = "durations library /var/lib/tracer/durations.json (NVIDIA H100 80GB HBM3, driver 580.159.04, 2 runs)";
    let entry = |k: &str, ns: u64| {
        format!(
            r#"{{"kernel":"{k}","grid":[4,1,1],"block":[128,1,1],"shared_mem":0,"count":10,"median_ns":{ns},"p10_ns":{ns},"p90_ns":{ns}}}"#
        )
    };
    let line = format!(
        r#"{{"type":"durations","ts":20000000,"pid":0,"tid":0,"origin":"{origin}","gpu_model":"NVIDIA H100 80GB HBM3","source":"durations library","kernels":[{},{}],"copies":[]}}"#,
        entry("kA", 20_000),
        entry("kB", 50_000)
    );
    let mut lines: Vec<String> =
        hand_built().lines().filter(|l| !l.contains(r#""type":"gpu""#)).map(str::to_owned).collect();
    lines.insert(lines.len() - 1, line);
    let t = tmp("library.jsonl");
    std::fs::write(&t, lines.join("\n") + "\n").unwrap();
    let (rc, out, err) = tracer(&["gaps", t.to_str().unwrap()]);
    assert_eq!(rc, 0, "{err}");
    assert!(
        err.contains(&format!(
            "tracer: GPU timeline inferred with the trace's {origin} (docs/durations-library.md); --timeline bound \
             to ignore it, --durations FILE to use another"
        )),
        "{err}"
    );
    assert!(out.contains(&format!("inferred (calibrated from {origin})")), "{out}");
    assert!(out.contains("calibration coverage: all 4 kernel launches have a calibrated duration"), "{out}");
    // --timeline bound ignores it
    let (rc, out, err) = tracer(&["gaps", t.to_str().unwrap(), "--timeline", "bound"]);
    assert_eq!(rc, 0, "{err}");
    assert!(!err.contains("durations library") && !out.contains("calibrated from"), "{err}\n{out}");
}
