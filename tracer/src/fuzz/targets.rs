//! The fuzz targets: every reader and parser of tracer, with seeds and
//! structure-aware generators. See the module above for the loop.
use std::io::Read as _;
use std::mem::{offset_of, size_of};
use std::path::Path;
use std::sync::OnceLock;

use serde_json::{Value, json};
use tracer_common::decode;
use tracer_common::event::{
    CallEnter, CallEnterBlob, CallEnterStr, CallExit, CallExitStr, EventKind, Header, IoctlEnter, IoctlExit, NvFileOp,
    ProcExec, ProcExit, ProcFork, nvdev,
};
use tracer_common::funcs::{FUNCS, FuncId};

use super::{Rng, Target, default_budget, fuzz, seconds};
use crate::analysis::{ioctl_report, summary};
use crate::collect::libcuda;
use crate::decode::calls;
use crate::decode::nvioctl::{self, Device};
use tracer_format::read as reader;

// ---------------------------------------------------------------------------
// JSONL traces: tracer_format::read, analysis/summary.rs, analysis/ioctl_report.rs
// ---------------------------------------------------------------------------

/// What `tracer summary` and `tracer ioctls` do with a trace's bytes.
fn run_trace(bytes: &[u8]) -> String {
    let mut s = summary::Summary::default();
    let mut lines = Vec::new();
    let r = reader::for_each_in(bytes, "fuzz.jsonl", reader::MAX_LINE_BYTES, |v| {
        s.add(v);
        lines.push(v.clone());
    });
    let report = ioctl_report::IoctlReport::build(&lines);
    let _ = report.render();
    let _ = serde_json::to_string(&report.to_json()).unwrap();
    let _ = s.render();
    match r {
        Ok(st) => format!("ok {} lines partial {:?} ioctls {}", st.lines, st.partial_line.is_some(), report.total),
        Err(e) => e.to_string(),
    }
}

fn run_trace_gz(bytes: &[u8]) -> String {
    // What reader::open does for .gz files.
    let mut d = flate2::read::MultiGzDecoder::new(bytes);
    // Small inputs only: a decompression bomb is bounded by reading in pieces.
    let mut out = Vec::new();
    match (&mut d).take(1 << 20).read_to_end(&mut out) {
        Ok(_) => run_trace(&out),
        Err(e) => format!("gzip: {e}"),
    }
}

fn run_trace_zst(bytes: &[u8]) -> String {
    // What reader::open does for .zst files (bounded window, cut streams end).
    let mut d = match tracer_format::read::zst::bounded_decoder(bytes, "fuzz".into()) {
        Ok(d) => d,
        Err(e) => return format!("zstd: {e}"),
    };
    let mut out = Vec::new();
    match (&mut d).take(1 << 20).read_to_end(&mut out) {
        Ok(_) => run_trace(&out),
        Err(e) => format!("zstd: {e}"),
    }
}

/// Lines of the committed traces: the header, the footer, and the first line
/// of every (type, op, name) seen in the first 20,000 lines.
fn trace_seeds() -> Vec<Vec<u8>> {
    static SEEDS: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    SEEDS
        .get_or_init(|| {
            let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../traces");
            let mut seeds = Vec::new();
            let mut files: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().map(|e| e.path()).collect();
            files.sort();
            for p in files.into_iter().filter(|p| p.to_string_lossy().ends_with(".jsonl.gz")) {
                let mut text = String::new();
                flate2::read::MultiGzDecoder::new(std::fs::File::open(&p).unwrap()).read_to_string(&mut text).unwrap();
                let all: Vec<&str> = text.lines().collect();
                let mut kinds = std::collections::HashSet::new();
                let mut picked = vec![all[0]];
                for l in all.iter().take(20_000) {
                    let v: Value = serde_json::from_str(l).unwrap();
                    let k = format!("{}/{}/{}", v["type"], v["op"], v["name"]);
                    if kinds.insert(k) {
                        picked.push(l);
                    }
                }
                picked.push(all[all.len() - 1]);
                // One seed per trace with every kind of line, and small ones.
                seeds.push((picked.join("\n") + "\n").into_bytes());
                for chunk in picked.chunks(8) {
                    seeds.push((chunk.join("\n") + "\n").into_bytes());
                }
            }
            assert!(seeds.len() >= 8, "no traces found in {}", dir.display());
            seeds
        })
        .clone()
}

/// A JSON value meant to break a consumer that trusts field types and ranges.
fn hostile_value(rng: &mut Rng) -> Value {
    match rng.below(22) {
        0 => json!(u64::MAX),
        1 => json!(u64::MAX - 1),
        2 => json!(i64::MIN),
        3 => json!(-1),
        4 => json!(1e308),
        5 => json!(-1e308),
        6 => json!(f64::MIN_POSITIVE),
        7 => json!(0.5),
        8 => json!(""),
        9 => json!("x".repeat(rng.below(5000))),
        10 => Value::Null,
        11 => json!(true),
        12 => json!([]),
        13 => json!({}),
        14 => json!(rng.interesting()),
        15 => json!(1u64 << 60),
        16 => json!(["a", 1, null]),
        17 => json!({"cmd_name": 1, "class": [], "class_name": null}),
        18 => json!("\u{0}\u{ffff}é漢"),
        19 => json!(
            [
                "header",
                "footer",
                "process",
                "ioctl",
                "nvidia_fd",
                "kernel",
                "memcpy",
                "memory",
                "sync",
                "module",
                "graph"
            ][rng.below(11)]
        ),
        20 => json!(
            [
                "launch",
                "alloc",
                "free",
                "graph_launch",
                "module_load_data",
                "copy",
                "RM_CONTROL",
                "RM_ALLOC",
                "open",
                "mmap"
            ][rng.below(10)]
        ),
        _ => json!(rng.next() as f64 / 3.0),
    }
}

