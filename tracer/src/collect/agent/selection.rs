//! Which processes `tracer agent` traces: the one seam between the agent
//! loop and how processes are chosen. The loop calls [`Selection::poll`]
//! at start and every scan interval and marks the pids it returns traced
//! (their children are traced from then on by the sched tracepoints).
//!
//! Here: [`Pids`] (`-p PID`, with descendants), and [`MappingLibcuda`]
//! (`--all-libcuda`: every process that maps the libcuda file probed at
//! start or any other `libcuda.so*` file, found by scanning /proc/PID/maps,
//! so processes started later are picked up within one scan; the loop
//! probes the other files they map, `crate::collect::libcuda_watch`). A kernel-side selection (`--system`, `--cgroup`) plugs
//! in as another implementation whose `poll` returns nothing and whose
//! [`Selection::kernel_side`] says the eBPF filter does the choosing.
use std::collections::HashSet;
use std::os::unix::fs::MetadataExt as _;
use std::path::Path;

pub trait Selection {
    /// Pids to mark traced now (already marked ones may come again).
    fn poll(&mut self) -> Vec<u32>;
    /// One line for the log and the startup message.
    fn describe(&self) -> String;
    /// True when the kernel side selects (nothing to mark from userspace).
    fn kernel_side(&self) -> bool {
        false
    }
}

/// `-p PID` (repeatable): those processes and their descendants, once.
pub struct Pids {
    pids: Vec<u32>,
    done: bool,
}

impl Pids {
    pub fn new(pids: Vec<u32>) -> Self {
        Pids { pids, done: false }
    }
}

impl Selection for Pids {
    fn poll(&mut self) -> Vec<u32> {
        if std::mem::replace(&mut self.done, true) {
            return vec![];
        }
        let mut v = self.pids.clone();
        for &p in &self.pids {
            v.extend(crate::collect::procfs::descendants(p));
        }
        v
    }
    fn describe(&self) -> String {
        format!("processes {:?} and their descendants", self.pids)
    }
}

/// Every process whose memory maps the libcuda file probed at start (same
/// device and inode, whatever path or mount namespace it was mapped from)
/// or another file named `libcuda.so*` (a container's own copy).
pub struct MappingLibcuda {
    dev: u64,
    ino: u64,
    /// Pids already returned (forgotten when they are gone, so a recycled
    /// pid is looked at again).
    seen: HashSet<u32>,
    path: String,
}

impl MappingLibcuda {
    pub fn new(libcuda: &Path) -> anyhow::Result<Self> {
        let m = std::fs::metadata(libcuda).map_err(|e| anyhow::anyhow!("{}: {e}", libcuda.display()))?;
        Ok(MappingLibcuda { dev: m.dev(), ino: m.ino(), seen: HashSet::new(), path: libcuda.display().to_string() })
    }
}

/// Whether a /proc/PID/maps text maps the file with this device and inode.
pub fn maps_file(maps: &str, dev: u64, ino: u64) -> bool {
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    maps.lines().any(|l| {
        let mut f = l.split_whitespace().skip(3);
        let (Some(d), Some(i)) = (f.next(), f.next()) else { return false };
        if i.parse::<u64>().ok() != Some(ino) {
            return false;
        }
        let Some((ma, mi)) = d.split_once(':') else { return false };
        u32::from_str_radix(ma, 16).ok() == Some(major) && u32::from_str_radix(mi, 16).ok() == Some(minor)
    })
}

/// Whether a /proc/PID/maps text maps the file with this device and inode
/// or any file named `libcuda.so*`.
pub fn maps_libcuda(maps: &str, dev: u64, ino: u64) -> bool {
    maps_file(maps, dev, ino) || maps.lines().any(|l| crate::collect::libcuda_watch::libcuda_in_maps_line(l).is_some())
}

