//! `tracer record --replayable` (docs/recording-format.md) on
//! tests/fakecuda/replayable.c against the fake libcuda: the program loads the
//! committed nvcc fixtures (tests/fixtures/cuda) through every load function,
//! launches every fixture kernel with known arguments (kernelParams, `extra`,
//! cuLaunchKernelEx attributes, first launch right after the lookup, later
//! ones, from 2 threads), launches a handle no lookup returned, and copies
//! known host buffers to the device. Everything the recording must hold is
//! computed here independently (tests/common/replayable.rs: layouts from
//! kernels.cu's comments, argument values, sha256 of the fixture bytes) and
//! asserted exactly: manifest, images/, data/, the trace's `image`, `params`,
//! `data` fields, coverage counts, no event lost.
//!
//! Where docs/recording-format.md leaves a choice, these tests expect:
//! - images: PTX stored without its NUL terminator (the .ptx file's bytes);
//!   cuModuleLoadFatBinary stores the container its wrapper points to (so it
//!   deduplicates with the same fatbin loaded otherwise); in-memory images cut
//!   at their real size (fatbin header, ELF headers: the 4 KiB of junk after
//!   each buffer is not stored); file loads store the file; `kind` "fatbin",
//!   "cubin", "ptx"; `loads` counts every load whose bytes are that image;
//! - `kernels`: one entry per kernel name (archs of a fatbin merged), any order;
//! - images read as they were when the call was entered, h2d data when the
//!   call returned, the thread stopped there (the program overwrites them as
//!   soon as the call returns);
//! - an unmapped image address and a missing file give `image_error`, counted
//!   in image_loads (11 = 9 captured + 2 errors);
//! - k_noparams: `params` "" from "layout" (kernelParams NULL or not);
//!   `extra` buffers exactly as passed, their 0xee padding included;
//!   CUkernel handles launched as CUfunction resolve like functions;
//! - coverage: launches = params_exact + params_missing, params_from_extra
//!   counted within params_exact, missing reasons with 0 allowed,
//!   graph_launches counts cuGraphLaunch (not in launches), h2d_copies counted
//!   without --capture-data too (h2d_captured 0 then);
//! - without --capture-data: no `data`/`data_error` on copy lines, data/
//!   absent or empty, manifest `data` absent or zero; the header's
//!   `data_cap_bytes` present anyway;
//! - images/ and data/ hold only the sha256-named files;
//! - `--compress zstd`: the trace is trace.jsonl.zst, the manifest's `trace`
//!   names it, and it holds what the plain trace holds;
//! - an existing directory: exit 2, one stderr line `tracer: ...` naming it
//!   and --force, nothing written into it; default name
//!   trace_YYYYMMDDTHHMMSSZ.rec in the current directory.
//!
//! Root only (TRACER_ROOT_TESTS=1); serial (--test-threads=1).
mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use common::replayable as r;
use serde_json::{Value, json};

const LOAD_APIS: [&str; 6] = [
    "cuModuleLoad",
    "cuModuleLoadData",
    "cuModuleLoadDataEx",
    "cuModuleLoadFatBinary",
    "cuLibraryLoadData",
    "cuLibraryLoadFromFile",
];
const COPY_APIS: [&str; 4] = ["cuMemcpyHtoD_v2", "cuMemcpyHtoDAsync_v2", "cuMemcpyDtoH_v2", "cuMemcpyDtoHAsync_v2"];

/// A recording directory path that does not exist yet.
fn fresh_rec_dir(tag: &str) -> PathBuf {
    static N: AtomicU32 = AtomicU32::new(0);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("root-traces");
    fs::create_dir_all(&dir).unwrap();
    let _ = Command::new("chmod").arg("1777").arg(&dir).status();
    let p = dir.join(format!("{tag}-{}-{}.rec", std::process::id(), N.fetch_add(1, Ordering::Relaxed)));
    let _ = fs::remove_dir_all(&p);
    p
}

/// `tracer record --replayable TRACER_ARGS -o DIR --libcuda FAKE -- CMD...`,
/// stdout and stderr to DIR.stdout / DIR.stderr.
fn run_tracer(dir: &Path, tracer_args: &[&str], cmd: &[&std::ffi::OsStr]) -> (ExitStatus, String) {
    let args: Vec<&str> = ["--replayable"].iter().chain(tracer_args).copied().collect();
    let env = [("FAKECUDA_D2H_PATTERN", "1")];
    common::record_program(dir, &args, cmd, &env, Duration::from_secs(180), "tracer record --replayable")
}

/// What one recording of replayable.c left.
struct Recording {
    dir: PathBuf,
    lines: Vec<Value>,
    manifest: Value,
    ctx: String,
}

impl Recording {
    fn header(&self) -> &Value {
        &self.lines[0]
    }
    fn footer(&self) -> &Value {
        self.lines.last().unwrap()
    }
    /// Call lines named one of `names`, in time order.
    fn calls_named(&self, names: &[&str]) -> Vec<&Value> {
        let mut v: Vec<&Value> =
            self.lines.iter().filter(|l| l["name"].as_str().is_some_and(|n| names.contains(&n))).collect();
        v.sort_by_key(|l| l["ts"].as_u64().unwrap_or(0));
        v
    }
    fn cleanup(&self) {
        let _ = fs::remove_dir_all(&self.dir);
        let _ = fs::remove_file(self.dir.with_extension("stdout"));
        let _ = fs::remove_file(self.dir.with_extension("stderr"));
    }
}

fn record_program(tag: &str, tracer_args: &[&str]) -> Recording {
    let dir = fresh_rec_dir(tag);
    let prog = common::fake_program("replayable");
    let fixtures = r::fixture_dir();
    let (status, stderr) = run_tracer(&dir, tracer_args, &[prog.as_os_str(), fixtures.as_os_str()]);
    let stdout = fs::read_to_string(dir.with_extension("stdout")).unwrap_or_default();
    let ctx = format!(
        "recording {}: tracer {status}\nstderr:\n{}\nstdout (tail):\n{}",
        dir.display(),
        common::tail(&stderr, 4000),
        common::tail(&stdout, 1500)
    );
    assert_eq!(common::shell_code(&status), 0, "{ctx}");
    let mpath = dir.join("manifest.json");
    let text = fs::read_to_string(&mpath).unwrap_or_else(|e| panic!("reading {}: {e}\n{ctx}", mpath.display()));
    let manifest: Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: not JSON ({e})\n{ctx}", mpath.display()));
    let trace = dir.join(manifest["trace"].as_str().unwrap_or("trace.jsonl"));
    let lines = read_recorded_trace(&trace).unwrap_or_else(|e| panic!("{e}\n{ctx}"));
    Recording { dir, lines, manifest, ctx }
}

