//! Starting the traced command: suspended start, switch to the user who ran
//! sudo, signal forwarding and exit status, and creation of output files that
//! belong to that user.
//!
//! # How the command is started
//!
//! The command has to exist as a process (tracer needs its pid to set up
//! tracing) before it runs a single instruction of the program. So we fork,
//! and the child blocks reading one byte from a "release" pipe before it
//! switches user and execs. [`Suspended::release`] writes that byte. If
//! tracer gives up ([`Suspended::cancel`], drop, or tracer dies) the pipe is
//! closed without a byte and the child `_exit(125)`s without exec'ing.
//!
//! We call `libc::fork` + `execve` ourselves instead of using
//! `std::process::Command` with a blocking `pre_exec`. `Command::spawn` only
//! returns after the child has exec'd, because it waits on an internal pipe
//! for exec errors. With a blocking `pre_exec` it would not return, or give
//! us the pid, until after release. Working around that needs a helper
//! thread and a second pipe to pass the pid back. Doing the fork ourselves is
//! less machinery, and we copy the parts of std's approach that matter:
//!
//! * Everything the child needs (resolved program path, argv, envp, groups)
//!   is built *before* fork. After fork in a multi-threaded process (tokio)
//!   the child may only call async-signal-safe functions: no allocation, no
//!   locks.
//! * The program is looked up in `PATH` (the `PATH` the child gets, which is
//!   tracer's own) before forking. So "command not found" comes back from
//!   [`spawn_suspended`] itself, not from the later release. The child then
//!   `execve`s the matches in order after switching user, skipping ones that
//!   user cannot reach, as `execvp` does.
//! * A second close-on-exec "status" pipe tells [`Suspended::release`]
//!   whether the exec worked. Exec closes the pipe, so EOF means success. If
//!   switching user or exec fails, the child writes a tag and errno, then
//!   `_exit`s.
//! * In the child, signal handlers installed by tracer (tokio) are reset to
//!   the default, `SIGPIPE` is reset to the default (the Rust runtime ignores
//!   it), and the signal mask is cleared. This is what exec + std would do,
//!   but here it happens *before* the child blocks, so a Ctrl-C while the
//!   command is suspended kills it as expected.
//!
//! We switch user with `setgroups(groups)`, `setgid`, `setuid`, in that
//! order. We do not use the semantics of `Command::uid/gid`, because std then
//! drops every supplementary group, and the user needs e.g. `video` for
//! `/dev/nvidia*`.
//!
//! # Terminal and process group
//!
//! The command stays in tracer's process group and session (no `setpgid` or
//! `setsid`), so it stays in the terminal's foreground. Reading the terminal
//! and job control work as if the shell had started it, and a Ctrl-C at the
//! terminal reaches both tracer and the command.
//!
//! # Reaping
//!
//! The child is waited for through a pidfd (`pidfd_open`, Linux 5.3+) that
//! tokio's `AsyncFd` watches, then reaped with `waitpid` on that exact pid.
//! We never call `wait(-1)`, so nothing else gets reaped by accident.
//! Kernels without pidfd fall back to a blocking `waitpid(pid)` on tokio's
//! blocking pool.
//!
//! The async functions need a tokio runtime with I/O enabled
//! (`enable_io`/`enable_all`), for the signal streams and `AsyncFd`.

// Parts of this API serve only some modes of the caller (e.g. `-p PID`).

use std::borrow::Cow;
use std::ffi::{CStr, CString, OsStr, OsString};
use std::fmt;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::raw::c_char;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::ptr;

use anyhow::{Context, Result, anyhow, bail};
use tokio::io::Interest;
use tokio::io::unix::AsyncFd;
use tokio::signal::unix::{Signal, SignalKind, signal};

/// Default search path when `PATH` is unset. This is what glibc's `execvp`
/// uses, plus `/usr/local/bin`.
const DEFAULT_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// Exit status of the child when tracer gives up before releasing it.
pub const EXIT_NOT_RELEASED: i32 = 125;
/// Exit status of the child when switching user fails.
pub const EXIT_CREDENTIALS_FAILED: i32 = 126;
/// Exit status of the child when exec fails (as shells do).
pub const EXIT_EXEC_FAILED: i32 = 127;

// ---------------------------------------------------------------------------
// The invoking user
// ---------------------------------------------------------------------------

/// The user the command runs as: the user who invoked `sudo tracer`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunAs {
    pub uid: u32,
    pub gid: u32,
    /// Supplementary groups, from `getgrouplist(user, gid)`. This includes `gid`.
    pub groups: Vec<u32>,
    /// Login name. When set, the child gets `USER` and `LOGNAME` set to it.
    pub user: Option<String>,
    /// Home directory from the passwd entry. When set, the child gets `HOME`.
    pub home: Option<String>,
}

/// Works out who the command should run as.
///
/// Returns the invoking user when tracer runs with euid 0 under sudo
/// (`SUDO_UID` and `SUDO_GID` set) and `as_root` is false. Returns `None`
/// (the command runs as tracer's own user, unchanged) in every other case:
/// when `as_root` is set, when not running as root, when root started tracer
/// directly, or when sudo was invoked by root.
pub fn invoking_user(as_root: bool) -> Result<Option<RunAs>> {
    // SAFETY: geteuid has no preconditions.
    if as_root || unsafe { libc::geteuid() } != 0 {
        return Ok(None);
    }
    let uid = std::env::var_os("SUDO_UID");
    let gid = std::env::var_os("SUDO_GID");
    let user = std::env::var_os("SUDO_USER");
    invoking_user_from(uid.as_deref(), gid.as_deref(), user.as_deref())
}

/// [`invoking_user`] with the `SUDO_*` values passed in (so tests do not have
/// to change the process environment).
fn invoking_user_from(
    sudo_uid: Option<&OsStr>,
    sudo_gid: Option<&OsStr>,
    sudo_user: Option<&OsStr>,
) -> Result<Option<RunAs>> {
    let (uid, gid) = match (sudo_uid, sudo_gid) {
        (None, None) => return Ok(None),
        (Some(u), Some(g)) => (parse_id("SUDO_UID", u)?, parse_id("SUDO_GID", g)?),
        (Some(_), None) => {
            bail!("SUDO_UID is set but SUDO_GID is not: cannot tell which user invoked sudo")
        }
        (None, Some(_)) => {
            bail!("SUDO_GID is set but SUDO_UID is not: cannot tell which user invoked sudo")
        }
    };
    if uid == 0 {
        // root ran sudo: the command just runs as root.
        return Ok(None);
    }

    let pw = match passwd_by_uid(uid) {
        Ok(pw) => pw,
        Err(e) => {
            log::warn!("cannot look up user id {uid}: {}", os_error_text(&e));
            None
        }
    };
    let sudo_user = sudo_user.filter(|s| !s.is_empty()).and_then(|s| s.to_str()).map(str::to_owned);
    let user = sudo_user.or_else(|| pw.as_ref().and_then(|p| p.name.clone()));
    let home = pw.and_then(|p| p.home);

    let groups = match &user {
        Some(name) => group_list(name, gid),
        None => {
            log::warn!("user id {uid} has no name: running the command without supplementary groups");
            vec![gid]
        }
    };
    Ok(Some(RunAs { uid, gid, groups, user, home }))
}

fn parse_id(var: &str, value: &OsStr) -> Result<u32> {
    let text = value.to_string_lossy();
    let valid = !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit());
    match text.parse::<u32>() {
        Ok(id) if valid && id != u32::MAX => Ok(id),
        _ => bail!("invalid {var} value {text:?}: expected a numeric id"),
    }
}

struct PasswdEntry {
    name: Option<String>,
    home: Option<String>,
}

