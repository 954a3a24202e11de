//! CUDA graphs end to end (root, fake libcuda): tests/fakecuda/graphs.c
//! builds a graph by stream capture (kernels, a copy, a set, event record
//! and wait across two streams) and an explicit one (dependencies, a child
//! graph), updates an exec's node between launches and launches each exec
//! several times on two streams. The trace must mark the captured calls,
//! describe every node, and the analyses must count exactly the work the
//! launches ran.
//!
//! `sudo -E TRACER_ROOT_TESTS=1 cargo test -p tracer --test root_graphs -- --test-threads=1`
mod common;

use std::fs::File;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use tracer::analysis::model::{Kind, parse_str};

/// Records `graphs` with default options; the trace's lines and path.
fn record() -> (Vec<Value>, std::path::PathBuf) {
    let out = common::fresh_output("graphs");
    let prog = common::fake_program("graphs");
    let mut c = Command::new(common::tracer_bin());
    c.args(["record", "-q", "-o"])
        .arg(&out)
        .arg("--libcuda")
        .arg(&common::fake().lib)
        .arg("--")
        .arg(&prog)
        .stdin(Stdio::null())
        .stdout(Stdio::from(File::create(out.with_extension("stdout")).unwrap()))
        .stderr(Stdio::from(File::create(out.with_extension("stderr")).unwrap()));
    let mut child = c.spawn().unwrap();
    let status = common::wait_with_timeout(&mut child, Duration::from_secs(120), false, "tracer on graphs");
    let stderr = std::fs::read_to_string(out.with_extension("stderr")).unwrap_or_default();
    assert!(status.success(), "tracer on graphs: {status}\n{stderr}");
    (common::read_trace(&out).unwrap(), out)
}

fn named<'a>(lines: &'a [Value], name: &'a str) -> Vec<&'a Value> {
    lines.iter().filter(|l| l["name"] == name).collect()
}

