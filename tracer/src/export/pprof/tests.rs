//! The profile of tests/fixtures/stacks/train.jsonl, value by value: a
//! loop whose two launches, synchronization and blocking read have stacks
//! (one launch and the second synchronization's stack missing).
use std::collections::BTreeMap;

use super::values::{self, Key, Missing};
use super::*;
use crate::analysis::model::parse_str;
use crate::analysis::timeline;

const TRAIN: &str = include_str!("../../../tests/fixtures/stacks/train.jsonl");

fn values_of(t: &Trace, tl: &Timeline) -> BTreeMap<Key, values::Row> {
    let v = values::of(t, tl);
    let mut sum = [0i64; 5];
    for r in v.by_key.values() {
        for (s, x) in sum.iter_mut().zip(r) {
            *s += x;
        }
    }
    assert_eq!(sum, v.totals);
    v.by_key
}

#[test]
fn measured_values_per_stack() {
    let t = parse_str("train.jsonl", TRAIN).unwrap();
    let tl = timeline::measured(&t);
    let v = values_of(&t, &tl);
    // [launches, calls, gpu_time, gpu_idle, off_cpu]
    let want: BTreeMap<Key, values::Row> = [
        // step:20 launched k1 twice (10 µs each); the gap 17-100 µs: 21 µs on CPU up to this launch
        (Key::Stack(1), [2, 2, 20_000, 21_000, 0]),
        (Key::Stack(2), [1, 1, 5_000, 0, 0]),
        (Key::Stack(3), [0, 1, 0, 0, 0]),
        // blocked in read 20-80 µs, inside the gap
        (Key::Stack(4), [0, 0, 0, 60_000, 60_000]),
        // the second k2 launch had no stack; the preemption 85-87 µs (in the gap) neither
        (Key::Missing(100, Missing::NoStack), [1, 1, 5_000, 2_000, 2_000]),
        // the second synchronization named stack 9, which no line defines
        (Key::Missing(100, Missing::Undefined), [0, 1, 0, 0, 0]),
    ]
    .into();
    assert_eq!(v, want);
}

#[test]
fn inferred_gpu_time_from_calibrated_durations_bound_none() {
    let t = parse_str(
        "train.jsonl",
        &TRAIN.lines().filter(|l| !l.contains("\"type\":\"gpu\"")).collect::<Vec<_>>().join("\n"),
    )
    .unwrap();
    let d = timeline::tests::durs(&[("k1", 10_000), ("k2", 5_000)]);
    let tl = timeline::inferred(&t, &d);
    let v = values_of(&t, &tl);
    let gpu: Vec<(Key, i64)> = v.iter().map(|(k, r)| (*k, r[values::GPU_TIME])).filter(|x| x.1 > 0).collect();
    // the first k2 (call 1) ends at the synchronization's return (17.1 µs), after k1's 10 µs
    let first_k2: Vec<u64> = tl.streams[0].intervals.iter().filter(|i| i.call == 1).map(|i| i.dur()).collect();
    assert_eq!(first_k2, [4_100]);
    assert_eq!(gpu, [(Key::Stack(1), 20_000), (Key::Stack(2), 4_100), (Key::Missing(100, Missing::NoStack), 5_000)]);
    let tl = timeline::bound(&t);
    let v = values_of(&t, &tl);
    assert!(v.values().all(|r| r[values::GPU_TIME] == 0));
    let (p, _) = profile(&t, &tl);
    let comments: Vec<&str> = p.comment.iter().map(|&i| p.string_table[i as usize].as_str()).collect();
    assert!(comments[1].starts_with("gpu_time: 0 everywhere: the bound timeline"), "{comments:?}");
}

