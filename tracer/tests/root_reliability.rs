//! Reliability under load and misuse, for real (root, eBPF), on the fake
//! libcuda: concurrent processes and threads, exec into non-CUDA and CUDA
//! programs, `-p` attach and detach, a full disk, other users' processes,
//! and the command-line errors that need root to be reached.
//!
//! Scenarios: tests/fakecuda/reliability.c. Run with `cargo xtask test`, or
//! `TRACER_ROOT_TESTS=1 cargo test -p tracer --test root_reliability -- --test-threads=1`.
mod common;
mod relia;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead as _, BufReader};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tracer_format::hex;

/// These tests count records and lines exactly: no on-CPU stack samples,
/// whose number depends on the time the threads ran.
const NO_SAMPLES: &[&str] = &["--stack-sample-hz", "0"];

/// `tracer -o OUT --libcuda LIB --stack-sample-hz 0`: the start of every tracer command here.
fn tracer_to(out: &Path, lib: &Path) -> Command {
    let mut c = Command::new(common::tracer_bin());
    c.arg("-o").arg(out).arg("--libcuda").arg(lib).args(NO_SAMPLES);
    c
}

/// `tracer -o OUT --libcuda FAKE [ARGS] -- reliability SCENARIO...`.
fn trace_reliability(tag: &str, tracer_args: &[&str], args: &[&str], limit: Duration) -> common::Traced {
    let out = common::fresh_output(tag);
    let f = common::fake();
    let mut c = tracer_to(&out, &f.lib);
    c.args(tracer_args).arg("--").arg(relia::program()).args(args);
    c.stdout(Stdio::from(std::fs::File::create(out.with_extension("stdout")).unwrap()));
    c.stderr(Stdio::from(std::fs::File::create(out.with_extension("stderr")).unwrap()));
    c.stdin(Stdio::null());
    let t0 = Instant::now();
    let mut child = c.spawn().expect("start tracer");
    let st = common::wait_with_timeout(&mut child, limit, false, tag);
    common::finish(out, st, t0.elapsed())
}

fn by_ts(lines: &[&Value]) -> Vec<Value> {
    let mut v: Vec<Value> = lines.iter().map(|l| (*l).clone()).collect();
    v.sort_by_key(|l| l["ts"].as_u64().unwrap_or(0));
    v
}

// ---------------------------------------------------------------------------
// (a) 4 processes x 8 threads
// ---------------------------------------------------------------------------

#[test]
fn four_processes_of_eight_threads_exact_calls_and_arguments() {
    if !common::root_tests_enabled() {
        return;
    }
    const P: u64 = 4;
    const T: u64 = 8;
    const N: u64 = 4000;
    let t = trace_reliability(
        "procs",
        &[],
        &["procs", &P.to_string(), &T.to_string(), &N.to_string()],
        Duration::from_secs(400),
    );
    let ctx = t.describe();
    assert_eq!(t.code(), 0, "{ctx}");
    assert_eq!(t.lost(), 0, "{ctx}");
    let parent = t.header()["pid"].as_u64().unwrap();
    let launches_per_thread = N.div_ceil(16);
    assert_eq!(t.footer()["calls"], json!(P * T * (N + launches_per_thread)), "{ctx}");

    // (p, t) from the arguments -> (pid, tid, calls of each kind in ts order)
    type Calls = (u64, u64, Vec<Value>, Vec<Value>);
    let mut threads: BTreeMap<(u64, u64), Calls> = BTreeMap::new();
    let calls: Vec<&Value> = t.calls().collect();
    for l in by_ts(&calls) {
        // Launches are probed entry-only by default: no `ret` on their lines.
        let ret_ok = common::succeeded_by_default(&l);
        assert!(l.get("incomplete").is_none() && l.get("entry_lost").is_none() && ret_ok, "{l}");
        let (pid, tid) = (l["pid"].as_u64().unwrap(), l["tid"].as_u64().unwrap());
        let v = match l["name"].as_str().unwrap() {
            "cuCtxSetCurrent" => hex::field(&l["args"], "ctx").unwrap(),
            "cuLaunchKernel" => hex::field(&l, "func").unwrap(),
            other => panic!("unexpected call {other}: {l}"),
        };
        let (p, th) = ((v >> 40) - 1, ((v >> 32) & 0xff) - 1);
        assert!(p < P && th < T, "argument {v:#x} decodes to process {p}, thread {th}: {l}");
        let e = threads.entry((p, th)).or_insert((pid, tid, Vec::new(), Vec::new()));
        assert_eq!((e.0, e.1), (pid, tid), "calls of process {p} thread {th} on two tasks");
        if l["name"] == "cuCtxSetCurrent" { e.2.push(l) } else { e.3.push(l) }
    }
    assert_eq!(threads.len() as u64, P * T, "threads seen: {:?}", threads.keys().collect::<Vec<_>>());
    let pids: BTreeSet<u64> = threads.values().map(|e| e.0).collect();
    let tids: BTreeSet<u64> = threads.values().map(|e| e.1).collect();
    assert_eq!(pids.len() as u64, P, "{pids:?}");
    assert_eq!(tids.len() as u64, P * T);
    assert!(!pids.contains(&parent), "calls on the parent");
    assert!(pids.iter().all(|p| !tids.contains(p)), "calls on a child's main thread");
    for (&(p, th), (pid, tid, sets, launches)) in &threads {
        let enc = |i: u64| ((p + 1) << 40) | ((th + 1) << 32) | i;
        assert_eq!(sets.len() as u64, N, "process {p} thread {th} ({pid}/{tid})");
        for (i, l) in sets.iter().enumerate() {
            assert_eq!(l["args"]["ctx"], hex::json(enc(i as u64)), "process {p} thread {th} call {i}");
        }
        assert_eq!(launches.len() as u64, launches_per_thread);
        for (k, l) in launches.iter().enumerate() {
            let i = 16 * k as u64;
            let want = json!({"func": hex::json(enc(i)), "grid": [p + 1, th + 1, i], "block": [128, 1, 1],
                              "shared_mem": i, "stream": hex::json(((p << 8) | th) + 1), "kernel": null});
            for (key, w) in want.as_object().unwrap() {
                assert_eq!(&l[key], w, "process {p} thread {th} launch {k}: {key} in {l}");
            }
        }
    }
    // The tree: parent forks 4 processes, each 8 threads.
    let procs: Vec<&Value> = t.process_lines().collect();
    for &pid in &pids {
        assert!(
            procs.iter().any(|l| l["op"] == "fork" && l["pid"] == json!(parent) && l["child"] == json!(pid)),
            "no fork line {parent} -> {pid}"
        );
        let forks = procs.iter().filter(|l| l["op"] == "fork" && l["pid"] == json!(pid)).count();
        assert_eq!(forks as u64, T, "threads created by {pid}");
        assert!(procs.iter().any(|l| l["op"] == "exit" && l["pid"] == json!(pid)), "no exit line for {pid}");
    }
    t.cleanup();
}

