//! Nothing tracer loads stays in the kernel after it exits, however it
//! exits, and a tracer killed with SIGKILL leaves a file whose complete
//! lines all parse. Programs are counted with the bpf syscall
//! (BPF_PROG_GET_NEXT_ID), before and after.
mod common;

use std::io::{BufRead, BufReader};
use std::process::ExitStatus;
use std::time::{Duration, Instant};

/// Ids of the BPF programs loaded in the kernel now.
fn bpf_programs() -> Vec<u32> {
    const BPF_PROG_GET_NEXT_ID: libc::c_long = 11;
    #[repr(C)]
    struct Attr {
        start_id: u32,
        next_id: u32,
        open_flags: u32,
        _pad: [u32; 29],
    }
    let mut ids = Vec::new();
    let mut attr = Attr { start_id: 0, next_id: 0, open_flags: 0, _pad: [0; 29] };
    loop {
        let r = unsafe {
            libc::syscall(libc::SYS_bpf, BPF_PROG_GET_NEXT_ID, &mut attr as *mut Attr, size_of::<Attr>() as u32)
        };
        if r != 0 {
            break;
        }
        ids.push(attr.next_id);
        attr.start_id = attr.next_id;
    }
    ids
}

/// Waits until the programs loaded are those of `before` (detaching is
/// asynchronous in parts of the kernel: allow a few seconds).
fn assert_back_to(before: &[u32], what: &str) {
    let t0 = Instant::now();
    loop {
        let now = bpf_programs();
        let extra: Vec<u32> = now.iter().copied().filter(|id| !before.contains(id)).collect();
        if extra.is_empty() {
            return;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(120),
            "{what}: hung: BPF programs {extra:?} still loaded 120 s after tracer exited"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn run(
    tag: &str,
    driver_args: &[&str],
    signal: Option<(i32, bool)>,
    before: &[u32],
) -> (ExitStatus, std::path::PathBuf) {
    let out = common::fresh_output(tag);
    let mut child = common::tracer_cmd(&out, &[], driver_args).spawn().expect("start tracer");
    if let Some((sig, _)) = signal {
        // Wait until the command is traced and making calls, then signal tracer.
        let n = common::wait_for_lines(&out, 5, Duration::from_secs(60));
        assert!(n >= 5, "{tag}: trace did not grow");
        let loaded = bpf_programs().into_iter().filter(|id| !before.contains(id)).count();
        assert!(loaded >= 4, "{tag}: tracer's programs are not loaded while it runs ({loaded} new)");
        unsafe { libc::kill(child.id() as i32, sig) };
    }
    let st = common::wait_with_timeout(&mut child, Duration::from_secs(120), false, tag);
    (st, out)
}

#[test]
fn programs_are_gone_after_every_kind_of_exit() {
    if !common::root_tests_enabled() {
        return;
    }
    let before = bpf_programs();
    let (st, _) = run("cleanup-normal", &["loop", "100"], None, &before);
    assert_eq!(common::shell_code(&st), 0);
    assert_back_to(&before, "normal exit");
    let (st, _) = run("cleanup-crash", &["crash"], None, &before);
    assert_eq!(common::shell_code(&st), 139);
    assert_back_to(&before, "command crashed");
    for (name, sig) in [("SIGINT", libc::SIGINT), ("SIGTERM", libc::SIGTERM), ("SIGHUP", libc::SIGHUP)] {
        let (_, out) = run(&format!("cleanup-{name}"), &["sleep_loop"], Some((sig, false)), &before);
        assert_back_to(&before, name);
        let last = std::fs::read_to_string(&out).unwrap().lines().last().unwrap_or_default().to_string();
        assert!(last.contains("\"type\":\"footer\""), "{name}: no footer, last line {last}");
    }
}

#[test]
fn sigkill_leaves_parseable_lines_and_nothing_loaded() {
    if !common::root_tests_enabled() {
        return;
    }
    let before = bpf_programs();
    let (st, out) = run("cleanup-sigkill", &["sleep_loop"], Some((libc::SIGKILL, false)), &before);
    assert_eq!(common::shell_code(&st), 137);
    // The traced command outlives a killed tracer: stop it.
    let f = std::fs::File::open(&out).unwrap();
    let mut complete = 0;
    let mut pid = None;
    let mut last_partial = false;
    for line in BufReader::new(f).split(b'\n') {
        let line = line.unwrap();
        match serde_json::from_slice::<serde_json::Value>(&line) {
            Ok(v) => {
                complete += 1;
                if v["type"] == "header" {
                    pid = v["pid"].as_i64();
                }
            }
            Err(_) => {
                assert!(!last_partial, "an unparseable line that is not the last one");
                last_partial = true;
            }
        }
    }
    if let Some(p) = pid {
        unsafe { libc::kill(p as i32, libc::SIGKILL) };
    }
    assert!(complete >= 5, "only {complete} complete lines");
    assert_back_to(&before, "SIGKILL of tracer");
}
