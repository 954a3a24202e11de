//! Checks every pointer `cuGetProcAddress` hands out against what tracer records.
//!
//! The CUDA runtime (12.x, 13) does not call the driver by the names in cuda.h: it asks
//! `cuGetProcAddress` for each entry point by CUDA version and flags and calls the pointer
//! it gets, e.g. `cuCtxSynchronize_v2` for `cuCtxSynchronize` at 13000, or
//! `cuLaunchKernel_ptsz` with the per-thread default stream. Each recorded successful
//! `cuGetProcAddress` call is resolved here to the function its pointer starts: the
//! process's mapping of the address (`/proc/PID/maps`, read when the call is seen and
//! cached), the file offset, and the exported symbol at that offset. The footer's
//! `entry_points` names every entry point a program resolved that tracer does not record,
//! with its CUDA version, flags, what it resolved to, why it is not recorded, and its
//! calls where the counting probes on undecoded functions (loader.rs) give them; a
//! pointer outside any libcuda, or to no exported symbol, is named as such.
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;

use serde_json::{Value, json};
use tracer_common::funcs::{self, FuncId, base_name};

use crate::collect::libcuda::{self, ExportedSymbols};
use crate::decode::fastline::Line;

/// What tracer does with the function an entry point resolves to.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Status {
    /// Recorded call by call (or counted with `--counts`).
    Recorded,
    /// A table function left out of this recording, and why.
    NotSelected(&'static str),
    /// Outside the table: calls counted, arguments not decoded.
    Counted,
    /// Outside the table and not counted either (why).
    NotCounted(String),
}

/// Where a pointer led.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Target {
    /// An exported function of a libcuda file.
    Symbol(String),
    /// Inside a libcuda file, at no exported function's first byte.
    Unexported { file: String, offset: u64 },
    /// Outside every libcuda file (another library, anonymous memory).
    Outside { file: Option<String>, address: u64 },
    /// The process's mappings could not be read (it had exited).
    Unknown { address: u64 },
}

/// One mapping of `/proc/PID/maps` backed by a file.
#[derive(Clone, Debug)]
struct Mapping {
    start: u64,
    end: u64,
    offset: u64,
    dev: (u32, u32),
    inode: u64,
    path: String,
}

/// A libcuda file seen through some process's mappings.
struct Lib {
    symbols: ExportedSymbols,
    by_offset: HashMap<u64, String>,
}

#[derive(Default)]
struct Seen {
    times: u64,
    pids: BTreeSet<u32>,
}

/// Which table functions this recording probes (the `--all-functions` / `--functions`
/// selection); the reason for one left out.
pub type Selection = Box<dyn Fn(FuncId) -> Option<&'static str>>;

pub struct EntryPoints {
    selection: Selection,
    maps: HashMap<u32, Vec<Mapping>>,
    libs: HashMap<(u32, u32, u64), Option<Lib>>,
    /// (symbol, CUDA version, flags, target) -> resolutions.
    resolved: BTreeMap<(String, i64, u64, Target), Seen>,
    /// (symbol, CUDA version, flags, CUresult) of failed calls.
    failed: BTreeMap<(String, i64, u64, i64), Seen>,
    /// Resolutions of processes whose mappings could not be read (gone by then):
    /// (pid, symbol, version, flags, pointer), resolved at the end by [`load_bias`].
    pending: Vec<(u32, String, i64, u64, u64)>,
    /// The libcuda probed from the start (path, size, functions), for the pending ones.
    main_lib: Option<(String, u64, Lib)>,
    /// Where the maps are read (tests: a directory laid out like /proc).
    proc_root: PathBuf,
}

