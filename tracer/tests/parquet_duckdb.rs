//! DuckDB reads `tracer export --format parquet` of every committed trace,
//! each exported under another `--host` into one fleet directory, and counts
//! exactly what `tracer summary --json`, `report --json` and `gaps --json`
//! count: calls, failed calls, launches per kernel, copies and bytes (per
//! direction), allocations, ioctls, markers, power samples, idle gaps per
//! scope (count, total, window). The fleet queries of docs/parquet.md
//! (tests/parquet/*.sql, quoted there verbatim) run over the whole
//! directory and agree with the per-trace figures. `thread_states` and
//! `sched_lost` of a hand-built trace are checked row by row; `stacks` and
//! the `stack` columns of tests/fixtures/stacks/train.jsonl joined by DuckDB.
//!
//! DuckDB is PyPI's `duckdb` in ~/.cache/tracer/duckdb-venv, which `cargo
//! xtask setup` installs (xtask/src/setup/duckdb.rs).

mod command;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use command::tracer;
use serde_json::{Value, json};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").canonicalize().unwrap()
}

/// The python of `cargo xtask setup`'s DuckDB: ~/.cache/tracer/duckdb-venv
/// (xtask/src/setup/duckdb.rs), or TRACER_DUCKDB_PYTHON.
fn duckdb_python() -> PathBuf {
    let p = match std::env::var_os("TRACER_DUCKDB_PYTHON") {
        Some(p) => PathBuf::from(p),
        None => PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cache/tracer/duckdb-venv/bin/python3"),
    };
    assert!(p.is_file(), "{} missing: run `cargo xtask setup` (installs DuckDB from PyPI there)", p.display());
    p
}

/// The committed traces (as tests/golden.rs lists them).
fn traces() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(repo().join("traces"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".jsonl.gz") || n.ends_with(".jsonl.zst") || n.ends_with(".rec"))
        .collect();
    v.sort();
    v
}