fn passwd_by_uid(uid: u32) -> io::Result<Option<PasswdEntry>> {
    let mut buf = vec![0u8; 1024];
    loop {
        // SAFETY: passwd is a plain C struct; all-zero is a valid value.
        let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
        let mut result: *mut libc::passwd = ptr::null_mut();
        // SAFETY: every pointer is valid for the duration of the call, and
        // buf.len() is the real size of buf.
        let rc = unsafe { libc::getpwuid_r(uid, &mut pwd, buf.as_mut_ptr().cast(), buf.len(), &mut result) };
        if rc == libc::ERANGE && buf.len() < (1 << 20) {
            buf.resize(buf.len() * 2, 0);
            continue;
        }
        if rc != 0 {
            return Err(io::Error::from_raw_os_error(rc));
        }
        if result.is_null() {
            return Ok(None);
        }
        // SAFETY: on success, pw_name and pw_dir are NUL-terminated strings in buf (or null).
        let text = |p: *const c_char| -> Option<String> {
            if p.is_null() {
                return None;
            }
            let s = unsafe { CStr::from_ptr(p) }.to_str().ok()?;
            (!s.is_empty()).then(|| s.to_owned())
        };
        return Ok(Some(PasswdEntry { name: text(pwd.pw_name), home: text(pwd.pw_dir) }));
    }
}

/// `getgrouplist(user, gid)`: `gid` plus every group that lists `user`.
fn group_list(user: &str, gid: u32) -> Vec<u32> {
    let Ok(cuser) = CString::new(user) else {
        return vec![gid];
    };
    let mut capacity: libc::c_int = 64;
    loop {
        let mut groups: Vec<libc::gid_t> = vec![0; capacity as usize];
        let mut n = capacity;
        // SAFETY: groups has room for n entries; cuser is NUL-terminated.
        let rc = unsafe { libc::getgrouplist(cuser.as_ptr(), gid, groups.as_mut_ptr(), &mut n) };
        if rc >= 0 {
            groups.truncate(n.max(0) as usize);
            if !groups.contains(&gid) {
                groups.insert(0, gid);
            }
            return groups;
        }
        // Too small: glibc stores the required count in n.
        let wanted = if n > capacity { n } else { capacity.saturating_mul(2) };
        if wanted > 1 << 16 {
            log::warn!("cannot list the groups of user {user}: running without supplementary groups");
            return vec![gid];
        }
        capacity = wanted;
    }
}

// ---------------------------------------------------------------------------
// Suspended spawn
// ---------------------------------------------------------------------------

/// A forked command that has not exec'd yet. It is waiting for [`release`](Suspended::release).
///
/// Dropping it without releasing is the same as [`cancel`](Suspended::cancel):
/// the child exits with status 125 without running the command, and is reaped.
#[derive(Debug)]
pub struct Suspended {
    /// Pid of the command. It stays the same across exec.
    pub pid: u32,
    /// Write end of the release pipe. `None` once released or cancelled.
    release_wr: Option<OwnedFd>,
    /// Read end of the status pipe: errno from a failed user switch or exec.
    status_rd: Option<OwnedFd>,
    pidfd: Option<OwnedFd>,
    /// argv[0], for messages.
    program: String,
    /// Login name or uid the command switches to, for messages.
    run_as: Option<String>,
}

/// Forks `argv` as a child that waits until [`Suspended::release`] is called.
/// At release it switches to `run_as` (when given) and execs.
///
/// The command is looked up in `PATH` now. If it is missing or not
/// executable, this returns a one-line error such as `command not found: NAME`.
/// For `run_as`, executability is checked from the file's mode bits. The
/// few cases that check cannot see (an unreadable parent directory, ACLs, a
/// noexec mount) are reported by [`Suspended::release`] instead.
///
/// The child inherits stdin, stdout, stderr, cwd, the process group (so it
/// stays in the terminal's foreground) and the environment. With `run_as`,
/// the environment gets `USER`/`LOGNAME` and `HOME` for that user.
pub fn spawn_suspended(argv: &[OsString], run_as: Option<&RunAs>) -> Result<Suspended> {
    spawn_suspended_inner(argv, run_as, None, None)
}

/// [`spawn_suspended`] with variables added to (or replaced in) the
/// command's environment, e.g. the marker FIFO's path.
pub fn spawn_suspended_with_env(
    argv: &[OsString],
    run_as: Option<&RunAs>,
    extra_env: &[(OsString, OsString)],
) -> Result<Suspended> {
    spawn_suspended_env(argv, run_as, None, None, extra_env)
}

/// [`spawn_suspended_with_env`] with the child's stdout on `stdout`
/// (`record -o -`: the trace goes to tracer's stdout, the command's output
/// to stderr).
pub fn spawn_suspended_with_env_stdout(
    argv: &[OsString],
    run_as: Option<&RunAs>,
    extra_env: &[(OsString, OsString)],
    stdout: BorrowedFd<'_>,
) -> Result<Suspended> {
    spawn_suspended_env(argv, run_as, Some(stdout), None, extra_env)
}

/// [`spawn_suspended`], with an optional fd for the child's stdout and an
/// optional `PATH` to search instead of tracer's (both used by tests).
fn spawn_suspended_inner(
    argv: &[OsString],
    run_as: Option<&RunAs>,
    stdout: Option<BorrowedFd<'_>>,
    search_path: Option<&OsStr>,
) -> Result<Suspended> {
    spawn_suspended_env(argv, run_as, stdout, search_path, &[])
}

fn spawn_suspended_env(
    argv: &[OsString],
    run_as: Option<&RunAs>,
    stdout: Option<BorrowedFd<'_>>,
    search_path: Option<&OsStr>,
    extra_env: &[(OsString, OsString)],
) -> Result<Suspended> {
    let Some(arg0) = argv.first() else {
        bail!("no command given");
    };
    let program_name = arg0.to_string_lossy().into_owned();

    // Build everything before fork: no allocation is allowed afterwards.
    let path_var = std::env::var_os("PATH");
    let candidates = resolve_program(arg0, search_path.or(path_var.as_deref()), run_as)?;
    let c_candidates = candidates
        .into_iter()
        .map(|p| CString::new(p.into_os_string().into_vec()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| anyhow!("command name contains a NUL byte: {program_name}"))?;
    let c_args = argv
        .iter()
        .map(|a| {
            CString::new(a.as_bytes()).map_err(|_| anyhow!("argument contains a NUL byte: {}", a.to_string_lossy()))
        })
        .collect::<Result<Vec<_>>>()?;
    let mut c_env = child_environment(run_as);
    add_environment(&mut c_env, extra_env);
    let argv_ptrs = null_terminated(&c_args);
    let envp_ptrs = null_terminated(&c_env);
    let groups: Vec<libc::gid_t> = run_as.map(|r| r.groups.clone()).unwrap_or_default();

    let (release_rd, release_wr) = pipe_cloexec().context("cannot create a pipe")?;
    let (status_rd, status_wr) = pipe_cloexec().context("cannot create a pipe")?;

    let plan = ChildPlan {
        candidates: &c_candidates,
        argv: &argv_ptrs,
        envp: &envp_ptrs,
        creds: run_as.map(|r| (&groups[..], r.gid, r.uid)),
        release_rd: release_rd.as_raw_fd(),
        release_wr: release_wr.as_raw_fd(),
        status_rd: status_rd.as_raw_fd(),
        status_wr: status_wr.as_raw_fd(),
        stdout: stdout.map(|fd| fd.as_raw_fd()),
    };

    // SAFETY: the child branch only calls async-signal-safe functions on
    // data prepared above, and always ends in execve or _exit.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(anyhow!(
            "cannot start {program_name}: fork failed: {}",
            os_error_text(&io::Error::last_os_error())
        ));
    }
    if pid == 0 {
        // SAFETY: we are the freshly forked child.
        unsafe { child_after_fork(&plan) }
    }

    // Parent: the child owns its own copies of these ends.
    drop(release_rd);
    drop(status_wr);
    let pidfd = match pidfd_open(pid) {
        Ok(fd) => Some(fd),
        Err(e) => {
            log::debug!("pidfd_open({pid}) failed ({e}); falling back to a blocking waitpid");
            None
        }
    };
    Ok(Suspended {
        pid: pid as u32,
        release_wr: Some(release_wr),
        status_rd: Some(status_rd),
        pidfd,
        program: program_name,
        run_as: run_as.map(|r| r.user.clone().unwrap_or_else(|| format!("uid {}", r.uid))),
    })
}

