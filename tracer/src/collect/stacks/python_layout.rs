//! A Python process's interpreter layout: where its `_PyRuntime` is and the
//! offsets the kernel's frame walker (tracer-ebpf/src/pystack.rs) follows,
//! as a [`PyLayout`] for the `PY_PROCS` map, plus the code object offsets
//! the resolver reads names and lines with ([`CodeOffsets`]).
//!
//! The interpreter is the mapped file of the process that defines
//! `_PyRuntime`: `libpython3.X.so*` (shared builds), or the executable
//! (static builds, and programs that embed a static libpython). Its version
//! is `Py_Version` (3.11+), else the file's name (`python3.10`,
//! `libpython3.10.so.1.0`). Offsets: 3.13 from the `_Py_DebugOffsets` at the
//! start of `_PyRuntime` (cookie `xdebugpy`); 3.10–3.12 from the tables
//! below, taken from CPython's headers (`offsetof` over
//! Include/cpython/pystate.h, internal/pycore_frame.h, pycore_interp.h,
//! pycore_runtime.h, pycore_code.h of 3.10.13, 3.11.7, 3.12.1 and 3.13.0,
//! x86-64, default (GIL) builds). Other versions: [`LayoutError::Version`].
use std::path::{Path, PathBuf};

use object::{Object, ObjectSection, ObjectSegment, ObjectSymbol};
use tracer_common::stack::{PyLayout, py_flags};

/// Offsets in a `PyCodeObject` (bytes), for reading a frame's code object
/// from the process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CodeOffsets {
    /// `co_filename` (a `str`).
    pub filename: u32,
    /// `co_name`.
    pub name: u32,
    /// `co_qualname` (3.11+).
    pub qualname: Option<u32>,
    /// `co_linetable` (a `bytes`; 3.10: the PEP 626 table, 3.11+: the
    /// location table).
    pub linetable: u32,
    /// `co_firstlineno` (an int).
    pub firstlineno: u32,
    /// `co_code_adaptive` (3.11+): the first instruction; a frame's
    /// instruction address minus this, / 2, is its instruction index.
    pub code_adaptive: Option<u32>,
}

/// What [`find`] found for a process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PyProcess {
    /// `PY_VERSION_HEX` where known (3.11+: `Py_Version`), else
    /// `major << 24 | minor << 16` from the file's name.
    pub version_hex: u32,
    /// The file that defines `_PyRuntime`, as the process maps it.
    pub path: PathBuf,
    pub layout: PyLayout,
    pub code: CodeOffsets,
}

impl PyProcess {
    /// `(major, minor)`.
    pub fn version(&self) -> (u8, u8) {
        ((self.version_hex >> 24) as u8, (self.version_hex >> 16) as u8)
    }
}

/// Why a process with an interpreter has no layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LayoutError {
    /// A version tracer has no offsets for (`major << 8 | minor`).
    Version { path: PathBuf, version: u32 },
    /// The interpreter's version could not be told (no `Py_Version`, a
    /// file name without one).
    NoVersion { path: PathBuf },
    /// 3.13+ whose `_Py_DebugOffsets` could not be read or were not valid.
    DebugOffsets { path: PathBuf, why: String },
}

impl std::fmt::Display for LayoutError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LayoutError::Version { path, version } => write!(
                f,
                "{}: Python {}.{} has no known frame layout (3.10 to 3.13 are known)",
                path.display(),
                version >> 8,
                version & 0xff
            ),
            LayoutError::NoVersion { path } => {
                write!(f, "{}: defines _PyRuntime but its Python version is unknown", path.display())
            }
            LayoutError::DebugOffsets { path, why } => write!(f, "{}: _Py_DebugOffsets: {why}", path.display()),
        }
    }
}

/// The version of the process's interpreter as `major << 8 | minor`
/// (0x030b = 3.11), or None when it has none mapped (yet) or it cannot be
/// told.
pub fn python_version(pid: u32) -> Option<u32> {
    match find(pid) {
        Ok(Some(p)) => Some(p.version_hex >> 16),
        Err(LayoutError::Version { version, .. }) => Some(version),
        _ => None,
    }
}

/// The interpreter layout of process `pid`: Ok(None) when no mapped file
/// of the process defines `_PyRuntime` (not Python, or not yet loaded).
pub fn find(pid: u32) -> Result<Option<PyProcess>, LayoutError> {
    let maps = match std::fs::read_to_string(format!("/proc/{pid}/maps")) {
        Ok(m) => m,
        Err(_) => return Ok(None),
    };
    let exe = std::fs::read_link(format!("/proc/{pid}/exe")).ok();
    for (path, start, offset) in candidates(&maps, exe.as_deref()) {
        let file = Path::new("/proc").join(pid.to_string()).join("root").join(path.strip_prefix("/").unwrap_or(&path));
        let Ok(data) = std::fs::read(&file) else { continue };
        if let Some(p) = from_image(&data, &path, start, offset)? {
            return Ok(Some(p));
        }
    }
    Ok(None)
}

