//! The durations library in a recording (docs/durations-library.md): before
//! the command starts, the keys of the work the library already knows for
//! this machine's GPU go to the injection library (adaptive windows then
//! skip what is known); at the end, this run's measured durations are added
//! to the library, and the library's entries for the kernels this run
//! launched are written into the trace (a `durations` line before the
//! footer), so that the trace's analyses need no library. Any failure is
//! one line on stderr: the recording itself is never lost over it.
use std::path::PathBuf;

use serde_json::{Value, json};

use crate::analysis::durations_file::KernelEntry;
use crate::analysis::durations_library::{GpuKey, Library, MIN_SAMPLES};
use crate::analysis::model::Geom;
use crate::collect::collector::Collector;
use crate::collect::durations_library as file;
use crate::collect::gpu_timestamps::GpuSession;
use crate::collect::spawn::RunAs;

/// The library a recording uses, and the key of this machine's GPU.
pub struct LibraryUse {
    pub path: PathBuf,
    pub key: GpuKey,
    /// Said about it before the run (a refused library), for the footer.
    pub notes: Vec<String>,
}

/// Keys ([`tracer_cupti::sample`]) of everything `lib` knows for `key`:
/// each kernel configuration with at least [`MIN_SAMPLES`] samples (one with
/// fewer is new work to the windows, which then extend for it), every size
/// class of each copy kind.
pub fn known_keys(lib: &Library, key: &GpuKey) -> Vec<u64> {
    let Some(g) = lib.gpu(key) else { return Vec::new() };
    let mut keys: Vec<u64> = demand_keys(&g.kernels).0;
    for c in &g.copies {
        for class in tracer_cupti::sample::SIZE_CLASSES {
            let bytes = if class == 0 { 1 } else { 1u64.checked_shl(4 * class as u32).unwrap_or(u64::MAX) };
            keys.push(tracer_cupti::sample::copy_key(&c.kind, bytes));
        }
    }
    keys.sort_unstable();
    keys.dedup();
    keys
}

/// The library's kernel configurations as windows on demand see them
/// (collect/window_demand.rs): the keys of those with at least
/// [`MIN_SAMPLES`] samples, and of those with fewer.
pub fn demand_keys(kernels: &[KernelEntry]) -> (Vec<u64>, Vec<u64>) {
    let (known, under): (Vec<&KernelEntry>, Vec<&KernelEntry>) = kernels.iter().partition(|k| k.count >= MIN_SAMPLES);
    let key = |k: &&KernelEntry| tracer_cupti::sample::kernel_key(k.kernel.as_bytes(), k.grid, k.block, k.shared_mem);
    (known.iter().map(key).collect(), under.iter().map(key).collect())
}

/// Before the command: finds the library and this GPU's key, and hands the
/// known keys to an adaptive session. None: no library (`""`), no NVIDIA GPU
/// in /proc, or no GPU session.
pub fn start(
    path: Option<PathBuf>,
    gpu: Option<&mut GpuSession>,
    run_as: Option<&RunAs>,
    quiet: bool,
) -> Option<LibraryUse> {
    let gpu = gpu?;
    let key = path.as_ref().and(file::machine_key(0));
    let mut notes = Vec::new();
    let lib = match (&path, &key) {
        (Some(p), Some(_)) => file::load(p).unwrap_or_else(|e| {
            notes.push(e.message.clone());
            None
        }),
        _ => None,
    };
    let (known, under) = match (&lib, &key) {
        (Some(l), Some(k)) => l.gpu(k).map(|g| demand_keys(&g.kernels)).unwrap_or_default(),
        _ => Default::default(),
    };
    // windows on demand also without a library: every kernel configuration is new once
    if let Err(e) = gpu.set_demand(known, under, run_as) {
        notes.push(format!("windows on demand are off: {e:#}"));
    }
    if let (Some(l), Some(k)) = (&lib, &key)
        && let Err(e) = gpu.set_known(&known_keys(l, k), run_as)
    {
        notes.push(format!("the known kernels were not handed to the windows: {e:#}"));
    }
    for n in &notes {
        if !quiet {
            eprintln!("tracer: note: {n}");
        }
    }
    Some(LibraryUse { path: path?, key: key?, notes })
}

