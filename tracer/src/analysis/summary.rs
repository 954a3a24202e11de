//! The end-of-run summary: calls per function with time, launches and top
//! kernels, bytes moved per direction, allocations, synchronization time,
//! errors and loss. Built from trace lines, so the same code serves a live
//! recording and `tracer summary FILE`.
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;

use tracer_format::line::{CallOp, LineType};

use crate::decode::fastline::Line;

#[derive(Default, Debug, Clone)]
pub struct FuncStat {
    pub calls: u64,
    pub total_us: f64,
    pub max_us: f64,
    /// Calls with a duration (entry-only functions have none).
    pub timed: u64,
    pub errors: u64,
}

#[derive(Default, Debug)]
pub struct Summary {
    pub funcs: BTreeMap<String, FuncStat>,
    pub kernels: HashMap<String, u64>,
    pub launches: u64,
    pub launches_unnamed: u64,
    pub copy_bytes: BTreeMap<String, (u64, u64)>,
    pub alloc_bytes: u64,
    pub allocs: u64,
    pub frees: u64,
    /// Synchronization time (analysis/figures.rs: blocking synchronizations
    /// and host-blocking copies; polling queries apart).
    pub sync: crate::analysis::figures::SyncTime,
    pub errors: BTreeMap<String, u64>,
    pub processes: std::collections::BTreeSet<u64>,
    /// The trace span (analysis/figures.rs), as `tracer report` gives it.
    pub span: crate::analysis::figures::SpanAcc,
    pub incomplete: u64,
    /// ioctls on NVIDIA device files by escape name: (count, total us, NV errors).
    pub ioctls: BTreeMap<String, (u64, f64, u64)>,
    pub ioctls_unknown: u64,
    /// open/close/mmap/munmap of NVIDIA device files.
    pub nv_file_ops: BTreeMap<String, u64>,
    pub header: Option<Value>,
    pub footer: Option<Value>,
    /// Markers and NVML samples (side_summary.rs).
    pub side: crate::analysis::side_summary::SideSummary,
    /// Graph lines and captured calls, kept (rare) for the graph expansion
    /// at the end (analysis/graphs.rs).
    pub graph_lines: crate::analysis::model::graph_lines::GraphLines,
    /// Kernel names that graph lines name (nodes added, instantiated or
    /// updated), by count of such lines: what graph launches may run.
    pub graph_kernels: HashMap<String, u64>,
}

/// A line the summary reads as a driver call: any type but the format's
/// other types (those go through [`Summary::add`]); a `gpu_window` line
/// has always been read as a call here.
fn call_line(ty: &str) -> bool {
    LineType::parse(ty).is_none_or(|t| t.is_call() || t == LineType::GpuWindow)
}

/// The fields of a call line the summary reads, borrowed from the line.
#[derive(Deserialize, Default)]
struct CallView<'a> {
    #[serde(rename = "type", borrow)]
    ty: Option<Cow<'a, str>>,
    #[serde(borrow)]
    op: Option<Cow<'a, str>>,
    #[serde(borrow)]
    name: Option<Cow<'a, str>>,
    pid: Option<u64>,
    ts: Option<u64>,
    duration_us: Option<f64>,
    incomplete: Option<bool>,
    #[serde(borrow)]
    error: Option<Cow<'a, str>>,
    size: Option<u64>,
    #[serde(borrow)]
    direction: Option<Cow<'a, str>>,
    #[serde(borrow)]
    kernel: Option<Cow<'a, str>>,
    ret: Option<u64>,
    /// Recorded by stream capture: not run.
    capture: Option<u64>,
}

