//! The form of kernel duration calibrations: the file `tracer calibrate`
//! writes and `--durations FILE` reads, and the `durations` line of a trace
//! (the durations library's entries for the run's GPU, written by the
//! record side just before the footer: docs/trace-format.md#durations-lines).
//!
//! File: `{"format":"tracer-kernel-durations","version":1,"source":"cupti",
//! "gpu":..., "kernels":[{"kernel","grid","block","shared_mem","count",
//! "median_ns","p10_ns","p90_ns"}], "copies":[{"kind":"h2d"|"d2h"|"d2d"|
//! "memset"|…,"count","base_ns","ns_per_byte"}]}`. `copies` is optional
//! (an addition of ours; producers that only know kernels leave it out).
//!
//! Line: `{"type":"durations","ts":T,"pid":0,"tid":0,"origin":"…","gpu_model":…,
//! "source":…,"kernels":[…],"copies":[…]}`: the file's fields inline, less
//! `format` and `version` (the trace's own format versions it), its `gpu`
//! as `gpu_model` (a trace line's `gpu` is a GPU's index: power lines).
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

pub const FORMAT: &str = "tracer-kernel-durations";

/// The `type` of a durations line.
pub const LINE_TYPE: &str = "durations";

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct KernelEntry {
    pub kernel: String,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    #[serde(default)]
    pub shared_mem: u32,
    pub count: u64,
    pub median_ns: u64,
    pub p10_ns: u64,
    pub p90_ns: u64,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct CopyEntry {
    /// Direction (`h2d`, `d2h`, `d2d`, …) or `memset`.
    pub kind: String,
    pub count: u64,
    /// Median duration of small transfers (≤ 64 KiB).
    pub base_ns: u64,
    /// Median extra time per byte of transfers over 1 MiB.
    pub ns_per_byte: f64,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct DurationsFile {
    pub format: String,
    pub version: u32,
    pub source: String,
    pub gpu: Option<String>,
    pub kernels: Vec<KernelEntry>,
    #[serde(default)]
    pub copies: Vec<CopyEntry>,
}

/// The fields of a durations line beyond `type`, `ts`, `pid`, `tid`.
#[derive(Deserialize)]
struct Line {
    origin: String,
    #[serde(default)]
    gpu_model: Option<String>,
    #[serde(default)]
    source: Option<String>,
    kernels: Vec<KernelEntry>,
    #[serde(default)]
    copies: Vec<CopyEntry>,
}

/// The `durations` line that carries `f` in a trace, at `ts` (the record
/// side writes it just before the footer); `origin` names the durations in
/// labels: "durations library PATH (NVIDIA H200, driver 580.159.04, 3 runs)".
pub fn durations_line(ts: u64, origin: &str, f: &DurationsFile) -> Value {
    json!({
        "type": LINE_TYPE,
        "ts": ts,
        "pid": 0,
        "tid": 0,
        "origin": origin,
        "gpu_model": f.gpu,
        "source": f.source,
        "kernels": f.kernels,
        "copies": f.copies,
    })
}

/// A durations line's origin and durations (its bytes, as read).
pub fn parse_durations_line(bytes: &[u8]) -> Result<(String, DurationsFile), String> {
    let l: Line = serde_json::from_slice(bytes).map_err(|e| format!("a `durations` line: {e}"))?;
    let f = DurationsFile {
        format: FORMAT.into(),
        version: 1,
        source: l.source.unwrap_or_else(|| "durations library".into()),
        gpu: l.gpu_model,
        kernels: l.kernels,
        copies: l.copies,
    };
    Ok((l.origin, f))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_durations_line_round_trips() {
        let f = DurationsFile {
            format: FORMAT.into(),
            version: 1,
            source: "durations library".into(),
            gpu: Some("NVIDIA H200".into()),
            kernels: vec![KernelEntry {
                kernel: "kA".into(),
                grid: [1, 1, 1],
                block: [32, 1, 1],
                shared_mem: 0,
                count: 4,
                median_ns: 10_000,
                p10_ns: 9_000,
                p90_ns: 11_000,
            }],
            copies: vec![CopyEntry { kind: "h2d".into(), count: 2, base_ns: 2000, ns_per_byte: 0.025 }],
        };
        let v = durations_line(7, "durations library /x (NVIDIA H200, driver 1.2, 3 runs)", &f);
        let text = serde_json::to_string(&v).unwrap();
        assert_eq!(
            text,
            r#"{"copies":[{"base_ns":2000,"count":2,"kind":"h2d","ns_per_byte":0.025}],"gpu_model":"NVIDIA H200","kernels":[{"block":[32,1,1],"count":4,"grid":[1,1,1],"kernel":"kA","median_ns":10000,"p10_ns":9000,"p90_ns":11000,"shared_mem":0}],"origin":"durations library /x (NVIDIA H200, driver 1.2, 3 runs)","pid":0,"source":"durations library","tid":0,"ts":7,"type":"durations"}"#
        );
        let (origin, back) = parse_durations_line(text.as_bytes()).unwrap();
        assert_eq!(origin, "durations library /x (NVIDIA H200, driver 1.2, 3 runs)");
        assert_eq!(back, f);
        let e = parse_durations_line(br#"{"type":"durations","ts":1,"pid":0,"kernels":[]}"#).unwrap_err();
        assert!(e.starts_with("a `durations` line: missing field `origin`"), "{e}");
        // every reader's rule takes it, and the model keeps the last of two
        assert!(tracer_format::read::check::checked_line(text.as_bytes()).is_ok());
        let second = durations_line(9, "second", &DurationsFile { kernels: vec![], ..f.clone() });
        let t = crate::analysis::model::parse_str("t", &format!("{text}\n{second}")).unwrap();
        assert_eq!(t.library_durations.as_ref().map(|d| (d.0.as_str(), d.1.kernels.len())), Some(("second", 0)));
        assert!(t.unknown_types.is_empty() && t.calls.is_empty() && t.span().is_none());
        let mut sum = crate::analysis::summary::Summary::default();
        sum.add(&v);
        assert_eq!((sum.span.span(), sum.funcs.len()), (None, 0));
    }
}
