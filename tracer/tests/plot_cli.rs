//! `tracer plot` on a committed recording: the six files, valid and of the
//! expected sizes; a zoom gets its own timeline file; misuse is exit code 2.
use std::path::Path;
use std::process::Command;

fn png_size(p: &Path) -> (u32, u32) {
    let b = std::fs::read(p).unwrap();
    assert_eq!(&b[..8], b"\x89PNG\r\n\x1a\n", "{}", p.display());
    (u32::from_be_bytes(b[16..20].try_into().unwrap()), u32::from_be_bytes(b[20..24].try_into().unwrap()))
}

#[test]
fn plot_simple_recording() {
    let trace = concat!(env!("CARGO_MANIFEST_DIR"), "/../traces/simple_inference.jsonl.gz");
    let dir = std::env::temp_dir().join(format!("tracer-plot-cli-{}", std::process::id()));
    let out = Command::new(env!("CARGO_BIN_EXE_tracer"))
        .args(["plot", trace, "--width", "1000", "-o"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let listed: Vec<String> = String::from_utf8(out.stdout).unwrap().lines().map(String::from).collect();
    let names = ["timeline", "gaps", "phases"];
    let mut expect = Vec::new();
    for e in ["png", "svg"] {
        for n in names {
            expect.push(dir.join(format!("simple_inference_{n}.{e}")).display().to_string());
        }
    }
    assert_eq!(listed, expect);
    // One thread row, no GPU rows, no power panel, one legend line: 1000 × 306.
    assert_eq!(png_size(&dir.join("simple_inference_timeline.png")), (1000, 306));
    assert_eq!(png_size(&dir.join("simple_inference_gaps.png")).0, 1000);
    let svg = std::fs::read_to_string(dir.join("simple_inference_timeline.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    assert!(svg.contains("tid 409 (main) · 1,941 calls"), "thread label missing");
    assert!(svg.contains("time since start of trace (s)"));

    let out = Command::new(env!("CARGO_BIN_EXE_tracer"))
        .args(["plot", trace, "--format", "png", "--from", "5.8", "--to", "6.5", "-o"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(dir.join("simple_inference_timeline_5.8-6.5s.png").exists());

    let out = Command::new(env!("CARGO_BIN_EXE_tracer"))
        .args(["plot", trace, "--from", "6", "--to", "5", "-o"])
        .arg(&dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--from must be before --to"));
    std::fs::remove_dir_all(&dir).unwrap();
}