impl EntryPoints {
    /// `main`: the libcuda probed from the start and its exported functions.
    pub fn new(selection: Selection, main: Option<(&std::path::Path, &ExportedSymbols)>) -> Self {
        EntryPoints {
            selection,
            maps: HashMap::new(),
            libs: HashMap::new(),
            resolved: BTreeMap::new(),
            failed: BTreeMap::new(),
            pending: Vec::new(),
            main_lib: main.map(|(path, syms)| {
                let size = std::fs::metadata(path).map_or(u64::MAX, |m| m.len());
                (path.display().to_string(), size, Lib::new(syms.clone()))
            }),
            proc_root: PathBuf::from("/proc"),
        }
    }

    /// Looks at one decoded line: a `cuGetProcAddress` call is resolved.
    pub fn observe(&mut self, line: &Line) {
        let Line::Value(v) = line else { return };
        let Some(name) = v["name"].as_str() else { return };
        if !name.starts_with("cuGetProcAddress") {
            return;
        }
        let a = &v["args"];
        let Some(symbol) = a["symbol"].as_str().filter(|s| !s.is_empty()) else { return };
        let version = a["cudaVersion"].as_i64().unwrap_or(0);
        let flags = tracer_format::hex::of_json(&a["flags"]).unwrap_or(0);
        let pid = v["pid"].as_u64().unwrap_or(0) as u32;
        let ret = v["ret"].as_i64();
        match (ret, tracer_format::hex::of_json(&a["pfn"])) {
            (Some(0), Some(p)) if p != 0 => match self.resolve(pid, p) {
                Target::Unknown { .. } => self.pending.push((pid, symbol.to_string(), version, flags, p)),
                target => self.add(symbol, version, flags, target, pid),
            },
            // Not returned (exit record lost, process gone): nothing to resolve.
            (None, _) => {}
            (Some(r), _) => {
                let s = self.failed.entry((symbol.to_string(), version, flags, r)).or_default();
                s.times += 1;
                s.pids.insert(pid);
            }
        }
    }

    fn add(&mut self, symbol: &str, version: i64, flags: u64, target: Target, pid: u32) {
        let s = self.resolved.entry((symbol.to_string(), version, flags, target)).or_default();
        s.times += 1;
        s.pids.insert(pid);
    }

    /// Resolves the pointers of processes that were gone before their mappings were read,
    /// in the libcuda probed from the start, at the load bias their own resolutions agree
    /// on ([`load_bias`]).
    fn resolve_pending(&mut self) {
        let pending = std::mem::take(&mut self.pending);
        let mut by_pid: BTreeMap<u32, Vec<(String, i64, u64, u64)>> = BTreeMap::new();
        for (pid, s, v, f, p) in pending {
            by_pid.entry(pid).or_default().push((s, v, f, p));
        }
        for (pid, calls) in by_pid {
            let bias = self
                .main_lib
                .as_ref()
                .and_then(|(_, _, lib)| load_bias(&lib.symbols, calls.iter().map(|(s, _, _, p)| (s.as_str(), *p))));
            for (symbol, version, flags, p) in calls {
                let target = match (bias, self.main_lib.as_ref()) {
                    (Some(b), Some((file, size, lib))) => match p.checked_sub(b) {
                        Some(off) => match lib.by_offset.get(&off) {
                            Some(name) => Target::Symbol(preferred_alias(lib, name, off)),
                            None if off < *size => Target::Unexported { file: file.clone(), offset: off },
                            None => Target::Unknown { address: p },
                        },
                        None => Target::Unknown { address: p },
                    },
                    _ => Target::Unknown { address: p },
                };
                self.add(&symbol, version, flags, target, pid);
            }
        }
    }

