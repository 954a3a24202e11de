//! `cargo xtask bench exit` (root, no GPU): how long tracer takes to end
//! once its command has exited (detaching every probe, draining the ring,
//! the footer), beside the command alone. The root test
//! `tracer_exits_promptly_after_the_command` checks what ends the recording
//! (the command's exit, nothing pending); the time is measured here.
//!
//! The command is bench.c making one call. Per run: the command's wall time
//! alone; tracer's wall time on it; and tracer's time after the command's
//! exit, from the trace itself: the header's CLOCK_MONOTONIC sample plus the
//! footer's `duration_s` (the footer's moment) less the `exit` record's
//! timestamp.
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use serde_json::Value;

use super::collector::build_env;
use super::stats::{median, range};
use crate::util;

pub fn run(reps: u32) -> Result<()> {
    if !util::is_root()? {
        bail!("tracer loads eBPF programs: run it as root (sudo -E cargo xtask bench exit)");
    }
    util::run(util::cargo().args(["build", "--release", "-p", "tracer"]))?;
    let env = build_env()?;
    let out = env.dir.join("exit.jsonl");
    let command = [env.bench.as_os_str(), "calls".as_ref(), "ctx".as_ref(), "1".as_ref(), "1".as_ref()];
    let (mut alone, mut traced, mut after_exit) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..reps.max(1) {
        let t0 = Instant::now();
        let st = Command::new(command[0]).args(&command[1..]).stdout(Stdio::null()).status()?;
        alone.push(t0.elapsed().as_secs_f64());
        anyhow::ensure!(st.success(), "the command alone: {st}");
        let t0 = Instant::now();
        let st = Command::new(&env.tracer)
            .args(["-q", "--force", "-o"])
            .arg(&out)
            .arg("--libcuda")
            .arg(&env.lib)
            .arg("--")
            .args(command)
            .stdout(Stdio::null())
            .status()?;
        traced.push(t0.elapsed().as_secs_f64());
        anyhow::ensure!(st.success(), "tracer on the command: {st}");
        after_exit.push(after_exit_s(&std::fs::read_to_string(&out)?).context("reading the trace")?);
    }
    println!("tracer's end after its command exits, {} runs (median [min, max]):", alone.len());
    for (what, v) in [
        ("command alone, wall", &alone),
        ("tracer -- command, wall", &traced),
        ("tracer after the command's exit", &after_exit),
    ] {
        let (lo, hi) = range(v);
        println!("  {what:<34} {:>8.3} s  [{lo:.3}, {hi:.3}]", median(v));
    }
    Ok(())
}

/// Seconds from the command's `exit` record to the footer, in a trace.
fn after_exit_s(trace: &str) -> Result<f64> {
    let lines: Vec<Value> = trace.lines().map(serde_json::from_str).collect::<Result<_, _>>()?;
    let (Some(header), Some(footer)) = (lines.first(), lines.last()) else { bail!("an empty trace") };
    let start_ns = header["clock"]["monotonic_ns"].as_f64().context("header.clock.monotonic_ns")?;
    let duration_s = footer["duration_s"].as_f64().context("footer.duration_s")?;
    let exit_ns = lines
        .iter()
        .find(|l| l["type"] == "process" && l["op"] == "exit" && l["pid"] == header["pid"])
        .and_then(|l| l["ts"].as_f64())
        .context("the command's exit record")?;
    Ok((start_ns + duration_s * 1e9 - exit_ns) / 1e9)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_after_exit_is_footer_moment_less_exit_record() {
        let trace = concat!(
            r#"{"type":"header","pid":7,"clock":{"monotonic_ns":1000000000}}"#,
            "\n",
            r#"{"type":"process","op":"exit","pid":8,"ts":1100000000}"#,
            "\n",
            r#"{"type":"process","op":"exit","pid":7,"ts":1250000000}"#,
            "\n",
            r#"{"type":"footer","duration_s":0.5}"#,
            "\n"
        );
        assert_eq!(after_exit_s(trace).unwrap(), 0.25);
    }
}
