use super::*;
use crate::analysis::model::parse_str;
use serde_json::json;

/// A stream capture (ka, a memset, kb on a second stream joined by an
/// event, kc) instantiated as exec 0xe00, launched at ts 20 and 30; 0xbad
/// is not in the trace (opaque launch at 40). Also graph_measured_tests.rs's.
pub(crate) const CAPTURED: &str = r#"{"ts":10,"pid":1,"tid":1,"type":"graph","op":"stream_begin_capture","name":"cuStreamBeginCapture_v2","stream":"0x5","capture":1,"ret":0}
{"ts":11,"pid":1,"tid":1,"type":"kernel","op":"launch","name":"cuLaunchKernel","kernel":"ka","grid":[1,1,1],"block":[32,1,1],"shared_mem":0,"stream":"0x5","capture":1}
{"ts":12,"pid":1,"tid":1,"type":"memset","op":"set","name":"cuMemsetD32Async","size":64,"dst":"0xd000","stream":"0x5","capture":1,"ret":0}
{"ts":13,"pid":1,"tid":1,"type":"event","op":"event_record","name":"cuEventRecord","event":"0xe1","stream":"0x5","capture":1}
{"ts":14,"pid":1,"tid":1,"type":"sync","op":"stream_wait_event","name":"cuStreamWaitEvent","event":"0xe1","stream":"0x6","capture":1}
{"ts":15,"pid":1,"tid":1,"type":"kernel","op":"launch","name":"cuLaunchKernel","kernel":"kb","grid":[2,1,1],"block":[32,1,1],"shared_mem":0,"stream":"0x6","capture":1}
{"ts":16,"pid":1,"tid":1,"type":"kernel","op":"launch","name":"cuLaunchKernel","kernel":"kc","grid":[3,1,1],"block":[32,1,1],"shared_mem":0,"stream":"0x5","capture":1}
{"ts":17,"pid":1,"tid":1,"type":"graph","op":"stream_end_capture","name":"cuStreamEndCapture","stream":"0x5","capture":1,"graph":"0x900","ret":0}
{"ts":18,"pid":1,"tid":1,"type":"graph","op":"graph_instantiate_with_flags","name":"cuGraphInstantiateWithFlags","graph_exec":"0xe00","graph":"0x900","ret":0}
{"ts":20,"pid":1,"tid":1,"type":"graph","op":"graph_launch","name":"cuGraphLaunch","graph_exec":"0xe00","stream":"0x7"}
{"ts":21,"pid":1,"tid":1,"type":"kernel","op":"launch","name":"cuLaunchKernel","kernel":"kd","grid":[1,1,1],"block":[1,1,1],"shared_mem":0,"stream":"0x7"}
{"ts":30,"pid":1,"tid":1,"type":"graph","op":"graph_launch","name":"cuGraphLaunch","graph_exec":"0xe00","stream":"0x8"}
{"ts":40,"pid":1,"tid":1,"type":"graph","op":"graph_launch","name":"cuGraphLaunch","graph_exec":"0xbad","stream":"0x8"}
"#;

/// (kind, kernel, grid x, stream, node) of the calls from graphs, in order.
fn expanded(t: &Trace) -> Vec<(Kind, String, u32, u64, u64)> {
    t.calls
        .iter()
        .filter(|c| c.from_graph())
        .map(|c| (c.kind, t.name(c.kernel).to_string(), t.geom(c.geom).map_or(0, |g| g.grid[0]), c.stream, c.obj))
        .collect()
}

#[test]
fn captured_work_is_not_run_and_each_launch_runs_the_captured_graph() {
    let t = parse_str("cap", CAPTURED).unwrap();
    let g = &t.graphs;
    assert_eq!((g.captures, g.captured_calls, g.graphs, g.execs), (1, 6, 1, 1));
    assert_eq!((g.launches, g.expanded_launches, g.opaque_launches), (3, 2, 1));
    assert_eq!((g.kernels_run, g.copies_run, g.sets_run), (6, 0, 2));
    // the six captured calls did not run
    let captured: Vec<u64> = t.calls.iter().filter(|c| c.kind == Kind::Captured).map(|c| c.ts).collect();
    assert_eq!(captured, [11, 12, 13, 14, 15, 16]);
    let n = |k: u64| (1u64 << 63) | (1 << 24) | k;
    let one = |s: u64| {
        vec![
            (Kind::Launch, "ka".to_string(), 1, s, n(0)),
            (Kind::MemsetAsync, String::new(), 0, s, n(1)),
            (Kind::Launch, "kb".to_string(), 2, s, n(4)),
            (Kind::Launch, "kc".to_string(), 3, s, n(5)),
        ]
    };
    let mut want = one(0x7);
    want.extend(one(0x8));
    assert_eq!(expanded(&t), want);
    // each launch's nodes follow it, before the next call
    let order: Vec<(u64, bool, bool)> = t.calls.iter().map(|c| (c.ts, c.expanded(), c.from_graph())).collect();
    assert_eq!(
        &order[9..15],
        &[
            (20, true, false),
            (20, false, true),
            (20, false, true),
            (20, false, true),
            (20, false, true),
            (21, false, false)
        ]
    );
    assert_eq!(t.calls.iter().filter(|c| c.from_graph()).map(|c| c.size).sum::<u64>(), 128);
    assert_eq!(t.calls.iter().filter(|c| c.is_driver_call()).count(), 13);
}

