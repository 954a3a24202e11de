//! End-to-end tests of the NVIDIA device-file capture (open/close/ioctl/mmap/
//! munmap on /dev/nvidiactl, /dev/nvidiaN, /dev/nvidia-uvm), on machines
//! without a GPU: tests/fakenv/ holds a FUSE filesystem (fakenv_fuse.c) that
//! answers the NVIDIA driver's ioctls, a client (client.c) that makes them
//! with the real request numbers and structs, and a fake libcuda
//! (libcuda_ioctl.c) whose cuInit / cuMemAlloc_v2 make ioctls, for the
//! attribution of ioctls to CUDA calls.
//!
//! Each test mounts the FUSE filesystem in a temporary directory and runs
//! tracer in a private mount namespace where its files are bind-mounted over
//! /dev/nvidiactl, /dev/nvidia0, /dev/nvidia-uvm and /dev/nvidia-uvm-tools
//! (empty placeholder files are created in /dev where those are missing, and
//! removed afterwards). Nothing else on the machine sees the binds. The tests
//! refuse to run where /dev/nvidiactl is a character device: a real driver.
//!
//! Needs root, libfuse3 (pkg-config fuse3; `cargo xtask setup` installs
//! libfuse3-dev, fuse3, pkg-config) and /dev/fuse.
//! Run with `cargo xtask test`, or
//! `sudo -E TRACER_ROOT_TESTS=1 cargo test -p tracer --test root_ioctls -- --test-threads=1`.
//! Without TRACER_ROOT_TESTS=1 every test prints "skipped" and passes.
mod common;

use std::collections::{BTreeMap, HashMap};
use std::ffi::CString;
use std::fs::{self, File};
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::fs::FileTypeExt as _;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use common::Traced;
use serde_json::{Value, json};

/// The device files fakenv provides, as (name in the FUSE mount, path bound over).
const DEVICES: &[(&str, &str)] = &[
    ("nvidiactl", "/dev/nvidiactl"),
    ("nvidia0", "/dev/nvidia0"),
    ("nvidia-uvm", "/dev/nvidia-uvm"),
    ("nvidia-uvm-tools", "/dev/nvidia-uvm-tools"),
];

/// Marker in expectations: a hex string other than "0x0".
const NN: &str = "<nonnull>";
/// Marker in expectations: the key must not be there.
const ABSENT: &str = "<absent>";
/// Marker prefix: "$name" binds a value on first sight, and must equal it after.
const VAR: char = '$';

const LIMIT: Duration = Duration::from_secs(60);

// ---------------------------------------------------------------------------
// Building tests/fakenv
// ---------------------------------------------------------------------------

struct Built {
    /// fakenv_fuse, and its -DFAKENV_PROBE build.
    daemon: PathBuf,
    probe_daemon: PathBuf,
    /// probe.c
    probe: PathBuf,
    /// DIR/libcuda.so.1 built from libcuda_ioctl.c
    lib: PathBuf,
    /// client.c, linked against `lib` (rpath DIR)
    client: PathBuf,
}

fn fakenv_src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fakenv")
}

fn cc() -> String {
    std::env::var("CC").unwrap_or_else(|_| "cc".to_string())
}

fn run_cc(args: &[String]) {
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
    // -Wall -Wextra must stay clean.
    let warnings = String::from_utf8_lossy(&out.stderr);
    assert!(!warnings.contains("warning:"), "{} {}: warnings:\n{warnings}", cc(), args.join(" "));
}

fn pkg_config_fuse3() -> (Vec<String>, Vec<String>) {
    let q = |what: &str| -> Vec<String> {
        let out = Command::new("pkg-config").args([what, "fuse3"]).output();
        match out {
            Ok(o) if o.status.success() => {
                String::from_utf8_lossy(&o.stdout).split_whitespace().map(str::to_string).collect()
            }
            other => panic!(
                "pkg-config {what} fuse3 failed ({other:?}): the fakenv tests need libfuse3's headers; \
                 install libfuse3-dev, fuse3 and pkg-config (cargo xtask setup does)"
            ),
        }
    };
    (q("--cflags"), q("--libs"))
}

fn built() -> &'static Built {
    static B: OnceLock<Built> = OnceLock::new();
    B.get_or_init(build)
}

fn build() -> Built {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fakenv-root_ioctls");
    fs::create_dir_all(&dir).unwrap();
    // Readable by an unprivileged user: with sudo, tracer runs the command as the invoking user.
    let _ = Command::new("chmod").arg("755").arg(&dir).status();
    let src = fakenv_src();
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let (cflags, libs) = pkg_config_fuse3();
    let warn = ["-Wall".to_string(), "-Wextra".to_string()];

    let daemon = dir.join("fakenv_fuse");
    let probe_daemon = dir.join("fakenv_fuse_probe");
    for (out, extra) in [(&daemon, None), (&probe_daemon, Some("-DFAKENV_PROBE"))] {
        let tmp = out.with_extension("tmp");
        let mut a: Vec<String> = vec!["-O2".into()];
        a.extend(warn.iter().cloned());
        a.extend(extra.map(str::to_string));
        a.extend(cflags.iter().cloned());
        a.extend(["-o".into(), s(&tmp), s(&src.join("fakenv_fuse.c"))]);
        a.extend(libs.iter().cloned());
        run_cc(&a);
        fs::rename(&tmp, out).unwrap();
    }

    let probe = dir.join("probe");
    let tmp = dir.join("probe.tmp");
    let mut a: Vec<String> = vec!["-O2".into()];
    a.extend(warn.iter().cloned());
    a.extend(["-o".into(), s(&tmp), s(&src.join("probe.c"))]);
    run_cc(&a);
    fs::rename(&tmp, &probe).unwrap();

    let lib = dir.join("libcuda.so.1");
    let tmp = dir.join("libcuda.so.1.tmp");
    let mut a: Vec<String> = common::LIB_CFLAGS.iter().map(|x| x.to_string()).collect();
    a.extend(warn.iter().cloned());
    a.extend([
        "-Wl,-soname,libcuda.so.1".into(),
        "-o".into(),
        s(&tmp),
        s(&src.join("libcuda_ioctl.c")),
        "-pthread".into(),
    ]);
    run_cc(&a);
    fs::rename(&tmp, &lib).unwrap();

    let client = dir.join("client");
    let tmp = dir.join("client.tmp");
    let mut a: Vec<String> = vec!["-O0".into()];
    a.extend(warn.iter().cloned());
    a.extend([
        "-o".into(),
        s(&tmp),
        s(&src.join("client.c")),
        format!("-L{}", s(&dir)),
        "-l:libcuda.so.1".into(),
        format!("-Wl,-rpath,{}", s(&dir)),
        "-pthread".into(),
    ]);
    run_cc(&a);
    fs::rename(&tmp, &client).unwrap();

    Built { daemon, probe_daemon, probe, lib, client }
}

