//! Measured GPU activity (`--gpu-timestamps`): messages from the injection
//! library (tracer-cupti's wire format) → `type: "gpu"` trace lines, and the
//! counts for the footer. Pure: no I/O, tested with hand-built messages.
use std::collections::{BTreeMap, HashMap};

use serde_json::{Value, json};
use tracer_cupti::wire::{ClockMethod, Msg, Span, WireError};

/// What one traced process's injection library told us about itself.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct ProcInfo {
    pub cupti: Option<String>,
    pub cupti_version: Option<u32>,
    pub clock: Option<&'static str>,
    pub offset_ns: Option<i64>,
    /// Sent its final message at exit (after cuptiActivityFlushAll).
    pub flushed_at_exit: bool,
    pub errors: Vec<String>,
    /// Facts that are no problem (hardware timestamps or not).
    pub notes: Vec<String>,
}

#[derive(Debug, Default)]
pub struct GpuLines {
    /// (pid, name id) → kernel name.
    names: HashMap<(u32, u32), String>,
    /// (pid, CUPTI context id, CUPTI stream id) → CUstream handle.
    streams: HashMap<(u32, u32, u32), u64>,
    pub procs: BTreeMap<u32, ProcInfo>,
    pub kernels: u64,
    pub memcpys: u64,
    pub memsets: u64,
    /// Sampling windows (`gpu_window` lines) and the time they cover.
    pub windows: u64,
    pub window_ns: u64,
    /// Adaptive windows: time spent attaching and detaching CUPTI, records
    /// and new keys they held, windows detached (CUPTI finalized).
    pub attach_ns: u64,
    pub detach_ns: u64,
    pub window_records: u64,
    pub new_keys: u64,
    pub detached: u64,
    /// Adaptive windows: extensions for new work, windows opened on the
    /// tracer's demand, and their cost as the windows' budget counts it
    /// (attach, detach, and an estimate per record: tracer_cupti::sample::window_cost_ns).
    pub extensions: u64,
    pub opened_on_demand: u64,
    /// Adaptive windows that ended early, their launches having reached tracer_cupti::sample::WINDOW_LAUNCHES.
    pub full: u64,
    pub cost_ns: u64,
    /// Records without a usable timestamp (0, or end before start): not written.
    pub no_timestamp: u64,
    /// Lines whose stream handle was not known.
    pub unknown_stream: u64,
    pub dropped_by_cupti: u64,
    pub dropped_by_injection: u64,
    pub undecodable: u64,
    /// Warnings to show the user as they arrive (drained by the caller).
    pub warnings: Vec<String>,
}

pub use tracer_cupti::records::copy_kind;