impl Summary {
    pub fn add(&mut self, v: &Value) {
        let ty = v["type"].as_str().unwrap_or("");
        self.span.add(ty, v["ts"].as_u64(), v["duration_us"].as_f64(), v["end_ts"].as_u64());
        let line_type = LineType::parse(ty);
        match line_type {
            Some(LineType::Header) => {
                self.header = Some(v.clone());
                return;
            }
            Some(LineType::Footer) => {
                self.footer = Some(v.clone());
                return;
            }
            // NVML samples and phase markers are not calls.
            Some(LineType::Power | LineType::Marker) => {
                self.side.add(v);
                return;
            }
            // Scheduler events of the traced threads are not calls (and not
            // in the span); stack lines are where lines were taken.
            // The durations library's entries are not records either.
            Some(LineType::Sched | LineType::Stack | LineType::Sample | LineType::Durations) => return,
            _ => {}
        }
        if let Some(p) = v["pid"].as_u64() {
            self.processes.insert(p);
        }
        match line_type {
            Some(LineType::Process) => return,
            Some(LineType::Gpu) => return, // measured GPU activity (--gpu-timestamps), not driver calls
            Some(LineType::Ioctl) => {
                let e = self.ioctls.entry(v["name"].as_str().unwrap_or("?").to_string()).or_default();
                e.0 += 1;
                e.1 += v["duration_us"].as_f64().unwrap_or(0.0);
                if crate::analysis::ioctl_report::failed(v) {
                    e.2 += 1;
                }
                if v["known"] == false {
                    self.ioctls_unknown += 1;
                }
                return;
            }
            Some(LineType::NvidiaFd) => {
                *self.nv_file_ops.entry(v["op"].as_str().unwrap_or("?").to_string()).or_default() += 1;
                return;
            }
            _ => {}
        }
        // (pid was counted above.)
        if ty == "graph" || v.get("capture").is_some() {
            self.graph_lines.push_value(v);
        }
        self.note_graph_kernel(Some(ty), v["kernel"].as_str());
        let s = |k: &str| v[k].as_str().map(Cow::Borrowed);
        self.add_call(&CallView {
            ty: Some(Cow::Borrowed(ty)),
            op: s("op"),
            name: s("name"),
            pid: None,
            ts: v["ts"].as_u64(),
            duration_us: v["duration_us"].as_f64(),
            incomplete: v["incomplete"].as_bool(),
            error: s("error"),
            size: v["size"].as_u64(),
            direction: s("direction"),
            kernel: s("kernel"),
            ret: v["ret"].as_u64(),
            capture: v["capture"].as_u64(),
        });
    }

    /// A graph line naming a kernel (node added, updated or instantiated):
    /// counted in `graph_kernels`.
    fn note_graph_kernel(&mut self, ty: Option<&str>, kernel: Option<&str>) {
        if ty == Some("graph")
            && let Some(k) = kernel
        {
            *self.graph_kernels.entry(k.to_string()).or_default() += 1;
        }
    }

    /// [`Summary::add_json`] for a line the reader already read into `raw`
    /// (`tracer_format::read::read_checked`): a call line is not scanned again.
    pub fn add_checked(
        &mut self,
        file: &str,
        n: u64,
        bytes: &[u8],
        raw: &tracer_format::line::RawLine,
    ) -> anyhow::Result<()> {
        fn b<'a>(c: &'a Option<Cow<'_, str>>) -> Option<Cow<'a, str>> {
            c.as_deref().map(Cow::Borrowed)
        }
        self.span.add(raw.ty.as_deref().unwrap_or(""), raw.ts, raw.duration_us, raw.end_ts);
        if raw.ret.is_none_or(|r| r >= 0) && raw.ty.as_deref().is_some_and(call_line) {
            if let Some(p) = raw.pid {
                self.processes.insert(u64::from(p));
            }
            if raw.ty.as_deref() == Some("graph") || raw.capture.is_some() {
                self.graph_lines.push_bytes(bytes);
            }
            self.note_graph_kernel(raw.ty.as_deref(), raw.kernel.as_deref());
            self.add_call(&CallView {
                ty: b(&raw.ty),
                op: b(&raw.op),
                name: b(&raw.name),
                pid: None,
                ts: raw.ts,
                duration_us: raw.duration_us,
                incomplete: raw.incomplete,
                error: b(&raw.error),
                size: raw.size,
                direction: b(&raw.direction),
                kernel: b(&raw.kernel),
                ret: raw.ret.map(|r| r as u64),
                capture: raw.capture,
            });
            return Ok(());
        }
        self.add_json(file, n, bytes)
    }

    /// A call line of a trace file: parsed into a borrowed view of the
    /// fields the summary uses (no JSON value built), the other line types
    /// through [`Summary::add`]. `file` and `n` name the line in errors.
    pub fn add_json(&mut self, file: &str, n: u64, bytes: &[u8]) -> anyhow::Result<()> {
        // The loader's scanner first (tracer_format::line::scan): when it
        // reads the line, serde_json would read the same values into a CallView.
        let mut raw = tracer_format::line::RawLine::default();
        let scanned = tracer_format::line::scan_into(bytes, &mut raw);
        if scanned {
            self.span.add(raw.ty.as_deref().unwrap_or(""), raw.ts, raw.duration_us, raw.end_ts);
        }
        if scanned && raw.ret.is_none_or(|r| r >= 0) && raw.ty.as_deref().is_some_and(call_line) {
            if let Some(p) = raw.pid {
                self.processes.insert(u64::from(p));
            }
            if raw.ty.as_deref() == Some("graph") || raw.capture.is_some() {
                self.graph_lines.push_bytes(bytes);
            }
            self.note_graph_kernel(raw.ty.as_deref(), raw.kernel.as_deref());
            self.add_call(&CallView {
                ty: raw.ty,
                op: raw.op,
                name: raw.name,
                pid: None,
                ts: raw.ts,
                duration_us: raw.duration_us,
                incomplete: raw.incomplete,
                error: raw.error,
                size: raw.size,
                direction: raw.direction,
                kernel: raw.kernel,
                ret: raw.ret.map(|r| r as u64),
                capture: raw.capture,
            });
            return Ok(());
        }
        if let Ok(c) = serde_json::from_slice::<CallView>(bytes)
            && c.ty.as_deref().is_some_and(call_line)
        {
            if let Some(p) = c.pid {
                self.processes.insert(p);
            }
            self.span.add(c.ty.as_deref().unwrap_or(""), c.ts, c.duration_us, None);
            if c.ty.as_deref() == Some("graph") || c.capture.is_some() {
                self.graph_lines.push_bytes(bytes);
            }
            self.add_call(&c);
            return Ok(());
        }
        // Other line types, and call lines whose fields have unexpected
        // types (read leniently, as before).
        match serde_json::from_slice::<Value>(bytes) {
            Ok(v) if v.is_object() => {
                self.add(&v);
                Ok(())
            }
            Ok(_) => anyhow::bail!("{file}: line {n}: expected a JSON object"),
            Err(e) => anyhow::bail!("{file}: line {n}: not valid JSON ({e})"),
        }
    }

