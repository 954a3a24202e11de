//! A process's mappings (`/proc/PID/maps`), cached per process: which file
//! (and where in it) an address of a native frame is in.
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// One line of `/proc/PID/maps`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mapping {
    pub start: u64,
    pub end: u64,
    pub exec: bool,
    /// The file offset of `start`.
    pub offset: u64,
    /// The path column: a file (`/usr/lib/...`), a special mapping
    /// (`[vdso]`, `[heap]`, `[stack]`, `[anon:NAME]`), or None (anonymous).
    pub path: Option<Arc<str>>,
}

impl Mapping {
    /// A mapped file (not anonymous memory, not `[vdso]` and the like).
    pub fn file(&self) -> Option<&str> {
        self.path.as_deref().filter(|p| p.starts_with('/'))
    }

    /// The offset in the file of address `addr` (within the mapping).
    pub fn file_offset(&self, addr: u64) -> u64 {
        addr - self.start + self.offset
    }
}

/// Parses the text of `/proc/PID/maps` (lines it cannot read are skipped).
pub fn parse(text: &str) -> Vec<Mapping> {
    let mut v: Vec<Mapping> = text.lines().filter_map(parse_line).collect();
    v.sort_by_key(|m| m.start);
    v
}

fn parse_line(l: &str) -> Option<Mapping> {
    // start-end perms offset dev inode [path]
    let mut it = l.splitn(6, ' ');
    let (range, perms, offset) = (it.next()?, it.next()?, it.next()?);
    let (_dev, _inode) = (it.next()?, it.next()?);
    let path = it.next().map(str::trim_start).filter(|p| !p.is_empty()).map(Arc::from);
    let (s, e) = range.split_once('-')?;
    Some(Mapping {
        start: u64::from_str_radix(s, 16).ok()?,
        end: u64::from_str_radix(e, 16).ok()?,
        exec: perms.as_bytes().get(2) == Some(&b'x'),
        offset: u64::from_str_radix(offset, 16).ok()?,
        path,
    })
}

/// The mapping that holds `addr` in `maps` (sorted by start).
pub fn find(maps: &[Mapping], addr: u64) -> Option<&Mapping> {
    let i = maps.partition_point(|m| m.start <= addr);
    maps[..i].last().filter(|m| addr < m.end)
}

/// Mappings per process, read once and again when an address the process has mapped falls
/// outside them (a library loaded since); kept after the process exited.
#[derive(Default)]
pub struct MapsCache {
    procs: HashMap<u32, Vec<Mapping>>,
    /// Addresses outside a process's cached maps found unmapped in the process, until its maps
    /// are read again.
    unmapped: HashSet<(u32, u64)>,
    /// Reads of `/proc/PID/maps` that failed (the process is gone).
    pub read_errors: u64,
    pub reads: u64,
    /// Lookups outside the cached maps of an address the process has not mapped (a frame-pointer
    /// chain through code built without frame pointers ends in such values): answered without
    /// reading the maps again.
    pub unmapped_lookups: u64,
}

impl MapsCache {
    /// The mapping of `addr` in process `pid`, reading its maps when not cached, or when the
    /// cached ones do not hold `addr` and the process has it mapped. Not when it does not: a
    /// large process's maps (a PyTorch process has thousands of lines) cost milliseconds of
    /// system time to read, and a broken frame chain's values, in many stacks, cost a GPT-2
    /// recording about 20 s of the collector's system time when each read them again.
    pub fn lookup(&mut self, pid: u32, addr: u64) -> Option<Mapping> {
        if let Some(v) = self.procs.get(&pid) {
            if let Some(m) = find(v, addr) {
                return Some(m.clone());
            }
            if self.unmapped.contains(&(pid, addr)) || !mapped(pid, addr) {
                self.unmapped.insert((pid, addr));
                self.unmapped_lookups += 1;
                return None;
            }
        }
        self.reads += 1;
        self.unmapped.retain(|(p, _)| *p != pid);
        match std::fs::read_to_string(format!("/proc/{pid}/maps")) {
            Ok(text) => {
                let v = parse(&text);
                let m = find(&v, addr).cloned();
                self.procs.insert(pid, v);
                m
            }
            Err(_) => {
                self.read_errors += 1;
                None
            }
        }
    }

