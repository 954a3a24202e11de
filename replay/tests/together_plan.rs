//! `replay plan A.rec B.rec --together`: the exact plan of a together run of
//! two hand-built recordings (tenants, op counts, memory, pacing, the order of
//! the alone and together rounds, the prediction), and the refusals that need
//! only the manifests (different drivers, memory beyond the GPU's).

mod common;

use common::together::{finish, heavy, launches};
use common::*;
use serde_json::{Value, json};

#[test]
fn exact_plan_of_two_recordings() {
    let (a, b) = (heavy(), launches());
    let (da, db) = (finish(&a, "580.159.04"), finish(&b, "580.159.04"));
    let (sa, sb) = (da.to_str().unwrap(), db.to_str().unwrap());
    let (code, out, err) = replay(&["plan", sa, sb, "--together", "--rounds", "3"]);
    assert_eq!(code, 0, "{err}");
    let image = std::fs::metadata(fixture("kernels.sm_90.cubin")).unwrap().len();
    let mem = (2u64 << 20) + image + (512 << 20);
    let mib = |b: u64| format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64);
    let want = format!(
        "together: 2 tenants on one GPU, each replayed in its own process and context, paced by its recorded host gaps
tenant 1: A.rec
  measured: phase \"generate\", ops 2..4 of 4 (the 1 before run unpaced ahead of each start barrier)
  ops: 3 (2 GPU work, 2 launches)
  memory: {m} (2.0 MiB windows + 0.0 MiB images + 512.0 MiB context reserve)
  pacing: 3.990 ms from first to last op, 1 ops wait from the previous call's return
  recorded GPU: busy 3.515 ms of a 4.500 ms span (78.1 %), 2 busy intervals
  recorded on: NVIDIA H100 80GB HBM3, driver 580.159.04
tenant 2: B.rec
  measured: the whole recording (no phase marker of that name)
  ops: 4 (4 GPU work, 4 launches)
  memory: {m} (2.0 MiB windows + 0.0 MiB images + 512.0 MiB context reserve)
  pacing: 0.300 ms from first to last op, 0 ops wait from the previous call's return
  recorded GPU: busy 0.040 ms of a 0.310 ms span (12.9 %), 4 busy intervals
  recorded on: NVIDIA H100 80GB HBM3, driver 580.159.04
memory: {t} together of 76293.9 MiB (80 GB from the model name \"NVIDIA H100 80GB HBM3\")
rounds: 3 (after each tenant's checking pass and warm-up pass)
  round 1: alone 1, alone 2, together
  round 2: together, alone 2, alone 1
  round 3: alone 1, alone 2, together
then: together once more, every output checked bit for bit
prediction (docs/colocation.md; context switch 25 µs, time slice 2000 µs):
  tenant 1: GPU busy 78.1 % in 2 bursts (mean residual 1328.6 µs); others' work in its span 0.581 ms fits in its usable idle 0.935 ms; predicted slowdown 1.031×
  tenant 2: GPU busy 12.9 % in 4 bursts (mean residual 5.0 µs); others' work in its span 0.242 ms exceeds its usable idle 0.120 ms; predicted slowdown 14.643×
",
        m = mib(mem),
        t = mib(2 * mem)
    );
    assert_eq!(out.replace(sa, "A.rec").replace(sb, "B.rec"), want);

    // The same plan as JSON: exact figures.
    let (code, out, err) = replay(&["plan", sa, sb, "--together", "--rounds", "2", "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        v["rounds"],
        json!([[{"alone": 0}, {"alone": 1}, "together"], ["together", {"alone": 1}, {"alone": 0}]])
    );
    assert_eq!(v["memory_bytes"], 2 * mem);
    assert_eq!(v["capacity"]["bytes"], 80_000_000_000u64);
    let t = &v["tenants"];
    let counts = |t: &Value| (t["ops"].clone(), t["phase_ops"].clone(), t["work_ops"].clone(), t["launches"].clone());
    assert_eq!(counts(&t[0]), (json!(4), json!(3), json!(2), json!(2)));
    assert_eq!(
        t[0]["phase"],
        json!({"label": "generate", "ops": {"start": 1, "end": 4}, "start_ts": 2_005_000, "end_ts": null})
    );
    assert_eq!(t[1]["phase"]["label"], Value::Null);
    assert_eq!(counts(&t[1]), (json!(4), json!(4), json!(4), json!(4)));
    assert_eq!(t[0]["paced_span_ns"], 3_990_000);
    assert_eq!(t[1]["paced_span_ns"], 300_000);
    assert_eq!(t[0]["recorded_busy_ns"], 3_515_000);
    assert_eq!(t[1]["recorded_gpu_span_ns"], 310_000);
    let p = &v["prediction"];
    assert_eq!(p[0]["bursts"], 2);
    assert_eq!(p[1]["usable_idle_ns"], 120_000);
    // delay A = (40/310) · (2 · (5 + 25) + 1015) µs; delay B = (3515/4500) · 4 · (1328.623 + 25) µs.
    let close = |x: &Value, want: f64| assert!((x.as_f64().unwrap() - want).abs() < 1e-6 * want, "{x} vs {want}");
    close(&p[0]["delay_ns"], 40.0 / 310.0 * (2.0 * 30_000.0 + 1_015_000.0));
    close(&p[0]["slowdown"], 1.0 + 40.0 / 310.0 * 1_075_000.0 / 4_500_000.0);
    let r_a = (3_015_000f64.powi(2) + 500_000f64.powi(2)) / (2.0 * 3_515_000.0);
    close(&p[1]["delay_ns"], 3515.0 / 4500.0 * 4.0 * (r_a + 25_000.0));
    assert_eq!(p[0]["fits_in_gaps"], true);
    assert_eq!(p[1]["fits_in_gaps"], false);
}

#[test]
fn refused_before_anything_runs() {
    let (a, b, b2) = (heavy(), launches(), launches());
    let (da, db) = (finish(&a, "580.159.04"), finish(&b, "575.57.08"));
    let (sa, sb) = (da.to_str().unwrap(), db.to_str().unwrap());
    // Different drivers: one line, also for the run (refused before it looks for a GPU).
    for args in [&["plan", sa, sb, "--together"][..], &[sa, sb, "--together"]] {
        let (code, out, err) = replay(args);
        assert_eq!(code, 1, "{err}");
        assert_eq!(out, "");
        assert_eq!(
            err,
            format!(
                "replay: error: {sb}/manifest.json: driver 575.57.08, but {sa}/manifest.json has driver 580.159.04: \
                 tenants must be recorded under one driver version (record them again on this machine)\n"
            )
        );
    }
    // More memory than the GPU has.
    let db = finish(&b2, "580.159.04");
    let sb = db.to_str().unwrap();
    let (code, _, err) = replay(&["plan", sa, sb, "--together", "--gpu-memory", "1"]);
    assert_eq!(code, 1);
    let image = std::fs::metadata(fixture("kernels.sm_90.cubin")).unwrap().len();
    let mem = (2u64 << 20) + image + (512 << 20);
    let mib = |b: u64| format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64);
    assert_eq!(
        err,
        format!(
            "replay: error: the tenants need {} of GPU memory together ({sa} {m}, {sb} {m}), more than the GPU's 953.7 MiB \
             (--gpu-memory 1): run fewer of them together\n",
            mib(2 * mem),
            m = mib(mem)
        )
    );
    // One recording is not a together run; several without --together are a misuse.
    let (code, _, err) = replay(&["plan", sa, "--together"]);
    assert_eq!((code, err.as_str()), (1, "replay: error: --together needs at least two recordings (got 1)\n"));
    let (code, _, err) = replay(&["plan", sa, sb]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(
        err,
        "replay: error: 2 recordings given: plan one at a time, or add --together for their together run\n"
    );
}
