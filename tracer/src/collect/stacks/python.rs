//! Python frames → (qualified name, file, line): the frame's code object
//! read from the process (`/proc/PID/mem`), with the offsets of its
//! CPython version (below, from the versions' headers: `offsetof` on
//! Include/cpython/code.h and unicodeobject.h of 3.10.13, 3.11.7, 3.12.1 and
//! 3.13.0 on x86-64; the struct is fixed within a minor version), and the
//! line of the frame's instruction from the code's line table
//! (linetable.rs). Code objects are cached per (pid, address); a code
//! object that cannot be read is `[python ?]`. A freed code object's
//! address is reused by the next one allocated there, so a cached code is
//! checked against the process again (its name, file and line-table
//! pointers and first line, one read) whenever a new raw stack holds it,
//! and when a raw stack seen before holds it and its last check is more
//! than [`RECHECK`] old; a changed one is read again. Each address counts
//! the replacements found there (its generation, whichever stack's check
//! found it); a raw stack seen before is resolved again when a code it holds
//! moved on to a later generation since it was resolved
//! ([`PythonResolver::version`], decode/stacks.rs): a replacement found by
//! another stack's check counts for it too.
use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::os::unix::fs::FileExt as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tracer_common::stack::{PY_ENTRY, PyFrame};

use crate::collect::stacks::linetable;
use crate::decode::stacks::{Frame, FrameKind, PYTHON_UNKNOWN_FN};

/// Where a version's code objects and strings keep what a frame needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CodeLayout {
    pub filename: u64,
    pub name: u64,
    /// 3.11+.
    pub qualname: Option<u64>,
    /// An `int`.
    pub firstlineno: u64,
    /// A bytes object.
    pub linetable: u64,
    /// 3.11+: the offset of the instructions in the code object
    /// (`co_code_adaptive`); a frame's instruction is an address there.
    /// None (3.10): a frame's instruction is the int `f_lasti`, an index in
    /// code units, and the line table is 3.10's.
    pub code_adaptive: Option<u64>,
    /// `sizeof(PyASCIIObject)`, `sizeof(PyCompactUnicodeObject)`: where a
    /// compact string's characters start (ASCII, other kinds).
    pub ascii_data: u64,
    pub compact_data: u64,
}

/// `PyVarObject.ob_size`, `PyBytesObject.ob_sval`, `PyASCIIObject.length`
/// and `.state` (every version here).
const OB_SIZE: u64 = 16;
const OB_SVAL: u64 = 32;
const STR_LENGTH: u64 = 16;
const STR_STATE: u64 = 32;
/// `PyObject.ob_type`, `PyTypeObject.tp_name` (every version here).
const OB_TYPE: u64 = 8;
const TP_NAME: u64 = 24;

/// The layout of version `v` (`PY_VERSION_HEX >> 16`: 0x030b is 3.11).
pub fn code_layout(v: u32) -> Option<CodeLayout> {
    let l = |filename, name, qualname, firstlineno, linetable, code_adaptive, ascii_data, compact_data| CodeLayout {
        filename,
        name,
        qualname,
        firstlineno,
        linetable,
        code_adaptive,
        ascii_data,
        compact_data,
    };
    Some(match v {
        0x030a => l(104, 112, None, 40, 120, None, 48, 72),
        0x030b => l(112, 120, Some(128), 72, 136, Some(184), 48, 72),
        0x030c => l(112, 120, Some(128), 68, 136, Some(192), 40, 56),
        0x030d => l(112, 120, Some(128), 68, 136, Some(200), 40, 56),
        _ => return None,
    })
}

/// What a code object gives every frame that runs it.
struct Code {
    func: Arc<str>,
    file: Arc<str>,
    first_line: i64,
    table: Vec<u8>,
    /// Its identity words as read ([`CodeLayout::identity`]).
    identity: Vec<u8>,
}

/// A cached code (None: unreadable) and when it was last read or checked.
type Cached = (Option<Arc<Code>>, Instant);

/// A cached code in a raw stack seen before is checked again when its last
/// check is older than this (a new raw stack checks every code it holds).
pub const RECHECK: Duration = Duration::from_millis(5);