    /// The function at `address` in process `pid`.
    fn resolve(&mut self, pid: u32, address: u64) -> Target {
        let mut m = self.mapping(pid, address);
        if m.is_none() {
            // Mapped since the maps were read: read them again.
            self.maps.remove(&pid);
            m = self.mapping(pid, address);
        }
        let Some(m) = m else {
            return if self.maps.get(&pid).is_some_and(|v| !v.is_empty()) {
                Target::Outside { file: None, address }
            } else {
                Target::Unknown { address }
            };
        };
        let offset = address - m.start + m.offset;
        let file_name = m.path.rsplit('/').next().unwrap_or(&m.path);
        if !file_name.starts_with("libcuda") {
            return Target::Outside { file: Some(m.path.clone()), address };
        }
        let key = (m.dev.0, m.dev.1, m.inode);
        let root = self.proc_root.join(pid.to_string()).join("root");
        let lib = self.libs.entry(key).or_insert_with(|| {
            let path = root.join(m.path.trim_start_matches('/'));
            match libcuda::exported_functions(&path) {
                Ok(symbols) => Some(Lib::new(symbols)),
                Err(e) => {
                    log::warn!("entry points: reading {}: {e:#}", path.display());
                    None
                }
            }
        });
        match lib.as_ref().and_then(|l| l.by_offset.get(&offset)) {
            Some(name) => Target::Symbol(preferred_alias(lib.as_ref().expect("found"), name, offset)),
            None => Target::Unexported { file: m.path.clone(), offset },
        }
    }

    fn mapping(&mut self, pid: u32, address: u64) -> Option<Mapping> {
        let root = &self.proc_root;
        let maps = self.maps.entry(pid).or_insert_with(|| {
            std::fs::read_to_string(root.join(pid.to_string()).join("maps")).map(|t| parse_maps(&t)).unwrap_or_default()
        });
        maps.iter().find(|m| m.start <= address && address < m.end).cloned()
    }

    /// What tracer does with function `name` (`counted`: the undecoded functions the
    /// counting probes are on).
    fn status(&self, name: &str, counted: &BTreeSet<String>, not_counted: &BTreeMap<String, String>) -> Status {
        if let Some(id) = funcs::lookup(name) {
            return match (self.selection)(id) {
                None => Status::Recorded,
                Some(why) => Status::NotSelected(why),
            };
        }
        if counted.contains(name) {
            return Status::Counted;
        }
        Status::NotCounted(not_counted.get(name).cloned().unwrap_or_else(|| "not counted: no probe on it".into()))
    }

