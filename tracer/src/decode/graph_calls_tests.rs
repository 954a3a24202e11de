use serde_json::{Value, json};
use tracer_common::decode::Record;
use tracer_common::event::{BLOB_CAP, CallExit, EventKind, Header, MAX_ARGS};
use tracer_common::funcs::lookup;
use tracer_common::graph::{NODES_OFF, STRUCT_READ};

use crate::decode::calls::Assembler;

fn hdr(kind: EventKind, name: &str, ts: u64) -> Header {
    Header { kind: kind as u16, func: lookup(name).unwrap().0, cpu: 0, seq: ts, ts, pid: 100, tid: 101 }
}

fn enter<'a>(
    name: &str,
    ts: u64,
    args: &[u64],
    s: Option<&'a [u8]>,
    blob: Option<&'a [u8]>,
    nattrs: u32,
) -> Record<'a> {
    let mut a = [0u64; MAX_ARGS];
    a[..args.len()].copy_from_slice(args);
    Record::Enter {
        hdr: hdr(if blob.is_some() { EventKind::CallEnterBlob } else { EventKind::CallEnter }, name, ts),
        args: a,
        string: s,
        string_truncated: false,
        blob,
        nattrs,
        params: None,
    }
}

fn exit(name: &str, ts: u64, out0: u64) -> Record<'static> {
    Record::Exit {
        x: CallExit { hdr: hdr(EventKind::CallExit, name, ts), ret: 0, out: [out0, 0], out_ok: 1, flags: 0 },
        string: None,
        string_truncated: false,
    }
}

fn run(recs: &[Record]) -> Vec<Value> {
    let mut a = Assembler::new();
    a.set_entry_only(tracer_common::funcs::is_entry_only_by_default);
    let mut v = Vec::new();
    for r in recs {
        a.push(r, &mut |x| v.push(x.into_value()));
    }
    a.finish(&mut |x| v.push(x.into_value()));
    v
}

/// A kernel node's record: CUDA_KERNEL_NODE_PARAMS_v2 then the dependencies.
fn kernel_node_blob(func: u64, grid: [u32; 3], block: [u32; 3], shmem: u32, deps: &[u64]) -> Vec<u8> {
    let mut b = vec![0u8; BLOB_CAP];
    b[0..8].copy_from_slice(&func.to_le_bytes());
    for (i, v) in grid.iter().chain(block.iter()).chain([shmem].iter()).enumerate() {
        b[8 + 4 * i..12 + 4 * i].copy_from_slice(&v.to_le_bytes());
    }
    for (i, d) in deps.iter().enumerate() {
        b[NODES_OFF + 8 * i..NODES_OFF + 8 * i + 8].copy_from_slice(&d.to_le_bytes());
    }
    b
}

