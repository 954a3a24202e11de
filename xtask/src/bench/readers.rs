//! `cargo xtask bench readers` (no root, no GPU): the trace readers of the
//! working tree against those of another revision, on one large trace.
//!
//! 1. Builds the release tracer here, and the one of the baseline (default:
//!    the merge-base with main) in a git worktree under
//!    `target/bench-readers/baseline-src` with its own target directory
//!    (`target/bench-readers/baseline-target`), both kept for the next run;
//!    or takes a baseline binary as is (`--baseline-bin`).
//! 2. Makes the trace once (`target/bench-readers/trace_<N>.jsonl`, reused):
//!    the committed recording traces/transformer_inference_full.jsonl.gz,
//!    its header first, its body repeated up to N lines with every copy's
//!    `ts`/`end_ts` shifted past the previous copy's, its footer last.
//! 3. Checks that report, gaps and summary print the same bytes with both
//!    binaries (these runs also warm the page cache), then times summary,
//!    report, gaps and export (Perfetto, to tmpfs) as whole processes,
//!    baseline and current interleaved, `reps` times: wall seconds, and max
//!    RSS from wait4's rusage.
use std::fs;
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use super::stats::{median, range};
use crate::util;

pub struct Opts {
    /// Revision to build as the baseline (None: the merge-base with main).
    pub baseline: Option<String>,
    /// A baseline binary to use as is.
    pub baseline_bin: Option<PathBuf>,
    /// Body lines of the trace.
    pub lines: u64,
    pub reps: u32,
    /// Also write docs/bench/NAME.{md,json}.
    pub save: Option<String>,
}

/// The committed recording the trace is made of.
const SOURCE: &str = "traces/transformer_inference_full.jsonl.gz";

/// The timed commands: name (as in the table), arguments before the trace,
/// arguments after it. `{out}` stands for the export's output file.
const COMMANDS: &[(&str, &[&str], &[&str])] = &[
    ("summary", &["summary"], &[]),
    ("report", &["report"], &[]),
    ("gaps", &["gaps"], &[]),
    ("export --format perfetto", &["export"], &["--format", "perfetto", "-o", "{out}"]),
];

/// Commands whose stdout must be the same bytes with both binaries.
const SAME_OUTPUT: &[&str] = &["summary", "report", "gaps"];

/// A tracer binary and how it was made.
struct Bin {
    path: PathBuf,
    label: String,
}

