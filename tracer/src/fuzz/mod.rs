//! Fuzzing of every reader and parser, for a fixed time: bytes in, no panic,
//! bounded memory, an error message (or a result) out.
//!
//! Each target (targets.rs) is a function over bytes plus seed inputs (real
//! traces from traces/, a compiled ELF library, the host's ld.so.cache,
//! hand-built records and ioctl structs) and, where the format has structure,
//! a generator of well-formed-but-hostile inputs. The loop mutates seeds
//! (bit flips, interesting integers such as 2^60 or u64::MAX written over
//! size fields, insertions, deletions, splices), generates, and runs each
//! case under `catch_unwind` with allocation accounting (alloc.rs). Inputs
//! whose outcome (the error message with digits removed) is new join the
//! corpus, a cheap stand-in for coverage feedback.
//!
//! Time per target: `TRACER_FUZZ_SECONDS` (default 1 s, so `cargo test` runs a
//! short version); `TRACER_FUZZ_SEED` repeats a run. `cargo xtask fuzz
//! --seconds N` runs every target for N seconds. A failure is minimized and
//! saved under target/fuzz-failures/<target>/; copy the file into
//! tracer/tests/fuzz-regressions/<target>/ and it runs in every test run.

pub(crate) mod alloc;
mod hostile_names;
mod targets;

use std::collections::HashSet;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Builds a structured input from the corpus.
pub type Generate = fn(&mut Rng, &[Vec<u8>]) -> Vec<u8>;
/// Mutates an input with knowledge of its format (`None`: not applicable).
pub type Mutate = fn(&mut Rng, &[u8]) -> Option<Vec<u8>>;

/// A fuzz target.
pub struct Target {
    pub name: &'static str,
    /// Parses the input; returns a short description of the outcome (an
    /// error message, or "ok ..."). Must not panic.
    pub run: fn(&[u8]) -> String,
    pub seeds: fn() -> Vec<Vec<u8>>,
    /// Builds a structured input (optional).
    pub generate: Option<Generate>,
    /// Structure-aware mutation (optional), e.g. of JSON values.
    pub mutate: Option<Mutate>,
    /// Most bytes a case may have live at once, for an input of this length.
    pub budget: fn(usize) -> usize,
}

/// The default allocation budget: 16 MiB plus 64 bytes per input byte.
pub fn default_budget(len: usize) -> usize {
    (16 << 20) + 64 * len
}

/// xorshift64*: small, fast, reproducible.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.max(1))
    }
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    /// Uniform in 0..n (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    pub fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
    /// An integer worth writing into a length or count field.
    pub fn interesting(&mut self) -> u64 {
        const V: &[u64] = &[
            0,
            1,
            2,
            7,
            8,
            0x7f,
            0x80,
            0xff,
            0x100,
            0x7fff,
            0xffff,
            0x1_0000,
            0x7fff_ffff,
            0x8000_0000,
            0xffff_ffff,
            1 << 32,
            1 << 40,
            1 << 60,
            i64::MAX as u64,
            1 << 63,
            u64::MAX,
            u64::MAX - 1,
        ];
        match self.below(4) {
            0 => self.next(),
            1 => self.next() % 4096,
            _ => V[self.below(V.len())],
        }
    }
}

