//! What /proc tells about the traced processes: the library path they
//! see, the libcuda they mapped, their open NVIDIA device files, their
//! descendants (for `-p`).
use std::path::{Path, PathBuf};

/// The LD_LIBRARY_PATH the traced program sees.
pub fn target_ld_library_path(pid: Option<u32>) -> Option<String> {
    match pid {
        None => std::env::var("LD_LIBRARY_PATH").ok(),
        Some(p) => {
            let env = std::fs::read(format!("/proc/{p}/environ")).ok()?;
            env.split(|&b| b == 0)
                .find_map(|kv| kv.strip_prefix(b"LD_LIBRARY_PATH="))
                .map(|v| String::from_utf8_lossy(v).into_owned())
        }
    }
}

/// For `-p`: the libcuda the process has already mapped, if any.
pub fn mapped_libcuda(pid: u32) -> Option<PathBuf> {
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).ok()?;
    maps.lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .find(|p| Path::new(p).file_name().is_some_and(|n| n.to_string_lossy().starts_with("libcuda.so")))
        .map(|p| PathBuf::from(format!("/proc/{pid}/root{p}")))
}

/// Open NVIDIA device files of `pid`, from /proc/PID/fd.
pub fn nvidia_fds(pid: u32) -> Vec<(u32, u32)> {
    let mut v = vec![];
    let Ok(rd) = std::fs::read_dir(format!("/proc/{pid}/fd")) else { return v };
    for e in rd.flatten() {
        let Ok(fd) = e.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(target) = std::fs::read_link(e.path()) else { continue };
        if let Some(dev) =
            crate::decode::ioctls::nvdev_of(crate::decode::nvioctl::device_from_path(&target.to_string_lossy()))
        {
            v.push((fd, dev));
        }
    }
    v
}

/// The traced process tree's existing descendants of `pid` (for `-p`).
pub fn descendants(pid: u32) -> Vec<u32> {
    let mut parent = std::collections::HashMap::<u32, u32>::new();
    if let Ok(rd) = std::fs::read_dir("/proc") {
        for e in rd.flatten() {
            let Ok(p) = e.file_name().to_string_lossy().parse::<u32>() else { continue };
            if let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) {
                // pid (comm) state ppid ...
                if let Some(rest) = stat.rsplit_once(')').map(|x| x.1)
                    && let Some(pp) = rest.split_whitespace().nth(1).and_then(|x| x.parse().ok())
                {
                    parent.insert(p, pp);
                }
            }
        }
    }
    let mut out = vec![];
    let mut frontier = vec![pid];
    while let Some(p) = frontier.pop() {
        for (&c, &pp) in &parent {
            if pp == p && !out.contains(&c) {
                out.push(c);
                frontier.push(c);
            }
        }
    }
    out
}

/// What file descriptor `fd` of `pid` is, for an off-CPU interval blocked on
/// it: `pipe`, `socket`, `eventfd`, `epoll`, a device (`/dev/…`) or
/// `file PATH`; None when /proc no longer shows it.
pub fn fd_kind(pid: u32, fd: u64) -> Option<String> {
    let target = std::fs::read_link(format!("/proc/{pid}/fd/{}", fd as i32)).ok()?;
    Some(classify_fd_target(&target.to_string_lossy()))
}

fn classify_fd_target(t: &str) -> String {
    if let Some(kind) = t.split_once(":[").map(|(k, _)| k)
        && !t.starts_with('/')
    {
        // pipe:[123], socket:[456], anon_inode:[eventfd] …
        return match kind {
            "anon_inode" => t.trim_start_matches("anon_inode:").trim_matches(['[', ']']).to_string(),
            k => k.to_string(),
        };
    }
    if let Some(k) = t.strip_prefix("anon_inode:") {
        return k.trim_matches(['[', ']']).to_string();
    }
    if t.starts_with("/dev/") { t.to_string() } else { format!("file {t}") }
}

#[cfg(test)]
mod fd_kind_tests {
    use super::classify_fd_target as c;

    #[test]
    fn kinds() {
        assert_eq!(c("pipe:[12345]"), "pipe");
        assert_eq!(c("socket:[99]"), "socket");
        assert_eq!(c("anon_inode:[eventfd]"), "eventfd");
        assert_eq!(c("anon_inode:[eventpoll]"), "eventpoll");
        assert_eq!(c("anon_inode:inotify"), "inotify");
        assert_eq!(c("/dev/nvidiactl"), "/dev/nvidiactl");
        assert_eq!(c("/data/shard-0001.bin"), "file /data/shard-0001.bin");
    }
}