impl Suspended {
    /// Lets the command run: the child switches user and execs.
    ///
    /// This blocks only until the exec has happened, which is quick. If the
    /// user switch or the exec fails (e.g. the invoking user may not execute
    /// the program), the child is reaped and a one-line error is returned.
    pub fn release(mut self) -> Result<Child> {
        let release_wr = self.release_wr.take().expect("suspended child released twice");
        if let Err(e) = write_all(release_wr.as_raw_fd(), &[1]) {
            // EPIPE: the child already died (e.g. a signal while suspended).
            // Its status is reported by wait().
            log::debug!("releasing pid {}: {e}", self.pid);
        }
        drop(release_wr);

        let report = match self.status_rd.take() {
            Some(fd) => read_status(&fd),
            None => Ok(None),
        };
        let pidfd = self.pidfd.take();
        let (tag, errno) = match report {
            Ok(None) => {
                return Ok(Child { pid: self.pid, pidfd: pidfd.map(PidFd::Raw), exit: None, blocking: None });
            }
            Ok(Some(r)) => r,
            Err(e) => {
                log::warn!("cannot read the exec status of pid {}: {e}", self.pid);
                return Ok(Child { pid: self.pid, pidfd: pidfd.map(PidFd::Raw), exit: None, blocking: None });
            }
        };
        // The child _exits right after reporting, so this returns at once.
        if let Err(e) = waitpid_blocking(self.pid) {
            log::debug!("reaping pid {}: {e}", self.pid);
        }
        let err = os_error_text(&io::Error::from_raw_os_error(errno));
        let who = self.run_as.as_deref().unwrap_or("the invoking user");
        Err(match tag {
            b'G' => anyhow!("cannot run {} as {who}: setgroups failed: {err}", self.program),
            b'g' => anyhow!("cannot run {} as {who}: setgid failed: {err}", self.program),
            b'u' => anyhow!("cannot run {} as {who}: setuid failed: {err}", self.program),
            _ => anyhow!("cannot execute {}: {err}", self.program),
        })
    }

    /// Gives up without running the command. The child exits with status 125
    /// without exec'ing, and is reaped. Returns its exit status.
    pub fn cancel(mut self) -> Result<ExitInfo> {
        self.abandon().context("cannot reap the cancelled command")
    }

    fn abandon(&mut self) -> io::Result<ExitInfo> {
        // Closing the release pipe without writing makes the child _exit(125).
        self.release_wr.take();
        self.status_rd.take();
        self.pidfd.take();
        waitpid_blocking(self.pid)
    }
}

impl Drop for Suspended {
    fn drop(&mut self) {
        if self.release_wr.is_some()
            && let Err(e) = self.abandon()
        {
            log::debug!("reaping unreleased pid {}: {e}", self.pid);
        }
    }
}

/// Looks `arg0` up in `path_var` (the child's `PATH`) the way `execvp` would.
///
/// Returns the paths the child should try, in order. Tracer runs as root
/// here, so this can only check the mode bits for `run_as`. It cannot tell
/// whether that user may reach the file (a candidate under `/root`, say). So
/// the child tries the candidates itself after switching user, skipping
/// `EACCES`/`ENOENT` as `execvp` does. An error from that point on comes back
/// from [`Suspended::release`].
fn resolve_program(arg0: &OsStr, path_var: Option<&OsStr>, run_as: Option<&RunAs>) -> Result<Vec<PathBuf>> {
    let name = arg0.to_string_lossy();
    if arg0.is_empty() {
        bail!("command not found: \"\"");
    }
    if arg0.as_bytes().contains(&b'/') {
        let path = PathBuf::from(arg0);
        return match exec_access(&path, run_as) {
            Access::Ok => Ok(vec![path]),
            Access::Missing => bail!("command not found: {name}"),
            Access::Directory => bail!("cannot execute {name}: is a directory"),
            Access::Denied => bail!("cannot execute {name}: permission denied"),
        };
    }
    let path_var = path_var.unwrap_or(OsStr::new(DEFAULT_PATH));
    let mut candidates = Vec::new();
    let mut not_executable = None;
    for dir in path_var.as_bytes().split(|&b| b == b':') {
        // An empty entry means the current directory.
        let dir = if dir.is_empty() { Path::new(".") } else { Path::new(OsStr::from_bytes(dir)) };
        let candidate = dir.join(arg0);
        match exec_access(&candidate, run_as) {
            Access::Ok => candidates.push(candidate),
            Access::Denied => {
                not_executable.get_or_insert(candidate);
            }
            Access::Missing | Access::Directory => {}
        }
    }
    if !candidates.is_empty() {
        return Ok(candidates);
    }
    match not_executable {
        Some(p) => bail!("command not found: {name} ({} is not executable)", p.display()),
        None => bail!("command not found: {name}"),
    }
}

enum Access {
    Ok,
    Missing,
    Directory,
    Denied,
}

/// Whether the user the command runs as may execute `path`.
fn exec_access(path: &Path, run_as: Option<&RunAs>) -> Access {
    let md = match std::fs::metadata(path) {
        Ok(md) => md,
        Err(e) if e.kind() == io::ErrorKind::PermissionDenied => return Access::Denied,
        Err(_) => return Access::Missing,
    };
    if md.is_dir() {
        return Access::Directory;
    }
    if !md.is_file() {
        return Access::Denied;
    }
    let Some(r) = run_as else {
        // Tracer's own user: ask the kernel (it handles ACLs and root too).
        let Ok(c) = CString::new(path.as_os_str().as_bytes()) else {
            return Access::Missing;
        };
        // SAFETY: c is a valid NUL-terminated path.
        let ok = unsafe { libc::faccessat(libc::AT_FDCWD, c.as_ptr(), libc::X_OK, libc::AT_EACCESS) } == 0;
        return if ok { Access::Ok } else { Access::Denied };
    };
    let mode = md.mode();
    let bit = if r.uid == 0 {
        0o111
    } else if md.uid() == r.uid {
        0o100
    } else if md.gid() == r.gid || r.groups.contains(&md.gid()) {
        0o010
    } else {
        0o001
    };
    if mode & bit != 0 { Access::Ok } else { Access::Denied }
}

/// The child's environment: tracer's own, with `USER`, `LOGNAME` and `HOME`
/// replaced for `run_as` when known.
fn child_environment(run_as: Option<&RunAs>) -> Vec<CString> {
    let mut overrides: Vec<(&str, &str)> = Vec::new();
    if let Some(r) = run_as {
        if let Some(user) = &r.user {
            overrides.push(("USER", user));
            overrides.push(("LOGNAME", user));
        }
        if let Some(home) = &r.home {
            overrides.push(("HOME", home));
        }
    }
    let mut env = Vec::new();
    for (key, value) in std::env::vars_os() {
        if overrides.iter().any(|(k, _)| key == *k) {
            continue;
        }
        let mut entry = key.into_vec();
        entry.push(b'=');
        entry.extend_from_slice(value.as_bytes());
        if let Ok(c) = CString::new(entry) {
            env.push(c);
        }
    }
    for (key, value) in overrides {
        if let Ok(c) = CString::new(format!("{key}={value}")) {
            env.push(c);
        }
    }
    env
}

/// Sets `extra` in `env` ("KEY=VALUE" entries), replacing existing keys.
fn add_environment(env: &mut Vec<CString>, extra: &[(OsString, OsString)]) {
    for (key, value) in extra {
        let mut prefix = key.as_bytes().to_vec();
        prefix.push(b'=');
        env.retain(|e| !e.as_bytes().starts_with(&prefix));
        let mut entry = prefix;
        entry.extend_from_slice(value.as_bytes());
        if let Ok(c) = CString::new(entry) {
            env.push(c);
        }
    }
}

fn null_terminated(strings: &[CString]) -> Vec<*const c_char> {
    strings.iter().map(|s| s.as_ptr()).chain(std::iter::once(ptr::null())).collect()
}

