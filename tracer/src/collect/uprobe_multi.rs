//! Attaching the uprobe programs through BPF uprobe_multi links (Linux 6.6+):
//! one link per program covers every probed function, with one cookie per
//! offset. aya 0.14 only attaches uprobes as perf events, one per function,
//! and closing each of those waits for an RCU-tasks-trace grace period under
//! the kernel's global event_mutex (~85 ms each, measured on our 6.18 VMs),
//! so detaching 350 probes took 30-45 s. A multi link unregisters all its
//! uprobes with a single grace period.
//!
//! The kernel only accepts a program in such a link if it was loaded with
//! expected_attach_type = BPF_TRACE_UPROBE_MULTI, which aya cannot set, so
//! the four uprobe programs are loaded here from the same object: aya-obj
//! parses and relocates them against the maps aya already created.
use std::collections::HashSet;
use std::ffi::CString;
use std::os::fd::{AsFd as _, AsRawFd as _, FromRawFd as _, OwnedFd, RawFd};
use std::path::Path;

use anyhow::{Context as _, bail};
use aya::{Ebpf, maps::Map};

const BPF_PROG_LOAD: libc::c_long = 5;
const BPF_LINK_CREATE: libc::c_long = 28;
const BPF_PROG_TYPE_KPROBE: u32 = 2;
const BPF_TRACE_UPROBE_MULTI: u32 = 48;
const BPF_F_UPROBE_MULTI_RETURN: u32 = 1;

#[repr(C)]
#[derive(Default)]
struct ProgLoadAttr {
    prog_type: u32,
    insn_cnt: u32,
    insns: u64,
    license: u64,
    log_level: u32,
    log_size: u32,
    log_buf: u64,
    kern_version: u32,
    prog_flags: u32,
    prog_name: [u8; 16],
    prog_ifindex: u32,
    expected_attach_type: u32,
    _rest: [u64; 12],
}

#[repr(C)]
#[derive(Default)]
struct LinkCreateAttr {
    prog_fd: u32,
    target_fd: u32,
    attach_type: u32,
    flags: u32,
    path: u64,
    offsets: u64,
    ref_ctr_offsets: u64,
    cookies: u64,
    cnt: u32,
    multi_flags: u32,
    pid: u32,
    _pad: u32,
    _rest: [u64; 10],
}

fn sys_bpf<T>(cmd: libc::c_long, attr: &mut T) -> std::io::Result<RawFd> {
    // SAFETY: attr is a properly sized, zero-padded bpf_attr prefix.
    let r = unsafe { libc::syscall(libc::SYS_bpf, cmd, attr as *mut T, std::mem::size_of::<T>() as u32) };
    if r < 0 { Err(std::io::Error::last_os_error()) } else { Ok(r as RawFd) }
}

fn map_fd(m: &Map) -> Option<RawFd> {
    let d = match m {
        Map::Array(d)
        | Map::HashMap(d)
        | Map::LruHashMap(d)
        | Map::PerCpuArray(d)
        | Map::PerCpuHashMap(d)
        | Map::PerCpuLruHashMap(d)
        | Map::RingBuf(d)
        | Map::PerfEventArray(d)
        | Map::Queue(d)
        | Map::Stack(d)
        | Map::BloomFilter(d)
        | Map::LpmTrie(d) => d,
        _ => return None,
    };
    Some(d.fd().as_fd().as_raw_fd())
}

/// The uprobe programs, loaded for multi-attachment.
pub struct MultiPrograms {
    progs: Vec<(String, OwnedFd)>,
}

/// Loads `names` from the object `bytes`, relocated against `ebpf`'s maps.
pub fn load(bytes: &[u8], ebpf: &Ebpf, names: &[&str]) -> anyhow::Result<MultiPrograms> {
    let mut obj = aya_obj::Object::parse(bytes).context("parsing the eBPF object")?;
    let mut fds = Vec::new();
    for (name, map) in ebpf.maps() {
        let fd = map_fd(map).with_context(|| format!("map {name}: unexpected type"))?;
        fds.push((name.to_string(), fd));
    }
    let objmaps = obj.maps.clone();
    let text_sections: HashSet<usize> = obj.functions.keys().map(|(s, _)| *s).collect();
    obj.relocate_maps(fds.iter().filter_map(|(n, fd)| objmaps.get(n).map(|m| (n.as_str(), *fd, m))), &text_sections)
        .context("relocating map references")?;
    obj.relocate_calls(&text_sections).context("relocating calls")?;
    let license = obj.license.clone();
    let mut progs = Vec::new();
    for &name in names {
        let prog = obj.programs.get(name).with_context(|| format!("program {name} not in the object"))?;
        let func = obj.functions.get(&prog.function_key()).with_context(|| format!("program {name} has no code"))?;
        progs.push((name.to_string(), load_one(name, &func.instructions, &license)?));
    }
    Ok(MultiPrograms { progs })
}

