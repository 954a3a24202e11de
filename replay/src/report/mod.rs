//! The validation report: recorded vs replayed GPU time per mode, the time
//! predicted from isolated kernel durations, per-family breakdown, top
//! kernels, energy, output checks. JSON (`NAME.rec/replay-report.json`) and text.

use std::collections::BTreeMap;

use serde::Serialize;

pub use crate::gpu_time::error_pct;
pub use crate::gpu_time::recorded::{self, RecordedTime, recorded_time};
use crate::plan::{Direction, OpKind, Plan, family::family};

/// Key of an op for isolated timing: launches by kernel+shape, copies by
/// direction+size, sets by size.
pub fn op_key(plan: &Plan, i: usize) -> Option<String> {
    match &plan.ops[i].kind {
        OpKind::Launch(l) => Some(format!(
            "kernel {} load{} grid {:?} block {:?} smem {}",
            l.kernel, l.load, l.grid, l.block, l.shared_mem
        )),
        OpKind::Copy(c) => Some(format!("copy {:?} {}", c.direction, c.size)),
        OpKind::Set(s) => Some(match s.rows {
            None => format!("set {}x{}", s.count, s.elem),
            Some(r) => format!("set {}x{} x{} rows", s.count, s.elem, r.height),
        }),
        _ => None,
    }
}

pub fn op_family(plan: &Plan, i: usize) -> &'static str {
    match &plan.ops[i].kind {
        OpKind::Launch(l) => family(&l.kernel),
        OpKind::Copy(_) => "copy",
        OpKind::Set(_) => "set",
        _ => "other",
    }
}

/// Distinct keys with the first op of each and the op count.
pub fn distinct_keys(plan: &Plan) -> BTreeMap<String, (usize, usize)> {
    let mut m: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for i in 0..plan.ops.len() {
        if let Some(k) = op_key(plan, i) {
            m.entry(k).or_insert((i, 0)).1 += 1;
        }
    }
    m
}

