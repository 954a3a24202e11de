//! `manifest.json` of a replayable recording (docs/recording-format.md).

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

/// The newest `schema_version` this reader understands.
pub const SCHEMA_VERSION: u64 = 1;
/// The `format` string of a recording's manifest.
pub const FORMAT: &str = "tracer-recording";

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Manifest {
    pub format: String,
    pub schema_version: u64,
    #[serde(default)]
    pub tracer_version: Option<String>,
    /// The trace file, relative to the recording directory.
    pub trace: String,
    #[serde(default)]
    pub capture_data: bool,
    #[serde(default)]
    pub images: Vec<ImageEntry>,
    #[serde(default)]
    pub data: Option<DataSummary>,
    #[serde(default)]
    pub coverage: Option<serde_json::Value>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ImageEntry {
    pub sha256: String,
    pub file: String,
    pub bytes: u64,
    pub kind: String,
    #[serde(default)]
    pub loads: u64,
    #[serde(default)]
    pub kernels: Vec<KernelLayout>,
}

/// A kernel's parameter layout: `params` are `[offset, size]` in ordinal order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelLayout {
    pub name: String,
    pub param_size: u32,
    pub params: Vec<(u32, u32)>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct DataSummary {
    #[serde(default)]
    pub files: u64,
    #[serde(default)]
    pub bytes: u64,
    #[serde(default)]
    pub skipped_over_cap: u64,
    #[serde(default)]
    pub cap_bytes: u64,
}

impl Manifest {
    /// Parse and check the manifest's own consistency (not the files it names).
    /// `path` is used in messages only.
    pub fn parse(text: &str, path: &Path) -> Result<Manifest> {
        let v: serde_json::Value =
            serde_json::from_str(text).with_context(|| format!("{}: not valid JSON", path.display()))?;
        // Check format and version before the full decode, so that a newer
        // schema with other fields gets the version message, not a field error.
        match v.get("format").and_then(|f| f.as_str()) {
            Some(FORMAT) => {}
            Some(other) => bail!("{}: format is {other:?}, expected {FORMAT:?}", path.display()),
            None => bail!("{}: no \"format\" field (expected {FORMAT:?})", path.display()),
        }
        let version = v
            .get("schema_version")
            .and_then(|s| s.as_u64())
            .with_context(|| format!("{}: no integer \"schema_version\"", path.display()))?;
        if version > SCHEMA_VERSION {
            bail!(
                "{}: schema_version {version} is newer than this replay understands (schema_version {SCHEMA_VERSION}); use a newer replay",
                path.display()
            );
        }
        if version == 0 {
            bail!("{}: schema_version 0 is not a valid version", path.display());
        }
        let m: Manifest =
            serde_json::from_value(v).with_context(|| format!("{}: unexpected content", path.display()))?;
        let mut seen = BTreeMap::new();
        for (i, img) in m.images.iter().enumerate() {
            let what = format!("{}: images[{i}] ({})", path.display(), img.sha256);
            if img.sha256.len() != 64 || !img.sha256.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()) {
                bail!("{what}: sha256 must be 64 lowercase hex digits");
            }
            if seen.insert(img.sha256.clone(), i).is_some() {
                bail!("{what}: listed twice");
            }
            if !matches!(img.kind.as_str(), "fatbin" | "cubin" | "ptx") {
                bail!("{what}: kind {:?}, expected fatbin, cubin or ptx", img.kind);
            }
            for k in &img.kernels {
                check_layout(k).with_context(|| format!("{what}: kernel {}", k.name))?;
            }
        }
        Ok(m)
    }

    pub fn image(&self, sha: &str) -> Option<&ImageEntry> {
        self.images.iter().find(|i| i.sha256 == sha)
    }
}

/// Parameters must lie inside the buffer and must not overlap.
pub fn check_layout(k: &KernelLayout) -> Result<()> {
    let mut end = 0u32;
    for (i, &(off, size)) in k.params.iter().enumerate() {
        let e = off.checked_add(size).context("offset + size overflows")?;
        if off < end {
            bail!("parameter {i} at offset {off} overlaps the previous one (ends at {end})");
        }
        if e > k.param_size {
            bail!("parameter {i} ([{off}, {size}]) ends at {e}, past param_size {}", k.param_size);
        }
        end = e;
    }
    Ok(())
}
