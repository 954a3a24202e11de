use super::*;
use crate::analysis::durations::{DurationsFile, calibrate};
use crate::analysis::model::parse_str;
use crate::analysis::sampled::tests::gpu;
use crate::analysis::timeline::tests::{durs, launch, sync};

const US: u64 = 1000;

fn marker(ts: u64, op: &str, label: &str) -> String {
    format!(r#"{{"ts":{ts},"pid":1,"tid":1,"type":"marker","op":"{op}","name":"marker","label":"{label}"}}"#)
}

/// Two iterations of: a GEMM, an elementwise kernel, a stream synchronization
/// (legacy stream). `gemm_us`: the GEMM's measured duration; the host program
/// is the same, its synchronizations wait for the GPU and the markers follow.
fn workload(gemm_us: u64) -> Trace {
    let mut l = vec![marker(900 * US, "phase", "run")];
    let mut at = 1000 * US; // iteration start (host)
    for i in 0..2 {
        l.push(marker(at, "iteration", &i.to_string()));
        let g0 = at + 10 * US;
        let g1 = g0 + gemm_us * US;
        l.push(launch(at, 5.0, "nvjet_k", "0x0"));
        l.push(gpu(g0, g1, "nvjet_k"));
        l.push(launch(at + 10 * US, 5.0, "vectorized_elementwise_kernel", "0x0"));
        l.push(gpu(g1, g1 + 20 * US, "vectorized_elementwise_kernel"));
        // the sync enters 20 µs after the iteration starts and returns 5 µs after the GPU is done
        let ret = g1 + 25 * US;
        l.push(sync(at + 20 * US, ((ret - at - 20 * US) / US) as f64, "0x0"));
        at = ret + 65 * US;
    }
    l.push(marker(at, "phase", "end"));
    parse_str("w", &l.join("\n")).unwrap()
}

#[test]
fn faster_gemm_shortens_waits_iterations_and_busy_time() {
    // recorded: GEMM 100 µs; the file says 50 µs there; the elementwise kernel is not in it
    let t = workload(100);
    let p = predict(&t, &durs(&[("nvjet_k", 50 * US)]).with_origin("h200.json"), Options::default());
    let r = &p.recorded;
    assert_eq!((r.run_ns, r.busy_ns, r.gpu_span_ns, r.kernels_ns), (500 * US, 240 * US, 320 * US, 240 * US));
    assert_eq!(
        r.iterations,
        [
            PeriodFigures { label: "0".into(), dur_ns: 200 * US, busy_ns: 120 * US },
            PeriodFigures { label: "1".into(), dur_ns: 200 * US, busy_ns: 120 * US }
        ]
    );
    let q = &p.predicted;
    // iteration 0: GEMM 1010-1060, elementwise 1060-1080, sync returns 1085 (50 µs early);
    // iteration 1 starts at 1150: GEMM 1160-1210, elementwise 1210-1230, sync 1235; end 1300
    assert_eq!(
        q.iterations,
        [
            PeriodFigures { label: "0".into(), dur_ns: 150 * US, busy_ns: 70 * US },
            PeriodFigures { label: "1".into(), dur_ns: 150 * US, busy_ns: 70 * US }
        ]
    );
    assert_eq!((q.run_ns, q.busy_ns, q.gpu_span_ns, q.kernels_ns), (400 * US, 140 * US, 220 * US, 140 * US));
    assert_eq!(q.families, [("gemm".to_string(), 100 * US), ("elementwise".to_string(), 40 * US)]);
    assert_eq!(r.families, [("gemm".to_string(), 200 * US), ("elementwise".to_string(), 40 * US)]);
    assert_eq!(q.phases, [PeriodFigures { label: "run".into(), dur_ns: 400 * US, busy_ns: 140 * US }]);
    assert_eq!(p.sources, Sources { ops: 4, kernels_exact: 2, kernels_kept: 2, waits: 2, ..Default::default() });
    assert_eq!(p.final_shift_ns, BTreeMap::from([(1, -100_000i64)]));
    assert_eq!(p.durations_from, "h200.json");
}

#[test]
fn slower_gpu_makes_the_host_wait_longer() {
    let t = workload(100);
    let p = predict(&t, &durs(&[("nvjet_k", 130 * US)]), Options::default());
    // each sync returns 30 µs later: iterations 230 µs, busy 150 µs
    assert_eq!(p.predicted.iteration_medians(), Some((230 * US, 150 * US)));
    assert_eq!(p.predicted.run_ns, 560 * US);
}

#[test]
fn recorded_durations_give_the_recording_back() {
    let t = workload(100);
    let d = Durations::new(calibrate(&t).unwrap());
    let p = predict(&t, &d, Options::default());
    assert_eq!(p.predicted.iterations, p.recorded.iterations);
    assert_eq!(p.predicted.busy_ns, p.recorded.busy_ns);
    assert_eq!(p.predicted.run_ns, p.recorded.run_ns);
    assert_eq!(p.predicted.families, p.recorded.families);
    assert_eq!(p.sources.kernels_exact, 4);
    assert_eq!(p.final_shift_ns, BTreeMap::new());
}

#[test]
fn compared_with_the_target_gpus_trace() {
    // the target GPU ran the GEMM in 50 µs: the prediction matches it exactly
    let t = workload(100);
    let target = workload(50);
    let p = predict(&t, &durs(&[("nvjet_k", 50 * US)]), Options::default());
    let actual = measured_figures(&target);
    assert_eq!(actual.iteration_medians(), Some((150 * US, 70 * US)));
    let c = compare(&p, &actual);
    let get = |w: &str| c.rows.iter().find(|r| r.what == w).unwrap().clone();
    let it = get("iteration time (median)");
    assert_eq!((it.recorded_ns, it.predicted_ns, it.actual_ns), (200 * US, 150 * US, 150 * US));
    assert_eq!(it.error_pct, Some(0.0));
    assert!((it.unchanged_error_pct.unwrap() - 100.0 / 3.0).abs() < 1e-9);
    let gemm = get("  gemm");
    assert_eq!((gemm.recorded_ns, gemm.predicted_ns, gemm.actual_ns), (200 * US, 100 * US, 100 * US));
    assert_eq!(gemm.unchanged_error_pct, Some(100.0));
    assert_eq!(get("GPU busy").error_pct, Some(0.0));
    assert_eq!(c.iterations, (2, 2));
    assert_eq!(c.worst_error_pct, Some(0.0));
    assert_eq!(
        c.rows.iter().map(|r| r.what.as_str()).collect::<Vec<_>>(),
        [
            "iteration time (median)",
            "iteration GPU busy (median)",
            "run time",
            "GPU busy",
            "GPU span",
            "kernels",
            "  gemm",
            "  elementwise"
        ]
    );
    // a prediction 10 µs off per GEMM: iteration time +6.7 %, busy +14.3 %, GEMM +20 %
    let p = predict(&t, &durs(&[("nvjet_k", 60 * US)]), Options::default());
    let c = compare(&p, &actual);
    let it = c.rows.iter().find(|r| r.what == "iteration time (median)").unwrap();
    assert_eq!(it.predicted_ns, 160 * US);
    assert!((c.worst_error_pct.unwrap() - 20.0).abs() < 1e-9, "{:?}", c.worst_error_pct);
    let text = render(&p, Some(&c), Some("H200"));
    assert!(text.contains("against the trace measured on H200 (2 iterations recorded, 2 there):"), "{text}");
    assert!(
        text.contains("worst error (iteration time and busy, GPU busy, families over 5 % of the busy time): 20.0 %")
    );
}

#[test]
fn copies_keep_their_recorded_time_unless_modelled() {
    let l = [
        r#"{"ts":1000,"pid":1,"tid":1,"type":"memcpy","op":"memcpy","name":"cuMemcpyHtoDAsync_v2","direction":"h2d","size":1000000,"stream":"0x0","duration_us":2.0,"ret":0}"#.to_string(),
        r#"{"ts":3000,"end_ts":53000,"pid":1,"type":"gpu","op":"memcpy","name":"memcpy_htod","size":1000000,"direction":"h2d","device":0,"stream":"0x0","stream_id":7}"#.to_string(),
    ];
    let t = parse_str("c", &l.join("\n")).unwrap();
    let mut f: DurationsFile = serde_json::from_str(r#"{"format":"tracer-kernel-durations","version":1,"source":"t","gpu":"H200","kernels":[],"copies":[{"kind":"h2d","count":2,"base_ns":2000,"ns_per_byte":0.02}]}"#).unwrap();
    let d = Durations::new(f.clone());
    let p = predict(&t, &d, Options::default());
    assert_eq!((p.predicted.copies_ns, p.sources.copies_kept), (50_000, 1));
    let p = predict(&t, &d, Options { copy_model: true, ..Options::default() });
    assert_eq!((p.predicted.copies_ns, p.sources.copies_modelled), (22_000, 1));
    assert_eq!(p.predicted.gpu.as_deref(), Some("H200"));
    f.copies.clear();
    let p = predict(&t, &Durations::new(f), Options { copy_model: true, ..Options::default() });
    assert_eq!((p.predicted.copies_ns, p.sources.copies_kept), (50_000, 1));
}

#[test]
fn a_programmatic_launch_keeps_its_overlap() {
    // k2 starts 2 µs before k1 ends (programmatic dependent launch); then a sync
    let l = [
        launch(0, 1.0, "nvjet_k1", "0x0"),
        gpu(5 * US, 25 * US, "nvjet_k1"),
        launch(2 * US, 1.0, "splitKreduce_k2", "0x0"),
        gpu(23 * US, 30 * US, "splitKreduce_k2"),
        sync(4 * US, 27.0, "0x0"),
    ]
    .join("\n");
    let t = parse_str("p", &l).unwrap();
    let same = predict(&t, &Durations::new(calibrate(&t).unwrap()), Options::default());
    assert_eq!((same.predicted.busy_ns, same.predicted.gpu_span_ns), (25 * US, 25 * US));
    assert_eq!(same.final_shift_ns, BTreeMap::new());
    // k1 10 µs shorter: k2 still starts 2 µs before k1's end, the sync returns 10 µs earlier
    let p = predict(&t, &durs(&[("nvjet_k1", 10 * US), ("splitKreduce_k2", 7 * US)]), Options::default());
    assert_eq!((p.predicted.busy_ns, p.predicted.gpu_span_ns), (15 * US, 15 * US));
    assert_eq!(p.final_shift_ns, BTreeMap::from([(1, -10_000i64)]));
}

#[test]
fn an_asynchronous_copy_to_pageable_memory_that_waited_moves_the_host() {
    // `.item()`: cuMemcpyDtoHAsync into pageable memory returns only once the step and the copy are done
    let l = [
        launch(0, 1.0, "nvjet_k", "0x0"),
        gpu(10 * US, 110 * US, "nvjet_k"),
        r#"{"ts":20000,"pid":1,"tid":1,"type":"memcpy","op":"copy","name":"cuMemcpyDtoHAsync_v2","direction":"d2h","size":4,"stream":"0x0","duration_us":95.0,"ret":0}"#.to_string(),
        r#"{"ts":110000,"end_ts":112000,"pid":1,"type":"gpu","op":"memcpy","name":"memcpy_dtoh","size":4,"direction":"d2h","device":0,"stream":"0x0","stream_id":7}"#.to_string(),
        sync(116 * US, 1.0, "0x0"),
        launch(120 * US, 1.0, "nvjet_k", "0x0"),
        gpu(125 * US, 225 * US, "nvjet_k"),
    ]
    .join("\n");
    let t = parse_str("i", &l).unwrap();
    let p = predict(&t, &durs(&[("nvjet_k", 50 * US)]), Options::default());
    // the copy's call returns at 65 (3 µs after the copy, 60-62), 50 µs earlier: the next launch at 70
    assert_eq!(p.final_shift_ns, BTreeMap::from([(1, -50_000i64)]));
    assert_eq!(p.sources.waits, 2);
    assert_eq!((p.predicted.gpu_span_ns, p.predicted.busy_ns), (115 * US, 102 * US));
}
