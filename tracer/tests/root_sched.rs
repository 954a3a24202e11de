//! Idle gaps explained down to the operating system: tests/fakecuda/fourgaps.c makes four
//! ~80 ms certain gaps between GPU submissions, asleep in nanosleep, spinning, blocked
//! reading a pipe and preempted by a SCHED_FIFO hog pinned to its CPU. A default recording
//! names each gap's cause in `tracer gaps` (text and JSON); `--no-sched` says it is not
//! recorded.
//!
//! `sudo -E TRACER_ROOT_TESTS=1 cargo test -p tracer --test root_sched -- --test-threads=1`
mod common;

use std::time::Duration;

use serde_json::Value;

struct Run {
    lines: Vec<Value>,
    /// [start, end] of each gap as the program measured it.
    gaps: Vec<(u64, u64)>,
    hog: u64,
    trace: std::path::PathBuf,
}

fn record(tracer_args: &[&str]) -> Run {
    let out = common::fresh_output("fourgaps");
    let prog = common::fake_program("fourgaps");
    let (status, stderr) = common::record_program(
        &out,
        tracer_args,
        &[prog.as_os_str(), "80".as_ref()],
        &[],
        Duration::from_secs(120),
        "fourgaps",
    );
    assert!(status.success(), "tracer on fourgaps: {status}\n{stderr}");
    let stdout = std::fs::read_to_string(out.with_extension("stdout")).unwrap();
    let mut gaps = vec![];
    let mut hog = 0;
    for l in stdout.lines() {
        let w: Vec<&str> = l.split_whitespace().collect();
        match w.as_slice() {
            ["gap", _, a, b] => gaps.push((a.parse().unwrap(), b.parse().unwrap())),
            ["hog", p] => hog = p.parse().unwrap(),
            _ => {}
        }
    }
    assert_eq!(gaps.len(), 4, "fourgaps printed: {stdout}");
    Run { lines: common::read_trace(&out).unwrap(), gaps, hog, trace: out }
}

