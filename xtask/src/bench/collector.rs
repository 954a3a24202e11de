//! `cargo xtask bench collector` (root, no GPU): what tracing costs per call
//! and what the collector can carry, on this machine.
//!
//! 1. Per call: tracer/tests/fakecuda/bench.c calls a probed function of the
//!    fake libcuda (its functions start with `push %rbp`, like real
//!    libcuda's) in a loop on 1..N threads and times the loop itself. Each
//!    configuration runs untraced, under empty programs attached the same
//!    way (the mechanism's floor: entry, entry+return), under tracer's
//!    default and under `--returns all`, interleaved, `reps` times.
//! 2. Collector ceiling: a source that is not trap-bound (`tracer
//!    --bench-producer`: each getppid() of the traced program is a launch
//!    record) at fixed rates: records to JSONL on disk, loss, the
//!    collector's CPU and its memory sampled during the run.
//! 3. Readers: `tracer summary` (and report/gaps/export where they exist) on the
//!    largest trace of step 2: lines/s and MB/s.
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use tracer_format::footer::Footer;

use super::stats::{median, range};
use crate::{setup, util};

pub struct Opts {
    pub calls: u64,
    pub threads: Vec<u32>,
    pub funcs: Vec<String>,
    pub reps: u32,
    pub rates: Vec<u64>,
    pub seconds: f64,
    pub save: bool,
}

/// The release tracer, the fake libcuda and bench.c built against it.
pub(super) struct Env {
    pub(super) tracer: PathBuf,
    pub(super) lib: PathBuf,
    pub(super) bench: PathBuf,
    pub(super) dir: PathBuf,
}

/// Traced modes: name, tracer options (None: untraced).
const MODES: &[(&str, Option<&[&str]>)] = &[
    ("untraced", None),
    ("empty_entry", Some(&["--bench-probe", "empty"])),
    ("empty_entry_return", Some(&["--bench-probe", "empty-return"])),
    ("tracer_default", Some(&[])),
    ("tracer_returns_all", Some(&["--returns", "all"])),
    ("tracer_counts", Some(&["--counts"])),
];

/// Modes of the program-body pass (kernel-measured with --bpf-stats).
const BODY_MODES: &[(&str, &[&str])] = &[
    ("empty_entry_return", &["--bench-probe", "empty-return"]),
    ("filter_only", &["--bench-probe", "filter"]),
    ("filter_and_ring_record", &["--bench-probe", "ring"]),
    ("tracer_default", &[]),
    ("tracer_returns_all", &["--returns", "all"]),
    ("tracer_counts", &["--counts"]),
];

/// Functions of bench.c and whether tracer's default probes them entry-only.
fn entry_only_by_default(func: &str) -> bool {
    func == "launch"
}

