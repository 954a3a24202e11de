//! Recorded GPU time (gpu lines, launch-to-sync spans) and the prediction
//! from isolated durations, on a hand-built recording.

mod common;

use std::collections::BTreeMap;

use common::*;
use replay::plan;
use replay::recording::Recording;
use replay::report::{self, FamilyRow};
use serde_json::json;

fn rec() -> Rec {
    let mut r = Rec::new();
    r.cubin_function("k_pointers"); // lines 2-3
    r.call("memory", "alloc", "cuMemAlloc_v2", json!({"ret": 0, "ptr": "0x7f0000000000", "size": 4096})); // 4
    let l = json!({"func": "0xf1", "kernel": "k_pointers", "grid": [1, 1, 1], "block": [1, 1, 1], "shared_mem": 0, "stream": "0x0", "params": params(20, &[]), "params_from": "layout"});
    r.call("kernel", "launch", "cuLaunchKernel", l.clone()); // 5 (ts 5000)
    r.call("kernel", "launch", "cuLaunchKernel", l.clone()); // 6
    r.call(
        "memcpy",
        "copy",
        "cuMemcpyDtoH_v2",
        json!({"ret": 0, "duration_us": 0.5, "direction": "d2h", "dst": "0x1000", "src": "0x7f0000000000", "size": 64}),
    ); // 7: ends at 7500
    r.call("kernel", "launch", "cuLaunchKernel", l); // 8
    r.call("sync", "stream_synchronize", "cuStreamSynchronize", json!({"ret": 0, "duration_us": 3.0, "stream": "0x0"})); // 9: ends at 12000
    r
}

#[test]
fn launch_to_sync_spans() {
    let r = rec();
    let rec = Recording::open(&r.write()).unwrap();
    let p = plan::build(&rec.manifest, &rec.trace, "trace.jsonl").unwrap();
    let t = report::recorded_time(&rec.trace, &p);
    assert_eq!((t.source.as_str(), t.busy_ns, t.span_ns), ("launch_to_sync", 2500 + 4000, 7000));
}

#[test]
fn gpu_lines_and_prediction() {
    let r = rec();
    let dir = r.write_with(|lines| {
        let g = |op: &str, name: &str, ts: u64, end: u64| {
            json!({"ts": ts, "end_ts": end, "pid": 7, "tid": 0, "type": "gpu", "op": op, "name": name, "source": "cupti"}).to_string()
        };
        let footer = lines.pop().unwrap();
        lines.push(g("kernel", "k_pointers", 100, 200));
        lines.push(g("kernel", "k_pointers", 150, 300));
        lines.push(g("memcpy", "memcpy_dtoh", 400, 450));
        lines.push(json!({"ts": 0, "end_ts": 10_000, "pid": 99, "tid": 0, "type": "gpu", "op": "kernel", "name": "other_process"}).to_string());
        lines.push(footer);
    });
    let rec = Recording::open(&dir).unwrap();
    let p = plan::build(&rec.manifest, &rec.trace, "trace.jsonl").unwrap();
    let t = report::recorded_time(&rec.trace, &p);
    assert_eq!((t.source.as_str(), t.busy_ns, t.span_ns, t.kernels_ns, t.copies_ns), ("gpu_lines", 250, 350, 250, 50));
    assert_eq!(t.per_kernel.get("k_pointers"), Some(&(2, 250)));

    let keys = report::distinct_keys(&p);
    let k_launch = "kernel k_pointers load0 grid [1, 1, 1] block [1, 1, 1] smem 0".to_owned();
    let k_copy = "copy D2h 64".to_owned();
    assert_eq!(keys.keys().cloned().collect::<Vec<_>>(), vec![k_copy.clone(), k_launch.clone()]);
    assert_eq!(keys[&k_launch], (0, 3)); // first op 0 (the launch of line 5), 3 launches
    // Isolated mode meets the keys in recorded order: the launch (op 0) before the copy.
    let copy_op = keys[&k_copy].0;
    assert!(copy_op > 0);
    assert_eq!(report::in_recorded_order(&keys), vec![(k_launch.clone(), 0), (k_copy.clone(), copy_op)]);
    let iso: BTreeMap<String, f64> = [(k_launch, 2.0), (k_copy, 1.0)].into();
    let (pred, fam, top) = report::predict(&p, &iso, &t);
    assert_eq!(pred, 7.0);
    assert_eq!(
        fam,
        vec![
            FamilyRow {
                family: "copy".into(),
                ops: 1,
                predicted_us: 1.0,
                recorded_us: Some(0.05),
                error_pct: Some(1900.0)
            },
            FamilyRow {
                family: "other".into(),
                ops: 3,
                predicted_us: 6.0,
                recorded_us: Some(0.25),
                error_pct: Some(2300.0)
            },
        ]
    );
    assert_eq!(
        (top.len(), top[0].kernel.as_str(), top[0].launches, top[0].shapes, top[0].predicted_us),
        (1, "k_pointers", 3, 1, 6.0)
    );
}

