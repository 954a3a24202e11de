//! `cargo xtask bench soak [--minutes M] [--rate CALLS_PER_S] [--release]`:
//! tracer records a fake-libcuda program calling at a steady rate for M
//! minutes while its memory is sampled; every call must be on disk, nothing
//! lost, memory flat. It runs the root test tracer/tests/root_soak.rs with a
//! longer duration (the normal test run uses 20 s) and writes its report to
//! target/soak/soak-<UTC time>.json.

use std::time::Instant;

use anyhow::{Result, bail};
use clap::Subcommand;

use crate::{setup, util};

#[derive(Subcommand)]
pub enum Bench {
    /// Minutes of steady tracing: memory sampled, every call checked on disk
    Soak {
        /// How long the traced program runs
        #[arg(long, default_value_t = 10.0)]
        minutes: f64,
        /// Driver calls per second the program makes
        #[arg(long, default_value_t = 5000)]
        rate: u64,
        /// Use the release build of tracer (default: the debug build the tests use)
        #[arg(long)]
        release: bool,
    },
}

pub fn run(b: &Bench) -> Result<()> {
    match b {
        Bench::Soak { minutes, rate, release } => soak(*minutes, *rate, *release),
    }
}

fn soak(minutes: f64, rate: u64, release: bool) -> Result<()> {
    if !util::is_root()? {
        bail!("the soak benchmark loads eBPF programs: run it as root (sudo -E cargo xtask bench soak)");
    }
    setup::run()?;
    let secs = (minutes * 60.0).round().max(1.0) as u64;
    let dir = util::target_dir().join("soak");
    std::fs::create_dir_all(&dir)?;
    let report = dir.join(format!("soak-{}.json", util::utc_timestamp()));
    let start = Instant::now();
    let mut c = util::cargo();
    c.env("TRACER_ROOT_TESTS", "1")
        .env("TRACER_SOAK_SECONDS", secs.to_string())
        .env("TRACER_SOAK_RATE", rate.to_string())
        .env("TRACER_SOAK_REPORT", &report)
        .args(["test", "-p", "tracer", "--test", "root_soak"]);
    if release {
        c.arg("--release");
    }
    c.args(["--", "--nocapture", "--test-threads=1"]);
    println!("soak: {secs} s at {rate} calls/s; report: {}", report.display());
    util::run(&mut c)?;
    println!("soak: done in {}; report {}", util::secs(start.elapsed()), report.display());
    Ok(())
}