#[test]
fn the_exec_of_a_captured_graph_has_the_capture_topology() {
    let mut t = parse_str("cap", "").unwrap();
    let lines: Vec<GraphLine> = Vec::new();
    assert_eq!(expand(&mut t, lines, vec![]), GraphStats::default());
    // through the walk itself: event record/wait join the streams
    let t = parse_str("cap", CAPTURED).unwrap();
    let kinds: Vec<Kind> = t.calls.iter().filter(|c| c.from_graph() && c.stream == 0x7).map(|c| c.kind).collect();
    assert_eq!(kinds, [Kind::Launch, Kind::MemsetAsync, Kind::Launch, Kind::Launch]);
}

const EXPLICIT: &str = r#"{"ts":1,"pid":2,"tid":2,"type":"graph","op":"graph_create","name":"cuGraphCreate","graph":"0x610","ret":0}
{"ts":2,"pid":2,"tid":2,"type":"graph","op":"graph_create","name":"cuGraphCreate","graph":"0x611","ret":0}
{"ts":3,"pid":2,"tid":2,"type":"graph","op":"graph_add_kernel_node_v2","name":"cuGraphAddKernelNode_v2","graph":"0x611","node":"0xb0","deps":[],"node_type":"kernel","kernel":"child_k","grid":[4,1,1],"block":[64,1,1],"shared_mem":0,"ret":0}
{"ts":4,"pid":2,"tid":2,"type":"graph","op":"graph_add_memset_node","name":"cuGraphAddMemsetNode","graph":"0x611","node":"0xb1","deps":["0xb0"],"node_type":"memset","size":256,"dst":"0xd0","value":0,"ret":0}
{"ts":5,"pid":2,"tid":2,"type":"graph","op":"graph_add_kernel_node_v2","name":"cuGraphAddKernelNode_v2","graph":"0x610","node":"0xa0","deps":[],"node_type":"kernel","kernel":"first","grid":[1,1,1],"block":[32,1,1],"shared_mem":0,"ret":0}
{"ts":6,"pid":2,"tid":2,"type":"graph","op":"graph_add_child_graph_node","name":"cuGraphAddChildGraphNode","graph":"0x610","node":"0xa1","deps":["0xa0"],"node_type":"graph","child_graph":"0x611","ret":0}
{"ts":7,"pid":2,"tid":2,"type":"graph","op":"graph_add_memcpy_node","name":"cuGraphAddMemcpyNode","graph":"0x610","node":"0xa2","deps":[],"node_type":"memcpy","size":1024,"direction":"d2h","dst":"0x1","src":"0xd0","ret":0}
{"ts":8,"pid":2,"tid":2,"type":"graph","op":"graph_add_kernel_node_v2","name":"cuGraphAddKernelNode_v2","graph":"0x610","node":"0xa3","deps":["0xa1"],"node_type":"kernel","kernel":"last","grid":[1,1,1],"block":[32,1,1],"shared_mem":0,"ret":0}
{"ts":9,"pid":2,"tid":2,"type":"graph","op":"graph_add_dependencies","name":"cuGraphAddDependencies","graph":"0x610","from":["0xa3"],"to":["0xa2"],"ret":0}
{"ts":10,"pid":2,"tid":2,"type":"graph","op":"graph_instantiate_with_flags","name":"cuGraphInstantiateWithFlags","graph_exec":"0xe1","graph":"0x610","ret":0}
{"ts":11,"pid":2,"tid":2,"type":"graph","op":"graph_kernel_node_set_params_v2","name":"cuGraphKernelNodeSetParams_v2","node":"0xa3","node_type":"kernel","kernel":"last","grid":[99,1,1],"block":[32,1,1],"shared_mem":0,"ret":0}
{"ts":20,"pid":2,"tid":2,"type":"graph","op":"graph_launch","name":"cuGraphLaunch","graph_exec":"0xe1","stream":"0x5"}
{"ts":21,"pid":2,"tid":2,"type":"graph","op":"graph_exec_kernel_node_set_params_v2","name":"cuGraphExecKernelNodeSetParams_v2","graph_exec":"0xe1","node":"0xa3","node_type":"kernel","kernel":"last","grid":[8,1,1],"block":[32,1,1],"shared_mem":0,"ret":0}
{"ts":30,"pid":2,"tid":2,"type":"graph","op":"graph_launch","name":"cuGraphLaunch","graph_exec":"0xe1","stream":"0x6"}
{"ts":31,"pid":2,"tid":2,"type":"graph","op":"graph_exec_update","name":"cuGraphExecUpdate_v2","graph_exec":"0xe1","graph":"0x610","ret":0}
{"ts":40,"pid":2,"tid":2,"type":"graph","op":"graph_launch","name":"cuGraphLaunch","graph_exec":"0xe1","stream":"0x5"}
"#;

