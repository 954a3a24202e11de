//! Shared helpers for tracer's integration tests: building the fake libcuda
//! and its driver program (tests/fakecuda/), running tracer on them and
//! reading the JSONL trace back.
#![allow(dead_code, reason = "shared by several test binaries, each uses part")]

use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;

pub mod cgroups;
pub mod replayable;

/// The root-only tests run when this is "1" (`cargo xtask test` sets it).
pub const ROOT_TESTS_VAR: &str = "TRACER_ROOT_TESTS";

/// Whether a root-only test should run. Unset: prints why and returns false.
/// Set but not root: panics, since the test cannot do what it was asked to.
pub fn root_tests_enabled() -> bool {
    if std::env::var(ROOT_TESTS_VAR).as_deref() != Ok("1") {
        println!("skipped: set {ROOT_TESTS_VAR}=1 and run as root");
        return false;
    }
    // SAFETY: geteuid has no preconditions.
    let euid = unsafe { libc::geteuid() };
    assert_eq!(
        euid, 0,
        "{ROOT_TESTS_VAR}=1 but these tests run as uid {euid}: tracer needs root; \
         run them as root (sudo -E cargo xtask test)"
    );
    ensure_tracefs();
    true
}

/// Mounts tracefs if it is not mounted (the sched tracepoints need it).
fn ensure_tracefs() {
    static DONE: OnceLock<()> = OnceLock::new();
    DONE.get_or_init(|| {
        let mounts = fs::read_to_string("/proc/self/mounts").unwrap_or_default();
        if !mounts.lines().any(|l| l.split_whitespace().nth(1) == Some("/sys/kernel/tracing")) {
            let st = Command::new("mount").args(["-t", "tracefs", "nodev", "/sys/kernel/tracing"]).status();
            assert!(
                matches!(st, Ok(s) if s.success()),
                "tracefs is not mounted at /sys/kernel/tracing and mounting it failed: {st:?}"
            );
        }
    });
}

// ---------------------------------------------------------------------------
// The fake libcuda and the driver program
// ---------------------------------------------------------------------------

pub struct Fake {
    pub dir: PathBuf,
    /// `DIR/libcuda.so.1`
    pub lib: PathBuf,
    /// `DIR/driver`, linked against `lib` (rpath DIR).
    pub driver: PathBuf,
}

/// Flags that make every function start with `push %rbp` (see fakecuda.c).
pub const LIB_CFLAGS: &[&str] = &["-O0", "-fno-omit-frame-pointer", "-fcf-protection=none", "-fPIC", "-shared"];

pub fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fakecuda")
}

/// Builds the fake library and the driver once per test binary.
pub fn fake() -> &'static Fake {
    static FAKE: OnceLock<Fake> = OnceLock::new();
    FAKE.get_or_init(build_fake)
}

fn cc() -> String {
    std::env::var("CC").unwrap_or_else(|_| "cc".to_string())
}

