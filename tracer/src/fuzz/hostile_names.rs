//! The `hostile_names` target (issue 47): traces whose every name (kernel
//! names, command line, host, libcuda path, exec file names, phase and
//! marker labels, ioctl names, errors, GPU models, stack frames) is made of escape
//! sequences, control characters, bidi overrides and UTF-8, of any length up
//! to 20,000 characters. The text renderers (summary, report with its
//! verdict, gaps, ioctls) must print no raw control character and no line
//! sized by a name; every eighth case, the SVGs of `tracer plot` must parse.
use std::fmt::Write as _;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Value, json};

use super::{Rng, Target, default_budget};
use crate::analysis::{gaps, inert, ioctl_report, kernel_names::NameStyle, model, phases, report, summary, timeline};

/// Pieces a hostile name is made of.
const PIECES: &[&str] = &[
    "\u{1b}[2J",
    "\u{1b}]0;title\u{7}",
    "\u{1b}[31m",
    "\u{7}",
    "\r",
    "\n",
    "\t",
    "\u{7f}",
    "\u{85}",
    "\u{9b}",
    "\u{202e}",
    "\u{2066}",
    "\u{2069}",
    "\u{fffe}",
    "\u{ffff}",
    "δ_kernel",
    "<&\"'>",
    "]]>",
    " ",
    "_ZN2at6native",
    "void f<int>(int)",
];

/// A name of random pieces, random C0 characters and, now and then, a long
/// run of one character.
fn hostile_name(rng: &mut Rng) -> String {
    let mut s = String::new();
    for _ in 0..1 + rng.below(6) {
        match rng.below(8) {
            0 => s.push(char::from(1 + rng.below(31) as u8)),
            1 if rng.chance(20) => s.push_str(&"K".repeat(rng.below(20_000))),
            _ => s.push_str(PIECES[rng.below(PIECES.len())]),
        }
    }
    s
}

/// A trace of one process with hostile names everywhere.
fn gen_trace(rng: &mut Rng, _corpus: &[Vec<u8>]) -> Vec<u8> {
    let mut lines: Vec<Value> = Vec::new();
    let n = hostile_name;
    lines.push(json!({"type": "header", "format": "tracer-jsonl", "format_version": 1, "command": [n(rng), n(rng)],
                      "host": n(rng), "libcuda": n(rng), "gpus": [{"bus": n(rng), "model": n(rng)}]}));
    let mut ts = 1_000_000u64;
    lines.push(
        json!({"type": "process", "op": "exec", "name": "process", "pid": 1, "tid": 1, "ts": ts, "filename": n(rng)}),
    );
    // A stack of hostile frames (`tracer gaps`' and `report`'s stack lines).
    lines.push(json!({"type": "stack", "op": "stack", "name": "stack", "id": 1, "pid": 1, "tid": 0, "ts": ts,
                      "frames": [{"kind": "native", "fn": n(rng), "module": n(rng), "addr": "0x1000", "offset": "0x10"},
                                 {"kind": "python", "fn": n(rng), "file": n(rng), "line": 3}]}));
    let kernels: Vec<String> = (0..1 + rng.below(4)).map(|_| n(rng)).collect();
    for seq in 0..rng.below(40) as u64 {
        ts += 1000 + rng.below(100_000) as u64;
        let marker_op = ["phase", "iteration"][rng.below(2)];
        let l = match rng.below(6) {
            0 => json!({"type": "marker", "op": marker_op, "name": "marker", "label": n(rng),
                        "pid": 1, "tid": 1, "ts": ts}),
            1 => json!({"type": "sync", "op": "stream_synchronize", "name": "cuStreamSynchronize", "pid": 1, "tid": 1,
                        "ts": ts, "seq": seq, "duration_us": 5.0, "ret": 0, "stream": "0x0"}),
            2 => json!({"type": "ioctl", "op": "ioctl", "name": n(rng), "known": true, "pid": 1, "tid": 1, "ts": ts,
                        "duration_us": 1.0, "ret": -1, "errno": n(rng), "status": 0, "status_name": n(rng),
                        "cuda_call": n(rng), "fields": {"cmd_name": n(rng), "class_name": n(rng)}, "nr": "0x2a",
                        "device": n(rng)}),
            3 => json!({"type": "memory", "op": "alloc", "name": n(rng), "pid": 1, "tid": 1, "ts": ts, "seq": seq,
                        "duration_us": 2.0, "ret": 1, "error": n(rng), "size": 4096, "ptr": "0x1000"}),
            _ => {
                let k = &kernels[rng.below(kernels.len())];
                let end = ts + 2000 + rng.below(50_000) as u64;
                lines.push(
                    json!({"type": "gpu", "op": "kernel", "name": k, "ts": ts + 500, "end_ts": end, "device": 0,
                                  "stream": "0x0", "stream_id": 7, "correlation_id": seq, "pid": 1, "tid": 0,
                                  "source": "cupti", "context_id": 1, "duration_us": (end - ts - 500) as f64 / 1e3}),
                );
                json!({"type": "kernel", "op": "launch", "name": "cuLaunchKernel", "kernel": k, "pid": 1, "tid": 1,
                       "ts": ts, "seq": seq, "duration_us": 3.0, "ret": 0, "stream": "0x0", "correlation_id": seq,
                       "stack": 1})
            }
        };
        lines.push(l);
    }
    let mut out = String::new();
    for l in lines {
        let _ = writeln!(out, "{l}");
    }
    out.into_bytes()
}

