//! Co-location replay (`replay A.rec B.rec … --together`, docs/colocation.md):
//! pure planning of a together run. Each recording is a tenant replayed in its
//! own process and CUDA context on one GPU, at its recorded pacing; alone runs
//! and together runs are interleaved for several rounds.
//!
//! - this module: the tenants (op counts, memory, pacing), the refusals that
//!   need only the manifests (driver versions, memory), the order of the runs;
//! - [`pacing`]: the recorded host gaps a paced pass keeps (the recorder's stops left out);
//! - [`phase`]: the part of each recording that is measured (its `generate` phase by default);
//! - [`predict`]: each tenant's slowdown predicted from the recordings alone,
//!   by [`simulate`]: the tenants on a simulated time-sliced GPU;
//! - [`measure`]: slowdowns, spreads and the GPU's combined busy time from
//!   the runs' figures;
//! - [`activities`]: the runs' GPU activity in the trace's form (`--activities`).

pub mod activities;
pub mod measure;
pub mod pacing;
pub mod phase;
pub mod predict;
pub mod simulate;

use std::fmt::Write as _;

use anyhow::{Result, bail};
use serde::Serialize;

use crate::plan::{Plan, memory};
use crate::recording::Recording;

/// Device memory a CUDA context of a tenant takes besides its windows and
/// images (the context's own allocations, its local memory and the
/// runtime's reserve): counted for every tenant in the memory check.
pub const CONTEXT_RESERVE_BYTES: u64 = 512 << 20;

/// What one tenant needs and does, from its recording and plan.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Tenant {
    pub recording: String,
    /// The measured phase (the ops before it run before each pass's start barrier).
    pub phase: phase::Phase,
    /// All ops of the recording.
    pub ops: usize,
    /// The measured phase's ops.
    pub phase_ops: usize,
    pub work_ops: usize,
    pub launches: usize,
    /// Device windows replay maps (2 MiB granularity), bytes.
    pub window_bytes: u64,
    /// Code images loaded as modules, bytes.
    pub image_bytes: u64,
    /// window_bytes + image_bytes + [`CONTEXT_RESERVE_BYTES`].
    pub memory_bytes: u64,
    /// First to last op of the phase, recorded submissions, ns: one paced pass lasts at least this.
    pub paced_span_ns: u64,
    /// Paced ops that wait from the previous call's return (after a return-probed call) rather than its start.
    pub gaps_after_return: usize,
    /// Time the phase's submitting threads were stopped between its ops (the recorder's
    /// `--capture-data` stops, a debugger), left out of the pacing, ns.
    pub stopped_ns: u64,
    /// `--host-scale`: the factor on every recorded host gap (1: as recorded).
    pub host_scale: f64,
    /// The pacing of the phase's gaps: compensated or recorded, what was removed, host speed.
    pub pacing: tracer_format::pacing::PacingReport,
    /// `--host-alone-ms`: the alone time the factor was found for, ns.
    pub host_alone_ns: Option<u64>,
    /// The recording's driver version (manifest `driver`).
    pub driver: Option<String>,
    /// The recording's GPU model (manifest `gpus[0].model`).
    pub gpu_model: Option<String>,
    /// The recording's measured GPU busy intervals in the phase (gpu lines, `--gpu-timestamps`), ns; empty without them.
    #[serde(skip)]
    pub busy: Vec<(u64, u64)>,
    pub recorded_busy_ns: Option<u64>,
    pub recorded_gpu_span_ns: Option<u64>,
    /// The phase's ops as the prediction simulates them (recorded GPU durations, host gaps).
    #[serde(skip)]
    pub sim_ops: Vec<simulate::SimOp>,
}

