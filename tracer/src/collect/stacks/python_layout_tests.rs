//! The layouts against this machine's Pythons (pyenv's 3.9 to 3.13 under
//! /root/.pyenv, the system's static /usr/bin/python3.11): the tables
//! against `offsetof` compiled over each version's own headers, 3.13's
//! debug offsets against the same, and the layout found for live processes
//! followed through their memory to their own thread state.
use std::os::unix::fs::FileExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use super::*;

const PYENV: &str = "/root/.pyenv/versions";

/// The pyenv installation of `minor` (3.minor.x), if there is one.
fn pyenv(minor: u32) -> Option<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(PYENV)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with(&format!("3.{minor}."))))
        .collect();
    found.sort();
    found.pop()
}

/// `offsetof` over the headers of the Python at `root` (Py_BUILD_CORE).
const OFFSETS_C: &str = r#"
#define Py_BUILD_CORE 1
#include <Python.h>
#include <stddef.h>
#include <stdio.h>
#if PY_VERSION_HEX < 0x030b0000
#include <frameobject.h>
#else
#include "internal/pycore_frame.h"
#endif
#include "internal/pycore_interp.h"
#include "internal/pycore_runtime.h"
#define P(name, v) printf("%s %ld\n", name, (long)(v))
int main(void) {
    P("runtime_interp_head", offsetof(_PyRuntimeState, interpreters.head));
    P("tstate_next", offsetof(PyThreadState, next));
#if PY_VERSION_HEX < 0x030b0000
    P("interp_threads_head", offsetof(PyInterpreterState, tstate_head));
    P("tstate_native_thread_id", offsetof(PyThreadState, thread_id));
    P("tstate_current_frame", offsetof(PyThreadState, frame));
    P("frame_code", offsetof(PyFrameObject, f_code));
    P("frame_previous", offsetof(PyFrameObject, f_back));
    P("frame_instr", offsetof(PyFrameObject, f_lasti));
#else
    P("interp_threads_head", offsetof(PyInterpreterState, threads.head));
    P("tstate_native_thread_id", offsetof(PyThreadState, native_thread_id));
    P("frame_previous", offsetof(_PyInterpreterFrame, previous));
    P("frame_owner", offsetof(_PyInterpreterFrame, owner));
    P("code_qualname", offsetof(PyCodeObject, co_qualname));
    P("code_adaptive", offsetof(PyCodeObject, co_code_adaptive));
#endif
#if PY_VERSION_HEX >= 0x030b0000 && PY_VERSION_HEX < 0x030d0000
    P("tstate_cframe", offsetof(PyThreadState, cframe));
    P("cframe_current_frame", offsetof(_PyCFrame, current_frame));
    P("frame_code", offsetof(_PyInterpreterFrame, f_code));
    P("frame_instr", offsetof(_PyInterpreterFrame, prev_instr));
#endif
#if PY_VERSION_HEX >= 0x030d0000
    P("tstate_current_frame", offsetof(PyThreadState, current_frame));
    P("frame_code", offsetof(_PyInterpreterFrame, f_executable));
    P("frame_instr", offsetof(_PyInterpreterFrame, instr_ptr));
#endif
#if PY_VERSION_HEX >= 0x030b0000 && PY_VERSION_HEX < 0x030c0000
    P("frame_is_entry", offsetof(_PyInterpreterFrame, is_entry));
#endif
#if PY_VERSION_HEX >= 0x030c0000
    P("owner_cstack", FRAME_OWNED_BY_CSTACK);
#endif
    P("code_filename", offsetof(PyCodeObject, co_filename));
    P("code_name", offsetof(PyCodeObject, co_name));
    P("code_linetable", offsetof(PyCodeObject, co_linetable));
    P("code_firstlineno", offsetof(PyCodeObject, co_firstlineno));
    return 0;
}
"#;

fn header_offsets(root: &Path, minor: u32) -> Vec<(String, u32)> {
    let dir = std::env::temp_dir().join(format!("tracer-pyoff-{}-{minor}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("off.c");
    std::fs::write(&src, OFFSETS_C).unwrap();
    let inc = root.join(format!("include/python3.{minor}"));
    let exe = dir.join("off");
    let out = Command::new("cc")
        .arg(format!("-I{}", inc.display()))
        .arg(format!("-I{}", inc.join("internal").display()))
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .output()
        .unwrap();
    assert!(out.status.success(), "cc over {}: {}", inc.display(), String::from_utf8_lossy(&out.stderr));
    let out = Command::new(&exe).output().unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let (k, v) = l.split_once(' ').unwrap();
            (k.to_string(), v.parse().unwrap())
        })
        .collect()
}