pub fn run(o: &Opts) -> Result<()> {
    if o.reps == 0 || o.lines == 0 {
        bail!("--reps and --lines must be at least 1");
    }
    let save = o.save.as_deref().map(save_name).transpose()?;
    let dir = util::target_dir().join("bench-readers");
    fs::create_dir_all(&dir)?;

    println!(
        "building the release tracer of the working tree (cargo build --release -p tracer; minutes on 2 cores if not built yet)"
    );
    util::run(util::cargo().args(["build", "--release", "-p", "tracer"]))?;
    let current = Bin { path: util::target_dir().join("release/tracer"), label: current_label()? };
    let baseline = match &o.baseline_bin {
        Some(p) => {
            let path = fs::canonicalize(p).with_context(|| format!("baseline binary {}", p.display()))?;
            Bin { label: format!("binary {}", path.display()), path }
        }
        None => build_baseline(&dir, o.baseline.as_deref())?,
    };
    println!(
        "baseline: {} ({})\ncurrent:  {} ({})",
        baseline.label,
        baseline.path.display(),
        current.label,
        current.path.display()
    );

    let trace = dir.join(format!("trace_{}.jsonl", o.lines));
    if trace.exists() {
        println!("trace: {} (reused; delete it to make it again)", trace.display());
    } else {
        println!("making the trace: {} body lines from {SOURCE} → {}", o.lines, trace.display());
        let t0 = Instant::now();
        let s = make_trace(&util::repo_root().join(SOURCE), &trace, o.lines)?;
        println!("  {} copies of the body, {} bytes, in {}", s.copies, s.bytes, util::secs(t0.elapsed()));
    }
    let trace_lines = o.lines + 2;
    let trace_bytes = fs::metadata(&trace)?.len();

    let stderr_file = dir.join("stderr.txt");
    // The check runs, summary first: it must succeed before anything is timed.
    for name in SAME_OUTPUT {
        let (args_before, args_after) = args_of(name);
        let mut outs = Vec::new();
        for bin in [&current, &baseline] {
            let mut c = Command::new(&bin.path);
            c.args(args_before).arg(&trace).args(args_after).stdin(Stdio::null());
            let out = c.output().with_context(|| format!("running {}", bin.path.display()))?;
            if !out.status.success() {
                bail!(
                    "tracer {name} ({}) failed on {} ({}): {}",
                    bin.label,
                    trace.display(),
                    out.status,
                    String::from_utf8_lossy(&out.stderr).trim()
                );
            }
            outs.push(out.stdout);
        }
        if outs[0] != outs[1] {
            let keep = |which: &str, bytes: &[u8]| -> Result<PathBuf> {
                let p = dir.join(format!("{name}.{which}.out"));
                fs::write(&p, bytes)?;
                Ok(p)
            };
            let (a, b) = (keep("baseline", &outs[1])?, keep("current", &outs[0])?);
            bail!("tracer {name} prints different bytes with the two binaries: diff {} {}", a.display(), b.display());
        }
        println!("tracer {name}: same output with both binaries ({} bytes)", outs[0].len());
    }

    // tmpfs for the export's output where there is one, as in the README's figures.
    let shm = Path::new("/dev/shm");
    let out_dir = if shm.is_dir() && fs::metadata(shm).is_ok_and(|m| !m.permissions().readonly()) {
        shm.to_path_buf()
    } else {
        dir.clone()
    };
    let export_out = |which: &str| out_dir.join(format!("tracer-bench-readers-{}-{which}.json", std::process::id()));

    let mut loads = vec![load_average()];
    // samples[command][0: baseline, 1: current]
    let mut samples: Vec<[Vec<Sample>; 2]> = COMMANDS.iter().map(|_| [Vec::new(), Vec::new()]).collect();
    let mut export_same = None;
    for rep in 1..=o.reps {
        for (ci, (name, before, after)) in COMMANDS.iter().enumerate() {
            for (bi, (which, bin)) in [("baseline", &baseline), ("current", &current)].into_iter().enumerate() {
                let out = export_out(which);
                let _ = fs::remove_file(&out);
                let after: Vec<String> = after.iter().map(|a| a.replace("{out}", &out.display().to_string())).collect();
                let mut c = Command::new(&bin.path);
                c.args(*before).arg(&trace).args(&after);
                let s = time_process(&mut c, &stderr_file)
                    .with_context(|| format!("tracer {name} ({}), repetition {rep}", bin.label))?;
                println!(
                    "  {rep}/{} {name:<24} {which:<8} {:6.2} s  {:5.0} MB",
                    o.reps,
                    s.secs,
                    s.max_rss_kib as f64 * 1024.0 / 1e6
                );
                samples[ci][bi].push(s);
            }
            if rep == 1 && name.starts_with("export") {
                export_same = Some(same_bytes(&export_out("baseline"), &export_out("current"))?);
            }
        }
        loads.push(load_average());
    }
    for which in ["baseline", "current"] {
        let _ = fs::remove_file(export_out(which));
    }
    let _ = fs::remove_file(&stderr_file);

    let rows: Vec<Row> = COMMANDS
        .iter()
        .zip(samples)
        .map(|((name, ..), [base, cur])| Row { command: name.to_string(), base, cur })
        .collect();
    let meta = Meta {
        date: util::utc_timestamp(),
        host: super::host::machine(),
        command: std::env::args().skip(1).collect::<Vec<_>>().join(" "),
        baseline: baseline.label,
        current: current.label,
        trace: trace.display().to_string(),
        trace_lines,
        trace_bytes,
        reps: o.reps,
        loads,
        export_same,
    };
    let md = markdown(&meta, &rows);
    let js = to_json(&meta, &rows);
    println!("\n{md}");
    let out = dir.join("readers.json");
    fs::write(&out, serde_json::to_string_pretty(&js)?)?;
    println!("written: {}", out.display());
    if let Some(name) = save {
        let docs = util::repo_root().join("docs/bench");
        fs::create_dir_all(&docs)?;
        fs::write(docs.join(format!("{name}.json")), serde_json::to_string_pretty(&js)? + "\n")?;
        fs::write(docs.join(format!("{name}.md")), &md)?;
        println!("saved: docs/bench/{name}.md and .json");
    }
    Ok(())
}

