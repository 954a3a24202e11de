//! A file tracer keeps on this machine between runs (the durations
//! library, the host speed history): where it is, how it is read and
//! replaced.
//!
//! Read with tracer_format's bounded reads (never through a link, a
//! regular file, its [`Kind`]'s cap). A writer takes an exclusive `flock`
//! on `PATH.lock`, reads the file again under it, writes `PATH.tmp.PID`
//! (fsynced) and renames it over PATH (the directory fsynced), so
//! concurrent runs all land and a reader sees the old or the new file,
//! never a part. A corrupt or foreign file is moved aside to
//! `PATH.corrupt-UNIXSECS`. Every message names the file, what is wrong
//! and what to do.
use std::ffi::OsString;
use std::io::Write as _;
use std::os::fd::{AsRawFd as _, FromRawFd as _, OwnedFd};
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use tracer_format::open::Kind;

use crate::analysis::kept_form::{Form, FormError};

/// How long [`Kept::lock`] waits for another tracer's lock.
const LOCK_WAIT: Duration = Duration::from_secs(30);

/// One kind of kept file.
#[derive(Debug, Clone, Copy)]
pub struct Kept {
    /// Its kind for tracer_format's bounded reads (the cap).
    pub kind: Kind,
    /// Its text's form (`format`, `version`, and what the messages call it: "durations library").
    pub form: Form,
    /// What moves a corrupt or foreign file aside and starts a new one ("the next recording").
    pub replaced_by: &'static str,
    /// What the user may do instead ("or set TRACER_X to another file (empty: none)").
    pub elsewhere: &'static str,
}

/// What went wrong with a kept file, in one line (it names the file, what
/// is wrong and what to do).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptError {
    pub kind: ErrorKind,
    pub message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// Not JSON, not the file's fields, not UTF-8, or another file's `format`.
    Corrupt,
    /// A newer version's file.
    Newer,
    /// A link, not a regular file, or over its size cap: left alone.
    Refused,
    /// Reading, writing, the directory or the lock failed.
    Io,
}

impl std::fmt::Display for KeptError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for KeptError {}

pub fn io(message: String) -> KeptError {
    KeptError { kind: ErrorKind::Io, message }
}

/// `$ENV` (empty: none), else `/var/lib/tracer/NAME` as root, else
/// `$XDG_STATE_HOME/tracer/NAME` or `~/.local/state/tracer/NAME`.
pub fn path_from(
    name: &str,
    env: Option<OsString>,
    euid: u32,
    xdg_state: Option<OsString>,
    home: Option<OsString>,
) -> Option<PathBuf> {
    if let Some(p) = env {
        return (!p.is_empty()).then(|| PathBuf::from(p));
    }
    if euid == 0 {
        return Some(PathBuf::from("/var/lib/tracer").join(name));
    }
    // XDG: a relative (or empty) XDG_STATE_HOME is ignored
    if let Some(x) = xdg_state.map(PathBuf::from).filter(|x| x.is_absolute()) {
        return Some(x.join("tracer").join(name));
    }
    let home = home.map(PathBuf::from).filter(|h| h.is_absolute())?;
    Some(home.join(".local/state/tracer").join(name))
}

/// [`path_from`] with this process's environment and effective uid.
pub fn default_path(name: &str, env: &str) -> Option<PathBuf> {
    // SAFETY: geteuid cannot fail.
    let euid = unsafe { libc::geteuid() };
    path_from(name, std::env::var_os(env), euid, std::env::var_os("XDG_STATE_HOME"), std::env::var_os("HOME"))
}

/// Where [`Kept::update`] moved a corrupt or foreign file, and why.
pub type MovedAside = (PathBuf, String);

impl Kept {
    /// The one-line error of the file at `path` that is not in its form: what is wrong and what to do.
    pub fn form_error(&self, path: &Path, e: &FormError) -> KeptError {
        let (kind, todo) = match e {
            FormError::Newer(_) => (ErrorKind::Newer, format!("use a newer tracer, {}", self.elsewhere)),
            _ => (
                ErrorKind::Corrupt,
                format!(
                    "move it away or delete it ({} moves it aside and starts a new one), {}",
                    self.replaced_by, self.elsewhere
                ),
            ),
        };
        let what = self.form.describe(e);
        KeptError { kind, message: format!("{}: the {} is {what}: {todo}", path.display(), self.form.what) }
    }

