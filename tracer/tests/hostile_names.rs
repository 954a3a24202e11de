//! A trace full of hostile names (issue 47): kernel names, phase and
//! marker labels, the command line, host, exec file name and libcuda path
//! with ESC sequences (clear screen, window title, colours), BEL, CR, LF,
//! TAB, C1 and bidi overrides, and a kernel name of 100 KB. The text outputs
//! (summary, report, gaps, ioctls) hold no raw control character and show
//! the names escaped, long ones cut with a mark; every SVG `tracer plot`
//! writes parses as XML; the JSON outputs keep the names whole and exact.
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

const TRACER: &str = env!("CARGO_BIN_EXE_tracer");

/// The 100 KB kernel name.
fn huge() -> String {
    format!("huge\u{1b}[2J{}", "K".repeat(100_000))
}

/// The hostile spelling of kernel name `k`: every escape at once.
fn hostile_kernel(k: &str) -> String {
    format!("k\u{1b}[2J\u{1b}[31m\u{7}\t{k}\r\n\u{202e}\u{2066}\u{85}")
}

/// Its spelling on a terminal.
fn shown_kernel(k: &str) -> String {
    format!("k\\x1b[2J\\x1b[31m\\x07\\t{k}\\r\\n\\u{{202e}}\\u{{2066}}\\u{{85}}")
}

/// One of the two kernels the trace launches (44 times each), to be named by [`huge`].
const FIRST: &str = "_ZN2at6native29vectorized_elementwise_kernelILi4EZZZNS0_49_GLOBAL__N__d2ba64fb_16_TensorCompare_cu_71e06f4e\
                     19launch_clamp_scalarERNS_18TensorIteratorBaseEN3c106ScalarES6_NS0_6detail11ClampLimitsEENKUlvE_clEvENKUlvE5_\
                     clEvEUlfE_St5arrayIPcLm2EEEEviT0_T1_";
/// The other one.
const SECOND: &str = "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize32x32x8_stage3_warpsize1x2x1_ffma_aligna4_alignc4_execute_kernel__5x_cublas";

/// simple_inference_markers with every name made hostile ([`FIRST`] named by
/// [`huge`]), written to `dir`.
fn hostile_trace(dir: &Path) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../traces/simple_inference_markers.jsonl.gz");
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(src).unwrap()).read_to_string(&mut text).unwrap();
    let mut out = String::new();
    for line in text.lines() {
        let mut v: Value = serde_json::from_str(line).unwrap();
        if v["type"] == "header" {
            v["command"] = serde_json::json!(["python3\u{1b}[2J", "\u{1b}]0;pwned\u{7}", "a\nb"]);
            v["host"] = "h\u{1b}[31mred\u{202e}".into();
            v["libcuda"] = "/lib/\u{1b}[2Jlibcuda.so".into();
        }
        if let Some(k) = v.get("kernel").and_then(Value::as_str).map(str::to_owned) {
            v["kernel"] = if k == FIRST { huge() } else { hostile_kernel(&k) }.into();
        }
        if v["type"] == "marker"
            && let Some(l) = v["label"].as_str()
        {
            v["label"] = format!("{l}\u{1b}]0;t\u{7}\n").into();
        }
        if v["op"] == "exec" {
            v["filename"] = "/bin/\u{1b}[2Jpy".into();
        }
        out.push_str(&serde_json::to_string(&v).unwrap());
        out.push('\n');
    }
    let p = dir.join("hostile.jsonl");
    std::fs::File::create(&p).unwrap().write_all(out.as_bytes()).unwrap();
    p
}

fn tracer(args: &[&str]) -> (i32, String, String) {
    let o = Command::new(TRACER).args(args).output().unwrap();
    (o.status.code().unwrap_or(-1), String::from_utf8(o.stdout).unwrap(), String::from_utf8(o.stderr).unwrap())
}

