//! The fast copy/set/cuLaunchKernelEx lines (fastcall.rs) against the
//! general path: the same bytes, the same summary and counts, on hand-built
//! records and on the records behind every call line of every committed
//! recording (rebuilt from the line: arguments, captured strings, the launch
//! config's bytes, out-parameters, the return).
use std::path::Path;

use serde_json::Value;
use tracer_common::decode::Record;
use tracer_common::event::{CallExit, EventKind, Header, MAX_ARGS};
use tracer_common::funcs::{Arg, FuncId, lookup};

use crate::decode::calls::Assembler;
use crate::decode::fastline::Line;

/// One call's records, owned (Record borrows its strings and blobs).
struct Call {
    hdr: Header,
    args: [u64; MAX_ARGS],
    string: Option<Vec<u8>>,
    blob: Option<Vec<u8>>,
    nattrs: u32,
    exit: Option<CallExit>,
}

impl Call {
    fn records(&self) -> Vec<Record<'_>> {
        let mut v = Vec::new();
        if self.hdr.kind != 0 {
            v.push(Record::Enter {
                hdr: self.hdr,
                args: self.args,
                string: self.string.as_deref(),
                string_truncated: false,
                blob: self.blob.as_deref(),
                nattrs: self.nattrs,
                params: None,
            });
        }
        if let Some(x) = self.exit {
            v.push(Record::Exit { x, string: None, string_truncated: false });
        }
        v
    }
}

struct Out {
    bytes: Vec<Vec<u8>>,
    summary: String,
    stats: crate::decode::calls::AssemblyStats,
    fast: usize,
}

fn run(calls: &[Call], reference: bool, entry_only: &dyn Fn(FuncId) -> bool) -> Out {
    let mut a = Assembler::default();
    a.reference_lines = reference;
    a.set_entry_only(entry_only);
    let mut sum = crate::analysis::summary::Summary::default();
    let (mut bytes, mut fast) = (Vec::new(), 0);
    let mut out = |l: Line| {
        sum.add_line(&l);
        fast += matches!(l, Line::Call(_)) as usize;
        let mut b = Vec::new();
        match &l {
            Line::Value(v) => serde_json::to_writer(&mut b, v).unwrap(),
            Line::Launch(x) => x.write(&mut b),
            Line::Call(x) => x.write(&mut b),
        }
        bytes.push(b);
    };
    for c in calls {
        for r in c.records() {
            a.push(&r, &mut out);
        }
    }
    a.finish(&mut out);
    Out { bytes, summary: sum.render(), stats: a.stats.clone(), fast }
}

/// Both paths; returns the fast path's lines and how many took it.
fn same_both_ways(calls: &[Call], entry_only: &dyn Fn(FuncId) -> bool) -> (Vec<Value>, usize) {
    let fast = run(calls, false, entry_only);
    let reference = run(calls, true, entry_only);
    assert_eq!(reference.fast, 0);
    assert_eq!(fast.bytes.len(), reference.bytes.len());
    for (f, r) in fast.bytes.iter().zip(&reference.bytes) {
        assert_eq!(String::from_utf8_lossy(f), String::from_utf8_lossy(r));
    }
    assert_eq!(fast.summary, reference.summary);
    assert_eq!(fast.stats, reference.stats);
    (fast.bytes.iter().map(|b| serde_json::from_slice(b).unwrap()).collect(), fast.fast)
}

fn hdr(kind: EventKind, func: FuncId, ts: u64, cpu: u32, seq: u64) -> Header {
    Header { kind: kind as u16, func: func.0, cpu, seq, ts, pid: 100, tid: 101 }
}

fn call(name: &str, ts: u64, args: &[u64], ret: Option<u64>) -> Call {
    let id = lookup(name).unwrap();
    let mut a = [0u64; MAX_ARGS];
    a[..args.len()].copy_from_slice(args);
    Call {
        hdr: hdr(EventKind::CallEnter, id, ts, 1, ts),
        args: a,
        string: None,
        blob: None,
        nattrs: 0,
        exit: ret.map(|r| CallExit {
            hdr: hdr(EventKind::CallExit, id, ts + 1234, 2, ts + 1),
            ret: r,
            out: [0; 2],
            out_ok: 0,
            flags: 0,
        }),
    }
}

