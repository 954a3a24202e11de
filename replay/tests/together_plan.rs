//! `replay plan A.rec B.rec --together`: the exact plan of a together run of
//! two hand-built recordings (tenants, op counts, memory, pacing, the order of
//! the alone and together rounds, the prediction), and the refusals that need
//! only the manifests (different drivers, memory beyond the GPU's).

mod common;

use common::together::{finish, heavy, launches};
use common::*;
use serde_json::{Value, json};

/// `replay plan A B --together` with the prediction's constants of these tests (a 25 µs switch,
/// a 2 ms time slice), the recorded pacing (`compensated_pacing_removes_what_tracing_cost`
/// tests the default) and `more` arguments.
fn plan_together(a: &str, b: &str, more: &[&str]) -> (i32, String, String) {
    let mut args =
        vec!["plan", a, b, "--together", "--switch-us", "25", "--timeslice-us", "2000", "--pacing", "recorded"];
    args.extend_from_slice(more);
    replay(&args)
}

#[test]
fn exact_plan_of_two_recordings() {
    let (a, b) = (heavy(), launches());
    let (da, db) = (finish(&a, "580.159.04"), finish(&b, "580.159.04"));
    let (sa, sb) = (da.to_str().unwrap(), db.to_str().unwrap());
    let (code, out, err) = plan_together(sa, sb, &["--rounds", "3"]);
    assert_eq!(code, 0, "{err}");
    let image = std::fs::metadata(fixture("kernels.sm_90.cubin")).unwrap().len();
    let mem = (2u64 << 20) + image + (512 << 20);
    let mib = |b: u64| format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64);
    let want = format!(
        "together: 2 tenants on one GPU, each replayed in its own process and context, paced by its recorded host gaps
tenant 1: A.rec
  measured: phase \"generate\", ops 2..4 of 4 (the 1 before run once; the memory they leave is restored before each start barrier)
  ops: 3 (2 GPU work, 2 launches)
  memory: {m} (2.0 MiB windows + 0.0 MiB images + 512.0 MiB context reserve)
  pacing: 3.990 ms from first to last op, 1 ops wait from the previous call's return
  pacing: recorded (host gaps as recorded, --capture-data stops left out)
  recorded GPU: busy 3.515 ms of a 4.500 ms span (78.1 %), 2 busy intervals
  recorded on: NVIDIA H100 80GB HBM3, driver 580.159.04
tenant 2: B.rec
  measured: the whole recording (no phase marker of that name)
  ops: 4 (4 GPU work, 4 launches)
  memory: {m} (2.0 MiB windows + 0.0 MiB images + 512.0 MiB context reserve)
  pacing: 0.300 ms from first to last op, 0 ops wait from the previous call's return
  pacing: recorded (host gaps as recorded, --capture-data stops left out)
  recorded GPU: busy 0.040 ms of a 0.310 ms span (12.9 %), 4 busy intervals
  recorded on: NVIDIA H100 80GB HBM3, driver 580.159.04
memory: {t} together of 76293.9 MiB (80 GB from the model name \"NVIDIA H100 80GB HBM3\")
rounds: 3 (after each tenant's checking pass and warm-up pass)
  round 1: alone 1, alone 2, together
  round 2: together, alone 2, alone 1
  round 3: alone 1, alone 2, together
then: together once more, every output checked bit for bit
prediction (docs/colocation.md: the recorded phases on a simulated time-sliced GPU; context switch 25 µs, time slice 2000 µs):
  tenant 1: alone 3.495 ms (GPU busy 2.515 ms in a 3.495 ms span), together 3.585 ms (GPU span 3.585 ms): predicted slowdown 1.026×
    recorded GPU busy 78.1 %; others' work in its span 0.581 ms fits in its usable idle 0.935 ms
  tenant 2: alone 0.310 ms (GPU busy 0.040 ms in a 0.310 ms span), together 2.065 ms (GPU span 0.040 ms): predicted slowdown 6.661×
    recorded GPU busy 12.9 %; others' work in its span 0.242 ms exceeds its usable idle 0.120 ms
  together: GPU busy 2.555 ms in a 3.585 ms span, 2 context switches
",
        m = mib(mem),
        t = mib(2 * mem)
    );
    assert_eq!(out.replace(sa, "A.rec").replace(sb, "B.rec"), want);

    // The same plan as JSON: exact figures.
    let (code, out, err) = plan_together(sa, sb, &["--rounds", "2", "--json"]);
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
    // The simulation, µs from each phase's first op. A's records pair in order with its launches
    // (the first, 1 ms, is the launch before the phase): its phase is a 2015 µs kernel at 0, the
    // 3 ms sync at 10 (recorded from its start), a 500 µs kernel 980 µs after the sync's return.
    // B: four 10 µs kernels at 0, 100, 200, 300.
    // Alone: A's sync returns at 2015, its last kernel runs 2995–3495: 3495; B 310.
    // Together: A's kernel runs from 0; B's waits for A's slice to end (2000, A has 15 µs left),
    // a switch, B's four kernels 2025–2065 (the last three arrived meanwhile), a switch back
    // (2065–2090), A's 15 µs (to 2105, its sync returns), its last kernel 3085–3585.
    // Slowdowns 3585/3495 and 2065/310; the GPU busy 2515 + 40 µs in 0–3585, 2 switches.
    let p = &v["prediction"];
    let run = |wall: u64, busy: u64, span: u64| json!({"wall_ns": wall, "gpu_busy_ns": busy, "gpu_span_ns": span});
    assert_eq!(p[0]["alone"], run(3_495_000, 2_515_000, 3_495_000));
    assert_eq!(p[0]["together"], run(3_585_000, 2_515_000, 3_585_000));
    assert_eq!(p[1]["alone"], run(310_000, 40_000, 310_000));
    assert_eq!(p[1]["together"], run(2_065_000, 40_000, 40_000));
    assert_eq!((p[0]["work_without_duration"].clone(), p[1]["work_without_duration"].clone()), (json!(0), json!(0)));
    assert_eq!(v["predicted_gpu"], json!({"busy_ns": 2_555_000, "span_ns": 3_585_000, "switches": 2}));
    assert_eq!(p[1]["usable_idle_ns"], 120_000);
    // Others' work in A's span: u_B · span_A = (40/310) · 4500 µs.
    let close = |x: &Value, want: f64| assert!((x.as_f64().unwrap() - want).abs() < 1e-6 * want, "{x} vs {want}");
    close(&p[0]["others_work_ns"], 40.0 / 310.0 * 4_500_000.0);
    close(&p[0]["slowdown"], 3_585.0 / 3_495.0);
    close(&p[1]["slowdown"], 2_065.0 / 310.0);
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

/// Time the thread was stopped inside a gap (the recorder's `--capture-data`
/// stops after a synchronization) is not the program's host time: the
/// pacing and the prediction leave it out.
#[test]
fn stopped_time_is_left_out_of_the_pacing_and_the_prediction() {
    let mut a = heavy();
    // The synchronization returns at 5,010 µs; the recorder holds the thread 600 µs of the
    // 990 µs before the next launch, and 50 µs before the phase (not counted).
    for (ts, end) in [(5_100_000u64, 5_700_000u64), (1_500_000, 1_550_000)] {
        a.lines.push(json!({"type": "sched", "op": "off_cpu", "name": "stopped", "pid": 7, "tid": 7,
                            "ts": ts, "end_ts": end, "state": "blocked", "task_state": "t"}));
    }
    let b = launches();
    let (da, db) = (finish(&a, "580.159.04"), finish(&b, "580.159.04"));
    let (sa, sb) = (da.to_str().unwrap(), db.to_str().unwrap());
    let (code, out, err) = plan_together(sa, sb, &["--rounds", "1"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains(
            "  pacing: 3.990 ms from first to last op, 1 ops wait from the previous call's return; \
             0.600 ms the thread was stopped (the recorder's --capture-data, a debugger) left out\n"
        ),
        "{out}"
    );
    // Without the stop the tenant's alone time was 3.495 ms (exact_plan_of_two_recordings).
    assert!(out.contains("  tenant 1: alone 2.895 ms (GPU busy 2.515 ms in a 2.895 ms span)"), "{out}");
}

/// `--host-scale`: every recorded host gap of a tenant multiplied (its host program that many
/// times as slow), one factor for all recordings or one each; its GPU work keeps its recorded
/// durations in the prediction, and the replayed tenants get their factor.
#[test]
fn host_scale_stretches_the_host_gaps() {
    let (a, b) = (heavy(), launches());
    let (da, db) = (finish(&a, "580.159.04"), finish(&b, "580.159.04"));
    let (sa, sb) = (da.to_str().unwrap(), db.to_str().unwrap());
    let plan = |scale: &str| {
        let (code, out, err) = plan_together(sa, sb, &["--rounds", "1", "--host-scale", scale]);
        assert_eq!(code, 0, "{err}");
        out
    };
    // B's four 10 µs kernels 100 µs apart, twice as far apart: at 0, 200, 400, 600: alone 610 µs;
    // A as recorded (exact_plan_of_two_recordings: 3.495 ms).
    let out = plan("1,2");
    assert!(
        out.contains(
            "  pacing: 0.300 ms from first to last op, 0 ops wait from the previous call's return; \
             every host gap ×2 (--host-scale)\n"
        ),
        "{out}"
    );
    assert!(out.contains("  tenant 1: alone 3.495 ms (GPU busy 2.515 ms in a 3.495 ms span)"), "{out}");
    assert!(out.contains("  tenant 2: alone 0.610 ms (GPU busy 0.040 ms in a 0.610 ms span)"), "{out}");
    // Half the gaps for both: A's sync is called 5 µs into its 2015 µs kernel and returns with it
    // (at 2015), its last 500 µs kernel 490 µs later: 2505–3005; B's kernels at 0, 50, 100, 150.
    let out = plan("0.5");
    assert!(out.contains("  tenant 1: alone 3.005 ms (GPU busy 2.515 ms in a 3.005 ms span)"), "{out}");
    assert!(out.contains("  tenant 2: alone 0.160 ms (GPU busy 0.040 ms in a 0.160 ms span)"), "{out}");
    assert_eq!(out.matches("every host gap ×0.5 (--host-scale)").count(), 2, "{out}");
    // As JSON, per tenant.
    let (code, out, err) =
        replay(&["plan", sa, sb, "--together", "--json", "--pacing", "recorded", "--host-scale", "0.8,1.25"]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        (v["tenants"][0]["host_scale"].clone(), v["tenants"][1]["host_scale"].clone()),
        (json!(0.8), json!(1.25))
    );
    // Refused with one line each, before anything runs.
    for (scale, want) in [
        (
            "1,2,3",
            "replay: error: --host-scale: 3 factors for 2 recordings: give one for all, or one per recording in their order\n",
        ),
        (
            "0",
            "replay: error: --host-scale: 0 is not a factor above 0 (1 keeps the recorded host gaps, 0.5 halves them)\n",
        ),
    ] {
        for args in
            [&["plan", sa, sb, "--together", "--host-scale", scale][..], &[sa, sb, "--together", "--host-scale", scale]]
        {
            let (code, _, err) = replay(args);
            assert_eq!((code, err.as_str()), (1, want), "{args:?}");
        }
    }
}

/// `--host-alone-ms`: each tenant's host gaps scaled so that its phase takes that long alone in
/// the simulation; the factor found is the tenant's `--host-scale`.
#[test]
fn host_alone_ms_finds_the_host_scale() {
    let (a, b) = (heavy(), launches());
    let (da, db) = (finish(&a, "580.159.04"), finish(&b, "580.159.04"));
    let (sa, sb) = (da.to_str().unwrap(), db.to_str().unwrap());
    // A alone: 2515 µs of GPU work its sync waits for, then 980 µs of host time and a 500 µs
    // kernel: 2515 + 980·F µs; B: four 10 µs kernels 100 µs apart: 300·F + 10 µs. 3.005 ms and
    // 0.160 ms alone are both F = 0.5.
    let (code, out, err) = replay(&[
        "plan",
        sa,
        sb,
        "--together",
        "--rounds",
        "1",
        "--pacing",
        "recorded",
        "--host-alone-ms",
        "3.005,0.16",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("every host gap ×0.5 (--host-alone-ms: 3.005 ms alone)\n"), "{out}");
    assert!(out.contains("every host gap ×0.5 (--host-alone-ms: 0.160 ms alone)\n"), "{out}");
    assert!(out.contains("  tenant 1: alone 3.005 ms (GPU busy 2.515 ms in a 3.005 ms span)"), "{out}");
    assert!(out.contains("  tenant 2: alone 0.160 ms (GPU busy 0.040 ms in a 0.160 ms span)"), "{out}");
    // 0 keeps a recording's pacing; B at 0.610 ms is F = 2.
    let (code, out, err) =
        replay(&["plan", sa, sb, "--together", "--json", "--pacing", "recorded", "--host-alone-ms", "0,0.61"]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        (v["tenants"][0]["host_scale"].clone(), v["tenants"][1]["host_scale"].clone()),
        (json!(1.0), json!(2.0))
    );
    assert_eq!(v["tenants"][1]["host_alone_ns"], 610_000);
    assert_eq!(v["prediction"][1]["alone"]["wall_ns"], 610_000);
    // Faster than A's GPU work allows, and both options at once: refused with one line.
    let (code, _, err) = replay(&["plan", sa, sb, "--together", "--pacing", "recorded", "--host-alone-ms", "2,0"]);
    assert_eq!(code, 1);
    assert_eq!(
        err.replace(sa, "A.rec"),
        "replay: error: --host-alone-ms: A.rec: no host speed gives 2.000 ms alone: with its host time a \
         thousandth of the recorded, its phase still takes 2.516 ms (its GPU work)\n"
    );
    let (code, _, err) = replay(&["plan", sa, sb, "--together", "--host-alone-ms", "1", "--host-scale", "1"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("the argument '--host-alone-ms <MS[,MS…]>' cannot be used with '--host-scale <F[,F…]>'"),
        "{err}"
    );
}

/// Compensated pacing, the default: each host gap of B loses what tracing cost its thread there,
/// from its footer's bpf_stats (cu_launch 1,000 ns a run, cu_enter 300) and the trap per probe
/// hit (700 ns, the default), the 5 µs the recorder held its CPU while it waited (a sched
/// line's held_by) and an on-CPU sample (the sample program's 8,000 ns over the footer's 2
/// samples: 4,000 ns); the prediction paces it so.
#[test]
fn compensated_pacing_removes_what_tracing_cost() {
    let a = heavy();
    let mut b = launches();
    // Nine calls replay does not make between B's first two launches (1,995,000 and 2,095,000).
    for k in 0..9u64 {
        b.call("context", "ctx_get_current", "cuCtxGetCurrent", json!({}));
        b.lines.last_mut().unwrap()["ts"] = json!(2_000_000 + k * 1_000);
    }
    b.lines.push(json!({"type": "sched", "op": "off_cpu", "name": "runnable", "pid": 7, "tid": 7,
                        "ts": 2_150_000, "end_ts": 2_155_000, "state": "runnable", "preempted": true,
                        "held_by": [{"pid": 99, "tid": 99, "comm": "tracer", "ns": 5_000}], "runnable_ns": 5_000}));
    // Samples of B's thread: one in its second gap, one before its first op (in no gap).
    for ts in [2_100_000u64, 1_000] {
        b.lines
            .push(json!({"type": "sample", "op": "cpu", "name": "sample", "ts": ts, "pid": 7, "tid": 7, "stack": 1}));
    }
    let stats = json!({"cu_launch": {"runs": 4, "run_time_ns": 4_000, "ns_per_run": 1000.0},
                       "cu_enter": {"runs": 10, "run_time_ns": 3_000, "ns_per_run": 300.0},
                       "stack_sample": {"runs": 40, "run_time_ns": 8_000, "ns_per_run": 200.0}});
    let db = b.write_with(|text| {
        let last = text.len() - 1;
        text[last] = json!({"type": "footer", "calls": 13, "bpf_stats": stats, "stacks": {"by_site": {"sample": 2}}})
            .to_string();
    });
    let db = common::together::set_manifest(&db, "580.159.04");
    let da = finish(&a, "580.159.04");
    let (sa, sb) = (da.to_str().unwrap(), db.to_str().unwrap());
    let args = ["plan", sa, sb, "--together", "--switch-us", "25", "--timeslice-us", "2000", "--rounds", "1"];
    let (code, out, err) = replay(&args);
    assert_eq!(code, 0, "{err}");
    // Gap 1: launch 2's entry (700 + 1,000) and 9 calls (700 + 300 each): 10,700 ns; gap 2:
    // 1,700 + 5,000 held by the recorder + 4,000 of a sample; gap 3: 1,700. B's kernels at 0,
    // 89.3, 178.6, 276.9 µs.
    assert!(
        out.contains(
            "  pacing: compensated: 0.023 ms of tracing removed from 3 host gaps (1925 ns per probed call, 12 calls), 0 gaps clamped at 0\n"
        ),
        "{out}"
    );
    assert!(out.contains("  tenant 2: alone 0.287 ms (GPU busy 0.040 ms in a 0.287 ms span)"), "{out}");
    // A has neither statistics nor scheduler lines: the trap only, and both named.
    assert_eq!(out.matches("  pacing: not corrected: no bpf_stats in the footer").count(), 1, "{out}");
    assert_eq!(out.matches("  pacing: not corrected: no scheduler lines").count(), 1, "{out}");
    let (code, out, err) = replay(&[&args[..], &["--json"]].concat());
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let p = &v["tenants"][1]["pacing"];
    assert_eq!(
        (p["pacing"].clone(), p["removed_ns"].clone(), p["gaps"].clone(), p["clamped"].clone(), p["calls"].clone()),
        (json!("compensated"), json!(23_100), json!(3), json!(0), json!(12))
    );
    // every cost was there; the machine's usual speed was not (the footer has no host_speed)
    assert_eq!(
        p["missing"],
        json!([
            "the machine's usual speed (no host_speed in the footer: recorded without BPF statistics, or before it was kept)"
        ])
    );
    assert_eq!((p["costs"]["launch_ns"].clone(), p["costs"]["sample_ns"].clone()), (json!(1000.0), json!(4000.0)));
    assert_eq!(v["prediction"][1]["alone"]["wall_ns"], 286_900);
    // --host-speed 2 halves the compensated gaps: kernels at 0, 44.65, 89.3, 138.45 µs.
    let (code, out, err) = replay(&[&args[..], &["--json", "--host-speed", "2"]].concat());
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["prediction"][1]["alone"]["wall_ns"], 148_450);
    assert_eq!(v["tenants"][1]["pacing"]["host_speed"], 2.0);
    // Bad values: one line naming the option.
    for (flag, val, want) in [
        ("--pacing", "raw", "invalid value 'raw' for '--pacing <HOW>': \"raw\": expected compensated or recorded"),
        ("--host-speed", "0", "invalid value '0' for '--host-speed <F|FILE>': 0: not a factor above 0"),
        (
            "--host-speed",
            "nofile",
            "invalid value 'nofile' for '--host-speed <F|FILE>': nofile: neither a factor nor a calibration file",
        ),
        ("--probe-trap-ns", "inf", "invalid value 'inf' for '--probe-trap-ns <NS>': inf: not a time in ns (0 or more)"),
    ] {
        let (code, _, err) = replay(&[&args[..], &[flag, val]].concat());
        assert_eq!(code, 2, "{err}");
        assert!(err.contains(want), "{flag} {val}: {err}");
    }
    // B recorded at half the machine's usual speed (its footer's host_speed: the probes at
    // 2,000 ns a run, the median of 5 recordings of the command 1,000 ns): compensated pacing
    // halves its gaps as --host-speed 2 did; --recorded-speed keeps them; --host-speed 2 on
    // top quarters them.
    let db2 = b.write_with(|text| {
        let last = text.len() - 1;
        let speed = json!({"gauge_ns": 2000.0, "reference_ns": 1000.0, "recordings": 5, "factor": 2.0});
        text[last] = json!({"type": "footer", "calls": 13, "bpf_stats": stats, "stacks": {"by_site": {"sample": 2}},
                            "host_speed": speed})
        .to_string();
    });
    let db2 = common::together::set_manifest(&db2, "580.159.04");
    let args2 = ["plan", sa, db2.to_str().unwrap(), "--together", "--switch-us", "25", "--timeslice-us", "2000"];
    let plan = |extra: &[&str]| {
        let (code, out, err) = replay(&[&args2[..], &["--rounds", "1", "--json"], extra].concat());
        assert_eq!(code, 0, "{extra:?}: {err}");
        serde_json::from_str::<Value>(&out).unwrap()
    };
    let v = plan(&[]);
    assert_eq!(v["prediction"][1]["alone"]["wall_ns"], 148_450);
    let p = &v["tenants"][1]["pacing"];
    assert_eq!((p["host_speed"].clone(), p["missing"].clone()), (json!(2.0), json!([])));
    assert_eq!(
        p["host_speed_from"],
        "usual speed: probes at 2000 ns a run, the machine's median 1000 ns over 5 recordings of the command"
    );
    assert_eq!(plan(&["--recorded-speed"])["prediction"][1]["alone"]["wall_ns"], 286_900);
    let v = plan(&["--host-speed", "2"]);
    assert_eq!(v["tenants"][1]["pacing"]["host_speed"], 4.0);
    // recorded pacing keeps the recorded speed too
    let v = plan(&["--pacing", "recorded"]);
    assert_eq!(v["tenants"][1]["pacing"]["host_speed"], 1.0);
    // the text says where the factor came from
    let (_, out, _) = replay(&[&args2[..], &["--rounds", "1"]].concat());
    assert!(
        out.contains("; host speed 2 (usual speed: probes at 2000 ns a run, the machine's median 1000 ns over 5 recordings of the command): host gaps x 0.5000\n"),
        "{out}"
    );
}