impl GpuLines {
    /// One message from process `pid`; returns the trace line it makes, if any.
    pub fn push(&mut self, pid: u32, m: Result<Msg, WireError>) -> Option<Value> {
        let m = match m {
            Ok(m) => m,
            Err(e) => {
                self.undecodable += 1;
                if self.undecodable == 1 {
                    self.warnings.push(format!("undecodable data from the injection library: {e}"));
                }
                return None;
            }
        };
        match m {
            Msg::Kernel { span, grid, block, shared_mem, name_id, graph_id, graph_node_id } => {
                let mut v = self.base(pid, "kernel", &span)?;
                self.kernels += 1;
                v["name"] = self.names.get(&(pid, name_id)).map_or(Value::Null, |n| json!(n));
                v["grid"] = json!(grid);
                v["block"] = json!(block);
                v["shared_mem"] = json!(shared_mem);
                if graph_id != 0 {
                    v["graph_id"] = json!(graph_id);
                }
                if graph_node_id != 0 {
                    v["graph_node_id"] = json!(graph_node_id);
                }
                Some(v)
            }
            Msg::Memcpy { span, bytes, copy_kind: k, src_kind, dst_kind, .. } => {
                let mut v = self.base(pid, "memcpy", &span)?;
                self.memcpys += 1;
                let (name, dir) = copy_kind(k);
                v["name"] = json!(name);
                v["size"] = json!(bytes);
                v["direction"] = json!(dir);
                // the memory kinds CUPTI saw: a host side `pageable` was staged by the driver
                v["src_kind"] = json!(tracer_cupti::wire::memory_kind_name(src_kind));
                v["dst_kind"] = json!(tracer_cupti::wire::memory_kind_name(dst_kind));
                Some(v)
            }
            Msg::Memset { span, bytes, .. } => {
                let mut v = self.base(pid, "memset", &span)?;
                self.memsets += 1;
                v["name"] = json!("memset");
                v["size"] = json!(bytes);
                Some(v)
            }
            Msg::Stream { context, stream, handle } => {
                self.streams.insert((pid, context, stream), handle);
                None
            }
            Msg::Name { id, name } => {
                self.names.insert((pid, id), name);
                None
            }
            Msg::Dropped { count, .. } => {
                if self.dropped_by_cupti == 0 {
                    self.warnings.push(format!(
                        "CUPTI dropped {count} activity records in pid {pid} (its buffers were full); the footer counts them"
                    ));
                }
                self.dropped_by_cupti += count;
                None
            }
            Msg::Hello { cupti_version, clock, offset_ns, cupti_path } => {
                let p = self.procs.entry(pid).or_default();
                p.cupti = Some(cupti_path);
                p.cupti_version = Some(cupti_version);
                p.clock = Some(match clock {
                    ClockMethod::Callback => "timestamp_callback",
                    ClockMethod::Offset => "offset",
                });
                p.offset_ns = Some(offset_ns);
                None
            }
            Msg::Error { text } => {
                self.warnings.push(format!("pid {pid}: {text}"));
                self.procs.entry(pid).or_default().errors.push(text);
                None
            }
            Msg::Window {
                start,
                end,
                attach_ns,
                detach_ns,
                records,
                new_keys,
                extensions,
                demanded,
                planned_gap_ns,
                launches,
                full,
            } => {
                if end < start {
                    self.no_timestamp += 1;
                    return None;
                }
                self.windows += 1;
                self.window_ns += end - start;
                self.attach_ns += attach_ns;
                self.detach_ns += detach_ns;
                self.window_records += records;
                self.new_keys += new_keys;
                self.detached += (detach_ns > 0) as u64;
                self.extensions += extensions;
                self.opened_on_demand += demanded as u64;
                self.full += full as u64;
                let adaptive = attach_ns | detach_ns | records | new_keys | extensions | planned_gap_ns | launches != 0
                    || demanded
                    || full;
                if adaptive {
                    self.cost_ns += tracer_cupti::sample::window_cost_ns(attach_ns, detach_ns, records);
                }
                // the same fields as a gpu line's, in that order (docs/trace-format.md)
                let mut v = json!({"ts": start, "end_ts": end, "pid": pid, "tid": 0, "type": "gpu_window",
                    "op": "measured", "name": "cupti"});
                if adaptive {
                    // adaptive windows: their cost, what they held and how they came about
                    v["attach_us"] = json!(attach_ns as f64 / 1000.0);
                    v["detach_us"] = json!(detach_ns as f64 / 1000.0);
                    v["records"] = json!(records);
                    v["new_keys"] = json!(new_keys);
                    v["extensions"] = json!(extensions);
                    v["demanded"] = json!(demanded);
                    v["planned_gap_us"] = json!(planned_gap_ns as f64 / 1000.0);
                    v["launches"] = json!(launches);
                    v["full"] = json!(full);
                }
                Some(v)
            }
            Msg::Note { text } => {
                self.procs.entry(pid).or_default().notes.push(text);
                None
            }
            Msg::Bye { dropped_sink, .. } => {
                self.procs.entry(pid).or_default().flushed_at_exit = true;
                self.dropped_by_injection += dropped_sink;
                None
            }
        }
    }

    /// The fields every gpu line has, in lines.md's order; None (counted) for
    /// a record without a usable timestamp.
    fn base(&mut self, pid: u32, op: &str, s: &Span) -> Option<Value> {
        if s.start == 0 || s.end < s.start {
            self.no_timestamp += 1;
            return None;
        }
        let stream = self.streams.get(&(pid, s.context, s.stream)).copied();
        if stream.is_none() {
            self.unknown_stream += 1;
        }
        Some(json!({
            "ts": s.start,
            "end_ts": s.end,
            "duration_us": (s.end - s.start) as f64 / 1000.0,
            "pid": pid,
            "tid": 0,
            "type": "gpu",
            "op": op,
            "name": null,
            "source": "cupti",
            "device": s.device,
            "context_id": s.context,
            "stream_id": s.stream,
            "stream": stream.map(crate::decode::args::hex),
            "correlation_id": s.correlation,
        }))
    }