fn field(l: &PyLayout, c: &CodeOffsets, name: &str) -> u32 {
    match name {
        "runtime_interp_head" => l.runtime_interp_head,
        "interp_threads_head" => l.interp_threads_head,
        "tstate_next" => l.tstate_next,
        "tstate_native_thread_id" => l.tstate_native_thread_id,
        "tstate_cframe" => l.tstate_cframe,
        "cframe_current_frame" => l.cframe_current_frame,
        "tstate_current_frame" => l.tstate_current_frame,
        "frame_code" => l.frame_code,
        "frame_previous" => l.frame_previous,
        "frame_instr" => l.frame_instr,
        "frame_owner" => l.frame_owner,
        "frame_is_entry" => l.frame_is_entry,
        "owner_cstack" => l.owner_cstack,
        "code_filename" => c.filename,
        "code_name" => c.name,
        "code_qualname" => c.qualname.unwrap(),
        "code_linetable" => c.linetable,
        "code_firstlineno" => c.firstlineno,
        "code_adaptive" => c.code_adaptive.unwrap(),
        _ => panic!("{name}"),
    }
}

/// Every table field against `offsetof` over that version's headers; the
/// fields a version lacks are NONE.
#[test]
fn tables_match_each_versions_headers() {
    let mut checked = 0;
    for minor in [10, 11, 12, 13] {
        let Some(root) = pyenv(minor) else {
            eprintln!("no pyenv Python 3.{minor}: its table is not checked");
            continue;
        };
        let (l, c) = table(0x0300 | minor).unwrap();
        let got = header_offsets(&root, minor);
        let expect_fields = match minor {
            10 => 12,
            13 => 16,
            _ => 17,
        };
        assert_eq!(got.len(), expect_fields, "3.{minor}: {got:?}");
        for (name, v) in &got {
            assert_eq!(field(&l, &c, name), *v, "3.{minor} {name}");
        }
        let named: Vec<&str> = got.iter().map(|(n, _)| n.as_str()).collect();
        for (name, v) in [
            ("tstate_cframe", l.tstate_cframe),
            ("frame_is_entry", l.frame_is_entry),
            ("owner_cstack", l.owner_cstack),
            ("frame_owner", l.frame_owner),
        ] {
            if !named.contains(&name) {
                assert_eq!(v, NONE, "3.{minor} has no {name}");
            }
        }
        assert_eq!(l.flags, if minor == 10 { py_flags::FRAME_OBJECTS } else { 0 });
        assert!(walkable(&l), "3.{minor}");
        checked += 1;
    }
    eprintln!("{checked} versions checked");
    assert!(table(0x0309).is_none() && table(0x030e).is_none());
}

fn libpython(minor: u32) -> Option<PathBuf> {
    let p = pyenv(minor)?.join(format!("lib/libpython3.{minor}.so.1.0"));
    p.exists().then_some(p)
}

/// 3.13's layout comes from the `_Py_DebugOffsets` in its file, and they
/// say what its headers say.
#[test]
fn debug_offsets_of_313_agree_with_its_headers() {
    let Some(lib) = libpython(13) else {
        eprintln!("no pyenv Python 3.13: not checked");
        return;
    };
    let data = std::fs::read(&lib).unwrap();
    let p = from_image(&data, &lib, 0x7f00_0000_0000, 0).unwrap().unwrap();
    assert_eq!(p.version().0, 3);
    assert_eq!(p.version().1, 13);
    let (mut l, c) = table(0x030d).unwrap();
    l.runtime = p.layout.runtime;
    assert_eq!(p.layout, l);
    assert_eq!(p.code, c);
    // A cookie or version that is not 3.13's is refused.
    let elf = object::File::parse(&*data).unwrap();
    let mut bytes = read_at(&elf, symbol(&elf, "_PyRuntime").unwrap(), DEBUG_OFFSETS_LEN).unwrap().to_vec();
    assert!(from_debug_offsets_313(&bytes).is_ok());
    bytes[10] = 0x0e;
    assert_eq!(from_debug_offsets_313(&bytes), Err("not 3.13's"));
    bytes[0] = b'y';
    assert_eq!(from_debug_offsets_313(&bytes), Err("no xdebugpy cookie"));
    assert_eq!(from_debug_offsets_313(&bytes[..100]), Err("too short"));
}

