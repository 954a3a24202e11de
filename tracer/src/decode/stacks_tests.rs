//! The assembler with stack records: which line gets which stack, the
//! `stack` lines, orphans, and the fast writers' `stack` field against the
//! general path's.
use serde_json::{Value, json};
use tracer_common::decode::{Record, Stack, parse};
use tracer_common::event::{CallEnter, CallExit, EventKind, Header, MAX_ARGS, SchedSwitch, sched_flags};
use tracer_common::funcs::lookup;
use tracer_common::stack::{NATIVE_CAP, PY_CAP, PyFrame, StackRec, py_status, site, stack_rec_len};

use crate::decode::calls::Assembler;
use crate::decode::fastline::Line;
use crate::decode::stacks::{Frame, FrameKind, Stacks};

fn bytes<T>(v: &T) -> Vec<u8> {
    // SAFETY: a repr(C) record of plain integers, read as its bytes.
    unsafe { std::slice::from_raw_parts(v as *const T as *const u8, std::mem::size_of::<T>()) }.to_vec()
}

fn hdr(kind: EventKind, func: u16, ts: u64, tid: u32) -> Header {
    Header { kind: kind as u16, func, cpu: 0, seq: ts, ts, pid: 100, tid }
}

fn func(name: &str) -> u16 {
    lookup(name).unwrap().0
}

/// A stack record's bytes: native addresses and Python frames.
fn stack(site: u32, func: u16, ts: u64, tid: u32, native: &[u64], py: &[(u64, u64)]) -> Vec<u8> {
    let mut r = StackRec {
        hdr: hdr(EventKind::Stack, func, ts, tid),
        site,
        native_n: native.len() as u32,
        native_err: 0,
        py_status: if py.is_empty() { py_status::NONE } else { py_status::OK },
        py_n: py.len() as u32,
        _pad: 0,
        native: [0; NATIVE_CAP],
        py: [PyFrame::default(); PY_CAP],
    };
    r.native[..native.len()].copy_from_slice(native);
    for (i, &(code, instr)) in py.iter().enumerate() {
        r.py[i] = PyFrame { code, instr };
    }
    bytes(&r)[..stack_rec_len(py.len())].to_vec()
}

fn enter(name: &str, ts: u64, tid: u32, args: &[u64]) -> Vec<u8> {
    let mut a = [0u64; MAX_ARGS];
    a[..args.len()].copy_from_slice(args);
    bytes(&CallEnter { hdr: hdr(EventKind::CallEnter, func(name), ts, tid), args: a })
}

fn exit(name: &str, ts: u64, tid: u32) -> Vec<u8> {
    bytes(&CallExit { hdr: hdr(EventKind::CallExit, func(name), ts, tid), ret: 0, out: [0; 2], out_ok: 0, flags: 0 })
}

/// Thread `tid` switches out blocked at `ts` (its switch-in follows at `back`).
fn switch_out(ts: u64, tid: u32) -> Vec<u8> {
    let mut comm = [0u8; 16];
    comm[..3].copy_from_slice(b"app");
    bytes(&SchedSwitch {
        hdr: hdr(EventKind::SchedSwitch, 0, ts, tid),
        prev_state: 1,
        flags: sched_flags::PREV_TRACED,
        next_tid: 0,
        next_tgid: 0,
        _pad: 0,
        syscall: -1,
        arg0: 0,
        prev_comm: comm,
        next_comm: [0; 16],
    })
}

fn switch_in(ts: u64, tid: u32) -> Vec<u8> {
    bytes(&SchedSwitch {
        hdr: Header { kind: EventKind::SchedSwitch as u16, func: 0, cpu: 0, seq: ts, ts, pid: 0, tid: 0 },
        prev_state: 0,
        flags: sched_flags::NEXT_TRACED,
        next_tid: tid,
        next_tgid: 100,
        _pad: 0,
        syscall: -1,
        arg0: 0,
        prev_comm: [0; 16],
        next_comm: [0; 16],
    })
}

