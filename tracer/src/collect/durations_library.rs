//! The durations library's file (docs/durations-library.md; its form,
//! merge and selection: `crate::analysis::durations_library`).
//!
//! Where: `$TRACER_DURATIONS_LIBRARY` (empty: no library), else
//! `/var/lib/tracer/durations.json` as root, else
//! `$XDG_STATE_HOME/tracer/durations.json` or
//! `~/.local/state/tracer/durations.json` ([`default_path`]).
//!
//! Read with tracer_format's bounded reads ([`Kind::DurationsLibrary`]:
//! 64 MiB, a regular file, never through a link). [`update`] takes an
//! exclusive `flock` on `PATH.lock`, reads the library again under it,
//! merges, writes `PATH.tmp.PID` (fsynced) and renames it over PATH (the
//! directory fsynced), so concurrent runs all land and a reader sees the
//! old or the new library, never a part. A corrupt or foreign file is moved
//! aside to `PATH.corrupt-UNIXSECS` and a new library started; a newer
//! version's library, a link or a file that is not regular is left alone
//! and refused.
use std::ffi::OsString;
use std::io::Write as _;
use std::os::fd::{AsRawFd as _, FromRawFd as _, OwnedFd};
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;
use tracer_format::open::Kind;

use crate::analysis::durations_file::{DurationsFile, durations_line};
use crate::analysis::durations_library::{
    self as lib, GpuKey, Library, MergeReport, ParseError, Selection, fit_within, merge,
};
use crate::analysis::model::Geom;

/// The variable naming the library's file (empty: no library).
pub const ENV: &str = "TRACER_DURATIONS_LIBRARY";

/// How long [`update`] waits for another tracer's lock.
const LOCK_WAIT: Duration = Duration::from_secs(30);

/// The library's path, or None when `$TRACER_DURATIONS_LIBRARY` is empty
/// (or no home is known).
pub fn default_path() -> Option<PathBuf> {
    // SAFETY: geteuid cannot fail.
    let euid = unsafe { libc::geteuid() };
    path_from(std::env::var_os(ENV), euid, std::env::var_os("XDG_STATE_HOME"), std::env::var_os("HOME"))
}

/// [`default_path`] from the variables and the effective uid.
pub fn path_from(
    env: Option<OsString>,
    euid: u32,
    xdg_state: Option<OsString>,
    home: Option<OsString>,
) -> Option<PathBuf> {
    if let Some(p) = env {
        return (!p.is_empty()).then(|| PathBuf::from(p));
    }
    if euid == 0 {
        return Some(PathBuf::from("/var/lib/tracer/durations.json"));
    }
    // XDG: a relative (or empty) XDG_STATE_HOME is ignored
    if let Some(x) = xdg_state.map(PathBuf::from).filter(|x| x.is_absolute()) {
        return Some(x.join("tracer/durations.json"));
    }
    let home = home.map(PathBuf::from).filter(|h| h.is_absolute())?;
    Some(home.join(".local/state/tracer/durations.json"))
}

/// The variable that names the GPU key ("MODEL;DRIVER") where
/// /proc/driver/nvidia does not (a container without it, the tests' fake driver).
pub const KEY_ENV: &str = "TRACER_GPU_KEY";

/// The GPU key of this machine's GPU `ordinal` (PCI bus order), from
/// /proc/driver/nvidia, else from `$TRACER_GPU_KEY`.
pub fn machine_key(ordinal: usize) -> Option<GpuKey> {
    let from_proc = || {
        let driver = super::sysinfo::driver_version()?;
        let gpus = super::sysinfo::gpus();
        let model = gpus.get(ordinal)?["model"].as_str()?.to_string();
        Some(GpuKey::new(model, driver))
    };
    from_proc().or_else(|| key_from_env(std::env::var(KEY_ENV).ok().as_deref()))
}

/// "MODEL;DRIVER" (both non-empty) as a key.
pub fn key_from_env(v: Option<&str>) -> Option<GpuKey> {
    let (model, driver) = v?.split_once(';')?;
    let (model, driver) = (model.trim(), driver.trim());
    (!model.is_empty() && !driver.is_empty()).then(|| GpuKey::new(model, driver))
}

