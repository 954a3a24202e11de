//! One process of a multi-process recording (`--pid`, `--rank`,
//! recording/ranks.rs, selection.rs): a hand-built two-rank recording (two
//! pids with rank 0/1 exec lines, the same handle values and device
//! addresses in both, NCCL and non-NCCL kernels on each) planned for rank 1
//! alone; the no-selection note; unknown ranks and pids; bad rank fields;
//! the command line.

use std::path::Path;
use std::process::Command;

use replay::plan::{OpKind, StreamKind};
use replay::recording::ranks::{self, Selection};
use replay::selection::{self, NotComparable};
use serde_json::{Value, json};

const NCCL: &str = "ncclDevKernel_AllReduce_Sum_f32_RING_LL";
const DEV: u64 = 0x7f00_0000_0000;

/// k_pointers' 20 parameter bytes (kernels.cu): two pointers and a count.
fn k_pointers_params(a: u64, b: u64, n: u32) -> Vec<u8> {
    let mut p = Vec::new();
    p.extend_from_slice(&a.to_le_bytes());
    p.extend_from_slice(&b.to_le_bytes());
    p.extend_from_slice(&n.to_le_bytes());
    p
}

/// The recording: header, then per line `ts` = 1000 × line number.
/// Returns the temp dir and the trace's lines (for edits).
fn two_ranks(dir: &Path, edit: impl FnOnce(&mut Vec<Value>)) {
    let cubin =
        std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("../tracer/tests/fixtures/cuda/kernels.sm_90.cubin"))
            .unwrap();
    let sha = tracer_format::digest::sha256_hex(&cubin);
    std::fs::create_dir_all(dir.join("images")).unwrap();
    std::fs::write(dir.join("images").join(&sha), &cubin).unwrap();
    let out = [9u8; 16];
    let out_sha = tracer_format::digest::sha256_hex(&out);
    std::fs::create_dir_all(dir.join("data")).unwrap();
    std::fs::write(dir.join("data").join(&out_sha), out).unwrap();

    let mut lines: Vec<Value> = Vec::new();
    let exec = |pid: u32, rank: u64| json!({"type": "process", "op": "exec", "pid": pid, "tid": pid, "filename": "/usr/bin/python3", "rank": rank, "local_rank": rank, "world_size": 2});
    let call = |pid: u32, ty: &str, op: &str, name: &str, mut f: Value| {
        let o = f.as_object_mut().unwrap();
        for (k, v) in
            [("pid", json!(pid)), ("tid", json!(pid)), ("type", json!(ty)), ("op", json!(op)), ("name", json!(name))]
        {
            o.insert(k.into(), v);
        }
        f
    };
    let load = |pid| {
        call(
            pid,
            "module",
            "module_load_data",
            "cuModuleLoadData",
            json!({"ret": 0, "args": {"module": "0xa00"}, "image": sha}),
        )
    };
    let func = |pid, h: &str, k: &str| {
        call(
            pid,
            "module",
            "module_get_function",
            "cuModuleGetFunction",
            json!({"ret": 0, "args": {"hmod": "0xa00", "name": k}, "handle": h, "kernel": k}),
        )
    };
    let alloc = |pid, at: u64| {
        let a = format!("{at:#x}");
        call(
            pid,
            "memory",
            "alloc",
            "cuMemAlloc_v2",
            json!({"ret": 0, "args": {"dptr": a, "bytesize": 4096}, "ptr": a, "size": 4096}),
        )
    };
    let launch = |pid, h: &str, k: &str, stream: &str, params: &[u8]| {
        call(
            pid,
            "kernel",
            "launch",
            "cuLaunchKernel",
            json!({"args": {"f": h}, "func": h, "kernel": k, "device": pid - 101, "grid": [1, 1, 1], "block": [32, 1, 1], "shared_mem": 0, "stream": stream, "params": tracer_format::hex::bytes(params), "params_from": "layout"}),
        )
    };
    let d2h = |pid| {
        call(
            pid,
            "memcpy",
            "copy",
            "cuMemcpyDtoH_v2",
            json!({"ret": 0, "direction": "d2h", "dst": "0x1000", "src": format!("{DEV:#x}"), "size": 16, "data": out_sha}),
        )
    };
    let nccl_params = vec![0u8; 16];
    lines.push(exec(101, 0)); // 2
    lines.push(exec(102, 1)); // 3
    lines.push(load(101)); // 4
    lines.push(load(102)); // 5: the same module handle in the other process
    lines.push(func(101, "0xf1", "k_pointers")); // 6
    lines.push(func(102, "0xf1", "k_pointers")); // 7
    lines.push(func(101, "0xf2", NCCL)); // 8
    lines.push(func(102, "0xf2", NCCL)); // 9
    lines.push(alloc(101, DEV)); // 10: the same device address in both
    lines.push(alloc(102, DEV)); // 11
    lines.push(alloc(101, DEV + 0x40_0000)); // 12: rank 0 only
    lines.push(call(
        101,
        "stream",
        "stream_create",
        "cuStreamCreate",
        json!({"ret": 0, "args": {"phStream": "0x5000", "Flags": "0x1"}}),
    )); // 13: rank 0 only
    lines.push(call(
        101,
        "event",
        "event_create",
        "cuEventCreate",
        json!({"ret": 0, "args": {"phEvent": "0xe1", "Flags": "0x2"}}),
    )); // 14: rank 0 only
    lines.push(launch(101, "0xf1", "k_pointers", "0x5000", &k_pointers_params(DEV, DEV + 0x40_0000, 64))); // 15
    lines.push(launch(102, "0xf1", "k_pointers", "0x0", &k_pointers_params(DEV, DEV + 0x100, 16))); // 16
    lines.push(d2h(102)); // 17: before rank 1's collective
    lines.push(launch(101, "0xf2", NCCL, "0x5000", &nccl_params)); // 18
    lines.push(launch(102, "0xf2", NCCL, "0x0", &nccl_params)); // 19
    lines.push(launch(102, "0xf1", "k_pointers", "0x5000", &k_pointers_params(DEV + 0x100, DEV, 8))); // 20: a stream rank 1 never created
    lines.push(launch(101, "0xf2", NCCL, "0x5000", &nccl_params)); // 21
    lines.push(d2h(102)); // 22: after it
    lines.push(call(101, "sync", "ctx_synchronize", "cuCtxSynchronize", json!({"ret": 0}))); // 23
    // --gpu-timestamps: rank 1's kernels measured.
    lines.push(
        json!({"type": "gpu", "op": "kernel", "pid": 102, "name": "k_pointers", "end_ts": 16_500, "stream_id": 7}),
    ); // 24
    lines.push(json!({"type": "gpu", "op": "kernel", "pid": 102, "name": NCCL, "end_ts": 24_000, "stream_id": 7})); // 25
    // Power samples of both GPUs.
    lines.push(json!({"type": "power", "op": "sample", "name": "nvml", "pid": 0, "tid": 0, "gpu": 0, "energy_mj": 100, "power_mw": 70_000})); // 26
    lines.push(json!({"type": "power", "op": "sample", "name": "nvml", "pid": 0, "tid": 0, "gpu": 1, "energy_mj": 200, "power_mw": 90_000})); // 27
    for (i, l) in lines.iter_mut().enumerate() {
        let ts = 1000 * (i as u64 + 2);
        l["ts"] = json!(ts);
    }
    lines[22]["ts"] = json!(16_000); // the gpu line of line 16's launch: 16.0–16.5 µs
    lines[23]["ts"] = json!(19_000); // line 19's collective: 19–24 µs
    edit(&mut lines);
    let mut text = vec![json!({"type": "header", "format": "tracer-jsonl", "format_version": 1, "replayable": {"capture_data": true, "data_cap_bytes": 1 << 30}}).to_string()];
    text.extend(lines.iter().map(|l| l.to_string()));
    text.push(json!({"type": "footer", "calls": lines.len()}).to_string());
    std::fs::write(dir.join("trace.jsonl"), text.join("\n") + "\n").unwrap();
    let kernels = json!([{"name": "k_pointers", "param_size": 20, "params": [[0, 8], [8, 8], [16, 4]]}]);
    let m = json!({
        "format": "tracer-recording", "schema_version": 1, "tracer_version": "0.1.0", "trace": "trace.jsonl",
        "capture_data": true,
        "images": [{"sha256": sha, "file": format!("images/{sha}"), "bytes": cubin.len(), "kind": "cubin", "loads": 2, "kernels": kernels}],
    });
    std::fs::write(dir.join("manifest.json"), serde_json::to_string_pretty(&m).unwrap()).unwrap();
}