impl Tenant {
    /// The tenant of `rec` (planned as `p`), measured over its phase `phase_name`, its host
    /// gaps paced by `pacer` (compensated or recorded, divided by its host speed), then
    /// `host_scale` times as long.
    pub fn new(rec: &Recording, p: &Plan, phase_name: &str, pacer: &pacing::Pacer, host_scale: f64) -> Tenant {
        let gpus = rec.manifest.gpus.as_ref();
        let model = gpus.and_then(|g| g.get(0)).and_then(|g| g.get("model")).and_then(|m| m.as_str());
        let window_bytes = memory::windows(&p.ranges, 2 << 20).iter().map(|w| w.1).sum();
        let image_bytes: u64 = rec.manifest.images.iter().map(|i| i.bytes).sum();
        let ph = phase::phase(&p.ops, &rec.trace.markers, phase_name);
        let ops = &p.ops[ph.ops.clone()];
        let (g, pacing_report) = pacer.gaps(&rec.trace, ops);
        let (mut gaps, stopped_ns) = (g.gaps, g.stopped_ns);
        pacing::scale(&mut gaps, host_scale);
        let mut busy: Vec<(u64, u64)> = crate::gpu_time::recorded::plan_gpu_lines(&rec.trace, p)
            .iter()
            .filter(|g| ph.contains(g.ts))
            .map(|g| (g.ts, g.end_ts))
            .collect();
        let busy = crate::gpu_time::merge(&mut busy, 0);
        let measured = !busy.is_empty();
        let durations = crate::gpu_time::recorded::op_durations(&rec.trace.gpu, &p.ops, &p.graph_ops);
        let sim_ops = predict::sim_ops(ops, &durations[ph.ops.clone()], &gaps);
        Tenant {
            recording: rec.dir.display().to_string(),
            ops: p.ops.len(),
            phase_ops: ops.len(),
            work_ops: ops.iter().filter(|o| o.is_work()).count(),
            launches: ops.iter().filter(|o| o.launch().is_some()).count(),
            window_bytes,
            image_bytes,
            memory_bytes: window_bytes + image_bytes + CONTEXT_RESERVE_BYTES,
            paced_span_ns: ops.last().map_or(0, |l| l.ts.saturating_sub(ops[0].ts)),
            gaps_after_return: gaps.iter().skip(1).filter(|g| g.after_return).count(),
            stopped_ns,
            host_scale,
            pacing: pacing_report,
            host_alone_ns: None,
            phase: ph,
            driver: rec.manifest.driver.clone(),
            gpu_model: model.map(str::to_owned),
            recorded_busy_ns: measured.then(|| busy.iter().map(|b| b.1 - b.0).sum()),
            recorded_gpu_span_ns: measured.then(|| busy.last().unwrap().1 - busy[0].0),
            busy,
            sim_ops,
        }
    }
}

/// One run of a round: a tenant alone, or every tenant together.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Run {
    /// Tenant index (0-based), the others idle in their contexts.
    Alone(usize),
    Together,
}

impl std::fmt::Display for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Run::Alone(i) => write!(f, "alone {}", i + 1),
            Run::Together => f.write_str("together"),
        }
    }
}

/// The runs of `rounds` rounds for `n` tenants: even rounds run each tenant
/// alone in order, then all together; odd rounds the mirror image (together
/// first, the tenants alone in reverse order), so that a drift of the GPU
/// (clocks, temperature) over the rounds weighs on alone and together alike.
pub fn rounds(n: usize, rounds: usize) -> Vec<Vec<Run>> {
    (0..rounds)
        .map(|r| {
            let mut v: Vec<Run> = (0..n).map(Run::Alone).collect();
            v.push(Run::Together);
            if r % 2 == 1 {
                v.reverse();
            }
            v
        })
        .collect()
}

/// The GPU memory the tenants must fit in, and where the figure comes from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Capacity {
    pub bytes: u64,
    pub source: String,
}

/// The memory a GPU model's name announces ("NVIDIA H100 80GB HBM3": 80 GB,
/// read as 80·10⁹ bytes, below what such a card has: the check errs on the
/// side of refusing).
pub fn capacity_from_model(model: &str) -> Option<Capacity> {
    let gb = model.split(|c: char| c.is_whitespace() || c == '-').find_map(|w| {
        let n = w.strip_suffix("GB")?;
        n.parse::<u64>().ok()
    })?;
    Some(Capacity { bytes: gb * 1_000_000_000, source: format!("{gb} GB from the model name {model:?}") })
}

/// The plan of a together run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TogetherPlan {
    pub tenants: Vec<Tenant>,
    pub memory_bytes: u64,
    pub capacity: Option<Capacity>,
    pub rounds: Vec<Vec<Run>>,
    pub prediction: Vec<predict::Prediction>,
    /// The together run's simulated GPU (None: not predicted).
    pub predicted_gpu: Option<predict::PredictedGpu>,
    pub model: predict::Model,
}

/// The memory of the GPU the recordings were made on, as its model name announces it (the
/// first recording's that gives one): `replay plan --together`'s default.
pub fn recorded_capacity(tenants: &[Tenant]) -> Option<Capacity> {
    tenants.iter().find_map(|t| t.gpu_model.as_deref()).and_then(capacity_from_model)
}