/// Byte-level mutations, `1..=max` of them.
pub fn mutate_bytes(rng: &mut Rng, input: &[u8], others: &[Vec<u8>], max: usize) -> Vec<u8> {
    let mut v = input.to_vec();
    for _ in 0..1 + rng.below(max) {
        let len = v.len();
        match rng.below(10) {
            0 if len > 0 => {
                let i = rng.below(len);
                v[i] ^= 1 << rng.below(8);
            }
            1 if len > 0 => {
                let i = rng.below(len);
                v[i] = rng.next() as u8;
            }
            // An interesting integer over 1, 2, 4 or 8 bytes, often aligned.
            2 | 3 if len > 0 => {
                let w = [1usize, 2, 4, 8][rng.below(4)];
                let mut i = rng.below(len);
                if rng.chance(70) {
                    i -= i % w;
                }
                let bytes = rng.interesting().to_le_bytes();
                for k in 0..w {
                    if i + k < len {
                        v[i + k] = bytes[k];
                    }
                }
            }
            4 if len > 0 => {
                let i = rng.below(len);
                let n = 1 + rng.below((len - i).min(64));
                v.drain(i..i + n);
            }
            5 => {
                let i = rng.below(len + 1);
                let n = 1 + rng.below(32);
                let ins =
                    if rng.chance(50) { rng.bytes(n) } else { vec![[0u8, 0xff, b'\n', b'"', b'{'][rng.below(5)]; n] };
                v.splice(i..i, ins);
            }
            // Copy a block within the input (repeats structure).
            6 if len > 1 => {
                let a = rng.below(len);
                let n = 1 + rng.below((len - a).min(256));
                let block = v[a..a + n].to_vec();
                let at = rng.below(len + 1);
                v.splice(at..at, block);
            }
            // Splice with another input.
            7 if !others.is_empty() => {
                let o = &others[rng.below(others.len())];
                let cut = rng.below(len + 1);
                let from = rng.below(o.len() + 1);
                v.truncate(cut);
                v.extend_from_slice(&o[from..]);
            }
            8 if len > 0 => v.truncate(rng.below(len)),
            _ => {
                let i = rng.below(len + 1);
                let n = rng.below(8);
                v.splice(i..i, rng.bytes(n));
            }
        }
    }
    v
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Failure {
    Panic(String),
    Memory { peak: usize, budget: usize },
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Panic(m) => write!(f, "panicked: {m}"),
            Failure::Memory { peak, budget } => write!(f, "used {peak} bytes at once (budget {budget})"),
        }
    }
}

thread_local! {
    static QUIET: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    static LAST_PANIC: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

/// A panic hook that stays silent on threads running fuzz cases (their
/// panics are expected to be reported by the harness) and behaves as the
/// default hook elsewhere.
fn install_quiet_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if QUIET.with(|q| q.get()) {
                let loc = info.location().map(|l| format!(" at {}:{}", l.file(), l.line())).unwrap_or_default();
                let msg = info
                    .payload()
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| info.payload().downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                LAST_PANIC.with(|p| *p.borrow_mut() = format!("{msg}{loc}"));
            } else {
                default(info);
            }
        }));
    });
}

/// Runs one case.
fn run_case(t: &Target, input: &[u8]) -> Result<(String, usize), Failure> {
    QUIET.with(|q| q.set(true));
    let (r, peak) = alloc::measure(input, || catch_unwind(AssertUnwindSafe(|| (t.run)(input))));
    QUIET.with(|q| q.set(false));
    match r {
        Err(_) => Err(Failure::Panic(LAST_PANIC.with(|p| p.borrow().clone()))),
        Ok(_) if peak > (t.budget)(input.len()) => Err(Failure::Memory { peak, budget: (t.budget)(input.len()) }),
        Ok(outcome) => Ok((outcome, peak)),
    }
}

fn same_kind(a: &Failure, b: &Failure) -> bool {
    match (a, b) {
        // Same panic site (the location ends the message).
        (Failure::Panic(x), Failure::Panic(y)) => x.rsplit(" at ").next() == y.rsplit(" at ").next(),
        (Failure::Memory { .. }, Failure::Memory { .. }) => true,
        _ => false,
    }
}

/// Shrinks a failing input: removes chunks while it still fails the same way.
fn minimize(t: &Target, input: &[u8], failure: &Failure) -> Vec<u8> {
    let mut best = input.to_vec();
    let t0 = Instant::now();
    let mut chunk = best.len() / 2;
    while chunk >= 1 && t0.elapsed() < Duration::from_secs(20) {
        let mut i = 0;
        let mut progressed = false;
        while i < best.len() {
            let mut cand = best.clone();
            cand.drain(i..(i + chunk).min(best.len()));
            match run_case(t, &cand) {
                Err(f) if same_kind(&f, failure) => {
                    best = cand;
                    progressed = true;
                }
                _ => i += chunk,
            }
        }
        if !progressed {
            chunk /= 2;
        }
    }
    best
}

fn repo_path(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// Committed inputs that once failed: tracer/tests/fuzz-regressions/<target>/.
pub fn regressions(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = repo_path("tests/fuzz-regressions").join(target);
    let mut v: Vec<(PathBuf, Vec<u8>)> = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().is_file())
        .map(|e| (e.path(), std::fs::read(e.path()).unwrap()))
        .collect();
    v.sort();
    v
}

