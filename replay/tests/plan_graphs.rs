//! Graph launches in the plan (plan/graphs.rs), on hand-built recordings: a
//! stream capture of 3 launches launched 4 times, an opaque graph launch and
//! an explicit graph whose kernel node has no parameter bytes; an explicit
//! graph with dependencies, a child graph and node updates between launches.

mod common;

use common::*;
use replay::plan::{self, Direction, EdgeKind, GraphLaunch, GraphOp, OpKind, Rows};
use replay::recording::Recording;
use serde_json::json;

const A: u64 = 0x7f00_0000_0000;
const B: u64 = 0x7f00_0020_0000;

fn launch(r: &mut Rec, grid: u32, n: u32) {
    let p = params(20, &[(0, &A.to_le_bytes()), (8, &B.to_le_bytes()), (16, &n.to_le_bytes())]);
    r.call("kernel", "launch", "cuLaunchKernel", json!({"args": {"f": "0xf1"}, "func": "0xf1", "kernel": "k_pointers", "grid": [grid, 1, 1], "block": [32, 1, 1], "shared_mem": 0, "stream": "0x5000", "params": p, "params_from": "layout", "capture": 1}));
}

fn graph_launch(r: &mut Rec, exec: &str) {
    r.call(
        "graph",
        "graph_launch",
        "cuGraphLaunch",
        json!({"ret": 0, "args": {"hGraphExec": exec, "hStream": "0x5000"}, "graph_exec": exec, "stream": "0x5000"}),
    );
}

/// cuStreamSynchronize of `stream`.
fn stream_sync(r: &mut Rec, stream: &str) {
    r.call(
        "sync",
        "stream_synchronize",
        "cuStreamSynchronize",
        json!({"ret": 0, "args": {"hStream": stream}, "stream": stream}),
    );
}

/// cuStreamEndCapture of capture `capture` on `stream`, giving `graph`.
fn end_capture(r: &mut Rec, stream: &str, capture: u64, graph: &str) {
    let args = json!({"hStream": stream});
    let fields = json!({"ret": 0, "args": args, "stream": stream, "capture": capture, "graph": graph});
    r.call("graph", "stream_end_capture", "cuStreamEndCapture", fields);
}

/// cuGraphInstantiateWithFlags of `graph` into `exec`, with PyTorch's flags (auto-free on
/// launch | use node priority).
fn instantiate(r: &mut Rec, exec: &str, graph: &str) {
    r.call(
        "graph",
        "graph_instantiate_with_flags",
        "cuGraphInstantiateWithFlags",
        json!({"ret": 0, "args": {"flags": "0x9", "hGraph": graph, "phGraphExec": exec}, "graph_exec": exec, "graph": graph}),
    );
}

fn build() -> Rec {
    let mut r = Rec::new();
    let cubin = r.image("kernels.sm_90.cubin", "cubin");
    r.prelude(&cubin, 4096); // lines 2..=7
    r.call(
        "graph",
        "stream_begin_capture",
        "cuStreamBeginCapture_v2",
        json!({"ret": 0, "args": {"hStream": "0x5000", "mode": 0}, "stream": "0x5000", "capture": 1}),
    ); // 8
    launch(&mut r, 1, 10); // 9
    r.call("event", "event_record", "cuEventRecord", json!({"ret": 0, "args": {"hEvent": "0xe1", "hStream": "0x5000"}, "event": "0xe1", "stream": "0x5000", "capture": 1})); // 10
    launch(&mut r, 2, 20); // 11
    launch(&mut r, 3, 30); // 12
    end_capture(&mut r, "0x5000", 1, "0x90001"); // 13
    instantiate(&mut r, "0x80001", "0x90001"); // 14
    for _ in 0..4 {
        graph_launch(&mut r, "0x80001"); // 15..18
    }
    graph_launch(&mut r, "0x80009"); // 19: exec not built in the recording
    r.call("graph", "graph_create", "cuGraphCreate", json!({"ret": 0, "args": {}, "graph": "0x90002"})); // 20
    r.call("graph", "graph_add_kernel_node", "cuGraphAddKernelNode_v2", json!({"ret": 0, "args": {}, "graph": "0x90002", "node": "0xa1", "node_type": "kernel", "kernel": "k_pointers", "func": "0xf1", "grid": [1, 1, 1], "block": [32, 1, 1], "shared_mem": 0, "deps": []})); // 21
    instantiate(&mut r, "0x80002", "0x90002"); // 22
    graph_launch(&mut r, "0x80002"); // 23
    stream_sync(&mut r, "0x5000"); // 24
    r
}

const OPAQUE: &str = "graph exec not instantiated in the recording (opaque graph launch)";
const NO_PARAMS: &str = "cuGraphAddKernelNode_v2 of k_pointers set at line 21: no params recorded";

