//! The libcuda files in use: every distinct file (device and inode) that a
//! selected process maps or opens gets the probes once, whatever mount
//! namespace it lives in (a container's bind-mounted driver library). Files
//! come from tracer's own namespace at start, from `/proc/PID/maps` of the
//! processes already running (through `/proc/PID/root`), and from the
//! kernel side's open watch (tracer-ebpf/src/libwatch.rs): a watched
//! process that opens `libcuda.so*` is stopped until its file is probed.
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use tracer_common::libopen::LibOpen;

use crate::collect::loader::Loaded;

/// Attaches the probes to the libcuda file at a path; returns how many
/// functions were probed.
pub type AttachFn<'a> = Box<dyn FnMut(&mut Loaded, &Path) -> anyhow::Result<usize> + 'a>;

/// One probed libcuda file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probed {
    pub dev: u64,
    pub ino: u64,
    /// The path as the process that led to it saw it (its mount namespace).
    pub path: String,
    /// The process it was found through (None: tracer's own namespace).
    pub pid: Option<u32>,
    /// How it was found: "tracer" (tracer's namespace or --libcuda),
    /// "mapped" (/proc/PID/maps at start), "opened" (the open watch).
    pub how: &'static str,
    pub probed_functions: usize,
}

pub struct Watch<'a> {
    attach: AttachFn<'a>,
    pub files: Vec<Probed>,
    /// Files that could not be probed: path (as the process saw it) and why.
    pub failed: Vec<(String, String)>,
    /// Opens reported by the kernel side, and processes stopped and continued.
    pub opens: u64,
    pub continued: u64,
    /// Opens whose process was gone before it could be looked at.
    pub gone: u64,
    /// At most this many files are probed (None: no limit): every file adds
    /// its probes for as long as tracer runs, so a long-running tracer (the
    /// agent) bounds them. Files past the limit are not probed.
    pub max_files: Option<usize>,
    /// Files found but not probed, each counted once (however many
    /// processes open it): past `max_files`, or failed; and of those, past
    /// `max_files`.
    pub not_probed: u64,
    pub over_limit: u64,
    /// (device, inode) of the files counted in `not_probed`.
    not_probed_files: std::collections::HashSet<(u64, u64)>,
    /// An open handle of each file of `files` (same order; None where it
    /// could not be opened), to attach its probes again after they were
    /// detached (`tracer agent --duty-cycle`) whatever became of the path.
    held: Vec<Option<Unwatched>>,
}

/// Failed files kept by path for the footer and the warning (more are only
/// counted in `not_probed`).
const FAILED_KEPT: usize = 64;

impl<'a> Watch<'a> {
    pub fn new(attach: AttachFn<'a>) -> Self {
        Watch {
            attach,
            files: Vec::new(),
            failed: Vec::new(),
            opens: 0,
            continued: 0,
            gone: 0,
            max_files: None,
            not_probed: 0,
            over_limit: 0,
            not_probed_files: std::collections::HashSet::new(),
            held: Vec::new(),
        }
    }

    /// Attaches the probes again to every file probed (their links were
    /// detached); returns the functions probed and the files that failed.
    pub fn reattach_all(&mut self, loaded: &mut Loaded) -> (usize, usize) {
        let (mut functions, mut failed) = (0, 0);
        for (f, h) in self.files.iter().zip(&self.held) {
            let path = h.as_ref().map_or_else(|| PathBuf::from(&f.path), Unwatched::path);
            match (self.attach)(loaded, &path) {
                Ok(n) => functions += n,
                Err(e) => {
                    failed += 1;
                    log::warn!("attaching the probes to {} again: {e:#}", f.path);
                }
            }
        }
        (functions, failed)
    }

    /// Probes at most `n` files (the first counts).
    pub fn with_max_files(mut self, n: usize) -> Self {
        self.max_files = Some(n);
        self
    }

    /// Records a file probed by the initial load (tracer's namespace).
    pub fn initial(&mut self, path: &Path, probed_functions: usize) {
        if let Ok((dev, ino)) = file_identity(path) {
            self.files.push(Probed {
                dev,
                ino,
                path: path.display().to_string(),
                pid: None,
                how: "tracer",
                probed_functions,
            });
            self.held.push(Unwatched::open(path).ok());
        }
    }

    pub fn is_probed(&self, dev: u64, ino: u64) -> bool {
        self.files.iter().any(|f| f.dev == dev && f.ino == ino)
    }