/// Everything the forked child needs, prepared before fork.
struct ChildPlan<'a> {
    /// Paths to try in order, as execvp would (see [`resolve_program`]).
    candidates: &'a [CString],
    argv: &'a [*const c_char],
    envp: &'a [*const c_char],
    /// (supplementary groups, gid, uid)
    creds: Option<(&'a [libc::gid_t], libc::gid_t, libc::uid_t)>,
    release_rd: RawFd,
    release_wr: RawFd,
    status_rd: RawFd,
    status_wr: RawFd,
    stdout: Option<RawFd>,
}

/// Runs in the child between fork and exec. Async-signal-safe calls only:
/// no allocation, no locks, no panics, no destructors.
unsafe fn child_after_fork(plan: &ChildPlan<'_>) -> ! {
    unsafe {
        libc::close(plan.release_wr);
        libc::close(plan.status_rd);
        reset_signals();
        // the command runs under the normal policy, whatever the recorder's thread had
        // (collect/own_sched.rs: SCHED_BATCH and SCHED_IDLE are inherited)
        let normal = libc::sched_param { sched_priority: 0 };
        libc::sched_setscheduler(0, libc::SCHED_OTHER, &normal);
        if let Some(fd) = plan.stdout
            && libc::dup2(fd, libc::STDOUT_FILENO) < 0
        {
            libc::_exit(EXIT_CREDENTIALS_FAILED);
        }

        // Wait for release. EOF means tracer gave up (or died): do not exec.
        let mut byte = 0u8;
        loop {
            let n = libc::read(plan.release_rd, (&raw mut byte).cast(), 1);
            if n == 1 {
                break;
            }
            if n < 0 && errno() == libc::EINTR {
                continue;
            }
            libc::_exit(EXIT_NOT_RELEASED);
        }
        libc::close(plan.release_rd);

        if let Some((groups, gid, uid)) = plan.creds {
            if libc::setgroups(groups.len() as _, groups.as_ptr()) != 0 {
                child_fail(plan.status_wr, b'G', b"setgroups", errno());
            }
            if libc::setgid(gid) != 0 {
                child_fail(plan.status_wr, b'g', b"setgid", errno());
            }
            if libc::setuid(uid) != 0 {
                child_fail(plan.status_wr, b'u', b"setuid", errno());
            }
        }

        // Try each candidate as execvp does: skip the ones this user cannot
        // reach or that vanished; any other error is final. When all fail,
        // EACCES wins over ENOENT.
        let mut err = 0;
        let mut saw_eacces = false;
        for path in plan.candidates {
            libc::execve(path.as_ptr(), plan.argv.as_ptr(), plan.envp.as_ptr());
            match errno() {
                libc::EACCES => saw_eacces = true,
                libc::ENOENT | libc::ENOTDIR | libc::ESTALE | libc::ENODEV | libc::ETIMEDOUT => {}
                other => {
                    err = other;
                    break;
                }
            }
        }
        if err == 0 {
            err = if saw_eacces { libc::EACCES } else { libc::ENOENT };
        }
        report_status(plan.status_wr, b'E', err);
        libc::_exit(EXIT_EXEC_FAILED);
    }
}

/// Child side: a user switch call failed. Write the errno to stderr, report
/// it on the status pipe, and `_exit(126)`.
unsafe fn child_fail(status_wr: RawFd, tag: u8, call: &[u8], err: i32) -> ! {
    let mut msg = StackBuf::new();
    msg.push(b"tracer: ");
    msg.push(call);
    msg.push(b" failed in the child: errno ");
    msg.push_num(err as u64);
    msg.push(b"\n");
    let _ = write_all(libc::STDERR_FILENO, msg.as_slice());
    report_status(status_wr, tag, err);
    unsafe { libc::_exit(EXIT_CREDENTIALS_FAILED) }
}

fn report_status(status_wr: RawFd, tag: u8, err: i32) {
    let e = err.to_ne_bytes();
    let _ = write_all(status_wr, &[tag, e[0], e[1], e[2], e[3]]);
}

/// Child side: gives signals the dispositions a freshly exec'd program would
/// get. Handlers tracer (tokio) installed go back to the default, `SIGPIPE`
/// is set to the default, ignored signals stay ignored, and the mask is
/// cleared.
unsafe fn reset_signals() {
    unsafe {
        for sig in 1..65 {
            if sig == libc::SIGKILL || sig == libc::SIGSTOP {
                continue;
            }
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(sig, ptr::null(), &mut old) != 0 {
                continue; // not a valid signal, or reserved by libc
            }
            let caught = old.sa_sigaction != libc::SIG_DFL && old.sa_sigaction != libc::SIG_IGN;
            if caught || (sig == libc::SIGPIPE && old.sa_sigaction != libc::SIG_DFL) {
                let mut new: libc::sigaction = std::mem::zeroed();
                new.sa_sigaction = libc::SIG_DFL;
                libc::sigemptyset(&mut new.sa_mask);
                libc::sigaction(sig, &new, ptr::null_mut());
            }
        }
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::pthread_sigmask(libc::SIG_SETMASK, &set, ptr::null_mut());
    }
}

/// A fixed-size message buffer the child can fill without allocating.
struct StackBuf {
    buf: [u8; 128],
    len: usize,
}

impl StackBuf {
    fn new() -> Self {
        StackBuf { buf: [0; 128], len: 0 }
    }
    fn push(&mut self, bytes: &[u8]) {
        for &b in bytes {
            if self.len < self.buf.len() {
                self.buf[self.len] = b;
                self.len += 1;
            }
        }
    }
    fn push_num(&mut self, mut n: u64) {
        let mut digits = [0u8; 20];
        let mut i = digits.len();
        loop {
            i -= 1;
            digits[i] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        self.push(&digits[i..]);
    }
    fn as_slice(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

fn errno() -> i32 {
    io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// `write` until done, retrying on EINTR. Async-signal-safe.
fn write_all(fd: RawFd, mut data: &[u8]) -> io::Result<()> {
    while !data.is_empty() {
        // SAFETY: data is a valid buffer of data.len() bytes.
        let n = unsafe { libc::write(fd, data.as_ptr().cast(), data.len()) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return Err(e);
        }
        data = &data[n as usize..];
    }
    Ok(())
}

/// Parent side: reads the status pipe until EOF. `None` means the exec worked
/// (or the child died before trying). `Some((tag, errno))` means it failed.
fn read_status(fd: &OwnedFd) -> io::Result<Option<(u8, i32)>> {
    let mut buf = [0u8; 5];
    let mut got = 0;
    while got < buf.len() {
        // SAFETY: the destination is inside buf.
        let n = unsafe { libc::read(fd.as_raw_fd(), buf[got..].as_mut_ptr().cast(), buf.len() - got) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return Err(e);
        }
        if n == 0 {
            break;
        }
        got += n as usize;
    }
    Ok((got == buf.len()).then(|| (buf[0], i32::from_ne_bytes([buf[1], buf[2], buf[3], buf[4]]))))
}

fn pipe_cloexec() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: fds has room for two descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: pipe2 just returned these two fds, and nothing else owns them.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

fn pidfd_open(pid: libc::pid_t) -> io::Result<OwnedFd> {
    // SAFETY: plain syscall. The returned fd is ours, and pidfds are always close-on-exec.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd is a new descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

// ---------------------------------------------------------------------------
// Running child, exit status
// ---------------------------------------------------------------------------

/// How the command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExitInfo {
    /// Exit status, when it exited normally.
    pub code: Option<i32>,
    /// Signal number, when a signal killed it.
    pub signal: Option<i32>,
}

impl ExitInfo {
    /// The status a shell would report: the exit code, or 128 + signal.
    pub fn exit_code(&self) -> i32 {
        match (self.code, self.signal) {
            (Some(code), _) => code,
            (None, Some(sig)) => 128 + sig,
            (None, None) => 1,
        }
    }

    fn from_wait_status(status: libc::c_int) -> Self {
        if libc::WIFEXITED(status) {
            ExitInfo { code: Some(libc::WEXITSTATUS(status)), signal: None }
        } else if libc::WIFSIGNALED(status) {
            ExitInfo { code: None, signal: Some(libc::WTERMSIG(status)) }
        } else {
            ExitInfo { code: None, signal: None }
        }
    }
}

impl fmt::Display for ExitInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.code, self.signal) {
            (Some(code), _) => write!(f, "exited with status {code}"),
            (None, Some(sig)) => write!(f, "killed by {} (signal {sig})", signal_name(sig)),
            (None, None) => write!(f, "ended with an unknown status"),
        }
    }
}

enum PidFd {
    Raw(OwnedFd),
    Async(AsyncFd<OwnedFd>),
}

/// A released (running) command. Wait for it with [`Child::wait`] or
/// [`wait_forwarding_signals`]. Dropping it without waiting leaves it running
/// (and unreaped until tracer exits).
pub struct Child {
    pub pid: u32,
    pidfd: Option<PidFd>,
    exit: Option<ExitInfo>,
    /// Fallback when pidfd is not available: a blocking waitpid(pid).
    blocking: Option<tokio::task::JoinHandle<io::Result<ExitInfo>>>,
}

impl fmt::Debug for Child {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Child").field("pid", &self.pid).field("exit", &self.exit).finish()
    }
}