#[test]
fn captured_launches_run_in_each_graph_launch_not_at_capture() {
    let rec = Recording::open(&build().write()).unwrap();
    let p = plan::build(&rec.manifest, &rec.trace, "trace.jsonl").unwrap();
    replay::data_check::check(&rec, &p).unwrap();

    // 12 kernel ops (4 launches × 3 captured kernels) at the graph launches' lines and times, then the sync.
    let launches: Vec<(usize, u64, u32, u32)> = p
        .ops
        .iter()
        .filter_map(|o| {
            o.launch().map(|l| (o.line, o.ts, l.grid[0], u32::from_le_bytes(l.params[16..20].try_into().unwrap())))
        })
        .collect();
    let mut want = Vec::new();
    for line in 15..=18usize {
        for (grid, n) in [(1, 10), (2, 20), (3, 30)] {
            want.push((line, 1000 * line as u64, grid, n));
        }
    }
    assert_eq!(launches, want);
    assert_eq!(p.ops.len(), 13);
    assert!(matches!(p.ops[12].kind, OpKind::StreamSync));
    // Nothing at capture time: no op of lines 8..=14 (the captured event record is no op either).
    assert!(p.ops.iter().all(|o| !(8..=14).contains(&o.line)), "ops at capture time");
    assert!(p.ops.iter().all(|o| o.stream == Some(0)));
    assert_eq!(p.per_stream[0], (0..13).collect::<Vec<_>>());
    assert_eq!(p.ops.iter().filter(|o| o.duration_ns.is_some()).count(), 0);
    // Each expanded op names its graph launch and its captured call.
    assert_eq!(p.graph_ops.len(), 12);
    assert_eq!(p.graph_ops[0], GraphOp { op: 0, launch_line: 15, captured_line: 9 });
    assert_eq!(p.graph_ops[11], GraphOp { op: 11, launch_line: 18, captured_line: 12 });
    // Stream order on the launch stream: 12 edges (11 between the kernels, the last to the sync is host sync).
    let stream_edges: Vec<(usize, usize)> =
        p.edges.iter().filter(|e| e.kind == EdgeKind::Stream).map(|e| (e.from, e.to)).collect();
    assert_eq!(stream_edges, (0..11).map(|i| (i, i + 1)).collect::<Vec<_>>());
    // Relocation candidates: A and B in every expanded kernel (8-byte whole params at 0 and 8).
    assert_eq!(p.relocations.len(), 24);
    assert_eq!((p.relocations[22].op, p.relocations[22].line, p.relocations[22].value), (11, 18, A));

    let c = &p.coverage;
    assert_eq!((c.launches, c.launches_replayed, c.captured_launches, c.captured_events), (0, 0, 3, 1));
    // The explicit graph's launch (line 23) is expanded: its kernel node has no parameter bytes.
    assert_eq!(
        (c.graph_launches, c.graph_launches_expanded, c.graph_kernels, c.graph_kernels_replayed),
        (6, 5, 13, 12)
    );
    assert_eq!((c.graph_copies_sets, c.captured_copies_sets), (0, 0));
    assert!((c.percent() - 100.0 * 12.0 / 13.0).abs() < 1e-9);
    let not: Vec<(&str, usize)> = c.graph_launches_not_replayed.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    assert_eq!(not, vec![(OPAQUE, 1)]);
    let skipped: Vec<(&str, usize)> = c.graph_skipped_by_reason.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    assert_eq!(skipped, vec![(NO_PARAMS, 1)]);
    let lines: Vec<usize> = c.other_skipped.iter().map(|s| s.line).collect();
    assert_eq!(lines, vec![19]);
    assert_eq!(c.other_skipped[0].reason, format!("graph launch not replayed: {OPAQUE}"));
    let text = p.summary();
    // The ops of the rebuildable launches run inside them: counted apart from the stream's own.
    assert!(
        text.contains(
            "streams (numbered as replay --skip-ops names them): 0 created (flags 0x1, priority 0, line 6): 1 sync, 4 graph launches (12 ops inside)\n"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "graph launches: 6, planned 5 (13 kernels, replayed 12; 0 copies/sets, replayed 0), not replayed 1\n"
        ),
        "{text}"
    );
    // The 4 launches of the capture's exec run as one rebuilt graph; the explicit graph's
    // launch (a node without bytes) runs as separate launches.
    assert!(
        text.contains("  as rebuilt CUDA graphs 4 (1 execs); as separate launches 1 (a node not replayable)\n"),
        "{text}"
    );
    // A capture on one stream: each op after the one before it.
    let chain = Some(vec![vec![], vec![0], vec![1]]);
    let rebuilt: Vec<GraphLaunch> = (0..4)
        .map(|k| GraphLaunch {
            first_op: 3 * k,
            ops: 3,
            exec: 0,
            line: 15 + k,
            stream: 0,
            after: chain.clone(),
            // As recorded: the rebuilt exec is instantiated with the program's flags.
            instantiate_flags: 9,
        })
        .collect();
    assert_eq!(p.graph_launches, rebuilt);
    assert_eq!((c.graph_launches_rebuildable, c.graph_execs), (4, 1));
    assert!(text.contains(&format!("  graph launches not replayed 1: {OPAQUE}\n")), "{text}");
    assert!(
        text.contains(
            "captured into graphs (not run when captured): 3 launches, 0 copies/sets, 1 event records/waits\n"
        ),
        "{text}"
    );
}

