//! Which GPUs the traced processes use: the NVIDIA GPU device files
//! (/dev/nvidiaN, character major 195, minor N < 254) they hold open, from
//! /proc/PID/fd, matched to NVML devices by minor number.
//!
//! The CUDA driver opens the device file of every GPU it enumerates (the
//! ones CUDA_VISIBLE_DEVICES leaves) at cuInit, so this is the set of GPUs
//! the program could use, not only those it computed on.
use std::collections::BTreeSet;
use std::os::unix::fs::MetadataExt as _;

/// NVIDIA's character device major number (nvidia.ko registers 195).
const NVIDIA_MAJOR: u64 = 195;
/// Minors 254 (nvidia-modeset) and 255 (nvidiactl) are not GPUs.
const FIRST_NON_GPU_MINOR: u64 = 254;

/// The GPU minor of a device number, if it is an NVIDIA GPU device file.
pub fn gpu_minor(rdev: u64) -> Option<u32> {
    let (major, minor) = (libc::major(rdev) as u64, libc::minor(rdev) as u64);
    (major == NVIDIA_MAJOR && minor < FIRST_NON_GPU_MINOR).then_some(minor as u32)
}

/// `pid` and its descendants: from /proc/PID/task/TID/children where the
/// kernel has it (CONFIG_PROC_CHILDREN), else from the parent pid of every
/// process in /proc.
pub fn process_tree(pid: u32) -> Vec<u32> {
    let children_file = std::path::Path::new("/proc/self/task").join(std::process::id().to_string()).join("children");
    if children_file.exists() {
        tree_from(pid, |p| {
            let mut v = vec![];
            if let Ok(tasks) = std::fs::read_dir(format!("/proc/{p}/task")) {
                for t in tasks.flatten() {
                    if let Ok(s) = std::fs::read_to_string(t.path().join("children")) {
                        v.extend(s.split_whitespace().filter_map(|c| c.parse::<u32>().ok()));
                    }
                }
            }
            v
        })
    } else {
        let parents = parent_map();
        tree_from(pid, |p| parents.iter().filter(|&&(_, pp)| pp == p).map(|&(c, _)| c).collect())
    }
}

fn tree_from(pid: u32, children: impl Fn(u32) -> Vec<u32>) -> Vec<u32> {
    let mut out = vec![];
    let mut frontier = vec![pid];
    while let Some(p) = frontier.pop() {
        if out.contains(&p) {
            continue;
        }
        out.push(p);
        frontier.extend(children(p));
    }
    out
}

/// (pid, parent pid) of every process.
fn parent_map() -> Vec<(u32, u32)> {
    let mut v = vec![];
    let Ok(rd) = std::fs::read_dir("/proc") else { return v };
    for e in rd.flatten() {
        let Ok(p) = e.file_name().to_string_lossy().parse::<u32>() else { continue };
        if let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat"))
            && let Some(pp) = parse_ppid(&stat)
        {
            v.push((p, pp));
        }
    }
    v
}

/// The parent pid from /proc/PID/stat: "pid (comm) state ppid ..." (comm
/// may contain spaces and parentheses: split at the last ')').
pub fn parse_ppid(stat: &str) -> Option<u32> {
    stat.rsplit_once(')')?.1.split_whitespace().nth(1)?.parse().ok()
}

/// Minors of the GPU device files `pid` has open.
pub fn open_gpu_minors(pid: u32) -> BTreeSet<u32> {
    let mut set = BTreeSet::new();
    let Ok(rd) = std::fs::read_dir(format!("/proc/{pid}/fd")) else { return set };
    for e in rd.flatten() {
        // stat (not lstat) follows the magic link to the device file.
        if let Ok(md) = std::fs::metadata(e.path())
            && let Some(m) = gpu_minor(md.rdev())
            && md.file_type().is_char_device_like()
        {
            set.insert(m);
        }
    }
    set
}

trait CharDev {
    fn is_char_device_like(&self) -> bool;
}
impl CharDev for std::fs::FileType {
    fn is_char_device_like(&self) -> bool {
        std::os::unix::fs::FileTypeExt::is_char_device(self)
    }
}

/// Minors of the GPUs any process of the tree rooted at `root` has open.
pub fn tree_gpu_minors(root: u32) -> BTreeSet<u32> {
    process_tree(root).into_iter().flat_map(open_gpu_minors).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minors() {
        assert_eq!(gpu_minor(libc::makedev(195, 0)), Some(0));
        assert_eq!(gpu_minor(libc::makedev(195, 7)), Some(7));
        assert_eq!(gpu_minor(libc::makedev(195, 255)), None); // nvidiactl
        assert_eq!(gpu_minor(libc::makedev(195, 254)), None); // nvidia-modeset
        assert_eq!(gpu_minor(libc::makedev(1, 3)), None); // /dev/null
    }

    #[test]
    fn stat_parent() {
        assert_eq!(parse_ppid("409 (python3) S 401 409 1 0 -1"), Some(401));
        assert_eq!(parse_ppid("12 (a) b (c) R 7 12"), Some(7));
        assert_eq!(parse_ppid("garbage"), None);
    }

    #[test]
    fn own_tree_and_no_gpu() {
        let me = std::process::id();
        let mut child = std::process::Command::new("sleep").arg("600").spawn().unwrap();
        let tree = process_tree(me);
        assert_eq!(tree[0], me);
        assert!(tree.contains(&child.id()), "{tree:?} lacks {}", child.id());
        // No process here has /dev/nvidiaN open (no driver, or not us).
        assert!(open_gpu_minors(me).is_empty());
        child.kill().unwrap();
        child.wait().unwrap();
    }
}
