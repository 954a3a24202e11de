//! stack_report.rs on a hand-made trace with exact figures.
use super::*;
use crate::analysis::model::parse_str;
use crate::analysis::timeline;

fn stack(id: u64, addr: &str, frames: &[(&str, &str, u32)]) -> String {
    let mut f = vec![format!(
        r#"{{"kind":"native","fn":"cuLaunchKernel","module":"/usr/lib/x86_64-linux-gnu/libcuda.so.1","addr":"{addr}","offset":"0x10"}}"#
    )];
    f.extend(
        frames.iter().map(|(n, file, l)| format!(r#"{{"kind":"python","fn":"{n}","file":"/w/{file}","line":{l}}}"#)),
    );
    format!(r#"{{"type":"stack","id":{id},"pid":1,"tid":0,"ts":1,"frames":[{}]}}"#, f.join(","))
}

/// Launches at 1, 2.5, 4 and 5 ms (stacks 1, 6, 5, none; 1 and 6 differ
/// only inside libcuda), their kernels 990, 490, 100 and 10 µs; with
/// `measured` their `gpu` lines, else a sync after each (a bound timeline).
fn trace(measured: bool) -> Trace {
    trace_with(measured, r#"{"type":"header","pid":1,"command":["python3","train.py"]}"#)
}

fn trace_with(measured: bool, header: &str) -> Trace {
    let main = ("main", "train.py", 90);
    let mut l = vec![
        header.to_string(),
        stack(1, "0x7f0000001000", &[("train_step", "train.py", 60), main]),
        stack(6, "0x7f0000002000", &[("train_step", "train.py", 60), main]),
        stack(5, "0x7f0000001000", &[("eval", "eval.py", 10), main]),
    ];
    for (ts, st, len) in [
        (1_000_000u64, Some(1), 990_000u64),
        (2_500_000, Some(6), 490_000),
        (4_000_000, Some(5), 100_000),
        (5_000_000, None, 10_000),
    ] {
        let s = st.map_or(String::new(), |s| format!(r#","stack":{s}"#));
        l.push(format!(r#"{{"ts":{ts},"pid":1,"tid":1,"type":"kernel","op":"launch","name":"cuLaunchKernel","kernel":"k","grid":[1,1,1],"block":[1,1,1],"stream":"0x0","ret":0{s}}}"#));
        let (a, b) = (ts + 10_000, ts + 10_000 + len);
        if measured {
            l.push(format!(r#"{{"ts":{a},"end_ts":{b},"pid":1,"tid":0,"type":"gpu","op":"kernel","name":"k","source":"cupti","device":0,"stream":"0x0","stream_id":7}}"#));
        } else {
            l.push(format!(r#"{{"ts":{a},"pid":1,"tid":1,"type":"sync","op":"stream_synchronize","name":"cuStreamSynchronize","stream":"0x0","duration_us":{},"ret":0}}"#, len / 1000));
        }
    }
    parse_str("t", &l.join("\n")).unwrap()
}

fn fr(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn busy_and_idle_time_by_place() {
    let t = trace(true);
    let r = build(&t, &timeline::gpu_intervals(&t, None)).unwrap();
    assert_eq!((r.stacks, r.busy_basis, r.launches, r.launches_without_stack), (3, "measured", 4, 1));
    assert_eq!((r.busy_ns, r.busy_without_stack_ns), (Some(1_590_000), Some(10_000)));
    let step = fr(&["train_step (train.py:60)", "main (train.py:90)"]);
    let eval = fr(&["eval (eval.py:10)", "main (train.py:90)"]);
    assert_eq!(
        r.by_busy,
        [
            BusyRow { frames: step.clone(), stacks: vec![1, 6], launches: 2, busy_ns: Some(1_480_000) },
            BusyRow { frames: eval.clone(), stacks: vec![5], launches: 1, busy_ns: Some(100_000) },
            BusyRow { frames: vec![], stacks: vec![], launches: 1, busy_ns: Some(10_000) },
        ]
    );
    // gaps 2.0-2.51 (ended by stack 6), 3.0-4.01 (5), 4.11-5.01 (none)
    let c = &r.by_idle;
    assert_eq!((c.gaps, c.total_ns, c.gaps_without_stack, c.without_stack_ns), (3, 2_420_000, 1, 900_000));
    let parts: Vec<(&[String], u64)> = c.parts.iter().map(|p| (p.frames.as_slice(), p.ns)).collect();
    assert_eq!(parts, [(&eval[..], 1_010_000), (&[][..], 900_000), (&step[..], 510_000)]);
    // flame graphs: outermost first, libcuda's frames of 1 and 6 one node
    let b: Vec<(usize, u64, &str, u64)> =
        r.busy_flame.boxes().iter().map(|(d, x, n)| (*d, *x, n.name.as_str(), n.value)).collect();
    assert_eq!(
        b,
        [
            (0, 0, "all", 1_590_000),
            (1, 0, NO_STACK, 10_000),
            (1, 10_000, "main (train.py:90)", 1_580_000),
            (2, 10_000, "eval (eval.py:10)", 100_000),
            (3, 10_000, "cuLaunchKernel (libcuda.so.1)", 100_000),
            (2, 110_000, "train_step (train.py:60)", 1_480_000),
            (3, 110_000, "cuLaunchKernel (libcuda.so.1)", 1_480_000),
        ]
    );
    let i: Vec<(usize, &str, u64)> =
        r.idle_flame.boxes().iter().map(|(d, _, n)| (*d, n.name.as_str(), n.value)).collect();
    let cause = gap_stacks::NO_SCHED;
    assert_eq!(
        i,
        [
            (0, "all", 2_420_000),
            (1, NO_STACK, 900_000),
            (2, cause, 900_000),
            (1, "main (train.py:90)", 1_520_000),
            (2, "eval (eval.py:10)", 1_010_000),
            (3, "cuLaunchKernel (libcuda.so.1)", 1_010_000),
            (4, cause, 1_010_000),
            (2, "train_step (train.py:60)", 510_000),
            (3, "cuLaunchKernel (libcuda.so.1)", 510_000),
            (4, cause, 510_000),
        ]
    );
    let mut s = String::new();
    render(&mut s, &r);
    assert!(s.contains(
        "top stacks by GPU busy time (measured GPU time, 10.0 µs of 1.59 ms with no stack; 4 launches, 1 with no stack):\n  \
         busy %       busy  launches  where\n   \
         93.1%    1.48 ms         2  train_step (train.py:60) ← main (train.py:90)\n"
    ), "{s}");
    assert!(
        s.contains(
            "top stacks by GPU idle time (2.42 ms in 3 gaps of the GPUs, every gap; the launching threads' stacks):\n"
        ),
        "{s}"
    );
    assert!(
        s.contains(
            "   41.7%    1.01 ms  before the launch (no scheduler events) at eval (eval.py:10) ← main (train.py:90)\n"
        ),
        "{s}"
    );
    assert!(s.contains("  without a stack: 900.0 µs of 2.42 ms (1 of 3 gaps had none)\n"), "{s}");
}

#[test]
fn busy_time_unknown_ranks_by_launches() {
    let t = trace(false);
    let r = build(&t, &timeline::gpu_intervals(&t, None)).unwrap();
    assert_eq!((r.busy_basis, r.busy_ns), ("unknown", None));
    let rows: Vec<(usize, u64, Option<u64>)> =
        r.by_busy.iter().map(|b| (b.frames.len(), b.launches, b.busy_ns)).collect();
    assert_eq!(rows, [(2, 2, None), (0, 1, None), (2, 1, None)]);
    assert_eq!(r.busy_flame.value, 4, "the flame graph weighs launches");
    let mut s = String::new();
    render(&mut s, &r);
    assert!(s.contains("top stacks by launches (GPU busy time unknown: no measured or calibrated kernel durations; 4 launches, 1 with no stack):\n"), "{s}");
    assert!(s.contains("certain gaps only, a lower bound"), "{s}");
}

#[test]
fn no_stacks_no_section() {
    let t = parse_str(
        "t",
        r#"{"ts":1,"pid":1,"tid":1,"type":"kernel","op":"launch","name":"cuLaunchKernel","kernel":"k","stream":"0x0"}"#,
    )
    .unwrap();
    assert!(build(&t, &timeline::gpu_intervals(&t, None)).is_none());
}

#[test]
fn sampled_launch_stacks_say_so_and_share_the_sampled_time() {
    let h = r#"{"type":"header","pid":1,"command":["python3","train.py"],"stacks":{"native":true,"python":true,"sampling":{"launches":"sampled","idle_us":50,"interval_ms":10}}}"#;
    let t = trace_with(true, h);
    let r = build(&t, &timeline::gpu_intervals(&t, None)).unwrap();
    assert_eq!(r.launch_stacks.as_deref(), Some("sampled"));
    let mut s = String::new();
    render(&mut s, &r);
    assert!(s.contains("launch stacks are sampled (a launch takes a stack after 50 µs without a launch of its thread or a switch-out, else at most every 10 ms per thread): "), "{s}");
    // 1.48 of the 1.58 ms of the launches with a stack
    assert!(s.contains("   93.7%    1.48 ms         2  train_step (train.py:60) ← main (train.py:90)\n"), "{s}");
    assert!(s.contains("       -    10.0 µs         1  (no stack)\n"), "{s}");
    let all = r#"{"type":"header","pid":1,"command":["python3","train.py"],"stacks":{"sampling":{"launches":"all"}}}"#;
    let t = trace_with(true, all);
    let r = build(&t, &timeline::gpu_intervals(&t, None)).unwrap();
    assert_eq!((r.launch_stacks.as_deref(), r.sampling_rule.is_none()), (Some("all"), true));
}