/// Every entry the library at `path` has for `key`, as durations (the
/// agent times the launches of processes without CUPTI with them), and one
/// line saying what was taken or why nothing.
pub fn entries_for(
    path: Option<&Path>,
    key: Option<&GpuKey>,
) -> (Option<crate::analysis::durations::Durations>, String) {
    let (Some(path), Some(key)) = (path, key) else {
        let why = if path.is_none() {
            "no durations library ($TRACER_DURATIONS_LIBRARY is empty)"
        } else {
            "no GPU key (no NVIDIA GPU in /proc/driver/nvidia, no $TRACER_GPU_KEY)"
        };
        return (None, format!("{why}: GPU busy/idle of processes without CUPTI are bounds"));
    };
    let lib = match load(path) {
        Ok(Some(l)) => l,
        Ok(None) => {
            return (
                None,
                format!(
                    "no durations library at {}: GPU busy/idle of processes without CUPTI are bounds",
                    path.display()
                ),
            );
        }
        Err(e) => return (None, format!("{}: GPU busy/idle of processes without CUPTI are bounds", e.message)),
    };
    // every entry of the key: the selection of all its kernel names and copy kinds
    let selected = lib.gpu(key).and_then(|g| {
        let names = g.kernels.iter().map(|k| (k.kernel.as_str(), Geom::default()));
        let kinds = g.copies.iter().map(|c| c.kind.as_str());
        let f = crate::analysis::durations_library::select(&lib, key, names, kinds).durations?;
        (!f.kernels.is_empty()).then_some((f, g.runs))
    });
    match selected {
        Some((f, runs)) => {
            let origin = crate::analysis::durations_library::origin(&path.display().to_string(), key, runs);
            let line = format!(
                "GPU busy/idle of processes without CUPTI inferred from the {origin}: {} kernel entries",
                f.kernels.len()
            );
            (Some(crate::analysis::durations::Durations::new(f).with_origin(origin)), line)
        }
        None => (
            None,
            format!(
                "the durations library {} has no kernels for {key}: GPU busy/idle of processes without CUPTI are bounds",
                path.display()
            ),
        ),
    }
}

/// What went wrong with the library, in one line (it names the file, what
/// is wrong and what to do).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LibraryError {
    pub kind: ErrorKind,
    pub message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// Not JSON, not a library's fields, not UTF-8, or another file's `format`.
    Corrupt,
    /// A newer version's library.
    Newer,
    /// A link, not a regular file, or over its size cap: left alone.
    Refused,
    /// Reading, writing, the directory or the lock failed.
    Io,
}

impl std::fmt::Display for LibraryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for LibraryError {}

fn io(message: String) -> LibraryError {
    LibraryError { kind: ErrorKind::Io, message }
}

const ELSEWHERE: &str = "or set TRACER_DURATIONS_LIBRARY to another file (empty: no library)";

fn parse_error(path: &Path, e: &ParseError) -> LibraryError {
    let (kind, todo) = match e {
        ParseError::Newer(_) => (ErrorKind::Newer, format!("use a newer tracer, {ELSEWHERE}")),
        _ => (
            ErrorKind::Corrupt,
            format!(
                "move it away or delete it (the next measured run moves it aside and starts a new one), {ELSEWHERE}"
            ),
        ),
    };
    LibraryError { kind, message: format!("{}: the durations library is {e}: {todo}", path.display()) }
}

/// The library at `path`; `Ok(None)` when there is no such file.
pub fn load(path: &Path) -> Result<Option<Library>, LibraryError> {
    read(path)?.map(|r| r.map_err(|e| parse_error(path, &e))).transpose()
}

