//! Locating `libcuda.so.1` and listing its exported functions.
//!
//! * [`resolve_libcuda`] finds the `libcuda.so.1` that the traced command will
//!   load, following the dynamic loader's search order (LD_LIBRARY_PATH,
//!   `/etc/ld.so.cache`, default system directories) plus a few well-known
//!   container/WSL locations.
//! * [`exported_functions`] parses the library's `.dynsym` once and returns
//!   every exported function together with its *file offset* (what uprobes
//!   attach to) and its first instruction bytes.
//!
//! Parsing is done on byte slices ([`parse_ld_so_cache`],
//! [`parse_exported_functions`], [`check_elf_header`]); file I/O stays in the
//! thin wrappers around them. Malformed input yields an error naming the file
//! and what was wrong, never a panic.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Read};
use std::ops::Deref;
#[cfg(test)]
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, anyhow, bail};
use object::elf;
use object::read::elf::{FileHeader, ProgramHeader, Sym};
use object::{Endianness, SymbolIndex};

/// The soname the CUDA runtime `dlopen`s.
pub const LIBCUDA_SONAME: &str = "libcuda.so.1";

/// Default location of the loader's cache.
pub const LD_SO_CACHE: &str = "/etc/ld.so.cache";

/// How many leading bytes of each function [`exported_functions`] records.
pub const PROLOGUE_LEN: usize = 8;

#[cfg(target_arch = "x86_64")]
const MULTIARCH: &str = "x86_64-linux-gnu";
#[cfg(target_arch = "aarch64")]
const MULTIARCH: &str = "aarch64-linux-gnu";
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
const MULTIARCH: &str = "unknown-linux-gnu";

/// `e_machine` of the host, if known.
#[cfg(target_arch = "x86_64")]
const HOST_MACHINE: Option<u16> = Some(elf::EM_X86_64);
#[cfg(target_arch = "aarch64")]
const HOST_MACHINE: Option<u16> = Some(elf::EM_AARCH64);
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
const HOST_MACHINE: Option<u16> = None;

/// `e_ident` indices.
const EI_CLASS: usize = 4;
const EI_DATA: usize = 5;

#[cfg(target_pointer_width = "64")]
const HOST_ELF_CLASS: u8 = elf::ELFCLASS64;
#[cfg(not(target_pointer_width = "64"))]
const HOST_ELF_CLASS: u8 = elf::ELFCLASS32;

// ---------------------------------------------------------------------------
// ld.so.cache
// ---------------------------------------------------------------------------

/// `FLAG_ELF_LIBC6` from glibc's `ldconfig.h`.
pub const CACHE_FLAG_ELF_LIBC6: i32 = 0x0003;
/// `FLAG_X8664_LIB64`.
pub const CACHE_FLAG_X8664_LIB64: i32 = 0x0300;
/// `FLAG_AARCH64_LIB64`.
#[cfg_attr(target_arch = "x86_64", allow(dead_code, reason = "read on aarch64 only"))]
pub const CACHE_FLAG_AARCH64_LIB64: i32 = 0x0a00;
/// `FLAG_ELF` (libc5-era ELF entries).
const CACHE_FLAG_ELF: i32 = 0x0001;
const CACHE_FLAG_TYPE_MASK: i32 = 0x00ff;

/// The cache flags the host's loader accepts (`_DL_CACHE_DEFAULT_ID`).
#[cfg(target_arch = "x86_64")]
const HOST_CACHE_FLAGS: Option<i32> = Some(CACHE_FLAG_ELF_LIBC6 | CACHE_FLAG_X8664_LIB64);
#[cfg(target_arch = "aarch64")]
const HOST_CACHE_FLAGS: Option<i32> = Some(CACHE_FLAG_ELF_LIBC6 | CACHE_FLAG_AARCH64_LIB64);
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
const HOST_CACHE_FLAGS: Option<i32> = None;

const CACHE_MAGIC_OLD: &[u8] = b"ld.so-1.7.0";
const CACHE_MAGIC_NEW: &[u8] = b"glibc-ld.so.cache1.1";
/// `sizeof(struct cache_file)`: magic padded to 12, then `nlibs`.
const CACHE_OLD_HEADER_LEN: usize = 16;
/// `sizeof(struct file_entry)`: flags, key, value.
const CACHE_OLD_ENTRY_LEN: usize = 12;
/// `sizeof(struct cache_file_new)`.
const CACHE_NEW_HEADER_LEN: usize = 48;
/// `sizeof(struct file_entry_new)`: flags, key, value, osversion, hwcap.
const CACHE_NEW_ENTRY_LEN: usize = 24;
/// `__alignof__(struct cache_file_new)`.
const CACHE_NEW_ALIGN: usize = 8;

/// One library entry of `/etc/ld.so.cache`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheEntry {
    pub flags: i32,
    /// The soname, e.g. `libcuda.so.1`.
    pub key: String,
    /// The full path, e.g. `/usr/lib/x86_64-linux-gnu/libcuda.so.1`.
    pub value: String,
    pub hwcap: u64,
}

fn read_u32(data: &[u8], at: usize) -> Option<u32> {
    let bytes = data.get(at..at.checked_add(4)?)?;
    Some(u32::from_le_bytes(bytes.try_into().ok()?))
}

fn read_u64(data: &[u8], at: usize) -> Option<u64> {
    let bytes = data.get(at..at.checked_add(8)?)?;
    Some(u64::from_le_bytes(bytes.try_into().ok()?))
}

/// NUL-terminated string at `base + offset` of `data`.
fn cache_string(data: &[u8], base: usize, offset: u32, what: &str, idx: usize) -> Result<String, String> {
    let start = base
        .checked_add(offset as usize)
        .filter(|&s| s < data.len())
        .ok_or_else(|| format!("entry {idx}: {what} string offset {offset} is outside the file"))?;
    let rest = &data[start..];
    let len = rest
        .iter()
        .position(|&b| b == 0)
        .ok_or_else(|| format!("entry {idx}: {what} string at offset {offset} is not NUL-terminated"))?;
    String::from_utf8(rest[..len].to_vec()).map_err(|_| format!("entry {idx}: {what} string is not valid UTF-8"))
}

