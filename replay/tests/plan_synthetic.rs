//! Exact plans of a hand-built recording (real fixture images, layouts of kernels.cu).

mod common;

use common::*;
use replay::plan::{self, Direction, Edge, EdgeKind, OpKind, RangeKind, StreamKind};
use replay::recording::Recording;
use serde_json::json;

const A: u64 = 0x7f00_0000_0000;
const B: u64 = 0x7f00_0020_0000;

fn build() -> (Rec, String, String, String) {
    let mut r = Rec::new();
    let cubin = r.image("kernels.sm_90.cubin", "cubin");
    let fatbin = r.image("kernels.no-compress.fatbin", "fatbin");
    let data = r.data(&[7u8; 4096]);
    r.prelude(&cubin, 1048576); // lines 2..=7
    r.call("memcpy", "copy", "cuMemcpyHtoDAsync_v2", json!({"ret": 0, "args": {"dstDevice": "0x7f0000000000", "srcHost": "0x1000", "ByteCount": 4096, "hStream": "0x0"}, "direction": "h2d", "dst": "0x7f0000000000", "src": "0x1000", "size": 4096, "stream": "0x0", "data": data})); // 8
    let p9 = params(20, &[(0, &(B + 0x10).to_le_bytes()), (8, &A.to_le_bytes()), (16, &1024u32.to_le_bytes())]);
    r.call("kernel", "launch", "cuLaunchKernel", json!({"args": {"f": "0xf1"}, "func": "0xf1", "kernel": "k_pointers", "grid": [4, 1, 1], "block": [256, 1, 1], "shared_mem": 0, "stream": "0x0", "params": p9, "params_from": "layout"})); // 9
    r.call(
        "event",
        "event_record",
        "cuEventRecord",
        json!({"args": {"hEvent": "0xe1", "hStream": "0x0"}, "event": "0xe1", "stream": "0x0"}),
    ); // 10
    r.call(
        "sync",
        "stream_wait_event",
        "cuStreamWaitEvent",
        json!({"args": {"hStream": "0x5000", "hEvent": "0xe1", "Flags": "0x0"}, "event": "0xe1", "stream": "0x5000"}),
    ); // 11
    let p12 = params(20, &[(0, &(A + 8).to_le_bytes()), (8, &B.to_le_bytes()), (16, &5u32.to_le_bytes())]);
    r.call("kernel", "launch", "cuLaunchKernel", json!({"args": {"f": "0xf1"}, "func": "0xf1", "kernel": "k_pointers", "grid": [1, 1, 1], "block": [32, 1, 1], "shared_mem": 0, "stream": "0x5000", "params": p12, "params_from": "layout"})); // 12
    r.call("module", "module_unload", "cuModuleUnload", json!({"ret": 0, "args": {"hmod": "0xa00"}})); // 13
    r.call(
        "module",
        "module_load_data",
        "cuModuleLoadData",
        json!({"ret": 0, "args": {"module": "0xa00", "image": "0x1234"}, "image": fatbin}),
    ); // 14
    r.call("module", "module_get_function", "cuModuleGetFunction", json!({"ret": 0, "args": {"hfunc": "0xf1", "hmod": "0xa00", "name": "k_struct"}, "handle": "0xf1", "kernel": "k_struct"})); // 15
    // k_struct: tag@0, Odd o@8 (c@8, d@16, s@24), Rgb@32, h@36, out@40. o.d's bits are an address.
    let p16 = params(
        48,
        &[
            (0, &[3]),
            (8, &[1]),
            (16, &(A + 0x10).to_le_bytes()),
            (24, &[2, 0]),
            (32, &[1, 2, 3]),
            (36, &[9, 0]),
            (40, &(B + 0x100).to_le_bytes()),
        ],
    );
    r.call("kernel", "launch", "cuLaunchKernel", json!({"args": {"f": "0xf1"}, "func": "0xf1", "kernel": "k_struct", "grid": [1, 1, 1], "block": [64, 1, 1], "shared_mem": 128, "stream": "0x5000", "params": p16, "params_from": "layout"})); // 16
    r.call("kernel", "launch", "cuLaunchKernel", json!({"args": {"f": "0xf9"}, "func": "0xf9", "kernel": null, "grid": [1, 1, 1], "block": [1, 1, 1], "shared_mem": 0, "stream": "0x0", "params": "", "params_from": "layout"})); // 17
    r.call("kernel", "launch", "cuLaunchKernel", json!({"args": {"f": "0xf1"}, "func": "0xf1", "kernel": "k_struct", "grid": [1, 1, 1], "block": [1, 1, 1], "shared_mem": 0, "stream": "0x0"})); // 18
    r.call("kernel", "launch", "cuLaunchKernel", json!({"args": {"f": "0xf1"}, "func": "0xf1", "kernel": "k_struct", "grid": [1, 1, 1], "block": [1, 1, 1], "shared_mem": 0, "stream": "0x0", "params_error": "no layout known for the function handle"})); // 19
    r.call("memcpy", "copy", "cuMemcpyDtoHAsync_v2", json!({"ret": 0, "args": {"dstHost": "0x2000", "srcDevice": "0x7f0000200000", "ByteCount": 64, "hStream": "0x5000"}, "direction": "d2h", "dst": "0x2000", "src": "0x7f0000200000", "size": 64, "stream": "0x5000"})); // 20
    r.call(
        "sync",
        "stream_synchronize",
        "cuStreamSynchronize",
        json!({"ret": 0, "args": {"hStream": "0x5000"}, "stream": "0x5000"}),
    ); // 21
    r.call("memset", "set", "cuMemsetD8Async", json!({"ret": 0, "args": {"dstDevice": "0x7f0000000000", "uc": 0, "N": 4096, "hStream": "0x0"}, "dst": "0x7f0000000000", "size": 4096, "stream": "0x0"})); // 22
    r.call(
        "memory",
        "free",
        "cuMemFree_v2",
        json!({"ret": 0, "args": {"dptr": "0x7f0000000000"}, "ptr": "0x7f0000000000"}),
    ); // 23
    (r, cubin, fatbin, data)
}

