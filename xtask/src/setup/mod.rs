//! `cargo xtask setup`: check each prerequisite, install only what is missing.
//! One line per step; fast (a few subprocesses) when everything is present.

mod apt;
mod duckdb;
mod mounts;
mod rust;

use std::time::Instant;

use anyhow::{Result, bail};

use crate::util;

/// State shared by the steps: are we root, and which steps could not run without it.
pub struct Ctx {
    root: bool,
    needs_root: Vec<String>,
}

impl Ctx {
    /// True if `what` (an action needing root) may run now; otherwise records it and says so.
    fn require_root(&mut self, what: String) -> bool {
        if !self.root {
            println!("needs root: {what}");
            self.needs_root.push(what);
        }
        self.root
    }
}

pub fn run() -> Result<()> {
    let start = Instant::now();
    let mut ctx = Ctx { root: util::is_root()?, needs_root: Vec::new() };
    apt::ensure(&mut ctx)?;
    rust::ensure_nightly()?;
    rust::ensure_bpf_linker(&ctx)?;
    mounts::ensure(&mut ctx)?;
    if ctx.needs_root.is_empty() {
        duckdb::ensure()?;
    }
    if !ctx.needs_root.is_empty() {
        bail!("setup incomplete: {} step(s) need root; rerun as root: sudo -E cargo xtask setup", ctx.needs_root.len());
    }
    println!("setup: done in {}", util::secs(start.elapsed()));
    Ok(())
}
