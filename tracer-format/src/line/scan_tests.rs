//! The fast scanner (scan.rs) against serde_json, the reference: field for
//! field on every line of every committed recording, hand-built edge cases,
//! and random corruptions of real lines (whatever the scanner accepts,
//! serde_json must read the same). tracer's analysis/scan_tests.rs checks
//! the whole model of each recording too.
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::raw::RawLine;
use super::scan::raw_line;

fn recordings() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../traces");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".jsonl.gz"))
        .collect();
    v.sort();
    v
}

fn serde_line(b: &[u8]) -> Option<RawLine<'_>> {
    serde_json::from_slice::<RawLine>(b).ok()
}

/// Lines per recording, and how many the scanner left to serde_json.
#[test]
fn every_line_of_every_recording_scans_as_serde_reads_it() {
    let mut figures = Vec::new();
    for p in recordings() {
        let (mut lines, mut fallback) = (0u64, 0u64);
        crate::read::for_each_raw(&p, Arc::default(), |n, b| {
            lines += 1;
            let reference = serde_line(b).unwrap_or_else(|| panic!("{}: line {n} is valid", p.display()));
            match raw_line(b) {
                Some(fast) => assert_eq!(fast, reference, "{}: line {n}", p.display()),
                None => fallback += 1,
            }
            Ok(())
        })
        .unwrap();
        figures.push((p.file_name().unwrap().to_string_lossy().into_owned(), lines, fallback));
    }
    let names: Vec<&str> = figures.iter().map(|f| f.0.as_str()).collect();
    assert_eq!(names.len(), 9, "{names:?}");
    // Every line of every recording takes the fast path.
    for (name, lines, fallback) in &figures {
        assert!(*lines > 1000, "{name}: {lines}");
        assert_eq!(*fallback, 0, "{name}");
    }
}