/// The file at `path` (None: no such file), parsed.
fn read(path: &Path) -> Result<Option<Result<Library, ParseError>>, LibraryError> {
    let bytes = tracer_format::open::read_kept(path, Kind::DurationsLibrary).map_err(|e| {
        let message = format!("{e}");
        // links, other file kinds and oversized files are refused as tracer_format says
        let kind = if message.starts_with("cannot open") { ErrorKind::Io } else { ErrorKind::Refused };
        LibraryError { kind, message: format!("{message}; {ELSEWHERE}") }
    })?;
    Ok(bytes.map(|b| match String::from_utf8(b) {
        Ok(text) => Library::parse(&text),
        Err(_) => Err(ParseError::Corrupt("not UTF-8 text".into())),
    }))
}

/// The durations line of a run on `key` (at `ts`, just before the footer)
/// with the entries of the library at `path` it needs (`kernels`: name and
/// geometry of its launches; `copy_kinds`: `h2d`, …, `memset`), and the
/// selection (its `note` says what was used, or why nothing). No line when
/// the library has nothing for the run, or there is no library.
pub fn durations_line_for<S: AsRef<str>, C: AsRef<str>>(
    path: &Path,
    key: &GpuKey,
    kernels: impl IntoIterator<Item = (S, Geom)>,
    copy_kinds: impl IntoIterator<Item = C>,
    ts: u64,
) -> Result<(Option<Value>, Option<Selection>), LibraryError> {
    let Some(library) = load(path)? else { return Ok((None, None)) };
    let (line, s) = durations_line_of(&library, path, key, kernels, copy_kinds, ts);
    Ok((line, Some(s)))
}

/// [`durations_line_for`] of a library already read (`path` names it in the line's origin).
pub fn durations_line_of<S: AsRef<str>, C: AsRef<str>>(
    library: &Library,
    path: &Path,
    key: &GpuKey,
    kernels: impl IntoIterator<Item = (S, Geom)>,
    copy_kinds: impl IntoIterator<Item = C>,
    ts: u64,
) -> (Option<Value>, Selection) {
    let s = lib::select(library, key, kernels, copy_kinds);
    let line =
        s.durations.as_ref().map(|f| durations_line(ts, &lib::origin(&path.display().to_string(), key, s.runs), f));
    (line, s)
}

/// What [`update`] did.
#[derive(Debug, Clone, PartialEq)]
pub struct UpdateReport {
    pub path: PathBuf,
    pub key: GpuKey,
    pub merge: MergeReport,
    /// Where a corrupt or foreign file was moved (a new library was started).
    pub moved_aside: Option<(PathBuf, String)>,
    /// What was removed to keep the file within its 64 MiB.
    pub fit: lib::Fit,
    /// The library as written.
    pub library: Library,
}

impl UpdateReport {
    /// One line each: the merge, then what was moved aside or removed.
    pub fn lines(&self) -> Vec<String> {
        let mut v = Vec::new();
        if let Some((aside, what)) = &self.moved_aside {
            v.push(format!(
                "{}: the durations library was {what}: moved aside to {}; a new one started",
                self.path.display(),
                aside.display()
            ));
        }
        v.push(format!("durations library {} ({}): {}", self.path.display(), self.key, self.merge.sentence()));
        if !self.fit.keys_removed.is_empty() || self.fit.dropped > 0 {
            let keys: Vec<String> = self.fit.keys_removed.iter().map(|k| format!("({k})")).collect();
            v.push(format!(
                "durations library {}: over {} MiB: removed {} other GPU keys {}and {} least-counted entries",
                self.path.display(),
                Kind::DurationsLibrary.cap() >> 20,
                keys.len(),
                if keys.is_empty() { String::new() } else { format!("{} ", keys.join(", ")) },
                self.fit.dropped
            ));
        }
        v
    }
}

/// Merges `measured` (one run's durations on `key`) into the library at
/// `path` (see the module header).
pub fn update(path: &Path, key: &GpuKey, measured: &DurationsFile) -> Result<UpdateReport, LibraryError> {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    update_at(path, key, measured, now)
}

