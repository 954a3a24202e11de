//! Stacks end to end: a C program with frame pointers (tests/fakecuda/stacks.c:
//! main -> run_step -> launch_kernel -> cuLaunchKernel, main -> sync_step ->
//! cuStreamSynchronize, main -> load_batch -> read on a pipe) and a Python
//! 3.11 program calling the fake libcuda through ctypes (launch_step from
//! main, os.read in load_batch), recorded with default options: each launch
//! and synchronization line names its stack, whose frames are the program's
//! functions in order (Python ones with their file and line), and the
//! blocked reads' off_cpu lines name the function that read.
//!
//! `sudo -E TRACER_ROOT_TESTS=1 cargo test -p tracer --test root_stacks -- --test-threads=1`
mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

/// tests/fakecuda/stacks.c built with frame pointers, no inlining and no
/// sibling calls, against the fake libcuda.
fn c_program() -> PathBuf {
    c_program_of("stacks")
}

/// tests/fakecuda/NAME.c built so.
fn c_program_of(name: &str) -> PathBuf {
    let f = common::fake();
    let out = f.dir.join(name);
    let tmp = f.dir.join(format!("{name}.tmp"));
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let st = std::process::Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
        .args(["-O1", "-fno-omit-frame-pointer", "-fno-inline", "-fno-optimize-sibling-calls", "-Wall", "-o"])
        .arg(&tmp)
        .arg(common::src_dir().join(format!("{name}.c")))
        .arg(format!("-L{}", s(&f.dir)))
        .arg("-l:libcuda.so.1")
        .arg(format!("-Wl,-rpath,{}", s(&f.dir)))
        .arg("-pthread")
        .status()
        .unwrap();
    assert!(st.success());
    std::fs::rename(&tmp, &out).unwrap();
    out
}

fn record(tag: &str, cmd: &[&std::ffi::OsStr]) -> Vec<Value> {
    let out = common::fresh_output(tag);
    let (status, stderr) = common::record_program(&out, &[], cmd, &[], Duration::from_secs(120), tag);
    assert!(status.success(), "tracer on {tag}: {status}\n{stderr}");
    common::read_trace(&out).unwrap()
}

/// Stack id -> its frames.
fn stacks(lines: &[Value]) -> HashMap<u64, Vec<Value>> {
    lines
        .iter()
        .filter(|l| l["type"] == "stack")
        .map(|l| (l["id"].as_u64().unwrap(), l["frames"].as_array().unwrap().clone()))
        .collect()
}

fn frames_of<'a>(l: &Value, s: &'a HashMap<u64, Vec<Value>>) -> &'a [Value] {
    let id = l["stack"].as_u64().unwrap_or_else(|| panic!("no stack on {l}"));
    s.get(&id).unwrap_or_else(|| panic!("stack {id} has no stack line"))
}

fn names(f: &[Value]) -> Vec<&str> {
    f.iter().map(|f| f["fn"].as_str().unwrap()).collect()
}

fn footer(lines: &[Value]) -> &Value {
    lines.iter().rev().find(|l| l["type"] == "footer").expect("footer")
}

