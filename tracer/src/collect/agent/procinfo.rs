//! The facts of a traced process for its metric labels that its lines do
//! not carry (the exec and fork lines name most processes:
//! `crate::analysis::agent`): its name as the kernel noted it at its first
//! probed call (`--system`, `--cgroup`, `--all-libcuda`: known even for a
//! process gone before the agent looks), else /proc's; its cgroup (the
//! kernel's note, its parent's, /proc: [`CgroupTable`]); and, only with
//! `--label-command-args`, its command line (argv[0]'s file name and the
//! arguments, cut to a bounded length), read from /proc while it lives.
use std::path::Path;

use aya::maps::{HashMap as BpfHashMap, MapData};

use crate::collect::cgroups::CgroupTable;

pub struct Facts {
    /// The kernel side's tgid -> comm (tracer-ebpf/src/select.rs).
    pub comm: Option<BpfHashMap<MapData, u32, [u8; 16]>>,
    pub cgroups: CgroupTable,
    /// The command line replaces the name (`--label-command-args`).
    pub command_args: bool,
}

impl Facts {
    /// (name, or the command line with `command_args`; cgroup path).
    pub fn of(&mut self, pid: u32) -> (Option<String>, Option<String>) {
        let args = if self.command_args { command(pid) } else { None };
        let name = args
            .or_else(|| self.comm.as_ref().and_then(|m| m.get(&pid, 0).ok()).map(|c| comm_text(&c)))
            .or_else(|| name(pid));
        let cgroup = self.cgroups.of(pid).and_then(|id| self.cgroups.path(id)).map(str::to_string);
        (name.filter(|n| !n.is_empty()), cgroup)
    }

    /// A child's cgroup is its parent's unless known otherwise.
    pub fn forked(&mut self, parent: u32, child: u32) {
        if parent != child {
            self.cgroups.forked(parent, child);
        }
    }

    pub fn exited(&mut self, pid: u32) {
        self.cgroups.forget(pid);
    }
}

/// A comm buffer (NUL-padded) as text.
pub fn comm_text(c: &[u8]) -> String {
    let end = c.iter().position(|&b| b == 0).unwrap_or(c.len());
    String::from_utf8_lossy(&c[..end]).into_owned()
}

/// The kernel's name of `pid` (comm), None when the process is gone.
pub fn name(pid: u32) -> Option<String> {
    std::fs::read_to_string(format!("/proc/{pid}/comm")).ok().map(|s| s.trim_end_matches('\n').to_string())
}

/// Longest command label (bytes); longer ones are cut at a char boundary.
const COMMAND_MAX: usize = 120;

/// The command label of `pid`, None when the process is gone.
pub fn command(pid: u32) -> Option<String> {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let c = command_of(&raw);
    if c.is_empty() {
        // Kernel threads and zombies have no cmdline: their comm.
        return std::fs::read_to_string(format!("/proc/{pid}/comm")).ok().map(|s| s.trim_end().to_string());
    }
    Some(c)
}

/// argv (NUL-separated) as a label: the program's file name, then the
/// arguments, space-separated, cut to [`COMMAND_MAX`] bytes.
pub fn command_of(cmdline: &[u8]) -> String {
    let mut parts = cmdline.split(|&b| b == 0).filter(|a| !a.is_empty()).map(String::from_utf8_lossy);
    let Some(first) = parts.next() else { return String::new() };
    let prog = Path::new(first.as_ref()).file_name().map_or(first.to_string(), |n| n.to_string_lossy().into_owned());
    let mut s = prog;
    for a in parts {
        if s.len() >= COMMAND_MAX {
            break;
        }
        s.push(' ');
        s.push_str(&a);
    }
    if s.len() > COMMAND_MAX {
        let mut cut = COMMAND_MAX;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
    }
    s
}

/// The cgroup of `pid` (the v2 path, else the v1 lines' paths).
pub fn cgroup(pid: u32) -> Option<String> {
    cgroup_of(&std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?)
}

pub fn cgroup_of(text: &str) -> Option<String> {
    if let Some(p) = text.lines().find_map(|l| l.strip_prefix("0::")) {
        return Some(p.to_string());
    }
    let mut v: Vec<&str> = text.lines().filter_map(|l| l.splitn(3, ':').nth(2)).collect();
    v.dedup();
    (!v.is_empty()).then(|| v.join(","))
}

/// Whether `pid` still exists (not counting a zombie).
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => s.rsplit_once(')').and_then(|(_, r)| r.split_whitespace().next()) != Some("Z"),
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_labels_are_short_and_readable() {
        assert_eq!(command_of(b"/usr/bin/python3\0serve.py\0--port\x008080\0"), "python3 serve.py --port 8080");
        assert_eq!(command_of(b""), "");
        let long = format!("/x/prog\0{}\0", "é".repeat(200));
        let c = command_of(long.as_bytes());
        assert!(c.len() <= COMMAND_MAX && c.starts_with("prog é"), "{c}");
    }

    #[test]
    fn cgroup_v2_path_else_v1_paths() {
        assert_eq!(cgroup_of("0::/kubepods/pod1/abc\n").as_deref(), Some("/kubepods/pod1/abc"));
        assert_eq!(cgroup_of("12:memory:/a\n11:cpu:/a\n").as_deref(), Some("/a"));
        assert_eq!(cgroup_of(""), None);
    }

    #[test]
    fn this_process_is_alive_with_a_command() {
        let me = std::process::id();
        assert!(alive(me));
        assert!(command(me).is_some_and(|c| !c.is_empty()));
        let exe = std::fs::read_link("/proc/self/exe").unwrap();
        let want = crate::analysis::agent::comm_of(exe.to_str().unwrap());
        assert_eq!(name(me).as_deref(), Some(want.as_str()));
        assert_eq!(comm_text(b"python3\0\0\0\0\0\0\0\0\0"), "python3");
        assert!(!alive(u32::MAX - 1));
    }
}