#[test]
fn a_captured_launch_that_cannot_replay_is_counted_in_every_graph_launch() {
    let mut r = build();
    // The second captured launch lost its params: each of the 4 launches misses that kernel.
    r.lines[9].as_object_mut().unwrap().remove("params");
    let rec = Recording::open(&r.write()).unwrap();
    let p = plan::build(&rec.manifest, &rec.trace, "trace.jsonl").unwrap();
    let c = &p.coverage;
    assert_eq!((c.graph_kernels, c.graph_kernels_replayed, c.launches, c.captured_launches), (13, 8, 0, 3));
    let skipped: Vec<(&str, usize)> = c.graph_skipped_by_reason.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    assert_eq!(
        skipped,
        vec![(NO_PARAMS, 1), ("cuLaunchKernel of k_pointers captured at line 11: no params recorded", 4)]
    );
    assert!((c.percent() - 100.0 * 8.0 / 13.0).abs() < 1e-9);
    let grids: Vec<u32> = p.ops.iter().filter_map(|o| o.launch().map(|l| l.grid[0])).collect();
    assert_eq!(grids, [1, 3].repeat(4));
}

#[test]
fn a_node_changed_after_capture_makes_later_instantiations_opaque() {
    let mut r = build();
    // Before the instantiation (line 14): a node of the captured graph changes.
    r.lines.insert(
        12,
        json!({"ts": 13500, "pid": 7, "tid": 7, "type": "graph", "op": "graph_kernel_node_set_params", "name": "cuGraphKernelNodeSetParams_v2", "ret": 0, "args": {}, "node": "0xb7"}),
    );
    let rec = Recording::open(&r.write()).unwrap();
    let p = plan::build(&rec.manifest, &rec.trace, "trace.jsonl").unwrap();
    let c = &p.coverage;
    // Only the explicit graph's launch is expanded (its node without parameter bytes is not replayed).
    assert_eq!((c.graph_launches, c.graph_launches_expanded, c.graph_kernels), (6, 1, 1));
    let why = "graph node changed by cuGraphKernelNodeSetParams_v2 (line 14): the change is not replayed";
    assert_eq!(c.graph_launches_not_replayed.get(why), Some(&4));
    assert_eq!(p.ops.iter().filter(|o| o.is_work()).count(), 0);
}

#[test]
fn a_capture_into_a_graph_with_nodes_of_its_own_stays_not_replayable() {
    let mut r = build();
    // cuGraphCreate of the graph the capture ends in (cuStreamBeginCaptureToGraph into it), and a node of its own.
    r.lines.insert(
        6,
        json!({"ts": 7500, "pid": 7, "tid": 7, "type": "graph", "op": "graph_create", "name": "cuGraphCreate", "ret": 0, "args": {}, "graph": "0x90001"}),
    );
    r.lines.insert(
        7,
        json!({"ts": 7600, "pid": 7, "tid": 7, "type": "graph", "op": "graph_add_empty_node", "name": "cuGraphAddEmptyNode", "ret": 0, "args": {}, "graph": "0x90001", "node": "0xa9", "node_type": "empty", "deps": []}),
    );
    let rec = Recording::open(&r.write()).unwrap();
    let p = plan::build(&rec.manifest, &rec.trace, "trace.jsonl").unwrap();
    let c = &p.coverage;
    assert_eq!((c.graph_launches, c.graph_launches_expanded, c.graph_kernels, c.captured_launches), (6, 1, 1, 3));
    let not: Vec<(&str, usize)> = c.graph_launches_not_replayed.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    let into = "capture into a graph that had nodes (line 15): not replayed";
    assert_eq!(not, vec![(into, 4), (OPAQUE, 1)]);
    assert_eq!(p.ops.iter().filter(|o| o.is_work()).count(), 0);
}

/// k_pointers' parameter bytes (A, B, n) as a trace writes them.
fn ptrs(n: u32) -> String {
    params(20, &[(0, &A.to_le_bytes()), (8, &B.to_le_bytes()), (16, &n.to_le_bytes())])
}

/// A kernel node line's fields: k_pointers with grid `grid` and parameter n = `n`.
fn kernel_node(grid: u32, n: u32) -> serde_json::Value {
    json!({"ret": 0, "args": {}, "node_type": "kernel", "kernel": "k_pointers", "func": "0xf1", "grid": [grid, 1, 1], "block": [32, 1, 1], "shared_mem": 0, "params": ptrs(n), "params_from": "layout"})
}

fn node_line(r: &mut Rec, name: &str, graph: &str, node: &str, deps: &[&str], mut fields: serde_json::Value) {
    let o = fields.as_object_mut().unwrap();
    o.insert("graph".into(), json!(graph));
    o.insert("node".into(), json!(node));
    o.insert("deps".into(), json!(deps));
    r.call("graph", "graph_add_node", name, fields);
}