#[test]
fn c_launches_syncs_and_reads_name_their_functions() {
    if !common::root_tests_enabled() {
        return;
    }
    let prog = c_program();
    let lines = record("stacks-c", &[prog.as_os_str(), "3".as_ref()]);
    let s = stacks(&lines);
    let launches: Vec<&Value> = lines.iter().filter(|l| l["name"] == "cuLaunchKernel").collect();
    let syncs: Vec<&Value> = lines.iter().filter(|l| l["name"] == "cuStreamSynchronize").collect();
    assert_eq!((launches.len(), syncs.len()), (3, 3));
    for l in &launches {
        // Each launch follows a blocked read: none is sampled out.
        let f = frames_of(l, &s);
        assert_eq!(names(&f[..4]), ["cuLaunchKernel", "launch_kernel", "run_step", "main"], "{f:?}");
        assert!(f[0]["module"].as_str().unwrap().ends_with("libcuda.so.1"));
        assert!(f[1]["module"].as_str().unwrap().ends_with("/stacks"));
    }
    for l in &syncs {
        let f = frames_of(l, &s);
        assert_eq!(names(&f[..3]), ["cuStreamSynchronize", "sync_step", "main"], "{f:?}");
    }
    let pid = launches[0]["pid"].as_u64().unwrap();
    let reads: Vec<&Value> = lines
        .iter()
        .filter(|l| l["op"] == "off_cpu" && l["syscall"] == "read" && l["tid"].as_u64() == Some(pid))
        .collect();
    assert_eq!(reads.len(), 3, "one blocked read per round");
    for l in &reads {
        let f = frames_of(l, &s);
        // The C library's read wrapper (named where its symbols can be read).
        assert!(
            names(f)[0].contains("read") || f[0]["module"].as_str().is_some_and(|m| m.contains("/libc.so")),
            "{f:?}"
        );
        assert_eq!(names(&f[1..3]), ["load_batch", "main"], "{f:?}");
    }
    let foot = footer(&lines);
    assert_eq!(foot["stack_sampling"]["launches_sampled_out"], 0);
    assert_eq!(foot["stack_sampling"]["launches_sampled_in"], 3);
    assert_eq!(foot["stacks"]["orphans"].as_u64(), Some(0), "{}", foot["stacks"]);
    // The kernel side timed each walk it took: 3 launches and 3 synchronizations at calls, and
    // as many switch-outs as stacks came from them (nothing was lost).
    let w = &foot["stack_walks"];
    assert_eq!(foot["lost"]["total"], 0, "{foot}");
    assert_eq!(w["call"]["walks"], 6, "{w}");
    assert_eq!(w["switch_out"]["walks"], foot["stacks"]["by_site"]["switch_out"], "{w}");
    for site in ["call", "switch_out"] {
        let (n, ns, py) = (w[site]["walks"].as_u64(), w[site]["ns"].as_u64(), w[site]["python_ns"].as_u64());
        assert!(n > Some(0) && ns > Some(0) && py <= ns, "{site}: {w}");
    }
    assert!(lines[0]["stacks"]["calls"].as_array().unwrap().iter().any(|c| c == "cuLaunchKernel"));
}

/// The Python program; the test knows its lines. It stays 0.5 s after its
/// work: code objects are read from the live process when the collector
/// resolves a stack, and the first stacks' native symbolization (libpython,
/// in a debug build) can hold the collector back longer than the program's
/// 70 ms; a process gone by then has frames written `[python ?]` (counted
/// in the footer's `stacks.resolver_errors`).
const PY: &str = r#"import ctypes, os, sys, threading, time
lib = ctypes.CDLL(sys.argv[1])
r, w = os.pipe()
def writer(rounds):
    for _ in range(rounds):
        time.sleep(0.02)
        os.write(w, b"x")
def load_batch():
    return os.read(r, 1)
def launch_step(f):
    lib.cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, None, None, None)
def main():
    f = ctypes.c_void_p()
    lib.cuInit(0)
    lib.cuModuleGetFunction(ctypes.byref(f), ctypes.c_void_p(0x30001), b"step_kernel")
    t = threading.Thread(target=writer, args=(3,))
    t.start()
    for _ in range(3):
        load_batch()
        launch_step(f)
    t.join()
main()
time.sleep(0.5)
"#;

/// (function, file, line) of each Python frame; line 0 when the frame has
/// none (an instruction outside its code's table: a frame read while its
/// chain changed, as during the imports of a starting interpreter).
fn python_frames(f: &[Value]) -> Vec<(String, String, u64)> {
    f.iter()
        .filter(|f| f["kind"] == "python")
        .map(|f| {
            (
                f["fn"].as_str().unwrap().to_string(),
                f["file"].as_str().unwrap().to_string(),
                f["line"].as_u64().unwrap_or(0),
            )
        })
        .collect()
}