#[test]
fn explicit_graph_with_a_child_dependencies_and_updates_between_launches() {
    let t = parse_str("explicit", EXPLICIT).unwrap();
    let g = &t.graphs;
    assert_eq!((g.graphs, g.execs, g.launches, g.expanded_launches, g.opaque_launches), (2, 1, 3, 3, 0));
    assert_eq!((g.kernels_run, g.copies_run, g.sets_run), (9, 3, 3));
    let launch = |s: u64, last_grid: u32| {
        vec![
            (Kind::Launch, "first".to_string(), 1, s, 0xa0),
            (Kind::Launch, "child_k".to_string(), 4, s, 0xb0),
            (Kind::MemsetAsync, String::new(), 0, s, 0xb1),
            (Kind::Launch, "last".to_string(), last_grid, s, 0xa3),
            (Kind::CopyAsync, String::new(), 0, s, 0xa2),
        ]
    };
    // 1: as instantiated (a graph-level update does not reach an exec);
    // 2: after the exec-level update; 3: cuGraphExecUpdate from the graph (99)
    let mut want = launch(0x5, 1);
    want.extend(launch(0x6, 8));
    want.extend(launch(0x5, 99));
    assert_eq!(expanded(&t), want);
    let copy = t.calls.iter().find(|c| c.from_graph() && c.kind == Kind::CopyAsync).unwrap();
    assert_eq!((copy.size, copy.dir), (1024, Dir::D2H));
}

#[test]
fn a_clones_node_found_by_find_in_clone_changes_in_the_clone_only() {
    let clone = r#"{"ts":41,"pid":2,"tid":2,"type":"graph","op":"graph_clone","name":"cuGraphClone","graph":"0x612","original":"0x610","ret":0}
{"ts":42,"pid":2,"tid":2,"type":"graph","op":"graph_node_find_in_clone","name":"cuGraphNodeFindInClone","node":"0xca3","original_node":"0xa3","graph":"0x612","ret":0}
{"ts":43,"pid":2,"tid":2,"type":"graph","op":"graph_kernel_node_set_params_v2","name":"cuGraphKernelNodeSetParams_v2","node":"0xca3","node_type":"kernel","kernel":"last","grid":[7,1,1],"block":[32,1,1],"shared_mem":0,"ret":0}
{"ts":44,"pid":2,"tid":2,"type":"graph","op":"graph_instantiate_with_flags","name":"cuGraphInstantiateWithFlags","graph_exec":"0xe2","graph":"0x612","ret":0}
{"ts":45,"pid":2,"tid":2,"type":"graph","op":"graph_instantiate_with_flags","name":"cuGraphInstantiateWithFlags","graph_exec":"0xe3","graph":"0x610","ret":0}
{"ts":50,"pid":2,"tid":2,"type":"graph","op":"graph_launch","name":"cuGraphLaunch","graph_exec":"0xe2","stream":"0x9"}
{"ts":60,"pid":2,"tid":2,"type":"graph","op":"graph_launch","name":"cuGraphLaunch","graph_exec":"0xe3","stream":"0x9"}
"#;
    let t = parse_str("clone", &format!("{EXPLICIT}{clone}")).unwrap();
    let last: Vec<u32> = expanded(&t).iter().filter(|x| x.1 == "last").map(|x| x.2).collect();
    // The three launches of 0xe1 as before; the clone's launch with its node at 7; the
    // original instantiated again still at 99.
    assert_eq!(last, [1, 8, 99, 7, 99]);
    assert_eq!((t.graphs.graphs, t.graphs.execs, t.graphs.expanded_launches), (3, 3, 5));
}

