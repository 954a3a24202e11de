//! Graph launches in the plan (plan/graphs.rs), on a hand-built recording: a
//! stream capture of 3 launches launched 4 times, an opaque graph launch and
//! an explicit graph.

mod common;

use common::*;
use replay::plan::{self, EdgeKind, GraphOp, OpKind};
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

fn build() -> Rec {
    let mut r = Rec::new();
    let cubin = r.image("kernels.sm_90.cubin", "cubin");
    r.call(
        "memory",
        "alloc",
        "cuMemAlloc_v2",
        json!({"ret": 0, "args": {"dptr": "0x7f0000000000", "bytesize": 4096}, "ptr": "0x7f0000000000", "size": 4096}),
    ); // 2
    r.call(
        "memory",
        "alloc",
        "cuMemAlloc_v2",
        json!({"ret": 0, "args": {"dptr": "0x7f0000200000", "bytesize": 4096}, "ptr": "0x7f0000200000", "size": 4096}),
    ); // 3
    r.call(
        "module",
        "module_load_data",
        "cuModuleLoadData",
        json!({"ret": 0, "args": {"module": "0xa00", "image": "0x1234"}, "image": cubin}),
    ); // 4
    r.call("module", "module_get_function", "cuModuleGetFunction", json!({"ret": 0, "args": {"hfunc": "0xf1", "hmod": "0xa00", "name": "k_pointers"}, "handle": "0xf1", "kernel": "k_pointers"})); // 5
    r.call(
        "stream",
        "stream_create",
        "cuStreamCreate",
        json!({"ret": 0, "args": {"phStream": "0x5000", "Flags": "0x1"}}),
    ); // 6
    r.call("event", "event_create", "cuEventCreate", json!({"ret": 0, "args": {"phEvent": "0xe1", "Flags": "0x2"}})); // 7
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
    r.call(
        "graph",
        "stream_end_capture",
        "cuStreamEndCapture",
        json!({"ret": 0, "args": {"hStream": "0x5000"}, "stream": "0x5000", "capture": 1, "graph": "0x90001"}),
    ); // 13
    r.call(
        "graph",
        "graph_instantiate_with_flags",
        "cuGraphInstantiateWithFlags",
        json!({"ret": 0, "args": {}, "graph_exec": "0x80001", "graph": "0x90001"}),
    ); // 14
    for _ in 0..4 {
        graph_launch(&mut r, "0x80001"); // 15..18
    }
    graph_launch(&mut r, "0x80009"); // 19: exec not built in the recording
    r.call("graph", "graph_create", "cuGraphCreate", json!({"ret": 0, "args": {}, "graph": "0x90002"})); // 20
    r.call("graph", "graph_add_kernel_node", "cuGraphAddKernelNode_v2", json!({"ret": 0, "args": {}, "graph": "0x90002", "node": "0xa1", "node_type": "kernel", "kernel": "k_pointers", "func": "0xf1", "grid": [1, 1, 1], "block": [32, 1, 1], "shared_mem": 0, "deps": []})); // 21
    r.call(
        "graph",
        "graph_instantiate_with_flags",
        "cuGraphInstantiateWithFlags",
        json!({"ret": 0, "args": {}, "graph_exec": "0x80002", "graph": "0x90002"}),
    ); // 22
    graph_launch(&mut r, "0x80002"); // 23
    r.call(
        "sync",
        "stream_synchronize",
        "cuStreamSynchronize",
        json!({"ret": 0, "args": {"hStream": "0x5000"}, "stream": "0x5000"}),
    ); // 24
    r
}

const OPAQUE: &str = "graph exec not instantiated in the recording (opaque graph launch)";
const EXPLICIT: &str = "explicit graph (cuGraphCreate / cuGraphAdd*Node): kernel node parameter bytes are not recorded";

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
    assert_eq!(
        (c.graph_launches, c.graph_launches_expanded, c.graph_kernels, c.graph_kernels_replayed),
        (6, 4, 12, 12)
    );
    assert_eq!((c.graph_copies_sets, c.captured_copies_sets), (0, 0));
    assert_eq!(c.percent(), 100.0);
    let not: Vec<(&str, usize)> = c.graph_launches_not_replayed.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    assert_eq!(not, vec![(EXPLICIT, 1), (OPAQUE, 1)]);
    let lines: Vec<usize> = c.other_skipped.iter().map(|s| s.line).collect();
    assert_eq!(lines, vec![19, 23]);
    assert_eq!(c.other_skipped[0].reason, format!("graph launch not replayed: {OPAQUE}"));
    let text = p.summary();
    assert!(
        text.contains(
            "graph launches: 6, expanded into stream order 4 (12 kernels, replayed 12; 0 copies/sets, replayed 0), not replayed 2\n"
        ),
        "{text}"
    );
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
    assert_eq!((c.graph_kernels, c.graph_kernels_replayed, c.launches, c.captured_launches), (12, 8, 0, 3));
    let skipped: Vec<(&str, usize)> = c.graph_skipped_by_reason.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    assert_eq!(skipped, vec![("cuLaunchKernel of k_pointers captured at line 11: no params recorded", 4)]);
    assert!((c.percent() - 100.0 * 8.0 / 12.0).abs() < 1e-9);
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
    assert_eq!((c.graph_launches, c.graph_launches_expanded, c.graph_kernels), (6, 0, 0));
    let why = "graph node changed by cuGraphKernelNodeSetParams_v2 (line 14): the change is not replayed";
    assert_eq!(c.graph_launches_not_replayed.get(why), Some(&4));
    assert_eq!(p.ops.iter().filter(|o| o.is_work()).count(), 0);
}

#[test]
fn a_capture_into_a_graph_with_nodes_of_its_own_stays_not_replayable() {
    let mut r = build();
    // cuGraphCreate of the graph the capture ends in (cuStreamBeginCaptureToGraph into it).
    r.lines.insert(
        6,
        json!({"ts": 7500, "pid": 7, "tid": 7, "type": "graph", "op": "graph_create", "name": "cuGraphCreate", "ret": 0, "args": {}, "graph": "0x90001"}),
    );
    let rec = Recording::open(&r.write()).unwrap();
    let p = plan::build(&rec.manifest, &rec.trace, "trace.jsonl").unwrap();
    let c = &p.coverage;
    assert_eq!((c.graph_launches, c.graph_launches_expanded, c.graph_kernels, c.captured_launches), (6, 0, 0, 3));
    let not: Vec<(&str, usize)> = c.graph_launches_not_replayed.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    assert_eq!(not, vec![(EXPLICIT, 5), (OPAQUE, 1)]);
    assert_eq!(p.ops.iter().filter(|o| o.is_work()).count(), 0);
}
