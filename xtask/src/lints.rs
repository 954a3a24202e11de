//! The lints of `cargo xtask test` (its first phase): formatting, then clippy with every
//! warning an error, on the default members and on the eBPF crate (nightly, its own
//! target). The lints themselves are the workspace's (`[workspace.lints]` in Cargo.toml).

use std::process::Command;

use anyhow::Result;

use crate::util;

/// The commands, in order: each is run, and the phase fails if any failed.
pub fn commands() -> Vec<Command> {
    let mut fmt = util::cargo();
    fmt.args(["fmt", "--all", "--check"]);
    let mut clippy = util::cargo();
    clippy.args(["clippy", "--all-targets", "--", "-D", "warnings"]);
    // As aya-build builds it: through rustup, on nightly.
    let mut ebpf = util::cmd("rustup");
    ebpf.args([
        "run",
        "nightly",
        "cargo",
        "clippy",
        "-p",
        "tracer-ebpf",
        "--target",
        "bpfel-unknown-none",
        "-Z",
        "build-std=core",
        "--release",
        "--",
        "-D",
        "warnings",
    ]);
    vec![fmt, clippy, ebpf]
}

/// Runs every command (all of them, also after one failed); the error names those that failed.
pub fn run() -> Result<()> {
    let mut failed = Vec::new();
    for mut c in commands() {
        if let Err(e) = util::run(&mut c) {
            failed.push(format!("{e:#}"));
        }
    }
    match failed.is_empty() {
        true => Ok(()),
        false => anyhow::bail!("{}", failed.join("; ")),
    }
}