fn args_of(name: &str) -> (&'static [&'static str], &'static [&'static str]) {
    COMMANDS.iter().find(|(n, ..)| *n == name).map(|(_, b, a)| (*b, *a)).unwrap_or((&[], &[]))
}

/// `--save NAME`: a file name in docs/bench, without extension.
fn save_name(name: &str) -> Result<String> {
    let name = name.strip_suffix(".md").or_else(|| name.strip_suffix(".json")).unwrap_or(name);
    if name.is_empty() || name.contains('/') || name.starts_with('.') {
        bail!("--save takes a file name for docs/bench (no directory), e.g. readers_20261125");
    }
    Ok(name.to_string())
}

fn git(args: &[&str]) -> Result<String> {
    Ok(util::output(util::cmd("git").args(args))?.trim().to_string())
}

/// What goes into the tracer binary.
const TRACER_PATHS: &[&str] = &["tracer", "tracer-format", "tracer-common", "tracer-ebpf", "Cargo.toml", "Cargo.lock"];

/// The working tree: its commit, the last commit that changed the tracer's
/// sources, and whether they have uncommitted changes.
fn current_label() -> Result<String> {
    let head = git(&["rev-parse", "--short", "HEAD"])?;
    let mut args = vec!["log", "-1", "--format=%h"];
    args.push("--");
    args.extend(TRACER_PATHS);
    let last = git(&args)?;
    let mut args = vec!["status", "--porcelain", "--"];
    args.extend(TRACER_PATHS);
    let dirty = !git(&args)?.is_empty();
    let mut s = format!("working tree at {head}");
    if last != head {
        s += &format!(" (tracer sources as of {last})");
    }
    if dirty {
        s += " with uncommitted changes to the tracer";
    }
    Ok(s)
}

/// Checks out `rev` (default: the merge-base with main) in the worktree under
/// `dir` and builds its release tracer with its own target directory.
fn build_baseline(dir: &Path, rev: Option<&str>) -> Result<Bin> {
    let rev = match rev {
        Some(r) => r.to_string(),
        None => git(&["merge-base", "HEAD", "main"])
            .context("no merge-base with main (name the baseline with --baseline REV or --baseline-bin PATH)")?,
    };
    let sha = git(&["rev-parse", "--verify", &format!("{rev}^{{commit}}")])
        .with_context(|| format!("{rev} is not a commit here"))?;
    let short = &sha[..sha.len().min(10)];
    let src = dir.join("baseline-src");
    let target = dir.join("baseline-target");
    // A worktree of this repository there (not a copy of another's target/).
    let is_ours = src.join(".git").exists()
        && util::output(util::cmd("git").arg("-C").arg(&src).args(["rev-parse", "--show-toplevel"]))
            .ok()
            .and_then(|t| fs::canonicalize(t.trim()).ok())
            == fs::canonicalize(&src).ok();
    if is_ours {
        let at = util::output(util::cmd("git").arg("-C").arg(&src).args(["rev-parse", "HEAD"]))?;
        if at.trim() != sha {
            util::run(util::cmd("git").arg("-C").arg(&src).args(["checkout", "--quiet", "--force", "--detach", &sha]))?;
        }
    } else {
        if src.exists() {
            fs::remove_dir_all(&src).with_context(|| format!("removing {}", src.display()))?;
        }
        util::run(util::cmd("git").args(["worktree", "prune"]))?;
        util::run(util::cmd("git").args(["worktree", "add", "--detach"]).arg(&src).arg(&sha))?;
    }
    println!(
        "building the release tracer of {rev} ({short}) in {} with target dir {} \
         (minutes on 2 cores the first time; both are kept for the next run)",
        src.display(),
        target.display()
    );
    util::run(util::cargo().current_dir(&src).env("CARGO_TARGET_DIR", &target).args([
        "build",
        "--release",
        "-p",
        "tracer",
    ]))?;
    let label =
        if rev.starts_with(short) || sha.starts_with(&rev) { short.to_string() } else { format!("{rev} ({short})") };
    Ok(Bin { path: target.join("release/tracer"), label })
}

