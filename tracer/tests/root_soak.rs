//! Soak: tracer records a program calling the fake libcuda at a steady rate
//! for TRACER_SOAK_SECONDS (20 s here; `cargo xtask bench soak` runs 10
//! minutes) while tracer's memory is sampled from /proc every few seconds.
//! Every call must be on disk, in order, with nothing lost, and tracer's
//! heap must stay flat.
//!
//! Memory: VmRSS and VmHWM are reported, but flatness is judged on RssAnon
//! (tracer's heap). VmRSS also counts the ring buffer's pages (RssFile), which
//! grow until the buffer has wrapped around once (64 MiB; about a minute at
//! these rates) and then stay: that is not a leak.
mod common;
mod relia;

use std::io::BufRead as _;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// One /proc sample of tracer.
#[derive(Clone, Copy, Debug)]
struct Sample {
    t: f64,
    rss_kib: u64,
    hwm_kib: u64,
    anon_kib: u64,
}

fn sample(pid: u32, t0: Instant) -> Option<Sample> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| -> Option<u64> {
        s.lines().find_map(|l| l.strip_prefix(name))?.split_whitespace().next()?.parse().ok()
    };
    Some(Sample {
        t: t0.elapsed().as_secs_f64(),
        rss_kib: field("VmRSS:")?,
        hwm_kib: field("VmHWM:")?,
        anon_kib: field("RssAnon:")?,
    })
}

