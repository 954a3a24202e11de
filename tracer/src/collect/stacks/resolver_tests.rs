//! The resolver on live processes: a C helper built here (frame pointers,
//! no inlining, DWARF lines), its stripped copy, an anonymous executable
//! mapping, and CPython processes whose code objects are read.
use std::io::{BufRead as _, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use tracer_common::stack::{PY_ENTRY, PyFrame};

use crate::collect::stacks::native::NativeResolver;
use crate::collect::stacks::python::{PythonResolver, code_layout};
use crate::decode::stacks::{Frame, FrameKind};

const HELPER: &str = r#"#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>
int alpha(int x) { return x * 3 + 1; }
int beta(int x) { return alpha(x) + 2; }
int main(void) {
    void *jit = mmap(0, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    printf("%p %p %p %p\n", (void *)alpha, (void *)beta, jit, (void *)read);
    fflush(stdout);
    getchar();
    return beta(1) == 0;
}
"#;

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tracer-stacks-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The helper built in `dir`, and a stripped copy.
fn build_helper(dir: &Path) -> (PathBuf, PathBuf) {
    let src = dir.join("helper.c");
    std::fs::write(&src, HELPER).unwrap();
    let bin = dir.join("helper");
    let st = Command::new("cc")
        .args(["-O1", "-g", "-fno-omit-frame-pointer", "-fno-inline", "-o"])
        .arg(&bin)
        .arg(&src)
        .status()
        .unwrap();
    assert!(st.success(), "cc failed");
    let stripped = dir.join("helper-stripped");
    std::fs::copy(&bin, &stripped).unwrap();
    assert!(Command::new("strip").arg(&stripped).status().unwrap().success(), "strip failed");
    (bin, stripped)
}

/// A symbol's value in `bin` (nm): its file offset in a PIE whose text
/// segment's offsets equal its addresses, as cc and ld lay them out.
fn nm(bin: &Path, sym: &str) -> u64 {
    let out = Command::new("nm").arg(bin).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let line = text.lines().find(|l| l.ends_with(&format!(" T {sym}"))).unwrap_or_else(|| panic!("no {sym}"));
    u64::from_str_radix(line.split(' ').next().unwrap(), 16).unwrap()
}

/// Runs `bin`; its pid and the addresses it printed.
fn start(bin: &Path) -> (Child, Vec<u64>) {
    let mut c = Command::new(bin).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
    let mut line = String::new();
    BufReader::new(c.stdout.as_mut().unwrap()).read_line(&mut line).unwrap();
    let addrs = line.split_whitespace().map(|a| u64::from_str_radix(a.trim_start_matches("0x"), 16).unwrap()).collect();
    (c, addrs)
}

fn stop(mut c: Child) {
    c.stdin.as_mut().unwrap().write_all(b"\n").unwrap();
    assert!(c.wait().unwrap().success());
}

#[test]
fn native_frames_name_functions_also_after_the_process_exited() {
    let dir = tmpdir("native");
    let (bin, stripped) = build_helper(&dir);
    let (alpha_off, beta_off) = (nm(&bin, "alpha"), nm(&bin, "beta"));
    let (child, a) = start(&bin);
    let pid = child.id();
    let mut r = NativeResolver::default();
    let module = bin.to_str().unwrap();
    // The leaf is the instruction itself; a caller's return address is
    // looked up one byte before.
    let f = r.frame(pid, a[0], true);
    assert_eq!(
        (f.kind, &*f.func, f.module.as_deref(), f.addr, f.offset),
        (FrameKind::Native, "alpha", Some(module), Some(a[0]), Some(alpha_off))
    );
    assert!(f.file.as_deref().is_some_and(|p| p.ends_with("helper.c")), "{f:?}");
    assert_eq!(f.line, Some(4), "DWARF line of alpha's first instruction");
    let f = r.frame(pid, a[1] + 1, false);
    assert_eq!((&*f.func, f.offset, f.line), ("beta", Some(beta_off + 1), Some(5)));
    // A return address just past alpha's start is still alpha's when a caller.
    assert_eq!(&*r.frame(pid, a[0] + 1, false).func, "alpha");
    // Anonymous executable memory: a JIT; an address in no mapping: unknown.
    let jit = r.frame(pid, a[2] + 16, false);
    assert_eq!(
        (jit.kind, &*jit.func, jit.module.as_deref(), jit.addr),
        (FrameKind::Jit, "[jit]", None, Some(a[2] + 16))
    );
    // The C library (stripped, with a debug link; its debug file may have
    // compressed sections): named from its dynamic symbols at least.
    let read = r.frame(pid, a[3], true);
    assert!(read.func.contains("read") && read.module.as_deref().is_some_and(|m| m.contains("libc")), "{read:?}");
    // Not code: a mapping of the helper that is not executable (its data).
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap();
    let data_at = maps
        .lines()
        .find(|l| l.ends_with(module) && l.split(' ').nth(1).is_some_and(|p| !p.contains('x')))
        .and_then(|l| u64::from_str_radix(l.split('-').next()?, 16).ok())
        .expect("a data mapping of the helper");
    let data = r.frame(pid, data_at + 8, false);
    assert_eq!(
        (data.kind, &*data.func, data.module.as_deref()),
        (FrameKind::Unknown, "[unknown]", Some(module)),
        "{data:?}"
    );
    let none = r.frame(pid, 0x10, false);
    assert_eq!(
        (none.kind, &*none.func, none.module.as_deref(), none.addr),
        (FrameKind::Unknown, "[unknown]", None, Some(0x10))
    );
    stop(child);
    // Exited: the cached mappings and the file still name a new address.
    let f = r.frame(pid, a[1] + 2, false);
    assert_eq!((&*f.func, f.offset, f.module.as_deref()), ("beta", Some(beta_off + 2), Some(module)));
    assert!(r.errors.keys().all(|k| k.starts_with("debug information unreadable")), "{:?}", r.errors);

    // Stripped: no symbol, but the module and offset.
    let (child, a) = start(&stripped);
    let f = r.frame(child.id(), a[0], true);
    assert_eq!(
        (f.kind, &*f.func, f.module.as_deref(), f.offset, f.line),
        (FrameKind::Native, "[unknown]", stripped.to_str(), Some(alpha_off), None)
    );
    stop(child);
    std::fs::remove_dir_all(&dir).unwrap();
}

const SCRIPT: &str = r#"import sys, dis

class Loader:
    def load_batch(self, n):
        total = 0
        for i in range(n):
            total += i
        return total

def grüße(x):
    y = x + 1
    return y * 2

def функция(a):
    b = a
    return b

def f𠀀():
    return 1

def expected(f):
    code = f.__code__
    # An instruction of the last line of the body: (byte offset, line).
    rows = [(s, l) for s, e, l in code.co_lines() if l is not None and l > code.co_firstlineno]
    s, l = rows[-1]
    return id(code), getattr(code, "co_qualname", code.co_name), code.co_firstlineno, s, l

for f in (Loader.load_batch, grüße, функция, f𠀀):
    print(*expected(f), sep="\t")
# Objects that are not code objects: a function, a tuple of strings.
print(id(grüße), id(("a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o", "p", "q")))
print("%d.%d" % sys.version_info[:2])
sys.stdout.flush()
sys.stdin.readline()
"#;

/// The interpreters to test: `python3` (required) and the other 3.10 to
/// 3.13 that pyenv has here.
fn pythons() -> Vec<PathBuf> {
    let mut v = vec![PathBuf::from("python3")];
    let root = std::env::var_os("PYENV_ROOT")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".pyenv")));
    if let Some(Ok(dir)) = root.map(|r| std::fs::read_dir(r.join("versions"))) {
        let mut found: Vec<PathBuf> = dir
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                let minor = ["3.10.", "3.11.", "3.12.", "3.13."].into_iter().find(|m| name.starts_with(m))?;
                Some(e.path().join("bin").join(format!("python{}", minor.trim_end_matches('.'))))
            })
            .filter(|p| p.exists())
            .collect();
        found.sort();
        v.extend(found);
    }
    v
}