/// What [`make_trace`] wrote.
#[derive(Debug, PartialEq)]
struct Made {
    copies: u64,
    bytes: u64,
}

/// Writes the benchmark trace to `out` (through a temporary file, so a
/// cut-off run leaves no partial trace to be reused).
fn make_trace(source: &Path, out: &Path, body_lines: u64) -> Result<Made> {
    let mut lines = Vec::new();
    let mut r = tracer_format::read::open(source)?;
    let mut line = String::new();
    while r.read_line(&mut line)? > 0 {
        lines.push(line.trim_end_matches('\n').to_string());
        line.clear();
    }
    let tmp = out.with_extension("jsonl.tmp");
    let mut w = BufWriter::with_capacity(1 << 20, fs::File::create(&tmp)?);
    let copies = synthesize(&lines, body_lines, &mut w).with_context(|| format!("from {}", source.display()))?;
    w.into_inner().map_err(|e| e.into_error())?.sync_all()?;
    fs::rename(&tmp, out)?;
    Ok(Made { copies, bytes: fs::metadata(out)?.len() })
}

/// Writes `lines`' first line (the header), then `body_lines` lines of its
/// body (the lines between the first and the last) repeated, each copy's
/// timestamps shifted past the previous copy's, then its last line (the
/// footer). Returns the number of copies of the body begun.
fn synthesize(lines: &[String], body_lines: u64, w: &mut impl Write) -> Result<u64> {
    let [header, body @ .., footer] = lines else { bail!("a trace needs a header, a body and a footer") };
    if body.is_empty() {
        bail!("a trace needs a header, a body and a footer");
    }
    if !header.contains(r#""type":"header""#) || !footer.contains(r#""type":"footer""#) {
        bail!("the first line is not a header or the last not a footer");
    }
    let (mut lo, mut hi) = (u64::MAX, 0);
    for l in body {
        map_ts(l, |t| {
            lo = lo.min(t);
            hi = hi.max(t);
            t
        });
    }
    // Each copy starts 1 ms after the previous one's last timestamp.
    let period = hi.saturating_sub(lo) + 1_000_000;
    writeln!(w, "{header}")?;
    let (mut written, mut copy) = (0u64, 0u64);
    while written < body_lines {
        let offset = copy * period;
        for l in body.iter().take((body_lines - written).min(body.len() as u64) as usize) {
            writeln!(w, "{}", map_ts(l, |t| t + offset))?;
            written += 1;
        }
        copy += 1;
    }
    writeln!(w, "{footer}")?;
    Ok(copy)
}

/// The timestamp fields of trace lines (ns, CLOCK_MONOTONIC).
const TS_KEYS: &[&str] = &["\"ts\":", "\"end_ts\":"];

