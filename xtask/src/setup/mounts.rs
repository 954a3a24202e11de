//! Pseudo filesystems: tracefs (tracepoints need it), bpffs (optional, for pinning).

use std::fs;

use anyhow::{Context, Result};

use super::Ctx;
use crate::util;

struct Mount {
    fstype: &'static str,
    source: &'static str,
    target: &'static str,
    /// The tracer needs it; otherwise a failed mount is only a warning.
    required: bool,
}

const MOUNTS: &[Mount] = &[
    Mount { fstype: "tracefs", source: "nodev", target: "/sys/kernel/tracing", required: true },
    Mount { fstype: "bpf", source: "bpf", target: "/sys/fs/bpf", required: false },
];

pub fn ensure(ctx: &mut Ctx) -> Result<()> {
    let table = fs::read_to_string("/proc/self/mounts").context("reading /proc/self/mounts")?;
    let mounted: Vec<&str> = table.lines().filter_map(|l| l.split_whitespace().nth(1)).collect();
    for m in MOUNTS {
        if mounted.contains(&m.target) {
            println!("ok: {} mounted at {}", m.fstype, m.target);
            continue;
        }
        if !ctx.require_root(format!("mount -t {} {} {}", m.fstype, m.source, m.target)) {
            continue;
        }
        println!("mounting {} at {}", m.fstype, m.target);
        let result = util::run(util::cmd("mount").args(["-t", m.fstype, m.source, m.target]));
        match result {
            Err(e) if !m.required => {
                println!("warning: {e:#}; continuing ({} is not needed by the tracer)", m.fstype)
            }
            other => other?,
        }
    }
    Ok(())
}