/// pyenv's Python 3.minor (the newest patch release installed).
fn pyenv_python(minor: u32) -> Option<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir("/root/.pyenv/versions")
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with(&format!("3.{minor}."))))
        .collect();
    v.sort();
    Some(v.pop()?.join(format!("bin/python3.{minor}")))
}

#[test]
fn python_311_launches_and_reads_name_their_functions_and_lines() {
    if !common::root_tests_enabled() {
        return;
    }
    let python = pyenv_python(11).expect("the test's Python 3.11 (pyenv) is missing");
    python_launches_and_reads(&python, "3.11");
}

/// The same program on the other versions the walker knows (each where
/// pyenv has it): 3.10's frame objects, 3.12's shim frames, 3.13's debug
/// offsets.
#[test]
fn python_310_312_313_launches_and_reads() {
    if !common::root_tests_enabled() {
        return;
    }
    for minor in [10, 12, 13] {
        match pyenv_python(minor) {
            Some(p) => python_launches_and_reads(&p, &format!("3.{minor}")),
            None => println!("no pyenv Python 3.{minor}: not checked"),
        }
    }
}

/// What tests/fakecuda/pyembed.c runs once it has started the interpreter
/// (`{lib}`: the fake libcuda): three launches right after loading libcuda.
const PY_EMBEDDED: &str = r#"import ctypes, time
lib = ctypes.CDLL("{lib}")
f = ctypes.c_void_p()
lib.cuInit(0)
lib.cuModuleGetFunction(ctypes.byref(f), ctypes.c_void_p(0x30001), b"step_kernel")
def launch_step(f):
    lib.cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, None, None, None)
for _ in range(3):
    launch_step(f)
time.sleep(0.5)
"#;

/// A program that loads libpython 20 ms after it starts, then libcuda, and
/// launches at once (tests/fakecuda/pyembed.c): its stacks made tracer look
/// for an interpreter before there was one, and not again within 100 ms.
/// The process is stopped at its open of libcuda until its probes are in
/// place, and its layout is looked at before it is continued: its first
/// launch has its Python frames, as every one after it.
#[test]
fn python_loaded_just_before_libcuda_has_frames_from_the_first_launch() {
    if !common::root_tests_enabled() {
        return;
    }
    let Some(python) = pyenv_python(12) else {
        println!("no pyenv Python 3.12: not checked");
        return;
    };
    let home = python.parent().unwrap().parent().unwrap();
    let libpython = home.join("lib/libpython3.12.so.1.0");
    let f = common::fake();
    let prog = f.dir.join("pyembed");
    let tmp = f.dir.join("pyembed.tmp");
    let st = std::process::Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
        .args(["-O1", "-Wall", "-o"])
        .arg(&tmp)
        .arg(common::src_dir().join("pyembed.c"))
        .status()
        .unwrap();
    assert!(st.success());
    std::fs::rename(&tmp, &prog).unwrap();
    let code = PY_EMBEDDED.replace("{lib}", f.lib.to_str().unwrap());
    let out = common::fresh_output("stacks-pyembed");
    let (status, stderr) = common::record_program(
        &out,
        &["--all-launch-stacks"],
        &[prog.as_os_str(), libpython.as_os_str(), "20".as_ref(), code.as_ref()],
        &[("PYTHONHOME", home.to_str().unwrap())],
        Duration::from_secs(120),
        "stacks-pyembed",
    );
    assert!(status.success(), "tracer on pyembed: {status}\n{stderr}");
    let lines = common::read_trace(&out).unwrap();
    let s = stacks(&lines);
    let launches: Vec<&Value> = lines.iter().filter(|l| l["name"] == "cuLaunchKernel").collect();
    assert_eq!(launches.len(), 3);
    for (i, l) in launches.iter().enumerate() {
        let f = frames_of(l, &s);
        let py: Vec<String> = python_frames(f).into_iter().map(|f| f.0).collect();
        assert_eq!(py, ["launch_step", "<module>"], "launch {i}: {f:?}; footer stacks: {}", footer(&lines)["stacks"]);
    }
    let foot = footer(&lines);
    assert_eq!(foot["python_layouts"]["found"], serde_json::json!({ "3.12": 1 }), "{}", foot["python_layouts"]);
}

