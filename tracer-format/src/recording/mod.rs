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

use anyhow::{Context as _, bail};

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
/// yet: its trace is still valid).
pub fn trace_path(path: &Path) -> anyhow::Result<Cow<'_, Path>> {
    if !path.is_dir() {
        return Ok(Cow::Borrowed(path));
    }
    let m = path.join(MANIFEST);
    let mut named = None;
    if m.exists() {
        let text = std::fs::read_to_string(&m).with_context(|| format!("cannot read {}", m.display()))?;
        let v = check_manifest(&text, "tracer").map_err(|e| anyhow::anyhow!("{}: {e}", m.display()))?;
        named = v.get("trace").and_then(|t| t.as_str()).map(str::to_owned);
    }
    if let Some(name) = named {
        manifest::inside(&name).map_err(|e| anyhow::anyhow!("{}: trace: {e}", m.display()))?;
        let t = path.join(&name);
        if !t.is_file() {
            bail!("{} is a directory without {name}: not a recording", path.display());
        }
        return Ok(Cow::Owned(t));
    }
    for name in [TRACE, TRACE_ZST] {
        let t = path.join(name);
        if t.is_file() {
            return Ok(Cow::Owned(t));
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