fn recording() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    two_ranks(d.path(), |_| {});
    d
}

#[test]
fn rank_one_alone_has_only_its_non_collective_launches() {
    let d = recording();
    let p = selection::open_and_plan(d.path(), Some(Selection::Rank(1))).unwrap();
    let launches: Vec<(usize, &str, usize, &[u8])> = p
        .plan
        .ops
        .iter()
        .filter_map(|o| match &o.kind {
            OpKind::Launch(l) => Some((o.line, l.kernel.as_str(), l.params_len, l.params.as_slice())),
            _ => None,
        })
        .collect();
    let (p16, p20) = (k_pointers_params(DEV, DEV + 0x100, 16), k_pointers_params(DEV + 0x100, DEV, 8));
    assert_eq!(launches, vec![(16, "k_pointers", 20, p16.as_slice()), (20, "k_pointers", 20, p20.as_slice())]);
    assert!(p.plan.ops.iter().all(|o| o.pid == 102), "{:?}", p.plan.ops);
    // Coverage: rank 1's three launches, its collective skipped with the reason.
    let c = &p.plan.coverage;
    assert_eq!((c.launches, c.launches_replayed), (3, 2));
    assert_eq!(
        c.skipped_by_reason.iter().collect::<Vec<_>>(),
        vec![(&"collective: needs its peer ranks".to_owned(), &1)]
    );
    assert_eq!(c.skipped.iter().map(|s| (s.line, s.kernel.as_deref())).collect::<Vec<_>>(), vec![(19, Some(NCCL))]);
    let col = c.collectives.unwrap();
    assert_eq!((col.launches, col.first_line, col.first_ts), (1, 19, 19_000));
    assert_eq!((c.copies, c.copies_replayed), (2, 2));
    // Rank 0's stream 0x5000, event and second allocation are not seen: rank 1's 0x5000 is a stream it never created.
    assert!(p.plan.events.is_empty());
    let streams: Vec<(u32, u64, StreamKind)> = p.plan.streams.iter().map(|s| (s.pid, s.handle, s.kind)).collect();
    assert_eq!(streams, vec![(102, 0, StreamKind::Legacy), (102, 0x5000, StreamKind::Unknown)]);
    let ranges: Vec<(u64, u64, usize)> = p.plan.ranges.iter().map(|r| (r.start, r.size, r.line)).collect();
    assert_eq!(ranges, vec![(DEV, 4096, 11)]);
    // The selection: rank 1 of 2, its collective's measured 5 µs out of the recorded gpu lines.
    let s = p.selected.as_ref().unwrap();
    assert_eq!((s.pid, s.rank, s.world_size, s.processes, s.skip_collectives), (102, Some(1), Some(2), 2, true));
    assert_eq!((s.collective_gpu_lines, s.collective_gpu_ns, s.other_calls), (1, 5_000, 11));
    assert_eq!(p.rec.trace.gpu.iter().map(|g| g.line).collect::<Vec<_>>(), vec![24]);
    // Its GPU's power samples only, as GPU 0 (the GPU replay compares the recorded energy of).
    assert_eq!(s.recorded_gpu, Some(1));
    let power: Vec<(u64, u32, Option<u64>)> = p.rec.trace.power.iter().map(|p| (p.ts, p.gpu, p.energy_mj)).collect();
    assert_eq!(power, vec![(27_000, 0, Some(200))]);
    assert_eq!(
        p.notes,
        vec![
            "selected: pid 102 (rank 1 of 2), recorded on GPU 1, 1 of 2 processes (11 call lines of the others left out); collectives skipped: 1 launches (1 measured on the GPU took 5.0 µs when recorded)"
        ]
    );
    // The recorded time compared with the replay's: rank 1's k_pointers alone (0.5 µs), no collective.
    let t = replay::report::recorded_time(&p.rec.trace, &p.plan);
    assert_eq!((t.source.as_str(), t.busy_ns, t.kernels_ns), ("gpu_lines", 500, 500));
    // Output checks: line 17 (before the collective) counts, line 22 (after) is not comparable.
    let nc = selection::not_comparable(&p.plan, &[(17, true), (22, false)]).unwrap();
    assert_eq!(
        nc,
        NotComparable {
            collectives_skipped: 1,
            first_collective_line: 19,
            lines: vec![22],
            identical: 0,
            reason: "not comparable: 1 collectives skipped".into()
        }
    );
}