    /// The footer's `entry_points` object and the end-of-run lines for stderr (none
    /// when every resolved entry point is recorded). `calls`: the counting probes'
    /// calls by name; `counted` / `not_counted`: the undecoded functions with and
    /// without a counting probe.
    pub fn finish(
        &mut self,
        calls: &BTreeMap<String, u64>,
        counted: &BTreeSet<String>,
        not_counted: &BTreeMap<String, String>,
    ) -> (Value, Vec<String>) {
        self.resolve_pending();
        let mut recorded = 0u64;
        let mut missing = Vec::new();
        let mut called: BTreeMap<String, u64> = BTreeMap::new();
        for ((symbol, version, flags, target), seen) in &self.resolved {
            let (resolves_to, status) = match target {
                Target::Symbol(n) => (json!(n), self.status(n, counted, not_counted)),
                Target::Unexported { file, offset } => {
                    (json!(format!("{file}+{offset:#x}")), Status::NotCounted("not exported: no probe on it".into()))
                }
                Target::Outside { file, address } => (
                    json!(match file {
                        Some(f) => format!("{f} ({address:#x})"),
                        None => format!("{address:#x}"),
                    }),
                    Status::NotCounted("outside every libcuda file".into()),
                ),
                Target::Unknown { address } => (
                    json!(format!("{address:#x}")),
                    Status::NotCounted("the process exited before its mappings were read".into()),
                ),
            };
            if status == Status::Recorded {
                recorded += 1;
                continue;
            }
            let n = match (&status, target) {
                (Status::Counted, Target::Symbol(name)) => Some(calls.get(name).copied().unwrap_or(0)),
                _ => None,
            };
            if let (Some(c), Target::Symbol(name)) = (n, target)
                && c > 0
            {
                called.insert(name.clone(), c);
            }
            let (status_name, reason) = match &status {
                Status::Recorded => unreachable!(),
                Status::NotSelected(why) => ("not_selected", why.to_string()),
                Status::Counted => ("counted", "outside tracer's table: calls counted, arguments not decoded".into()),
                Status::NotCounted(why) => ("not_counted", why.clone()),
            };
            missing.push(json!({
                "symbol": symbol,
                "cuda_version": version,
                "flags": format!("{flags:#x}"),
                "resolves_to": resolves_to,
                "status": status_name,
                "reason": reason,
                "calls": n,
                "resolutions": seen.times,
                "pids": seen.pids.len(),
            }));
        }
        let failed: Vec<Value> = self
            .failed
            .iter()
            .map(|((symbol, version, flags, ret), seen)| {
                json!({
                    "symbol": symbol,
                    "cuda_version": version,
                    "flags": format!("{flags:#x}"),
                    "ret": ret,
                    "error": crate::decode::cuda_names::cu_result(*ret as u32),
                    "resolutions": seen.times,
                })
            })
            .collect();
        let footer = json!({
            "resolved": self.resolved.len(),
            "recorded": recorded,
            "not_recorded": missing,
            "failed": failed,
            // Undecoded functions called by any path (a pointer, dlsym, direct linking).
            "unrecorded_calls": calls,
            "counted_functions": counted.len(),
            "not_counted_functions": not_counted.len(),
        });
        let mut lines = Vec::new();
        if !missing.is_empty() {
            let mut top: Vec<(&String, &u64)> = called.iter().collect();
            top.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
            let named: Vec<String> = top.iter().take(8).map(|(n, c)| format!("{n} ×{c}")).collect();
            lines.push(format!(
                "tracer: the program resolved {} driver entry points (symbol, CUDA version, flags) that tracer does not record{}; the footer's entry_points lists each with the reason",
                missing.len(),
                if named.is_empty() { String::new() } else { format!(", called: {}", named.join(", ")) }
            ));
        }
        let other: Vec<String> =
            calls.iter().filter(|(n, _)| !called.contains_key(*n)).map(|(n, c)| format!("{n} ×{c}")).collect();
        if !other.is_empty() {
            lines.push(format!(
                "tracer: undecoded driver functions called (counted, not recorded): {}{}",
                other.iter().take(8).cloned().collect::<Vec<_>>().join(", "),
                if other.len() > 8 { format!(" and {} more", other.len() - 8) } else { String::new() }
            ));
        }
        (footer, lines)
    }
}

impl Lib {
    fn new(symbols: ExportedSymbols) -> Lib {
        let by_offset = symbols.symbols.iter().map(|(n, o)| (*o, n.clone())).collect();
        Lib { symbols, by_offset }
    }
}

/// The load bias (address minus file offset, a multiple of the page size) at which the
/// pointers a process got for `(symbol, pointer)` fall on exported functions of the
/// symbol's family (`S`, `S_vN`, `S_ptsz`, …): the bias most of them agree on, None
/// when none does. Found without the process's mappings, so after it exited too.
pub fn load_bias<'a>(symbols: &ExportedSymbols, calls: impl Iterator<Item = (&'a str, u64)>) -> Option<u64> {
    const PAGE: u64 = 4096;
    let mut family: HashMap<&str, Vec<u64>> = HashMap::new();
    for (n, off) in &symbols.symbols {
        family.entry(base_name(n)).or_default().push(*off);
    }
    let mut votes: BTreeMap<u64, u64> = BTreeMap::new();
    for (symbol, p) in calls {
        let mut biases: Vec<u64> = family
            .get(base_name(symbol))
            .into_iter()
            .flatten()
            .filter_map(|off| p.checked_sub(*off))
            .filter(|b| b % PAGE == 0)
            .collect();
        biases.sort_unstable();
        biases.dedup();
        for b in biases {
            *votes.entry(b).or_insert(0) += 1;
        }
    }
    votes.into_iter().max_by_key(|&(b, n)| (n, std::cmp::Reverse(b))).map(|(b, _)| b)
}