#[test]
fn edge_cases_the_scanner_reads() {
    let ok = [
        r#"{"ts":1,"pid":2,"type":"kernel"}"#,
        " \t{ \"ts\" : 1 , \"pid\":2 ,\"type\" :\"kernel\" } \r\n",
        r#"{"ts":1,"pid":2,"type":"kernel","kernel":null,"grid":[ 1 , 2,3 ],"block":null,"args":{"f":"0x1","x":[1,{"a":[]}],"y":-1.5e-3}}"#,
        r#"{"ts":18446744073709551615,"pid":4294967295,"ret":-9223372036854775808,"type":"é→x","name":"k<é>"}"#,
        r#"{"duration_us":0.1,"type":"x"}"#,
        r#"{"duration_us":12345678901234567890123,"type":"x"}"#,
        r#"{"duration_us":-0,"type":"x"}"#,
        r#"{"duration_us":2.675e-1,"type":"x"}"#,
        r#"{"args":{"Flags":"0x1","phStream":"0x55"},"type":"stream"}"#,
        r#"{"args":{"Flags":3,"phStream":null},"type":"stream"}"#,
        r#"{"label":"warmup","device":0,"type":"marker"}"#,
        r#"{"ts":9,"pid":2,"type":"kernel","stack":3}"#,
        r#"{"type":"stack","id":3,"pid":2,"tid":0,"ts":9,"frames":[{"kind":"python","fn":"f","file":"/a.py","line":4}]}"#,
        r#"{"incomplete":true,"entry_lost":false,"unknown":true,"other":null}"#,
        r#"{}"#,
        r#"{"a":{},"b":[],"c":"\u0000"}"#,
    ];
    for l in ok {
        let reference = serde_line(l.as_bytes()).unwrap_or_else(|| panic!("serde reads {l}"));
        // Escapes anywhere are left to serde_json.
        if l.contains('\\') {
            assert_eq!(raw_line(l.as_bytes()), None, "{l}");
        } else {
            assert_eq!(raw_line(l.as_bytes()), Some(reference), "{l}");
        }
    }
    let got =
        raw_line(br#"{"ts":5,"grid":[1,2,3],"duration_us":2.675e-1,"ret":-1,"args":{"Flags":3},"stack":7}"#).unwrap();
    assert_eq!(got.stack, Some(7));
    assert_eq!((got.ts, got.grid, got.duration_us, got.ret), (Some(5), Some([1, 2, 3]), Some(0.2675), Some(-1)));
}

#[test]
fn edge_cases_left_to_serde() {
    // Valid for serde, but the scanner does not read them itself.
    let valid = [r#"{"ts":1,"name":"a\"b"}"#, r#"{"t\u0079pe":"kernel"}"#, r#"{"label":1.5}"#, r#"{"label":-2}"#];
    for l in valid {
        assert!(serde_line(l.as_bytes()).is_some(), "serde reads {l}");
        assert_eq!(raw_line(l.as_bytes()), None, "{l}");
    }
    // Errors for serde: the scanner never accepts them.
    let invalid: &[&[u8]] = &[
        br#"{"ts":1,"ts":2}"#,
        br#"{"args":{"Flags":1,"Flags":2}}"#,
        br#"{"ts":1.0}"#,
        br#"{"ts":1e3}"#,
        br#"{"pid":-1}"#,
        br#"{"pid":4294967296}"#,
        br#"{"ts":18446744073709551616}"#,
        br#"{"ts":01}"#,
        br#"{"ts":1}x"#,
        br#"{"ts":1,}"#,
        br#"{"ts":1"#,
        br#"{"ts":"1"}"#,
        br#"{"grid":[1,2]}"#,
        br#"{"grid":[1,2,3,4]}"#,
        br#"{"incomplete":1}"#,
        br#"{"incomplete":tru}"#,
        br#"{"x":nul}"#,
        br#"{"x":[1,]}"#,
        br#"{"x":1.}"#,
        br#"{"x":-}"#,
        br#"{"x":.5}"#,
        b"{\"x\":\"a\x01b\"}",
        b"{\"name\":\"\xff\"}",
        br#"{"ret":9223372036854775808}"#,
        br#"{"ret":-0}"#,
        br#"{"ts":-0}"#,
        br#"{"duration_us":1e400}"#,
        br#"{"ts" 1}"#,
        br#"{ts:1}"#,
        b"",
        br#"["kernel"]"#,
    ];
    for l in invalid {
        assert!(serde_line(l).is_none(), "serde rejects {}", String::from_utf8_lossy(l));
        assert_eq!(raw_line(l), None, "{}", String::from_utf8_lossy(l));
    }
    // serde_json does not check the UTF-8 of strings it skips; the scanner
    // does, and leaves such a line to serde_json.
    let skipped_bad_utf8 = b"{\"x\":\"\xc3\",\"ts\":1}";
    assert_eq!(serde_line(skipped_bad_utf8).map(|r| r.ts), Some(Some(1)));
    assert_eq!(raw_line(skipped_bad_utf8), None);
    let deep = format!("{{\"x\":{}{}}}", "[".repeat(100), "]".repeat(100));
    assert!(serde_line(deep.as_bytes()).is_some());
    assert_eq!(raw_line(deep.as_bytes()), None);
}

/// Random corruptions of real lines: whatever the scanner accepts, serde_json
/// reads into the same value.
#[test]
fn corrupted_lines_are_never_read_differently() {
    let seeds: Vec<Vec<u8>> = {
        let mut v = Vec::new();
        let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../traces/simple_inference_markers.jsonl.gz");
        let mut seen = std::collections::HashSet::new();
        crate::read::for_each_raw(&p, Arc::default(), |_, b| {
            let ty = serde_json::from_slice::<serde_json::Value>(b).unwrap()["type"].to_string();
            if b.len() < 2000 && seen.insert(ty) {
                v.push(b.to_vec());
            }
            Ok(())
        })
        .unwrap();
        v
    };
    assert!(seeds.len() >= 6, "{}", seeds.len());
    const PIECES: &[&[u8]] = &[
        b"\"",
        b"\\",
        b",",
        b":",
        b"{",
        b"}",
        b"[",
        b"]",
        b"-",
        b".",
        b"e",
        b"0",
        b"9",
        b"null",
        b"true",
        b" ",
        b"\x01",
        b"\xc3",
        b"1.5",
        b"\"ts\":1,",
        b"\"type\":\"x\",",
    ];
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut rnd = |n: usize| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % n as u64) as usize
    };
    let (mut accepted, mut tried) = (0, 0);
    for seed in &seeds {
        for _ in 0..3000 {
            let mut l = seed.clone();
            for _ in 0..1 + rnd(3) {
                let at = rnd(l.len() + 1);
                match rnd(3) {
                    0 if at < l.len() => {
                        l.remove(at);
                    }
                    1 if at < l.len() => {
                        let p = PIECES[rnd(PIECES.len())];
                        l.splice(at..at + 1, p.iter().copied());
                    }
                    _ => {
                        let p = PIECES[rnd(PIECES.len())];
                        l.splice(at..at, p.iter().copied());
                    }
                }
            }
            tried += 1;
            if let Some(fast) = raw_line(&l) {
                accepted += 1;
                assert_eq!(Some(fast), serde_line(&l), "{}", String::from_utf8_lossy(&l));
            }
        }
    }
    // The corruptions hit both sides.
    assert!(accepted > tried / 20 && accepted < tried, "{accepted} of {tried}");
}