impl CodeLayout {
    /// The span of a code object holding its name, qualified name, file and
    /// line-table pointers and its first line: (offset, length). A code
    /// object is immutable; another one at the same address differs there.
    fn identity(&self) -> (u64, u64) {
        let ends = [
            (self.filename, 8),
            (self.name, 8),
            (self.qualname.unwrap_or(self.name), 8),
            (self.linetable, 8),
            (self.firstlineno, 4),
        ];
        let start = ends.iter().map(|e| e.0).min().unwrap_or(0);
        let end = ends.iter().map(|e| e.0 + e.1).max().unwrap_or(0);
        (start, end - start)
    }
}

/// Strings longer than this (characters) are not names: a bad read.
const STR_MAX: u64 = 4096;
/// Line tables longer than this are not read.
const TABLE_MAX: u64 = 1 << 20;

/// The Python version of a process (`PY_VERSION_HEX >> 16`), None when
/// it is not Python or its version is not known (collect/stacks/python_layout.rs).
pub type VersionOf = Box<dyn FnMut(u32) -> Option<u32>>;

pub struct PythonResolver {
    version_of: VersionOf,
    mem: HashMap<u32, Option<File>>,
    /// (pid, code address) → the code (None when it could not be read)
    /// and when it was last read or checked.
    codes: HashMap<(u32, u64), Cached>,
    /// Cached codes found changed (another code object at the address).
    pub changed: u64,
    /// (pid, code address) → its generation: how many times the code cached
    /// there was found replaced (absent: never).
    generations: HashMap<(u32, u64), u64>,
    /// (pid, type address) → whether it is the code type (`tp_name` "code").
    types: HashMap<(u32, u64), bool>,
    pub errors: BTreeMap<String, u64>,
}

impl PythonResolver {
    pub fn new(version_of: VersionOf) -> Self {
        PythonResolver {
            version_of,
            mem: HashMap::new(),
            codes: HashMap::new(),
            changed: 0,
            generations: HashMap::new(),
            types: HashMap::new(),
            errors: BTreeMap::new(),
        }
    }

    /// The frames of a new raw stack of process `pid`: every code it holds that is cached is
    /// checked first (in one read of the process, [`Self::recheck_all`]), then each frame is named.
    pub fn frames(&mut self, pid: u32, frames: &[PyFrame]) -> Vec<Frame> {
        if let Some(layout) = (self.version_of)(pid).and_then(code_layout) {
            let codes: Vec<u64> = frames.iter().map(|f| f.code & !PY_ENTRY).collect();
            self.recheck_all(pid, &codes, &layout, Duration::ZERO);
        }
        frames.iter().map(|f| self.frame_checked(pid, f)).collect()
    }

    /// The frame of `f` in process `pid` (its code checked first when cached).
    pub fn frame(&mut self, pid: u32, f: &PyFrame) -> Frame {
        if let Some(layout) = (self.version_of)(pid).and_then(code_layout) {
            self.recheck(pid, f.code & !PY_ENTRY, &layout, Duration::ZERO);
        }
        self.frame_checked(pid, f)
    }

    /// The frame of `f`, its cached code taken as it is.
    fn frame_checked(&mut self, pid: u32, f: &PyFrame) -> Frame {
        let code_addr = f.code & !PY_ENTRY;
        let Some(layout) = (self.version_of)(pid).and_then(code_layout) else {
            *self.errors.entry("python version unknown".into()).or_default() += 1;
            return Frame::named(FrameKind::Unknown, PYTHON_UNKNOWN_FN);
        };
        let code = match self.codes.get(&(pid, code_addr)) {
            Some((c, _)) => c.clone(),
            None => {
                let c = self.read_code(pid, code_addr, &layout).map(Arc::new);
                if c.is_none() {
                    *self.errors.entry("python code object unreadable".into()).or_default() += 1;
                }
                self.codes.insert((pid, code_addr), (c.clone(), Instant::now()));
                c
            }
        };
        let Some(code) = code else { return Frame::named(FrameKind::Unknown, PYTHON_UNKNOWN_FN) };
        let line = instr_line(&layout, code_addr, &code.table, code.first_line, f.instr);
        Frame {
            kind: FrameKind::Python,
            func: code.func.clone(),
            module: None,
            addr: None,
            offset: None,
            file: Some(code.file.clone()),
            line: line.and_then(|l| u32::try_from(l).ok()),
        }
    }

