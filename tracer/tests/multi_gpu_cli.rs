//! `report`, `gaps` and `export` per GPU on a hand-built trace of three
//! processes on two GPUs, with answers worked out by hand: pid 10 uses GPU
//! 0, pid 20 GPU 1 (ranks 0 and 1 of a job), pid 30 both (switching
//! contexts). No measured
//! activity: the bound timeline (launch entry → return of the
//! synchronization covering it), built from the call lines' `device`.
use std::path::PathBuf;

use serde_json::Value;

mod command;
use command::tracer;

fn launch(ts: u64, pid: u32, device: u32) -> String {
    format!(
        r#"{{"ts":{ts},"pid":{pid},"tid":{pid},"type":"kernel","op":"launch","name":"cuLaunchKernel","kernel":"k{device}","grid":[4,1,1],"block":[128,1,1],"shared_mem":0,"stream":"0x0","device":{device}}}"#
    )
}

fn sync(ts: u64, end: u64, pid: u32, device: u32, name: &str) -> String {
    let op = if name == "cuCtxSynchronize" { "ctx_synchronize" } else { "stream_synchronize" };
    let stream = if name == "cuCtxSynchronize" { "" } else { r#","stream":"0x0""# };
    format!(
        r#"{{"ts":{ts},"pid":{pid},"tid":{pid},"type":"sync","op":"{op}","name":"{name}"{stream},"duration_us":{},"ret":0,"device":{device}}}"#,
        (end - ts) as f64 / 1000.0
    )
}

/// An exec line; `rank`: the fields tracer adds from RANK/LOCAL_RANK/WORLD_SIZE.
fn exec(ts: u64, pid: u32, file: &str, rank: Option<u32>) -> String {
    let r = rank.map_or(String::new(), |r| format!(r#","rank":{r},"local_rank":{r},"world_size":2"#));
    format!(
        r#"{{"ts":{ts},"pid":{pid},"tid":{pid},"type":"process","op":"exec","name":"process","filename":"{file}"{r}}}"#
    )
}

/// GPU 0: pid 10 busy [1000, 2500] and [6000, 8000], pid 30 [3000, 4000].
/// GPU 1: pid 20 busy [2000, 5000] and [9000, 10000], pid 30 [5500, 7000].
fn trace_file() -> PathBuf {
    let lines = [
        r#"{"type":"header","format":"tracer-jsonl","format_version":1,"pid":10,"command":["torchrun"],"gpus":[{"bus":"0000:19:00.0","model":"GPU-A"},{"bus":"0000:3b:00.0","model":"GPU-B"}]}"#.to_string(),
        exec(1000, 10, "/usr/bin/python3", Some(0)),
        launch(1000, 10, 0),
        sync(1500, 2500, 10, 0, "cuStreamSynchronize"),
        exec(2000, 20, "/usr/bin/python3", Some(1)),
        launch(2000, 20, 1),
        sync(2100, 5000, 20, 1, "cuStreamSynchronize"),
        exec(3000, 30, "/usr/bin/both", None),
        launch(3000, 30, 0),
        sync(3100, 4000, 30, 0, "cuCtxSynchronize"),
        launch(5500, 30, 1),
        // Synchronizes only GPU 1's context: GPU 0's stream of pid 30 has
        // nothing pending anyway, and pid 10's work is another process's.
        sync(5600, 7000, 30, 1, "cuCtxSynchronize"),
        launch(6000, 10, 0),
        sync(6500, 8000, 10, 0, "cuStreamSynchronize"),
        launch(9000, 20, 1),
        sync(9100, 10000, 20, 1, "cuStreamSynchronize"),
    ];
    let mut lines = lines.to_vec();
    // NVML: GPU 0's counter gains 10 mJ per µs, GPU 1's 20 mJ.
    for i in 1..=10u64 {
        for (gpu, step) in [(0, 10), (1, 20)] {
            lines.push(format!(
                r#"{{"ts":{},"pid":0,"tid":0,"type":"power","op":"sample","name":"nvml","gpu":{gpu},"energy_mj":{},"power_mw":10000}}"#,
                i * 1000,
                1000 + i * step
            ));
        }
    }
    lines.push(r#"{"type":"footer","calls":12}"#.to_string());
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("multi-gpu");
    std::fs::create_dir_all(&dir).unwrap();
    // one file per test: the tests run in parallel, and rewriting one shared
    // file let a reader see it empty
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let p = dir.join(format!("two_gpus_{}_{n}.jsonl", std::process::id()));
    std::fs::write(&p, lines.join("\n") + "\n").unwrap();
    p
}

fn json_of(args: &[&str]) -> Value {
    let (code, out, err) = tracer(args);
    assert_eq!(code, 0, "tracer {args:?}: {err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("tracer {args:?}: not JSON ({e}): {out}"))
}

#[test]
fn report_has_a_row_per_gpu_and_per_process_on_each() {
    let p = trace_file();
    let r = json_of(&["report", "--json", p.to_str().unwrap()]);
    let rows: Vec<(u64, Option<u64>, u64, u64, u64, u64)> = r["per_gpu"]
        .as_array()
        .expect("per_gpu")
        .iter()
        .map(|g| {
            (
                g["device"].as_u64().unwrap(),
                g["pid"].as_u64(),
                g["start"].as_u64().unwrap(),
                g["end"].as_u64().unwrap(),
                g["launches"].as_u64().unwrap(),
                g["idle_lower_bound_ns"].as_u64().unwrap(),
            )
        })
        .collect();
    // (device, pid, start, end, launches, certain idle ns): each row over its
    // GPU window (first GPU work to last, as `tracer gaps`), not the trace span
    assert_eq!(
        rows,
        [
            (0, None, 1000, 8000, 3, 2500),
            (0, Some(10), 1000, 8000, 2, 7000 - 3500),
            (0, Some(30), 3000, 4000, 1, 0),
            (1, None, 2000, 10000, 3, 2500),
            (1, Some(20), 2000, 10000, 2, 8000 - 4000),
            (1, Some(30), 5500, 7000, 1, 0),
        ]
    );
    let shares: Vec<f64> =
        r["per_gpu"].as_array().unwrap().iter().map(|g| g["idle_share_lower_bound"].as_f64().unwrap()).collect();
    let want = [2500.0 / 7000.0, 0.5, 0.0, 2500.0 / 8000.0, 0.5, 0.0];
    for (g, w) in shares.iter().zip(want) {
        assert!((g - w).abs() < 1e-12, "{shares:?} vs {want:?}");
    }
    assert!(r["per_gpu"][0]["busy_ns"].is_null(), "bound timeline: busy time unknown");
    // Each GPU's own NVML energy over its GPU window (1000..8000, 2000..10000 ns); none for process rows.
    let joules: Vec<Option<f64>> =
        r["per_gpu"].as_array().unwrap().iter().map(|g| g["energy"]["joules"].as_f64()).collect();
    assert_eq!(joules, [Some(0.07), None, None, Some(0.16), None, None]);

    let (code, text, err) = tracer(&["report", p.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let table: Vec<&str> = text.lines().skip_while(|l| !l.starts_with("GPU (process)")).take(7).collect();
    assert_eq!(table.len(), 7, "{text}");
    assert!(table[1].starts_with("gpu 0 ") && table[1].contains(" 2.5 µs") && table[1].contains(" 35.7"), "{text}");
    assert!(table[2].starts_with("  pid 10 python3 rank 0 ") && table[2].contains(" 50.0"), "{text}");
    assert!(table[3].starts_with("  pid 30 both ") && table[3].contains(" 0.0"), "{text}");
    assert!(table[4].starts_with("gpu 1 ") && table[4].contains(" 2.5 µs") && table[4].contains(" 31.2"), "{text}");
}

/// (scope, kind, window, gaps)
type Scope = (String, String, (u64, u64), Vec<(u64, u64)>);

#[test]
fn gaps_per_gpu_per_process_and_per_gpu_of_a_process_on_two() {
    let p = trace_file();
    let r = json_of(&["gaps", "--json", "--list", p.to_str().unwrap()]);
    let scopes: Vec<Scope> = r["scopes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["scope"].as_str().unwrap().to_string(),
                s["kind"].as_str().unwrap().to_string(),
                serde_json::from_value(s["window"].clone()).unwrap(),
                serde_json::from_value(s.get("gaps").cloned().unwrap_or(Value::Array(vec![]))).unwrap(),
            )
        })
        .collect();
    let s = |a: &str, k: &str, w: (u64, u64), g: &[(u64, u64)]| (a.to_string(), k.to_string(), w, g.to_vec());
    assert_eq!(
        scopes,
        [
            s("gpu 0", "gpu", (1000, 8000), &[(2500, 3000), (4000, 6000)]),
            s("gpu 1", "gpu", (2000, 10000), &[(5000, 5500), (7000, 9000)]),
            s("pid 10 (python3 rank 0)", "process", (1000, 8000), &[(2500, 6000)]),
            s("pid 20 (python3 rank 1)", "process", (2000, 10000), &[(5000, 9000)]),
            s("pid 30 (both)", "process", (3000, 7000), &[(4000, 5500)]),
            s("pid 30 (both) on gpu 0", "process_gpu", (3000, 4000), &[]),
            s("pid 30 (both) on gpu 1", "process_gpu", (5500, 7000), &[]),
        ]
    );
    let idle: Vec<u64> =
        r["scopes"].as_array().unwrap().iter().map(|s| s["overall"]["idle_ns"].as_u64().unwrap()).collect();
    assert_eq!(idle, [2500, 2500, 3500, 4000, 1500, 0, 0]);
}

#[test]
fn perfetto_has_a_process_per_gpu_with_each_process_streams() {
    let p = trace_file();
    let out = p.with_extension("perfetto.json");
    let (code, _, err) = tracer(&["export", "--force", "-o", out.to_str().unwrap(), p.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let events = v["traceEvents"].as_array().or_else(|| v.as_array()).expect("events");
    let meta = |name: &str| -> Vec<(u64, String)> {
        let mut m: Vec<(u64, String)> = events
            .iter()
            .filter(|e| e["ph"] == "M" && e["name"] == name)
            .map(|e| (e["pid"].as_u64().unwrap(), e["args"]["name"].as_str().unwrap().to_string()))
            .collect();
        m.sort();
        m
    };
    let gpu_base = 2_000_000_000u64;
    let procs = meta("process_name");
    let gpus: Vec<&(u64, String)> = procs.iter().filter(|(p, _)| *p >= gpu_base).collect();
    assert_eq!(gpus.len(), 2, "{procs:?}");
    assert!(gpus[0].0 == gpu_base && gpus[0].1.starts_with("GPU 0 GPU-A"), "{procs:?}");
    assert!(gpus[1].0 == gpu_base + 1 && gpus[1].1.starts_with("GPU 1 GPU-B"), "{procs:?}");
    let host: Vec<(u64, &str)> = procs.iter().filter(|(p, _)| *p < gpu_base).map(|(p, n)| (*p, n.as_str())).collect();
    assert_eq!(host.iter().map(|h| h.0).collect::<Vec<_>>(), [10, 20, 30], "a lane per process");
    assert!(host[0].1.starts_with("python3 rank 0") && host[1].1.starts_with("python3 rank 1"), "{host:?}");
    let mut tracks: Vec<(u64, String)> =
        meta("thread_name").into_iter().filter(|(p, _)| *p >= gpu_base).map(|(p, n)| (p - gpu_base, n)).collect();
    tracks.sort();
    let names: Vec<(u64, &str)> = tracks.iter().map(|(d, n)| (*d, n.split(" stream").next().unwrap())).collect();
    assert_eq!(names, [(0, "pid 10"), (0, "pid 30"), (1, "pid 20"), (1, "pid 30")], "{tracks:?}");
}

/// The committed two-rank job: the iteration table says whose iteration
/// each row is (ranks 0 and 1 both run iterations 0, 1, 2), and the energy
/// cells that cover only part of their period say so and are explained.
#[test]
fn two_rank_iterations_have_a_rank_column_and_energy_marks_are_explained() {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/multi-gpu/tp.jsonl.zst");
    let (rc, out, err) = tracer(&["report", p.to_str().unwrap()]);
    assert_eq!(rc, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    let head = lines.iter().position(|l| l.starts_with("iteration ")).unwrap();
    assert!(lines[head].starts_with("iteration  rank       time"), "{}", lines[head]);
    let rows: Vec<(String, String)> = lines[head + 1..head + 7]
        .iter()
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f[0].to_string(), f[1].to_string())
        })
        .collect();
    let want: Vec<(String, String)> = [("0", "0"), ("1", "0"), ("2", "0"), ("0", "1"), ("1", "1"), ("2", "1")]
        .iter()
        .map(|(i, r)| (i.to_string(), r.to_string()))
        .collect();
    assert_eq!(rows, want);
    assert!(lines[head + 7].is_empty());
    assert!(
        out.contains("gpu 0                      50.057 s     45317  7.790 s     15.6  ≥ 6192.44 J (99.9% sampled)\n"),
        "{out}"
    );
    assert!(!out.contains(")?"), "an unexplained mark: {out}");
    assert!(
        out.contains("\nnote: energy \"≥ X J (N% sampled)\": the NVML samples cover only that share of the period"),
        "{out}"
    );
    // JSON: the rank of each iteration row
    let r = json_of(&["report", p.to_str().unwrap(), "--json"]);
    let ranks: Vec<u64> = r["iterations"].as_array().unwrap().iter().map(|x| x["rank"].as_u64().unwrap()).collect();
    assert_eq!(ranks, [0, 0, 0, 1, 1, 1]);
}