#[test]
fn exact_plan_of_a_synthetic_recording() {
    let (r, cubin, fatbin, data) = build();
    let rec = Recording::open(&r.write()).unwrap();
    let p = plan::build(&rec.manifest, &rec.trace, "trace.jsonl").unwrap();
    replay::data_check::check(&rec, &p).unwrap();

    // Handle resolution: 0xa00/0xf1 are reused after the unload at line 13.
    assert_eq!(p.loads.len(), 2);
    assert_eq!(
        (p.loads[0].line, p.loads[0].image.as_deref(), p.loads[0].unloaded_line),
        (4, Some(cubin.as_str()), Some(13))
    );
    assert_eq!(
        (p.loads[1].line, p.loads[1].image.as_deref(), p.loads[1].unloaded_line),
        (14, Some(fatbin.as_str()), None)
    );
    let launches: Vec<(usize, usize, &str)> =
        p.ops.iter().filter_map(|o| o.launch().map(|l| (o.line, l.load, l.kernel.as_str()))).collect();
    assert_eq!(launches, vec![(9, 0, "k_pointers"), (12, 0, "k_pointers"), (16, 1, "k_struct")]);

    // Streams: the created one first (line 6), the legacy default stream when first used (line 8).
    assert_eq!(p.streams.len(), 2);
    assert_eq!((p.streams[0].kind, p.streams[0].handle, p.streams[0].flags), (StreamKind::Created, 0x5000, 1));
    assert_eq!(p.streams[1].kind, StreamKind::Legacy);
    let lines: Vec<usize> = p.ops.iter().map(|o| o.line).collect();
    assert_eq!(lines, vec![8, 9, 10, 11, 12, 16, 20, 21, 22]);
    assert_eq!(p.per_stream, vec![vec![3, 4, 5, 6, 7], vec![0, 1, 2, 8]]);

    // Dependencies: stream order, the event (line 9 -> 12), and the host sync (d2h at 20 -> memset at 22).
    let e = |from, to, kind| Edge { from, to, kind };
    assert_eq!(
        p.edges,
        vec![
            e(0, 1, EdgeKind::Stream),
            e(1, 4, EdgeKind::Event),
            e(4, 5, EdgeKind::Stream),
            e(5, 6, EdgeKind::Stream),
            e(1, 8, EdgeKind::Stream),
            e(6, 8, EdgeKind::HostSync),
        ]
    );

    // Address ranges and the windows to map (2 MiB granularity: one 4 MiB window).
    assert_eq!(p.ranges.len(), 2);
    assert_eq!(
        (p.ranges[0].start, p.ranges[0].size, p.ranges[0].kind, p.ranges[0].line, p.ranges[0].freed_line),
        (A, 4096, RangeKind::Device, 2, Some(23))
    );
    assert_eq!((p.ranges[1].start, p.ranges[1].size, p.ranges[1].freed_line), (B, 1 << 20, None));
    assert_eq!(plan::memory::windows(&p.ranges, 2 << 20), vec![(A, 4 << 20)]);

    // Relocation candidates: (line, offset, param, whole, value, range).
    let rel: Vec<(usize, u32, usize, bool, u64, usize)> =
        p.relocations.iter().map(|c| (c.line, c.offset, c.param, c.whole_param, c.value, c.range)).collect();
    assert_eq!(
        rel,
        vec![
            (9, 0, 0, true, B + 0x10, 1),
            (9, 8, 1, true, A, 0),
            (12, 0, 0, true, A + 8, 0),
            (12, 8, 1, true, B, 1),
            (16, 16, 1, false, A + 0x10, 0),
            (16, 40, 4, true, B + 0x100, 1),
        ]
    );

    // Launch details.
    let l16 = p.ops[5].launch().unwrap();
    assert_eq!((l16.grid, l16.block, l16.shared_mem, l16.params_len), ([1, 1, 1], [64, 1, 1], 128, 48));
    assert_eq!(l16.layout.as_ref().unwrap().params, vec![(0, 1), (8, 24), (32, 3), (36, 2), (40, 8)]);
    match &p.ops[0].kind {
        OpKind::Copy(c) => assert_eq!(
            (c.direction, c.size, c.is_async, c.data.as_deref()),
            (Direction::H2d, 4096, true, Some(data.as_str()))
        ),
        k => panic!("{k:?}"),
    }

    // Coverage and the reason of each skipped launch.
    let c = &p.coverage;
    assert_eq!((c.launches, c.launches_replayed), (6, 3));
    let skipped: Vec<(usize, &str)> = c.skipped.iter().map(|s| (s.line, s.reason.as_str())).collect();
    assert_eq!(
        skipped,
        vec![
            (17, "unknown function handle 0xf9 (not created in the recording)"),
            (18, "no params recorded"),
            (19, "params not captured: no layout known for the function handle"),
        ]
    );
    assert_eq!(
        (c.copies, c.copies_replayed, c.h2d_with_data, c.h2d_filled, c.sets, c.sets_replayed),
        (2, 2, 1, 0, 1, 1)
    );
    assert_eq!(c.host_pageable, 2); // 0x1000 and 0x2000: no pinned range recorded there
    assert!((c.percent() - 50.0).abs() < 1e-9);
    assert!(p.warnings.is_empty(), "{:?}", p.warnings);
}

