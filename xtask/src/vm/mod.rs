//! `cargo xtask kprobe-vm [-- FILTER...]`: boots a stock Debian kernel (kprobes compiled in)
//! under qemu TCG with an initramfs holding the release tracer, a fake libcuda and the test
//! scripts of xtask/src/vm/tests/, and fails unless every test passed. See docs/kprobe-vm.md.
//!
//! FILTERs keep only the tests whose file name contains one of them; `--tracer PATH` skips
//! the release build and stages that binary instead.
//! Everything lives in target/kprobe-vm/: qemu, busybox and cpio unpacked from their Debian
//! packages (tools/), the extracted kernel (kernel/), the fakes (fake/), the staged rootfs,
//! initramfs.cpio.gz and console.log. Nothing is installed on the host.

mod apt;
mod kernel;
mod qemu;
mod rootfs;
mod tools;

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};

use crate::{build, util};

/// Where the sources of this module's non-Rust files are (read at run time).
fn src_dir() -> PathBuf {
    util::repo_root().join("xtask/src/vm")
}

pub fn run(tracer: Option<&Path>, filters: &[String]) -> Result<()> {
    let start = Instant::now();
    let dir = util::target_dir().join("kprobe-vm");
    fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;

    let t = Instant::now();
    let tools = tools::ensure(&dir.join("tools"))?;
    let kernel = kernel::ensure(&dir.join("kernel"))?;
    println!("kprobe-vm: setup done in {} (kernel {})", util::secs(t.elapsed()), kernel.release);

    let tracer = match tracer {
        Some(t) => t.to_path_buf(),
        None => {
            build::run(true)?;
            util::target_dir().join("release/tracer")
        }
    };
    let t = Instant::now();
    let initrd = rootfs::build(&dir, &tools, &tracer, filters)?;
    println!("kprobe-vm: initramfs staged in {}", util::secs(t.elapsed()));

    let result = qemu::boot(&tools, &kernel.vmlinuz, &initrd, &dir.join("console.log"));
    println!("kprobe-vm: total {}", util::secs(start.elapsed()));
    result
}
