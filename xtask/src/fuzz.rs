//! `cargo xtask fuzz [--seconds N] [TARGET...]`: runs every fuzz target of
//! tracer (tracer/src/fuzz/) for N seconds each, two at a time, with their
//! statistics. The normal test run (`cargo xtask test`) runs each for 1 s.

use std::time::Instant;

use anyhow::Result;

use crate::{setup, util};

/// The targets, as named in tracer/src/fuzz/targets.rs.
pub const TARGETS: &[&str] =
    &["trace_jsonl", "trace_jsonl_gz", "ring_records", "record_decode", "ioctl_params", "libcuda_elf", "ld_so_cache"];

pub fn run(seconds: f64, targets: &[String]) -> Result<()> {
    for t in targets {
        if !TARGETS.contains(&t.as_str()) {
            anyhow::bail!("unknown fuzz target {t:?} (targets: {})", TARGETS.join(", "));
        }
    }
    setup::run()?;
    let start = Instant::now();
    let mut c = util::cargo();
    c.env("TRACER_FUZZ_SECONDS", seconds.to_string()).args(["test", "-p", "tracer", "--bin", "tracer", "--"]);
    if targets.is_empty() {
        c.arg("fuzz::targets::fuzz_");
    } else {
        c.args(targets.iter().map(|t| format!("fuzz::targets::fuzz_{t}")));
        c.arg("--exact");
    }
    c.args(["--nocapture", "--test-threads", "2"]);
    let n = if targets.is_empty() { TARGETS.len() } else { targets.len() };
    println!(
        "fuzz: {n} target(s), {seconds} s each, 2 at a time (failures are minimized and saved under target/fuzz-failures/)"
    );
    util::run(&mut c)?;
    println!("fuzz: done in {}", util::secs(start.elapsed()));
    Ok(())
}