/// Parses the contents of an `ld.so.cache` file.
///
/// Accepts the new format (`glibc-ld.so.cache1.1`), the old format
/// (`ld.so-1.7.0`) followed by the new one, and the old format alone. In the
/// new format string offsets are relative to the start of the new header
/// (the start of the file when there is no old prefix); in the old format
/// they are relative to the end of the entry array.
pub fn parse_ld_so_cache(data: &[u8]) -> Result<Vec<CacheEntry>, String> {
    if data.starts_with(CACHE_MAGIC_NEW) {
        return parse_new_cache(data, 0);
    }
    if !data.starts_with(CACHE_MAGIC_OLD) {
        return Err("unrecognised format (bad magic; expected glibc-ld.so.cache1.1 or ld.so-1.7.0)".into());
    }
    let nlibs = read_u32(data, 12).ok_or("truncated old-format header")? as usize;
    let entries_end = nlibs
        .checked_mul(CACHE_OLD_ENTRY_LEN)
        .and_then(|n| n.checked_add(CACHE_OLD_HEADER_LEN))
        .filter(|&end| end <= data.len())
        .ok_or_else(|| format!("old-format header claims {nlibs} entries, more than the file holds"))?;
    let new_start = entries_end.div_ceil(CACHE_NEW_ALIGN) * CACHE_NEW_ALIGN;
    if data.get(new_start..).is_some_and(|rest| rest.starts_with(CACHE_MAGIC_NEW)) {
        return parse_new_cache(data, new_start);
    }
    // Old format only.
    let mut out = Vec::with_capacity(nlibs);
    for idx in 0..nlibs {
        let at = CACHE_OLD_HEADER_LEN + idx * CACHE_OLD_ENTRY_LEN;
        let (Some(flags), Some(key), Some(value)) =
            (read_u32(data, at), read_u32(data, at + 4), read_u32(data, at + 8))
        else {
            return Err(format!("entry {idx}: truncated"));
        };
        out.push(CacheEntry {
            flags: flags as i32,
            key: cache_string(data, entries_end, key, "key", idx)?,
            value: cache_string(data, entries_end, value, "value", idx)?,
            hwcap: 0,
        });
    }
    Ok(out)
}

fn parse_new_cache(data: &[u8], start: usize) -> Result<Vec<CacheEntry>, String> {
    let hdr = data.get(start..).filter(|h| h.len() >= CACHE_NEW_HEADER_LEN).ok_or("truncated header")?;
    let nlibs = read_u32(hdr, 20).ok_or("truncated header")? as usize;
    // Byte 28: 0 = unset, 1 = invalid, 2 = little endian, 3 = big endian.
    match hdr[28] {
        0 | 2 => {}
        3 => return Err("big-endian cache files are not supported".into()),
        other => return Err(format!("invalid endianness flag {other} in header")),
    }
    nlibs
        .checked_mul(CACHE_NEW_ENTRY_LEN)
        .and_then(|n| n.checked_add(CACHE_NEW_HEADER_LEN))
        .filter(|&end| end <= hdr.len())
        .ok_or_else(|| format!("header claims {nlibs} entries, more than the file holds"))?;
    let mut out = Vec::with_capacity(nlibs);
    for idx in 0..nlibs {
        let at = CACHE_NEW_HEADER_LEN + idx * CACHE_NEW_ENTRY_LEN;
        let (Some(flags), Some(key), Some(value), Some(hwcap)) =
            (read_u32(hdr, at), read_u32(hdr, at + 4), read_u32(hdr, at + 8), read_u64(hdr, at + 16))
        else {
            return Err(format!("entry {idx}: truncated"));
        };
        out.push(CacheEntry {
            flags: flags as i32,
            key: cache_string(hdr, 0, key, "key", idx)?,
            value: cache_string(hdr, 0, value, "value", idx)?,
            hwcap,
        });
    }
    Ok(out)
}

/// Paths the cache lists for `soname`, best first: entries for the host
/// architecture (x86-64: flags `0x0303`) in cache order, then any other
/// libc6 ELF entries (the candidate check later rejects wrong-class files).
pub fn cache_lookup(entries: &[CacheEntry], soname: &str) -> Vec<PathBuf> {
    let is_host = |e: &CacheEntry| HOST_CACHE_FLAGS == Some(e.flags);
    let is_elf = |e: &CacheEntry| matches!(e.flags & CACHE_FLAG_TYPE_MASK, CACHE_FLAG_ELF | CACHE_FLAG_ELF_LIBC6);
    let matching: Vec<&CacheEntry> = entries.iter().filter(|e| e.key == soname).collect();
    let mut out: Vec<PathBuf> = Vec::new();
    let host = matching.iter().filter(|e| is_host(e));
    let others = matching.iter().filter(|e| !is_host(e) && is_elf(e));
    for e in host.chain(others) {
        let p = PathBuf::from(&e.value);
        if !out.contains(&p) {
            out.push(p);
        }
    }
    out
}

// ---------------------------------------------------------------------------
// ELF header check
// ---------------------------------------------------------------------------

/// Checks that `hdr` (the first bytes of a file, at least 20) is an ELF
/// shared object loadable by this host (class, byte order, machine).
pub fn check_elf_header(hdr: &[u8]) -> Result<(), String> {
    if hdr.len() < 4 || hdr[..4] != elf::ELFMAG {
        return Err("not an ELF file (bad magic)".into());
    }
    if hdr.len() < 20 {
        return Err("truncated ELF header".into());
    }
    let class = hdr[EI_CLASS];
    if class != HOST_ELF_CLASS {
        let bits = |c| match c {
            elf::ELFCLASS32 => "32-bit",
            elf::ELFCLASS64 => "64-bit",
            _ => "unknown-class",
        };
        return Err(format!("{} ELF, expected {}", bits(class), bits(HOST_ELF_CLASS)));
    }
    if hdr[EI_DATA] != elf::ELFDATA2LSB {
        return Err("not a little-endian ELF".into());
    }
    let e_type = u16::from_le_bytes([hdr[16], hdr[17]]);
    if e_type != elf::ET_DYN {
        return Err(format!("ELF type {e_type} is not a shared object (ET_DYN)"));
    }
    let machine = u16::from_le_bytes([hdr[18], hdr[19]]);
    if let Some(host) = HOST_MACHINE
        && machine != host
    {
        return Err(format!("ELF machine {machine} does not match the host ({host})"));
    }
    Ok(())
}

