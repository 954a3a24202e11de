//! The VM's host tools, unpacked under target/kprobe-vm/tools/ and never installed:
//! qemu-system-x86 with every package it needs that this host lacks (libraries, SeaBIOS,
//! the option ROMs), busybox-static and cpio. `apt-get download` + `dpkg -x`, like the
//! kernel image: no root (except for `apt-get update` when the package lists are missing),
//! nothing on the host changes, and an installed qemu of another version (e.g. a
//! backported qemu-utils that Debian's qemu-system-x86 would make apt remove) neither
//! blocks nor is used. Quick when done: one file read.

use std::ffi::OsString;
use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use super::apt;
use crate::util;

/// What is unpacked (with the packages it needs that the host lacks).
const PACKAGES: &[&str] = &["qemu-system-x86", "busybox-static", "cpio"];
/// Written last; lists the unpacked packages. Its presence means "done".
const DONE: &str = "PACKAGES";
const LIB_DIRS: &[&str] = &["usr/lib/x86_64-linux-gnu", "lib/x86_64-linux-gnu"];

pub struct Tools {
    root: PathBuf,
}

impl Tools {
    pub fn busybox(&self) -> PathBuf {
        self.root.join("bin/busybox")
    }

    pub fn cpio(&self) -> PathBuf {
        self.root.join("bin/cpio")
    }

    /// qemu-system-x86_64 from the unpacked tree: its libraries first (LD_LIBRARY_PATH),
    /// its firmware (`-L`) and its modules (QEMU_MODULE_DIR), none of the host's.
    pub fn qemu(&self) -> Command {
        let mut c = util::cmd(self.root.join("usr/bin/qemu-system-x86_64"));
        c.env("LD_LIBRARY_PATH", self.library_path())
            .env("QEMU_MODULE_DIR", self.root.join("usr/lib/x86_64-linux-gnu/qemu"))
            .arg("-L")
            .arg(self.root.join("usr/share/qemu"));
        c
    }

    fn library_path(&self) -> OsString {
        let dirs = LIB_DIRS.iter().map(|d| self.root.join(d));
        std::env::join_paths(dirs).expect("no ':' in the target path")
    }
}

/// The unpacked tools in `dir`, unpacking them first if `dir`/PACKAGES is missing.
pub fn ensure(dir: &Path) -> Result<Tools> {
    let tools = Tools { root: dir.to_path_buf() };
    if dir.join(DONE).is_file() {
        println!("kprobe-vm: ok: qemu, busybox, cpio unpacked in {}", dir.display());
        return Ok(tools);
    }
    let tmp = dir.with_extension("tmp");
    let _ = fs::remove_dir_all(&tmp);
    fs::create_dir_all(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
    let mut packages = apt::with_lists("apt-get install -s", || apt::missing_closure(PACKAGES))?;
    // Already installed ones are not in the simulation: unpack ours all the same.
    for p in PACKAGES {
        if !packages.iter().any(|q| q.split('=').next() == Some(*p)) {
            packages.push((*p).to_owned());
        }
    }
    println!("kprobe-vm: unpacking {} package(s) into {}: {}", packages.len(), dir.display(), packages.join(" "));
    let debs = fs::create_dir_all(tmp.join("debs"))
        .map_err(anyhow::Error::from)
        .and_then(|()| apt::download(&tmp.join("debs"), &packages))?;
    for deb in &debs {
        util::run(util::cmd("dpkg").arg("-x").arg(deb).arg(&tmp))?;
    }
    fs::remove_dir_all(tmp.join("debs"))?;
    relink_absolute(&tmp, &tmp)?;
    let _ = fs::remove_dir_all(dir);
    fs::rename(&tmp, dir).with_context(|| format!("renaming {} to {}", tmp.display(), dir.display()))?;
    check(&tools)?;
    fs::write(dir.join(DONE), packages.join("\n") + "\n")?;
    Ok(tools)
}

/// Points each symlink under `dir` whose absolute target exists in the tree `root` at
/// that copy (e.g. usr/share/qemu/bios-256k.bin → /usr/share/seabios/bios-256k.bin).
fn relink_absolute(dir: &Path, root: &Path) -> Result<()> {
    for e in fs::read_dir(dir)? {
        let path = e?.path();
        let meta = fs::symlink_metadata(&path)?;
        if meta.is_dir() {
            relink_absolute(&path, root)?;
        } else if meta.file_type().is_symlink() {
            let target = fs::read_link(&path)?;
            if let Ok(rel) = target.strip_prefix("/") {
                let inside = root.join(rel);
                if inside.exists() {
                    fs::remove_file(&path)?;
                    symlink(&inside, &path)?;
                }
            }
        }
    }
    Ok(())
}

/// Every library of qemu resolves and it runs; busybox and cpio are there.
fn check(tools: &Tools) -> Result<()> {
    for f in [tools.busybox(), tools.cpio()] {
        if !f.is_file() {
            bail!("{} missing after unpacking", f.display());
        }
    }
    let qemu = tools.qemu();
    let ldd = util::output(util::cmd("ldd").arg(qemu.get_program()).env("LD_LIBRARY_PATH", tools.library_path()))?;
    let missing: Vec<&str> = ldd.lines().filter(|l| l.contains("not found")).map(str::trim).collect();
    if !missing.is_empty() {
        bail!("qemu-system-x86_64 lacks libraries after unpacking: {}", missing.join("; "));
    }
    let mut version = tools.qemu();
    version.arg("--version");
    let v = util::output(&mut version)?;
    println!("kprobe-vm: {}", v.lines().next().unwrap_or_default());
    Ok(())
}
