//! Which processes a recording covers: the command's process tree (or `-p`),
//! every process of the machine that uses libcuda (`--system`), or the
//! processes of one cgroup v2 subtree (`--cgroup`). A plain struct that
//! `tracer record` (and any other front end) fills; [`Selection::resolve`]
//! checks it against the machine and gives what the kernel side needs.
use std::path::{Component, Path, PathBuf};

use tracer_common::libopen::mode;

/// What the user asked for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selection {
    /// Every process that uses libcuda, also those started later.
    pub system: bool,
    /// A cgroup v2 directory: absolute under the cgroup2 mount
    /// (`/sys/fs/cgroup/kubepods.slice/...`) or as `/proc/PID/cgroup` shows it
    /// (`/kubepods.slice/...`).
    pub cgroup: Option<PathBuf>,
}

/// The selection checked against the machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// The command's tree or `-p` (the traced set the sched tracepoints keep).
    Traced,
    System,
    Cgroup(CgroupTarget),
}

/// A cgroup v2 directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CgroupTarget {
    /// Its directory (under the cgroup2 mount).
    pub dir: PathBuf,
    /// Its path as `/proc/PID/cgroup` shows it (`/` for the root).
    pub path: String,
    /// The cgroup id: the directory's inode number (what
    /// `bpf_get_current_cgroup_id` returns).
    pub id: u64,
    /// Depth below the root (the root is 0).
    pub level: u32,
}

/// What the eBPF programs are told (tracer-ebpf/src/select.rs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KernelScope {
    pub mode: u32,
    pub cgroup_id: u64,
    pub cgroup_level: u32,
}

impl Scope {
    pub fn kernel(&self) -> KernelScope {
        match self {
            Scope::Traced => KernelScope { mode: mode::TRACED, ..Default::default() },
            Scope::System => KernelScope { mode: mode::ALL, ..Default::default() },
            Scope::Cgroup(c) => KernelScope { mode: mode::CGROUP, cgroup_id: c.id, cgroup_level: c.level },
        }
    }

    /// Whether processes are picked by the selection rather than by the
    /// command's tree (lines then carry their cgroup id).
    pub fn is_machine_wide(&self) -> bool {
        !matches!(self, Scope::Traced)
    }

    /// The header's `selection` object.
    pub fn header(&self) -> serde_json::Value {
        match self {
            Scope::Traced => serde_json::json!({ "mode": "command" }),
            Scope::System => serde_json::json!({ "mode": "system" }),
            Scope::Cgroup(c) => {
                let mut v = serde_json::json!({ "mode": "cgroup", "cgroup": c.id, "path": c.path, "level": c.level });
                crate::collect::cgroups::describe_into(&c.path, &mut v);
                v
            }
        }
    }
}

impl Selection {
    /// Checks the selection; a one-line error for a machine with cgroup v1
    /// only and for a cgroup that does not exist.
    pub fn resolve(&self) -> Result<Scope, String> {
        if self.system && self.cgroup.is_some() {
            return Err("--system and --cgroup: choose one (--cgroup already selects by cgroup)".into());
        }
        if self.system {
            return Ok(Scope::System);
        }
        let Some(arg) = &self.cgroup else { return Ok(Scope::Traced) };
        let mountinfo = std::fs::read_to_string("/proc/self/mountinfo")
            .map_err(|e| format!("--cgroup: cannot read /proc/self/mountinfo ({e})"))?;
        let root = cgroup2_mount(&mountinfo)?;
        target(&root, arg).map(Scope::Cgroup)
    }
}

/// The mount point of the cgroup v2 hierarchy, from /proc/self/mountinfo.
pub fn cgroup2_mount(mountinfo: &str) -> Result<PathBuf, String> {
    let mut v1 = false;
    for l in mountinfo.lines() {
        // ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [OPTIONAL...] - FSTYPE SOURCE SUPER
        let Some((left, right)) = l.split_once(" - ") else { continue };
        let fstype = right.split_whitespace().next().unwrap_or("");
        let mountpoint = left.split_whitespace().nth(4).unwrap_or("");
        match fstype {
            "cgroup2" => return Ok(PathBuf::from(unescape(mountpoint))),
            "cgroup" => v1 = true,
            _ => {}
        }
    }
    Err(if v1 {
        "--cgroup needs cgroup v2, but only cgroup v1 hierarchies are mounted: boot with systemd.unified_cgroup_hierarchy=1 (or mount -t cgroup2 none /sys/fs/cgroup/unified)".into()
    } else {
        "--cgroup needs cgroup v2, and no cgroup2 file system is mounted: mount -t cgroup2 none /sys/fs/cgroup".into()
    })
}

