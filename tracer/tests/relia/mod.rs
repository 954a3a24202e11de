//! Helpers of the reliability and soak tests: the scenario program
//! tests/fakecuda/reliability.c, built against the fake libcuda.
#![allow(dead_code, reason = "shared by several test binaries, each uses part")]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use crate::common;

/// `DIR/reliability`, linked against the fake libcuda (rpath DIR).
pub fn program() -> &'static Path {
    static P: OnceLock<PathBuf> = OnceLock::new();
    P.get_or_init(|| {
        let f = common::fake();
        let out = f.dir.join("reliability");
        let tmp = f.dir.join("reliability.tmp");
        let src = common::src_dir().join("reliability.c");
        let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
        let o = Command::new(&cc)
            .args(["-O1", "-Wall", "-o"])
            .arg(&tmp)
            .arg(&src)
            .arg(format!("-L{}", f.dir.display()))
            .arg("-l:libcuda.so.1")
            .arg(format!("-Wl,-rpath,{}", f.dir.display()))
            .arg("-pthread")
            .output()
            .expect("running cc");
        assert!(o.status.success(), "building reliability.c: {}", String::from_utf8_lossy(&o.stderr));
        std::fs::rename(&tmp, &out).unwrap();
        out
    })
}

/// The resident set of `pid`: (VmRSS, VmHWM) in KiB.
pub fn rss_kib(pid: u32) -> Option<(u64, u64)> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| -> Option<u64> {
        s.lines().find_map(|l| l.strip_prefix(name))?.split_whitespace().next()?.parse().ok()
    };
    Some((field("VmRSS:")?, field("VmHWM:")?))
}