// ---------------------------------------------------------------------------
// (b) exec into a non-CUDA program and into a CUDA program
// ---------------------------------------------------------------------------

#[test]
fn exec_into_shell_and_into_cuda_program_forgets_handles() {
    if !common::root_tests_enabled() {
        return;
    }
    let t = trace_reliability("exec", &[], &["exec_chain"], Duration::from_secs(120));
    let ctx = t.describe();
    assert_eq!(t.code(), 0, "{ctx}");
    assert_eq!(t.lost(), 0, "{ctx}");
    let pid = t.header()["pid"].as_u64().unwrap();
    let procs: Vec<&Value> = t.process_lines().collect();
    let execs: Vec<&&Value> = procs.iter().filter(|l| l["op"] == "exec").collect();
    // The command's start (tracer execs it), its exec into itself, and the
    // child's exec into /bin/sh.
    let self_exec: Vec<&&&Value> = execs
        .iter()
        .filter(|l| l["pid"] == json!(pid) && l["filename"].as_str().is_some_and(|f| f.ends_with("/reliability")))
        .collect();
    assert_eq!(self_exec.len(), 2, "exec lines: {execs:?}");
    assert_eq!(execs.len(), 3, "exec lines: {execs:?}");
    let exec_ts = self_exec[1]["ts"].as_u64().unwrap();
    let fork = procs.iter().find(|l| l["op"] == "fork" && l["pid"] == json!(pid)).expect("fork line");
    let child = fork["child"].as_u64().unwrap();
    let sh: Vec<&&&Value> = execs.iter().filter(|l| l["pid"] == json!(child)).collect();
    assert_eq!(sh.len(), 1, "{execs:?}");
    assert_eq!(sh[0]["filename"], "/bin/sh");
    let sh_ts = sh[0]["ts"].as_u64().unwrap();
    assert!(procs.iter().any(|l| l["op"] == "exit" && l["pid"] == json!(child)), "no exit line for the shell");

    let calls: Vec<&Value> = t.calls().collect();
    let calls = by_ts(&calls);
    let summary: Vec<(u64, &str, bool)> = calls
        .iter()
        .map(|l| (l["pid"].as_u64().unwrap(), l["name"].as_str().unwrap(), l["ts"].as_u64().unwrap() > exec_ts))
        .collect();
    assert_eq!(
        summary,
        [
            (pid, "cuInit", false),
            (pid, "cuMemAlloc_v2", false),
            (pid, "cuMemcpy", false),
            (pid, "cuModuleGetFunction", false),
            (pid, "cuLaunchKernel", false),
            (child, "cuInit", false),
            (pid, "cuInit", true),
            (pid, "cuLaunchKernel", true),
            (pid, "cuMemcpy", true),
            (pid, "cuModuleGetFunction", true),
            (pid, "cuLaunchKernel", true),
        ],
        "{ctx}"
    );
    let c = |i: usize| &calls[i];
    assert_eq!(c(0)["args"]["Flags"], "0x21");
    assert_eq!(c(2)["direction"], "h2d", "before exec the allocation is known: {}", c(2));
    assert_eq!((c(3)["kernel"].clone(), c(3)["handle"].clone()), (json!("kernel_A"), json!("0x4008")));
    assert_eq!((c(4)["kernel"].clone(), c(4)["func"].clone()), (json!("kernel_A"), json!("0x4008")));
    assert_eq!(c(5)["args"]["Flags"], "0x22");
    assert!(c(5)["ts"].as_u64().unwrap() < sh_ts, "the shell child's call precedes its exec");
    assert_eq!(c(6)["args"]["Flags"], "0x23");
    // After exec: the old image's handle is not named after its old kernel,
    // its allocation no longer classifies copies, and a new lookup that
    // returns the same handle value names the new kernel.
    assert_eq!(
        (c(7)["kernel"].clone(), c(7)["func"].clone()),
        (Value::Null, json!("0x4008")),
        "stale handle: {}",
        c(7)
    );
    assert_eq!(c(8)["direction"], "default", "stale allocation range: {}", c(8));
    assert_eq!(c(9)["kernel"], "kernel_B");
    assert_eq!((c(10)["kernel"].clone(), c(10)["grid"].clone()), (json!("kernel_B"), json!([3, 1, 1])));
    t.cleanup();
}