/// JSON-aware mutation: change, add or drop fields of some lines, repeat
/// lines, shuffle them.
fn mutate_trace(rng: &mut Rng, bytes: &[u8]) -> Option<Vec<u8>> {
    let text = std::str::from_utf8(bytes).ok()?;
    let mut lines: Vec<Value> = text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    if lines.is_empty() {
        return None;
    }
    const KEYS: &[&str] = &[
        "ts",
        "pid",
        "tid",
        "type",
        "op",
        "name",
        "duration_us",
        "size",
        "ret",
        "error",
        "kernel",
        "direction",
        "incomplete",
        "known",
        "status",
        "errno",
        "cuda_call",
        "fields",
        "nr",
        "device",
        "status_name",
    ];
    for _ in 0..1 + rng.below(6) {
        let i = rng.below(lines.len());
        match rng.below(10) {
            0 if lines.len() < 400 => {
                let l = lines[i].clone();
                for _ in 0..1 + rng.below(50) {
                    lines.push(l.clone());
                }
            }
            1 => {
                let j = rng.below(lines.len());
                lines.swap(i, j);
            }
            2 => {
                if let Some(o) = lines[i].as_object_mut() {
                    let k = KEYS[rng.below(KEYS.len())];
                    o.remove(k);
                }
            }
            3 => {
                if let Some(f) = lines[i].get_mut("fields").and_then(Value::as_object_mut) {
                    let k = ["cmd_name", "cmd", "class", "class_name", "hClient"][rng.below(5)];
                    f.insert(k.into(), hostile_value(rng));
                }
            }
            _ => {
                let v = hostile_value(rng);
                if let Some(o) = lines[i].as_object_mut() {
                    let k = KEYS[rng.below(KEYS.len())];
                    o.insert(k.into(), v);
                }
            }
        }
    }
    let mut out = Vec::new();
    for l in &lines {
        serde_json::to_writer(&mut out, l).ok()?;
        out.push(b'\n');
    }
    if rng.chance(10) {
        out.truncate(rng.below(out.len() + 1));
    }
    Some(out)
}