#[test]
fn captured_work_is_marked_with_its_capture_and_the_graph_named_at_the_end() {
    let v = run(&[
        enter("cuModuleGetFunction", 1, &[0x10, 0x20, 0x30], Some(b"k_a"), None, 0),
        exit("cuModuleGetFunction", 2, 0xf1),
        enter("cuStreamBeginCapture_v2", 3, &[0x5, 1], None, None, 0),
        exit("cuStreamBeginCapture_v2", 4, 0),
        enter("cuLaunchKernel", 5, &[0xf1, 2, 1, 1, 64, 1, 1, 0, 0x5, 0, 0], None, None, 0),
        enter("cuMemsetD32Async", 6, &[0xd000, 7, 16, 0x5], None, None, 0),
        exit("cuMemsetD32Async", 7, 0),
        enter("cuEventRecord", 8, &[0xe1, 0x5], None, None, 0),
        // stream 0x6 joins the capture through the event
        enter("cuStreamWaitEvent", 9, &[0x6, 0xe1, 0], None, None, 0),
        enter("cuLaunchKernel", 10, &[0xf1, 1, 1, 1, 32, 1, 1, 0, 0x6, 0, 0], None, None, 0),
        // another stream, not capturing
        enter("cuLaunchKernel", 11, &[0xf1, 1, 1, 1, 32, 1, 1, 0, 0x7, 0, 0], None, None, 0),
        enter("cuStreamEndCapture", 12, &[0x5, 0x7ff0], None, None, 0),
        exit("cuStreamEndCapture", 13, 0x9a00),
        enter("cuLaunchKernel", 14, &[0xf1, 1, 1, 1, 32, 1, 1, 0, 0x6, 0, 0], None, None, 0),
    ]);
    let by_ts = |ts: u64| v.iter().find(|l| l["ts"] == ts).unwrap_or_else(|| panic!("no line at {ts}"));
    assert_eq!(by_ts(3)["capture"], 1);
    assert_eq!(by_ts(5)["capture"], 1);
    assert_eq!(by_ts(5)["kernel"], "k_a");
    assert_eq!(by_ts(5)["grid"], json!([2, 1, 1]));
    assert_eq!(by_ts(6)["capture"], 1);
    assert_eq!(by_ts(6)["size"], 64);
    assert_eq!(by_ts(8)["capture"], 1);
    assert_eq!(by_ts(9)["capture"], 1);
    assert_eq!(by_ts(10)["capture"], 1);
    assert_eq!(by_ts(11).get("capture"), None);
    assert_eq!(by_ts(12)["capture"], 1);
    assert_eq!(by_ts(12)["graph"], "0x9a00");
    // after the end: neither stream captures
    assert_eq!(by_ts(14).get("capture"), None);
    assert_eq!(by_ts(14)["op"], "launch");
}