    /// The footer's `gpu_timestamps` object.
    pub fn footer(&self) -> Value {
        let procs: Vec<Value> = self
            .procs
            .iter()
            .map(|(pid, p)| {
                json!({
                    "pid": pid,
                    "cupti": p.cupti,
                    "cupti_version": p.cupti_version,
                    "clock": p.clock,
                    "offset_ns": p.offset_ns,
                    "flushed_at_exit": p.flushed_at_exit,
                    "errors": p.errors,
                    "notes": p.notes,
                })
            })
            .collect();
        json!({
            "kernels": self.kernels,
            "memcpys": self.memcpys,
            "memsets": self.memsets,
            "dropped_by_cupti": self.dropped_by_cupti,
            "dropped_by_injection": self.dropped_by_injection,
            "no_timestamp": self.no_timestamp,
            "unknown_stream": self.unknown_stream,
            "undecodable": self.undecodable,
            "processes": procs,
        })
    }

    /// The footer's `gpu_timestamps` object, with the sampling windows when
    /// there were any (`--gpu-timestamps sample`).
    pub fn footer_with_windows(&self) -> Value {
        let mut v = self.footer();
        if self.windows > 0 {
            v["windows"] = json!(self.windows);
            v["window_ns"] = json!(self.window_ns);
        }
        if self.attach_ns | self.detach_ns | self.window_records != 0 {
            // what the adaptive windows cost outside their records (docs/gpu-timestamps.md)
            v["windows_detached"] = json!(self.detached);
            v["attach_ns"] = json!(self.attach_ns);
            v["detach_ns"] = json!(self.detach_ns);
            v["window_records"] = json!(self.window_records);
            v["new_keys"] = json!(self.new_keys);
            v["window_extensions"] = json!(self.extensions);
            v["windows_opened_on_demand"] = json!(self.opened_on_demand);
            v["windows_full"] = json!(self.full);
            v["window_cost_ns"] = json!(self.cost_ns);
        }
        v
    }