fn gz(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write as _;
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

fn trace_gz_seeds() -> Vec<Vec<u8>> {
    trace_seeds().iter().take(6).map(|s| gz(s)).collect()
}

fn mutate_trace_gz(rng: &mut Rng, bytes: &[u8]) -> Option<Vec<u8>> {
    let mut plain = Vec::new();
    flate2::read::MultiGzDecoder::new(bytes).take(1 << 20).read_to_end(&mut plain).ok()?;
    Some(gz(&mutate_trace(rng, &plain)?))
}

pub const TRACE: Target = Target {
    name: "trace_jsonl",
    run: run_trace,
    seeds: trace_seeds,
    generate: None,
    mutate: Some(mutate_trace),
    budget: default_budget,
};

fn zst(bytes: &[u8]) -> Vec<u8> {
    zstd::stream::encode_all(bytes, crate::collect::zstd_out::LEVEL).unwrap()
}

fn trace_zst_seeds() -> Vec<Vec<u8>> {
    trace_seeds().iter().take(6).map(|s| zst(s)).collect()
}

/// A mutated trace, compressed; or the compressed bytes themselves mutated.
fn mutate_trace_zst(rng: &mut Rng, bytes: &[u8]) -> Option<Vec<u8>> {
    if rng.chance(3) {
        let mut b = bytes.to_vec();
        for _ in 0..1 + rng.below(4) {
            if !b.is_empty() {
                let i = rng.below(b.len());
                b[i] ^= 1 << rng.below(8);
            }
        }
        if rng.chance(4) {
            b.truncate(rng.below(b.len() + 1));
        }
        return Some(b);
    }
    let mut plain = Vec::new();
    zstd::stream::read::Decoder::new(bytes).ok()?.take(1 << 20).read_to_end(&mut plain).ok()?;
    Some(zst(&mutate_trace(rng, &plain)?))
}

pub const TRACE_ZST: Target = Target {
    name: "trace_jsonl_zst",
    run: run_trace_zst,
    seeds: trace_zst_seeds,
    generate: None,
    mutate: Some(mutate_trace_zst),
    // Up to 1 MiB decompressed, a window of at most 16 MiB and its buffers.
    budget: |len| default_budget(len) + 128 * (1 << 20),
};

pub const TRACE_GZ: Target = Target {
    name: "trace_jsonl_gz",
    run: run_trace_gz,
    seeds: trace_gz_seeds,
    generate: None,
    mutate: Some(mutate_trace_gz),
    // Up to 1 MiB decompressed, whatever the input's length.
    budget: |len| default_budget(len) + 96 * (1 << 20),
};

// ---------------------------------------------------------------------------
// Ring-buffer records: tracer-common decode, then the assembler (calls.rs,
// args.rs, ioctls.rs, nvioctl) and the summary, as the collector does
// ---------------------------------------------------------------------------

/// Input: records, each as a little-endian u16 length and that many bytes.
fn split_records(bytes: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut rest = bytes;
    while rest.len() >= 2 {
        let n = u16::from_le_bytes([rest[0], rest[1]]) as usize;
        let body = &rest[2..];
        let n = n.min(body.len());
        out.push(&body[..n]);
        rest = &body[n..];
    }
    out
}

fn run_records(bytes: &[u8]) -> String {
    let mut asm = calls::Assembler::with_string_reader(Box::new(|_, addr| (addr % 3 == 0).then(|| "s".repeat(9))));
    asm.ioctls = crate::decode::ioctls::Ioctls::new("tracepoint");
    let mut s = summary::Summary::default();
    let mut out = Vec::new();
    let mut kinds = 0u32;
    let mut errors = std::collections::BTreeSet::new();
    for r in split_records(bytes) {
        match decode::parse(r) {
            Ok(rec) => {
                kinds |= 1 << (u16::from_le_bytes([r[0], r[1]]) & 31);
                asm.push(&rec, &mut |l| {
                    s.add_line(&l);
                    out.clear();
                    match &l {
                        crate::decode::fastline::Line::Value(v) => serde_json::to_writer(&mut out, v).unwrap(),
                        crate::decode::fastline::Line::Launch(x) => x.write(&mut out),
                        crate::decode::fastline::Line::Call(x) => x.write(&mut out),
                    }
                });
            }
            Err(e) => {
                errors.insert(match e {
                    decode::DecodeError::Short { kind, .. } => format!("short {kind}"),
                    decode::DecodeError::UnknownKind(_) => "unknown".into(),
                });
            }
        }
    }
    asm.finish(&mut |l| s.add_line(&l));
    let _ = s.render();
    format!("kinds {kinds:#x} errors {errors:?}")
}

fn put(buf: &mut [u8], off: usize, bytes: &[u8]) {
    let end = (off + bytes.len()).min(buf.len());
    if off < end {
        buf[off..end].copy_from_slice(&bytes[..end - off]);
    }
}

fn gen_header(rng: &mut Rng, buf: &mut [u8], kind: u16, func: u16, tid: u32) {
    put(buf, offset_of!(Header, kind), &kind.to_le_bytes());
    put(buf, offset_of!(Header, func), &func.to_le_bytes());
    put(buf, offset_of!(Header, cpu), &(rng.below(4) as u32).to_le_bytes());
    if rng.chance(80) {
        put(buf, offset_of!(Header, ts), &(1_000_000 + rng.below(1_000_000) as u64).to_le_bytes());
    }
    put(buf, offset_of!(Header, pid), &(if rng.chance(90) { 100u32 } else { 200 }).to_le_bytes());
    put(buf, offset_of!(Header, tid), &tid.to_le_bytes());
}

fn any_func(rng: &mut Rng) -> u16 {
    if rng.chance(90) { FuncId::new(rng.below(FUNCS.len()), rng.below(3)).0 } else { rng.next() as u16 }
}

/// Offsets of the length fields of the record types (where a trusting
/// decoder would go wrong).
fn gen_record(rng: &mut Rng, last_enter: &mut Option<(u16, u32)>) -> Vec<u8> {
    let kind = if rng.chance(95) { 1 + rng.below(15) as u16 } else { rng.next() as u16 };
    let size = match EventKind::from_u16(kind) {
        Some(EventKind::CallEnter) => size_of::<CallEnter>(),
        Some(EventKind::CallEnterStr) => size_of::<CallEnterStr>(),
        Some(EventKind::CallEnterBlob) => size_of::<CallEnterBlob>(),
        Some(EventKind::CallExit) => size_of::<CallExit>(),
        Some(EventKind::CallExitStr) => size_of::<CallExitStr>(),
        Some(EventKind::ProcFork) => size_of::<ProcFork>(),
        Some(EventKind::ProcExec) => size_of::<ProcExec>(),
        Some(EventKind::ProcExit) => size_of::<ProcExit>(),
        Some(EventKind::IoctlEnter) => size_of::<IoctlEnter>(),
        Some(EventKind::IoctlExit) => size_of::<IoctlExit>(),
        Some(EventKind::NvFileOp) => size_of::<NvFileOp>(),
        Some(EventKind::SchedSwitch) => size_of::<tracer_common::event::SchedSwitch>(),
        Some(EventKind::SchedWaking) => size_of::<tracer_common::event::SchedWaking>(),
        // Variable length: the fixed part and up to 256 parameter bytes.
        Some(EventKind::LaunchParams) => tracer_common::params::PARAMS_OFFSET + rng.below(257),
        // Variable length: the fixed part and up to PY_CAP Python frames.
        Some(EventKind::Stack) => tracer_common::stack::stack_rec_len(rng.below(tracer_common::stack::PY_CAP + 1)),
        None => rng.below(128),
    };
    let size = match rng.below(20) {
        0 => rng.below(size + 1),
        1 => size + rng.below(64),
        _ => size,
    };
    let mut b = if rng.chance(50) { rng.bytes(size) } else { vec![0u8; size] };
    let tid = 100 + rng.below(3) as u32;
    let (func, tid) = match (EventKind::from_u16(kind), *last_enter) {
        (Some(EventKind::CallExit | EventKind::CallExitStr), Some((f, t))) if rng.chance(70) => (f, t),
        _ => (any_func(rng), tid),
    };
    gen_header(rng, &mut b, kind, func, tid);
    let len32 = |rng: &mut Rng| -> [u8; 4] { (rng.interesting() as u32).to_le_bytes() };
    match EventKind::from_u16(kind) {
        Some(EventKind::CallEnter | EventKind::CallEnterStr | EventKind::CallEnterBlob) => {
            *last_enter = Some((func, tid));
            // Arguments: handles the assembler remembers, sizes, small ints.
            for i in 0..11 {
                let v = match rng.below(4) {
                    0 => rng.interesting(),
                    1 => 0x7f00_0000_0000 + rng.below(4) as u64 * 0x10_0000,
                    2 => rng.below(8) as u64,
                    _ => rng.next(),
                };
                put(&mut b, offset_of!(CallEnter, args) + 8 * i, &v.to_le_bytes());
            }
            if kind == EventKind::CallEnterStr as u16 {
                put(&mut b, offset_of!(CallEnterStr, len), &len32(rng));
            }
            if kind == EventKind::CallEnterBlob as u16 {
                put(&mut b, offset_of!(CallEnterBlob, len), &len32(rng));
                put(&mut b, offset_of!(CallEnterBlob, nattrs), &len32(rng));
            }
        }
        Some(EventKind::LaunchParams) => {
            use tracer_common::params::LaunchParams as P;
            *last_enter = Some((func, tid));
            put(&mut b, offset_of!(P, blob_len), &len32(rng));
            put(&mut b, offset_of!(P, nattrs), &len32(rng));
            put(&mut b, offset_of!(P, status), &(rng.below(9) as u32).to_le_bytes());
            let len = if rng.chance(80) {
                (size.saturating_sub(tracer_common::params::PARAMS_OFFSET) as u32).to_le_bytes()
            } else {
                len32(rng)
            };
            put(&mut b, offset_of!(P, len), &len);
        }
        Some(EventKind::CallExit | EventKind::CallExitStr) => {
            put(&mut b, offset_of!(CallExit, ret), &(rng.below(3) as u64 * 300).to_le_bytes());
            put(&mut b, offset_of!(CallExit, out_ok), &(rng.below(4) as u32).to_le_bytes());
            if kind == EventKind::CallExitStr as u16 {
                put(&mut b, offset_of!(CallExitStr, len), &len32(rng));
            }
        }
        Some(EventKind::ProcFork) => {
            put(&mut b, offset_of!(ProcFork, child), &(100 + rng.below(4) as u32).to_le_bytes())
        }
        Some(EventKind::ProcExec) => put(&mut b, offset_of!(ProcExec, len), &len32(rng)),
        Some(EventKind::ProcExit) => {
            put(&mut b, offset_of!(ProcExit, group_dead), &(rng.below(2) as u32).to_le_bytes())
        }
        Some(EventKind::SchedSwitch) => {
            use tracer_common::event::SchedSwitch as S;
            put(&mut b, offset_of!(S, flags), &(rng.below(8) as u32).to_le_bytes());
            put(&mut b, offset_of!(S, prev_state), &([0u64, 1, 2, 0x100, 0x10][rng.below(5)]).to_le_bytes());
            put(&mut b, offset_of!(S, next_tid), &(100 + rng.below(4) as u32).to_le_bytes());
            put(&mut b, offset_of!(S, syscall), &([-1i64, 0, 24, 230, 1 << 40][rng.below(5)]).to_le_bytes());
        }
        Some(EventKind::Stack) => {
            use tracer_common::stack::StackRec as S;
            put(&mut b, offset_of!(S, site), &(rng.below(4) as u32).to_le_bytes());
            put(&mut b, offset_of!(S, native_n), &len32(rng));
            let py_n = size.saturating_sub(tracer_common::stack::STACK_REC_PY_OFFSET) / 16;
            let py_n = if rng.chance(80) { (py_n as u32).to_le_bytes() } else { len32(rng) };
            put(&mut b, offset_of!(S, py_n), &py_n);
        }
        Some(EventKind::SchedWaking) => {
            use tracer_common::event::SchedWaking as W;
            put(&mut b, offset_of!(W, tid), &(100 + rng.below(4) as u32).to_le_bytes());
        }
        Some(EventKind::IoctlEnter) => {
            let dev = [nvdev::CTL, nvdev::UVM, nvdev::UVM_TOOLS, nvdev::FRONTEND, nvdev::GPU, nvdev::GPU + 7, 0, 99]
                [rng.below(8)];
            put(&mut b, offset_of!(IoctlEnter, dev), &dev.to_le_bytes());
            put(&mut b, offset_of!(IoctlEnter, request), &gen_request(rng).to_le_bytes());
            put(&mut b, offset_of!(IoctlEnter, size), &len32(rng));
            put(&mut b, offset_of!(IoctlEnter, len), &len32(rng));
            put(&mut b, offset_of!(IoctlEnter, tail_len), &len32(rng));
            if rng.chance(20) {
                put(&mut b, offset_of!(IoctlEnter, inner_nr), &len32(rng));
            }
        }
        Some(EventKind::IoctlExit) => {
            put(&mut b, offset_of!(IoctlExit, ret), &(-(rng.below(40) as i64)).to_le_bytes());
            put(&mut b, offset_of!(IoctlExit, len), &len32(rng));
            put(&mut b, offset_of!(IoctlExit, tail_len), &len32(rng));
        }
        Some(EventKind::NvFileOp) => {
            put(&mut b, offset_of!(NvFileOp, op), &(rng.below(6) as u32).to_le_bytes());
            put(&mut b, offset_of!(NvFileOp, fd), &(rng.below(8) as i32 - 1).to_le_bytes());
        }
        None => {}
    }
    b
}

fn gen_records(rng: &mut Rng, _corpus: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut last = None;
    for _ in 0..1 + rng.below(24) {
        let r = gen_record(rng, &mut last);
        out.extend_from_slice(&(r.len() as u16).to_le_bytes());
        out.extend_from_slice(&r);
    }
    out
}

fn record_seeds() -> Vec<Vec<u8>> {
    let mut rng = Rng::new(7);
    (0..16).map(|_| gen_records(&mut rng, &[])).collect()
}

/// Mutates one record of the sequence in place (keeps the framing intact,
/// unlike byte mutation).
fn mutate_records(rng: &mut Rng, bytes: &[u8]) -> Option<Vec<u8>> {
    let recs = split_records(bytes);
    if recs.is_empty() {
        return None;
    }
    let k = rng.below(recs.len());
    let mut out = Vec::new();
    for (i, r) in recs.iter().enumerate() {
        let r = if i == k { super::mutate_bytes(rng, r, &[], 4) } else { r.to_vec() };
        let r = &r[..r.len().min(u16::MAX as usize)];
        out.extend_from_slice(&(r.len() as u16).to_le_bytes());
        out.extend_from_slice(r);
    }
    Some(out)
}

pub const RECORDS: Target = Target {
    name: "ring_records",
    run: run_records,
    seeds: record_seeds,
    generate: Some(gen_records),
    mutate: Some(mutate_records),
    budget: default_budget,
};

/// One record through `tracer_common::decode::parse` alone (fast), with the
/// bounds every variable part must respect.
fn run_decode(bytes: &[u8]) -> String {
    use tracer_common::event::{BLOB_CAP, IOCTL_CAP, NVPATH_CAP, PATH_CAP, STR_CAP};
    match decode::parse(bytes) {
        Ok(rec) => {
            let (kind, parts): (&str, Vec<(usize, usize)>) = match rec {
                decode::Record::Enter { string, blob, .. } => {
                    ("enter", vec![(string.map_or(0, <[u8]>::len), STR_CAP), (blob.map_or(0, <[u8]>::len), BLOB_CAP)])
                }
                decode::Record::Exit { string, .. } => ("exit", vec![(string.map_or(0, <[u8]>::len), STR_CAP)]),
                decode::Record::Exec { filename, .. } => ("exec", vec![(filename.len(), PATH_CAP)]),
                decode::Record::IoctlEnter { data, tail, .. } | decode::Record::IoctlExit { data, tail, .. } => {
                    ("ioctl", vec![(data.len() + tail.len(), IOCTL_CAP)])
                }
                decode::Record::NvFile { path, .. } => ("nvfile", vec![(path.len(), NVPATH_CAP)]),
                decode::Record::Fork(_) => ("fork", vec![]),
                decode::Record::ProcExit(_) => ("exit", vec![]),
                decode::Record::Switch(_) => ("switch", vec![]),
                decode::Record::Waking(_) => ("waking", vec![]),
                decode::Record::Stack(s) => (
                    "stack",
                    vec![
                        (s.native_len(), tracer_common::stack::NATIVE_CAP),
                        (s.py_len(), tracer_common::stack::PY_CAP),
                        (s.native_len() * 8 + s.py_len() * 16, bytes.len()),
                    ],
                ),
            };
            for (len, cap) in parts {
                assert!(len <= cap, "{kind}: a part of {len} bytes, cap {cap}");
                assert!(len <= bytes.len(), "{kind}: a part longer than the record");
            }
            format!("ok {kind}")
        }
        Err(e) => e.to_string(),
    }
}

fn gen_one_record(rng: &mut Rng, _corpus: &[Vec<u8>]) -> Vec<u8> {
    gen_record(rng, &mut None)
}

fn decode_seeds() -> Vec<Vec<u8>> {
    record_seeds().iter().flat_map(|s| split_records(s).into_iter().map(<[u8]>::to_vec)).collect()
}

pub const DECODE: Target = Target {
    name: "record_decode",
    run: run_decode,
    seeds: decode_seeds,
    generate: Some(gen_one_record),
    mutate: None,
    budget: default_budget,
};

// ---------------------------------------------------------------------------
// ioctl parameter structs: nvioctl
// ---------------------------------------------------------------------------

fn gen_request(rng: &mut Rng) -> u64 {
    match rng.below(5) {
        0 | 1 => {
            let nrs: Vec<u32> = nvioctl::escape_names().map(|(n, _)| n).collect();
            let nr = nrs[rng.below(nrs.len())];
            let size = match rng.below(3) {
                0 => rng.interesting() as u32 & 0x3fff,
                _ => rng.below(600) as u32,
            };
            nvioctl::nv_request(nr, size)
        }
        2 | 3 => {
            let uvm: Vec<u32> = nvioctl::uvm_ioctls().map(|(n, _)| n).collect();
            uvm[rng.below(uvm.len())] as u64
        }
        _ => rng.interesting(),
    }
}

/// Input: device (1 byte), request (8), ret (8), flags (1: exit? tails?),
/// entry length (2), then the entry bytes, then exit and tail bytes.
fn run_ioctl(bytes: &[u8]) -> String {
    if bytes.len() < 20 {
        return "short".into();
    }
    let device = match bytes[0] % 6 {
        0 => Device::Ctl,
        1 => Device::Gpu(u32::from(bytes[0])),
        2 => Device::Uvm,
        3 => Device::UvmTools,
        4 => Device::Gpu(u32::MAX),
        _ => Device::Other,
    };
    let request = u64::from_le_bytes(bytes[1..9].try_into().unwrap());
    let ret = i64::from_le_bytes(bytes[9..17].try_into().unwrap());
    let flags = bytes[17];
    let n = (u16::from_le_bytes([bytes[18], bytes[19]]) as usize).min(bytes.len() - 20);
    let (entry, rest) = bytes[20..].split_at(n);
    let (exit, tails) = rest.split_at(rest.len() - rest.len().min(80));
    let (et, xt) = tails.split_at(tails.len() / 2);
    let exit = (flags & 1 != 0).then_some(exit);
    let d = nvioctl::decode_with_tail(
        device,
        request,
        entry,
        exit,
        (flags & 2 != 0).then_some(ret),
        (flags & 4 != 0).then_some(et),
        (flags & 8 != 0).then_some(xt),
    );
    let j = d.to_json();
    assert!(j.is_object());
    assert!(nvioctl::param_size(device, request) <= nvioctl::MAX_PARAM_COPY);
    if let Some((off, len)) = nvioctl::param_tail(device, request) {
        assert!(off.checked_add(len).is_some());
    }
    let _ = nvioctl::status_offset(device, request);
    let _ = nvioctl::xfer_inner(request, entry);
    let _ = crate::decode::ioctls::device_path(u32::from_le_bytes(bytes[1..5].try_into().unwrap()));
    format!("{:?} {} known {} truncated {}", device, d.escape.unwrap_or("?"), d.known, d.truncated)
}

fn gen_ioctl(rng: &mut Rng, _corpus: &[Vec<u8>]) -> Vec<u8> {
    let mut v = vec![rng.below(6) as u8];
    let request = gen_request(rng);
    v.extend_from_slice(&request.to_le_bytes());
    v.extend_from_slice(&(-(rng.below(30) as i64)).to_le_bytes());
    v.push(rng.next() as u8);
    let entry_len = match rng.below(3) {
        0 => nvioctl::param_size(Device::Ctl, request),
        1 => nvioctl::param_size(Device::Uvm, request),
        _ => rng.below(700),
    };
    v.extend_from_slice(&(entry_len as u16).to_le_bytes());
    let mut entry = rng.bytes(entry_len);
    // XFER: a plausible inner header.
    if request & 0xff == nvioctl::NV_ESC_IOCTL_XFER_CMD as u64 && entry.len() >= 16 {
        let nrs: Vec<u32> = nvioctl::escape_names().map(|(n, _)| n).collect();
        put(&mut entry, 0, &nrs[rng.below(nrs.len())].to_le_bytes());
        put(&mut entry, 4, &(rng.interesting() as u32).to_le_bytes());
    }
    // Sizes and counts inside the struct: interesting values at aligned offsets.
    for _ in 0..rng.below(4) {
        if !entry.is_empty() {
            let at = rng.below(entry.len()) & !3;
            put(&mut entry, at, &rng.interesting().to_le_bytes());
        }
    }
    v.extend_from_slice(&entry);
    let exit_len = entry_len.min(rng.below(entry_len + 8));
    v.extend(rng.bytes(exit_len + 80));
    v
}

fn ioctl_seeds() -> Vec<Vec<u8>> {
    let mut rng = Rng::new(11);
    (0..32).map(|_| gen_ioctl(&mut rng, &[])).collect()
}

pub const IOCTL: Target = Target {
    name: "ioctl_params",
    run: run_ioctl,
    seeds: ioctl_seeds,
    generate: Some(gen_ioctl),
    mutate: None,
    budget: default_budget,
};

// ---------------------------------------------------------------------------
// ELF exports and the loader cache: libcuda.rs
// ---------------------------------------------------------------------------

fn run_elf(bytes: &[u8]) -> String {
    let hdr = libcuda::check_elf_header(&bytes[..bytes.len().min(64)]);
    match libcuda::parse_exported_functions(bytes) {
        Ok(s) => {
            for (name, &off) in &s.symbols {
                assert!(off < bytes.len() as u64, "{name}: offset {off:#x} beyond the file ({} bytes)", bytes.len());
                let p = s.prologue(name).unwrap_or(&[]);
                assert!(p.len() <= libcuda::PROLOGUE_LEN);
                assert_eq!(
                    p,
                    &bytes[off as usize..off as usize + p.len()],
                    "{name}: prologue is not the bytes at its offset"
                );
            }
            let _ = s.push_rbp_count();
            format!("ok header {:?} symbols {}", hdr.is_ok(), s.len().min(3))
        }
        Err(e) => e,
    }
}

const ELF_SRC: &str = r#"
int cuInit(unsigned flags) { return (int)flags; }
int cuDriverGetVersion(int *v) { *v = 13000; return 0; }
__attribute__((weak)) int cuWeak(void) { return 3; }
__attribute__((visibility("hidden"))) int hidden(int x) { return x * 2; }
int cuCtxGetCurrent(void **c) { *c = 0; return hidden(1) - 2; }
int cuData = 5;
int cu_old(void) { return 1; }
int cu_new(void) { return 2; }
__asm__(".symver cu_old,cuVersioned@V1");
__asm__(".symver cu_new,cuVersioned@@V2");
"#;

/// A small shared library compiled with cc (with symbol versions), and its
/// stripped copy.
fn elf_seeds() -> Vec<Vec<u8>> {
    static SEEDS: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    SEEDS
        .get_or_init(|| {
            let dir = std::env::temp_dir().join(format!("fuzz-elf-{}", std::process::id()));
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("f.c"), ELF_SRC).unwrap();
            std::fs::write(dir.join("f.map"), "V1 { global: cu*; local: *; };\nV2 { global: cuVersioned; } V1;\n")
                .unwrap();
            let mut seeds = Vec::new();
            for (name, extra) in [("f.so", &[][..]), ("s.so", &["-s"][..])] {
                let st = std::process::Command::new("cc")
                    .args(["-shared", "-fPIC", "-O0", "-Wl,--version-script=f.map", "-o", name, "f.c"])
                    .args(extra)
                    .current_dir(&dir)
                    .status()
                    .expect("running cc (needed for the ELF fuzz seeds)");
                assert!(st.success());
                seeds.push(std::fs::read(dir.join(name)).unwrap());
            }
            let _ = std::fs::remove_dir_all(&dir);
            seeds
        })
        .clone()
}

