//! The H100 recordings with phase markers and NVML power (traces/*_markers,
//! see traces/README.md): exact markers, power lines on a 10 ms grid, the
//! energy counter's 100 ms update period, and the summary unaffected by the
//! new line types.
use std::io::{BufRead as _, BufReader};
use std::process::Command;

use serde_json::{Value, json};

fn lines(file: &str) -> Vec<Value> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../traces/").to_string() + file;
    let f = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    BufReader::new(flate2::read::GzDecoder::new(f))
        .lines()
        .map(|l| serde_json::from_str(&l.unwrap()).unwrap())
        .collect()
}

fn median(mut v: Vec<u64>) -> u64 {
    v.sort_unstable();
    v[v.len() / 2]
}

#[test]
fn transformer_markers_and_power() {
    let l = lines("transformer_inference_markers.jsonl.gz");
    assert_eq!(l.len(), 31_630);
    let (h, f) = (&l[0], &l[l.len() - 1]);
    let pid = h["pid"].as_u64().unwrap();
    let markers: Vec<(String, String, Value)> = l
        .iter()
        .filter(|x| x["type"] == "marker")
        .map(|m| {
            assert_eq!((m["pid"].as_u64(), m["tid"].as_u64()), (Some(pid), Some(pid)), "{m}");
            (m["op"].as_str().unwrap().into(), m["label"].as_str().unwrap().into(), m["tokens"].clone())
        })
        .collect();
    let s = |a: &str, b: &str, t: Value| (a.to_string(), b.to_string(), t);
    assert_eq!(
        markers,
        vec![
            s("phase", "import", Value::Null),
            s("phase", "model_load", Value::Null),
            s("phase", "warmup", Value::Null),
            s("phase", "generate", Value::Null),
            s("iteration", "0", json!(20)),
            s("iteration", "1", json!(20)),
            s("iteration", "2", json!(20)),
            s("phase", "end", Value::Null),
        ]
    );
    assert_eq!(f["markers"]["markers"], json!(8));
    assert_eq!(f["markers"]["malformed"], json!(0));

    assert_eq!(h["power"]["available"], json!(true));
    assert_eq!(h["power"]["gpus"][0]["name"], json!("NVIDIA H100 80GB HBM3"));
    let p: Vec<&Value> = l.iter().filter(|x| x["type"] == "power").collect();
    assert_eq!(p.len(), 2232);
    assert_eq!(f["power"]["samples"], json!(2232));
    assert_eq!(f["power"]["dropped"], json!(0));
    assert_eq!(f["power"]["gpus_used"], json!([0]));
    for x in &p {
        for k in ["energy_mj", "power_mw", "sm_clock_mhz", "mem_clock_mhz", "util_gpu_pct", "util_mem_pct", "temp_c"] {
            assert!(x[k].is_u64(), "{k} missing in {x}");
        }
    }
    // Samples on the 10 ms grid; first before the first marker, last after the last.
    let ts: Vec<u64> = p.iter().map(|x| x["ts"].as_u64().unwrap()).collect();
    assert_eq!((median(ts.windows(2).map(|w| w[1] - w[0]).collect()) + 50_000) / 100_000, 100);
    let mts: Vec<u64> = l.iter().filter(|x| x["type"] == "marker").map(|x| x["ts"].as_u64().unwrap()).collect();
    assert!(ts[0] < mts[0] && *ts.last().unwrap() > *mts.last().unwrap());
    // The energy counter changes every 100 ms and never decreases.
    let e: Vec<(u64, u64)> = p.iter().map(|x| (x["ts"].as_u64().unwrap(), x["energy_mj"].as_u64().unwrap())).collect();
    assert!(e.windows(2).all(|w| w[1].1 >= w[0].1));
    let changes: Vec<u64> = e.windows(2).filter(|w| w[1].1 != w[0].1).map(|w| w[1].0).collect();
    assert_eq!(changes.len(), 225);
    assert_eq!((median(changes.windows(2).map(|w| w[1] - w[0]).collect()) + 500_000) / 1_000_000, 100);
    assert_eq!(e.last().unwrap().1 - e[0].1, 2_064_050);
}