impl Child {
    /// Waits for the command to exit and reaps it (only this pid). Cancel-safe.
    /// Once it has returned, later calls return the same status.
    pub async fn wait(&mut self) -> Result<ExitInfo> {
        if let Some(info) = self.exit {
            return Ok(info);
        }
        let pid = self.pid;
        let info = self.wait_inner().await.with_context(|| format!("cannot wait for pid {pid}"))?;
        self.exit = Some(info);
        Ok(info)
    }

    async fn wait_inner(&mut self) -> io::Result<ExitInfo> {
        if let Some(PidFd::Raw(_)) = self.pidfd {
            let Some(PidFd::Raw(fd)) = self.pidfd.take() else { unreachable!() };
            // SAFETY: the OwnedFd is open and is owned by the AsyncFd until it is dropped.
            match unsafe { AsyncFd::register_with_interest(fd, Interest::READABLE) } {
                Ok(afd) => self.pidfd = Some(PidFd::Async(afd)),
                Err(e) => {
                    let (_, e) = e.into_parts();
                    log::debug!("cannot poll the pidfd of {} ({e}); using a blocking waitpid", self.pid)
                }
            }
        }
        if let Some(PidFd::Async(afd)) = &self.pidfd {
            loop {
                let mut guard = afd.readable().await?;
                if let Some(info) = waitpid_nohang(self.pid)? {
                    self.pidfd = None;
                    return Ok(info);
                }
                guard.clear_ready();
            }
        }
        let pid = self.pid;
        let handle = self.blocking.get_or_insert_with(|| tokio::task::spawn_blocking(move || waitpid_blocking(pid)));
        let result = handle.await.map_err(io::Error::other)?;
        self.blocking = None;
        result
    }

    /// Returns the exit status if the command has already exited (and reaps it).
    pub fn try_wait(&mut self) -> Result<Option<ExitInfo>> {
        if self.exit.is_none() && self.blocking.is_none() {
            self.exit = waitpid_nohang(self.pid).with_context(|| format!("cannot wait for pid {}", self.pid))?;
        }
        Ok(self.exit)
    }

    /// Sends `sig` to the command, if it has not been reaped yet.
    pub fn signal(&self, sig: i32) -> io::Result<()> {
        if self.exit.is_some() {
            return Ok(());
        }
        forward_signal(self.pid, sig)
    }
}

fn waitpid_nohang(pid: u32) -> io::Result<Option<ExitInfo>> {
    let mut status = 0;
    loop {
        // SAFETY: status is a valid out pointer; we wait for this exact pid.
        let r = unsafe { libc::waitpid(pid as libc::pid_t, &mut status, libc::WNOHANG) };
        if r == 0 {
            return Ok(None);
        }
        if r > 0 {
            return Ok(Some(ExitInfo::from_wait_status(status)));
        }
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINTR) {
            return Err(e);
        }
    }
}

fn waitpid_blocking(pid: u32) -> io::Result<ExitInfo> {
    let mut status = 0;
    loop {
        // SAFETY: status is a valid out pointer; we wait for this exact pid.
        let r = unsafe { libc::waitpid(pid as libc::pid_t, &mut status, 0) };
        if r > 0 {
            return Ok(ExitInfo::from_wait_status(status));
        }
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINTR) {
            return Err(e);
        }
    }
}

// ---------------------------------------------------------------------------
// Signals
// ---------------------------------------------------------------------------

/// Tracer's handlers for SIGINT, SIGTERM and SIGHUP. While (and after) one
/// exists, those signals no longer kill tracer. They are delivered through
/// [`StopSignals::recv`] instead.
///
/// Create it early (before spawning) to close the window in which a Ctrl-C
/// would still kill tracer outright. A signal is only queued for a
/// `StopSignals` that already exists when the signal arrives.
pub struct StopSignals {
    int: Signal,
    term: Signal,
    hup: Signal,
}

impl StopSignals {
    pub fn new() -> io::Result<Self> {
        Ok(StopSignals {
            int: signal(SignalKind::interrupt())?,
            term: signal(SignalKind::terminate())?,
            hup: signal(SignalKind::hangup())?,
        })
    }

    /// Waits for the next SIGINT, SIGTERM or SIGHUP and returns its number.
    pub async fn recv(&mut self) -> i32 {
        tokio::select! {
            Some(()) = self.int.recv() => libc::SIGINT,
            Some(()) = self.term.recv() => libc::SIGTERM,
            Some(()) = self.hup.recv() => libc::SIGHUP,
            else => std::future::pending().await,
        }
    }
}

/// A source of signal numbers. Real signals in tracer, injected ones in tests.
trait SignalSource {
    async fn next_signal(&mut self) -> i32;
}

impl SignalSource for StopSignals {
    async fn next_signal(&mut self) -> i32 {
        self.recv().await
    }
}

/// Waits until tracer itself is asked to stop (SIGINT, SIGTERM or SIGHUP)
/// and returns the signal number. This is for `-p PID` mode, where there is
/// no child. If the handlers cannot be installed, the signals keep their
/// default action (which kills tracer) and this never returns.
pub async fn wait_for_stop_signal() -> i32 {
    match StopSignals::new() {
        Ok(mut signals) => signals.recv().await,
        Err(e) => {
            log::error!("cannot install signal handlers: {}", os_error_text(&e));
            std::future::pending().await
        }
    }
}

/// Waits for the command to exit. Meanwhile SIGINT, SIGTERM and SIGHUP do
/// not kill tracer: each one is forwarded to the command, and tracer keeps
/// tracing until the command exits.
///
/// Every signal is forwarded, SIGINT included. A Ctrl-C at the terminal
/// already reaches the command, because it shares tracer's process group,
/// so the command gets SIGINT twice. We accept that (for a Python program it
/// is harmless enough), because tracer cannot tell a terminal's SIGINT from
/// a `kill -INT <tracer pid>` aimed at tracer alone, and the latter must
/// reach the command.
pub async fn wait_forwarding_signals(child: Child) -> Result<ExitInfo> {
    let mut signals = StopSignals::new().context("cannot install signal handlers")?;
    wait_forwarding_signals_with(child, &mut signals, |_| {}).await
}

/// [`wait_forwarding_signals`] with handlers the caller installed earlier
/// (see [`StopSignals`]). `on_signal` is called with each signal number after
/// it has been forwarded.
pub async fn wait_forwarding_signals_with(
    mut child: Child,
    signals: &mut StopSignals,
    on_signal: impl FnMut(i32),
) -> Result<ExitInfo> {
    forward_until_exit(&mut child, signals, on_signal).await
}

async fn forward_until_exit<S: SignalSource>(
    child: &mut Child,
    signals: &mut S,
    mut on_signal: impl FnMut(i32),
) -> Result<ExitInfo> {
    let pid = child.pid;
    let exit = child.wait();
    tokio::pin!(exit);
    loop {
        tokio::select! {
            biased;
            result = &mut exit => return result,
            sig = signals.next_signal() => {
                log::info!("received {}: forwarding it to the command (pid {pid})", signal_name(sig));
                // The child is not reaped before `exit` completes, so its pid
                // cannot have been reused: this cannot hit another process.
                if let Err(e) = forward_signal(pid, sig) {
                    log::warn!("cannot forward {} to pid {pid}: {}", signal_name(sig), os_error_text(&e));
                }
                on_signal(sig);
            }
        }
    }
}

