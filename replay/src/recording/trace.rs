//! Reading `trace.jsonl` (docs/trace-format.md; or `.gz`, `.zst`): the call
//! lines replay needs, the measured GPU activity (`gpu`), markers and power
//! samples. Every error names the file and the line.

use std::io::Read;
use std::path::Path;

use anyhow::{Context, Result, bail};
use serde::Deserialize as _;
use serde_json::{Map, Value};
use tracer_format::footer::Footer;
use tracer_format::header::Header;
use tracer_format::line::{LineType, MarkerOp, ProcessOp};

/// One call line of a type replay looks at (module, kernel, graph, memory,
/// memcpy, memset, sync, stream, event).
#[derive(Debug, Clone)]
pub struct Call {
    /// 1-based line number in the trace file.
    pub line: usize,
    pub ts: u64,
    pub pid: u32,
    pub tid: u32,
    /// The exported symbol (`cuLaunchKernel`, `cuMemcpyHtoDAsync_v2`, …).
    pub name: String,
    /// CUresult, when the return was probed.
    pub ret: Option<i64>,
    pub duration_ns: Option<u64>,
    pub entry_lost: bool,
    pub incomplete: bool,
    /// Decoded `params` (the kernel's parameter buffer).
    pub params: Option<Vec<u8>>,
    /// Every other field of the line, `args` included.
    pub obj: Map<String, Value>,
}

impl Call {
    /// The call returned an error (entry-only lines have no `ret`: taken as success).
    pub fn failed(&self) -> bool {
        self.ret.is_some_and(|r| r != 0)
    }
    pub fn field(&self, k: &str) -> Option<&Value> {
        self.obj.get(k).filter(|v| !v.is_null())
    }
    pub fn arg(&self, k: &str) -> Option<&Value> {
        self.obj.get("args").and_then(|a| a.get(k)).filter(|v| !v.is_null())
    }
    pub fn str_field(&self, k: &str) -> Option<&str> {
        self.field(k).and_then(|v| v.as_str())
    }
    /// A `"0x…"` field (or an integer) as u64.
    pub fn addr_field(&self, k: &str) -> Option<u64> {
        as_addr(self.field(k)?)
    }
    pub fn addr_arg(&self, k: &str) -> Option<u64> {
        as_addr(self.arg(k)?)
    }
    pub fn u64_field(&self, k: &str) -> Option<u64> {
        self.field(k)?.as_u64()
    }
    pub fn u64_arg(&self, k: &str) -> Option<u64> {
        as_addr(self.arg(k)?)
    }
    pub fn dim3(&self, k: &str) -> Option<[u32; 3]> {
        let a = self.field(k)?.as_array()?;
        if a.len() != 3 {
            return None;
        }
        let mut d = [0u32; 3];
        for (i, x) in a.iter().enumerate() {
            d[i] = u32::try_from(x.as_u64()?).ok()?;
        }
        Some(d)
    }
}

pub fn as_addr(v: &Value) -> Option<u64> {
    match v {
        Value::String(s) => tracer_format::hex::parse_addr(s),
        Value::Number(n) => n.as_u64(),
        _ => None,
    }
}

/// A `type: "gpu"` line: work measured on the GPU (CUPTI).
#[derive(Debug, Clone, PartialEq)]
pub struct GpuActivity {
    pub line: usize,
    pub ts: u64,
    pub end_ts: u64,
    pub pid: u32,
    /// `kernel`, `memcpy` or `memset` ([`GpuActivity::activity`]).
    pub op: String,
    pub name: Option<String>,
    /// CUPTI's stream id (0 when absent).
    pub stream_id: u32,
    /// Copies and sets: bytes.
    pub size: u64,
    /// CUPTI's correlation id (a graph's kernels: that of their cuGraphLaunch; 0 when absent).
    pub correlation_id: u64,
    /// Kernels a graph launch ran: CUPTI's graph id (0 otherwise).
    pub graph_id: u64,
    /// Copies: the memory kinds CUPTI saw (`pageable`, `pinned`, `device`, …), when recorded.
    pub src_kind: Option<String>,
    pub dst_kind: Option<String>,
}