#[test]
fn explicit_nodes_carry_kind_parameters_and_dependencies() {
    let k = kernel_node_blob(0xf1, [4, 2, 1], [128, 1, 1], 512, &[0xa1, 0xa2]);
    let mut m = vec![0u8; 40];
    m[0..8].copy_from_slice(&0xd000u64.to_le_bytes());
    m[16..20].copy_from_slice(&9u32.to_le_bytes());
    m[20..24].copy_from_slice(&4u32.to_le_bytes());
    m[24..32].copy_from_slice(&100u64.to_le_bytes());
    m[32..40].copy_from_slice(&1u64.to_le_bytes());
    let mut memset = vec![0u8; BLOB_CAP];
    memset[..40].copy_from_slice(&m);
    memset[NODES_OFF..NODES_OFF + 8].copy_from_slice(&0xa1u64.to_le_bytes());
    let mut edges = vec![0u8; BLOB_CAP];
    edges[0..8].copy_from_slice(&0xa1u64.to_le_bytes());
    edges[NODES_OFF..NODES_OFF + 8].copy_from_slice(&0xa3u64.to_le_bytes());
    let mut set = kernel_node_blob(0xf1, [8, 1, 1], [256, 1, 1], 0, &[]);
    set.truncate(72);
    let v = run(&[
        enter("cuModuleGetFunction", 1, &[0x10, 0x20, 0x30], Some(b"k_node"), None, 0),
        exit("cuModuleGetFunction", 2, 0xf1),
        enter("cuGraphCreate", 3, &[0x7ff0, 0], None, None, 0),
        exit("cuGraphCreate", 4, 0x6000),
        enter("cuGraphAddKernelNode_v2", 5, &[0x7ff0, 0x6000, 0x7fa0, 2, 0x7fb0], None, Some(&k), 2 | STRUCT_READ),
        exit("cuGraphAddKernelNode_v2", 6, 0xa3),
        // 20 dependencies passed, 1 copied: 19 counted as cut
        enter(
            "cuGraphAddMemsetNode",
            7,
            &[0x7ff0, 0x6000, 0x7fa0, 20, 0x7fb0, 0],
            None,
            Some(&memset),
            1 | STRUCT_READ,
        ),
        exit("cuGraphAddMemsetNode", 8, 0xa4),
        enter("cuGraphAddChildGraphNode", 9, &[0x7ff0, 0x6000, 0, 0, 0x6100], None, Some(&[0u8; BLOB_CAP]), 0),
        exit("cuGraphAddChildGraphNode", 10, 0xa5),
        enter("cuGraphAddDependencies", 11, &[0x6000, 0x7fa0, 0x7fb0, 1], None, Some(&edges), 1),
        exit("cuGraphAddDependencies", 12, 0),
        enter("cuGraphInstantiateWithFlags", 13, &[0x7ff0, 0x6000, 0], None, None, 0),
        exit("cuGraphInstantiateWithFlags", 14, 0xe000),
        enter("cuGraphExecKernelNodeSetParams_v2", 15, &[0xe000, 0xa3, 0x7fb0], None, Some(&set), 0),
        exit("cuGraphExecKernelNodeSetParams_v2", 16, 0),
        enter("cuGraphLaunch", 17, &[0xe000, 0x5], None, None, 0),
    ]);
    let by_ts = |ts: u64| v.iter().find(|l| l["ts"] == ts).unwrap();
    assert_eq!(by_ts(3)["graph"], "0x6000");
    let n = by_ts(5);
    assert_eq!((n["type"].as_str(), n["op"].as_str()), (Some("graph"), Some("graph_add_kernel_node")));
    assert_eq!(n["node"], "0xa3");
    assert_eq!(n["graph"], "0x6000");
    assert_eq!(n["deps"], json!(["0xa1", "0xa2"]));
    assert_eq!(n["node_type"], "kernel");
    assert_eq!(n["kernel"], "k_node");
    assert_eq!(n["grid"], json!([4, 2, 1]));
    assert_eq!(n["block"], json!([128, 1, 1]));
    assert_eq!(n["shared_mem"], 512);
    assert_eq!(n["args"]["nodeParams"]["sharedMemBytes"], 512, "{n}");
    assert_eq!(n.get("deps_cut"), None);
    let s = by_ts(7);
    assert_eq!(
        (s["node_type"].as_str(), s["size"].as_u64(), s["value"].as_u64()),
        (Some("memset"), Some(400), Some(9))
    );
    // What replay reads: element size, width, height; no pitch for one row.
    assert_eq!((s["element_size"].as_u64(), s["width"].as_u64(), s["height"].as_u64()), (Some(4), Some(100), Some(1)));
    assert_eq!(s.get("pitch"), None);
    assert_eq!(s["deps"], json!(["0xa1"]));
    assert_eq!(s["deps_cut"], 19);
    let c = by_ts(9);
    assert_eq!((c["node_type"].as_str(), c["child_graph"].as_str()), (Some("graph"), Some("0x6100")));
    assert_eq!(c["deps"], json!([]));
    let e = by_ts(11);
    assert_eq!((e["from"].clone(), e["to"].clone()), (json!(["0xa1"]), json!(["0xa3"])));
    assert_eq!((by_ts(13)["graph_exec"].as_str(), by_ts(13)["graph"].as_str()), (Some("0xe000"), Some("0x6000")));
    let u = by_ts(15);
    assert_eq!((u["graph_exec"].as_str(), u["node"].as_str()), (Some("0xe000"), Some("0xa3")));
    assert_eq!(u["grid"], json!([8, 1, 1]));
    assert_eq!(by_ts(17)["graph_exec"], "0xe000");
    assert_eq!(by_ts(17)["op"], "graph_launch");
}

#[test]
fn unreadable_node_struct_is_said_not_guessed() {
    let v = run(&[
        enter("cuGraphAddKernelNode_v2", 5, &[0x7ff0, 0x6000, 0, 0, 0x7fb0], None, Some(&[0xffu8; BLOB_CAP]), 0),
        exit("cuGraphAddKernelNode_v2", 6, 0xa3),
    ]);
    assert_eq!(v[0]["node_type"], "kernel");
    assert_eq!(v[0]["params_unread"], true);
    assert_eq!(v[0].get("grid"), None);
    assert_eq!(v[0]["args"]["nodeParams"], json!({ "unreadable": "0x7fb0" }));
}
