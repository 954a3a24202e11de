//! `replay run RECORDING`: plan, replay in each mode, measure energy, write
//! the report.

use std::collections::BTreeMap;
use std::io::Write;
use std::process::ExitCode;

use anyhow::{Context, Result};
use serde_json::{Value, json};

use crate::cli::{Mode, RunArgs};
use replay::exec::{OutputCheck, Session, SessionOpts};
use replay::plan;
use replay::recording::Recording;
use replay::report;

fn stats(v: &[f64]) -> (f64, f64) {
    let mean = if v.is_empty() { f64::NAN } else { v.iter().sum::<f64>() / v.len() as f64 };
    (mean, v.iter().copied().fold(f64::INFINITY, f64::min))
}

fn progress(msg: &str) {
    eprint!("\r\x1b[2K{msg}");
    let _ = std::io::stderr().flush();
}

pub fn run(a: &RunArgs) -> Result<ExitCode> {
    let rec = Recording::open(&a.recording)?;
    for w in &rec.trace.warnings {
        eprintln!("warning: {w}");
    }
    let p = plan::build(&rec.manifest, &rec.trace, rec.trace_name())?;
    rec.check_data(&p)?;
    eprint!("{}", p.summary());
    if p.ops.iter().all(|o| !o.is_work()) {
        anyhow::bail!("{}: nothing to replay (no replayable launch, copy or set)", rec.dir.display());
    }
    let recorded = report::recorded_time(&rec.trace, &p);
    let busy_us = recorded.busy_ns as f64 / 1e3;
    let span_us = recorded.span_ns as f64 / 1e3;

    let opts = SessionOpts {
        force_relocation: a.force_relocation,
        fill: a.fill,
        probes: a.probe.clone(),
        pinned_copies: a.pinned_copies,
    };
    let s = Session::new(&rec, &p, a.device, &opts)?;
    eprintln!(
        "setup: {} images loaded, {} windows mapped ({} at their recorded address) in {:.2} s",
        s.loaded_images(),
        s.map.windows.len(),
        s.map.windows.iter().filter(|w| w.at_recorded_address).count(),
        s.setup_s
    );
    for w in s.map.windows.iter().filter(|w| !w.at_recorded_address) {
        eprintln!("moved: {} window {:#x}+{:#x} at {:#x}", w.kind, w.recorded, w.size, w.actual);
    }
    let mut notes: Vec<String> = s.setup_notes.clone();
    // First pass: checks the outputs whose bytes the recording holds.
    let (_, _, checks) = s.pass(None, Some(&rec)).context("first (checking) pass")?;
    let mut pass_checks = vec![pass_check_row("first", 0, &checks)];
    if a.check_every_pass {
        eprintln!("{}", pass_check_line(&pass_checks[0]));
    }
    let mut modes = Vec::new();
    let mut isolated_us: BTreeMap<String, f64> = BTreeMap::new();
    let mut isolated_samples: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let mut isolated_rows = Vec::new();
    let mut in_context = false;
    for m in &a.mode {
        match m {
            Mode::Sequence | Mode::Timed => {
                let pace: Option<Vec<u64>> =
                    (*m == Mode::Timed).then(|| p.ops.iter().map(|o| o.ts - p.ops[0].ts).collect());
                let mut gpu = Vec::new();
                let mut wall = Vec::new();
                for it in 0..a.warmup + a.iterations {
                    progress(&format!("{m:?}: iteration {}/{}", it + 1, a.warmup + a.iterations));
                    s.reset_memory()?;
                    let chk = a.check_every_pass.then_some(&rec);
                    let (g, w, c) = s
                        .pass(pace.as_deref(), chk)
                        .with_context(|| format!("{m:?} pass {}", it + 1).to_lowercase())?;
                    if a.check_every_pass {
                        let row = pass_check_row(&format!("{m:?}").to_lowercase(), it + 1, &c);
                        eprintln!("\n{}", pass_check_line(&row));
                        pass_checks.push(row);
                    }
                    if it >= a.warmup {
                        gpu.push(g);
                        wall.push(w);
                    }
                }
                eprintln!();
                let (mean, min) = stats(&gpu);
                // `timed` keeps the recorded idle gaps: compared with the recorded span, not the busy time.
                let (reference, ref_us) = if *m == Mode::Timed { ("span", span_us) } else { ("busy", busy_us) };
                modes.push(json!({
                    "mode": format!("{m:?}").to_lowercase(), "gpu_ms": gpu, "wall_ms": wall,
                    "mean_us": mean * 1e3, "min_us": min * 1e3,
                    "reference": reference,
                    "error_pct": report::error_pct(mean * 1e3, ref_us),
                    "note": if *m == Mode::Timed { Some("submissions paced to the recorded offsets: includes the recorded idle gaps") } else { None },
                }));
            }
            Mode::Graph => match s.graph() {
                Ok(g) => {
                    let mut gpu = Vec::new();
                    for it in 0..a.warmup + a.iterations {
                        let t = g.launch_timed()?;
                        if it >= a.warmup {
                            gpu.push(t);
                        }
                    }
                    let (mean, min) = stats(&gpu);
                    modes.push(json!({
                        "mode": "graph", "gpu_ms": gpu, "mean_us": mean * 1e3, "min_us": min * 1e3,
                        "error_pct": report::error_pct(mean * 1e3, busy_us),
                        "note": "captured on one stream in recorded order (recorded concurrency not kept; host syncs dropped)",
                    }));
                }
                Err(e) => {
                    notes.push(format!("graph mode failed: {e:#}"));
                    modes.push(json!({"mode": "graph", "error": format!("{e:#}")}));
                }
            },
            Mode::Isolated => {
                let keys = report::distinct_keys(&p);
                let st = s.new_stream()?;
                let n = keys.len();
                // Each key's first occurrence, in recorded order, with the memsets that prepared it.
                let order = report::in_recorded_order(&keys);
                let targets: Vec<(usize, Vec<usize>)> = order.iter().map(|(_, op)| (*op, prologue(&p, *op))).collect();
                let show = |j: usize| {
                    if j.is_multiple_of(16) {
                        progress(&format!("isolated: {j}/{n} distinct kernels, copies and sets"));
                    }
                };
                // In context needs a snapshot of the windows; without the memory for one, out of context.
                let snap = if a.isolated_out_of_context {
                    None
                } else {
                    match s.snapshot() {
                        Ok(x) => Some(x),
                        Err(e) => {
                            notes.push(format!(
                                "isolated mode timed out of context (a data-dependent kernel may misbehave): no device memory for the snapshot: {e:#}"
                            ));
                            None
                        }
                    }
                };
                in_context = snap.is_some();
                let all: Vec<Vec<f64>> = if let Some(snap) = &snap {
                    s.time_in_context(snap, &targets, st, 3, a.repeats, show).context("isolated mode (in context)")?
                } else {
                    let mut v = Vec::new();
                    for (j, (op, pro)) in targets.iter().enumerate() {
                        show(j);
                        v.push(s.time_alone(*op, pro, st, 3, a.repeats)?);
                    }
                    v
                };
                for ((k, _), samples) in order.iter().zip(all) {
                    let (op, count) = &keys[k];
                    let ms = report::nearest_rank(&samples, 50.0);
                    isolated_us.insert(k.clone(), ms * 1e3);
                    isolated_samples.insert(k.clone(), samples.clone());
                    let o = &p.ops[*op];
                    let mut row = json!({"key": k, "family": report::op_family(&p, *op), "count": count, "median_us": ms * 1e3,
                        "p10_us": report::nearest_rank(&samples, 10.0) * 1e3, "p90_us": report::nearest_rank(&samples, 90.0) * 1e3,
                        "total_us": ms * 1e3 * *count as f64, "first_line": o.line});
                    if let Some(l) = o.launch() {
                        row["kernel"] = json!(l.kernel);
                        row["grid"] = json!(l.grid);
                        row["block"] = json!(l.block);
                        row["shared_mem"] = json!(l.shared_mem);
                    }
                    isolated_rows.push(row);
                }
                progress(&format!("isolated: {n}/{n} done\n"));
            }
        }
    }
    let mut out = json!({
        "format": "tracer-replay-report", "version": 1,
        "recording": rec.dir.display().to_string(),
        "device": format!("{} ({})", s.ctx.name, s.ctx.pci_bus_id),
        "replay_version": env!("CARGO_PKG_VERSION"),
        "coverage": {
            "launches": p.coverage.launches, "launches_replayed": p.coverage.launches_replayed,
            "percent": p.coverage.percent(), "launches_by_api": p.coverage.launches_by_api,
            "skipped_by_reason": p.coverage.skipped_by_reason, "skipped": p.coverage.skipped,
            "graph_launches": p.coverage.graph_launches, "copies": p.coverage.copies,
            "copies_replayed": p.coverage.copies_replayed, "h2d_with_data": p.coverage.h2d_with_data,
            "h2d_filled": p.coverage.h2d_filled, "host_pageable": p.coverage.host_pageable, "sets": p.coverage.sets, "sets_replayed": p.coverage.sets_replayed,
            "other_skipped": p.coverage.other_skipped,
        },
        "plan": {
            "ops": p.ops.len(), "streams": p.streams.len(), "events": p.events.len(), "edges": p.edges.len(),
            "ranges": p.ranges.len(), "relocation_candidates": p.relocations.len(),
        },
        "memory": {
            "summary": format!("{} windows, {} at the recorded address, {} relocated", s.map.windows.len(),
                s.map.windows.iter().filter(|w| w.at_recorded_address).count(),
                s.map.windows.iter().filter(|w| !w.at_recorded_address).count()),
            "granularity": s.map.granularity, "windows": s.map.windows,
        },
        "recorded": {
            "source": recorded.source, "busy_us": busy_us, "span_us": recorded.span_ns as f64 / 1e3,
            "kernels_us": recorded.kernels_ns as f64 / 1e3, "copies_us": recorded.copies_ns as f64 / 1e3,
            "sets_us": recorded.sets_ns as f64 / 1e3,
        },
        "modes": modes,
        "output_checks": checks,
        "pass_checks": pass_checks,
        "setup_s": s.setup_s,
    });
    if !isolated_us.is_empty() {
        let (pred, fam, top) = report::predict(&p, &isolated_us, &recorded);
        out["predicted_us"] = json!(pred);
        out["predicted_error_pct"] = json!(report::error_pct(pred, busy_us));
        out["families"] = json!(fam);
        out["top_kernels"] = json!(top.iter().take(20).collect::<Vec<_>>());
        out["isolated"] = Value::Array(isolated_rows);
        let dpath = a
            .report
            .as_ref()
            .map(|r| r.with_extension("durations.json"))
            .unwrap_or_else(|| rec.dir.join("kernel-durations.json"));
        let d = report::durations_file(&p, &isolated_samples, Some(&s.ctx.name));
        std::fs::write(&dpath, serde_json::to_string_pretty(&d)? + "\n")
            .with_context(|| format!("{}: cannot write", dpath.display()))?;
        out["durations_file"] = json!(dpath.display().to_string());
    }
    if !isolated_us.is_empty() {
        out["isolated_in_context"] = json!(in_context);
    }
    if a.energy_seconds > 0.0 {
        match energy(&s, &rec, &p, a.energy_seconds) {
            Ok(e) => out["energy"] = e,
            Err(e) => notes.push(format!("energy not measured: {e:#}")),
        }
    }
    out["notes"] = json!(notes);
    let path = a.report.clone().unwrap_or_else(|| rec.dir.join("replay-report.json"));
    std::fs::write(&path, serde_json::to_string_pretty(&out)? + "\n")
        .with_context(|| format!("{}: cannot write", path.display()))?;
    print!("{}", report::text(&out));
    println!("report: {}", path.display());
    Ok(if checks.iter().all(|c| c.matches) { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

fn energy(s: &Session, rec: &Recording, p: &plan::Plan, secs: f64) -> Result<Value> {
    use replay::energy::{Meter, recorded_energy_mj};
    let secs = secs.max(2.0);
    let m = Meter::new(&s.ctx.pci_bus_id)?;
    progress("energy: counter update period (1 s)");
    let period = m.update_period(1.0)?;
    progress(&format!("energy: idle baseline ({secs:.0} s)"));
    let idle_mw = m.idle_mw(secs)?;
    progress(&format!("energy: sequence repeated for >= {secs:.0} s"));
    // Each repetition from the initial memory, like the timed passes (the
    // reset's memset, a fraction of a millisecond, is inside the window).
    let w = m.window(secs, || {
        s.reset_memory()?;
        s.pass(None, None).map(|_| ())
    })?;
    eprintln!();
    let net = w.energy_mj - idle_mw * w.seconds;
    let per_it = net / w.iterations as f64;
    // Counter steps: up to one update period of energy at the window's power at each end.
    let unc_pct = 100.0 * 2.0 * (period.median_ms / 1e3) / w.seconds;
    // The recording: its power lines over the GPU work's span, less the same idle baseline.
    let t0 = p.ops.iter().find(|o| o.is_work()).map(|o| o.ts);
    let t1 = p.ops.iter().rev().find(|o| o.is_work()).map(|o| o.ts + o.duration_ns.unwrap_or(0));
    let t1 = rec.trace.gpu.iter().map(|g| g.end_ts).max().or(t1);
    let recorded = match (t0, t1) {
        (Some(a), Some(b)) if b > a => {
            recorded_energy_mj(&rec.trace, 0, a, b).map(|e| e - idle_mw * (b - a) as f64 / 1e9)
        }
        _ => None,
    };
    let tokens: u64 = rec.trace.markers.iter().filter_map(|m| m.tokens).sum();
    Ok(json!({
        "update_period_ms": period.median_ms, "update_changes": period.changes,
        "idle_mw": idle_mw, "replay_window_s": w.seconds, "replay_iterations": w.iterations,
        "replay_mj_total": w.energy_mj, "replay_mj_per_iteration": per_it,
        "replay_uncertainty_pct": unc_pct,
        "recorded_mj": recorded,
        "error_pct": recorded.and_then(|r| report::error_pct(per_it, r)),
        "tokens": if tokens > 0 { Some(tokens) } else { None },
        "replay_mj_per_token": if tokens > 0 { Some(per_it / tokens as f64) } else { None },
        "recorded_mj_per_token": if tokens > 0 { recorded.map(|r| r / tokens as f64) } else { None },
    }))
}

/// One pass's output checks, summarized: how many, how many identical, the first line that differed.
fn pass_check_row(mode: &str, pass: u32, c: &[OutputCheck]) -> Value {
    let bad: Vec<&OutputCheck> = c.iter().filter(|x| !x.matches).collect();
    json!({"mode": mode, "pass": pass, "checked": c.len(), "identical": c.len() - bad.len(),
        "first_difference_line": bad.first().map(|x| x.line),
        "different_bytes": bad.iter().map(|x| x.mismatched_bytes).sum::<u64>()})
}

fn pass_check_line(r: &Value) -> String {
    format!(
        "checks {} pass {}: {}/{} device-to-host copies identical{}",
        r["mode"].as_str().unwrap_or(""),
        r["pass"],
        r["identical"],
        r["checked"],
        match r["first_difference_line"].as_u64() {
            Some(l) => format!(", first difference at trace.jsonl line {l}"),
            None => String::new(),
        }
    )
}

/// The memsets submitted on the same stream right before op `i` (at most
/// 4, nearest last), which a kernel may depend on (zeroed counters).
fn prologue(p: &replay::plan::Plan, i: usize) -> Vec<usize> {
    let mut v = Vec::new();
    if !matches!(p.ops[i].kind, replay::plan::OpKind::Launch(_)) {
        return v;
    }
    let stream = p.ops[i].stream;
    for j in (0..i).rev() {
        let o = &p.ops[j];
        if !o.is_work() || o.stream != stream {
            continue;
        }
        if matches!(o.kind, replay::plan::OpKind::Set(_)) && v.len() < 4 {
            v.push(j);
        } else {
            break;
        }
    }
    v.reverse();
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chk(line: usize, matches: bool, bad: u64) -> OutputCheck {
        OutputCheck { line, size: 1, matches, mismatched_bytes: bad, first_mismatch: (!matches).then_some(0) }
    }

    #[test]
    fn pass_check_summary() {
        let r = pass_check_row("sequence", 3, &[chk(10, true, 0), chk(20, false, 1), chk(30, false, 4)]);
        assert_eq!(
            r,
            json!({"mode": "sequence", "pass": 3, "checked": 3, "identical": 1, "first_difference_line": 20, "different_bytes": 5})
        );
        assert_eq!(
            pass_check_line(&r),
            "checks sequence pass 3: 1/3 device-to-host copies identical, first difference at trace.jsonl line 20"
        );
        let ok = pass_check_row("first", 0, &[chk(10, true, 0)]);
        assert_eq!(pass_check_line(&ok), "checks first pass 0: 1/1 device-to-host copies identical");
    }
}