/// `line` with the integer value of each top-level-looking `"ts":` and
/// `"end_ts":` key (after `{` or `,`) replaced by `f(value)`.
fn map_ts(line: &str, mut f: impl FnMut(u64) -> u64) -> String {
    let b = line.as_bytes();
    let mut out = String::with_capacity(line.len() + 8);
    let (mut i, mut copied) = (0, 0);
    while i < b.len() {
        let key = TS_KEYS.iter().find(|k| b[i..].starts_with(k.as_bytes()));
        match key {
            Some(k) if i > 0 && matches!(b[i - 1], b'{' | b',') => {
                let start = i + k.len();
                let end = start + b[start..].iter().take_while(|c| c.is_ascii_digit()).count();
                if let Some(v) = (end > start).then(|| line[start..end].parse::<u64>().ok()).flatten() {
                    out.push_str(&line[copied..start]);
                    out.push_str(&f(v).to_string());
                    copied = end;
                }
                i = end.max(i + 1);
            }
            _ => i += 1,
        }
    }
    out.push_str(&line[copied..]);
    out
}

/// One timed run.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Sample {
    secs: f64,
    max_rss_kib: u64,
    cpu_s: f64,
}

#[repr(C)]
#[derive(Default)]
struct Timeval {
    sec: i64,
    usec: i64,
}

/// Linux's struct rusage on 64-bit targets.
#[repr(C)]
#[derive(Default)]
struct Rusage {
    utime: Timeval,
    stime: Timeval,
    maxrss: i64,
    rest: [i64; 13],
}

unsafe extern "C" {
    fn wait4(pid: i32, status: *mut i32, options: i32, rusage: *mut Rusage) -> i32;
}

/// Runs `c` (stdout to /dev/null, stderr to `stderr_file`) and waits for it
/// with wait4: wall seconds from spawn to exit, its max RSS and CPU time.
fn time_process(c: &mut Command, stderr_file: &Path) -> Result<Sample> {
    const _: () = assert!(std::mem::size_of::<Rusage>() == 144);
    let err = fs::File::create(stderr_file)?;
    c.stdin(Stdio::null()).stdout(Stdio::null()).stderr(err);
    let t0 = Instant::now();
    let child = c.spawn().context("cannot start tracer")?;
    let pid = child.id() as i32;
    let (mut status, mut ru) = (0i32, Rusage::default());
    loop {
        // SAFETY: pid is our child, not yet reaped (std's Child waits only when
        // asked, and it is not asked); status and ru are valid for writes.
        let r = unsafe { wait4(pid, &mut status, 0, &mut ru) };
        if r == pid {
            break;
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e).context("wait4");
        }
    }
    let secs = t0.elapsed().as_secs_f64();
    drop(child);
    let (signal, code) = (status & 0x7f, (status >> 8) & 0xff);
    if signal != 0 || code != 0 {
        let text = fs::read_to_string(stderr_file).unwrap_or_default();
        let how = if signal != 0 { format!("signal {signal}") } else { format!("exit {code}") };
        bail!("failed ({how}): {}", text.trim());
    }
    let tv = |t: &Timeval| t.sec as f64 + t.usec as f64 / 1e6;
    Ok(Sample { secs, max_rss_kib: ru.maxrss.max(0) as u64, cpu_s: tv(&ru.utime) + tv(&ru.stime) })
}

/// Whether two files hold the same bytes.
fn same_bytes(a: &Path, b: &Path) -> Result<bool> {
    if fs::metadata(a)?.len() != fs::metadata(b)?.len() {
        return Ok(false);
    }
    let (mut ra, mut rb) = (BufReader::new(fs::File::open(a)?), BufReader::new(fs::File::open(b)?));
    let (mut ba, mut bb) = (vec![0u8; 1 << 20], vec![0u8; 1 << 20]);
    loop {
        let n = ra.read(&mut ba)?;
        if n == 0 {
            return Ok(true);
        }
        rb.read_exact(&mut bb[..n])?;
        if ba[..n] != bb[..n] {
            return Ok(false);
        }
    }
}