fn load_one(name: &str, insns: &[aya_obj::generated::bpf_insn], license: &CString) -> anyhow::Result<OwnedFd> {
    let mut log = vec![0u8; 1 << 20];
    let mut attr = ProgLoadAttr {
        prog_type: BPF_PROG_TYPE_KPROBE,
        insn_cnt: insns.len() as u32,
        insns: insns.as_ptr() as u64,
        license: license.as_ptr() as u64,
        expected_attach_type: BPF_TRACE_UPROBE_MULTI,
        ..Default::default()
    };
    let n = name.len().min(15);
    attr.prog_name[..n].copy_from_slice(&name.as_bytes()[..n]);
    match sys_bpf(BPF_PROG_LOAD, &mut attr) {
        Ok(fd) => Ok(unsafe { OwnedFd::from_raw_fd(fd) }),
        Err(first) => {
            // Retry with the verifier log for a useful message.
            attr.log_level = 1;
            attr.log_size = log.len() as u32;
            attr.log_buf = log.as_mut_ptr() as u64;
            let e = sys_bpf(BPF_PROG_LOAD, &mut attr).err().unwrap_or(first);
            let end = log.iter().position(|&b| b == 0).unwrap_or(0);
            let text = String::from_utf8_lossy(&log[end.saturating_sub(2000)..end]);
            bail!("loading {name} for uprobe_multi failed: {e}\n{text}")
        }
    }
}

/// One uprobe_multi link; closing it detaches all its uprobes at once.
pub struct MultiLink {
    _fd: OwnedFd,
    /// The program (a duplicate fd), for its statistics.
    prog: (String, OwnedFd),
}

impl MultiPrograms {
    /// Attaches program `name` at `offsets` of `path` with one cookie each.
    pub fn attach(
        &self,
        name: &str,
        path: &Path,
        offsets: &[u64],
        cookies: &[u64],
        ret: bool,
    ) -> anyhow::Result<MultiLink> {
        assert_eq!(offsets.len(), cookies.len());
        let (_, fd) =
            self.progs.iter().find(|(n, _)| n == name).with_context(|| format!("program {name} not loaded"))?;
        let cpath = CString::new(path.as_os_str().as_encoded_bytes()).context("path contains NUL")?;
        let mut attr = LinkCreateAttr {
            prog_fd: fd.as_raw_fd() as u32,
            attach_type: BPF_TRACE_UPROBE_MULTI,
            path: cpath.as_ptr() as u64,
            offsets: offsets.as_ptr() as u64,
            cookies: cookies.as_ptr() as u64,
            cnt: offsets.len() as u32,
            multi_flags: if ret { BPF_F_UPROBE_MULTI_RETURN } else { 0 },
            ..Default::default()
        };
        let link = sys_bpf(BPF_LINK_CREATE, &mut attr).with_context(|| {
            format!("attaching {name} to {} functions of {} (uprobe_multi)", offsets.len(), path.display())
        })?;
        Ok(MultiLink {
            _fd: unsafe { OwnedFd::from_raw_fd(link) },
            prog: (name.to_string(), fd.try_clone().context("duplicating a program fd")?),
        })
    }
}

impl MultiLink {
    /// The attached program's name and its run statistics.
    pub fn stats(&self) -> Option<(String, ProgStats)> {
        prog_stats(self.prog.1.as_raw_fd()).map(|s| (self.prog.0.clone(), s))
    }
}

/// Cumulative run count and time of a program (the kernel counts them while
/// BPF stats are enabled, see `tracer --bpf-stats`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProgStats {
    pub run_cnt: u64,
    pub run_time_ns: u64,
    /// Instructions the verifier processed to accept the program (of its 1,000,000 limit): how
    /// close a change brings it to refusal. 0: not reported (kernels before 5.16).
    pub verified_insns: u32,
}

const BPF_OBJ_GET_INFO_BY_FD: libc::c_long = 15;

#[repr(C)]
#[derive(Default)]
struct InfoAttr {
    bpf_fd: u32,
    info_len: u32,
    info: u64,
}

fn prog_stats(fd: RawFd) -> Option<ProgStats> {
    // SAFETY: bpf_prog_info is plain data; the kernel fills at most info_len bytes.
    let mut info: aya_obj::generated::bpf_prog_info = unsafe { std::mem::zeroed() };
    let mut attr =
        InfoAttr { bpf_fd: fd as u32, info_len: std::mem::size_of_val(&info) as u32, info: &mut info as *mut _ as u64 };
    sys_bpf(BPF_OBJ_GET_INFO_BY_FD, &mut attr).ok()?;
    Some(ProgStats { run_cnt: info.run_cnt, run_time_ns: info.run_time_ns, verified_insns: info.verified_insns })
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn attr_layouts_match_the_kernel() {
        // offsets from include/uapi/linux/bpf.h
        assert_eq!(std::mem::offset_of!(ProgLoadAttr, prog_name), 48);
        assert_eq!(std::mem::offset_of!(ProgLoadAttr, expected_attach_type), 68);
        assert_eq!(std::mem::offset_of!(LinkCreateAttr, path), 16);
        assert_eq!(std::mem::offset_of!(LinkCreateAttr, cnt), 48);
        assert_eq!(std::mem::offset_of!(LinkCreateAttr, pid), 56);
    }
}