/// An explicit graph 0x90011: node 0xb3 (grid 3, n 3) added first but, by a
/// later cuGraphAddDependencies, after the child graph node 0xb2 (graph
/// 0x90010: kernel 0xc1, grid 5, n 50, then a memset node 0xc2 of 16 words),
/// which waits for 0xb1 (grid 1, n 1, set to grid 2, n 2 before the
/// instantiation). Exec 0x80020 launched twice, its node 0xb3 set to grid 4,
/// n 4 (cuGraphExecKernelNodeSetParams_v2), launched once, the graph's node
/// 0xb3 set to grid 7 (not the exec's), launched once more.
fn build_explicit() -> Rec {
    let mut r = Rec::new();
    let cubin = r.image("kernels.sm_90.cubin", "cubin");
    r.prelude(&cubin, 4096); // lines 2..=7
    let create = |r: &mut Rec, g: &str| {
        r.call("graph", "graph_create", "cuGraphCreate", json!({"ret": 0, "args": {}, "graph": g}));
    };
    create(&mut r, "0x90010"); // 8
    create(&mut r, "0x90011"); // 9
    node_line(&mut r, "cuGraphAddKernelNode_v2", "0x90010", "0xc1", &[], kernel_node(5, 50)); // 10
    let memset = json!({"ret": 0, "args": {"memsetParams": {"dst": "0x7f0000000100", "value": 9, "elementSize": 4, "width": 16, "height": 1}}, "node_type": "memset", "size": 64, "dst": "0x7f0000000100", "value": 9});
    node_line(&mut r, "cuGraphAddMemsetNode", "0x90010", "0xc2", &["0xc1"], memset); // 11
    node_line(&mut r, "cuGraphAddKernelNode_v2", "0x90011", "0xb3", &[], kernel_node(3, 3)); // 12
    node_line(&mut r, "cuGraphAddKernelNode_v2", "0x90011", "0xb1", &[], kernel_node(1, 1)); // 13
    let child = json!({"ret": 0, "args": {}, "node_type": "graph", "child_graph": "0x90010"});
    node_line(&mut r, "cuGraphAddChildGraphNode", "0x90011", "0xb2", &["0xb1"], child); // 14
    r.call(
        "graph",
        "graph_add_dependencies",
        "cuGraphAddDependencies",
        json!({"ret": 0, "args": {}, "graph": "0x90011", "from": ["0xb2"], "to": ["0xb3"]}),
    ); // 15
    let mut set = kernel_node(2, 2);
    set["node"] = json!("0xb1");
    r.call("graph", "graph_kernel_node_set_params", "cuGraphKernelNodeSetParams_v2", set); // 16
    instantiate(&mut r, "0x80020", "0x90011"); // 17
    graph_launch(&mut r, "0x80020"); // 18
    graph_launch(&mut r, "0x80020"); // 19
    let mut exec_set = kernel_node(4, 4);
    exec_set["node"] = json!("0xb3");
    exec_set["graph_exec"] = json!("0x80020");
    r.call("graph", "graph_exec_kernel_node_set_params", "cuGraphExecKernelNodeSetParams_v2", exec_set); // 20
    graph_launch(&mut r, "0x80020"); // 21
    let mut later = kernel_node(7, 7);
    later["node"] = json!("0xb3");
    r.call("graph", "graph_kernel_node_set_params", "cuGraphKernelNodeSetParams_v2", later); // 22
    graph_launch(&mut r, "0x80020"); // 23
    stream_sync(&mut r, "0x5000"); // 24
    r
}

