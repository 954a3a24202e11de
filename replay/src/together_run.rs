//! `replay A.rec B.rec … --together` (docs/colocation.md): each recording is
//! a tenant, replayed by a child `replay tenant REC` in its own process and
//! CUDA context on one GPU. The parent plans (together/), refuses what cannot
//! run before anything runs, starts the children, and drives the rounds over
//! their stdin/stdout: a child sets up (images loaded, memory mapped) and
//! says `loaded`; once all are, on `start` it runs its checking pass (outputs
//! bit for bit), runs the ops before its measured phase, keeps the memory
//! they leave (a snapshot), runs a warm-up pass of the phase and says
//! `ready`; then per `run` (or `check`) line it restores that memory (or,
//! without memory for the snapshot, runs the ops before the phase again),
//! says `armed`,
//! and on `go` runs the phase paced and answers with its figures. The parent
//! writes `go` to every tenant of a run back to back once all are armed: the
//! start barrier.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitCode, Stdio};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use crate::options::{PacingArgs, TenantArgs, TogetherArgs};
use replay::exec::{Pace, Session, SessionOpts};
use replay::together::measure::{self, Pass, RunResult};
use replay::together::{self, Capacity, Run, Tenant, TogetherPlan};
use tracer_cupti::collect::monotonic_ns;

/// Opens and plans every recording (pure: no GPU), each paced as `pacing` says: its
/// `--host-scale` factor, or the factor that gives its `--host-alone-ms` alone time in the
/// simulation of `model` (each option as given: none, one for all, or one per recording).
pub fn tenants(
    recordings: &[PathBuf],
    phase: &str,
    pacing: &PacingArgs,
    model: &together::predict::Model,
) -> Result<Vec<Tenant>> {
    let scales = together::pacing::host_scales(&pacing.host_scale, recordings.len())?;
    let alone = together::pacing::alone_targets(&pacing.host_alone_ms, recordings.len())?;
    let mut tenants = Vec::new();
    for ((r, f), target) in recordings.iter().zip(scales).zip(alone) {
        let planned = replay::selection::open(r, None)?.plan()?;
        let pacer = pacing.host.pacer(&planned.rec.trace)?;
        let mut t = Tenant::new(&planned.rec, &planned.plan, phase, &pacer, f);
        if let Some(ns) = target {
            t.pace_to_alone(ns, model)?;
        }
        tenants.push(t);
    }
    Ok(tenants)
}

/// The device's memory (cuDeviceTotalMem: no context is created).
fn device_capacity(device: i32) -> Result<Capacity> {
    use cudarc::driver::sys;
    use replay::exec::cuda::ck;
    if !replay::exec::cuda::libcuda_present() {
        bail!("libcuda.so could not be loaded (no NVIDIA driver on this machine?)");
    }
    // SAFETY: plain driver API calls with valid out-pointers.
    unsafe {
        ck(sys::cuInit(0), "cuInit")?;
        let mut dev: sys::CUdevice = 0;
        ck(sys::cuDeviceGet(&mut dev, device), &format!("cuDeviceGet({device})"))?;
        let mut bytes: usize = 0;
        ck(sys::cuDeviceTotalMem_v2(&mut bytes, dev), "cuDeviceTotalMem")?;
        Ok(Capacity { bytes: bytes as u64, source: format!("cuDeviceTotalMem of device {device}") })
    }
}

