//! `cargo xtask build [--release]`: setup, then build the tracer.

use std::time::Instant;

use anyhow::Result;

use crate::{setup, util};

pub fn run(release: bool) -> Result<()> {
    setup::run()?;
    let start = Instant::now();
    let mut c = util::cargo();
    c.args(["build", "-p", "tracer"]);
    if release {
        c.arg("--release");
    }
    util::run(&mut c)?;
    println!("build: done in {}", util::secs(start.elapsed()));
    Ok(())
}
