//! What a reader is given to read, resolved once: a trace file, a recording
//! directory (its trace), or `-` (standard input). Only regular files are
//! read: a FIFO, a device (`/dev/zero`, `/dev/urandom`) or a socket is
//! refused, since its size is unknown and a reader may read a file twice
//! (to number lines again, in parallel parts). Standard input is copied
//! once into an unlinked temporary file, which every reader then reads like
//! any other file (its compression told by its first bytes).
use std::fs::File;
use std::io::{Read, Seek as _};
use std::os::fd::AsRawFd as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::AtomicBool;

use anyhow::{Context as _, bail};

use super::cut::CutTolerant;

/// How the file's bytes are compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    None,
    Gzip,
    Zstd,
}

impl Compression {
    /// By the name's extension (`.gz`, `.zst`).
    pub fn of_name(path: &Path) -> Compression {
        match path.extension().and_then(|e| e.to_str()) {
            Some("gz") => Compression::Gzip,
            Some("zst") => Compression::Zstd,
            _ => Compression::None,
        }
    }

    /// By the first bytes (gzip's and zstd's magic numbers).
    pub fn of_bytes(b: &[u8]) -> Compression {
        if b.starts_with(&[0x1f, 0x8b]) {
            Compression::Gzip
        } else if b.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
            Compression::Zstd
        } else {
            Compression::None
        }
    }
}

/// A trace to read.
#[derive(Debug, Clone)]
pub struct Input {
    /// What messages call it: the path as given (a recording directory for
    /// its trace), or `stdin`.
    pub name: String,
    /// The file to open.
    pub path: PathBuf,
    pub compression: Compression,
    /// The file's size in bytes.
    pub len: u64,
    /// A recording's trace, opened below its directory: `path` names this
    /// open file (`/proc/self/fd/N`), so every reader opens what was checked.
    pub held: Option<Arc<File>>,
}

/// Standard input, copied once: the file and its compression.
static STDIN: OnceLock<Result<(File, Compression), String>> = OnceLock::new();

impl Input {
    /// Resolves `arg` as given on a command line: `-` is standard input, a
    /// directory stands for its recording's trace, anything else must be a
    /// regular file.
    pub fn resolve(arg: &Path) -> anyhow::Result<Input> {
        if arg.as_os_str() == "-" {
            return stdin();
        }
        // A recording is named as given (its trace's lines are the recording's).
        let name = arg.display().to_string();
        if let Some((trace, opened)) = crate::recording::open_trace(arg)? {
            let held = Arc::new(opened.file);
            return Ok(Input {
                name,
                compression: Compression::of_name(&trace),
                len: opened.len,
                path: PathBuf::from(format!("/proc/self/fd/{}", held.as_raw_fd())),
                held: Some(held),
            });
        }
        let path = arg.to_owned();
        let meta = std::fs::metadata(&path).with_context(|| format!("cannot open trace {}", path.display()))?;
        if !meta.is_file() {
            bail!(
                "{name}: not a regular file ({}): give a trace file, or `-` to read one from stdin",
                file_kind(&meta)
            );
        }
        Ok(Input { name, compression: Compression::of_name(&path), len: meta.len(), path, held: None })
    }

    /// The decoded bytes, and the flag a cut compressed stream raises.
    pub fn open(&self) -> anyhow::Result<(Box<dyn Read>, Arc<AtomicBool>)> {
        let f = File::open(&self.path).with_context(|| format!("cannot open trace {}", self.name))?;
        self.decode(f)
    }

    /// `f` (this input's bytes, or part of a counting wrapper around them),
    /// decoded.
    pub fn decode(&self, f: impl Read + 'static) -> anyhow::Result<(Box<dyn Read>, Arc<AtomicBool>)> {
        Ok(match self.compression {
            Compression::None => (Box::new(f), Arc::default()),
            Compression::Gzip => {
                let d = CutTolerant::new(flate2::read::MultiGzDecoder::new(f));
                let cut = d.cut_flag();
                (Box::new(d), cut)
            }
            Compression::Zstd => {
                let d = super::zst::bounded_decoder(f, self.name.clone())
                    .with_context(|| format!("{}: cannot start the zstd decoder", self.name))?;
                let cut = d.cut_flag();
                (Box::new(d), cut)
            }
        })
    }
}