/// Sends `sig` to process `pid`. Only a single positive pid is accepted, never
/// a process group. A process that no longer exists is not an error.
pub fn forward_signal(pid: u32, sig: i32) -> io::Result<()> {
    let pid = match libc::pid_t::try_from(pid) {
        Ok(p) if p > 0 => p,
        _ => {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("invalid pid {pid}")));
        }
    };
    // SAFETY: kill has no memory-safety preconditions.
    if unsafe { libc::kill(pid, sig) } == 0 {
        return Ok(());
    }
    let e = io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::ESRCH) { Ok(()) } else { Err(e) }
}

fn signal_name(sig: i32) -> Cow<'static, str> {
    let name = match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        _ => return Cow::Owned(format!("signal {sig}")),
    };
    Cow::Borrowed(name)
}

/// `io::Error`'s message without the " (os error N)" suffix.
pub(crate) fn os_error_text(e: &io::Error) -> String {
    let text = e.to_string();
    match text.rfind(" (os error ") {
        Some(i) => text[..i].to_string(),
        None => text,
    }
}

// ---------------------------------------------------------------------------
// Output files
// ---------------------------------------------------------------------------

/// Gives `path` to the invoking user (does nothing when `run_as` is `None`).
/// Does not follow a symlink at `path`.
pub fn chown_to(path: &Path, run_as: Option<&RunAs>) -> io::Result<()> {
    match run_as {
        Some(r) => std::os::unix::fs::lchown(path, Some(r.uid), Some(r.gid)),
        None => Ok(()),
    }
}

/// Creates an output file for writing and gives it to the invoking user.
/// `mode` is the mode a new file gets, before the umask (callers pass `0o644`).
///
/// Without `force`, an existing file is refused (`O_EXCL`). With `force`, it
/// is truncated. Either way a symlink at `path` is refused (`O_NOFOLLOW`).
/// Only a regular file with a single link is chowned. So `--force -o
/// /dev/null` does not give `/dev/null` away, and neither does a hard link.
/// Errors are one line, e.g. `output file X exists (use --force to overwrite)`.
pub fn create_output_file(path: &Path, force: bool, run_as: Option<&RunAs>, mode: u32) -> Result<File> {
    let mut opts = OpenOptions::new();
    opts.write(true).mode(mode).custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC);
    if force {
        opts.create(true).truncate(true);
    } else {
        opts.create_new(true);
    }
    let file = opts.open(path).map_err(|e| output_file_error(path, &e))?;
    if let Some(r) = run_as {
        let md = file.metadata().map_err(|e| anyhow!("cannot stat {}: {}", path.display(), os_error_text(&e)))?;
        if md.file_type().is_file() && md.nlink() == 1 {
            std::os::unix::fs::fchown(&file, Some(r.uid), Some(r.gid))
                .map_err(|e| anyhow!("cannot give {} to uid {}: {}", path.display(), r.uid, os_error_text(&e)))?;
        }
    }
    Ok(file)
}

fn output_file_error(path: &Path, e: &io::Error) -> anyhow::Error {
    let p = path.display();
    let meta = std::fs::symlink_metadata(path).ok();
    let is_symlink = meta.as_ref().is_some_and(|m| m.file_type().is_symlink());
    let is_dir = meta.as_ref().is_some_and(|m| m.is_dir());
    match e.raw_os_error() {
        Some(libc::EEXIST | libc::ELOOP) if is_symlink => {
            anyhow!("{p} is a symbolic link: refusing to follow it")
        }
        Some(libc::EEXIST | libc::EISDIR) if is_dir => {
            anyhow!("cannot create {p}: it is a directory")
        }
        Some(libc::EEXIST) => anyhow!("output file {p} exists (use --force to overwrite)"),
        Some(libc::ENOENT) => {
            let dir = match path.parent() {
                Some(d) if !d.as_os_str().is_empty() => d,
                _ => Path::new("."),
            };
            if dir.exists() {
                anyhow!("cannot create {p}: no such file or directory")
            } else {
                anyhow!("cannot create {p}: directory {} does not exist", dir.display())
            }
        }
        Some(libc::ENOTDIR) => {
            anyhow!("cannot create {p}: a component of its directory is not a directory")
        }
        Some(libc::EACCES | libc::EPERM) => anyhow!("cannot create {p}: permission denied"),
        Some(libc::EROFS) => anyhow!("cannot create {p}: read-only file system"),
        _ => anyhow!("cannot create {p}: {}", os_error_text(e)),
    }
}

