//! The typed trace model: every line of a trace parsed once into compact
//! structs (no `serde_json::Value` kept per event; names interned), sorted by
//! `ts` (lines are written in completion order).
//!
//! One call line costs 64 bytes, so a 10-million-call trace needs 0.64 GB.
//! Line types (docs/trace-format.md and docs/analysis.md): header, footer,
//! call lines (every `type` not listed below), `process`, `ioctl`,
//! `nvidia_fd`, `marker`, `power`, `gpu`, `sched`, `stack` (model/stacks.rs). Unknown types with a `ts` are read as
//! calls; a line whose fields have the wrong type is an error naming the file
//! and line.
//!
//! The records are in model/records.rs (and the graphs' in
//! model/graph_records.rs), the trace in model/trace.rs, the reading in
//! model/builder.rs; each imports only the files below it.
pub mod builder;
pub mod graph_lines;
pub mod graph_measured;
pub mod graph_records;
pub mod graphs;
pub mod records;
pub mod sched;
pub mod stacks;
pub mod trace;

pub use builder::{TraceBuilder, parse_str};
pub use records::*;
pub use trace::Trace;

#[cfg(test)]
mod tests {
    use super::*;
    use tracer_format::line::LineType;

    #[test]
    fn parses_every_line_type_and_sorts() {
        let text = r#"{"type":"header","pid":7,"command":["/usr/bin/python3","x.py"],"gpus":[{"model":"H100"}]}
{"ts":300,"pid":7,"tid":7,"type":"sync","op":"stream_synchronize","name":"cuStreamSynchronize","stream":"0x0","duration_us":5.5,"ret":0,"cpu":0,"seq":4,"exit_cpu":1,"exit_seq":0}
{"ts":100,"pid":7,"tid":7,"type":"kernel","op":"launch","name":"cuLaunchKernel","kernel":"k1","grid":[2,1,1],"block":[128,1,1],"shared_mem":0,"stream":"0x0","duration_us":2.0,"ret":0,"cpu":0,"seq":0,"exit_cpu":0,"exit_seq":1}
{"ts":150,"pid":7,"tid":7,"type":"stream","op":"stream_create","name":"cuStreamCreate","args":{"Flags":"0x1","phStream":"0x55"},"duration_us":1.0,"ret":0,"cpu":0,"seq":2,"exit_cpu":0,"exit_seq":3}
{"ts":160,"pid":7,"tid":7,"type":"memcpy","op":"copy","name":"cuMemcpyHtoD_v2","size":4096,"direction":"h2d","duration_us":1.0,"ret":2,"error":"CUDA_ERROR_OUT_OF_MEMORY"}
{"ts":50,"pid":7,"tid":7,"type":"process","op":"exec","name":"process","filename":"/opt/bin/python3"}
{"ts":60,"pid":7,"tid":7,"type":"marker","op":"phase","name":"marker","label":"warmup"}
{"ts":61,"pid":7,"tid":7,"type":"marker","op":"iteration","name":"marker","label":3,"tokens":20}
{"ts":70,"pid":0,"tid":0,"type":"power","op":"sample","name":"nvml","gpu":0,"energy_mj":1000,"power_mw":70000,"sm_clock_mhz":null}
{"ts":200,"end_ts":260,"duration_us":0.06,"pid":7,"tid":0,"type":"gpu","op":"kernel","name":"k1","source":"cupti","device":0,"context_id":1,"stream_id":7,"stream":"0x0","correlation_id":9,"grid":[2,1,1],"block":[128,1,1],"shared_mem":0}
{"ts":80,"pid":7,"tid":7,"type":"ioctl","op":"ioctl","name":"RM_ALLOC","device":"/dev/nvidiactl","duration_us":3.0,"status":0,"cuda_call":"cuInit"}
{"type":"footer","calls":4}"#;
        let t = parse_str("t.jsonl", text).unwrap();
        assert_eq!(t.lines, 12);
        assert_eq!(t.calls.iter().map(|c| c.ts).collect::<Vec<_>>(), [100, 150, 160, 300]);
        let l = &t.calls[0];
        assert_eq!((l.kind, t.name(l.kernel), l.stream, l.dur), (Kind::Launch, "k1", 0, 2000));
        assert_eq!(t.geom(l.geom).unwrap().grid, [2, 1, 1]);
        assert_eq!(t.calls[1].obj, 0x55);
        assert!(t.nonblocking_streams.contains(&(7, 0x55)));
        assert_eq!((t.calls[2].kind, t.calls[2].dir, t.calls[2].failed()), (Kind::Copy, Dir::H2D, true));
        assert_eq!((t.calls[3].kind, t.calls[3].dur), (Kind::StreamSync, 5500));
        assert_eq!(t.markers[1].label, "3");
        assert_eq!(t.markers[1].tokens, Some(20));
        assert_eq!(t.power[0].energy_mj, Some(1000));
        assert_eq!(t.power[0].sm_clock_mhz, None);
        assert_eq!((t.gpu[0].start, t.gpu[0].end, t.gpu[0].stream, t.gpu[0].stream_id), (200, 260, 0, 7));
        assert_eq!(t.ioctls.len(), 1);
        assert_eq!(t.process_name(7), "python3");
        assert_eq!(t.span(), Some((50, 5_800)));
        // seq 0..4 on cpu 0 with 3 and... cpu0 saw 0,1,2,3,4; cpu1 saw 0
        assert_eq!(t.loss.missing(), 0);
        assert!(t.footer.is_some());
    }

