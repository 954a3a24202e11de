//! `tracer --gpu-timestamps` end to end without a GPU: the command is a small
//! program that plays the CUDA driver's part (dlopen CUDA_INJECTION64_PATH,
//! call InitializeInjection) with a fake libcupti that produces known records
//! (tracer-cupti/tests/fakecupti/). Checks the FIFO, the environment, the gpu
//! lines, the header and footer keys and the warnings.
mod common;

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

struct Built {
    injection: PathBuf,
    fake_cupti: PathBuf,
    driver: PathBuf,
}

/// Builds libtracer_cupti.so (cargo, same profile as tracer) and the fake
/// libcupti and its driver program (cc), once.
fn built() -> &'static Built {
    static B: OnceLock<Built> = OnceLock::new();
    B.get_or_init(|| {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let tracer = Path::new(common::tracer_bin());
        let profile_dir = tracer.parent().unwrap();
        let mut c = Command::new(cargo);
        c.args(["build", "-q", "-p", "tracer-cupti"]);
        if profile_dir.file_name().is_some_and(|n| n == "release") {
            c.arg("--release");
        }
        assert!(c.status().expect("running cargo").success(), "building tracer-cupti failed");
        let injection = profile_dir.join("libtracer_cupti.so");
        assert!(injection.is_file(), "{} missing after the build", injection.display());
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tracer-cupti/tests/fakecupti");
        let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fakecupti-root");
        std::fs::create_dir_all(&out).unwrap();
        let fake_cupti = out.join("libfakecupti.so");
        let driver = out.join("inject_driver");
        let cc = |args: &[&str]| assert!(Command::new("cc").args(args).status().unwrap().success(), "cc {args:?}");
        cc(&["-shared", "-fPIC", "-o", fake_cupti.to_str().unwrap(), src.join("fakecupti.c").to_str().unwrap()]);
        cc(&["-o", driver.to_str().unwrap(), src.join("inject_driver.c").to_str().unwrap(), "-ldl"]);
        Built { injection, fake_cupti, driver }
    })
}

fn run(tag: &str, cupti_lib: &Path, env: &[(&str, &str)]) -> common::Traced {
    run_with(tag, cupti_lib, env, &[], &[])
}

/// [`run`] with more tracer options and arguments for the driver program.
fn run_with(tag: &str, cupti_lib: &Path, env: &[(&str, &str)], opts: &[&str], args: &[&str]) -> common::Traced {
    let b = built();
    let out = common::fresh_output(tag);
    let mut c = Command::new(common::tracer_bin());
    c.arg("-o").arg(&out).arg("--libcuda").arg(&common::fake().lib);
    c.arg("--gpu-timestamps").arg("--cupti-injection").arg(&b.injection).arg("--cupti-lib").arg(cupti_lib);
    c.args(opts).arg("--").arg(&b.driver).args(args);
    c.env("TRACER_DURATIONS_LIBRARY", out.with_extension("durations.json"));
    c.envs(env.iter().copied()).env_remove("CUDA_INJECTION64_PATH");
    c.stdout(Stdio::from(File::create(out.with_extension("stdout")).unwrap()));
    c.stderr(Stdio::from(File::create(out.with_extension("stderr")).unwrap()));
    c.stdin(Stdio::null());
    let t0 = Instant::now();
    let mut child = c.spawn().unwrap();
    let st = common::wait_with_timeout(&mut child, Duration::from_secs(120), false, "tracer --gpu-timestamps");
    common::finish(out, st, t0.elapsed())
}

/// A gpu line without its timestamps, and its duration in ns.
fn strip(v: &Value) -> (Value, u64) {
    let mut v = v.clone();
    let o = v.as_object_mut().unwrap();
    let (ts, end) = (o.remove("ts").unwrap().as_u64().unwrap(), o.remove("end_ts").unwrap().as_u64().unwrap());
    o.remove("pid");
    (v, end - ts)
}