#[test]
fn explicit_graph_launches_run_their_nodes_in_dependency_order_with_the_parameters_of_each_launch() {
    let rec = Recording::open(&build_explicit().write()).unwrap();
    let p = plan::build(&rec.manifest, &rec.trace, "trace.jsonl").unwrap();
    replay::data_check::check(&rec, &p).unwrap();

    // (line, grid, parameter bytes) of every kernel op, and the memsets, in op order.
    let ops: Vec<(usize, String)> = p
        .ops
        .iter()
        .map(|o| match &o.kind {
            OpKind::Launch(l) => (o.line, format!("k{} {}", l.grid[0], tracer_format::hex::bytes(&l.params))),
            OpKind::Set(s) => (o.line, format!("set {:#x}={} x{} ({}B)", s.dst, s.value, s.count, s.elem)),
            OpKind::StreamSync => (o.line, "sync".into()),
            other => (o.line, format!("{other:?}")),
        })
        .collect();
    let mut want = Vec::new();
    for (line, last) in [(18, 3), (19, 3), (21, 4), (23, 4)] {
        want.push((line, format!("k2 {}", ptrs(2))));
        want.push((line, format!("k5 {}", ptrs(50))));
        want.push((line, "set 0x7f0000000100=9 x16 (4B)".to_string()));
        want.push((line, format!("k{last} {}", ptrs(last))));
    }
    want.push((24, "sync".into()));
    assert_eq!(ops, want);
    assert!(p.ops.iter().all(|o| o.stream == Some(0)));
    assert_eq!(p.per_stream[0], (0..17).collect::<Vec<_>>());
    // Each expanded op names its launch and the line that gave its parameters.
    let from: Vec<usize> = p.graph_ops.iter().filter(|g| g.launch_line == 21).map(|g| g.captured_line).collect();
    assert_eq!(from, [16, 10, 11, 20]);
    assert_eq!(p.graph_ops.len(), 16);
    // A and B in every expanded kernel: 12 kernels × 2.
    assert_eq!(p.relocations.len(), 24);

    let c = &p.coverage;
    assert_eq!(
        (c.graph_launches, c.graph_launches_expanded, c.graph_kernels, c.graph_kernels_replayed),
        (4, 4, 12, 12)
    );
    assert_eq!((c.graph_copies_sets, c.graph_copies_sets_replayed, c.launches, c.sets), (4, 4, 0, 0));
    // Two execs to rebuild: as instantiated (launches 18, 19) and after the exec's own update
    // (21, and 23: the later change of the graph's node does not reach the exec).
    let rebuilt: Vec<(usize, usize, usize)> = p.graph_launches.iter().map(|g| (g.first_op, g.exec, g.line)).collect();
    assert_eq!(rebuilt, [(0, 0, 18), (4, 0, 19), (8, 1, 21), (12, 1, 23)]);
    assert!(p.graph_launches.iter().all(|g| g.ops == 4 && g.stream == 0));
    // The graph's dependencies, per op of a launch: b1 first, the child's kernel after it, the
    // child's memset after its kernel, b3 after the child.
    let after: Vec<Vec<usize>> = vec![vec![], vec![0], vec![1], vec![2]];
    assert!(p.graph_launches.iter().all(|g| g.after.as_ref() == Some(&after)), "{:?}", p.graph_launches);
    assert_eq!((c.graph_launches_rebuildable, c.graph_execs), (4, 2));
    assert!(c.graph_launches_not_replayed.is_empty() && c.graph_skipped_by_reason.is_empty());
    assert_eq!(c.percent(), 100.0);
    assert!(
        p.summary().contains(
            "graph launches: 4, planned 4 (12 kernels, replayed 12; 4 copies/sets, replayed 4), not replayed 0\n"
        ),
        "{}",
        p.summary()
    );
}

#[test]
fn an_explicit_graph_with_a_node_kind_not_replayed_is_counted_with_its_reason() {
    let mut r = build_explicit();
    // A host node in the parent graph, after 0xb1 (line 17; the instantiation moves to 18).
    let host = json!({"ts": 16500, "pid": 7, "tid": 7, "type": "graph", "op": "graph_add_host_node", "name": "cuGraphAddHostNode", "ret": 0, "args": {}, "graph": "0x90011", "node": "0xb9", "deps": ["0xb1"], "node_type": "host"});
    r.lines.insert(15, host);
    // And a kernel node whose parameters were not captured, in another graph launched once.
    let mut lost = kernel_node(9, 9);
    lost.as_object_mut().unwrap().remove("params");
    lost["params_error"] = json!("the parameters could not be read from the process's memory");
    r.call("graph", "graph_create", "cuGraphCreate", json!({"ret": 0, "args": {}, "graph": "0x90030"})); // 26
    node_line(&mut r, "cuGraphAddKernelNode_v2", "0x90030", "0xd1", &[], lost); // 27
    instantiate(&mut r, "0x80030", "0x90030"); // 28
    graph_launch(&mut r, "0x80030"); // 29
    let rec = Recording::open(&r.write()).unwrap();
    let p = plan::build(&rec.manifest, &rec.trace, "trace.jsonl").unwrap();
    let c = &p.coverage;
    assert_eq!((c.graph_launches, c.graph_launches_expanded, c.graph_kernels, c.graph_kernels_replayed), (5, 1, 1, 0));
    let not: Vec<(&str, usize)> = c.graph_launches_not_replayed.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    let why = "host node added by cuGraphAddHostNode (line 17): this node kind is not replayed";
    assert_eq!(not, vec![(why, 4)]);
    let skipped: Vec<(&str, usize)> = c.graph_skipped_by_reason.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    let lost = "cuGraphAddKernelNode_v2 of k_pointers set at line 27: params not captured: the parameters could not be read from the process's memory";
    assert_eq!(skipped, vec![(lost, 1)]);
    assert_eq!(c.percent(), 0.0);
    assert_eq!(p.ops.iter().filter(|o| o.is_work()).count(), 0);
    let lines: Vec<usize> = c.other_skipped.iter().map(|s| s.line).collect();
    assert_eq!(lines, vec![19, 20, 22, 24]);
}

