//! A replayable recording on disk (`NAME.rec/`, docs/recording-format.md):
//! manifest.json, the trace, images/<sha256>, data/<sha256>. Opening one
//! checks everything that can be checked without planning: the manifest's
//! format and schema version, each image's presence, size and SHA-256, and
//! every trace line's syntax. Errors name the file (and line) and what is wrong.
//! The manifest, its schema check, the content addresses and the trace
//! reader are tracer-format's, shared with tracer.

pub mod ranks;
pub mod trace;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use tracer_format::digest::{sha256_file, sha256_hex};
use tracer_format::recording::{MANIFEST, SCHEMA_VERSION};

pub use trace::{Call, GpuActivity, Marker, PowerSample, Trace};
pub use tracer_format::recording::{ImageEntry, KernelLayout, Manifest};

#[derive(Debug)]
pub struct Recording {
    pub dir: PathBuf,
    pub manifest: Manifest,
    pub trace_path: PathBuf,
    pub trace: Trace,
}

impl Recording {
    pub fn open(dir: &Path) -> Result<Recording> {
        if !dir.is_dir() {
            bail!("{}: not a directory (a recording is a NAME.rec/ directory)", dir.display());
        }
        let mpath = dir.join(MANIFEST);
        let text = std::fs::read_to_string(&mpath).with_context(|| format!("{}: cannot read", mpath.display()))?;
        let manifest = Manifest::parse(&text, &mpath, "replay")?;
        for img in &manifest.images {
            let p = dir.join(&img.file);
            let what = || format!("{}: image {} ({})", mpath.display(), img.sha256, p.display());
            let meta = std::fs::metadata(&p).with_context(|| format!("{}: file missing", what()))?;
            if meta.len() != img.bytes {
                bail!("{}: {} bytes on disk, the manifest says {}", what(), meta.len(), img.bytes);
            }
            let got = sha256_file(&p).with_context(what)?;
            if got != img.sha256 {
                bail!("{}: SHA-256 of the file is {got}: the file does not match its name", what());
            }
        }
        let trace_path = dir.join(&manifest.trace);
        let trace = Trace::read(&trace_path)?;
        if let Some(v) = trace.header.as_ref().and_then(|h| h.replayable_schema_version())
            && v > SCHEMA_VERSION
        {
            bail!(
                "{}:1: header replayable.schema_version {v} is newer than this replay understands (schema_version {SCHEMA_VERSION})",
                trace_path.display(),
            );
        }
        Ok(Recording { dir: dir.to_owned(), manifest, trace_path, trace })
    }

    /// The trace file's name as messages give it (relative to the recording).
    pub fn trace_name(&self) -> &str {
        &self.manifest.trace
    }

    pub fn image_path(&self, sha: &str) -> Option<PathBuf> {
        self.manifest.image(sha).map(|i| self.dir.join(&i.file))
    }

    pub fn image_bytes(&self, sha: &str) -> Result<Vec<u8>> {
        let p = self
            .image_path(sha)
            .with_context(|| format!("{}: image {sha} is not in manifest.json", self.dir.display()))?;
        std::fs::read(&p).with_context(|| format!("{}: cannot read", p.display()))
    }

    pub fn data_path(&self, sha: &str) -> PathBuf {
        tracer_format::recording::data_path(&self.dir, sha)
    }

    /// The bytes of `data/<sha>`, checked against their name and the copy's size.
    pub fn data_bytes(&self, sha: &str, size: u64) -> Result<Vec<u8>> {
        let p = self.data_path(sha);
        let b = std::fs::read(&p).with_context(|| format!("{}: cannot read", p.display()))?;
        if b.len() as u64 != size {
            bail!("{}: {} bytes, the copy is {size} bytes", p.display(), b.len());
        }
        let got = sha256_hex(&b);
        if got != sha {
            bail!("{}: SHA-256 of the file is {got}: the file does not match its name", p.display());
        }
        Ok(b)
    }
}
