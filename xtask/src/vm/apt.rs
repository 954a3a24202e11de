//! apt queries and downloads for the VM's host side. Nothing here installs a package:
//! `apt-get download` fetches .deb files into a folder, as any user.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::util;

/// Runs `query`; if it fails (e.g. no package lists on a fresh machine), runs
/// `apt-get update` (root only) and `query` once more.
pub fn with_lists<T>(what: &str, query: impl Fn() -> Result<T>) -> Result<T> {
    match query() {
        Ok(v) => Ok(v),
        Err(e) => {
            println!("kprobe-vm: {what}: {e:#}; running apt-get update");
            if !util::is_root()? {
                bail!("{what}: {e:#}; the package lists may be missing: run `sudo apt-get update` and retry");
            }
            util::run(util::cmd("apt-get").arg("update"))?;
            query().with_context(|| format!("{what} (after apt-get update)"))
        }
    }
}

/// Packages (`name=version`) that `apt-get install PACKAGES` would unpack on this host:
/// the `Inst` lines of a simulation (no root needed), without recommends. A removal the
/// real install would make (e.g. of a backported qemu-utils) does not matter: nothing is
/// installed.
pub fn missing_closure(packages: &[&str]) -> Result<Vec<String>> {
    let out = util::output(util::cmd("apt-get").args(["install", "-s", "--no-install-recommends"]).args(packages))?;
    Ok(parse_simulation(&out))
}

/// `Inst NAME [OLD] (VERSION SUITE [ARCH])` → `NAME=VERSION`.
fn parse_simulation(out: &str) -> Vec<String> {
    out.lines()
        .filter_map(|l| l.strip_prefix("Inst "))
        .filter_map(|l| {
            let name = l.split_whitespace().next()?;
            let version = l.split_once('(')?.1.split_whitespace().next()?;
            Some(format!("{name}={version}"))
        })
        .collect()
}

/// `apt-get download`s `packages` into `dir` and returns the .deb files there.
pub fn download(dir: &Path, packages: &[String]) -> Result<Vec<PathBuf>> {
    let mut c = util::cmd("apt-get");
    c.current_dir(dir);
    if util::is_root()? {
        // Else apt warns that the _apt user cannot write into `dir` and downloads as root anyway.
        c.args(["-o", "APT::Sandbox::User=root"]);
    }
    util::run(c.arg("download").args(packages))?;
    let mut debs: Vec<PathBuf> = fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "deb"))
        .collect();
    debs.sort();
    if debs.len() != packages.len() {
        bail!(
            "apt-get download left {} .deb file(s) in {} for {} package(s)",
            debs.len(),
            dir.display(),
            packages.len()
        );
    }
    Ok(debs)
}

#[cfg(test)]
mod tests {
    use super::parse_simulation;

    #[test]
    fn simulation_lines_become_name_version() {
        let out = "Reading package lists...\n\
                   Remv qemu-utils [1:10.0.2+ds-2+deb13u1~bpo12+1]\n\
                   Inst cpio (2.13+dfsg-7.1 Debian:12.15/oldstable [amd64])\n\
                   Inst libfoo1 [1.0-1] (1.2-1 Debian:12.15/oldstable [amd64])\n\
                   Conf cpio (2.13+dfsg-7.1 Debian:12.15/oldstable [amd64])\n";
        assert_eq!(parse_simulation(out), ["cpio=2.13+dfsg-7.1", "libfoo1=1.2-1"]);
    }
}