#[test]
fn the_profile_names_frames_files_and_lines() {
    let t = parse_str("train.jsonl", TRAIN).unwrap();
    let tl = timeline::measured(&t);
    let (p, w) = profile(&t, &tl);
    assert_eq!((w.samples, w.stacks), (6, 4));
    assert_eq!(w.totals, [4, 6, 30_000, 83_000, 62_000]);
    let s = |i: i64| p.string_table[i as usize].as_str();
    let types: Vec<(&str, &str)> = p.sample_type.iter().map(|v| (s(v.r#type), s(v.unit))).collect();
    assert_eq!(types, values::TYPES);
    assert_eq!(s(p.default_sample_type), "gpu_idle");
    assert_eq!(p.time_nanos, 1_700_000_000_000_001_000);
    // the read's sample: libc's read, the stripped library, then Python
    let read = p.sample.iter().find(|x| x.value[values::OFF_CPU] == 60_000).unwrap();
    let frames: Vec<String> = read
        .location_id
        .iter()
        .map(|&id| {
            let l = &p.location[id as usize - 1];
            let f = &p.function[l.line[0].function_id as usize - 1];
            format!("{} {}:{} @{:#x}", s(f.name), s(f.filename), l.line[0].line, l.address)
        })
        .collect();
    assert_eq!(
        frames,
        [
            "read /usr/lib/x86_64-linux-gnu/libc.so.6:0 @0x7f1000003000",
            "[unknown] /opt/lib/libstripped.so:0 @0x7f2000000400",
            "load_batch /home/u/data.py:41 @0x0",
            "main /home/u/train.py:38 @0x0",
            "main Programs/python.c:15 @0x55d0c0a01234",
        ]
    );
    let labels: Vec<(&str, i64)> = read.label.iter().map(|l| (s(l.key), l.num)).collect();
    assert_eq!(labels, [("pid", 100), ("stack", 4)]);
    // the executable first (readers take mapping 1 for the main binary), then the shared objects
    let maps: Vec<(u64, &str)> = p.mapping.iter().map(|m| (m.id, s(m.filename))).collect();
    assert_eq!(
        maps,
        [
            (1, "/usr/bin/python3.11"),
            (2, "/usr/lib/x86_64-linux-gnu/libcuda.so.1"),
            (3, "/usr/lib/x86_64-linux-gnu/libc.so.6"),
            (4, "/opt/lib/libstripped.so")
        ]
    );
    assert_eq!((p.mapping[1].memory_start, p.mapping[1].memory_limit), (0x7f00_0000_0000, 0x7f00_0000_2001));
    // cuLaunchKernel's location is in libcuda's mapping, python.c's main in the executable's
    assert_eq!((p.location[0].address, p.location[0].mapping_id), (0x7f00_0000_1000, 2));
    assert_eq!((p.location[3].address, p.location[3].mapping_id), (0x55d0_c0a0_1234, 1));
}

#[test]
fn a_trace_without_stacks_is_one_sample_per_process() {
    let plain: String = TRAIN.lines().filter(|l| !l.contains("\"type\":\"stack\"")).collect::<Vec<_>>().join("\n");
    let t = parse_str("plain.jsonl", &plain).unwrap();
    let tl = timeline::measured(&t);
    let v = values_of(&t, &tl);
    // the lines still name ids 1..4 and 9, none defined
    assert_eq!(
        v.keys().collect::<Vec<_>>(),
        [&Key::Missing(100, Missing::NoStack), &Key::Missing(100, Missing::Undefined)]
    );
    let (_, w) = profile(&t, &tl);
    assert_eq!((w.samples, w.stacks, w.totals), (2, 0, [4, 6, 30_000, 83_000, 62_000]));
}

#[test]
fn written_gzip_decodes_to_the_profile() {
    use prost::Message as _;
    use std::io::Read as _;
    let t = parse_str("train.jsonl", TRAIN).unwrap();
    let tl = timeline::measured(&t);
    let mut bytes = Vec::new();
    export(&t, &tl, &mut bytes).unwrap();
    assert_eq!(&bytes[..2], [0x1f, 0x8b]);
    let mut raw = Vec::new();
    flate2::read::GzDecoder::new(bytes.as_slice()).read_to_end(&mut raw).unwrap();
    assert_eq!(proto::Profile::decode(raw.as_slice()).unwrap(), profile(&t, &tl).0);
}

#[test]
fn sampled_launch_stacks_are_said_so() {
    let comments = |text: &str| -> Vec<String> {
        let t = parse_str("train.jsonl", text).unwrap();
        let (p, _) = profile(&t, &timeline::measured(&t));
        p.comment.iter().map(|&i| p.string_table[i as usize].clone()).collect()
    };
    assert_eq!(comments(TRAIN).len(), 4);
    let sampled = TRAIN
        .replace(r#""stacks":true"#, r#""stacks":{"sampling":{"launches":"sampled","idle_us":50,"interval_ms":10}}"#)
        .replace(
            r#"{"type":"footer","calls":6}"#,
            r#"{"type":"footer","calls":6,"stack_sampling":{"launches_sampled_in":3,"launches_sampled_out":1}}"#,
        );
    let c = comments(&sampled);
    assert_eq!(c.len(), 5);
    assert!(
        c[4].starts_with(
            "launch stacks are sampled: a launch takes a stack after 50 µs without a launch of its thread or a \
             switch-out, else at most every 10 ms per thread (3 launches sampled in, 1 out); "
        ),
        "{c:?}"
    );
    let all = TRAIN.replace(r#""stacks":true"#, r#""stacks":{"sampling":{"launches":"all"}}"#);
    assert_eq!(comments(&all).len(), 4);
}