    pub fn forget(&mut self, pid: u32) {
        self.procs.remove(&pid);
        self.unmapped.retain(|(p, _)| *p != pid);
    }
}

/// Whether process `pid` has `addr` mapped: one byte read from it. A refusal other than "not
/// mapped" (EFAULT), or a process gone, counts as mapped, so that the maps are read.
fn mapped(pid: u32, addr: u64) -> bool {
    match crate::collect::procmem::read_spans(pid, &[(addr, 1)], &mut [0u8]) {
        Ok(n) => n == 1,
        Err(e) => e.raw_os_error() != Some(libc::EFAULT),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This process's maps: a mapped address found; an unmapped one (a page unmapped after the
    /// first read) answered without reading the maps again; a mapping made since the last read
    /// read again and found.
    #[test]
    fn unmapped_addresses_do_not_read_the_maps_again() {
        let pid = std::process::id();
        let page = |prot| unsafe {
            libc::mmap(std::ptr::null_mut(), 4096, prot, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0) as u64
        };
        let gone = page(libc::PROT_READ);
        unsafe { libc::munmap(gone as *mut libc::c_void, 4096) };
        let mut c = MapsCache::default();
        let here = lines_of_every_kind as *const () as u64;
        assert!(c.lookup(pid, here).is_some_and(|m| m.exec));
        assert_eq!(c.reads, 1);
        assert_eq!(c.lookup(pid, gone + 8), None);
        assert_eq!(c.lookup(pid, gone + 8), None);
        assert_eq!((c.reads, c.unmapped_lookups), (1, 2));
        let new = page(libc::PROT_READ | libc::PROT_WRITE);
        unsafe { *(new as *mut u8) = 1 };
        assert!(c.lookup(pid, new + 16).is_some_and(|m| m.start <= new && new < m.end));
        assert_eq!(c.reads, 2);
        unsafe { libc::munmap(new as *mut libc::c_void, 4096) };
    }

    #[test]
    fn lines_of_every_kind() {
        let text = "\
55d0c0a00000-55d0c0a01000 r--p 00000000 08:01 1234                       /usr/bin/python3.12
55d0c0a01000-55d0c0b00000 r-xp 00001000 08:01 1234                       /usr/bin/python3.12
7f3a00000000-7f3a00010000 rwxp 00000000 00:00 0 
7f3a12300000-7f3a12400000 r-xp 00200000 08:01 99                         /lib/with space.so (deleted)
7ffd1000-7ffd3000 r-xp 00000000 00:00 0                                  [vdso]
";
        let m = parse(text);
        assert_eq!(m.len(), 5);
        assert_eq!(m[0].start, 0x7ffd1000, "sorted by start");
        let py = find(&m, 0x55d0c0a01234).unwrap();
        assert_eq!((py.exec, py.file(), py.file_offset(0x55d0c0a01234)), (true, Some("/usr/bin/python3.12"), 0x1234));
        let anon = find(&m, 0x7f3a00000010).unwrap();
        assert_eq!((anon.exec, anon.path.as_deref()), (true, None));
        let lib = find(&m, 0x7f3a12300010).unwrap();
        assert_eq!((lib.file(), lib.file_offset(0x7f3a12300010)), (Some("/lib/with space.so (deleted)"), 0x200010));
        assert_eq!(find(&m, 0x7ffd1000).unwrap().file(), None);
        assert!(find(&m, 0x7ffd3000).is_none() && find(&m, 0x10).is_none() && find(&m, u64::MAX).is_none());
    }
}