pub fn run(o: &Opts) -> Result<()> {
    if !util::is_root()? {
        bail!("the collector benchmark loads eBPF programs: run it as root (sudo -E cargo xtask bench collector)");
    }
    setup::run()?;
    util::run(util::cargo().args(["build", "--release", "-p", "tracer"]))?;
    let env = build_env()?;
    let mut per_call = Vec::new();
    // Interleaved: every mode once per repetition, so drift hits all alike.
    let mut samples: Vec<Vec<Vec<Value>>> = Vec::new();
    let configs: Vec<(String, u32)> =
        o.funcs.iter().flat_map(|f| o.threads.iter().map(move |&t| (f.clone(), t))).collect();
    samples.resize(configs.len(), vec![Vec::new(); MODES.len()]);
    for rep in 0..o.reps {
        for (ci, (func, threads)) in configs.iter().enumerate() {
            for (mi, (mode, opts)) in MODES.iter().enumerate() {
                let s = run_calls(&env, func, o.calls, *threads, *opts)
                    .with_context(|| format!("{func} x{threads} {mode}, repetition {}", rep + 1))?;
                samples[ci][mi].push(s);
            }
        }
        println!("repetition {}/{} done", rep + 1, o.reps);
    }
    for (ci, (func, threads)) in configs.iter().enumerate() {
        per_call.push(summarize_calls(func, *threads, o.calls, &samples[ci]));
    }

    // Where the program's time goes: the kernel times each run (--bpf-stats,
    // which adds its own ~50 ns per run, the same in every mode).
    let mut body = Vec::new();
    for func in &o.funcs {
        for (mode, opts) in BODY_MODES {
            let mut opts = opts.to_vec();
            opts.push("--bpf-stats");
            let v = run_calls(&env, func, o.calls, 1, Some(&opts))?;
            body.push(json!({ "func": func, "mode": mode, "programs": v["bpf_stats"] }));
        }
    }

    let mut ceiling = Vec::new();
    let mut biggest: Option<(PathBuf, u64)> = None;
    // To the disk (what users get; this VM's page cache takes ~220 MB/s)
    // and to tmpfs (the collector's own ceiling).
    // And zstd-compressed to disk (`-o TRACE.jsonl.zst`).
    let shm = Path::new("/dev/shm/tracer-bench");
    let mut targets = vec![("disk", env.dir.clone(), "jsonl"), ("disk, zstd", env.dir.clone(), "jsonl.zst")];
    if fs::create_dir_all(shm).is_ok() {
        targets.push(("tmpfs", shm.to_path_buf(), "jsonl"));
    }
    for (run, (&rate, (medium, dir, ext))) in
        o.rates.iter().flat_map(|r| targets.iter().map(move |t| (r, t))).enumerate()
    {
        // One name per run: a rate may be given several times (repetitions).
        let (mut v, trace) = run_ceiling(&env, dir, &format!("{run}.{ext}"), rate, o.seconds)?;
        v["medium"] = json!(medium);
        if *medium != "disk" {
            let _ = fs::remove_file(trace);
            ceiling.push(v);
            continue;
        }
        let lines = v["records"].as_u64().unwrap_or(0);
        if biggest.as_ref().is_none_or(|(_, n)| lines > *n) {
            if let Some((old, _)) = biggest.take() {
                let _ = fs::remove_file(old);
            }
            biggest = Some((trace, lines));
        } else {
            let _ = fs::remove_file(trace);
        }
        ceiling.push(v);
    }
    let readers = match &biggest {
        Some((trace, _)) => run_readers(&env, trace)?,
        None => Vec::new(),
    };
    if let Some((trace, _)) = biggest {
        let _ = fs::remove_file(trace);
    }

    let result = json!({
        "benchmark": "collector",
        "date": util::utc_timestamp(),
        "host": super::host::machine(),
        "calls_per_thread": o.calls,
        "repetitions": o.reps,
        "per_call": per_call,
        "program_body": body,
        "ceiling": ceiling,
        "readers": readers,
        "command": std::env::args().skip(1).collect::<Vec<_>>().join(" "),
    });
    let md = markdown(&result);
    println!("\n{md}");
    let out = util::target_dir().join("bench/collector.json");
    fs::write(&out, serde_json::to_string_pretty(&result)?)?;
    println!("written: {}", out.display());
    if o.save {
        let day = &util::utc_timestamp()[..8];
        let dir = util::repo_root().join("docs/bench");
        fs::create_dir_all(&dir)?;
        let j = dir.join(format!("collector_{day}.json"));
        fs::write(&j, serde_json::to_string_pretty(&result)?)?;
        fs::write(dir.join(format!("collector_{day}.md")), &md)?;
        println!("saved: {} and .md", j.display());
    }
    Ok(())
}