#[test]
fn a_capture_over_two_streams_keeps_its_fork_and_join() {
    // Stream 0x5000 captures k1, records e1; 0x5100 waits for e1 (joins), runs k2, records e2;
    // 0x5000 runs k3, waits for e2, runs k4: k2 and k3 both wait for k1 only, k4 for both.
    let mut r = Rec::new();
    let cubin = r.image("kernels.sm_90.cubin", "cubin");
    r.prelude(&cubin, 4096); // lines 2..=7
    let cap = |r: &mut Rec, name: &str, op: &str, fields: serde_json::Value| {
        let mut f = fields;
        f["ret"] = json!(0);
        f["capture"] = json!(1);
        r.call(if op.starts_with("stream") { "graph" } else { "event" }, op, name, f);
    };
    let record = |r: &mut Rec, event: &str, stream: &str| {
        cap(
            r,
            "cuEventRecord",
            "event_record",
            json!({"args": {"hEvent": event, "hStream": stream}, "stream": stream}),
        );
    };
    let wait = |r: &mut Rec, stream: &str, event: &str| {
        let args = json!({"hStream": stream, "hEvent": event, "Flags": 0});
        cap(r, "cuStreamWaitEvent", "stream_wait_event", json!({"args": args, "stream": stream}));
    };
    let on = |r: &mut Rec, stream: &str, n: u32| {
        let p = params(20, &[(0, &A.to_le_bytes()), (8, &B.to_le_bytes()), (16, &n.to_le_bytes())]);
        r.call("kernel", "launch", "cuLaunchKernel", json!({"args": {"f": "0xf1"}, "func": "0xf1", "kernel": "k_pointers", "grid": [n, 1, 1], "block": [32, 1, 1], "shared_mem": 0, "stream": stream, "params": p, "params_from": "layout", "capture": 1}));
    };
    cap(
        &mut r,
        "cuStreamBeginCapture_v2",
        "stream_begin_capture",
        json!({"args": {"hStream": "0x5000", "mode": 0}, "stream": "0x5000"}),
    ); // 8
    on(&mut r, "0x5000", 1); // 9: k1
    record(&mut r, "0xe1", "0x5000"); // 10
    wait(&mut r, "0x5100", "0xe1"); // 11
    on(&mut r, "0x5100", 2); // 12: k2
    record(&mut r, "0xe2", "0x5100"); // 13
    on(&mut r, "0x5000", 3); // 14: k3
    wait(&mut r, "0x5000", "0xe2"); // 15
    on(&mut r, "0x5000", 4); // 16: k4
    end_capture(&mut r, "0x5000", 1, "0x90001"); // 17
    instantiate(&mut r, "0x80001", "0x90001"); // 18
    graph_launch(&mut r, "0x80001"); // 19
    let rec = Recording::open(&r.write()).unwrap();
    let p = plan::build(&rec.manifest, &rec.trace, "trace.jsonl").unwrap();
    let grids: Vec<u32> = p.ops.iter().filter_map(|o| o.launch()).map(|l| l.grid[0]).collect();
    assert_eq!(grids, [1, 2, 3, 4]);
    assert_eq!(p.coverage.captured_events, 4);
    assert_eq!(p.graph_launches.len(), 1);
    assert_eq!(p.graph_launches[0].after, Some(vec![vec![], vec![0], vec![0], vec![1, 2]]));
}

#[test]
fn a_selected_ranks_collective_inside_a_graph_launch_is_skipped_and_makes_later_outputs_not_comparable() {
    let mut r = build();
    // The capture's second launch (line 11) is an NCCL kernel.
    r.lines[9]["kernel"] = json!("ncclDevKernel_AllReduce_Sum_f32_RING_LL");
    let rec = Recording::open(&r.write()).unwrap();
    let p = plan::build_rank(&rec.manifest, &rec.trace, "trace.jsonl").unwrap();
    let c = &p.coverage;
    let why = "cuLaunchKernel of ncclDevKernel_AllReduce_Sum_f32_RING_LL captured at line 11: collective: needs its peer ranks";
    assert_eq!(c.graph_skipped_by_reason.get(why), Some(&4), "{:?}", c.graph_skipped_by_reason);
    // The other two captured kernels still run in each of the 4 launches, as separate launches.
    assert_eq!((c.graph_kernels, c.graph_kernels_replayed, c.graph_launches_rebuildable), (13, 8, 0));
    let col = c.collectives.as_ref().unwrap();
    assert_eq!((col.launches, col.first_line, col.first_ts), (4, 15, 15_000));
    // Without a rank selected the collective runs in every launch.
    let all = plan::build(&rec.manifest, &rec.trace, "trace.jsonl").unwrap();
    assert_eq!((all.coverage.graph_kernels_replayed, all.coverage.graph_launches_rebuildable), (12, 4));
    assert_eq!(all.coverage.collectives, None);
}