#[test]
fn rank_zero_by_pid_and_without_gpu_lines() {
    let d = tempfile::tempdir().unwrap();
    two_ranks(d.path(), |l| l.retain(|v| v["type"] != "gpu"));
    let p = selection::open_and_plan(d.path(), Some(Selection::Pid(101))).unwrap();
    let names: Vec<(usize, &str)> = p
        .plan
        .ops
        .iter()
        .filter_map(|o| match &o.kind {
            OpKind::Launch(l) => Some((o.line, l.kernel.as_str())),
            _ => None,
        })
        .collect();
    assert_eq!(names, vec![(15, "k_pointers")]);
    let c = &p.plan.coverage;
    assert_eq!((c.launches, c.launches_replayed, c.collectives.unwrap().launches), (3, 1, 2));
    assert_eq!(
        p.notes,
        vec![
            "selected: pid 101 (rank 0 of 2), recorded on GPU 0, 1 of 2 processes (9 call lines of the others left out); collectives skipped: 2 launches (their recorded GPU time was not measured (no gpu lines: record with --gpu-timestamps))"
        ]
    );
    // No output check after a collective: rank 0 copies nothing.
    assert_eq!(selection::not_comparable(&p.plan, &[]).unwrap().lines, Vec::<usize>::new());
}

#[test]
fn without_selection_every_process_runs_together_with_a_note() {
    let d = recording();
    let p = selection::open_and_plan(d.path(), None).unwrap();
    assert_eq!(
        p.notes,
        vec![
            "note: the recording has 2 processes (pid 101 rank 0, pid 102 rank 1): replay runs all their work in one process on one GPU (collectives between them cannot run there); --pid PID or --rank N replays one alone"
        ]
    );
    // As before selection existed: all six launches, the collectives among them.
    assert_eq!((p.plan.coverage.launches, p.plan.coverage.launches_replayed), (6, 6));
    assert_eq!(p.plan.coverage.collectives, None);
    assert!(selection::not_comparable(&p.plan, &[(22, false)]).is_none());
    let procs = ranks::processes(&p.rec.trace);
    assert_eq!(
        procs.iter().map(|p| (p.pid, p.calls, p.rank)).collect::<Vec<_>>(),
        vec![(101, 11, Some(0)), (102, 9, Some(1))]
    );
}