#[test]
fn soak_steady_rate_nothing_lost_memory_flat() {
    if !common::root_tests_enabled() {
        return;
    }
    let secs = env_u64("TRACER_SOAK_SECONDS", 20);
    let rate = env_u64("TRACER_SOAK_RATE", 5000);
    let program = relia::program();
    let f = common::fake();
    let out = common::fresh_output("soak");
    let mut c = std::process::Command::new(common::tracer_bin());
    c.arg("-o").arg(&out).arg("--libcuda").arg(&f.lib).arg("--").arg(program);
    c.args(["steady", &rate.to_string(), &secs.to_string()]);
    c.stdout(Stdio::from(std::fs::File::create(out.with_extension("stdout")).unwrap()));
    c.stderr(Stdio::from(std::fs::File::create(out.with_extension("stderr")).unwrap()));
    c.stdin(Stdio::null());
    let t0 = Instant::now();
    let mut child = c.spawn().expect("start tracer");
    let pid = child.id();
    let every = Duration::from_secs_f64((secs as f64 / 40.0).clamp(1.0, 10.0));
    let mut samples = Vec::new();
    let limit = Duration::from_secs(secs + 180);
    let status = loop {
        // First sample after `every`: tracer has loaded its programs by then.
        std::thread::sleep(every);
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if let Some(s) = sample(pid, t0) {
            if samples.len() % 10 == 0 || secs <= 60 {
                println!(
                    "soak: {:6.1} s  VmRSS {:7} KiB  VmHWM {:7} KiB  RssAnon {:7} KiB",
                    s.t, s.rss_kib, s.hwm_kib, s.anon_kib
                );
            }
            samples.push(s);
        }
        if t0.elapsed() > limit {
            let _ = child.kill();
            panic!("tracer still running after {limit:?}");
        }
    };
    let elapsed = t0.elapsed().as_secs_f64();
    let stdout = std::fs::read_to_string(out.with_extension("stdout")).unwrap_or_default();
    let stderr = std::fs::read_to_string(out.with_extension("stderr")).unwrap_or_default();
    let ctx = format!("tracer: {status}\nprogram stdout: {stdout}\ntracer stderr:\n{}", common::tail(&stderr, 3000));
    assert_eq!(common::shell_code(&status), 0, "{ctx}");
    let calls: u64 = stdout
        .trim()
        .strip_prefix("calls=")
        .and_then(|r| r.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no calls= line from the program\n{ctx}"));
    let units = (calls - 1) / 4;
    assert_eq!(units, rate / 4 * secs, "the program made the calls it was asked for\n{ctx}");

    // Every call on disk, in order, complete.
    let file = std::fs::File::open(&out).unwrap();
    let (mut next_ctx, mut lines, mut by_name) = (0u64, 0u64, std::collections::BTreeMap::<String, u64>::new());
    let (mut header, mut footer, mut bad) = (Value::Null, Value::Null, Vec::new());
    for (i, line) in std::io::BufReader::with_capacity(1 << 20, file).lines().enumerate() {
        let line = line.unwrap();
        let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("line {}: {e}: {line:.200}", i + 1));
        lines += 1;
        match v["type"].as_str() {
            Some("header") => header = v,
            Some("footer") => footer = v,
            _ if !common::is_call_line(&v) => {}
            _ => {
                let name = v["name"].as_str().unwrap_or("?").to_string();
                // Launches are probed entry-only by default: no `ret` on their lines.
                if v.get("incomplete").is_some() || v.get("entry_lost").is_some() || !common::succeeded_by_default(&v) {
                    bad.push(line.clone());
                }
                if name == "cuCtxSetCurrent" {
                    let want = format!("{next_ctx:#x}");
                    assert_eq!(v["args"]["ctx"], json!(want), "line {}: calls out of order or missing", i + 1);
                    next_ctx += 1;
                }
                *by_name.entry(name).or_default() += 1;
            }
        }
    }
    assert_eq!(header["type"], "header");
    assert_eq!(footer["type"], "footer", "last line: {footer}");
    assert!(bad.is_empty(), "{} incomplete, failed or entry-lost calls: {:?}", bad.len(), &bad[..bad.len().min(3)]);
    assert_eq!(next_ctx, units);
    for n in ["cuCtxSetCurrent", "cuMemAlloc_v2", "cuLaunchKernel", "cuMemFree_v2"] {
        assert_eq!(by_name.get(n).copied(), Some(units), "{n} calls; all: {by_name:?}");
    }
    assert_eq!(footer["calls"], json!(calls));
    assert_eq!(footer["lost"]["total"], 0, "{footer}");
    let records = footer["records"].as_u64().unwrap();

    // Memory: flat after warm-up.
    assert!(samples.len() >= 5, "only {} memory samples", samples.len());
    let warm = samples.iter().find(|s| s.t >= 0.3 * elapsed).copied().unwrap_or(samples[0]);
    let last = *samples.last().unwrap();
    let first = samples[0];
    let peak_rss = samples.iter().map(|s| s.rss_kib).max().unwrap();
    let peak_hwm = samples.iter().map(|s| s.hwm_kib).max().unwrap();
    let calls_after_warm = (calls as f64 * (last.t - warm.t) / elapsed.max(1e-9)) as u64;
    let growth_kib = last.anon_kib.saturating_sub(warm.anon_kib);
    // 2 MiB of slack (allocator, buffers; /proc's counters are batched per
    // CPU) plus 1 byte per call. Remembering one 24-byte range per
    // allocation (1 call in 4) is 6 bytes per call: caught in minutes.
    let allowed_kib = 2048 + calls_after_warm / 1024;
    let report = json!({
        "seconds": secs,
        "rate_calls_per_s": rate,
        "calls": calls,
        "records": records,
        "lines": lines,
        "records_per_s": records as f64 / elapsed,
        "calls_per_s": calls as f64 / elapsed,
        "lost": footer["lost"]["total"],
        "elapsed_s": elapsed,
        "rss_kib": {"first": first.rss_kib, "last": last.rss_kib, "peak": peak_rss, "hwm": peak_hwm},
        "rss_anon_kib": {"first": first.anon_kib, "after_warmup": warm.anon_kib, "last": last.anon_kib,
                         "peak": samples.iter().map(|s| s.anon_kib).max().unwrap(),
                         "growth_after_warmup": growth_kib, "allowed_growth": allowed_kib},
        "samples": samples.iter().map(|s| json!([ (s.t * 10.0).round() / 10.0, s.rss_kib, s.hwm_kib, s.anon_kib ])).collect::<Vec<_>>(),
        "tracer": common::tracer_bin(),
        "trace_bytes": std::fs::metadata(&out).map(|m| m.len()).unwrap_or(0),
    });
    println!(
        "soak: {secs} s at {rate} calls/s: {calls} calls, {records} records ({:.0}/s), lost {}; tracer VmRSS first {} \
         last {} peak {} KiB (VmHWM {} KiB); RssAnon first {} after warm-up {} last {} KiB",
        records as f64 / elapsed,
        footer["lost"]["total"],
        first.rss_kib,
        last.rss_kib,
        peak_rss,
        peak_hwm,
        first.anon_kib,
        warm.anon_kib,
        last.anon_kib
    );
    if let Ok(p) = std::env::var("TRACER_SOAK_REPORT") {
        std::fs::write(&p, serde_json::to_string_pretty(&report).unwrap()).unwrap();
        println!("soak: report written to {p}");
    }
    assert!(
        growth_kib <= allowed_kib,
        "tracer's heap grew {growth_kib} KiB after warm-up (allowed {allowed_kib} KiB): {report}"
    );
    let _ = std::fs::remove_file(&out);
    let _ = std::fs::remove_file(out.with_extension("stdout"));
    let _ = std::fs::remove_file(out.with_extension("stderr"));
}