// ---------------------------------------------------------------------------
// (c) -p: attach to a running process, detach, process unharmed
// ---------------------------------------------------------------------------

/// Runtime address of `symbol` of the fake libcuda in process `pid`.
fn symbol_address(pid: u32, symbol: &str) -> u64 {
    use object::{Object, ObjectSymbol};
    let lib = std::fs::canonicalize(&common::fake().lib).unwrap();
    let data = std::fs::read(&lib).unwrap();
    let file = object::File::parse(&*data).unwrap();
    let vaddr = file.dynamic_symbols().find(|s| s.name() == Ok(symbol)).expect("symbol").address();
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap();
    let base = maps
        .lines()
        .find_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() >= 6 && Path::new(f[5]) == lib && u64::from_str_radix(f[2], 16) == Ok(0))
                .then(|| u64::from_str_radix(f[0].split('-').next().unwrap(), 16).unwrap())
        })
        .unwrap_or_else(|| panic!("{} not mapped in {pid}:\n{maps}", lib.display()));
    base + vaddr
}

/// The first byte of the instruction at `addr` in `pid`, as the process sees it.
fn byte_at(pid: u32, addr: u64) -> u8 {
    use std::os::unix::fs::FileExt as _;
    let f = std::fs::File::open(format!("/proc/{pid}/mem")).unwrap();
    let mut b = [0u8; 1];
    f.read_exact_at(&mut b, addr).unwrap();
    b[0]
}

struct Paced {
    child: Child,
    out: BufReader<std::process::ChildStdout>,
}

impl Paced {
    fn start(cmd: &mut Command) -> Paced {
        let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::inherit()).stdin(Stdio::null()).spawn().unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        assert_eq!(line, "ready\n");
        Paced { child, out }
    }
    fn pid(&self) -> u32 {
        self.child.id()
    }
    fn alive(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }
    /// Stops it (SIGUSR1): (calls, errors, last ctx value), exit code.
    fn stop(mut self) -> (u64, u64, u64, i32) {
        unsafe { libc::kill(self.child.id() as i32, libc::SIGUSR1) };
        let mut line = String::new();
        self.out.read_line(&mut line).unwrap();
        let st = common::wait_with_timeout(&mut self.child, Duration::from_secs(60), false, "paced program");
        let field = |k: &str| -> u64 {
            let v =
                line.split_whitespace().find_map(|w| w.strip_prefix(k)).unwrap_or_else(|| panic!("{k} in {line:?}"));
            match v.strip_prefix("0x") {
                Some(h) => u64::from_str_radix(h, 16).unwrap(),
                None => v.parse().unwrap(),
            }
        };
        (field("calls="), field("errors="), field("last="), common::shell_code(&st))
    }
}

impl Drop for Paced {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn attach_with_p_records_only_the_window_and_detaches_cleanly() {
    if !common::root_tests_enabled() {
        return;
    }
    let mut paced = Paced::start(Command::new(relia::program()).arg("paced"));
    let pid = paced.pid();
    let set_addr = symbol_address(pid, "cuCtxSetCurrent");
    let get_addr = symbol_address(pid, "cuCtxGetCurrent");
    assert_eq!((byte_at(pid, set_addr), byte_at(pid, get_addr)), (0x55, 0x55), "push %rbp before attaching");
    std::thread::sleep(Duration::from_millis(300)); // calls before the attach

    let out = common::fresh_output("attach");
    let f = common::fake();
    let mut tracer = tracer_to(&out, &f.lib)
        .args(["-p", &pid.to_string()])
        .stdout(Stdio::from(std::fs::File::create(out.with_extension("stdout")).unwrap()))
        .stderr(Stdio::from(std::fs::File::create(out.with_extension("stderr")).unwrap()))
        .process_group(0)
        .spawn()
        .unwrap();
    let have = common::wait_for_lines(&out, 50, Duration::from_secs(60));
    assert!(have >= 50, "trace has {have} lines after 60 s");
    // While attached, the entry of each probed function is a breakpoint in
    // the process's copy of the page.
    // cuCtxGetCurrent is a per-launch state getter, not probed by default:
    // left alone.
    assert_eq!((byte_at(pid, set_addr), byte_at(pid, get_addr)), (0xcc, 0x55), "int3 while attached");
    std::thread::sleep(Duration::from_millis(700));
    unsafe { libc::kill(tracer.id() as i32, libc::SIGINT) };
    let st = common::wait_with_timeout(&mut tracer, Duration::from_secs(60), false, "tracer -p after SIGINT");
    let t = common::finish(out, st, Duration::ZERO);
    let ctx = t.describe();
    assert_eq!(t.code(), 0, "{ctx}");

    // Detached: the original instructions are back, the process runs on.
    assert_eq!((byte_at(pid, set_addr), byte_at(pid, get_addr)), (0x55, 0x55), "breakpoints removed after detach");
    assert!(paced.alive(), "the process died when tracer detached");
    std::thread::sleep(Duration::from_millis(300)); // calls after the detach
    let (calls, errors, last, code) = paced.stop();
    assert_eq!((errors, code), (0, 0), "the process saw wrong results (calls {calls})");
    assert_eq!(last, 0x1000 + calls - 1);