/// The lines of a recording's trace, plain or zstd (decoded beside the
/// recording directory, then read with the same checks).
fn read_recorded_trace(path: &Path) -> Result<Vec<Value>, String> {
    if path.extension().is_none_or(|e| e != "zst") {
        return common::read_trace(path);
    }
    let f = File::open(path).map_err(|e| format!("opening {}: {e}", path.display()))?;
    let text = zstd::stream::decode_all(f).map_err(|e| format!("{}: not a zstd stream ({e})", path.display()))?;
    let decoded = path.parent().unwrap().with_extension("decoded.jsonl");
    fs::write(&decoded, text).unwrap();
    let lines = common::read_trace(&decoded);
    let _ = fs::remove_file(&decoded);
    lines
}

/// The file names in DIR/SUB (empty if SUB does not exist).
fn listing(dir: &Path, sub: &str) -> BTreeSet<String> {
    match fs::read_dir(dir.join(sub)) {
        Ok(rd) => rd.map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => BTreeSet::new(),
        Err(e) => panic!("listing {}: {e}", dir.join(sub).display()),
    }
}

/// A manifest image's `kernels` as name -> (param_size, params); duplicates refused.
fn manifest_kernels(img: &Value, ctx: &str) -> BTreeMap<String, (u64, Vec<(u64, u64)>)> {
    let mut m = BTreeMap::new();
    let list = img["kernels"].as_array().unwrap_or_else(|| panic!("image without kernels: {img}\n{ctx}"));
    for k in list {
        let name = k["name"].as_str().unwrap_or_else(|| panic!("kernel without name: {k}")).to_string();
        let params = k["params"]
            .as_array()
            .unwrap_or_else(|| panic!("{name}: params {}", k["params"]))
            .iter()
            .map(|p| (p[0].as_u64().unwrap(), p[1].as_u64().unwrap()))
            .collect();
        let size = k["param_size"].as_u64().unwrap_or_else(|| panic!("{name}: param_size {}", k["param_size"]));
        assert!(m.insert(name.clone(), (size, params)).is_none(), "kernel {name} listed twice in {}", img["sha256"]);
    }
    m
}

fn fixture_kernels() -> BTreeMap<String, (u64, Vec<(u64, u64)>)> {
    r::KERNELS
        .iter()
        .map(|k| (k.name.to_string(), (k.size as u64, k.params.iter().map(|&(o, s)| (o as u64, s as u64)).collect())))
        .collect()
}

/// Manifest, images/ and the load lines.
fn check_images(rec: &Recording) {
    let ctx = &rec.ctx;
    // The load lines first: the most precise message when an image is wrong.
    let lines = rec.calls_named(&LOAD_APIS);
    let names: Vec<&str> = lines.iter().map(|l| l["name"].as_str().unwrap()).collect();
    let plan = r::loads();
    assert_eq!(names, plan.iter().map(|l| l.api).collect::<Vec<_>>(), "load calls\n{ctx}");
    for (i, (line, l)) in lines.iter().zip(&plan).enumerate() {
        assert_eq!(line["type"], "module", "load {i}: {line}");
        match l.fixture {
            Some(f) => {
                assert_eq!(line["image"], json!(r::sha256_hex(&r::fixture(f))), "load {i} ({f}): {line}");
                assert!(line.get("image_error").is_none(), "load {i}: {line}");
            }
            None => {
                let err = line["image_error"].as_str().unwrap_or_else(|| panic!("load {i}: no image_error: {line}"));
                assert!(!err.is_empty(), "load {i}: empty image_error");
                assert!(line.get("image").is_none(), "load {i}: {line}");
            }
        }
    }

    // sha -> (fixture, loads)
    let mut want: BTreeMap<String, (&str, u64)> = BTreeMap::new();
    for l in r::loads() {
        if let Some(f) = l.fixture {
            want.entry(r::sha256_hex(&r::fixture(f))).or_insert((f, 0)).1 += 1;
        }
    }
    assert_eq!(want.len(), 5, "distinct fixture images");
    let images = rec.manifest["images"].as_array().unwrap_or_else(|| panic!("manifest images: {}", rec.manifest));
    let got: BTreeSet<String> = images.iter().map(|i| i["sha256"].as_str().unwrap_or("").to_string()).collect();
    assert_eq!(got.len(), images.len(), "an image listed twice: {images:?}");
    assert_eq!(got, want.keys().cloned().collect(), "manifest images (sha256)\n{ctx}");
    assert_eq!(listing(&rec.dir, "images"), got, "files in images/");
    for img in images {
        let sha = img["sha256"].as_str().unwrap();
        let (fixture, loads) = want[sha];
        let bytes = r::fixture(fixture);
        let what = format!("image {sha} ({fixture})");
        assert_eq!(img["file"], json!(format!("images/{sha}")), "{what}");
        assert_eq!(img["bytes"], json!(bytes.len()), "{what}");
        assert_eq!(img["kind"], json!(r::image_kind(fixture)), "{what}");
        assert_eq!(img["loads"], json!(loads), "{what}");
        let stored = fs::read(rec.dir.join("images").join(sha)).unwrap();
        assert!(stored == bytes, "{what}: images/{sha} holds {} bytes, not the fixture's", stored.len());
        assert_eq!(manifest_kernels(img, ctx), fixture_kernels(), "{what}: kernels and layouts");
    }
}

/// --replayable turns BPF statistics on, and with them the trap's cost measured at the start
/// (collect/trap_cost.rs): the header's per-hit figures are the differences of its loops'
/// medians, and an entry or return probe costs something on every machine.
fn check_trap_cost(rec: &Recording) {
    let h = &rec.lines[0];
    let t = &h["probe_trap"];
    let (u, e, b) =
        (t["unprobed_ns_per_call"].as_f64(), t["entry_ns_per_call"].as_f64(), t["entry_return_ns_per_call"].as_f64());
    let (Some(u), Some(e), Some(b)) = (u, e, b) else { panic!("header probe_trap: {t}\n{}", rec.ctx) };
    assert!(u < e && e < b, "probe_trap {t}: probes cost nothing?\n{}", rec.ctx);
    // (the per-call figures are rounded to 0.01 ns, the traps to 1 ns)
    let near = |k: &str, want: f64| h[k].as_f64().is_some_and(|x| x.fract() == 0.0 && (x - want).abs() <= 1.0);
    assert!(near("probe_trap_ns", e - u), "{}: {t}", h["probe_trap_ns"]);
    assert!(near("return_trap_ns", b - e), "{}: {t}", h["return_trap_ns"]);
}