    fn add_call(&mut self, v: &CallView) {
        let ty = v.ty.as_deref().unwrap_or("");
        let name = v.name.as_deref().unwrap_or("?");
        let dur = v.duration_us;
        if v.incomplete == Some(true) {
            self.incomplete += 1;
        }
        let f = self.call(name, v.ts, dur);
        if let Some(e) = v.error.as_deref() {
            // Not-ready answers to queries are status, not failures.
            if !(e == "CUDA_ERROR_NOT_READY" && name.contains("Query")) {
                f.errors += 1;
                *self.errors.entry(format!("{name}: {e}")).or_default() += 1;
            }
        }
        let size = v.size.unwrap_or(0);
        let line_type = LineType::parse(ty);
        let op = v.op.as_deref().unwrap_or("");
        match (line_type, CallOp::parse(op)) {
            // Captured into a graph: run by the graph's launches (counted at the end).
            (Some(LineType::Kernel), Some(CallOp::Launch)) if v.capture.is_some() => {}
            (Some(LineType::Memcpy), _) if v.capture.is_some() => {}
            (Some(LineType::Kernel), Some(CallOp::Launch)) => self.launch(v.kernel.as_deref()),
            (Some(LineType::Memcpy), _) => {
                let d = v.direction.as_deref().unwrap_or("default");
                if !self.copy_bytes.contains_key(d) {
                    self.copy_bytes.insert(d.to_string(), (0, 0));
                }
                let e = self.copy_bytes.get_mut(d).expect("inserted above");
                e.0 += 1;
                e.1 = e.1.saturating_add(size);
            }
            (Some(LineType::Memory), Some(CallOp::Alloc)) if v.ret == Some(0) => {
                self.allocs += 1;
                self.alloc_bytes = self.alloc_bytes.saturating_add(size);
            }
            (Some(LineType::Memory), Some(CallOp::Free)) if v.ret == Some(0) => self.frees += 1,
            _ => {}
        }
        if v.capture.is_none() {
            let kind = crate::analysis::model::Kind::classify(line_type, op, name);
            let dir =
                v.direction.as_deref().map_or(crate::analysis::model::Dir::None, crate::analysis::model::Dir::parse);
            self.sync.add(kind, dir, crate::analysis::figures::dur_ns(dur));
        }
    }

    /// Adds a line of the collector's fast path (the same as `add` of its
    /// JSON value).
    pub fn add_line(&mut self, l: &Line) {
        match l {
            Line::Value(v) => self.add(v),
            Line::Launch(l) => {
                self.processes.insert(l.hdr.pid as u64);
                self.span.add("kernel", Some(l.hdr.ts), l.duration_us(), None);
                self.call(l.name, Some(l.hdr.ts), l.duration_us());
                self.launch(l.kernel);
            }
            Line::Call(l) => {
                self.processes.insert(l.hdr.pid as u64);
                let (ty, op) = l.type_op();
                self.span.add(ty, Some(l.hdr.ts), l.duration_us(), None);
                let name = l.name();
                self.add_call(&CallView {
                    ty: Some(Cow::Borrowed(ty)),
                    op: Some(Cow::Borrowed(op)),
                    name: Some(Cow::Borrowed(&name)),
                    pid: None,
                    ts: Some(l.hdr.ts),
                    duration_us: l.duration_us(),
                    incomplete: None,
                    error: None,
                    size: l.size(),
                    direction: l.direction().map(Cow::Borrowed),
                    kernel: l.kernel().map(Cow::Borrowed),
                    ret: l.returned.map(|_| 0),
                    capture: None,
                });
            }
        }
    }