/// 3.9 defines `_PyRuntime` but no layout is known for it: the error names
/// the file and the version.
#[test]
fn an_unknown_version_is_an_error_naming_it() {
    let Some(lib) = libpython(9) else {
        eprintln!("no pyenv Python 3.9: not checked");
        return;
    };
    let data = std::fs::read(&lib).unwrap();
    let e = from_image(&data, &lib, 0x7f00_0000_0000, 0).unwrap_err();
    assert_eq!(e, LayoutError::Version { path: lib.clone(), version: 0x0309 });
    assert_eq!(
        e.to_string(),
        format!("{}: Python 3.9 has no known frame layout (3.10 to 3.13 are known)", lib.display())
    );
}

#[test]
fn versions_from_file_names() {
    for (name, v) in [
        ("/usr/bin/python3.10", Some((3, 10))),
        ("/x/libpython3.12.so.1.0", Some((3, 12))),
        ("/x/libpython3.13t.so", Some((3, 13))),
        ("/usr/bin/python3", None),
        ("/usr/bin/perl", None),
    ] {
        assert_eq!(version_from_name(Path::new(name)), v, "{name}");
    }
}

struct Sleeper(Child);

impl Drop for Sleeper {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A Python that prints once it runs, then sleeps.
fn sleeper(python: &Path) -> Sleeper {
    let mut c = Command::new(python)
        .args(["-c", "import sys, time; print('up', flush=True); time.sleep(30)"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(c.stdout.take().unwrap()), &mut line).unwrap();
    assert_eq!(line, "up\n");
    Sleeper(c)
}

fn read_u64(mem: &std::fs::File, addr: u64) -> u64 {
    let mut b = [0u8; 8];
    mem.read_exact_at(&mut b, addr).unwrap_or_else(|e| panic!("reading {addr:#x}: {e}"));
    u64::from_le_bytes(b)
}

/// The layout found for a live process leads, through its memory, to the
/// thread state of its main thread: `_PyRuntime` and its load bias, the
/// interpreter and thread offsets are right.
fn follows_to_its_thread_state(python: &Path, minor: u32, interpreter: &str) {
    let s = sleeper(python);
    let pid = s.0.id();
    assert!(maps_interpreter(pid));
    let p = find(pid).unwrap().unwrap();
    assert_eq!(p.version(), (3, minor as u8));
    assert!(p.path.to_str().unwrap().ends_with(interpreter), "{}", p.path.display());
    assert_eq!(python_version(pid), Some(0x0300 | minor));
    let l = &p.layout;
    let mem = std::fs::File::open(format!("/proc/{pid}/mem")).unwrap();
    let interp = read_u64(&mem, l.runtime + l.runtime_interp_head as u64);
    assert_ne!(interp, 0);
    let tstate = read_u64(&mem, interp + l.interp_threads_head as u64);
    assert_ne!(tstate, 0);
    let id = read_u64(&mem, tstate + l.tstate_native_thread_id as u64);
    if minor >= 11 {
        assert_eq!(id, pid as u64);
    } else {
        // thread_id: pthread_self(), an address in the process.
        assert_ne!(id, 0);
    }
}

#[test]
fn live_shared_build_311() {
    let Some(root) = pyenv(11) else {
        eprintln!("no pyenv Python 3.11: not checked");
        return;
    };
    follows_to_its_thread_state(&root.join("bin/python3.11"), 11, "libpython3.11.so.1.0");
}

#[test]
fn live_static_build_311() {
    let exe = Path::new("/usr/bin/python3.11");
    if !exe.exists() {
        eprintln!("no /usr/bin/python3.11: not checked");
        return;
    }
    follows_to_its_thread_state(exe, 11, "python3.11");
}

#[test]
fn live_other_versions() {
    for minor in [10, 12, 13] {
        if let Some(root) = pyenv(minor) {
            follows_to_its_thread_state(
                &root.join(format!("bin/python3.{minor}")),
                minor,
                &format!("libpython3.{minor}.so.1.0"),
            );
        }
    }
}

/// A process without Python has no layout.
#[test]
fn no_interpreter_no_layout() {
    let mut c = Command::new("sleep").arg("30").spawn().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(50));
    let r = find(c.id());
    let _ = c.kill();
    let _ = c.wait();
    assert_eq!(r, Ok(None));
    assert_eq!(find(u32::MAX - 1), Ok(None));
    assert!(!maps_interpreter(std::process::id()));
    assert!(!maps_interpreter(u32::MAX - 1));
}