/// Every program the recording ran was accepted with room to spare under the verifier's
/// 1,000,000-instruction limit (footer `bpf_stats.*.verified_insns`, reported by kernels from
/// 5.16). The launch program is the largest; a change that doubles its explored states passes
/// here well before it is refused on another kernel (one was: 1,000,001 on the H200's 6.18.44).
fn check_verifier_headroom(rec: &Recording) {
    let footer = rec.lines.last().unwrap();
    let stats = footer["bpf_stats"].as_object().unwrap_or_else(|| panic!("no bpf_stats\n{}", rec.ctx));
    let launch = stats.get("cu_launch").and_then(|p| p["verified_insns"].as_u64());
    assert!(launch.is_some_and(|n| n > 0), "cu_launch ran without verified_insns: {stats:?}");
    for (name, p) in stats {
        let n = p["verified_insns"].as_u64().unwrap_or(0);
        assert!(n < 850_000, "{name}: {n} instructions verified, too near the limit of 1,000,000\n{}", rec.ctx);
    }
}

/// Where a line's `params` differs from the wanted hex, briefly.
fn hex_difference(got: &Value, want: &str) -> String {
    let Some(got) = got.as_str() else { return format!("{got} (want {} bytes)", want.len() / 2) };
    if got == want {
        return "exact".into();
    }
    match got.bytes().zip(want.bytes()).position(|(a, b)| a != b) {
        Some(i) => {
            let at = i / 2 * 2;
            let end = |s: &str| (at + 32).min(s.len());
            format!(
                "differ from byte {} ({} bytes, want {}): got ..{}.., want ..{}..",
                at / 2,
                got.len() / 2,
                want.len() / 2,
                &got[at..end(got)],
                &want[at..end(want)]
            )
        }
        None => format!("{} bytes, want {} (a prefix of the other)", got.len() / 2, want.len() / 2),
    }
}

/// Every launch line's parameters, by launch id (grid[0]).
fn check_launches(rec: &Recording) {
    let ctx = &rec.ctx;
    let lines = rec.calls_named(&[
        "cuLaunchKernel",
        "cuLaunchKernel_ptsz",
        "cuLaunchKernelEx",
        "cuLaunchKernelEx_ptsz",
        "cuLaunchCooperativeKernel",
    ]);
    let mut by_id: BTreeMap<u64, &Value> = BTreeMap::new();
    for l in &lines {
        let id = l["grid"][0].as_u64().unwrap_or_else(|| panic!("launch without grid: {l}"));
        assert!(by_id.insert(id, l).is_none(), "two launch lines with grid[0] = {id}");
    }
    let plan = r::plan();
    let ids: BTreeSet<u64> = plan.iter().map(|l| l.id as u64).collect();
    assert_eq!(by_id.keys().copied().collect::<BTreeSet<_>>(), ids, "launch ids\n{ctx}");
    let mut errors = Vec::new();
    for l in &plan {
        let line = by_id[&(l.id as u64)];
        let what = format!("launch {} ({} {:?} {:?})", l.id, l.api, l.kernel, l.via);
        assert_eq!(line["name"], l.api, "{what}");
        assert_eq!(line["type"], "kernel", "{what}");
        if l.api.starts_with("cuLaunchKernelEx") {
            assert_eq!(line["args"]["config"]["attrs"], l.attrs.json(), "{what}: attributes");
        }
        match r::expected_params(l) {
            Some(want) => {
                assert_eq!(line["kernel"], json!(l.kernel.unwrap()), "{what}: {line}");
                let hex = r::hex(&want);
                if line["params"] != json!(hex)
                    || line["params_from"] != json!(l.via.params_from())
                    || line.get("params_error").is_some()
                {
                    errors.push(format!(
                        "{what}: params_from {} (want \"{}\"), params {}, params_error {}",
                        line["params_from"],
                        l.via.params_from(),
                        hex_difference(&line["params"], &hex),
                        line["params_error"]
                    ));
                }
            }
            None => {
                assert_eq!(line["func"], r::UNKNOWN_HANDLE, "{what}");
                assert_eq!(line["kernel"], Value::Null, "{what}");
                let err = line["params_error"].as_str().unwrap_or_else(|| panic!("{what}: no params_error: {line}"));
                assert!(!err.is_empty(), "{what}: empty params_error");
                assert!(line.get("params").is_none() && line.get("params_from").is_none(), "{what}: {line}");
            }
        }
    }
    assert!(
        errors.is_empty(),
        "{} of {} launches not captured exactly:\n{}\n{ctx}",
        errors.len(),
        plan.len(),
        errors.join("\n")
    );
}

/// Copy lines; with --capture-data, data/ and the `data` fields.
fn check_copies(rec: &Recording, capture: bool) {
    let ctx = &rec.ctx;
    let lines = rec.calls_named(&COPY_APIS);
    let plan = r::copies();
    let names: Vec<&str> = lines.iter().map(|l| l["name"].as_str().unwrap()).collect();
    assert_eq!(names, plan.iter().map(|c| c.api).collect::<Vec<_>>(), "copy calls\n{ctx}");
    let mut want_files = BTreeSet::new();
    for (i, (line, c)) in lines.iter().zip(&plan).enumerate() {
        let what = format!("copy {i} ({} {} bytes)", c.api, c.size);
        assert_eq!(line["size"], json!(c.size), "{what}: {line}");
        match (&c.h2d, capture) {
            (Some(bytes), true) => {
                assert_eq!(line["direction"], "h2d", "{what}");
                let sha = r::sha256_hex(bytes);
                assert_eq!(line["data"], json!(sha), "{what}: data_error {}", line["data_error"]);
                assert!(line.get("data_error").is_none(), "{what}: {line}");
                want_files.insert(sha);
            }
            // Device-to-host data: check_d2h.
            (None, true) if line["direction"] == "d2h" => {}
            _ => assert!(line.get("data").is_none() && line.get("data_error").is_none(), "{what}: {line}"),
        }
    }
    let d2h = d2h_files(rec);
    let d2h_bytes: u64 = d2h.values().sum();
    let all: BTreeSet<String> = want_files.iter().cloned().chain(d2h.keys().cloned()).collect();
    assert_eq!(listing(&rec.dir, "data"), all, "files in data/");
    let mut total = 0u64;
    for sha in &want_files {
        let bytes = plan.iter().filter_map(|c| c.h2d.as_ref()).find(|b| &r::sha256_hex(b) == sha).unwrap();
        let stored = fs::read(rec.dir.join("data").join(sha)).unwrap();
        assert!(&stored == bytes, "data/{sha}: {} bytes, not the copied ones", stored.len());
        total += bytes.len() as u64;
    }
    let data = &rec.manifest["data"];
    let cap = rec.header()["replayable"]["data_cap_bytes"].as_u64();
    assert!(cap.is_some_and(|c| c > 0), "header replayable.data_cap_bytes: {}", rec.header()["replayable"]);
    if capture {
        assert_eq!(want_files.len(), 3);
        assert_eq!(total, 100 + (1 << 20) + 4096);
        assert_eq!(data["files"], json!(3 + d2h.len()), "manifest data: {data}");
        assert_eq!(data["bytes"], json!(total + d2h_bytes), "manifest data: {data}");
        assert_eq!(data["skipped_over_cap"], json!(0), "manifest data: {data}");
        assert_eq!(data["cap_bytes"], json!(cap.unwrap()), "manifest data vs header: {data}");
    } else if !data.is_null() {
        assert_eq!((data["files"].clone(), data["bytes"].clone()), (json!(0), json!(0)), "manifest data: {data}");
    }
}

