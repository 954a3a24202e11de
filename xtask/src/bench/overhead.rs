//! `cargo xtask bench overhead`: the GPU overhead benchmark (bench/overhead.py
//! drives bench/workloads.py untraced, under tracer and under torch.profiler).
//!
//! GPU machines often have no Rust toolchain: this builds the release tracer
//! here, stages it in `.device-bin/`, and prints the command to run there
//! from a copy of this checkout. Where a GPU is present (nvidia-smi answers)
//! it runs the benchmark directly.
use std::fs;

use anyhow::{Context, Result};

use crate::util;

pub fn run(args: &[String]) -> Result<()> {
    util::run(util::cargo().args(["build", "--release", "-p", "tracer"]))?;
    let root = util::repo_root();
    let stage = root.join(".device-bin");
    fs::create_dir_all(&stage)?;
    fs::copy(util::target_dir().join("release/tracer"), stage.join("tracer")).context("staging the tracer binary")?;
    let mut cmd =
        vec!["python3".to_string(), "bench/overhead.py".into(), "--tracer".into(), ".device-bin/tracer".into()];
    cmd.extend(args.iter().cloned());
    let gpu = util::output(util::cmd("nvidia-smi").arg("-L")).is_ok();
    if gpu {
        if !util::is_root()? {
            anyhow::bail!("tracer needs root: run sudo -E cargo xtask bench overhead");
        }
        return util::run(util::cmd(&cmd[0]).args(&cmd[1..]));
    }
    println!(
        "No GPU here. Copy this checkout with .device-bin/ to the GPU machine and run there, as root, from its root:\n\n    {}\n\n\
         (results go to docs/bench/overhead_<date>_<gpu>.{{json,md}}; add --reps/--iterations/--workloads/--modes to change the plan)",
        cmd.join(" ")
    );
    Ok(())
}