    /// Counts a call of `name` (looked up before inserting: no allocation
    /// per line).
    fn call(&mut self, name: &str, _ts: Option<u64>, dur_us: Option<f64>) -> &mut FuncStat {
        let dur = dur_us.unwrap_or(0.0);
        if !self.funcs.contains_key(name) {
            self.funcs.insert(name.to_string(), FuncStat::default());
        }
        let f = self.funcs.get_mut(name).expect("inserted above");
        f.calls += 1;
        f.timed += dur_us.is_some() as u64;
        f.total_us += dur;
        f.max_us = f.max_us.max(dur);
        f
    }

    fn launch(&mut self, kernel: Option<&str>) {
        self.launches += 1;
        match kernel {
            Some(k) => match self.kernels.get_mut(k) {
                Some(n) => *n += 1,
                None => {
                    self.kernels.insert(k.to_string(), 1);
                }
            },
            None => self.launches_unnamed += 1,
        }
    }

    /// The summary's figures as JSON (`tracer summary --json`): every
    /// function and kernel, not only the top ones the text shows.
    pub fn to_json(&self) -> Value {
        use serde_json::json;
        let calls: u64 = self.funcs.values().map(|f| f.calls).sum();
        let mut funcs: Vec<_> = self.funcs.iter().collect();
        funcs.sort_by(|a, b| b.1.calls.cmp(&a.1.calls).then(a.0.cmp(b.0)));
        let (graphs, all_kernels) = self.graph_lines.with_graph_kernels(&self.kernels);
        let mut kernels: Vec<_> = all_kernels.iter().collect();
        kernels.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        let (markers, power) = self.side.to_json();
        json!({
            "calls": calls,
            "processes": self.processes.len(),
            "first_ts": self.span.span().map(|s| s.0),
            "last_ts": self.span.span().map(|s| s.1),
            "span_ns": self.span.span().map(|s| s.1 - s.0),
            "launches": self.launches + graphs.kernels_run,
            "launches_unnamed": self.launches_unnamed,
            "distinct_kernels": all_kernels.len(),
            "graphs": graphs,
            "allocs": self.allocs,
            "alloc_bytes": self.alloc_bytes,
            "frees": self.frees,
            "sync_us": self.sync.ns as f64 / 1000.0,
            "sync": self.sync,
            "copies": self.copy_bytes.iter().map(|(d, (n, b))| (d.clone(), json!({"count": n, "bytes": b})))
                .collect::<serde_json::Map<_, _>>(),
            "functions": funcs.iter().map(|(name, f)| json!({"name": name, "calls": f.calls, "timed": f.timed,
                "total_us": (f.timed > 0).then_some(f.total_us), "max_us": (f.timed > 0).then_some(f.max_us),
                "errors": f.errors})).collect::<Vec<_>>(),
            "kernels": kernels.iter().map(|(k, n)| json!({"name": k, "launches": n})).collect::<Vec<_>>(),
            "ioctls": self.ioctls.iter().map(|(k, (c, us, e))| (k.clone(), json!({"count": c, "total_us": us, "failed": e})))
                .collect::<serde_json::Map<_, _>>(),
            "ioctls_undecoded": self.ioctls_unknown,
            "nvidia_file_ops": self.nv_file_ops,
            "errors": self.errors,
            "incomplete": self.incomplete,
            "markers": markers,
            "power": power,
            "footer": self.footer.as_ref().map(|f| json!({"records": f["records"], "lost": f["lost"], "replay": f.get("replay")})),
            "cut_short": self.footer.is_none() && self.header.is_some(),
        })
    }

    /// The names of the kernels [`Summary::render`] lists (the 10 most launched).
    pub fn top_kernel_names(&self) -> Vec<&str> {
        let mut k: Vec<_> = self.kernels.iter().collect();
        k.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        k.into_iter().take(10).map(|(n, _)| n.as_str()).collect()
    }

    /// The text summary, kernel names as recorded.
    pub fn render(&self) -> String {
        self.render_with(crate::analysis::kernel_names::NameStyle::Mangled)
    }