fn rd(b: &[u8], off: usize, w: usize) -> Option<u64> {
    let s = b.get(off..off.checked_add(w)?)?;
    let mut a = [0u8; 8];
    a[..w].copy_from_slice(s);
    Some(u64::from_le_bytes(a))
}

/// ELF-aware mutation: interesting values written into a field of the file
/// header, of a program header, of a section header, or of a .dynsym entry.
fn mutate_elf(rng: &mut Rng, bytes: &[u8]) -> Option<Vec<u8>> {
    let mut v = bytes.to_vec();
    if v.len() < 64 || v[4] != 2 {
        return None;
    }
    let phoff = rd(&v, 0x20, 8)? as usize;
    let shoff = rd(&v, 0x28, 8)? as usize;
    let phnum = rd(&v, 0x38, 2)? as usize;
    let shnum = rd(&v, 0x3c, 2)? as usize;
    for _ in 0..1 + rng.below(3) {
        let (at, w) = match rng.below(4) {
            0 => [(0x10, 2), (0x20, 8), (0x28, 8), (0x36, 2), (0x38, 2), (0x3a, 2), (0x3c, 2), (0x3e, 2)][rng.below(8)],
            1 if phnum > 0 => {
                let f = [(0, 4), (8, 8), (16, 8), (32, 8), (40, 8)][rng.below(5)];
                (phoff.checked_add(56 * rng.below(phnum))?.checked_add(f.0)?, f.1)
            }
            2 if shnum > 0 => {
                let f = [(0, 4), (4, 4), (24, 8), (32, 8), (40, 4), (44, 4), (56, 8)][rng.below(7)];
                (shoff.checked_add(64 * rng.below(shnum))?.checked_add(f.0)?, f.1)
            }
            _ => {
                // A .dynsym entry (section type 11).
                let dynsym = (0..shnum)
                    .filter_map(|i| shoff.checked_add(64 * i))
                    .find(|&o| o.checked_add(4).and_then(|a| rd(&v, a, 4)) == Some(11))?;
                let (off, size) = (rd(&v, dynsym + 24, 8)? as usize, rd(&v, dynsym + 32, 8)? as usize);
                let n = size / 24;
                if n == 0 {
                    return None;
                }
                let f = [(0, 4), (4, 1), (5, 1), (6, 2), (8, 8), (16, 8)][rng.below(6)];
                (off.checked_add(24 * rng.below(n))?.checked_add(f.0)?, f.1)
            }
        };
        let val = rng.interesting().to_le_bytes();
        if at.checked_add(w)? <= v.len() {
            v[at..at + w].copy_from_slice(&val[..w]);
        }
    }
    Some(v)
}

