//! `manifest.json` of a recording (docs/recording-format.md): one typed
//! [`Manifest`] that tracer writes and replay reads. Its fields are declared
//! in the order of their names, the order serde_json gives the keys of an
//! object: the manifest tracer wrote as an untyped `json!` object serializes
//! to the same bytes.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use anyhow::{Context as _, Result, bail};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The recording format version (`schema_version`): the newest one this
/// crate reads, the one tracer writes.
pub const SCHEMA_VERSION: u64 = 1;
/// The `format` string of a recording's manifest.
pub const FORMAT: &str = "tracer-recording";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// `--capture-data`: the bytes copies move are in `data/`.
    #[serde(default)]
    pub capture_data: bool,
    /// The header's `command` (argv).
    #[serde(default)]
    pub command: Option<Vec<String>>,
    /// The footer's `replay` object.
    #[serde(default)]
    pub coverage: Option<Coverage>,
    #[serde(default)]
    pub data: Option<DataSummary>,
    /// The header's `driver`.
    #[serde(default)]
    pub driver: Option<String>,
    /// [`FORMAT`].
    pub format: String,
    /// The header's `gpus`, as it is.
    #[serde(default)]
    pub gpus: Option<Value>,
    #[serde(default)]
    pub images: Vec<ImageEntry>,
    /// Distinct parameter layouts given to the eBPF maps.
    #[serde(default)]
    pub layouts: Option<u64>,
    pub schema_version: u64,
    /// The header's `started_at` (UTC).
    #[serde(default)]
    pub started_at: Option<String>,
    /// The trace file, relative to the recording directory.
    pub trace: String,
    #[serde(default)]
    pub tracer_version: Option<String>,
}

/// A code image the program loaded, stored as `file` (`images/<sha256>`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImageEntry {
    pub bytes: u64,
    pub file: String,
    #[serde(default)]
    pub kernels: Vec<KernelLayout>,
    /// Kernels left out of the eBPF name map because another kernel of the
    /// image has the same key (their launches need `extra`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub key_collisions: Vec<String>,
    /// `fatbin`, `cubin` or `ptx`.
    pub kind: String,
    /// Why the layouts could not be read (the image is still stored).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layout_error: Option<String>,
    #[serde(default)]
    pub loads: u64,
    pub sha256: String,
}

/// A kernel's parameter layout: `params` are `[offset, size]` in ordinal order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelLayout {
    pub name: String,
    pub param_size: u32,
    pub params: Vec<(u32, u32)>,
}

/// What `data/` holds (`--capture-data`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DataSummary {
    #[serde(default)]
    pub bytes: u64,
    /// `--data-cap-mib`, in bytes.
    #[serde(default)]
    pub cap_bytes: u64,
    #[serde(default)]
    pub files: u64,
    /// Copies whose bytes were not stored: the cap was reached.
    #[serde(default)]
    pub skipped_over_cap: u64,
}

/// What the recording captured (the footer's `replay` object, repeated in
/// the manifest as `coverage`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Coverage {
    /// Device-to-host copies whose destination bytes were stored, of `d2h_copies`.
    pub d2h_captured: u64,
    pub d2h_copies: u64,
    /// Kernel nodes added or set (`cuGraphAddKernelNode*`, `cuGraphAddNode*`
    /// of type kernel, `cuGraph(Exec)*NodeSetParams*`), not in `launches`.
    /// Written only when not 0 (older manifests round-trip unchanged).
    #[serde(skip_serializing_if = "is_zero")]
    pub graph_kernel_nodes: u64,
    pub graph_launches: u64,
    /// Of `graph_kernel_nodes`, the ones with exact parameter bytes.
    #[serde(skip_serializing_if = "is_zero")]
    pub graph_node_params_exact: u64,
    pub h2d_captured: u64,
    pub h2d_copies: u64,
    pub image_errors: u64,
    pub image_loads: u64,
    pub images_captured: u64,
    pub launches: u64,
    /// Map updates the kernel refused (map full): their kernels' launches
    /// show up as missing.
    pub map_update_errors: u64,
    /// Launches whose parameter bytes are exact (from the layout or from `extra`).
    pub params_exact: u64,
    /// Of those, the ones taken from `extra`.
    pub params_from_extra: u64,
    pub params_missing: u64,
    pub params_missing_reasons: BTreeMap<String, u64>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Accepts a manifest of this format with a schema version this crate