    /// Probes the file at `via` (any path to it) unless its inode is probed
    /// already. Returns whether it was new.
    pub fn add(
        &mut self,
        loaded: &mut Loaded,
        via: &Path,
        shown: &str,
        pid: Option<u32>,
        how: &'static str,
    ) -> anyhow::Result<bool> {
        // A container image's layer: the layer's file, once for every
        // container of the image.
        let layer = pid.and_then(|p| crate::collect::overlay::layer_file(p, Path::new(shown)));
        let (dev, ino) = file_identity(layer.as_deref().unwrap_or(via))?;
        // tracer's own opens of the file must not be watched (a tracer that
        // selects every process would stop itself).
        let held = Unwatched::open(via)?;
        let via = held.path();
        let via = via.as_path();
        if self.is_probed(dev, ino) {
            return Ok(false);
        }
        let first_miss = !self.not_probed_files.contains(&(dev, ino));
        if self.max_files.is_some_and(|m| self.files.len() >= m) {
            if first_miss {
                self.not_probed_files.insert((dev, ino));
                self.not_probed += 1;
                self.over_limit += 1;
            }
            let max = self.files.len();
            if first_miss && self.over_limit == 1 {
                eprintln!(
                    "tracer: warning: not probing {shown} (process {}): {max} libcuda files are probed already (the limit); its calls are not seen",
                    pid.unwrap_or(0)
                );
            }
            anyhow::bail!("{shown}: {max} libcuda files are probed already (the limit)");
        }
        match (self.attach)(loaded, via) {
            Ok(n) => {
                self.files.push(Probed { dev, ino, path: shown.to_string(), pid, how, probed_functions: n });
                self.held.push(Some(held));
                log::info!("probing {n} functions in {shown} (process {pid:?}, {how})");
                Ok(true)
            }
            Err(e) => {
                if first_miss {
                    self.not_probed_files.insert((dev, ino));
                    self.not_probed += 1;
                }
                if self.failed.len() < FAILED_KEPT && !self.failed.iter().any(|(p, _)| p == shown) {
                    eprintln!(
                        "tracer: warning: cannot probe {shown} (process {}): {}",
                        pid.unwrap_or(0),
                        crate::error::one_line(&e)
                    );
                    self.failed.push((shown.to_string(), crate::error::one_line(&e)));
                }
                Err(e)
            }
        }
    }

    /// Probes every libcuda that process `pid` has mapped.
    pub fn scan(&mut self, loaded: &mut Loaded, pid: u32) {
        for (shown, via) in mapped_libcudas(pid) {
            let _ = self.add(loaded, &via, &shown, Some(pid), "mapped");
        }
    }

    /// One open reported by the kernel side: probe the file, then continue
    /// the process the kernel side stopped, after `before_resume` (the
    /// Python layout's look, python_procs.rs).
    pub fn opened(&mut self, loaded: &mut Loaded, rec: &LibOpen, before_resume: &mut dyn FnMut(u32)) {
        self.opens += 1;
        let via = PathBuf::from(format!("/proc/{}/fd/{}", rec.pid, rec.fd));
        match std::fs::read_link(&via) {
            Ok(shown) => {
                let _ = self.add(loaded, &via, &shown.to_string_lossy(), Some(rec.pid), "opened");
            }
            Err(_) => {
                // The process exited (or closed the file) before we looked.
                self.gone += 1;
                log::info!("process {} exited while its libcuda was being probed", rec.pid);
            }
        }
        if rec.stopped != 0 {
            before_resume(rec.pid);
            self.resume(rec.pid);
        }
    }

    /// Continues a process the kernel side stopped (whatever happened).
    pub fn resume(&mut self, pid: u32) {
        // SAFETY: plain syscall.
        if unsafe { libc::kill(pid as i32, libc::SIGCONT) } == 0 {
            self.continued += 1;
        }
    }

    /// Reads every pending open; with `attach` false (detaching) the
    /// processes are only continued. `before_resume`: as for [`Self::opened`].
    pub fn drain(
        &mut self,
        loaded: &mut Loaded,
        ring: &mut aya::maps::RingBuf<aya::maps::MapData>,
        attach: bool,
        before_resume: &mut dyn FnMut(u32),
    ) -> usize {
        let mut recs = Vec::new();
        while let Some(item) = ring.next() {
            if let Some(r) = LibOpen::from_bytes(&item) {
                recs.push(r);
            }
        }
        for r in &recs {
            if attach {
                self.opened(loaded, r, before_resume);
            } else if r.stopped != 0 {
                self.resume(r.pid);
            }
        }
        recs.len()
    }

    /// The footer's `libcuda_files`.
    pub fn footer(&self, lost: u64) -> Value {
        json!({
            "probed": self.files.iter().map(|f| json!({
                "path": f.path,
                "dev": f.dev,
                "inode": f.ino,
                "pid": f.pid,
                "found": f.how,
                "probed_functions": f.probed_functions,
            })).collect::<Vec<_>>(),
            "failed": self.failed.iter().map(|(p, e)| json!({ "path": p, "error": e })).collect::<Vec<_>>(),
            "opens_watched": self.opens,
            "processes_continued": self.continued,
            "processes_gone": self.gone,
            "opens_not_reported": lost,
        })
    }
}