    /// The text summary with kernel names in the spelling `names`.
    pub fn render_with(&self, names: crate::analysis::kernel_names::NameStyle) -> String {
        let mut s = String::new();
        let calls: u64 = self.funcs.values().map(|f| f.calls).sum();
        let span = self.span.span().map_or(0.0, |(a, b)| (b - a) as f64 / 1e9);
        let _ = writeln!(s, "── tracer summary ──");
        let _ = writeln!(s, "{calls} driver calls in {} process(es) over {span:.3} s", self.processes.len());
        let (graphs, kernels) = self.graph_lines.with_graph_kernels(&self.kernels);
        let _ = writeln!(
            s,
            "{} kernel launches ({} distinct kernels{}), {} allocations ({}), {} frees, {}",
            self.launches + graphs.kernels_run,
            kernels.len(),
            if self.launches_unnamed > 0 {
                format!(", {} launches of unnamed handles", self.launches_unnamed)
            } else {
                String::new()
            },
            self.allocs,
            bytes(self.alloc_bytes),
            self.frees,
            self.sync.sentence()
        );
        for (d, (n, b)) in &self.copy_bytes {
            let _ = writeln!(s, "copies {d}: {n} ({})", bytes(*b));
        }
        let mut top: Vec<_> = self.funcs.iter().collect();
        top.sort_by(|a, b| b.1.calls.cmp(&a.1.calls).then(a.0.cmp(b.0)));
        use crate::analysis::text_table::{Align, Table};
        let mut tb = Table::new(&[
            ("function", Align::Left),
            ("calls", Align::Right),
            ("total ms", Align::Right),
            ("max us", Align::Right),
            ("errors", Align::Right),
        ]);
        for (name, f) in top.iter().take(20) {
            // Entry-only functions (launches by default) have no duration.
            let (total, max) = match f.timed {
                0 => ("–".to_string(), "–".to_string()),
                _ => (format!("{:.3}", f.total_us / 1000.0), format!("{:.1}", f.max_us)),
            };
            // lines of a call type without a function name (a replayable recording's copy_data lines)
            let name = if name.as_str() == "?" { "(lines without a function name)" } else { name.as_str() };
            tb.row(vec![name.to_string(), f.calls.to_string(), total, max, f.errors.to_string()]);
        }
        tb.render(&mut s);
        if top.len() > 20 {
            let _ = writeln!(s, "… {} more functions", top.len() - 20);
        }
        if let Some(n) = crate::analysis::model::graphs::note(&graphs) {
            let _ = writeln!(s, "{n}");
        }
        let mut k: Vec<_> = kernels.iter().collect();
        k.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        if !k.is_empty() {
            let _ = writeln!(s, "top kernels by launches:");
            let short = crate::analysis::short_names::ShortNames::of(kernels.keys().map(|k| k.as_str()));
            for (name, n) in k.iter().take(10) {
                let name = short.display(name, names);
                let name = crate::analysis::inert::name(&name);
                let _ = writeln!(s, "  {n:>8}  {name}{}", crate::analysis::text_table::KEEP);
            }
        }
        if !self.ioctls.is_empty() || !self.nv_file_ops.is_empty() {
            let n: u64 = self.ioctls.values().map(|e| e.0).sum();
            let files: Vec<String> = self.nv_file_ops.iter().map(|(k, v)| format!("{v} {k}")).collect();
            let _ = writeln!(
                s,
                "{n} ioctls on NVIDIA devices ({} undecoded); device files: {}",
                self.ioctls_unknown,
                files.join(", ")
            );
            let mut top: Vec<_> = self.ioctls.iter().collect();
            top.sort_by(|a, b| b.1.0.cmp(&a.1.0).then(a.0.cmp(b.0)));
            for (name, (c, us, errs)) in top.iter().take(8) {
                let name = crate::analysis::inert::name(name);
                let _ = writeln!(s, "  {name:<40} {c:>8} {:>10.3} ms {errs:>6} failed", us / 1000.0);
            }
        }
        for (e, n) in &self.errors {
            let _ = writeln!(s, "error: {} x{n}", crate::analysis::inert::name(e));
        }
        if self.incomplete > 0 {
            let _ = writeln!(s, "{} call(s) still in progress when the trace ended", self.incomplete);
        }
        self.side.render(&mut s);
        if let Some(f) = &self.footer {
            let lost = &f["lost"];
            let _ = writeln!(
                s,
                "records: {} received, {} lost (ring buffer full: {}){}",
                f["records"],
                lost["total"],
                lost["ring_buffer_full"],
                if lost["total"].as_u64().unwrap_or(0) > 0 { "  ← increase --buffer-size" } else { "" }
            );
            if let Some(line) = stacks_line(self.header.as_ref(), f) {
                let _ = writeln!(s, "{line}");
            }
            if let Some(line) = host_speed_line(f) {
                let _ = writeln!(s, "{line}");
            }
            if let Some(r) = f.get("replay").filter(|r| r.is_object()) {
                let n = |k: &str| r[k].as_u64().unwrap_or(0);
                let _ = writeln!(
                    s,
                    "replayable: {} of {} image loads captured; {} of {} launches with exact parameters ({} from extra), {} missing{}",
                    n("images_captured"),
                    n("image_loads"),
                    n("params_exact"),
                    n("launches"),
                    n("params_from_extra"),
                    n("params_missing"),
                    if n("h2d_copies") > 0 {
                        format!("; {} of {} host-to-device copies stored", n("h2d_captured"), n("h2d_copies"))
                    } else {
                        String::new()
                    }
                );
                if n("graph_kernel_nodes") > 0 {
                    let _ = writeln!(
                        s,
                        "replayable graphs: {} of {} kernel nodes added or set with exact parameters",
                        n("graph_node_params_exact"),
                        n("graph_kernel_nodes")
                    );
                }
            }
        } else if self.header.is_some() {
            let _ = writeln!(s, "no footer: the recording was cut short (tracer killed?)");
        }
        crate::analysis::text_table::wrap(&s, crate::analysis::text_table::MAX_COLUMNS, 2)
    }
}