/// reads, and returns it as JSON. `reader` names the program in the message
/// about a newer version (`tracer`, `replay`).
pub fn check_manifest(text: &str, reader: &str) -> Result<Value, String> {
    let v: Value = serde_json::from_str(text).map_err(|e| format!("not JSON ({e})"))?;
    if v.get("format").and_then(Value::as_str) != Some(FORMAT) {
        return Err(format!("not a tracer recording manifest (no \"format\": \"{FORMAT}\")"));
    }
    match v.get("schema_version").and_then(Value::as_u64) {
        None => Err("no schema_version".into()),
        Some(0) => Err("schema_version 0 is not a valid version".into()),
        Some(n) if n > SCHEMA_VERSION => Err(format!(
            "schema_version {n} is newer than this {reader} understands (schema_version {SCHEMA_VERSION}); use a newer {reader}"
        )),
        Some(_) => Ok(v),
    }
}

impl Manifest {
    /// Parses a manifest and checks its own consistency (not the files it
    /// names): the schema ([`check_manifest`]), then each image's SHA-256,
    /// kind and kernel layouts. `path` names the file in messages, `reader`
    /// the program.
    pub fn parse(text: &str, path: &Path, reader: &str) -> Result<Manifest> {
        // The schema first, so that a newer schema with other fields gets
        // the version message, not a field error.
        let v = check_manifest(text, reader).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        let m: Manifest =
            serde_json::from_value(v).with_context(|| format!("{}: unexpected content", path.display()))?;
        inside(&m.trace).map_err(|e| anyhow::anyhow!("{}: trace: {e}", path.display()))?;
        let mut seen = BTreeSet::new();
        for (i, img) in m.images.iter().enumerate() {
            let what = format!("{}: images[{i}] ({})", path.display(), img.sha256);
            inside(&img.file).map_err(|e| anyhow::anyhow!("{what}: file: {e}"))?;
            if !crate::digest::is_sha256(&img.sha256) {
                bail!("{what}: sha256 must be 64 lowercase hex digits");
            }
            if !seen.insert(&img.sha256) {
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

    /// The manifest's text as tracer writes it: pretty JSON (two-space
    /// indent) and a newline.
    pub fn to_pretty_json(&self) -> Vec<u8> {
        let mut text = serde_json::to_vec_pretty(self).expect("plain data");
        text.push(b'\n');
        text
    }

    /// The image of this SHA-256, if the recording has it.
    pub fn image(&self, sha: &str) -> Option<&ImageEntry> {
        self.images.iter().find(|i| i.sha256 == sha)
    }
}

/// A path the manifest gives (`trace`, an image's `file`) must name a file
/// inside the recording directory: relative, without `..`, `.` or empty
/// parts, so that no recording makes a reader open a file elsewhere.
pub fn inside(rel: &str) -> Result<(), String> {
    let parts_ok = !rel.is_empty() && rel.split('/').all(|c| !c.is_empty() && c != "." && c != "..");
    if !parts_ok || rel.contains('\0') {
        return Err(format!("{rel:?} leaves the recording directory (paths must be relative, without `..`)"));
    }
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn committed() -> (std::path::PathBuf, Vec<u8>) {
        let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../traces/replay_check.rec/manifest.json");
        let b = std::fs::read(&p).unwrap();
        (p, b)
    }

    #[test]
    fn the_committed_manifest_round_trips_byte_for_byte() {
        let (p, bytes) = committed();
        let m = Manifest::parse(std::str::from_utf8(&bytes).unwrap(), &p, "test").unwrap();
        assert_eq!(m.images.len(), 1);
        assert_eq!(m.coverage.as_ref().unwrap().launches, 5);
        assert_eq!(m.data.as_ref().unwrap().cap_bytes, 4 << 30);
        assert_eq!(m.image(&m.images[0].sha256).unwrap().kernels[0].params[4], (28, 4));
        assert_eq!(String::from_utf8(m.to_pretty_json()).unwrap(), String::from_utf8(bytes).unwrap());
    }

    /// The typed manifest writes what tracer's `json!` manifest wrote,
    /// optional image fields and absent header fields included.
    #[test]
    fn serializes_as_the_untyped_manifest() {
        let mut cov = Coverage { launches: 3, params_exact: 2, params_missing: 1, ..Default::default() };
        cov.params_missing_reasons.insert("no layout".into(), 1);
        let m = Manifest {
            capture_data: false,
            command: None,
            coverage: Some(cov.clone()),
            data: Some(DataSummary { files: 0, bytes: 0, skipped_over_cap: 0, cap_bytes: 1 << 30 }),
            driver: None,
            format: FORMAT.into(),
            gpus: None,
            images: vec![ImageEntry {
                sha256: "ab".repeat(32),
                file: super::super::image_file(&"ab".repeat(32)),
                bytes: 10,
                kind: "cubin".into(),
                loads: 2,
                kernels: vec![KernelLayout { name: "k".into(), param_size: 8, params: vec![(0, 8)] }],
                layout_error: Some("why".into()),
                key_collisions: vec!["k2".into()],
            }],
            layouts: Some(1),
            schema_version: SCHEMA_VERSION,
            started_at: None,
            trace: "trace.jsonl".into(),
            tracer_version: Some("0.1.0".into()),
        };
        let untyped = json!({
            "format": "tracer-recording",
            "schema_version": 1,
            "tracer_version": "0.1.0",
            "trace": "trace.jsonl",
            "command": None::<Value>,
            "started_at": None::<Value>,
            "gpus": None::<Value>,
            "driver": None::<Value>,
            "capture_data": false,
            "images": [{
                "sha256": "ab".repeat(32), "file": format!("images/{}", "ab".repeat(32)), "bytes": 10,
                "kind": "cubin", "loads": 2,
                "kernels": [{"name": "k", "param_size": 8, "params": [[0, 8]]}],
                "layout_error": "why", "key_collisions": ["k2"],
            }],
            "layouts": 1,
            "data": {"files": 0, "bytes": 0, "skipped_over_cap": 0, "cap_bytes": 1 << 30},
            "coverage": serde_json::to_value(&cov).unwrap(),
        });
        let mut want = serde_json::to_vec_pretty(&untyped).unwrap();
        want.push(b'\n');
        assert_eq!(String::from_utf8(m.to_pretty_json()).unwrap(), String::from_utf8(want).unwrap());
        // Without the optional image fields.
        let mut m2 = m.clone();
        m2.images[0].layout_error = None;
        m2.images[0].key_collisions.clear();
        let v = serde_json::to_value(&m2).unwrap();
        assert!(v["images"][0].get("layout_error").is_none() && v["images"][0].get("key_collisions").is_none());
        assert_eq!(serde_json::from_value::<Manifest>(v).unwrap(), m2);
    }

    #[test]
    fn schema_checks() {
        let p = Path::new("m.json");
        assert!(check_manifest(r#"{"format":"tracer-recording","schema_version":1}"#, "tracer").is_ok());
        assert_eq!(
            check_manifest(r#"{"format":"tracer-recording","schema_version":2}"#, "tracer").unwrap_err(),
            "schema_version 2 is newer than this tracer understands (schema_version 1); use a newer tracer"
        );
        assert_eq!(
            check_manifest(r#"{"format":"tracer-recording","schema_version":0}"#, "tracer").unwrap_err(),
            "schema_version 0 is not a valid version"
        );
        assert_eq!(
            check_manifest(r#"{"schema_version":1}"#, "tracer").unwrap_err(),
            "not a tracer recording manifest (no \"format\": \"tracer-recording\")"
        );
        assert_eq!(
            check_manifest(r#"{"format":"other","schema_version":1}"#, "tracer").unwrap_err(),
            "not a tracer recording manifest (no \"format\": \"tracer-recording\")"
        );
        assert_eq!(check_manifest(r#"{"format":"tracer-recording"}"#, "x").unwrap_err(), "no schema_version");
        assert!(check_manifest("{", "tracer").unwrap_err().starts_with("not JSON"));
        let e = Manifest::parse(r#"{"format":"tracer-recording","schema_version":3}"#, p, "replay").unwrap_err();
        assert_eq!(
            e.to_string(),
            "m.json: schema_version 3 is newer than this replay understands (schema_version 1); use a newer replay"
        );
        let e = Manifest::parse(r#"{"format":"tracer-recording","schema_version":1}"#, p, "replay").unwrap_err();
        assert_eq!(e.to_string(), "m.json: unexpected content");
        let img = |sha: &str, kind: &str, params: Value| {
            json!({"format": "tracer-recording", "schema_version": 1, "trace": "trace.jsonl", "images": [
                {"sha256": sha, "file": "images/x", "bytes": 1, "kind": kind,
                 "kernels": [{"name": "k", "param_size": 8, "params": params}]}]})
            .to_string()
        };
        let sha = "ab".repeat(32);
        let m = Manifest::parse(&img(&sha, "ptx", json!([[0, 8]])), p, "replay").unwrap();
        assert_eq!(m.images[0].loads, 0);
        assert!(m.image(&sha).is_some() && m.image("cd").is_none());
        let e = Manifest::parse(&img("AB", "ptx", json!([])), p, "replay").unwrap_err().to_string();
        assert_eq!(e, "m.json: images[0] (AB): sha256 must be 64 lowercase hex digits");
        let e = Manifest::parse(&img(&sha, "elf", json!([])), p, "replay").unwrap_err().to_string();
        assert_eq!(e, format!("m.json: images[0] ({sha}): kind \"elf\", expected fatbin, cubin or ptx"));
        let e = Manifest::parse(&img(&sha, "cubin", json!([[0, 8], [4, 4]])), p, "replay").unwrap_err();
        assert_eq!(
            format!("{e:#}"),
            format!(
                "m.json: images[0] ({sha}): kernel k: parameter 1 at offset 4 overlaps the previous one (ends at 8)"
            )
        );
        let e = Manifest::parse(&img(&sha, "cubin", json!([[4, 8]])), p, "replay").unwrap_err();
        assert!(format!("{e:#}").ends_with("parameter 0 ([4, 8]) ends at 12, past param_size 8"), "{e:#}");
        // Paths that leave the recording directory.
        for bad in ["../../../../etc/passwd", "/etc/passwd", "images/../../x", "", "images//x", "./images/x"] {
            let mut v: Value = serde_json::from_str(&img(&sha, "cubin", json!([]))).unwrap();
            v["images"][0]["file"] = json!(bad);
            let e = Manifest::parse(&v.to_string(), p, "replay").unwrap_err().to_string();
            assert_eq!(
                e,
                format!(
                    "m.json: images[0] ({sha}): file: {bad:?} leaves the recording directory (paths must be relative, without `..`)"
                )
            );
            let mut v: Value = serde_json::from_str(&img(&sha, "cubin", json!([]))).unwrap();
            v["trace"] = json!(bad);
            let e = Manifest::parse(&v.to_string(), p, "replay").unwrap_err().to_string();
            assert_eq!(
                e,
                format!("m.json: trace: {bad:?} leaves the recording directory (paths must be relative, without `..`)")
            );
        }
        let mut two: Value = serde_json::from_str(&img(&sha, "cubin", json!([]))).unwrap();
        let first = two["images"][0].clone();
        two["images"].as_array_mut().unwrap().push(first);
        let e = Manifest::parse(&two.to_string(), p, "replay").unwrap_err().to_string();
        assert_eq!(e, format!("m.json: images[1] ({sha}): listed twice"));
    }
}
