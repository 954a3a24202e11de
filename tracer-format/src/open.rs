//! The one way the tools open a file they read. Every input has a kind, and
//! every kind a bound: the file must be a regular file (a FIFO, a device, a
//! socket or a directory is refused when it is opened, before a byte is
//! read, and opening never waits on a pipe's writer), and a whole-file read
//! takes at most the kind's cap (its size is checked on the open file, and no
//! more than cap + 1 bytes are ever read, so a file that grows while it is
//! read is refused too).
//!
//! Inside a recording directory ([`Beneath`]) nothing leaves it: a file is
//! opened below the directory without following any link (`openat2` with
//! `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`; on kernels without `openat2`, one
//! `O_NOFOLLOW` open per component), and a link is refused as a link,
//! without touching or describing its target.
use std::fs::File;
use std::io::Read as _;
use std::os::fd::{AsRawFd as _, FromRawFd as _, OwnedFd};
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Component, Path, PathBuf};

use anyhow::{Result, anyhow, bail};

const MIB: u64 = 1 << 20;

/// What a file is to its reader: it sets the size cap and names the file in messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A trace (`.jsonl`, `.gz`, `.zst`): read as a stream, no cap on its size.
    Trace,
    /// A recording's `manifest.json`.
    Manifest,
    /// A durations file (`tracer calibrate`'s output, `--durations`).
    Durations,
    /// The agent's `--web.config.file`, and the certificate and key files it names.
    WebConfig,
    /// A CUDA image (cubin, fatbin, PTX) of a recording, or given to `tracer image`.
    Image,
    /// The captured bytes of a copy (`data/<sha>` of a recording).
    Data,
    /// A small JSON or text file tracer itself wrote beside a run (CUPTI's call counts).
    Sidecar,
    /// The machine's durations library (kernel durations kept between runs),
    /// read with [`read_kept`]: never through a link.
    DurationsLibrary,
    /// The machine's host speed history (the probes' speed gauge per recording), read
    /// with [`read_kept`].
    HostSpeedHistory,
}

impl Kind {
    /// The most bytes a file of this kind may hold.
    pub fn cap(self) -> u64 {
        match self {
            Kind::Trace => u64::MAX,
            Kind::Manifest => 64 * MIB,
            Kind::Durations => 64 * MIB,
            Kind::WebConfig => MIB,
            // cuBLAS' and cuDNN's fatbins are hundreds of MB; none is near a GiB.
            Kind::Image => 1024 * MIB,
            Kind::Data => 1024 * MIB,
            Kind::Sidecar => 16 * MIB,
            Kind::DurationsLibrary => 64 * MIB,
            // 256 keys of 32 gauges each are some 200 KiB
            Kind::HostSpeedHistory => 4 * MIB,
        }
    }

    /// What the messages call it.
    pub fn what(self) -> &'static str {
        match self {
            Kind::Trace => "a trace",
            Kind::Manifest => "a recording's manifest",
            Kind::Durations => "a durations file",
            Kind::WebConfig => "a web config file",
            Kind::Image => "a CUDA image",
            Kind::Data => "a copy's data file",
            Kind::Sidecar => "tracer's side file",
            Kind::DurationsLibrary => "the durations library",
            Kind::HostSpeedHistory => "the host speed history",
        }
    }
}

/// `n` bytes as a person reads them (`64 MiB`, `1.5 GiB`, `512 bytes`).
fn size_text(n: u64) -> String {
    match n {
        n if n >= 1 << 30 => format!("{:.1} GiB", n as f64 / (1u64 << 30) as f64),
        n if n >= MIB => format!("{:.1} MiB", n as f64 / MIB as f64),
        n => format!("{n} bytes"),
    }
}