// ---------------------------------------------------------------------------
// The fake device files
// ---------------------------------------------------------------------------

/// A running fakenv_fuse mount, and the placeholders made for the binds.
/// Dropping it unmounts, stops the daemon and removes the placeholders, also
/// when the test panicked.
struct FakeNv {
    mnt: PathBuf,
    daemon: Option<Child>,
    /// Placeholder files this fixture created in /dev (removed on drop).
    created: Vec<PathBuf>,
    _serial: MutexGuard<'static, ()>,
    /// Held until the placeholders are gone (fields drop after `drop`).
    _machine: File,
}

/// One fixture at a time on the machine, also across test runs (two checkouts' suites
/// at once): the placeholders in /dev are shared, and each fixture removes those it
/// adopted when it is done. An exclusive flock, released when the file is closed.
fn machine_lock() -> File {
    let p = std::env::temp_dir().join("tracer-root-ioctls-fakenv.lock");
    let f = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    // SAFETY: flock on a descriptor this function owns.
    let r = unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&f), libc::LOCK_EX) };
    assert_eq!(r, 0, "flock {}: {}", p.display(), std::io::Error::last_os_error());
    f
}

/// One fixture at a time in this binary (xtask also runs it with --test-threads=1).
fn serial() -> MutexGuard<'static, ()> {
    static M: Mutex<()> = Mutex::new(());
    M.lock().unwrap_or_else(|e| e.into_inner())
}

/// Whether a fakenv filesystem is mounted at `path` in this mount namespace.
fn fakenv_mounted_at(path: &str) -> bool {
    fs::read_to_string("/proc/self/mountinfo").unwrap_or_default().lines().any(|l| {
        let target = l.split_whitespace().nth(4);
        let after = l.split_once(" - ").map_or("", |(_, a)| a);
        target == Some(path) && after.starts_with("fuse.fakenv ")
    })
}

fn is_mountpoint(p: &Path) -> bool {
    let want = p.to_str().unwrap();
    fs::read_to_string("/proc/self/mountinfo")
        .unwrap_or_default()
        .lines()
        .any(|l| l.split_whitespace().nth(4) == Some(want))
}

impl FakeNv {
    /// Mounts `daemon`'s filesystem and prepares the bind targets.
    fn start(daemon: &Path) -> FakeNv {
        let serial = serial();
        let machine = machine_lock();
        // Never shadow a real driver.
        for &(_, dev) in DEVICES {
            if let Ok(m) = fs::metadata(dev) {
                assert!(
                    !m.file_type().is_char_device(),
                    "{dev} is a character device: this machine has a real NVIDIA driver; the fakenv tests \
                     (which put a fake device over /dev/nvidia*) refuse to run here"
                );
            }
        }
        assert!(Path::new("/dev/fuse").exists(), "/dev/fuse is missing: the fakenv tests need FUSE (modprobe fuse)");
        // Mount points (and logs) of killed runs: their daemons died with them
        // and auto_unmount unmounted them; only the empty directories remain.
        for e in fs::read_dir(env!("CARGO_TARGET_TMPDIR")).into_iter().flatten().flatten() {
            let p = e.path();
            if e.file_name().to_string_lossy().starts_with("fakenv-mnt-") && !is_mountpoint(&p) {
                let _ = if p.is_dir() { fs::remove_dir(&p) } else { fs::remove_file(&p) };
            }
        }
        let mnt = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("fakenv-mnt-{}", std::process::id()));
        if is_mountpoint(&mnt) {
            // A leftover of a killed run of this process id.
            let c = CString::new(mnt.as_os_str().as_bytes()).unwrap();
            // SAFETY: a valid C string; umount2 has no memory-safety preconditions.
            unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) };
        }
        fs::create_dir_all(&mnt).unwrap();
        let mut fx = FakeNv { mnt: mnt.clone(), daemon: None, created: Vec::new(), _serial: serial, _machine: machine };
        let log = File::create(mnt.with_extension("log")).unwrap();
        let mut cmd = Command::new(daemon);
        cmd.arg(&mnt)
            .args(["-f", "-s", "-o", "allow_other,auto_unmount,fsname=fakenv,subtype=fakenv"])
            .stdin(Stdio::null())
            .stdout(Stdio::from(log.try_clone().unwrap()))
            .stderr(Stdio::from(log));
        // SAFETY: prctl is async-signal-safe. The daemon dies with this thread,
        // and auto_unmount then unmounts it.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        fx.daemon = Some(cmd.spawn().unwrap_or_else(|e| panic!("starting {}: {e}", daemon.display())));
        let t0 = Instant::now();
        while !is_mountpoint(&mnt) {
            if let Some(st) = fx.daemon.as_mut().unwrap().try_wait().unwrap() {
                let log = fs::read_to_string(mnt.with_extension("log")).unwrap_or_default();
                panic!("{} exited ({st}) before mounting {}:\n{log}", daemon.display(), mnt.display());
            }
            assert!(t0.elapsed() < LIMIT, "hung: {} did not mount {} in {LIMIT:?}", daemon.display(), mnt.display());
            std::thread::sleep(Duration::from_millis(20));
        }
        for &(name, dev) in DEVICES {
            assert!(mnt.join(name).is_file(), "{} is not in the fakenv mount", name);
            let p = PathBuf::from(dev);
            match File::options().write(true).create_new(true).open(&p) {
                Ok(_) => fx.created.push(p),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    // An empty regular file that nothing is mounted on is a
                    // placeholder left by a killed run: remove it at the end.
                    // Anything else (a file someone bound something over) is
                    // only bound over, in the private namespace, and left alone.
                    let m = fs::symlink_metadata(&p).unwrap();
                    if m.file_type().is_file() && m.len() == 0 && !is_mountpoint(&p) {
                        fx.created.push(p);
                    }
                }
                Err(e) => panic!("creating the placeholder {dev}: {e}"),
            }
        }
        fx
    }

    /// (source, target) pairs for the binds.
    fn binds(&self) -> Vec<(CString, CString)> {
        DEVICES
            .iter()
            .map(|&(name, dev)| {
                (CString::new(self.mnt.join(name).as_os_str().as_bytes()).unwrap(), CString::new(dev).unwrap())
            })
            .collect()
    }

    /// Makes `cmd` run in a private mount namespace where the fake files are
    /// bound over the /dev paths.
    fn wrap(&self, cmd: &mut Command) {
        let binds = self.binds();
        // SAFETY: only async-signal-safe syscalls on data prepared before the fork.
        unsafe {
            cmd.pre_exec(move || {
                if libc::unshare(libc::CLONE_NEWNS) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                let root = c"/";
                if libc::mount(
                    std::ptr::null(),
                    root.as_ptr(),
                    std::ptr::null(),
                    libc::MS_REC | libc::MS_PRIVATE,
                    std::ptr::null(),
                ) != 0
                {
                    return Err(std::io::Error::last_os_error());
                }
                for (src, dst) in &binds {
                    if libc::mount(src.as_ptr(), dst.as_ptr(), std::ptr::null(), libc::MS_BIND, std::ptr::null()) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                Ok(())
            });
        }
    }
}

