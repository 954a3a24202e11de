//! A replayable recording on disk, `NAME.rec/` (docs/recording-format.md):
//! `manifest.json`, the trace (`trace.jsonl`, or `trace.jsonl.zst`),
//! `images/<sha256>` and `data/<sha256>`, each content stored once under its
//! SHA-256.
//!
//! Readers take a recording directory where they take a trace: it stands
//! for its trace, once its manifest's schema version is one they know.
pub mod manifest;

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use anyhow::bail;

use crate::open::{Beneath, Kind, Opened};

pub use manifest::{
    Coverage, DataSummary, FORMAT, ImageEntry, KernelLayout, Manifest, SCHEMA_VERSION, check_layout, check_manifest,
    inside,
};

/// The manifest's file name in the recording directory.
pub const MANIFEST: &str = "manifest.json";
/// The trace's file name, plain.
pub const TRACE: &str = "trace.jsonl";
/// The trace's file name, zstd-compressed.
pub const TRACE_ZST: &str = "trace.jsonl.zst";
/// The folder of the code images, `images/<sha256>`.
pub const IMAGES: &str = "images";
/// The folder of copied bytes, `data/<sha256>`.
pub const DATA: &str = "data";

/// An image's path in the recording, as the manifest's `file` gives it:
/// `images/<sha256>`.
pub fn image_file(sha256: &str) -> String {
    format!("{IMAGES}/{sha256}")
}

/// Where the image of this SHA-256 lies in recording `dir`.
pub fn image_path(dir: &Path, sha256: &str) -> PathBuf {
    dir.join(IMAGES).join(sha256)
}

/// Where the copied bytes of this SHA-256 lie in recording `dir`.
pub fn data_path(dir: &Path, sha256: &str) -> PathBuf {
    dir.join(DATA).join(sha256)
}

/// The content address `bytes` get in the folder `sub` ([`IMAGES`] or
/// [`DATA`]) of `dir`: their SHA-256 and the path.
pub fn store_path(dir: &Path, sub: &str, bytes: &[u8]) -> (String, PathBuf) {
    let sha = crate::digest::sha256_hex(bytes);
    let path = dir.join(sub).join(&sha);
    (sha, path)
}

/// The trace file `path` designates: `path` itself unless it is a
/// directory; for a recording directory, the trace its manifest names (the
/// manifest's schema version checked), else `trace.jsonl` or
/// `trace.jsonl.zst` (a recording cut off before its end has no manifest
/// yet: its trace is still valid). Inside a recording nothing is followed
/// out of it ([`crate::open::Beneath`]): a manifest or trace that is a link,
/// or lies below one, is refused.
pub fn trace_path(path: &Path) -> anyhow::Result<Cow<'_, Path>> {
    Ok(match open_trace(path)? {
        None => Cow::Borrowed(path),
        Some((t, _)) => Cow::Owned(t),
    })
}