/// The data files device-to-host lines refer to (sha -> bytes).
fn d2h_files(rec: &Recording) -> BTreeMap<String, u64> {
    rec.lines
        .iter()
        .filter(|l| l["type"] == "copy_data" || l["direction"] == "d2h")
        .filter_map(|l| l["data"].as_str())
        .map(|sha| (sha.to_string(), fs::metadata(rec.dir.join("data").join(sha)).map_or(0, |m| m.len())))
        .collect()
}

/// What the fake writes to the destination of a device-to-host copy
/// (FAKECUDA_D2H_PATTERN=1): byte i = (srcDevice + i) & 0xff.
fn d2h_pattern(src: u64, n: u64) -> Vec<u8> {
    (0..n).map(|i| (src.wrapping_add(i) & 0xff) as u8).collect()
}

/// --capture-data: the synchronous copy's destination read at its return,
/// the asynchronous one's at the cuStreamSynchronize after it (a
/// `copy_data` line), both as the fake wrote them.
fn check_d2h(rec: &Recording, capture: bool) {
    let ctx = &rec.ctx;
    let src =
        |l: &Value| u64::from_str_radix(l["args"]["srcDevice"].as_str().unwrap().trim_start_matches("0x"), 16).unwrap();
    let sync = rec.calls_named(&["cuMemcpyDtoH_v2"]);
    let asyn = rec.calls_named(&["cuMemcpyDtoHAsync_v2"]);
    assert_eq!((sync.len(), asyn.len()), (1, 1), "{ctx}");
    let extra: Vec<&Value> = rec.lines.iter().filter(|l| l["type"] == "copy_data").collect();
    let cov = &rec.manifest["coverage"];
    assert_eq!(cov["d2h_copies"], json!(2), "{cov}");
    if !capture {
        assert!(extra.is_empty(), "copy_data lines without --capture-data: {extra:?}");
        assert!(sync[0].get("data").is_none() && asyn[0].get("data").is_none());
        assert_eq!(cov["d2h_captured"], json!(0), "{cov}");
        return;
    }
    let want = d2h_pattern(src(sync[0]), 100);
    assert_eq!(sync[0]["data"], json!(r::sha256_hex(&want)), "{}", sync[0]);
    assert_eq!(fs::read(rec.dir.join("data").join(r::sha256_hex(&want))).unwrap(), want);
    assert!(asyn[0].get("data").is_none(), "the async copy's own line: {}", asyn[0]);
    assert_eq!(extra.len(), 1, "{extra:?}");
    let e = extra[0];
    let want = d2h_pattern(src(asyn[0]), 256);
    assert_eq!(
        (&e["op"], &e["synchronized_by"], &e["copy"]["name"], &e["copy"]["ts"], &e["copy"]["tid"], &e["size"]),
        (
            &json!("d2h"),
            &json!("cuStreamSynchronize"),
            &json!("cuMemcpyDtoHAsync_v2"),
            &asyn[0]["ts"],
            &asyn[0]["tid"],
            &json!(256)
        ),
        "{e}"
    );
    assert_eq!(e["dst"], asyn[0]["args"]["dstHost"], "{e}");
    assert_eq!(e["data"], json!(r::sha256_hex(&want)), "{e}");
    assert_eq!(fs::read(rec.dir.join("data").join(r::sha256_hex(&want))).unwrap(), want);
    let sync_line = rec
        .calls_named(&["cuStreamSynchronize"])
        .into_iter()
        .find(|l| l["ts"].as_u64() < e["ts"].as_u64())
        .map(|l| l["ts"].clone());
    assert!(sync_line.is_some(), "a cuStreamSynchronize before the copy_data line");
    assert_eq!(cov["d2h_captured"], json!(2), "{cov}");
}

/// The manifest's coverage (and the footer's `replay`, the same object).
fn check_coverage(rec: &Recording, capture: bool) {
    let plan = r::plan();
    let extra = plan.iter().filter(|l| l.kernel.is_some() && l.via == r::Via::Extra).count();
    assert_eq!((plan.len(), extra), (120, 23));
    let h2d = r::copies().iter().filter(|c| c.h2d.is_some()).count();
    let want = json!({
        "image_loads": 11, "images_captured": 9, "image_errors": 2,
        "launches": 120, "params_exact": 119, "params_from_extra": 23, "params_missing": 1,
        "graph_launches": r::GRAPH_LAUNCHES,
        "h2d_copies": h2d, "h2d_captured": if capture { h2d } else { 0 },
    });
    let cov = &rec.manifest["coverage"];
    for (k, v) in want.as_object().unwrap() {
        assert_eq!(&cov[k], v, "coverage.{k}: {cov}\n{}", rec.ctx);
    }
    let reasons: BTreeMap<&str, u64> = cov["params_missing_reasons"]
        .as_object()
        .unwrap_or_else(|| panic!("coverage.params_missing_reasons: {cov}"))
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_u64().unwrap()))
        .filter(|&(_, n)| n > 0)
        .collect();
    assert_eq!(reasons, BTreeMap::from([("no layout for the function handle", 1)]), "{cov}");
    assert_eq!(&rec.footer()["replay"], cov, "footer replay vs manifest coverage");
}

