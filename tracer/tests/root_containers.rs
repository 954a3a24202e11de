//! Containers and whole machines (docs/containers.md): a libcuda that only
//! exists in the command's own mount namespace is probed without --libcuda;
//! two processes with two different libcuda files are both traced;
//! `--cgroup` records the processes of one cgroup v2 and nothing else;
//! `--system` picks up a process started after tracer.
mod common;

use std::fs;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

const LIMIT: Duration = Duration::from_secs(120);

/// `tracer -o OUT TRACER_ARGS [-- CMD...]` without --libcuda (stdout and
/// stderr to files next to OUT).
fn tracer(out: &Path, tracer_args: &[&str], cmd: &[&str]) -> Command {
    let mut c = Command::new(common::tracer_bin());
    c.arg("-o").arg(out).args(tracer_args);
    if !cmd.is_empty() {
        c.arg("--").args(cmd);
    }
    c.stdout(Stdio::from(fs::File::create(out.with_extension("stdout")).unwrap()));
    c.stderr(Stdio::from(fs::File::create(out.with_extension("stderr")).unwrap()));
    c.stdin(Stdio::null());
    c
}

fn run(tag: &str, tracer_args: &[&str], cmd: &[&str]) -> common::Traced {
    let out = common::fresh_output(tag);
    let t0 = std::time::Instant::now();
    let mut child = tracer(&out, tracer_args, cmd).spawn().expect("starting tracer");
    let st = common::wait_with_timeout(&mut child, LIMIT, false, tag);
    common::finish(out, st, t0.elapsed())
}

/// A shell script that plays a container: in a private mount namespace
/// (`unshare -m`), a tmpfs gets copies of the fake libcuda and the driver
/// and is bind-mounted over the fake's directory, so the driver's rpath
/// finds a libcuda that exists in no other mount namespace. `$1`: a scratch
/// directory for the tmpfs; the rest: the driver's arguments. Prints the
/// driver's pid first.
fn container_script() -> PathBuf {
    let f = common::fake();
    let script = f.dir.join("container.sh");
    let text = format!(
        "#!/bin/sh\nset -e\nmnt=\"$1\"; shift\nmount -t tmpfs none \"$mnt\"\ncp {lib} {drv} \"$mnt\"/\nmount --bind \"$mnt\" {dir}\necho \"pid $$\"\nexec {drv} \"$@\"\n",
        lib = f.lib.display(),
        drv = f.driver.display(),
        dir = f.dir.display()
    );
    fs::write(&script, text).unwrap();
    let _ = Command::new("chmod").arg("755").arg(&script).status();
    script
}

fn scratch_dir(tag: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("ctr-{tag}-{}", std::process::id()));
    fs::create_dir_all(&d).unwrap();
    d
}

/// The pids the container scripts printed ("pid N"), in order.
fn printed_pids(t: &common::Traced) -> Vec<u64> {
    t.stdout.lines().filter_map(|l| l.strip_prefix("pid ")?.trim().parse().ok()).collect()
}

fn count(t: &common::Traced, name: &str, pid: u64) -> usize {
    t.named(name).filter(|l| l["pid"] == pid).count()
}

/// Runs `sh -c SH` (two drivers in their own mount namespaces, `loop 3` and
/// `loop 4`): it exits 0, both printed their pid, and the trace has 3 and 4
/// cuCtxSetCurrent calls of theirs (in either order). Returns the trace and
/// the pids.
fn run_two_drivers(tag: &str, sh: &str) -> (common::Traced, Vec<u64>) {
    let t = run(tag, &[], &["sh", "-c", sh]);
    assert_eq!(t.code(), 0, "{}", t.describe());
    let pids = printed_pids(&t);
    assert_eq!(pids.len(), 2, "{}", t.describe());
    let mut counts: Vec<usize> = pids.iter().map(|&p| count(&t, "cuCtxSetCurrent", p)).collect();
    counts.sort();
    assert_eq!(counts, [3, 4], "{}", t.describe());
    (t, pids)
}

/// The footer's probed libcuda files that the open watch found.
fn opened(t: &common::Traced) -> Vec<Value> {
    let f = t.footer();
    f["libcuda_files"]["probed"]
        .as_array()
        .unwrap_or_else(|| panic!("footer has no libcuda_files.probed: {f}"))
        .iter()
        .filter(|p| p["found"] == "opened")
        .cloned()
        .collect()
}