/// What a file that is not regular is, for the message.
pub fn file_kind(meta: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt as _;
    let t = meta.file_type();
    if t.is_fifo() {
        "a named pipe"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_dir() {
        "a directory"
    } else if t.is_symlink() {
        "a symbolic link"
    } else {
        "not a file"
    }
}

/// An open regular file and its size when opened.
#[derive(Debug)]
pub struct Opened {
    pub file: File,
    pub len: u64,
}

/// Checks the file just opened as `name`: regular, and within `kind`'s cap.
fn checked(fd: OwnedFd, name: &dyn std::fmt::Display, kind: Kind) -> Result<Opened> {
    let file = File::from(fd);
    let meta = file.metadata().map_err(|e| anyhow!("{name}: cannot read its type ({e})"))?;
    if !meta.is_file() {
        bail!("{name}: not a regular file ({}): {} must be a regular file", file_kind(&meta), kind.what());
    }
    if meta.len() > kind.cap() {
        bail!(
            "{name}: {} is larger than {} may be ({}): is it the right file?",
            size_text(meta.len()),
            kind.what(),
            size_text(kind.cap())
        );
    }
    // O_NONBLOCK served the open only (a pipe's open would wait for a writer).
    // SAFETY: fcntl on a descriptor this function owns.
    unsafe {
        let fl = libc::fcntl(file.as_raw_fd(), libc::F_GETFL);
        if fl >= 0 {
            libc::fcntl(file.as_raw_fd(), libc::F_SETFL, fl & !libc::O_NONBLOCK);
        }
    }
    Ok(Opened { len: meta.len(), file })
}

fn c_path(p: &Path) -> Result<std::ffi::CString> {
    std::ffi::CString::new(p.as_os_str().as_bytes()).map_err(|_| anyhow!("{}: the path holds a NUL byte", p.display()))
}

/// Opens `path` (as given by the user: links in it are followed) for reading as a `kind`.
pub fn open(path: &Path, kind: Kind) -> Result<Opened> {
    let c = c_path(path)?;
    // SAFETY: a valid NUL-terminated path.
    let fd = unsafe { libc::open(c.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC | libc::O_NONBLOCK | libc::O_NOCTTY) };
    if fd < 0 {
        bail!("cannot open {} ({})", path.display(), std::io::Error::last_os_error());
    }
    // SAFETY: a descriptor just opened, owned from here.
    checked(unsafe { OwnedFd::from_raw_fd(fd) }, &path.display(), kind)
}

/// Reads all of `o` (at most cap + 1 bytes: a file that grew past its cap while read is refused).
fn read_all(mut o: Opened, name: &dyn std::fmt::Display, kind: Kind) -> Result<Vec<u8>> {
    let mut buf = Vec::with_capacity(o.len as usize);
    (&mut o.file).take(kind.cap().saturating_add(1)).read_to_end(&mut buf).map_err(|e| anyhow!("{name}: {e}"))?;
    if buf.len() as u64 > kind.cap() {
        bail!("{name}: grew past {} while it was read ({})", size_text(kind.cap()), kind.what());
    }
    Ok(buf)
}

/// The whole of `path`, a `kind` (see [`open`]).
pub fn read(path: &Path, kind: Kind) -> Result<Vec<u8>> {
    read_all(open(path, kind)?, &path.display(), kind)
}

/// The whole of `path` as UTF-8 text.
pub fn read_to_string(path: &Path, kind: Kind) -> Result<String> {
    String::from_utf8(read(path, kind)?).map_err(|_| anyhow!("{}: not UTF-8 text ({})", path.display(), kind.what()))
}

/// Opens `path`, a file tracer keeps between runs (the durations library),
/// for reading as a `kind`: a link at its last component is refused as a
/// link (`O_NOFOLLOW`), and a missing file is `None`.
pub fn open_kept(path: &Path, kind: Kind) -> Result<Option<Opened>> {
    let c = c_path(path)?;
    let flags = libc::O_RDONLY | libc::O_CLOEXEC | libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_NOFOLLOW;
    // SAFETY: a valid NUL-terminated path.
    let fd = unsafe { libc::open(c.as_ptr(), flags) };
    if fd < 0 {
        let e = std::io::Error::last_os_error();
        return match e.raw_os_error() {
            Some(libc::ENOENT) => Ok(None),
            Some(libc::ELOOP) => {
                bail!(
                    "{}: a symbolic link: {} must be a regular file (never read through a link)",
                    path.display(),
                    kind.what()
                )
            }
            _ => bail!("cannot open {} ({e})", path.display()),
        };
    }
    // SAFETY: a descriptor just opened, owned from here.
    checked(unsafe { OwnedFd::from_raw_fd(fd) }, &path.display(), kind).map(Some)
}

/// The whole of `path` (see [`open_kept`]), `None` if there is no such file.
pub fn read_kept(path: &Path, kind: Kind) -> Result<Option<Vec<u8>>> {
    match open_kept(path, kind)? {
        Some(o) => read_all(o, &path.display(), kind).map(Some),
        None => Ok(None),
    }
}

/// A directory whose files are opened without leaving it: no `..`, no
/// absolute path, no link anywhere below it (the directory itself, as the
/// user named it, may be reached through links).
#[derive(Debug)]
pub struct Beneath {
    dir: OwnedFd,
    path: PathBuf,
}

impl Beneath {
    /// Opens the directory `path`.
    pub fn new(path: &Path) -> Result<Beneath> {
        let c = c_path(path)?;
        // SAFETY: a valid NUL-terminated path.
        let fd = unsafe { libc::open(c.as_ptr(), libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC) };
        if fd < 0 {
            bail!("cannot open the directory {} ({})", path.display(), std::io::Error::last_os_error());
        }
        // SAFETY: a descriptor just opened, owned from here.
        Ok(Beneath { dir: unsafe { OwnedFd::from_raw_fd(fd) }, path: path.to_owned() })
    }

    /// The directory as named.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Opens `rel` (a relative path of plain names) below the directory as a `kind`.
    pub fn open(&self, rel: &Path, kind: Kind) -> Result<Opened> {
        let name = self.path.join(rel);
        let name = name.display();
        if rel.as_os_str().is_empty() || !rel.components().all(|c| matches!(c, Component::Normal(_))) {
            bail!("{name}: not a plain relative path inside {}: refused", self.path.display());
        }
        let fd = match self.openat2(rel) {
            Err(e) if e.raw_os_error() == Some(libc::ENOSYS) || e.raw_os_error() == Some(libc::EPERM) => {
                self.open_by_components(rel)
            }
            r => r,
        };
        match fd {
            Ok(fd) => checked(fd, &name, kind),
            Err(e) if e.raw_os_error() == Some(libc::ELOOP) => bail!(
                "{name}: a symbolic link inside {}: refused (a recording's files are read from inside it, never through a link)",
                self.path.display()
            ),
            Err(e) if e.raw_os_error() == Some(libc::EXDEV) => {
                bail!("{name}: leads out of {}: refused", self.path.display())
            }
            Err(e) => bail!("cannot open {name} ({e})"),
        }
    }

    /// The whole of `rel`, a `kind`.
    pub fn read(&self, rel: &Path, kind: Kind) -> Result<Vec<u8>> {
        let name = self.path.join(rel);
        read_all(self.open(rel, kind)?, &name.display(), kind)
    }

    /// The whole of `rel` as UTF-8 text.
    pub fn read_to_string(&self, rel: &Path, kind: Kind) -> Result<String> {
        String::from_utf8(self.read(rel, kind)?)
            .map_err(|_| anyhow!("{}: not UTF-8 text ({})", self.path.join(rel).display(), kind.what()))
    }

    /// Whether `rel` names something below the directory (a link counts as
    /// something; nothing is followed).
    pub fn exists(&self, rel: &Path) -> bool {
        self.lstat(rel).is_some()
    }

    /// What `rel` below the directory is, links not followed.
    fn lstat(&self, rel: &Path) -> Option<libc::stat> {
        let c = c_path(rel).ok()?;
        let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
        // SAFETY: a valid directory descriptor, path and stat buffer, read only once fstatat filled it.
        unsafe {
            (libc::fstatat(self.dir.as_raw_fd(), c.as_ptr(), st.as_mut_ptr(), libc::AT_SYMLINK_NOFOLLOW) == 0)
                .then(|| st.assume_init())
        }
    }

    fn openat2(&self, rel: &Path) -> std::io::Result<OwnedFd> {
        let c = c_path(rel).map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?;
        // SAFETY: zeroed is a valid open_how (all fields integers).
        let mut how: libc::open_how = unsafe { std::mem::zeroed() };
        how.flags = (libc::O_RDONLY | libc::O_CLOEXEC | libc::O_NONBLOCK | libc::O_NOCTTY) as u64;
        how.resolve = libc::RESOLVE_BENEATH | libc::RESOLVE_NO_SYMLINKS | libc::RESOLVE_NO_MAGICLINKS;
        // SAFETY: valid descriptor, path and open_how of the size passed.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_openat2,
                self.dir.as_raw_fd(),
                c.as_ptr(),
                &how as *const libc::open_how,
                std::mem::size_of::<libc::open_how>(),
            )
        };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: a descriptor just opened, owned from here.
        Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
    }

    /// Without openat2: each component opened with O_NOFOLLOW from the last.
    fn open_by_components(&self, rel: &Path) -> std::io::Result<OwnedFd> {
        let parts: Vec<&std::ffi::OsStr> = rel.iter().collect();
        let mut at = self.dir.try_clone()?;
        for (i, part) in parts.iter().enumerate() {
            let c =
                std::ffi::CString::new(part.as_bytes()).map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?;
            let last = i + 1 == parts.len();
            let flags = libc::O_NOFOLLOW
                | libc::O_CLOEXEC
                | if last {
                    libc::O_RDONLY | libc::O_NONBLOCK | libc::O_NOCTTY
                } else {
                    libc::O_PATH | libc::O_DIRECTORY
                };
            // SAFETY: a valid directory descriptor and NUL-terminated name.
            let fd = unsafe { libc::openat(at.as_raw_fd(), c.as_ptr(), flags) };
            if fd < 0 {
                let e = std::io::Error::last_os_error();
                // O_NOFOLLOW on a link is ELOOP; O_DIRECTORY|O_NOFOLLOW on one is ENOTDIR.
                if e.raw_os_error() == Some(libc::ENOTDIR) && !last && self.is_link(&parts[..=i]) {
                    return Err(std::io::Error::from_raw_os_error(libc::ELOOP));
                }
                return Err(e);
            }
            // SAFETY: a descriptor just opened, owned from here.
            at = unsafe { OwnedFd::from_raw_fd(fd) };
        }
        Ok(at)
    }

    fn is_link(&self, parts: &[&std::ffi::OsStr]) -> bool {
        let rel: PathBuf = parts.iter().collect();
        self.lstat(&rel).is_some_and(|st| (st.st_mode & libc::S_IFMT) == libc::S_IFLNK)
    }
}

#[cfg(test)]
mod tests;
