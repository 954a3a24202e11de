//! The recordings made with `--gpu-timestamps` on the H100 (traces/README.md):
//! measured kernels pair one to one with their launch lines, in order, on the
//! same stream handle, after their launch; stable figures.
use std::collections::HashMap;
use std::io::BufRead as _;
use std::process::Command;

use serde_json::Value;

fn path(file: &str) -> String {
    concat!(env!("CARGO_MANIFEST_DIR"), "/../traces/").to_string() + file
}

fn lines(file: &str) -> Vec<Value> {
    let f = std::fs::File::open(path(file)).unwrap();
    std::io::BufReader::new(flate2::read::GzDecoder::new(f))
        .lines()
        .map(|l| serde_json::from_str(&l.unwrap()).unwrap())
        .collect()
}

struct Figures {
    kernels: usize,
    memcpys: usize,
    memsets: usize,
    /// Sum of kernel durations, ns.
    busy_ns: u64,
    /// Smallest launch → start delay, ns.
    min_delay_ns: u64,
}

/// Pairs the n-th launch (returned 0) with the n-th measured kernel of each
/// (pid, stream); asserts names match and kernels start after their launch.
fn check(file: &str) -> Figures {
    let all = lines(file);
    let footer = all.last().unwrap();
    assert_eq!(footer["type"], "footer");
    // (pid, stream) -> launches (ts, kernel) / measured kernels (start, end, name)
    type Key = (u64, String);
    let mut launches: HashMap<Key, Vec<(u64, String)>> = HashMap::new();
    let mut kernels: HashMap<Key, Vec<(u64, u64, String)>> = HashMap::new();
    let (mut memcpys, mut memsets) = (0, 0);
    for v in &all {
        let key =
            || (v["pid"].as_u64().unwrap(), v["stream"].as_str().expect("every line has a stream handle").to_string());
        match (v["type"].as_str(), v["op"].as_str()) {
            (Some("kernel"), Some("launch")) if v["ret"] == 0 => launches
                .entry(key())
                .or_default()
                .push((v["ts"].as_u64().unwrap(), v["kernel"].as_str().unwrap().into())),
            (Some("gpu"), Some("kernel")) => kernels.entry(key()).or_default().push((
                v["ts"].as_u64().unwrap(),
                v["end_ts"].as_u64().unwrap(),
                v["name"].as_str().unwrap().into(),
            )),
            (Some("gpu"), Some("memcpy")) => memcpys += 1,
            (Some("gpu"), Some("memset")) => memsets += 1,
            _ => {}
        }
    }
    assert_eq!(launches.keys().collect::<std::collections::BTreeSet<_>>(), kernels.keys().collect());
    let (mut n, mut busy_ns, mut min_delay_ns) = (0, 0, u64::MAX);
    for (key, ks) in &mut kernels {
        ks.sort();
        let ls = launches.get_mut(key).unwrap();
        ls.sort();
        assert_eq!(ls.len(), ks.len(), "{key:?}");
        for ((lts, lname), (start, end, kname)) in ls.iter().zip(ks.iter()) {
            assert_eq!(lname, kname, "the n-th launch and n-th kernel of {key:?}");
            assert!(start > lts && end > start, "{key:?}: launch {lts}, kernel {start}..{end}");
            busy_ns += end - start;
            min_delay_ns = min_delay_ns.min(start - lts);
            n += 1;
        }
    }
    let g = &footer["gpu_timestamps"];
    assert_eq!(g["kernels"], n as u64);
    assert_eq!((g["memcpys"].as_u64(), g["memsets"].as_u64()), (Some(memcpys), Some(memsets)));
    assert_eq!((g["dropped_by_cupti"].as_u64(), g["dropped_by_injection"].as_u64()), (Some(0), Some(0)));
    assert_eq!(g["processes"][0]["clock"], "timestamp_callback");
    assert_eq!(g["processes"][0]["flushed_at_exit"], true);
    Figures { kernels: n, memcpys: memcpys as usize, memsets: memsets as usize, busy_ns, min_delay_ns }
}

#[test]
fn simple_inference_gpu_timeline() {
    let f = check("simple_inference_gpu.jsonl.gz");
    assert_eq!((f.kernels, f.memcpys, f.memsets), (88, 10, 44));
    assert_eq!((f.busy_ns, f.min_delay_ns), (659_308, 6_496));
}

#[test]
fn transformer_inference_gpu_timeline() {
    let f = check("transformer_inference_gpu.jsonl.gz");
    assert_eq!((f.kernels, f.memcpys, f.memsets), (11380, 606, 26));
    assert_eq!((f.busy_ns, f.min_delay_ns), (26_808_204, 7_605));
}

#[test]
fn summary_ignores_gpu_lines() {
    let out = Command::new(env!("CARGO_BIN_EXE_tracer"))
        .args(["summary", &path("simple_inference_gpu.jsonl.gz")])
        .output()
        .unwrap();
    let s = String::from_utf8(out.stdout).unwrap();
    assert!(out.status.success() && out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(s.contains("88 kernel launches (2 distinct kernels)"), "{s}");
    assert!(!s.contains("memcpy_htod") && !s.contains("memset "), "gpu lines are not driver calls: {s}");
}
