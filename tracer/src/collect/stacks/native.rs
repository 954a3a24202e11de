//! Native frames → symbols: the address's mapped file and offset in it
//! (maps.rs), then the ELF file's symbols and, where the file has them,
//! its DWARF lines (blazesym, symbolizing by file offset: it needs the file,
//! not the process, so it still works after the process exited). Results
//! are cached per (file, offset).
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use blazesym::symbolize::source::{Elf, Source};
use blazesym::symbolize::{Input, Symbolized, Symbolizer};

use crate::collect::stacks::maps::MapsCache;
use crate::decode::stacks::{Frame, FrameKind, JIT_FN, UNKNOWN_FN};

/// What a file offset resolved to.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Sym {
    func: Option<Arc<str>>,
    file: Option<Arc<str>>,
    line: Option<u32>,
}

pub struct NativeResolver {
    symbolizer: Symbolizer,
    pub maps: MapsCache,
    /// (file to read, offset looked up) → its symbol.
    syms: HashMap<(Arc<str>, u64), Sym>,
    /// (pid, address, leaf) → its frame.
    frames: HashMap<(u32, u64, bool), Frame>,
    /// Files whose debug information could not be read: symbols only.
    no_debug: std::collections::HashSet<Arc<str>>,
    /// pid → the prefix its paths are opened under (`/proc/PID/root` for a
    /// process in another mount namespace; empty for ours).
    roots: HashMap<u32, Arc<str>>,
    /// What could not be done, by reason.
    pub errors: BTreeMap<String, u64>,
}

impl Default for NativeResolver {
    fn default() -> Self {
        NativeResolver {
            symbolizer: Symbolizer::builder().enable_code_info(true).enable_inlined_fns(false).build(),
            maps: MapsCache::default(),
            syms: HashMap::new(),
            frames: HashMap::new(),
            no_debug: Default::default(),
            roots: HashMap::new(),
            errors: BTreeMap::new(),
        }
    }
}

impl NativeResolver {
    /// The frame of return address `addr` of process `pid`; `leaf`: the
    /// innermost frame, whose address is the instruction itself (a caller's
    /// is the one after its call, so the symbol of `addr - 1` is looked up).
    pub fn frame(&mut self, pid: u32, addr: u64, leaf: bool) -> Frame {
        if let Some(f) = self.frames.get(&(pid, addr, leaf)) {
            return f.clone();
        }
        let f = self.resolve(pid, addr, leaf);
        // An address in no mapping may be in a library loaded later.
        if f.kind != FrameKind::Unknown {
            self.frames.insert((pid, addr, leaf), f.clone());
        }
        f
    }

    fn resolve(&mut self, pid: u32, addr: u64, leaf: bool) -> Frame {
        let Some(m) = self.maps.lookup(pid, addr) else {
            return Frame { addr: Some(addr), ..Frame::named(FrameKind::Unknown, UNKNOWN_FN) };
        };
        let offset = m.file_offset(addr);
        if !m.exec {
            // Not code (the heap, the stack, a file's data): a bogus return
            // address, as a chain followed past code without frame pointers gives.
            let offset = m.file().map(|_| offset);
            return Frame {
                addr: Some(addr),
                module: m.path.clone(),
                offset,
                ..Frame::named(FrameKind::Unknown, UNKNOWN_FN)
            };
        }
        let Some(path) = m.file() else {
            // Anonymous executable memory: a JIT's; `[vdso]` and the like:
            // named, without symbols.
            return match m.path.as_deref().is_none_or(|p| p.starts_with("[anon")) {
                true => Frame { addr: Some(addr), ..Frame::named(FrameKind::Jit, JIT_FN) },
                false => {
                    Frame { addr: Some(addr), module: m.path.clone(), ..Frame::named(FrameKind::Native, UNKNOWN_FN) }
                }
            };
        };
        let module: Arc<str> = Arc::from(path);
        let open = self.open_path(pid, path);
        let at = if leaf { offset } else { offset.saturating_sub(1) };
        let sym = match self.syms.get(&(open.clone(), at)) {
            Some(s) => s.clone(),
            None => {
                let s = self.symbolize(&open, at);
                self.syms.insert((open, at), s.clone());
                s
            }
        };
        Frame {
            kind: FrameKind::Native,
            func: sym.func.unwrap_or_else(|| Arc::from(UNKNOWN_FN)),
            module: Some(module),
            addr: Some(addr),
            offset: Some(offset),
            file: sym.file,
            line: sym.line,
        }
    }

    /// Where process `pid`'s file `path` is read from here.
    fn open_path(&mut self, pid: u32, path: &str) -> Arc<str> {
        let root = self.roots.entry(pid).or_insert_with(|| {
            let theirs = std::fs::metadata(format!("/proc/{pid}/root"));
            let ours = std::fs::metadata("/");
            use std::os::unix::fs::MetadataExt as _;
            match (theirs, ours) {
                (Ok(t), Ok(o)) if (t.dev(), t.ino()) != (o.dev(), o.ino()) => Arc::from(format!("/proc/{pid}/root")),
                _ => Arc::from(""),
            }
        });
        if root.is_empty() { Arc::from(path) } else { Arc::from(format!("{root}{path}")) }
    }

    fn symbolize(&mut self, path: &str, offset: u64) -> Sym {
        let none = Sym { func: None, file: None, line: None };
        let mut elf = Elf::new(path);
        elf.debug_syms = !self.no_debug.contains(path);
        let mut got = self.symbolizer.symbolize_single(&Source::Elf(elf.clone()), Input::FileOffset(offset));
        if elf.debug_syms
            && let Err(e) = &got
            && e.kind() != blazesym::ErrorKind::NotFound
        {
            // Debug information it cannot read (compressed sections, a
            // debug link to such a file): the ELF symbols alone.
            elf.debug_syms = false;
            let plain = self.symbolizer.symbolize_single(&Source::Elf(elf), Input::FileOffset(offset));
            if plain.is_ok() {
                *self
                    .errors
                    .entry(format!("debug information unreadable ({:?}): ELF symbols used", e.kind()))
                    .or_default() += 1;
                self.no_debug.insert(Arc::from(path));
                got = plain;
            }
        }
        match got {
            Ok(Symbolized::Sym(s)) => Sym {
                func: Some(Arc::from(&*s.name)),
                file: s.code_info.as_ref().map(|c| Arc::from(c.to_path().to_string_lossy().as_ref())),
                line: s.code_info.as_ref().and_then(|c| c.line),
            },
            // A stripped module, or an offset in no symbol.
            Ok(Symbolized::Unknown(_)) => none,
            Err(e) => {
                let reason = match e.kind() {
                    blazesym::ErrorKind::NotFound => "module not found".to_string(),
                    k => format!("module unreadable ({k:?})"),
                };
                *self.errors.entry(reason).or_default() += 1;
                none
            }
        }
    }

    pub fn forget(&mut self, pid: u32) {
        self.maps.forget(pid);
        self.frames.retain(|(p, _, _), _| *p != pid);
        self.roots.remove(&pid);
    }
}
