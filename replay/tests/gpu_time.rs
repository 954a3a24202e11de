//! The CUPTI figures on a real recording: the `gpu` lines that
//! traces/replay_check.rec holds (CUPTI records of the H100 run) are fed to
//! the report's code as if the replay had measured them. Pairing with the
//! planned ops must then be complete and every error exactly 0.

use replay::gpu_time::figures::{families_and_kernels, isolated_durations, mode_gpu, segment_rows};
use replay::gpu_time::matching::Submitted;
use replay::gpu_time::{Activity, Op};
use replay::plan::{self, OpKind, Plan};
use replay::recording::{Marker, Recording};
use replay::report::recorded_time;
use tracer_cupti::collect::Taken;

fn open() -> (Recording, Plan) {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../traces/replay_check.rec");
    let rec = Recording::open(&dir).unwrap();
    let p = plan::build(&rec.manifest, &rec.trace, "trace.jsonl").unwrap();
    (rec, p)
}

fn recorded_as_measured(rec: &Recording) -> Vec<Activity> {
    rec.trace
        .gpu
        .iter()
        .map(|g| Activity {
            name: if g.op == "kernel" { g.name.as_deref().map(std::sync::Arc::from) } else { None },
            bytes: g.size,
            ..Activity::new(g.measured_op(), g.ts, g.end_ts, g.stream_id)
        })
        .collect()
}

/// The ops a pass submits, each on its planned stream (synchronous copies on the legacy one).
fn submitted(p: &Plan) -> Vec<Submitted> {
    let legacy = p.streams.iter().position(|s| s.kind == plan::StreamKind::Legacy).unwrap_or(usize::MAX);
    p.ops
        .iter()
        .enumerate()
        .filter(|(_, o)| o.is_work())
        .map(|(i, o)| {
            let (kind, stream) = match &o.kind {
                OpKind::Launch(_) => (Op::Kernel, o.stream.unwrap()),
                OpKind::Copy(c) => (Op::Memcpy, if c.is_async { o.stream.unwrap() } else { legacy }),
                _ => (Op::Memset, o.stream.unwrap()),
            };
            Submitted { op: i, stream: stream as u64, kind, kernel: o.launch().map(|l| l.kernel.clone()), graph: None }
        })
        .collect()
}

#[test]
fn the_recording_measured_against_itself() {
    let (mut rec, p) = open();
    let rt = recorded_time(&rec.trace, &p);
    let acts = recorded_as_measured(&rec);
    let window = (acts.iter().map(|a| a.start).min().unwrap(), acts.iter().map(|a| a.end).max().unwrap());
    let sub = submitted(&p);
    let g = mode_gpu(&p, Some(&sub), Taken { activities: acts, dropped: 0 }, &[window], &rt);
    let j = &g.json;
    assert_eq!(j["pairing_errors"], serde_json::json!([]), "{j}");
    assert_eq!(j["paired_passes"], 1);
    assert_eq!(j["expected_per_pass"], serde_json::json!({"kernels": 5, "copies": 3, "sets": 1}));
    for k in ["busy_error_pct", "kernels_error_pct", "copies_error_pct", "sets_error_pct"] {
        assert_eq!(j[k], 0.0, "{k}: {j}");
    }
    assert_eq!(j["busy_us"].as_f64().unwrap(), rt.busy_ns as f64 / 1e3);
    assert_eq!(j["passes"][0]["kernels"], 5);
    // Each record paired with its op: the recorded trace lines, in time order.
    let (last, lines) = (g.passes.last().unwrap(), &g.last_links);
    let names: Vec<String> =
        last.iter().map(|a| a.name.as_deref().map(str::to_owned).unwrap_or_else(|| format!("{:?}", a.op))).collect();
    assert_eq!(
        names,
        ["Memcpy", "rc_fill", "rc_axpy", "Memset", "rc_struct", "rc_block_sum", "rc_cluster", "Memcpy", "Memcpy"]
    );
    for (a, l) in last.iter().zip(lines) {
        let (line, ts) = l.unwrap();
        let op = p.ops.iter().find(|o| o.line == line).unwrap();
        assert_eq!(op.ts, ts);
        match (&op.kind, a.op) {
            (OpKind::Launch(x), Op::Kernel) => assert_eq!(Some(x.kernel.as_str()), a.name.as_deref()),
            (OpKind::Copy(c), Op::Memcpy) => assert_eq!(c.size, a.bytes),
            (OpKind::Set(s), Op::Memset) => assert_eq!(s.count * s.elem as u64, a.bytes),
            (k, o) => panic!("line {l:?}: {o:?} record paired with {k:?}"),
        }
    }
    // Per family and kernel: identical.
    let (fams, kernels) = families_and_kernels(&g.passes, &rt, 20);
    assert_eq!(fams.as_array().unwrap().len(), 4, "{fams}"); // elementwise (rc_fill), copy, set, other
    for f in fams.as_array().unwrap().iter().chain(kernels.as_array().unwrap()) {
        assert_eq!(f["error_pct"], 0.0, "{f}");
    }
    assert_eq!(kernels.as_array().unwrap().len(), 5);
    // A marker before the first call: one iteration segment holding all 9 ops, 0 % off.
    let first = p.ops.iter().map(|o| o.ts).min().unwrap().min(window.0);
    rec.trace.markers.push(Marker {
        ts: first - 1,
        pid: p.ops[0].pid,
        op: "iteration".into(),
        label: "0".into(),
        tokens: Some(3),
    });
    let seg = segment_rows(&rec, &p, &g.matched).unwrap();
    assert_eq!(seg[0]["ops"], 9, "{seg}");
    assert_eq!(seg[0]["busy_error_pct"], 0.0);
    assert_eq!(seg[0]["tokens"], 3);
    // A missing record: pairing fails for the pass, totals are still there.
    let mut short = recorded_as_measured(&rec);
    short.retain(|a| a.name.as_deref() != Some("rc_struct"));
    let g = mode_gpu(&p, Some(&sub), Taken { activities: short, dropped: 2 }, &[window], &rt);
    assert_eq!(g.json["paired_passes"], 0);
    assert_eq!(g.json["dropped_by_cupti"], 2);
    assert!(
        g.json["pairing_errors"][0]
            .as_str()
            .unwrap()
            .starts_with("pass 1: CUPTI stream 14: 6 records (3 kernels, 2 copies, 1 sets) match no"),
        "{}",
        g.json
    );
    assert_eq!(g.json["passes"][0]["kernels"], 4);
}

