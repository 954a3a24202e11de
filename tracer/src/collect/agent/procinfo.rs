//! What /proc says about a traced process for its metric labels: the
//! command (argv[0]'s file name and the first arguments, cut to a bounded
//! length) and its cgroup (v2 path; the v1 hierarchies joined otherwise).
use std::path::Path;

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
        assert!(!alive(u32::MAX - 1));
    }
}