#[test]
fn legacy_default_stream_synchronizes_with_blocking_streams() {
    let mut r = Rec::new();
    r.cubin_function("k_noparams");
    r.call(
        "stream",
        "stream_create",
        "cuStreamCreate",
        json!({"ret": 0, "args": {"phStream": "0x5000", "Flags": "0x0"}}),
    );
    r.call(
        "stream",
        "stream_create",
        "cuStreamCreate",
        json!({"ret": 0, "args": {"phStream": "0x6000", "Flags": "0x1"}}),
    );
    for s in ["0x5000", "0x6000", "0x0", "0x5000"] {
        r.call("kernel", "launch", "cuLaunchKernel", json!({"func": "0xf1", "kernel": "k_noparams", "grid": [1, 1, 1], "block": [1, 1, 1], "shared_mem": 0, "stream": s, "params": "", "params_from": "layout"}));
    }
    let rec = Recording::open(&r.write()).unwrap();
    let p = plan::build(&rec.manifest, &rec.trace, "trace.jsonl").unwrap();
    // op0 on the blocking stream, op1 on the non-blocking one, op2 on legacy, op3 on the blocking stream.
    let e = |from, to, kind| Edge { from, to, kind };
    assert_eq!(
        p.edges,
        vec![e(0, 2, EdgeKind::LegacyDefault), e(0, 3, EdgeKind::Stream), e(2, 3, EdgeKind::LegacyDefault)]
    );
    assert_eq!(p.coverage.launches_replayed, 4);
}