/// Names each native address `fn_<hex>` in module `/m` (a resolver for tests).
fn naming(s: &Stack) -> Vec<Frame> {
    s.native()
        .map(|a| Frame {
            module: Some("/m".into()),
            addr: Some(a),
            offset: Some(a - 0x1000),
            ..Frame::named(FrameKind::Native, &format!("fn_{a:x}"))
        })
        .chain(s.py().map(|p| Frame {
            file: Some("t.py".into()),
            line: Some((p.instr & 0xff) as u32),
            ..Frame::named(FrameKind::Python, &format!("py_{:x}", p.code & !1))
        }))
        .collect()
}

fn assembler(reference: bool, entry_only: bool) -> Assembler {
    let mut a = Assembler::default();
    a.reference_lines = reference;
    a.stacks = Stacks::with_resolver(Box::new(naming));
    a.set_entry_only(|_| entry_only);
    a.sched.enabled = true;
    a
}

fn run(a: &mut Assembler, recs: &[Vec<u8>]) -> Vec<Value> {
    let mut v = Vec::new();
    for (i, b) in recs.iter().enumerate() {
        // Consecutive sequence numbers: nothing lost.
        let mut b = b.clone();
        let at = std::mem::offset_of!(Header, seq);
        b[at..at + 8].copy_from_slice(&(i as u64).to_le_bytes());
        let r: Record = parse(&b).unwrap();
        a.push(&r, &mut |l: Line| v.push(l.into_value()));
    }
    a.finish(&mut |l: Line| v.push(l.into_value()));
    v
}

const LAUNCH: [u64; 11] = [0xf1, 2, 1, 1, 64, 1, 1, 0, 0x5, 0, 0];