    assert_eq!(t.header()["attach_pid"], json!(pid));
    assert_eq!(t.lost(), 0, "{ctx}");
    let lines: Vec<&Value> = t.calls().collect();
    let lines = by_ts(&lines);
    assert!(lines.iter().all(|l| l["pid"] == json!(pid)), "{ctx}");
    // Complete calls: a contiguous run of iterations; at most the first call
    // is cut by the attach and the last by the detach.
    let complete: Vec<&Value> =
        lines.iter().filter(|l| l.get("incomplete").is_none() && l.get("entry_lost").is_none()).collect();
    assert!(lines.len() - complete.len() <= 2, "{} partial calls\n{ctx}", lines.len() - complete.len());
    let sets: Vec<u64> = complete
        .iter()
        .filter(|l| l["name"] == "cuCtxSetCurrent")
        .map(|l| hex::field(&l["args"], "ctx").unwrap())
        .collect();
    assert!(sets.len() >= 300, "{} iterations recorded in ~1 s at 1 per ms", sets.len());
    let (first, end) = (sets[0], *sets.last().unwrap());
    assert_eq!(sets, (first..=end).collect::<Vec<u64>>(), "a gap in the attach window");
    assert_eq!(complete.len(), sets.len(), "only cuCtxSetCurrent is probed");
    assert!(first > 0x1000 + 100, "calls made before the attach were recorded (first {first:#x})");
    assert!(
        end < last - 100,
        "calls made after the detach were recorded (last recorded {end:#x}, process last {last:#x})"
    );
    t.cleanup();
}

/// Polls until `f` holds (detaching is partly asynchronous in the kernel).
fn eventually(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let t0 = Instant::now();
    while t0.elapsed() < limit {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    f()
}

#[test]
fn sigkill_of_attached_tracer_leaves_the_process_unharmed() {
    if !common::root_tests_enabled() {
        return;
    }
    let mut paced = Paced::start(Command::new(relia::program()).arg("paced"));
    let pid = paced.pid();
    let set_addr = symbol_address(pid, "cuCtxSetCurrent");
    let out = common::fresh_output("attach-kill");
    let f = common::fake();
    let mut tracer = tracer_to(&out, &f.lib)
        .args(["-p", &pid.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap();
    let have = common::wait_for_lines(&out, 50, Duration::from_secs(60));
    assert!(have >= 50, "trace has {have} lines after 60 s");
    assert_eq!(byte_at(pid, set_addr), 0xcc, "int3 while attached");
    unsafe { libc::kill(tracer.id() as i32, libc::SIGKILL) };
    let st = common::wait_with_timeout(&mut tracer, Duration::from_secs(60), false, "tracer after SIGKILL");
    assert_eq!(common::shell_code(&st), 137);
    // The kernel drops the links with tracer's last fd: the breakpoints go.
    assert!(
        eventually(Duration::from_secs(60), || byte_at(pid, set_addr) == 0x55),
        "int3 left 60 s after SIGKILL of tracer"
    );
    assert!(paced.alive(), "the process died with tracer");
    std::thread::sleep(Duration::from_millis(200));
    let (calls, errors, _, code) = paced.stop();
    assert_eq!((errors, code), (0, 0), "the process saw wrong results (calls {calls})");
    // What tracer wrote: complete lines all parse; at most the last is partial.
    let text = std::fs::read(&out).unwrap();
    let mut lines: Vec<&[u8]> = text.split(|&b| b == b'\n').collect();
    let partial = lines.pop().unwrap_or_default();
    for l in &lines {
        serde_json::from_slice::<Value>(l).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(l)));
    }
    assert!(serde_json::from_slice::<Value>(partial).is_err() || partial.is_empty());
    assert!(lines.len() >= 50);
    let _ = std::fs::remove_file(&out);
}

// ---------------------------------------------------------------------------
// (d) disk full, end to end
// ---------------------------------------------------------------------------

/// A small tmpfs mounted on a fresh directory, unmounted on drop.
struct SmallFs(PathBuf);

impl SmallFs {
    fn mount(size: &str) -> SmallFs {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("smallfs-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let st = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size},mode=1777"), "tracer-test"])
            .arg(&dir)
            .status();
        assert!(matches!(st, Ok(s) if s.success()), "mount tmpfs: {st:?}");
        SmallFs(dir)
    }
}

impl Drop for SmallFs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
        let _ = std::fs::remove_dir(&self.0);
    }
}

