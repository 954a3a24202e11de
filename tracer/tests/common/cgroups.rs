//! cgroup v2 helpers of the root tests (`--cgroup` of `tracer record` and
//! `tracer agent`): the cgroup2 mount, and a cgroup made for one test.
use std::fs;
use std::os::unix::fs::MetadataExt as _;
use std::path::PathBuf;

/// The cgroup2 mount (/sys/fs/cgroup, or /sys/fs/cgroup/unified on a hybrid host).
pub fn cgroup2_root() -> PathBuf {
    let mi = fs::read_to_string("/proc/self/mountinfo").unwrap();
    mi.lines()
        .find_map(|l| {
            let (left, right) = l.split_once(" - ")?;
            let mountpoint = left.split_whitespace().nth(4)?;
            (right.split_whitespace().next()? == "cgroup2").then(|| PathBuf::from(mountpoint))
        })
        .expect("no cgroup2 mount: these tests need cgroup v2")
}

/// A child cgroup of the cgroup2 root, `NAME-PID`, removed on drop (once
/// its processes are gone).
pub struct TestCgroup {
    pub name: String,
    pub dir: PathBuf,
}

impl TestCgroup {
    pub fn create(name: &str) -> TestCgroup {
        let name = format!("{name}-{}", std::process::id());
        let dir = cgroup2_root().join(&name);
        fs::create_dir_all(&dir).unwrap();
        TestCgroup { name, dir }
    }

    /// Its path as `--cgroup` takes it (`/NAME`).
    pub fn arg(&self) -> String {
        format!("/{}", self.name)
    }

    /// Its id (the directory's inode number).
    pub fn id(&self) -> u64 {
        fs::metadata(&self.dir).unwrap().ino()
    }

    pub fn procs(&self) -> PathBuf {
        self.dir.join("cgroup.procs")
    }

    /// Moves process `pid` into it.
    pub fn add(&self, pid: u32) {
        fs::write(self.procs(), pid.to_string()).unwrap();
    }
}

impl Drop for TestCgroup {
    fn drop(&mut self) {
        let _ = fs::remove_dir(&self.dir);
    }
}
