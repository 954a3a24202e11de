//! Fills the figures' inputs from a trace file, on its own: CUDA calls per
//! thread (call lines with `ts` + `duration_us`), phase and iteration
//! markers, NVML power samples and measured GPU intervals (`gpu` lines) when
//! the trace has them (docs/trace-format.md). The phases are those of
//! `tracer report` (analysis::phases, from the model [`load`] reads too).
//! Without GPU rows (measured or bound), the gap histogram shows the gaps
//! between driver calls instead and says so.
use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use super::bins::idle_gaps;
use super::input::*;
use super::numbers::{plural, thousands};
use crate::analysis::energy::{self, EnergySeries};
use crate::analysis::model::PowerSample;

/// Accumulates trace lines; `finish` builds the inputs.
#[derive(Default)]
pub struct Builder {
    name: String,
    command: Option<String>,
    gpu_models: Vec<String>,
    t_min: Option<u64>,
    t_max: u64,
    calls: u64,
    /// Calls without a duration (no return probe): drawn as instants.
    instants: u64,
    /// (pid, tid) -> slices; incomplete calls have end u64::MAX until `finish`.
    threads: BTreeMap<(u64, u64), Vec<Slice>>,
    /// (device, stream) -> slices.
    gpu: BTreeMap<(u64, String), Vec<Slice>>,
    /// Phase markers seen (the phases themselves come from the analysis).
    phase_markers: u64,
    marks: Vec<Mark>,
    /// NVML samples of every GPU.
    power: Vec<PowerSample>,
    /// The phases of `tracer report` ([`Builder::set_phases`]); the bool
    /// says "detected from the data".
    analysis_phases: Option<(Vec<Phase>, bool)>,
    /// The GPU rows come from the analysis's bound timeline (no `gpu` lines).
    gpu_bound: bool,
    /// The GPU rows come from the analysis's sampled timeline (`--gpu-sample`):
    /// the number of measured windows.
    gpu_sampled: Option<usize>,
}

fn u(v: &Value, k: &str) -> Option<u64> {
    v.get(k).and_then(Value::as_u64)
}

fn f(v: &Value, k: &str) -> Option<f64> {
    v.get(k).and_then(Value::as_f64)
}

fn s<'a>(v: &'a Value, k: &str) -> &'a str {
    v.get(k).and_then(Value::as_str).unwrap_or("")
}

/// The colour class of a CUDA call.
pub fn call_kind(ty: &str, op: &str) -> Kind {
    if op.contains("launch") && (ty == "kernel" || ty == "graph") {
        Kind::Launch
    } else if ty == "sync" || op.contains("synchronize") || op.contains("wait") {
        Kind::Sync
    } else if ty == "memcpy" || ty == "memset" {
        Kind::Copy
    } else if ty == "memory" {
        Kind::Memory
    } else {
        Kind::OtherCall
    }
}

impl Builder {
    pub fn new(name: &str) -> Self {
        Builder { name: name.to_string(), ..Default::default() }
    }

    fn see(&mut self, t: u64) {
        self.t_min = Some(self.t_min.map_or(t, |m| m.min(t)));
        self.t_max = self.t_max.max(t);
    }

    pub fn add(&mut self, v: &Value) {
        let ty = s(v, "type");
        match ty {
            "header" => {
                if let Some(c) = v.get("command").and_then(Value::as_array) {
                    let parts: Vec<&str> = c.iter().filter_map(Value::as_str).collect();
                    self.command = Some(parts.join(" "));
                }
                if let Some(g) = v.get("gpus").and_then(Value::as_array) {
                    self.gpu_models = g.iter().map(|g| s(g, "model").to_string()).filter(|m| !m.is_empty()).collect();
                }
                return;
            }
            "footer" => return,
            _ => {}
        }
        let Some(ts) = u(v, "ts") else { return };
        self.see(ts);
        let (pid, tid) = (u(v, "pid").unwrap_or(0), u(v, "tid").unwrap_or(0));
        match ty {
            "marker" => {
                let label = s(v, "label").to_string();
                match s(v, "op") {
                    "phase" => self.phase_markers += 1,
                    "iteration" => self.marks.push(Mark { ts_ns: ts, label, iteration: true }),
                    _ => self.marks.push(Mark { ts_ns: ts, label, iteration: false }),
                }
            }
            "power" => self.power.push(PowerSample {
                ts,
                gpu: u(v, "gpu").unwrap_or(0) as u32,
                energy_mj: u(v, "energy_mj"),
                power_mw: u(v, "power_mw"),
                ..Default::default()
            }),
            "gpu" => {
                let end = u(v, "end_ts").or_else(|| f(v, "duration_us").map(|d| ts + (d * 1000.0).round() as u64));
                let Some(end) = end else { return };
                self.see(end);
                let stream = match (u(v, "stream_id"), v.get("stream").and_then(Value::as_str)) {
                    (Some(id), _) => format!("stream {id}"),
                    (None, Some(h)) => format!("stream {h}"),
                    _ => "stream ?".to_string(),
                };
                let kind = if s(v, "source").contains("infer") { Kind::GpuInferred } else { Kind::GpuMeasured };
                self.gpu.entry((u(v, "device").unwrap_or(0), stream)).or_default().push(Slice {
                    start_ns: ts,
                    end_ns: end,
                    kind,
                });
            }
            _ if s(v, "name").starts_with("cu") => {
                if v.get("entry_lost").and_then(Value::as_bool) == Some(true) {
                    return;
                }
                let end = if v.get("incomplete").and_then(Value::as_bool) == Some(true) {
                    u64::MAX
                } else {
                    match f(v, "duration_us") {
                        Some(d) => ts + (d * 1000.0).round() as u64,
                        None => {
                            // Recorded without a return probe (launches by default): an instant.
                            self.instants += 1;
                            ts
                        }
                    }
                };
                if end != u64::MAX {
                    self.see(end);
                }
                let kind = call_kind(ty, s(v, "op"));
                self.calls += 1;
                self.threads.entry((pid, tid)).or_default().push(Slice { start_ns: ts, end_ns: end, kind });
            }
            _ => {}
        }
    }