    /// Whether the code cached at `code` of `pid` was replaced by another
    /// code object (then dropped from the cache, to be read again, and the
    /// address's generation bumped): checked when its last check is older
    /// than `max_age`. A code unreadable when first read stays so (counted
    /// once); when the process is gone (stacks resolved after its exit) the
    /// cached code stands.
    fn recheck(&mut self, pid: u32, code: u64, layout: &CodeLayout, max_age: Duration) -> bool {
        let now = Instant::now();
        let c = match self.codes.get(&(pid, code)) {
            Some((Some(c), at)) if now.duration_since(*at) > max_age => c.clone(),
            _ => return false,
        };
        let (off, len) = layout.identity();
        let read = self.read(pid, code + off, len);
        self.checked(pid, code, c, read.as_deref(), now)
    }

    /// The check of the code cached at `code` against `read`, its identity span as read now
    /// (None: unreadable, the cached code stands): replaced (dropped, its generation bumped:
    /// true) or confirmed at `now`.
    fn checked(&mut self, pid: u32, code: u64, c: Arc<Code>, read: Option<&[u8]>, now: Instant) -> bool {
        match read {
            Some(b) if b != c.identity.as_slice() => {
                self.codes.remove(&(pid, code));
                *self.generations.entry((pid, code)).or_default() += 1;
                self.changed += 1;
                true
            }
            Some(_) => {
                self.codes.insert((pid, code), (Some(c), now));
                false
            }
            None => false,
        }
    }

    /// [`Self::recheck`] for every code of `codes` (a stack's, in order; repeats checked once)
    /// whose last check is older than `max_age`: their identity spans read in one
    /// `process_vm_readv` instead of one read each (a deep Python stack holds 40 codes or more,
    /// and a new raw stack checks them all: one read each cost GPT-2's recording about 20 s of
    /// the collector's system time). Where that read fails or comes back short (a code
    /// unmapped, the call refused), each is checked on its own.
    fn recheck_all(&mut self, pid: u32, codes: &[u64], layout: &CodeLayout, max_age: Duration) {
        let now = Instant::now();
        let mut due: Vec<(u64, Arc<Code>)> = Vec::new();
        for &code in codes {
            if let Some((Some(c), at)) = self.codes.get(&(pid, code))
                && now.duration_since(*at) > max_age
                && !due.iter().any(|(a, _)| *a == code)
            {
                due.push((code, c.clone()));
            }
        }
        let (off, len) = layout.identity();
        let len = len as usize;
        let mut buf = vec![0u8; due.len() * len];
        let spans: Vec<(u64, usize)> = due.iter().map(|(code, _)| (code + off, len)).collect();
        let whole =
            due.len() > 1 && crate::collect::procmem::read_spans(pid, &spans, &mut buf).is_ok_and(|n| n == buf.len());
        if !whole {
            for (code, _) in &due {
                self.recheck(pid, *code, layout, max_age);
            }
            return;
        }
        for ((code, c), b) in due.into_iter().zip(buf.chunks(len)) {
            self.checked(pid, code, c, Some(b), now);
        }
    }

    /// The version of the codes `frames` of `pid` hold: the sum of their
    /// addresses' generations, each code checked first when its last check
    /// is older than [`RECHECK`]. Generations only grow, so for one raw
    /// stack (its addresses fixed) a different version means a code it holds
    /// was replaced since: found by this check or by any other since the
    /// stack was resolved (a new raw stack's, which checks every code).
    pub fn version(&mut self, pid: u32, frames: impl Iterator<Item = PyFrame>) -> u64 {
        let Some(layout) = (self.version_of)(pid).and_then(code_layout) else { return 0 };
        let codes: Vec<u64> = frames.map(|f| f.code & !PY_ENTRY).collect();
        self.recheck_all(pid, &codes, &layout, RECHECK);
        codes.iter().fold(0u64, |v, code| v.wrapping_add(self.generations.get(&(pid, *code)).copied().unwrap_or(0)))
    }

    fn read(&mut self, pid: u32, addr: u64, len: u64) -> Option<Vec<u8>> {
        let f = self.mem.entry(pid).or_insert_with(|| File::open(format!("/proc/{pid}/mem")).ok()).as_ref()?;
        let mut b = vec![0u8; usize::try_from(len).ok()?];
        let n = f.read_at(&mut b, addr).ok()?;
        (n == b.len()).then_some(b)
    }

    fn u64_at(&mut self, pid: u32, addr: u64) -> Option<u64> {
        let b = self.read(pid, addr, 8)?;
        Some(u64::from_le_bytes(b.try_into().ok()?))
    }