/// Continues every process the pending opens stopped, probing nothing (for
/// a collection loop without a watch). Returns how many opens were read.
pub fn continue_all(ring: &mut aya::maps::RingBuf<aya::maps::MapData>) -> usize {
    let mut n = 0;
    while let Some(item) = ring.next() {
        n += 1;
        if let Some(r) = LibOpen::from_bytes(&item)
            && r.stopped != 0
        {
            // SAFETY: plain syscall.
            unsafe { libc::kill(r.pid as i32, libc::SIGCONT) };
        }
    }
    n
}

/// A file held open with O_PATH (an open the kernel's watch ignores), to be
/// named by its `/proc/self/fd/N` path: opened through that path (its last
/// component a number, not `libcuda.so*`), tracer's own reads of a libcuda
/// file are not watched either. Under `--system` (or a `--cgroup` that
/// holds tracer) every process's opens are watched, tracer's included: a
/// plain open of a `libcuda.so*` path would stop tracer itself.
pub struct Unwatched(std::fs::File);

impl Unwatched {
    pub fn open(path: &Path) -> std::io::Result<Unwatched> {
        use std::os::unix::fs::OpenOptionsExt as _;
        std::fs::OpenOptions::new().read(true).custom_flags(libc::O_PATH).open(path).map(Unwatched)
    }

    pub fn path(&self) -> PathBuf {
        use std::os::fd::AsRawFd as _;
        PathBuf::from(format!("/proc/self/fd/{}", self.0.as_raw_fd()))
    }
}

/// The file the kernel puts uprobes on for `path`: its device and inode as
/// a mapping of it shows them. For most files that is what stat says; for a
/// file of an overlay (a container image's layer) stat gives the overlay's
/// device, different for every container of the same image, while uprobes
/// go on the layer's own file, one for all of them: so the file is mapped
/// here for a moment and its mapping's device and inode read back from
/// /proc/self/maps.
pub fn file_identity(path: &Path) -> std::io::Result<(u64, u64)> {
    use std::os::fd::AsRawFd as _;
    let f = std::fs::File::open(Unwatched::open(path)?.path())?;
    let m = f.metadata()?;
    if m.len() == 0 {
        return Ok((m.dev(), m.ino()));
    }
    // SAFETY: a private read-only mapping of one page of an open file,
    // unmapped below; nothing reads through it.
    let addr = unsafe { libc::mmap(std::ptr::null_mut(), 4096, libc::PROT_READ, libc::MAP_PRIVATE, f.as_raw_fd(), 0) };
    if addr == libc::MAP_FAILED {
        return Ok((m.dev(), m.ino()));
    }
    let found = std::fs::read_to_string("/proc/self/maps").ok().and_then(|maps| mapping_identity(&maps, addr as u64));
    // SAFETY: the mapping made above.
    unsafe { libc::munmap(addr, 4096) };
    Ok(found.unwrap_or((m.dev(), m.ino())))
}

/// The device (as stat encodes it) and inode of the mapping that starts at
/// `addr` in a `/proc/PID/maps` text.
pub fn mapping_identity(maps: &str, addr: u64) -> Option<(u64, u64)> {
    maps.lines().find_map(|l| {
        let mut f = l.split_whitespace();
        let start = u64::from_str_radix(f.next()?.split('-').next()?, 16).ok()?;
        if start != addr {
            return None;
        }
        let (_perms, _off) = (f.next()?, f.next()?);
        let (maj, min) = f.next()?.split_once(':')?;
        let ino = f.next()?.parse().ok()?;
        let (maj, min) = (u32::from_str_radix(maj, 16).ok()?, u32::from_str_radix(min, 16).ok()?);
        Some((libc::makedev(maj, min), ino))
    })
}

/// The libcuda files `pid` has mapped: (path in its mount namespace, the
/// same file through `/proc/PID/root`).
pub fn mapped_libcudas(pid: u32) -> Vec<(String, PathBuf)> {
    let Ok(maps) = std::fs::read_to_string(format!("/proc/{pid}/maps")) else { return Vec::new() };
    let mut out: Vec<(String, PathBuf)> = Vec::new();
    for p in maps.lines().filter_map(libcuda_in_maps_line) {
        if !out.iter().any(|(s, _)| s == p) {
            out.push((p.to_string(), PathBuf::from(format!("/proc/{pid}/root{p}"))));
        }
    }
    out
}