pub const ELF: Target = Target {
    name: "libcuda_elf",
    run: run_elf,
    seeds: elf_seeds,
    generate: None,
    mutate: Some(mutate_elf),
    budget: default_budget,
};

fn run_ld_cache(bytes: &[u8]) -> String {
    match libcuda::parse_ld_so_cache(bytes) {
        Ok(entries) => {
            let found = libcuda::cache_lookup(&entries, libcuda::LIBCUDA_SONAME);
            format!("ok {} entries {} found", entries.len().min(2), found.len().min(2))
        }
        Err(e) => e,
    }
}

/// The host's /etc/ld.so.cache (if any) and a small one built here.
fn ld_cache_seeds() -> Vec<Vec<u8>> {
    let mut seeds = Vec::new();
    if let Ok(b) = std::fs::read(libcuda::LD_SO_CACHE) {
        seeds.push(b);
    }
    // glibc-ld.so.cache1.1: header (48), entries (24 each), strings.
    let entries = [(0x0303, "libcuda.so.1", "/usr/lib/libcuda.so.1"), (0x0303, "libm.so.6", "/lib/libm.so.6")];
    let base = 48 + 24 * entries.len();
    let mut strings = Vec::new();
    let mut offs = Vec::new();
    for (_, k, v) in entries {
        let ko = base + strings.len();
        strings.extend_from_slice(k.as_bytes());
        strings.push(0);
        let vo = base + strings.len();
        strings.extend_from_slice(v.as_bytes());
        strings.push(0);
        offs.push((ko as u32, vo as u32));
    }
    let mut c = b"glibc-ld.so.cache1.1".to_vec();
    c.extend_from_slice(&(entries.len() as u32).to_le_bytes());
    c.extend_from_slice(&(strings.len() as u32).to_le_bytes());
    c.push(2);
    c.extend_from_slice(&[0; 19]);
    for ((flags, _, _), (ko, vo)) in entries.iter().zip(&offs) {
        c.extend_from_slice(&(*flags as u32).to_le_bytes());
        c.extend_from_slice(&ko.to_le_bytes());
        c.extend_from_slice(&vo.to_le_bytes());
        c.extend_from_slice(&[0; 12]);
    }
    c.extend_from_slice(&strings);
    seeds.push(c.clone());
    // The old format in front of the new one.
    let mut old = b"ld.so-1.7.0\0".to_vec();
    old.extend_from_slice(&1u32.to_le_bytes());
    old.extend_from_slice(&[0; 12]);
    while !old.len().is_multiple_of(8) {
        old.push(0);
    }
    old.extend_from_slice(&c);
    seeds.push(old);
    seeds
}