#[test]
fn durations_file_in_the_calibration_format() {
    let mut r = Rec::new();
    r.cubin_function("k_pointers");
    let l = json!({"func": "0xf1", "kernel": "k_pointers", "grid": [2, 1, 1], "block": [64, 1, 1], "shared_mem": 0, "stream": "0x0", "params": params(20, &[]), "params_from": "layout"});
    for _ in 0..3 {
        r.call("kernel", "launch", "cuLaunchKernel", l.clone());
    }
    r.call(
        "memcpy",
        "copy",
        "cuMemcpyDtoH_v2",
        json!({"ret": 0, "direction": "d2h", "dst": "0x1000", "src": "0x7f0000000000", "size": 64}),
    );
    r.call(
        "memcpy",
        "copy",
        "cuMemcpyDtoH_v2",
        json!({"ret": 0, "direction": "d2h", "dst": "0x1000", "src": "0x7f0000000000", "size": 2097152}),
    );
    r.call(
        "memset",
        "set",
        "cuMemsetD8Async",
        json!({"ret": 0, "args": {"dstDevice": "0x7f0000000000", "uc": 0, "N": 64}, "stream": "0x0"}),
    );
    let rec = Recording::open(&r.write()).unwrap();
    let p = plan::build(&rec.manifest, &rec.trace, "trace.jsonl").unwrap();
    let samples: BTreeMap<String, Vec<f64>> = [
        (
            "kernel k_pointers load0 grid [2, 1, 1] block [64, 1, 1] smem 0".to_owned(),
            vec![0.002, 0.003, 0.004, 0.005, 0.010],
        ),
        ("copy D2h 64".to_owned(), vec![0.0078125]),
        ("copy D2h 2097152".to_owned(), vec![0.125]),
        ("set 64x1".to_owned(), vec![0.001]),
    ]
    .into();
    let d = report::durations_file(&p, &samples, Some("NVIDIA H100 80GB HBM3"));
    assert_eq!(
        d,
        json!({"format": "tracer-kernel-durations", "version": 1, "source": "replay isolated", "gpu": "NVIDIA H100 80GB HBM3",
            "kernels": [{"kernel": "k_pointers", "grid": [2, 1, 1], "block": [64, 1, 1], "shared_mem": 0,
                         "count": 3, "median_ns": 4000, "p10_ns": 2000, "p90_ns": 10000}],
            // memset: only small sets measured, so no per-byte figure: left out.
            "copies": [{"kind": "d2h", "count": 2, "base_ns": 7813, "ns_per_byte": 117187.5 / 2097152.0}]})
    );
    assert_eq!(report::nearest_rank(&[1.0, 2.0, 3.0, 4.0], 50.0), 2.0);
    assert_eq!(report::nearest_rank(&[1.0, 2.0, 3.0, 4.0], 0.0), 1.0);
}