/// CUlaunchConfig bytes (cuda.h layout) with its attributes.
fn config_bytes(grid: [u32; 3], block: [u32; 3], shared: u32, stream: u64, attrs: &[(u32, [u32; 4])]) -> Vec<u8> {
    let mut b = vec![0u8; 56 + 72 * attrs.len()];
    for (i, v) in grid.iter().chain(&block).chain(std::iter::once(&shared)).enumerate() {
        b[4 * i..4 * i + 4].copy_from_slice(&v.to_le_bytes());
    }
    b[32..40].copy_from_slice(&stream.to_le_bytes());
    b[48..52].copy_from_slice(&(attrs.len() as u32).to_le_bytes());
    for (k, (id, words)) in attrs.iter().enumerate() {
        let off = 56 + 72 * k;
        b[off..off + 4].copy_from_slice(&id.to_le_bytes());
        for (j, w) in words.iter().enumerate() {
            b[off + 8 + 4 * j..off + 12 + 4 * j].copy_from_slice(&w.to_le_bytes());
        }
    }
    b
}

#[test]
fn hand_built_copies_sets_and_launch_ex() {
    let mut name_k = call("cuModuleGetFunction", 1, &[0x10, 0x20, 0x30], Some(0));
    name_k.string = Some("k<\"q\">é".as_bytes().to_vec());
    if let Some(x) = name_k.exit.as_mut() {
        (x.out, x.out_ok) = ([0xf1, 0], 1);
    }
    let mut alloc = call("cuMemAlloc_v2", 2, &[0x7ffe00, 4096], Some(0));
    if let Some(x) = alloc.exit.as_mut() {
        (x.out, x.out_ok) = ([0x10_0000, 0], 1);
    }
    let mut ex = call("cuLaunchKernelEx", 30, &[0x7000, 0xf1, 0x8, 0x9], Some(0));
    ex.blob = Some(config_bytes(
        [8, 9, 1],
        [384, 1, 1],
        164_308,
        0x55,
        &[(4, [8, 1, 1, 7]), (2, [u32::MAX, 0, 0, 0]), (99, [1, 2, 3, 4])],
    ));
    ex.nattrs = 3;
    let mut ex_unparsed = call("cuLaunchKernelEx", 31, &[0x7000, 0xdead, 0, 0], Some(0));
    ex_unparsed.blob = Some(vec![1, 2, 3]);
    let calls = vec![
        name_k,
        alloc,
        call("cuMemcpyHtoDAsync_v2", 10, &[0x10_0000, 0x5555, 4096, 0x77], Some(0)),
        call("cuMemcpyDtoH_v2", 11, &[0x5555, 0x10_0000, 64], Some(0)),
        call("cuMemcpyDtoDAsync_v2_ptsz", 12, &[0x10_0000, 0x10_0040, 1, 0], Some(0)),
        // Unified addressing: the direction from the allocation seen.
        call("cuMemcpyAsync", 13, &[0x10_0010, 0x9999, 8, 0x77], Some(0)),
        call("cuMemcpy", 14, &[0x9999, 0x8888, 8], Some(0)),
        call("cuMemcpyPeerAsync", 15, &[0x1, 0x2, 0x3, 0x4, 5, 0x6], Some(0)),
        call("cuMemsetD8Async", 16, &[0x10_0000, 0, 25_344, 0x77], Some(0)),
        call("cuMemsetD32_v2", 17, &[0x10_0000, u32::MAX as u64, 10], Some(0)),
        call("cuMemsetD2D16Async", 18, &[0x10_0000, 512, 7, 100, 3, 0], Some(0)),
        ex,
        ex_unparsed,
        call("cuLaunchKernelEx", 32, &[0x7000, 0xf1, 0, 0], Some(0)), // config not read
        call("cuLaunchKernelEx", 33, &[0, 0xf1, 0, 0], Some(0)),      // null config
        // The general path: failures, 2-D copies, calls that never returned.
        call("cuMemcpyHtoD_v2", 40, &[0x10_0000, 0x5555, 64], Some(1)),
        call("cuMemcpy2D_v2", 41, &[0x1234], Some(0)),
        call("cuMemsetD8_v2", 42, &[0x10_0000, 1, 2], None),
    ];
    let none = |_: FuncId| false;
    let (v, fast) = same_both_ways(&calls, &none);
    assert_eq!(fast, 13);
    assert_eq!(v.len(), 18);
    assert_eq!(v[2]["direction"], "h2d");
    assert_eq!(v[2]["duration_us"], 1.234);
    assert_eq!(v[3]["direction"], "d2h");
    // An unknown pointer next to a device one counts as host memory.
    assert_eq!(v[5]["direction"], "h2d");
    assert_eq!(v[6]["direction"], "default");
    assert_eq!(v[7]["direction"], "peer");
    assert_eq!(
        (v[8]["size"].as_u64(), v[9]["size"].as_u64(), v[10]["size"].as_u64()),
        (Some(25_344), Some(40), Some(600))
    );
    assert_eq!(v[9]["args"]["ui"], u32::MAX);
    let x = &v[11];
    assert_eq!(x["kernel"], "k<\"q\">é");
    assert_eq!((x["grid"].clone(), x["stream"].clone()), (serde_json::json!([8, 9, 1]), "0x55".into()));
    assert_eq!(x["args"]["config"]["attrs"][1]["value"], -1);
    assert_eq!(x["args"]["config"]["attrs"][2]["value"], serde_json::json!([1, 2, 3, 4]));
    assert_eq!(v[12]["args"]["config"], Value::Null);
    assert_eq!(v[13]["args"]["config"]["unreadable"], "0x7000");
    assert!(v[13].get("grid").is_none() && v[13].get("stream").is_none());
    assert_eq!(v[14]["args"]["config"], Value::Null);
    assert_eq!(v[15]["error"], "CUDA_ERROR_INVALID_VALUE");
    assert_eq!(v[17]["incomplete"], true);
    // Entry-only (launches by default; here everything): no ret, no duration.
    let all = |_: FuncId| true;
    let mut calls = calls;
    for c in &mut calls {
        c.exit = None;
    }
    let (v, fast) = same_both_ways(&calls, &all);
    assert_eq!((fast, v.len()), (15, 18), "all copies, sets and launches but the 2-D copy");
    assert!(v.iter().all(|l| l.get("ret").is_none() && l.get("duration_us").is_none()));
}