    /// The figures' inputs (timeline, gap histogram, phase bars) from the lines added.
    pub fn finish(mut self) -> PlotData {
        let t0 = self.t_min.unwrap_or(0);
        let t1 = self.t_max.max(t0 + 1);
        let threads = self.thread_tracks(t1);
        let n_gpu_intervals: usize = self.gpu.values().map(Vec::len).sum();
        let gpu = self.gpu_tracks();
        let (phases, derived) = self.phases(t0, t1);
        let series = energy::series_of(&self.power);
        let power = self.power_series(&series);
        let n_samples = self.power.len();
        self.marks.sort_by_key(|m| m.ts_ns);

        let file = self.name.clone();
        let command = self.command.clone().unwrap_or_default();
        let mut tl_notes = self.timeline_notes(&threads, n_gpu_intervals, &gpu, n_samples, derived);
        // The view starts at the first GPU work when what comes before (start-up:
        // imports, loading) is more than a tenth of the trace; a note says so.
        let first_gpu = gpu.iter().filter_map(|t| t.slices.iter().map(|x| x.start_ns).min()).min();
        let view0 = match first_gpu {
            Some(g) if g > t0 && (g - t0) * 10 > t1 - t0 => {
                let v = g.saturating_sub((t1 - g) / 50).max(t0);
                tl_notes.push(format!(
                    "Start-up not drawn: the first {:.1} s of the trace, before the first GPU work (--from 0 draws the \
                     whole trace); the axis counts from the start of the trace.",
                    (v - t0) as f64 / 1e9
                ));
                v
            }
            _ => t0,
        };
        let title_cmd = if command.is_empty() { String::new() } else { format!(": {command}") };
        let bars = phase_bars(&phases, &series);
        let phase_notes = phase_notes(derived, series.is_empty());
        let gaps = if gpu.is_empty() { cpu_gaps(&threads, &file) } else { self.gpu_gaps(&gpu, &file) };

        PlotData {
            timeline: Timeline {
                title: format!("Timeline — {file}{title_cmd}"),
                origin_ns: t0,
                t0_ns: view0,
                t1_ns: t1,
                threads,
                gpu,
                phases: phases.clone(),
                marks: self.marks,
                power,
                notes: tl_notes,
                ..Default::default()
            },
            gaps,
            phases: PhaseBars { title: format!("Time and energy per phase — {file}"), notes: phase_notes, bars },
        }
    }

    /// One track per (pid, tid) with its calls; incomplete calls end at `t1`.
    fn thread_tracks(&mut self, t1: u64) -> Vec<Track> {
        for sl in self.threads.values_mut() {
            for x in sl.iter_mut() {
                if x.end_ns == u64::MAX {
                    x.end_ns = t1;
                }
            }
        }
        let multi_pid = self.threads.keys().map(|k| k.0).collect::<std::collections::BTreeSet<_>>().len() > 1;
        std::mem::take(&mut self.threads)
            .into_iter()
            .map(|((pid, tid), slices)| {
                let who = match (multi_pid, pid == tid) {
                    (false, true) => format!("tid {tid} (main)"),
                    (false, false) => format!("tid {tid}"),
                    (true, true) => format!("pid {pid} main"),
                    (true, false) => format!("pid {pid} tid {tid}"),
                };
                Track { label: format!("{who} · {}", plural(slices.len() as u64, "call")), slices }
            })
            .collect()
    }

