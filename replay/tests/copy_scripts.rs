//! experiments/copies/copy_sizes.py (experiments/copies/gpu_copy_fidelity.sh's table), run on
//! this machine over hand-made traces: per (direction, size) the count, the
//! median and the difference from the first file; the total over the sizes
//! every file has; --min-bytes; a bad line named with its file and line.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::json;

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../experiments/copies/copy_sizes.py")
}

fn run(args: &[&str]) -> (i32, String, String) {
    let o = Command::new("python3").arg(script()).args(args).output().expect("python3");
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn copy(direction: &str, size: u64, us: f64) -> serde_json::Value {
    json!({"type": "gpu", "op": "memcpy", "direction": direction, "size": size, "duration_us": us, "source": "cupti"})
}

fn write(dir: &Path, name: &str, lines: &[serde_json::Value]) -> String {
    let p = dir.join(name);
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

#[test]
fn per_size_medians_against_the_first_file() {
    let dir = std::env::temp_dir().join(format!("copy-sizes-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // The recording: three 4 MB copies (median 400 µs), one 1 KB copy, a kernel line (ignored).
    let rec = write(
        &dir,
        "rec.jsonl",
        &[
            json!({"type": "header"}),
            copy("h2d", 4_000_000, 390.0),
            copy("h2d", 4_000_000, 400.0),
            copy("h2d", 4_000_000, 500.0),
            copy("h2d", 1000, 1.0),
            json!({"type": "gpu", "op": "kernel", "duration_us": 9.0}),
        ],
    );
    // The replay: 4 MB at 300 µs, 1 KB at 1.1 µs, and a d2h size the recording lacks.
    let rep = write(
        &dir,
        "rep.timeline.jsonl",
        &[
            copy("h2d", 4_000_000, 300.0),
            copy("h2d", 4_000_000, 300.0),
            copy("h2d", 4_000_000, 300.0),
            copy("h2d", 1000, 1.1),
            copy("d2h", 8, 2.0),
        ],
    );
    let (code, out, err) = run(&[&format!("rec={rec}"), &format!("replay={rep}")]);
    assert_eq!(code, 0, "{err}");
    let rows: Vec<&str> = out.lines().filter(|l| l.starts_with("| ") && !l.starts_with("| direction")).collect();
    assert_eq!(
        rows,
        [
            "| d2h | 8 | – | 1, 2.00 (0.00) |",
            "| h2d | 4000000 | 3, 400.00 (10.00) | 3, 300.00 (13.33) -25.0 % |",
            "| h2d | 1000 | 1, 1.00 (1.00) | 1, 1.10 (0.91) +10.0 % |",
        ],
        "{out}"
    );
    // Totals over the sizes both have: 3 × 400 + 1 against 3 × 300 + 1.1.
    assert!(out.contains("total over the 2 sizes every file has"), "{out}");
    assert!(out.contains("  rec: 1201.0 µs\n"), "{out}");
    assert!(out.contains("  replay: 901.1 µs (-25.0 %)\n"), "{out}");
    // --min-bytes leaves the small copies out of the table and the totals.
    let (code, out, _) = run(&["--min-bytes", "1000000", &format!("rec={rec}"), &format!("replay={rep}")]);
    assert_eq!(code, 0);
    assert_eq!(out.lines().filter(|l| l.starts_with("| h2d") || l.starts_with("| d2h")).count(), 1, "{out}");
    assert!(out.contains("  replay: 900.0 µs (-25.0 %)\n"), "{out}");
    // A line that is not JSON: one line naming the file and the line.
    let bad = dir.join("bad.jsonl");
    std::fs::write(&bad, "{\"type\": \"gpu\"}\nnot json\n").unwrap();
    let (code, _, err) = run(&[&format!("bad={}", bad.display())]);
    assert_eq!(code, 1);
    assert_eq!(err.trim(), format!("{}:2: not a JSON line", bad.display()));
    // Without LABEL=FILE: the usage.
    let (code, _, err) = run(&["rec.jsonl"]);
    assert_eq!(
        (code, err.lines().next()),
        (1, Some("usage: python3 copy_sizes.py [--min-bytes N] LABEL=FILE [LABEL=FILE …]")),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