impl Tenant {
    /// Scales this tenant's host gaps so that its simulated alone run takes `target_ns`
    /// (`--host-alone-ms`: the host speed at which the program takes that long alone; its GPU
    /// work keeps its recorded durations). The factor, found by bisection and rounded to four
    /// decimals, becomes [`Tenant::host_scale`]; the tenant must have been built with 1.
    pub fn pace_to_alone(&mut self, target_ns: u64, model: &predict::Model) -> Result<()> {
        if self.busy.is_empty() {
            bail!(
                "--host-alone-ms: {}: no GPU timeline in the recording (record it with --gpu-timestamps): its alone time cannot be simulated",
                self.recording
            );
        }
        let base = self.sim_ops.clone();
        let scaled = |f: f64| -> Vec<simulate::SimOp> {
            let mut v = base.clone();
            for o in &mut v {
                o.gap.ns = (o.gap.ns as f64 * f).round() as u64;
            }
            v
        };
        let alone = |f: f64| simulate::simulate(&[&scaled(f)], model).tenants[0].wall_ns;
        let (mut lo, mut hi) = (1e-3f64, 1e3f64);
        if alone(lo) > target_ns {
            bail!(
                "--host-alone-ms: {}: no host speed gives {} alone: with its host time a thousandth of the recorded, its phase still takes {} (its GPU work)",
                self.recording,
                ms(target_ns),
                ms(alone(lo))
            );
        }
        if alone(hi) < target_ns {
            bail!(
                "--host-alone-ms: {}: {} alone would take host gaps over 1000 times the recorded ones",
                self.recording,
                ms(target_ns)
            );
        }
        // alone(f) does not decrease with f: bisect in log space.
        for _ in 0..60 {
            let mid = (lo * hi).sqrt();
            if alone(mid) < target_ns { lo = mid } else { hi = mid }
        }
        let f = ((lo * hi).sqrt() * 1e4).round() / 1e4;
        self.sim_ops = scaled(f);
        self.host_scale = f;
        self.host_alone_ns = Some(target_ns);
        Ok(())
    }
}

/// Plans the together run of `tenants` (at least two), refusing before
/// anything runs: recordings made under different driver versions, or
/// tenants whose memory together exceeds `capacity` (None: not checked).
pub fn plan(
    tenants: Vec<Tenant>,
    capacity: Option<Capacity>,
    n_rounds: usize,
    model: predict::Model,
) -> Result<TogetherPlan> {
    if tenants.len() < 2 {
        bail!("--together needs at least two recordings (got {})", tenants.len());
    }
    if n_rounds == 0 {
        bail!("--rounds must be at least 1");
    }
    check_drivers(&tenants)?;
    if let Some(t) = tenants.iter().find(|t| t.work_ops == 0) {
        bail!(
            "{}: its measured phase ({}) has no GPU work to replay together: choose another with --phase",
            t.recording,
            t.phase.label.as_deref().unwrap_or("the whole recording")
        );
    }
    let memory_bytes: u64 = tenants.iter().map(|t| t.memory_bytes).sum();
    if let Some(c) = &capacity
        && memory_bytes > c.bytes
    {
        let each: Vec<String> = tenants.iter().map(|t| format!("{} {}", t.recording, mib(t.memory_bytes))).collect();
        bail!(
            "the tenants need {} of GPU memory together ({}), more than the GPU's {} ({}): run fewer of them together",
            mib(memory_bytes),
            each.join(", "),
            mib(c.bytes),
            c.source
        );
    }
    let inputs: Vec<predict::Input> =
        tenants.iter().map(|t| predict::Input { busy: &t.busy, ops: &t.sim_ops }).collect();
    let (prediction, predicted_gpu) = predict::predict(&inputs, &model);
    Ok(TogetherPlan {
        rounds: rounds(tenants.len(), n_rounds),
        tenants,
        memory_bytes,
        capacity,
        prediction,
        predicted_gpu,
        model,
    })
}

/// Recordings from different driver versions are refused (their kernels and
/// their timings are not of the same software).
fn check_drivers(tenants: &[Tenant]) -> Result<()> {
    let first = &tenants[0];
    for t in &tenants[1..] {
        if let (Some(a), Some(b)) = (&first.driver, &t.driver)
            && a != b
        {
            bail!(
                "{}/manifest.json: driver {b}, but {}/manifest.json has driver {a}: tenants must be recorded under one driver version (record them again on this machine)",
                t.recording,
                first.recording
            );
        }
    }
    Ok(())
}

pub fn mib(b: u64) -> String {
    format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64)
}

fn ms(ns: u64) -> String {
    format!("{:.3} ms", ns as f64 / 1e6)
}