    /// One track per (device, stream) with its intervals in start order.
    fn gpu_tracks(&mut self) -> Vec<Track> {
        std::mem::take(&mut self.gpu)
            .into_iter()
            .map(|((dev, stream), mut slices)| {
                slices.sort_unstable_by_key(|x| x.start_ns);
                Track { label: format!("GPU {dev} · {stream}"), slices }
            })
            .collect()
    }

    /// The power series to draw: measured, else from the energy counter.
    fn power_series(&self, series: &[EnergySeries]) -> Vec<PowerSeries> {
        let mut power = Vec::new();
        for s in series {
            let model = self.gpu_models.get(s.gpu as usize).map(|m| format!(" ({m})")).unwrap_or_default();
            if !s.power.is_empty() {
                power.push(PowerSeries { label: format!("GPU {}{model}", s.gpu), samples: s.power.clone() });
            } else {
                // No power readings: the energy counter's rate, at the middle of each interval.
                let derived = power_from_energy(&s.points);
                if !derived.is_empty() {
                    power.push(PowerSeries { label: format!("GPU {}{model}, from energy", s.gpu), samples: derived });
                }
            }
        }
        power
    }

    /// The timeline's notes: what it holds, and how phases were found.
    fn timeline_notes(
        &self,
        threads: &[Track],
        n_gpu_intervals: usize,
        gpu: &[Track],
        n_samples: usize,
        derived: bool,
    ) -> Vec<String> {
        let instants = match self.instants {
            0 => String::new(),
            n => format!(" ({} without a return probe, drawn as ticks)", thousands(n)),
        };
        let mut tl_notes = vec![format!(
            "{}{instants} on {}; {} on {}; {}; {}",
            plural(self.calls, "CUDA call"),
            plural(threads.len() as u64, "thread"),
            plural(n_gpu_intervals as u64, "GPU interval"),
            plural(gpu.len() as u64, "stream"),
            plural(n_samples as u64, "power sample"),
            plural(self.phase_markers + self.marks.len() as u64, "marker"),
        )];
        if derived {
            tl_notes.push(
                "No phase markers: phases detected from the data as tracer report does (startup | first allocation \
                 or launch: loading | first launch: warmup | last module load: steady)."
                    .to_string(),
            );
        }
        tl_notes
    }

    /// The GPU idle gaps (no stream of a GPU busy), all GPUs' together.
    fn gpu_gaps(&self, gpu: &[Track], file: &str) -> Gaps {
        let mut by_dev: BTreeMap<String, Vec<(u64, u64)>> = BTreeMap::new();
        for t in gpu {
            let dev = t.label.split(" · ").next().unwrap_or("").to_string();
            by_dev.entry(dev).or_default().extend(t.slices.iter().map(|x| (x.start_ns, x.end_ns)));
        }
        let mut all = Vec::new();
        for iv in by_dev.values_mut() {
            all.extend(idle_gaps(iv));
        }
        let how = if self.gpu_bound {
            "bounded by synchronization: no measured GPU times in this trace (record with --gpu-timestamps), so a \
             stream counts as busy from a submission until a call proves it complete (a synchronization, a \
             successful query, a device-to-host copy), or to the end of the trace when none does, and these \
             gaps are certain idle time, a lower bound"
        } else if let Some(n) = self.gpu_sampled {
            &format!(
                "sampled: measured in {} of --gpu-sample, inferred elsewhere from durations calibrated in them",
                plural(n as u64, "window")
            )
        } else if gpu.iter().all(|t| t.slices.iter().all(|x| x.kind == Kind::GpuMeasured)) {
            "measured"
        } else {
            "measured and inferred"
        };
        Gaps {
            title: if self.gpu_bound {
                format!("GPU idle gaps, a lower bound (certain gaps only; idle share unknown) — {file}")
            } else {
                format!("GPU idle gaps — {file}")
            },
            notes: vec![format!(
                "Periods in which no stream of the GPU was busy, between its first and last interval ({how}){}.",
                if by_dev.len() > 1 { format!("; the gaps of {} GPUs together", by_dev.len()) } else { String::new() }
            )],
            gaps_ns: all,
            compare: None,
        }
    }

    /// The phases of `tracer report` (analysis::phases: the main process's
    /// markers, else the phases detected from its data), set by [`load`];
    /// the whole trace as one phase when none were set. The bool says
    /// "detected, not marked".
    fn phases(&self, t0: u64, t1: u64) -> (Vec<Phase>, bool) {
        match &self.analysis_phases {
            Some((p, detected)) if !p.is_empty() => (p.clone(), *detected),
            _ => (vec![Phase { label: "whole trace".into(), start_ns: t0, end_ns: t1 }], true),
        }
    }