fn check_manifest_head(rec: &Recording, capture: bool) {
    let m = &rec.manifest;
    assert_eq!(m["format"], "tracer-recording", "{m}");
    assert_eq!(m["schema_version"], 1, "{m}");
    assert_eq!(m["tracer_version"], env!("CARGO_PKG_VERSION"), "{m}");
    assert_eq!(m["trace"], "trace.jsonl", "{m}");
    assert_eq!(m["capture_data"], capture, "{m}");
    assert_eq!(rec.header()["replayable"]["capture_data"], capture, "header: {}", rec.header());
    let lost = &rec.footer()["lost"]["total"];
    assert_eq!(lost, &json!(0), "events lost: {}\n{}", rec.footer(), rec.ctx);
}

#[test]
fn replayable_recording_holds_images_layouts_and_exact_parameters() {
    if !common::root_tests_enabled() {
        return;
    }
    let rec = record_program("replayable", &[]);
    check_manifest_head(&rec, false);
    check_trap_cost(&rec);
    check_verifier_headroom(&rec);
    check_images(&rec);
    check_launches(&rec);
    check_copies(&rec, false);
    check_d2h(&rec, false);
    check_coverage(&rec, false);
    rec.cleanup();
}

#[test]
fn capture_data_stores_host_to_device_bytes_once() {
    if !common::root_tests_enabled() {
        return;
    }
    let rec = record_program("replayable-data", &["--capture-data"]);
    check_manifest_head(&rec, true);
    check_copies(&rec, true);
    check_d2h(&rec, true);
    check_coverage(&rec, true);
    check_stops_after_h2d_copies(&rec);
    check_no_stop_after_async_d2h(&rec);
    check_stops_at_synchronizations(&rec);
    // Capturing data changes nothing else.
    check_images(&rec);
    check_launches(&rec);
    // Device memory contents: the recording is its owner's only.
    check_private(&rec.dir);
    rec.cleanup();
}

/// With --capture-data a host-to-device copy's source is read while the thread
/// is stopped at the copy's return: no `stopped` interval of the thread inside
/// the copy call (its recorded duration is the call's own), one right after it.
fn check_stops_after_h2d_copies(rec: &Recording) {
    let ctx = &rec.ctx;
    let stops: Vec<(u64, u64)> = rec
        .lines
        .iter()
        .filter(|l| l["op"] == "off_cpu" && l["name"] == "stopped")
        .map(|l| (l["tid"].as_u64().unwrap(), l["ts"].as_u64().unwrap()))
        .collect();
    let copies = rec.calls_named(&["cuMemcpyHtoD_v2", "cuMemcpyHtoDAsync_v2"]);
    assert_eq!(copies.len(), r::copies().iter().filter(|c| c.h2d.is_some()).count(), "h2d copy calls\n{ctx}");
    for c in copies {
        let (tid, ts) = (c["tid"].as_u64().unwrap(), c["ts"].as_u64().unwrap());
        let end = ts + (c["duration_us"].as_f64().unwrap() * 1e3) as u64;
        let of_tid: Vec<u64> = stops.iter().filter(|s| s.0 == tid).map(|s| s.1).collect();
        assert!(
            !of_tid.iter().any(|&s| s >= ts && s < end),
            "a stop inside the copy call {c}\nstops {of_tid:?}\n{ctx}"
        );
        assert!(
            of_tid.iter().any(|&s| s >= end && s < end + 1_000_000_000),
            "no stop after the copy call {c}\nstops {of_tid:?}\n{ctx}"
        );
    }
}

/// Whether call line `c`'s thread has a `stopped` interval starting between the
/// call's return and that thread's next call (or the end of the trace).
fn stopped_after_return(rec: &Recording, c: &Value) -> bool {
    let (ts, tid) = (c["ts"].as_u64().unwrap(), &c["tid"]);
    let end = ts + (c["duration_us"].as_f64().unwrap() * 1e3) as u64;
    let next = rec
        .lines
        .iter()
        .filter(|l| &l["tid"] == tid && l.get("args").is_some())
        .filter_map(|l| l["ts"].as_u64())
        .filter(|&t| t > ts)
        .min()
        .unwrap_or(u64::MAX);
    rec.lines.iter().any(|l| {
        l["op"] == "off_cpu"
            && l["name"] == "stopped"
            && &l["tid"] == tid
            && l["ts"].as_u64().is_some_and(|s| s >= end && s < next)
    })
}

/// An asynchronous device-to-host copy's destination is read at the next
/// synchronization (check_d2h), so its own return does not stop the thread: no
/// `stopped` interval of its thread starts between its return and that
/// thread's next call.
fn check_no_stop_after_async_d2h(rec: &Recording) {
    let ctx = &rec.ctx;
    let copies = rec.calls_named(&["cuMemcpyDtoHAsync_v2"]);
    assert_eq!(copies.len(), 1, "{ctx}");
    assert!(!stopped_after_return(rec, copies[0]), "a stop after the async copy's return: {}\n{ctx}", copies[0]);
}

/// A synchronization stops the thread only when its process has asynchronous
/// device-to-host bytes to read: of the program's three (one before the async
/// copy, the one after it, a cuCtxSynchronize at the end), only the second
/// is followed by a `stopped` interval of its thread before the thread's next
/// call (or its exit).
fn check_stops_at_synchronizations(rec: &Recording) {
    let ctx = &rec.ctx;
    let syncs = rec.calls_named(&["cuStreamSynchronize", "cuCtxSynchronize"]);
    let names: Vec<&str> = syncs.iter().map(|l| l["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["cuStreamSynchronize", "cuStreamSynchronize", "cuCtxSynchronize"], "{ctx}");
    let stopped: Vec<bool> = syncs.iter().map(|c| stopped_after_return(rec, c)).collect();
    assert_eq!(stopped, [false, true, false], "stops after each synchronization\n{ctx}");
}

/// Every directory of a recording 0700, every file 0600.
fn check_private(dir: &Path) {
    use std::os::unix::fs::PermissionsExt as _;
    let mut stack = vec![dir.to_path_buf()];
    let mut files = 0;
    while let Some(d) = stack.pop() {
        let m = std::fs::metadata(&d).unwrap().permissions().mode() & 0o777;
        assert_eq!(m, 0o700, "{}", d.display());
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                assert_eq!(std::fs::metadata(&p).unwrap().permissions().mode() & 0o777, 0o600, "{}", p.display());
                files += 1;
            }
        }
    }
    assert!(files > 2, "{}: {files} files", dir.display());
}