/// The records behind a trace line (the inverse of the assembler, as far as
/// a line tells).
fn call_from_line(l: &Value) -> Option<Call> {
    let name = l["name"].as_str()?;
    let id = lookup(name)?;
    let spec = id.spec()?;
    let num = |v: &Value| -> u64 {
        match v {
            Value::String(s) => u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap_or(0),
            Value::Number(n) => n.as_u64().or(n.as_i64().map(|i| i as u64)).unwrap_or(0),
            Value::Object(o) => o.get("unreadable").map_or(0, |u| {
                u64::from_str_radix(u.as_str().unwrap_or("0").trim_start_matches("0x"), 16).unwrap_or(0)
            }),
            _ => 0,
        }
    };
    let mut c = Call {
        hdr: Header { kind: 0, func: id.0, cpu: 0, seq: 0, ts: 0, pid: 0, tid: 0 },
        args: [0; MAX_ARGS],
        string: None,
        blob: None,
        nattrs: 0,
        exit: None,
    };
    let (pid, tid, ts) = (l["pid"].as_u64()? as u32, l["tid"].as_u64().unwrap_or(0) as u32, l["ts"].as_u64()?);
    let (mut out, mut ok, mut slot) = ([0u64; 2], 0u32, 0);
    if let Some(args) = l["args"].as_object() {
        c.hdr = Header {
            kind: EventKind::CallEnter as u16,
            func: id.0,
            cpu: l["cpu"].as_u64()? as u32,
            seq: l["seq"].as_u64()?,
            ts,
            pid,
            tid,
        };
        for (i, p) in spec.params.iter().enumerate().take(MAX_ARGS) {
            let v = &args[p.name.trim_end_matches('_')];
            if p.kind.is_out() {
                if !v.is_null() && slot < 2 {
                    (out[slot], ok) = (num(v), ok | 1 << slot);
                }
                slot += 1;
                continue;
            }
            match p.kind {
                Arg::Str => {
                    c.string = v.as_str().map(|s| s.as_bytes().to_vec());
                    c.args[i] = if v.is_null() { 0 } else { 0x1000 };
                }
                Arg::LaunchConfig if v.is_object() && v.get("gridDim").is_some() => {
                    let d3 = |k: &str| -> [u32; 3] { std::array::from_fn(|j| v[k][j].as_u64().unwrap_or(0) as u32) };
                    let attrs: Vec<(u32, [u32; 4])> = v["attrs"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|a| {
                            let w = match &a["value"] {
                                Value::Array(x) => std::array::from_fn(|j| x.get(j).map_or(0, |e| num(e) as u32)),
                                x => [num(x) as u32, 0, 0, 0],
                            };
                            (a["id"].as_u64().unwrap_or(0) as u32, w)
                        })
                        .collect();
                    c.blob = Some(config_bytes(
                        d3("gridDim"),
                        d3("blockDim"),
                        v["sharedMemBytes"].as_u64().unwrap_or(0) as u32,
                        num(&v["hStream"]),
                        &attrs,
                    ));
                    c.nattrs = attrs.len() as u32;
                    c.args[i] = 0x2000;
                }
                _ => c.args[i] = num(v),
            }
        }
    }
    if let Some(ret) = l["ret"].as_u64() {
        let dur = (l["duration_us"].as_f64().unwrap_or(0.0) * 1000.0).round() as u64;
        let xts = if c.hdr.kind == 0 { ts } else { ts + dur };
        c.exit = Some(CallExit {
            hdr: Header {
                kind: EventKind::CallExit as u16,
                func: id.0,
                cpu: l["exit_cpu"].as_u64().unwrap_or(0) as u32,
                seq: l["exit_seq"].as_u64().unwrap_or(0),
                ts: xts,
                pid,
                tid,
            },
            ret,
            out,
            out_ok: ok,
            flags: 0,
        });
    }
    Some(c)
}