// ---------------------------------------------------------------------------
// Tests (most need root, which is how tracer runs)
// ---------------------------------------------------------------------------

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::os::fd::AsFd;
    use std::os::unix::fs::PermissionsExt;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    fn is_root() -> bool {
        // SAFETY: no preconditions.
        unsafe { libc::geteuid() == 0 }
    }

    macro_rules! require_root {
        () => {
            if !is_root() {
                eprintln!("skipped: needs root");
                return;
            }
        };
    }

    fn args(list: &[&str]) -> Vec<OsString> {
        list.iter().map(OsString::from).collect()
    }

    fn nobody() -> RunAs {
        invoking_user_from(Some("65534".as_ref()), Some("65534".as_ref()), Some("nobody".as_ref()))
            .unwrap()
            .expect("a sudo user")
    }

    struct TempDir(PathBuf);

    impl TempDir {
        fn new(tag: &str) -> Self {
            static N: AtomicUsize = AtomicUsize::new(0);
            let n = N.fetch_add(1, Ordering::Relaxed);
            let p = std::env::temp_dir().join(format!("tracer-spawn-{}-{tag}-{n}", std::process::id()));
            std::fs::create_dir(&p).unwrap();
            TempDir(p)
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// Whether `fd` becomes readable within `ms` milliseconds.
    fn readable_within(fd: &OwnedFd, ms: i32) -> bool {
        let mut pfd = libc::pollfd { fd: fd.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid pollfd.
        unsafe { libc::poll(&mut pfd, 1, ms) > 0 }
    }

    fn read_all(fd: OwnedFd) -> String {
        let mut s = String::new();
        File::from(fd).read_to_string(&mut s).unwrap();
        s
    }

    fn read_line(fd: &OwnedFd) -> String {
        let mut line = Vec::new();
        let mut b = [0u8; 1];
        loop {
            // SAFETY: one-byte buffer.
            let n = unsafe { libc::read(fd.as_raw_fd(), b.as_mut_ptr().cast(), 1) };
            if n <= 0 || b[0] == b'\n' {
                return String::from_utf8(line).unwrap();
            }
            line.push(b[0]);
        }
    }

    #[test]
    fn extra_environment_replaces_and_adds() {
        let mut env: Vec<CString> = ["PATH=/bin", "TRACER_MARKER_FIFO=/old", "TRACER_MARKER_FIFOX=1"]
            .map(|s| CString::new(s).unwrap())
            .to_vec();
        add_environment(&mut env, &[("TRACER_MARKER_FIFO".into(), "/tmp/x/markers".into()), ("A".into(), "b".into())]);
        let got: Vec<&str> = env.iter().map(|c| c.to_str().unwrap()).collect();
        assert_eq!(got, ["PATH=/bin", "TRACER_MARKER_FIFOX=1", "TRACER_MARKER_FIFO=/tmp/x/markers", "A=b"]);
    }

    #[test]
    fn invoking_user_from_sudo_values() {
        let r = nobody();
        assert_eq!((r.uid, r.gid), (65534, 65534));
        assert!(r.groups.contains(&65534), "{:?}", r.groups);
        assert_eq!(r.user.as_deref(), Some("nobody"));
        assert_eq!(r.home.as_deref(), Some("/nonexistent"));

        // Name from passwd when SUDO_USER is missing.
        let r = invoking_user_from(Some("65534".as_ref()), Some("65534".as_ref()), None).unwrap().unwrap();
        assert_eq!(r.user.as_deref(), Some("nobody"));

        assert_eq!(invoking_user_from(None, None, None).unwrap(), None);
        assert_eq!(invoking_user_from(Some("0".as_ref()), Some("0".as_ref()), Some("root".as_ref())).unwrap(), None);

        for bad in ["abc", "", "-1", "+5", "12x", "4294967295", "99999999999"] {
            let e = invoking_user_from(Some(bad.as_ref()), Some("1".as_ref()), None).unwrap_err().to_string();
            assert_eq!(e, format!("invalid SUDO_UID value {bad:?}: expected a numeric id"));
        }
        let e = invoking_user_from(Some("1000".as_ref()), Some("x".as_ref()), None).unwrap_err().to_string();
        assert!(e.contains("invalid SUDO_GID value \"x\""), "{e}");
        let e = invoking_user_from(Some("1000".as_ref()), None, None).unwrap_err().to_string();
        assert!(e.contains("SUDO_GID is not"), "{e}");

        assert_eq!(invoking_user(true).unwrap(), None);
    }

    #[tokio::test]
    async fn suspended_until_release_then_runs_as_invoking_user() {
        require_root!();
        let run_as = nobody();
        let (out_r, out_w) = pipe_cloexec().unwrap();
        let argv = args(&["sh", "-c", "echo started; id -u; id -g; id -G; echo \"$USER $LOGNAME $HOME\""]);
        let s = spawn_suspended_inner(&argv, Some(&run_as), Some(out_w.as_fd()), None).unwrap();
        drop(out_w);

        // Not running yet: no output, still tracer's image, still root.
        assert!(!readable_within(&out_r, 200), "command ran before release");
        let exe = std::fs::read_link(format!("/proc/{}/exe", s.pid)).unwrap();
        assert_eq!(exe, std::fs::read_link("/proc/self/exe").unwrap());
        let status = std::fs::read_to_string(format!("/proc/{}/status", s.pid)).unwrap();
        assert!(status.lines().any(|l| l.starts_with("Uid:\t0\t")), "{status}");
        // Same process group as tracer (stays in the terminal's foreground).
        // SAFETY: no preconditions.
        assert_eq!(unsafe { libc::getpgid(s.pid as i32) }, unsafe { libc::getpgrp() });

        let mut child = s.release().unwrap();
        assert_eq!(read_all(out_r), "started\n65534\n65534\n65534\nnobody nobody /nonexistent\n");
        let info = child.wait().await.unwrap();
        assert_eq!(info, ExitInfo { code: Some(0), signal: None });
        assert_eq!(child.wait().await.unwrap(), info); // cached, no second waitpid
    }

    #[test]
    fn cancelled_child_exits_125_without_exec() {
        let (out_r, out_w) = pipe_cloexec().unwrap();
        let s = spawn_suspended_inner(&args(&["sh", "-c", "echo ran"]), None, Some(out_w.as_fd()), None).unwrap();
        drop(out_w);
        let info = s.cancel().unwrap();
        assert_eq!(info, ExitInfo { code: Some(EXIT_NOT_RELEASED), signal: None });
        assert_eq!(read_all(out_r), "");

        // Dropping reaps too: afterwards the pid is no longer our child.
        let s = spawn_suspended(&args(&["true"]), None).unwrap();
        let pid = s.pid;
        drop(s);
        assert_eq!(waitpid_nohang(pid).unwrap_err().raw_os_error(), Some(libc::ECHILD));
    }

    #[test]
    fn command_not_found_and_not_executable() {
        let e = spawn_suspended(&args(&["tracer-no-such-command-xyz", "a"]), None).unwrap_err();
        assert_eq!(e.to_string(), "command not found: tracer-no-such-command-xyz");
        let e = spawn_suspended(&args(&["./no/such/prog"]), None).unwrap_err();
        assert_eq!(e.to_string(), "command not found: ./no/such/prog");
        let e = spawn_suspended(&args(&["/tmp"]), None).unwrap_err();
        assert_eq!(e.to_string(), "cannot execute /tmp: is a directory");
        assert_eq!(spawn_suspended(&[], None).unwrap_err().to_string(), "no command given");

        let dir = TempDir::new("exec");
        let script = dir.0.join("prog");
        std::fs::write(&script, "#!/bin/sh\necho hi\n").unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = spawn_suspended(&[script.clone().into_os_string()], None).unwrap_err();
        assert_eq!(e.to_string(), format!("cannot execute {}: permission denied", script.display()));

        // PATH lookup uses the given PATH: found once executable; an empty
        // entry is the current directory.
        let path_var = OsString::from(format!("/nonexistent-dir::{}", dir.0.display()));
        let e = resolve_program("prog".as_ref(), Some(&path_var), None).unwrap_err();
        assert_eq!(e.to_string(), format!("command not found: prog ({} is not executable)", script.display()));
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(resolve_program("prog".as_ref(), Some(&path_var), None).unwrap(), std::slice::from_ref(&script));
        assert_eq!(resolve_program("sh".as_ref(), Some("/bin".as_ref()), None).unwrap(), [Path::new("/bin/sh")]);
        assert!(resolve_program("sh".as_ref(), Some(dir.0.as_os_str()), None).is_err());
    }

    #[test]
    fn exec_failure_after_release_is_reported() {
        require_root!();
        // Executable by mode bits, but nobody cannot enter the 0700 directory:
        // only exec (after release) notices.
        let dir = TempDir::new("noaccess");
        std::fs::set_permissions(&dir.0, std::fs::Permissions::from_mode(0o700)).unwrap();
        let script = dir.0.join("prog");
        std::fs::write(&script, "#!/bin/sh\necho hi\n").unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();

        let run_as = nobody();
        // Non-executable for nobody by mode bits is caught up front.
        let other = dir.0.join("owner-only");
        std::fs::write(&other, "").unwrap();
        std::fs::set_permissions(&other, std::fs::Permissions::from_mode(0o744)).unwrap();
        let e = spawn_suspended(&[other.clone().into_os_string()], Some(&run_as)).unwrap_err();
        assert!(e.to_string().ends_with("permission denied"), "{e}");

        let s = spawn_suspended(&[script.clone().into_os_string()], Some(&run_as)).unwrap();
        let pid = s.pid;
        let e = s.release().unwrap_err();
        assert_eq!(e.to_string(), format!("cannot execute {}: Permission denied", script.display()));
        // Already reaped.
        assert_eq!(waitpid_nohang(pid).unwrap_err().raw_os_error(), Some(libc::ECHILD));

        // In a PATH search, a candidate the user cannot reach is skipped as
        // execvp does (as for /root/.pyenv/shims/python3 before /usr/bin/python3).
        let ok_dir = TempDir::new("reachable");
        let second = ok_dir.0.join("prog");
        std::fs::write(&second, "#!/bin/sh\necho second\n").unwrap();
        std::fs::set_permissions(&second, std::fs::Permissions::from_mode(0o755)).unwrap();
        let path_var = OsString::from(format!("{}:{}", dir.0.display(), ok_dir.0.display()));
        let (out_r, out_w) = pipe_cloexec().unwrap();
        let s = spawn_suspended_inner(&args(&["prog"]), Some(&run_as), Some(out_w.as_fd()), Some(&path_var)).unwrap();
        drop(out_w);
        let pid = s.pid;
        let _child = s.release().unwrap();
        assert_eq!(read_all(out_r), "second\n");
        assert_eq!(waitpid_blocking(pid).unwrap().code, Some(0));

        // Only unreachable candidates: EACCES, reported by release.
        let path_var = dir.0.clone().into_os_string();
        let s = spawn_suspended_inner(&args(&["prog"]), Some(&run_as), None, Some(&path_var)).unwrap();
        let e = s.release().unwrap_err();
        assert_eq!(e.to_string(), "cannot execute prog: Permission denied");
    }

    #[tokio::test]
    async fn exit_code_mapping() {
        let s = spawn_suspended(&args(&["sh", "-c", "ulimit -c 0; kill -SEGV $$"]), None).unwrap();
        let info = s.release().unwrap().wait().await.unwrap();
        assert_eq!(info, ExitInfo { code: None, signal: Some(11) });
        assert_eq!(info.exit_code(), 139);
        assert_eq!(info.to_string(), "killed by SIGSEGV (signal 11)");

        // Also exercises the fallback without pidfd (blocking waitpid).
        let s = spawn_suspended(&args(&["sh", "-c", "exit 3"]), None).unwrap();
        let mut child = s.release().unwrap();
        child.pidfd = None;
        let info = child.wait().await.unwrap();
        assert_eq!(info, ExitInfo { code: Some(3), signal: None });
        assert_eq!(info.exit_code(), 3);
    }

    /// The futures can be handed to `tokio::spawn`.
    #[allow(
        unreachable_code,
        unused_variables,
        clippy::diverging_sub_expression,
        reason = "a compile-time check, never run"
    )]
    fn _futures_are_send() {
        fn send<T: Send>(_: T) {}
        let child: Child = unimplemented!();
        let signals: &mut StopSignals = unimplemented!();
        send(wait_forwarding_signals_with(child, signals, |_| {}));
        send(wait_for_stop_signal());
        let child: Child = unimplemented!();
        send(wait_forwarding_signals(child));
    }

    impl SignalSource for tokio::sync::mpsc::UnboundedReceiver<i32> {
        async fn next_signal(&mut self) -> i32 {
            match self.recv().await {
                Some(sig) => sig,
                None => std::future::pending().await,
            }
        }
    }

    /// Exits 7 on SIGTERM; its sleep outlasts any wait for the signal.
    const TRAP_TERM: &str = "trap 'kill $! 2>/dev/null; exit 7' TERM; sleep 600 >/dev/null & echo ready; wait";

    #[tokio::test]
    async fn injected_sigterm_is_forwarded() {
        let (out_r, out_w) = pipe_cloexec().unwrap();
        let s = spawn_suspended_inner(&args(&["sh", "-c", TRAP_TERM]), None, Some(out_w.as_fd()), None).unwrap();
        drop(out_w);
        let mut child = s.release().unwrap();
        assert_eq!(read_line(&out_r), "ready");

        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        tx.send(libc::SIGTERM).unwrap();
        let mut seen = Vec::new();
        let info = forward_until_exit(&mut child, &mut rx, |s| seen.push(s)).await.unwrap();
        assert_eq!(info, ExitInfo { code: Some(7), signal: None });
        assert_eq!(seen, [libc::SIGTERM]);
    }

    /// The only test that sends real signals to the test process. It installs
    /// the handlers first, so the signals cannot kill the test binary.
    #[tokio::test]
    async fn real_signals_are_caught_and_forwarded() {
        let mut signals = StopSignals::new().unwrap();
        let (out_r, out_w) = pipe_cloexec().unwrap();
        let s = spawn_suspended_inner(&args(&["sh", "-c", TRAP_TERM]), None, Some(out_w.as_fd()), None).unwrap();
        drop(out_w);
        let child = s.release().unwrap();
        assert_eq!(read_line(&out_r), "ready");

        // SAFETY: signals our own process, whose handler is installed.
        unsafe { libc::kill(libc::getpid(), libc::SIGTERM) };
        let mut seen = Vec::new();
        let info = wait_forwarding_signals_with(child, &mut signals, |s| seen.push(s)).await.unwrap();
        assert_eq!(info.code, Some(7));
        assert_eq!(seen, [libc::SIGTERM]);

        let (sig, ()) = tokio::join!(wait_for_stop_signal(), async {
            tokio::time::sleep(Duration::from_millis(100)).await;
            // SAFETY: as above.
            unsafe { libc::kill(libc::getpid(), libc::SIGHUP) };
        });
        assert_eq!(sig, libc::SIGHUP);
    }

    #[tokio::test]
    async fn suspended_child_has_default_signal_dispositions() {
        // With tracer's handlers installed, a SIGINT to the suspended child
        // must still kill it (its copy of tokio's handler was reset).
        let _signals = StopSignals::new().unwrap();
        let s = spawn_suspended(&args(&["true"]), None).unwrap();
        // Wait until the child has reset its handlers (SigCgt: caught signals).
        let caught = |pid: u32| {
            let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
            let line = status.lines().find(|l| l.starts_with("SigCgt:")).unwrap().to_owned();
            u64::from_str_radix(line.split_whitespace().nth(1).unwrap(), 16).unwrap()
        };
        let t0 = std::time::Instant::now();
        while caught(s.pid) & (1 << (libc::SIGINT - 1)) != 0 {
            assert!(t0.elapsed() < Duration::from_secs(60), "hung: the child kept tracer's SIGINT handler for 60 s");
            std::thread::sleep(Duration::from_millis(10));
        }
        forward_signal(s.pid, libc::SIGINT).unwrap();
        let info = s.release().unwrap().wait().await.unwrap();
        assert_eq!(info.signal, Some(libc::SIGINT));
        assert_eq!(info.exit_code(), 130);

        // SIGPIPE is not ignored in the command, although Rust ignores it in tracer.
        let (out_r, out_w) = pipe_cloexec().unwrap();
        let argv = args(&["sh", "-c", "grep -E '^Sig(Ign|Blk)' /proc/self/status"]);
        let s = spawn_suspended_inner(&argv, None, Some(out_w.as_fd()), None).unwrap();
        drop(out_w);
        s.release().unwrap().wait().await.unwrap();
        let out = read_all(out_r);
        for line in out.lines() {
            let mask = u64::from_str_radix(line.split_whitespace().nth(1).unwrap(), 16).unwrap();
            assert_eq!(mask & (1 << (libc::SIGPIPE - 1)), 0, "{out}");
            if line.starts_with("SigBlk") {
                assert_eq!(mask, 0, "{out}");
            }
        }
    }

    #[test]
    fn output_files() {
        require_root!();
        let dir = TempDir::new("out");
        let run_as = nobody();
        let path = dir.0.join("trace.json");

        let mut f = create_output_file(&path, false, Some(&run_as), 0o644).unwrap();
        std::io::Write::write_all(&mut f, b"data").unwrap();
        drop(f);
        let md = std::fs::metadata(&path).unwrap();
        assert_eq!((md.uid(), md.gid()), (65534, 65534));
        assert_eq!(md.mode() & 0o7133, 0, "mode {:o}", md.mode()); // at most 0644

        let e = create_output_file(&path, false, Some(&run_as), 0o644).unwrap_err();
        assert_eq!(e.to_string(), format!("output file {} exists (use --force to overwrite)", path.display()));

        create_output_file(&path, true, None, 0o644).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 0, "truncated");

        // A symlink is refused, with or without --force, and its target is untouched.
        let target = dir.0.join("target");
        std::fs::write(&target, "keep").unwrap();
        let link = dir.0.join("link.json");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        for force in [false, true] {
            let e = create_output_file(&link, force, Some(&run_as), 0o644).unwrap_err();
            assert_eq!(e.to_string(), format!("{} is a symbolic link: refusing to follow it", link.display()));
        }
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
        assert_eq!(std::fs::metadata(&target).unwrap().uid(), 0);

        let missing = dir.0.join("nope/trace.json");
        let e = create_output_file(&missing, false, None, 0o644).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("cannot create {}: directory {} does not exist", missing.display(), dir.0.join("nope").display())
        );
        let e = create_output_file(&dir.0, true, None, 0o644).unwrap_err();
        assert_eq!(e.to_string(), format!("cannot create {}: it is a directory", dir.0.display()));

        // chown_to: no-op without a user; gives the path to the user otherwise.
        let other = dir.0.join("other");
        std::fs::write(&other, "").unwrap();
        chown_to(&other, None).unwrap();
        assert_eq!(std::fs::metadata(&other).unwrap().uid(), 0);
        chown_to(&other, Some(&run_as)).unwrap();
        assert_eq!(std::fs::metadata(&other).unwrap().uid(), 65534);
    }
}