impl GpuActivity {
    /// The line's `op` (None for a word the format does not have).
    pub fn activity(&self) -> Option<tracer_format::line::GpuActivity> {
        tracer_format::line::GpuActivity::parse(&self.op)
    }
    /// What was measured, as CUPTI's collector names it.
    pub fn measured_op(&self) -> tracer_cupti::collect::Op {
        use tracer_cupti::collect::Op;
        use tracer_format::line::GpuActivity as Measured;
        match self.activity() {
            Some(Measured::Kernel) => Op::Kernel,
            Some(Measured::Memcpy) => Op::Memcpy,
            _ => Op::Memset,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Marker {
    pub ts: u64,
    pub pid: u32,
    /// `phase`, `iteration` or `mark` ([`Marker::marker_op`]).
    pub op: String,
    pub label: String,
    pub tokens: Option<u64>,
}

impl Marker {
    /// The line's `op` (None for a word the format does not have).
    pub fn marker_op(&self) -> Option<MarkerOp> {
        MarkerOp::parse(&self.op)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct PowerSample {
    pub ts: u64,
    pub gpu: u32,
    pub energy_mj: Option<u64>,
    pub power_mw: Option<u64>,
}

#[derive(Debug, Clone, Default)]
pub struct Trace {
    pub header: Option<Header>,
    pub footer: Option<Footer>,
    pub calls: Vec<Call>,
    pub gpu: Vec<GpuActivity>,
    pub markers: Vec<Marker>,
    pub power: Vec<PowerSample>,
    /// `(tid, ts, end_ts)` of every interval a thread was stopped (`sched` `off_cpu` lines named
    /// `stopped`: SIGSTOP, e.g. by the recorder itself under `--capture-data`, or a debugger).
    pub stops: Vec<(u32, u64, u64)>,
    /// Every probed call of the trace (all call lines, replayed or not): where tracing cost its
    /// thread time (tracer_format::pacing, compensated pacing).
    pub probed: Vec<tracer_format::pacing::Probed>,
    /// Every `off_cpu` interval of the scheduler lines (the recorder's hold of the CPU, the
    /// switch programs).
    pub off_cpu: Vec<tracer_format::pacing::OffCpu>,
    /// Every on-CPU sample of a traced thread (`sample` lines: the sample program's cost).
    pub samples: Vec<tracer_format::pacing::Sample>,
    /// The trace has scheduler lines (or its header says they were recorded).
    pub has_sched: bool,
    /// `(line, ts, pid)` of `process`/`exec` lines: the pid's handles are forgotten there.
    pub execs: Vec<(usize, u64, u32)>,
    /// The rank fields of the exec lines that have them (recording/ranks.rs).
    pub ranks: Vec<super::ranks::ExecRank>,
    /// Lines read (header and footer included).
    pub lines: usize,
    pub warnings: Vec<String>,
}

/// The call lines replay reads: every call type but initialization,
/// devices and contexts.
fn replayed(ty: LineType) -> bool {
    ty.is_call() && !matches!(ty, LineType::Init | LineType::Device | LineType::Context)
}

impl Trace {
    /// The costs tracing added to this trace's host gaps (tracer_format::pacing), or none for
    /// `--pacing recorded`.
    pub fn compensation(
        &self,
        pacing: tracer_format::pacing::Pacing,
        o: tracer_format::pacing::Overrides,
    ) -> tracer_format::pacing::Compensation {
        use tracer_format::pacing::{Compensation, Costs, Pacing};
        if pacing == Pacing::Recorded {
            return Compensation::none();
        }
        let header = self.header.as_ref().and_then(|h| serde_json::to_value(h).ok());
        let footer = self.footer.as_ref().and_then(|f| serde_json::to_value(f).ok());
        let sched =
            self.has_sched || header.as_ref().and_then(|h| h.get("sched")).and_then(Value::as_bool) == Some(true);
        Compensation::new(
            Costs::of_recording(header.as_ref(), footer.as_ref(), sched, o),
            &self.probed,
            &self.off_cpu,
            &self.samples,
        )
    }

    /// The header's `host_calibration` (recorded since `tracer calibrate-host` exists).
    pub fn host_calibration(&self) -> Option<tracer_format::pacing::HostCalibration> {
        let v = self.header.as_ref()?.rest.get("host_calibration")?;
        tracer_format::pacing::HostCalibration::of_value(v).ok()
    }

    /// Read a trace (plain, gzip when the name ends in `.gz`, zstd when it
    /// ends in `.zst`).
    pub fn read(path: &Path) -> Result<Trace> {
        // A regular file only: a pipe or a device is refused at the open, not waited on or read forever.
        let f = tracer_format::open::open(path, tracer_format::open::Kind::Trace)
            .map_err(|e| anyhow::anyhow!("{}: cannot open the trace ({e:#})", path.display()))?
            .file;
        Trace::read_file(path, f)
    }

    /// Read the trace `f`, already open (a recording's, opened below its
    /// directory), which messages call `path`.
    pub fn read_file(path: &Path, f: std::fs::File) -> Result<Trace> {
        use tracer_format::read::{Compression, Input};
        let compression = Compression::of_name(path);
        let input = Input { name: path.display().to_string(), path: path.to_owned(), compression, len: 0, held: None };
        let (r, cut) = input.decode(f)?;
        let mut t = Trace::from_reader(r, path)?;
        if cut.load(std::sync::atomic::Ordering::Relaxed) {
            let kind = if compression == Compression::Gzip { "gzip" } else { "zstd" };
            t.warnings.push(format!(
                "{}: the {kind} stream ends early (the recording was cut off); read up to its last complete block",
                path.display()
            ));
        }
        Ok(t)
    }

    /// Lines come through tracer-format's reader; a bad line is an error
    /// unless it is the last one of a trace without footer (the recording
    /// was cut short): decided once the next line comes.
    pub fn from_reader<R: Read>(r: R, path: &Path) -> Result<Trace> {
        let mut t = Trace::default();
        let mut pending: Option<String> = None;
        let name = path.display().to_string();
        // tracer's reading rule (tracer_format::read::check) on every line
        // that is JSON: field types and ranges, header, two traces in one.
        let mut checker = tracer_format::read::Checker::new();
        let stats = tracer_format::read::lines_in_place(r, &name, tracer_format::read::MAX_LINE_BYTES, |n, line| {
            let lineno = n as usize;
            if let Some(e) = pending.take() {
                bail!("{e}");
            }
            match serde_json::from_slice::<Value>(line) {
                Ok(Value::Object(obj)) => {
                    checker.line(n, line).map_err(|e| anyhow::anyhow!("{name}:{}: {}", e.line, e.what))?;
                    t.add(obj, lineno, path)?
                }
                Ok(_) => pending = Some(format!("{name}:{lineno}: not a JSON object")),
                Err(e) => {
                    pending = Some(format!("{name}:{lineno}: not valid JSON ({e}); the line is truncated or corrupt"))
                }
            }
            Ok(())
        })?;
        t.lines = stats.lines as usize;
        if let Some(n) = stats.partial_line {
            // The last line, without newline, is not JSON: the same case.
            if let Some(e) = pending.take() {
                bail!("{e}");
            }
            pending =
                Some(format!("{name}:{n}: not valid JSON (cut off before its end); the line is truncated or corrupt"));
        }
        if let Some(e) = pending {
            if t.footer.is_none() {
                t.warnings
                    .push(format!("{e}: skipped (last line of a trace without footer: the recording was cut short)"));
            } else {
                bail!("{e}");
            }
        }
        // A file without lines is refused; a missing header or footer is a warning.
        let cut = stats.partial_line.is_some() || t.warnings.iter().any(|w| w.contains("cut short"));
        let warnings = checker.finish(cut).map_err(|e| anyhow::anyhow!("{name}: {e}"))?;
        t.warnings.extend(warnings.into_iter().map(|w| format!("{name}: {w}")));
        Ok(t)
    }

    fn add(&mut self, mut obj: Map<String, Value>, line: usize, path: &Path) -> Result<()> {
        let ty = obj.get("type").and_then(|v| v.as_str()).unwrap_or("").to_owned();
        let line_type = LineType::parse(&ty);
        let here = || format!("{}:{line}", path.display());
        match line_type {
            // Fields of unexpected types stay in `rest`, as the line is.
            Some(LineType::Header) => {
                let v = Value::Object(obj);
                self.header = Some(Header::deserialize(&v).unwrap_or_else(|_| Header {
                    line_type: ty,
                    rest: untyped(v),
                    ..Header::default()
                }));
                return Ok(());
            }
            Some(LineType::Footer) => {
                let v = Value::Object(obj);
                self.footer = Some(Footer::deserialize(&v).unwrap_or_else(|_| Footer {
                    line_type: ty,
                    rest: untyped(v),
                    ..Footer::default()
                }));
                return Ok(());
            }
            _ => {}
        }
        let ts = obj.get("ts").and_then(|v| v.as_u64()).with_context(|| format!("{}: no integer \"ts\"", here()))?;
        let pid = obj.get("pid").and_then(|v| v.as_u64()).unwrap_or(0) as u32;
        let op = |obj: &Map<String, Value>| obj.get("op").and_then(|v| v.as_str()).map(str::to_owned);
        let Some(line_type) = line_type else { return Ok(()) };
        match line_type {
            LineType::Gpu => {
                let end_ts = obj
                    .get("end_ts")
                    .and_then(|v| v.as_u64())
                    .with_context(|| format!("{}: gpu line without integer \"end_ts\"", here()))?;
                if end_ts < ts {
                    bail!("{}: gpu line ends ({end_ts}) before it starts ({ts})", here());
                }
                self.gpu.push(GpuActivity {
                    line,
                    ts,
                    end_ts,
                    pid,
                    op: op(&obj).unwrap_or_default(),
                    name: obj.get("name").and_then(|v| v.as_str()).map(str::to_owned),
                    stream_id: obj.get("stream_id").and_then(|v| v.as_u64()).unwrap_or(0) as u32,
                    size: obj.get("size").and_then(|v| v.as_u64()).unwrap_or(0),
                    correlation_id: obj.get("correlation_id").and_then(|v| v.as_u64()).unwrap_or(0),
                    graph_id: obj.get("graph_id").and_then(|v| v.as_u64()).unwrap_or(0),
                    src_kind: obj.get("src_kind").and_then(|v| v.as_str()).map(str::to_owned),
                    dst_kind: obj.get("dst_kind").and_then(|v| v.as_str()).map(str::to_owned),
                });
            }
            LineType::Marker => self.markers.push(Marker {
                ts,
                pid,
                op: op(&obj).unwrap_or_default(),
                label: obj.get("label").and_then(|v| v.as_str()).unwrap_or("").to_owned(),
                tokens: obj.get("tokens").and_then(|v| v.as_u64()),
            }),
            LineType::Sched => {
                self.has_sched = true;
                let tid = obj.get("tid").and_then(|v| v.as_u64()).unwrap_or(0) as u32;
                let end = obj.get("end_ts").and_then(|v| v.as_u64()).filter(|&e| e >= ts);
                if let (Some("off_cpu"), Some(end)) = (obj.get("op").and_then(|v| v.as_str()), end) {
                    if obj.get("name").and_then(|v| v.as_str()) == Some("stopped") {
                        self.stops.push((tid, ts, end));
                    }
                    let recorder_ns = tracer_format::pacing::OffCpu::recorder_ns_of(obj.get("held_by"));
                    let stack = obj.get("stack").is_some_and(|s| !s.is_null());
                    self.off_cpu.push(tracer_format::pacing::OffCpu { tid, ts, end_ts: end, recorder_ns, stack });
                }
            }
            LineType::Sample => {
                let tid = obj.get("tid").and_then(|v| v.as_u64()).unwrap_or(0) as u32;
                self.samples.push(tracer_format::pacing::Sample { tid, ts });
            }
            LineType::Power => self.power.push(PowerSample {
                ts,
                gpu: obj.get("gpu").and_then(|v| v.as_u64()).unwrap_or(0) as u32,
                energy_mj: obj.get("energy_mj").and_then(|v| v.as_u64()),
                power_mw: obj.get("power_mw").and_then(|v| v.as_u64()),
            }),
            LineType::Process
                if obj.get("op").and_then(|v| v.as_str()).and_then(ProcessOp::parse) == Some(ProcessOp::Exec) =>
            {
                self.execs.push((line, ts, pid));
                if let Some(r) = super::ranks::ExecRank::of_line(&obj, line, pid) {
                    self.ranks.push(r);
                }
            }
            // --capture-data: the bytes of an asynchronous device-to-host
            // copy, read at the synchronization after it: they belong to
            // the copy's own line (docs/recording-format.md).
            LineType::CopyData => {
                let copy = obj.get("copy").with_context(|| format!("{}: copy_data line without \"copy\"", here()))?;
                let (Some(ctid), Some(cts)) =
                    (copy.get("tid").and_then(|v| v.as_u64()), copy.get("ts").and_then(|v| v.as_u64()))
                else {
                    bail!("{}: copy_data: \"copy\" needs integer tid and ts", here());
                };
                let Some(call) = self.calls.iter_mut().rev().find(|c| c.tid as u64 == ctid && c.ts == cts) else {
                    bail!("{}: copy_data refers to a copy (tid {ctid}, ts {cts}) no earlier line has", here());
                };
                for k in ["data", "data_error"] {
                    if let Some(v) = obj.get(k) {
                        call.obj.insert(k.to_string(), v.clone());
                    }
                }
            }
            t if t.is_call() => {
                self.probed.push(probed(&obj, ts));
                if !replayed(t) {
                    return Ok(());
                }
                let name = obj
                    .get("name")
                    .and_then(|v| v.as_str())
                    .with_context(|| format!("{}: call line without \"name\"", here()))?
                    .to_owned();
                let params = match obj.remove("params") {
                    None | Some(Value::Null) => None,
                    Some(Value::String(s)) => Some(
                        tracer_format::hex::decode_bytes(&s)
                            .map_err(|e| anyhow::anyhow!("{}: {name}: \"params\": {e}", here()))?,
                    ),
                    Some(_) => bail!("{}: {name}: \"params\" is not a string", here()),
                };
                self.calls.push(Call {
                    line,
                    ts,
                    pid,
                    tid: obj.get("tid").and_then(|v| v.as_u64()).unwrap_or(0) as u32,
                    ret: obj.get("ret").and_then(|v| v.as_i64()),
                    duration_ns: obj.get("duration_us").and_then(|v| v.as_f64()).map(|us| (us * 1000.0).round() as u64),
                    entry_lost: obj.get("entry_lost").and_then(|v| v.as_bool()).unwrap_or(false),
                    incomplete: obj.get("incomplete").and_then(|v| v.as_bool()).unwrap_or(false),
                    name,
                    params,
                    obj,
                });
            }
            _ => {}
        }
        Ok(())
    }
}

/// A call line as a probed call: return-probed when it has `ret` or a duration, the launch
/// program's when it carries parameter bytes (or their error), GPU work by its `op`.
fn probed(obj: &Map<String, Value>, ts: u64) -> tracer_format::pacing::Probed {
    use tracer_format::line::CallOp;
    let dur = obj.get("duration_us").and_then(|v| v.as_f64()).map(|us| (us * 1000.0).round() as u64);
    let returned = dur.is_some() || obj.get("ret").is_some_and(|v| !v.is_null());
    let op = obj.get("op").and_then(|v| v.as_str()).and_then(CallOp::parse);
    tracer_format::pacing::Probed {
        tid: obj.get("tid").and_then(|v| v.as_u64()).unwrap_or(0) as u32,
        ts,
        ret_ts: returned.then(|| ts + dur.unwrap_or(0)),
        launch: ["params", "params_error", "params_from"].iter().any(|k| obj.contains_key(*k)),
        gpu_work: matches!(op, Some(CallOp::Launch | CallOp::GraphLaunch | CallOp::Copy | CallOp::Set)),
    }
}

/// A header or footer whose typed fields have other types: every field but
/// `type`, as it is.
fn untyped(v: Value) -> Map<String, Value> {
    let Value::Object(mut m) = v else { return Map::new() };
    m.remove("type");
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copy_data_lines_complete_their_copy() {
        let text = r#"{"type":"memcpy","name":"cuMemcpyDtoHAsync_v2","op":"copy","ts":10,"pid":1,"tid":2,"direction":"d2h","dst":"0x10","src":"0x20","size":4}
{"type":"sync","name":"cuStreamSynchronize","op":"stream_synchronize","ts":20,"pid":1,"tid":2}
{"type":"copy_data","op":"d2h","ts":21,"pid":1,"tid":2,"copy":{"name":"cuMemcpyDtoHAsync_v2","tid":2,"ts":10},"size":4,"data":"ab"}
"#;
        let t = Trace::from_reader(std::io::Cursor::new(text), Path::new("t.jsonl")).unwrap();
        assert_eq!(t.calls.len(), 2);
        assert_eq!(t.calls[0].str_field("data"), Some("ab"));
        let bad = text.replace("\"ts\":10}", "\"ts\":11}");
        let e = Trace::from_reader(std::io::Cursor::new(bad), Path::new("t.jsonl")).unwrap_err().to_string();
        assert!(e.contains("t.jsonl:3") && e.contains("no earlier line has"), "{e}");
    }
}