struct Expected {
    code: u64,
    qualname: String,
    first: u32,
    offset: u64,
    line: u32,
}

#[test]
fn python_code_objects_give_name_file_and_line() {
    let dir = tmpdir("python");
    let script = dir.join("train_loop.py");
    std::fs::write(&script, SCRIPT).unwrap();
    let mut versions = Vec::new();
    for py in pythons() {
        let mut c = Command::new(&py).arg(&script).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
        let mut out = BufReader::new(c.stdout.take().unwrap());
        let mut rows = Vec::new();
        let mut not_code: Vec<u64> = Vec::new();
        let mut line = String::new();
        let version = loop {
            line.clear();
            out.read_line(&mut line).unwrap();
            let f: Vec<&str> = line.trim_end().split('\t').collect();
            if f.len() == 1 && f[0].contains(' ') {
                not_code = f[0].split(' ').map(|x| x.parse().unwrap()).collect();
                continue;
            }
            if f.len() == 1 {
                break f[0].to_string();
            }
            rows.push(Expected {
                code: f[0].parse().unwrap(),
                qualname: f[1].to_string(),
                first: f[2].parse().unwrap(),
                offset: f[3].parse().unwrap(),
                line: f[4].parse().unwrap(),
            });
        };
        let (major, minor) = version.split_once('.').unwrap();
        let hex = (major.parse::<u32>().unwrap() << 8) | minor.parse::<u32>().unwrap();
        let layout = code_layout(hex).unwrap_or_else(|| panic!("no layout for {version}"));
        let pid = c.id();
        let mut r = PythonResolver::new(Box::new(move |p| (p == pid).then_some(hex)));
        let names: Vec<&str> = rows.iter().map(|e| e.qualname.as_str()).collect();
        assert_eq!(names[1..], ["grüße", "функция", "f𠀀"], "{version}");
        let file = script.to_str().unwrap();
        for e in &rows {
            // The frame's instruction: an address in the code object's
            // instructions (3.11+), the instruction index f_lasti (3.10).
            let instr = match layout.code_adaptive {
                Some(off) => e.code + off + e.offset,
                None => e.offset / 2,
            };
            for code in [e.code, e.code | PY_ENTRY] {
                let f = r.frame(pid, &PyFrame { code, instr });
                let want = (FrameKind::Python, e.qualname.as_str(), Some(file), Some(e.line));
                assert_eq!((f.kind, &*f.func, f.file.as_deref(), f.line), want, "{version}");
            }
            // Not started yet (3.12's prev_instr one before the first): its first line.
            let before = match layout.code_adaptive {
                Some(off) => e.code + off - 2,
                None => u64::from(u32::MAX),
            };
            assert_eq!(r.frame(pid, &PyFrame { code: e.code, instr: before }).line, Some(e.first), "{version}");
        }
        let q = &rows[0].qualname;
        let want = if hex >= 0x030b { "Loader.load_batch" } else { "load_batch" };
        assert_eq!(q, want, "{version}: co_qualname (3.11+), co_name before");
        // A garbage code address, objects that are not code, and a process
        // whose version is not known.
        assert_eq!(not_code.len(), 2);
        for bad in [0x10, rows[0].code ^ (1 << 46), not_code[0], not_code[1]] {
            let f = r.frame(pid, &PyFrame { code: bad, instr: 0 });
            assert_eq!((f.kind, &*f.func, f.file), (FrameKind::Unknown, "[python ?]", None::<std::sync::Arc<str>>));
        }
        assert_eq!(r.errors.get("python code object unreadable"), Some(&4), "{version}: {:?}", r.errors);
        let mut unknown = PythonResolver::new(Box::new(|_| None));
        assert_eq!(&*unknown.frame(pid, &PyFrame { code: rows[0].code, instr: 0 }).func, "[python ?]");
        c.stdin.as_mut().unwrap().write_all(b"\n").unwrap();
        assert!(c.wait().unwrap().success());
        versions.push(version);
    }
    println!("Python versions checked: {versions:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_stack_record_resolves_to_merged_frames() {
    use crate::collect::stacks::resolver::Resolver;
    use crate::decode::stacks::StackResolver as _;
    use tracer_common::event::{EventKind, Header};
    use tracer_common::stack::{NATIVE_CAP, PY_CAP, StackRec, py_status, site, stack_rec_len};
    let dir = tmpdir("record");
    let (bin, _) = build_helper(&dir);
    let (child, a) = start(&bin);
    let pid = child.id();
    let mut rec = StackRec {
        hdr: Header { kind: EventKind::Stack as u16, func: 0, cpu: 0, seq: 0, ts: 1, pid, tid: pid },
        site: site::SWITCH_OUT,
        native_n: 3,
        native_err: 0,
        py_status: py_status::NONE,
        py_n: 0,
        _pad: 0,
        native: [0; NATIVE_CAP],
        py: [PyFrame::default(); PY_CAP],
    };
    rec.native[..3].copy_from_slice(&[a[0], a[1] + 4, a[2]]);
    // SAFETY: a repr(C) record of plain integers, read as its bytes.
    let b = unsafe { std::slice::from_raw_parts(&rec as *const StackRec as *const u8, stack_rec_len(0)) };
    let tracer_common::decode::Record::Stack(s) = tracer_common::decode::parse(b).unwrap() else { panic!() };
    let mut r = Resolver::new(Box::new(|_| None));
    let frames: Vec<Frame> = r.resolve(&s);
    let names: Vec<(&str, FrameKind)> = frames.iter().map(|f| (&*f.func, f.kind)).collect();
    assert_eq!(names, [("alpha", FrameKind::Native), ("beta", FrameKind::Native), ("[jit]", FrameKind::Jit)]);
    assert!(r.errors().is_empty());

    // Through the assembler: the stack line, then the off_cpu line of the
    // switch-out it was taken for.
    use tracer_common::event::{SchedSwitch, sched_flags};
    let switch = |ts: u64, out: bool| SchedSwitch {
        hdr: Header {
            kind: EventKind::SchedSwitch as u16,
            func: 0,
            cpu: 0,
            seq: ts,
            ts,
            pid: if out { pid } else { 0 },
            tid: if out { pid } else { 0 },
        },
        prev_state: u64::from(out),
        flags: if out { sched_flags::PREV_TRACED } else { sched_flags::NEXT_TRACED },
        next_tid: if out { 0 } else { pid },
        next_tgid: if out { 0 } else { pid },
        _pad: 0,
        syscall: -1,
        arg0: 0,
        prev_comm: [0; 16],
        next_comm: [0; 16],
    };
    let mut asm = crate::decode::calls::Assembler::default();
    asm.sched.enabled = true;
    asm.stacks = crate::decode::stacks::Stacks::with_resolver(Box::new(Resolver::new(Box::new(|_| None))));
    rec.hdr.seq = 1;
    // SAFETY: as above.
    let b = unsafe { std::slice::from_raw_parts(&rec as *const StackRec as *const u8, stack_rec_len(0)) };
    let mut lines = Vec::new();
    let recs = [
        tracer_common::decode::Record::Switch(switch(0, false)),
        tracer_common::decode::parse(b).unwrap(),
        tracer_common::decode::Record::Switch(switch(1, true)),
        tracer_common::decode::Record::Switch(switch(2, false)),
    ];
    for r in &recs {
        asm.push(r, &mut |l| lines.push(l.into_value()));
    }
    let v: Vec<&serde_json::Value> = lines.iter().filter(|l| l["op"] != "thread_seen").collect();
    assert_eq!(v.len(), 2, "{lines:?}");
    let fns: Vec<&str> = v[0]["frames"].as_array().unwrap().iter().map(|f| f["fn"].as_str().unwrap()).collect();
    assert_eq!((v[0]["type"].as_str(), fns), (Some("stack"), vec!["alpha", "beta", "[jit]"]));
    assert_eq!(v[0]["frames"][0]["module"].as_str(), bin.to_str());
    assert_eq!((v[1]["op"].as_str(), v[1]["stack"].as_u64(), v[1]["ts"].as_u64()), (Some("off_cpu"), Some(0), Some(1)));
    assert_eq!(asm.stacks.stats.attached, 1);
    stop(child);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The collector's cost per stack record (printed, not judged): the first
/// record of a stack (resolved: maps read, ELF symbolized), the same
/// stack again (the raw-stack cache), and the resolver alone on known
/// addresses (its per-address caches). `cargo test -p tracer --lib
/// resolve_cost -- --ignored --nocapture`.
#[test]
#[ignore = "a measurement"]
fn resolve_cost() {
    use crate::collect::stacks::resolver::Resolver;
    use crate::decode::stacks::{StackResolver as _, Stacks};
    use std::time::Instant;
    use tracer_common::event::{EventKind, Header};
    use tracer_common::stack::{NATIVE_CAP, PY_CAP, StackRec, py_status, site, stack_rec_len};
    let dir = tmpdir("cost");
    let (bin, _) = build_helper(&dir);
    let (child, a) = start(&bin);
    let pid = child.id();
    let mut rec = StackRec {
        hdr: Header { kind: EventKind::Stack as u16, func: 0, cpu: 0, seq: 0, ts: 1, pid, tid: pid },
        site: site::CALL,
        native_n: 16,
        native_err: 0,
        py_status: py_status::NONE,
        py_n: 0,
        _pad: 0,
        native: [0; NATIVE_CAP],
        py: [PyFrame::default(); PY_CAP],
    };
    for i in 0..16 {
        rec.native[i] = if i % 2 == 0 { a[0] + i as u64 } else { a[1] + i as u64 };
    }
    // SAFETY: a repr(C) record of plain integers, read as its bytes.
    let b = unsafe { std::slice::from_raw_parts(&rec as *const StackRec as *const u8, stack_rec_len(0)) };
    let tracer_common::decode::Record::Stack(s) = tracer_common::decode::parse(b).unwrap() else { panic!() };
    let mut stacks = Stacks::with_resolver(Box::new(Resolver::new(Box::new(|_| None))));
    let t = Instant::now();
    stacks.record(&s, &mut |_| {});
    let first = t.elapsed();
    const N: u32 = 100_000;
    let t = Instant::now();
    for _ in 0..N {
        stacks.record(&s, &mut |_| {});
    }
    let again = t.elapsed() / N;
    let mut r = Resolver::new(Box::new(|_| None));
    r.resolve(&s);
    let t = Instant::now();
    for _ in 0..N / 10 {
        std::hint::black_box(r.resolve(&s));
    }
    let resolve = t.elapsed() / (N / 10);
    println!(
        "16 native frames: first record {first:?}, the same stack again {again:?}, resolver on cached addresses {resolve:?}"
    );
    stop(child);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A compact ASCII str object of 3.11 (`PyASCIIObject`, its characters at 48).
fn fake_str(s: &str) -> Vec<u8> {
    let mut b = vec![0u8; 48 + s.len() + 1];
    b[16..24].copy_from_slice(&(s.len() as u64).to_le_bytes());
    // kind 1, compact, ascii.
    b[32..36].copy_from_slice(&(1u32 << 2 | 1 << 5 | 1 << 6).to_le_bytes());
    b[48..48 + s.len()].copy_from_slice(s.as_bytes());
    b
}

fn put(b: &mut [u8], at: u64, v: u64) {
    let at = at as usize;
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

/// Code objects of Python 3.11's layout in this process's memory: a type named `code`, an
/// empty line table, and per function `names[i]` its name and file `NAME.py`.
struct FakeCodes {
    layout: crate::collect::stacks::python::CodeLayout,
    ty: Vec<u8>,
    type_name: Vec<u8>,
    table: Vec<u8>,
    strings: Vec<(Vec<u8>, Vec<u8>)>,
}

impl FakeCodes {
    fn new(names: &[&str]) -> FakeCodes {
        let type_name = b"code\0".to_vec();
        let mut ty = vec![0u8; 64];
        put(&mut ty, 24, type_name.as_ptr() as u64);
        let strings = names.iter().map(|n| (fake_str(n), fake_str(&format!("{n}.py")))).collect();
        FakeCodes { layout: code_layout(0x030b).unwrap(), ty, type_name, table: vec![0u8; 40], strings }
    }

    /// A code object of function `i`.
    fn code(&self, i: usize) -> Vec<u8> {
        let mut code = vec![0u8; 256];
        put(&mut code, 8, self.ty.as_ptr() as u64);
        code[72..76].copy_from_slice(&1i32.to_le_bytes());
        put(&mut code, self.layout.linetable, self.table.as_ptr() as u64);
        self.become_fn(&mut code, i);
        code
    }

    /// `code` becomes function `i` (another code object at its address).
    fn become_fn(&self, code: &mut [u8], i: usize) {
        let (name, file) = (self.strings[i].0.as_ptr() as u64, self.strings[i].1.as_ptr() as u64);
        put(code, self.layout.name, name);
        put(code, self.layout.qualname.unwrap(), name);
        put(code, self.layout.filename, file);
        std::hint::black_box(&*code);
        std::hint::black_box((&self.type_name, &self.table));
    }
}

/// A code object freed and another allocated at its address, in this
/// process's memory (3.11's layout): a raw stack resolved with the first is
/// named by the second when it comes again, also when another raw stack's
/// check found the replacement moments before (so its own 5 ms recheck is
/// not due). A launch in gamma was named bravo so: a sample in gamma 25 µs
/// before the launch had read gamma at the address, and the launch's raw
/// stack, the same as bravo's launch, kept bravo's frames.
#[test]
fn a_code_object_replaced_at_its_address_renames_a_raw_stack_seen_before() {
    use crate::collect::stacks::python::RECHECK;
    use crate::collect::stacks::resolver::Resolver;
    use crate::decode::stacks::Stacks;
    use tracer_common::event::{EventKind, Header};
    use tracer_common::stack::{NATIVE_CAP, PY_CAP, StackRec, py_status, site, stack_rec_len};
    let fake = FakeCodes::new(&["bravo", "gamma", "delta"]);
    let layout = fake.layout;
    let mut code = fake.code(0);
    let addr = code.as_ptr() as u64;
    let pid = std::process::id();

    let rec = |instr_off: u64| {
        let mut r = StackRec {
            hdr: Header { kind: EventKind::Stack as u16, func: 0, cpu: 0, seq: 0, ts: 1, pid, tid: pid },
            site: site::SAMPLE,
            native_n: 0,
            native_err: 0,
            py_status: py_status::OK,
            py_n: 1,
            _pad: 0,
            native: [0; NATIVE_CAP],
            py: [PyFrame::default(); PY_CAP],
        };
        r.py[0] = PyFrame { code: addr | PY_ENTRY, instr: addr + layout.code_adaptive.unwrap() + instr_off };
        r
    };
    let mut stacks = Stacks::with_resolver(Box::new(Resolver::new(Box::new(move |p| (p == pid).then_some(0x030b)))));
    let mut lines: Vec<serde_json::Value> = Vec::new();
    // The function (file) the stack of the last sample line names.
    let mut named = |r: &StackRec, lines: &mut Vec<serde_json::Value>| {
        // SAFETY: a repr(C) record of plain integers, read as its bytes.
        let b = unsafe { std::slice::from_raw_parts(r as *const StackRec as *const u8, stack_rec_len(1)) };
        let tracer_common::decode::Record::Stack(s) = tracer_common::decode::parse(b).unwrap() else { panic!() };
        stacks.record(&s, &mut |l| lines.push(l));
        let id = &lines.last().unwrap()["stack"];
        let def = lines.iter().find(|l| l["type"] == "stack" && &l["id"] == id).unwrap();
        format!("{} ({})", def["frames"][0]["fn"].as_str().unwrap(), def["frames"][0]["file"].as_str().unwrap())
    };
    let (launch, sample) = (rec(10), rec(4));
    assert_eq!(named(&launch, &mut lines), "bravo (bravo.py)");
    assert_eq!(named(&launch, &mut lines), "bravo (bravo.py)");
    // Gamma at the address: a sample in it (a new raw stack, checked at
    // once), then the launch's raw stack again, at once.
    fake.become_fn(&mut code, 1);
    assert_eq!(named(&sample, &mut lines), "gamma (gamma.py)");
    assert_eq!(named(&launch, &mut lines), "gamma (gamma.py)");
    assert_eq!(named(&sample, &mut lines), "gamma (gamma.py)");
    // Delta: no other stack checks it; the launch's own recheck, once due.
    fake.become_fn(&mut code, 2);
    std::thread::sleep(RECHECK * 2);
    assert_eq!(named(&launch, &mut lines), "delta (delta.py)");
    assert_eq!(named(&sample, &mut lines), "delta (delta.py)");
    assert_eq!(named(&launch, &mut lines), "delta (delta.py)");
    let errors = stacks.resolver_errors();
    assert_eq!(errors.get("python code object replaced at its address (read again)"), Some(&2), "{errors:?}");
    assert_eq!(errors.len(), 1, "{errors:?}");
    // One stack line per function (the line table is empty: no lines, the
    // two instructions' frames are the same).
    assert_eq!(stacks.stats.distinct, 3);
    std::hint::black_box((&code, &fake));
}

/// The batched check of a new raw stack's codes (one process_vm_readv for all of them): of two
/// cached codes, the one replaced at its address is read again and the other kept, in a stack of
/// both; a stack of codes of which one is no longer readable checks the others one by one.
#[test]
fn a_new_raw_stack_checks_all_its_codes_in_one_read() {
    use crate::collect::stacks::python::PythonResolver;
    let fake = FakeCodes::new(&["outer", "inner", "other"]);
    let layout = fake.layout;
    let (outer, mut inner) = (fake.code(0), fake.code(1));
    let pid = std::process::id();
    let mut r = PythonResolver::new(Box::new(move |p| (p == pid).then_some(0x030b)));
    let frame = |code: &Vec<u8>, off: u64| PyFrame {
        code: code.as_ptr() as u64,
        instr: code.as_ptr() as u64 + layout.code_adaptive.unwrap() + off,
    };
    let names = |fs: Vec<Frame>| fs.iter().map(|f| f.func.to_string()).collect::<Vec<_>>();
    assert_eq!(names(r.frames(pid, &[frame(&inner, 2), frame(&outer, 4)])), ["inner", "outer"]);
    // "other" at inner's address: the next new raw stack names it, outer's code stands.
    fake.become_fn(&mut inner, 2);
    assert_eq!(
        names(r.frames(pid, &[frame(&inner, 6), frame(&outer, 8), frame(&inner, 6)])),
        ["other", "outer", "other"]
    );
    assert_eq!(r.changed, 1);
    // A cached code whose memory is gone (a stack of an address no longer mapped): the batched
    // read comes back short, each code is checked alone; the readable one stands.
    let gone = {
        let m = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                4096,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        let c = fake.code(0);
        unsafe { std::ptr::copy_nonoverlapping(c.as_ptr(), m as *mut u8, c.len()) };
        m as u64
    };
    let gone_frame = PyFrame { code: gone, instr: gone + layout.code_adaptive.unwrap() };
    assert_eq!(names(r.frames(pid, &[gone_frame, frame(&outer, 10)])), ["outer", "outer"]);
    unsafe { libc::munmap(gone as *mut libc::c_void, 4096) };
    assert_eq!(names(r.frames(pid, &[gone_frame, frame(&outer, 12)])), ["outer", "outer"]);
    assert_eq!(r.changed, 1);
    std::hint::black_box((&outer, &inner, &fake));
}
