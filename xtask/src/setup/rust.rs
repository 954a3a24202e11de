//! Rust side: nightly with rust-src (aya-build builds the eBPF crate with it) and bpf-linker.

use std::thread::sleep;
use std::time::{Duration, Instant};

use anyhow::{Result, bail};

use super::Ctx;
use crate::util;

const BPF_LINKER_VERSION: &str = "0.13.0";
const LLVM_PREFIX: &str = "/usr/lib/llvm-22";
/// How long to wait for a `cargo install bpf-linker` started by someone else.
const WAIT_LIMIT: Duration = Duration::from_secs(20 * 60);

pub fn ensure_nightly() -> Result<()> {
    let toolchains = util::output(util::cmd("rustup").args(["toolchain", "list"]))?;
    if toolchains.lines().any(|l| l == "nightly" || l.starts_with("nightly-")) {
        println!("ok: nightly toolchain present");
    } else {
        println!("installing nightly toolchain");
        util::run(util::cmd("rustup").args(["toolchain", "install", "nightly", "--profile", "minimal"]))?;
    }
    // rust-src: aya-build builds the eBPF crate with it; clippy: the test command's lints of
    // the eBPF crate (xtask/src/lints.rs).
    ensure_components(Some("nightly"), &["rust-src", "clippy"])?;
    // The lints of the other crates run on the toolchain cargo runs here.
    ensure_components(None, &["clippy", "rustfmt"])
}

/// Adds those of `components` that `toolchain` (None: the active one) lacks.
fn ensure_components(toolchain: Option<&str>, components: &[&str]) -> Result<()> {
    let on: Vec<&str> = toolchain.map_or(Vec::new(), |t| vec!["--toolchain", t]);
    let installed = util::output(util::cmd("rustup").args(["component", "list", "--installed"]).args(&on))?;
    // Installed components are listed with their target (`clippy-x86_64-unknown-linux-gnu`),
    // except rust-src.
    let has = |c: &str| {
        installed.lines().map(str::trim).any(|l| l == c || l.strip_prefix(c).is_some_and(|rest| rest.starts_with('-')))
    };
    for c in components {
        let name = toolchain.unwrap_or("the active toolchain");
        if has(c) {
            println!("ok: {c} ({name}) present");
        } else {
            println!("installing {c} for {name}");
            util::run(util::cmd("rustup").args(["component", "add", c]).args(&on))?;
        }
    }
    Ok(())
}

pub fn ensure_bpf_linker(ctx: &Ctx) -> Result<()> {
    wait_for_other_install()?;
    let why = match check_bpf_linker() {
        Ok(()) => {
            println!("ok: bpf-linker {BPF_LINKER_VERSION} (LLVM 22) present");
            return Ok(());
        }
        Err(why) => why,
    };
    if !ctx.needs_root.is_empty() {
        println!("skipped: bpf-linker install ({why}) waits for the apt packages (root)");
        return Ok(());
    }
    println!("installing bpf-linker {BPF_LINKER_VERSION} against LLVM 22 ({why})");
    let install = |locked: bool| {
        let mut c = util::cargo();
        c.env("LLVM_PREFIX", LLVM_PREFIX).args([
            "install",
            "bpf-linker",
            "--version",
            &format!("={BPF_LINKER_VERSION}"),
        ]);
        if locked {
            c.arg("--locked");
        }
        c.args(["--no-default-features", "--features", "llvm-22", "--force"]);
        util::run(&mut c)
    };
    if let Err(e) = install(true) {
        println!("{e:#}; retrying without --locked");
        install(false)?;
    }
    if let Err(why) = check_bpf_linker() {
        bail!("bpf-linker still not usable after install: {why}");
    }
    println!("ok: bpf-linker {BPF_LINKER_VERSION} installed");
    Ok(())
}

/// Ok if the bpf-linker found in PATH (cargo bin dir included) is the wanted version and,
/// when dynamically linked to LLVM, links LLVM 22. Err says what is wrong.
fn check_bpf_linker() -> Result<(), String> {
    let path = util::find_in_path("bpf-linker").ok_or("not found")?;
    let version = util::output(util::cmd(&path).arg("--version")).map_err(|e| format!("{e:#}"))?;
    let version = version.trim();
    if version != format!("bpf-linker {BPF_LINKER_VERSION}") {
        return Err(format!("{} is {version:?}", path.display()));
    }
    // ldd is only a cross-check: a static build has no libLLVM line and passes.
    if let Ok(libs) = util::output(util::cmd("ldd").arg(&path))
        && let Some(llvm) = libs.split_whitespace().find(|w| w.starts_with("libLLVM"))
        && !llvm.starts_with("libLLVM.so.22")
    {
        return Err(format!("{} links {llvm}, not LLVM 22", path.display()));
    }
    Ok(())
}

/// Another process may be installing bpf-linker right now: wait rather than race it.
fn wait_for_other_install() -> Result<()> {
    let start = Instant::now();
    let mut announced = false;
    loop {
        // pgrep exits 1 when nothing matches (and never matches itself).
        let Ok(out) = util::cmd("pgrep").args(["-f", "cargo install bpf-linker"]).output() else {
            return Ok(());
        };
        let pids = String::from_utf8_lossy(&out.stdout).split_whitespace().collect::<Vec<_>>().join(" ");
        if pids.is_empty() {
            return Ok(());
        }
        if !announced {
            println!("waiting: `cargo install bpf-linker` already running (pid {pids})");
            announced = true;
        }
        if start.elapsed() > WAIT_LIMIT {
            bail!("gave up waiting for `cargo install bpf-linker` (pid {pids}) after {}", util::secs(WAIT_LIMIT));
        }
        sleep(Duration::from_secs(2));
    }
}