/// Reads up to `n` bytes from the start of `path`.
fn read_prefix(path: &Path, n: usize) -> io::Result<Vec<u8>> {
    let mut buf = Vec::with_capacity(n);
    File::open(path)?.take(n as u64).read_to_end(&mut buf)?;
    Ok(buf)
}

/// Whether `path` is a regular file (after symlinks) that is a loadable ELF
/// shared object. `Ok(false)` when it does not exist.
fn check_candidate(path: &Path) -> Result<bool, String> {
    match std::fs::metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e.to_string()),
        Ok(m) if !m.is_file() => return Err("not a regular file".into()),
        Ok(_) => {}
    }
    let hdr = read_prefix(path, 64).map_err(|e| format!("cannot read: {e}"))?;
    check_elf_header(&hdr)?;
    Ok(true)
}

// ---------------------------------------------------------------------------
// Resolution
// ---------------------------------------------------------------------------

/// Where [`resolve_libcuda_with`] looks. [`SearchConfig::system`] gives the
/// real loader locations; tests inject temporary ones.
#[derive(Debug, Clone)]
pub struct SearchConfig {
    /// The traced command's LD_LIBRARY_PATH (`:`/`;`-separated).
    pub ld_library_path: Option<String>,
    /// Path of the loader cache; a missing file is skipped.
    pub cache_path: PathBuf,
    /// Directories searched after the cache, in order.
    pub default_dirs: Vec<PathBuf>,
}

impl SearchConfig {
    /// The loader's real search locations for a command whose
    /// LD_LIBRARY_PATH is `ld_library_path`.
    pub fn system(ld_library_path: Option<&str>) -> Self {
        let dirs = [
            format!("/lib/{MULTIARCH}"),
            format!("/usr/lib/{MULTIARCH}"),
            "/lib64".into(),
            "/usr/lib64".into(),
            "/lib".into(),
            "/usr/lib".into(),
            "/usr/local/nvidia/lib64".into(),
            "/usr/lib/wsl/lib".into(),
        ];
        SearchConfig {
            ld_library_path: ld_library_path.map(str::to_owned),
            cache_path: PathBuf::from(LD_SO_CACHE),
            default_dirs: dirs.into_iter().map(PathBuf::from).collect(),
        }
    }
}

/// Directories of an LD_LIBRARY_PATH value, in order. Empty elements mean
/// the current directory (as for the loader); elements with dynamic string
/// tokens (`$ORIGIN`, `$LIB`, ...) are skipped since they depend on the
/// executable.
pub fn split_ld_library_path(value: &str) -> Vec<PathBuf> {
    value
        .split([':', ';'])
        .filter_map(|d| {
            if d.contains('$') {
                log::debug!("LD_LIBRARY_PATH element {d:?} uses a dynamic string token; skipped");
                None
            } else if d.is_empty() {
                Some(PathBuf::from("."))
            } else {
                Some(PathBuf::from(d))
            }
        })
        .collect()
}

/// Finds the `libcuda.so.1` the traced command will load. `explicit` (from
/// `--libcuda`) wins; otherwise LD_LIBRARY_PATH (the command's value), then
/// `/etc/ld.so.cache`, then the default and well-known driver directories.
/// Returns the canonical path.
pub fn resolve_libcuda(explicit: Option<&Path>, env_ld_library_path: Option<&str>) -> anyhow::Result<PathBuf> {
    resolve_libcuda_with(explicit, &SearchConfig::system(env_ld_library_path))
}

/// [`resolve_libcuda`] with injectable search locations.
pub fn resolve_libcuda_with(explicit: Option<&Path>, cfg: &SearchConfig) -> anyhow::Result<PathBuf> {
    if let Some(p) = explicit {
        return match check_candidate(p) {
            Ok(true) => {
                std::fs::canonicalize(p).with_context(|| format!("--libcuda {}: cannot canonicalize", p.display()))
            }
            Ok(false) => bail!("--libcuda {}: no such file", p.display()),
            Err(why) => bail!("--libcuda {}: not a usable shared library: {why}", p.display()),
        };
    }

    let mut rejected: Vec<String> = Vec::new();
    let mut try_path = |p: &Path, source: &str| -> Option<PathBuf> {
        match check_candidate(p) {
            Ok(true) => match std::fs::canonicalize(p) {
                Ok(c) => {
                    log::debug!("{LIBCUDA_SONAME}: using {} (from {source})", c.display());
                    Some(c)
                }
                Err(e) => {
                    rejected.push(format!("{}: {e}", p.display()));
                    None
                }
            },
            Ok(false) => None,
            Err(why) => {
                log::debug!("{LIBCUDA_SONAME}: skipping {} (from {source}): {why}", p.display());
                rejected.push(format!("{}: {why}", p.display()));
                None
            }
        }
    };

    if let Some(llp) = cfg.ld_library_path.as_deref() {
        for dir in split_ld_library_path(llp) {
            if let Some(found) = try_path(&dir.join(LIBCUDA_SONAME), "LD_LIBRARY_PATH") {
                return Ok(found);
            }
        }
    }

    match std::fs::read(&cfg.cache_path) {
        Ok(data) => match parse_ld_so_cache(&data) {
            Ok(entries) => {
                for p in cache_lookup(&entries, LIBCUDA_SONAME) {
                    if let Some(found) = try_path(&p, "ld.so.cache") {
                        return Ok(found);
                    }
                }
            }
            Err(why) => log::warn!("{}: ignoring malformed loader cache: {why}", cfg.cache_path.display()),
        },
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            log::debug!("{}: not present", cfg.cache_path.display())
        }
        Err(e) => log::warn!("{}: cannot read loader cache: {e}", cfg.cache_path.display()),
    }

    for dir in &cfg.default_dirs {
        if let Some(found) = try_path(&dir.join(LIBCUDA_SONAME), "default directories") {
            return Ok(found);
        }
    }

    let mut searched = vec![match cfg.ld_library_path.as_deref() {
        Some(v) if !v.is_empty() => format!("LD_LIBRARY_PATH={v}"),
        _ => "LD_LIBRARY_PATH (unset)".to_owned(),
    }];
    searched.push(cfg.cache_path.display().to_string());
    searched.extend(cfg.default_dirs.iter().map(|d| d.display().to_string()));
    let rejected = if rejected.is_empty() { String::new() } else { format!("; rejected {}", rejected.join(", ")) };
    Err(anyhow!(
        "no {LIBCUDA_SONAME} found (searched {}){rejected}: is the NVIDIA driver installed? pass --libcuda PATH",
        searched.join(", ")
    ))
}