impl Selection for MappingLibcuda {
    fn poll(&mut self) -> Vec<u32> {
        let mut live = HashSet::new();
        let mut new = vec![];
        let me = std::process::id();
        let Ok(rd) = std::fs::read_dir("/proc") else { return new };
        for e in rd.flatten() {
            let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else { continue };
            if pid == me {
                continue;
            }
            live.insert(pid);
            if self.seen.contains(&pid) {
                continue;
            }
            if std::fs::read_to_string(format!("/proc/{pid}/maps")).is_ok_and(|m| maps_libcuda(&m, self.dev, self.ino))
            {
                self.seen.insert(pid);
                new.push(pid);
            }
        }
        self.seen.retain(|p| live.contains(p));
        new
    }
    fn describe(&self) -> String {
        format!("every process mapping {} or another libcuda.so* (scanned in /proc)", self.path)
    }
}

/// The selection the options ask for: the kernel's (`--system`, `--cgroup`
/// without `--all-libcuda`), else the `-p` processes and the command, with
/// `--all-libcuda` also every process that maps a libcuda.
pub fn for_options(
    scope: &crate::collect::selection::Scope,
    all_libcuda: bool,
    pids: &[u32],
    command: Option<u32>,
    libcuda: &Path,
) -> anyhow::Result<Box<dyn Selection>> {
    if scope.is_machine_wide() && !all_libcuda {
        return Ok(Box::new(KernelSide(scope.header().to_string())));
    }
    let mut pids = pids.to_vec();
    pids.extend(command);
    match all_libcuda {
        true => Ok(Box::new(Both(Pids::new(pids), MappingLibcuda::new(libcuda)?))),
        false => Ok(Box::new(Pids::new(pids))),
    }
}

/// `--system` / `--cgroup`: the probes select in the kernel; nothing to mark.
struct KernelSide(String);

impl Selection for KernelSide {
    fn poll(&mut self) -> Vec<u32> {
        vec![]
    }
    fn describe(&self) -> String {
        format!("selected in the kernel: {}", self.0)
    }
    fn kernel_side(&self) -> bool {
        true
    }
}

/// `-p` and `--all-libcuda` together.
struct Both(Pids, MappingLibcuda);

impl Selection for Both {
    fn poll(&mut self) -> Vec<u32> {
        let mut v = self.0.poll();
        v.extend(self.1.poll());
        v
    }
    fn describe(&self) -> String {
        format!("every process that calls a probed libcuda (selected in the kernel); {}", self.1.describe())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_match_by_device_and_inode() {
        let maps = "7f00-7f10 r-xp 00000000 fd:01 1234 /usr/lib/x86_64-linux-gnu/libcuda.so.580\n\
                    7f20-7f30 r--p 00000000 00:00 0 [heap]\n";
        let dev = libc::makedev(0xfd, 1);
        assert!(maps_file(maps, dev, 1234));
        assert!(!maps_file(maps, dev, 1235));
        assert!(!maps_file(maps, libc::makedev(0xfd, 2), 1234));
        // Another libcuda file (a container's copy): by name.
        assert!(maps_libcuda(maps, libc::makedev(0xfd, 2), 1));
        let other = "7f00-7f10 r-xp 00000000 fd:01 1234 /usr/lib/libcudart.so.12\n";
        assert!(maps_libcuda(other, libc::makedev(0xfd, 1), 1234));
        assert!(!maps_libcuda(other, libc::makedev(0xfd, 1), 99));
    }

    /// This test process maps its own executable: found by inode.
    #[test]
    fn finds_a_process_mapping_the_file() {
        let exe = std::fs::read_link("/proc/self/exe").unwrap();
        let mut s = MappingLibcuda::new(&exe).unwrap();
        // The scan skips the caller itself: look at our own maps directly.
        let m = std::fs::metadata(&exe).unwrap();
        assert!(maps_file(&std::fs::read_to_string("/proc/self/maps").unwrap(), m.dev(), m.ino()));
        assert!(!s.poll().contains(&std::process::id()));
    }
}