/// The keys of `distinct_keys` by their first op, in recorded order (the
/// order isolated mode meets them in a pass).
pub fn in_recorded_order(keys: &BTreeMap<String, (usize, usize)>) -> Vec<(String, usize)> {
    let mut v: Vec<(String, usize)> = keys.iter().map(|(k, (op, _))| (k.clone(), *op)).collect();
    v.sort_by_key(|x| x.1);
    v
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FamilyRow {
    pub family: String,
    pub ops: usize,
    pub predicted_us: f64,
    /// From the recording's gpu lines.
    pub recorded_us: Option<f64>,
    pub error_pct: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KernelRow {
    pub kernel: String,
    pub family: String,
    pub launches: usize,
    pub shapes: usize,
    pub predicted_us: f64,
    pub recorded_us: Option<f64>,
    pub error_pct: Option<f64>,
}

/// Predicted time (µs) = sum over every GPU op of its key's isolated median;
/// per family and per kernel, next to the recorded figures when the recording
/// has gpu lines.
pub fn predict(
    plan: &Plan,
    isolated_us: &BTreeMap<String, f64>,
    rec: &RecordedTime,
) -> (f64, Vec<FamilyRow>, Vec<KernelRow>) {
    let mut total = 0.0;
    let mut fam: BTreeMap<&'static str, (usize, f64)> = BTreeMap::new();
    let mut ker: BTreeMap<String, (usize, f64, std::collections::BTreeSet<String>)> = BTreeMap::new();
    for i in 0..plan.ops.len() {
        let Some(k) = op_key(plan, i) else { continue };
        let t = isolated_us.get(&k).copied().unwrap_or(0.0);
        total += t;
        let f = fam.entry(op_family(plan, i)).or_default();
        f.0 += 1;
        f.1 += t;
        if let OpKind::Launch(l) = &plan.ops[i].kind {
            let e = ker.entry(l.kernel.clone()).or_default();
            e.0 += 1;
            e.1 += t;
            e.2.insert(k);
        }
    }
    let have = rec.source == "gpu_lines";
    let rec_fam = rec.per_family_ns();
    let families = fam
        .into_iter()
        .map(|(f, (n, t))| {
            let r = have.then(|| rec_fam.get(f).copied().unwrap_or(0) as f64 / 1e3);
            FamilyRow {
                family: f.into(),
                ops: n,
                predicted_us: t,
                recorded_us: r,
                error_pct: r.and_then(|r| error_pct(t, r)),
            }
        })
        .collect();
    let mut kernels: Vec<KernelRow> = ker
        .into_iter()
        .map(|(k, (n, t, shapes))| {
            let r = have.then(|| rec.per_kernel.get(&k).map(|x| x.1 as f64 / 1e3).unwrap_or(0.0));
            KernelRow {
                family: family(&k).into(),
                kernel: k,
                launches: n,
                shapes: shapes.len(),
                predicted_us: t,
                recorded_us: r,
                error_pct: r.and_then(|r| error_pct(t, r)),
            }
        })
        .collect();
    kernels.sort_by(|a, b| b.predicted_us.total_cmp(&a.predicted_us).then(a.kernel.cmp(&b.kernel)));
    (total, families, kernels)
}

/// Nearest-rank percentile of sorted samples (`p` in 0..=100).
pub fn nearest_rank(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let k = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[k.clamp(1, sorted.len()) - 1]
}

/// The isolated durations as a `tracer-kernel-durations` file (docs/analysis.md,
/// *Calibration files*), for `tracer gaps/report/export --durations`:
/// kernels by (name, grid, block, shared memory), a key measured for several
/// loads of the same kernel counted together (the most used one's figures);
/// copies per direction and memsets: `base_ns` = median of the ≤ 64 KiB ones,
/// `ns_per_byte` = median extra ns per byte of the > 1 MiB ones (a kind
/// lacking either is left out). `samples_ms`: key -> sorted ms.
pub fn durations_file(plan: &Plan, samples_ms: &BTreeMap<String, Vec<f64>>, gpu: Option<&str>) -> serde_json::Value {
    type Geo = (String, [u32; 3], [u32; 3], u32);
    let mut kernels: BTreeMap<Geo, (u64, usize, [u64; 3])> = BTreeMap::new();
    // kind -> (ops, medians of the small ones (ns), (size, median ns) of the large ones)
    type CopyAcc = (u64, Vec<f64>, Vec<(u64, f64)>);
    let mut copies: BTreeMap<&'static str, CopyAcc> = BTreeMap::new();
    for (key, (first, count)) in distinct_keys(plan) {
        let Some(v) = samples_ms.get(&key) else { continue };
        let ns = |p: f64| (nearest_rank(v, p) * 1e6).round() as u64;
        match &plan.ops[first].kind {
            OpKind::Launch(l) => {
                let e = kernels.entry((l.kernel.clone(), l.grid, l.block, l.shared_mem)).or_insert((0, 0, [0; 3]));
                e.0 += count as u64;
                if count > e.1 {
                    e.1 = count;
                    e.2 = [ns(50.0), ns(10.0), ns(90.0)];
                }
            }
            k => {
                let (kind, size) = match k {
                    OpKind::Copy(c) => (direction_name(c.direction), c.size),
                    OpKind::Set(s) => ("memset", s.bytes()),
                    _ => continue,
                };
                let e = copies.entry(kind).or_default();
                e.0 += count as u64;
                let med = nearest_rank(v, 50.0) * 1e6;
                if size <= 64 << 10 {
                    e.1.push(med);
                } else if size > 1 << 20 {
                    e.2.push((size, med));
                }
            }
        }
    }
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        nearest_rank(&v, 50.0)
    };
    let kernels: Vec<serde_json::Value> = kernels
        .into_iter()
        .map(|((kernel, grid, block, shared_mem), (count, _, [m, p10, p90]))| {
            serde_json::json!({"kernel": kernel, "grid": grid, "block": block, "shared_mem": shared_mem,
                "count": count, "median_ns": m, "p10_ns": p10, "p90_ns": p90})
        })
        .collect();
    let copies: Vec<serde_json::Value> = copies
        .into_iter()
        .filter(|(_, (_, small, big))| !small.is_empty() && !big.is_empty())
        .map(|(kind, (count, small, big))| {
            let base = median(small);
            let per_byte = median(big.iter().map(|&(size, ns)| (ns - base).max(0.0) / size as f64).collect());
            serde_json::json!({"kind": kind, "count": count, "base_ns": base.round() as u64, "ns_per_byte": per_byte})
        })
        .collect();
    serde_json::json!({"format": "tracer-kernel-durations", "version": 1, "source": "replay isolated", "gpu": gpu,
        "kernels": kernels, "copies": copies})
}

/// Text form of the report JSON.
pub fn text(r: &serde_json::Value) -> String {
    let mut s = String::new();
    text_setup(&mut s, r);
    text_modes(&mut s, r);
    text_measured(&mut s, &r["measured"]);
    text_prediction(&mut s, r);
    text_energy(&mut s, &r["energy"]);
    text_checks_and_files(&mut s, r);
    // The last guard: no control character from a recording reaches the terminal.
    tracer_format::inert::text(&s).into_owned()
}

/// A number with one decimal, "-" for none.
fn f(v: &serde_json::Value) -> String {
    v.as_f64().map(|x| format!("{x:.1}")).unwrap_or_else(|| "-".into())
}

/// Graph launches: how many were expanded into stream order, how many not and why (only when there were some).
fn text_graphs(s: &mut String, c: &serde_json::Value) {
    use std::fmt::Write;
    let n = c["graph_launches"].as_u64().unwrap_or(0);
    if n == 0 {
        return;
    }
    let planned = c["graph_launches_expanded"].as_u64().unwrap_or(0);
    let as_graphs = c["graph_launches_as_graphs"].as_u64().unwrap_or(0);
    let _ = writeln!(
        s,
        "graph launches: {n}, as rebuilt CUDA graphs {as_graphs} ({} execs), as separate launches on the launch stream {} (their {} kernels counted above, {} replayed)",
        c["graph_execs_rebuilt"].as_u64().unwrap_or(0),
        planned.saturating_sub(as_graphs),
        c["graph_kernels"],
        c["graph_kernels_replayed"]
    );
    for key in ["graph_launches_not_replayed", "graph_skipped_by_reason"] {
        if let Some(m) = c[key].as_object() {
            for (k, v) in m {
                let what = if key == "graph_launches_not_replayed" {
                    "graph launches not replayed"
                } else {
                    "graph work not replayed"
                };
                let _ = writeln!(s, "  {what} {v}: {k}");
            }
        }
    }
}

/// The recording, device, coverage, memory and recorded GPU time.
fn text_setup(s: &mut String, r: &serde_json::Value) {
    use std::fmt::Write;
    let _ = writeln!(s, "replay report: {}", r["recording"].as_str().unwrap_or(""));
    let _ = writeln!(s, "device: {}", r["device"].as_str().unwrap_or("-"));
    let c = &r["coverage"];
    let _ = writeln!(
        s,
        "coverage: {} of {} launches replayed ({}%)",
        c["launches_replayed"].as_u64().unwrap_or(0) + c["graph_kernels_replayed"].as_u64().unwrap_or(0),
        c["launches"].as_u64().unwrap_or(0) + c["graph_kernels"].as_u64().unwrap_or(0),
        f(&c["percent"])
    );
    if let Some(m) = c["skipped_by_reason"].as_object() {
        for (k, v) in m {
            let _ = writeln!(s, "  skipped {v}: {k}");
        }
    }
    text_graphs(s, c);
    let _ = writeln!(s, "memory: {}", r["memory"]["summary"].as_str().unwrap_or("-"));
    let rec = &r["recorded"];
    if rec["source"] == "launch_to_sync" {
        // Host-bound spans, mostly not GPU time: no error % is given against them.
        let _ = writeln!(
            s,
            "recorded GPU time: not measured (the recording has no gpu lines; record with --replayable \
             --gpu-timestamps to compare replayed with recorded GPU time); launch-to-synchronize spans {} us, \
             an upper bound",
            f(&rec["launch_to_sync_us"])
        );
    } else {
        let _ = writeln!(
            s,
            "recorded GPU time ({}): busy {} us, span {} us",
            rec["source"].as_str().unwrap_or("-"),
            f(&rec["busy_us"]),
            f(&rec["span_us"])
        );
    }
}

/// One line per mode, with CUPTI's figures under it.
fn text_modes(s: &mut String, r: &serde_json::Value) {
    use std::fmt::Write;
    for m in r["modes"].as_array().into_iter().flatten() {
        let _ = writeln!(
            s,
            "  {:<9} mean {} us, min {} us per iteration ({} iterations), {}{}",
            m["mode"].as_str().unwrap_or(""),
            f(&m["mean_us"]),
            f(&m["min_us"]),
            m["gpu_ms"].as_array().map(|a| a.len()).unwrap_or(0),
            match m["error_pct"].is_null() && r["recorded"]["source"] == "launch_to_sync" {
                true => "no error % (recorded GPU time not measured)".to_string(),
                false =>
                    format!("error vs recorded {} {} %", m["reference"].as_str().unwrap_or("busy"), f(&m["error_pct"])),
            },
            m["note"].as_str().map(|n| format!(" ({n})")).unwrap_or_default()
        );
        let c = &m["cupti"];
        if c.is_object() {
            let _ = writeln!(
                s,
                "            CUPTI: busy {} us ({} %), span {} us; kernels {} us ({} %), copies {} us ({} %), sets {} us ({} %){}",
                f(&c["busy_us"]),
                f(&c["busy_error_pct"]),
                f(&c["span_us"]),
                f(&c["kernels_us"]),
                f(&c["kernels_error_pct"]),
                f(&c["copies_us"]),
                f(&c["copies_error_pct"]),
                f(&c["sets_us"]),
                f(&c["sets_error_pct"]),
                match (c["paired_passes"].as_u64(), c["passes"].as_array().map(|p| p.len())) {
                    (Some(k), Some(n)) if k as usize != n => format!("; records paired with ops in {k} of {n} passes"),
                    _ => String::new(),
                }
            );
            for e in c["pairing_errors"].as_array().into_iter().flatten().take(2) {
                let _ = writeln!(s, "            pairing: {}", e.as_str().unwrap_or(""));
            }
            text_copy_kinds(s, &c["copies_by_host_memory"]);
            text_copies_against(s, &c["copies_against"]);
            let g = &c["graph_launches"];
            if g.is_object() {
                let recorded = if g["recorded"]["launches"].as_u64().unwrap_or(0) == 0 {
                    "recorded: no graph kernels with CUPTI's graph id (record with --gpu-timestamps)".to_owned()
                } else {
                    format!(
                        "recorded span {} us, busy {} us over {} ({} %)",
                        f(&g["recorded"]["span_us_median"]),
                        f(&g["recorded"]["busy_us_median"]),
                        g["recorded"]["launches"],
                        f(&g["span_error_pct"])
                    )
                };
                let _ = writeln!(
                    s,
                    "            per graph launch (median): span {} us, busy {} us over {} launches; {recorded}",
                    f(&g["replayed"]["span_us_median"]),
                    f(&g["replayed"]["busy_us_median"]),
                    g["replayed"]["launches"],
                );
                text_graph_gaps(s, &g["gaps"]);
            }
        }
    }
}

/// Copies per direction and host memory kind as CUPTI saw them, recorded vs replayed (gpu_time/copy_kinds.rs).
fn text_copy_kinds(s: &mut String, rows: &serde_json::Value) {
    use std::fmt::Write;
    let Some(rows) = rows.as_array().filter(|r| !r.is_empty()) else { return };
    let f = |v: &serde_json::Value| v.as_f64().map_or("-".into(), |x| format!("{x:.1}"));
    let cells: Vec<String> = rows
        .iter()
        .map(|r| {
            let err = r["error_pct"].as_f64().map_or(String::new(), |e| format!(" ({e:+.1} %)"));
            format!(
                "{} {}: recorded {} in {} us, replayed {} in {} us{err}",
                r["direction"].as_str().unwrap_or("?"),
                r["host"].as_str().unwrap_or("?"),
                r["recorded"],
                f(&r["recorded_us"]),
                f(&r["replayed_per_pass"]),
                f(&r["replayed_us"])
            )
        })
        .collect();
    let _ = writeln!(s, "            copies by host memory (CUPTI, per pass): {}", cells.join("; "));
}

/// `--copies-against` (gpu_time/copy_kinds.rs `against`): one reference by name, several by
/// their median and range, and whether the replayed time is inside it.
fn text_copies_against(s: &mut String, a: &serde_json::Value) {
    use std::fmt::Write;
    let Some(refs) = a["references"].as_array().filter(|r| !r.is_empty()) else { return };
    let Some(rows) = a["rows"].as_array().filter(|r| !r.is_empty()) else { return };
    let f = |v: &serde_json::Value| v.as_f64().map_or("-".into(), |x| format!("{x:.1}"));
    let several = refs.len() > 1;
    let cells: Vec<String> = rows
        .iter()
        .map(|r| {
            let err = r["error_pct"].as_f64().map(|e| format!("{e:+.1} %"));
            let counts: Vec<String> =
                r["reference_counts"].as_array().into_iter().flatten().map(|c| c.to_string()).collect();
            let (reference, range) = if several {
                let inside = if r["inside_range"].as_bool() == Some(true) { "inside" } else { "outside" };
                (
                    format!(
                        "reference {} in {} us ({}-{})",
                        counts.join("/"),
                        f(&r["reference_median_us"]),
                        f(&r["reference_min_us"]),
                        f(&r["reference_max_us"])
                    ),
                    Some(format!("{inside} their range")),
                )
            } else {
                (format!("reference {} in {} us", counts.join("/"), f(&r["reference_median_us"])), None)
            };
            let notes: Vec<String> = [err, range].into_iter().flatten().collect();
            let notes = if notes.is_empty() { String::new() } else { format!(" ({})", notes.join(", ")) };
            format!(
                "{} {}: {reference}, replayed {} in {} us{notes}",
                r["direction"].as_str().unwrap_or("?"),
                r["host"].as_str().unwrap_or("?"),
                f(&r["replayed_per_pass"]),
                f(&r["replayed_us"])
            )
        })
        .collect();
    let what = if several {
        format!("copies against {} recordings (median, min-max; CUPTI, per pass)", refs.len())
    } else {
        format!("copies against {} (CUPTI, per pass)", refs[0].as_str().unwrap_or("?"))
    };
    let _ = writeln!(s, "            {what}: {}", cells.join("; "));
}

/// The idle time inside a graph launch, recorded vs replayed, and the transitions that changed most
/// (gpu_time/graph_launches.rs `gaps`).
fn text_graph_gaps(s: &mut String, g: &serde_json::Value) {
    use std::fmt::Write;
    let Some(rows) = g["transitions"].as_array() else { return };
    let f = |v: &serde_json::Value| v.as_f64().map_or("?".into(), |x| format!("{x:.1}"));
    let short = |v: &serde_json::Value| {
        let t = v.as_str().unwrap_or("?");
        if t.chars().count() > 40 { format!("{}…", t.chars().take(40).collect::<String>()) } else { t.to_string() }
    };
    let most: Vec<String> = rows
        .iter()
        .map(|r| {
            format!(
                "{} -> {} ({}x) {} -> {} us",
                short(&r["from"]),
                short(&r["to"]),
                r["count"],
                f(&r["recorded_us"]),
                f(&r["replayed_us"])
            )
        })
        .collect();
    let _ = writeln!(
        s,
        "            idle inside a graph launch of {} ops (per-position medians, summed): recorded {} us, replayed {} us; \
         most changed: {}",
        g["ops_per_launch"],
        f(&g["recorded_us"]),
        f(&g["replayed_us"]),
        most.join("; ")
    );
}

/// CUPTI's recorded vs replayed figures per family and segment (`me`: the report's "measured").
fn text_measured(s: &mut String, me: &serde_json::Value) {
    use std::fmt::Write;
    if me.is_object() {
        let _ = writeln!(
            s,
            "measured by CUPTI, recorded vs replayed ({}, mean per pass):",
            me["mode"].as_str().unwrap_or("")
        );
        let _ = writeln!(s, "  family             recorded us     replayed us   error %");
        for x in me["families"].as_array().into_iter().flatten() {
            let _ = writeln!(
                s,
                "  {:<16} {:>13} {:>15} {:>9}",
                x["family"].as_str().unwrap_or(""),
                f(&x["recorded_us"]),
                f(&x["replayed_us"]),
                f(&x["error_pct"])
            );
        }
        let segs = me["segments"].as_array().map(|v| v.as_slice()).unwrap_or(&[]);
        if !segs.is_empty() {
            let _ = writeln!(
                s,
                "  segment (markers)          ops   recorded busy us   replayed busy us   error %   kernels error %"
            );
            for x in segs {
                let _ = writeln!(
                    s,
                    "  {:<24} {:>6} {:>18} {:>18} {:>9} {:>17}",
                    format!("{} {}", x["op"].as_str().unwrap_or(""), x["label"].as_str().unwrap_or("")),
                    x["ops"],
                    f(&x["recorded_busy_us"]),
                    f(&x["replayed_busy_us"]),
                    f(&x["busy_error_pct"]),
                    f(&x["kernels_error_pct"])
                );
            }
        }
    }
}

/// The prediction from the isolated durations, per family and top kernel.
fn text_prediction(s: &mut String, r: &serde_json::Value) {
    use std::fmt::Write;
    if !r["predicted_us"].is_null() {
        let _ = writeln!(
            s,
            "  predicted (sum of isolated durations{}{}) {} us, {}",
            match r["isolated_in_context"].as_bool() {
                Some(true) => ", timed in context",
                Some(false) => ", timed out of context",
                None => "",
            },
            match r["isolated_timer"].as_str() {
                Some("cupti") => " by CUPTI",
                Some("events") => " by CUDA events",
                _ => "",
            },
            f(&r["predicted_us"]),
            match r["predicted_error_pct"].is_null() && r["recorded"]["source"] == "launch_to_sync" {
                true => "no error % (recorded GPU time not measured)".to_string(),
                false => format!("error vs recorded busy {} %", f(&r["predicted_error_pct"])),
            }
        );
        if !r["predicted_warm_l2_us"].is_null() {
            let _ = writeln!(
                s,
                "  (each run above started with the L2 cache flushed; with the L2 warm from the previous run: {} us, error {} %)",
                f(&r["predicted_warm_l2_us"]),
                f(&r["predicted_warm_l2_error_pct"])
            );
        }
        let _ = writeln!(s, "by family:            ops    predicted us     recorded us   error %");
        for x in r["families"].as_array().into_iter().flatten() {
            let _ = writeln!(
                s,
                "  {:<16} {:>7} {:>15} {:>15} {:>9}",
                x["family"].as_str().unwrap_or(""),
                x["ops"],
                f(&x["predicted_us"]),
                f(&x["recorded_us"]),
                f(&x["error_pct"])
            );
        }
        let _ = writeln!(s, "top kernels (by predicted time):");
        for x in r["top_kernels"].as_array().into_iter().flatten().take(10) {
            // Inert on a terminal, cut at 70 characters (never inside one).
            let k = tracer_format::inert::cut(tracer_format::inert::escape(x["kernel"].as_str().unwrap_or("")), 70);
            let _ = writeln!(
                s,
                "  {:>6} x {:>12} us (recorded {:>12} us) {k}",
                x["launches"],
                f(&x["predicted_us"]),
                f(&x["recorded_us"])
            );
        }
    }
}

/// The energy figures: idle, the sequence back to back, the timed passes (`e`: the report's "energy").
fn text_energy(s: &mut String, e: &serde_json::Value) {
    use std::fmt::Write;
    if e.is_object() {
        let _ = writeln!(
            s,
            "energy: counter update period {} ms (jitter {} ms); idle {} mW",
            f(&e["update_period_ms"]),
            f(&e["update_jitter_ms"]),
            f(&e["idle_mw"])
        );
        let _ = writeln!(
            s,
            "  sequence back to back, above idle: replay {} ± {} mJ per iteration ({} s window, {} iterations); recorded {} ± {} mJ over its GPU span; error {} %",
            f(&e["replay_mj_per_iteration"]),
            f(&e["replay_uncertainty_mj"]),
            f(&e["replay_window_s"]),
            e["replay_iterations"],
            f(&e["recorded_mj"]),
            f(&e["recorded_uncertainty_mj"]),
            f(&e["error_pct"])
        );
        if let Some(why) = e["recorded_not_measured"].as_str() {
            let _ = writeln!(s, "  recorded energy not measured: {why}");
        }
        text_energy_timed(s, e, &e["timed"]);
    }
}

/// The timed passes' energy (recorded idle gaps kept), gross and above idle.
fn text_energy_timed(s: &mut String, e: &serde_json::Value, t: &serde_json::Value) {
    use std::fmt::Write;
    if t.is_object() {
        let _ = writeln!(
            s,
            "  timed passes (recorded idle gaps kept): replay {} ± {} mJ per pass ({} s each, {} passes), recorded {} ± {} mJ over its {} s span: error {} ± {} %",
            f(&t["replay_mj_per_pass"]),
            f(&t["replay_uncertainty_mj"]),
            f(&t["pass_s"]),
            t["passes"],
            f(&t["recorded_mj"]),
            f(&t["recorded_uncertainty_mj"]),
            f(&t["recorded_span_s"]),
            f(&t["error_pct"]),
            f(&t["error_uncertainty_pct"])
        );
        let _ = writeln!(
            s,
            "    above idle: replay {} ± {} mJ, recorded {} ± {} mJ: error {} ± {} %",
            f(&t["replay_net_mj_per_pass"]),
            f(&t["replay_net_uncertainty_mj"]),
            f(&t["recorded_net_mj"]),
            f(&t["recorded_net_uncertainty_mj"]),
            f(&t["net_error_pct"]),
            f(&t["net_error_uncertainty_pct"])
        );
        if t["replay_mj_per_token"].is_number() {
            let _ = writeln!(
                s,
                "    per token ({} tokens): replay {} mJ, recorded {} mJ (whole energy, idle included)",
                e["tokens"],
                f(&t["replay_mj_per_token"]),
                f(&t["recorded_mj_per_token"])
            );
        }
        if let Some(n) = t["note"].as_str() {
            let _ = writeln!(s, "  {n}");
        }
    }
}

/// The output checks, the files written beside the report, the notes.
fn text_checks_and_files(s: &mut String, r: &serde_json::Value) {
    use std::fmt::Write;
    if let Some(sel) = r.get("selection") {
        let _ = writeln!(s, "{}", text_selection(sel));
    }
    let nc = &r["outputs_not_comparable"];
    let not_comparable = |line: &serde_json::Value| nc["lines"].as_array().is_some_and(|l| l.contains(line));
    for ch in r["output_checks"].as_array().into_iter().flatten() {
        let bytes = if ch["matches"].as_bool() == Some(true) {
            "bit-for-bit identical".to_owned()
        } else {
            format!("{} bytes differ (first at {})", ch["mismatched_bytes"], ch["first_mismatch"])
        };
        let what = if not_comparable(&ch["line"]) {
            format!(
                "{} ({bytes}; after the first skipped collective, line {})",
                f_str(&nc["reason"]),
                nc["first_collective_line"]
            )
        } else {
            bytes
        };
        let _ = writeln!(s, "output check: line {}: {} bytes: {what}", ch["line"], ch["size"]);
    }
    if let Some(t) = r["timeline_file"].as_str() {
        let _ = writeln!(s, "replayed timeline (tracer plot RECORDING --compare {t}): {t}");
    }
    if let Some(d) = r["durations_file"].as_str() {
        let _ = writeln!(s, "kernel durations (for tracer gaps/report/export --durations): {d}");
    }
    for n in r["notes"].as_array().into_iter().flatten() {
        let _ = writeln!(s, "note: {}", n.as_str().unwrap_or(""));
    }
}

fn f_str(v: &serde_json::Value) -> &str {
    v.as_str().unwrap_or("")
}

/// The report's `selection` (one process of a multi-process recording) as one line.
fn text_selection(sel: &serde_json::Value) -> String {
    let who = match (sel["rank"].as_u64(), sel["world_size"].as_u64()) {
        (Some(r), Some(w)) => format!("pid {} (rank {r} of {w})", sel["pid"]),
        (Some(r), None) => format!("pid {} (rank {r})", sel["pid"]),
        _ => format!("pid {}", sel["pid"]),
    };
    let gpu = sel["recorded_gpu"].as_u64().map(|g| format!(", recorded on GPU {g}")).unwrap_or_default();
    let mut s = format!("selected: {who}{gpu}, 1 of {} processes", sel["processes"]);
    if sel["skip_collectives"].as_bool() == Some(true) {
        s += &format!("; collectives skipped: {} launches", sel["collectives_skipped"]);
        match sel["collective_gpu_lines"].as_u64() {
            Some(n) if n > 0 => {
                s += &format!(
                    ", {n} measured took {:.1} µs on the GPU when recorded (left out of the recorded time)",
                    sel["collective_gpu_ns"].as_f64().unwrap_or(0.0) / 1e3
                )
            }
            _ => s += ", their recorded GPU time not measured (no gpu lines)",
        }
    }
    s
}

pub fn direction_name(d: Direction) -> &'static str {
    d.as_str()
}

#[cfg(test)]
mod tests {
    /// A recorded kernel name is inert in the text report: control characters escaped, cut at
    /// 70 characters with a mark, never inside a character (a multi-byte name once panicked).
    #[test]
    fn hostile_kernel_names_are_inert_and_cut_on_a_character() {
        let name = format!("\u{1b}]0;pwned\u{7}{}", "δ".repeat(100));
        let r = serde_json::json!({
            "predicted_us": 10.0,
            "top_kernels": [{ "kernel": name, "launches": 3, "predicted_us": 5.0, "recorded_us": 6.0 }],
        });
        let t = super::text(&r);
        assert!(!t.chars().any(|c| c.is_control() && c != '\n'), "{t:?}");
        let line = t.lines().find(|l| l.contains("pwned")).unwrap();
        assert!(line.ends_with(&format!("\\x1b]0;pwned\\x07{}…[+46 chars]", "δ".repeat(54))), "{line}");
    }
}