/// /proc/loadavg's 1, 5 and 15-minute figures.
fn load_average() -> [f64; 3] {
    let s = fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let mut it = s.split_whitespace().map(|v| v.parse().unwrap_or(f64::NAN));
    [(); 3].map(|_| it.next().unwrap_or(f64::NAN))
}

/// What the table says around the rows.
struct Meta {
    date: String,
    host: Value,
    command: String,
    baseline: String,
    current: String,
    trace: String,
    trace_lines: u64,
    trace_bytes: u64,
    reps: u32,
    /// Load averages before the first repetition and after each.
    loads: Vec<[f64; 3]>,
    /// Whether the two exports of the first repetition were the same bytes.
    export_same: Option<bool>,
}

/// One command's runs with both binaries.
struct Row {
    command: String,
    base: Vec<Sample>,
    cur: Vec<Sample>,
}

/// Seconds (min, median, max) and the max RSS of some runs.
struct Fig {
    min: f64,
    median: f64,
    max: f64,
    max_rss_kib: u64,
}

fn fig(s: &[Sample]) -> Fig {
    let secs: Vec<f64> = s.iter().map(|x| x.secs).collect();
    let (min, max) = range(&secs);
    Fig { min, median: median(&secs), max, max_rss_kib: s.iter().map(|x| x.max_rss_kib).max().unwrap_or(0) }
}

/// 1234567.8 → "1,234,568".
fn grouped(x: f64) -> String {
    if !x.is_finite() {
        return "–".into();
    }
    let digits = format!("{:.0}", x.abs());
    let mut s = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            s.push(',');
        }
        s.push(c);
    }
    if x < 0.0 { format!("-{s}") } else { s }
}

fn markdown(m: &Meta, rows: &[Row]) -> String {
    let ones: Vec<f64> = m.loads.iter().map(|l| l[0]).collect();
    let (lmin, lmax) = range(&ones);
    let mut s = format!(
        "Readers, {} on {} ({} cores, Linux {}); `cargo xtask {}`\n\n",
        m.date,
        m.host["cpu"].as_str().unwrap_or("?"),
        m.host["cores"],
        m.host["kernel"].as_str().unwrap_or("?"),
        m.command
    );
    s += &format!(
        "Baseline: {}. Current: {}. Trace: {} lines ({:.2} GB), the body of `{SOURCE}` repeated with its \
         timestamps shifted, header first and footer last. Each command ran {} times per binary, baseline \
         and current interleaved; wall seconds of the whole process, stdout to /dev/null, max RSS from \
         wait4. Load average (1 min) {:.2}–{:.2} over the runs (before: {}).\n\n",
        m.baseline,
        m.current,
        grouped(m.trace_lines as f64),
        m.trace_bytes as f64 / 1e9,
        m.reps,
        lmin,
        lmax,
        m.loads.first().map(|l| format!("{:.2} / {:.2} / {:.2}", l[0], l[1], l[2])).unwrap_or_default(),
    );
    s += "| command | baseline s (min / median / max) | current s (min / median / max) | baseline lines/s | current lines/s | baseline max RSS | current max RSS | current / baseline (median s) | baseline spread (max / min) |\n";
    s += "|---|---|---|---|---|---|---|---|---|\n";
    let lines = m.trace_lines as f64;
    for r in rows {
        let (b, c) = (fig(&r.base), fig(&r.cur));
        let mb = |k: u64| format!("{:.0} MB", k as f64 * 1024.0 / 1e6);
        s += &format!(
            "| tracer {} | {:.2} / {:.2} / {:.2} | {:.2} / {:.2} / {:.2} | {} | {} | {} | {} | {:.2}× | {:.2}× |\n",
            r.command,
            b.min,
            b.median,
            b.max,
            c.min,
            c.median,
            c.max,
            grouped(lines / b.median),
            grouped(lines / c.median),
            mb(b.max_rss_kib),
            mb(c.max_rss_kib),
            c.median / b.median,
            b.max / b.min,
        );
    }
    s += "\nreport, gaps and summary printed the same bytes with both binaries (checked before timing)";
    s += match m.export_same {
        Some(true) => "; so did the Perfetto export (first repetition).\n",
        Some(false) => "; the Perfetto exports differ.\n",
        None => ".\n",
    };
    s
}