#[test]
fn fake_cupti_records_become_gpu_lines() {
    if !common::root_tests_enabled() {
        return;
    }
    let b = built();
    let t = run("gpu-ts", &b.fake_cupti, &[]);
    assert_eq!(t.code(), 0, "{}", t.describe());
    let h = &t.header()["gpu_timestamps"];
    assert_eq!(h["enabled"], true);
    assert_eq!(h["library"], b.injection.canonicalize().unwrap().display().to_string());
    let gpu: Vec<&Value> = t.lines.iter().filter(|l| l["type"] == "gpu").collect();
    let got: Vec<(Value, u64)> = gpu.iter().map(|v| strip(v)).collect();
    let k = |stream_id: u32, stream: &str, corr: u32| {
        json!({"type":"gpu","op":"kernel","name":"_Z3fooPf","source":"cupti","tid":0,"device":0,"context_id":1,
               "stream_id":stream_id,"stream":stream,"correlation_id":corr,"grid":[2,3,4],"block":[128,1,1],
               "shared_mem":256,"duration_us":4.5})
    };
    assert_eq!(
        got,
        vec![
            (k(13, "0x5000", 41), 4500),
            // the fake's graph node kernel: CUPTI's graph and node ids reach the line
            (
                {
                    let mut v = k(7, "0x0", 42);
                    v["graph_id"] = json!(3);
                    v["graph_node_id"] = json!(0x2_0000_0005u64);
                    v
                },
                4500
            ),
            (
                json!({"type":"gpu","op":"memcpy","name":"memcpy_htod","source":"cupti","tid":0,"device":0,"context_id":1,
                       "stream_id":7,"stream":"0x0","correlation_id":43,"size":1048576,"direction":"h2d","duration_us":2.25,
                       "src_kind":"pageable","dst_kind":"device"}),
                2250
            ),
            (
                json!({"type":"gpu","op":"memset","name":"memset","source":"cupti","tid":0,"device":0,"context_id":1,
                       "stream_id":7,"stream":"0x0","correlation_id":44,"size":64,"duration_us":0.001}),
                1
            ),
        ]
    );
    // CLOCK_MONOTONIC, like every other line: after the header's clock sample.
    let t0 = t.header()["clock"]["monotonic_ns"].as_u64().unwrap();
    let pid = gpu[0]["pid"].as_u64().unwrap();
    assert!(gpu.iter().all(|g| g["ts"].as_u64().unwrap() > t0 && g["pid"] == pid));
    let f = &t.footer()["gpu_timestamps"];
    assert_eq!(
        *f,
        json!({"kernels":2,"memcpys":1,"memsets":1,"dropped_by_cupti":3,"dropped_by_injection":0,"no_timestamp":0,
               "unknown_stream":0,"undecodable":0,"incomplete_bytes":0,
               "processes":[{"pid":pid,"cupti":b.fake_cupti.canonicalize().unwrap().display().to_string(),
                             "cupti_version":99,"clock":"timestamp_callback","offset_ns":0,"flushed_at_exit":true,"errors":[],
                             "notes":["hw_trace: refused (CUPTI_ERROR_NOT_SUPPORTED (27)): software timestamps"]}]})
    );
    assert!(
        t.stderr.contains("gpu (CUPTI, 1 process(es)): 2 kernels, 1 copies, 1 sets measured; 3 records lost (3 by CUPTI, 0 by the pipe)"),
        "{}",
        t.describe()
    );
    assert!(
        t.stderr.contains(&format!("tracer: warning: --gpu-timestamps: CUPTI dropped 3 activity records in pid {pid}"))
    );
    t.cleanup();
}

