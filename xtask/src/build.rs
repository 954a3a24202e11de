//! `cargo xtask build [--release]`: setup, then build the tracer, the CUPTI
//! injection library of `tracer --gpu-timestamps`, and `replay`.

use std::time::Instant;

use anyhow::{Context as _, Result};

use crate::{setup, util};

/// The injection library's file name; tracer looks for it next to itself.
pub const INJECTION_LIB: &str = "libtracer_cupti.so";

/// `cargo xtask build`: [`run`], then `replay` (which the other tasks that build do not need).
pub fn run_all(release: bool) -> Result<()> {
    run(release)?;
    let start = Instant::now();
    build_package("replay", release)?;
    println!("build: replay done in {}", util::secs(start.elapsed()));
    Ok(())
}

/// The tracer and the injection library.
pub fn run(release: bool) -> Result<()> {
    setup::run()?;
    let start = Instant::now();
    build_package("tracer", release)?;
    // The injection library runs inside the traced program, on CUPTI's
    // buffer thread: always optimised (target/release/libtracer_cupti.so),
    // and copied next to a debug tracer too.
    build_package("tracer-cupti", true)?;
    if !release {
        let from = util::target_dir().join("release").join(INJECTION_LIB);
        let to = util::target_dir().join("debug").join(INJECTION_LIB);
        std::fs::copy(&from, &to).with_context(|| format!("copying {} to {}", from.display(), to.display()))?;
    }
    println!("build: done in {}", util::secs(start.elapsed()));
    Ok(())
}

/// `cargo build -p PACKAGE [--release]`.
fn build_package(package: &str, release: bool) -> Result<()> {
    let mut c = util::cargo();
    c.args(["build", "-p", package]);
    if release {
        c.arg("--release");
    }
    util::run(&mut c)
}