    /// Takes the phases of `tracer report` from the analysis model.
    pub fn set_phases(&mut self, ph: &crate::analysis::phases::Phases) {
        use crate::analysis::phases::PhaseSource;
        let main = ph.main();
        let detected = main.iter().any(|p| p.source == PhaseSource::Detected);
        let out = main.iter().map(|p| Phase { label: p.name.clone(), start_ns: p.start, end_ns: p.end }).collect();
        self.analysis_phases = Some((out, detected));
    }
}

/// Time and energy of each phase, by the rule of `tracer report`
/// ([`energy::energy_all_gpus`]: counter, else integrated power; all GPUs summed).
fn phase_bars(phases: &[Phase], series: &[EnergySeries]) -> Vec<PhaseBar> {
    phases
        .iter()
        .map(|p| {
            let e = energy::energy_all_gpus(series, p.start_ns, p.end_ns);
            PhaseBar {
                label: p.label.clone(),
                seconds: (p.end_ns - p.start_ns) as f64 / 1e9,
                joules: e.as_ref().map(|e| e.joules),
                uncertain: e.as_ref().is_some_and(|e| e.uncertain),
            }
        })
        .collect()
}

/// The phase chart's notes: derived phases, and where the energy comes from.
fn phase_notes(derived: bool, no_energy: bool) -> Vec<String> {
    let mut phase_notes = vec![];
    if derived {
        phase_notes
            .push("No phase markers in this trace: phases detected from the data, as tracer report does.".to_string());
    }
    phase_notes.push(if no_energy {
        "No energy panel: energy needs NVML power samples in the trace (recorded without --no-power, on a GPU \
         NVML can read)."
            .to_string()
    } else {
        "Energy: each GPU's NVML energy counter (GPUs summed), interpolated at the phase edges, power integrated \
         where the counter is missing, as tracer report; ±: a short or partly sampled phase, uncertain."
            .to_string()
    });
    phase_notes
}

/// Without GPU intervals: the gaps in which no traced thread was inside a driver call.
fn cpu_gaps(threads: &[Track], file: &str) -> Gaps {
    let mut iv: Vec<(u64, u64)> =
        threads.iter().flat_map(|t| t.slices.iter().map(|x| (x.start_ns, x.end_ns))).collect();
    Gaps {
        title: format!("Gaps between CUDA driver calls (CPU side) — {file}"),
        notes: vec![
            "No GPU intervals in this trace (record with --gpu-timestamps): these are the periods in which no \
             traced thread was inside a CUDA driver call, not GPU idle time."
                .to_string(),
        ],
        gaps_ns: idle_gaps(&mut iv),
        compare: None,
    }
}

/// Power (W) from a cumulative energy counter (mJ): the rate over each pair
/// of samples whose counter changed, placed at the pair's midpoint. Pairs
/// where the counter did not advance are merged into the next one (the
/// counter updates less often than it is sampled on some GPUs).
pub fn power_from_energy(e: &[(u64, f64)]) -> Vec<(u64, f64)> {
    let mut out = Vec::new();
    let Some(&(mut ta, mut ea)) = e.first() else { return out };
    for &(tb, eb) in &e[1..] {
        if eb != ea && tb > ta {
            out.push((ta + (tb - ta) / 2, (eb - ea) / ((tb - ta) as f64 / 1e9) / 1000.0));
            (ta, ea) = (tb, eb);
        }
    }
    out
}

/// Reads a trace file into the analysis model.
pub type LoadTrace = fn(&Path) -> anyhow::Result<crate::analysis::model::Trace>;