// ---------------------------------------------------------------------------
// Exported functions
// ---------------------------------------------------------------------------

/// Exported functions of a shared library.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExportedSymbols {
    /// Function name → file offset of its first instruction (uprobe offset).
    pub symbols: HashMap<String, u64>,
    /// Function name → its first bytes (up to [`PROLOGUE_LEN`], fewer only
    /// when the loadable segment ends sooner).
    pub prologues: HashMap<String, Vec<u8>>,
}

impl ExportedSymbols {
    pub fn len(&self) -> usize {
        self.symbols.len()
    }

    #[allow(dead_code, reason = "clippy::len_without_is_empty: a len() wants its is_empty()")]
    pub fn is_empty(&self) -> bool {
        self.symbols.is_empty()
    }

    /// File offset of `name`.
    pub fn offset(&self, name: &str) -> Option<u64> {
        self.symbols.get(name).copied()
    }

    /// First bytes of `name`.
    pub fn prologue(&self, name: &str) -> Option<&[u8]> {
        self.prologues.get(name).map(Vec::as_slice)
    }

    /// How many functions start with `push %rbp` (optionally after
    /// `endbr64`), i.e. are cheap to uprobe.
    pub fn push_rbp_count(&self) -> usize {
        self.prologues.values().filter(|b| starts_with_push_rbp(b)).count()
    }
}

/// `push %rbp`, or `endbr64; push %rbp`: first instructions the kernel can
/// emulate, so uprobes on them avoid single-stepping an out-of-line copy.
pub fn starts_with_push_rbp(bytes: &[u8]) -> bool {
    const PUSH_RBP: u8 = 0x55;
    const ENDBR64: [u8; 4] = [0xf3, 0x0f, 0x1e, 0xfa];
    bytes.first() == Some(&PUSH_RBP) || (bytes.starts_with(&ENDBR64) && bytes.get(4) == Some(&PUSH_RBP))
}

/// Reads up to `n` bytes of `path` at file `offset` (fewer at end of file).
#[cfg(test)]
pub fn first_bytes(path: &Path, offset: u64, n: usize) -> anyhow::Result<Vec<u8>> {
    let file = File::open(path).with_context(|| format!("{}: cannot open", path.display()))?;
    let mut buf = vec![0u8; n];
    let mut filled = 0;
    while filled < n {
        match file.read_at(&mut buf[filled..], offset + filled as u64) {
            Ok(0) => break,
            Ok(k) => filled += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => {
                return Err(anyhow!("{}: cannot read at offset {offset:#x}: {e}", path.display()));
            }
        }
    }
    buf.truncate(filled);
    Ok(buf)
}

/// Parses the ELF at `path` (memory-mapped, not copied) and returns every
/// defined, global or weak, default-visibility FUNC symbol of `.dynsym`.
pub fn exported_functions(path: &Path) -> anyhow::Result<ExportedSymbols> {
    let data = FileBytes::open(path).with_context(|| format!("{}: cannot read", path.display()))?;
    parse_exported_functions(&data).map_err(|why| anyhow!("{}: malformed ELF: {why}", path.display()))
}

/// [`exported_functions`] on the file's bytes.
pub fn parse_exported_functions(data: &[u8]) -> Result<ExportedSymbols, String> {
    if data.len() < 16 || data[..4] != elf::ELFMAG {
        return Err("not an ELF file (bad magic)".into());
    }
    match data[EI_CLASS] {
        elf::ELFCLASS64 => parse_exports::<elf::FileHeader64<Endianness>>(data),
        elf::ELFCLASS32 => parse_exports::<elf::FileHeader32<Endianness>>(data),
        c => Err(format!("unknown ELF class {c}")),
    }
}