pub(super) fn build_env() -> Result<Env> {
    let tracer = util::target_dir().join("release/tracer");
    let dir = util::target_dir().join("bench/collector");
    fs::create_dir_all(&dir)?;
    let src = util::repo_root().join("tracer/tests/fakecuda");
    let lib = dir.join("libcuda.so.1");
    let bench = dir.join("bench");
    let s = |p: &Path| p.display().to_string();
    // Same flags as the tests' fake: every function starts with push %rbp.
    util::run(util::cmd("cc").args([
        "-O0",
        "-fno-omit-frame-pointer",
        "-fcf-protection=none",
        "-fPIC",
        "-shared",
        "-Wl,-soname,libcuda.so.1",
        "-o",
        &s(&lib),
        &s(&src.join("fakecuda.c")),
    ]))?;
    util::run(util::cmd("cc").args([
        "-O2",
        "-Wall",
        "-o",
        &s(&bench),
        &s(&src.join("bench.c")),
        &format!("-L{}", s(&dir)),
        "-l:libcuda.so.1",
        &format!("-Wl,-rpath,{}", s(&dir)),
        "-pthread",
    ]))?;
    Ok(Env { tracer, lib, bench, dir })
}

fn last_json_line(text: &str) -> Option<Value> {
    text.lines().rev().find_map(|l| serde_json::from_str::<Value>(l.trim()).ok().filter(Value::is_object))
}

/// The last line of a trace (read from its end: traces here reach GBs; a
/// .zst one is decoded whole).
fn footer(trace: &Path) -> Result<Footer> {
    tracer_format::footer::read_last(trace)
}

fn tracer_cmd(env: &Env, out: &Path, opts: &[&str]) -> Command {
    let mut c = Command::new(&env.tracer);
    c.args(["-q", "--force", "-o"]).arg(out).arg("--libcuda").arg(&env.lib).args(opts).arg("--");
    c
}

/// One loop run; the bench's own figures, plus the footer's when traced.
fn run_calls(env: &Env, func: &str, n: u64, threads: u32, opts: Option<&[&str]>) -> Result<Value> {
    let args = ["calls".to_string(), func.to_string(), n.to_string(), threads.to_string()];
    let trace = env.dir.join("calls.jsonl");
    let mut c = match opts {
        None => Command::new(&env.bench),
        Some(o) => {
            let mut c = tracer_cmd(env, &trace, o);
            c.arg(&env.bench);
            c
        }
    };
    c.args(&args).stdin(Stdio::null());
    let out = c.output().context("running the benchmark")?;
    if !out.status.success() {
        bail!("{:?} failed ({}): {}", c, out.status, String::from_utf8_lossy(&out.stderr));
    }
    let mut v = last_json_line(&String::from_utf8_lossy(&out.stdout)).context("no result line from bench")?;
    if let Some(o) = opts {
        let f = footer(&trace)?;
        let want = (n + 1000) * threads as u64;
        // --counts: the launches are in the count lines, not call lines.
        let recorded = if o.contains(&"--counts") && entry_only_by_default(func) {
            counted_calls(&trace)?
        } else {
            f.calls.unwrap_or(0)
        };
        let lost = f.lost_total().unwrap_or(u64::MAX);
        // The empty programs record nothing; tracer must record every call.
        if o.first() != Some(&"--bench-probe") && (recorded != want || lost != 0) {
            bail!("recorded {recorded} of {want} calls, {lost} lost: {}", json!(f));
        }
        v["recorded"] = json!(recorded);
        v["lost"] = json!(lost);
        v["collector_cpu_s"] = json!(f.collector_cpu_s());
        v["collector_max_rss_kib"] = json!(max_rss_kib(&f));
        v["bpf_stats"] = match &f.bpf_stats {
            Some(m) => m
                .iter()
                .filter(|(k, _)| k.starts_with("cu_"))
                .map(|(k, s)| (k.clone(), s["ns_per_run"].clone()))
                .collect::<serde_json::Map<_, _>>()
                .into(),
            None => Value::Null,
        };
    }
    let _ = fs::remove_file(&trace);
    Ok(v)
}

/// The calls of the `count` lines of a `--counts` trace.
fn counted_calls(trace: &Path) -> Result<u64> {
    let text = fs::read_to_string(trace)?;
    Ok(text
        .lines()
        .filter(|l| l.contains("\"type\":\"count\""))
        .filter_map(|l| serde_json::from_str::<Value>(l).ok()?["calls"].as_u64())
        .sum())
}

fn max_rss_kib(footer: &Footer) -> Option<u64> {
    footer.collector.as_ref()?.max_rss_kib
}

