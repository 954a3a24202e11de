//! Every command gives the same number for the same thing
//! (tracer/src/analysis/figures.rs): `summary --json`, `report --json`,
//! `gaps --json` and `compare --json` on every committed trace agree on the
//! trace span, the synchronization time (polling queries apart), the idle
//! time of each phase window and of each GPU's window.
use std::path::{Path, PathBuf};

use serde_json::Value;

mod command;
use command::tracer;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The committed traces: traces/ and the recordings under docs/ that are traces of a program.
fn committed() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(repo().join("traces"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".jsonl.gz") || n.ends_with(".jsonl.zst"))
        .map(|n| format!("traces/{n}"))
        .collect();
    v.sort();
    v.push("docs/multi-gpu/tp.jsonl.zst".into());
    for g in ["g_capture", "g_eager_b1"] {
        v.push(format!("docs/graphs/{g}.jsonl.zst"));
    }
    v
}

fn json(args: &[&str]) -> Option<Value> {
    let (code, out, err) = tracer(args);
    if code != 0 {
        // gaps of a trace without GPU work, compare of one without measurements
        assert!(err.contains("no GPU work") || err.contains("no measured GPU activity"), "{args:?}: {err}");
        return None;
    }
    Some(serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?}: {e}")))
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not an integer: {v}"))
}

/// Idle time of a report row: measured/inferred (window − busy) or certain (lower bound).
fn report_idle(row: &Value, dur: u64) -> Option<u64> {
    row["gpu_idle_lower_bound_ns"]
        .as_u64()
        .or(row["idle_lower_bound_ns"].as_u64())
        .or(row["gpu_busy_ns"].as_u64().or(row["busy_ns"].as_u64()).map(|b| dur - b))
}

#[test]
fn summary_report_gaps_and_compare_agree_on_every_committed_trace() {
    let traces = committed();
    assert!(traces.len() >= 12, "{traces:?}");
    let mut checked = (0, 0, 0);
    for rel in &traces {
        let p = repo().join(rel);
        let p = p.to_str().unwrap();
        let (s, r, g, c) = std::thread::scope(|sc| {
            let s = sc.spawn(|| json(&["summary", p, "--json"]));
            let r = sc.spawn(|| json(&["report", p, "--json"]));
            let g = json(&["gaps", p, "--json"]);
            let c = json(&["compare", p, "--json"]);
            (s.join().unwrap().unwrap(), r.join().unwrap().unwrap(), g, c)
        });
        // the trace span
        assert_eq!(u(&s["last_ts"]) - u(&s["first_ts"]), u(&r["span_ns"]), "{rel}: span");
        assert_eq!(u(&s["span_ns"]), u(&r["span_ns"]), "{rel}: span");
        // the synchronization time: the same calls, the same ns; polling apart
        let sync = &s["sync"];
        let t = &r["total"];
        assert_eq!(
            (u(&sync["calls"]), u(&sync["ns"]), u(&sync["polling_calls"]), u(&sync["polling_ns"])),
            (u(&t["sync_calls"]), u(&t["sync_ns"]), u(&t["polling_calls"]), u(&t["polling_ns"])),
            "{rel}: synchronization time, summary vs report"
        );
        let Some(g) = g else { continue };
        assert_eq!(&g["synchronization"], sync, "{rel}: synchronization time, gaps vs summary");
        assert_eq!(g["idle_basis"], r["idle_basis"], "{rel}");
        let gpus: Vec<&Value> = g["scopes"].as_array().unwrap().iter().filter(|x| x["kind"] == "gpu").collect();
        if gpus.len() == 1 {
            // one GPU: the report's phase rows are its phases, window for window
            let gp = gpus[0]["phases"].as_array().unwrap();
            for row in r["phases"].as_array().unwrap() {
                let dur = u(&row["dur_ns"]);
                if dur == 0 {
                    continue;
                }
                let Some(idle) = report_idle(row, dur) else { continue };
                let name = row["name"].as_str().unwrap();
                let ph =
                    gp.iter().find(|x| x["phase"] == name).unwrap_or_else(|| panic!("{rel}: no phase {name} in gaps"));
                assert_eq!(u(&ph["stats"]["window_ns"]), dur, "{rel} phase {name}: window");
                assert_eq!(u(&ph["stats"]["idle_ns"]), idle, "{rel} phase {name}: idle, gaps vs report");
                checked.0 += 1;
            }
        } else {
            // several: the report's GPU rows are the gaps' GPU scopes
            for row in r["per_gpu"].as_array().unwrap().iter().filter(|x| x["pid"].is_null()) {
                let d = u(&row["device"]);
                let sc = gpus.iter().find(|x| x["scope"] == format!("gpu {d}")).unwrap();
                let dur = u(&row["end"]) - u(&row["start"]);
                assert_eq!(u(&sc["overall"]["window_ns"]), dur, "{rel} gpu {d}: window");
                assert_eq!(Some(u(&sc["overall"]["idle_ns"])), report_idle(row, dur), "{rel} gpu {d}: idle");
                checked.1 += 1;
            }
        }
        // compare's measured figures are the measured timeline's, as gaps gives them
        if let Some(c) = c
            && g["timeline"] == "measured"
        {
            let m = &c["inferred"][0];
            let o = &gpus[0]["overall"];
            assert_eq!(u(&m["window"][1]) - u(&m["window"][0]), u(&o["window_ns"]), "{rel}: compare vs gaps, window");
            assert_eq!(
                (u(&m["measured_idle_ns"]), u(&m["measured_gaps"])),
                (u(&o["idle_ns"]), u(&o["long_count"])),
                "{rel}: compare vs gaps"
            );
            checked.2 += 1;
        }
    }
    assert!(checked.0 >= 30 && checked.1 >= 2 && checked.2 >= 4, "{checked:?}");
}
