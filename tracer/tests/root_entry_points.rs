//! A program that reaches the driver only through cuGetProcAddress pointers, as the CUDA
//! 12/13 runtime does (tests/fakecuda/procaddr.c; the fake hands out versioned and
//! per-thread-default-stream variants by version and flags): every call is recorded under
//! the function it really reached, and every entry point tracer does not record is named
//! in the footer and on stderr, with its calls where a counting probe gives them.
//!
//! `sudo -E TRACER_ROOT_TESTS=1 cargo test -p tracer --test root_entry_points -- --test-threads=1`
mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Value, json};

fn record(tracer_args: &[&str]) -> (Vec<Value>, String) {
    let out = common::fresh_output("procaddr");
    let prog = common::fake_program("procaddr");
    let (status, stderr) =
        common::record_program(&out, tracer_args, &[prog.as_os_str()], &[], Duration::from_secs(120), "procaddr");
    assert!(status.success(), "tracer on procaddr: {status}\n{stderr}");
    (common::read_trace(&out).unwrap(), stderr)
}

fn calls_by_name(lines: &[Value]) -> BTreeMap<String, usize> {
    let mut m = BTreeMap::new();
    let call = |l: &&Value| l["name"].as_str().is_some_and(|n| n.starts_with("cu")) && l["type"] != "count";
    for l in lines.iter().filter(call) {
        *m.entry(l["name"].as_str().unwrap().to_string()).or_insert(0) += 1;
    }
    m
}

/// The footer's not_recorded entries as (symbol, version, flags, resolves_to, status, calls).
fn not_recorded(footer: &Value) -> Vec<(String, i64, String, String, String, Value)> {
    footer["entry_points"]["not_recorded"]
        .as_array()
        .unwrap_or_else(|| panic!("no entry_points in the footer: {footer}"))
        .iter()
        .map(|e| {
            (
                e["symbol"].as_str().unwrap().to_string(),
                e["cuda_version"].as_i64().unwrap(),
                e["flags"].as_str().unwrap().to_string(),
                e["resolves_to"].as_str().unwrap().to_string(),
                e["status"].as_str().unwrap().to_string(),
                e["calls"].clone(),
            )
        })
        .collect()
}

#[test]
fn every_call_through_proc_address_pointers_is_recorded_or_named() {
    if !common::root_tests_enabled() {
        return;
    }
    let (lines, stderr) = record(&[]);
    let footer = lines.last().unwrap();
    assert_eq!(footer["type"], "footer");
    assert_eq!(footer["lost"]["total"], 0, "{footer}");
    let calls = calls_by_name(&lines);
    assert_eq!(calls.get("cuLaunchKernel_ptsz"), Some(&1000), "{calls:?}");
    assert_eq!(calls.get("cuCtxSynchronize_v2"), Some(&100), "{calls:?}");
    assert_eq!(calls.get("cuStreamSynchronize_ptsz"), Some(&100), "{calls:?}");
    assert_eq!(calls.get("cuEventElapsedTime"), Some(&1), "{calls:?}");
    // Nothing else, apart from the 8 lookups: the state getter is left out by default.
    assert_eq!(calls.get("cuGetProcAddress_v2"), Some(&8), "{calls:?}");
    assert_eq!(calls.values().sum::<usize>(), 1000 + 100 + 100 + 1 + 8, "{calls:?}");

    // Each call is what its entry point is: a sync is a sync.
    let sync = lines.iter().find(|l| l["name"] == "cuCtxSynchronize_v2").unwrap();
    assert_eq!((sync["type"].as_str(), sync["op"].as_str()), (Some("sync"), Some("ctx_synchronize")), "{sync}");
    assert_eq!(sync["args"]["ctx"], "0xc1001", "{sync}");
    let launch = lines.iter().find(|l| l["name"] == "cuLaunchKernel_ptsz").unwrap();
    assert_eq!(launch["type"], "kernel", "{launch}");

    let ep = &footer["entry_points"];
    // 8 lookups, one failed: 7 resolved, 4 of them to recorded functions.
    assert_eq!(ep["resolved"], 7, "{ep}");
    assert_eq!(ep["recorded"], 4, "{ep}");
    let nr = not_recorded(footer);
    let hidden = nr.iter().find(|e| e.0 == "cuFakeHidden").unwrap_or_else(|| panic!("{ep}"));
    assert!(hidden.3.ends_with(&format!("+{:#x}", hidden_offset())), "{ep}");
    assert_eq!((hidden.4.as_str(), &hidden.5), ("not_counted", &Value::Null), "{ep}");
    let rest: Vec<_> = nr.iter().filter(|e| e.0 != "cuFakeHidden").cloned().collect();
    assert_eq!(
        rest,
        [
            (
                "cuDevicePrimaryCtxGetState".to_string(),
                13000,
                "0x0".to_string(),
                "cuDevicePrimaryCtxGetState".to_string(),
                "not_selected".to_string(),
                Value::Null
            ),
            (
                "cuFakeUnlistedAsync".to_string(),
                13000,
                "0x0".to_string(),
                "cuFakeUnlistedAsync".to_string(),
                "counted".to_string(),
                json!(3)
            ),
        ],
        "{ep}"
    );
    assert_eq!(
        ep["failed"],
        json!([{"symbol": "cuNoSuchFunction", "cuda_version": 13000, "flags": "0x0", "ret": 500, "error": "CUDA_ERROR_NOT_FOUND", "resolutions": 1}]),
        "{ep}"
    );
    assert_eq!(ep["unrecorded_calls"], json!({"cuFakeUnlistedAsync": 3}), "{ep}");
    // Named once on stderr, at the end.
    let named: Vec<&str> = stderr.lines().filter(|l| l.contains("does not record")).collect();
    assert_eq!(named.len(), 1, "{stderr}");
    assert!(
        named[0].contains("resolved 3 driver entry points") && named[0].contains("cuFakeUnlistedAsync ×3"),
        "{stderr}"
    );
}

#[test]
fn all_functions_records_the_state_getter_too() {
    if !common::root_tests_enabled() {
        return;
    }
    let (lines, _) = record(&["--all-functions"]);
    let calls = calls_by_name(&lines);
    assert_eq!(calls.get("cuDevicePrimaryCtxGetState"), Some(&4), "{calls:?}");
    let footer = lines.last().unwrap();
    assert_eq!(footer["entry_points"]["recorded"], 5, "{footer}");
    let nr: Vec<String> = not_recorded(footer).into_iter().map(|e| e.0).collect();
    assert_eq!(nr, ["cuFakeHidden", "cuFakeUnlistedAsync"], "{footer}");
}

/// The file offset of the fake's hidden function (its symbol table keeps it).
fn hidden_offset() -> u64 {
    use object::{Object, ObjectSection, ObjectSymbol};
    let data = std::fs::read(&common::fake().lib).unwrap();
    let file = object::File::parse(&*data).unwrap();
    let sym =
        file.symbols().find(|s| s.name() == Ok("fake_hidden_entry")).expect("fake_hidden_entry in the symbol table");
    let section = file.section_by_index(sym.section_index().unwrap()).unwrap();
    sym.address() - section.address() + section.file_range().unwrap().0
}