fn fail(t: &Target, input: &[u8], failure: &Failure, how: &str) -> ! {
    let small = minimize(t, input, failure);
    let h = small.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3));
    let dir = repo_path("../target/fuzz-failures").join(t.name);
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join(format!("{h:016x}.bin"));
    let _ = std::fs::write(&path, &small);
    let again = run_case(t, &small).err().unwrap_or_else(|| failure.clone());
    panic!(
        "fuzz {}: {how}: {again}\n  minimized input ({} bytes, from {}) saved to {}\n  hex: {}\n  \
         fix the parser, then keep it: cp {} tracer/tests/fuzz-regressions/{}/",
        t.name,
        small.len(),
        input.len(),
        path.display(),
        tracer_format::hex::preview(&small, 96),
        path.display(),
        t.name
    );
}

/// Seconds per target: TRACER_FUZZ_SECONDS, default 1.
pub fn seconds() -> f64 {
    std::env::var("TRACER_FUZZ_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(1.0)
}

/// What one run of a target did.
#[derive(Debug)]
pub struct Report {
    pub cases: u64,
    pub outcomes: usize,
    pub corpus: usize,
    pub max_peak: usize,
}

/// Fuzzes `t` for `secs` seconds. Panics (with a minimized input saved) on
/// the first panic or over-budget allocation.
pub fn fuzz(t: &Target, secs: f64) -> Report {
    install_quiet_hook();
    let seed = std::env::var("TRACER_FUZZ_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64)
    });
    let mut rng = Rng::new(seed ^ t.name.bytes().fold(0u64, |h, b| h.rotate_left(5) ^ b as u64));
    let mut corpus: Vec<Vec<u8>> = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    let mut report = Report { cases: 0, outcomes: 0, corpus: 0, max_peak: 0 };
    let norm = |s: &str| -> String { s.chars().filter(|c| !c.is_ascii_digit()).take(160).collect() };

    for (path, input) in regressions(t.name) {
        if let Err(f) = run_case(t, &input) {
            panic!("fuzz {}: regression input {} fails again: {f}", t.name, path.display());
        }
    }
    for input in (t.seeds)() {
        match run_case(t, &input) {
            Ok((o, peak)) => {
                report.max_peak = report.max_peak.max(peak);
                seen.insert(norm(&o));
                corpus.push(input);
            }
            Err(f) => fail(t, &input, &f, "a seed input fails"),
        }
    }
    let seeds = corpus.len();
    let deadline = Instant::now() + Duration::from_secs_f64(secs);
    while Instant::now() < deadline {
        for _ in 0..16 {
            let input = match rng.below(20) {
                0 => {
                    let n = rng.below(4096);
                    rng.bytes(n)
                }
                1..=5 if t.generate.is_some() => (t.generate.unwrap())(&mut rng, &corpus),
                6..=10 if t.mutate.is_some() && !corpus.is_empty() => {
                    let base = &corpus[rng.below(corpus.len())];
                    match (t.mutate.unwrap())(&mut rng, base) {
                        Some(v) => v,
                        None => continue,
                    }
                }
                _ if !corpus.is_empty() => {
                    let base = corpus[rng.below(corpus.len())].clone();
                    mutate_bytes(&mut rng, &base, &corpus, 8)
                }
                _ => rng.bytes(64),
            };
            report.cases += 1;
            match run_case(t, &input) {
                Ok((o, peak)) => {
                    report.max_peak = report.max_peak.max(peak);
                    if seen.insert(norm(&o)) && corpus.len() < seeds + 512 {
                        corpus.push(input);
                    }
                }
                Err(f) => fail(t, &input, &f, &format!("case {} (TRACER_FUZZ_SEED={seed})", report.cases)),
            }
        }
    }
    report.outcomes = seen.len();
    report.corpus = corpus.len();
    println!(
        "fuzz {}: {} cases in {secs:.0} s ({:.0}/s), {} distinct outcomes, corpus {} ({} seeds), peak {:.1} MiB, \
         seed {seed}",
        t.name,
        report.cases,
        report.cases as f64 / secs.max(1e-9),
        report.outcomes,
        report.corpus,
        seeds,
        report.max_peak as f64 / (1 << 20) as f64
    );
    report
}