/// The path of a `/proc/PID/maps` line when it maps a `libcuda.so*` file.
pub fn libcuda_in_maps_line(line: &str) -> Option<&str> {
    // ADDR PERMS OFFSET DEV INODE PATH (the path may contain spaces)
    let mut rest = line;
    for _ in 0..5 {
        rest = rest.trim_start().split_once(char::is_whitespace)?.1;
    }
    let path = rest.trim_start();
    let name = Path::new(path).file_name()?.to_string_lossy();
    (path.starts_with('/') && name.starts_with("libcuda.so")).then_some(path)
}

/// The selected processes already running, whose mapped libcuda files are
/// probed at start: with `--system` every process, with `--cgroup` those of
/// the cgroup subtree, else `roots` (`-p`) and their descendants.
pub fn running_selected(scope: &crate::collect::selection::Scope, roots: &[u32]) -> Vec<u32> {
    use crate::collect::selection::Scope;
    match scope {
        Scope::System => all_pids(),
        Scope::Cgroup(c) => cgroup_pids(&c.dir),
        Scope::Traced => {
            let mut v = Vec::new();
            for &pid in roots {
                v.extend(crate::collect::procfs::descendants(pid));
                v.push(pid);
            }
            v
        }
    }
}

/// Every process of the machine.
pub fn all_pids() -> Vec<u32> {
    let Ok(rd) = std::fs::read_dir("/proc") else { return Vec::new() };
    rd.flatten().filter_map(|e| e.file_name().to_string_lossy().parse().ok()).collect()
}

/// The processes of a cgroup v2 directory and the cgroups below it.
pub fn cgroup_pids(dir: &Path) -> Vec<u32> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        if let Ok(s) = std::fs::read_to_string(d.join("cgroup.procs")) {
            out.extend(s.lines().filter_map(|l| l.trim().parse::<u32>().ok()));
        }
        if let Ok(rd) = std::fs::read_dir(&d) {
            stack.extend(rd.flatten().filter(|e| e.file_type().is_ok_and(|t| t.is_dir())).map(|e| e.path()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_lines() {
        let l = "7f1c2a000000-7f1c2a200000 r-xp 00000000 00:2a 1234 /usr/lib/x86_64-linux-gnu/libcuda.so.535.104.05";
        assert_eq!(libcuda_in_maps_line(l), Some("/usr/lib/x86_64-linux-gnu/libcuda.so.535.104.05"));
        let l = "7f1c2a000000-7f1c2a200000 r--p 00000000 00:2a 99 /run/my dir/libcuda.so.1";
        assert_eq!(libcuda_in_maps_line(l), Some("/run/my dir/libcuda.so.1"));
        for l in [
            "7f1c2a000000-7f1c2a200000 r-xp 00000000 00:2a 1234 /usr/lib/libcudart.so.12",
            "7f1c2a000000-7f1c2a200000 rw-p 00000000 00:00 0 ",
            "7ffd1000-7ffd2000 rw-p 00000000 00:00 0 [stack]",
            "7f1c2a000000-7f1c2a200000 r-xp 00000000 00:2a 1234 /opt/libcuda.so.1-notes/readme",
        ] {
            assert_eq!(libcuda_in_maps_line(l), None, "{l}");
        }
    }

    #[test]
    fn identity_of_a_mapping() {
        let maps = "7f0000000000-7f0000001000 r--p 00000000 00:2a 10445025 /tmp/fk/libcuda.so.1\n\
                    7f0000001000-7f0000002000 r--p 00000000 fd:01 77 /x\n";
        assert_eq!(mapping_identity(maps, 0x7f0000000000), Some((libc::makedev(0, 0x2a), 10445025)));
        assert_eq!(mapping_identity(maps, 0x7f0000001000), Some((libc::makedev(0xfd, 1), 77)));
        assert_eq!(mapping_identity(maps, 0x7f0000003000), None);
        // A plain file: what stat says.
        let exe = std::env::current_exe().unwrap();
        let m = std::fs::metadata(&exe).unwrap();
        assert_eq!(file_identity(&exe).unwrap(), (m.dev(), m.ino()));
    }

    #[test]
    fn an_unwatched_path_names_the_same_file() {
        let exe = std::env::current_exe().unwrap();
        let held = Unwatched::open(&exe).unwrap();
        let p = held.path();
        assert!(p.to_str().unwrap().starts_with("/proc/self/fd/"), "{p:?}");
        let (a, b) = (std::fs::metadata(&exe).unwrap(), std::fs::metadata(&p).unwrap());
        assert_eq!((a.dev(), a.ino()), (b.dev(), b.ino()));
        assert_eq!(std::fs::read(&p).unwrap().len() as u64, a.len());
    }

    #[test]
    fn own_maps_name_no_libcuda() {
        assert!(mapped_libcudas(std::process::id()).is_empty());
    }
}