#[test]
fn flattened_topology_inlines_child_graphs() {
    let t = parse_str("explicit", EXPLICIT).unwrap();
    // Rebuild the exec the way expand does, to look at its dependencies.
    let mut lines = Vec::new();
    for l in EXPLICIT.lines().take(10) {
        let v: Value = serde_json::from_str(l).unwrap();
        lines.push(GraphLine { ts: v["ts"].as_u64().unwrap(), pid: 2, tid: 2, v });
    }
    let mut t2 = Trace { strings: t.strings.clone(), geoms: t.geoms.clone(), ..Default::default() };
    let mut w = Walk {
        t: &mut t2,
        geom_ids: HashMap::new(),
        graphs: HashMap::new(),
        node_graph: HashMap::new(),
        clone_nodes: HashMap::new(),
        execs: HashMap::new(),
        captured: HashMap::new(),
        launched: HashMap::new(),
        stats: GraphStats::default(),
    };
    for l in &lines {
        w.line(l);
    }
    let ex = w.execs[&(2, 0xe1)].clone();
    let deps: Vec<(u64, Vec<usize>)> = ex.iter().map(|n| (n.node, n.deps.clone())).collect();
    assert_eq!(deps, vec![(0xa0, vec![]), (0xb0, vec![0]), (0xb1, vec![1]), (0xa3, vec![2]), (0xa2, vec![3])]);
}

#[test]
fn report_and_inferred_timeline_count_and_run_the_nodes() {
    use crate::analysis::{phases::phases, report, timeline};
    let t = parse_str("cap", CAPTURED).unwrap();
    let tl = timeline::inferred(&t, &timeline::tests::durs(&[("ka", 1000), ("kb", 2000), ("kc", 3000), ("kd", 500)]));
    // Stream 0x7: the first launch's nodes one after the other in
    // dependency order, then kd (launched after it on the same stream).
    let s7 = tl.streams.iter().find(|s| s.key.handle == 0x7).unwrap();
    let kinds: Vec<(timeline::WorkKind, String)> =
        s7.intervals.iter().map(|i| (i.kind, t.name(i.name).to_string())).collect();
    use timeline::WorkKind::{Kernel, Memset};
    assert_eq!(
        kinds.iter().map(|(k, n)| (*k, n.as_str())).collect::<Vec<_>>(),
        [(Kernel, "ka"), (Memset, ""), (Kernel, "kb"), (Kernel, "kc"), (Kernel, "kd")]
    );
    for w in s7.intervals.windows(2) {
        assert_eq!(w[1].start, w[0].end, "serial on the launch stream");
    }
    let durs: Vec<u64> = s7.intervals.iter().filter(|i| i.kind == Kernel).map(|i| i.dur()).collect();
    assert_eq!(durs, [1000, 2000, 3000, 500]);
    assert_eq!(s7.intervals[0].start, 20);
    // 0x8: the second launch's four nodes, then the opaque launch
    let s8 = tl.streams.iter().find(|s| s.key.handle == 0x8).unwrap();
    assert_eq!(s8.intervals.len(), 5);
    assert_eq!(s8.intervals[4].kind, timeline::WorkKind::Graph);
    let r = report::build(&t, &phases(&t), &tl);
    // 6 kernels from 2 launches + kd + 1 opaque graph launch; captured launches not counted
    assert_eq!(r.total.launches, 8);
    assert_eq!(r.total.calls, 13);
    let by_count: Vec<(String, u64)> = r.top_by_count.iter().map(|k| (k.kernel.clone(), k.launches)).collect();
    assert_eq!(by_count, [("ka".to_string(), 2), ("kb".to_string(), 2), ("kc".to_string(), 2), ("kd".to_string(), 1)]);
    assert!(r.notes.contains(&"CUDA graphs: 2 launches ran 6 kernels, 0 copies and 2 sets from the graphs built in the trace; 1 launches of graphs built before the recording (or not recorded) are counted as one opaque operation each; 6 calls were captured into graphs (not run when captured, not counted)".to_string()), "{:?}", r.notes);
}