/// Whether process `pid` maps a file named like an interpreter
/// (`libpython*`, `python*`): one read of its maps, no file parsed.
pub fn maps_interpreter(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/maps")).is_ok_and(|m| !candidates(&m, None).is_empty())
}

/// Mapped files that may hold the interpreter, libpython first, each with
/// the start and file offset of its lowest mapping.
fn candidates(maps: &str, exe: Option<&Path>) -> Vec<(PathBuf, u64, u64)> {
    let mut found: Vec<(PathBuf, u64, u64)> = Vec::new();
    for line in maps.lines() {
        let mut it = line.split_whitespace();
        let (Some(range), Some(_perms), Some(off), Some(_dev), Some(_inode)) =
            (it.next(), it.next(), it.next(), it.next(), it.next())
        else {
            continue;
        };
        let path: String = it.collect::<Vec<_>>().join(" ");
        if !path.starts_with('/') || path.ends_with(" (deleted)") {
            continue;
        }
        let path = PathBuf::from(path);
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let likely = name.starts_with("libpython") || name.starts_with("python") || exe == Some(path.as_path());
        if !likely {
            continue;
        }
        let (Some((s, _)), Ok(off)) = (range.split_once('-'), u64::from_str_radix(off, 16)) else { continue };
        let Ok(start) = u64::from_str_radix(s, 16) else { continue };
        match found.iter_mut().find(|(p, _, _)| *p == path) {
            Some(e) if off < e.2 => *e = (path, start, off),
            Some(_) => {}
            None => found.push((path, start, off)),
        }
    }
    found.sort_by_key(|(p, _, _)| !p.file_name().and_then(|n| n.to_str()).unwrap_or("").starts_with("libpython"));
    found
}

/// The layout from one interpreter image (`data`, the file), mapped at
/// `start` from file offset `offset`: Ok(None) when it does not define
/// `_PyRuntime`.
pub fn from_image(data: &[u8], path: &Path, start: u64, offset: u64) -> Result<Option<PyProcess>, LayoutError> {
    let Ok(elf) = object::File::parse(data) else { return Ok(None) };
    let Some(runtime) = symbol(&elf, "_PyRuntime") else { return Ok(None) };
    let Some(bias) = load_bias(&elf, start, offset) else { return Ok(None) };
    let version_hex = match symbol(&elf, "Py_Version").and_then(|a| read_at(&elf, a, 4)) {
        Some(b) => u32::from_le_bytes([b[0], b[1], b[2], b[3]]),
        None => match version_from_name(path) {
            Some((maj, min)) => (maj as u32) << 24 | (min as u32) << 16,
            None => return Err(LayoutError::NoVersion { path: path.to_path_buf() }),
        },
    };
    let version = version_hex >> 16;
    let (mut layout, code) = match version {
        0x030d => {
            let bytes = read_at(&elf, runtime, DEBUG_OFFSETS_LEN).ok_or_else(|| LayoutError::DebugOffsets {
                path: path.to_path_buf(),
                why: "_PyRuntime has no initialised data in the file".into(),
            })?;
            from_debug_offsets_313(bytes)
                .map_err(|why| LayoutError::DebugOffsets { path: path.to_path_buf(), why: why.into() })?
        }
        v => table(v).ok_or(LayoutError::Version { path: path.to_path_buf(), version: v })?,
    };
    layout.version = version;
    layout.runtime = runtime.wrapping_add(bias);
    Ok(Some(PyProcess { version_hex, path: path.to_path_buf(), layout, code }))
}

fn symbol(elf: &object::File, name: &str) -> Option<u64> {
    elf.dynamic_symbols().chain(elf.symbols()).find(|s| s.name() == Ok(name) && s.is_definition()).map(|s| s.address())
}

/// Bytes at virtual address `addr` of the file's initialised data.
fn read_at<'d>(elf: &object::File<'d>, addr: u64, len: usize) -> Option<&'d [u8]> {
    for s in elf.sections() {
        let (a, size) = (s.address(), s.size());
        if addr >= a && addr + len as u64 <= a + size {
            let data = s.data().ok()?;
            let o = (addr - a) as usize;
            return data.get(o..o + len);
        }
    }
    None
}

/// Process address minus file address, from the mapping of file offset
/// `offset` at `start`.
fn load_bias(elf: &object::File, start: u64, offset: u64) -> Option<u64> {
    for seg in elf.segments() {
        let (foff, fsize) = seg.file_range();
        if offset >= foff && offset < foff + fsize.max(1) {
            return Some(start.wrapping_sub(seg.address() + (offset - foff)));
        }
    }
    None
}

/// `(3, 10)` from `python3.10`, `libpython3.10.so.1.0`, `libpython3.13t.so`.
pub fn version_from_name(path: &Path) -> Option<(u8, u8)> {
    let name = path.file_name()?.to_str()?;
    let rest = name.strip_prefix("libpython").or_else(|| name.strip_prefix("python"))?;
    let (maj, rest) = rest.split_once('.')?;
    let min: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    Some((maj.parse().ok()?, min.parse().ok()?))
}