fn tracer(args: &[&str]) -> String {
    let o = std::process::Command::new(common::tracer_bin()).args(args).output().unwrap();
    assert!(o.status.success(), "tracer {args:?}: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

/// The long gap of the `gpu 0` scope that holds the program's measured gap `g`.
fn gap_of(scope: &Value, g: (u64, u64)) -> &Value {
    scope["longest"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["start"].as_u64().unwrap() <= g.0 + 1_000_000 && x["end"].as_u64().unwrap() + 1_000_000 >= g.1)
        .unwrap_or_else(|| panic!("no long gap around {g:?}: {}", scope["longest"]))
}

/// The largest cause of a gap's `os` split, as `tracer gaps` names it.
fn main_cause(os: &Value) -> String {
    let mut c: Vec<(u64, String)> = vec![(os["on_cpu_ns"].as_u64().unwrap(), "on CPU".into())];
    for (k, v) in os["blocked"].as_object().unwrap() {
        let what = if k.contains("nanosleep") { "asleep in" } else { "blocked in" };
        c.push((v.as_u64().unwrap(), format!("{what} {k}")));
    }
    for (k, v) in os["runnable"].as_object().unwrap() {
        c.push((v.as_u64().unwrap(), k.clone()));
    }
    c.sort_by_key(|x| std::cmp::Reverse(x.0));
    c[0].1.clone()
}

#[test]
fn each_gap_is_named_by_its_operating_system_cause() {
    if !common::root_tests_enabled() {
        return;
    }
    let run = record(&[]);
    let header = &run.lines[0];
    assert_eq!(header["sched"], true, "{header}");
    assert_eq!(header["sched_path"], "raw_tracepoint", "{header}");
    let footer = run.lines.last().unwrap();
    assert_eq!(footer["lost"]["total"], 0, "{footer}");

    // The trace: the pipe read was woken by the writer thread, the hog's preemption names it.
    let off: Vec<&Value> = run.lines.iter().filter(|l| l["type"] == "sched" && l["op"] == "off_cpu").collect();
    let read = off
        .iter()
        .find(|l| l["syscall"] == "read" && l["end_ts"].as_u64().unwrap() >= run.gaps[2].1 - 1_000_000)
        .unwrap_or_else(|| panic!("no off_cpu line blocked in read: {off:?}"));
    assert_eq!(read["file"], "pipe", "{read}");
    assert_eq!(read["waker"]["comm"], "pipewriter", "{read}");
    assert_eq!(read["state"], "blocked", "{read}");
    assert_eq!(read["task_state"], "S", "{read}");

    let json: Value = serde_json::from_str(&tracer(&["gaps", "--json", run.trace.to_str().unwrap()])).unwrap();
    let gpu = &json["scopes"][0];
    assert_eq!(gpu["scope"], "gpu 0", "{json}");
    let want = [
        "asleep in clock_nanosleep".to_string(),
        "on CPU".to_string(),
        "blocked in read (pipe)".to_string(),
        format!("preempted by cpuhog (pid {})", run.hog),
    ];
    for (i, (g, w)) in run.gaps.iter().zip(&want).enumerate() {
        let gap = gap_of(gpu, *g);
        let os = &gap["os"];
        let total = os["total_ns"].as_u64().unwrap();
        assert_eq!(total, gap["dur_ns"].as_u64().unwrap(), "gap {}: {os}", i + 1);
        // Each part of the gap is in exactly one state.
        let parts: u64 = ["on_cpu_ns", "blocked_ns", "runnable_ns", "page_fault_ns", "unknown_ns"]
            .iter()
            .map(|k| os[k].as_u64().unwrap())
            .sum();
        assert_eq!(parts, total, "gap {}: {os}", i + 1);
        assert_eq!(os["unknown_ns"], 0, "gap {}: nothing lost, nothing unknown: {os}", i + 1);
        let main = match i {
            0 => os["blocked"]["clock_nanosleep"].as_u64(),
            1 => os["on_cpu_ns"].as_u64(),
            2 => os["blocked"]["read (pipe)"].as_u64(),
            _ => os["runnable"][want[3].as_str()].as_u64(),
        }
        .unwrap_or_else(|| panic!("gap {}: no `{}` in {os}", i + 1, w));
        // The program's own gap is at least 80 ms; the cause covers most of it (the rest is
        // the time between the synchronization's return and the program's clock reads),
        // whatever else loads the machine: a sleep and a pipe read block at least 80 ms,
        // and the program runs at SCHED_FIFO (the spin keeps its CPU, the hog above it
        // is the only task that runs in its place).
        assert!(main >= 60_000_000, "gap {}: {w} for {main} ns only: {os}", i + 1);
        assert_eq!(main_cause(os), *w, "gap {}: {os}", i + 1);
        assert_eq!(os["thread"]["tid"], header["pid"], "gap {}: the launching thread is the main one: {os}", i + 1);
    }

    // The text names each gap's main cause on its thread line.
    let text = tracer(&["gaps", run.trace.to_str().unwrap()]);
    for w in &want {
        assert!(
            text.lines().any(|l| l.contains(": ") && l.split(": ").nth(1).is_some_and(|r| r.starts_with(w.as_str()))),
            "no gap whose main cause is `{w}`:\n{text}"
        );
    }
    assert!(text.contains("what the launching threads did during gaps ≥ threshold (scheduler events): "), "{text}");
}

#[test]
fn without_scheduler_events_the_gaps_say_so() {
    if !common::root_tests_enabled() {
        return;
    }
    let run = record(&["--no-sched"]);
    assert_eq!(run.lines[0]["sched"], false);
    assert!(!run.lines.iter().any(|l| l["type"] == "sched"), "no sched lines with --no-sched");
    let text = tracer(&["gaps", run.trace.to_str().unwrap()]);
    assert!(text.contains("why the launching threads were not launching: not recorded"), "{text}");
}

/// The recorder's own threads in `held_by` are marked, and the footer sums them: the tracer
/// and a launch loop share one CPU (the test thread's affinity, which both inherit), so the
/// collector, draining the loop's records, takes that CPU from the loop's thread now and then.
#[test]
fn the_recorders_own_threads_are_marked_where_they_held_a_traced_threads_cpu() {
    if !common::root_tests_enabled() {
        return;
    }
    // SAFETY: plain affinity calls on this (the test's) thread; the old mask is put back.
    let mut old: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut old) };
    let mut one: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let cpu = (0..libc::CPU_SETSIZE as usize).find(|&c| unsafe { libc::CPU_ISSET(c, &old) }).unwrap();
    unsafe { libc::CPU_SET(cpu, &mut one) };
    assert_eq!(unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &one) }, 0);
    let out = common::fresh_output("recorder-held");
    let bench = common::fake_program("bench");
    let (status, stderr) = common::record_program(
        &out,
        &["--no-power", "--no-gpu"],
        &[bench.as_os_str(), "calls".as_ref(), "launch".as_ref(), "300000".as_ref(), "1".as_ref()],
        &[],
        Duration::from_secs(120),
        "bench launch",
    );
    unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &old) };
    assert!(status.success(), "tracer on bench: {status}\n{stderr}");
    let lines = common::read_trace(&out).unwrap();
    let header = lines.iter().find(|l| l["type"] == "header").unwrap();
    let footer = lines.iter().find(|l| l["type"] == "footer").unwrap();
    let (mut marked, mut by_name) = (0u64, std::collections::BTreeMap::<String, u64>::new());
    let mut held_lines = 0;
    for l in lines.iter().filter(|l| l["type"] == "sched" && l["op"] == "off_cpu") {
        for h in l["held_by"].as_array().into_iter().flatten() {
            held_lines += 1;
            let is_recorder = h["recorder"] == true;
            // marked exactly when the holder is the tracer's own process (its pid is the header's)
            let recorder_pid = header["recorder_pid"].as_u64();
            if let (Some(p), Some(r)) = (h["pid"].as_u64(), recorder_pid) {
                assert_eq!(is_recorder, p == r, "{h}");
            }
            if is_recorder {
                marked += h["ns"].as_u64().unwrap();
                *by_name.entry(h["comm"].as_str().unwrap().to_string()).or_default() += h["ns"].as_u64().unwrap();
            }
        }
    }
    assert!(held_lines > 0 && marked > 0, "the collector never held the loop's CPU: {}", footer["sched"]);
    let want: serde_json::Map<String, Value> = by_name.into_iter().map(|(k, v)| (k, v.into())).collect();
    assert_eq!(footer["sched"]["held_by_recorder"], Value::Object(want), "footer against the lines");
    assert_eq!(footer["collector"]["sched"]["tracer"], "batch");
}

/// The command runs under the normal scheduling policy, not the recorder's (collect/own_sched.rs).
#[test]
fn the_command_runs_under_the_normal_policy() {
    if !common::root_tests_enabled() {
        return;
    }
    let out = common::fresh_output("command-policy");
    let (status, stderr) = common::record_program(
        &out,
        &["--no-power", "--no-gpu"],
        &["/bin/sh".as_ref(), "-c".as_ref(), "chrt -p $$".as_ref()],
        &[],
        Duration::from_secs(60),
        "chrt",
    );
    assert!(status.success(), "tracer on chrt: {status}\n{stderr}");
    let stdout = std::fs::read_to_string(out.with_extension("stdout")).unwrap();
    assert!(stdout.contains("scheduling policy: SCHED_OTHER"), "{stdout}");
}
