//! How tracer attaches on this host (root, Linux 6.18, kprobes compiled
//! out): every probe through uprobe_multi links (a silent fall back to one
//! perf event per function would make detaching take half a minute), and
//! with --ioctls the automatic path choice falls back from kprobe to the
//! syscall tracepoints, saying why in the header.
mod common;

use std::time::Duration;

#[test]
fn uprobes_use_uprobe_multi_and_ioctl_path_falls_back_with_reasons() {
    if !common::root_tests_enabled() {
        return;
    }
    let t = common::trace_with("attach-auto", &["--ioctls"], &["loop", "3"], &[], Duration::from_secs(120));
    let h = t.header();
    assert_eq!(t.code(), 0, "{}", t.describe());
    assert_eq!(h["uprobe_attach"], "uprobe_multi", "{}", t.describe());
    assert_eq!(h["ioctl_path"], "tracepoint", "{}", t.describe());
    let refused = h["ioctl_path_refused"].as_array().expect("ioctl_path_refused");
    let paths: Vec<&str> = refused.iter().filter_map(|r| r["path"].as_str()).collect();
    assert_eq!(paths, ["kprobe", "fentry"], "{h}");
    let kprobe_err = refused[0]["error"].as_str().unwrap();
    // nvidia.ko is absent here and kprobes are compiled out: either way the
    // error names the function that was to be probed.
    assert!(kprobe_err.contains("nvidia_unlocked_ioctl"), "{kprobe_err}");
    assert_eq!(t.named("cuCtxSetCurrent").count(), 3);
    t.cleanup();
}

#[test]
fn forced_kprobe_path_fails_clearly_where_kprobes_are_unavailable() {
    if !common::root_tests_enabled() {
        return;
    }
    let out = common::fresh_output("attach-kprobe");
    let mut child = common::tracer_cmd(
        &out,
        &["--ioctls", "--ioctl-path", "kprobe", "--kprobe-function", "do_vfs_ioctl"],
        &["loop", "1"],
    )
    .spawn()
    .unwrap();
    let status = common::wait_with_timeout(&mut child, Duration::from_secs(120), false, "tracer --ioctl-path kprobe");
    let stderr = std::fs::read_to_string(out.with_extension("stderr")).unwrap_or_default();
    if std::path::Path::new("/sys/bus/event_source/devices/kprobe/type").exists() {
        // A kernel with kprobes: the forced path works.
        assert_eq!(common::shell_code(&status), 0, "{stderr}");
    } else {
        assert_eq!(common::shell_code(&status), 1, "{stderr}");
        assert!(stderr.contains("kprobe on do_vfs_ioctl"), "{stderr}");
        assert_eq!(stderr.lines().filter(|l| l.starts_with("tracer:")).count(), 1, "one error line: {stderr}");
        assert!(!out.exists(), "a failed start leaves no output file behind");
    }
}