fn summarize_calls(func: &str, threads: u32, n: u64, samples: &[Vec<Value>]) -> Value {
    // The calling thread's CPU time per call (traps and programs are its
    // system time), not wall time: on a shared machine, time preempted by
    // other processes is not the probes' cost. Wall time if absent.
    let per_call = |v: &Value| v["cpu_ns_per_call"].as_f64().or(v["ns_per_call"].as_f64());
    let ns = |mi: usize| samples[mi].iter().filter_map(per_call).collect::<Vec<_>>();
    let med: Vec<f64> = (0..MODES.len()).map(|mi| median(&ns(mi))).collect();
    let base = med[0];
    let over = |mi: usize| med[mi] - base;
    let floor_default = if entry_only_by_default(func) { over(1) } else { over(2) };
    let mut modes = serde_json::Map::new();
    for (mi, (name, _)) in MODES.iter().enumerate() {
        let (lo, hi) = range(&ns(mi));
        let cpu: Vec<f64> = samples[mi].iter().filter_map(|v| v["collector_cpu_s"].as_f64()).collect();
        let rss: Vec<f64> = samples[mi].iter().filter_map(|v| v["collector_max_rss_kib"].as_f64()).collect();
        modes.insert(
            name.to_string(),
            json!({
                "ns_per_call_median": med[mi],
                "ns_per_call_min": lo,
                "ns_per_call_max": hi,
                "added_ns_per_call": over(mi),
                "collector_cpu_ns_per_call": if cpu.is_empty() { Value::Null } else { json!(median(&cpu) * 1e9 / ((n + 1000) * threads as u64) as f64) },
                "collector_max_rss_kib": if rss.is_empty() { Value::Null } else { json!(median(&rss)) },
            }),
        );
    }
    json!({
        "func": func,
        "threads": threads,
        "modes": modes,
        "default_vs_floor": over(3) / floor_default,
        "returns_all_vs_floor": over(4) / over(2),
        "counts_vs_floor": over(5) / floor_default,
        "default_floor": if entry_only_by_default(func) { "empty_entry" } else { "empty_entry_return" },
    })
}

/// The collector's own memory: anonymous resident pages (its heap). VmRSS
/// also counts the ring buffer's mapping (file-backed, twice the buffer size
/// since its pages are mapped twice) once touched.
fn rss_anon_kib(pid: u32) -> Option<u64> {
    let s = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    s.lines().find_map(|l| l.strip_prefix("RssAnon:")).and_then(|v| v.split_whitespace().next()?.parse().ok())
}