/// A graph line of `build_explicit`'s graph 0x90011 at ts 16500 + `k`.
fn inserted(k: u64, name: &str, node: &str, deps: &[&str], fields: serde_json::Value) -> serde_json::Value {
    let mut v = fields;
    for (key, val) in [
        ("ts", json!(16500 + k)),
        ("pid", json!(7)),
        ("tid", json!(7)),
        ("type", json!("graph")),
        ("op", json!("graph_add_node")),
        ("name", json!(name)),
        ("ret", json!(0)),
        ("graph", json!("0x90011")),
        ("node", json!(node)),
        ("deps", json!(deps)),
    ] {
        v[key] = val;
    }
    v
}

#[test]
fn one_row_memcpy_nodes_and_2d_memsets_replay_in_the_graph() {
    let mut r = build_explicit();
    // After 0xb1: a device-to-device memcpy node of one row starting 16 and 32 bytes into its
    // source and destination (line 17), then a 2-D memset node (3 rows of 100 u16 at a
    // 512-byte pitch, line 18), then a host-to-device one of one row (line 19).
    let d2d = json!({"args": {}, "node_type": "memcpy", "size": 256, "direction": "d2d", "dst": "0x7f0000000000", "src": "0x7f0000200000", "width": 256, "height": 1, "depth": 1, "src_offset": 16, "dst_offset": 32});
    let set2d = json!({"args": {"memsetParams": {"dst": "0x7f0000000400", "pitch": 512, "value": 7, "elementSize": 2, "width": 100, "height": 3}}, "node_type": "memset", "size": 600, "dst": "0x7f0000000400", "value": 7});
    let h2d = json!({"args": {}, "node_type": "memcpy", "size": 64, "direction": "h2d", "dst": "0x7f0000000800", "src": "0x10000", "width": 64, "height": 1, "depth": 1, "src_offset": 0, "dst_offset": 0});
    r.lines.insert(15, inserted(0, "cuGraphAddMemcpyNode", "0xb9", &["0xb1"], d2d));
    r.lines.insert(16, inserted(1, "cuGraphAddMemsetNode", "0xba", &["0xb9"], set2d));
    r.lines.insert(17, inserted(2, "cuGraphAddMemcpyNode", "0xbb", &["0xba"], h2d));
    // A plain 2-D memset call after the last launch.
    r.call(
        "memset",
        "memset",
        "cuMemsetD2D32Async",
        json!({"ret": 0, "args": {"dstDevice": "0x7f0000001000", "dstPitch": 1024, "ui": 5, "Width": 64, "Height": 4, "hStream": "0x5000"}, "stream": "0x5000"}),
    );
    let rec = Recording::open(&r.write()).unwrap();
    let p = plan::build(&rec.manifest, &rec.trace, "trace.jsonl").unwrap();
    replay::data_check::check(&rec, &p).unwrap();
    let c = &p.coverage;
    assert!(c.graph_skipped_by_reason.is_empty() && c.graph_launches_not_replayed.is_empty(), "{c:?}");
    // 4 launches × (3 kernels + the child's memset + the 3 new nodes).
    assert_eq!((c.graph_kernels, c.graph_copies_sets, c.graph_copies_sets_replayed), (12, 16, 16));
    assert_eq!((c.graph_launches_rebuildable, c.graph_execs), (4, 2));
    let copies: Vec<(Direction, u64, u64, u64)> = p
        .ops
        .iter()
        .filter_map(|o| if let OpKind::Copy(k) = &o.kind { Some((k.direction, k.dst, k.src, k.size)) } else { None })
        .collect();
    let one =
        [(Direction::D2d, 0x7f00_0000_0020, 0x7f00_0020_0010, 256), (Direction::H2d, 0x7f00_0000_0800, 0x10000, 64)];
    assert_eq!(copies, [one, one, one, one].concat());
    let sets: Vec<(u64, u32, u8, u64, Option<Rows>)> = p
        .ops
        .iter()
        .filter_map(
            |o| if let OpKind::Set(s) = &o.kind { Some((s.dst, s.value, s.elem, s.count, s.rows)) } else { None },
        )
        .filter(|s| s.4.is_some())
        .collect();
    let node = (0x7f00_0000_0400, 7, 2, 100, Some(Rows { pitch: 512, height: 3 }));
    let call = (0x7f00_0000_1000, 5, 4, 64, Some(Rows { pitch: 1024, height: 4 }));
    assert_eq!(sets, [node, node, node, node, call]);
    assert_eq!((c.sets, c.sets_replayed), (1, 1));
    // Each launch of the two execs runs its 7 nodes as one rebuilt graph: b1, the child's kernel
    // and memset, b3, then the new nodes, a branch of their own after b1.
    let after: Vec<Vec<usize>> = vec![vec![], vec![0], vec![1], vec![2], vec![0], vec![4], vec![5]];
    assert!(p.graph_launches.iter().all(|g| g.ops == 7 && g.after.as_ref() == Some(&after)), "{:?}", p.graph_launches);
}