#[test]
fn unknown_rank_or_pid_names_the_processes_present() {
    let d = recording();
    let e = selection::open_and_plan(d.path(), Some(Selection::Rank(2))).err().unwrap();
    assert!(e.downcast_ref::<replay::Misuse>().is_some());
    assert_eq!(
        e.to_string(),
        "--rank 2: no process of the recording has rank 2 (processes: pid 101 rank 0, pid 102 rank 1; ranks come from the exec lines' \"rank\" field)"
    );
    let e = selection::open_and_plan(d.path(), Some(Selection::Pid(7))).err().unwrap();
    assert_eq!(
        e.to_string(),
        "--pid 7: no process of the recording has pid 7 with CUDA calls (processes: pid 101 rank 0, pid 102 rank 1)"
    );
}

#[test]
fn a_rank_that_is_not_an_integer_names_file_line_and_field() {
    let d = tempfile::tempdir().unwrap();
    two_ranks(d.path(), |l| l[1]["rank"] = json!("one"));
    let e = selection::open_and_plan(d.path(), Some(Selection::Rank(1))).err().unwrap();
    let want = format!(
        "{}:3: field `rank`: invalid type: string \"one\", expected u64",
        d.path().join("trace.jsonl").display()
    );
    assert_eq!(format!("{e:#}"), want);
}