pub const LD_CACHE: Target = Target {
    name: "ld_so_cache",
    run: run_ld_cache,
    seeds: ld_cache_seeds,
    generate: None,
    mutate: None,
    budget: default_budget,
};

// ---------------------------------------------------------------------------
// The analysis: typed trace model, phases, GPU timelines, gaps, report,
// Perfetto export and calibration (tracer report/gaps/export/calibrate)
// ---------------------------------------------------------------------------

fn run_analysis(bytes: &[u8]) -> String {
    use crate::analysis::{durations, gaps, model, phases, report, timeline};
    use crate::export::perfetto;
    let text = String::from_utf8_lossy(bytes);
    let t = match model::parse_str("fuzz.jsonl", &text) {
        Ok(t) => t,
        Err(e) => return e.to_string(),
    };
    let ph = phases::phases(&t);
    let tl = timeline::gpu_intervals(&t, None);
    let g = gaps::analyze(&t, &tl, &ph, &gaps::GapOptions::default());
    let r = report::build(&t, &ph, &tl);
    let _ = serde_json::to_string(&g);
    let _ = serde_json::to_string(&r);
    let mut out = Vec::new();
    let exported = perfetto::export(&t, &ph, &timeline::bound(&t), &mut out);
    let cal = durations::calibrate(&t).map(|d| d.kernels.len());
    format!("ok calls {} gpu {} export {:?} calibrate {:?}", t.calls.len(), t.gpu.len(), exported.is_ok(), cal.is_ok())
}