#[test]
fn text_of_a_report() {
    let r = json!({
        "recording": "x.rec", "device": "NVIDIA H100 80GB HBM3 (0000:00:06.0)",
        "coverage": {"launches": 6, "launches_replayed": 3, "percent": 50.0, "skipped_by_reason": {"no params recorded": 3}},
        "memory": {"summary": "2 windows, 1 at the recorded address, 1 relocated"},
        "recorded": {"source": "gpu_lines", "busy_us": 100.0, "span_us": 400.0},
        "modes": [
            {"mode": "sequence", "mean_us": 110.0, "min_us": 105.0, "gpu_ms": [0.11, 0.11], "reference": "busy", "error_pct": 10.0},
            {"mode": "timed", "mean_us": 404.0, "min_us": 402.0, "gpu_ms": [0.404], "reference": "span", "error_pct": 1.0, "note": "paced"}
        ],
        "output_checks": [{"line": 28, "size": 256, "matches": true}, {"line": 29, "size": 8, "matches": false, "mismatched_bytes": 2, "first_mismatch": 3}],
        "durations_file": "x.rec/kernel-durations.json",
        "notes": ["window moved"]
    });
    assert_eq!(
        report::text(&r),
        "replay report: x.rec\n\
         device: NVIDIA H100 80GB HBM3 (0000:00:06.0)\n\
         coverage: 3 of 6 launches replayed (50.0%)\n  skipped 3: no params recorded\n\
         memory: 2 windows, 1 at the recorded address, 1 relocated\n\
         recorded GPU time (gpu_lines): busy 100.0 us, span 400.0 us\n  \
         sequence  mean 110.0 us, min 105.0 us per iteration (2 iterations), error vs recorded busy 10.0 %\n  \
         timed     mean 404.0 us, min 402.0 us per iteration (1 iterations), error vs recorded span 1.0 % (paced)\n\
         output check: line 28: 256 bytes: bit-for-bit identical\n\
         output check: line 29: 8 bytes: 2 bytes differ (first at 3)\n\
         kernel durations (for tracer gaps/report/export --durations): x.rec/kernel-durations.json\n\
         note: window moved\n"
    ); // The prediction line says how isolated mode timed the kernels.
    let mut r2 = r.clone();
    r2["predicted_us"] = json!(120.0);
    r2["predicted_error_pct"] = json!(20.0);
    r2["families"] = json!([]);
    r2["isolated_in_context"] = json!(true);
    let line = |r: &serde_json::Value| report::text(r).lines().find(|l| l.contains("predicted")).unwrap().to_owned();
    assert_eq!(
        line(&r2),
        "  predicted (sum of isolated durations, timed in context) 120.0 us, error vs recorded busy 20.0 %"
    );
    r2["isolated_in_context"] = json!(false);
    assert_eq!(
        line(&r2),
        "  predicted (sum of isolated durations, timed out of context) 120.0 us, error vs recorded busy 20.0 %"
    );

    // A recording without gpu lines: its launch-to-synchronize spans are no
    // GPU time, so no error % is printed against them (run.rs gives none).
    let mut r3 = r.clone();
    r3["recorded"] = json!({"source": "launch_to_sync", "measured": false, "busy_us": null,
                            "launch_to_sync_us": 600.0, "span_us": 700.0});
    r3["modes"][0]["error_pct"] = json!(null);
    r3["modes"].as_array_mut().unwrap().truncate(1);
    r3["predicted_us"] = json!(120.0);
    r3["predicted_error_pct"] = json!(null);
    r3["families"] = json!([]);
    let t = report::text(&r3);
    let lines: Vec<&str> = t
        .lines()
        .filter(|l| l.contains("recorded GPU time") || l.contains("mean 110") || l.starts_with("  predicted"))
        .collect();
    assert_eq!(
        lines,
        [
            "recorded GPU time: not measured (the recording has no gpu lines; record with --replayable \
             --gpu-timestamps to compare replayed with recorded GPU time); launch-to-synchronize spans 600.0 us, \
             an upper bound",
            "  sequence  mean 110.0 us, min 105.0 us per iteration (2 iterations), no error % (recorded GPU time \
             not measured)",
            "  predicted (sum of isolated durations) 120.0 us, no error % (recorded GPU time not measured)",
        ]
    );
    assert!(!t.contains("error vs recorded"), "{t}");
}