fn run_cc(args: &[&str]) {
    let out = Command::new(cc()).args(args).output().unwrap_or_else(|e| panic!("running {}: {e}", cc()));
    assert!(
        out.status.success(),
        "{} {} failed ({}):\n{}{}",
        cc(),
        args.join(" "),
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn build_fake() -> Fake {
    let exe = std::env::current_exe().unwrap();
    // "root_uprobes-0123abcd" -> "root_uprobes": one directory per test target.
    let stem = exe.file_stem().unwrap().to_string_lossy().into_owned();
    let stem = stem.rsplit_once('-').map_or(stem.as_str(), |(a, _)| a).to_string();
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("fakecuda-{stem}"));
    fs::create_dir_all(&dir).unwrap();
    // Readable by an unprivileged user: with sudo, tracer runs the command as the invoking user.
    let _ = Command::new("chmod").arg("755").arg(&dir).status();
    let src = src_dir();
    let lib = dir.join("libcuda.so.1");
    let driver = dir.join("driver");
    let tmp_lib = dir.join("libcuda.so.1.tmp");
    let tmp_driver = dir.join("driver.tmp");
    let s = |p: &Path| p.to_str().unwrap().to_string();

    let mut args: Vec<String> = LIB_CFLAGS.iter().map(|a| a.to_string()).collect();
    args.extend([
        "-Wall".into(),
        "-Wl,-soname,libcuda.so.1".into(),
        "-o".into(),
        s(&tmp_lib),
        s(&src.join("fakecuda.c")),
    ]);
    run_cc(&args.iter().map(String::as_str).collect::<Vec<_>>());
    fs::rename(&tmp_lib, &lib).unwrap();

    let rpath = format!("-Wl,-rpath,{}", s(&dir));
    let ldir = format!("-L{}", s(&dir));
    run_cc(&[
        "-O0",
        "-Wall",
        "-o",
        &s(&tmp_driver),
        &s(&src.join("driver.c")),
        &ldir,
        "-l:libcuda.so.1",
        &rpath,
        "-pthread",
    ]);
    fs::rename(&tmp_driver, &driver).unwrap();
    Fake { dir, lib, driver }
}

/// `DIR/NAME`: tests/fakecuda/NAME.c built against the fake libcuda (rpath
/// DIR), once per test binary and name.
pub fn fake_program(name: &str) -> PathBuf {
    static BUILT: std::sync::Mutex<Vec<(String, PathBuf)>> = std::sync::Mutex::new(Vec::new());
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, p)) = built.iter().find(|(n, _)| n == name) {
        return p.clone();
    }
    let f = fake();
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let out = f.dir.join(name);
    let tmp = f.dir.join(format!("{name}.tmp"));
    run_cc(&[
        "-O1",
        "-Wall",
        "-Wextra",
        "-o",
        &s(&tmp),
        &s(&src_dir().join(format!("{name}.c"))),
        &format!("-L{}", s(&f.dir)),
        "-l:libcuda.so.1",
        &format!("-Wl,-rpath,{}", s(&f.dir)),
        "-pthread",
    ]);
    fs::rename(&tmp, &out).unwrap();
    built.push((name.to_string(), out.clone()));
    out
}

/// Runs the driver directly (not traced).
pub fn driver_cmd(args: &[&str]) -> Command {
    let mut c = Command::new(&fake().driver);
    c.args(args);
    c
}

// ---------------------------------------------------------------------------
// Running tracer
// ---------------------------------------------------------------------------

pub fn tracer_bin() -> &'static str {
    env!("CARGO_BIN_EXE_tracer")
}

/// A fresh output path (the file does not exist).
pub fn fresh_output(tag: &str) -> PathBuf {
    static N: AtomicU32 = AtomicU32::new(0);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("root-traces");
    fs::create_dir_all(&dir).unwrap();
    let _ = Command::new("chmod").arg("1777").arg(&dir).status();
    let p = dir.join(format!("{tag}-{}-{}.jsonl", std::process::id(), N.fetch_add(1, Ordering::Relaxed)));
    let _ = fs::remove_file(&p);
    p
}

/// `tracer -o OUT --libcuda FAKE [TRACER_ARGS] -- DRIVER ARGS...`, stdout and
/// stderr to files next to OUT (so a chatty tracer can never block on a pipe).
pub fn tracer_cmd(out: &Path, tracer_args: &[&str], driver_args: &[&str]) -> Command {
    let f = fake();
    let mut c = Command::new(tracer_bin());
    // No on-CPU stack samples: the tests that run the fake driver count
    // records and lines exactly, and the samples' number depends on how
    // long the threads ran (tests/root_stacks.rs tests them).
    c.arg("-o").arg(out).arg("--libcuda").arg(&f.lib).args(["--stack-sample-hz", "0"]);
    // the tests' own durations library and host speed history, never the machine's
    c.env("TRACER_DURATIONS_LIBRARY", out.with_extension("durations.json"));
    c.env("TRACER_HOST_SPEED_HISTORY", out.with_extension("host_speed.json"));
    c.args(tracer_args).arg("--").arg(&f.driver).args(driver_args);
    c.stdout(Stdio::from(File::create(out.with_extension("stdout")).unwrap()));
    c.stderr(Stdio::from(File::create(out.with_extension("stderr")).unwrap()));
    c.stdin(Stdio::null());
    c
}

/// What one tracer run left behind.
pub struct Traced {
    pub out: PathBuf,
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
    pub lines: Vec<Value>,
    pub elapsed: Duration,
}