#[test]
fn summary_counts_graph_kernels_and_not_captured_ones() {
    let mut s = crate::analysis::summary::Summary::default();
    for (i, l) in CAPTURED.lines().enumerate() {
        s.add_json("cap", i as u64 + 1, l.as_bytes()).unwrap();
    }
    let j = s.to_json();
    // kd, and 3 kernels in each of 2 expanded launches; the captured launches are not run
    assert_eq!(j["launches"], 7);
    assert_eq!(
        j["kernels"],
        serde_json::json!([
            {"name": "ka", "launches": 2}, {"name": "kb", "launches": 2}, {"name": "kc", "launches": 2}, {"name": "kd", "launches": 1}
        ])
    );
    assert_eq!(
        (j["graphs"]["expanded_launches"].as_u64(), j["graphs"]["opaque_launches"].as_u64()),
        (Some(2), Some(1))
    );
    let text = s.render();
    assert!(text.contains("7 kernel launches (4 distinct kernels)"), "{text}");
    assert!(text.contains("CUDA graphs: 2 launches ran 6 kernels, 0 copies and 2 sets"), "{text}");
    // The same through the collector's path (JSON values).
    let mut live = crate::analysis::summary::Summary::default();
    for l in CAPTURED.lines() {
        live.add(&serde_json::from_str(l).unwrap());
    }
    assert_eq!(live.to_json()["launches"], 7);
}

#[test]
fn measured_graph_kernels_are_tied_to_their_nodes_and_counted() {
    use crate::analysis::{phases::phases, report, timeline};
    // The capture trace, with CUPTI records for the first launch's nodes
    // (ka, the memset, kb, kc) and ka of the second: 5 of 8 nodes.
    let mut text = CAPTURED.to_string();
    for (ts, op, name) in [
        (100, "kernel", "ka"),
        (200, "memset", "memset"),
        (300, "kernel", "kb"),
        (400, "kernel", "kc"),
        (500, "kernel", "ka"),
    ] {
        text.push_str(&format!(
            "{{\"ts\":{ts},\"end_ts\":{},\"pid\":1,\"tid\":0,\"type\":\"gpu\",\"op\":\"{op}\",\"name\":\"{name}\",\"device\":0,\"stream_id\":7,\"size\":64}}\n",
            ts + 50
        ));
    }
    let t = parse_str("measured", &text).unwrap();
    let tl = timeline::measured(&t);
    assert_eq!(timeline::measured_matches(&t, &tl), (5, 8));
    let links = timeline::link_measured_to_launches(&t, &tl);
    // the record at 300 (kb) is tied to the first launch's kb node
    let (si, ii, ci) = links.iter().copied().find(|&(s, i, _)| tl.streams[s].intervals[i].start == 300).unwrap();
    let _ = (si, ii);
    let c = t.calls[ci as usize];
    assert_eq!((t.name(c.kernel), c.obj, c.stream, c.ts), ("kb", (1u64 << 63) | (1 << 24) | 4, 0x7, 20));
    let r = report::build(&t, &phases(&t), &tl);
    assert!(
        r.notes.contains(&"CUDA graphs: 5 of 8 graph nodes' work matched a measured GPU record".to_string()),
        "{:?}",
        r.notes
    );
}

#[test]
fn expanded_kernels_carry_their_nodes_parameter_bytes_as_of_each_launch() {
    // EXPLICIT with `--replayable` parameter bytes on the kernel node lines: first "01",
    // child_k "02", last "03", set to "63" in the graph (ts 11) and "08" in the exec (ts 21).
    let with = |line: &str| -> String {
        let mut v: Value = serde_json::from_str(line).unwrap();
        let p = match (v["node"].as_str(), v["grid"][0].as_u64()) {
            (Some("0xa0"), _) => "01",
            (Some("0xb0"), _) => "02",
            (Some("0xa3"), Some(1)) => "03",
            (Some("0xa3"), Some(99)) => "63",
            (Some("0xa3"), Some(8)) => "08",
            _ => return line.to_string(),
        };
        v["params"] = json!(p);
        v["params_from"] = json!("layout");
        v.to_string()
    };
    let text: String = EXPLICIT.lines().map(|l| with(l) + "\n").collect();
    let t = parse_str("explicit", &text).unwrap();
    let params: Vec<(u64, Option<&str>)> =
        t.calls.iter().filter(|c| c.from_graph()).map(|c| (c.obj, t.node_params(c))).collect();
    let launch = |last: &'static str| {
        vec![(0xa0, Some("01")), (0xb0, Some("02")), (0xb1, None), (0xa3, Some(last)), (0xa2, None)]
    };
    let mut want = launch("03");
    want.extend(launch("08"));
    want.extend(launch("63"));
    assert_eq!(params, want);
    // Not from a graph: none; a trace without bytes keeps no table.
    assert!(t.calls.iter().filter(|c| !c.from_graph()).all(|c| t.node_params(c).is_none()));
    assert_eq!(t.graph_node_params.len(), 3);
    assert!(parse_str("explicit", EXPLICIT).unwrap().graph_node_params.is_empty());
}