#[test]
fn isolated_durations_from_the_records_of_each_window() {
    let (_, p) = open();
    let launch = p.ops.iter().position(|o| o.launch().is_some()).unwrap();
    let copy = p.ops.iter().position(|o| matches!(o.kind, OpKind::Copy(_))).unwrap();
    let k = |s: u64, e: u64| Activity::new(Op::Kernel, s, e, 20);
    let acts = vec![
        k(1_000, 3_000),
        Activity { op: Op::Memset, ..k(3_100, 3_200) }, // a prologue memset: not the kernel's
        k(4_000, 5_000),
        Activity { op: Op::Memcpy, ..k(10_000, 14_000) },
        Activity { op: Op::Memcpy, ..k(15_000, 16_000) },
    ];
    let two = |acts: &Vec<Activity>, reps| {
        let taken = Taken { activities: acts.clone(), dropped: 0 };
        isolated_durations(&p, &[launch, copy], &[(900, 6_000), (9_000, 20_000)], taken, reps, None)
    };
    assert_eq!(two(&acts, 2), vec![Some(vec![0.001, 0.002]), Some(vec![0.001, 0.004])]);
    // Three runs expected, two seen: no CUPTI figure for that key.
    assert_eq!(two(&acts, 3), vec![None, None]);
    // A memset timed after L2 flushes (memsets of 100 MiB in the same window): the flushes are not its runs.
    let set = p.ops.iter().position(|o| matches!(o.kind, OpKind::Set(_))).unwrap();
    let flush = 100u64 << 20;
    let m = |s: u64, e: u64, bytes: u64| Activity { op: Op::Memset, bytes, ..k(s, e) };
    let acts = vec![m(100, 900, flush), m(1_000, 1_100, 262_144), m(1_200, 2_000, flush), m(2_100, 2_400, 262_144)];
    let d =
        isolated_durations(&p, &[set], &[(0, 3_000)], Taken { activities: acts.clone(), dropped: 0 }, 2, Some(flush));
    assert_eq!(d, vec![Some(vec![0.0001, 0.0003])]);
    let d = isolated_durations(&p, &[set], &[(0, 3_000)], Taken { activities: acts, dropped: 0 }, 2, None);
    assert_eq!(d, vec![None]); // without excluding them: four memsets, not two
}
