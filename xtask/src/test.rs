//! `cargo xtask test [-- args]`: setup, then the lints and every test in five phases:
//! 0. the lints (lints.rs): `cargo fmt --check`, clippy with `-D warnings` on the default
//!    members and on the eBPF crate;
//! 1. `cargo test` (default members); the root_* tests skip themselves (TRACER_ROOT_TESTS unset);
//! 2. `cargo test -p tracer-common --features user`;
//! 3. tracer/tests/root_*.rs with TRACER_ROOT_TESTS=1, serialized (--test-threads=1);
//! 4. the kprobe VM (`cargo xtask kprobe-vm`, docs/kprobe-vm.md) on a copy of the debug tracer
//!    phase 1 built: a stock kernel with kprobes under qemu. A failed set-up or boot fails the
//!    phase. It runs while phase 3's tests run (they mostly wait on their processes; the VM is
//!    isolated in its own kernel), after phase 3's build: its output goes to
//!    target/kprobe-vm/xtask-test.log and is printed once it is done.
//!
//! `args` go to every test binary of phases 1, 2 and 3 (e.g. a name filter, --nocapture);
//! the VM runs all its tests.

use std::fs;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use anyhow::{Context, Result, bail};

use crate::{lints, setup, util};

const ROOT_TESTS_VAR: &str = "TRACER_ROOT_TESTS";

struct Phase {
    name: String,
    outcome: Result<()>,
    secs: String,
}

pub fn run(args: &[String]) -> Result<()> {
    setup::run()?;
    let mut phases = Vec::new();

    println!("== lints");
    let start = Instant::now();
    let outcome = lints::run();
    let secs = util::secs(start.elapsed());
    println!("== lints: {} in {secs}", if outcome.is_ok() { "ok" } else { "FAILED" });
    phases.push(Phase { name: "lints (fmt, clippy -D warnings)".to_owned(), outcome, secs });

    let mut c = util::cargo();
    c.env_remove(ROOT_TESTS_VAR).args(["test", "--no-fail-fast"]);
    phases.push(phase("cargo test", c, &[], args));
    // The VM's tracer is phase 1's binary, copied now: later phases build other package and
    // feature sets, which may relink target/debug/tracer while the VM stages it.
    let vm_tracer = stage_vm_tracer();

    let mut c = util::cargo();
    c.env_remove(ROOT_TESTS_VAR).args(["test", "-p", "tracer-common", "--features", "user"]);
    phases.push(phase("tracer-common --features user", c, &[], args));

    let root_tests = root_test_names()?;
    if root_tests.is_empty() {
        println!("no tracer/tests/root_*.rs: no root tests to run");
        phases.push(vm_phase(vm_tracer.and_then(VmRun::start)));
    } else {
        if !util::is_root()? {
            println!("warning: not root, the root tests will fail (use sudo -E cargo xtask test)");
        }
        let root_cargo = |build_only: bool| {
            let mut c = util::cargo();
            c.env(ROOT_TESTS_VAR, "1").args(["test", "-p", "tracer", "--no-fail-fast"]);
            if build_only {
                c.arg("--no-run");
            }
            for t in &root_tests {
                c.args(["--test", t]);
            }
            c
        };
        let name = format!("root tests [{}] ({ROOT_TESTS_VAR}=1, serial)", root_tests.join(", "));
        let start = Instant::now();
        let built = util::run(&mut root_cargo(true));
        let vm = vm_tracer.and_then(VmRun::start);
        let mut root = match built {
            Ok(()) => phase(&name, root_cargo(false), &["--test-threads=1"], args),
            Err(e) => Phase { name: name.clone(), outcome: Err(e), secs: String::new() },
        };
        root.secs = util::secs(start.elapsed());
        phases.push(root);
        phases.push(vm_phase(vm));
    }

    let failed = phases.iter().filter(|p| p.outcome.is_err()).count();
    let mut summary: Vec<String> = phases
        .iter()
        .map(|p| match &p.outcome {
            Ok(()) => format!("{}: ok ({})", p.name, p.secs),
            Err(e) => format!("{}: FAILED, {e:#} ({})", p.name, p.secs),
        })
        .collect();
    if root_tests.is_empty() {
        summary.insert(3, "root tests: none found".to_owned());
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

const VM_NAME: &str = "kprobe VM (debug tracer)";

/// Copies phase 1's target/debug/tracer to target/kprobe-vm/tracer-debug.
fn stage_vm_tracer() -> Result<PathBuf> {
    let from = util::target_dir().join("debug/tracer");
    let dir = util::target_dir().join("kprobe-vm");
    fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let to = dir.join("tracer-debug");
    fs::copy(&from, &to)
        .with_context(|| format!("copying {} (built by phase 1?) to {}", from.display(), to.display()))?;
    Ok(to)
}

/// The VM tests running in a child process (this xtask binary's `kprobe-vm`), output to a log.
struct VmRun {
    child: Child,
    log: PathBuf,
    start: Instant,
}

impl VmRun {
    fn start(tracer: PathBuf) -> Result<VmRun> {
        let log = util::target_dir().join("kprobe-vm/xtask-test.log");
        let out = fs::File::create(&log).with_context(|| format!("creating {}", log.display()))?;
        let err = out.try_clone().context("duplicating the VM log's descriptor")?;
        let exe = std::env::current_exe().context("finding the xtask binary")?;
        println!("== {VM_NAME}: started alongside, output in {}", log.display());
        let child = Command::new(exe)
            .arg("kprobe-vm")
            .arg("--tracer")
            .arg(&tracer)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .context("starting the kprobe VM")?;
        Ok(VmRun { child, log, start: Instant::now() })
    }
}

/// Waits for the VM run, prints its output and records the phase.
fn vm_phase(run: Result<VmRun>) -> Phase {
    println!("== {VM_NAME}");
    let (outcome, secs) = match run {
        Err(e) => (Err(e), String::new()),
        Ok(mut r) => {
            let status = r.child.wait();
            let secs = util::secs(r.start.elapsed());
            match fs::read_to_string(&r.log) {
                Ok(text) => print!("{text}"),
                Err(e) => println!("cannot read {}: {e}", r.log.display()),
            }
            let outcome = match status {
                Ok(s) if s.success() => Ok(()),
                Ok(s) => Err(anyhow::anyhow!("kprobe-vm failed ({s}); its output is above and in {}", r.log.display())),
                Err(e) => Err(anyhow::anyhow!("waiting for the kprobe VM: {e}")),
            };
            (outcome, secs)
        }
    };
    println!("== {VM_NAME}: {} in {secs}", if outcome.is_ok() { "ok" } else { "FAILED" });
    Phase { name: VM_NAME.to_owned(), outcome, secs }
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
