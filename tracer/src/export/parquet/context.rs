//! The context columns of every table (host, trace id, GPU of the row) and
//! the wall clock, from the trace's header.
use parquet::data_type::ByteArray;
use serde_json::Value;

use super::table::Row;
use crate::analysis::model::Trace;

/// One GPU of the header's `gpus` list (index = device ordinal).
struct Gpu {
    model: Option<ByteArray>,
    bus: Option<ByteArray>,
    uuid: Option<ByteArray>,
}

pub struct Context {
    pub host: Option<String>,
    pub trace_id: String,
    host_b: Option<ByteArray>,
    trace_id_b: ByteArray,
    gpus: Vec<Gpu>,
    /// (CLOCK_MONOTONIC ns, CLOCK_REALTIME ns) read together at the start.
    clock: Option<(u64, u64)>,
}

fn bytes(v: &Value) -> Option<ByteArray> {
    v.as_str().map(ByteArray::from)
}

impl Context {
    /// `host`: instead of the header's (`--host`).
    pub fn of(t: &Trace, host: Option<&str>) -> Context {
        let null = Value::Null;
        let h = t.header.as_ref().unwrap_or(&null);
        let host = host.map(str::to_string).or_else(|| h["host"].as_str().map(str::to_string));
        let clock = h["clock"]["monotonic_ns"].as_u64().zip(h["clock"]["realtime_ns"].as_u64());
        let trace_id = trace_id(t, host.as_deref());
        let gpus = h["gpus"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|g| Gpu { model: bytes(&g["model"]), bus: bytes(&g["bus"]), uuid: bytes(&g["uuid"]) })
                    .collect()
            })
            .unwrap_or_default();
        Context {
            host_b: host.as_deref().map(ByteArray::from),
            trace_id_b: ByteArray::from(trace_id.as_str()),
            host,
            trace_id,
            gpus,
            clock,
        }
    }

    /// Number of GPUs the header lists.
    pub fn gpu_count(&self) -> usize {
        self.gpus.len()
    }

    /// Fills the context columns of `r` for a row of GPU `device` (None: of no one GPU).
    pub fn fill(&self, r: &mut Row<'_>, device: Option<u32>) {
        let g = device.and_then(|d| self.gpus.get(d as usize));
        r.bytes(self.host_b.as_ref())
            .bytes(Some(&self.trace_id_b))
            .int32(device.map(|d| d as i32))
            .bytes(g.and_then(|g| g.model.as_ref()))
            .bytes(g.and_then(|g| g.bus.as_ref()))
            .bytes(g.and_then(|g| g.uuid.as_ref()));
    }

    /// Wall-clock µs since the Unix epoch of a CLOCK_MONOTONIC ns timestamp.
    pub fn wall_us(&self, ts: u64) -> Option<i64> {
        let (mono, real) = self.clock?;
        let ns = real as i128 + (ts as i128 - mono as i128);
        Some(ns.div_euclid(1000) as i64)
    }
}

/// 16 hex digits of the sha256 of what identifies a recording: host, clock
/// reading at the start, pid and start time (the file's name when the trace
/// has no header).
fn trace_id(t: &Trace, host: Option<&str>) -> String {
    let key = match &t.header {
        Some(h) => format!(
            "{}\n{}\n{}\n{}",
            host.unwrap_or(""),
            h["clock"]["realtime_ns"],
            h["pid"],
            h["started_at"].as_str().unwrap_or("")
        ),
        None => {
            let name = std::path::Path::new(&t.path).file_name().map(|n| n.to_string_lossy().to_string());
            format!("{}\nno header\n{}", host.unwrap_or(""), name.unwrap_or_default())
        }
    };
    tracer_format::digest::sha256_hex(key.as_bytes())[..16].to_string()
}
