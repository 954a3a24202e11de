//! The fields every event line of the general (JSON value) path starts
//! with; the fast paths (fastline.rs, fastcall.rs) write the same fields as
//! bytes.
use serde_json::{Map, Value, json};
use tracer_common::event::Header;

/// The fields every event line starts with.
pub fn base(hdr: &Header, ty: &str, op: &str, name: &str) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("ts".into(), json!(hdr.ts));
    m.insert("pid".into(), json!(hdr.pid));
    m.insert("tid".into(), json!(hdr.tid));
    m.insert("type".into(), json!(ty));
    m.insert("op".into(), json!(op));
    m.insert("name".into(), json!(name));
    m.insert("cpu".into(), json!(hdr.cpu));
    m.insert("seq".into(), json!(hdr.seq));
    m
}