#[test]
fn disk_full_stops_cleanly_keeps_complete_lines_and_says_so() {
    if !common::root_tests_enabled() {
        return;
    }
    let fs = SmallFs::mount("256k");
    let out = fs.0.join("full.jsonl");
    let f = common::fake();
    const N: u64 = 20_000;
    let o = tracer_to(&out, &f.lib)
        .arg("--")
        .arg(&f.driver)
        .args(["loop", &N.to_string()])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr).to_string();
    assert_eq!(o.status.code(), Some(1), "the command succeeded, the trace did not: exit 1\n{stderr}");
    // The summary still counts every call; the error says what happened.
    assert!(stderr.contains(&format!("{N} driver calls")), "{stderr}");
    let errs: Vec<&str> = stderr.lines().filter(|l| l.starts_with("tracer: writing")).collect();
    assert_eq!(errs.len(), 1, "{stderr}");
    let e = errs[0];
    let prefix = format!("tracer: writing {} failed (No space left on device (os error 28)): ", out.display());
    let counts = e.strip_prefix(&prefix).unwrap_or_else(|| panic!("{e}"));
    let nums: Vec<u64> = counts.split(|c: char| !c.is_ascii_digit()).filter_map(|w| w.parse().ok()).collect();
    assert_eq!(counts, format!("{} lines written are complete and valid, {} were not written", nums[0], nums[1]));
    let (written, dropped) = (nums[0], nums[1]);
    // The file holds exactly the lines reported, every one complete and
    // parseable, header first; the footer could not be written.
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(text.ends_with('\n'), "a partial last line was left");
    let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len() as u64, written);
    assert_eq!(lines[0]["type"], "header");
    assert!(lines.iter().all(|l| l["type"] != "footer"));
    assert!(written > 100 && dropped > 0, "{e}");
    // header + N calls + process lines + footer, split between the two counts.
    assert!(written + dropped >= N + 2, "{e}");
    let seq: Vec<u64> = lines
        .iter()
        .filter(|l| l["name"] == "cuCtxSetCurrent")
        .map(|l| hex::field(&l["args"], "ctx").unwrap())
        .collect();
    assert_eq!(seq, (0..seq.len() as u64).collect::<Vec<_>>(), "the calls on disk are the first ones, in order");
    // The reader takes the file as it is (no partial line to skip), and
    // says only that the footer is missing.
    let s = Command::new(common::tracer_bin()).arg("summary").arg(&out).output().unwrap();
    assert!(s.status.success(), "{}", String::from_utf8_lossy(&s.stderr));
    assert_eq!(
        String::from_utf8_lossy(&s.stderr),
        format!(
            "warning: {}: no footer: the recording did not end normally (tracer killed, or its disk full?); its loss counts are unknown\n",
            out.display()
        )
    );
    drop(fs);
}

// ---------------------------------------------------------------------------
// (e) processes of other users never appear
// ---------------------------------------------------------------------------

#[test]
fn other_users_process_on_the_same_library_never_appears() {
    if !common::root_tests_enabled() {
        return;
    }
    // The same program as uid/gid 65534, calling the same fake library
    // through the same uprobes all along.
    let mut cmd = Command::new("setpriv");
    cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups"]).arg(relia::program()).arg("paced");
    let paced = Paced::start(&mut cmd);
    let other = paced.pid();
    let status = std::fs::read_to_string(format!("/proc/{other}/status")).unwrap();
    assert!(status.lines().any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("65534")), "{status}");
    // --all-functions: cuCtxGetCurrent, which only the other process calls, is probed too.
    let t =
        trace_reliability("otheruser", &["--all-functions"], &["procs", "2", "2", "3000"], Duration::from_secs(300));
    let (calls, errors, _, code) = paced.stop();
    let ctx = t.describe();
    assert_eq!(t.code(), 0, "{ctx}");
    assert_eq!(t.lost(), 0, "{ctx}");
    assert_eq!((errors, code), (0, 0), "the other user's process saw wrong results");
    assert!(calls > 100);
    let foreign: Vec<&Value> = t.lines.iter().filter(|l| l["pid"] == json!(other)).collect();
    assert!(foreign.is_empty(), "lines of the other user's process {other}: {:?}", &foreign[..foreign.len().min(3)]);
    assert_eq!(t.named("cuCtxGetCurrent").count(), 0, "only the other user's process calls cuCtxGetCurrent");
    assert_eq!(t.named("cuCtxSetCurrent").count(), 2 * 2 * 3000);
    t.cleanup();
}

// ---------------------------------------------------------------------------
// (f) command-line errors past the privilege check: one line, exit 2
// ---------------------------------------------------------------------------

/// Runs tracer with `args` (through `wrap`, e.g. setpriv); returns (exit code, stderr).
fn tracer_err(wrap: &[&str], args: &[&std::ffi::OsStr]) -> (i32, String) {
    let mut c = match wrap.split_first() {
        Some((w, rest)) => {
            let mut c = Command::new(w);
            c.args(rest).arg(common::tracer_bin());
            c
        }
        None => Command::new(common::tracer_bin()),
    };
    let o = c.args(args).stdin(Stdio::null()).output().unwrap();
    (common::shell_code(&o.status), String::from_utf8_lossy(&o.stderr).into_owned())
}

