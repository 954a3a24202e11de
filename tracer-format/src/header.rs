//! The first line of a trace, `type: "header"` (docs/trace-format.md,
//! *Header*): typed where readers look, every other field kept in `rest`.
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The header's `format`.
pub const FORMAT: &str = "tracer-jsonl";
/// The header's `format_version` this crate writes, and the newest it reads.
/// 2 added `stack` lines and the `stack` field (docs/trace-format.md, *Stack
/// lines*); a version 1 trace reads as before.
pub const FORMAT_VERSION: u64 = 2;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// `"header"`.
    #[serde(rename = "type")]
    pub line_type: String,
    /// [`FORMAT`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format_version: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tracer_version: Option<String>,
    /// The traced command's argv.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
    /// The traced command, or the `-p` process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u64>,
    /// UTC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    /// `--replayable`: the recording's options and schema version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replayable: Option<Replayable>,
    /// Every other field.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

/// The header's `replayable` object.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Replayable {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema_version: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capture_data: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_cap_bytes: Option<u64>,
    /// Every other field.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

impl Header {
    /// The header of a parsed line; `None` for another line type or a header
    /// whose typed fields have other types.
    pub fn from_value(v: &Value) -> Option<Header> {
        if v.get("type").and_then(Value::as_str) != Some("header") {
            return None;
        }
        Header::deserialize(v).ok()
    }

    /// `replayable.schema_version`, when the trace is a recording's.
    pub fn replayable_schema_version(&self) -> Option<u64> {
        self.replayable.as_ref()?.schema_version
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn typed_fields_and_the_rest_kept() {
        let v = json!({"type": "header", "format": "tracer-jsonl", "format_version": 2, "pid": 42,
            "command": ["a", "b"], "host": "vm", "gpus": [{"bus": "0000:00:06.0"}], "driver": null,
            "replayable": {"capture_data": true, "data_cap_bytes": 1024, "schema_version": 1, "new": [1]}});
        let h = Header::from_value(&v).unwrap();
        assert_eq!(h.format.as_deref(), Some(FORMAT));
        assert_eq!(h.format_version, Some(FORMAT_VERSION));
        assert_eq!(h.pid, Some(42));
        assert_eq!(h.command, Some(vec!["a".to_string(), "b".to_string()]));
        assert_eq!(h.replayable_schema_version(), Some(1));
        assert_eq!(h.replayable.as_ref().unwrap().rest["new"], json!([1]));
        assert_eq!(h.rest["host"], "vm");
        assert_eq!(h.rest["driver"], Value::Null);
        // Nothing is lost.
        assert_eq!(serde_json::to_value(&h).unwrap(), v);
        assert_eq!(Header::from_value(&json!({"type": "footer"})), None);
        assert_eq!(Header::from_value(&json!({"type": "header", "pid": "x"})), None);
        let bare = Header::from_value(&json!({"type": "header"})).unwrap();
        assert_eq!((bare.replayable_schema_version(), bare.rest.len()), (None, 0));
    }
}