impl Drop for FakeNv {
    fn drop(&mut self) {
        for p in &self.created {
            let _ = fs::remove_file(p);
        }
        let c = CString::new(self.mnt.as_os_str().as_bytes()).unwrap();
        // SAFETY: a valid C string; umount2 has no memory-safety preconditions.
        if unsafe { libc::umount2(c.as_ptr(), 0) } != 0 {
            // SAFETY: as above.
            unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) };
        }
        if let Some(mut d) = self.daemon.take() {
            let t0 = Instant::now();
            while d.try_wait().ok().flatten().is_none() && t0.elapsed() < Duration::from_secs(5) {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = d.kill();
            let _ = d.wait();
        }
        let _ = fs::remove_dir(&self.mnt);
        let _ = fs::remove_file(self.mnt.with_extension("log"));
    }
}

// ---------------------------------------------------------------------------
// Running the client
// ---------------------------------------------------------------------------

/// What the client printed as "fakenv: key=value" (values of repeated keys joined by ',').
fn client_report(stdout: &str) -> BTreeMap<String, String> {
    let mut m: BTreeMap<String, String> = BTreeMap::new();
    for l in stdout.lines() {
        if let Some((k, v)) = l.strip_prefix("fakenv: ").and_then(|r| r.split_once('=')) {
            m.entry(k.to_string())
                .and_modify(|e| {
                    e.push(',');
                    e.push_str(v);
                })
                .or_insert_with(|| v.to_string());
        }
    }
    m
}

/// `tracer -o OUT --libcuda LIB --ioctls -- CLIENT ARGS` in the fake environment.
fn trace_client(fx: &FakeNv, tag: &str, args: &[&str]) -> (Traced, BTreeMap<String, String>) {
    let b = built();
    let out = common::fresh_output(tag);
    let mut c = Command::new(common::tracer_bin());
    c.arg("-o").arg(&out).arg("--libcuda").arg(&b.lib).arg("--ioctls").arg("--").arg(&b.client).args(args);
    c.stdout(Stdio::from(File::create(out.with_extension("stdout")).unwrap()));
    c.stderr(Stdio::from(File::create(out.with_extension("stderr")).unwrap()));
    c.stdin(Stdio::null());
    fx.wrap(&mut c);
    let t0 = Instant::now();
    let mut child = c.spawn().expect("starting tracer");
    let status = common::wait_with_timeout(&mut child, LIMIT, false, &format!("tracer on client {args:?}"));
    let t = common::finish(out, status, t0.elapsed());
    let rep = client_report(&t.stdout);
    assert!(
        t.code() == 0 && rep.contains_key("done"),
        "tracer or the client failed (client FAIL lines are on stderr)\n{}",
        t.describe()
    );
    (t, rep)
}