/// Reads a trace file into the figures' inputs; `load_trace` reads it into
/// the analysis model when the bound timeline is needed (the caller's
/// loader, with its progress: `crate::cli::load::load`).
pub fn load(path: &Path, load_trace: LoadTrace) -> anyhow::Result<PlotData> {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let mut b = Builder::new(&name);
    let progress = super::ReadProgress::new(path.display().to_string());
    let mut n = 0u64;
    // The rule's warnings are printed once, by `load_trace` below.
    let input = tracer_format::read::Input::resolve(path)?;
    tracer_format::read::read_checked(&input, Default::default(), |line, bytes, _| {
        let v: Value = serde_json::from_slice(bytes)
            .map_err(|e| anyhow::anyhow!("{}: line {line}: not valid JSON ({e})", input.name))?;
        b.add(&v);
        n += 1;
        progress.line(n);
        Ok(())
    })?;
    progress.done(n);
    // The analysis model: the phases of `tracer report`, and without
    // measured GPU activity the timeline the analysis bounds by
    // synchronization (docs/analysis.md), labelled as such.
    let t = load_trace(path)?;
    b.set_phases(&crate::analysis::phases::phases(&t));
    let sampled = match t.gpu_windows.is_empty() {
        true => None,
        false => {
            Some(crate::analysis::sampled::sampled(&t)).filter(|tl| tl.streams.iter().any(|s| !s.intervals.is_empty()))
        }
    };
    let measured = (sampled.is_none() && !t.gpu.is_empty()).then(|| crate::analysis::timeline::measured(&t));
    if let Some(tl) = measured {
        // the measured rows again, from the model, with the streams named
        b.set_measured(&tl, &crate::analysis::stream_names::names(&t, &tl));
    } else if let Some(tl) = sampled {
        // --gpu-sample: the `gpu` lines cover the windows only; the rows are
        // the analysis's sampled timeline (measured in the windows, inferred
        // from durations calibrated in them elsewhere), as `tracer gaps` has.
        // (A trace whose launches were not traced keeps its `gpu` lines.)
        b.set_sampled(&tl, &t.gpu_windows);
    } else if b.gpu.is_empty() {
        let tl = crate::analysis::timeline::bound(&t);
        b.add_bound(&tl, &crate::analysis::stream_names::names(&t, &tl));
    }
    Ok(b.finish())
}

impl Builder {
    /// GPU rows from the sampled timeline of a `--gpu-sample` recording,
    /// instead of its `gpu` lines: an interval that starts inside a measured
    /// window of its process's windows is drawn as measured, the others as
    /// inferred.
    pub fn set_sampled(
        &mut self,
        tl: &crate::analysis::timeline::Timeline,
        windows: &[crate::analysis::model::GpuWindow],
    ) {
        self.gpu.clear();
        let measured = |start: u64| windows.iter().any(|w| w.start <= start && start < w.end);
        for st in &tl.streams {
            let slices: Vec<Slice> = st
                .intervals
                .iter()
                .filter(|i| i.end > i.start)
                .map(|i| Slice {
                    start_ns: i.start,
                    end_ns: i.end,
                    kind: if measured(i.start) { Kind::GpuMeasured } else { Kind::GpuInferred },
                })
                .collect();
            if !slices.is_empty() {
                self.gpu.entry((st.device as u64, format!("{} (sampled)", st.label))).or_default().extend(slices);
            }
        }
        self.gpu_sampled = Some(windows.len());
    }

    /// GPU rows from the measured timeline, each stream under its name
    /// (analysis/stream_names.rs) instead of its id.
    pub fn set_measured(
        &mut self,
        tl: &crate::analysis::timeline::Timeline,
        names: &std::collections::HashMap<crate::analysis::timeline::StreamKey, String>,
    ) {
        self.gpu.clear();
        let multi_pid = tl.pids().len() > 1;
        for st in &tl.streams {
            let slices: Vec<Slice> = st
                .intervals
                .iter()
                .filter(|i| i.end > i.start)
                .map(|i| Slice { start_ns: i.start, end_ns: i.end, kind: Kind::GpuMeasured })
                .collect();
            if !slices.is_empty() {
                self.gpu.entry((st.device as u64, stream_name(st, names, multi_pid))).or_default().extend(slices);
            }
        }
    }

    /// GPU rows from the synchronization-bound timeline: a stream counts as
    /// possibly busy from a submission until the synchronization covering it
    /// returns, so the gaps between rows' intervals are certain idle time.
    pub fn add_bound(
        &mut self,
        tl: &crate::analysis::timeline::Timeline,
        names: &std::collections::HashMap<crate::analysis::timeline::StreamKey, String>,
    ) {
        let multi_pid = tl.pids().len() > 1;
        for st in &tl.streams {
            let slices: Vec<Slice> = st
                .intervals
                .iter()
                .filter(|i| i.end > i.start)
                .map(|i| Slice { start_ns: i.start, end_ns: i.end, kind: Kind::GpuBound })
                .collect();
            if slices.is_empty() {
                continue;
            }
            self.gpu_bound = true;
            let name = stream_name(st, names, multi_pid);
            self.gpu.entry((st.device as u64, format!("{name} (bound)"))).or_default().extend(slices);
        }
    }
}

