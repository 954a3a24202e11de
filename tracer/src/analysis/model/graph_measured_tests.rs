use super::*;
use crate::analysis::model::parse_str;

// The capture of graphs_tests.rs: exec 0xe00 holds the kernel nodes ka, kb,
// kc (and a memset), launched at ts 20 and 30; 0xbad is not in the trace.
use crate::analysis::model::graphs::tests::CAPTURED;

fn gpu(ts: u64, name: &str, corr: u64, graph: u64, node: u64) -> String {
    let ids = if graph == 0 { String::new() } else { format!(",\"graph_id\":{graph},\"graph_node_id\":{node}") };
    format!(
        "{{\"ts\":{ts},\"end_ts\":{},\"pid\":1,\"tid\":0,\"type\":\"gpu\",\"op\":\"kernel\",\"name\":\"{name}\",\"device\":0,\"stream_id\":7,\"correlation_id\":{corr}{ids}}}\n",
        ts + 50
    )
}

/// (record start, node's kernel, node's stream, launch ts) of every tie.
fn ties(t: &Trace, g: &GraphKernelTies) -> Vec<(u64, String, u64, u64)> {
    g.ties
        .iter()
        .map(|&(r, n, l)| {
            let (node, launch) = (t.calls[n], t.calls[l]);
            assert!(node.from_graph() && launch.expanded());
            (t.gpu[r].start, t.name(node.kernel).to_string(), node.stream, launch.ts)
        })
        .collect()
}

#[test]
fn graph_kernels_are_tied_by_correlation_graph_and_node_ids() {
    let mut text = CAPTURED.to_string();
    // launch 1 (correlation 50): its three kernels, CUPTI's order not node order
    text += &gpu(300, "kc", 50, 9, 0x15);
    text += &gpu(100, "ka", 50, 9, 0x10);
    text += &gpu(200, "kb", 50, 9, 0x14);
    // the plain launch between them: no graph ids, not counted
    text += &gpu(250, "kd", 51, 0, 0);
    // launch 2 (correlation 60): ka, then a kernel that is not the node's (kx), kc missing
    text += &gpu(400, "ka", 60, 9, 0x10);
    text += &gpu(500, "kx", 60, 9, 0x14);
    // a graph whose exec was built before the recording (no expanded launch left)
    text += &gpu(600, "ka", 70, 4, 0x1);
    let t = parse_str("measured", &text).unwrap();
    let g = tie_by_ids(&t);
    assert_eq!((g.records, g.kernel_nodes, g.ties.len()), (6, 6, 4));
    assert_eq!(
        ties(&t, &g),
        [
            (100, "ka".to_string(), 0x7, 20),
            (200, "kb".to_string(), 0x7, 20),
            (300, "kc".to_string(), 0x7, 20),
            (400, "ka".to_string(), 0x8, 30),
        ]
    );
    assert_eq!(
        g.sentence().unwrap(),
        "CUDA graphs: 4 of 6 measured graph kernels tied to their node and launch by CUPTI's graph, node and correlation ids (6 kernel nodes ran in the expanded launches)"
    );
}

#[test]
fn without_graph_ids_nothing_is_tied_or_said() {
    let mut text = CAPTURED.to_string();
    text += &gpu(100, "ka", 50, 0, 0);
    let t = parse_str("old", &text).unwrap();
    let g = tie_by_ids(&t);
    assert_eq!((g.records, g.kernel_nodes, g.ties.len()), (0, 6, 0));
    assert_eq!(g.sentence(), None);
}