#[test]
fn libcuda_only_in_the_commands_mount_namespace_is_probed_without_libcuda_option() {
    if !common::root_tests_enabled() {
        return;
    }
    let f = common::fake();
    let script = container_script();
    let mnt = scratch_dir("one");
    let (s, m) = (script.to_str().unwrap(), mnt.to_str().unwrap());
    let t = run("ctr-one", &[], &["unshare", "-m", s, m, "all"]);
    assert_eq!(t.code(), 0, "{}", t.describe());
    let pid = printed_pids(&t)[0];
    // The driver's every kernel launch, in order (its `all` scenario).
    let launches: Vec<(&str, &str)> = t
        .calls()
        .filter(|l| l["type"] == "kernel" && l["op"] == "launch")
        .map(|l| (l["name"].as_str().unwrap(), l["kernel"].as_str().unwrap_or("?")))
        .collect();
    assert_eq!(
        launches,
        [
            ("cuLaunchKernel", "my_kernel"),
            ("cuLaunchKernel", "other_kernel"),
            ("cuLaunchKernel_ptsz", "my_kernel"),
            ("cuLaunchKernelEx", "my_kernel"),
            ("cuLaunchKernelEx_ptsz", "other_kernel"),
            ("cuLaunchCooperativeKernel", "my_kernel"),
        ],
        "{}",
        t.describe()
    );
    assert!(t.calls().all(|l| l["pid"] == pid), "{}", t.describe());
    assert_eq!(t.named("cuInit").count(), 1, "{}", t.describe());
    assert_eq!(t.lost(), 0);
    // One file, the tmpfs copy: the path the process saw, another inode than
    // the fake in tracer's namespace.
    let files = opened(&t);
    assert_eq!(files.len(), 1, "{:?}", t.footer()["libcuda_files"]);
    assert_eq!(files[0]["path"], f.lib.to_str().unwrap());
    assert_eq!(files[0]["pid"], pid);
    let host = fs::metadata(&f.lib).unwrap();
    assert_ne!((files[0]["dev"].as_u64(), files[0]["inode"].as_u64()), (Some(host.dev()), Some(host.ino())));
    assert_eq!(t.footer()["libcuda_files"]["processes_continued"], 1);
    assert_eq!(t.header()["selection"]["mode"], "command");
    t.cleanup();
}

#[test]
fn two_processes_with_two_libcuda_files_are_both_traced() {
    if !common::root_tests_enabled() {
        return;
    }
    let script = container_script();
    let (a, b) = (scratch_dir("a"), scratch_dir("b"));
    let sh = format!(
        "unshare -m {s} {a} loop 3 & unshare -m {s} {b} loop 4 & wait",
        s = script.display(),
        a = a.display(),
        b = b.display()
    );
    let (t, pids) = run_two_drivers("ctr-two", &sh);
    assert_eq!(t.named("cuCtxSetCurrent").count(), 7);
    let files = opened(&t);
    assert_eq!(files.len(), 2, "{:?}", t.footer()["libcuda_files"]);
    let ids: Vec<(u64, u64)> =
        files.iter().map(|f| (f["dev"].as_u64().unwrap(), f["inode"].as_u64().unwrap())).collect();
    assert_ne!(ids[0], ids[1]);
    let mut by: Vec<u64> = files.iter().map(|f| f["pid"].as_u64().unwrap()).collect();
    by.sort();
    let mut want = pids.clone();
    want.sort();
    assert_eq!(by, want);
    t.cleanup();
}

#[test]
fn two_containers_of_one_image_layer_are_probed_once() {
    if !common::root_tests_enabled() {
        return;
    }
    let f = common::fake();
    // The "image": one lower layer with the fake libcuda and the driver; each
    // "container" mounts its own overlay of it (its own device number) over
    // the fake's directory in a private mount namespace.
    let base = scratch_dir("overlay");
    let lower = base.join("lower");
    fs::create_dir_all(&lower).unwrap();
    fs::copy(&f.lib, lower.join("libcuda.so.1")).unwrap();
    fs::copy(&f.driver, lower.join("driver")).unwrap();
    for n in ["1", "2"] {
        for d in ["u", "w", "m"] {
            let p = base.join(format!("{d}{n}"));
            let _ = fs::remove_dir_all(&p);
            fs::create_dir_all(p).unwrap();
        }
    }
    let script = base.join("overlay.sh");
    fs::write(
        &script,
        format!(
            "#!/bin/sh\nset -e\nn=$1; shift\nb={b}\nmount -t overlay overlay -o lowerdir=$b/lower,upperdir=$b/u$n,workdir=$b/w$n $b/m$n\nmount --bind $b/m$n {dir}\necho \"pid $$\"\nexec {drv} \"$@\"\n",
            b = base.display(),
            dir = f.dir.display(),
            drv = f.driver.display()
        ),
    )
    .unwrap();
    let _ = Command::new("chmod").arg("755").arg(&script).status();
    let sh = format!("unshare -m {s} 1 loop 3 & unshare -m {s} 2 loop 4 & wait", s = script.display());
    // Probed twice, every call would be recorded twice.
    let (t, _) = run_two_drivers("ctr-overlay", &sh);
    let files = opened(&t);
    assert_eq!(files.len(), 1, "{:?}", t.footer()["libcuda_files"]);
    let layer = fs::metadata(lower.join("libcuda.so.1")).unwrap();
    assert_eq!((files[0]["dev"].as_u64(), files[0]["inode"].as_u64()), (Some(layer.dev()), Some(layer.ino())));
    t.cleanup();
}