fn to_json(m: &Meta, rows: &[Row]) -> Value {
    let side = |v: &[Sample]| {
        let f = fig(v);
        json!({
            "seconds": v.iter().map(|x| x.secs).collect::<Vec<_>>(),
            "cpu_seconds": v.iter().map(|x| x.cpu_s).collect::<Vec<_>>(),
            "max_rss_kib": v.iter().map(|x| x.max_rss_kib).collect::<Vec<_>>(),
            "seconds_min": f.min,
            "seconds_median": f.median,
            "seconds_max": f.max,
            "lines_per_s_median": m.trace_lines as f64 / f.median,
        })
    };
    json!({
        "benchmark": "readers",
        "date": m.date,
        "host": m.host,
        "command": m.command,
        "baseline": m.baseline,
        "current": m.current,
        "trace": { "path": m.trace, "source": SOURCE, "lines": m.trace_lines, "bytes": m.trace_bytes },
        "repetitions": m.reps,
        "load_average": m.loads,
        "same_output": SAME_OUTPUT,
        "export_same_bytes": m.export_same,
        "commands": rows.iter().map(|r| {
            let (b, c) = (fig(&r.base), fig(&r.cur));
            json!({
                "command": r.command,
                "baseline": side(&r.base),
                "current": side(&r.cur),
                "current_over_baseline_median": c.median / b.median,
                "baseline_spread": b.max / b.min,
            })
        }).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts_of(line: &str) -> Vec<u64> {
        let mut v = Vec::new();
        map_ts(line, |t| {
            v.push(t);
            t
        });
        v
    }

    fn source() -> Vec<String> {
        [
            r#"{"clock":{"monotonic_ns":5,"ts":"CLOCK_MONOTONIC ns"},"type":"header"}"#,
            r#"{"name":"process","ts":1000,"type":"process"}"#,
            r#"{"end_ts":2600,"name":"gpu","ts":2500,"type":"gpu"}"#,
            r#"{"args":{"s":"\"ts\":7"},"ts":900,"type":"power"}"#,
            r#"{"calls":2,"type":"footer"}"#,
        ]
        .map(String::from)
        .to_vec()
    }

    fn made(n: u64) -> Vec<String> {
        let mut out = Vec::new();
        synthesize(&source(), n, &mut out).unwrap();
        String::from_utf8(out).unwrap().lines().map(String::from).collect()
    }

    #[test]
    fn map_ts_shifts_ts_and_end_ts_only() {
        let l = r#"{"end_ts":2600,"name":"gpu","ts":2500,"x_ts":3,"s":"\"ts\":7"}"#;
        assert_eq!(map_ts(l, |t| t + 10), r#"{"end_ts":2610,"name":"gpu","ts":2510,"x_ts":3,"s":"\"ts\":7"}"#);
        let h = r#"{"clock":{"ts":"CLOCK_MONOTONIC ns"},"type":"header"}"#;
        assert_eq!(map_ts(h, |t| t + 10), h);
        assert_eq!(ts_of(r#"{"ts":1,"end_ts":18446744073709551615}"#), [1, u64::MAX]);
    }

    #[test]
    fn header_first_footer_last_and_line_count() {
        for n in [1, 2, 3, 4, 7, 9] {
            let out = made(n);
            assert_eq!(out.len() as u64, n + 2, "n = {n}");
            assert_eq!(out[0], source()[0]);
            assert_eq!(out.last(), source().last());
            assert!(out[1..out.len() - 1].iter().all(|l| !l.contains("header") && !l.contains("footer")));
        }
        // The body in its order, copy after copy.
        let out = made(7);
        let kinds: Vec<&str> = out[1..8]
            .iter()
            .map(|l| {
                if l.contains("process") {
                    "p"
                } else if l.contains("gpu") {
                    "g"
                } else {
                    "w"
                }
            })
            .collect();
        assert_eq!(kinds, ["p", "g", "w", "p", "g", "w", "p"]);
    }

    #[test]
    fn timestamps_increase_from_copy_to_copy() {
        let out = made(9);
        let body = &out[1..out.len() - 1];
        // The first copy is the recording's own.
        assert_eq!(body[..3], source()[1..4]);
        let copies: Vec<Vec<u64>> = body.chunks(3).map(|c| c.iter().flat_map(|l| ts_of(l)).collect()).collect();
        assert_eq!(copies.len(), 3);
        for w in copies.windows(2) {
            let prev_max = w[0].iter().max().unwrap();
            let next_min = w[1].iter().min().unwrap();
            assert!(next_min > prev_max, "{next_min} after {prev_max}");
            // Same shift for every timestamp of a copy.
            let shift: Vec<u64> = w[1].iter().zip(&w[0]).map(|(b, a)| b - a).collect();
            assert!(shift.windows(2).all(|s| s[0] == s[1]), "{shift:?}");
        }
        // Strings that merely contain "ts": are left alone.
        assert!(body[5].contains(r#""s":"\"ts\":7""#));
    }

    #[test]
    fn synthesize_refuses_what_is_not_a_trace() {
        let mut out = Vec::new();
        assert!(synthesize(&source()[..2], 5, &mut out).is_err());
        let mut no_footer = source();
        no_footer.pop();
        assert!(synthesize(&no_footer, 5, &mut out).is_err());
    }

    #[test]
    fn grouped_thousands() {
        assert_eq!(grouped(0.4), "0");
        assert_eq!(grouped(999.0), "999");
        assert_eq!(grouped(1000.0), "1,000");
        assert_eq!(grouped(1_742_123.6), "1,742,124");
        assert_eq!(grouped(f64::NAN), "–");
    }

    #[test]
    fn table() {
        let s = |secs: f64, rss: u64| Sample { secs, max_rss_kib: rss, cpu_s: 0.0 };
        let meta = Meta {
            date: "20261125T150000Z".into(),
            host: json!({ "cpu": "AMD EPYC", "cores": 2, "kernel": "6.18" }),
            command: "bench readers --reps 3".into(),
            baseline: "1c3d0ad".into(),
            current: "working tree at d76de1d".into(),
            trace: "t.jsonl".into(),
            trace_lines: 3_000_002,
            trace_bytes: 1_300_000_000,
            reps: 3,
            loads: vec![[1.5, 2.0, 2.5], [3.0, 2.0, 2.0], [2.25, 2.0, 2.0]],
            export_same: Some(true),
        };
        let rows = vec![Row {
            command: "report".into(),
            base: vec![s(2.0, 400_000), s(1.5, 390_000), s(3.0, 410_000)],
            cur: vec![s(1.6, 300_000), s(1.4, 310_000), s(1.8, 305_000)],
        }];
        let md = markdown(&meta, &rows);
        let want = "| tracer report | 1.50 / 2.00 / 3.00 | 1.40 / 1.60 / 1.80 | 1,500,001 | 1,875,001 | 420 MB | 317 MB | 0.80× | 2.00× |\n";
        assert!(md.contains(want), "{md}");
        assert!(md.contains("Load average (1 min) 1.50–3.00"), "{md}");
        assert!(md.contains("3,000,002 lines (1.30 GB)"), "{md}");
        assert!(md.contains("so did the Perfetto export"), "{md}");
        assert_eq!(md.lines().filter(|l| l.starts_with('|')).count(), 3);
        let js = to_json(&meta, &rows);
        assert_eq!(js["commands"][0]["baseline"]["seconds_median"], 2.0);
        assert_eq!(js["commands"][0]["current_over_baseline_median"], 0.8);
        assert_eq!(js["commands"][0]["baseline_spread"], 2.0);
    }
}