/// A Python whose layout tracer does not know (3.9): no Python frames, the
/// process counted with its reason, its launches still recorded with their
/// native frames.
#[test]
fn python_of_unknown_layout_is_counted_and_keeps_native_frames() {
    if !common::root_tests_enabled() {
        return;
    }
    let Some(python) = pyenv_python(9) else {
        println!("no pyenv Python 3.9: not checked");
        return;
    };
    let script = common::fake().dir.join("stacks_test39.py");
    std::fs::write(&script, PY).unwrap();
    let lib = common::fake().lib.clone();
    let lines = record("stacks-py39", &[python.as_os_str(), script.as_os_str(), lib.as_os_str()]);
    let s = stacks(&lines);
    let launches: Vec<&Value> = lines.iter().filter(|l| l["name"] == "cuLaunchKernel").collect();
    assert_eq!(launches.len(), 3);
    for l in &launches {
        assert!(l.get("stack").is_some(), "no stack on {l}; footer stacks: {}", footer(&lines)["stacks"]);
        let f = frames_of(l, &s);
        assert_eq!(names(f)[0], "cuLaunchKernel");
        assert!(python_frames(f).is_empty(), "{f:?}");
    }
    let foot = footer(&lines);
    let p = &foot["python_layouts"];
    assert_eq!((p["unknown"].as_u64(), p["found"].as_object().map(|o| o.len())), (Some(1), Some(0)), "{p}");
    let why = p["unknown_reasons"][0].as_str().unwrap();
    assert!(
        why.ends_with("libpython3.9.so.1.0: Python 3.9 has no known frame layout (3.10 to 3.13 are known)"),
        "{why}"
    );
    assert_eq!(foot["lost"]["total"], 0);
}

fn python_launches_and_reads(python: &Path, version: &str) {
    let script = common::fake().dir.join(format!("stacks_test{version}.py"));
    std::fs::write(&script, PY).unwrap();
    let file = script.to_str().unwrap().to_string();
    let lib = common::fake().lib.clone();
    let lines = record(&format!("stacks-py{version}"), &[python.as_os_str(), script.as_os_str(), lib.as_os_str()]);
    let s = stacks(&lines);
    let launches: Vec<&Value> = lines.iter().filter(|l| l["name"] == "cuLaunchKernel").collect();
    assert_eq!(launches.len(), 3);
    let expect = |fns: [(&str, u64); 3]| -> Vec<(String, String, u64)> {
        fns.iter().map(|(f, l)| (f.to_string(), file.clone(), *l)).collect()
    };
    for l in &launches {
        assert!(l.get("stack").is_some(), "{version}: no stack on {l}; footer: {}", footer(&lines));
        let f = frames_of(l, &s);
        assert_eq!(names(f)[0], "cuLaunchKernel", "{version}");
        assert_eq!(python_frames(f), expect([("launch_step", 11), ("main", 20), ("<module>", 22)]), "{version}: {f:?}");
    }
    // The blocked reads of the pipe (not those of the files Python reads
    // as it starts): one per round.
    let pid = launches[0]["pid"].as_u64().unwrap();
    let reads: Vec<&Value> = lines
        .iter()
        .filter(|l| l["op"] == "off_cpu" && l["syscall"] == "read" && l["tid"].as_u64() == Some(pid))
        .filter(|l| python_frames(frames_of(l, &s)).iter().any(|f| f.0 == "load_batch"))
        .collect();
    let all_reads: Vec<_> = lines
        .iter()
        .filter(|l| l["op"] == "off_cpu" && l["syscall"] == "read" && l["tid"].as_u64() == Some(pid))
        .map(|l| (l.to_string(), python_frames(frames_of(l, &s))))
        .collect();
    assert_eq!(reads.len(), 3, "{version}: one blocked read per round; every blocked read: {all_reads:#?}");
    for l in &reads {
        let f = frames_of(l, &s);
        assert_eq!(python_frames(f), expect([("load_batch", 9), ("main", 19), ("<module>", 22)]), "{version}: {f:?}");
    }
    let foot = footer(&lines);
    assert_eq!(foot["python_layouts"]["found"], serde_json::json!({ version: 1 }), "{}", foot["python_layouts"]);
    assert_eq!(foot["python_layouts"]["unknown"], 0);
}