#[test]
fn a_cupti_that_does_not_load_is_a_warning_and_the_run_still_records() {
    if !common::root_tests_enabled() {
        return;
    }
    // A file that exists but is no library.
    let not_a_lib = Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
    let t = run("gpu-ts-nocupti", &not_a_lib, &[]);
    // inject_driver exits 3 when InitializeInjection fails; tracer passes it on.
    assert_eq!(t.code(), 3, "{}", t.describe());
    let want = format!("cannot load the CUPTI library {} (--cupti-lib): ", not_a_lib.canonicalize().unwrap().display());
    assert!(
        t.stderr.contains("tracer: warning: --gpu-timestamps: pid ") && t.stderr.contains(&want),
        "{}",
        t.describe()
    );
    let p = &t.footer()["gpu_timestamps"]["processes"][0];
    assert!(p["errors"][0].as_str().unwrap().starts_with(&want), "{p}");
    assert_eq!(p["cupti"], Value::Null);
    assert_eq!(t.lines.iter().filter(|l| l["type"] == "gpu").count(), 0);
    assert!(t.footer()["exit"]["code"] == 3);
    t.cleanup();
}

#[test]
fn an_injection_already_set_is_refused() {
    if !common::root_tests_enabled() {
        return;
    }
    let b = built();
    let out = common::fresh_output("gpu-ts-refused");
    let o = Command::new(common::tracer_bin())
        .arg("-o")
        .arg(&out)
        .arg("--libcuda")
        .arg(&common::fake().lib)
        .args(["--gpu-timestamps", "--"])
        .arg(&b.driver)
        .env("CUDA_INJECTION64_PATH", "/opt/other/libinject.so")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        "tracer: --gpu-timestamps sets CUDA_INJECTION64_PATH, which is already set (/opt/other/libinject.so): \
         unset it, or leave out --gpu-timestamps\n"
    );
    assert!(!out.exists(), "no trace file is left behind");
}

#[test]
fn sampled_measurement_writes_its_windows() {
    if !common::root_tests_enabled() {
        return;
    }
    let b = built();
    // 300 launches 1 ms apart; records on 20 ms of every 100 ms, no lead-in
    let t = run_with("gpu-sample", &b.fake_cupti, &[], &["--gpu-sample", "20/100/0"], &["launch", "300", "1000"]);
    assert_eq!(t.code(), 0, "{}", t.describe());
    assert_eq!(t.header()["gpu_timestamps"]["sample"], json!({"window_ms": 20, "period_ms": 100, "lead_ms": 0}));
    let windows: Vec<(u64, u64)> = t
        .lines
        .iter()
        .filter(|l| l["type"] == "gpu_window")
        .map(|l| (l["ts"].as_u64().unwrap(), l["end_ts"].as_u64().unwrap()))
        .collect();
    assert!(windows.len() >= 4, "{windows:?}");
    assert!(t.lines.iter().filter(|l| l["type"] == "gpu_window").all(|l| l["op"] == "measured" && l["pid"].is_u64()));
    let kernels: Vec<u64> = t
        .lines
        .iter()
        .filter(|l| l["type"] == "gpu" && l["op"] == "kernel")
        .map(|l| l["ts"].as_u64().unwrap())
        .collect();
    let inside = kernels.iter().filter(|&&k| windows.iter().any(|w| w.0 <= k && k < w.1)).count();
    // launches every ≥ 1 ms: some in every window closed before exit (how
    // many depends on the machine's load)
    assert!(
        inside >= windows.len() - 1 && kernels.len() - inside <= 2 * windows.len(),
        "{inside} of {} kernels in windows",
        kernels.len()
    );
    let f = &t.footer()["gpu_timestamps"];
    assert_eq!(f["windows"].as_u64(), Some(windows.len() as u64));
    assert_eq!(f["window_ns"].as_u64(), Some(windows.iter().map(|w| w.1 - w.0).sum::<u64>()));

    // a lead-in: the first window lasts 150 ms (a program's loading phase
    // measured whole), then 20 ms every 100 ms again
    let t =
        run_with("gpu-sample-lead", &b.fake_cupti, &[], &["--gpu-sample", "20/100/150"], &["launch", "400", "1000"]);
    assert_eq!(t.code(), 0, "{}", t.describe());
    let w: Vec<(u64, u64)> = t
        .lines
        .iter()
        .filter(|l| l["type"] == "gpu_window")
        .map(|l| (l["ts"].as_u64().unwrap(), l["end_ts"].as_u64().unwrap()))
        .collect();
    assert!(w.len() >= 2, "{w:?}");
    assert!(w[0].1 - w[0].0 >= 150_000_000, "{w:?}");
    // (80 ms apart on the period grid, less the sampling thread's wake-up jitter: the
    // first window's end and the second's start are each late by ~0.1 ms, not by the same)
    assert!(w[1].0 - w[0].1 >= 75_000_000 && w[1].1 - w[1].0 < 100_000_000, "{w:?}");

    // compare refuses a trace measured in windows only (the fake driver's
    // launches are not traced here, so plot's sampled rows are tested on a
    // hand-built trace: export::plot::from_trace).
    let tracer = |args: &[&str]| Command::new(env!("CARGO_BIN_EXE_tracer")).args(args).output().unwrap();
    let trace = t.out.to_str().unwrap();
    let o = tracer(&["compare", trace]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("recorded with --gpu-sample"), "{err}");
}