#[test]
fn command_line_selects_and_refuses() {
    let bin = env!("CARGO_BIN_EXE_replay");
    for sub in ["run", "plan"] {
        let o = Command::new(bin).args([sub, "--help"]).output().unwrap();
        let help = String::from_utf8_lossy(&o.stdout);
        assert!(help.contains("--pid <PID>") && help.contains("--rank <N>"), "{sub}: {help}");
    }
    let d = recording();
    let o = Command::new(bin).args(["plan", d.path().to_str().unwrap(), "--rank", "1"]).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.lines().any(|l| l.starts_with("selected: pid 102 (rank 1 of 2)")), "{err}");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("launches: 3 (3 cuLaunchKernel), replayed 2 = 66.7 %\n  skipped 1: collective: needs its peer ranks (lines 19)\n"), "{out}");
    let o = Command::new(bin).args(["plan", d.path().to_str().unwrap(), "--rank", "3"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        "replay: error: --rank 3: no process of the recording has rank 3 (processes: pid 101 rank 0, pid 102 rank 1; ranks come from the exec lines' \"rank\" field)\n"
    );
    let o = Command::new(bin).args(["plan", d.path().to_str().unwrap()]).output().unwrap();
    assert_eq!(o.status.code(), Some(0));
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .contains("note: the recording has 2 processes (pid 101 rank 0, pid 102 rank 1)")
    );
    let o =
        Command::new(bin).args(["plan", d.path().to_str().unwrap(), "--rank", "1", "--pid", "102"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "--pid and --rank together are refused");
}

#[test]
fn output_checks_after_the_first_collective_do_not_fail_the_run() {
    let d = recording();
    let p = selection::open_and_plan(d.path(), Some(Selection::Rank(1))).unwrap();
    let checks = [(17, true), (22, false)];
    let nc = selection::not_comparable(&p.plan, &checks);
    assert!(selection::checks_pass(&checks, nc.as_ref()));
    // Before the collective a difference fails, as for one process.
    assert!(!selection::checks_pass(&[(17, false), (22, true)], nc.as_ref()));
    // Without selection every check counts.
    let all = selection::open_and_plan(d.path(), None).unwrap();
    assert!(!selection::checks_pass(&checks, selection::not_comparable(&all.plan, &checks).as_ref()));
}

#[test]
fn report_text_states_selection_and_not_comparable_outputs() {
    let d = recording();
    let p = selection::open_and_plan(d.path(), Some(Selection::Rank(1))).unwrap();
    let nc = selection::not_comparable(&p.plan, &[(17, true), (22, false)]).unwrap();
    let mut sel = serde_json::to_value(p.selected.as_ref().unwrap()).unwrap();
    sel["collectives_skipped"] = json!(1);
    let r = json!({
        "selection": sel,
        "outputs_not_comparable": nc,
        "output_checks": [
            {"line": 17, "size": 16, "matches": true, "mismatched_bytes": 0, "first_mismatch": null},
            {"line": 22, "size": 16, "matches": false, "mismatched_bytes": 16, "first_mismatch": 0}
        ],
    });
    let text = replay::report::text(&r);
    let tail: Vec<&str> =
        text.lines().filter(|l| l.starts_with("selected:") || l.starts_with("output check:")).collect();
    assert_eq!(
        tail,
        vec![
            "selected: pid 102 (rank 1 of 2), recorded on GPU 1, 1 of 2 processes; collectives skipped: 1 launches, 1 measured took 5.0 µs on the GPU when recorded (left out of the recorded time)",
            "output check: line 17: 16 bytes: bit-for-bit identical",
            "output check: line 22: 16 bytes: not comparable: 1 collectives skipped (16 bytes differ (first at 0); after the first skipped collective, line 19)",
        ]
    );
}

#[test]
fn a_launch_line_without_kernel_name_is_known_collective_by_its_function_handle() {
    let d = tempfile::tempdir().unwrap();
    two_ranks(d.path(), |l| {
        l[17].as_object_mut().unwrap().remove("kernel"); // line 19: rank 1's collective, func 0xf2
    });
    let p = selection::open_and_plan(d.path(), Some(Selection::Rank(1))).unwrap();
    let c = &p.plan.coverage;
    assert_eq!((c.launches, c.launches_replayed, c.collectives.unwrap().first_line), (3, 2, 19));
    assert_eq!(c.skipped.iter().map(|s| (s.line, s.kernel.as_deref())).collect::<Vec<_>>(), vec![(19, None)]);
}