/// mountinfo escapes space, tab, newline and backslash as octal.
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 4 <= b.len()
            && let Some(v) = std::str::from_utf8(&b[i + 1..i + 4]).ok().and_then(|o| u8::from_str_radix(o, 8).ok())
        {
            out.push(v);
            i += 4;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The cgroup `arg` names under the cgroup2 mount `root`.
pub fn target(root: &Path, arg: &Path) -> Result<CgroupTarget, String> {
    let rel = match arg.strip_prefix(root) {
        Ok(r) => r,
        // Another file system's path (a cgroup v1 hierarchy, tmpfs).
        Err(_) if arg.starts_with("/sys/fs/cgroup") => {
            return Err(format!(
                "--cgroup {}: not under the cgroup v2 mount {}; give the path under it or as /proc/PID/cgroup shows it",
                arg.display(),
                root.display()
            ));
        }
        Err(_) => arg,
    };
    let parts: Vec<String> = rel
        .components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(Ok(n.to_string_lossy().into_owned())),
            Component::RootDir | Component::CurDir => None,
            Component::ParentDir | Component::Prefix(_) => Some(Err(())),
        })
        .collect::<Result<_, _>>()
        .map_err(|_| format!("--cgroup {}: give the cgroup's path without `..`", arg.display()))?;
    let dir = parts.iter().fold(root.to_path_buf(), |d, p| d.join(p));
    let meta = std::fs::metadata(&dir).map_err(|e| {
        format!(
            "--cgroup {}: no such cgroup ({}: {}); list them with `ls {}` or see /proc/PID/cgroup",
            arg.display(),
            dir.display(),
            crate::collect::spawn::os_error_text(&e),
            root.display()
        )
    })?;
    if !meta.is_dir() || !dir.join("cgroup.procs").exists() {
        return Err(format!(
            "--cgroup {}: {} is not a cgroup v2 directory (no cgroup.procs)",
            arg.display(),
            dir.display()
        ));
    }
    use std::os::unix::fs::MetadataExt as _;
    Ok(CgroupTarget { path: format!("/{}", parts.join("/")), id: meta.ino(), level: parts.len() as u32, dir })
}

/// The cgroup2 mount (for the lines' cgroup ids), /sys/fs/cgroup if unknown.
pub fn cgroup_root() -> std::path::PathBuf {
    std::fs::read_to_string("/proc/self/mountinfo")
        .ok()
        .and_then(|m| cgroup2_mount(&m).ok())
        .unwrap_or_else(|| std::path::PathBuf::from("/sys/fs/cgroup"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const V2: &str =
        "25 1 0:22 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate\n";
    const V1: &str = "\
24 1 0:21 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:9 - tmpfs tmpfs ro,mode=755
30 24 0:26 / /sys/fs/cgroup/memory rw,nosuid,nodev,noexec,relatime shared:13 - cgroup cgroup rw,memory
";

    #[test]
    fn cgroup2_mount_found_or_v1_named() {
        assert_eq!(cgroup2_mount(V2).unwrap(), PathBuf::from("/sys/fs/cgroup"));
        let hybrid = format!("{V1}31 24 0:27 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n");
        assert_eq!(cgroup2_mount(&hybrid).unwrap(), PathBuf::from("/sys/fs/cgroup/unified"));
        let e = cgroup2_mount(V1).unwrap_err();
        assert!(e.contains("only cgroup v1 hierarchies are mounted"), "{e}");
        assert!(!e.contains('\n'));
        let e = cgroup2_mount("").unwrap_err();
        assert!(e.contains("no cgroup2 file system is mounted"), "{e}");
    }

    #[test]
    fn mountinfo_escapes() {
        assert_eq!(unescape("/a\\040b"), "/a b");
        assert_eq!(unescape("/plain"), "/plain");
    }

    #[test]
    fn target_of_absolute_and_relative_paths() {
        let root = std::env::temp_dir().join(format!("tracer-cg-{}", std::process::id()));
        let dir = root.join("kubepods.slice").join("x.scope");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("cgroup.procs"), "").unwrap();
        use std::os::unix::fs::MetadataExt as _;
        let ino = std::fs::metadata(&dir).unwrap().ino();
        for arg in [dir.clone(), PathBuf::from("/kubepods.slice/x.scope"), PathBuf::from("kubepods.slice/x.scope")] {
            let t = target(&root, &arg).unwrap();
            assert_eq!((t.path.as_str(), t.level, t.id), ("/kubepods.slice/x.scope", 2, ino), "{arg:?}");
        }
        let e = target(&root, Path::new("/nope")).unwrap_err();
        assert!(e.starts_with("--cgroup /nope: no such cgroup ("), "{e}");
        let e = target(Path::new("/sys/fs/cgroup/unified"), Path::new("/sys/fs/cgroup/memory/x")).unwrap_err();
        assert!(e.contains("not under the cgroup v2 mount /sys/fs/cgroup/unified"), "{e}");
        let e = target(&root, Path::new("/kubepods.slice")).unwrap_err();
        assert!(e.contains("not a cgroup v2 directory"), "{e}");
        let e = target(&root, Path::new("/a/../b")).unwrap_err();
        assert!(e.contains("without `..`"), "{e}");
        std::fs::remove_dir_all(&root).unwrap();
    }
}
