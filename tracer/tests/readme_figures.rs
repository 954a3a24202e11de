//! The figures README.md quotes about the committed traces are what the
//! quoted commands print. Each row names a command, the README sentence
//! with `{}` where its figures stand (read out of the README, so editing a
//! figure there fails this test), and what the command's output must then
//! contain, with `{0}`, `{1}`… for those figures. Whitespace runs count as
//! one space on both sides (the README wraps, the tables align).

use std::path::Path;
use std::process::Command;

struct Figure {
    /// tracer's arguments, run from the repository root.
    args: &'static [&'static str],
    /// The README's words around the figures, `{}` for each figure.
    readme: &'static str,
    /// Each must be in the command's output, `{N}` replaced by figure N.
    output: &'static [&'static str],
}

const GPU_TRACE: &str = "traces/transformer_inference_gpu.jsonl.gz";

const FIGURES: &[Figure] = &[
    Figure {
        args: &["summary", GPU_TRACE],
        readme: "`tracer summary traces/transformer_inference_gpu.jsonl.gz` counts {} driver calls and {} kernel launches;",
        output: &["{0} driver calls in 1 process(es)", "{1} kernel launches (50 distinct kernels)"],
    },
    Figure {
        args: &["report", GPU_TRACE],
        readme: "`tracer report traces/transformer_inference_gpu.jsonl.gz` calls its steady phase {}: GPU idle {}; and",
        output: &["steady 1.442 s {0}: GPU idle {1};"],
    },
    Figure {
        args: &["gaps", GPU_TRACE],
        readme: "`tracer gaps traces/transformer_inference_gpu.jsonl.gz` shows the GPU idle {} of the steady phase in gaps of median {} µs ({} s, {} gaps).",
        output: &["steady {2} s 1.428 s {0} {3} {1} µs"],
    },
    Figure {
        args: &["gaps", GPU_TRACE],
        readme: "GPU times the H100 is idle {} of the steady phase",
        output: &["steady 1.442 s 1.428 s {0} 6212"],
    },
    Figure {
        args: &["ioctls", "traces/transformer_inference_ioctls.jsonl.gz"],
        readme: "`tracer ioctls traces/transformer_inference_ioctls.jsonl.gz` counts {} ioctls on NVIDIA devices, {} at start-up, {} loading, {} in warm-up and {} in steady state.",
        output: &[
            "{0} ioctls on NVIDIA devices",
            "startup 19.379 {1} 25.5",
            "loading 0.056 {2} 779.9",
            "warmup 3.927 {3} 24.4",
            "steady 1.783 {4} 0.0",
        ],
    },
];

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap()
}

fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The figures standing at the `{}` of `template` in `text` (both collapsed):
/// each is the text up to the template's next literal part, one word.
fn figures_in(text: &str, template: &str) -> Result<Vec<String>, String> {
    let parts: Vec<&str> = template.split("{}").collect();
    let start = text.find(parts[0]).ok_or_else(|| format!("README.md lacks {:?}", parts[0]))?;
    let mut rest = &text[start + parts[0].len()..];
    let mut figures = Vec::new();
    for part in &parts[1..] {
        let end = rest.find(part).ok_or_else(|| format!("README.md lacks {part:?} after {template:?}"))?;
        let figure = &rest[..end];
        if figure.is_empty() || figure.contains(' ') {
            let shown: String = figure.chars().take(40).collect();
            return Err(format!("README.md has {shown:?} where {template:?} expects one figure"));
        }
        figures.push(figure.to_string());
        rest = &rest[end + part.len()..];
    }
    Ok(figures)
}

fn tracer(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_tracer")).args(args).current_dir(root()).output().unwrap();
    assert!(out.status.success(), "tracer {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    collapse(&(String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)))
}

/// `needle` in `hay` as whole words: no letter, digit or point right
/// before or after it (so 6421 is not found in 16421, nor 0.0 in 0.05).
fn contains_words(hay: &str, needle: &str) -> bool {
    let edge = |c: Option<char>| c.is_none_or(|c| !c.is_alphanumeric() && c != '.');
    hay.match_indices(needle)
        .any(|(i, _)| edge(hay[..i].chars().next_back()) && edge(hay[i + needle.len()..].chars().next()))
}

#[test]
fn the_readme_figures_are_what_their_commands_print() {
    let readme = collapse(&std::fs::read_to_string(root().join("README.md")).unwrap());
    for f in FIGURES {
        let figures = figures_in(&readme, f.readme).unwrap();
        let printed = tracer(f.args);
        for want in f.output {
            let mut want = collapse(want);
            for (i, v) in figures.iter().enumerate() {
                want = want.replace(&format!("{{{i}}}"), v);
            }
            assert!(
                contains_words(&printed, &want),
                "README.md quotes {figures:?}, but `tracer {}` does not print {want:?}",
                f.args.join(" ")
            );
        }
    }
}

#[test]
fn figures_are_read_from_the_text_one_word_each() {
    let t = "it counts 635 ioctls, 0 in steady state.";
    assert_eq!(figures_in(t, "counts {} ioctls, {} in steady").unwrap(), ["635", "0"]);
    assert_eq!(
        figures_in(t, "counts {} in steady").unwrap_err(),
        "README.md has \"635 ioctls, 0\" where \"counts {} in steady\" expects one figure"
    );
    assert_eq!(figures_in(t, "shows {} ioctls").unwrap_err(), "README.md lacks \"shows \"");
    assert!(contains_words("x 16421 driver calls", "16421 driver calls"));
    assert!(!contains_words("x 16421 driver calls", "6421 driver calls"));
    assert!(contains_words(
        "11380 kernel launches (50 distinct kernels), 21",
        "11380 kernel launches (50 distinct kernels)"
    ));
    assert!(!contains_words("idle 0.05", "idle 0.0"));
}
