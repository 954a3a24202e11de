//! gap_stacks.rs on hand-made traces with exact figures.
use super::*;
use crate::analysis::model::parse_str;

const LIBCUDA: &str = "/usr/lib/x86_64-linux-gnu/libcuda.so.1";
const LIBC: &str = "/usr/lib/x86_64-linux-gnu/libc.so.6";

fn native(f: &str, m: &str) -> String {
    format!(r#"{{"kind":"native","fn":"{f}","module":"{m}","addr":"0x1000","offset":"0x10"}}"#)
}
fn py(f: &str, file: &str, line: u32) -> String {
    format!(r#"{{"kind":"python","fn":"{f}","file":"/home/u/{file}","line":{line}}}"#)
}
fn stack(id: u64, frames: &[String]) -> String {
    format!(
        r#"{{"type":"stack","op":"stack","name":"stack","id":{id},"pid":1,"tid":0,"ts":1,"frames":[{}]}}"#,
        frames.join(",")
    )
}
fn launch(ts: u64, stack: Option<u64>) -> String {
    let s = stack.map_or(String::new(), |s| format!(r#","stack":{s}"#));
    format!(
        r#"{{"ts":{ts},"pid":1,"tid":1,"type":"kernel","op":"launch","name":"cuLaunchKernel","kernel":"k","grid":[1,1,1],"block":[1,1,1],"stream":"0x0","ret":0{s}}}"#
    )
}
fn gpu(a: u64, b: u64) -> String {
    format!(
        r#"{{"ts":{a},"end_ts":{b},"pid":1,"tid":0,"type":"gpu","op":"kernel","name":"k","source":"cupti","device":0,"stream":"0x0","stream_id":7}}"#
    )
}

/// Python process 1, thread 1: launches at 1 ms and 7 ms (kernels 1.01-2 ms
/// and 7.01-8 ms), a sync at 1.02 ms returning at 2 ms; in the gap 2-7.01
/// ms it blocks in a file read 2.1-5.1 ms (woken at 5.0: wake-up latency)
/// at load_batch and is preempted 5.5-6.0 ms at compute.
fn lines(sched: bool, second_stack: Option<u64>) -> Vec<String> {
    let mut l = vec![
        format!(r#"{{"type":"header","pid":1,"command":["python3","train.py"],"sched":{sched}}}"#),
        stack(1, &[native("cuLaunchKernel", LIBCUDA), py("train_step", "train.py", 60), py("main", "train.py", 90)]),
        stack(2, &[native("cuStreamSynchronize", LIBCUDA), py("train_step", "train.py", 70), py("main", "train.py", 90)]),
        stack(3, &[native("read", LIBC), py("load_batch", "data.py", 41), py("main", "train.py", 88)]),
        stack(4, &[py("compute", "train.py", 50), py("main", "train.py", 89)]),
        launch(1_000_000, Some(1)),
        gpu(1_010_000, 2_000_000),
        r#"{"ts":1020000,"pid":1,"tid":1,"type":"sync","op":"stream_synchronize","name":"cuStreamSynchronize","stream":"0x0","duration_us":980,"ret":0,"stack":2}"#.into(),
        launch(7_000_000, second_stack),
        gpu(7_010_000, 8_000_000),
    ];
    if sched {
        l.extend([
            r#"{"ts":500,"pid":1,"tid":1,"type":"sched","op":"thread_seen","name":"thread_seen"}"#.to_string(),
            r#"{"ts":2100000,"end_ts":5100000,"pid":1,"tid":1,"type":"sched","op":"off_cpu","name":"read","state":"blocked","syscall":"read","file":"file /data/x.bin","runnable_ns":100000,"behind":{"pid":0,"tid":0,"comm":"swapper/0"},"stack":3}"#.into(),
            r#"{"ts":5500000,"end_ts":6000000,"pid":1,"tid":1,"type":"sched","op":"off_cpu","name":"runnable","state":"runnable","preempted":true,"runnable_ns":500000,"held_by":[{"pid":9,"tid":9,"comm":"hog","ns":500000}],"stack":4}"#.into(),
        ]);
    }
    l
}

fn part(cause: &str, frames: &[&str], stacks: &[u64], ns: u64) -> CodePart {
    CodePart {
        cause: cause.into(),
        frames: frames.iter().map(|f| f.to_string()).collect(),
        stacks: stacks.to_vec(),
        ns,
    }
}

const GAP: (u64, u64) = (2_000_000, 7_010_000);

#[test]
fn off_cpu_intervals_at_their_stacks_the_rest_at_the_launch() {
    let t = parse_str("t", &lines(true, Some(1)).join("\n")).unwrap();
    let at = Attributor::new(&t, &BTreeSet::from([1]));
    let g = at.gap(GAP.0, GAP.1);
    assert_eq!(g.thread, Some(ThreadId { pid: 1, tid: 1 }));
    assert_eq!((g.ended_by, g.began_at), (Some(1), Some(2)));
    assert_eq!(g.began_at_frames, ["train_step (train.py:70)", "main (train.py:90)"]);
    let load = ["load_batch (data.py:41)", "main (train.py:88)"];
    assert_eq!(
        g.code.parts,
        [
            part("blocked in read (file)", &load, &[3], 2_900_000),
            part(ON_CPU, &["train_step (train.py:60)", "main (train.py:90)"], &[1], 1_510_000),
            part("preempted by hog (pid 9)", &["compute (train.py:50)", "main (train.py:89)"], &[4], 500_000),
            part("wake-up latency", &load, &[3], 100_000),
        ]
    );
    assert_eq!(
        (g.code.gaps, g.code.total_ns, g.code.gaps_without_stack, g.code.without_stack_ns),
        (1, 5_010_000, 0, 0)
    );
    assert_eq!(g.code.parts[0].sentence(), "blocked in read (file) at load_batch (data.py:41) ← main (train.py:88)");
    assert_eq!(
        g.code.sentence(2),
        "blocked in read (file) at load_batch (data.py:41) ← main (train.py:88) 58 %; on CPU at train_step (train.py:60) ← main (train.py:90) 30 %"
    );
    // A window inside the gap (a phase's part): 4-6.5 ms.
    let w = at.split_within(&[GAP], std::slice::from_ref(&g), 4_000_000, 6_500_000);
    assert_eq!(
        w.parts.iter().map(|p| (p.cause.as_str(), p.ns)).collect::<Vec<_>>(),
        [
            ("blocked in read (file)", 1_000_000),
            ("on CPU", 900_000),
            ("preempted by hog (pid 9)", 500_000),
            ("wake-up latency", 100_000)
        ]
    );
    assert_eq!(w.total_ns, 2_500_000);
}

#[test]
fn time_without_a_stack_is_counted_never_given_another() {
    // The second launch has no stack, then one no line defines.
    for second in [None, Some(77)] {
        let t = parse_str("t", &lines(true, second).join("\n")).unwrap();
        let at = Attributor::new(&t, &BTreeSet::from([1]));
        let c = at.split(&[GAP]);
        let on_cpu = c.parts.iter().find(|p| p.cause == ON_CPU).unwrap();
        assert_eq!((on_cpu.frames.len(), on_cpu.stacks.len(), on_cpu.ns), (0, 0, 1_510_000));
        assert_eq!(on_cpu.sentence(), "on CPU (no stack)");
        assert_eq!((c.without_stack_ns, c.gaps_without_stack), (1_510_000, 0), "the gap had stacks elsewhere");
    }
    // No stacks at all in the gap: counted as a gap without a stack.
    let t = parse_str("t", &lines(false, None).join("\n")).unwrap();
    let c = Attributor::new(&t, &BTreeSet::from([1])).split(&[GAP]);
    assert_eq!((c.gaps, c.gaps_without_stack, c.without_stack_ns), (1, 1, 5_010_000));
    assert_eq!(c.parts, [part(NO_SCHED, &[], &[], 5_010_000)]);
}

#[test]
fn without_scheduler_events_the_gap_goes_to_the_launch() {
    let t = parse_str("t", &lines(false, Some(1)).join("\n")).unwrap();
    let at = Attributor::new(&t, &BTreeSet::from([1]));
    let c = at.split(&[GAP]);
    assert_eq!(c.parts, [part(NO_SCHED, &["train_step (train.py:60)", "main (train.py:90)"], &[1], 5_010_000)]);
    let mut s = String::new();
    render_split(&mut s, "  ", &c, 3);
    assert_eq!(
        s,
        "  100.0%    5.01 ms  before the launch (no scheduler events) at train_step (train.py:60) ← main (train.py:90)\n"
    );
}

#[test]
fn lost_records_and_time_before_the_first_event_are_unknown() {
    let mut l = lines(true, Some(1));
    l.push(r#"{"ts":2000000,"end_ts":2600000,"pid":0,"tid":0,"type":"sched","op":"lost","name":"lost","cpu":0,"records":3}"#.into());
    let t = parse_str("t", &l.join("\n")).unwrap();
    let c = Attributor::new(&t, &BTreeSet::from([1])).split(&[GAP]);
    let get = |cause: &str| c.parts.iter().filter(|p| p.cause == cause).map(|p| p.ns).sum::<u64>();
    // 2.0-2.6 ms lost: 0.1 ms on CPU and 0.5 ms of the read gone to unknown
    assert_eq!((get(UNKNOWN), get("blocked in read (file)"), get(ON_CPU)), (600_000, 2_400_000, 1_410_000));
    assert_eq!(c.without_stack_ns, 600_000);
    assert_eq!(c.parts.iter().map(|p| p.ns).sum::<u64>(), 5_010_000, "every ns once");
}

#[test]
fn names_are_escaped_in_text() {
    let mut l = lines(false, Some(8));
    l.push(stack(8, &[py("evil\\u001b[2J", "x\\u0007.py", 3)]));
    let t = parse_str("t", &l.join("\n")).unwrap();
    let c = Attributor::new(&t, &BTreeSet::from([1])).split(&[GAP]);
    assert_eq!(c.parts[0].frames, ["evil\u{1b}[2J (x\u{7}.py:3)"], "kept whole for JSON");
    assert_eq!(c.parts[0].sentence(), "before the launch (no scheduler events) at evil\\x1b[2J (x\\x07.py:3)");
}

#[test]
fn tracer_gaps_names_the_code_per_gap_and_per_scope() {
    use crate::analysis::{gaps, phases, timeline};
    let t = parse_str("t.jsonl", &lines(true, Some(1)).join("\n")).unwrap();
    let tl = timeline::gpu_intervals(&t, None);
    let r = gaps::analyze(&t, &tl, &phases::phases(&t), &gaps::GapOptions::default());
    let sc = &r.scopes[0];
    assert_eq!(sc.gaps, [GAP]);
    let c = sc.long_gap_code.as_ref().unwrap();
    assert_eq!((c.gaps, c.total_ns, c.parts.len()), (1, 5_010_000, 4));
    let g = sc.longest[0].code.as_ref().unwrap();
    assert_eq!(g.code, *c);
    let text = gaps::render(&r);
    assert!(
        text.contains(
            "which code held the GPU idle in gaps ≥ threshold (the launching threads' stacks):\n   \
             57.9%    2.90 ms  blocked in read (file) at load_batch (data.py:41) ← main (train.py:88)\n   \
             30.1%    1.51 ms  on CPU at train_step (train.py:60) ← main (train.py:90)\n   \
             10.0%   500.0 µs  preempted by hog (pid 9) at compute (train.py:50) ← main (train.py:89)\n    \
             2.0%   100.0 µs  wake-up latency at load_batch (data.py:41) ← main (train.py:88)\n"
        ),
        "{text}"
    );
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    let at = lines.iter().position(|l| l.starts_with("code:")).expect("a code line");
    assert_eq!(
        lines[at..at + 4],
        [
            "code:  58 % blocked in read (file) at load_batch (data.py:41) ← main (train.py:88)",
            "30 % on CPU at train_step (train.py:60) ← main (train.py:90)",
            "10 % preempted by hog (pid 9) at compute (train.py:50) ← main (train.py:89)",
            "when it began the thread was at train_step (train.py:70) ← main (train.py:90)",
        ]
    );
    assert!(text.contains("when it began the thread was at train_step (train.py:70) ← main (train.py:90)\n"), "{text}");
    let json = serde_json::to_value(&r).unwrap();
    let p0 = &json["scopes"][0]["long_gap_code"]["parts"][0];
    assert_eq!(p0["cause"], "blocked in read (file)");
    assert_eq!(p0["frames"], serde_json::json!(["load_batch (data.py:41)", "main (train.py:88)"]));
    assert_eq!((p0["stacks"][0].as_u64(), p0["ns"].as_u64()), (Some(3), Some(2_900_000)));
    assert_eq!(json["scopes"][0]["longest"][0]["code"]["began_at"], 2);
    assert_eq!(json["stacks"], 4);
}

#[test]
fn a_trace_without_stacks_says_so() {
    use crate::analysis::{gaps, phases, timeline};
    let l: Vec<String> = lines(true, None).into_iter().filter(|l| !l.contains(r#""type":"stack""#)).collect();
    let l: Vec<String> = l
        .into_iter()
        .map(|l| {
            l.replace(r#","stack":2"#, "")
                .replace(r#","stack":3"#, "")
                .replace(r#","stack":4"#, "")
                .replace(r#","stack":1"#, "")
        })
        .collect();
    let t = parse_str("t.jsonl", &l.join("\n")).unwrap();
    let tl = timeline::gpu_intervals(&t, None);
    let r = gaps::analyze(&t, &tl, &phases::phases(&t), &gaps::GapOptions::default());
    assert!(r.scopes[0].long_gap_code.is_none() && r.scopes[0].longest[0].code.is_none());
    assert!(!gaps::render(&r).contains("which code held the GPU idle"), "a trace of a tracer before stacks");
    let mut l = l;
    l[0] = l[0].replace(r#""sched":true"#, r#""sched":true,"stacks":null"#);
    let t = parse_str("t.jsonl", &l.join("\n")).unwrap();
    let r = gaps::analyze(&t, &timeline::gpu_intervals(&t, None), &phases::phases(&t), &gaps::GapOptions::default());
    assert!(
        gaps::render(&r).contains(
            "which code held the GPU idle: no stacks in the trace (recorded with --no-stacks, or none taken)\n"
        )
    );
}

#[test]
fn each_phase_gets_its_part_of_a_gap() {
    use crate::analysis::{gaps, phases, timeline};
    let mut l = lines(true, Some(1));
    l.push(r#"{"ts":600,"pid":1,"tid":1,"type":"marker","op":"phase","name":"marker","label":"load"}"#.into());
    l.push(r#"{"ts":4000000,"pid":1,"tid":1,"type":"marker","op":"phase","name":"marker","label":"train"}"#.into());
    let t = parse_str("t.jsonl", &l.join("\n")).unwrap();
    let r = gaps::analyze(&t, &timeline::gpu_intervals(&t, None), &phases::phases(&t), &gaps::GapOptions::default());
    let sc = &r.scopes[0];
    let by_phase: Vec<(&str, Vec<(&str, u64)>)> = sc
        .phases
        .iter()
        .map(|p| {
            let c = p.code.as_ref().unwrap();
            (p.phase.as_str(), c.parts.iter().map(|x| (x.cause.as_str(), x.ns)).collect())
        })
        .collect();
    // the gap 2.0-7.01 ms: 2.0-4.0 in load (read from 2.1), 4.0-7.01 in train
    assert_eq!(
        by_phase,
        [
            ("load", vec![("blocked in read (file)", 1_900_000), (ON_CPU, 100_000)]),
            (
                "train",
                vec![
                    (ON_CPU, 1_410_000),
                    ("blocked in read (file)", 1_000_000),
                    ("preempted by hog (pid 9)", 500_000),
                    ("wake-up latency", 100_000)
                ]
            ),
        ]
    );
    let text = gaps::render(&r);
    assert!(text.contains("  in load:\n     95.0%    1.90 ms  blocked in read (file) at load_batch (data.py:41) ← main (train.py:88)\n"), "{text}");
    assert!(
        text.contains("  in train:\n     46.8%    1.41 ms  on CPU at train_step (train.py:60) ← main (train.py:90)\n"),
        "{text}"
    );
}

fn sample(ts: u64, stack: u64) -> String {
    format!(r#"{{"type":"sample","op":"cpu","name":"sample","ts":{ts},"pid":1,"tid":1,"stack":{stack}}}"#)
}

/// The gap's on-CPU time (2.0-2.1, 5.1-5.5 and 6.0-7.01 ms: 1.51 ms) is
/// divided among the thread's samples in it: one at compute (2.05 ms), two
/// at decode_images (5.2, 6.5 ms); the samples in its off-CPU time (3.0 ms,
/// blocked), after it (7.5 ms) and of an undefined stack (6.7 ms) count not.
#[test]
fn on_cpu_time_goes_to_the_samples_stacks() {
    let mut l = lines(true, Some(1));
    l.extend([
        stack(
            5,
            &[
                py("decode_images", "shard_reader.py", 41),
                py("load_batch", "train_loader.py", 20),
                py("main", "train_loader.py", 58),
            ],
        ),
        sample(2_050_000, 4),
        sample(3_000_000, 3),
        sample(5_200_000, 5),
        sample(6_500_000, 5),
        sample(6_700_000, 99),
        sample(7_500_000, 4),
    ]);
    let t = parse_str("t", &l.join("\n")).unwrap();
    let at = Attributor::new(&t, &BTreeSet::from([1]));
    let g = at.gap(GAP.0, GAP.1);
    let load = ["load_batch (data.py:41)", "main (train.py:88)"];
    let decode = ["decode_images (shard_reader.py:41)", "load_batch (train_loader.py:20)", "main (train_loader.py:58)"];
    let compute = ["compute (train.py:50)", "main (train.py:89)"];
    // 1_510_000 · 1/3 = 503_333 (floor) to compute, the rest to decode_images.
    assert_eq!(
        g.code.parts,
        [
            part("blocked in read (file)", &load, &[3], 2_900_000),
            part(ON_CPU, &decode, &[5], 1_006_667),
            part(ON_CPU, &compute, &[4], 503_333),
            part("preempted by hog (pid 9)", &compute, &[4], 500_000),
            part("wake-up latency", &load, &[3], 100_000),
        ]
    );
    assert_eq!(
        (g.code.total_ns, g.code.sampled_on_cpu_ns, g.code.unsampled_on_cpu_ns, g.code.samples),
        (5_010_000, 1_510_000, 0, 3)
    );
    assert_eq!(
        g.code.parts[1].sentence(),
        "on CPU at decode_images (shard_reader.py:41) ← load_batch (train_loader.py:20) ← main (train_loader.py:58)"
    );
    // Without samples: the ending launch's stack, counted as unsampled.
    let t = parse_str("t", &lines(true, Some(1)).join("\n")).unwrap();
    let g = Attributor::new(&t, &BTreeSet::from([1])).gap(GAP.0, GAP.1);
    assert_eq!((g.code.sampled_on_cpu_ns, g.code.unsampled_on_cpu_ns, g.code.samples), (0, 1_510_000, 0));
}

#[test]
fn samples_split_the_ns_exactly() {
    assert_eq!(split_by_samples(10, &[7, 8, 7]), [(7, 2, 6), (8, 1, 4)]);
    assert_eq!(split_by_samples(1, &[1, 2, 3]), [(1, 1, 0), (2, 1, 0), (3, 1, 1)]);
    assert_eq!(split_by_samples(u64::MAX, &[1, 1]), [(1, 2, u64::MAX)]);
}
