//! `cargo xtask test [-- args]`: setup, then every test in four phases:
//! 1. `cargo test` (default members); the root_* tests skip themselves (TRACER_ROOT_TESTS unset);
//! 2. the kprobe VM (`cargo xtask kprobe-vm`, docs/kprobe-vm.md) with the debug tracer phase 1
//!    built: a stock kernel with kprobes under qemu. A failed set-up or boot fails the phase.
//!    It comes right after phase 1, whose build it reuses (the later phases build other
//!    package and feature sets, after which phase 1's command relinks the tracer);
//! 3. tracer/tests/root_*.rs with TRACER_ROOT_TESTS=1, serialized (--test-threads=1);
//! 4. `cargo test -p tracer-common --features user`.
//!
//! `args` go to every test binary of phases 1, 3 and 4 (e.g. a name filter, --nocapture);
//! the VM runs all its tests.

use std::fs;
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result, bail};

use crate::{setup, util, vm};

const ROOT_TESTS_VAR: &str = "TRACER_ROOT_TESTS";

struct Phase {
    name: String,
    outcome: Result<()>,
    secs: String,
}

pub fn run(args: &[String]) -> Result<()> {
    setup::run()?;
    let mut phases = Vec::new();

    let mut c = util::cargo();
    c.env_remove(ROOT_TESTS_VAR).args(["test", "--no-fail-fast"]);
    phases.push(phase("cargo test", c, &[], args));
    phases.push(vm_phase());

    let root_tests = root_test_names()?;
    if root_tests.is_empty() {
        println!("no tracer/tests/root_*.rs: no root tests to run");
    } else {
        if !util::is_root()? {
            println!("warning: not root, the root tests will fail (use sudo -E cargo xtask test)");
        }
        let mut c = util::cargo();
        c.env(ROOT_TESTS_VAR, "1").args(["test", "-p", "tracer", "--no-fail-fast"]);
        for t in &root_tests {
            c.args(["--test", t]);
        }
        let name = format!("root tests [{}] ({ROOT_TESTS_VAR}=1, serial)", root_tests.join(", "));
        phases.push(phase(&name, c, &["--test-threads=1"], args));
    }

    let mut c = util::cargo();
    c.env_remove(ROOT_TESTS_VAR).args(["test", "-p", "tracer-common", "--features", "user"]);
    phases.push(phase("tracer-common --features user", c, &[], args));

    let failed = phases.iter().filter(|p| p.outcome.is_err()).count();
    let mut summary: Vec<String> = phases
        .iter()
        .map(|p| match &p.outcome {
            Ok(()) => format!("{}: ok ({})", p.name, p.secs),
            Err(e) => format!("{}: FAILED, {e:#} ({})", p.name, p.secs),
        })
        .collect();
    if root_tests.is_empty() {
        summary.insert(2, "root tests: none found".to_owned());
    }
    println!("test summary: {}", summary.join("; "));
    if failed > 0 {
        bail!("{failed} of {} test phase(s) failed", phases.len());
    }
    Ok(())
}

/// Runs one phase: `c`, then `-- harness_args args` if any; prints and records its time.
fn phase(name: &str, mut c: Command, harness_args: &[&str], args: &[String]) -> Phase {
    println!("== {name}");
    if !harness_args.is_empty() || !args.is_empty() {
        c.arg("--").args(harness_args).args(args);
    }
    let start = Instant::now();
    let outcome = util::run(&mut c);
    let secs = util::secs(start.elapsed());
    println!("== {name}: {} in {secs}", if outcome.is_ok() { "ok" } else { "FAILED" });
    Phase { name: name.to_owned(), outcome, secs }
}

/// The VM tests on target/debug/tracer. `cargo test --no-run`, phase 1's command, is a no-op
/// that makes sure the binary is phase 1's (a second, release, build would take minutes).
fn vm_phase() -> Phase {
    let name = "kprobe VM (debug tracer)";
    println!("== {name}");
    let start = Instant::now();
    let outcome = util::run(util::cargo().env_remove(ROOT_TESTS_VAR).args(["test", "--no-run"]))
        .and_then(|()| vm::run(Some(&util::target_dir().join("debug/tracer")), &[]));
    let secs = util::secs(start.elapsed());
    println!("== {name}: {} in {secs}", if outcome.is_ok() { "ok" } else { "FAILED" });
    Phase { name: name.to_owned(), outcome, secs }
}

/// Integration test names from tracer/tests/root_*.rs, sorted.
fn root_test_names() -> Result<Vec<String>> {
    let dir = util::repo_root().join("tracer/tests");
    if !dir.is_dir() {
        return Ok(Vec::new());
    }
    let mut names = Vec::new();
    for entry in fs::read_dir(&dir).with_context(|| format!("reading {}", dir.display()))? {
        let name = entry?.file_name().to_string_lossy().into_owned();
        if let Some(stem) = name.strip_suffix(".rs")
            && stem.starts_with("root_")
        {
            names.push(stem.to_owned());
        }
    }
    names.sort();
    Ok(names)
}