/// The footer's `host_speed` in words: how fast the process ran against the speed its machine
/// usually runs the command at, which replay and what-if pace it to unless `--recorded-speed`
/// (docs/replay.md, *The machine's usual speed*), or why it could not be compared; `None`
/// without the field.
fn host_speed_line(f: &Value) -> Option<String> {
    f.get("host_speed").filter(|h| h.is_object())?;
    Some(match tracer_format::pacing::UsualSpeed::of_footer(Some(f)) {
        Ok(u) => format!(
            "host speed: {:.2}x the usual time{} (probes at {:.0} ns a run, the machine's median {:.0} over {} recordings \
             of the command)",
            u.factor,
            if f["host_speed"]["clamped"].as_bool() == Some(true) { ", clamped" } else { "" },
            u.gauge_ns,
            u.reference_ns,
            u.recordings
        ),
        Err(why) => {
            let why = why.strip_prefix("the machine's usual speed (").and_then(|w| w.strip_suffix(')')).unwrap_or(&why);
            format!("host speed: not compared with the machine's usual speed ({})", crate::analysis::inert::name(why))
        }
    })
}

/// What stacks the recording took and how (header `stacks`, footer
/// `stacks` and `stack_sampling`: docs/stacks.md), so a reader sees that
/// launches were sampled and what could not be named; `None` without stacks.
fn stacks_line(header: Option<&Value>, f: &Value) -> Option<String> {
    let h = header.map(|h| &h["stacks"]).filter(|h| h.is_object())?;
    let st = f.get("stacks").filter(|v| v.is_object())?;
    let n = |v: &Value| v.as_u64().unwrap_or(0);
    let site = &st["by_site"];
    let mut out = format!(
        "stacks: {} taken ({} at calls, {} at switch-outs, {} on-CPU samples",
        n(&st["records"]),
        n(&site["call"]),
        n(&site["switch_out"]),
        n(&site["sample"])
    );
    match n(&h["sample_hz"]) {
        0 => match h["sample_error"].as_str() {
            Some(e) => out += &format!(": refused, {}", crate::analysis::inert::name(e)),
            None => out += ": off",
        },
        hz => out += &format!(" at {hz} Hz per CPU"),
    }
    out += &format!("), {} distinct", n(&st["distinct"]));
    // shed while the collector was behind (tracer-ebpf stack.rs): those lines have no stack
    let shed = &f["stack_sampling"]["shed_under_load"];
    if n(&shed["switch_outs"]) + n(&shed["samples"]) > 0 {
        out += &format!(
            "; not taken while tracer was behind: {} at switch-outs, {} samples (their lines have no stack)",
            n(&shed["switch_outs"]),
            n(&shed["samples"])
        );
    }
    if h["sampling"]["launches"] == "sampled" {
        let c = &f["stack_sampling"];
        out += &format!(
            "; launches sampled ({} took a stack, {} did not: one after {} µs without a launch or a switch-out, else one per {} ms per thread; --all-launch-stacks takes every one)",
            n(&c["launches_sampled_in"]),
            n(&c["launches_sampled_out"]),
            n(&h["sampling"]["idle_us"]),
            n(&h["sampling"]["interval_ms"])
        );
    }
    if let Some(w) = f.get("stack_walks").filter(|w| w.is_object()) {
        out += &walks_phrase(w);
    }
    let fr = &st["frames"];
    out += &format!("; frames: {} of {} [unknown], {} [jit]", n(&fr["unknown"]), n(&fr["total"]), n(&fr["jit"]));
    let py = &st["py_status"];
    if h["python"] == true {
        out += &format!(
            ", Python frames in {} stacks ({} cut at the frame limit, {} [python ?])",
            n(&st["with_python"]),
            n(&py["truncated"]),
            n(&fr["python_unknown"])
        );
    } else if let Some(e) = h["python_error"].as_str() {
        out += &format!(", no Python frames: {}", crate::analysis::inert::name(e));
    }
    if n(&st["orphans"]) > 0 {
        out += &format!("; {} stacks whose record never came", n(&st["orphans"]));
    }
    Some(out)
}