#[test]
fn cgroup_records_only_the_processes_inside() {
    if !common::root_tests_enabled() {
        return;
    }
    let f = common::fake();
    let cg = common::cgroups::TestCgroup::create("tracer-test");
    let (name, id) = (cg.name.clone(), cg.id());
    let drv = f.driver.display();
    // Inside: moves itself into the cgroup, then runs the driver (fork: a
    // child and an exec'd grandchild call too). Outside: the same driver.
    let sh = format!(
        "sh -c 'echo $$ > {procs}; echo \"pid $$\"; exec {drv} loop 7' & {drv} loop 3; wait",
        procs = cg.procs().display()
    );
    let t = run("cgroup", &["--libcuda", f.lib.to_str().unwrap(), "--cgroup", &cg.arg()], &["sh", "-c", &sh]);
    drop(cg);
    assert_eq!(t.code(), 0, "{}", t.describe());
    let inside = printed_pids(&t)[0];
    assert_eq!(count(&t, "cuCtxSetCurrent", inside), 7, "{}", t.describe());
    // Nothing of the outside process (nor of the shell) is recorded.
    let body = &t.lines[1..t.lines.len() - 1];
    assert_eq!(body.iter().filter(|l| l["pid"] != inside).count(), 0, "{}", t.describe());
    // Its calls and its exit, nothing else (besides its scheduling lines: a
    // preemption while the machine is busy, checked above to be its own; and
    // the stacks its lines refer to).
    assert_eq!(
        body.iter().filter(|l| !matches!(l["type"].as_str(), Some("sched" | "stack" | "sample"))).count(),
        8,
        "{}",
        t.describe()
    );
    assert!(t.calls().all(|l| l["cgroup"] == id), "every line carries the cgroup id {id}: {}", t.describe());
    let h = &t.header()["selection"];
    assert_eq!((h["mode"].as_str(), h["cgroup"].as_u64(), h["level"].as_u64()), (Some("cgroup"), Some(id), Some(1)));
    assert_eq!(h["path"], format!("/{name}"));
    let cg = &t.footer()["cgroups"];
    assert_eq!(cg, &serde_json::json!({ id.to_string(): { "path": format!("/{name}") } }));
    t.cleanup();
}

#[test]
fn cgroup_errors_are_one_line() {
    if !common::root_tests_enabled() {
        return;
    }
    let out = common::fresh_output("cgroup-missing");
    let st = tracer(&out, &["--cgroup", "/no-such-cgroup-here"], &["true"]).status().unwrap();
    let err = fs::read_to_string(out.with_extension("stderr")).unwrap();
    assert_eq!(st.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("tracer: --cgroup /no-such-cgroup-here: no such cgroup ("), "{err}");
    assert!(!out.exists(), "no trace file is left behind");
}

#[test]
fn system_picks_up_a_process_started_after_tracer() {
    if !common::root_tests_enabled() {
        return;
    }
    let f = common::fake();
    let out = common::fresh_output("system");
    // No --libcuda: the driver's libcuda is probed when it opens it.
    let mut tr = tracer(&out, &["--system"], &[]).spawn().unwrap();
    let have = common::wait_for_lines(&out, 1, Duration::from_secs(60));
    assert_eq!(have, 1, "tracer --system did not write its header");
    let mut drv = Command::new(&f.driver).args(["loop", "6"]).stdout(Stdio::null()).spawn().unwrap();
    let pid = u64::from(drv.id());
    assert!(drv.wait().unwrap().success());
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: plain syscall on our child.
    unsafe { libc::kill(tr.id() as i32, libc::SIGINT) };
    let st = common::wait_with_timeout(&mut tr, LIMIT, false, "tracer --system after SIGINT");
    let t = common::finish(out, st, Duration::ZERO);
    assert_eq!(t.code(), 0, "{}", t.describe());
    assert_eq!(t.header()["selection"]["mode"], "system");
    assert_eq!(t.header()["pid"], 0);
    // Other processes of the machine may use a libcuda too: the driver's
    // lines are those of its pid.
    assert_eq!(count(&t, "cuCtxSetCurrent", pid), 6, "{}", t.describe());
    let cg = fs::read_to_string(format!("/proc/{}/cgroup", std::process::id())).unwrap();
    let path = cg.lines().find_map(|l| l.strip_prefix("0::")).unwrap().to_string();
    let id = fs::metadata(common::cgroups::cgroup2_root().join(path.trim_start_matches('/'))).unwrap().ino();
    // The driver ran in the test's cgroup.
    assert!(t.calls().filter(|l| l["pid"] == pid).all(|l| l["cgroup"] == id), "{}", t.describe());
    assert_eq!(t.footer()["cgroups"][id.to_string()]["path"], path.as_str());
    let files = opened(&t);
    assert!(
        files.iter().any(|p| p["path"] == f.lib.to_str().unwrap() && p["pid"] == pid),
        "{:?}",
        t.footer()["libcuda_files"]
    );
    t.cleanup();
}