fn parse_exports<Elf: FileHeader<Endian = Endianness>>(data: &[u8]) -> Result<ExportedSymbols, String> {
    let header = Elf::parse(data).map_err(|e| format!("bad file header: {e}"))?;
    let endian = header.endian().map_err(|e| format!("bad file header: {e}"))?;
    let e_type = header.e_type(endian);
    if e_type != elf::ET_DYN {
        return Err(format!("ELF type {e_type} is not a shared object (ET_DYN)"));
    }

    // (vaddr, filesz, offset) of every PT_LOAD segment.
    let loads: Vec<(u64, u64, u64)> = header
        .program_headers(endian, data)
        .map_err(|e| format!("bad program headers: {e}"))?
        .iter()
        .filter(|p| p.p_type(endian) == elf::PT_LOAD)
        .map(|p| (p.p_vaddr(endian).into(), p.p_filesz(endian).into(), p.p_offset(endian).into()))
        .collect();
    // File offset of `vaddr`, and the end of the file-backed part of its
    // segment. A segment that claims bytes past the end of the file is cut
    // there: a symbol outside the file cannot be probed.
    let file_len = data.len() as u64;
    let to_offset = |vaddr: u64| -> Option<(u64, u64)> {
        loads.iter().find_map(|&(v, filesz, off)| {
            let delta = vaddr.checked_sub(v).filter(|&d| d < filesz)?;
            let at = off.checked_add(delta).filter(|&o| o < file_len)?;
            Some((at, off.checked_add(filesz)?.min(file_len)))
        })
    };

    let sections = header.sections(endian, data).map_err(|e| format!("bad section headers: {e}"))?;
    let dynsym = sections.symbols(endian, data, elf::SHT_DYNSYM).map_err(|e| format!("bad .dynsym: {e}"))?;
    if dynsym.is_empty() {
        return Err("no .dynsym section (section headers stripped?)".into());
    }
    let versions = sections.versions(endian, data).map_err(|e| format!("bad symbol version tables: {e}"))?;

    // name -> (offset, segment end, is non-default version)
    let mut found: HashMap<&str, (u64, u64, bool)> = HashMap::new();
    let mut unmapped = 0usize;
    for (i, sym) in dynsym.symbols().iter().enumerate() {
        if sym.st_type() != elf::STT_FUNC
            || !matches!(sym.st_bind(), elf::STB_GLOBAL | elf::STB_WEAK)
            || sym.st_shndx(endian) == elf::SHN_UNDEF
            || matches!(sym.st_visibility(), elf::STV_HIDDEN | elf::STV_INTERNAL)
        {
            continue;
        }
        let hidden_version = match &versions {
            Some(v) => {
                let vi = v.version_index(endian, SymbolIndex(i));
                if vi.is_local() {
                    continue;
                }
                vi.is_hidden()
            }
            None => false,
        };
        let name = dynsym.symbol_name(endian, sym).map_err(|e| format!("bad name of .dynsym symbol {i}: {e}"))?;
        let Ok(name) = std::str::from_utf8(name) else {
            log::debug!(".dynsym symbol {i}: name is not UTF-8; skipped");
            continue;
        };
        if name.is_empty() {
            continue;
        }
        let vaddr: u64 = sym.st_value(endian).into();
        let Some((offset, seg_end)) = to_offset(vaddr) else {
            unmapped += 1;
            continue;
        };
        // Keep the default version (name@@V) over non-default ones (name@V);
        // otherwise keep the first seen.
        let replace = match found.get(name) {
            None => true,
            Some(&(_, _, prev_hidden)) => prev_hidden && !hidden_version,
        };
        if replace {
            found.insert(name, (offset, seg_end, hidden_version));
        }
    }
    if unmapped > 0 {
        log::debug!("{unmapped} exported functions lie outside every PT_LOAD segment; skipped");
    }

    let mut out = ExportedSymbols {
        symbols: HashMap::with_capacity(found.len()),
        prologues: HashMap::with_capacity(found.len()),
    };
    for (name, (offset, seg_end, _)) in found {
        let start = usize::try_from(offset).unwrap_or(usize::MAX);
        let end = usize::try_from(seg_end.min(offset.saturating_add(PROLOGUE_LEN as u64))).unwrap_or(usize::MAX);
        let bytes = data.get(start..end.min(data.len())).unwrap_or(&[]);
        out.symbols.insert(name.to_owned(), offset);
        out.prologues.insert(name.to_owned(), bytes.to_vec());
    }
    Ok(out)
}

/// A file's contents: a read-only private mapping, or (if mapping fails) a
/// heap copy.
///
/// Safety note: the mapping assumes the file is not truncated while in use
/// (driver updates replace files by rename, which leaves the mapping valid).
enum FileBytes {
    Mapped { ptr: *mut libc::c_void, len: usize },
    Owned(Vec<u8>),
}

impl FileBytes {
    fn open(path: &Path) -> io::Result<Self> {
        use std::os::fd::AsRawFd;
        let file = File::open(path)?;
        let len = usize::try_from(file.metadata()?.len())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "file too large"))?;
        if len == 0 {
            return Ok(FileBytes::Owned(Vec::new()));
        }
        // SAFETY: a fresh read-only private mapping of an open file; the
        // pointer is only used for `len` bytes and unmapped in Drop.
        let ptr =
            unsafe { libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ, libc::MAP_PRIVATE, file.as_raw_fd(), 0) };
        if ptr == libc::MAP_FAILED {
            let err = io::Error::last_os_error();
            log::debug!("{}: mmap failed ({err}); reading instead", path.display());
            return std::fs::read(path).map(FileBytes::Owned);
        }
        Ok(FileBytes::Mapped { ptr, len })
    }
}

impl Deref for FileBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            // SAFETY: `ptr` maps `len` readable bytes for the life of self.
            FileBytes::Mapped { ptr, len } => unsafe { std::slice::from_raw_parts(*ptr as *const u8, *len) },
            FileBytes::Owned(v) => v,
        }
    }
}

