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
use tracer_format::digest::{sha256_hex, sha256_reader};
use tracer_format::open::{Beneath, Kind};
use tracer_format::recording::{DATA, MANIFEST, SCHEMA_VERSION};

pub use trace::{Call, GpuActivity, Marker, PowerSample, Trace};
pub use tracer_format::recording::{ImageEntry, KernelLayout, Manifest};

#[derive(Debug)]
pub struct Recording {
    pub dir: PathBuf,
    pub manifest: Manifest,
    pub trace_path: PathBuf,
    pub trace: Trace,
    /// The directory, through which every file of it is opened: nothing
    /// below it is followed out of it (tracer_format::open::Beneath).
    files: Beneath,
}

impl Recording {
    pub fn open(dir: &Path) -> Result<Recording> {
        if !dir.is_dir() {
            bail!("{}: not a directory (a recording is a NAME.rec/ directory)", dir.display());
        }
        let files = Beneath::new(dir)?;
        let mpath = dir.join(MANIFEST);
        if !files.exists(Path::new(MANIFEST)) {
            bail!("{}: cannot read: no such file (a recording holds its manifest.json)", mpath.display());
        }
        let text = files.read_to_string(Path::new(MANIFEST), Kind::Manifest)?;
        let manifest = Manifest::parse(&text, &mpath, "replay")?;
        for img in &manifest.images {
            let p = dir.join(&img.file);
            let what = || format!("{}: image {} ({})", mpath.display(), img.sha256, p.display());
            if !files.exists(Path::new(&img.file)) {
                bail!("{}: file missing", what());
            }
            let o = files.open(Path::new(&img.file), Kind::Image).with_context(what)?;
            if o.len != img.bytes {
                bail!("{}: {} bytes on disk, the manifest says {}", what(), o.len, img.bytes);
            }
            let got = sha256_reader(o.file).with_context(what)?;
            if got != img.sha256 {
                bail!("{}: SHA-256 of the file is {got}: the file does not match its name", what());
            }
        }
        let trace_path = dir.join(&manifest.trace);
        let opened = files.open(Path::new(&manifest.trace), Kind::Trace)?;
        let trace = Trace::read_file(&trace_path, opened.file)?;
        if let Some(v) = trace.header.as_ref().and_then(|h| h.replayable_schema_version())
            && v > SCHEMA_VERSION
        {
            bail!(
                "{}:1: header replayable.schema_version {v} is newer than this replay understands (schema_version {SCHEMA_VERSION})",
                trace_path.display(),
            );
        }
        Ok(Recording { dir: dir.to_owned(), manifest, trace_path, trace, files })
    }

    /// The trace file's name as messages give it (relative to the recording).
    pub fn trace_name(&self) -> &str {
        &self.manifest.trace
    }

    pub fn image_bytes(&self, sha: &str) -> Result<Vec<u8>> {
        let img = self
            .manifest
            .image(sha)
            .with_context(|| format!("{}: image {sha} is not in manifest.json", self.dir.display()))?;
        self.files.read(Path::new(&img.file), Kind::Image)
    }

    /// Where `data/<sha>` lies, for messages.
    pub fn data_path(&self, sha: &str) -> PathBuf {
        tracer_format::recording::data_path(&self.dir, sha)
    }

    /// `data/<sha>`, opened below the recording, checked against the copy's
    /// size and its name: nothing is read unless it is the copy's size, and
    /// what is read is returned only if its SHA-256 is its name.
    fn data_file(&self, sha: &str, size: u64) -> Result<std::fs::File> {
        let rel = Path::new(DATA).join(sha);
        let p = self.data_path(sha);
        if !self.files.exists(&rel) {
            bail!("{}: missing", p.display());
        }
        let o = self.files.open(&rel, Kind::Data)?;
        if o.len != size {
            bail!("{} is {} bytes, the copy is {size} bytes (truncated?)", p.display(), o.len);
        }
        Ok(o.file)
    }

    /// Checks `data/<sha>` as [`Recording::data_bytes`] does, without keeping its bytes.
    pub fn check_data(&self, sha: &str, size: u64) -> Result<()> {
        let got = sha256_reader(self.data_file(sha, size)?)
            .with_context(|| format!("{}: cannot read", self.data_path(sha).display()))?;
        if got != sha {
            bail!("{}: SHA-256 of the file is {got}: the file does not match its name", self.data_path(sha).display());
        }
        Ok(())
    }

    /// The bytes of `data/<sha>`, checked against their name and the copy's size.
    pub fn data_bytes(&self, sha: &str, size: u64) -> Result<Vec<u8>> {
        let p = self.data_path(sha);
        let mut b = Vec::with_capacity(size as usize);
        std::io::Read::read_to_end(&mut std::io::Read::take(self.data_file(sha, size)?, size), &mut b)
            .with_context(|| format!("{}: cannot read", p.display()))?;
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