    /// One line for the end-of-run summary.
    pub fn summary_line(&self) -> String {
        let active = self.procs.values().filter(|p| p.cupti.is_some()).count();
        let mut s = format!(
            "gpu (CUPTI, {active} process(es)): {} kernels, {} copies, {} sets measured",
            self.kernels, self.memcpys, self.memsets
        );
        if self.attach_ns | self.detach_ns | self.window_records != 0 {
            s.push_str(&format!(
                " in {} adaptive windows ({:.1} ms; {} new kernels or copy sizes; CUPTI detached {} times, \
                 attaching took {:.1} ms, detaching {:.1} ms, about {:.1} ms of cost in all; the rest is inferred \
                 from the windows and the durations library)",
                self.windows,
                self.window_ns as f64 / 1e6,
                self.new_keys,
                self.detached,
                self.attach_ns as f64 / 1e6,
                self.detach_ns as f64 / 1e6,
                self.cost_ns as f64 / 1e6
            ));
        } else if self.windows > 0 {
            s.push_str(&format!(
                " in {} sampling windows ({:.1} ms; the rest is calibrated from them)",
                self.windows,
                self.window_ns as f64 / 1e6
            ));
        }
        let lost = self.dropped_by_cupti + self.dropped_by_injection;
        if lost > 0 {
            s.push_str(&format!(
                "; {lost} records lost ({} by CUPTI, {} by the pipe)",
                self.dropped_by_cupti, self.dropped_by_injection
            ));
        }
        let unflushed: Vec<String> = self
            .procs
            .iter()
            .filter(|(_, p)| p.cupti.is_some() && !p.flushed_at_exit)
            .map(|(p, _)| p.to_string())
            .collect();
        if !unflushed.is_empty() {
            s.push_str(&format!(
                "; no final flush from pid {} (exec, _exit or a crash: its last ~100 ms of records may be missing)",
                unflushed.join(", ")
            ));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracer_cupti::wire::StreamDecoder;

    fn span(start: u64, end: u64, stream: u32, corr: u32) -> Span {
        Span { start, end, device: 0, context: 1, stream, correlation: corr }
    }

    /// Messages as the injection library sends them, through the real
    /// encoder and stream decoder.
    fn run(msgs: &[(u32, Msg)]) -> (GpuLines, Vec<String>) {
        let mut bytes = vec![];
        for (pid, m) in msgs {
            m.encode(*pid, &mut bytes);
        }
        let mut g = GpuLines::default();
        let mut lines = vec![];
        StreamDecoder::default().feed(&bytes, &mut |pid, m| {
            if let Some(v) = g.push(pid, m) {
                lines.push(serde_json::to_string(&v).unwrap());
            }
        });
        (g, lines)
    }

    #[test]
    fn kernel_copy_and_set_lines_are_exact() {
        let hello = Msg::Hello {
            cupti_version: 26,
            clock: ClockMethod::Callback,
            offset_ns: 0,
            cupti_path: "/usr/local/cuda-13.0/targets/x86_64-linux/lib/libcupti.so.13".into(),
        };
        let (g, lines) = run(&[
            (100, hello),
            (100, Msg::Stream { context: 1, stream: 7, handle: 0 }),
            (100, Msg::Stream { context: 1, stream: 13, handle: 0x5555_0000_1230 }),
            (100, Msg::Name { id: 1, name: "_Z6vecAddPfS_S_i".into() }),
            (
                100,
                Msg::Kernel {
                    span: span(5_000_000_000, 5_000_004_500, 13, 42),
                    grid: [80, 1, 1],
                    block: [256, 1, 1],
                    shared_mem: 1024,
                    name_id: 1,
                    graph_id: 0,
                    graph_node_id: 0,
                },
            ),
            (
                100,
                Msg::Memcpy {
                    span: span(5_000_010_000, 5_000_012_250, 7, 43),
                    bytes: 1 << 20,
                    copy_kind: 1,
                    src_kind: 1,
                    dst_kind: 3,
                    flags: 0,
                },
            ),
            (100, Msg::Memset { span: span(5_000_020_000, 5_000_020_001, 99, 44), bytes: 64, value: 0, mem_kind: 3 }),
            (100, Msg::Bye { records: 3, buffers: 1, dropped_cupti: 0, dropped_sink: 0 }),
        ]);
        assert_eq!(
            lines,
            vec![
                r#"{"block":[256,1,1],"context_id":1,"correlation_id":42,"device":0,"duration_us":4.5,"end_ts":5000004500,"grid":[80,1,1],"name":"_Z6vecAddPfS_S_i","op":"kernel","pid":100,"shared_mem":1024,"source":"cupti","stream":"0x555500001230","stream_id":13,"tid":0,"ts":5000000000,"type":"gpu"}"#,
                r#"{"context_id":1,"correlation_id":43,"device":0,"direction":"h2d","dst_kind":"device","duration_us":2.25,"end_ts":5000012250,"name":"memcpy_htod","op":"memcpy","pid":100,"size":1048576,"source":"cupti","src_kind":"pageable","stream":"0x0","stream_id":7,"tid":0,"ts":5000010000,"type":"gpu"}"#,
                r#"{"context_id":1,"correlation_id":44,"device":0,"duration_us":0.001,"end_ts":5000020001,"name":"memset","op":"memset","pid":100,"size":64,"source":"cupti","stream":null,"stream_id":99,"tid":0,"ts":5000020000,"type":"gpu"}"#,
            ]
        );
        assert_eq!((g.kernels, g.memcpys, g.memsets, g.unknown_stream), (1, 1, 1, 1));
        assert_eq!(
            g.footer()["processes"],
            json!([{"pid":100,"cupti":"/usr/local/cuda-13.0/targets/x86_64-linux/lib/libcupti.so.13","cupti_version":26,
                    "clock":"timestamp_callback","offset_ns":0,"flushed_at_exit":true,"errors":[],"notes":[]}])
        );
        assert_eq!(g.summary_line(), "gpu (CUPTI, 1 process(es)): 1 kernels, 1 copies, 1 sets measured");
    }

    #[test]
    fn adaptive_windows_carry_their_cost_to_the_line_and_the_footer() {
        let w = |start, end, attach_ns, detach_ns, records, new_keys| {
            let (extensions, demanded, planned_gap_ns) = (new_keys / 6, start == 900_000, start / 2);
            let (launches, full) = (records * 2, records == 20);
            let m = Msg::Window {
                start,
                end,
                attach_ns,
                detach_ns,
                records,
                new_keys,
                extensions,
                demanded,
                planned_gap_ns,
                launches,
                full,
            };
            (7, m)
        };
        let (g, lines) = run(&[
            (7, Msg::Note { text: "hw_trace: refused (CUPTI_ERROR_NOT_SUPPORTED (27)): software timestamps".into() }),
            w(1_000, 101_000, 0, 2_500_000, 40, 12),
            w(300_000, 400_000, 1_500_000, 1_000_000, 20, 0),
            w(900_000, 950_000, 1_000_000, 0, 5, 0),
        ]);
        assert_eq!(
            lines[0],
            r#"{"attach_us":0.0,"demanded":false,"detach_us":2500.0,"end_ts":101000,"extensions":2,"full":false,"launches":80,"name":"cupti","new_keys":12,"op":"measured","pid":7,"planned_gap_us":0.5,"records":40,"tid":0,"ts":1000,"type":"gpu_window"}"#
        );
        assert!(lines[2].contains(r#""demanded":true"#), "{}", lines[2]);
        assert!(lines[1].contains(r#""full":true,"launches":40,"#), "{}", lines[1]);
        let f = g.footer_with_windows();
        assert_eq!(
            (
                &f["windows"],
                &f["windows_detached"],
                &f["attach_ns"],
                &f["detach_ns"],
                &f["window_records"],
                &f["new_keys"]
            ),
            (&json!(3), &json!(2), &json!(2_500_000), &json!(3_500_000), &json!(65), &json!(12))
        );
        // cost: attach and detach times, 5 µs a record
        assert_eq!(
            (&f["window_extensions"], &f["windows_opened_on_demand"], &f["windows_full"], &f["window_cost_ns"]),
            (&json!(2), &json!(1), &json!(1), &json!(2_500_000 + 3_500_000 + 65 * 5_000))
        );
        assert_eq!(
            f["processes"][0]["notes"][0],
            "hw_trace: refused (CUPTI_ERROR_NOT_SUPPORTED (27)): software timestamps"
        );
        assert!(g.summary_line().contains(
            "in 3 adaptive windows (0.2 ms; 12 new kernels or copy sizes; CUPTI detached 2 times, attaching took 2.5 ms, detaching 3.5 ms, about 6.3 ms of cost in all;"
        ), "{}", g.summary_line());
    }

    #[test]
    fn sampling_windows_become_gpu_window_lines() {
        let (g, lines) = run(&[
            (
                100,
                Msg::Window {
                    start: 5_000_000_000,
                    end: 5_020_000_000,
                    attach_ns: 0,
                    detach_ns: 0,
                    records: 0,
                    new_keys: 0,
                    extensions: 0,
                    demanded: false,
                    planned_gap_ns: 0,
                    launches: 0,
                    full: false,
                },
            ),
            (
                100,
                Msg::Window {
                    start: 5_200_000_000,
                    end: 5_200_000_000,
                    attach_ns: 0,
                    detach_ns: 0,
                    records: 0,
                    new_keys: 0,
                    extensions: 0,
                    demanded: false,
                    planned_gap_ns: 0,
                    launches: 0,
                    full: false,
                },
            ),
            (
                100,
                Msg::Window {
                    start: 7,
                    end: 6,
                    attach_ns: 0,
                    detach_ns: 0,
                    records: 0,
                    new_keys: 0,
                    extensions: 0,
                    demanded: false,
                    planned_gap_ns: 0,
                    launches: 0,
                    full: false,
                },
            ),
        ]);
        assert_eq!(
            lines,
            vec![
                r#"{"end_ts":5020000000,"name":"cupti","op":"measured","pid":100,"tid":0,"ts":5000000000,"type":"gpu_window"}"#,
                r#"{"end_ts":5200000000,"name":"cupti","op":"measured","pid":100,"tid":0,"ts":5200000000,"type":"gpu_window"}"#,
            ]
        );
        assert_eq!((g.windows, g.window_ns, g.no_timestamp), (2, 20_000_000, 1));
        assert_eq!(
            (g.footer_with_windows()["windows"].as_u64(), g.footer_with_windows()["window_ns"].as_u64()),
            (Some(2), Some(20_000_000))
        );
        assert_eq!(GpuLines::default().footer_with_windows().get("windows"), None);
        assert_eq!(
            g.summary_line(),
            "gpu (CUPTI, 0 process(es)): 0 kernels, 0 copies, 0 sets measured in 2 sampling windows (20.0 ms; the \
             rest is calibrated from them)"
        );
    }

    #[test]
    fn graph_kernels_carry_their_graph_and_node_ids() {
        let k = |graph_id, graph_node_id| {
            let span = span(10, 20, 7, 5);
            (1, Msg::Kernel { span, grid: [1; 3], block: [1; 3], shared_mem: 0, name_id: 1, graph_id, graph_node_id })
        };
        let (_, lines) = run(&[(1, Msg::Name { id: 1, name: "k".into() }), k(3, 0x2_0000_0005), k(0, 0)]);
        let v: Vec<Value> = lines.iter().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!((v[0]["graph_id"].as_u64(), v[0]["graph_node_id"].as_u64()), (Some(3), Some(0x2_0000_0005)));
        // not launched by a graph: no ids on the line
        assert_eq!((v[1].get("graph_id"), v[1].get("graph_node_id")), (None, None));
    }

    #[test]
    fn names_and_streams_are_per_process() {
        let k = |pid, stream| {
            (
                pid,
                Msg::Kernel {
                    span: span(10, 20, stream, 1),
                    grid: [1; 3],
                    block: [1; 3],
                    shared_mem: 0,
                    name_id: 1,
                    graph_id: 0,
                    graph_node_id: 0,
                },
            )
        };
        let (_, lines) = run(&[
            (1, Msg::Name { id: 1, name: "a".into() }),
            (2, Msg::Name { id: 1, name: "b".into() }),
            (2, Msg::Stream { context: 1, stream: 5, handle: 0xabc }),
            k(1, 5),
            k(2, 5),
            k(3, 5),
        ]);
        let got: Vec<(String, String)> = lines
            .iter()
            .map(|l| {
                let v: Value = serde_json::from_str(l).unwrap();
                (v["name"].to_string(), v["stream"].to_string())
            })
            .collect();
        let want = [("\"a\"", "null"), ("\"b\"", "\"0xabc\""), ("null", "null")];
        assert_eq!(got, want.map(|(a, b)| (a.to_string(), b.to_string())));
    }

    #[test]
    fn losses_errors_and_bad_timestamps_are_counted() {
        let (g, lines) = run(&[
            (7, Msg::Error { text: "libcupti not found".into() }),
            (8, Msg::Hello { cupti_version: 26, clock: ClockMethod::Offset, offset_ns: -42, cupti_path: "x".into() }),
            (8, Msg::Dropped { context: 1, stream: 7, count: 5 }),
            (8, Msg::Dropped { context: 1, stream: 9, count: 2 }),
            (8, Msg::Memset { span: span(0, 0, 7, 1), bytes: 1, value: 0, mem_kind: 0 }),
            (8, Msg::Memset { span: span(30, 20, 7, 2), bytes: 1, value: 0, mem_kind: 0 }),
        ]);
        assert!(lines.is_empty());
        assert_eq!(g.no_timestamp, 2);
        assert_eq!(g.dropped_by_cupti, 7);
        assert_eq!(
            g.warnings,
            vec![
                "pid 7: libcupti not found",
                "CUPTI dropped 5 activity records in pid 8 (its buffers were full); the footer counts them"
            ]
        );
        assert_eq!(g.procs[&8].clock, Some("offset"));
        assert_eq!(
            g.summary_line(),
            "gpu (CUPTI, 1 process(es)): 0 kernels, 0 copies, 0 sets measured; 7 records lost (7 by CUPTI, 0 by the pipe); \
             no final flush from pid 8 (exec, _exit or a crash: its last ~100 ms of records may be missing)"
        );
        let mut g2 = GpuLines::default();
        g2.push(1, Err(WireError { offset: 8, what: "unknown message type 99".into() }));
        assert_eq!(g2.undecodable, 1);
        assert_eq!(
            g2.warnings,
            vec!["undecodable data from the injection library: CUPTI record stream, byte 8: unknown message type 99"]
        );
    }

    #[test]
    fn copy_kinds() {
        assert_eq!(copy_kind(2), ("memcpy_dtoh", "d2h"));
        assert_eq!(copy_kind(8), ("memcpy_dtod", "d2d"));
        assert_eq!(copy_kind(10), ("memcpy_ptop", "peer"));
        assert_eq!(copy_kind(0), ("memcpy_unknown", "unknown"));
    }
}
