//! Debian/Ubuntu packages: LLVM 22 for bpf-linker, gcc/make for the tests' fake libcuda,
//! libfuse3-dev/fuse3/pkg-config for the fake NVIDIA device files of the root ioctl tests
//! (tracer/tests/fakenv); chromium (tracer/tests/html_report.rs opens `tracer report --html`
//! in a real headless browser), groff-base (tests/shell_cli.rs formats the man page), python3 (docs images, scripts) and
//! python3-venv (the DuckDB of the Parquet test, duckdb.rs),
//! prometheus (tracer/tests/root_agent.rs: a real Prometheus server scrapes `tracer agent`; the
//! test starts its own on 127.0.0.1, the package's service is not used), openssl (the same test
//! makes a self-signed certificate for the agent's TLS), golang-go (tracer/tests/pprof_reader.rs:
//! `go tool pprof` reads `tracer export --format pprof`).

use std::collections::HashSet;

use anyhow::{Context, Result};

use super::Ctx;
use crate::util;

const PACKAGES: &[&str] = &[
    "llvm-22-dev",
    "clang-22",
    "libpolly-22-dev",
    "libzstd-dev",
    "zlib1g-dev",
    "gcc",
    "make",
    "libfuse3-dev",
    "fuse3",
    "pkg-config",
    "chromium",
    "groff-base",
    "python3",
    "python3-venv",
    "prometheus",
    "openssl",
    "golang-go",
];

pub fn ensure(ctx: &mut Ctx) -> Result<()> {
    let installed = installed()?;
    let mut missing = Vec::new();
    for &pkg in PACKAGES {
        if installed.contains(pkg) {
            println!("ok: {pkg} present");
        } else {
            println!("missing: {pkg}");
            missing.push(pkg);
        }
    }
    if missing.is_empty() || !ctx.require_root(format!("apt-get install {}", missing.join(" "))) {
        return Ok(());
    }
    println!("installing {} (apt-get)", missing.join(" "));
    util::run(util::cmd("apt-get").arg("update"))?;
    util::run(
        util::cmd("apt-get")
            .env("DEBIAN_FRONTEND", "noninteractive")
            .args(["install", "-y", "--no-install-recommends"])
            .args(&missing),
    )
}

/// Names of the [`PACKAGES`] that dpkg reports as "install ok installed" (one dpkg-query call).
fn installed() -> Result<HashSet<String>> {
    // dpkg-query exits 1 when some package is unknown; its stdout still lists the others.
    let out = util::cmd("dpkg-query")
        .args(["-W", "-f=${Package}\t${Status}\n"])
        .args(PACKAGES)
        .output()
        .context("cannot run dpkg-query (setup supports Debian/Ubuntu only)")?;
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_once('\t'))
        .filter(|(_, status)| *status == "install ok installed")
        .map(|(pkg, _)| pkg.to_owned())
        .collect())
}