#[test]
fn output_path_misuse_is_one_line_and_exit_2() {
    if !common::root_tests_enabled() {
        return;
    }
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("cli-out-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let os = |p: &Path| p.as_os_str().to_owned();
    let run = |wrap: &[&str], out: &Path, force: bool| {
        let mut a = vec![std::ffi::OsString::from("-o"), os(out)];
        if force {
            a.push("--force".into());
        }
        a.extend(["--".into(), "true".into()]);
        let refs: Vec<&std::ffi::OsStr> = a.iter().map(|s| s.as_os_str()).collect();
        tracer_err(wrap, &refs)
    };
    let one = |(code, err): (i32, String), want: String| {
        assert_eq!(code, 2, "{err}");
        assert_eq!(err, format!("tracer: {want}\n"));
    };

    // A directory that does not exist.
    let missing = dir.join("nope/t.jsonl");
    one(
        run(&[], &missing, false),
        format!("cannot create {}: directory {} does not exist", missing.display(), dir.join("nope").display()),
    );
    // A directory tracer may not write (root without CAP_DAC_OVERRIDE, as
    // in a hardened service): permission denied.
    let ro = dir.join("ro");
    std::fs::create_dir(&ro).unwrap();
    std::fs::set_permissions(&ro, std::os::unix::fs::PermissionsExt::from_mode(0o555)).unwrap();
    let wrap = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search"];
    one(
        run(&wrap, &ro.join("t.jsonl"), false),
        format!("cannot create {}: permission denied", ro.join("t.jsonl").display()),
    );
    assert!(!ro.join("t.jsonl").exists());
    // An existing file: refused without --force, untouched.
    let existing = dir.join("existing.jsonl");
    std::fs::write(&existing, "keep me\n").unwrap();
    one(run(&[], &existing, false), format!("output file {} exists (use --force to overwrite)", existing.display()));
    assert_eq!(std::fs::read_to_string(&existing).unwrap(), "keep me\n");
    // A symlink planted at the output path: refused, with or without --force; its target untouched.
    let target = dir.join("victim");
    std::fs::write(&target, "victim\n").unwrap();
    let link = dir.join("link.jsonl");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    for force in [false, true] {
        one(run(&[], &link, force), format!("{} is a symbolic link: refusing to follow it", link.display()));
    }
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "victim\n");
    // A dangling symlink: refused too (O_NOFOLLOW would otherwise create its target).
    let dangling = dir.join("dangling.jsonl");
    std::os::unix::fs::symlink(dir.join("created-through-link"), &dangling).unwrap();
    one(run(&[], &dangling, false), format!("{} is a symbolic link: refusing to follow it", dangling.display()));
    assert!(!dir.join("created-through-link").exists());
    // A directory as output.
    one(run(&[], &dir, true), format!("cannot create {}: it is a directory", dir.display()));
    std::fs::set_permissions(&ro, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}

// ---------------------------------------------------------------------------
// Privileges: checked at start; the command runs as the invoking user
// ---------------------------------------------------------------------------

#[test]
fn missing_privileges_are_named_and_the_command_runs_as_the_sudo_user() {
    if !common::root_tests_enabled() {
        return;
    }
    let out = common::fresh_output("privileges");
    let args = |extra: &[&str]| -> Vec<std::ffi::OsString> {
        let mut v = vec!["-o".into(), out.clone().into_os_string()];
        v.extend(extra.iter().map(|s| s.into()));
        v
    };
    let run = |wrap: &[&str], a: Vec<std::ffi::OsString>| {
        let refs: Vec<&std::ffi::OsStr> = a.iter().map(|s| s.as_os_str()).collect();
        tracer_err(wrap, &refs)
    };
    // An ordinary user: both capabilities named, exit 1, no file left.
    let (code, err) = run(&["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"], args(&["--", "true"]));
    assert_eq!(code, 1, "{err}");
    assert_eq!(
        err,
        "tracer: tracer needs root (or CAP_BPF and CAP_PERFMON); missing CAP_BPF and CAP_PERFMON: run it with sudo\n"
    );
    // Root without CAP_BPF (and CAP_SYS_ADMIN, which would stand in for it).
    let (code, err) = run(&["setpriv", "--bounding-set", "-bpf,-sys_admin"], args(&["--", "true"]));
    assert_eq!(code, 1, "{err}");
    assert_eq!(err, "tracer: tracer needs root (or CAP_BPF and CAP_PERFMON); missing CAP_BPF: run it with sudo\n");
    assert!(!out.exists(), "a refused start leaves no file");

    // Under sudo: the command gets the invoking user's ids, the trace is theirs.
    let f = common::fake();
    let o = tracer_to(&out, &f.lib)
        .args(["-q", "--", "sh", "-c", "id -u; id -g; id -G"])
        .env("SUDO_UID", "65534")
        .env("SUDO_GID", "65534")
        .env("SUDO_USER", "nobody")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let ids = String::from_utf8_lossy(&o.stdout).to_string();
    let mut want_groups: Vec<String> = vec!["65534".into()];
    // nobody's supplementary groups, if the system gives it any.
    for l in std::fs::read_to_string("/etc/group").unwrap_or_default().lines() {
        let fields: Vec<&str> = l.split(':').collect();
        if fields.len() == 4 && fields[3].split(',').any(|u| u == "nobody") && fields[2] != "65534" {
            want_groups.push(fields[2].into());
        }
    }
    let got: Vec<&str> = ids.lines().collect();
    assert_eq!(&got[..2], ["65534", "65534"], "{ids}");
    let mut g: Vec<&str> = got[2].split_whitespace().collect();
    g.sort();
    want_groups.sort();
    assert_eq!(g, want_groups, "{ids}");
    use std::os::unix::fs::MetadataExt as _;
    let md = std::fs::metadata(&out).unwrap();
    assert_eq!((md.uid(), md.gid()), (65534, 65534));
    assert_eq!(md.mode() & 0o7022, 0, "mode {:o}: not writable by others", md.mode());
    std::fs::remove_file(&out).unwrap();
    // --as-root keeps root for the command (the file still goes to the user).
    let o = tracer_to(&out, &f.lib)
        .args(["-q", "--as-root", "--", "id", "-u"])
        .env("SUDO_UID", "65534")
        .env("SUDO_GID", "65534")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(String::from_utf8_lossy(&o.stdout), "0\n");
    let _ = std::fs::remove_file(&out);
}

#[test]
fn private_output_is_mode_0600_also_when_overwritten() {
    if !common::root_tests_enabled() {
        return;
    }
    use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
    let out = common::fresh_output("private");
    std::fs::write(&out, "old\n").unwrap();
    std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o644)).unwrap();
    let f = common::fake();
    let o = tracer_to(&out, &f.lib)
        .args(["-q", "--force", "--private", "--", "true"])
        .env("SUDO_UID", "65534")
        .env("SUDO_GID", "65534")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let md = std::fs::metadata(&out).unwrap();
    assert_eq!((md.mode() & 0o7777, md.uid(), md.gid()), (0o600, 65534, 65534));
    assert!(common::read_trace(&out).is_ok());
    // A device given with --force is neither chmod-ed nor chown-ed.
    let null = std::fs::metadata("/dev/null").unwrap();
    let o = Command::new(common::tracer_bin())
        .args(["-o", "/dev/null", "--libcuda"])
        .arg(&f.lib)
        .args(["-q", "--force", "--private", "--", "true"])
        .env("SUDO_UID", "65534")
        .env("SUDO_GID", "65534")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let after = std::fs::metadata("/dev/null").unwrap();
    assert_eq!((after.mode(), after.uid()), (null.mode(), null.uid()));
    let _ = std::fs::remove_file(&out);
}