#[test]
fn text_of_graph_launches_rebuilt_and_their_per_launch_span() {
    let cupti = |recorded: serde_json::Value| {
        json!({"busy_us": 90.0, "busy_error_pct": -10.0, "span_us": 120.0, "kernels_us": 80.0, "kernels_error_pct": 1.0,
               "copies_us": 0.0, "copies_error_pct": null, "sets_us": 0.0, "sets_error_pct": null,
               "passes": [{}, {}], "paired_passes": 2, "pairing_errors": [],
               "graph_launches": {"replayed": {"launches": 8, "span_us_median": 14.0, "busy_us_median": 13.5},
                                  "recorded": recorded, "span_error_pct": -10.8}})
    };
    let mut r = json!({
        "recording": "g.rec", "device": "H100",
        "coverage": {"launches": 0, "launches_replayed": 0, "graph_kernels": 16, "graph_kernels_replayed": 16, "percent": 100.0,
                     "graph_launches": 4, "graph_launches_expanded": 4, "graph_launches_as_graphs": 3, "graph_execs_rebuilt": 2,
                     "graph_launches_not_replayed": {}, "graph_skipped_by_reason": {}},
        "memory": {"summary": "1 windows"},
        "recorded": {"source": "gpu_lines", "busy_us": 100.0, "span_us": 400.0},
        "modes": [{"mode": "sequence", "mean_us": 110.0, "min_us": 105.0, "gpu_ms": [0.11, 0.11], "reference": "busy", "error_pct": 10.0,
                   "cupti": cupti(json!({"launches": 4, "span_us_median": 15.7, "busy_us_median": 15.0}))}],
    });
    let lines = |r: &serde_json::Value| -> Vec<String> {
        report::text(r).lines().filter(|l| l.contains("graph")).map(str::to_owned).collect()
    };
    assert_eq!(
        lines(&r),
        [
            "graph launches: 4, as rebuilt CUDA graphs 3 (2 execs), as separate launches on the launch stream 1 (their 16 kernels counted above, 16 replayed)",
            "            per graph launch (median): span 14.0 us, busy 13.5 us over 8 launches; recorded span 15.7 us, busy 15.0 us over 4 (-10.8 %)",
        ]
    );
    // Copies per host memory kind (gpu_time/copy_kinds.rs).
    r["modes"][0]["cupti"]["copies_by_host_memory"] = json!([
        {"direction": "h2d", "host": "pageable", "recorded": 148, "recorded_us": 19800.0, "replayed_per_pass": 148.0,
         "replayed_us": 15840.0, "error_pct": -20.0}]);
    let text = report::text(&r);
    assert!(
        text.contains("            copies by host memory (CUPTI, per pass): h2d pageable: recorded 148 in 19800.0 us, replayed 148.0 in 15840.0 us (-20.0 %)\n"),
        "{text}"
    );
    // --copies-against: the same classes against a reference recording, on a line of their own.
    assert!(!text.contains("copies against"), "{text}");
    let row = |counts: serde_json::Value, us: serde_json::Value, median: f64, lo: f64, hi: f64, inside: bool| {
        json!({"direction": "h2d", "host": "pageable", "reference_counts": counts, "reference_us": us,
               "reference_median_us": median, "reference_min_us": lo, "reference_max_us": hi,
               "replayed_per_pass": 148.0, "replayed_us": 15840.0, "error_pct": 100.0 * (15840.0 / median - 1.0), "inside_range": inside})
    };
    r["modes"][0]["cupti"]["copies_against"] = json!({"references": ["plain.jsonl"],
        "rows": [row(json!([148]), json!([16000.0]), 16000.0, 16000.0, 16000.0, false)]});
    let text = report::text(&r);
    assert!(
        text.contains("            copies against plain.jsonl (CUPTI, per pass): h2d pageable: reference 148 in 16000.0 us, replayed 148.0 in 15840.0 us (-1.0 %)\n"),
        "{text}"
    );
    // Several references: their median and range, and whether the replayed time is inside it.
    r["modes"][0]["cupti"]["copies_against"] = json!({"references": ["a.jsonl", "b.jsonl", "c.jsonl"],
        "rows": [row(json!([148, 148, 148]), json!([15000.0, 16000.0, 18000.0]), 16000.0, 15000.0, 18000.0, true)]});
    let text = report::text(&r);
    assert!(
        text.contains("            copies against 3 recordings (median, min-max; CUPTI, per pass): h2d pageable: reference 148/148/148 in 16000.0 us (15000.0-18000.0), replayed 148.0 in 15840.0 us (-1.0 %, inside their range)\n"),
        "{text}"
    );
    // Where the idle time inside a launch went (gpu_time/graph_launches.rs `gaps`).
    r["modes"][0]["cupti"]["graph_launches"]["gaps"] = json!({"ops_per_launch": 294, "recorded_us": 107.5, "replayed_us": 205.0,
        "transitions": [{"from": "memset", "to": "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16", "count": 12,
                         "recorded_us": 58.8, "replayed_us": 130.2}]});
    assert_eq!(
        lines(&r)[2],
        "            idle inside a graph launch of 294 ops (per-position medians, summed): recorded 107.5 us, replayed 205.0 us; most changed: memset -> cudnn_generated_fort_native_sdpa_sm90_fl… (12x) 58.8 -> 130.2 us"
    );
    // A recording whose gpu lines have no graph ids (tracer before them): said, no empty figures.
    r["modes"][0]["cupti"] = cupti(json!({"launches": 0, "span_us_median": null, "busy_us_median": null}));
    assert_eq!(
        lines(&r)[1],
        "            per graph launch (median): span 14.0 us, busy 13.5 us over 8 launches; recorded: no graph kernels with CUPTI's graph id (record with --gpu-timestamps)"
    );
}