impl Traced {
    /// The exit status as a shell reports it (128 + signal if killed).
    pub fn code(&self) -> i32 {
        shell_code(&self.status)
    }
    pub fn header(&self) -> &Value {
        &self.lines[0]
    }
    pub fn footer(&self) -> &Value {
        self.lines.last().unwrap()
    }
    /// Call lines (the format's call types: not header, footer, process,
    /// scheduler, stack, sample or any other record line).
    pub fn calls(&self) -> impl Iterator<Item = &Value> {
        self.lines.iter().filter(|l| is_call_line(l))
    }
    pub fn named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
        self.calls().filter(move |l| l["name"] == name)
    }
    pub fn process_lines(&self) -> impl Iterator<Item = &Value> {
        self.lines.iter().filter(|l| l["type"] == "process")
    }
    /// The footer's `lost.total` (records).
    pub fn lost(&self) -> u64 {
        let f = self.footer();
        f["lost"]["total"].as_u64().unwrap_or_else(|| panic!("footer has no lost.total: {f}"))
    }
    /// Context for assertion messages.
    pub fn describe(&self) -> String {
        format!(
            "tracer exit: {} (code {})\noutput: {}\nstderr:\n{}\nstdout:\n{}",
            self.status,
            self.code(),
            self.out.display(),
            tail(&self.stderr, 4000),
            tail(&self.stdout, 2000)
        )
    }
    /// Deletes the output files (call when the test passed).
    pub fn cleanup(&self) {
        let _ = fs::remove_file(&self.out);
        let _ = fs::remove_file(self.out.with_extension("stdout"));
        let _ = fs::remove_file(self.out.with_extension("stderr"));
    }
}

pub fn tail(s: &str, n: usize) -> &str {
    if s.len() <= n {
        s
    } else {
        let mut i = s.len() - n;
        while !s.is_char_boundary(i) {
            i += 1;
        }
        &s[i..]
    }
}

pub fn shell_code(st: &ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    match (st.code(), st.signal()) {
        (Some(c), _) => c,
        (None, Some(s)) => 128 + s,
        _ => -1,
    }
}

/// `tracer record TRACER_ARGS -o OUT --libcuda FAKE -- CMD...` with `env`,
/// stdout and stderr to OUT.stdout / OUT.stderr; waits at most `limit`
/// (`what` names it in the timeout's panic). The status and the stderr text.
pub fn record_program(
    out: &Path,
    tracer_args: &[&str],
    cmd: &[&std::ffi::OsStr],
    env: &[(&str, &str)],
    limit: Duration,
    what: &str,
) -> (ExitStatus, String) {
    let mut c = Command::new(tracer_bin());
    c.arg("record")
        .env("TRACER_DURATIONS_LIBRARY", out.with_extension("durations.json"))
        .env("TRACER_HOST_SPEED_HISTORY", out.with_extension("host_speed.json"))
        .args(tracer_args)
        .envs(env.iter().copied())
        .arg("-o")
        .arg(out)
        .arg("--libcuda")
        .arg(&fake().lib)
        .arg("--")
        .args(cmd)
        .stdin(Stdio::null())
        .stdout(Stdio::from(File::create(out.with_extension("stdout")).unwrap()))
        .stderr(Stdio::from(File::create(out.with_extension("stderr")).unwrap()));
    let mut child = c.spawn().expect("starting tracer");
    let st = wait_with_timeout(&mut child, limit, false, what);
    (st, fs::read_to_string(out.with_extension("stderr")).unwrap_or_default())
}

