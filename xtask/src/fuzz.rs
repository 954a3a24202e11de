//! `cargo xtask fuzz [--seconds N] [TARGET...]`: runs every fuzz target of
//! tracer (tracer/src/fuzz/) for N seconds each, two at a time, with their
//! statistics. The normal test run (`cargo xtask test`) runs each for 1 s.
//! The targets are the library's `fuzz::targets::fuzz_*` tests, as the test
//! binary lists them: there is no second list to keep in step.

use std::time::Instant;

use anyhow::Result;

use crate::{setup, util};

/// Test-name prefix of the fuzz targets in tracer's library.
const PREFIX: &str = "fuzz::targets::fuzz_";

/// The targets, from the test binary's list (`cargo test -- --list`).
fn targets_listed() -> Result<Vec<String>> {
    let mut c = util::cargo();
    c.args(["test", "-p", "tracer", "--lib", "--", "--list", PREFIX]);
    let out = util::output(&mut c)?;
    Ok(parse_list(&out))
}

/// `fuzz::targets::fuzz_NAME: test` lines → NAME.
fn parse_list(out: &str) -> Vec<String> {
    out.lines().filter_map(|l| l.strip_suffix(": test")?.strip_prefix(PREFIX).map(str::to_owned)).collect()
}

pub fn run(seconds: f64, targets: &[String]) -> Result<()> {
    setup::run()?;
    let known = targets_listed()?;
    if known.is_empty() {
        anyhow::bail!(
            "tracer's library lists no {PREFIX}* tests: is tracer/src/fuzz/ still compiled into the library?"
        );
    }
    for t in targets {
        if !known.contains(t) {
            anyhow::bail!("unknown fuzz target {t:?} (targets: {})", known.join(", "));
        }
    }
    let start = Instant::now();
    let mut c = util::cargo();
    c.env("TRACER_FUZZ_SECONDS", seconds.to_string()).args(["test", "-p", "tracer", "--lib", "--"]);
    if targets.is_empty() {
        c.arg(PREFIX);
    } else {
        c.args(targets.iter().map(|t| format!("{PREFIX}{t}")));
        c.arg("--exact");
    }
    c.args(["--nocapture", "--test-threads", "2"]);
    let n = if targets.is_empty() { known.len() } else { targets.len() };
    println!(
        "fuzz: {n} target(s), {seconds} s each, 2 at a time (failures are minimized and saved under target/fuzz-failures/)"
    );
    util::run(&mut c)?;
    println!("fuzz: done in {}", util::secs(start.elapsed()));
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn targets_from_the_test_list() {
        let out = "fuzz::targets::fuzz_trace_jsonl: test\nfuzz::targets::fuzz_ld_so_cache: test\nfuzz::mod_helper: test\n\n2 tests, 0 benchmarks\n";
        assert_eq!(super::parse_list(out), ["trace_jsonl", "ld_so_cache"]);
    }
}