impl TogetherPlan {
    /// The plan as `replay plan A.rec B.rec --together` prints it.
    pub fn text(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "together: {} tenants on one GPU, each replayed in its own process and context, paced by its recorded host gaps",
            self.tenants.len()
        );
        for (i, t) in self.tenants.iter().enumerate() {
            let _ = writeln!(s, "tenant {}: {}", i + 1, t.recording);
            match &t.phase.label {
                Some(l) => {
                    let _ = writeln!(
                        s,
                        "  measured: phase {l:?}, ops {}..{} of {} (the {} before run once; the memory they leave is restored before each start barrier)",
                        t.phase.ops.start + 1,
                        t.phase.ops.end,
                        t.ops,
                        t.phase.ops.start
                    );
                }
                None => {
                    let _ = writeln!(s, "  measured: the whole recording (no phase marker of that name)");
                }
            }
            let _ = writeln!(s, "  ops: {} ({} GPU work, {} launches)", t.phase_ops, t.work_ops, t.launches);
            let _ = writeln!(
                s,
                "  memory: {} ({} windows + {} images + {} context reserve)",
                mib(t.memory_bytes),
                mib(t.window_bytes),
                mib(t.image_bytes),
                mib(CONTEXT_RESERVE_BYTES)
            );
            let stopped = if t.stopped_ns > 0 {
                format!(
                    "; {} the thread was stopped (the recorder's --capture-data, a debugger) left out",
                    ms(t.stopped_ns)
                )
            } else {
                String::new()
            };
            let scaled = match t.host_alone_ns {
                Some(a) => format!("; every host gap ×{} (--host-alone-ms: {} alone)", t.host_scale, ms(a)),
                None if t.host_scale != 1.0 => format!("; every host gap ×{} (--host-scale)", t.host_scale),
                None => String::new(),
            };
            let _ = writeln!(
                s,
                "  pacing: {} from first to last op, {} ops wait from the previous call's return{stopped}{scaled}",
                ms(t.paced_span_ns),
                t.gaps_after_return
            );
            for l in t.pacing.text().lines() {
                let _ = writeln!(s, "  {l}");
            }
            match (t.recorded_busy_ns, t.recorded_gpu_span_ns) {
                (Some(b), Some(sp)) => {
                    let _ = writeln!(
                        s,
                        "  recorded GPU: busy {} of a {} span ({:.1} %), {} busy intervals",
                        ms(b),
                        ms(sp),
                        100.0 * b as f64 / sp.max(1) as f64,
                        t.busy.len()
                    );
                }
                _ => {
                    let _ = writeln!(s, "  recorded GPU: not measured (record with --gpu-timestamps)");
                }
            }
            let _ = writeln!(
                s,
                "  recorded on: {}, driver {}",
                t.gpu_model.as_deref().unwrap_or("unknown GPU"),
                t.driver.as_deref().unwrap_or("unknown")
            );
        }
        let _ = writeln!(
            s,
            "memory: {} together{}",
            mib(self.memory_bytes),
            match &self.capacity {
                Some(c) => format!(" of {} ({})", mib(c.bytes), c.source),
                None => " (GPU memory unknown until run time)".into(),
            }
        );
        let _ = writeln!(s, "rounds: {} (after each tenant's checking pass and warm-up pass)", self.rounds.len());
        for (r, runs) in self.rounds.iter().enumerate() {
            let v: Vec<String> = runs.iter().map(|x| x.to_string()).collect();
            let _ = writeln!(s, "  round {}: {}", r + 1, v.join(", "));
        }
        let _ = writeln!(s, "then: together once more, every output checked bit for bit");
        s.push_str(&predict::text(&self.prediction, self.predicted_gpu.as_ref(), &self.model));
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_alternate_so_that_drift_weighs_alike() {
        assert_eq!(
            rounds(3, 2),
            vec![
                vec![Run::Alone(0), Run::Alone(1), Run::Alone(2), Run::Together],
                vec![Run::Together, Run::Alone(2), Run::Alone(1), Run::Alone(0)],
            ]
        );
    }

    #[test]
    fn capacity_from_the_model_name() {
        assert_eq!(capacity_from_model("NVIDIA H100 80GB HBM3").unwrap().bytes, 80_000_000_000);
        assert_eq!(capacity_from_model("NVIDIA H200").map(|c| c.bytes), None);
        assert_eq!(capacity_from_model("NVIDIA A100-SXM4-40GB").unwrap().bytes, 40_000_000_000);
        assert_eq!(capacity_from_model("Tesla V100-PCIE-16GB").unwrap().bytes, 16_000_000_000);
    }
}