/// A stream's row name: its name (the handle's label without one), with
/// its process when several have streams.
fn stream_name(
    st: &crate::analysis::timeline::StreamTimeline,
    names: &std::collections::HashMap<crate::analysis::timeline::StreamKey, String>,
    multi_pid: bool,
) -> String {
    let name = names.get(&st.key).cloned().unwrap_or_else(|| st.label.clone());
    if multi_pid { format!("pid {} · {name}", st.key.pid) } else { name }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn build(lines: &[Value]) -> PlotData {
        let mut b = Builder::new("t.jsonl");
        for l in lines {
            b.add(l);
        }
        let text: Vec<String> = lines.iter().map(Value::to_string).collect();
        let t = crate::analysis::model::parse_str("t.jsonl", &text.join("\n")).unwrap();
        b.set_phases(&crate::analysis::phases::phases(&t));
        b.finish()
    }

    #[test]
    fn calls_markers_power_and_gpu_lines() {
        let lines = vec![
            json!({"type":"header","command":["python3","x.py"],"gpus":[{"bus":"0","model":"H100"}]}),
            json!({"ts":1_000,"pid":10,"tid":10,"type":"process","op":"exec","name":"process"}),
            json!({"ts":2_000,"pid":10,"tid":10,"type":"marker","op":"phase","name":"marker","label":"load"}),
            json!({"ts":3_000,"pid":10,"tid":10,"type":"kernel","op":"launch","name":"cuLaunchKernel","duration_us":1.5}),
            json!({"ts":5_000,"pid":10,"tid":11,"type":"sync","op":"stream_synchronize","name":"cuStreamSynchronize","duration_us":2.0}),
            json!({"ts":6_000,"pid":10,"tid":10,"type":"marker","op":"phase","name":"marker","label":"run"}),
            json!({"ts":6_500,"pid":10,"tid":10,"type":"marker","op":"iteration","name":"marker","label":"0"}),
            json!({"ts":7_000,"pid":10,"tid":10,"type":"memory","op":"alloc","name":"cuMemAlloc_v2","incomplete":true}),
            json!({"ts":3_500,"end_ts":4_500,"duration_us":1.0,"pid":10,"tid":0,"type":"gpu","op":"kernel","name":"k","source":"cupti","device":0,"stream_id":7}),
            json!({"ts":5_500,"end_ts":6_000,"pid":10,"tid":0,"type":"gpu","op":"kernel","name":"k","source":"cupti","device":0,"stream_id":7}),
            json!({"ts":4_000,"end_ts":4_200,"pid":10,"tid":0,"type":"gpu","op":"memcpy","name":"memcpy_htod","source":"cupti","device":0,"stream_id":8}),
            json!({"ts":2_000,"pid":0,"tid":0,"type":"power","op":"sample","name":"nvml","gpu":0,"energy_mj":1000,"power_mw":100000}),
            json!({"ts":8_000,"pid":0,"tid":0,"type":"power","op":"sample","name":"nvml","gpu":0,"energy_mj":1600,"power_mw":null}),
            json!({"ts":10_000,"pid":10,"tid":10,"type":"marker","op":"phase","name":"marker","label":"end"}),
            json!({"type":"footer"}),
        ];
        let d = build(&lines);
        let tl = &d.timeline;
        // the view starts just before the first GPU work (3.5 µs; 2 % of the rest earlier)
        assert_eq!((tl.origin_ns, tl.t0_ns, tl.t1_ns), (1_000, 3_370, 10_000));
        assert!(
            tl.notes.iter().any(|n| n.starts_with("Start-up not drawn: the first 0.0 s of the trace")),
            "{:?}",
            tl.notes
        );
        assert_eq!(tl.title, "Timeline — t.jsonl: python3 x.py");
        let labels: Vec<_> = tl.threads.iter().map(|t| t.label.as_str()).collect();
        assert_eq!(labels, vec!["tid 10 (main) · 2 calls", "tid 11 · 1 call"]);
        assert_eq!(
            tl.threads[0].slices,
            vec![
                Slice { start_ns: 3_000, end_ns: 4_500, kind: Kind::Launch },
                Slice { start_ns: 7_000, end_ns: 10_000, kind: Kind::Memory }
            ]
        );
        assert_eq!(tl.threads[1].slices, vec![Slice { start_ns: 5_000, end_ns: 7_000, kind: Kind::Sync }]);
        let g: Vec<_> = tl.gpu.iter().map(|t| (t.label.as_str(), t.slices.len())).collect();
        assert_eq!(g, vec![("GPU 0 · stream 7", 2), ("GPU 0 · stream 8", 1)]);
        let p: Vec<_> = tl.phases.iter().map(|p| (p.label.as_str(), p.start_ns, p.end_ns)).collect();
        assert_eq!(p, vec![("load", 2_000, 6_000), ("run", 6_000, 10_000)]);
        assert_eq!(tl.marks, vec![Mark { ts_ns: 6_500, label: "0".into(), iteration: true }]);
        assert_eq!(tl.power, vec![PowerSeries { label: "GPU 0 (H100)".into(), samples: vec![(2_000, 100.0)] }]);
        // Gaps of the union of GPU 0's streams: [3500,4500) [5500,6000) -> one gap of 1000 ns.
        assert_eq!(d.gaps.gaps_ns, vec![1_000]);
        assert!(d.gaps.title.starts_with("GPU idle gaps"));
        // Energy (the rule of tracer report): counter 1000 mJ at 2 µs, 1600 mJ at 8 µs: load (2..6 µs)
        // 0.4 J; run (6..10 µs) only covered up to 8 µs: 0.2 J, uncertain.
        let bars: Vec<_> = d.phases.bars.iter().map(|b| (b.label.as_str(), b.seconds, b.joules, b.uncertain)).collect();
        assert_eq!(bars.len(), 2);
        assert_eq!((bars[0].0, bars[0].1, bars[0].3), ("load", 4e-6, true));
        assert!((bars[0].2.unwrap() - 0.4).abs() < 1e-12, "{:?}", bars[0]);
        assert_eq!((bars[1].0, bars[1].1, bars[1].3), ("run", 4e-6, true));
        assert!((bars[1].2.unwrap() - 0.2).abs() < 1e-12, "{:?}", bars[1]);
    }

    #[test]
    fn derived_phases_and_cpu_gaps_without_markers() {
        let lines = vec![
            json!({"ts":0,"pid":1,"tid":1,"type":"process","op":"exec","name":"process"}),
            json!({"ts":100,"pid":1,"tid":1,"type":"init","op":"init","name":"cuInit","duration_us":0.1}),
            json!({"ts":300,"pid":1,"tid":1,"type":"kernel","op":"launch","name":"cuLaunchKernel","duration_us":0.05}),
            json!({"ts":400,"pid":1,"tid":1,"type":"kernel","op":"launch","name":"cuLaunchKernel","duration_us":0.05}),
            json!({"ts":600,"pid":1,"tid":1,"type":"memory","op":"free","name":"cuMemFree_v2","duration_us":0.1}),
            json!({"ts":800,"pid":1,"tid":1,"type":"process","op":"exit","name":"process"}),
            json!({"ts":900,"pid":1,"tid":1,"type":"memory","op":"free","name":"cuMemFree_v2","entry_lost":true}),
        ];
        let d = build(&lines);
        let p: Vec<_> = d.timeline.phases.iter().map(|p| (p.label.as_str(), p.start_ns, p.end_ns)).collect();
        // The phases tracer report detects (analysis::phases): no allocation
        // and no module load, so startup until the first launch, then steady.
        assert_eq!(p, vec![("startup", 0, 300), ("steady", 300, 900)]);
        assert!(d.gaps.title.starts_with("Gaps between CUDA driver calls"));
        // Calls [100,200) [300,350) [400,450) [600,700): gaps 100, 50, 150.
        assert_eq!(d.gaps.gaps_ns, vec![100, 50, 150]);
        assert!(d.phases.bars.iter().all(|b| b.joules.is_none()));
    }

    /// A `--gpu-sample` recording: the GPU rows are the sampled timeline
    /// (the two launches in the window measured, the two after it inferred
    /// from the window's 10 µs for kA), not the window's `gpu` lines alone.
    #[test]
    fn sampled_rows_measured_in_windows_inferred_elsewhere() {
        use crate::analysis::sampled::tests::{gpu, window};
        use crate::analysis::timeline::tests::{launch, sync};
        let lines = [
            launch(0, 1.0, "kA", "0x0"),
            launch(100_000, 1.0, "kA", "0x0"),
            launch(500_000, 1.0, "kA", "0x0"),
            launch(600_000, 1.0, "kA", "0x0"),
            sync(1_000_000, 10.0, "0x0"),
            window(0, 300_000),
            gpu(1_000, 11_000, "kA"),
            gpu(101_000, 111_000, "kA"),
        ];
        let text = lines.join("\n");
        let t = crate::analysis::model::parse_str("s.jsonl", &text).unwrap();
        let mut b = Builder::new("s.jsonl");
        for l in &lines {
            b.add(&serde_json::from_str::<Value>(l).unwrap());
        }
        b.set_sampled(&crate::analysis::sampled::sampled(&t), &t.gpu_windows);
        let d = b.finish();
        let rows: Vec<_> = d.timeline.gpu.iter().map(|r| (r.label.as_str(), r.slices.clone())).collect();
        let sl = |s, e, kind| Slice { start_ns: s, end_ns: e, kind };
        assert_eq!(
            rows,
            vec![(
                "GPU 0 · stream 0x0 (legacy default) (sampled)",
                vec![
                    sl(1_000, 11_000, Kind::GpuMeasured),
                    sl(101_000, 111_000, Kind::GpuMeasured),
                    sl(501_000, 511_000, Kind::GpuInferred),
                    sl(601_000, 611_000, Kind::GpuInferred)
                ]
            )]
        );
        assert_eq!(d.gaps.gaps_ns, vec![90_000, 390_000, 90_000]);
        assert!(d.gaps.notes[0].contains("sampled: measured in 1 window of --gpu-sample"), "{:?}", d.gaps.notes);
    }

    #[test]
    fn power_derived_from_energy_counter() {
        // 1 J over 10 ms = 100 W; a repeated reading is merged with the next.
        let e = [(0, 5000.0), (10_000_000, 6000.0), (20_000_000, 6000.0), (30_000_000, 10000.0)];
        assert_eq!(power_from_energy(&e), vec![(5_000_000, 100.0), (20_000_000, 200.0)]);
        assert_eq!(power_from_energy(&[]), vec![]);
        let d = build(&[
            json!({"ts":0,"pid":0,"tid":0,"type":"power","op":"sample","name":"nvml","gpu":1,"energy_mj":0,"power_mw":null}),
            json!({"ts":1_000_000_000u64,"pid":0,"tid":0,"type":"power","op":"sample","name":"nvml","gpu":1,"energy_mj":70000,"power_mw":null}),
        ]);
        assert_eq!(
            d.timeline.power,
            vec![PowerSeries { label: "GPU 1, from energy".into(), samples: vec![(500_000_000, 70.0)] }]
        );
    }
}