#[test]
fn capture_explicit_graphs_updates_and_launches() {
    if !common::root_tests_enabled() {
        return;
    }
    let (lines, out) = record();
    // Captured: 2 launches, a copy, a set, 2 records, 2 waits, all capture 1.
    let captured: Vec<(&str, &str)> = lines
        .iter()
        .filter(|l| l.get("capture").is_some() && l["type"] != "graph")
        .map(|l| (l["name"].as_str().unwrap(), l["stream"].as_str().unwrap()))
        .collect();
    assert_eq!(
        captured,
        [
            ("cuLaunchKernel", "0x5100"),
            ("cuMemcpyHtoDAsync_v2", "0x5100"),
            ("cuMemsetD32Async", "0x5100"),
            ("cuEventRecord", "0x5100"),
            ("cuStreamWaitEvent", "0x5200"),
            ("cuLaunchKernel", "0x5200"),
            ("cuEventRecord", "0x5200"),
            ("cuStreamWaitEvent", "0x5100"),
        ]
    );
    assert!(lines.iter().filter(|l| l.get("capture").is_some()).all(|l| l["capture"] == 1));
    let launch = named(&lines, "cuLaunchKernel");
    assert_eq!((launch[0]["kernel"].as_str(), launch[0]["grid"].clone()), (Some("cap_a"), json!([2, 1, 1])));
    assert_eq!(launch[1]["kernel"], "cap_bb");
    let end = named(&lines, "cuStreamEndCapture");
    assert_eq!((end[0]["graph"].as_str(), end[0]["capture"].as_u64()), (Some("0x90001"), Some(1)));
    // Explicit nodes with their kinds, parameters and dependencies.
    let nodes: Vec<Value> = lines
        .iter()
        .filter(|l| l["name"].as_str().is_some_and(|n| n.starts_with("cuGraphAdd")))
        .map(|l| {
            json!([
                l["node"],
                l["graph"],
                l["node_type"],
                l["kernel"],
                l["grid"],
                l["size"],
                l["child_graph"],
                l["deps"]
            ])
        })
        .collect();
    assert_eq!(
        nodes,
        [
            json!(["0xa0000", "0x611000", "kernel", "child_kkkk", [5, 1, 1], null, null, []]),
            json!(["0xa0010", "0x611000", "memset", null, null, 128, null, ["0xa0000"]]),
            json!(["0xa0020", "0x610000", "kernel", "node_kkk", [1, 1, 1], null, null, []]),
            json!(["0xa0030", "0x610000", "graph", null, null, null, "0x611000", ["0xa0020"]]),
            json!(["0xa0040", "0x610000", "kernel", "node_kkk", [4, 1, 1], null, null, ["0xa0030"]]),
        ]
    );
    let set = named(&lines, "cuGraphExecKernelNodeSetParams_v2");
    assert_eq!((set[0]["graph_exec"].as_str(), set[0]["grid"].clone()), (Some("0x80011"), json!([8, 1, 1])));
    let execs: Vec<&str> = named(&lines, "cuGraphLaunch").iter().map(|l| l["graph_exec"].as_str().unwrap()).collect();
    assert_eq!(
        execs,
        ["0x80001", "0x80001", "0x80001", "0x80001", "0x80001", "0x80011", "0x80011", "0x80011", "0x80011"]
    );

    // The model: each launch expanded into what its exec held then.
    let text = std::fs::read_to_string(&out).unwrap();
    let t = parse_str("graphs", &text).unwrap();
    let g = &t.graphs;
    assert_eq!((g.graphs, g.execs, g.launches, g.expanded_launches, g.opaque_launches), (3, 2, 9, 9, 0));
    assert_eq!((g.kernels_run, g.copies_run, g.sets_run, g.captured_calls, g.captures), (22, 5, 9, 8, 1));
    assert_eq!(t.calls.iter().filter(|c| c.kind == Kind::Captured).count(), 8);
    let per_launch: Vec<Vec<String>> = {
        let mut v: Vec<Vec<String>> = Vec::new();
        for c in &t.calls {
            if c.expanded() {
                v.push(Vec::new());
            } else if c.from_graph() {
                let what = match c.kind {
                    Kind::Launch => format!("{}{:?}@{:#x}", t.name(c.kernel), t.geom(c.geom).unwrap().grid, c.stream),
                    k => format!("{k:?}:{}@{:#x}", c.size, c.stream),
                };
                v.last_mut().unwrap().push(what);
            }
        }
        v
    };
    let x1 = |s: &str| {
        vec![
            format!("cap_a[2, 1, 1]@{s}"),
            format!("CopyAsync:256@{s}"),
            format!("MemsetAsync:64@{s}"),
            format!("cap_bb[3, 1, 1]@{s}"),
        ]
    };
    let x2 = |s: &str, last: u32| {
        vec![
            format!("node_kkk[1, 1, 1]@{s}"),
            format!("child_kkkk[5, 1, 1]@{s}"),
            format!("MemsetAsync:128@{s}"),
            format!("node_kkk[{last}, 1, 1]@{s}"),
        ]
    };
    let want = vec![
        x1("0x5300"),
        x1("0x5300"),
        x1("0x5300"),
        x1("0x5400"),
        x1("0x5400"),
        x2("0x5300", 4),
        x2("0x5300", 4),
        x2("0x5400", 8),
        x2("0x5400", 8),
    ];
    assert_eq!(per_launch, want);

    // The commands: summary and report count the graph kernels, not the captured ones.
    let s = Command::new(common::tracer_bin()).args(["summary", "--json"]).arg(&out).output().unwrap();
    assert!(s.status.success(), "{}", String::from_utf8_lossy(&s.stderr));
    let j: Value = serde_json::from_slice(&s.stdout).unwrap();
    assert_eq!(j["launches"], 22);
    assert_eq!(
        j["kernels"],
        json!([{"name": "node_kkk", "launches": 8}, {"name": "cap_a", "launches": 5},
               {"name": "cap_bb", "launches": 5}, {"name": "child_kkkk", "launches": 4}])
    );
    let r = Command::new(common::tracer_bin()).args(["report", "--json"]).arg(&out).output().unwrap();
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let j: Value = serde_json::from_slice(&r.stdout).unwrap();
    assert_eq!(j["total"]["launches"], 22, "{}", j["total"]);
    assert!(
        j["notes"].as_array().unwrap().iter().any(|n| n
            == "CUDA graphs: 9 launches ran 22 kernels, 5 copies and 9 sets from the graphs built in the trace; 8 calls were captured into graphs (not run when captured, not counted)"),
        "{}",
        j["notes"]
    );
}