/// Each line's kind: its `type` and, for calls, its `name`.
fn line_kinds(rec: &Recording) -> BTreeSet<String> {
    rec.lines
        .iter()
        // Scheduler and stack lines depend on the run's timing, not on the format.
        .filter(|l| !matches!(l["type"].as_str(), Some("sched" | "stack" | "sample")))
        .map(|l| format!("{} {}", l["type"].as_str().unwrap_or("?"), l["name"].as_str().unwrap_or("")))
        .collect()
}

#[test]
fn compress_zstd_writes_trace_jsonl_zst_and_the_manifest_names_it() {
    if !common::root_tests_enabled() {
        return;
    }
    let plain = record_program("replayable-plain", &["--capture-data"]);
    let rec = record_program("replayable-zstd", &["--capture-data", "--compress", "zstd"]);
    let ctx = &rec.ctx;
    assert_eq!(rec.manifest["trace"], "trace.jsonl.zst", "{}", rec.manifest);
    assert!(rec.dir.join("trace.jsonl.zst").is_file(), "{ctx}");
    assert!(!rec.dir.join("trace.jsonl").exists(), "{ctx}");
    // A zstd stream of whole lines that says what the plain one says.
    assert_eq!(line_kinds(&rec), line_kinds(&plain), "{ctx}");
    check_copies(&rec, true);
    check_d2h(&rec, true);
    check_coverage(&rec, true);
    check_images(&rec);
    check_launches(&rec);
    assert_eq!(rec.footer()["replay"], rec.manifest["coverage"], "{ctx}");
    // tracer-format's manifest parser and reader take the directory.
    let mpath = rec.dir.join("manifest.json");
    let m = tracer_format::recording::Manifest::parse(&fs::read_to_string(&mpath).unwrap(), &mpath, "tracer").unwrap();
    assert_eq!(m.trace, "trace.jsonl.zst");
    assert_eq!(tracer_format::recording::trace_path(&rec.dir).unwrap(), rec.dir.join("trace.jsonl.zst"));
    let mut n = 0;
    tracer_format::read::for_each(&rec.dir, |_| n += 1).unwrap();
    assert_eq!(n, rec.lines.len(), "{ctx}");
    // `tracer summary DIR` reads it; so does `replay plan DIR` (when built).
    let out = Command::new(common::tracer_bin()).arg("summary").arg(&rec.dir).output().unwrap();
    assert!(out.status.success(), "tracer summary: {}\n{ctx}", String::from_utf8_lossy(&out.stderr));
    let replay = Path::new(common::tracer_bin()).with_file_name("replay");
    if replay.is_file() {
        let out = Command::new(&replay).arg("plan").arg(&rec.dir).output().unwrap();
        assert!(
            out.status.success(),
            "replay plan: {}\n{}\n{ctx}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    } else {
        eprintln!("note: {} not built (cargo build -p replay): replay plan not checked", replay.display());
    }
    plain.cleanup();
    rec.cleanup();
}

#[test]
fn an_existing_recording_directory_is_refused_unless_force() {
    if !common::root_tests_enabled() {
        return;
    }
    let dir = fresh_rec_dir("exists");
    fs::create_dir(&dir).unwrap();
    fs::write(dir.join("keep"), "keep me\n").unwrap();
    let t = std::ffi::OsStr::new("true");
    let (st, err) = run_tracer(&dir, &[], &[t]);
    assert_eq!(common::shell_code(&st), 2, "{err}");
    let shown = dir.display().to_string();
    assert!(
        err.starts_with("tracer: ") && err.lines().count() == 1 && err.contains(&shown) && err.contains("--force"),
        "want one line `tracer: ...` naming {shown} and --force, got: {err:?}"
    );
    assert_eq!(fs::read_to_string(dir.join("keep")).unwrap(), "keep me\n");
    assert_eq!(listing(&dir, ""), BTreeSet::from(["keep".to_string()]), "the refused run left files");

    // --force empties a recording, never a directory that is not one.
    let (st, err) = run_tracer(&dir, &["--force"], &[t]);
    assert_eq!(common::shell_code(&st), 2, "--force on a directory that is not a recording: {err}");
    assert!(err.contains("is not a recording directory") && err.contains(&shown), "{err}");
    assert_eq!(listing(&dir, ""), BTreeSet::from(["keep".to_string()]), "--force removed a non-recording");
    fs::write(dir.join("trace.jsonl"), "{}\n").unwrap();
    let (st, err) = run_tracer(&dir, &["--force"], &[t]);
    assert_eq!(common::shell_code(&st), 0, "--force: {err}");
    assert!(!dir.join("keep").exists(), "--force keeps nothing of the old recording");
    let lines = common::read_trace(&dir.join("trace.jsonl")).unwrap();
    assert_eq!(lines[0]["replayable"]["capture_data"], false);
    let m: Value = serde_json::from_str(&fs::read_to_string(dir.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(m["schema_version"], 1, "{m}");
    assert_eq!(m["images"], json!([]), "{m}");
    assert_eq!(m["coverage"]["image_loads"], 0, "{m}");
    assert_eq!(m["coverage"]["launches"], 0, "{m}");
    fs::remove_dir_all(&dir).unwrap();
    let _ = fs::remove_file(dir.with_extension("stdout"));
    let _ = fs::remove_file(dir.with_extension("stderr"));
}

#[test]
fn default_recording_name_is_trace_utc_timestamp_rec() {
    if !common::root_tests_enabled() {
        return;
    }
    let cwd = fresh_rec_dir("default-name").with_extension("cwd");
    fs::create_dir_all(&cwd).unwrap();
    let utc = || {
        let o = Command::new("date").args(["-u", "+%Y%m%dT%H%M%SZ"]).output().unwrap();
        String::from_utf8(o.stdout).unwrap().trim().to_string()
    };
    let before = utc();
    let o = Command::new(common::tracer_bin())
        .args(["record", "--replayable", "-q", "--libcuda"])
        .env("TRACER_HOST_SPEED_HISTORY", "")
        .arg(&common::fake().lib)
        .args(["--", "true"])
        .current_dir(&cwd)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let after = utc();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let names = listing(&cwd, "");
    assert_eq!(names.len(), 1, "{names:?}");
    let name = names.into_iter().next().unwrap();
    let stamp = name.strip_prefix("trace_").and_then(|n| n.strip_suffix(".rec")).unwrap_or("");
    let b = stamp.as_bytes();
    let shape = b.len() == 16
        && b[..8].iter().all(u8::is_ascii_digit)
        && b[8] == b'T'
        && b[9..15].iter().all(u8::is_ascii_digit)
        && b[15] == b'Z';
    assert!(shape, "want trace_YYYYMMDDTHHMMSSZ.rec, got {name}");
    assert!(before.as_str() <= stamp && stamp <= after.as_str(), "{stamp} not within [{before}, {after}]");
    let dir = cwd.join(&name);
    assert!(
        dir.join("manifest.json").is_file() && dir.join("trace.jsonl").is_file(),
        "{name}: {:?}",
        listing(&dir, "")
    );
    fs::remove_dir_all(&cwd).unwrap();
}

/// param_buffer on a hand-built case (no root): k_struct's documented layout.
#[test]
fn param_buffer_places_values_at_their_offsets() {
    let k = r::kernel("k_struct");
    let odd: Vec<u8> = (1..=24).collect();
    let values = vec![vec![0xaa], odd.clone(), vec![0xb1, 0xb2, 0xb3], vec![0xc1, 0xc2], (0xd0..0xd8).collect()];
    let mut want = vec![0xaa, 9, 9, 9, 9, 9, 9, 9];
    want.extend(&odd);
    want.extend([0xb1, 0xb2, 0xb3, 9, 0xc1, 0xc2, 9, 9]);
    want.extend(0xd0..0xd8u8);
    assert_eq!(r::param_buffer(k, &values, 9), want);
    assert_eq!(r::param_buffer(r::kernel("k_noparams"), &[], 0), Vec::<u8>::new());
    // The values of launch 2 (kernelParams: zero padding), by hand.
    let b = r::param_buffer(k, &r::args("k_struct", 2, 0), 0);
    assert_eq!(
        r::hex(&b),
        "42000000000000000200000000000000000000000000024\
         0faff000000000000020304000270000002002000007f0000"
    );
}

#[test]
#[should_panic(expected = "k_vec parameter 1: 2 bytes for a 1-byte slot")]
fn param_buffer_refuses_a_value_of_the_wrong_size() {
    r::param_buffer(r::kernel("k_vec"), &[vec![0; 16], vec![0; 2], vec![0; 8]], 0);
}

// ---------------------------------------------------------------------------
// The checks themselves, on a reference recording
// ---------------------------------------------------------------------------

/// What replayable.c printed about each launch: id -> Some((params_from, hex)), None for the unknown handle.
fn program_launches(stdout: &str) -> BTreeMap<u64, Option<(String, String)>> {
    let mut m = BTreeMap::new();
    for line in stdout.lines().filter(|l| l.starts_with("launch ")) {
        let w: Vec<&str> = line.split(' ').collect();
        let v = (w[4] != "-").then(|| (w[4].to_string(), w[5].to_string()));
        m.insert(w[1].parse().unwrap(), v);
    }
    m
}

/// Builds, from a plain trace of replayable.c (tracer without --replayable)
/// and what the program printed it passed, the recording a correct
/// `--replayable --capture-data` recorder would write; counts in coverage
/// are counted from the lines, not taken from the plan.
fn reference_recording(dir: &Path, plain: Vec<Value>, stdout: &str) -> Recording {
    let mut lines = plain;
    let passed = program_launches(stdout);
    let by_ts = |lines: &[Value], names: &[&str]| -> Vec<usize> {
        let mut v: Vec<usize> =
            (0..lines.len()).filter(|&i| lines[i]["name"].as_str().is_some_and(|n| names.contains(&n))).collect();
        v.sort_by_key(|&i| lines[i]["ts"].as_u64().unwrap_or(0));
        v
    };
    fs::create_dir_all(dir.join("images")).unwrap();
    fs::create_dir_all(dir.join("data")).unwrap();
    let mut images: BTreeMap<String, (&str, u64)> = BTreeMap::new();
    for (i, l) in by_ts(&lines, &LOAD_APIS).into_iter().zip(r::loads()) {
        match l.fixture {
            Some(f) => {
                let bytes = r::fixture(f);
                let sha = r::sha256_hex(&bytes);
                fs::write(dir.join("images").join(&sha), &bytes).unwrap();
                images.entry(sha.clone()).or_insert((f, 0)).1 += 1;
                lines[i]["image"] = json!(sha);
            }
            None => lines[i]["image_error"] = json!("reading 4096 bytes at 0x…: Input/output error"),
        }
    }
    let launch_apis = [
        "cuLaunchKernel",
        "cuLaunchKernel_ptsz",
        "cuLaunchKernelEx",
        "cuLaunchKernelEx_ptsz",
        "cuLaunchCooperativeKernel",
    ];
    let (mut exact, mut extra, mut missing) = (0u64, 0u64, 0u64);
    for i in by_ts(&lines, &launch_apis) {
        let id = lines[i]["grid"][0].as_u64().unwrap();
        match &passed[&id] {
            Some((from, hex)) => {
                lines[i]["params"] = json!(hex);
                lines[i]["params_from"] = json!(from);
                exact += 1;
                extra += (from == "extra") as u64;
            }
            None => {
                lines[i]["params_error"] = json!("no layout for the function handle");
                missing += 1;
            }
        }
    }
    let (mut h2d, mut data_bytes) = (0u64, 0u64);
    let mut data_files = BTreeSet::new();
    for (i, c) in by_ts(&lines, &COPY_APIS).into_iter().zip(r::copies()) {
        if let Some(b) = &c.h2d {
            let sha = r::sha256_hex(b);
            if data_files.insert(sha.clone()) {
                fs::write(dir.join("data").join(&sha), b).unwrap();
                data_bytes += b.len() as u64;
            }
            lines[i]["data"] = json!(sha);
            h2d += 1;
        }
    }
    let count = |k: &str| lines.iter().filter(|l| l.get(k).is_some()).count();
    let cap = 8u64 << 30;
    let coverage = json!({
        "image_loads": count("image") + count("image_error"), "images_captured": count("image"),
        "image_errors": count("image_error"),
        "launches": exact + missing, "params_exact": exact, "params_from_extra": extra, "params_missing": missing,
        "params_missing_reasons": {"no layout for the function handle": missing},
        "graph_launches": lines.iter().filter(|l| l["name"] == "cuGraphLaunch").count(),
        "h2d_copies": h2d, "h2d_captured": count("data"),
    });
    lines[0]["replayable"] = json!({"capture_data": true, "data_cap_bytes": cap});
    lines.last_mut().unwrap()["replay"] = coverage.clone();
    let kernels: Vec<Value> = r::KERNELS
        .iter()
        .map(|k| json!({"name": k.name, "param_size": k.size, "params": k.params.iter().map(|&(o, s)| json!([o, s])).collect::<Vec<_>>()}))
        .collect();
    let manifest = json!({
        "format": "tracer-recording", "schema_version": 1, "tracer_version": env!("CARGO_PKG_VERSION"),
        "trace": "trace.jsonl", "capture_data": true,
        "images": images.iter().map(|(sha, (f, loads))| json!({
            "sha256": sha, "file": format!("images/{sha}"), "bytes": r::fixture(f).len(),
            "kind": r::image_kind(f), "loads": loads, "kernels": kernels,
        })).collect::<Vec<_>>(),
        "data": {"files": data_files.len(), "bytes": data_bytes, "skipped_over_cap": 0, "cap_bytes": cap},
        "coverage": coverage,
    });
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    fs::write(dir.join("trace.jsonl"), text).unwrap();
    fs::write(dir.join("manifest.json"), serde_json::to_string_pretty(&manifest).unwrap()).unwrap();
    Recording { dir: dir.to_path_buf(), lines, manifest, ctx: format!("reference recording {}", dir.display()) }
}

/// The checks above accept what a correct recorder would write on top of the
/// real trace of replayable.c (its field names, launch geometry, decoded
/// attributes, kernel names of the fake's handles), and refuse it with one
/// parameter byte, one image byte or one coverage count wrong.
#[test]
fn checks_accept_a_reference_recording_and_refuse_wrong_bytes() {
    if !common::root_tests_enabled() {
        return;
    }
    let dir = fresh_rec_dir("reference");
    fs::create_dir(&dir).unwrap();
    // Beside the recording directory, as its stdout and stderr: the directory holds only what a recording has.
    let plain = dir.with_extension("jsonl");
    let prog = common::fake_program("replayable");
    let fixtures = r::fixture_dir();
    let cmd = [prog.as_os_str(), fixtures.as_os_str()];
    let (st, stderr) =
        common::record_program(&plain, &["-q"], &cmd, &[], Duration::from_secs(180), "tracer on replayable");
    assert_eq!(common::shell_code(&st), 0, "{stderr}");
    let stdout = fs::read_to_string(plain.with_extension("stdout")).unwrap();
    let lines = common::read_trace(&plain).unwrap();
    fs::remove_file(&plain).unwrap();
    let rec = reference_recording(&dir, lines, &stdout);
    check_manifest_head(&rec, true);
    check_images(&rec);
    check_launches(&rec);
    check_copies(&rec, true);
    check_coverage(&rec, true);

    let refused = |what: &str, f: &dyn Fn()| {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
        assert!(r.is_err(), "the checks accepted {what}");
    };
    // One parameter byte of a thread's `extra` launch.
    let mut bad = Recording {
        dir: rec.dir.clone(),
        lines: rec.lines.clone(),
        manifest: rec.manifest.clone(),
        ctx: String::new(),
    };
    let i = bad.lines.iter().position(|l| l["grid"][0] == 2013).unwrap();
    let p = bad.lines[i]["params"].as_str().unwrap().to_string();
    bad.lines[i]["params"] = json!(format!("{}{}", &p[..p.len() - 2], if p.ends_with("00") { "01" } else { "00" }));
    refused("a wrong parameter byte", &|| check_launches(&bad));
    // One byte of a stored image.
    let sha = r::sha256_hex(&r::fixture("kernels.compute_80.ptx"));
    let path = rec.dir.join("images").join(&sha);
    let good = fs::read(&path).unwrap();
    let mut b = good.clone();
    b[100] ^= 1;
    fs::write(&path, &b).unwrap();
    refused("a wrong image byte", &|| check_images(&rec));
    fs::write(&path, &good).unwrap();
    // A coverage count.
    let mut bad = Recording {
        dir: rec.dir.clone(),
        lines: rec.lines.clone(),
        manifest: rec.manifest.clone(),
        ctx: String::new(),
    };
    bad.manifest["coverage"]["params_exact"] = json!(120);
    refused("a wrong coverage count", &|| check_coverage(&bad, true));
    rec.cleanup();
}

#[test]
fn capture_data_stops_at_the_cap_and_says_so() {
    if !common::root_tests_enabled() {
        return;
    }
    // 1 MiB: the 100-byte and 4096-byte sources fit, the 1 MiB ones do not.
    let rec = record_program("replayable-cap", &["--capture-data", "--data-cap-mib", "1"]);
    let h2d: Vec<&Value> = rec.lines.iter().filter(|l| l["type"] == "memcpy" && l["direction"] == "h2d").collect();
    let srcs: Vec<Vec<u8>> = r::copies().into_iter().filter_map(|c| c.h2d).collect();
    assert_eq!(h2d.len(), srcs.len(), "{}", rec.ctx);
    let mut stored = BTreeSet::new();
    for (line, src) in h2d.iter().zip(&srcs) {
        if src.len() == 1 << 20 {
            let e = line["data_error"].as_str().unwrap_or_else(|| panic!("over the cap: {line}"));
            assert!(e.contains("1 MiB data cap") && e.contains("--data-cap-mib"), "{e}");
            assert!(line.get("data").is_none(), "{line}");
        } else {
            assert_eq!(line["data"], json!(r::sha256_hex(src)), "{line}");
            stored.insert(r::sha256_hex(src));
        }
    }
    // The device-to-host data (100 + 256 bytes) fits too.
    let d2h = d2h_files(&rec);
    assert_eq!(d2h.values().sum::<u64>(), 356, "{d2h:?}");
    stored.extend(d2h.keys().cloned());
    assert_eq!(listing(&rec.dir, "data"), stored);
    let data = &rec.manifest["data"];
    assert_eq!(
        (&data["files"], &data["bytes"], &data["skipped_over_cap"], &data["cap_bytes"]),
        (&json!(4), &json!(100 + 4096 + 356), &json!(2), &json!(1 << 20)),
        "{data}"
    );
    assert_eq!(rec.manifest["coverage"]["h2d_captured"], json!(3), "{}", rec.manifest["coverage"]);
    rec.cleanup();
}
