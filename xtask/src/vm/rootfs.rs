//! The initramfs: busybox, /init, the tracer, the fakes (each with the shared libraries
//! `ldd` lists, at the same paths) and the test scripts, packed with cpio + gzip.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use super::tools::Tools;
use crate::util;

const DIRS: &[&str] = &["bin", "sbin", "usr/bin", "usr/sbin", "proc", "sys", "dev", "tmp", "root", "fake", "tests"];
/// Makes every function of the fake libcuda start with `push %rbp`, like the real one.
const LIB_CFLAGS: &[&str] = &["-O0", "-fno-omit-frame-pointer", "-fcf-protection=none", "-fPIC", "-shared"];

/// Stages `dir`/rootfs and returns `dir`/initramfs.cpio.gz.
pub fn build(dir: &Path, tools: &Tools, tracer: &Path, filters: &[String]) -> Result<PathBuf> {
    let root = dir.join("rootfs");
    if root.exists() {
        fs::remove_dir_all(&root).with_context(|| format!("removing {}", root.display()))?;
    }
    for d in DIRS {
        fs::create_dir_all(root.join(d))?;
    }
    let src = super::src_dir();
    copy(&tools.busybox(), &root.join("bin/busybox"))?;
    copy_executable(&src.join("init.sh"), &root.join("init"))?;

    let fake = build_fakes(&dir.join("fake"), &src.join("fake"))?;
    stage_with_libs(&root, tracer, "tracer")?;
    // A debug build is 150 MB with its debug info, 26 MB without.
    util::run(util::cmd("strip").arg("--strip-debug").arg(root.join("tracer")))?;
    for name in ["libcuda.so.1", "driver", "ioctl_client", "bpf_objects", "sigdfl", "fourgaps"] {
        stage_with_libs(&root, &fake.join(name), &format!("fake/{name}"))?;
    }

    let mut tests: Vec<PathBuf> =
        fs::read_dir(src.join("tests"))?.map(|e| e.map(|e| e.path())).collect::<Result<_, _>>()?;
    tests.sort();
    let mut staged = Vec::new();
    for t in tests {
        let name = t.file_stem().unwrap_or_default().to_string_lossy().into_owned();
        if filters.is_empty() || filters.iter().any(|f| name.contains(f.as_str())) {
            copy_executable(&t, &root.join("tests").join(&name))?;
            staged.push(name);
        }
    }
    if staged.is_empty() {
        bail!("no test in xtask/src/vm/tests/ matches {}", filters.join(" "));
    }
    println!("kprobe-vm: tests: {}", staged.join(" "));

    let initrd = dir.join("initramfs.cpio.gz");
    let pack = "cd \"$1\" && find . | \"$3\" -o -H newc -R 0:0 --quiet | gzip -1 > \"$2\"";
    util::run(util::cmd("sh").args(["-c", pack, "pack"]).arg(&root).arg(&initrd).arg(tools.cpio()))?;
    let mb = fs::metadata(&initrd)?.len() as f64 / 1e6;
    println!("kprobe-vm: {} ({mb:.1} MB)", initrd.display());
    Ok(initrd)
}

/// Compiles the fake libcuda, its driver and the helpers of the tests into `out`.
fn build_fakes(out: &Path, src: &Path) -> Result<PathBuf> {
    fs::create_dir_all(out)?;
    let gcc = |args: &[&str], file: &str, dest: &str| -> Result<()> {
        util::run(
            util::cmd("gcc").args(["-Wall", "-o"]).arg(out.join(dest)).arg(src.join(file)).args(args).current_dir(out),
        )
    };
    gcc(&[LIB_CFLAGS, &["-Wl,-soname,libcuda.so.1"]].concat(), "libcuda.c", "libcuda.so.1")?;
    // rpath /fake: the driver loads the very file the tracer probes, at its path in the VM.
    gcc(&["-O0", "-L.", "-l:libcuda.so.1", "-Wl,-rpath,/fake"], "driver.c", "driver")?;
    gcc(&["-O0"], "ioctl_client.c", "ioctl_client")?;
    gcc(&["-O0"], "bpf_objects.c", "bpf_objects")?;
    gcc(&["-O0"], "sigdfl.c", "sigdfl")?;
    // The scheduler test's program, the one tracer/tests/root_sched.rs runs on this machine.
    let fakecuda = crate::util::repo_root().join("tracer/tests/fakecuda");
    let fourgaps = fakecuda.join("fourgaps.c");
    let include = format!("-I{}", fakecuda.display());
    gcc(
        &["-O1", &include, "-L.", "-l:libcuda.so.1", "-Wl,-rpath,/fake", "-pthread"],
        &fourgaps.to_string_lossy(),
        "fourgaps",
    )?;
    Ok(out.to_path_buf())
}

/// Copies `file` to `root`/`dest` and each library `ldd` resolves to the same path in `root`.
fn stage_with_libs(root: &Path, file: &Path, dest: &str) -> Result<()> {
    copy(file, &root.join(dest))?;
    // ldd exits 1 on static binaries; "libcuda.so.1 => not found" is the one staged in /fake.
    let out = util::cmd("ldd").arg(file).output().context("cannot run ldd")?;
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Some(lib) = line.split_whitespace().find(|w| w.starts_with('/')) else { continue };
        let to = root.join(lib.trim_start_matches('/'));
        if !to.exists() {
            copy(Path::new(lib), &to)?;
        }
    }
    Ok(())
}

/// Copies the content (symlinks followed) and the permissions.
fn copy(from: &Path, to: &Path) -> Result<()> {
    if let Some(parent) = to.parent() {
        fs::create_dir_all(parent)?;
    }
    fs::copy(from, to).with_context(|| format!("copying {} to {}", from.display(), to.display()))?;
    Ok(())
}

fn copy_executable(from: &Path, to: &Path) -> Result<()> {
    copy(from, to)?;
    fs::set_permissions(to, fs::Permissions::from_mode(0o755))?;
    Ok(())
}