// ---------------------------------------------------------------------------
// Loss is never silent, and the sequence numbers show where it happened
// ---------------------------------------------------------------------------

/// The paced program's iteration count, read from the file it keeps it in
/// (`RELIABILITY_PROGRESS`), mapped shared: it goes on counting while the
/// collector is stopped.
struct Progress {
    path: PathBuf,
    map: *const u64,
}

impl Progress {
    fn new(path: PathBuf) -> Progress {
        use std::os::fd::AsRawFd as _;
        std::fs::write(&path, [0u8; 8]).unwrap();
        let f = std::fs::File::open(&path).unwrap();
        // SAFETY: maps 8 bytes of our file read-only; unmapped in drop.
        let m = unsafe { libc::mmap(std::ptr::null_mut(), 8, libc::PROT_READ, libc::MAP_SHARED, f.as_raw_fd(), 0) };
        assert_ne!(m, libc::MAP_FAILED, "mmap {}", path.display());
        Progress { path, map: m.cast() }
    }
    fn iterations(&self) -> u64 {
        // SAFETY: an aligned u64 in a live shared mapping (one load, never torn).
        unsafe { std::ptr::read_volatile(self.map) }
    }
    /// Waits until `iterations() >= n`; false after `limit` (hung).
    fn wait_for(&self, n: u64, limit: Duration) -> bool {
        eventually(limit, || self.iterations() >= n)
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        // SAFETY: the mapping made in new.
        unsafe { libc::munmap(self.map as *mut libc::c_void, 8) };
        let _ = std::fs::remove_file(&self.path);
    }
}

/// `tracer --buffer-size 1 ARGS -- taskset -c 0 reliability paced` (a 1 MiB ring, the command
/// on CPU 0 only), its collector stopped (SIGSTOP) while the command makes `iterations`
/// iterations (its own count, read from the file it keeps it in), then continued until a call
/// made `after` iterations after the resume is in the file, then SIGINT (forwarded: the
/// command ends). Each wait is at most `limit`. The finished trace, and the command's
/// iterations at the resume.
fn paced_with_the_collector_stopped(
    tag: &str,
    tracer_args: &[&str],
    iterations: u64,
    after: u64,
    limit: Duration,
) -> (common::Traced, u64) {
    let out = common::fresh_output(tag);
    let progress = Progress::new(out.with_extension("progress"));
    let f = common::fake();
    let mut tracer = tracer_to(&out, &f.lib)
        .args(["--buffer-size", "1"])
        .args(tracer_args)
        .args(["--", "taskset", "-c", "0"])
        .arg(relia::program())
        .arg("paced")
        .env("RELIABILITY_PROGRESS", &progress.path)
        .stdout(Stdio::null())
        .stderr(Stdio::from(std::fs::File::create(out.with_extension("stderr")).unwrap()))
        .process_group(0)
        .spawn()
        .unwrap();
    let have = common::wait_for_lines(&out, 20, Duration::from_secs(60));
    assert!(have >= 20);
    let pid = tracer.id() as i32;
    unsafe { libc::kill(pid, libc::SIGSTOP) };
    let stopped_at = progress.iterations();
    let made = progress.wait_for(stopped_at + iterations, limit);
    unsafe { libc::kill(pid, libc::SIGCONT) };
    assert!(
        made,
        "hung: the command made {} of {iterations} iterations in {limit:?}",
        progress.iterations() - stopped_at
    );
    let resumed_at = progress.iterations();
    let caught_up = eventually(limit, || recorded_iteration(&out, resumed_at + after));
    unsafe { libc::kill(pid, libc::SIGINT) };
    assert!(caught_up, "hung: no record of iteration {} in {limit:?} after the resume", resumed_at + after);
    let st = common::wait_with_timeout(&mut tracer, Duration::from_secs(60), false, "tracer after SIGINT");
    (common::finish(out, st, Duration::ZERO), resumed_at)
}

/// Whether `out` holds a cuCtxSetCurrent line of paced iteration `i` or a
/// later one (its `ctx` argument is `0x1000 + i`).
fn recorded_iteration(out: &Path, i: u64) -> bool {
    let Ok(text) = std::fs::read_to_string(out) else { return false };
    text.lines()
        .filter(|l| l.contains("cuCtxSetCurrent"))
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .any(|l| l["name"] == "cuCtxSetCurrent" && hex::field(&l["args"], "ctx").is_some_and(|ctx| ctx >= 0x1000 + i))
}

