//! `cargo xtask bench overhead`: the GPU overhead benchmark as users see it
//! (bench/overhead.py: one GPT-2 / launch-loop process with tracer attached
//! block by block in each configuration, then whole processes of the
//! examples; docs/overhead.md).
//!
//! GPU machines often have no Rust toolchain: this builds the release tracer
//! and the CUPTI injection library here, stages them in `.device-bin/`, and
//! prints the command to run there from a copy of this checkout (with
//! `.device-bin/` carried). Where a GPU is present (nvidia-smi answers) it
//! runs the benchmark directly.
use std::fs;

use anyhow::{Context, Result};

use crate::util;

pub fn run(args: &[String]) -> Result<()> {
    util::run(util::cargo().args(["build", "--release", "-p", "tracer", "-p", "tracer-cupti"]))?;
    let root = util::repo_root();
    let stage = root.join(".device-bin");
    fs::create_dir_all(&stage)?;
    fs::copy(util::target_dir().join("release/tracer"), stage.join("tracer")).context("staging the tracer binary")?;
    // --gpu-timestamps finds the injection library next to the binary.
    fs::copy(util::target_dir().join("release/libtracer_cupti.so"), stage.join("libtracer_cupti.so"))
        .context("staging libtracer_cupti.so")?;
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
        "No GPU here. Copy this checkout with .device-bin/ (tracer, libtracer_cupti.so; git-ignored, so carry it) to the GPU\n\
         machine and run there, as root, from its root (about 6-8 minutes):\n\n    {} --out \"${{OUT:-docs/bench}}\"\n\n\
         (writes overhead_<date>_<gpu>.{{json,md}}; --reps, --gen, --loop, --blocks, --budget-s, --pin CPU change the plan)",
        cmd.join(" ")
    );
    Ok(())
}