/// Waits for `child` at most `limit`; on timeout kills it (and its process
/// group when `group` is set) and panics with `what`.
pub fn wait_with_timeout(child: &mut Child, limit: Duration, group: bool, what: &str) -> ExitStatus {
    let t0 = Instant::now();
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            return st;
        }
        if t0.elapsed() > limit {
            // SAFETY: kill has no memory-safety preconditions; the pid is our child's.
            unsafe {
                if group {
                    libc::kill(-(child.id() as i32), libc::SIGKILL);
                }
                libc::kill(child.id() as i32, libc::SIGKILL);
            }
            let _ = child.wait();
            panic!("{what}: still running after {limit:?}; killed it");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Runs tracer on `driver ARGS` with extra environment, waits (at most
/// `limit`), reads the whole trace.
pub fn trace(tag: &str, driver_args: &[&str], env: &[(&str, &str)], limit: Duration) -> Traced {
    trace_with(tag, &[], driver_args, env, limit)
}

/// [`trace`] with extra tracer options.
pub fn trace_with(
    tag: &str,
    tracer_args: &[&str],
    driver_args: &[&str],
    env: &[(&str, &str)],
    limit: Duration,
) -> Traced {
    let out = fresh_output(tag);
    let mut c = tracer_cmd(&out, tracer_args, driver_args);
    for (k, v) in env {
        c.env(k, v);
    }
    let t0 = Instant::now();
    let mut child = c.spawn().expect("starting tracer");
    let status = wait_with_timeout(&mut child, limit, false, &format!("tracer on driver {driver_args:?}"));
    let elapsed = t0.elapsed();
    finish(out, status, elapsed)
}

/// Reads what a finished tracer run left: output, stdout, stderr.
pub fn finish(out: PathBuf, status: ExitStatus, elapsed: Duration) -> Traced {
    let stdout = fs::read_to_string(out.with_extension("stdout")).unwrap_or_default();
    let stderr = fs::read_to_string(out.with_extension("stderr")).unwrap_or_default();
    let mut t = Traced { out, status, stdout, stderr, lines: Vec::new(), elapsed };
    match read_trace(&t.out) {
        Ok(lines) => t.lines = lines,
        Err(e) => panic!("{e}\n{}", t.describe()),
    }
    t
}

/// Reads a JSONL trace: every line must parse, the first must be the header
/// and the last the footer.
pub fn read_trace(path: &Path) -> Result<Vec<Value>, String> {
    let text = fs::read_to_string(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    if !text.ends_with('\n') {
        return Err(format!(
            "{}: the last line is not terminated (partial line: {:?})",
            path.display(),
            tail(&text, 300)
        ));
    }
    let mut lines = Vec::with_capacity(text.len() / 200);
    for (i, line) in text.lines().enumerate() {
        let v: Value = serde_json::from_str(line)
            .map_err(|e| format!("{}:{}: not JSON ({e}): {:?}", path.display(), i + 1, tail(line, 300)))?;
        if !v.is_object() {
            return Err(format!("{}:{}: not a JSON object: {line}", path.display(), i + 1));
        }
        lines.push(v);
    }
    match (lines.first(), lines.last()) {
        (Some(h), Some(f)) if h["type"] == "header" && f["type"] == "footer" && lines.len() >= 2 => Ok(lines),
        (Some(h), Some(f)) => Err(format!(
            "{}: first line type {} (want \"header\"), last line type {} (want \"footer\"), {} lines",
            path.display(),
            h["type"],
            f["type"],
            lines.len()
        )),
        _ => Err(format!("{}: empty trace", path.display())),
    }
}

/// Polls `path` until it holds at least `n` complete lines, or `limit` passes.
pub fn wait_for_lines(path: &Path, n: usize, limit: Duration) -> usize {
    let t0 = Instant::now();
    loop {
        let have = fs::read(path).map(|b| b.iter().filter(|&&c| c == b'\n').count()).unwrap_or(0);
        if have >= n || t0.elapsed() > limit {
            return have;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Whether tracer's default probes `name` without a return probe (its lines
/// then have no `ret`, `duration_us`, `exit_cpu`, `exit_seq`).
pub fn entry_only_by_default(name: &str) -> bool {
    tracer_common::funcs::lookup(name).is_some_and(tracer_common::funcs::is_entry_only_by_default)
}

/// A call line of a default-mode trace that succeeded: `ret` 0, or no `ret`
/// at all for a function probed entry-only.
pub fn succeeded_by_default(l: &Value) -> bool {
    if entry_only_by_default(l["name"].as_str().unwrap_or("")) { l.get("ret").is_none() } else { l["ret"] == 0 }
}

/// Whether `l` is a driver call line (tracer_format's `LineType::is_call`).
pub fn is_call_line(l: &Value) -> bool {
    l["type"].as_str().and_then(tracer_format::line::vocab::LineType::parse).is_some_and(|t| t.is_call())
}