#[test]
fn simple_markers() {
    let l = lines("simple_inference_markers.jsonl.gz");
    let labels: Vec<String> = l
        .iter()
        .filter(|x| x["type"] == "marker")
        .map(|m| format!("{} {}", m["op"].as_str().unwrap(), m["label"].as_str().unwrap()))
        .collect();
    let mut want: Vec<String> = ["import", "cuda_init", "model_load", "input_copy", "warmup", "inference"]
        .map(|p| format!("phase {p}"))
        .to_vec();
    want.extend((0..10).map(|i| format!("iteration {i}")));
    want.extend(["phase copy_back".into(), "phase end".into()]);
    assert_eq!(labels, want);
    assert_eq!(l.iter().filter(|x| x["type"] == "power").count(), 467);
}

#[test]
fn summary_counts_markers_and_energy_apart_from_calls() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../traces/transformer_inference_markers.jsonl.gz");
    let out = Command::new(env!("CARGO_BIN_EXE_tracer")).args(["summary", path]).output().unwrap();
    assert!(out.status.success());
    let s = String::from_utf8(out.stdout).unwrap();
    // The call figures are those of the recording without markers and power.
    assert!(s.contains("29290 driver calls in 1 process(es)"), "{s}");
    assert!(!s.contains("nvml"), "{s}");
    assert!(s.contains("\nmarkers: 3 iteration, 5 phase\n"), "{s}");
    assert!(s.contains("\npower: GPU 0: 2232 samples, 2064.1 J over 22.58 s (91.4 W mean), peak 323.9 W\n"), "{s}");
}

/// The sampler reads the energy counter only around its expected updates
/// (collect/power/energy_pacing.rs). On the H100 recording, whose every power line
/// carries the counter, the lines a paced sampler would have read give each phase the
/// same energy as all of them, at a fraction of the reads.
#[test]
fn paced_energy_reads_give_every_phase_the_same_energy() {
    use tracer::analysis::energy::{energy_between, series};
    use tracer::collect::power::energy_pacing::EnergyPacer;
    let all = lines("transformer_inference_markers.jsonl.gz");
    let power: Vec<usize> = (0..all.len()).filter(|&i| all[i]["type"] == "power").collect();
    let mut paced = all.clone();
    let mut pacer = EnergyPacer::default();
    let mut reads = 0;
    for (n, &i) in power.iter().enumerate() {
        let ts = all[i]["ts"].as_u64().unwrap();
        if n == 0 || n == power.len() - 1 || pacer.due(ts, 10_000_000) {
            reads += 1;
            pacer.saw(ts, all[i]["energy_mj"].as_u64());
        } else {
            paced[i]["energy_mj"] = Value::Null;
        }
    }
    // 474 of its 2,232 lines
    assert!(reads * 4 < power.len(), "{reads} reads of {}", power.len());
    let text = |v: &[Value]| v.iter().map(|l| l.to_string() + "\n").collect::<String>();
    let (t_all, t_paced) = (
        tracer::analysis::model::parse_str("all", &text(&all)).unwrap(),
        tracer::analysis::model::parse_str("paced", &text(&paced)).unwrap(),
    );
    let (s_all, s_paced) = (&series(&t_all)[0], &series(&t_paced)[0]);
    assert_eq!(s_all.points, s_paced.points, "the same update points");
    let marks: Vec<u64> = all.iter().filter(|x| x["type"] == "marker").map(|x| x["ts"].as_u64().unwrap()).collect();
    for w in marks.windows(2) {
        let (a, b) = (energy_between(s_all, w[0], w[1]).unwrap(), energy_between(s_paced, w[0], w[1]).unwrap());
        assert_eq!(a, b, "phase {}..{}", w[0], w[1]);
    }
}