#[cfg(test)]
mod committed_traces {
    use super::*;

    fn trace(name: &str) -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../traces").join(name)
    }

    /// Stable figures of the committed GPT-2 recording (no markers, power or GPU lines).
    #[test]
    fn transformer_inference() {
        let d = load(&trace("transformer_inference.jsonl.gz"), crate::cli::load::load).unwrap();
        let tl = &d.timeline;
        // 17.7 s of start-up before the first GPU work are not drawn
        assert_eq!((tl.origin_ns, tl.t0_ns, tl.t1_ns), (32_839_643_988, 50_562_794_647, 56_565_059_521));
        let labels: Vec<_> = tl.threads.iter().map(|t| t.label.as_str()).collect();
        assert_eq!(labels, vec!["tid 445 (main) · 29,290 calls"]);
        assert!(tl.power.is_empty() && tl.marks.is_empty());
        // No GPU lines: the rows of the analysis's synchronization-bound timeline; the two
        // memsets on cuBLAS's stream, never proven complete, are one stretch to the trace's end.
        let gpu: Vec<_> = tl.gpu.iter().map(|t| (t.label.as_str(), t.slices.len())).collect();
        assert_eq!(gpu, vec![("GPU 0 · legacy default (bound)", 328), ("GPU 0 · stream 1 (bound)", 1)]);
        // Calls per colour: launches, synchronize, memcpy/memset, alloc/free, other.
        let kinds: Vec<_> =
            Kind::ALL.iter().map(|k| tl.threads[0].slices.iter().filter(|s| s.kind == *k).count()).collect();
        assert_eq!(kinds, vec![22_758, 328, 1_114, 24, 5_066, 0, 0, 0, 0, 0]);
        // drawn as possibly-busy stretches, never as busy time
        assert!(tl.gpu.iter().all(|t| t.slices.iter().all(|s| s.kind == Kind::GpuBound)));
        let p: Vec<_> = tl.phases.iter().map(|p| (p.label.as_str(), p.start_ns, p.end_ns)).collect();
        // The phases of `tracer report` on this trace (17.841 s, 58.19 ms, 3.895 s, 1.932 s).
        assert_eq!(
            p,
            vec![
                ("startup", 32_839_643_988, 50_680_235_783),
                ("loading", 50_680_235_783, 50_738_423_805),
                ("warmup", 50_738_423_805, 54_633_281_187),
                ("steady", 54_633_281_187, 56_565_059_521)
            ]
        );
        // Without GPU lines: the gaps between driver calls (one thread, calls never overlap).
        // Its gaps: the same figures as `tracer gaps` (154 certain gaps, 47.35 ms, longest 12.54 ms:
        // none after the memsets on cuBLAS's stream in warm-up, never proven complete).
        assert!(d.gaps.title.starts_with("GPU idle gaps"), "{}", d.gaps.title);
        assert!(d.gaps.notes[0].contains("bounded by synchronization"), "{:?}", d.gaps.notes);
        let g = &d.gaps.gaps_ns;
        assert_eq!((g.len(), g.iter().sum::<u64>(), g.iter().max().copied()), (154, 47_352_689, Some(12_542_755)));
        assert!(d.phases.bars.iter().all(|b| b.joules.is_none()));
    }
}