/// Panics when `text` (the output of `what`) has a raw control character
/// (line ends apart) or bidi override, or a line longer than two cut names.
fn check_inert(what: &str, text: &str) {
    if let Some(c) = text.chars().find(|c| inert::is_unsafe(*c) && *c != '\n') {
        panic!("{what}: raw {c:?} in the text output");
    }
    let widest = text.lines().map(|l| l.chars().count()).max().unwrap_or(0);
    assert!(widest <= 2 * inert::CELL_CAP + 300, "{what}: a line of {widest} characters");
}

/// Every eighth case also draws its SVGs.
static CASES: AtomicU64 = AtomicU64::new(0);

fn load_trace(p: &Path) -> anyhow::Result<model::Trace> {
    model::parse_str("fuzz.jsonl", &std::fs::read_to_string(p)?)
}

/// The SVGs of `tracer plot` for `bytes`, each parsed as XML (in a folder
/// of its own, `case`, removed after).
fn svgs_parse(bytes: &[u8], case: u64) -> String {
    let dir = std::env::temp_dir().join(format!("tracer-fuzz-hostile-{}-{case}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let out = draw_and_parse(bytes, &dir);
    let _ = std::fs::remove_dir_all(&dir);
    out
}

fn draw_and_parse(bytes: &[u8], dir: &Path) -> String {
    use crate::export::plot;
    let trace = dir.join("t.jsonl");
    if std::fs::write(&trace, bytes).is_err() {
        return "no temp dir".into();
    }
    let data = match plot::from_trace::load(&trace, load_trace) {
        Ok(d) => d,
        Err(e) => return format!("plot: {e}"),
    };
    let o = plot::Opts { format: plot::Format::Svg, width: 800, max_threads: 8, from_s: None, to_s: None, json: false };
    let paths = match plot::write_all(&data, dir, "t", &o) {
        Ok(p) => p,
        Err(e) => return format!("plot: {e}"),
    };
    for p in &paths {
        let svg = std::fs::read_to_string(p).unwrap();
        if let Err(e) = roxmltree::Document::parse(&svg) {
            panic!("{}: not XML: {e}", p.display());
        }
    }
    format!("{} svgs", paths.len())
}

fn run(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let mut s = summary::Summary::default();
    let mut values = Vec::new();
    for l in text.lines() {
        if let Ok(v) = serde_json::from_str::<Value>(l) {
            s.add(&v);
            values.push(v);
        }
    }
    check_inert("summary", &s.render_with(NameStyle::Full));
    check_inert("summary --names short", &s.render_with(NameStyle::Short));
    check_inert("ioctls", &ioctl_report::IoctlReport::build(&values).render());
    let t = match model::parse_str("fuzz.jsonl", &text) {
        Ok(t) => t,
        Err(e) => return e.to_string(),
    };
    let ph = phases::phases(&t);
    let tl = timeline::gpu_intervals(&t, None);
    let g = gaps::analyze(&t, &tl, &ph, &gaps::GapOptions::default());
    check_inert("gaps", &crate::analysis::text_table::wrap(&gaps::render(&g), 160, 2));
    let mut r = report::build(&t, &ph, &tl);
    if let Some(v) = crate::analysis::verdict::judge(&t, &tl, &r) {
        crate::analysis::verdict::render(&v, &mut r.lead);
    }
    check_inert("report", &report::render(&r));
    let case = CASES.fetch_add(1, Ordering::Relaxed);
    let svg = match case % 8 {
        0 => svgs_parse(bytes, case),
        _ => String::new(),
    };
    format!("ok calls {} gpu {} {svg}", t.calls.len(), t.gpu.len())
}

fn seeds() -> Vec<Vec<u8>> {
    let mut rng = Rng::new(47);
    (0..4).map(|_| gen_trace(&mut rng, &[])).collect()
}

pub const HOSTILE_NAMES: Target = Target {
    name: "hostile_names",
    run,
    seeds,
    generate: Some(gen_trace),
    mutate: None,
    // names of up to 20,000 characters, escaped (4 bytes a character) in
    // several outputs; the plots
    budget: |len| default_budget(len) + 256 * len,
};

#[cfg(test)]
mod tests {
    use super::*;

    /// The generated traces reach the renderers and the plots: a seed draws
    /// its three SVGs, and a raw ESC or a 100 KB line is caught.
    #[test]
    fn seeds_draw_and_the_check_catches() {
        let seed = &seeds()[0];
        assert!(run(seed).starts_with("ok calls "), "{}", run(seed));
        assert_eq!(svgs_parse(seed, u64::MAX), "3 svgs");
        assert!(std::panic::catch_unwind(|| check_inert("x", "a\u{1b}[2J")).is_err());
        assert!(std::panic::catch_unwind(|| check_inert("x", &"K".repeat(100_000))).is_err());
        check_inert("x", "a\\x1b[2J\nδ\n");
    }
}