/// The committed traces' seeds and one with stacks (`stack` lines, the
/// `stack` field of launches, syncs and `off_cpu` intervals).
fn analysis_seeds() -> Vec<Vec<u8>> {
    const STACKS: &str = r#"{"type":"header","pid":1,"command":["python3","t.py"],"sched":true}
{"type":"stack","op":"stack","name":"stack","id":1,"pid":1,"tid":0,"ts":1,"frames":[{"kind":"native","fn":"cuLaunchKernel","module":"/usr/lib/libcuda.so.1","addr":"0x7f0000001000","offset":"0x10"},{"kind":"python","fn":"step","file":"/w/t.py","line":6},{"kind":"jit","fn":"[jit]","addr":"0x7f1000000000"}]}
{"type":"stack","op":"stack","name":"stack","id":2,"pid":1,"tid":0,"ts":1,"frames":[{"kind":"native","fn":"read","module":"/usr/lib/libc.so.6","addr":"0x7f0000002000","offset":"0x20"},{"kind":"python","fn":"load","file":"/w/d.py","line":4},{"kind":"unknown","fn":"[unknown]","addr":"0x10"}]}
{"ts":500,"pid":1,"tid":1,"type":"sched","op":"thread_seen","name":"thread_seen"}
{"ts":1000000,"pid":1,"tid":1,"type":"kernel","op":"launch","name":"cuLaunchKernel","kernel":"k","grid":[1,1,1],"block":[1,1,1],"stream":"0x0","ret":0,"stack":1}
{"ts":1010000,"end_ts":2000000,"pid":1,"tid":0,"type":"gpu","op":"kernel","name":"k","source":"cupti","device":0,"stream":"0x0","stream_id":7}
{"ts":1020000,"pid":1,"tid":1,"type":"sync","op":"stream_synchronize","name":"cuStreamSynchronize","stream":"0x0","duration_us":980,"ret":0,"stack":3}
{"ts":2100000,"end_ts":5100000,"pid":1,"tid":1,"type":"sched","op":"off_cpu","name":"read","state":"blocked","syscall":"read","file":"file /d","runnable_ns":100000,"stack":2}
{"ts":7000000,"pid":1,"tid":1,"type":"kernel","op":"launch","name":"cuLaunchKernel","kernel":"k","grid":[1,1,1],"block":[1,1,1],"stream":"0x0","ret":0,"stack":1}
{"ts":7010000,"end_ts":8000000,"pid":1,"tid":0,"type":"gpu","op":"kernel","name":"k","source":"cupti","device":0,"stream":"0x0","stream_id":7}
"#;
    let mut v = trace_seeds();
    v.push(STACKS.as_bytes().to_vec());
    v
}