#[test]
fn launches_carry_their_stack_and_each_stack_is_written_once() {
    let l = func("cuLaunchKernel");
    let recs = [
        stack(site::CALL, l, 10, 101, &[0x1100, 0x1200], &[]),
        enter("cuLaunchKernel", 10, 101, &LAUNCH),
        stack(site::CALL, l, 20, 101, &[0x1100, 0x1200], &[]),
        enter("cuLaunchKernel", 20, 101, &LAUNCH),
        stack(site::CALL, l, 30, 102, &[0x1100, 0x1300], &[(0x7000 | 1, 0x29)]),
        enter("cuLaunchKernel", 30, 102, &LAUNCH),
        // No stack taken: no field.
        enter("cuLaunchKernel", 40, 101, &LAUNCH),
    ];
    let mut a = assembler(false, true);
    let v = run(&mut a, &recs);
    let types: Vec<&str> = v.iter().map(|l| l["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["stack", "kernel", "kernel", "stack", "kernel", "kernel"]);
    assert_eq!(
        v[0],
        json!({"type": "stack", "op": "stack", "name": "stack", "id": 0, "pid": 100, "tid": 0, "ts": 10,
        "frames": [
            {"kind": "native", "fn": "fn_1100", "module": "/m", "addr": "0x1100", "offset": "0x100"},
            {"kind": "native", "fn": "fn_1200", "module": "/m", "addr": "0x1200", "offset": "0x200"},
        ]})
    );
    assert_eq!((v[1]["stack"].as_u64(), v[2]["stack"].as_u64()), (Some(0), Some(0)));
    assert_eq!((v[3]["id"].as_u64(), v[3]["ts"].as_u64()), (Some(1), Some(30)));
    assert_eq!(v[3]["frames"][2], json!({"kind": "python", "fn": "py_7000", "file": "t.py", "line": 0x29}));
    assert_eq!(v[4]["stack"], 1);
    assert!(v[5].get("stack").is_none());
    let s = &a.stacks.stats;
    assert_eq!((s.records, s.call_records, s.attached, s.orphans, s.distinct), (3, 3, 3, 0, 2));
    assert_eq!((s.with_native, s.with_python, s.py_ok, s.py_none, s.frames), (3, 1, 1, 2, 7));
}

#[test]
fn fast_lines_write_the_stack_field_as_the_general_path() {
    let (l, c, y) = (func("cuLaunchKernel"), func("cuMemcpyHtoDAsync_v2"), func("cuStreamSynchronize"));
    let recs = [
        stack(site::CALL, l, 10, 101, &[0x1100], &[]),
        enter("cuLaunchKernel", 10, 101, &LAUNCH),
        exit("cuLaunchKernel", 11, 101),
        stack(site::CALL, c, 20, 101, &[0x1400], &[]),
        enter("cuMemcpyHtoDAsync_v2", 20, 101, &[0x10_0000, 0x7f00_0000, 64, 0x5]),
        exit("cuMemcpyHtoDAsync_v2", 21, 101),
        stack(site::CALL, func("cuLaunchKernelEx"), 30, 101, &[0x1500], &[]),
        enter("cuLaunchKernelEx", 30, 101, &[0, 0xf1, 0, 0]),
        exit("cuLaunchKernelEx", 31, 101),
        // A synchronization: the stack of its entry on the line its return completes.
        stack(site::CALL, y, 40, 101, &[0x1600], &[]),
        enter("cuStreamSynchronize", 40, 101, &[0x5]),
        exit("cuStreamSynchronize", 90, 101),
    ];
    for entry_only in [false, true] {
        // Entry-only: no return probes, so no exit records.
        let recs: Vec<Vec<u8>> =
            recs.iter().filter(|b| !entry_only || !matches!(parse(b), Ok(Record::Exit { .. }))).cloned().collect();
        let fast = run(&mut assembler(false, entry_only), &recs);
        let slow = run(&mut assembler(true, entry_only), &recs);
        assert_eq!(fast, slow, "entry_only={entry_only}");
        let calls: Vec<(&str, u64)> = fast
            .iter()
            .filter(|l| l["type"] != "stack")
            .map(|l| (l["name"].as_str().unwrap(), l["stack"].as_u64().unwrap()))
            .collect();
        assert_eq!(
            calls,
            [("cuLaunchKernel", 0), ("cuMemcpyHtoDAsync_v2", 1), ("cuLaunchKernelEx", 2), ("cuStreamSynchronize", 3)]
        );
        assert_eq!(fast.iter().filter(|l| l["type"] == "stack").count(), 4);
    }
    // The fast writers were used: the same records through `Line`s.
    let mut a = assembler(false, false);
    let mut kinds = Vec::new();
    for b in &recs {
        a.push(&parse(b).unwrap(), &mut |l: Line| {
            kinds.push(match l {
                Line::Launch(_) => "launch",
                Line::Call(_) => "call",
                Line::Value(v) => {
                    if v["type"] == "stack" {
                        "stack"
                    } else {
                        "value"
                    }
                }
            })
        });
    }
    assert_eq!(kinds, ["stack", "launch", "stack", "call", "stack", "call", "stack", "value"]);
}

#[test]
fn a_stack_whose_record_never_comes_is_an_orphan() {
    let l = func("cuLaunchKernel");
    let recs = [
        // Its entry record lost: the next entry (later ts) does not take it.
        stack(site::CALL, l, 10, 101, &[0x1100], &[]),
        enter("cuLaunchKernel", 20, 101, &LAUNCH),
        // Taken for another function than the entry that follows.
        stack(site::CALL, func("cuMemsetD8_v2"), 30, 101, &[0x1200], &[]),
        enter("cuLaunchKernel", 30, 101, &LAUNCH),
        // Replaced by the thread's next stack of the same site.
        stack(site::CALL, l, 40, 101, &[0x1300], &[]),
        stack(site::CALL, l, 50, 101, &[0x1400], &[]),
        enter("cuLaunchKernel", 50, 101, &LAUNCH),
        // Another thread's entry does not take it; the end of the trace orphans it.
        stack(site::CALL, l, 60, 101, &[0x1500], &[]),
        enter("cuLaunchKernel", 60, 102, &LAUNCH),
    ];
    let mut a = assembler(false, true);
    let v = run(&mut a, &recs);
    let stacks: Vec<(u64, u64)> = v
        .iter()
        .filter(|l| l["type"] == "kernel")
        .map(|l| (l["ts"].as_u64().unwrap(), l["stack"].as_u64().unwrap_or(u64::MAX)))
        .collect();
    // Ids are given as records come (0x1100 is 0, 0x1200 is 1, ...); only 0x1400 is attached.
    assert_eq!(stacks, [(20, u64::MAX), (30, u64::MAX), (50, 3), (60, u64::MAX)]);
    let lines: Vec<&Value> = v.iter().filter(|l| l["type"] == "stack").collect();
    assert_eq!(lines.len(), 1, "only attached stacks are written");
    assert_eq!((lines[0]["id"].as_u64(), lines[0]["frames"][0]["addr"].as_str()), (Some(3), Some("0x1400")));
    let s = &a.stacks.stats;
    assert_eq!((s.records, s.attached, s.orphans, s.distinct), (5, 1, 4, 1));
}

#[test]
fn off_cpu_lines_carry_the_stack_of_their_switch_out() {
    let recs = [
        switch_in(5, 101),
        stack(site::SWITCH_OUT, 0, 10, 101, &[0x1700, 0x1800], &[]),
        switch_out(10, 101),
        switch_in(50, 101),
        // Without a stack.
        switch_out(60, 101),
        switch_in(70, 101),
        // A stack for a switch of another thread's: not this one's.
        stack(site::SWITCH_OUT, 0, 80, 103, &[0x1900], &[]),
        switch_out(80, 101),
        switch_in(90, 101),
    ];
    let mut a = assembler(false, false);
    let v = run(&mut a, &recs);
    let lines: Vec<(&str, Option<u64>)> = v
        .iter()
        .filter(|l| l["op"] != "thread_seen")
        .map(|l| (l["op"].as_str().unwrap(), l["stack"].as_u64().or(l["id"].as_u64())))
        .collect();
    assert_eq!(lines, [("stack", Some(0)), ("off_cpu", Some(0)), ("off_cpu", None), ("off_cpu", None)]);
    let off = v.iter().find(|l| l["op"] == "off_cpu").unwrap();
    assert_eq!(
        (off["ts"].as_u64(), off["end_ts"].as_u64(), off["state"].as_str()),
        (Some(10), Some(50), Some("blocked"))
    );
    let s = &a.stacks.stats;
    assert_eq!((s.records, s.switch_out_records, s.attached, s.orphans), (2, 2, 1, 1));
}

#[test]
fn an_open_interval_keeps_its_stack_and_a_dead_tasks_last_switch_uses_none() {
    let recs = [
        switch_in(5, 101),
        stack(site::SWITCH_OUT, 0, 10, 101, &[0x1700], &[]),
        switch_out(10, 101),
        enter("cuCtxSynchronize", 20, 102, &[]),
    ];
    let mut a = assembler(false, false);
    let v = run(&mut a, &recs);
    let open = v.iter().find(|l| l["op"] == "off_cpu").unwrap();
    assert_eq!((open["open"].as_bool(), open["stack"].as_u64()), (Some(true), Some(0)));

    // The last switch of an exited thread makes no line: its stack is no line's.
    let r =
        bytes(&tracer_common::event::ProcExit { hdr: hdr(EventKind::ProcExit, 0, 20, 101), group_dead: 0, _pad: 0 });
    let recs = [switch_in(5, 101), r, stack(site::SWITCH_OUT, 0, 30, 101, &[0x1700], &[]), switch_out(30, 101)];
    let mut a = assembler(false, false);
    let v = run(&mut a, &recs);
    assert!(v.iter().all(|l| l["type"] != "stack" && l.get("stack").is_none()), "{v:?}");
    let s = &a.stacks.stats;
    assert_eq!((s.records, s.attached, s.orphans, s.unused), (1, 0, 0, 1));
}

#[test]
fn without_a_resolver_frames_are_addresses() {
    let l = func("cuLaunchKernel");
    let recs = [stack(site::CALL, l, 10, 101, &[0x1100], &[(0x7001, 4)]), enter("cuLaunchKernel", 10, 101, &LAUNCH)];
    let mut a = Assembler::default();
    let v = run(&mut a, &recs);
    assert_eq!(
        v[0]["frames"],
        json!([{"kind": "unknown", "fn": "[unknown]", "addr": "0x1100"}, {"kind": "unknown", "fn": "[python ?]"}])
    );
    let s = &a.stacks.stats;
    assert_eq!((s.frames, s.frames_unknown, s.frames_python_unknown), (2, 1, 1));
    assert_eq!(
        a.stacks.stats.json(&Default::default())["frames"],
        json!({"total": 2, "unknown": 1, "jit": 0, "python_unknown": 1})
    );
}
