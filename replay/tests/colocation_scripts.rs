//! The Python of the co-location GPU script (experiments/colocation/gpu_colocation.sh),
//! run on this machine: the real-runs harness (experiments/colocation/colocation_real.py)
//! with stand-in workloads that speak the same serve protocol, and the final
//! table (experiments/colocation/colocation_table.py) on its output and a replay report.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../experiments/colocation").join(name)
}

fn python(args: &[&str]) -> (i32, String, String) {
    let o = Command::new("python3").args(args).output().expect("python3");
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// A stand-in workload: KIND --serve DIR; each measured phase takes `a` 1 s, `b` 2 s (reported, not slept).
const FAKE: &str = r#"
import json, os, sys, time
kind, d = sys.argv[1], sys.argv[3]
open(os.path.join(d, "ready." + kind), "w").close()
k = 1
while True:
    go = os.path.join(d, f"go.{kind}.{k}")
    while not os.path.exists(go):
        if os.path.exists(os.path.join(d, "quit")):
            sys.exit(0)
        time.sleep(0.001)
    with open(os.path.join(d, f".done.{kind}.{k}"), "w") as f:
        json.dump({"seconds": {"a": 1.0, "b": 2.0}[kind] + k / 100}, f)
    os.rename(os.path.join(d, f".done.{kind}.{k}"), os.path.join(d, f"done.{kind}.{k}"))
    k += 1
"#;

#[test]
fn real_runs_in_the_planner_order_then_the_table() {
    let d = tempfile::tempdir().unwrap();
    let fake = d.path().join("fake.py");
    std::fs::write(&fake, FAKE).unwrap();
    let out = d.path().join("real.json");
    let (code, stdout, err) = python(&[
        script("colocation_real.py").to_str().unwrap(),
        "a",
        "b",
        "--rounds",
        "2",
        "--workloads",
        fake.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        stdout,
        "round 1 alone a: a 1.010 s\nround 1 alone b: b 2.010 s\nround 1 together: a 1.020 s, b 2.020 s\n\
         round 2 together: a 1.030 s, b 2.030 s\nround 2 alone b: b 2.040 s\nround 2 alone a: a 1.040 s\n"
    );
    let real: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(real["tenants"], json!(["a", "b"]));
    assert_eq!(real["runs"][2], json!({"round": 1, "run": "together", "seconds": {"a": 1.02, "b": 2.02}}));
    assert_eq!(real["error"], Value::Null);

    // The table: a real slowdown of (1.02 + 1.03) / 2 / ((1.01 + 1.04) / 2) = 1.000 for a, spread 0.03 / 1.025;
    // its 90 % bootstrap interval runs from 1.02 / 1.04 to 1.03 / 1.01 (both medians of a resample drawn
    // from one end), where a's replayed 1.010 lies and b's 0.900 does not.
    let rep = d.path().join("together.json");
    std::fs::write(
        &rep,
        json!({"tenants": [
            {"recording": "/x/a.rec", "measured": {"slowdown": 1.01, "alone_spread_pct": 4.0}, "predicted": {"slowdown": 1.05}},
            {"recording": "/x/b.rec/", "measured": {"slowdown": 0.9, "alone_spread_pct": 2.5}, "predicted": {"slowdown": null}}
        ]})
        .to_string(),
    )
    .unwrap();
    let (code, table, err) = python(&[
        script("colocation_table.py").to_str().unwrap(),
        "--pair",
        "a+b",
        out.to_str().unwrap(),
        rep.to_str().unwrap(),
        "--pair",
        "c+d",
        "/nonexistent/real.json",
        "/nonexistent/together.json",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        table,
        "pair  tenant  real (alone spread)  real 90% interval  replayed (alone spread)  in   predicted  replay err  pred. err\n\
         ----  ------  -------------------  -----------------  -----------------------  ---  ---------  ----------  ---------\n\
         a+b   a       1.000x (2.9%)        0.981-1.020x       1.010x (4.0%)            yes  1.050x     +1.0%       +5.0%\n\
         a+b   b       1.000x (1.5%)        0.990-1.010x       0.900x (2.5%)            no   -          -10.0%      -\n\
         c+d   -       no results\n\
         (spread): the alone-vs-alone spread, (max − min) of the alone runs over their median; err: against the real slowdown\n\
         90% interval: the real slowdown's bootstrap interval (alone and together runs resampled, 2,000 times); in: the replayed slowdown lies inside it\n"
    );
    assert!(err.contains("colocation_table: /nonexistent/real.json: [Errno 2] No such file or directory"), "{err}");
}

/// sync_waits.py on a hand-made trace: served runs are phases `served KIND K`
/// closed by `between`; a run is together when another workload's run
/// overlaps it; synchronizing calls (not asynchronous copies, not gpu lines)
/// are counted per run with their time; the second table counts each run's
/// GPU activities, their time and its slices (its own activities with no
/// other workload's started in between).
#[test]
fn sync_waits_alone_and_together() {
    let d = tempfile::tempdir().unwrap();
    let trace = d.path().join("t.jsonl");
    let m =
        |pid: u32, label: &str, ts: u64| json!({"type": "marker", "op": "phase", "label": label, "pid": pid, "ts": ts});
    let c = |pid: u32, name: &str, ts: u64, us: f64| json!({"type": "sync", "name": name, "pid": pid, "tid": pid, "ts": ts, "duration_us": us});
    let off = |pid: u32, ts: u64, end: u64, state: &str| json!({"type": "sched", "op": "off_cpu", "name": "x", "pid": pid, "tid": pid, "ts": ts, "end_ts": end, "state": state});
    let g = |pid: u32, ts: u64, us: f64| json!({"type": "gpu", "op": "kernel", "name": "k", "pid": pid, "ts": ts, "duration_us": us});
    let lines = [
        // gen alone: 1 ms, one 100 µs sync and an asynchronous copy (not a wait)
        m(1, "served gen 1", 0),
        c(1, "cuStreamSynchronize", 10, 100.0),
        c(1, "cuMemcpyDtoHAsync_v2", 20, 5.0),
        g(1, 100_000, 50.0),
        g(1, 200_000, 50.0),
        json!({"type": "kernel", "name": "cuLaunchKernel", "pid": 1, "tid": 1, "ts": 30}),
        // another thread's call: not the calling thread's
        json!({"type": "kernel", "name": "cuLaunchKernel", "pid": 1, "tid": 7, "ts": 40}),
        json!({"type": "sched", "op": "off_cpu", "name": "runnable", "pid": 1, "tid": 1, "ts": 100_000, "end_ts": 300_000, "state": "runnable", "held_by": [{"comm": "python3", "ns": 200_000}]}),
        m(1, "between", 1_000_000),
        // gen together with batch: 1.5 ms, syncs of 500 and 700 µs, a synchronous copy of 300 µs
        m(2, "served batch 1", 2_000_000),
        m(1, "served gen 2", 2_000_000),
        c(1, "cuStreamSynchronize", 2_100_000, 500.0),
        c(1, "cuCtxSynchronize_v2", 2_200_000, 700.0),
        c(1, "cuMemcpyDtoH_v2", 2_300_000, 300.0),
        json!({"type": "gpu", "name": "cuStreamSynchronize", "pid": 1, "ts": 2_400_000, "duration_us": 9.0}),
        // the GPU inside the together runs: gen, batch, gen, gen, batch, gen (after batch's run)
        g(2, 2_500_000, 200.0),
        g(1, 2_800_000, 100.0),
        g(1, 2_900_000, 100.0),
        g(2, 2_950_000, 40.0),
        g(1, 3_100_000, 50.0),
        off(1, 2_100_000, 2_600_000, "blocked"),
        off(1, 3_400_000, 3_600_000, "runnable"),
        json!({"type": "ioctl", "name": "RM_CONTROL", "pid": 1, "tid": 1, "ts": 2_700_000, "duration_us": 40.0}),
        json!({"type": "sched", "op": "off_cpu", "name": "stopped", "pid": 1, "tid": 1, "ts": 3_000_000, "end_ts": 3_300_000, "state": "blocked"}),
        m(1, "between", 3_500_000),
        m(2, "between", 3_000_000),
    ];
    std::fs::write(&trace, lines.iter().map(|l| l.to_string() + "\n").collect::<String>()).unwrap();
    let (code, out, err) = python(&[script("sync_waits.py").to_str().unwrap(), trace.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let tables: Vec<&str> = out.split("\n\n").collect();
    let [syncs, gpu, host] = tables[..] else { panic!("three tables: {out}") };
    let rows: Vec<Vec<&str>> = syncs.lines().skip(1).map(|l| l.split_whitespace().collect()).collect();
    // pid, workload, kind, runs, wall ms, syncs/run, sync ms/run, median, p90, max (µs)
    assert_eq!(rows[0], ["1", "gen", "alone", "1", "1.0", "1.0", "0.1", "100.0", "100.0", "100.0"], "{out}");
    assert_eq!(rows[1], ["1", "gen", "together", "1", "1.5", "3.0", "1.5", "500.0", "700.0", "700.0"], "{out}");
    assert_eq!(rows[2][..6], ["2", "batch", "together", "1", "1.0", "0.0"], "{out}");
    assert_eq!(rows.len(), 3, "{out}");
    let rows: Vec<Vec<&str>> = gpu.lines().skip(1).map(|l| l.split_whitespace().collect()).collect();
    // pid, workload, kind, runs, activities/run, GPU ms/run, slices/run
    assert_eq!(rows[0], ["1", "gen", "alone", "1", "2.0", "0.10", "1.0"], "{out}");
    assert_eq!(rows[1], ["1", "gen", "together", "1", "4.0", "0.26", "3.0"], "{out}");
    assert_eq!(rows[2], ["2", "batch", "together", "1", "2.0", "0.24", "2.0"], "{out}");
    assert_eq!(rows.len(), 3, "{out}");
    // The calling thread (tid 1: most calls) per run: on-CPU, runnable, stopped, blocked (ms),
    // on-CPU µs per call.
    let rows: Vec<Vec<&str>> = host.lines().skip(1).map(|l| l.split_whitespace().collect()).collect();
    assert_eq!(rows[0], ["1", "gen", "alone", "1", "3.0", "0.80", "0.20", "0.00", "0.00", "266.7"], "{out}");
    assert_eq!(rows[1], ["1", "gen", "together", "1", "3.0", "0.60", "0.10", "0.30", "0.50", "200.0"], "{out}");
    assert_eq!(rows.len(), 2, "{out}");

    // --causes gen: who held the CPU while the calling thread was runnable (the together
    // interval names no one), its blocked and stopped time per run by cause, its ioctls.
    let (code, out, err) =
        python(&[script("sync_waits.py").to_str().unwrap(), trace.to_str().unwrap(), "--causes", "gen"]);
    assert_eq!(code, 0, "{err}");
    let sections: Vec<Vec<Vec<&str>>> = out
        .split("\n\n")
        .skip(3)
        .map(|t| t.lines().skip(1).map(|l| l.split_whitespace().collect()).collect())
        .collect();
    assert_eq!(sections[0], [vec!["python3", "0.2"], vec!["?", "0.1"]], "{out}");
    assert_eq!(sections[1], [vec!["together", "x", "0.50"], vec!["together", "stopped", "0.30"]], "{out}");
    assert_eq!(sections[2], [vec!["together", "RM_CONTROL", "1.0", "0.04"]], "{out}");
    assert_eq!(sections.len(), 3, "{out}");
}

/// host_match.py: each tenant's real alone median, in milliseconds, in the pair's order; the
/// together runs are not read.
#[test]
fn host_match_gives_the_real_alone_medians() {
    let d = tempfile::tempdir().unwrap();
    let real = d.path().join("real.json");
    let run = |run: &str, s: Value| json!({"round": 1, "run": run, "seconds": s});
    std::fs::write(
        &real,
        json!({"tenants": ["gen", "batch"], "runs": [
            run("alone gen", json!({"gen": 0.7})), run("alone gen", json!({"gen": 0.9})), run("alone gen", json!({"gen": 0.8})),
            run("alone batch", json!({"batch": 1.2})), run("alone batch", json!({"batch": 1.4})),
            run("together", json!({"gen": 9.0, "batch": 9.0}))
        ]})
        .to_string(),
    )
    .unwrap();
    let (code, out, err) = python(&[script("host_match.py").to_str().unwrap(), real.to_str().unwrap()]);
    assert_eq!((code, out.as_str()), (0, "800.000,1300.000\n"), "{err}");
    let (code, _, err) = python(&[script("host_match.py").to_str().unwrap(), "/nonexistent/real.json"]);
    assert_eq!(code, 1);
    assert_eq!(err, "host_match: [Errno 2] No such file or directory: '/nonexistent/real.json'\n");
}