fn tracer(args: &[&str]) -> String {
    let o = std::process::Command::new(common::tracer_bin()).args(args).output().unwrap();
    assert!(o.status.success(), "tracer {args:?}: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

/// The largest part of a gap's code split whose cause is "on CPU".
fn on_cpu_part(code: &Value) -> &Value {
    let parts = code["parts"].as_array().unwrap();
    let on_cpu = parts.iter().filter(|p| p["cause"] == "on CPU");
    on_cpu.max_by_key(|p| p["ns"].as_u64().unwrap()).unwrap_or_else(|| panic!("no on-CPU part: {code}"))
}

/// At least 80 % of a gap's code split that has a stack (on CPU, or preempted
/// there) is at frames `at` accepts: decode_spin; and stacks cover at least
/// half of the gap. The part no sample or switch covers (`unknown`, no frames:
/// on a loaded 2-core machine a run of 12.8 ms of a 50 ms gap once had no
/// sample) is not attributed to any function, rightly or wrongly, so it is not
/// held against the attribution.
fn assert_share_at(code: &Value, at: impl Fn(&[&str]) -> bool) {
    let parts = code["parts"].as_array().unwrap();
    let ns = |p: &Value| p["ns"].as_u64().unwrap();
    let gap: u64 = parts.iter().map(ns).sum();
    let with_stack = |p: &&Value| !p["frames"].as_array().unwrap().is_empty();
    let total: u64 = parts.iter().filter(with_stack).map(ns).sum();
    assert!(total * 2 >= gap, "stacks cover {total} of {gap} ns: {code}");
    let there: u64 = parts
        .iter()
        .filter(|p| {
            let f: Vec<&str> = p["frames"].as_array().unwrap().iter().map(|f| f.as_str().unwrap()).collect();
            !f.is_empty() && at(&f)
        })
        .map(ns)
        .sum();
    assert!(there * 10 >= total * 8, "{there} of {total} ns at decode_spin: {code}");
}

/// tests/fakecuda/spinstacks.c: 3 rounds of launch + synchronize, then 50 ms
/// on CPU in decode_spin (from load_batch). The CPU clock's samples fall in
/// decode_spin: each gap's on-CPU time goes to it, not to the next launch
/// (run_step).
#[test]
fn on_cpu_gap_time_goes_to_the_sampled_function() {
    if !common::root_tests_enabled() {
        return;
    }
    let prog = c_program_of("spinstacks");
    let out = common::fresh_output("spinstacks");
    let (status, stderr) = common::record_program(
        &out,
        &[],
        &[prog.as_os_str(), "3".as_ref(), "50".as_ref()],
        &[],
        Duration::from_secs(120),
        "spinstacks",
    );
    assert!(status.success(), "{stderr}");
    let lines = common::read_trace(&out).unwrap();
    assert_eq!(lines[0]["stacks"]["sample_hz"], 997, "{}", lines[0]["stacks"]);
    assert_eq!(lines[0]["stacks"]["sample_error"], Value::Null, "{}", lines[0]["stacks"]);
    let s = stacks(&lines);
    let samples: Vec<&Value> = lines.iter().filter(|l| l["type"] == "sample").collect();
    let foot = footer(&lines);
    assert_eq!(foot["stacks"]["by_site"]["sample"].as_u64(), Some(samples.len() as u64), "{}", foot["stacks"]);
    assert_eq!(foot["lost"]["total"], 0, "{foot}");
    assert_eq!(foot["stack_walks"]["sample"]["walks"].as_u64(), Some(samples.len() as u64), "{}", foot["stack_walks"]);
    // Each sample's stack line comes before it.
    for (i, l) in lines.iter().enumerate().filter(|(_, l)| l["type"] == "sample") {
        assert_eq!((l["op"].as_str(), l["name"].as_str()), (Some("cpu"), Some("sample")), "{l}");
        let id = l["stack"].as_u64().unwrap();
        assert!(lines[..i].iter().any(|d| d["type"] == "stack" && d["id"] == id), "{l}");
    }
    let spin =
        samples.iter().filter(|l| names(frames_of(l, &s)).starts_with(&["decode_spin", "load_batch", "main"])).count();
    // 150 ms on CPU at 997 Hz: about 150 samples.
    assert!(spin >= 50, "{spin} of {} samples in decode_spin", samples.len());

    let json: Value = serde_json::from_str(&tracer(&["gaps", "--json", out.to_str().unwrap()])).unwrap();
    let long = json["scopes"][0]["longest"].as_array().unwrap();
    let spun: Vec<&Value> = long.iter().filter(|g| g["dur_ns"].as_u64().unwrap() >= 40_000_000).collect();
    assert_eq!(spun.len(), 3, "{json}");
    for g in spun {
        let code = &g["code"]["code"];
        // The largest on-CPU part (a loaded machine preempts the spinning
        // thread: those parts carry the switch-out's stack, in decode_spin too).
        let top = on_cpu_part(code);
        let frames: Vec<&str> = top["frames"].as_array().unwrap().iter().map(|f| f.as_str().unwrap()).collect();
        assert!(frames.len() >= 3 && frames[0].starts_with("decode_spin"), "{code}");
        assert_share_at(code, |f| f[0].starts_with("decode_spin"));
        assert!(frames[1].starts_with("load_batch") && frames[2].starts_with("main"), "{code}");
        assert!(code["samples"].as_u64().unwrap() >= 10, "{code}");
    }
    let text = tracer(&["gaps", out.to_str().unwrap()]);
    assert!(text.contains("on CPU at decode_spin"), "{text}");
}

/// spinstacks.c's rounds in Python through ctypes: a launch and a
/// synchronization, then 50 ms on CPU in the Python function decode_spin
/// (from load_batch; the clock is the vDSO's, no system call).
const PY_SPIN: &str = r#"import ctypes, sys, time
lib = ctypes.CDLL(sys.argv[1])
def decode_spin(s):
    end = time.perf_counter() + s
    x = 1
    while time.perf_counter() < end:
        for i in range(1000):
            x = (x * 1103515245 + 12345) & 0xffffffff
    return x
def load_batch():
    return decode_spin(0.05)
def run_step(f):
    lib.cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, None, None, None)
    lib.cuStreamSynchronize(None)
def main():
    f = ctypes.c_void_p()
    lib.cuInit(0)
    lib.cuModuleGetFunction(ctypes.byref(f), ctypes.c_void_p(0x30001), b"step_kernel")
    for _ in range(3):
        run_step(f)
        load_batch()
    run_step(f)
main()
"#;

/// The same for a Python program: each gap's on-CPU time goes to the
/// Python function that computes, with its file and line, in `tracer gaps`.
#[test]
fn python_on_cpu_gap_time_goes_to_the_sampled_function() {
    if !common::root_tests_enabled() {
        return;
    }
    let python = pyenv_python(11).expect("the test's Python 3.11 (pyenv) is missing");
    let script = common::fake().dir.join("stacks_spin.py");
    std::fs::write(&script, PY_SPIN).unwrap();
    let lib = common::fake().lib.clone();
    let out = common::fresh_output("stacks-pyspin");
    let (status, stderr) = common::record_program(
        &out,
        &[],
        &[python.as_os_str(), script.as_os_str(), lib.as_os_str()],
        &[],
        Duration::from_secs(120),
        "stacks-pyspin",
    );
    assert!(status.success(), "{stderr}");
    let lines = common::read_trace(&out).unwrap();
    assert_eq!(footer(&lines)["lost"]["total"], 0);
    let json: Value = serde_json::from_str(&tracer(&["gaps", "--json", out.to_str().unwrap()])).unwrap();
    let long = json["scopes"][0]["longest"].as_array().unwrap();
    let spun: Vec<&Value> = long.iter().filter(|g| g["dur_ns"].as_u64().unwrap() >= 40_000_000).collect();
    assert_eq!(spun.len(), 3, "{json}");
    // The gaps' frames name a Python file by its base name.
    let file = "stacks_spin.py";
    for g in spun {
        let code = &g["code"]["code"];
        let top = on_cpu_part(code);
        assert_share_at(code, |f| {
            f.iter().find(|f| f.contains(".py:")).is_some_and(|f| f.starts_with("decode_spin ("))
        });
        // The Python frames, innermost first (interpreter frames between them).
        let py: Vec<&str> = top["frames"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f.as_str().unwrap())
            .filter(|f| f.contains(".py:"))
            .collect();
        assert!(py.len() >= 4, "{code}");
        assert!(py[0].starts_with(&format!("decode_spin ({file}:")), "{code}");
        assert_eq!(
            &py[1..4],
            [format!("load_batch ({file}:11)"), format!("main ({file}:21)"), format!("<module> ({file}:23)")],
            "{code}"
        );
        assert!(code["samples"].as_u64().unwrap() >= 10, "{code}");
    }
    let text = tracer(&["gaps", out.to_str().unwrap()]);
    assert!(text.contains("on CPU at decode_spin ("), "{text}");
}

/// Four functions compiled one after the other, each launching once and
/// freed before the next: CPython puts the next code object at the freed
/// one's address. Each launch names its own function, not the one cached
/// at that address before.
const PY_REUSE: &str = r#"import ctypes, gc, sys, time
lib = ctypes.CDLL(sys.argv[1])
def make(name):
    ns = {"lib": lib}
    src = f"def {name}(f):\n    lib.cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, None, None, None)\n"
    exec(compile(src, name + ".py", "exec"), ns)
    return ns[name]
f = ctypes.c_void_p()
lib.cuInit(0)
lib.cuModuleGetFunction(ctypes.byref(f), ctypes.c_void_p(0x30001), b"step_kernel")
with open(sys.argv[2], "w") as out:
    for name in ["alpha", "bravo", "gamma", "delta"]:
        fn = make(name)
        out.write(f"{name} {id(fn.__code__):#x}\n")
        fn(f)
        del fn
        gc.collect()
        time.sleep(0.2)
"#;

#[test]
fn python_code_object_reused_at_an_address_is_named_anew() {
    if !common::root_tests_enabled() {
        return;
    }
    let python = pyenv_python(11).expect("the test's Python 3.11 (pyenv) is missing");
    let script = common::fake().dir.join("stacks_reuse.py");
    let ids = common::fake().dir.join("stacks_reuse.ids");
    std::fs::write(&script, PY_REUSE).unwrap();
    let lib = common::fake().lib.clone();
    let lines = record("stacks-reuse", &[python.as_os_str(), script.as_os_str(), lib.as_os_str(), ids.as_os_str()]);
    // The check is only a check when an address was reused.
    let ids = std::fs::read_to_string(&ids).unwrap();
    let addrs: Vec<&str> = ids.lines().map(|l| l.split(' ').nth(1).unwrap()).collect();
    let distinct: std::collections::HashSet<&&str> = addrs.iter().collect();
    assert!(distinct.len() < addrs.len(), "no code object address was reused: {ids}");
    let s = stacks(&lines);
    let launches: Vec<&Value> = lines.iter().filter(|l| l["name"] == "cuLaunchKernel").collect();
    assert_eq!(launches.len(), 4);
    for (l, name) in launches.iter().zip(["alpha", "bravo", "gamma", "delta"]) {
        let py = python_frames(frames_of(l, &s));
        assert_eq!(py[0], (name.to_string(), format!("{name}.py"), 2), "{ids}{py:?}");
    }
    let errors = &footer(&lines)["stacks"]["resolver_errors"];
    assert!(errors["python code object replaced at its address (read again)"].as_u64().unwrap_or(0) >= 1, "{errors}");
}

/// `--no-stacks`: no stack lines, no stack fields, `stacks` null in the header.
#[test]
fn no_stacks_takes_none() {
    if !common::root_tests_enabled() {
        return;
    }
    let prog = c_program();
    let out = common::fresh_output("stacks-off");
    let (status, stderr) = common::record_program(
        &out,
        &["--no-stacks"],
        &[prog.as_os_str(), "2".as_ref()],
        &[],
        Duration::from_secs(120),
        "stacks-off",
    );
    assert!(status.success(), "{stderr}");
    let lines = common::read_trace(&out).unwrap();
    assert_eq!(lines[0]["stacks"], Value::Null);
    assert_eq!(lines.iter().filter(|l| l["type"] == "stack" || !l["stack"].is_null()).count(), 0);
    assert_eq!(lines.iter().filter(|l| l["name"] == "cuLaunchKernel").count(), 2);
}

/// The injection library's own threads (named `tracer-cupti…`) take no stack at their
/// switch-outs, counted in the footer; a thread of the program that sleeps the same way takes
/// one at every switch-out.
#[test]
fn own_threads_switch_outs_take_no_stack() {
    if !common::root_tests_enabled() {
        return;
    }
    let prog = c_program_of("ownthreads");
    let lines = record("stacks-own-threads", &[prog.as_os_str(), "20".as_ref()]);
    let naps = |l: &&&Value| l["op"] == "off_cpu" && l["syscall"] == "clock_nanosleep";
    let mut by_tid: HashMap<u64, Vec<&Value>> = HashMap::new();
    for l in lines.iter().filter(|l| l["type"] == "sched" && l["op"] == "off_cpu") {
        by_tid.entry(l["tid"].as_u64().unwrap()).or_default().push(l);
    }
    let nappers: Vec<u64> =
        by_tid.iter().filter(|(_, v)| v.iter().filter(naps).count() >= 20).map(|(t, _)| *t).collect();
    assert_eq!(nappers.len(), 2, "two threads nap 20 times: {by_tid:?}");
    // the own-named thread naps first (the program joins it before it starts the worker)
    let first_nap = |t: &u64| by_tid[t].iter().filter(naps).map(|l| l["ts"].as_u64().unwrap()).min().unwrap();
    let (own, worker) = match first_nap(&nappers[0]) < first_nap(&nappers[1]) {
        true => (nappers[0], nappers[1]),
        false => (nappers[1], nappers[0]),
    };
    let s = stacks(&lines);
    // the worker: every switch-out has a stack at its nanosleep
    for l in by_tid[&worker].iter().filter(naps) {
        let f = frames_of(l, &s);
        assert!(names(f).contains(&"sleeper"), "{f:?}");
    }
    // its own thread: no stack at any switch-out, each counted
    assert!(by_tid[&own].iter().all(|l| l.get("stack").is_none()), "{:?}", by_tid[&own]);
    let foot = footer(&lines);
    assert_eq!(
        foot["stack_sampling"]["own_switch_outs"].as_u64(),
        Some(by_tid[&own].len() as u64),
        "{}",
        foot["stack_sampling"]
    );
    assert_eq!(foot["lost"]["total"], 0);
}
