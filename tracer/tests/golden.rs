//! Golden outputs: every analysis command on every committed trace in
//! traces/ gives, byte for byte, what it gave when tests/golden/expected.tsv
//! was written (exit code, stdout, stderr and every file it wrote, as
//! sha256 and length). The file was made by the tracer of the commit that
//! added it, before the source moved into layers (issue 15), so a move that
//! changes an output fails here. A deliberate change of output is a bug fix
//! in its own commit that rewrites the file:
//!
//!   TRACER_GOLDEN_WRITE=1 cargo test -p tracer --test golden
//!
//! and says in its message which lines changed and why. With
//! TRACER_GOLDEN_KEEP=DIR the outputs are kept in DIR (one folder per case)
//! to compare with another build's.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use tracer_format::digest::sha256_hex as sha;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").canonicalize().unwrap()
}

fn expected_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/expected.tsv")
}

/// The committed traces, by path relative to the repository root.
fn traces() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(repo().join("traces"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".jsonl.gz") || n.ends_with(".jsonl.zst") || n.ends_with(".rec"))
        .map(|n| format!("traces/{n}"))
        .collect();
    v.sort();
    v
}

/// The commands run on each trace: a name and tracer's arguments, where
/// `{T}` is the trace and `{O}` the case's output folder.
const COMMANDS: &[(&str, &[&str])] = &[
    ("summary", &["summary", "{T}"]),
    ("report", &["report", "{T}"]),
    ("report-json", &["report", "{T}", "--json"]),
    ("gaps", &["gaps", "{T}"]),
    ("gaps-json-list", &["gaps", "{T}", "--json", "--list"]),
    ("ioctls", &["ioctls", "{T}"]),
    ("ioctls-json", &["ioctls", "{T}", "--json"]),
    ("export-perfetto", &["export", "{T}", "--format", "perfetto", "-o", "{O}/trace.perfetto.json"]),
    ("calibrate", &["calibrate", "{T}", "-o", "{O}/durations.json"]),
    ("compare", &["compare", "{T}", "--json"]),
    ("plot", &["plot", "{T}", "-o", "{O}", "--format", "svg"]),
];

/// `tracer plot` says how long it read and drew ("in 2.2 s"): those
/// figures become `_`.
fn without_timings(b: &[u8]) -> Vec<u8> {
    let s = String::from_utf8_lossy(b);
    let mut out = String::new();
    let mut rest: &str = &s;
    while let Some(i) = rest.find(" in ") {
        out.push_str(&rest[..i + 4]);
        rest = &rest[i + 4..];
        let n = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
        if n > 0 && rest[n..].starts_with(" s") {
            out.push('_');
            rest = &rest[n..];
        }
    }
    out.push_str(rest);
    out.into_bytes()
}

/// One line per output: `case<TAB>what<TAB>len<TAB>sha256` (`what` is the
/// exit code, stdout, stderr or a written file's name).
fn run_case(work: &Path, case: &str, args: &[String], keep: Option<&Path>) -> Vec<String> {
    let out_dir = work.join("out").join(case);
    std::fs::create_dir_all(&out_dir).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_tracer"))
        .args(args)
        .current_dir(work)
        .env_remove("RUST_LOG")
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let mut parts: Vec<(String, Vec<u8>)> = vec![
        ("exit".into(), o.status.code().unwrap_or(-1).to_string().into_bytes()),
        ("stdout".into(), o.stdout),
        ("stderr".into(), without_timings(&o.stderr)),
    ];
    let mut files: Vec<PathBuf> = std::fs::read_dir(&out_dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    for f in files {
        parts.push((format!("file:{}", f.file_name().unwrap().to_string_lossy()), std::fs::read(&f).unwrap()));
    }
    if let Some(k) = keep {
        let d = k.join(case);
        std::fs::create_dir_all(&d).unwrap();
        for (what, b) in &parts {
            std::fs::write(d.join(what.replace(':', "_")), b).unwrap();
        }
    }
    std::fs::remove_dir_all(&out_dir).unwrap();
    parts.iter().map(|(what, b)| format!("{case}\t{what}\t{}\t{}", b.len(), sha(b))).collect()
}

#[test]
fn timings_are_masked() {
    assert_eq!(
        without_timings(b"read traces/a in 2.2 s, drew 3 files in 0.0 s\nin 3 files in x s"),
        b"read traces/a in _ s, drew 3 files in _ s\nin 3 files in x s"
    );
}

#[test]
fn analysis_outputs_are_unchanged() {
    // Commands run in a folder of their own where traces/ links to the
    // repository's, so every path they print is relative and the same in
    // any checkout.
    let work = std::env::temp_dir().join(format!("tracer-golden-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).unwrap();
    std::os::unix::fs::symlink(repo().join("traces"), work.join("traces")).unwrap();
    let keep = std::env::var_os("TRACER_GOLDEN_KEEP").map(PathBuf::from);

    let traces = traces();
    assert!(traces.len() >= 10, "traces/ holds {} traces: {traces:?}", traces.len());
    // Cases run two at a time (each command is one process).
    let mut cases: Vec<(String, Vec<String>)> = Vec::new();
    for t in &traces {
        let short = t.trim_start_matches("traces/");
        for (name, args) in COMMANDS {
            let case = format!("{short}.{name}");
            let o = format!("out/{case}");
            let args = args.iter().map(|a| a.replace("{T}", t).replace("{O}", &o)).collect();
            cases.push((case, args));
        }
    }
    let results: BTreeMap<String, Vec<String>> = std::thread::scope(|s| {
        let chunks: Vec<_> = cases.chunks(cases.len().div_ceil(2)).collect();
        let handles: Vec<_> = chunks
            .into_iter()
            .map(|chunk| {
                let (work, keep) = (&work, keep.as_deref());
                s.spawn(move || chunk.iter().map(|(c, a)| (c.clone(), run_case(work, c, a, keep))).collect::<Vec<_>>())
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    let _ = std::fs::remove_dir_all(&work);
    let actual: String = results.values().flatten().map(|l| format!("{l}\n")).collect();

    if std::env::var_os("TRACER_GOLDEN_WRITE").is_some() {
        std::fs::create_dir_all(expected_path().parent().unwrap()).unwrap();
        std::fs::write(expected_path(), &actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(expected_path()).unwrap();
    let (want, got): (Vec<&str>, Vec<&str>) = (expected.lines().collect(), actual.lines().collect());
    let differ: Vec<String> = want
        .iter()
        .filter(|l| !got.contains(l))
        .map(|l| format!("  expected {l}"))
        .chain(got.iter().filter(|l| !want.contains(l)).map(|l| format!("  got      {l}")))
        .collect();
    assert!(
        differ.is_empty(),
        "{} golden output line(s) differ (rerun with TRACER_GOLDEN_KEEP=DIR to keep the outputs):\n{}",
        differ.len(),
        differ.join("\n")
    );
}
