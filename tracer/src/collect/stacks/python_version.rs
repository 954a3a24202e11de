//! A process's CPython version from the files it maps (`python3.12`,
//! `libpython3.12.so.1.0`), cached per process: the resolver's version
//! until the layout finder (python_layout.rs) gives it.
use std::collections::HashMap;

/// `PY_VERSION_HEX >> 16` of a mapped file's name (`python3.11`,
/// `libpython3.12d.so.1.0` → 0x030b, 0x030c).
pub fn version_of_path(path: &str) -> Option<u32> {
    let name = path.rsplit('/').next()?;
    let rest = name.strip_prefix("libpython").or_else(|| name.strip_prefix("python"))?;
    let (major, rest) = rest.split_once('.')?;
    let minor: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let (major, minor) = (major.parse::<u32>().ok()?, minor.parse::<u32>().ok()?);
    (major == 3 && minor < 256).then_some((major << 8) | minor)
}

/// The version of process `pid`, from /proc/PID/maps (None: no Python mapped).
pub fn from_maps(pid: u32) -> Option<u32> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/maps")).ok()?;
    let maps = crate::collect::stacks::maps::parse(&text);
    // libpython first: a program embedding Python maps it, and its name says the version.
    let files = || maps.iter().filter_map(|m| m.file());
    files().filter(|f| f.contains("/libpython")).chain(files()).find_map(version_of_path)
}

/// [`from_maps`] cached per process (a `VersionOf`).
pub fn cached() -> crate::collect::stacks::python::VersionOf {
    cached_by(from_maps)
}

/// `version_of` cached per process once it gives a version (None is asked
/// again: the interpreter may not be loaded yet).
pub fn cached_by(
    mut version_of: impl FnMut(u32) -> Option<u32> + 'static,
) -> crate::collect::stacks::python::VersionOf {
    let mut cache: HashMap<u32, u32> = HashMap::new();
    Box::new(move |pid| {
        if let Some(&v) = cache.get(&pid) {
            return Some(v);
        }
        let v = version_of(pid)?;
        cache.insert(pid, v);
        Some(v)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_from_file_names() {
        assert_eq!(version_of_path("/usr/bin/python3.12"), Some(0x030c));
        assert_eq!(version_of_path("/root/.pyenv/versions/3.11.7/bin/python3.11"), Some(0x030b));
        assert_eq!(version_of_path("/usr/lib/x86_64-linux-gnu/libpython3.10.so.1.0"), Some(0x030a));
        assert_eq!(version_of_path("/opt/libpython3.13d.so"), Some(0x030d));
        for no in ["/usr/bin/python3", "/usr/bin/python", "/lib/libc.so.6", "/usr/bin/python2.7", "/x/pythonista"] {
            assert_eq!(version_of_path(no), None, "{no}");
        }
        assert_eq!(from_maps(std::process::id()), None, "the test binary maps no Python");
    }

    #[test]
    fn versions_are_cached_once_known() {
        let asked = std::rc::Rc::new(std::cell::Cell::new(0));
        let a = asked.clone();
        let mut v = cached_by(move |pid| {
            a.set(a.get() + 1);
            (pid == 7 && a.get() > 1).then_some(0x030c)
        });
        assert_eq!((v(7), v(7), v(7), v(8)), (None, Some(0x030c), Some(0x030c), None));
        assert_eq!(asked.get(), 3, "7 asked twice (None, then known), 8 once");
    }
}