/// [`update`] at `now_unix`.
pub fn update_at(
    path: &Path,
    key: &GpuKey,
    measured: &DurationsFile,
    now_unix: u64,
) -> Result<UpdateReport, LibraryError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        create_dirs(dir)?;
    }
    let _lock = lock(&suffixed(path, ".lock"))?;
    let (mut library, moved_aside) = match read(path)? {
        None => (Library::default(), None),
        Some(Ok(l)) => (l, None),
        Some(Err(e @ ParseError::Newer(_))) => return Err(parse_error(path, &e)),
        Some(Err(e)) => (Library::default(), Some((move_aside(path, now_unix)?, e.to_string()))),
    };
    let merge = merge(&mut library, key, measured, now_unix);
    let fit = fit_within(&mut library, key, Kind::DurationsLibrary.cap() as usize);
    write_replacing(path, library.to_json().as_bytes())?;
    Ok(UpdateReport { path: path.to_owned(), key: key.clone(), merge, moved_aside, fit, library })
}

/// `path` with `suffix` appended to its name.
fn suffixed(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// Creates `dir` and its missing parents, each 0755.
fn create_dirs(dir: &Path) -> Result<(), LibraryError> {
    if dir.is_dir() {
        return Ok(());
    }
    if let Some(parent) = dir.parent().filter(|d| !d.as_os_str().is_empty()) {
        create_dirs(parent)?;
    }
    match std::fs::create_dir(dir) {
        Ok(()) => std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755))
            .map_err(|e| io(format!("{}: cannot set its mode ({e})", dir.display()))),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && dir.is_dir() => Ok(()),
        Err(e) => Err(io(format!(
            "cannot create the directory {} for the durations library ({e}); {ELSEWHERE}",
            dir.display()
        ))),
    }
}

fn c_path(p: &Path) -> Result<std::ffi::CString, LibraryError> {
    std::ffi::CString::new(p.as_os_str().as_bytes())
        .map_err(|_| io(format!("{}: the path holds a NUL byte", p.display())))
}

/// Opens `p` with `flags` (O_CLOEXEC | O_NOFOLLOW added), mode 0644 if created.
fn open_fd(p: &Path, flags: i32) -> std::io::Result<OwnedFd> {
    let c = c_path(p).map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: a valid NUL-terminated path.
    let fd = unsafe { libc::open(c.as_ptr(), flags | libc::O_CLOEXEC | libc::O_NOFOLLOW, 0o644 as libc::c_uint) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: a descriptor just opened, owned from here.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// An exclusive `flock` on `p` (created 0644), held until the descriptor is dropped.
fn lock(p: &Path) -> Result<OwnedFd, LibraryError> {
    let fd = open_fd(p, libc::O_RDWR | libc::O_CREAT)
        .map_err(|e| io(format!("cannot open the durations library's lock {} ({e}); {ELSEWHERE}", p.display())))?;
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
                "{}: another process has held the durations library's lock for {} s: not updated",
                p.display(),
                LOCK_WAIT.as_secs()
            )));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Renames the corrupt library at `path` to `PATH.corrupt-UNIXSECS` (`.N` after it if taken).
fn move_aside(path: &Path, now_unix: u64) -> Result<PathBuf, LibraryError> {
    let base = suffixed(path, &format!(".corrupt-{now_unix}"));
    let mut aside = base.clone();
    let mut n = 0;
    while aside.symlink_metadata().is_ok() {
        n += 1;
        aside = suffixed(&base, &format!(".{n}"));
    }
    std::fs::rename(path, &aside).map_err(|e| {
        io(format!("{}: corrupt, and cannot be moved aside to {} ({e}); {ELSEWHERE}", path.display(), aside.display()))
    })?;
    Ok(aside)
}

/// Writes `bytes` to `PATH.tmp.PID` (0644, fsynced) and renames it over `path`, then fsyncs the directory.
fn write_replacing(path: &Path, bytes: &[u8]) -> Result<(), LibraryError> {
    let tmp = suffixed(path, &format!(".tmp.{}", std::process::id()));
    let fail = |what: &str, e: std::io::Error| {
        let _ = std::fs::remove_file(&tmp);
        io(format!("cannot write the durations library {} ({what}: {e}); {ELSEWHERE}", path.display()))
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

#[cfg(test)]
#[path = "durations_library_tests.rs"]
mod tests;