/// After the command: adds the run's measured durations to the library and
/// writes the `durations` line; returns the footer's `durations_library`.
pub fn finish(col: &mut Collector, gpu: &GpuSession, lib: &LibraryUse, quiet: bool) -> Value {
    let mut notes = lib.notes.clone();
    let measured = gpu.measured.file(Some(lib.key.model.clone()));
    let mut merged = Value::Null;
    // the library as this run left it: merged (read under the lock), else read
    let mut library = None;
    if let Some(m) = &measured {
        match file::update(&lib.path, &lib.key, m) {
            Ok(r) => {
                merged = json!({ "kernels": m.kernels.len(), "copies": m.copies.len(), "runs": r.merge.runs });
                for l in r.lines() {
                    if !quiet {
                        eprintln!("tracer: {l}");
                    }
                }
                library = Some(r.library);
            }
            Err(e) => notes.push(e.message.clone()),
        }
    }
    if library.is_none() {
        library = file::load(&lib.path).unwrap_or_else(|e| {
            notes.push(e.message.clone());
            None
        });
    }
    // the run's kernels by name, launched or in its graphs (all their geometries in the
    // library: the by-name fallback)
    let mut names: Vec<String> = col.summary.kernels.keys().chain(col.summary.graph_kernels.keys()).cloned().collect();
    names.sort_unstable();
    names.dedup();
    let kernels = names.iter().map(|n| (n.as_str(), Geom::default()));
    let copy_kinds = ["h2d", "d2h", "d2d", "h2h", "peer", "default", "memset"];
    let ts = crate::collect::sysinfo::clock_ns(libc::CLOCK_MONOTONIC);
    let mut selected = Value::Null;
    if let Some(l) = &library {
        let (line, s) = file::durations_line_of(l, &lib.path, &lib.key, kernels, copy_kinds, ts);
        selected = json!({ "kernels": s.kernels, "kernels_known": s.kernels_known, "note": s.note });
        if let Some(line) = line {
            col.writer.write(&line);
        }
    }
    for n in &notes[lib.notes.len()..] {
        eprintln!("tracer: warning: durations library: {n}");
    }
    json!({
        "path": lib.path.display().to_string(),
        "gpu": lib.key.to_string(),
        "measured": merged,
        "selected": selected,
        "notes": notes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::durations_file::{CopyEntry, DurationsFile, FORMAT, KernelEntry};
    use crate::analysis::durations_library::merge;

    #[test]
    fn the_known_keys_are_the_injection_librarys() {
        let key = GpuKey::new("NVIDIA H200", "580.159.04");
        let k = KernelEntry {
            kernel: "_Z3fooPf".into(),
            grid: [2, 3, 4],
            block: [128, 1, 1],
            shared_mem: 256,
            count: MIN_SAMPLES,
            median_ns: 4500,
            p10_ns: 4500,
            p90_ns: 4500,
        };
        // another configuration with too few samples: new work to the windows
        let few = KernelEntry { grid: [9, 1, 1], count: MIN_SAMPLES - 1, ..k.clone() };
        let c = CopyEntry { kind: "h2d".into(), count: 2, base_ns: 2000, ns_per_byte: 0.025 };
        let f = DurationsFile {
            format: FORMAT.into(),
            version: 1,
            source: "cupti".into(),
            gpu: None,
            kernels: vec![k, few],
            copies: vec![c],
        };
        let mut lib = Library::default();
        merge(&mut lib, &key, &f, 1);
        let keys = known_keys(&lib, &key);
        let few_key = tracer_cupti::sample::kernel_key(b"_Z3fooPf", [9, 1, 1], [128, 1, 1], 256);
        assert!(!keys.contains(&few_key));
        let (known, under) = demand_keys(&lib.gpu(&key).unwrap().kernels);
        assert_eq!(known, vec![tracer_cupti::sample::kernel_key(b"_Z3fooPf", [2, 3, 4], [128, 1, 1], 256)]);
        assert_eq!(under, vec![few_key]);
        // the fake libcupti's kernel, as tracer-cupti's adaptive windows key it
        assert!(keys.contains(&tracer_cupti::sample::kernel_key(b"_Z3fooPf", [2, 3, 4], [128, 1, 1], 256)));
        // every size of a known copy kind
        for bytes in [0u64, 7, 100, 4096, 1 << 20, 3 << 30, u64::MAX] {
            assert!(keys.contains(&tracer_cupti::sample::copy_key("h2d", bytes)), "{bytes}");
        }
        assert!(!keys.contains(&tracer_cupti::sample::copy_key("d2h", 4096)));
        assert_eq!(keys.len(), 1 + 17);
        assert!(known_keys(&lib, &GpuKey::new("NVIDIA H200", "575.1")).is_empty());
        assert_eq!(file::key_from_env(Some("NVIDIA H200; 580.159.04")), Some(key));
        for bad in [None, Some(""), Some("NVIDIA H200"), Some(";580"), Some("H200; ")] {
            assert_eq!(file::key_from_env(bad), None, "{bad:?}");
        }
    }
}