    #[test]
    fn loss_scan_finds_holes() {
        let mut text = String::new();
        for s in [0u64, 1, 2, 5, 6, 9] {
            text.push_str(&format!(
                "{{\"ts\":{s},\"pid\":1,\"tid\":1,\"type\":\"init\",\"op\":\"init\",\"name\":\"cuInit\",\"cpu\":3,\"seq\":{s}}}\n"
            ));
        }
        let t = parse_str("x", &text).unwrap();
        let c = &t.loss.by_cpu[&3];
        assert_eq!((c.seen, c.max, c.missing), (6, 9, 4));
        assert_eq!(c.holes, vec![(3, 4), (7, 8)]);
    }

    #[test]
    fn corrupt_lines_name_file_line_and_expectation() {
        let e =
            parse_str("f.jsonl", "{\"type\":\"header\"}\n{\"type\":\"kernel\",\"pid\":1}\n").unwrap_err().to_string();
        assert_eq!(e, "f.jsonl: line 2: a `kernel` line needs an integer `ts` (ns)");
        let e = parse_str("f.jsonl", "{\"type\":\"kernel\",\"ts\":\"x\",\"pid\":1}").unwrap_err().to_string();
        assert!(e.starts_with("f.jsonl: line 1: invalid type: string \"x\", expected u64"), "{e}");
        let e = parse_str("f.jsonl", "{\"ts\":1,\"pid\":1}").unwrap_err().to_string();
        assert_eq!(e, "f.jsonl: line 1: expected a `type` field (string)");
        let e = parse_str("f.jsonl", "{\"ts\":1,\"end_ts\":0,\"pid\":1,\"type\":\"gpu\",\"op\":\"kernel\"}")
            .unwrap_err()
            .to_string();
        assert_eq!(e, "f.jsonl: line 1: gpu line ends (0) before it starts (1)");
        let e =
            parse_str("f.jsonl", "{\"ts\":1,\"pid\":1,\"type\":\"marker\",\"op\":\"phasee\"}").unwrap_err().to_string();
        assert_eq!(e, "f.jsonl: line 1: marker line with op `phasee`, expected phase/iteration/mark");
    }

    #[test]
    fn compact_records() {
        // 10 million calls in 0.64 GB
        assert_eq!(std::mem::size_of::<Call>(), 64);
        // 72 before CUPTI's graph ids (u32 graphId, u64 graphNodeId) joined.
        assert!(std::mem::size_of::<GpuOp>() <= 80, "{}", std::mem::size_of::<GpuOp>());
    }

    #[test]
    fn classify() {
        assert_eq!(Kind::classify(Some(LineType::Memcpy), "copy", "cuMemcpyDtoHAsync_v2_ptsz"), Kind::CopyAsync);
        assert_eq!(Kind::classify(Some(LineType::Memcpy), "copy", "cuMemcpy"), Kind::Copy);
        assert_eq!(Kind::classify(Some(LineType::Sync), "ctx_synchronize", "cuCtxSynchronize"), Kind::CtxSync);
        assert_eq!(Kind::classify(Some(LineType::Sync), "stream_query", "cuStreamQuery"), Kind::Query);
        let t = parse_str(
            "q",
            r#"{"ts":1,"pid":1,"type":"sync","op":"stream_query","name":"cuStreamQuery","ret":600,"error":"CUDA_ERROR_NOT_READY"}"#,
        )
        .unwrap();
        assert!(!t.calls[0].failed());
        assert!(!t.calls[0].query_done());
        assert_eq!(Kind::classify(Some(LineType::Event), "event_record", "cuEventRecord"), Kind::EventRecord);
        assert_eq!(Kind::classify(Some(LineType::Memory), "alloc", "cuMemHostAlloc"), Kind::Alloc);
        assert_eq!(Kind::classify(Some(LineType::Module), "library_load_data", "cuLibraryLoadData"), Kind::Module);
        assert_eq!(Kind::classify(Some(LineType::Graph), "graph_launch", "cuGraphLaunch"), Kind::GraphLaunch);
    }
}