    /// The file at `path` (None: no such file), parsed by `parse` (its form's check and the
    /// file's own).
    pub fn parsed<T>(
        &self,
        path: &Path,
        parse: impl Fn(&str) -> Result<T, FormError>,
    ) -> Result<Option<Result<T, FormError>>, KeptError> {
        Ok(self.read(path)?.map(|b| match String::from_utf8(b) {
            Ok(text) => parse(&text),
            Err(_) => Err(FormError::Corrupt("not UTF-8 text".into())),
        }))
    }

    /// The file at `path`; `Ok(None)` when there is no such file, an error when it is not in its form.
    pub fn load<T>(&self, path: &Path, parse: impl Fn(&str) -> Result<T, FormError>) -> Result<Option<T>, KeptError> {
        self.parsed(path, parse)?.map(|r| r.map_err(|e| self.form_error(path, &e))).transpose()
    }

    /// What [`Kept::update`] did with a corrupt or foreign file at `path`, in one line: why it was
    /// moved, where to.
    pub fn moved_aside_line(&self, path: &Path, (aside, why): &MovedAside) -> String {
        format!(
            "{}: the {} was {why}: moved aside to {}; a new one started",
            path.display(),
            self.form.what,
            aside.display()
        )
    }

    /// Reads, changes and replaces the file at `path` (its folder made first), under its lock
    /// `PATH.lock`: its content, or a new one where there is none or where it is corrupt or
    /// foreign (moved aside first: where to, and why, the third of what is returned), changed by
    /// `change` (whose answer is the second) and written as `text` makes it (the first: the
    /// file's new content). A newer version's file is an error and stays as it is.
    pub fn update<T: Default, R>(
        &self,
        path: &Path,
        (parse, text): (impl Fn(&str) -> Result<T, FormError>, impl Fn(&T) -> String),
        now_unix: u64,
        change: impl FnOnce(&mut T) -> R,
    ) -> Result<(T, R, Option<MovedAside>), KeptError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            self.create_dirs(dir)?;
        }
        let _lock = self.lock(&suffixed(path, ".lock"))?;
        let (mut t, moved_aside) = match self.parsed(path, parse)? {
            None => (T::default(), None),
            Some(Ok(t)) => (t, None),
            Some(Err(e @ FormError::Newer(_))) => return Err(self.form_error(path, &e)),
            Some(Err(e)) => (T::default(), Some((self.move_aside(path, now_unix)?, self.form.describe(&e)))),
        };
        let r = change(&mut t);
        self.write_replacing(path, text(&t).as_bytes())?;
        Ok((t, r, moved_aside))
    }

    /// The file's bytes (None: no such file): links, other file kinds and
    /// oversized files are refused as tracer_format says.
    pub fn read(&self, path: &Path) -> Result<Option<Vec<u8>>, KeptError> {
        tracer_format::open::read_kept(path, self.kind).map_err(|e| {
            let message = format!("{e}");
            let kind = if message.starts_with("cannot open") { ErrorKind::Io } else { ErrorKind::Refused };
            KeptError { kind, message: format!("{message}; {}", self.elsewhere) }
        })
    }

    /// An exclusive `flock` on `p` (created 0644), held until the descriptor is dropped.
    pub fn lock(&self, p: &Path) -> Result<OwnedFd, KeptError> {
        let fd = open_fd(p, libc::O_RDWR | libc::O_CREAT).map_err(|e| {
            io(format!("cannot open the {}'s lock {} ({e}); {}", self.form.what, p.display(), self.elsewhere))
        })?;
        // 0644 whatever the umask (a lock of another user's stays as it is)
        // SAFETY: fchmod on a descriptor this function owns.
        unsafe { libc::fchmod(fd.as_raw_fd(), 0o644) };
        let start = Instant::now();
        loop {
            // SAFETY: flock on a descriptor this function owns.
            if unsafe { libc::flock(fd.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
                return Ok(fd);
            }
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EWOULDBLOCK) && e.raw_os_error() != Some(libc::EINTR) {
                return Err(io(format!("cannot lock {} ({e})", p.display())));
            }
            if start.elapsed() > LOCK_WAIT {
                return Err(io(format!(
                    "{}: another process has held the {}'s lock for {} s: not updated",
                    p.display(),
                    self.form.what,
                    LOCK_WAIT.as_secs()
                )));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Renames the corrupt file at `path` to `PATH.corrupt-UNIXSECS` (`.N` after it if taken).
    pub fn move_aside(&self, path: &Path, now_unix: u64) -> Result<PathBuf, KeptError> {
        let base = suffixed(path, &format!(".corrupt-{now_unix}"));
        let mut aside = base.clone();
        let mut n = 0;
        while aside.symlink_metadata().is_ok() {
            n += 1;
            aside = suffixed(&base, &format!(".{n}"));
        }
        std::fs::rename(path, &aside).map_err(|e| {
            io(format!(
                "{}: corrupt, and cannot be moved aside to {} ({e}); {}",
                path.display(),
                aside.display(),
                self.elsewhere
            ))
        })?;
        Ok(aside)
    }

    /// Writes `bytes` to `PATH.tmp.PID` (0644, fsynced) and renames it over `path`, then fsyncs the directory.
    pub fn write_replacing(&self, path: &Path, bytes: &[u8]) -> Result<(), KeptError> {
        let tmp = suffixed(path, &format!(".tmp.{}", std::process::id()));
        let fail = |what: &str, e: std::io::Error| {
            let _ = std::fs::remove_file(&tmp);
            io(format!("cannot write the {} {} ({what}: {e}); {}", self.form.what, path.display(), self.elsewhere))
        };
        // a file of a crashed run of the same pid (we hold the lock: nobody else writes it)
        let _ = std::fs::remove_file(&tmp);
        let fd = open_fd(&tmp, libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL).map_err(|e| fail("open", e))?;
        let mut f = std::fs::File::from(fd);
        f.set_permissions(std::fs::Permissions::from_mode(0o644)).map_err(|e| fail("chmod", e))?;
        f.write_all(bytes).map_err(|e| fail("write", e))?;
        f.sync_all().map_err(|e| fail("fsync", e))?;
        drop(f);
        std::fs::rename(&tmp, path).map_err(|e| fail("rename", e))?;
        let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let d = std::fs::File::open(dir).map_err(|e| io(format!("{}: cannot open to fsync ({e})", dir.display())))?;
        d.sync_all().map_err(|e| io(format!("{}: fsync ({e})", dir.display())))
    }

    /// Creates `dir` and its missing parents, each 0755.
    pub fn create_dirs(&self, dir: &Path) -> Result<(), KeptError> {
        if dir.is_dir() {
            return Ok(());
        }
        if let Some(parent) = dir.parent().filter(|d| !d.as_os_str().is_empty()) {
            self.create_dirs(parent)?;
        }
        match std::fs::create_dir(dir) {
            Ok(()) => std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755))
                .map_err(|e| io(format!("{}: cannot set its mode ({e})", dir.display()))),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && dir.is_dir() => Ok(()),
            Err(e) => Err(io(format!(
                "cannot create the directory {} for the {} ({e}); {}",
                dir.display(),
                self.form.what,
                self.elsewhere
            ))),
        }
    }
}

/// `path` with `suffix` appended to its name.
pub fn suffixed(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

fn c_path(p: &Path) -> Result<std::ffi::CString, KeptError> {
    std::ffi::CString::new(p.as_os_str().as_bytes())
        .map_err(|_| io(format!("{}: the path holds a NUL byte", p.display())))
}

/// Opens `p` with `flags` (O_CLOEXEC | O_NOFOLLOW added), mode 0644 if created.
pub fn open_fd(p: &Path, flags: i32) -> std::io::Result<OwnedFd> {
    let c = c_path(p).map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: a valid NUL-terminated path.
    let fd = unsafe { libc::open(c.as_ptr(), flags | libc::O_CLOEXEC | libc::O_NOFOLLOW, 0o644 as libc::c_uint) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: a descriptor just opened, owned from here.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}