/// The client, not traced, in the fake environment.
fn run_client_untraced(fx: &FakeNv, args: &[&str]) -> (i32, String, String) {
    let mut c = Command::new(&built().client);
    c.args(args).stdin(Stdio::null());
    fx.wrap(&mut c);
    let out = c.output().expect("running the client");
    (
        common::shell_code(&out.status),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Trace lines about NVIDIA device files (ioctl and nvidia_fd).
fn nv_lines(t: &Traced) -> Vec<&Value> {
    t.lines.iter().filter(|l| matches!(l["type"].as_str(), Some("ioctl" | "nvidia_fd"))).collect()
}

// ---------------------------------------------------------------------------
// Matching lines against expectations
// ---------------------------------------------------------------------------

fn check_subset(path: &str, want: &Value, got: &Value, vars: &mut HashMap<String, Value>, errs: &mut Vec<String>) {
    match want {
        Value::Object(w) => {
            let Some(g) = got.as_object() else {
                errs.push(format!("{path}: want an object, got {got}"));
                return;
            };
            for (k, wv) in w {
                let p = format!("{path}.{k}");
                match (wv.as_str(), g.get(k)) {
                    (Some(ABSENT), None) => {}
                    (Some(ABSENT), Some(gv)) => errs.push(format!("{p}: want no such field, got {gv}")),
                    (_, None) => errs.push(format!("{p}: missing (want {wv})")),
                    (_, Some(gv)) => check_subset(&p, wv, gv, vars, errs),
                }
            }
        }
        Value::Array(w) => match got.as_array() {
            Some(g) if g.len() == w.len() => {
                for (i, (wv, gv)) in w.iter().zip(g).enumerate() {
                    check_subset(&format!("{path}[{i}]"), wv, gv, vars, errs);
                }
            }
            _ => errs.push(format!("{path}: want {want}, got {got}")),
        },
        Value::String(s) if s == NN => {
            if !got.as_str().is_some_and(|g| g.starts_with("0x") && g != "0x0") {
                errs.push(format!("{path}: want a non-null hex pointer, got {got}"));
            }
        }
        Value::String(s) if s.starts_with(VAR) => match vars.get(s) {
            Some(v) if v == got => {}
            Some(v) => errs.push(format!("{path}: want {s} = {v}, got {got}")),
            None => {
                vars.insert(s.clone(), got.clone());
            }
        },
        _ => {
            if want != got {
                errs.push(format!("{path}: want {want}, got {got}"));
            }
        }
    }
}

/// Compares `got` with `want` line by line (each a subset match), all errors at once.
fn check_lines(got: &[&Value], want: &[Value], vars: &mut HashMap<String, Value>) -> Vec<String> {
    let mut errs = Vec::new();
    for (i, w) in want.iter().enumerate() {
        let Some(g) = got.get(i) else {
            errs.push(format!("line {i}: missing; want {w}"));
            continue;
        };
        let mut e = Vec::new();
        check_subset("", w, g, vars, &mut e);
        if !e.is_empty() {
            errs.push(format!("line {i} ({} {}):\n    {}\n    got: {g}", g["type"], g["name"], e.join("\n    ")));
        }
    }
    for (i, g) in got.iter().enumerate().skip(want.len()) {
        errs.push(format!("line {i}: unexpected: {g}"));
    }
    errs
}

/// Variables from the client's report: "$ctl" = the number, "$ctrl_params" = the hex string.
fn report_vars(rep: &BTreeMap<String, String>) -> HashMap<String, Value> {
    let mut v = HashMap::new();
    for (k, val) in rep {
        let key = format!("{VAR}{k}");
        match val.parse::<i64>() {
            Ok(n) => v.insert(key, json!(n)),
            Err(_) => v.insert(key, json!(val)),
        };
    }
    v
}

// ---------------------------------------------------------------------------
// Expected lines of `client all`
// ---------------------------------------------------------------------------

fn open_line(path: &str, fd: &str, cuda: Value) -> Value {
    json!({"type": "nvidia_fd", "op": "open", "path": path, "fd": fd, "ret": fd, "errno": ABSENT, "cuda_call": cuda})
}

fn close_line(path: &str, fd: &str) -> Value {
    json!({"type": "nvidia_fd", "op": "close", "path": path, "fd": fd, "cuda_call": null})
}

/// An ioctl line: `name`, on `device`, fd `fd`; `request` (hex string),
/// `size`; `ret` 0 unless given in `extra`, NV status `status` (None: the
/// line has none), `fields` a subset of the decode, `extra` more top-level keys.
#[allow(clippy::too_many_arguments, reason = "the fields of one expected ioctl line")]
fn ioctl_line(
    name: &str,
    device: &str,
    fd: &str,
    request: &str,
    size: u64,
    status: Option<(u32, &str)>,
    cuda: Value,
    fields: Value,
    extra: Value,
) -> Value {
    let mut v = json!({
        "type": "ioctl", "op": "ioctl", "name": name, "device": device, "fd": fd,
        "request": request, "size": size, "ret": 0, "errno": ABSENT, "known": true,
        "cuda_call": cuda, "fields": fields, "ioctl_path": "tracepoint", "incomplete": ABSENT,
        "entry_lost": ABSENT, "truncated": ABSENT, "xfer": ABSENT,
    });
    match status {
        Some((s, n)) => {
            v["status"] = json!(s);
            v["status_name"] = json!(n);
        }
        None => {
            v["status"] = json!(ABSENT);
        }
    }
    for (k, x) in extra.as_object().unwrap() {
        v[k] = x.clone();
    }
    v
}

const OK: Option<(u32, &str)> = Some((0, "NV_OK"));
const NOT_SUPPORTED: Option<(u32, &str)> = Some((0x56, "NV_ERR_NOT_SUPPORTED"));
const CLIENT: &str = "0xc1d00001";
const DEVICE: &str = "0xcafe0001";
const SUBDEVICE: &str = "0xcafe0002";
const MEMORY: &str = "0xcaf00001";

fn expected_all() -> Vec<Value> {
    let ctl = "/dev/nvidiactl";
    let gpu = "/dev/nvidia0";
    let uvm = "/dev/nvidia-uvm";
    let null = Value::Null;
    let einval = json!({"ret": -22, "errno": "EINVAL"});
    vec![
        // ---- cuInit (libcuda_ioctl.c)
        open_line(ctl, "$lib_fd", json!("cuInit")),
        ioctl_line(
            "CHECK_VERSION_STR",
            ctl,
            "$lib_fd",
            "0xc04846d2",
            72,
            None,
            json!("cuInit"),
            json!({"cmd": 0, "cmd_name": "STRICT", "reply": 1, "versionString": "580.142"}),
            json!({"nr": "0xd2"}),
        ),
        ioctl_line(
            "RM_ALLOC",
            ctl,
            "$lib_fd",
            "0xc030462b",
            48,
            OK,
            json!("cuInit"),
            json!({"struct": "NVOS64_PARAMETERS", "hRoot": "0x00000000", "hObjectParent": "0x00000000",
                   "hObjectNew": CLIENT, "hObjectNew_in": "0x00000000", "class": "0x0041",
                   "class_name": "NV01_ROOT_CLIENT", "class_in": ABSENT, "pAllocParms": "0x0", "params_size": 0}),
            json!({"nr": "0x2b"}),
        ),
        ioctl_line(
            "RM_CONTROL",
            ctl,
            "$lib_fd",
            "0xc020462a",
            32,
            OK,
            json!("cuInit"),
            json!({"struct": "NVOS54_PARAMETERS", "hClient": CLIENT, "hObject": CLIENT, "cmd": "0x0000013e",
                   "cmd_name": "NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION_V2", "flags": "0x0", "params": NN,
                   "params_size": 16}),
            json!({"nr": "0x2a"}),
        ),
        // ---- cuMemAlloc_v2
        ioctl_line(
            "RM_ALLOC",
            ctl,
            "$lib_fd",
            "0xc030462b",
            48,
            OK,
            json!("cuMemAlloc_v2"),
            json!({"hRoot": CLIENT, "hObjectParent": CLIENT, "hObjectNew": MEMORY, "hObjectNew_in": "0x00000000",
                   "class": "0x0040", "class_name": "NV01_MEMORY_LOCAL_USER", "pAllocParms": NN, "params_size": 16}),
            json!({}),
        ),
        ioctl_line(
            "RM_CONTROL",
            ctl,
            "$lib_fd",
            "0xc020462a",
            32,
            NOT_SUPPORTED,
            json!("cuMemAlloc_v2"),
            json!({"hClient": CLIENT, "hObject": MEMORY, "cmd": "0x20803002",
                   "cmd_name": "NV2080_CTRL_CMD_NVLINK_GET_NVLINK_STATUS", "params": "0x0", "params_size": 0}),
            json!({}),
        ),
        // ---- the client's own calls
        open_line(ctl, "$ctl_fd", null.clone()),
        ioctl_line(
            "CHECK_VERSION_STR",
            ctl,
            "$ctl_fd",
            "0xc04846d2",
            72,
            None,
            null.clone(),
            json!({"cmd": 0, "reply": 1, "versionString": "580.142", "versionString_in": ABSENT}),
            json!({}),
        ),
        ioctl_line(
            "CHECK_VERSION_STR",
            ctl,
            "$ctl_fd",
            "0xc04846d2",
            72,
            None,
            null.clone(),
            json!({"cmd": 0, "reply": 0, "versionString": "580.142", "versionString_in": "999.99"}),
            einval.clone(),
        ),
        ioctl_line(
            "CARD_INFO",
            ctl,
            "$ctl_fd",
            "0xc90046c8",
            2304,
            None,
            null.clone(),
            json!({"slots": 32, "cards": [{
                "slot": 0, "pci": "0000:41:00.0", "vendor_id": "0x10de", "device_id": "0x2335",
                "gpu_id": "0x4100", "interrupt_line": 255, "reg_address": "0xfa000000", "reg_size": 0x100_0000,
                "fb_address": "0x38000000000", "fb_size": 0x24_0000_0000u64, "minor_number": 0,
                "dev_name": "nvidia0"}]}),
            // 2304 bytes: more than the eBPF side copies (the cards past slot 6 are cut)
            json!({"nr": "0xc8", "truncated": true}),
        ),
        ioctl_line(
            "RM_ALLOC",
            ctl,
            "$ctl_fd",
            "0xc020462b",
            32,
            OK,
            null.clone(),
            json!({"struct": "NVOS21_PARAMETERS", "hRoot": "0x00000000", "hObjectParent": "0x00000000",
                   "hObjectNew": CLIENT, "hObjectNew_in": "0x00000000", "class": "0x0041", "class_in": "0x0000",
                   "class_name": "NV01_ROOT_CLIENT", "pAllocParms": "0x0", "params_size": 0}),
            json!({}),
        ),
        ioctl_line(
            "RM_ALLOC",
            ctl,
            "$ctl_fd",
            "0xc030462b",
            48,
            OK,
            null.clone(),
            json!({"hRoot": CLIENT, "hObjectParent": CLIENT, "hObjectNew": DEVICE, "hObjectNew_in": ABSENT,
                   "class": "0x0080", "class_name": "NV01_DEVICE_0", "pAllocParms": "$dev_params",
                   "params_size": 56}),
            json!({}),
        ),
        ioctl_line(
            "RM_ALLOC",
            ctl,
            "$ctl_fd",
            "0xc030462b",
            48,
            OK,
            null.clone(),
            json!({"hRoot": CLIENT, "hObjectParent": DEVICE, "hObjectNew": SUBDEVICE, "class": "0x2080",
                   "class_name": "NV20_SUBDEVICE_0", "pAllocParms": "$sub_params", "params_size": 8}),
            json!({}),
        ),
        ioctl_line(
            "RM_ALLOC",
            ctl,
            "$ctl_fd",
            "0xc030462b",
            48,
            Some((0x22, "NV_ERR_INVALID_CLASS")),
            null.clone(),
            json!({"hRoot": CLIENT, "hObjectParent": DEVICE, "hObjectNew": "0xcafe0003", "class": "0xdead",
                   "class_name": null, "pAllocParms": "0x0", "params_size": 0}),
            json!({}),
        ),
        ioctl_line(
            "RM_CONTROL",
            ctl,
            "$ctl_fd",
            "0xc020462a",
            32,
            OK,
            null.clone(),
            json!({"hClient": CLIENT, "hObject": SUBDEVICE, "cmd": "0x20800102",
                   "cmd_name": "NV2080_CTRL_CMD_GPU_GET_INFO_V2", "params": "$ctrl_params", "params_size": 24}),
            json!({}),
        ),
        ioctl_line(
            "RM_CONTROL",
            ctl,
            "$ctl_fd",
            "0xc020462a",
            32,
            NOT_SUPPORTED,
            null.clone(),
            json!({"hClient": CLIENT, "hObject": SUBDEVICE, "cmd": "0x20803002",
                   "cmd_name": "NV2080_CTRL_CMD_NVLINK_GET_NVLINK_STATUS", "params": "$ctrl_params",
                   "params_size": 24}),
            json!({}),
        ),
        ioctl_line(
            "RM_VID_HEAP_CONTROL",
            ctl,
            "$ctl_fd",
            "0xc0b8464a",
            184,
            OK,
            null.clone(),
            json!({"struct": "NVOS32_PARAMETERS", "hRoot": CLIENT, "hObjectParent": DEVICE, "function": 2,
                   "function_name": "ALLOC_SIZE", "total": 80u64 << 30, "free": 70u64 << 30, "owner": "0x1234",
                   "hMemory": MEMORY, "hMemory_in": "0x00000000", "flags": "0x5", "size": 2 << 20,
                   "alignment": 4096, "offset": 0x20_0000, "offset_in": 0, "limit": 0x20_0000 + (2 << 20) - 1,
                   "numaNode": -1}),
            json!({"nr": "0x4a"}),
        ),
        open_line(gpu, "$gpu_fd", null.clone()),
        ioctl_line(
            "REGISTER_FD",
            gpu,
            "$gpu_fd",
            "0xc00446c9",
            4,
            None,
            null.clone(),
            json!({"ctl_fd": "$ctl_fd"}),
            json!({}),
        ),
        ioctl_line(
            "RM_MAP_MEMORY",
            ctl,
            "$ctl_fd",
            "0xc038464e",
            56,
            OK,
            null.clone(),
            json!({"hClient": CLIENT, "hDevice": DEVICE, "hMemory": MEMORY, "offset": 0, "length": 0x2000,
                   "pLinearAddress": "0x10000", "pLinearAddress_in": "0x0", "flags": "0x0", "fd": "$gpu_fd"}),
            json!({}),
        ),
        json!({"type": "nvidia_fd", "op": "mmap", "path": gpu, "fd": "$gpu_fd", "addr": "$mmap_addr",
               "length": 0x2000, "prot": "0x3", "flags": "0x1", "offset": "0x10000", "errno": ABSENT,
               "cuda_call": null}),
        json!({"type": "nvidia_fd", "op": "munmap", "addr": "$mmap_addr", "length": 0x2000, "cuda_call": null}),
        // an RM escape on a GPU fd: the driver refuses it (NV_CTL_DEVICE_ONLY) and writes no status
        ioctl_line(
            "RM_CONTROL",
            gpu,
            "$gpu_fd",
            "0xc020462a",
            32,
            OK,
            null.clone(),
            json!({"hClient": CLIENT, "hObject": SUBDEVICE, "cmd": "0x20800102"}),
            einval.clone(),
        ),
        ioctl_line(
            "UNKNOWN",
            ctl,
            "$ctl_fd",
            "0xc0104677",
            16,
            None,
            null.clone(),
            json!({}),
            json!({"ret": -22, "errno": "EINVAL", "known": false, "nr": "0x77"}),
        ),
        ioctl_line(
            "RM_CONTROL",
            ctl,
            "$ctl_fd",
            "0xc01046d3",
            32,
            OK,
            null.clone(),
            json!({"xfer": true, "xfer_size": 32, "xfer_ptr": "$xfer_inner0", "hClient": CLIENT,
                   "hObject": SUBDEVICE, "cmd": "0x20800102", "cmd_name": "NV2080_CTRL_CMD_GPU_GET_INFO_V2",
                   "params": "$ctrl_params", "params_size": 24}),
            json!({"xfer": true, "nr": "0x2a"}),
        ),
        ioctl_line(
            "RM_CONTROL",
            ctl,
            "$ctl_fd",
            "0xc01046d3",
            32,
            NOT_SUPPORTED,
            null.clone(),
            json!({"xfer": true, "xfer_size": 32, "xfer_ptr": "$xfer_inner1", "cmd": "0x20803002"}),
            json!({"xfer": true, "nr": "0x2a"}),
        ),
        ioctl_line(
            "ALLOC_OS_EVENT",
            ctl,
            "$ctl_fd",
            "0xc01046ce",
            16,
            OK,
            null.clone(),
            json!({"hClient": CLIENT, "hDevice": DEVICE, "fd": "$ctl_fd"}),
            json!({}),
        ),
        ioctl_line(
            "ATTACH_GPUS_TO_FD",
            ctl,
            "$ctl_fd",
            "0xc00446d4",
            4,
            None,
            null.clone(),
            json!({"gpu_ids": ["0x4100"]}),
            json!({}),
        ),
        ioctl_line(
            "RM_FREE",
            ctl,
            "$ctl_fd",
            "0xc0104629",
            16,
            OK,
            null.clone(),
            json!({"hRoot": CLIENT, "hObjectParent": CLIENT, "hObjectOld": DEVICE}),
            json!({}),
        ),
        // (FIONREAD on a pipe: nothing)
        open_line(uvm, "$uvm_fd", null.clone()),
        ioctl_line(
            "UVM_PAGEABLE_MEM_ACCESS",
            uvm,
            "$uvm_fd",
            "0x27",
            8,
            Some((0x16, "NV_ERR_ILLEGAL_ACTION")),
            null.clone(),
            json!({"pageableMemAccess": false}),
            json!({"nr": "0x27"}),
        ),
        ioctl_line(
            "UVM_INITIALIZE",
            uvm,
            "$uvm_fd",
            "0x30000001",
            16,
            OK,
            null.clone(),
            json!({"flags": "0x0"}),
            json!({"nr": "0x30000001"}),
        ),
        ioctl_line(
            "UVM_PAGEABLE_MEM_ACCESS",
            uvm,
            "$uvm_fd",
            "0x27",
            8,
            OK,
            null.clone(),
            json!({"pageableMemAccess": true}),
            json!({}),
        ),
        ioctl_line(
            "UNKNOWN",
            uvm,
            "$uvm_fd",
            "0x5555",
            0,
            None,
            null.clone(),
            json!({}),
            json!({"ret": -22, "errno": "EINVAL", "known": false}),
        ),
        json!({"type": "nvidia_fd", "op": "open", "path": "/dev/nvidia7", "ret": -2, "errno": "ENOENT",
               "cuda_call": null}),
        close_line(uvm, "$uvm_fd"),
        close_line(gpu, "$gpu_fd"),
        close_line(ctl, "$ctl_fd"),
    ]
}

// ---------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------

/// The FUSE facts fakenv_fuse.c relies on, checked on this kernel with the
/// daemon's probe build: _IOWR copies exactly _IOC_SIZE bytes in and out;
/// _IOW only in; _IO and UVM's plain numbers carry no buffer; a daemon error
/// copies nothing back; the arg pointer and the caller's tid reach the daemon;
/// 16383-byte requests work; the files can be mmapped shared.
#[test]
fn fuse_restricted_ioctls_behave_as_fakenv_assumes() {
    if !common::root_tests_enabled() {
        return;
    }
    let b = built();
    let fx = FakeNv::start(&b.probe_daemon);
    let out = Command::new(&b.probe).arg(fx.mnt.join("nvidiactl")).output().expect("running probe");
    let text = String::from_utf8_lossy(&out.stdout);
    println!("{text}");
    assert!(out.status.success(), "probe failed ({}):\n{text}{}", out.status, String::from_utf8_lossy(&out.stderr));
    assert!(!text.contains("FAIL"), "{text}");
}

/// The fake environment works without tracer: the client's own checks of
/// every answer pass.
#[test]
fn fakenv_client_passes_untraced() {
    if !common::root_tests_enabled() {
        return;
    }
    let b = built();
    let fx = FakeNv::start(&b.daemon);
    for args in [&["all"][..], &["threads", "4", "20"], &["inherit"], &["stale"]] {
        let (code, stdout, stderr) = run_client_untraced(&fx, args);
        assert!(code == 0 && stdout.contains("fakenv: done=1"), "client {args:?}: exit {code}\n{stdout}{stderr}");
    }
    // Nothing leaked into this (the host's) mount namespace.
    for &(_, dev) in DEVICES {
        assert!(!fakenv_mounted_at(dev), "{dev}: a fakenv bind is visible outside the test's mount namespace");
    }
}

/// Every NVIDIA device-file syscall of `client all`, decoded exactly, in order.
#[test]
fn ioctls_decoded_exactly() {
    if !common::root_tests_enabled() {
        return;
    }
    let b = built();
    let fx = FakeNv::start(&b.daemon);
    let (t, rep) = trace_client(&fx, "ioctls-all", &["all"]);
    assert_eq!(t.header()["ioctl_path"], "tracepoint", "header: {}", t.header());
    let got = nv_lines(&t);
    let mut vars = report_vars(&rep);
    let want = expected_all();
    let errs = check_lines(&got, &want, &mut vars);
    assert!(
        errs.is_empty(),
        "{} mismatches:\n{}\n\nclient report: {rep:?}\n{}",
        errs.len(),
        errs.join("\n"),
        t.describe()
    );
    assert_eq!(t.lost(), 0, "footer: {}", t.footer());
    t.cleanup();
}

/// The pipe's FIONREAD (0x541b) is not an NVIDIA ioctl: no line at all.
#[test]
fn non_nvidia_ioctls_are_not_recorded() {
    if !common::root_tests_enabled() {
        return;
    }
    let b = built();
    let fx = FakeNv::start(&b.daemon);
    let (t, rep) = trace_client(&fx, "ioctls-pipe", &["all"]);
    let pipe_fd: i64 = rep["pipe_fd"].parse().unwrap();
    let fionread: Vec<&Value> = t.lines.iter().filter(|l| l["request"] == "0x541b").collect();
    assert!(fionread.is_empty(), "FIONREAD on the pipe (fd {pipe_fd}) was recorded: {fionread:?}");
    // Every ioctl line is on an NVIDIA device.
    for l in t.lines.iter().filter(|l| l["type"] == "ioctl") {
        let dev = l["device"].as_str().unwrap_or("");
        assert!(dev.starts_with("/dev/nvidia"), "ioctl line on {dev}: {l}");
    }
    t.cleanup();
}

/// Threads: ioctls inside cuMemAlloc_v2 (even threads) carry cuda_call
/// "cuMemAlloc_v2"; the odd threads' own RM_CONTROLs, made at the same time,
/// carry null. Every ioctl is there, complete, with its status.
#[test]
fn ioctls_attributed_per_thread() {
    if !common::root_tests_enabled() {
        return;
    }
    const T: usize = 4;
    const N: usize = 200;
    let b = built();
    let fx = FakeNv::start(&b.daemon);
    let (t, rep) = trace_client(&fx, "ioctls-threads", &["threads", &T.to_string(), &N.to_string()]);
    assert_eq!(t.lost(), 0, "footer: {}", t.footer());
    // thread=I:TID
    let tids: HashMap<u64, usize> = rep["thread"]
        .split(',')
        .map(|x| {
            let (i, tid) = x.split_once(':').unwrap();
            (tid.parse().unwrap(), i.parse().unwrap())
        })
        .collect();
    assert_eq!(tids.len(), T, "{rep:?}");
    let mut per_thread: HashMap<usize, Vec<&Value>> = HashMap::new();
    for l in t.lines.iter().filter(|l| l["type"] == "ioctl") {
        if let Some(&i) = l["tid"].as_u64().and_then(|tid| tids.get(&tid)) {
            per_thread.entry(i).or_default().push(l);
        }
    }
    let mut errs = Vec::new();
    for i in 0..T {
        let lines = per_thread.get(&i).cloned().unwrap_or_default();
        if i % 2 == 0 {
            // RM_ALLOC then RM_CONTROL (NOT_SUPPORTED), N times, all in cuMemAlloc_v2
            if lines.len() != 2 * N {
                errs.push(format!("thread {i}: {} ioctl lines, want {}", lines.len(), 2 * N));
            }
            for (k, l) in lines.iter().enumerate() {
                let (name, status) = if k % 2 == 0 { ("RM_ALLOC", 0) } else { ("RM_CONTROL", 0x56) };
                if l["name"] != name || l["status"] != status || l["cuda_call"] != "cuMemAlloc_v2" || l["ret"] != 0 {
                    errs.push(format!("thread {i} line {k}: want {name} status {status:#x} in cuMemAlloc_v2, got {l}"));
                }
            }
        } else {
            if lines.len() != N {
                errs.push(format!("thread {i}: {} ioctl lines, want {N}", lines.len()));
            }
            for (k, l) in lines.iter().enumerate() {
                if l["name"] != "RM_CONTROL"
                    || l["fields"]["cmd"] != "0x20800101"
                    || l["status"] != 0
                    || !l["cuda_call"].is_null()
                    || l["ret"] != 0
                {
                    errs.push(format!(
                        "thread {i} line {k}: want RM_CONTROL 0x20800101 NV_OK, cuda_call null, got {l}"
                    ));
                }
            }
        }
    }
    // The RM_ALLOCs inside cuMemAlloc_v2 got distinct handles 0xcaf00001.. (T/2 * N of them).
    let mut handles: Vec<String> = per_thread
        .iter()
        .filter(|(i, _)| *i % 2 == 0)
        .flat_map(|(_, ls)| {
            ls.iter().filter(|l| l["name"] == "RM_ALLOC").map(|l| l["fields"]["hObjectNew"].to_string())
        })
        .collect();
    handles.sort();
    handles.dedup();
    if handles.len() != T / 2 * N {
        errs.push(format!("{} distinct RM_ALLOC handles, want {}", handles.len(), T / 2 * N));
    }
    assert!(errs.is_empty(), "{}\n{}", errs.iter().take(40).cloned().collect::<Vec<_>>().join("\n"), t.describe());
    t.cleanup();
}

/// fds that reach the device without an openat of their own in that process:
/// a dup() and an fd inherited across fork(). The child's own open is seen
/// with the child's pid. What tracer does with the dup and the inherited fd
/// is printed (and checked to be a complete, correct line when present).
#[test]
fn dup_and_inherited_fds() {
    if !common::root_tests_enabled() {
        return;
    }
    let b = built();
    let fx = FakeNv::start(&b.daemon);
    let (t, rep) = trace_client(&fx, "ioctls-inherit", &["inherit"]);
    assert_eq!(t.lost(), 0, "footer: {}", t.footer());
    let child: u64 = rep["child_pid"].parse().unwrap();
    let by_cmd = |cmd: &str| -> Vec<&Value> {
        t.lines.iter().filter(|l| l["type"] == "ioctl" && l["fields"]["cmd"] == cmd).collect()
    };
    let own = by_cmd("0x20800101");
    assert_eq!(own.len(), 1, "the RM_CONTROL on the opened fd: {own:?}\n{}", t.describe());
    let child_own = by_cmd("0x2080012f");
    assert_eq!(child_own.len(), 1, "the child's RM_CONTROL on its own fd: {child_own:?}\n{}", t.describe());
    assert_eq!(child_own[0]["pid"], child, "{}", child_own[0]);
    assert_eq!(child_own[0]["fd"].as_i64(), rep["child_fd"].parse::<i64>().ok());
    for (what, cmd) in [("dup()ed fd", "0x20800119"), ("fd inherited across fork()", "0x20800123")] {
        let ls = by_cmd(cmd);
        match ls.as_slice() {
            [] => println!("NOTE: the RM_CONTROL on a {what} is not recorded"),
            [l] => {
                println!("NOTE: the RM_CONTROL on a {what} is recorded: {l}");
                assert!(l["status"] == 0 && l["name"] == "RM_CONTROL" && l["device"] == "/dev/nvidiactl", "{l}");
            }
            more => panic!("{} lines for one RM_CONTROL on a {what}: {more:?}", more.len()),
        }
    }
    t.cleanup();
}

/// An fd number stops being an NVIDIA file without a close() of its own:
/// dup2() of a pipe over it, and O_CLOEXEC at execve(). What the number
/// refers to afterwards is not an NVIDIA file: the pipe's FIONREAD, and the
/// dynamic loader's open/mmap/close of libcuda.so.1 after the execve (which
/// gets the freed number), must not be recorded. The client never mmaps or
/// closes an NVIDIA file itself here.
#[test]
fn fds_closed_without_close_are_forgotten() {
    if !common::root_tests_enabled() {
        return;
    }
    let b = built();
    let fx = FakeNv::start(&b.daemon);
    let (t, rep) = trace_client(&fx, "ioctls-stale", &["stale"]);
    let mut errs = Vec::new();
    let fionread: Vec<&Value> = t.lines.iter().filter(|l| l["type"] == "ioctl" && l["request"] == "0x541b").collect();
    if !fionread.is_empty() {
        errs.push(format!(
            "FIONREAD on a pipe recorded as an NVIDIA ioctl (ctl fd {} after dup2(), cloexec fd {} after execve()):\n  {}",
            rep["ctl_fd"],
            rep["cloexec_fd"],
            fionread.iter().map(|l| l.to_string()).collect::<Vec<_>>().join("\n  ")
        ));
    }
    let exec_ts = t
        .process_lines()
        .filter(|l| l["op"] == "exec")
        .filter_map(|l| l["ts"].as_u64())
        .nth(1)
        .unwrap_or_else(|| panic!("no second exec line\n{}", t.describe()));
    let opens: Vec<&Value> = t.lines.iter().filter(|l| l["type"] == "nvidia_fd" && l["op"] == "open").collect();
    let open_fds: Vec<i64> = opens.iter().filter_map(|l| l["fd"].as_i64()).collect();
    let want_fds: Vec<i64> = vec![rep["ctl_fd"].parse().unwrap(), rep["cloexec_fd"].parse().unwrap()];
    if open_fds != want_fds {
        errs.push(format!("open lines for fds {open_fds:?}, want {want_fds:?}"));
    }
    for l in t.lines.iter().filter(|l| l["type"] == "nvidia_fd" && l["op"] != "open") {
        let after_exec = l["ts"].as_u64().is_some_and(|ts| ts > exec_ts);
        if l["op"] != "close" || after_exec {
            errs.push(format!("not an NVIDIA file operation: {l}"));
        }
    }
    assert!(errs.is_empty(), "{}\n{}", errs.join("\n"), t.describe());
    t.cleanup();
}

/// Processes that exit with NVIDIA fds still open (no close()) must not use
/// up tracer's fd table: after 20000 such children (more than the 16384
/// entries of the eBPF fd map), the parent's RM_CONTROL on a fresh fd is
/// still recorded.
#[test]
fn exited_processes_leave_no_fd_state() {
    if !common::root_tests_enabled() {
        return;
    }
    const N: usize = 20_000;
    let b = built();
    let fx = FakeNv::start(&b.daemon);
    let (t, rep) = trace_client(&fx, "ioctls-exits", &["exits", &N.to_string()]);
    assert_eq!(t.lost(), 0, "footer: {}", t.footer());
    let opens = t.lines.iter().filter(|l| l["type"] == "nvidia_fd" && l["op"] == "open").count();
    assert_eq!(opens, N + 1, "open lines\n{}", t.describe());
    let last: Vec<&Value> =
        t.lines.iter().filter(|l| l["type"] == "ioctl" && l["fields"]["cmd"] == "0x20800142").collect();
    assert!(
        last.len() == 1 && last[0]["status"] == 0 && last[0]["fd"].as_i64() == rep["ctl_fd"].parse::<i64>().ok(),
        "the parent's RM_CONTROL after {N} children that exited with /dev/nvidiactl open: {last:?}\n{}",
        t.describe()
    );
    t.cleanup();
}