#[test]
fn every_committed_recording_gives_the_same_lines_both_ways() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../traces");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".jsonl.gz"))
        .collect();
    files.sort();
    assert_eq!(files.len(), 9);
    let mut fast_by_file = Vec::new();
    for p in &files {
        let mut calls = Vec::new();
        let mut entry_only: Vec<String> = Vec::new();
        let (mut copies, mut sets, mut ex) = (0, 0, 0);
        tracer_format::read::for_each(p, |l| {
            if l["type"] == "header" {
                entry_only = l["entry_only_functions"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|s| s.as_str().map(String::from))
                    .collect();
            }
            if let Some(c) = call_from_line(l) {
                match (l["type"].as_str(), l["name"].as_str()) {
                    (Some("memcpy"), _) => copies += 1,
                    (Some("memset"), _) => sets += 1,
                    (_, Some("cuLaunchKernelEx")) => ex += 1,
                    _ => {}
                }
                calls.push(c);
            }
        })
        .unwrap();
        let eo = |id: FuncId| entry_only.iter().any(|n| lookup(n) == Some(id));
        let (_, fast) = same_both_ways(&calls, &eo);
        // Every copy, set and cuLaunchKernelEx of these recordings is a plain one.
        assert_eq!(fast, copies + sets + ex, "{}", p.display());
        fast_by_file.push((p.file_name().unwrap().to_string_lossy().into_owned(), fast));
    }
    let get = |n: &str| fast_by_file.iter().find(|(f, _)| f == n).map(|x| x.1);
    assert_eq!(get("simple_inference.jsonl.gz"), Some(44 + 1 + 9 + 44));
    assert_eq!(get("transformer_inference.jsonl.gz"), Some(5760 + 736 + 168 + 160 + 50));
}