/// The default recording (no --gpu-timestamps): adaptive windows with the
/// fake libcupti, the durations library at `library`.
fn run_default(tag: &str, library: &Path, opts: &[&str], args: &[&str]) -> common::Traced {
    let b = built();
    let out = common::fresh_output(tag);
    let mut c = Command::new(common::tracer_bin());
    c.arg("-o").arg(&out).arg("--libcuda").arg(&common::fake().lib);
    if !opts.contains(&"--no-gpu") {
        c.arg("--cupti-injection").arg(&b.injection).arg("--cupti-lib").arg(&b.fake_cupti);
    }
    c.args(opts).arg("--").arg(&b.driver).args(args);
    // this machine's /proc/driver/nvidia names no GPU: the key is given
    c.env("TRACER_DURATIONS_LIBRARY", library)
        .env("TRACER_GPU_KEY", "Fake GPU;1.0")
        .env_remove("CUDA_INJECTION64_PATH");
    c.stdout(Stdio::from(File::create(out.with_extension("stdout")).unwrap()));
    c.stderr(Stdio::from(File::create(out.with_extension("stderr")).unwrap()));
    c.stdin(Stdio::null());
    let t0 = Instant::now();
    let mut child = c.spawn().unwrap();
    let st = common::wait_with_timeout(&mut child, Duration::from_secs(120), false, "tracer (default GPU side)");
    common::finish(out, st, t0.elapsed())
}

fn windows_of(t: &common::Traced) -> Vec<&Value> {
    t.lines.iter().filter(|l| l["type"] == "gpu_window").collect()
}

