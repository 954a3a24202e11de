//! One replayed pass as a tracer trace (`NAME.rec/replay-timeline.jsonl`):
//! a header, the pass's CUPTI records as `gpu` lines in the recorder's form
//! (docs/trace-format.md), shifted onto the recording's clock so that the
//! pass starts where the recorded GPU work started, the recording's markers,
//! and a footer. Every tracer reader takes it: `tracer plot NAME.rec
//! --compare NAME.rec/replay-timeline.jsonl` draws both timelines.

use serde_json::{Value, json};

use super::{Activity, Op};
use crate::recording::trace::Marker;

/// What the header says about the run.
pub struct Header<'a> {
    pub recording: &'a str,
    pub command: Vec<String>,
    pub gpu_model: &'a str,
    pub gpu_bus: &'a str,
    pub mode: &'a str,
    pub pass: usize,
    pub cupti_library: &'a str,
}

/// The lines. `acts`: the pass's records (sorted by start); `op_lines[i]`:
/// the recording's trace line of the op record i measured and the recorded
/// time of that call, when known (`line`, `recorded_call_ts`: where each
/// marker fell among the ops, without the recording at hand); `shift`:
/// ns added to every timestamp; `pid`: the recorded process the ops came from.
pub fn lines(
    h: &Header,
    acts: &[Activity],
    op_lines: &[Option<(usize, u64)>],
    shift: i64,
    pid: u32,
    markers: &[Marker],
) -> Vec<Value> {
    let sh = |t: u64| t.saturating_add_signed(shift);
    let mut out = Vec::with_capacity(acts.len() + markers.len() + 2);
    let t0 = acts.first().map_or(0, |a| sh(a.start));
    out.push(json!({
        "type": "header", "ts": t0, "pid": pid, "tid": 0,
        "format": "tracer-jsonl", "format_version": 1, "source": "replay",
        "recording": h.recording, "command": h.command,
        "gpus": [{"bus": h.gpu_bus, "model": h.gpu_model}],
        "gpu_timestamps": {"enabled": true, "library": h.cupti_library, "clock": "CLOCK_MONOTONIC ns of the replay, shifted by replay.shift_ns"},
        "replay": {"mode": h.mode, "pass": h.pass, "shift_ns": shift},
    }));
    for (i, a) in acts.iter().enumerate() {
        let mut v = json!({
            "ts": sh(a.start), "end_ts": sh(a.end), "duration_us": (a.end - a.start) as f64 / 1000.0,
            "pid": pid, "tid": 0, "type": "gpu",
            "op": match a.op { Op::Kernel => "kernel", Op::Memcpy => "memcpy", Op::Memset => "memset" },
            "name": null, "source": "cupti", "device": a.device, "context_id": a.context,
            "stream_id": a.stream, "stream": null, "correlation_id": a.correlation,
        });
        match a.op {
            Op::Kernel => {
                v["name"] = json!(a.name.as_deref());
                v["grid"] = json!(a.grid);
                v["block"] = json!(a.block);
                v["shared_mem"] = json!(a.shared_mem);
            }
            Op::Memcpy => {
                let (name, dir) = tracer_cupti::records::copy_kind(a.copy_kind);
                v["name"] = json!(name);
                v["size"] = json!(a.bytes);
                v["direction"] = json!(dir);
            }
            Op::Memset => {
                v["name"] = json!("memset");
                v["size"] = json!(a.bytes);
            }
        }
        if let Some(Some((l, ts))) = op_lines.get(i) {
            v["line"] = json!(l);
            v["recorded_call_ts"] = json!(ts);
        }
        out.push(v);
    }
    for m in markers {
        let mut v = json!({"ts": m.ts, "pid": m.pid, "tid": 0, "type": "marker", "op": m.op, "label": m.label});
        if let Some(t) = m.tokens {
            v["tokens"] = json!(t);
        }
        out.push(v);
    }
    let t1 = acts.iter().map(|a| sh(a.end)).max().unwrap_or(t0);
    out.push(json!({"type": "footer", "ts": t1, "pid": pid, "tid": 0, "gpu_records": acts.len()}));
    out
}

#[cfg(test)]
mod tests {
    use super::super::tests::act;
    use super::*;

    #[test]
    fn gpu_lines_in_the_recorders_form() {
        let h = Header {
            recording: "x.rec",
            command: vec!["replay".into(), "x.rec".into()],
            gpu_model: "H100",
            gpu_bus: "0000:00:06.0",
            mode: "sequence",
            pass: 2,
            cupti_library: "/l/libcupti.so.13",
        };
        let acts = vec![act(Op::Kernel, 1000, 1500, 13, Some("_Z1kv")), act(Op::Memcpy, 1600, 1700, 7, None)];
        let ms = vec![Marker { ts: 90, pid: 5, op: "iteration".into(), label: "0".into(), tokens: Some(20) }];
        let l = lines(&h, &acts, &[Some((42, 77)), None], -900, 5, &ms);
        assert_eq!(l.len(), 5);
        assert_eq!(l[0]["replay"], json!({"mode": "sequence", "pass": 2, "shift_ns": -900}));
        assert_eq!(l[0]["ts"], json!(100));
        assert_eq!(
            serde_json::to_string(&l[1]).unwrap(),
            r#"{"block":[32,1,1],"context_id":1,"correlation_id":0,"device":0,"duration_us":0.5,"end_ts":600,"grid":[1,1,1],"line":42,"name":"_Z1kv","op":"kernel","pid":5,"recorded_call_ts":77,"shared_mem":0,"source":"cupti","stream":null,"stream_id":13,"tid":0,"ts":100,"type":"gpu"}"#
        );
        assert_eq!(
            serde_json::to_string(&l[2]).unwrap(),
            r#"{"context_id":1,"correlation_id":0,"device":0,"direction":"h2d","duration_us":0.1,"end_ts":800,"name":"memcpy_htod","op":"memcpy","pid":5,"size":4096,"source":"cupti","stream":null,"stream_id":7,"tid":0,"ts":700,"type":"gpu"}"#
        );
        assert_eq!(
            l[3],
            json!({"ts": 90, "pid": 5, "tid": 0, "type": "marker", "op": "iteration", "label": "0", "tokens": 20})
        );
        assert_eq!(l[4]["type"], "footer");
        assert_eq!(l[4]["ts"], 800);
    }
}