/// The name to report for a function several exported names share: the table's, if
/// one of them is in it, else the one the lookup found.
fn preferred_alias(lib: &Lib, name: &str, offset: u64) -> String {
    if funcs::lookup(name).is_some() {
        return name.to_string();
    }
    let mut aliases: Vec<&String> = lib.symbols.symbols.iter().filter(|(_, o)| **o == offset).map(|(n, _)| n).collect();
    aliases.sort();
    aliases.iter().find(|n| funcs::lookup(n).is_some()).map_or_else(|| name.to_string(), |n| n.to_string())
}

/// The file-backed mappings of a `/proc/PID/maps` text.
fn parse_maps(text: &str) -> Vec<Mapping> {
    text.lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            let (range, _perms, off, dev, inode) = (it.next()?, it.next()?, it.next()?, it.next()?, it.next()?);
            let path: Vec<&str> = it.collect();
            let path = path.join(" ");
            if !path.starts_with('/') {
                return None;
            }
            let (s, e) = range.split_once('-')?;
            let (ma, mi) = dev.split_once(':')?;
            Some(Mapping {
                start: u64::from_str_radix(s, 16).ok()?,
                end: u64::from_str_radix(e, 16).ok()?,
                offset: u64::from_str_radix(off, 16).ok()?,
                dev: (u32::from_str_radix(ma, 16).ok()?, u32::from_str_radix(mi, 16).ok()?),
                inode: inode.parse().ok()?,
                path,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_lines_are_parsed_and_anonymous_ones_skipped() {
        let t = "7f0000000000-7f0000100000 r-xp 00002000 fd:01 1234 /usr/lib/libcuda.so.580.1\n\
                 7f0000100000-7f0000200000 rw-p 00000000 00:00 0 \n\
                 7ffc00000000-7ffc00021000 rw-p 00000000 00:00 0 [stack]\n\
                 7f0000300000-7f0000400000 r-xp 00000000 08:02 99 /opt/my lib/libx.so\n";
        let m = parse_maps(t);
        assert_eq!(m.len(), 2);
        assert_eq!(
            (m[0].start, m[0].end, m[0].offset, m[0].dev, m[0].inode),
            (0x7f00_0000_0000, 0x7f00_0010_0000, 0x2000, (0xfd, 1), 1234)
        );
        assert_eq!(m[1].path, "/opt/my lib/libx.so");
    }

    #[test]
    fn the_load_bias_is_found_from_the_pointers_alone() {
        let mut syms = ExportedSymbols::default();
        for (n, off) in [
            ("cuLaunchKernel", 0x2a10),
            ("cuLaunchKernel_ptsz", 0x2b40),
            ("cuCtxSynchronize", 0x3000),
            ("cuCtxSynchronize_v2", 0x3120),
            ("cuInit", 0x1000),
        ] {
            syms.symbols.insert(n.to_string(), off);
        }
        let bias = 0x7f12_3456_7000;
        let calls = [("cuLaunchKernel", bias + 0x2b40), ("cuCtxSynchronize", bias + 0x3120)];
        assert_eq!(load_bias(&syms, calls.iter().copied()), Some(bias));
        // One pointer is enough: the other candidates' offsets are not on its page grid.
        assert_eq!(load_bias(&syms, [("cuInit", bias + 0x1000)].into_iter()), Some(bias));
        assert_eq!(load_bias(&syms, [("cuNothing", bias + 0x1000)].into_iter()), None);
        assert_eq!(base_name("cuMemcpyHtoDAsync_v2_ptsz"), "cuMemcpyHtoDAsync");
        assert_eq!(base_name("cuStreamGetCaptureInfo_v3"), "cuStreamGetCaptureInfo");
        assert_eq!(base_name("cuMemcpy_ptds"), "cuMemcpy");
    }

    #[test]
    fn a_gone_process_is_resolved_in_the_main_libcuda() {
        let mut syms = ExportedSymbols::default();
        for (n, off) in [("cuCtxSynchronize", 0x3000u64), ("cuCtxSynchronize_v2", 0x3120), ("cuFakeUnlisted", 0x4010)] {
            syms.symbols.insert(n.to_string(), off);
        }
        let mut ep =
            EntryPoints::new(Box::new(|_| None), Some((std::path::Path::new("/nonexistent/libcuda.so.1"), &syms)));
        ep.proc_root = PathBuf::from("/nonexistent");
        let bias = 0x7f00_0000_0000u64;
        ep.observe(&line("cuCtxSynchronize", 13000, "0x0", &format!("{:#x}", bias + 0x3120), 0));
        ep.observe(&line("cuFakeUnlisted", 13000, "0x0", &format!("{:#x}", bias + 0x4010), 0));
        ep.observe(&line("cuHidden", 13000, "0x0", &format!("{:#x}", bias + 0x5555), 0));
        let counted = ["cuFakeUnlisted".to_string()].into_iter().collect();
        let calls = [("cuFakeUnlisted".to_string(), 3)].into_iter().collect();
        let (f, _) = ep.finish(&calls, &counted, &BTreeMap::new());
        assert_eq!(f["recorded"], 1, "{f}");
        let nr = f["not_recorded"].as_array().unwrap();
        assert_eq!((nr[0]["symbol"].as_str(), nr[0]["calls"].as_u64()), (Some("cuFakeUnlisted"), Some(3)), "{f}");
        assert_eq!(nr[1]["symbol"], "cuHidden", "{f}");
        assert_eq!(nr[1]["resolves_to"], "/nonexistent/libcuda.so.1+0x5555", "{f}");
    }

    fn line(symbol: &str, version: i64, flags: &str, pfn: &str, ret: i64) -> Line<'static> {
        Line::Value(json!({
            "name": "cuGetProcAddress_v2", "pid": 42, "ret": ret,
            "args": { "symbol": symbol, "cudaVersion": version, "flags": flags, "pfn": pfn },
        }))
    }

    #[test]
    fn failed_and_unmapped_resolutions_are_named() {
        let dir = std::env::temp_dir().join(format!("tracer-ep-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("42")).unwrap();
        std::fs::write(dir.join("42/maps"), "1000-2000 r-xp 00000000 00:10 7 /usr/lib/libother.so\n").unwrap();
        let mut ep = EntryPoints::new(Box::new(|_| None), None);
        ep.proc_root = dir.clone();
        ep.observe(&line("cuNoSuchThing", 13000, "0x0", "0x0", 500));
        ep.observe(&line("cuFoo", 12000, "0x2", "0x1800", 0));
        ep.observe(&line("cuBar", 12000, "0x0", "0x9000", 0));
        let (f, lines) = ep.finish(&BTreeMap::new(), &BTreeSet::new(), &BTreeMap::new());
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(f["failed"][0]["symbol"], "cuNoSuchThing");
        assert_eq!(f["failed"][0]["error"], "CUDA_ERROR_NOT_FOUND");
        let nr = f["not_recorded"].as_array().unwrap();
        assert_eq!(nr.len(), 2);
        assert_eq!(nr[0]["symbol"], "cuBar");
        assert_eq!(nr[0]["resolves_to"], "0x9000");
        assert_eq!(nr[0]["reason"], "outside every libcuda file");
        assert_eq!(nr[1]["symbol"], "cuFoo");
        assert_eq!(nr[1]["flags"], "0x2");
        assert_eq!(nr[1]["resolves_to"], "/usr/lib/libother.so (0x1800)");
        assert_eq!(f["resolved"], 2);
        assert_eq!(lines.len(), 1);
        assert!(lines[0].contains("resolved 2 driver entry points"), "{}", lines[0]);
    }
}