/// What the kernel side's stack walks cost (footer `stack_walks`): their time in all, and per
/// walk at each site that took any.
fn walks_phrase(w: &Value) -> String {
    let n = |v: &Value| v.as_u64().unwrap_or(0);
    let sites = [("call", "at calls"), ("switch_out", "at switch-outs"), ("sample", "per sample")];
    let total: u64 = sites.iter().map(|(k, _)| n(&w[*k]["ns"])).sum();
    let each: Vec<String> = sites
        .iter()
        .filter(|(k, _)| n(&w[*k]["walks"]) > 0)
        .map(|(k, label)| {
            let (walks, ns, py) = (n(&w[*k]["walks"]), n(&w[*k]["ns"]), n(&w[*k]["python_ns"]));
            format!(
                "{:.1} µs {label} ({:.1} of it Python)",
                ns as f64 / walks as f64 / 1e3,
                py as f64 / walks as f64 / 1e3
            )
        })
        .collect();
    if each.is_empty() {
        return String::new();
    }
    format!("; the walks took {:.1} ms: {}", total as f64 / 1e6, each.join(", "))
}

fn bytes(b: u64) -> String {
    const U: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut x = b as f64;
    let mut i = 0;
    while x >= 1024.0 && i < U.len() - 1 {
        x /= 1024.0;
        i += 1;
    }
    if i == 0 { format!("{b} B") } else { format!("{x:.1} {}", U[i]) }
}