#[test]
fn a_clones_node_found_by_find_in_clone_is_changed_in_the_clone_only() {
    let mut r = build_explicit();
    // After 0xb1's change (line 16): a clone of the graph, its copy of 0xb3 found and set to
    // grid 6 (lines 17..=19); at the end the clone instantiated and launched.
    let line = |ts: u64, name: &str, op: &str, fields: serde_json::Value| {
        let mut v = fields;
        for (k, x) in [
            ("ts", json!(ts)),
            ("pid", json!(7)),
            ("tid", json!(7)),
            ("type", json!("graph")),
            ("op", json!(op)),
            ("name", json!(name)),
            ("ret", json!(0)),
        ] {
            v[k] = x;
        }
        v
    };
    let mut set = kernel_node(6, 6);
    set["node"] = json!("0x1b3");
    r.lines.insert(
        15,
        line(16500, "cuGraphClone", "graph_clone", json!({"args": {}, "graph": "0x90099", "original": "0x90011"})),
    );
    r.lines.insert(
        16,
        line(
            16600,
            "cuGraphNodeFindInClone",
            "graph_node_find_in_clone",
            json!({"args": {}, "node": "0x1b3", "original_node": "0xb3", "graph": "0x90099"}),
        ),
    );
    r.lines.insert(17, line(16700, "cuGraphKernelNodeSetParams_v2", "graph_kernel_node_set_params", set));
    instantiate(&mut r, "0x80099", "0x90099"); // 28
    graph_launch(&mut r, "0x80099"); // 29
    let rec = Recording::open(&r.write()).unwrap();
    let p = plan::build(&rec.manifest, &rec.trace, "trace.jsonl").unwrap();
    let c = &p.coverage;
    assert!(c.graph_launches_not_replayed.is_empty() && c.graph_skipped_by_reason.is_empty(), "{c:?}");
    let grids = |line: usize| -> Vec<u32> {
        p.ops.iter().filter(|o| o.line == line).filter_map(|o| o.launch()).map(|l| l.grid[0]).collect()
    };
    // The original's launches as before (b1 set to 2, the child's 5, b3 3, then 4 in the exec);
    // the clone's: its own b3 at 6.
    assert_eq!(
        (grids(21), grids(22), grids(24), grids(26)),
        (vec![2, 5, 3], vec![2, 5, 3], vec![2, 5, 4], vec![2, 5, 4])
    );
    assert_eq!(grids(29), [2, 5, 6]);
    assert_eq!((c.graph_launches_rebuildable, c.graph_execs), (5, 3));
}

#[test]
fn a_change_of_a_node_the_recording_does_not_know_makes_the_graphs_not_replayable() {
    let mut r = build_explicit();
    // Before the instantiation (line 17): a clone of the graph, and a node of the clone (its handle,
    // from cuGraphNodeFindInClone, is not in the trace) changed.
    let clone = json!({"ts": 16500, "pid": 7, "tid": 7, "type": "graph", "op": "graph_clone", "name": "cuGraphClone", "ret": 0, "args": {}, "graph": "0x90099", "original": "0x90011"});
    let mut set = kernel_node(6, 6);
    for (k, v) in [
        ("ts", json!(16600)),
        ("pid", json!(7)),
        ("tid", json!(7)),
        ("type", json!("graph")),
        ("op", json!("graph_kernel_node_set_params")),
        ("name", json!("cuGraphKernelNodeSetParams_v2")),
        ("node", json!("0xdead")),
    ] {
        set[k] = v;
    }
    r.lines.insert(15, clone);
    r.lines.insert(16, set);
    let rec = Recording::open(&r.write()).unwrap();
    let p = plan::build(&rec.manifest, &rec.trace, "trace.jsonl").unwrap();
    let c = &p.coverage;
    assert_eq!((c.graph_launches, c.graph_launches_expanded, c.graph_kernels), (4, 0, 0));
    let why = "graph node changed by cuGraphKernelNodeSetParams_v2 (line 18): the change is not replayed";
    assert_eq!(c.graph_launches_not_replayed.get(why), Some(&4));
    assert_eq!(p.ops.iter().filter(|o| o.is_work()).count(), 0);
}

#[test]
fn one_graph_instantiated_with_other_flags_is_another_exec_with_its_recorded_flags() {
    let mut r = build();
    // The same graph instantiated again without flags (the plain call carries none), launched once.
    r.call(
        "graph",
        "graph_instantiate",
        "cuGraphInstantiate_v2",
        json!({"ret": 0, "args": {"hGraph": "0x90001", "phGraphExec": "0x80003"}, "graph_exec": "0x80003", "graph": "0x90001"}),
    ); // 25
    graph_launch(&mut r, "0x80003"); // 26
    let rec = Recording::open(&r.write()).unwrap();
    let p = plan::build(&rec.manifest, &rec.trace, "trace.jsonl").unwrap();
    let execs: Vec<(usize, usize, u64)> =
        p.graph_launches.iter().map(|l| (l.line, l.exec, l.instantiate_flags)).collect();
    assert_eq!(execs, vec![(15, 0, 9), (16, 0, 9), (17, 0, 9), (18, 0, 9), (26, 1, 0)]);
    assert_eq!(p.coverage.graph_execs, 2);
}