/// The producer at `rate` records/s for `seconds`; returns the figures and
/// the trace (left on disk for the readers).
/// `suffix`: the rest of the trace's name (run number and extension).
fn run_ceiling(env: &Env, dir: &Path, suffix: &str, rate: u64, seconds: f64) -> Result<(Value, PathBuf)> {
    let trace = dir.join(format!("ceiling_{rate}_{suffix}"));
    let mut c = tracer_cmd(env, &trace, &["--bench-producer"]);
    c.arg(&env.bench).args(["getppid", &rate.to_string(), &seconds.to_string()]);
    c.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let t0 = Instant::now();
    let mut child = c.spawn().context("starting tracer")?;
    let pid = child.id();
    let mut rss = Vec::new();
    while child.try_wait()?.is_none() {
        if let Some(k) = rss_anon_kib(pid) {
            rss.push(json!([t0.elapsed().as_secs_f64(), k]));
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    let out = child.wait_with_output()?;
    let wall = t0.elapsed().as_secs_f64();
    if !out.status.success() {
        bail!("tracer --bench-producer failed ({}): {}", out.status, String::from_utf8_lossy(&out.stderr));
    }
    let b = last_json_line(&String::from_utf8_lossy(&out.stdout)).context("no result line from bench")?;
    let f = footer(&trace)?;
    let produced = b["syscalls"].as_u64().unwrap_or(0);
    let recorded = f.calls.unwrap_or(0);
    let bytes = fs::metadata(&trace)?.len();
    let ran = b["seconds"].as_f64().unwrap_or(seconds);
    let ks: Vec<f64> = rss.iter().filter_map(|v| v[1].as_f64()).collect();
    let v = json!({
        "target_rate": rate,
        "produced": produced,
        "records": recorded,
        "lost": f.lost_total(),
        "produced_per_s": produced as f64 / ran,
        "recorded_per_s_while_producing": recorded as f64 / ran,
        "trace_mb_per_s": bytes as f64 / 1e6 / ran,
        // The footer's duration runs from the start of collection (probes
        // attached) to the end of the trace: past the producer's end, the
        // collector was still catching up.
        "drain_after_producer_s": (f.duration_s.unwrap_or(wall) - ran).max(0.0),
        "collector_cpu_s": f.collector_cpu_s(),
        "collector_cpu_share": f.collector_cpu_s() / f.duration_s.unwrap_or(wall),
        "collector_max_rss_kib": max_rss_kib(&f),
        // Skip the first samples: tracer starting up (loading, before exec).
        "rss_anon_kib_first": ks.get(2).or(ks.last()),
        "rss_anon_kib_last": ks.last(),
        "rss_anon_kib_max": ks.iter().copied().fold(0.0, f64::max),
        "rss_anon_kib_samples": rss,
        "trace_bytes": bytes,
    });
    println!(
        "ceiling {rate}/s: produced {produced}, recorded {recorded}, lost {}, collector cpu {:.2} s of {:.2} s",
        json!(f.lost_total()),
        f.collector_cpu_s(),
        wall
    );
    Ok((v, trace))
}

/// Time of `tracer SUB trace [extra]` per line and per byte.
fn run_readers(env: &Env, trace: &Path) -> Result<Vec<Value>> {
    let help = util::output(Command::new(&env.tracer).arg("--help")).unwrap_or_default();
    let bytes = fs::metadata(trace)?.len();
    let lines = {
        use std::io::BufRead as _;
        let mut r = std::io::BufReader::with_capacity(1 << 20, fs::File::open(trace)?);
        let (mut n, mut buf) = (0u64, Vec::new());
        while r.read_until(b'\n', &mut buf)? > 0 {
            n += 1;
            buf.clear();
        }
        n as f64
    };
    let mut v = Vec::new();
    let out = env.dir.join("export.json");
    let candidates: Vec<(&str, Vec<String>)> = vec![
        ("summary", vec![]),
        ("report", vec![]),
        ("gaps", vec![]),
        ("export", vec!["--format".into(), "perfetto".into(), "-o".into(), out.display().to_string()]),
    ];
    for (sub, extra) in candidates {
        if !help.lines().any(|l| l.trim_start().starts_with(sub)) {
            continue;
        }
        let _ = std::fs::remove_file(&out); // export refuses to overwrite
        let t0 = Instant::now();
        let st = Command::new(&env.tracer).arg(sub).arg(trace).args(&extra).stdout(Stdio::null()).status()?;
        let s = t0.elapsed().as_secs_f64();
        v.push(json!({
            "command": sub,
            "ok": st.success(),
            "lines": lines,
            "seconds": s,
            "lines_per_s": lines / s,
            "mb_per_s": bytes as f64 / 1e6 / s,
        }));
        println!("tracer {sub}: {lines} lines in {s:.2} s");
    }
    let _ = fs::remove_file(out);
    Ok(v)
}

fn markdown(r: &Value) -> String {
    let mut s = String::new();
    s += &format!(
        "Collector benchmark, {} on {} ({} cores, Linux {}); `cargo xtask {}`\n\n",
        r["date"].as_str().unwrap_or(""),
        r["host"]["cpu"].as_str().unwrap_or("?"),
        r["host"]["cores"],
        r["host"]["kernel"].as_str().unwrap_or("?"),
        r["command"].as_str().unwrap_or("")
    );
    s += "Per call (ns of the calling thread's CPU time, median of the repetitions; added = minus untraced):\n\n";
    s += "| function | threads | untraced | empty entry | empty entry+return | tracer default | tracer --returns all | tracer --counts | default / floor | all / floor | counts / floor | collector CPU ns/call (default) |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n";
    for p in r["per_call"].as_array().into_iter().flatten() {
        let m = |k: &str| p["modes"][k]["ns_per_call_median"].as_f64().unwrap_or(f64::NAN);
        let a = |k: &str| p["modes"][k]["added_ns_per_call"].as_f64().unwrap_or(f64::NAN);
        s += &format!(
            "| {} | {} | {:.0} | +{:.0} | +{:.0} | +{:.0} | +{:.0} | +{:.0} | {:.2}× ({}) | {:.2}× | {:.2}× | {:.0} |\n",
            p["func"].as_str().unwrap_or(""),
            p["threads"],
            m("untraced"),
            a("empty_entry"),
            a("empty_entry_return"),
            a("tracer_default"),
            a("tracer_returns_all"),
            a("tracer_counts"),
            p["default_vs_floor"].as_f64().unwrap_or(f64::NAN),
            p["default_floor"].as_str().unwrap_or(""),
            p["returns_all_vs_floor"].as_f64().unwrap_or(f64::NAN),
            p["counts_vs_floor"].as_f64().unwrap_or(f64::NAN),
            p["modes"]["tracer_default"]["collector_cpu_ns_per_call"].as_f64().unwrap_or(f64::NAN),
        );
    }
    s += "\nProgram body (ns per run measured by the kernel with --bpf-stats, 1 thread; includes ~50 ns of the measurement itself):\n\n| function | mode | programs |\n|---|---|---|\n";
    for b in r["program_body"].as_array().into_iter().flatten() {
        let progs = b["programs"]
            .as_object()
            .map(|m| {
                m.iter().map(|(k, v)| format!("{k} {:.0}", v.as_f64().unwrap_or(0.0))).collect::<Vec<_>>().join(", ")
            })
            .unwrap_or_default();
        s += &format!("| {} | {} | {} |\n", b["func"].as_str().unwrap_or(""), b["mode"].as_str().unwrap_or(""), progs);
    }
    s += "\nCollector ceiling (launch records from a getppid() producer, to JSONL on disk, to .jsonl.zst on disk, to JSONL on tmpfs):\n\n";
    s += "| to | target/s | produced/s | recorded | lost | drain after producer | collector CPU share | MB/s | anon RSS 1 s → end (max), KiB | max RSS incl. ring mapping (KiB) |\n|---|---|---|---|---|---|---|---|---|---|\n";
    for c in r["ceiling"].as_array().into_iter().flatten() {
        s += &format!(
            "| {} | {} | {:.0} | {} | {} | {:.2} s | {:.0}% | {:.0} | {} → {} ({}) | {} |\n",
            c["medium"].as_str().unwrap_or(""),
            c["target_rate"],
            c["produced_per_s"].as_f64().unwrap_or(0.0),
            c["records"],
            c["lost"],
            c["drain_after_producer_s"].as_f64().unwrap_or(0.0),
            100.0 * c["collector_cpu_share"].as_f64().unwrap_or(0.0),
            c["trace_mb_per_s"].as_f64().unwrap_or(0.0),
            c["rss_anon_kib_first"],
            c["rss_anon_kib_last"],
            c["rss_anon_kib_max"],
            c["collector_max_rss_kib"],
        );
    }
    if let Some(rd) = r["readers"].as_array().filter(|a| !a.is_empty()) {
        s += "\nReaders on the largest trace:\n\n| command | ok | lines | seconds | lines/s | MB/s |\n|---|---|---|---|---|---|\n";
        for x in rd {
            s += &format!(
                "| tracer {} | {} | {} | {:.2} | {:.0} | {:.1} |\n",
                x["command"].as_str().unwrap_or(""),
                x["ok"],
                x["lines"],
                x["seconds"].as_f64().unwrap_or(0.0),
                x["lines_per_s"].as_f64().unwrap_or(0.0),
                x["mb_per_s"].as_f64().unwrap_or(0.0)
            );
        }
    }
    s
}