#[cfg(test)]
mod tests {
    /// The typed reader of trace files gives the same summary as reading
    /// each line as a JSON value, on every committed recording.
    #[test]
    fn typed_reader_equals_value_reader_on_the_recordings() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../traces");
        let mut n = 0;
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if !p.to_string_lossy().ends_with(".jsonl.gz") {
                continue;
            }
            let (mut a, mut b) = (Summary::default(), Summary::default());
            tracer_format::read::for_each(&p, |v| a.add(v)).unwrap();
            tracer_format::read::for_each_line(&p, |k, bytes| b.add_json("t", k, bytes)).unwrap();
            assert_eq!(a.render(), b.render(), "{}", p.display());
            n += 1;
        }
        assert!(n >= 8, "{n} recordings");
        // A call line whose fields have unexpected types is read leniently.
        let mut s = Summary::default();
        s.add_json("t", 1, br#"{"type":"sync","name":"cuStreamSynchronize","ts":"x","duration_us":2.0,"pid":1}"#)
            .unwrap();
        assert_eq!((s.funcs["cuStreamSynchronize"].calls, s.sync.calls, s.sync.ns), (1, 1, 2_000));
        let e = s.add_json("t.jsonl", 7, b"{oops").unwrap_err().to_string();
        assert!(e.starts_with("t.jsonl: line 7: not valid JSON"), "{e}");
    }

    use super::*;
    use serde_json::json;

    #[test]
    fn host_speed_line_says_how_fast_the_run_was_against_the_usual() {
        let f = json!({"host_speed": {"gauge_ns": 2000.0, "reference_ns": 1000.0, "recordings": 5, "factor": 2.0, "runs": 900}});
        assert_eq!(
            host_speed_line(&f).unwrap(),
            "host speed: 2.00x the usual time (probes at 2000 ns a run, the machine's median 1000 over 5 recordings of the \
             command)"
        );
        let c = json!({"host_speed": {"gauge_ns": 900.0, "reference_ns": 2000.0, "recordings": 3, "factor": 0.5, "clamped": true}});
        assert!(
            host_speed_line(&c).unwrap().starts_with("host speed: 0.50x the usual time, clamped (probes at 900 ns"),
            "{c}"
        );
        let first = json!({"host_speed": {"gauge_ns": 1500.0, "reference_ns": 1500.0, "recordings": 1, "factor": 1.0}});
        assert_eq!(
            host_speed_line(&first).unwrap(),
            "host speed: not compared with the machine's usual speed (the first recording of its command and probe set on its machine: nothing to compare it with)"
        );
        let none = json!({"host_speed": {"gauge_ns": null, "note": "under 200 runs of the entry programs: no gauge"}});
        assert_eq!(
            host_speed_line(&none).unwrap(),
            "host speed: not compared with the machine's usual speed (under 200 runs of the entry programs: no gauge)"
        );
        assert_eq!(host_speed_line(&json!({"records": 3})), None);
    }

    #[test]
    fn stacks_line_says_what_was_sampled_and_unnamed() {
        let h = json!({"stacks":{"native":true,"python":true,"sample_hz":997,"sample_error":null,
            "sampling":{"launches":"sampled","idle_us":50,"interval_ms":10}}});
        let f = json!({"stacks":{"records":30,"by_site":{"call":5,"switch_out":10,"sample":15},"distinct":12,
            "frames":{"unknown":7,"total":90,"jit":1,"python_unknown":2},"with_python":20,
            "py_status":{"truncated":3},"orphans":1},
            "stack_sampling":{"launches_sampled_in":4,"launches_sampled_out":96}});
        assert_eq!(
            stacks_line(Some(&h), &f).unwrap(),
            "stacks: 30 taken (5 at calls, 10 at switch-outs, 15 on-CPU samples at 997 Hz per CPU), 12 distinct; \
             launches sampled (4 took a stack, 96 did not: one after 50 µs without a launch or a switch-out, else one per 10 ms \
             per thread; --all-launch-stacks takes every one); frames: 7 of 90 [unknown], 1 [jit], Python frames in 20 stacks \
             (3 cut at the frame limit, 2 [python ?]); 1 stacks whose record never came"
        );
        // Python frames refused by the kernel, samples refused, every launch.
        let h = json!({"stacks":{"python":false,"python_error":"the verifier","sample_hz":0,"sample_error":"EACCES",
            "sampling":{"launches":"all"}}});
        assert_eq!(
            stacks_line(Some(&h), &f).unwrap(),
            "stacks: 30 taken (5 at calls, 10 at switch-outs, 15 on-CPU samples: refused, EACCES), 12 distinct; \
             frames: 7 of 90 [unknown], 1 [jit], no Python frames: the verifier; 1 stacks whose record never came"
        );
        // The walks' cost, per site that took any.
        let mut fw = f.clone();
        fw["stack_walks"] = json!({"call": {"walks": 4, "ns": 20_000, "python_ns": 12_000},
            "switch_out": {"walks": 0, "ns": 0, "python_ns": 0},
            "sample": {"walks": 15, "ns": 45_000, "python_ns": 30_000}});
        let line = stacks_line(Some(&h), &fw).unwrap();
        assert!(
            line.contains(
                "12 distinct; the walks took 0.1 ms: 5.0 µs at calls (3.0 of it Python), 3.0 µs per sample (2.0 of it Python); frames:"
            ),
            "{line}"
        );
        // stacks shed while the collector was behind
        let mut fs = f.clone();
        fs["stack_sampling"]["shed_under_load"] = json!({"switch_outs": 40, "samples": 2});
        assert!(
            stacks_line(Some(&h), &fs).unwrap().contains(
                "12 distinct; not taken while tracer was behind: 40 at switch-outs, 2 samples (their lines have no stack); frames:"
            ),
            "{}",
            stacks_line(Some(&h), &fs).unwrap()
        );
        // --no-stacks (header null) and traces before stacks: no line.
        assert_eq!(stacks_line(Some(&json!({"stacks":null})), &f), None);
        assert_eq!(stacks_line(None, &f), None);
    }

    #[test]
    fn counts_and_render() {
        let mut s = Summary::default();
        for v in [
            json!({"type":"header"}),
            json!({"ts":1000,"pid":1,"type":"kernel","op":"launch","name":"cuLaunchKernel","kernel":"k1","duration_us":2.0,"ret":0}),
            json!({"ts":2000,"pid":1,"type":"kernel","op":"launch","name":"cuLaunchKernel","kernel":"k1","duration_us":4.0,"ret":0}),
            json!({"ts":3000,"pid":1,"type":"memcpy","op":"copy","name":"cuMemcpyHtoD_v2","size":4096,"direction":"h2d","duration_us":1.0,"ret":0}),
            json!({"ts":4000,"pid":1,"type":"memory","op":"alloc","name":"cuMemAlloc_v2","size":100,"duration_us":1.0,"ret":0}),
            json!({"ts":5000,"pid":2,"type":"memory","op":"alloc","name":"cuMemAlloc_v2","size":1,"duration_us":1.0,"ret":2,"error":"CUDA_ERROR_OUT_OF_MEMORY"}),
            json!({"ts":6000,"pid":2,"type":"sync","op":"stream_query","name":"cuStreamQuery","duration_us":1.0,"ret":600,"error":"CUDA_ERROR_NOT_READY"}),
            json!({"type":"footer","records":12,"lost":{"total":0,"ring_buffer_full":0}}),
        ] {
            s.add(&v);
        }
        assert_eq!(s.launches, 2);
        assert_eq!(s.kernels["k1"], 2);
        assert_eq!(s.copy_bytes["h2d"], (1, 4096));
        assert_eq!((s.allocs, s.alloc_bytes), (1, 100));
        assert_eq!(s.errors.len(), 1);
        assert_eq!(s.funcs["cuLaunchKernel"].total_us, 6.0);
        assert_eq!(s.processes.len(), 2);
        let r = s.render();
        assert!(r.contains("6 driver calls in 2 process(es)"), "{r}");
        assert!(r.contains("error: cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY x1"), "{r}");
        assert!(r.contains("12 received, 0 lost"), "{r}");
        assert_eq!(bytes(1536), "1.5 KiB");
    }
}