fn json_of(args: &[&str]) -> Value {
    let (code, out, err) = tracer(args);
    assert_eq!(code, 0, "tracer {args:?}: {err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("tracer {args:?}: {e}"))
}

/// The number of named kernels `summary --json` lists.
fn kernels_in(summary: &Value) -> usize {
    summary["kernels"].as_array().unwrap().len()
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

/// Exports traces/NAME into ROOT/fleet/HOST with `--host HOST`; returns
/// NAME and tracer's `summary --json`, `report --json` and `gaps
/// --json` (None: no GPU work, which `gaps` refuses).
fn export_and_report(repo: &Path, root: &Path, name: &str, host: &str) -> (String, Value, Value, Option<Value>) {
    let trace = repo.join("traces").join(name).to_string_lossy().into_owned();
    let dir = root.join("fleet").join(host);
    let (code, _, err) =
        tracer(&["export", &trace, "--format", "parquet", "-o", dir.to_str().unwrap(), "--host", host]);
    assert_eq!(code, 0, "export {name}: {err}");
    let gaps = match tracer(&["gaps", &trace, "--json"]) {
        (0, out, _) => Some(serde_json::from_str::<Value>(&out).unwrap()),
        (_, _, err) if err.contains("no GPU work") => None,
        (code, _, err) => panic!("gaps {name}: exit {code}: {err}"),
    };
    (name.to_string(), json_of(&["summary", &trace, "--json"]), json_of(&["report", &trace, "--json"]), gaps)
}

#[test]
fn duckdb_counts_equal_tracer_reports() {
    let python = duckdb_python();
    let root = std::env::temp_dir().join(format!("tracer-parquet-duckdb-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let repo = repo();
    // one trace at a time per core: export, summary, report, gaps
    let names = traces();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let expected = std::sync::Mutex::new(BTreeMap::new());
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    std::thread::scope(|s| {
        for _ in 0..cores.min(names.len()) {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(name) = names.get(i) else { break };
                    let host = format!("host-{i:02}");
                    let e = export_and_report(&repo, &root, name, &host);
                    expected.lock().unwrap().insert(host, e);
                }
            });
        }
    });
    let expected = expected.into_inner().unwrap();
    assert!(expected.len() >= 9, "committed traces: {}", expected.len());

    let out = Command::new(&python)
        .arg(repo.join("tracer/tests/parquet/counts.py"))
        .arg(&root)
        .output()
        .expect("run DuckDB's python");
    assert!(out.status.success(), "counts.py: {}", String::from_utf8_lossy(&out.stderr));
    let got: Value = serde_json::from_slice(&out.stdout).unwrap();

    let mut fleet_kernels: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    let mut idle_rows = Vec::new();
    for (host, (name, summary, report, gaps)) in &expected {
        let g = &got[host];
        let t = &report["total"];
        let ctx = format!("{name} ({host})");
        assert_eq!(u(&g["calls"]), u(&t["calls"]), "{ctx}: calls vs report");
        // Calls per function as the summary counts them, except its "?": the
        // summary counts a replayable recording's `copy_data` lines (not calls)
        // as calls without a name (traces/replay_check.rec: 701 "calls", of
        // which 2 are its copy_data lines; report and footer say 699).
        let functions: BTreeMap<String, u64> = summary["functions"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["name"] != "?")
            .map(|f| (f["name"].as_str().unwrap().into(), u(&f["calls"])))
            .collect();
        let got_functions: BTreeMap<String, u64> =
            g["functions"].as_object().unwrap().iter().map(|(k, n)| (k.clone(), u(n))).collect();
        assert_eq!(got_functions, functions, "{ctx}: calls per function vs summary");
        assert_eq!(u(&g["failed_calls"]), u(&t["failed_calls"]), "{ctx}: failed calls");
        // report counts graph launches as launches; the launches table holds kernels
        assert_eq!(u(&g["launches"]) + u(&g["graph_launches"]), u(&t["launches"]), "{ctx}: launches vs report");
        assert_eq!(u(&g["launches"]), u(&summary["launches"]), "{ctx}: launches vs summary");
        assert_eq!(u(&g["unnamed_launches"]), u(&summary["launches_unnamed"]), "{ctx}: unnamed launches");
        let kernels: BTreeMap<String, u64> = summary["kernels"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| (k["name"].as_str().unwrap().into(), u(&k["launches"])))
            .collect();
        let got_kernels: BTreeMap<String, u64> =
            g["kernels"].as_object().unwrap().iter().map(|(k, n)| (k.clone(), u(n))).collect();
        assert_eq!(got_kernels, kernels, "{ctx}: launches per kernel vs summary");
        for row in report["top_by_count"].as_array().unwrap() {
            let k = row["kernel"].as_str().unwrap();
            assert_eq!(u(&g["kernels_ok"][k]), u(&row["launches"]), "{ctx}: successful launches of {k} vs report");
            // the report's spellings of the kernel are the Parquet columns'
            if k != "(unnamed handle)" {
                let full = row["demangled"].as_str().unwrap_or(k);
                assert_eq!(g["spellings"][k], json!([full, row["short"]]), "{ctx}: spellings of {k}");
            }
        }
        // one spelling per kernel (DISTINCT gave one row each)
        assert_eq!(g["spellings"].as_object().unwrap().len(), kernels_in(summary), "{ctx}: kernels with spellings");
        for (k, n) in g["kernels_ok"].as_object().unwrap().iter().filter(|(k, _)| *k != "(unnamed handle)") {
            let e = fleet_kernels.entry(k.clone()).or_default();
            e.0 += u(n);
            e.1 += 1;
        }
        assert_eq!(g["copies"], json!([t["copies"], t["copy_bytes"]]), "{ctx}: copies and bytes vs report");
        let by_dir: BTreeMap<String, Value> = report["copies_by_direction"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(d, nb)| (d.clone(), json!([nb[0], nb[1]])))
            .collect();
        let got_dir: BTreeMap<String, Value> = g["copies_ok"].as_object().unwrap().clone().into_iter().collect();
        assert_eq!(got_dir, by_dir, "{ctx}: successful copies per direction vs report");
        for (d, c) in summary["copies"].as_object().unwrap() {
            assert_eq!(got_dir[d], json!([c["count"], c["bytes"]]), "{ctx}: copies {d} vs summary");
        }
        assert_eq!(g["allocs"], json!([t["allocs"], t["alloc_bytes"]]), "{ctx}: allocations vs report");
        assert_eq!(u(&g["ioctls"]), u(&t["ioctls"]), "{ctx}: ioctls vs report");
        let markers: u64 = summary["markers"].as_object().unwrap().values().map(u).sum();
        assert_eq!(u(&g["markers"]), markers, "{ctx}: markers vs summary");
        let power: u64 = summary["power"].as_array().unwrap().iter().map(|p| u(&p["samples"])).sum();
        assert_eq!(u(&g["power"]), power, "{ctx}: power samples vs summary");
        let trace_id = &g["context"][0][1];
        assert_eq!(g["context"], json!([[host, trace_id]]), "{ctx}: one host and trace id on every row of every table");
        match gaps {
            None => {
                assert_eq!(g["scopes"], json!({}), "{ctx}: no GPU work, no idle scopes");
                assert_eq!(g["gaps"], json!({}), "{ctx}");
            }
            Some(gaps) => {
                let scopes = gaps["scopes"].as_array().unwrap();
                assert_eq!(g["scopes"].as_object().unwrap().len(), scopes.len(), "{ctx}: idle scopes");
                for s in scopes {
                    let (scope, o) = (s["scope"].as_str().unwrap(), &s["overall"]);
                    let want = json!([o["count"], o["idle_ns"], o["window_ns"]]);
                    assert_eq!(g["scopes"][scope], want, "{ctx}: {scope}: gaps, idle ns, window ns vs gaps --json");
                    let rows = if u(&o["count"]) == 0 { Value::Null } else { json!([o["count"], o["idle_ns"]]) };
                    assert_eq!(g["gaps"][scope], rows, "{ctx}: {scope}: idle_gaps rows and their total vs gaps --json");
                    if s["kind"] == "gpu" {
                        let device: u64 = scope.strip_prefix("gpu ").unwrap().parse().unwrap();
                        let row =
                            json!([host, device, report["gpu"], gaps["idle_basis"], o["idle_ns"], o["window_ns"]]);
                        idle_rows.push(row);
                    }
                }
            }
        }
    }

    // the fleet queries of docs/parquet.md, over all hosts at once
    let fleet = &got["fleet"];
    let rows = fleet["fleet_idle_share.sql"].as_array().unwrap();
    let mut got_rows: Vec<Value> = rows.iter().map(|r| json!(r.as_array().unwrap()[..6])).collect();
    got_rows.sort_by_key(|r| r.to_string());
    idle_rows.sort_by_key(|r| r.to_string());
    assert_eq!(got_rows, idle_rows, "idle share per host and GPU");
    let shares: Vec<f64> = rows.iter().map(|r| r[6].as_f64().unwrap()).collect();
    assert!(shares.windows(2).all(|w| w[0] >= w[1]), "ordered by idle share: {shares:?}");
    for r in rows {
        let share = u(&r[4]) as f64 / u(&r[5]) as f64;
        assert!((r[6].as_f64().unwrap() - share).abs() <= 0.00005 + 1e-12, "{r}: rounded share");
    }
    let mut top: Vec<(String, u64, u64)> = fleet_kernels.into_iter().map(|(k, (n, h))| (k, n, h)).collect();
    top.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    top.truncate(10);
    let want: Vec<Value> = top.iter().map(|(k, n, h)| json!([k, n, h])).collect();
    assert_eq!(fleet["fleet_top_kernels.sql"].as_array().unwrap(), &want, "top kernels fleet-wide");

    // docs/parquet.md quotes the tested queries
    let doc = std::fs::read_to_string(repo.join("docs/parquet.md")).unwrap();
    for q in ["fleet_idle_share.sql", "fleet_top_kernels.sql"] {
        let text = std::fs::read_to_string(repo.join("tracer/tests/parquet").join(q)).unwrap();
        assert!(doc.contains(text.trim()), "docs/parquet.md does not quote tracer/tests/parquet/{q}");
    }
    let _ = std::fs::remove_dir_all(&root);
}

/// `thread_states` and `sched_lost` of a hand-built trace with every kind of
/// interval, read by DuckDB row by row, and docs/parquet.md's query on them.
#[test]
fn thread_states_read_by_duckdb() {
    let python = duckdb_python();
    let root = std::env::temp_dir().join(format!("tracer-parquet-sched-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).unwrap();
    let ms = 1_000_000u64;
    let lines = [
        r#"{"type":"header","pid":7,"command":["app"],"sched":true,"clock":{"monotonic_ns":1000000,"realtime_ns":1767225600000000000}}"#.to_string(),
        r#"{"ts":1000000,"pid":7,"tid":7,"type":"process","op":"exec","name":"process","filename":"/bin/app"}"#.into(),
        command::launch(1_500_000, "k").replace(r#""pid":1,"tid":1"#, r#""pid":7,"tid":7"#),
        r#"{"type":"sched","op":"thread_seen","name":"thread_seen","ts":2000000,"pid":7,"tid":7}"#.into(),
        // blocked 80 ms reading a pipe, woken by the writer thread, 1 ms behind the hog
        r#"{"type":"sched","op":"off_cpu","name":"read","ts":2000000,"end_ts":83000000,"pid":7,"tid":7,"state":"blocked","cpu":1,"cpu_in":1,"task_state":"S","syscall":"read","arg0":3,"file":"pipe","woken_ts":82000000,"waker":{"pid":7,"tid":8,"comm":"writer"},"runnable_ns":1000000,"behind":{"pid":9,"tid":9,"comm":"cpuhog"}}"#.into(),
        // preempted 40 ms by the hog
        r#"{"type":"sched","op":"off_cpu","name":"runnable","ts":90000000,"end_ts":130000000,"pid":7,"tid":7,"state":"runnable","cpu":1,"cpu_in":1,"preempted":true,"preempted_by":{"tid":9,"comm":"cpuhog"},"runnable_ns":40000000,"behind":{"pid":9,"tid":9,"comm":"cpuhog"}}"#.into(),
        // a page fault, woken by nobody recorded
        r#"{"type":"sched","op":"off_cpu","name":"page_fault","ts":131000000,"end_ts":133000000,"pid":7,"tid":7,"state":"blocked","cpu":1,"cpu_in":1,"task_state":"D","behind":{"pid":0,"tid":0,"comm":"swapper/1"}}"#.into(),
        r#"{"type":"sched","op":"lost","name":"lost","ts":140000000,"end_ts":150000000,"pid":0,"tid":0,"cpu":1,"records":12}"#.into(),
        r#"{"type":"sched","op":"lost","name":"lost","ts":145000000,"end_ts":146000000,"pid":0,"tid":0,"cpu":0,"records":1}"#.into(),
        r#"{"type":"sched","op":"off_cpu","name":"unknown","ts":135000000,"end_ts":151000000,"pid":7,"tid":7,"state":"unknown"}"#.into(),
        r#"{"type":"sched","op":"thread_seen","name":"thread_seen","ts":3000000,"pid":7,"tid":8}"#.into(),
        // asleep 80 ms; then a futex wait still open at the end
        r#"{"type":"sched","op":"off_cpu","name":"clock_nanosleep","ts":3000000,"end_ts":83000000,"pid":7,"tid":8,"state":"blocked","cpu":0,"cpu_in":0,"task_state":"S","syscall":"clock_nanosleep","arg0":0,"woken_ts":82990000,"waker":{"pid":0,"tid":0,"comm":"swapper/0"},"runnable_ns":10000,"behind":{"pid":0,"tid":0,"comm":"swapper/0"}}"#.into(),
        r#"{"type":"sched","op":"off_cpu","name":"futex","ts":160000000,"end_ts":200000000,"pid":7,"tid":8,"state":"blocked","syscall":"futex","open":true}"#.into(),
    ];
    let trace = root.join("run.jsonl");
    std::fs::write(&trace, lines.join("\n") + "\n").unwrap();
    let out_dir = root.join("run.parquet");
    let (code, _, err) =
        tracer(&["export", trace.to_str().unwrap(), "--format", "parquet", "-o", out_dir.to_str().unwrap()]);
    assert_eq!(code, 0, "export: {err}");
    let script = r#"
import json, sys, duckdb
con = duckdb.connect()
def rows(sql):
    return [list(r) for r in con.execute(sql).fetchall()]
out = {
    "states": rows("SELECT pid, tid, start_ns, end_ns, dur_ns, epoch_us(time), state, cause, syscall, file, blocked_ns, ready_ns, runnable_ns, runnable_cause, waker_pid, waker_tid, waker_comm, behind_pid, behind_tid, behind_comm, preempted, open FROM 'run.parquet/thread_states.parquet' ORDER BY start_ns, tid"),
    "lost": rows("SELECT start_ns, end_ns, dur_ns, cpu, records FROM 'run.parquet/sched_lost.parquet' ORDER BY start_ns"),
    "doc": rows(open(sys.argv[1]).read()),
}
print(json.dumps(out))
"#;
    let out = Command::new(&python)
        .current_dir(&root)
        .args(["-c", script])
        .arg(repo().join("tracer/tests/parquet/thread_states/by_cause.sql"))
        .output()
        .expect("run DuckDB's python");
    assert!(out.status.success(), "duckdb: {}", String::from_utf8_lossy(&out.stderr));
    let got: Value = serde_json::from_slice(&out.stdout).unwrap();
    // realtime 1767225600 s at monotonic 1 ms
    let wall = |ns: u64| 1_767_225_600_000_000u64 + (ns - ms) / 1000;
    let n = Value::Null;
    assert_eq!(
        got["states"],
        json!([
            [
                7,
                7,
                2 * ms,
                83 * ms,
                81 * ms,
                wall(2 * ms),
                "blocked",
                "read",
                "read",
                "pipe",
                80 * ms,
                82 * ms,
                ms,
                "behind cpuhog (pid 9)",
                7,
                8,
                "writer",
                9,
                9,
                "cpuhog",
                n,
                false
            ],
            [
                7,
                8,
                3 * ms,
                83 * ms,
                80 * ms,
                wall(3 * ms),
                "blocked",
                "clock_nanosleep",
                "clock_nanosleep",
                n,
                80 * ms - 10_000,
                83 * ms - 10_000,
                10_000,
                "wake-up latency",
                0,
                0,
                "swapper/0",
                0,
                0,
                "swapper/0",
                n,
                false
            ],
            [
                7,
                7,
                90 * ms,
                130 * ms,
                40 * ms,
                wall(90 * ms),
                "runnable",
                "runnable",
                n,
                n,
                n,
                90 * ms,
                40 * ms,
                "preempted by cpuhog (pid 9)",
                n,
                n,
                n,
                9,
                9,
                "cpuhog",
                true,
                false
            ],
            [
                7,
                7,
                131 * ms,
                133 * ms,
                2 * ms,
                wall(131 * ms),
                "blocked",
                "page_fault",
                n,
                n,
                2 * ms,
                133 * ms,
                0,
                n,
                n,
                n,
                n,
                0,
                0,
                "swapper/1",
                n,
                false
            ],
            [
                7,
                7,
                135 * ms,
                151 * ms,
                16 * ms,
                wall(135 * ms),
                "unknown",
                "unknown",
                n,
                n,
                n,
                n,
                n,
                n,
                n,
                n,
                n,
                n,
                n,
                n,
                n,
                false
            ],
            [
                7,
                8,
                160 * ms,
                200 * ms,
                40 * ms,
                wall(160 * ms),
                "blocked",
                "futex",
                "futex",
                n,
                40 * ms,
                n,
                n,
                n,
                n,
                n,
                n,
                n,
                n,
                n,
                n,
                true
            ],
        ])
    );
    assert_eq!(got["lost"], json!([[140 * ms, 150 * ms, 10 * ms, 1, 12], [145 * ms, 146 * ms, ms, 0, 1]]));
    assert_eq!(
        got["doc"],
        json!([
            [7, "blocked", "read (pipe)", 1, 0.08, 0.001],
            [7, "blocked", "clock_nanosleep", 1, 0.08, 0.0],
            [7, "blocked", "futex", 1, 0.04, 0.0],
            [7, "runnable", "runnable", 1, 0.0, 0.04],
            [7, "blocked", "page_fault", 1, 0.002, 0.0],
            [7, "unknown", "unknown", 1, 0.0, 0.0],
        ])
    );
    let _ = std::fs::remove_dir_all(&root);
}

/// The user stacks of tests/fixtures/stacks/train.jsonl: DuckDB joins the
/// launches to their innermost Python frame (docs/parquet.md's query,
/// tests/parquet/stacks/launches_by_python_leaf.sql) and the off-CPU
/// intervals to their frames, with exact counts and times.
#[test]
fn stacks_read_by_duckdb() {
    let python = duckdb_python();
    let root = std::env::temp_dir().join(format!("tracer-parquet-stacks-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).unwrap();
    let trace = repo().join("tracer/tests/fixtures/stacks/train.jsonl");
    let out_dir = root.join("run.parquet");
    let (code, _, err) =
        tracer(&["export", trace.to_str().unwrap(), "--format", "parquet", "-o", out_dir.to_str().unwrap()]);
    assert_eq!(code, 0, "export: {err}");
    assert!(err.contains("launches 4,") && err.contains("thread_states 2,") && err.contains("stacks 17"), "{err}");
    let query = repo().join("tracer/tests/parquet/stacks/launches_by_python_leaf.sql");
    let script = r#"
import json, sys, duckdb
con = duckdb.connect()
def rows(sql):
    return [list(r) for r in con.execute(sql).fetchall()]
out = {
    "doc": rows(open(sys.argv[1]).read()),
    "frames": rows("SELECT stack_id, count(*), count(*) FILTER (kind = 'python'), max(depth) FROM 'run.parquet/stacks.parquet' GROUP BY stack_id ORDER BY stack_id"),
    "off_cpu": rows("SELECT s.depth, s.function, s.file, s.line, sum(t.dur_ns) FROM 'run.parquet/thread_states.parquet' AS t JOIN 'run.parquet/stacks.parquet' AS s ON s.stack_id = t.stack GROUP BY ALL ORDER BY s.depth"),
    "calls": rows("SELECT kind, count(stack), count(*) FROM 'run.parquet/calls.parquet' GROUP BY kind ORDER BY kind"),
    "undefined": rows("SELECT c.stack FROM 'run.parquet/calls.parquet' AS c ANTI JOIN 'run.parquet/stacks.parquet' AS s ON s.stack_id = c.stack WHERE c.stack IS NOT NULL"),
}
print(json.dumps(out))
"#;
    let out = Command::new(&python)
        .current_dir(&root)
        .args(["-c", script])
        .arg(&query)
        .output()
        .expect("run DuckDB's python");
    assert!(out.status.success(), "duckdb: {}", String::from_utf8_lossy(&out.stderr));
    let got: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        got["doc"],
        json!([
            ["Model.step (/home/u/train.py:20)", 2],
            ["(no Python frame)", 1],
            ["Model.step (/home/u/train.py:21)", 1]
        ])
    );
    assert_eq!(got["frames"], json!([[1, 4, 2, 3], [2, 4, 2, 3], [3, 4, 2, 3], [4, 5, 2, 4]]));
    assert_eq!(
        got["off_cpu"],
        json!([
            [0, "read", null, null, 60000],
            [1, "[unknown]", null, null, 60000],
            [2, "load_batch", "/home/u/data.py", 41, 60000],
            [3, "main", "/home/u/train.py", 38, 60000],
            [4, "main", "Programs/python.c", 15, 60000]
        ])
    );
    // every launch and synchronization line but one of each named a stack; 9 is defined nowhere
    assert_eq!(got["calls"], json!([["launch", 3, 4], ["stream_sync", 2, 2]]));
    assert_eq!(got["undefined"], json!([[9]]));
    let doc = std::fs::read_to_string(repo().join("docs/parquet.md")).unwrap();
    let text = std::fs::read_to_string(&query).unwrap();
    assert!(doc.contains(text.trim()), "docs/parquet.md does not quote {}", query.display());
    let _ = std::fs::remove_dir_all(&root);
}