const NONE: u32 = u32::MAX;

/// The offsets of 3.10, 3.11, 3.12 (and 3.13.0, for a 3.13 without debug
/// offsets in its file), from the headers (module docs).
pub fn table(version: u32) -> Option<(PyLayout, CodeOffsets)> {
    let l = |h: [u32; 4], cf: [u32; 3], fr: [u32; 6], flags| PyLayout {
        version,
        flags,
        runtime: 0,
        runtime_interp_head: h[0],
        interp_threads_head: h[1],
        tstate_next: h[2],
        tstate_native_thread_id: h[3],
        tstate_cframe: cf[0],
        cframe_current_frame: cf[1],
        tstate_current_frame: cf[2],
        frame_code: fr[0],
        frame_previous: fr[1],
        frame_instr: fr[2],
        frame_owner: fr[3],
        frame_is_entry: fr[4],
        owner_cstack: fr[5],
        _pad: 0,
    };
    let c = |filename, name, qualname, linetable, firstlineno, code_adaptive| CodeOffsets {
        filename,
        name,
        qualname,
        linetable,
        firstlineno,
        code_adaptive,
    };
    Some(match version {
        // PyThreadState.thread_id (pthread_self) stands in for
        // native_thread_id, which 3.10 lacks: the walker compares it with
        // the thread's fs base (py_flags::FRAME_OBJECTS).
        0x030a => (
            l([32, 8, 8, 176], [NONE, NONE, 24], [32, 24, 96, NONE, NONE, NONE], py_flags::FRAME_OBJECTS),
            c(104, 112, None, 120, 40, None),
        ),
        0x030b => (
            l([40, 16, 8, 160], [56, 8, NONE], [32, 48, 56, 69, 68, NONE], 0),
            c(112, 120, Some(128), 136, 72, Some(184)),
        ),
        0x030c => {
            (l([40, 72, 8, 144], [56, 0, NONE], [0, 8, 56, 70, NONE, 3], 0), c(112, 120, Some(128), 136, 68, Some(192)))
        }
        0x030d => (
            l([632, 7344, 8, 160], [NONE, NONE, 72], [0, 8, 56, 70, NONE, 3], 0),
            c(112, 120, Some(128), 136, 68, Some(200)),
        ),
        _ => return None,
    })
}

/// Bytes of 3.13's `_Py_DebugOffsets` read (up to `code_object`'s last field).
const DEBUG_OFFSETS_LEN: usize = 352;

/// 3.13's `_Py_DebugOffsets` (Include/internal/pycore_runtime.h of 3.13:
/// the layout is stable within a minor version only).
pub fn from_debug_offsets_313(b: &[u8]) -> Result<(PyLayout, CodeOffsets), &'static str> {
    if b.len() < DEBUG_OFFSETS_LEN {
        return Err("too short");
    }
    if &b[0..8] != b"xdebugpy" {
        return Err("no xdebugpy cookie");
    }
    let u = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().unwrap_or([0; 8]));
    if (u(8) >> 16) as u32 != 0x030d {
        return Err("not 3.13's");
    }
    let f = |o: usize| -> Result<u32, &'static str> { u32::try_from(u(o)).map_err(|_| "offset out of range") };
    // runtime_state at 24, interpreter_state at 48 (13 fields),
    // thread_state at 152 (9), interpreter_frame at 224 (6), code_object at 272.
    let layout = PyLayout {
        version: 0x030d,
        flags: 0,
        runtime: 0,
        runtime_interp_head: f(40)?,
        interp_threads_head: f(72)?,
        tstate_next: f(168)?,
        tstate_native_thread_id: f(200)?,
        tstate_cframe: NONE,
        cframe_current_frame: NONE,
        tstate_current_frame: f(184)?,
        frame_code: f(240)?,
        frame_previous: f(232)?,
        frame_instr: f(248)?,
        frame_owner: f(264)?,
        frame_is_entry: NONE,
        // FRAME_OWNED_BY_CSTACK (pycore_frame.h of 3.13).
        owner_cstack: 3,
        _pad: 0,
    };
    let code = CodeOffsets {
        filename: f(280)?,
        name: f(288)?,
        qualname: Some(f(296)?),
        linetable: f(304)?,
        firstlineno: f(312)?,
        code_adaptive: Some(f(344)?),
    };
    Ok((layout, code))
}

/// Whether the walker can use `l`: every frame field within the bytes it
/// reads of a frame (tracer-ebpf/src/pystack.rs FRAME_READ).
pub fn walkable(l: &PyLayout) -> bool {
    const FRAME_READ: u32 = 128;
    [l.frame_code, l.frame_previous, l.frame_instr].iter().all(|&o| o != NONE && o + 8 < FRAME_READ)
        && [l.frame_owner, l.frame_is_entry].iter().all(|&o| o == NONE || o + 1 < FRAME_READ)
}

#[cfg(test)]
#[path = "python_layout_tests.rs"]
mod tests;
