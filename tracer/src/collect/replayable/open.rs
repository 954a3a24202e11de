//! Readers (`tracer summary`, `report`, `gaps`, `export`, `plot`, ...) take
//! a recording directory where they take a trace: it stands for its
//! `trace.jsonl`, once its manifest's schema version is one this tracer
//! knows.
use std::borrow::Cow;
use std::path::Path;

use anyhow::{Context as _, bail};

/// The trace file `path` designates.
pub fn trace_path(path: &Path) -> anyhow::Result<Cow<'_, Path>> {
    if !path.is_dir() {
        return Ok(Cow::Borrowed(path));
    }
    let m = path.join("manifest.json");
    // A recording cut off before its end has no manifest yet: its trace
    // is still valid.
    if m.exists() {
        let text = std::fs::read_to_string(&m).with_context(|| format!("cannot read {}", m.display()))?;
        check_manifest(&text).map_err(|e| anyhow::anyhow!("{}: {e}", m.display()))?;
    }
    let t = path.join("trace.jsonl");
    if !t.is_file() {
        bail!("{} is a directory without trace.jsonl: not a recording", path.display());
    }
    Ok(Cow::Owned(t))
}

/// Accepts a manifest of this format with a schema version not newer than
/// ours (tracer-format's check and its messages).
pub fn check_manifest(text: &str) -> Result<(), String> {
    tracer_format::recording::check_manifest(text, "tracer").map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifests_and_directories() {
        assert_eq!(check_manifest(r#"{"format":"tracer-recording","schema_version":1}"#), Ok(()));
        assert_eq!(
            check_manifest(r#"{"format":"tracer-recording","schema_version":2}"#).unwrap_err(),
            "schema_version 2 is newer than this tracer understands (schema_version 1); use a newer tracer"
        );
        assert!(check_manifest(r#"{"schema_version":1}"#).unwrap_err().starts_with("not a tracer recording"));
        assert!(check_manifest("{").unwrap_err().starts_with("not JSON"));
        let d = std::env::temp_dir().join(format!("tracer-open-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        let e = trace_path(&d).unwrap_err().to_string();
        assert!(e.ends_with("is a directory without trace.jsonl: not a recording"), "{e}");
        std::fs::write(d.join("trace.jsonl"), "").unwrap();
        assert_eq!(trace_path(&d).unwrap(), d.join("trace.jsonl"));
        std::fs::write(d.join("manifest.json"), r#"{"format":"tracer-recording","schema_version":9}"#).unwrap();
        let e = trace_path(&d).unwrap_err().to_string();
        assert!(e.contains("manifest.json: schema_version 9 is newer"), "{e}");
        let f = d.join("trace.jsonl");
        assert_eq!(trace_path(&f).unwrap(), f);
        let _ = std::fs::remove_dir_all(&d);
    }
}
