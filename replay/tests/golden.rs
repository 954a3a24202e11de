//! Golden outputs of `replay plan` and `replay plan --json`: on the
//! committed recording traces/replay_check.rec and on a recording made of
//! each committed trace (the trace and a minimal manifest), exit code,
//! stdout and stderr are, byte for byte, what they were when
//! tests/golden/expected.tsv was written: by the replay of the commit that
//! added it, before replay read through tracer-format and its long
//! functions were split (issue 15). A deliberate change of output is a
//! commit of its own that rewrites the file with
//!
//!   REPLAY_GOLDEN_WRITE=1 cargo test -p replay --test golden
//!
//! and says which lines changed and why.

use std::path::{Path, PathBuf};
use std::process::Command;

use tracer_format::digest::sha256_hex as sha;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").canonicalize().unwrap()
}

/// `case<TAB>what<TAB>len<TAB>sha256` for exit code, stdout and stderr.
fn run(work: &Path, case: &str, args: &[&str]) -> Vec<String> {
    let o = Command::new(env!("CARGO_BIN_EXE_replay")).args(args).current_dir(work).output().unwrap();
    [("exit", o.status.code().unwrap_or(-1).to_string().into_bytes()), ("stdout", o.stdout), ("stderr", o.stderr)]
        .iter()
        .map(|(what, b)| format!("{case}\t{what}\t{}\t{}", b.len(), sha(b)))
        .collect()
}

#[test]
fn plan_outputs_are_unchanged() {
    let work = std::env::temp_dir().join(format!("replay-golden-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(work.join("traces")).unwrap();
    // Paths in messages are relative, the same in any checkout.
    std::os::unix::fs::symlink(repo().join("traces/replay_check.rec"), work.join("traces/replay_check.rec")).unwrap();
    let mut recs = vec!["traces/replay_check.rec".to_owned()];
    let mut names: Vec<String> = std::fs::read_dir(repo().join("traces"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".jsonl.gz"))
        .collect();
    names.sort();
    assert!(names.len() >= 9, "{names:?}");
    for n in &names {
        let d = work.join(format!("{}.rec", n.trim_end_matches(".jsonl.gz")));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::copy(repo().join("traces").join(n), d.join("trace.jsonl.gz")).unwrap();
        std::fs::write(
            d.join("manifest.json"),
            r#"{"format": "tracer-recording", "schema_version": 1, "trace": "trace.jsonl.gz", "images": []}"#,
        )
        .unwrap();
        recs.push(d.file_name().unwrap().to_string_lossy().into_owned());
    }
    // Two at a time (each run is one process); the lines in a fixed order.
    let cases: Vec<(String, Vec<&str>)> = recs
        .iter()
        .flat_map(|r| {
            let short = r.trim_start_matches("traces/");
            [
                (format!("{short}.plan"), vec!["plan", r.as_str()]),
                (format!("{short}.plan-json"), vec!["plan", "--json", r]),
            ]
        })
        .collect();
    let actual: String = std::thread::scope(|s| {
        let handles: Vec<_> = cases
            .chunks(cases.len().div_ceil(2))
            .map(|chunk| {
                let work = &work;
                s.spawn(move || chunk.iter().flat_map(|(c, a)| run(work, c, a)).collect::<Vec<_>>())
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap()).map(|l| l + "\n").collect()
    });
    std::fs::remove_dir_all(&work).unwrap();
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/expected.tsv");
    if std::env::var_os("REPLAY_GOLDEN_WRITE").is_some() {
        std::fs::write(&path, &actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap();
    let differ: Vec<String> = expected
        .lines()
        .filter(|l| !actual.lines().any(|a| a == *l))
        .map(|l| format!("  expected {l}"))
        .chain(actual.lines().filter(|a| !expected.lines().any(|l| l == *a)).map(|l| format!("  got      {l}")))
        .collect();
    assert!(differ.is_empty(), "{} golden line(s) differ:\n{}", differ.len(), differ.join("\n"));
}