#[test]
fn the_default_recording_measures_in_adaptive_windows_and_fills_the_library() {
    if !common::root_tests_enabled() {
        return;
    }
    let dir = common::fresh_output("durations-lib").with_extension("d");
    let _ = std::fs::remove_dir_all(&dir);
    let library = dir.join("durations.json");
    let windows = ["--gpu-windows", "20/100/200/0"];
    // 500 launches ≥ 1 ms apart
    let t = run_default("gpu-default-1", &library, &windows, &["launch", "500", "1000"]);
    assert_eq!(t.code(), 0, "{}", t.describe());
    let h = &t.header()["gpu_timestamps"];
    assert_eq!((&h["enabled"], &h["mode"], &h["implicit"]), (&json!(true), &json!("adaptive"), &json!(true)));
    assert_eq!(
        h["adaptive"],
        json!({"window_ms": 20, "max_window_ms": 100, "max_gap_ms": 200, "budget_pct": 0.0, "budget_horizon_ms": 0})
    );
    let w = windows_of(&t);
    assert!(w.len() >= 3, "{w:?}");
    // the fake's one kernel configuration is new in the first window only
    assert_eq!(w[0]["new_keys"], 1, "{w:?}");
    assert!(w[1..].iter().all(|x| x["new_keys"] == 0), "{w:?}");
    let f = &t.footer()["gpu_timestamps"];
    assert_eq!(f["windows"].as_u64(), Some(w.len() as u64));
    assert!(f["windows_detached"].as_u64().unwrap() >= w.len() as u64 - 1, "{f}");
    assert!(f["attach_ns"].as_u64().unwrap() > 0 && f["detach_ns"].as_u64().unwrap() > 0, "{f}");
    // adaptive windows attach again after each detach: hardware timestamps are not asked for
    assert_eq!(
        f["processes"][0]["notes"][0],
        "hw_trace: not asked: adaptive windows attach CUPTI again after each detach, and hardware timestamps \
         allow no late attach: software timestamps"
    );
    let kernels = t.lines.iter().filter(|l| l["type"] == "gpu" && l["op"] == "kernel").count() as u64;
    assert_eq!(f["window_records"].as_u64(), Some(kernels));
    // the library now holds the fake's kernel, counted once per record
    let lib: Value = serde_json::from_str(&std::fs::read_to_string(&library).unwrap()).unwrap();
    assert_eq!(lib["format"], "tracer-durations-library");
    let gpus = lib["gpus"].as_array().unwrap();
    assert_eq!(gpus.len(), 1);
    let k = &gpus[0]["kernels"][0];
    assert_eq!((&k["kernel"], &k["grid"], &k["count"]), (&json!("_Z3fooPf"), &json!([2, 3, 4]), &json!(kernels)));
    assert_eq!((k["median_ns"].as_u64(), gpus[0]["runs"].as_u64()), (Some(4500), Some(1)));
    assert_eq!(t.footer()["durations_library"]["path"], library.display().to_string());
    assert!(t.stderr.contains("durations library "), "{}", t.stderr);

    // a second run starts from what the library knows: nothing is new, the first window is not extended
    let t2 = run_default("gpu-default-2", &library, &windows, &["launch", "150", "1000"]);
    assert_eq!(t2.code(), 0, "{}", t2.describe());
    let w2 = windows_of(&t2);
    assert!(w2.iter().all(|x| x["new_keys"] == 0), "{w2:?}");
    assert_eq!(w2[0]["extensions"], 0, "{w2:?}");
    let lib: Value = serde_json::from_str(&std::fs::read_to_string(&library).unwrap()).unwrap();
    assert_eq!(lib["gpus"][0]["runs"], 2);

    // a corrupt library is moved aside, said in one line, and the run records
    std::fs::write(&library, "{ not json").unwrap();
    let t3 = run_default("gpu-default-3", &library, &windows, &["launch", "50", "1000"]);
    assert_eq!(t3.code(), 0, "{}", t3.describe());
    assert!(t3.stderr.contains("moved aside to "), "{}", t3.stderr);
    let aside: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("durations.json.corrupt-"))
        .collect();
    assert_eq!(aside.len(), 1);
    let lib: Value = serde_json::from_str(&std::fs::read_to_string(&library).unwrap()).unwrap();
    assert_eq!(lib["gpus"][0]["runs"], 1);
    assert_eq!(t3.footer()["type"], "footer");

    // --no-gpu: the pure-uprobe mode, nothing injected
    let t4 = run_default("gpu-default-off", &library, &["--no-gpu"], &["launch", "5", "1000"]);
    assert_eq!(t4.code(), 2, "no injection: the driver finds no InitializeInjection: {}", t4.describe());
    assert!(t4.stderr.contains("inject_driver: no InitializeInjection"), "{}", t4.stderr);
    let h = &t4.header()["gpu_timestamps"];
    assert_eq!((&h["enabled"], &h["reason"]), (&json!(false), &json!("off (--no-gpu)")));
    assert!(!t4.lines.iter().any(|l| l["type"] == "gpu_window"));
    let _ = std::fs::remove_dir_all(&dir);
}