    fn read_code(&mut self, pid: u32, code: u64, l: &CodeLayout) -> Option<Code> {
        if code == 0 || !self.is_code(pid, code) {
            return None;
        }
        let first = self.read(pid, code + l.firstlineno, 4)?;
        let first_line = i64::from(i32::from_le_bytes(first.try_into().ok()?));
        let name_at = l.qualname.unwrap_or(l.name);
        let func = self.string(pid, code + name_at, l)?;
        let file = self.string(pid, code + l.filename, l)?;
        let table_obj = self.u64_at(pid, code + l.linetable)?;
        let table_len = self.u64_at(pid, table_obj + OB_SIZE)?;
        if table_len > TABLE_MAX || first_line < 0 {
            return None;
        }
        let table = self.read(pid, table_obj + OB_SVAL, table_len)?;
        let (off, len) = l.identity();
        let identity = self.read(pid, code + off, len)?;
        Some(Code { func: Arc::from(func), file: Arc::from(file), first_line, table, identity })
    }

    /// Whether the object at `obj` is a code object (its type's `tp_name`
    /// is "code"): a frame read while its chain changed may point at
    /// anything.
    fn is_code(&mut self, pid: u32, obj: u64) -> bool {
        let Some(ty) = self.u64_at(pid, obj + OB_TYPE) else { return false };
        if let Some(&known) = self.types.get(&(pid, ty)) {
            return known;
        }
        let name = self.u64_at(pid, ty + TP_NAME).and_then(|n| self.read(pid, n, 5));
        let code = name.as_deref() == Some(b"code\0");
        self.types.insert((pid, ty), code);
        code
    }

    /// The str object whose pointer is at `at`: compact strings (every
    /// kind); a legacy (non-compact) string is None.
    fn string(&mut self, pid: u32, at: u64, l: &CodeLayout) -> Option<String> {
        let obj = self.u64_at(pid, at)?;
        let len = self.u64_at(pid, obj + STR_LENGTH)?;
        let state = u32::from_le_bytes(self.read(pid, obj + STR_STATE, 4)?.try_into().ok()?);
        let (kind, compact, ascii) = ((state >> 2) & 7, state >> 5 & 1 == 1, state >> 6 & 1 == 1);
        if len > STR_MAX || !compact || !matches!(kind, 1 | 2 | 4) || (ascii && kind != 1) {
            return None;
        }
        let data = obj + if ascii { l.ascii_data } else { l.compact_data };
        let b = self.read(pid, data, len * u64::from(kind))?;
        Some(decode_str(&b, kind))
    }

    pub fn forget(&mut self, pid: u32) {
        self.mem.remove(&pid);
        self.codes.retain(|(p, _), _| *p != pid);
        self.generations.retain(|(p, _), _| *p != pid);
        self.types.retain(|(p, _), _| *p != pid);
    }
}

/// The characters of a string of `kind` (1: Latin-1, 2: UCS-2, 4: UCS-4).
fn decode_str(b: &[u8], kind: u32) -> String {
    let ch = |c: u32| char::from_u32(c).unwrap_or(char::REPLACEMENT_CHARACTER);
    match kind {
        1 => b.iter().map(|&c| ch(u32::from(c))).collect(),
        2 => b.chunks_exact(2).map(|c| ch(u32::from(u16::from_le_bytes([c[0], c[1]])))).collect(),
        _ => b.chunks_exact(4).map(|c| ch(u32::from_le_bytes([c[0], c[1], c[2], c[3]]))).collect(),
    }
}

/// The line of a frame's instruction `instr` in code object `code`.
pub fn instr_line(l: &CodeLayout, code: u64, table: &[u8], first_line: i64, instr: u64) -> Option<i64> {
    match l.code_adaptive {
        Some(off) => {
            if instr == 0 {
                return None;
            }
            let index = (instr.wrapping_sub(code + off) as i64).div_euclid(2);
            linetable::line_311(table, first_line, index)
        }
        // f_lasti, an int (code units).
        None => linetable::line_310(table, first_line, i64::from(instr as u32 as i32) * 2),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_of_every_kind() {
        assert_eq!(decode_str(b"load_batch", 1), "load_batch");
        assert_eq!(decode_str(&[0xe9], 1), "é");
        assert_eq!(decode_str(&[0x3b, 0x04, 0x38, 0x04], 2), "ли");
        assert_eq!(decode_str(&0x1f600u32.to_le_bytes(), 4), "😀");
        assert_eq!(decode_str(&0xd800u16.to_le_bytes(), 2), "\u{fffd}");
    }
}