#[test]
fn in_context_durations_file() {
    use replay::gpu_time::{Op, in_context};
    let r = rec();
    let rec = Recording::open(&r.write()).unwrap();
    let p = plan::build(&rec.manifest, &rec.trace, "trace.jsonl").unwrap();
    let launches: Vec<usize> = (0..p.ops.len()).filter(|&i| matches!(p.ops[i].kind, plan::OpKind::Launch(_))).collect();
    let copy = (0..p.ops.len()).find(|&i| matches!(p.ops[i].kind, plan::OpKind::Copy(_))).unwrap();
    assert_eq!(launches.len(), 3);
    // two passes: the three launches 1.0/2.0/4.0 µs, then 1.2/2.2/4.2 µs; the 64-byte copy 0.5 µs
    let pass = |k: u64| {
        let mut v: Vec<(usize, u64, u64, Op)> =
            launches.iter().zip([1000, 2000, 4000]).map(|(&op, d)| (op, 10_000, 10_000 + d + k, Op::Kernel)).collect();
        v.push((copy, 0, 500, Op::Memcpy));
        v
    };
    let f = in_context::durations_file(&p, &[pass(0), pass(200)], Some("NVIDIA H200"));
    assert_eq!(
        f["kernels"],
        json!([{"kernel": "k_pointers", "grid": [1, 1, 1], "block": [1, 1, 1], "shared_mem": 0, "count": 3,
            "median_ns": 2000, "p10_ns": 1000, "p90_ns": 4200}])
    );
    // no copy model: only small copies ran
    assert_eq!(f["copies"], json!([]));
    assert_eq!((f["gpu"].as_str(), f["passes"].as_u64()), (Some("NVIDIA H200"), Some(2)));
    // tracer reads it as a kernel-durations file
    assert_eq!(f["format"], "tracer-kernel-durations");
    assert_eq!(f["version"], 1);
}