/// For a recording directory `path`, its trace (see [`trace_path`]): the
/// path messages name and the file, opened below the directory. None when
/// `path` is not a directory.
pub fn open_trace(path: &Path) -> anyhow::Result<Option<(PathBuf, Opened)>> {
    if !path.is_dir() {
        return Ok(None);
    }
    let dir = Beneath::new(path)?;
    let m = path.join(MANIFEST);
    let mut named = None;
    if dir.exists(Path::new(MANIFEST)) {
        let text = dir.read_to_string(Path::new(MANIFEST), Kind::Manifest)?;
        let v = check_manifest(&text, "tracer").map_err(|e| anyhow::anyhow!("{}: {e}", m.display()))?;
        named = v.get("trace").and_then(|t| t.as_str()).map(str::to_owned);
    }
    if let Some(name) = named {
        manifest::inside(&name).map_err(|e| anyhow::anyhow!("{}: trace: {e}", m.display()))?;
        if !dir.exists(Path::new(&name)) {
            bail!("{} is a directory without {name}: not a recording", path.display());
        }
        let f = dir.open(Path::new(&name), Kind::Trace)?;
        return Ok(Some((path.join(&name), f)));
    }
    for name in [TRACE, TRACE_ZST] {
        if dir.exists(Path::new(name)) {
            let f = dir.open(Path::new(name), Kind::Trace)?;
            return Ok(Some((path.join(name), f)));
        }
    }
    bail!("{} is a directory without trace.jsonl: not a recording", path.display())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directories_stand_for_their_trace() {
        let d = std::env::temp_dir().join(format!("tracer-format-open-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        let e = trace_path(&d).unwrap_err().to_string();
        assert!(e.ends_with("is a directory without trace.jsonl: not a recording"), "{e}");
        // Without a manifest (cut off): trace.jsonl.zst, else trace.jsonl.
        std::fs::write(d.join(TRACE_ZST), "").unwrap();
        assert_eq!(trace_path(&d).unwrap(), d.join(TRACE_ZST));
        std::fs::write(d.join(TRACE), "").unwrap();
        assert_eq!(trace_path(&d).unwrap(), d.join(TRACE));
        // The manifest's `trace` comes first.
        std::fs::write(
            d.join(MANIFEST),
            r#"{"format":"tracer-recording","schema_version":1,"trace":"trace.jsonl.zst"}"#,
        )
        .unwrap();
        assert_eq!(trace_path(&d).unwrap(), d.join(TRACE_ZST));
        std::fs::write(d.join(MANIFEST), r#"{"format":"tracer-recording","schema_version":1,"trace":"other.jsonl"}"#)
            .unwrap();
        let e = trace_path(&d).unwrap_err().to_string();
        assert!(e.ends_with("is a directory without other.jsonl: not a recording"), "{e}");
        std::fs::write(d.join(MANIFEST), r#"{"format":"tracer-recording","schema_version":1}"#).unwrap();
        assert_eq!(trace_path(&d).unwrap(), d.join(TRACE));
        // A trace outside the directory is refused before it is opened.
        std::fs::write(
            d.join(MANIFEST),
            r#"{"format":"tracer-recording","schema_version":1,"trace":"../../../../etc/passwd"}"#,
        )
        .unwrap();
        let e = trace_path(&d).unwrap_err().to_string();
        assert!(
            e.ends_with(
                "manifest.json: trace: \"../../../../etc/passwd\" leaves the recording directory (paths must be relative, without `..`)"
            ),
            "{e}"
        );
        std::fs::write(d.join(MANIFEST), r#"{"format":"tracer-recording","schema_version":9}"#).unwrap();
        let e = trace_path(&d).unwrap_err().to_string();
        assert!(e.contains("manifest.json: schema_version 9 is newer than this tracer understands"), "{e}");
        let f = d.join(TRACE);
        assert_eq!(trace_path(&f).unwrap(), f);
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_recording_leads_nowhere_outside_it() {
        let d = std::env::temp_dir().join(format!("tracer-format-links-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        let rec = d.join("x.rec");
        std::fs::create_dir_all(&rec).unwrap();
        std::fs::write(d.join("zero-like"), "x".repeat(100)).unwrap();
        let link = |name: &str| {
            format!(
                "{}: a symbolic link inside {}: refused (a recording's files are read from inside it, never through a link)",
                rec.join(name).display(),
                rec.display()
            )
        };
        // The manifest a link (to /dev/zero: never opened, so never read whole).
        std::os::unix::fs::symlink("/dev/zero", rec.join(MANIFEST)).unwrap();
        assert_eq!(trace_path(&rec).unwrap_err().to_string(), link(MANIFEST));
        std::fs::remove_file(rec.join(MANIFEST)).unwrap();
        // The trace a link to a file outside.
        std::os::unix::fs::symlink(d.join("zero-like"), rec.join(TRACE)).unwrap();
        assert_eq!(trace_path(&rec).unwrap_err().to_string(), link(TRACE));
        std::fs::remove_file(rec.join(TRACE)).unwrap();
        // The trace a named pipe: refused at once (a blocking open would wait for a writer).
        let c = std::ffi::CString::new(rec.join(TRACE).to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert_eq!(
            trace_path(&rec).unwrap_err().to_string(),
            format!("{}: not a regular file (a named pipe): a trace must be a regular file", rec.join(TRACE).display())
        );
        std::fs::remove_file(rec.join(TRACE)).unwrap();
        // A manifest too large for one.
        std::fs::File::create(rec.join(MANIFEST)).unwrap().set_len(3 << 30).unwrap();
        assert_eq!(
            trace_path(&rec).unwrap_err().to_string(),
            format!(
                "{}: 3.0 GiB is larger than a recording's manifest may be (64.0 MiB): is it the right file?",
                rec.join(MANIFEST).display()
            )
        );
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn content_addresses() {
        const ABC: &str = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
        let d = Path::new("x.rec");
        assert_eq!(image_file(ABC), format!("images/{ABC}"));
        assert_eq!(image_path(d, ABC), Path::new("x.rec/images").join(ABC));
        assert_eq!(data_path(d, ABC), Path::new("x.rec/data").join(ABC));
        assert_eq!(store_path(d, DATA, b"abc"), (ABC.to_string(), Path::new("x.rec/data").join(ABC)));
        assert_eq!(d.join(image_file(ABC)), image_path(d, ABC));
    }
}