pub use crate::open::file_kind;

/// Standard input as an [`Input`]: copied into an unlinked temporary file
/// on the first call, that file on later ones.
fn stdin() -> anyhow::Result<Input> {
    let (file, compression) = STDIN
        .get_or_init(|| spool(&mut std::io::stdin().lock()))
        .as_ref()
        .map_err(|e| anyhow::anyhow!("stdin: {e}"))?;
    let len = file.metadata().context("stdin")?.len();
    // The open file, by a path any reader can open again (with its own offset).
    let path = PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()));
    Ok(Input { name: "stdin".into(), path, compression: *compression, len, held: None })
}

/// Copies `r` into a new unlinked file in the temporary directory.
fn spool(r: &mut impl Read) -> Result<(File, Compression), String> {
    let dir = std::env::temp_dir();
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let p = dir.join(format!("tracer-stdin-{}-{nanos}", std::process::id()));
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&p)
        .map_err(|e| format!("cannot create a temporary file in {} to hold it ({e})", dir.display()))?;
    let _ = std::fs::remove_file(&p);
    std::io::copy(r, &mut f).map_err(|e| format!("cannot copy it to a temporary file in {} ({e})", dir.display()))?;
    f.rewind().map_err(|e| e.to_string())?;
    let mut magic = [0u8; 4];
    let mut got = 0;
    while got < 4 {
        match f.read(&mut magic[got..]) {
            Ok(0) => break,
            Ok(k) => got += k,
            Err(e) => return Err(e.to_string()),
        }
    }
    Ok((f, Compression::of_bytes(&magic[..got])))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compression_by_name_and_by_bytes() {
        assert_eq!(Compression::of_name(Path::new("a.jsonl.gz")), Compression::Gzip);
        assert_eq!(Compression::of_name(Path::new("a.jsonl.zst")), Compression::Zstd);
        assert_eq!(Compression::of_name(Path::new("a.jsonl")), Compression::None);
        assert_eq!(Compression::of_bytes(&[0x1f, 0x8b, 8, 0]), Compression::Gzip);
        assert_eq!(Compression::of_bytes(&zstd::stream::encode_all(&b"{}"[..], 1).unwrap()), Compression::Zstd);
        assert_eq!(Compression::of_bytes(b"{\"type\""), Compression::None);
        assert_eq!(Compression::of_bytes(b""), Compression::None);
    }

    #[test]
    fn devices_and_fifos_are_refused() {
        let e = Input::resolve(Path::new("/dev/zero")).unwrap_err().to_string();
        assert_eq!(
            e,
            "/dev/zero: not a regular file (a character device): give a trace file, or `-` to read one from stdin"
        );
        let d = std::env::temp_dir().join(format!("tracer-format-input-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let fifo = d.join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc_mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = Input::resolve(&fifo).unwrap_err().to_string();
        assert!(
            e.ends_with("not a regular file (a named pipe): give a trace file, or `-` to read one from stdin"),
            "{e}"
        );
        std::fs::remove_dir_all(&d).unwrap();
    }

    unsafe extern "C" {
        #[link_name = "mkfifo"]
        fn libc_mkfifo(path: *const std::ffi::c_char, mode: u32) -> i32;
    }

    #[test]
    fn spooled_input_reads_again_and_again() {
        let text = b"{\"a\":1}\n".repeat(1000);
        let gz = {
            use std::io::Write as _;
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            e.write_all(&text).unwrap();
            e.finish().unwrap()
        };
        let (f, c) = spool(&mut &gz[..]).unwrap();
        assert_eq!(c, Compression::Gzip);
        let input = Input {
            name: "stdin".into(),
            path: PathBuf::from(format!("/proc/self/fd/{}", f.as_raw_fd())),
            compression: c,
            len: gz.len() as u64,
            held: None,
        };
        for _ in 0..2 {
            let mut out = Vec::new();
            input.open().unwrap().0.read_to_end(&mut out).unwrap();
            assert_eq!(out, text);
        }
    }
}