/// A running tenant.
struct Child_ {
    recording: String,
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

/// Seconds since the epoch of the last answer any tenant gave; the watchdog
/// kills every tenant when none answers for longer than its limit (a tenant
/// stuck in a GPU pass would otherwise hang the parent's read for ever).
static LAST_ANSWER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

fn now_s() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// Kills the tenants (by pid) once no answer came for `limit_s` seconds.
fn watchdog(pids: Vec<u32>, limit_s: u64) {
    LAST_ANSWER.store(now_s(), std::sync::atomic::Ordering::Relaxed);
    std::thread::spawn(move || {
        loop {
            std::thread::sleep(std::time::Duration::from_secs(1));
            if now_s().saturating_sub(LAST_ANSWER.load(std::sync::atomic::Ordering::Relaxed)) > limit_s {
                eprintln!("replay: no tenant answered for {limit_s} s: stopping them");
                for p in &pids {
                    // SAFETY: kill(2) on our own children's pids.
                    unsafe { libc::kill(*p as i32, libc::SIGKILL) };
                }
                return;
            }
        }
    });
}

impl Child_ {
    fn send(&mut self, line: &str) -> Result<()> {
        writeln!(self.stdin, "{line}")
            .and_then(|_| self.stdin.flush())
            .with_context(|| format!("{}: tenant gone", self.recording))
    }
    fn answer(&mut self) -> Result<Value> {
        let mut l = String::new();
        let n = self.stdout.read_line(&mut l).with_context(|| format!("{}: tenant's answer", self.recording))?;
        LAST_ANSWER.store(now_s(), std::sync::atomic::Ordering::Relaxed);
        if n == 0 {
            bail!("{}: the tenant exited (its errors above)", self.recording);
        }
        let v: Value =
            serde_json::from_str(&l).with_context(|| format!("{}: tenant's answer {l:?}", self.recording))?;
        if let Some(e) = v.get("error").and_then(|e| e.as_str()) {
            bail!("{}: {e}", self.recording);
        }
        Ok(v)
    }
}

fn spawn(a: &TogetherArgs, rec: &Path, host_scale: f64, host_speed: f64) -> Result<Child_> {
    let exe = std::env::current_exe().context("the replay executable's path")?;
    let mut c = Command::new(exe);
    c.arg("tenant").arg(rec).arg("--device").arg(a.device.to_string()).arg("--phase").arg(&a.phase);
    c.arg("--host-scale").arg(host_scale.to_string());
    c.args(a.pacing.host.tenant_args(host_speed));
    if a.no_cupti {
        c.arg("--no-cupti");
    }
    if a.rerun_before_phase {
        c.arg("--rerun-before-phase");
    }
    if let Some(l) = &a.cupti_lib {
        c.arg("--cupti-lib").arg(l);
    }
    let mut child = c
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .with_context(|| format!("{}: cannot start its tenant process", rec.display()))?;
    let stdin = child.stdin.take().unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    Ok(Child_ { recording: rec.display().to_string(), child, stdin, stdout })
}

fn pass_of(v: &Value) -> Result<Pass> {
    serde_json::from_value(v["pass"].clone()).context("a tenant's pass figures")
}

/// Runs one run of a round: `run` to the tenants involved, back to back, then their answers.
fn run_once(
    kids: &mut [Child_],
    run: Run,
    meter: Option<&replay::energy::Meter>,
    what: &str,
    settle: std::time::Duration,
) -> Result<(RunResult, Vec<Value>)> {
    let who: Vec<usize> = match run {
        Run::Alone(i) => vec![i],
        Run::Together => (0..kids.len()).collect(),
    };
    // Each tenant runs the ops before its phase and says armed; then `go` to all, back to back.
    for &i in &who {
        kids[i].send(what)?;
    }
    for &i in &who {
        kids[i].answer()?;
    }
    // The GPU idles a moment before every run: its clocks depend on the power it drew just
    // before (a phase of matrix products ran 3-6 % faster after 0.3 s of idle than right after
    // the same work: docs/colocation.md), so every run starts from the same state.
    std::thread::sleep(settle);
    let e0 = meter.and_then(|m| m.energy_mj().ok());
    for &i in &who {
        kids[i].send("go")?;
    }
    let mut passes = Vec::new();
    let mut raw = Vec::new();
    for &i in &who {
        let v = kids[i].answer()?;
        passes.push((i, pass_of(&v)?));
        raw.push(v);
    }
    let e1 = meter.and_then(|m| m.energy_mj().ok());
    let energy_mj = match (e0, e1) {
        (Some(a), Some(b)) => Some(b.saturating_sub(a) as f64),
        _ => None,
    };
    Ok((RunResult { run, passes, energy_mj }, raw))
}

pub fn together(a: &TogetherArgs) -> Result<ExitCode> {
    // Refusals that need only the manifests, then the memory of this device (not the recorded
    // one's: recordings of an H100 may run together on an H200), before any tenant starts.
    let model = a.model.model();
    let tenants = tenants(&a.recordings, &a.phase, &a.pacing, &model)?;
    let scales: Vec<(f64, f64)> = tenants.iter().map(|t| (t.host_scale, t.pacing.host_speed)).collect();
    together::plan(tenants.clone(), None, a.rounds, model)?;
    let cap = device_capacity(a.device)?;
    let tp = together::plan(tenants, Some(cap), a.rounds, model)?;
    eprint!("{}", tracer_format::inert::text(&tp.text()));
    let mut kids: Vec<Child_> = Vec::new();
    for (r, &(f, speed)) in a.recordings.iter().zip(&scales) {
        match spawn(a, r, f, speed) {
            Ok(k) => kids.push(k),
            Err(e) => {
                // None left running.
                for k in kids.iter_mut() {
                    let _ = k.child.kill();
                    let _ = k.child.wait();
                }
                return Err(e);
            }
        }
    }
    // The longest a tenant may take to answer: loading its images, then its passes
    // (a few times its recorded span each), with a wide margin.
    let span_s = tp.tenants.iter().map(|t| t.paced_span_ns).max().unwrap_or(0) / 1_000_000_000;
    watchdog(kids.iter().map(|k| k.child.id()).collect(), 600 + 20 * span_s);
    let result = drive(a, &tp, &mut kids);
    for k in kids.iter_mut() {
        let _ = k.send("quit");
    }
    for k in kids.iter_mut() {
        if result.is_err() {
            let _ = k.child.kill();
        }
        let _ = k.child.wait();
    }
    result
}

fn drive(a: &TogetherArgs, tp: &TogetherPlan, kids: &mut [Child_]) -> Result<ExitCode> {
    // Every tenant's images loaded before any of them runs anything: an image without code for
    // this GPU stops all here. Then each one's checking and warm-up passes.
    for k in kids.iter_mut() {
        k.answer()?;
    }
    for k in kids.iter_mut() {
        k.send("start")?;
    }
    let mut ready = Vec::new();
    for k in kids.iter_mut() {
        ready.push(k.answer()?);
    }
    let bus = ready[0]["bus"].as_str().unwrap_or("").to_owned();
    let mut notes: Vec<String> = ready.iter().filter_map(|r| r["cupti_error"].as_str().map(str::to_owned)).collect();
    for (t, r) in tp.tenants.iter().zip(&ready) {
        if let Some(why) = r["phase_start"].as_str().filter(|w| *w != "snapshot") {
            notes.push(format!("{}: each run reruns the ops before its phase ({why})", t.recording));
        }
    }
    let meter = if a.no_energy {
        None
    } else {
        match replay::energy::Meter::new(&bus) {
            Ok(m) => Some(m),
            Err(e) => {
                notes.push(format!("energy not measured: {e:#}"));
                None
            }
        }
    };
    let settle = std::time::Duration::from_millis(a.settle_ms);
    eprintln!("each run starts after the GPU idles {} ms (--settle-ms)", a.settle_ms);
    let mut runs = Vec::new();
    let total: usize = tp.rounds.iter().map(|r| r.len()).sum();
    let mut done = 0;
    for (r, round) in tp.rounds.iter().enumerate() {
        for &run in round {
            done += 1;
            eprint!("\r\x1b[2Ktogether: round {}/{}, {run} ({done}/{total})", r + 1, tp.rounds.len());
            let _ = std::io::stderr().flush();
            runs.push(run_once(kids, run, meter.as_ref(), "run", settle)?.0);
        }
    }
    eprintln!();
    if let Some(path) = &a.activities {
        let names: Vec<String> = tp.tenants.iter().map(|t| together::activities::name(&t.recording)).collect();
        let text: String = together::activities::lines(&runs, &names).iter().map(|l| l.to_string() + "\n").collect();
        std::fs::write(path, text).with_context(|| format!("{}: cannot write", path.display()))?;
    }
    // The last together pass: every output checked bit for bit.
    let (_, raw) = run_once(kids, Run::Together, None, "check", settle)?;
    let checks: Vec<Value> = raw.iter().map(|v| v["checks"].clone()).collect();
    let slow = measure::slowdowns(kids.len(), &runs);
    let gpu = measure::gpu(kids.len(), &runs);
    let identical = ready.iter().chain(raw.iter()).all(|v| {
        let c = if v.get("checks").is_some() { &v["checks"] } else { &v["first_checks"] };
        c["identical"] == c["checked"]
    });
    let checked: u64 = ready
        .iter()
        .chain(raw.iter())
        .map(|v| {
            let c = if v.get("checks").is_some() { &v["checks"] } else { &v["first_checks"] };
            c["checked"].as_u64().unwrap_or(0)
        })
        .sum();
    if meter.is_some() {
        notes.push("energy: NVML's counter read before and after each run: its update period (tens of ms) bounds the error of a run's figure".into());
    }
    let tenants: Vec<Value> = tp
        .tenants
        .iter()
        .enumerate()
        .map(|(i, t)| {
            json!({"recording": t.recording, "plan": t, "setup": ready[i], "final_checks": checks[i],
                   "measured": slow[i], "predicted": tp.prediction[i]})
        })
        .collect();
    let out = json!({
        "gpu_model": ready[0]["gpu"], "gpu_bus": bus, "settle_ms": a.settle_ms,
        "plan": tp, "tenants": tenants, "gpu": gpu,
        "runs": runs_json(&runs), "outputs_identical": identical, "notes": notes,
    });
    let path = a.report.clone().unwrap_or_else(|| PathBuf::from("together-report.json"));
    std::fs::write(&path, serde_json::to_string_pretty(&out)? + "\n")
        .with_context(|| format!("{}: cannot write", path.display()))?;
    print!(
        "{}",
        table(tp, &slow, &gpu, identical).replace(
            "outputs: identical bit for bit",
            if checked == 0 {
                "outputs: none compared (no device-to-host copies recorded)"
            } else {
                "outputs: identical bit for bit"
            },
        )
    );
    for n in &notes {
        println!("note: {n}");
    }
    println!("report: {}", path.display());
    Ok(if identical { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

/// The runs in the report: each pass's wall time and window, each run's busy time and energy (the
/// busy intervals themselves left out).
fn runs_json(runs: &[RunResult]) -> Value {
    runs.iter()
        .map(|r| {
            let passes: Vec<Value> = r
                .passes
                .iter()
                .map(|(i, p)| json!({"tenant": i + 1, "wall_ms": p.wall_ms, "t0_ns": p.t0_ns, "t1_ns": p.t1_ns}))
                .collect();
            json!({"run": r.run.to_string(), "passes": passes, "window_ns": r.window_ns(), "busy_ns": r.busy_ns(), "energy_mj": r.energy_mj})
        })
        .collect()
}

/// The readable table of a together run.
pub fn table(tp: &TogetherPlan, slow: &[measure::Slowdown], gpu: &[measure::Gpu], identical: bool) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:<4} {:<40} {:>10} {:>10} {:>9} {:>8} {:>9} {:>9}",
        "", "tenant", "alone ms", "tog. ms", "slowdown", "spread", "predicted", "error"
    );
    for (i, (t, x)) in tp.tenants.iter().zip(slow).enumerate() {
        let pred = tp.prediction.get(i).and_then(|p| p.slowdown);
        let name =
            Path::new(&t.recording).file_name().map_or(t.recording.clone(), |n| n.to_string_lossy().into_owned());
        let _ = writeln!(
            s,
            "{:<4} {:<40} {:>10.3} {:>10.3} {:>8.3}× {:>7.1}% {:>9} {:>9}",
            i + 1,
            name,
            x.alone_median_ms,
            x.together_median_ms,
            x.slowdown,
            x.alone_spread_pct,
            pred.map_or("-".into(), |p| format!("{p:.3}×")),
            pred.map_or("-".into(), |p| format!("{:+.1}%", 100.0 * (p - x.slowdown) / x.slowdown)),
        );
    }
    let _ = writeln!(s, "spread: the alone-vs-alone spread (max − min over the median of the alone passes)");
    let _ = writeln!(
        s,
        "{:<12} {:>5} {:>11} {:>10} {:>10} {:>10}",
        "GPU, run", "runs", "window ms", "busy ms", "idle ms", "energy J"
    );
    let f = |x: Option<f64>, p: usize| x.map_or("-".into(), |v| format!("{v:.p$}"));
    for g in gpu {
        let _ = writeln!(
            s,
            "{:<12} {:>5} {:>11.3} {:>10} {:>10} {:>10}",
            g.run,
            g.runs,
            g.window_ms,
            f(g.busy_ms, 3),
            f(g.idle_ms, 3),
            f(g.energy_j, 3)
        );
    }
    let _ = writeln!(s, "outputs: {}", if identical { "identical bit for bit" } else { "DIFFERENT (see the report)" });
    s
}

/// `replay tenant REC`: set up, check, warm up, say ready, then one paced pass per `run`/`check` line.
pub fn tenant(a: &TenantArgs) -> Result<ExitCode> {
    let out = std::io::stdout();
    let say = |v: Value| {
        let mut o = out.lock();
        let _ = writeln!(o, "{v}");
        let _ = o.flush();
    };
    match tenant_loop(a, &say) {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(e) => {
            let mut msg = format!("{e:#}");
            if msg.contains("NO_BINARY_FOR_GPU") {
                msg.push_str(
                    " (an image without code for this GPU's architecture: record this tenant on this GPU model)",
                );
            }
            say(json!({"error": msg}));
            Ok(ExitCode::from(1))
        }
    }
}

fn checks_json(c: &[replay::exec::OutputCheck]) -> Value {
    let bad: Vec<&replay::exec::OutputCheck> = c.iter().filter(|x| !x.matches).collect();
    json!({"checked": c.len(), "identical": c.len() - bad.len(), "first_difference_line": bad.first().map(|x| x.line)})
}

fn tenant_loop(a: &TenantArgs, say: &dyn Fn(Value)) -> Result<()> {
    let planned = replay::selection::open(&a.recording, None)?.plan()?;
    let (rec, p) = (planned.rec, planned.plan);
    if p.ops.iter().all(|o| !o.is_work()) {
        bail!("nothing to replay (no replayable launch, copy or set)");
    }
    // CUPTI before the first CUDA call, so that the context is covered; without it, no busy time.
    let (cupti, cupti_error) = if a.no_cupti {
        (None, None)
    } else {
        match tracer_cupti::collect::start(a.cupti_lib.as_deref()) {
            Ok(c) => (Some(c), None),
            Err(e) => (None, Some(format!("{}: no GPU busy time (CUPTI: {e})", a.recording.display()))),
        }
    };
    let opts = SessionOpts {
        force_relocation: false,
        fill: 0,
        probes: vec![],
        pinned_copies: false,
        expand_graphs: false,
        graph_rebuild: Default::default(),
        time_graph_launches: false,
        device_memory: Default::default(),
        skip_ops: Vec::new(),
    };
    let s = Session::new(&rec, &p, a.device, &opts)?;
    // Every tenant's images loaded before any runs: one without code for this GPU stops all here.
    say(json!({"loaded": true}));
    let mut lines = std::io::stdin().lock().lines();
    match lines.next().transpose()?.as_deref().map(str::trim) {
        Some("start") => {}
        Some("quit") | None => return Ok(()),
        Some(other) => bail!("expected start from the parent, got {other:?}"),
    }
    let phase = together::phase::phase(&p.ops, &rec.trace.markers, &a.phase);
    let pacer = a.host.pacer(&rec.trace)?;
    let mut gaps = pacer.gaps(&rec.trace, &p.ops).0.gaps;
    together::pacing::scale(&mut gaps, a.host_scale);
    // The measured phase starts at `go`: no wait for the gap before its first op
    // (a constant in every pass would dilute the slowdowns; the plan's span
    // counts from the phase's first op too).
    if let Some(g) = gaps.get_mut(phase.ops.start) {
        g.ns = 0;
    }
    let (_, _, first) = s.pass(None, Some(&rec)).context("first (checking) pass")?;
    before_phase(&s, &phase).context("warm-up pass")?;
    // The memory at the phase's start, kept: each run restores it instead of running the ops
    // before the phase again, as a served program's next request does not redo its set-up and
    // warm-up (and a run takes less time). Without device memory for it, each run reruns them.
    let (snap, phase_start) = if a.rerun_before_phase {
        (None, json!("rerun: --rerun-before-phase"))
    } else {
        match s.snapshot().and_then(|x| x.save().map(|()| x)) {
            Ok(x) => (Some(x), json!("snapshot")),
            Err(e) => (None, json!(format!("rerun: no device memory for a snapshot ({e:#})"))),
        }
    };
    s.pass_ops(phase.ops.clone(), Some(Pace::Gaps(&gaps)), None).context("warm-up pass")?;
    if let Some(c) = &cupti {
        c.take();
    }
    say(json!({"ready": true, "gpu": s.ctx.name, "bus": s.ctx.pci_bus_id, "first_checks": checks_json(&first),
               "cupti_error": cupti_error, "phase_start": phase_start}));
    while let Some(line) = lines.next() {
        let check = match line?.trim() {
            "run" => false,
            "check" => true,
            "quit" | "" => return Ok(()),
            other => bail!("unknown command {other:?} from the parent"),
        };
        // The memory at the phase's start (or the ops before the phase, unpaced), then armed at
        // the start barrier.
        match &snap {
            Some(x) => x.restore().context("restoring the memory at the phase's start")?,
            None => {
                before_phase(&s, &phase).context("the ops before the measured phase")?;
            }
        }
        if let Some(c) = &cupti {
            c.take();
        }
        say(json!({"armed": true}));
        match lines.next().transpose()?.as_deref().map(str::trim) {
            Some("go") => {}
            Some("quit") | None => return Ok(()),
            Some(other) => bail!("expected go from the parent, got {other:?}"),
        }
        let t0 = monotonic_ns();
        let (gpu_ms, wall_ms, c) = s.pass_ops(phase.ops.clone(), Some(Pace::Gaps(&gaps)), check.then_some(&rec))?;
        let t1 = monotonic_ns();
        let busy = cupti.as_ref().map(|c| {
            let mut iv: Vec<(u64, u64)> = c.take().activities.iter().map(|x| (x.start, x.end)).collect();
            replay::gpu_time::merge(&mut iv, 0)
        });
        let pass = Pass { wall_ms, t0_ns: t0, t1_ns: t1, busy };
        let mut v = json!({"pass": pass, "gpu_ms": gpu_ms});
        if check {
            v["checks"] = checks_json(&c);
        }
        say(v);
    }
    Ok(())
}

/// The initial memory, then the ops before the measured phase, unpaced: the state the phase
/// starts from.
fn before_phase(s: &Session, phase: &together::phase::Phase) -> Result<()> {
    s.reset_memory()?;
    s.pass_ops(0..phase.ops.start, None, None)?;
    Ok(())
}
