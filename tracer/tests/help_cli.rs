//! Every `--help` (and `-h`) of tracer and of each subcommand fits a
//! 100-column terminal: clap wraps help to the terminal's width (COLUMNS
//! here, as a terminal would report it).
use std::process::Command;

fn help(args: &[&str], columns: &str) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_tracer")).args(args).env("COLUMNS", columns).output().unwrap();
    assert!(o.status.success(), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

/// The visible subcommands, from `tracer --help`'s "Commands:" list.
fn subcommands() -> Vec<String> {
    let text = help(&["--help"], "100");
    let list = text.split("Commands:\n").nth(1).unwrap().split("\n\n").next().unwrap();
    list.lines()
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .filter(|s| s != "help")
        .collect()
}

#[test]
fn every_help_fits_100_columns() {
    let subs = subcommands();
    assert_eq!(
        subs,
        [
            "record",
            "agent",
            "summary",
            "ioctls",
            "image",
            "plot",
            "gaps",
            "report",
            "export",
            "calibrate",
            "compare",
            "calibrate-host",
            "whatif",
            "completions",
            "man"
        ]
    );
    let mut checked = 0;
    for sub in std::iter::once(None).chain(subs.iter().map(|s| Some(s.as_str()))) {
        for flag in ["--help", "-h"] {
            let args: Vec<&str> = sub.into_iter().chain([flag]).collect();
            let text = help(&args, "100");
            for l in text.lines() {
                assert!(l.chars().count() <= 100, "tracer {args:?}: {} columns: {l}", l.chars().count());
            }
            checked += 1;
        }
    }
    assert_eq!(checked, 32);
    // a narrower terminal wraps narrower
    for l in help(&["record", "--help"], "60").lines() {
        assert!(l.chars().count() <= 60 || !l.trim().contains(' '), "{l}");
    }
}

#[test]
fn help_has_examples() {
    for (args, example) in [
        (&["--help"][..], "tracer report run.jsonl "),
        (&["report", "--help"], "tracer report run.jsonl --json --names full"),
        (&["summary", "--help"], "tracer summary run.jsonl --names full --json"),
        (&["plot", "--help"], "tracer plot run.jsonl -o plots/"),
        (&["gaps", "--help"], "tracer gaps run.jsonl --phase generate"),
        (&["export", "--help"], "tracer export run.jsonl --format parquet"),
    ] {
        let text = help(args, "100");
        assert!(text.contains("Examples:\n") && text.contains(example), "{args:?}: {text}");
    }
}