/// The raw control characters (line ends apart) and bidi overrides in `s`.
fn raw_controls(s: &str) -> Vec<char> {
    s.chars()
        .filter(|c| (c.is_control() && *c != '\n') || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'))
        .collect()
}

fn dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tracer-hostile-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn text_outputs_are_inert() {
    let d = dir("text");
    let t = hostile_trace(&d);
    let t = t.to_str().unwrap();
    let mut outs = Vec::new();
    for args in [
        &["summary", t][..],
        &["report", t],
        &["gaps", t],
        &["ioctls", t],
        &["summary", t, "--names", "full"],
        &["report", t, "--names", "full"],
    ] {
        let (rc, out, err) = tracer(args);
        assert_eq!(rc, if args[0] == "ioctls" { 1 } else { 0 }, "{args:?}: {err}");
        for (what, s) in [("stdout", &out), ("stderr", &err)] {
            assert_eq!(raw_controls(s), Vec::<char>::new(), "{args:?} {what}:\n{s}");
            let widest = s.lines().map(|l| l.chars().count()).max().unwrap_or(0);
            // short names: the 160 columns of every trace; whole names: cut at 1000 characters
            assert!(widest <= if args.len() == 2 { 160 } else { 1040 }, "{args:?} {what}: a line of {widest}");
        }
        outs.push((out, err));
    }
    let [summary, report, gaps, ioctls, summary_full, report_full] = &outs[..] else { unreachable!() };
    // the 100 KB name: 1000 characters shown, the mark says how many more
    let cut = format!("huge\\x1b[2J{}…[+99011 chars]", "K".repeat(989));
    assert!(summary_full.0.contains(&format!("        44  {cut}\n")), "{}", summary_full.0);
    assert!(report_full.0.contains(&format!("      44         -  {cut}\n")), "{}", report_full.0);
    let second = shown_kernel(SECOND);
    assert!(summary_full.0.contains(&format!("        44  {second}\n")), "{}", summary_full.0);
    assert!(report_full.0.contains(&format!("      44         -  {second}\n")), "{}", report_full.0);
    assert!(summary.0.contains("        44  huge\\x1b[2JKKKK"), "{}", summary.0);
    let r = &report.0;
    assert!(r.contains("\ncommand: python3\\x1b[2J \\x1b]0;pwned\\x07 a\\nb\n"), "{r}");
    assert!(
        r.contains("\nverdict: undetermined (phase inference\\x1b]0;t\\x07\\n, the most GPU submissions)\n"),
        "{r}"
    );
    assert!(r.contains("1 process(es): 1980 \\x1b[2Jpy; GPU: "), "{r}");
    assert!(r.contains("\nimport\\x1b]0;t\\x07\\n        3.653 s    561 "), "{r}");
    let g = &gaps.0;
    assert!(g.contains("\n== pid 1980 (\\x1b[2Jpy) == the same gaps as gpu 0 (the only process using it)\n"), "{g}");
    assert!(g.contains("\nimport\\x1b]0;t      3.653 s "), "{g}");
    assert_eq!(ioctls.1.lines().count(), 1, "{}", ioctls.1);
}

#[test]
fn json_keeps_names_whole() {
    let d = dir("json");
    let t = hostile_trace(&d);
    let (rc, out, err) = tracer(&["report", t.to_str().unwrap(), "--json"]);
    assert_eq!(rc, 0, "{err}");
    let r: Value = serde_json::from_str(&out).unwrap();
    let names: Vec<&str> = r["top_by_count"].as_array().unwrap().iter().filter_map(|k| k["kernel"].as_str()).collect();
    assert!(names.contains(&huge().as_str()), "{:?}", names.iter().map(|n| n.len()).collect::<Vec<_>>());
    assert!(names.contains(&hostile_kernel(SECOND).as_str()), "{names:?}");
    assert_eq!(r["command"], "python3\u{1b}[2J \u{1b}]0;pwned\u{7} a\nb");
    let (rc, out, err) = tracer(&["summary", t.to_str().unwrap(), "--json"]);
    assert_eq!(rc, 0, "{err}");
    assert!(out.contains(&serde_json::to_string(&huge()).unwrap()), "the 100 KB name is not whole in summary --json");
}

#[test]
fn every_svg_parses() {
    let d = dir("svg");
    let t = hostile_trace(&d);
    let o = d.join("plots");
    let (rc, out, err) = tracer(&["plot", t.to_str().unwrap(), "-o", o.to_str().unwrap(), "--format", "svg"]);
    assert_eq!(rc, 0, "{err}");
    assert_eq!(raw_controls(&err), Vec::<char>::new(), "{err}");
    let files: Vec<&str> = out.lines().collect();
    assert_eq!(files.len(), 3, "{out}");
    let mut all = String::new();
    for f in files {
        let svg = std::fs::read_to_string(f).unwrap();
        if let Err(e) = roxmltree::Document::parse(&svg) {
            panic!("{f}: {e}");
        }
        assert_eq!(raw_controls(&svg).into_iter().filter(|c| *c != '\t' && *c != '\r').count(), 0, "{f}");
        all.push_str(&svg);
    }
    // the labels are there, escaped: a phase label, the command line
    assert!(all.contains(">\nimport\\x1b]0;t\\x07\n"), "no escaped phase label");
    assert!(all.contains("\\x1b[2J \\x1b]0;pwned\\x07"), "no escaped command line");
}