#[test]
fn forced_loss_is_counted_exactly_and_located_by_sequence_numbers() {
    if !common::root_tests_enabled() {
        return;
    }
    // A 1 MiB ring buffer and a collector stopped (SIGSTOP) while the
    // command makes 6,000 iterations (its own count, read from the file it
    // keeps it in): 12,000 calls, each at least a 128-byte entry record, so
    // 1.5 MB for a 1 MiB ring and over 1,000 records lost for certain,
    // however slowly the loaded machine lets the command run. The command
    // runs on CPU 0 only, and goes on until a call made 1,000 iterations
    // after the collector resumed is in the file, so every loss lies
    // between records received on that CPU: each one is a hole in the
    // numbering.
    let (t, _) = paced_with_the_collector_stopped(
        "loss",
        // The calls' records, each in the file with its (cpu, seq): scheduler records
        // become off-CPU intervals, not one line each.
        &["--no-sched"],
        6000,
        1000,
        Duration::from_secs(180),
    );
    let ctx = t.describe();
    assert_eq!(t.code(), 130, "{ctx}");
    let footer = t.footer().clone();
    let lost = footer["lost"]["total"].as_u64().unwrap();
    assert!(lost > 1000, "expected records lost while tracer was stopped: {footer}");
    assert_eq!(footer["lost"]["ring_buffer_full"], json!(lost), "every loss is a full ring here: {footer}");
    assert_eq!(footer["records_attempted"].as_u64().unwrap(), footer["records"].as_u64().unwrap() + lost);
    // The summary says so, with the remedy.
    assert!(
        t.stderr.contains(&format!("lost (ring buffer full: {lost})  ← increase --buffer-size")),
        "summary: {}",
        t.stderr
    );
    // Every received record is in the file with its (cpu, seq); the holes in
    // each CPU's numbering are the lost records.
    let mut seqs: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    for l in &t.lines {
        for (c, s) in [("cpu", "seq"), ("exit_cpu", "exit_seq")] {
            if let (Some(c), Some(s)) = (l[c].as_u64(), l[s].as_u64()) {
                seqs.entry(c).or_default().push(s);
            }
        }
    }
    let received: usize = seqs.values().map(Vec::len).sum();
    assert_eq!(received as u64, footer["records"].as_u64().unwrap(), "records in the file vs footer.records");
    let mut holes_total = 0;
    for (cpu, v) in &mut seqs {
        v.sort_unstable();
        let before = v.len();
        v.dedup();
        assert_eq!(v.len(), before, "a sequence number twice on cpu {cpu}");
        let holes = v.last().unwrap() + 1 - v.len() as u64;
        let by_cpu = footer["lost"]["by_cpu"][cpu.to_string()].as_u64().unwrap_or(0);
        assert_eq!(holes, by_cpu, "cpu {cpu}: holes in the sequence numbers vs footer lost.by_cpu: {footer}");
        holes_total += holes;
    }
    assert_eq!(holes_total, lost);
    // Calls cut by the loss are marked, never silently merged.
    let marked = t.calls().filter(|l| l["incomplete"] == true || l["entry_lost"] == true).count();
    assert_eq!(
        marked as u64,
        footer["incomplete_calls"].as_u64().unwrap() + footer["entry_lost_calls"].as_u64().unwrap()
    );
    t.cleanup();
}

#[test]
fn a_collector_behind_sheds_switch_out_stacks_and_loses_no_call() {
    if !common::root_tests_enabled() {
        return;
    }
    // A 1 MiB ring buffer and a collector stopped (SIGSTOP) while the command makes 1,000
    // iterations, each a call and a sleep (a switch-out, whose stack takes some 1.6 KB: 1.6 MB
    // in all, more than the ring). The calls and scheduler records of those iterations take
    // some 0.5 MB: once a quarter of the ring is unread the switch-out stacks are shed (tracer-ebpf
    // stack.rs), so every call of the iterations is recorded and nothing is lost.
    let (t, resumed_at) = paced_with_the_collector_stopped("shed", &[], 1000, 100, Duration::from_secs(120));
    let ctx = t.describe();
    let footer = t.footer().clone();
    assert_eq!(footer["lost"]["total"], 0, "{ctx}");
    let shed = footer["stack_sampling"]["shed_under_load"]["switch_outs"].as_u64().unwrap();
    assert!(shed > 0, "no switch-out stack shed: {}", footer["stack_sampling"]);
    assert_eq!(
        footer["stack_sampling"]["shed_under_load"]["samples"], 0,
        "no samples taken: {}",
        footer["stack_sampling"]
    );
    // the summary says so
    assert!(
        t.stderr.contains(&format!("not taken while tracer was behind: {shed} at switch-outs, 0 samples")),
        "summary: {}",
        t.stderr
    );
    // every iteration's call, once, in order: cuCtxSetCurrent(0x1000 + i)
    let ctxs: Vec<u64> =
        t.calls().filter(|l| l["name"] == "cuCtxSetCurrent").filter_map(|l| hex::field(&l["args"], "ctx")).collect();
    let n = ctxs.len() as u64;
    assert!(n >= resumed_at, "{n} calls for {resumed_at} iterations");
    assert_eq!(ctxs, (0..n).map(|i| 0x1000 + i).collect::<Vec<_>>(), "the calls, each once");
    // each switch-out of the command's thread has its stack or was shed: the stacks taken and
    // shed add up to the off-CPU intervals that began with a switch-out of that thread
    let taken = footer["stacks"]["by_site"]["switch_out"].as_u64().unwrap();
    assert!(taken > 0 && taken + shed >= 1000, "taken {taken}, shed {shed}");
    t.cleanup();
}
