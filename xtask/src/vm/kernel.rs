//! The Debian kernel image (linux-image-amd64's dependency), downloaded and its /boot
//! extracted under target/kprobe-vm/kernel/, never installed.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use anyhow::{Context, Result, bail};

use super::apt;
use crate::util;

/// The meta package whose dependency is the current kernel image package.
const META: &str = "linux-image-amd64";
/// Options the tests need, all `=y` in Debian's 6.1 kernels.
const CONFIG: &[&str] = &["CONFIG_KPROBES", "CONFIG_BPF_EVENTS", "CONFIG_DEBUG_INFO_BTF"];

pub struct Kernel {
    pub vmlinuz: PathBuf,
    /// e.g. 6.1.0-56-amd64
    pub release: String,
}

/// The extracted kernel in `dir`, downloading and extracting it first if there is none.
pub fn ensure(dir: &Path) -> Result<Kernel> {
    let kernel = match extracted(dir)? {
        Some(k) => k,
        None => {
            download(dir)?;
            extracted(dir)?.context("no boot/vmlinuz-* in the kernel package")?
        }
    };
    let config_path = kernel.vmlinuz.with_file_name(format!("config-{}", kernel.release));
    let config = fs::read_to_string(&config_path).with_context(|| format!("reading {}", config_path.display()))?;
    for opt in CONFIG {
        if !config.lines().any(|l| l == format!("{opt}=y")) {
            bail!("{} lacks {opt}=y", config_path.display());
        }
    }
    Ok(kernel)
}

/// The newest `linux-image-*/boot/vmlinuz-*` under `dir`.
fn extracted(dir: &Path) -> Result<Option<Kernel>> {
    let Ok(entries) = fs::read_dir(dir) else { return Ok(None) };
    let mut found = Vec::new();
    for e in entries {
        let e = e?;
        if e.file_name().to_string_lossy().ends_with(".tmp") {
            continue; // an interrupted extraction
        }
        let boot = e.path().join("boot");
        let Ok(files) = fs::read_dir(&boot) else { continue };
        for f in files {
            let name = f?.file_name().to_string_lossy().into_owned();
            if let Some(release) = name.strip_prefix("vmlinuz-") {
                found.push(Kernel { vmlinuz: boot.join(&name), release: release.to_owned() });
            }
        }
    }
    found.sort_by(|a, b| a.vmlinuz.cmp(&b.vmlinuz));
    Ok(found.pop())
}

/// `apt-get download` the image package of [`META`], extract its /boot only, delete the .deb.
fn download(dir: &Path) -> Result<()> {
    let pkg = apt::with_lists("apt-cache depends", image_package)?;
    let tmp = dir.join(format!("{pkg}.tmp"));
    let _ = fs::remove_dir_all(&tmp);
    fs::create_dir_all(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
    let deb = apt::download(&tmp, std::slice::from_ref(&pkg))?.remove(0);
    // Only ./boot: the modules (≈400 MB unpacked) are not used, the initramfs has no module loader.
    println!("$ dpkg-deb --fsys-tarfile {} | tar -x ./boot", deb.display());
    let mut unpack = util::cmd("dpkg-deb").arg("--fsys-tarfile").arg(&deb).stdout(Stdio::piped()).spawn()?;
    let tar = util::cmd("tar").current_dir(&tmp).args(["-x", "./boot"]).stdin(unpack.stdout.take().unwrap()).status();
    if !unpack.wait()?.success() || !tar.context("cannot run tar")?.success() {
        bail!("extracting {} failed", deb.display());
    }
    fs::remove_file(&deb)?;
    fs::rename(&tmp, dir.join(&pkg))?;
    Ok(())
}

/// `linux-image-6.1.0-NN-amd64`, from `apt-cache depends linux-image-amd64`.
fn image_package() -> Result<String> {
    let out = util::output(util::cmd("apt-cache").args(["depends", META]))?;
    out.lines()
        .filter_map(|l| l.trim().strip_prefix("Depends: "))
        .find(|p| p.starts_with("linux-image-"))
        .map(str::to_owned)
        .with_context(|| format!("apt-cache knows no {META} (a Debian package)"))
}