pub const ANALYSIS: Target = Target {
    name: "analysis",
    run: run_analysis,
    seeds: analysis_seeds,
    generate: None,
    mutate: Some(mutate_trace),
    // The model keeps ~64 bytes per call plus interned names; the export
    // writes ~300 bytes per event.
    budget: |len| default_budget(len) + 1024 * len,
};

#[test]
fn fuzz_analysis() {
    fuzz(&ANALYSIS, seconds());
}

// One test per target: `cargo test` runs each for TRACER_FUZZ_SECONDS (1 s
// by default); `cargo xtask fuzz --seconds N` runs them longer.

#[test]
fn fuzz_trace_jsonl() {
    fuzz(&TRACE, seconds());
}

#[test]
fn fuzz_trace_jsonl_gz() {
    fuzz(&TRACE_GZ, seconds());
}

#[test]
fn fuzz_trace_jsonl_zst() {
    fuzz(&TRACE_ZST, seconds());
}

#[test]
fn fuzz_ring_records() {
    fuzz(&RECORDS, seconds());
}

#[test]
fn fuzz_record_decode() {
    fuzz(&DECODE, seconds());
}

#[test]
fn fuzz_ioctl_params() {
    fuzz(&IOCTL, seconds());
}

#[test]
fn fuzz_libcuda_elf() {
    fuzz(&ELF, seconds());
}

#[test]
fn fuzz_ld_so_cache() {
    fuzz(&LD_CACHE, seconds());
}

#[test]
fn fuzz_hostile_names() {
    fuzz(&super::hostile_names::HOSTILE_NAMES, seconds());
}

/// The harness itself finds what it is meant to find: a panic and an
/// allocation sized by an input field, each minimized.
#[test]
fn harness_catches_panics_and_trusted_sizes() {
    fn panics_on_magic(b: &[u8]) -> String {
        if b.windows(2).any(|w| w == b"\xde\xad") {
            panic!("magic found");
        }
        "ok".into()
    }
    fn trusts_size(b: &[u8]) -> String {
        let n = b.first().copied().unwrap_or(0) as usize;
        let v: Vec<u8> = Vec::with_capacity(n << 20);
        format!("{}", v.capacity() > 0)
    }
    let t = Target {
        name: "selftest_panic",
        run: panics_on_magic,
        seeds: || vec![b"hello \xde\xad world".to_vec()],
        generate: None,
        mutate: None,
        budget: default_budget,
    };
    let err = std::panic::catch_unwind(|| fuzz(&t, 0.1)).unwrap_err();
    let msg = err.downcast_ref::<String>().unwrap();
    assert!(msg.contains("a seed input fails: panicked: magic found"), "{msg}");
    assert!(msg.contains("minimized input (2 bytes, from 14)"), "{msg}");
    assert!(msg.contains("hex: dead\n"), "{msg}");
    let t = Target {
        name: "selftest_size",
        run: trusts_size,
        seeds: || vec![vec![1, 2, 3]],
        generate: None,
        mutate: None,
        budget: default_budget,
    };
    let err = std::panic::catch_unwind(|| fuzz(&t, 5.0)).unwrap_err();
    let msg = err.downcast_ref::<String>().unwrap();
    assert!(msg.contains("used ") && msg.contains("budget 16777280)"), "{msg}");
    assert!(msg.contains("minimized input (1 bytes"), "{msg}");
}