/// The CUDA 13 runtime's cudaDeviceSynchronize calls cuCtxSynchronize_v2 (through
/// cuGetProcAddress): a synchronization of every stream, as cuCtxSynchronize, not a call
/// replay skips (it did until 2026-11-27: the replay then paced the next launch by the
/// recorded wait instead of waiting for its own GPU).
#[test]
fn cu_ctx_synchronize_v2_is_a_context_synchronization() {
    let (mut r, ..) = build();
    r.call(
        "sync",
        "ctx_synchronize",
        "cuCtxSynchronize_v2",
        json!({"ret": 0, "args": {"ctx": "0x0"}, "duration_us": 5.0}),
    ); // 24
    r.call("sync", "ctx_synchronize", "cuCtxSynchronize", json!({"ret": 0, "args": {}, "duration_us": 5.0})); // 25
    let rec = Recording::open(&r.write()).unwrap();
    let p = plan::build(&rec.manifest, &rec.trace, "trace.jsonl").unwrap();
    let syncs: Vec<(usize, Option<u64>)> =
        p.ops.iter().filter(|o| matches!(o.kind, OpKind::CtxSync)).map(|o| (o.line, o.duration_ns)).collect();
    assert_eq!(syncs, vec![(24, Some(5_000)), (25, Some(5_000))]);
}

/// Entry points a later CUDA may version (`_v2`, `_v3`) or call with a per-thread
/// default stream (`_ptsz`) are planned by their base name; calls that change what the GPU
/// does and that replay does not run are counted with their reason, never dropped.
#[test]
fn versioned_calls_are_planned_and_unreplayed_ones_are_counted() {
    let (mut r, ..) = build();
    let sync =
        |name: &str, args: serde_json::Value| (name.to_owned(), json!({"ret": 0, "args": args, "duration_us": 2.0}));
    for (name, v) in [
        sync("cuStreamSynchronize_v2", json!({"hStream": "0x5000"})), // 24
        sync("cuEventSynchronize_v3", json!({"hEvent": "0xe1"})),     // 25
        sync("cuCtxSynchronize_v2_ptsz", json!({"ctx": "0x0"})),      // 26
    ] {
        r.call("sync", "synchronize", &name, v);
    }
    r.call("event", "ctx_wait_event", "cuCtxWaitEvent", json!({"ret": 0, "args": {"hCtx": "0x0", "hEvent": "0xe1"}})); // 27
    r.call(
        "stream",
        "write_value",
        "cuStreamWriteValue32_v2",
        json!({"ret": 0, "args": {"stream": "0x0", "addr": "0x7f0000200000", "value": 1, "flags": "0x0"}}),
    ); // 28
    r.call(
        "kernel",
        "host_func",
        "cuLaunchHostFunc_ptsz",
        json!({"ret": 0, "args": {"hStream": "0x0", "fn_": "0x1", "userData": "0x0"}}),
    ); // 29
    let rec = Recording::open(&r.write()).unwrap();
    let p = plan::build(&rec.manifest, &rec.trace, "trace.jsonl").unwrap();
    let syncs: Vec<(usize, &str)> = p
        .ops
        .iter()
        .filter_map(|o| match o.kind {
            OpKind::StreamSync => Some((o.line, "stream")),
            OpKind::EventSync { .. } => Some((o.line, "event")),
            OpKind::CtxSync => Some((o.line, "context")),
            _ => None,
        })
        .filter(|(l, _)| *l >= 24)
        .collect();
    assert_eq!(syncs, vec![(24, "stream"), (25, "event"), (26, "context")]);
    let skipped: Vec<(usize, &str)> =
        p.coverage.other_skipped.iter().filter(|s| s.line >= 24).map(|s| (s.line, s.reason.as_str())).collect();
    assert_eq!(
        skipped,
        vec![
            (
                27,
                "context-wide event record/wait (cuCtxRecordEvent, cuCtxWaitEvent) not replayed: the order it imposed is lost"
            ),
            (28, "stream memory operation (wait/write value, batch) not replayed"),
            (29, "host function on a stream (the program's code) not replayed: its stream did not wait for it"),
        ]
    );
    let text = p.coverage.text(3);
    assert!(
        text.contains(
            "  not replayed 1: stream memory operation (wait/write value, batch) not replayed (first at line 28)"
        ),
        "{text}"
    );
}
