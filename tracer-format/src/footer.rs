//! The last line of a trace, `type: "footer"` (docs/trace-format.md,
//! *Footer*): typed where readers look, every other field kept in `rest`.
use std::io::{Read as _, Seek as _, SeekFrom};
use std::path::Path;

use anyhow::{Context as _, bail};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::recording::Coverage;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Footer {
    /// `"footer"`.
    #[serde(rename = "type")]
    pub line_type: String,
    /// Call lines written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calls: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub incomplete_calls: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry_lost_calls: Option<u64>,
    /// Ring-buffer records received.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub records: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost: Option<Lost>,
    /// Lines lost to a write error (a full disk).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lines_not_written: Option<u64>,
    /// From the start of collection to the end of the trace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_s: Option<f64>,
    /// tracer's own CPU time and memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collector: Option<Collector>,
    /// `--bpf-stats`: per eBPF program `runs`, `run_time_ns`, `ns_per_run`
    /// (`null` without).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bpf_stats: Option<Map<String, Value>>,
    /// `--replayable`: what the recording captured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<Coverage>,
    /// Every other field.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

/// The footer's `lost` object.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Lost {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    /// Every other field.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

/// The footer's `collector` object (getrusage of tracer itself).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Collector {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_user_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_system_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_rss_kib: Option<u64>,
    /// Every other field.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

impl Footer {
    /// The footer of a parsed line; `None` for another line type or a footer
    /// whose typed fields have other types.
    pub fn from_value(v: &Value) -> Option<Footer> {
        if v.get("type").and_then(Value::as_str) != Some("footer") {
            return None;
        }
        Footer::deserialize(v).ok()
    }

    /// `lost.total`.
    pub fn lost_total(&self) -> Option<u64> {
        self.lost.as_ref()?.total
    }

    /// tracer's CPU time, user and system (0 for what is missing).
    pub fn collector_cpu_s(&self) -> f64 {
        self.collector.as_ref().map_or(0.0, |c| c.cpu_user_s.unwrap_or(0.0) + c.cpu_system_s.unwrap_or(0.0))
    }
}

/// The footer of the trace at `path`, read from its end: the last 1 MiB of
/// a plain file (traces reach GBs), the whole decoded stream of a `.gz` or
/// `.zst` one. An error if the last line is not a footer.
pub fn read_last(path: &Path) -> anyhow::Result<Footer> {
    let mut f =
        crate::open::open(path, crate::open::Kind::Trace).with_context(|| format!("reading {}", path.display()))?.file;
    let last = match path.extension().and_then(|e| e.to_str()) {
        Some("gz" | "zst") => {
            let mut last = Vec::new();
            crate::read::lines_in_place(
                crate::read::decompressed(path, f)?,
                &path.display().to_string(),
                crate::read::MAX_LINE_BYTES,
                |_, b| {
                    last.clear();
                    last.extend_from_slice(b);
                    Ok(())
                },
            )?;
            last
        }
        _ => {
            let len = f.metadata()?.len();
            f.seek(SeekFrom::Start(len.saturating_sub(1 << 20)))?;
            let mut tail = Vec::new();
            f.read_to_end(&mut tail)?;
            let tail = tail.trim_ascii_end();
            let start = memchr::memrchr(b'\n', tail).map_or(0, |i| i + 1);
            tail[start..].to_vec()
        }
    };
    let v: Value = serde_json::from_slice(&last).with_context(|| format!("last line of {}", path.display()))?;
    if v["type"] != "footer" {
        bail!("{} has no footer", path.display());
    }
    Footer::deserialize(&v).with_context(|| format!("footer of {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::io::Write as _;

    fn footer() -> Value {
        json!({"type": "footer", "calls": 7, "lost": {"total": 0, "by_cpu": {}}, "duration_s": 1.5,
            "collector": {"cpu_user_s": 0.25, "cpu_system_s": 0.5, "max_rss_kib": 1000, "rss_anon_kib": 9},
            "bpf_stats": {"cu_enter": {"ns_per_run": 12.5}}, "exit": {"code": 0, "signal": null},
            "replay": {"launches": 5, "params_exact": 5, "params_missing_reasons": {}}})
    }

    #[test]
    fn typed_fields_and_the_rest_kept() {
        let v = footer();
        let f = Footer::from_value(&v).unwrap();
        assert_eq!((f.calls, f.lost_total(), f.duration_s), (Some(7), Some(0), Some(1.5)));
        assert_eq!(f.collector_cpu_s(), 0.75);
        assert_eq!(f.collector.as_ref().unwrap().max_rss_kib, Some(1000));
        assert_eq!(f.bpf_stats.as_ref().unwrap()["cu_enter"]["ns_per_run"], 12.5);
        assert_eq!(f.replay.as_ref().unwrap().launches, 5);
        assert_eq!(f.rest["exit"]["code"], 0);
        let mut back = serde_json::to_value(&f).unwrap();
        // The replay object comes back whole (its missing counts as 0).
        assert_eq!(back["replay"]["d2h_copies"], 0);
        back["replay"] = v["replay"].clone();
        assert_eq!(back, v);
        let null_stats = Footer::from_value(&json!({"type": "footer", "bpf_stats": null})).unwrap();
        assert_eq!(
            (null_stats.bpf_stats.clone(), null_stats.collector_cpu_s(), null_stats.lost_total()),
            (None, 0.0, None)
        );
        assert_eq!(Footer::from_value(&json!({"type": "header"})), None);
    }

    #[test]
    fn read_last_plain_gz_and_zst() {
        let d = std::env::temp_dir().join(format!("tracer-format-footer-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let mut text = String::new();
        for i in 0..50_000 {
            text.push_str(&format!("{{\"type\":\"kernel\",\"ts\":{i},\"pad\":\"{}\"}}\n", "x".repeat(20)));
        }
        text.push_str(&format!("{}\n", footer()));
        let plain = d.join("t.jsonl");
        std::fs::write(&plain, &text).unwrap();
        assert_eq!(read_last(&plain).unwrap().calls, Some(7));
        let zst = d.join("t.jsonl.zst");
        std::fs::write(&zst, zstd::stream::encode_all(text.as_bytes(), 1).unwrap()).unwrap();
        assert_eq!(read_last(&zst).unwrap().lost_total(), Some(0));
        let gz = d.join("t.jsonl.gz");
        let mut e = flate2::write::GzEncoder::new(std::fs::File::create(&gz).unwrap(), flate2::Compression::fast());
        e.write_all(text.as_bytes()).unwrap();
        e.finish().unwrap();
        assert_eq!(read_last(&gz).unwrap().duration_s, Some(1.5));
        let cut = d.join("cut.jsonl");
        std::fs::write(&cut, &text[..text.len() - footer().to_string().len() - 1]).unwrap();
        assert_eq!(read_last(&cut).unwrap_err().to_string(), format!("{} has no footer", cut.display()));
        let e = read_last(&d.join("missing.jsonl")).unwrap_err().to_string();
        assert!(e.starts_with("reading "), "{e}");
        std::fs::remove_dir_all(&d).unwrap();
    }
}
