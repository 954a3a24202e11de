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
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};
use tracer::analysis::model::{Kind, parse_str};

/// Records `graphs` with default options; the trace's lines and path.
fn record() -> (Vec<Value>, std::path::PathBuf) {
    let out = common::fresh_output("graphs");
    let prog = common::fake_program("graphs");
    let (status, stderr) =
        common::record_program(&out, &["-q"], &[prog.as_os_str()], &[], Duration::from_secs(120), "tracer on graphs");
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

/// k_pointers' parameter bytes as graphs.c passes them (out, in, n), in hex.
fn k_pointers_params(n: i32) -> String {
    let mut b = Vec::new();
    b.extend_from_slice(&0x7f00_0000_0000u64.to_le_bytes());
    b.extend_from_slice(&0x7f00_0020_0000u64.to_le_bytes());
    b.extend_from_slice(&n.to_le_bytes());
    tracer_format::hex::bytes(&b)
}

/// `tracer record --replayable` of `graphs FIXTURE_DIR` (section 4 of graphs.c
/// runs): the trace's text.
fn record_replayable() -> (String, std::path::PathBuf) {
    let dir = common::fresh_output("graphs-replayable").with_extension("rec");
    let _ = std::fs::remove_dir_all(&dir);
    let prog = common::fake_program("graphs");
    let fixtures = common::replayable::fixture_dir();
    let cmd = [prog.as_os_str(), fixtures.as_os_str()];
    let (status, stderr) =
        common::record_program(&dir, &["--replayable", "-q"], &cmd, &[], Duration::from_secs(120), "tracer on graphs");
    assert!(status.success(), "tracer record --replayable on graphs: {status}\n{stderr}");
    let manifest: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).unwrap()).unwrap();
    let trace = dir.join(manifest["trace"].as_str().unwrap());
    let text = if trace.extension().is_some_and(|e| e == "zst") {
        String::from_utf8(zstd::stream::decode_all(File::open(&trace).unwrap()).unwrap()).unwrap()
    } else {
        std::fs::read_to_string(&trace).unwrap()
    };
    (text, dir)
}

#[test]
fn replayable_explicit_graph_nodes_carry_their_parameter_bytes() {
    if !common::root_tests_enabled() {
        return;
    }
    let (text, dir) = record_replayable();
    // The manifest counts the kernel node lines: sections 2-3's 4 (no layout known), section 4's 6.
    let manifest: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).unwrap()).unwrap();
    let cov = &manifest["coverage"];
    assert_eq!(
        (&cov["graph_kernel_nodes"], &cov["graph_node_params_exact"], &cov["graph_launches"]),
        (&json!(10), &json!(6), &json!(13)),
        "{cov}"
    );
    let trace = dir.join(manifest["trace"].as_str().unwrap());
    let out = Command::new(common::tracer_bin()).arg("summary").arg(&trace).output().unwrap();
    let summary = String::from_utf8_lossy(&out.stdout);
    assert!(
        summary.contains("\nreplayable graphs: 6 of 10 kernel nodes added or set with exact parameters\n"),
        "{summary}"
    );
    let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    // Section 4's node lines: the bytes read when each node was added or set
    // (graphs.c changes `n` right after each call).
    let node_lines: Vec<Value> = lines
        .iter()
        .filter(|l| {
            l["type"] == "graph"
                && l["node_type"] == "kernel"
                && l["kernel"] == "k_pointers"
                && l["name"].as_str().is_some_and(|n| n.contains("Node"))
        })
        .map(|l| json!([l["name"], l["node"], l["grid"][0], l["params"], l["params_from"]]))
        .collect();
    let p = |n: i32| json!(k_pointers_params(n));
    assert_eq!(
        node_lines,
        [
            json!(["cuGraphAddKernelNode_v2", "0xa0050", 5, p(50), "layout"]),
            json!(["cuGraphAddKernelNode_v2", "0xa0060", 3, p(3), "layout"]),
            json!(["cuGraphAddNode_v2", "0xa0070", 1, p(1), "layout"]),
            json!(["cuGraphKernelNodeSetParams_v2", "0xa0070", 2, p(2), "layout"]),
            json!(["cuGraphExecKernelNodeSetParams_v2", "0xa0060", 4, p(4), "layout"]),
            json!(["cuGraphKernelNodeSetParams", "0xa0060", 9, p(9), "extra"]),
        ]
    );
    // The other graph lines keep their fields; only kernel nodes have bytes.
    let add = lines.iter().find(|l| l["name"] == "cuGraphAddNode_v2").unwrap();
    assert_eq!((add["graph"].as_str(), add["deps"].clone()), (Some("0x612000"), json!([])));
    let child = lines.iter().find(|l| l["name"] == "cuGraphAddChildGraphNode" && l["graph"] == "0x612000").unwrap();
    assert_eq!((child["node"].as_str(), child["deps"].clone()), (Some("0xa0080"), json!(["0xa0070"])));
    assert!(child.get("params").is_none() && child.get("params_error").is_none());
    // Sections 2-3 (kernels of a module whose image has no layout): the bytes could not be read.
    let early = lines.iter().find(|l| l["name"] == "cuGraphAddKernelNode_v2" && l["kernel"] == "node_kkk").unwrap();
    assert!(early.get("params").is_none());
    assert!(early["params_error"].as_str().unwrap().starts_with("no parameter layout known"), "{early}");
    let memset = lines.iter().find(|l| l["name"] == "cuGraphAddMemsetNode").unwrap();
    assert!(memset.get("params").is_none() && memset.get("params_error").is_none(), "{memset}");
    // cuGraphAddNode_v2 of another type: the plain record (its fields, no bytes).
    let generic = lines.iter().filter(|l| l["name"] == "cuGraphAddNode_v2").nth(1).unwrap();
    assert_eq!(
        json!([
            generic["node"],
            generic["node_type"],
            generic["size"],
            generic["dst"],
            generic["value"],
            generic["deps"]
        ]),
        json!(["0xa0090", "memset", 32, "0x7f0000000300", 5, ["0xa0060"]]),
    );
    assert!(generic.get("params").is_none() && generic.get("params_error").is_none(), "{generic}");

    // The model: section 4's 4 launches expand into 0xa0070, the child's 0xa0050, then 0xa0060,
    // with the bytes of that launch (n 4 after the exec update; the last, graph-level set is not the exec's).
    let t = parse_str("graphs", &text).unwrap();
    assert_eq!((t.graphs.launches, t.graphs.expanded_launches, t.graphs.kernels_run), (13, 13, 34));
    let mut per_launch: Vec<Vec<(String, u32, Option<String>)>> = Vec::new();
    for c in &t.calls {
        if c.expanded() {
            per_launch.push(Vec::new());
        } else if c.from_graph() && c.kind == Kind::Launch && t.name(c.kernel) == "k_pointers" {
            let g = t.geom(c.geom).unwrap().grid[0];
            per_launch.last_mut().unwrap().push((format!("{:#x}", c.obj), g, t.node_params(c).map(str::to_owned)));
        }
    }
    let section4: Vec<_> = per_launch.into_iter().filter(|v| !v.is_empty()).collect();
    let launch = |last: i32| {
        vec![
            ("0xa0070".to_string(), 2, Some(k_pointers_params(2))),
            ("0xa0050".to_string(), 5, Some(k_pointers_params(50))),
            ("0xa0060".to_string(), last as u32, Some(k_pointers_params(last))),
        ]
    };
    assert_eq!(section4, [launch(3), launch(3), launch(4), launch(4)]);
    let _ = std::fs::remove_dir_all(&dir);
}
