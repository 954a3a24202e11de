//! `tracer -o - -- CMD`: the trace goes to stdout (header to footer, nothing
//! else), the command's own stdout to tracer's stderr; refused with
//! --replayable. End to end on the fake libcuda.
//!
//! `sudo -E TRACER_ROOT_TESTS=1 cargo test -p tracer --test root_stdout -- --test-threads=1`.
mod common;

use std::fs::File;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

#[test]
fn trace_to_stdout() {
    if !common::root_tests_enabled() {
        return;
    }
    let f = common::fake();
    let base = common::fresh_output("stdout");
    let (trace, err) = (base.with_extension("out"), base.with_extension("err"));
    let mut child = Command::new(common::tracer_bin())
        .args(["-o", "-", "--libcuda"])
        .arg(&f.lib)
        .args(["--", "sh", "-c", "echo from-the-command; exec \"$0\" all"])
        .arg(&f.driver)
        .stdout(Stdio::from(File::create(&trace).unwrap()))
        .stderr(Stdio::from(File::create(&err).unwrap()))
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let st = common::wait_with_timeout(&mut child, Duration::from_secs(180), false, "tracer -o -");
    let stderr = std::fs::read_to_string(&err).unwrap();
    assert_eq!(common::shell_code(&st), 0, "{stderr}");
    let text = std::fs::read_to_string(&trace).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a trace line: {l}: {e}")))
        .collect();
    assert_eq!(lines[0]["type"], "header");
    let footer = lines.last().unwrap();
    assert_eq!(footer["type"], "footer");
    assert_eq!(footer["lost"]["total"], 0);
    let calls = lines.iter().filter(|l| l["name"].as_str().is_some_and(|n| n.starts_with("cu"))).count() as u64;
    assert_eq!(footer["calls"].as_u64(), Some(calls), "{footer}");
    assert!(calls >= 100, "{calls} calls");
    // The command's stdout went to stderr.
    assert!(stderr.lines().any(|l| l == "from-the-command"), "{stderr}");
    // tracer's readers read what came out.
    let o = Command::new(common::tracer_bin()).arg("summary").arg(&trace).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));

    let o = Command::new(common::tracer_bin())
        .args(["record", "--replayable", "-o", "-", "--libcuda"])
        .env("TRACER_HOST_SPEED_HISTORY", "")
        .arg(&f.lib)
        .arg("--")
        .arg(&f.driver)
        .arg("all")
        .stdout(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        "tracer: -o - writes the trace to stdout: not with --replayable (a recording is a directory)\n"
    );
}
