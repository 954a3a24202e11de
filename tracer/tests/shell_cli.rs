//! `tracer completions` and `tracer man`, checked with the real tools: bash
//! sources the script and completes words, groff formats the man page
//! without a warning; both list every subcommand.
use std::process::Command;

fn tracer(args: &[&str]) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_tracer")).args(args).output().unwrap();
    assert!(o.status.success(), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

const SUBCOMMANDS: &[&str] = &[
    "record",
    "summary",
    "ioctls",
    "image",
    "plot",
    "gaps",
    "report",
    "export",
    "calibrate",
    "compare",
    "whatif",
    "completions",
    "man",
];

/// What bash's completion gives for the words typed so far (the last one being completed).
fn complete(script: &str, words: &[&str]) -> Vec<String> {
    let dir = std::env::temp_dir().join(format!("tracer-completions-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("tracer.bash");
    std::fs::write(&f, script).unwrap();
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    // bash calls a completion function with the command, the word being
    // completed and the word before it
    let prog = format!(
        "source '{}'; COMP_WORDS=({}); COMP_CWORD={}; _tracer tracer '{}' '{}'; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        f.display(),
        quoted.join(" "),
        words.len() - 1,
        words[words.len() - 1],
        words[words.len() - 2]
    );
    let o = Command::new("bash").arg("-c").arg(prog).current_dir(&dir).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    std::fs::remove_dir_all(&dir).ok();
    String::from_utf8(o.stdout).unwrap().lines().filter(|l| !l.is_empty()).map(String::from).collect()
}

#[test]
fn bash_completion_completes_subcommands_options_and_values() {
    let script = tracer(&["completions", "bash"]);
    assert!(script.contains("_tracer_options() {"), "clap_complete's function: {script}");
    assert_eq!(complete(&script, &["tracer", "pl"]), ["plot"]);
    assert_eq!(complete(&script, &["tracer", "plot", "--format", ""]), ["png", "svg", "both"]);
    assert_eq!(complete(&script, &["tracer", "report", "--t"]), ["--timeline", "--to"]);
    assert_eq!(complete(&script, &["tracer", "report", "--timeline", "b"]), ["bound"]);
    assert_eq!(complete(&script, &["tracer", "report", "--names", ""]), ["short", "full", "mangled"]);
    assert_eq!(complete(&script, &["tracer", "summary", "--n"]), ["--names"]);
    assert_eq!(complete(&script, &["tracer", "--ret"]), ["--returns"]);
    // hidden options (benchmark switches, old aliases) are not offered
    assert!(complete(&script, &["tracer", "--bench"]).is_empty());
    assert_eq!(complete(&script, &["tracer", "report", "--m"]), Vec::<String>::new());
    // After `--` the words are the command's: files, not tracer's options.
    assert!(complete(&script, &["tracer", "--", "--"]).is_empty());
    assert_eq!(complete(&script, &["tracer", "--", "tracer.b"]), ["tracer.bash"]);
    let zsh = tracer(&["completions", "zsh"]);
    assert!(zsh.starts_with("#compdef tracer\n"), "{zsh}");
    for s in SUBCOMMANDS {
        assert!(zsh.contains(&format!("'{s}:")), "zsh: {s}");
    }
    assert!(!zsh.contains("bench-probe") && !zsh.contains("--mangled"), "zsh offers a hidden option");
    let fish = tracer(&["completions", "fish"]);
    for s in SUBCOMMANDS {
        assert!(
            fish.contains(&format!("complete -c tracer -n \"__fish_tracer_needs_command\" -a \"{s}\" -d ")),
            "fish: {s}"
        );
    }
    assert!(fish.contains(
        "complete -c tracer -n \"__fish_tracer_using_subcommand plot\" -l format -d 'Image format' -r -f -a"
    ));
    assert!(!fish.contains("bench-probe") && !fish.contains("-l mangled"), "fish offers a hidden option");
}

#[test]
fn man_page_formats_cleanly_and_lists_every_subcommand() {
    let page = tracer(&["man"]);
    assert!(page.contains("\n.TH tracer 1 "), "{}", &page[..200]);
    for s in SUBCOMMANDS {
        assert!(page.contains(&format!("\n.SS tracer {s}\n")), "{s}");
    }
    let dir = std::env::temp_dir().join(format!("tracer-man-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("tracer.1");
    std::fs::write(&f, &page).unwrap();
    let o = Command::new("groff").args(["-man", "-Tutf8", "-ww"]).arg(&f).output();
    std::fs::remove_dir_all(&dir).ok();
    let Ok(o) = o else {
        eprintln!("groff not found: the page's formatting is not checked");
        return;
    };
    assert!(o.status.success());
    assert_eq!(String::from_utf8_lossy(&o.stderr), "", "groff warnings");
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("--gpu-timestamps") || text.contains("‐‐gpu‐timestamps"), "{text}");
}
