//! `cargo xtask install [--prefix DIR]`: build release, then install `tracer`,
//! `replay` and the CUPTI injection library where `sudo` finds them.
//!
//! tracer looks for `libtracer_cupti.so` next to its own executable, which
//! the kernel reports with symlinks resolved. So the real binary and the
//! library go together in `PREFIX/lib/tracer/`, and `PREFIX/bin/tracer` is a
//! symlink to it; `replay` is copied to `PREFIX/bin/`. The default prefix,
//! `/usr/local`, puts both commands in `/usr/local/bin`, which is on sudo's
//! `secure_path` on Debian and Ubuntu.

use std::fs;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};

use crate::{build, util};

/// Where installed files go when no `--prefix` is given.
pub const DEFAULT_PREFIX: &str = "/usr/local";

/// One installed file.
#[derive(Debug, PartialEq, Eq)]
pub enum Step {
    /// `from` (a build output) copied to `to` with `mode`.
    Copy { from: PathBuf, to: PathBuf, mode: u32 },
    /// `link` made a symlink to `target` (relative to the link's folder).
    Link { link: PathBuf, target: PathBuf },
}

/// What goes where for `prefix`, from the release build folder `release`.
pub fn plan(prefix: &Path, release: &Path) -> Vec<Step> {
    let bin = prefix.join("bin");
    let lib = prefix.join("lib").join("tracer");
    vec![
        Step::Copy { from: release.join("tracer"), to: lib.join("tracer"), mode: 0o755 },
        Step::Copy { from: release.join(build::INJECTION_LIB), to: lib.join(build::INJECTION_LIB), mode: 0o644 },
        Step::Link { link: bin.join("tracer"), target: PathBuf::from("../lib/tracer/tracer") },
        Step::Copy { from: release.join("replay"), to: bin.join("replay"), mode: 0o755 },
    ]
}

pub fn run(prefix: &Path) -> Result<()> {
    build::run(true)?;
    util::run(util::cargo().args(["build", "-p", "replay", "--release"]))?;
    let release = util::target_dir().join("release");
    for step in plan(prefix, &release) {
        println!("install: {}", apply(&step)?);
    }
    println!("install: done; `tracer` and `replay` are in {}", prefix.join("bin").display());
    Ok(())
}

/// Carries out one step (again, harmlessly, when it was done before) and
/// says what it did.
fn apply(step: &Step) -> Result<String> {
    match step {
        Step::Copy { from, to, mode } => {
            let dir = to.parent().expect("an installed file has a folder");
            fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            let bytes = fs::read(from).with_context(|| format!("reading {}", from.display()))?;
            let same = fs::read(to).is_ok_and(|old| old == bytes);
            if !same {
                // A new file renamed over the old one: a running tracer keeps
                // its own copy ("text file busy" never happens).
                let tmp = to.with_extension("install-tmp");
                fs::write(&tmp, &bytes).with_context(|| format!("writing {}", tmp.display()))?;
                fs::rename(&tmp, to).with_context(|| format!("renaming {} to {}", tmp.display(), to.display()))?;
            }
            fs::set_permissions(to, fs::Permissions::from_mode(*mode))
                .with_context(|| format!("setting the mode of {}", to.display()))?;
            Ok(format!("{} ({})", to.display(), if same { "unchanged" } else { "copied" }))
        }
        Step::Link { link, target } => {
            let dir = link.parent().expect("a link has a folder");
            fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            if fs::read_link(link).is_ok_and(|t| t == *target) {
                return Ok(format!("{} -> {} (unchanged)", link.display(), target.display()));
            }
            if fs::symlink_metadata(link).is_ok() {
                fs::remove_file(link).with_context(|| format!("removing the old {}", link.display()))?;
            }
            std::os::unix::fs::symlink(target, link)
                .with_context(|| format!("linking {} to {}", link.display(), target.display()))?;
            Ok(format!("{} -> {} (linked)", link.display(), target.display()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_puts_tracer_beside_its_library_and_both_commands_in_bin() {
        let p = |s: &str| PathBuf::from(s);
        assert_eq!(
            plan(Path::new("/usr/local"), Path::new("/src/target/release")),
            vec![
                Step::Copy {
                    from: p("/src/target/release/tracer"),
                    to: p("/usr/local/lib/tracer/tracer"),
                    mode: 0o755
                },
                Step::Copy {
                    from: p("/src/target/release/libtracer_cupti.so"),
                    to: p("/usr/local/lib/tracer/libtracer_cupti.so"),
                    mode: 0o644
                },
                Step::Link { link: p("/usr/local/bin/tracer"), target: p("../lib/tracer/tracer") },
                Step::Copy { from: p("/src/target/release/replay"), to: p("/usr/local/bin/replay"), mode: 0o755 },
            ]
        );
    }

    #[test]
    fn applying_twice_copies_then_leaves_unchanged_and_the_link_reaches_the_library() {
        let root = std::env::temp_dir().join(format!("xtask-install-test-{}", std::process::id()));
        let release = root.join("release");
        fs::create_dir_all(&release).unwrap();
        for name in ["tracer", build::INJECTION_LIB, "replay"] {
            fs::write(release.join(name), name).unwrap();
        }
        let prefix = root.join("prefix");
        let said = |steps: &[Step]| steps.iter().map(|s| apply(s).unwrap()).collect::<Vec<_>>();
        let first = said(&plan(&prefix, &release));
        let second = said(&plan(&prefix, &release));
        let d = prefix.display();
        assert_eq!(
            first,
            vec![
                format!("{d}/lib/tracer/tracer (copied)"),
                format!("{d}/lib/tracer/libtracer_cupti.so (copied)"),
                format!("{d}/bin/tracer -> ../lib/tracer/tracer (linked)"),
                format!("{d}/bin/replay (copied)"),
            ]
        );
        assert_eq!(
            second,
            vec![
                format!("{d}/lib/tracer/tracer (unchanged)"),
                format!("{d}/lib/tracer/libtracer_cupti.so (unchanged)"),
                format!("{d}/bin/tracer -> ../lib/tracer/tracer (unchanged)"),
                format!("{d}/bin/replay (unchanged)"),
            ]
        );
        // What tracer does to find its library: the executable's real folder.
        let exe = fs::canonicalize(prefix.join("bin/tracer")).unwrap();
        assert_eq!(fs::read_to_string(exe.parent().unwrap().join(build::INJECTION_LIB)).unwrap(), "libtracer_cupti.so");
        assert_eq!(fs::metadata(prefix.join("bin/replay")).unwrap().permissions().mode() & 0o777, 0o755);
        fs::remove_dir_all(&root).unwrap();
    }
}