impl Drop for FileBytes {
    fn drop(&mut self) {
        if let FileBytes::Mapped { ptr, len } = *self {
            // SAFETY: unmapping exactly the mapping created in `open`.
            unsafe {
                libc::munmap(ptr, len);
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A temporary directory removed on drop.
    struct TempDir(PathBuf);

    impl TempDir {
        fn new(tag: &str) -> Self {
            static N: AtomicUsize = AtomicUsize::new(0);
            let n = N.fetch_add(1, Ordering::Relaxed);
            let p = std::env::temp_dir().join(format!("tracer-libcuda-{tag}-{}-{n}", std::process::id()));
            let _ = std::fs::remove_dir_all(&p);
            std::fs::create_dir_all(&p).expect("create temp dir");
            TempDir(p)
        }
        fn path(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    const FAKE_LIBCUDA_C: &str = r#"
int cuInit(unsigned flags) { return 0; }
int cuDriverGetVersion(int *v) { *v = 12040; return 0; }
__attribute__((weak)) int cuWeakThing(void) { return 3; }
static int static_helper(int x) { return x + 1; }
__attribute__((visibility("hidden"))) int hidden_helper(int x) { return static_helper(x) * 2; }
int cuCtxGetCurrent(void **ctx) { *ctx = 0; return hidden_helper(1) - 4; }
int cuExportedData = 5;

/* Versioned: cuVersioned@VERS_1 (old, returns 0x11) and cuVersioned@@VERS_2
   (default, returns 0x22). */
int cu_versioned_old(void) { return 0x11; }
int cu_versioned_new(void) { return 0x22; }
__asm__(".symver cu_versioned_old,cuVersioned@VERS_1");
__asm__(".symver cu_versioned_new,cuVersioned@@VERS_2");
"#;

    const VERSION_SCRIPT: &str = "VERS_1 { global: cuInit; cuDriverGetVersion; cuWeakThing; cuCtxGetCurrent; \
cuExportedData; cuVersioned; local: *; };\nVERS_2 { global: cuVersioned; } VERS_1;\n";

    /// Compiles the fake libcuda into `dir/name` and returns its path.
    fn build_fake_libcuda(dir: &Path, name: &str) -> PathBuf {
        let src = dir.join("fake_cuda.c");
        let map = dir.join("fake_cuda.map");
        std::fs::write(&src, FAKE_LIBCUDA_C).unwrap();
        std::fs::write(&map, VERSION_SCRIPT).unwrap();
        let out = dir.join(name);
        let status = Command::new("cc")
            .args(["-shared", "-fPIC", "-O0", "-fno-omit-frame-pointer", "-Wl,-soname,libcuda.so.1"])
            .arg(format!("-Wl,--version-script={}", map.display()))
            .arg("-o")
            .arg(&out)
            .arg(&src)
            .status()
            .expect("running cc (gcc must be installed for these tests)");
        assert!(status.success(), "cc failed");
        out
    }

    fn put_lib(dir: &Path, lib: &Path) -> PathBuf {
        std::fs::create_dir_all(dir).unwrap();
        let dst = dir.join(LIBCUDA_SONAME);
        std::fs::copy(lib, &dst).unwrap();
        dst
    }

    /// Builds a new-format ld.so.cache; with `old_prefix`, wrapped in the
    /// combined old+new format.
    fn build_cache(entries: &[(i32, &str, &str)], old_prefix: bool) -> Vec<u8> {
        let mut strings = Vec::new();
        let mut offs = Vec::new();
        let strings_base = CACHE_NEW_HEADER_LEN + entries.len() * CACHE_NEW_ENTRY_LEN;
        for (_, k, v) in entries {
            let ko = strings_base + strings.len();
            strings.extend_from_slice(k.as_bytes());
            strings.push(0);
            let vo = strings_base + strings.len();
            strings.extend_from_slice(v.as_bytes());
            strings.push(0);
            offs.push((ko as u32, vo as u32));
        }
        let mut new = Vec::new();
        new.extend_from_slice(CACHE_MAGIC_NEW);
        new.extend_from_slice(&(entries.len() as u32).to_le_bytes());
        new.extend_from_slice(&(strings.len() as u32).to_le_bytes());
        new.push(2); // little endian
        new.extend_from_slice(&[0; 3]);
        new.extend_from_slice(&0u32.to_le_bytes()); // extension_offset
        new.extend_from_slice(&[0; 12]);
        assert_eq!(new.len(), CACHE_NEW_HEADER_LEN);
        for ((flags, _, _), (ko, vo)) in entries.iter().zip(&offs) {
            new.extend_from_slice(&flags.to_le_bytes());
            new.extend_from_slice(&ko.to_le_bytes());
            new.extend_from_slice(&vo.to_le_bytes());
            new.extend_from_slice(&0u32.to_le_bytes());
            new.extend_from_slice(&0u64.to_le_bytes());
        }
        new.extend_from_slice(&strings);
        if !old_prefix {
            return new;
        }
        // Old header with one (bogus) entry whose strings we never read.
        let mut old = Vec::new();
        old.extend_from_slice(CACHE_MAGIC_OLD);
        old.push(0);
        old.extend_from_slice(&1u32.to_le_bytes());
        old.extend_from_slice(&[0; CACHE_OLD_ENTRY_LEN]);
        while old.len() % CACHE_NEW_ALIGN != 0 {
            old.push(0);
        }
        old.extend_from_slice(&new);
        old
    }

    fn cfg(llp: Option<&str>, cache: &Path, dirs: &[&Path]) -> SearchConfig {
        SearchConfig {
            ld_library_path: llp.map(str::to_owned),
            cache_path: cache.to_owned(),
            default_dirs: dirs.iter().map(|d| d.to_path_buf()).collect(),
        }
    }

    fn canon(p: &Path) -> PathBuf {
        std::fs::canonicalize(p).unwrap()
    }

    const X86: i32 = CACHE_FLAG_ELF_LIBC6 | CACHE_FLAG_X8664_LIB64;

    #[test]
    fn exports_have_correct_offsets() {
        let tmp = TempDir::new("exports");
        let lib = build_fake_libcuda(tmp.path(), "libfake.so");
        let ex = exported_functions(&lib).unwrap();
        let file = std::fs::read(&lib).unwrap();

        for name in ["cuInit", "cuDriverGetVersion", "cuWeakThing", "cuCtxGetCurrent", "cuVersioned"] {
            let off = ex.offset(name).unwrap_or_else(|| panic!("{name} missing from {:?}", ex.symbols));
            let at = &file[off as usize..off as usize + 8];
            assert!(starts_with_push_rbp(at), "{name} at {off:#x} starts with {at:02x?}");
            assert_eq!(ex.prologue(name).unwrap(), at, "{name}: recorded prologue");
            assert_eq!(first_bytes(&lib, off, 8).unwrap(), at);
        }
        for absent in ["static_helper", "hidden_helper", "cu_versioned_old", "cu_versioned_new", "cuExportedData"] {
            assert!(ex.offset(absent).is_none(), "{absent} must not be listed");
        }
        // Undefined imports are not listed either.
        assert!(ex.symbols.keys().all(|k| k.starts_with("cu")), "{:?}", ex.symbols.keys());
        assert_eq!(ex.len(), 5);
        assert_eq!(ex.push_rbp_count(), 5);
    }

    #[test]
    fn versioned_duplicate_keeps_default_version() {
        let tmp = TempDir::new("versions");
        let lib = build_fake_libcuda(tmp.path(), "libfake.so");
        let ex = exported_functions(&lib).unwrap();
        let off = ex.offset("cuVersioned").unwrap() as usize;
        let file = std::fs::read(&lib).unwrap();
        let body = &file[off..off + 24];
        // `mov $0x22, %eax` is b8 22 00 00 00: the @@VERS_2 default.
        assert!(body.windows(5).any(|w| w == [0xb8, 0x22, 0, 0, 0]), "body {body:02x?}");
        assert!(!body.windows(5).any(|w| w == [0xb8, 0x11, 0, 0, 0]), "body {body:02x?}");
    }

    #[test]
    fn push_rbp_detection() {
        assert!(starts_with_push_rbp(&[0x55, 0x48, 0x89, 0xe5]));
        assert!(starts_with_push_rbp(&[0xf3, 0x0f, 0x1e, 0xfa, 0x55]));
        assert!(!starts_with_push_rbp(&[0xf3, 0x0f, 0x1e, 0xfa]));
        assert!(!starts_with_push_rbp(&[0xf3, 0x0f, 0x1e, 0xfa, 0x41]));
        assert!(!starts_with_push_rbp(&[0x41, 0x57]));
        assert!(!starts_with_push_rbp(&[]));
    }

    #[test]
    fn malformed_elf_is_an_error_not_a_panic() {
        let tmp = TempDir::new("badelf");
        let lib = build_fake_libcuda(tmp.path(), "libfake.so");
        let file = std::fs::read(&lib).unwrap();
        // Every truncation, and some corruptions, must not panic.
        for len in (0..file.len()).step_by(7) {
            let _ = parse_exported_functions(&file[..len]);
        }
        for i in (0..file.len().min(4096)).step_by(3) {
            let mut bad = file.clone();
            bad[i] ^= 0xff;
            let _ = parse_exported_functions(&bad);
        }
        let text = tmp.path().join("notelf.so");
        std::fs::write(&text, "hello").unwrap();
        let err = exported_functions(&text).unwrap_err().to_string();
        assert!(err.contains("notelf.so") && err.contains("not an ELF"), "{err}");
        let empty = tmp.path().join("empty.so");
        std::fs::write(&empty, "").unwrap();
        let err = exported_functions(&empty).unwrap_err().to_string();
        assert!(err.contains("empty.so"), "{err}");
        let err = exported_functions(&tmp.path().join("missing.so")).unwrap_err().to_string();
        assert!(err.contains("missing.so"), "{err}");
    }

    #[test]
    fn parse_cache_formats() {
        let entries = [(0x0003, "libcuda.so.1", "/lib32/libcuda.so.1"), (X86, "libcuda.so.1", "/lib64/libcuda.so.1")];
        for old_prefix in [false, true] {
            let parsed = parse_ld_so_cache(&build_cache(&entries, old_prefix)).unwrap();
            assert_eq!(parsed.len(), 2);
            assert_eq!(parsed[1].key, "libcuda.so.1");
            assert_eq!(parsed[1].value, "/lib64/libcuda.so.1");
            assert_eq!(parsed[1].flags, 0x0303);
            assert_eq!(parsed[0].flags, 0x0003);
        }
    }

    #[test]
    #[cfg(target_arch = "x86_64")]
    fn cache_lookup_prefers_x86_64() {
        let entries = [
            CacheEntry { flags: 0x0003, key: "libcuda.so.1".into(), value: "/a".into(), hwcap: 0 },
            CacheEntry { flags: 0x0303, key: "libcudart.so.1".into(), value: "/x".into(), hwcap: 0 },
            CacheEntry { flags: 0x0303, key: "libcuda.so.1".into(), value: "/b".into(), hwcap: 0 },
        ];
        assert_eq!(cache_lookup(&entries, "libcuda.so.1"), [PathBuf::from("/b"), PathBuf::from("/a")]);
    }

    #[test]
    fn malformed_cache_is_an_error_not_a_panic() {
        let good = build_cache(&[(X86, "libcuda.so.1", "/x/libcuda.so.1")], true);
        for len in 0..good.len() {
            let _ = parse_ld_so_cache(&good[..len]);
        }
        for i in 0..good.len() {
            for v in [0x00, 0x7f, 0xff] {
                let mut bad = good.clone();
                bad[i] = v;
                let _ = parse_ld_so_cache(&bad);
            }
        }
        let new = build_cache(&[(X86, "libcuda.so.1", "/x/libcuda.so.1")], false);
        assert!(parse_ld_so_cache(&new[..40]).unwrap_err().contains("truncated"));
        let mut huge = new.clone();
        huge[20..24].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(parse_ld_so_cache(&huge).unwrap_err().contains("entries"));
        let mut bad_off = new.clone();
        bad_off[CACHE_NEW_HEADER_LEN + 8..CACHE_NEW_HEADER_LEN + 12].copy_from_slice(&10_000u32.to_le_bytes());
        assert!(parse_ld_so_cache(&bad_off).unwrap_err().contains("outside"));
        assert!(parse_ld_so_cache(b"garbage garbage garbage").unwrap_err().contains("magic"));
    }

    #[test]
    fn resolve_uses_cache_and_prefers_x86_64_entry() {
        let tmp = TempDir::new("cache");
        let lib = build_fake_libcuda(tmp.path(), "libfake.so");
        let a = put_lib(&tmp.path().join("i386"), &lib);
        let b = put_lib(&tmp.path().join("x86_64"), &lib);
        let cache = tmp.path().join("ld.so.cache");
        let (a_s, b_s) = (a.to_str().unwrap(), b.to_str().unwrap());
        let default_dir = tmp.path().join("default");
        put_lib(&default_dir, &lib);
        for old_prefix in [false, true] {
            let flags_a = if cfg!(target_arch = "x86_64") { 0x0003 } else { 0x0003 | 0x0500 };
            std::fs::write(
                &cache,
                build_cache(
                    &[(X86, "libnvidia-ml.so.1", "/nope"), (flags_a, LIBCUDA_SONAME, a_s), (X86, LIBCUDA_SONAME, b_s)],
                    old_prefix,
                ),
            )
            .unwrap();
            let got = resolve_libcuda_with(None, &cfg(None, &cache, &[&default_dir])).unwrap();
            if cfg!(target_arch = "x86_64") {
                assert_eq!(got, canon(&b));
            }
        }
        // A cache entry pointing at a missing file falls through to the
        // default directories.
        std::fs::write(&cache, build_cache(&[(X86, LIBCUDA_SONAME, "/does/not/exist/libcuda.so.1")], false)).unwrap();
        let got = resolve_libcuda_with(None, &cfg(None, &cache, &[&default_dir])).unwrap();
        assert_eq!(got, canon(&default_dir.join(LIBCUDA_SONAME)));
        // So does a malformed cache.
        std::fs::write(&cache, b"ld.so-1.7.0\0\xff\xff\xff\xff").unwrap();
        let got = resolve_libcuda_with(None, &cfg(None, &cache, &[&default_dir])).unwrap();
        assert_eq!(got, canon(&default_dir.join(LIBCUDA_SONAME)));
    }

    #[test]
    fn ld_library_path_takes_precedence() {
        let tmp = TempDir::new("llp");
        let lib = build_fake_libcuda(tmp.path(), "libfake.so");
        let from_cache = put_lib(&tmp.path().join("cachedir"), &lib);
        let llp_dir = tmp.path().join("llp");
        let from_llp = put_lib(&llp_dir, &lib);
        let default_dir = tmp.path().join("default");
        put_lib(&default_dir, &lib);
        let cache = tmp.path().join("ld.so.cache");
        std::fs::write(&cache, build_cache(&[(X86, LIBCUDA_SONAME, from_cache.to_str().unwrap())], false)).unwrap();

        // Earlier LD_LIBRARY_PATH entries without the library (or with a
        // non-ELF file of that name) are skipped.
        let junk_dir = tmp.path().join("junk");
        std::fs::create_dir_all(&junk_dir).unwrap();
        std::fs::write(junk_dir.join(LIBCUDA_SONAME), "not a library").unwrap();
        let llp = format!("/nonexistent:{}:$ORIGIN/lib;{}", junk_dir.display(), llp_dir.display());
        let got = resolve_libcuda_with(None, &cfg(Some(&llp), &cache, &[&default_dir])).unwrap();
        assert_eq!(got, canon(&from_llp));

        // Without LD_LIBRARY_PATH the cache wins over default directories.
        let got = resolve_libcuda_with(None, &cfg(None, &cache, &[&default_dir])).unwrap();
        assert_eq!(got, canon(&from_cache));
    }

    #[test]
    fn result_is_canonical() {
        let tmp = TempDir::new("canon");
        let lib = build_fake_libcuda(tmp.path(), "libcuda.so.535.1");
        let dir = tmp.path().join("d");
        std::fs::create_dir_all(&dir).unwrap();
        std::os::unix::fs::symlink(&lib, dir.join(LIBCUDA_SONAME)).unwrap();
        let got = resolve_libcuda_with(None, &cfg(None, &tmp.path().join("nocache"), &[&dir])).unwrap();
        assert_eq!(got, canon(&lib));
        assert!(got.ends_with("libcuda.so.535.1"));
    }

    #[test]
    fn explicit_path() {
        let tmp = TempDir::new("explicit");
        let lib = build_fake_libcuda(tmp.path(), "libfake.so");
        let c = cfg(None, &tmp.path().join("nocache"), &[]);
        assert_eq!(resolve_libcuda_with(Some(&lib), &c).unwrap(), canon(&lib));

        let missing = tmp.path().join("missing/libcuda.so.1");
        let err = resolve_libcuda_with(Some(&missing), &c).unwrap_err().to_string();
        assert!(
            err.contains("--libcuda") && err.contains("missing/libcuda.so.1") && err.contains("no such file"),
            "{err}"
        );

        let text = tmp.path().join("text.so");
        std::fs::write(&text, "hello").unwrap();
        let err = resolve_libcuda_with(Some(&text), &c).unwrap_err().to_string();
        assert!(err.contains("text.so") && err.contains("not an ELF"), "{err}");

        let err = resolve_libcuda_with(Some(tmp.path()), &c).unwrap_err().to_string();
        assert!(err.contains("not a regular file"), "{err}");
    }

    #[test]
    fn not_found_message() {
        let tmp = TempDir::new("notfound");
        let empty = tmp.path().join("empty");
        std::fs::create_dir_all(&empty).unwrap();
        let c = cfg(Some("/nonexistent"), &tmp.path().join("nocache"), &[&empty]);
        let err = resolve_libcuda_with(None, &c).unwrap_err().to_string();
        assert!(err.contains("--libcuda"), "{err}");
        assert!(err.contains("no libcuda.so.1 found"), "{err}");
        assert!(err.contains("LD_LIBRARY_PATH=/nonexistent"), "{err}");
        assert!(err.contains(&*empty.to_string_lossy()), "{err}");
        assert!(!err.contains('\n'), "{err}");
    }

    #[test]
    fn system_config_lists_driver_locations() {
        let c = SearchConfig::system(Some("/x"));
        assert_eq!(c.cache_path, Path::new("/etc/ld.so.cache"));
        assert_eq!(c.default_dirs.last().unwrap(), Path::new("/usr/lib/wsl/lib"));
        assert!(c.default_dirs.contains(&PathBuf::from("/usr/local/nvidia/lib64")));
        // Parsing the real cache, when present, must succeed.
        if let Ok(data) = std::fs::read(LD_SO_CACHE) {
            let entries = parse_ld_so_cache(&data).unwrap();
            assert!(entries.iter().any(|e| e.key.starts_with("libc.so")), "{} entries", entries.len());
        }
    }

    #[test]
    fn split_llp() {
        assert_eq!(
            split_ld_library_path("/a::/b;$ORIGIN/c"),
            [PathBuf::from("/a"), PathBuf::from("."), PathBuf::from("/b")]
        );
    }
}
