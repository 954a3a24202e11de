//! The durations library: the kernel and copy durations measured on a
//! machine (CUPTI windows, `gpu` lines), kept between runs per GPU model and
//! driver, so that a later run on that GPU infers its timeline with no flag
//! (docs/durations-library.md). This file is the pure part: the library's
//! form, [`merge`] (a run's measured durations into it), [`select`] (the
//! entries a run needs, and whether they are current). Its file (path,
//! locking, atomic replacement) is `crate::collect::durations_library`.
//!
//! Form: `{"format":"tracer-durations-library","version":1,"gpus":[{"model",
//! "driver","runs","updated_unix","kernels":[KernelEntry…],"copies":[CopyEntry…]}]}`
//! ([`KernelEntry`], [`CopyEntry`]: durations_file.rs), GPUs sorted by model
//! and driver, kernels by name and geometry.
use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::durations_file::{self, CopyEntry, DurationsFile, KernelEntry};
use super::model::Geom;

pub const FORMAT: &str = "tracer-durations-library";
pub const VERSION: u32 = 1;
/// The most kernel entries one GPU key keeps (the least counted go first).
pub const MAX_KERNELS: usize = 200_000;
/// Samples below which an entry is not yet a steady median (measured in a window or two of
/// earlier runs, often in their warm-up): the default recording keeps measuring it
/// (collect/window_demand.rs, collect/record/durations.rs). Its duration is used meanwhile.
pub const MIN_SAMPLES: u64 = 16;
/// An entry's weight in a merge is its count, at most this much for the
/// library's side, so that new measurements can still move it.
pub const OLD_WEIGHT_CAP: u64 = 1_000;

/// A GPU model (as /proc/driver/nvidia/gpus/*/information says: "NVIDIA
/// H200") and the driver version ("580.159.04").
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GpuKey {
    pub model: String,
    pub driver: String,
}

impl GpuKey {
    pub fn new(model: impl Into<String>, driver: impl Into<String>) -> Self {
        GpuKey { model: model.into(), driver: driver.into() }
    }
}

/// "NVIDIA H200, driver 580.159.04".
impl std::fmt::Display for GpuKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}, driver {}", self.model, self.driver)
    }
}

/// The durations of one GPU key.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct GpuEntry {
    pub model: String,
    pub driver: String,
    /// Runs merged in.
    pub runs: u64,
    /// When the last of them was (Unix seconds).
    pub updated_unix: u64,
    pub kernels: Vec<KernelEntry>,
    #[serde(default)]
    pub copies: Vec<CopyEntry>,
}

impl GpuEntry {
    pub fn key(&self) -> GpuKey {
        GpuKey::new(&self.model, &self.driver)
    }
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Library {
    pub format: String,
    pub version: u32,
    pub gpus: Vec<GpuEntry>,
}

impl Default for Library {
    fn default() -> Self {
        Library { format: FORMAT.into(), version: VERSION, gpus: Vec::new() }
    }
}

/// Why a text is not a library this version reads (the kept files' form: [`FORM`]).
pub type ParseError = crate::analysis::kept_form::FormError;

/// The library's form: its `format`, `version` and name in messages.
pub const FORM: crate::analysis::kept_form::Form =
    crate::analysis::kept_form::Form { format: FORMAT, version: VERSION, what: "durations library" };

impl Library {
    pub fn parse(text: &str) -> Result<Library, ParseError> {
        FORM.parse(text)
    }

    /// The library as its file holds it (one line).
    pub fn to_json(&self) -> String {
        FORM.line(self)
    }

    pub fn gpu(&self, key: &GpuKey) -> Option<&GpuEntry> {
        self.gpus.iter().find(|g| g.model == key.model && g.driver == key.driver)
    }

    /// Kernel entries over all GPU keys.
    pub fn kernel_entries(&self) -> usize {
        self.gpus.iter().map(|g| g.kernels.len()).sum()
    }
}

/// What a [`merge`] did to its GPU key's entry.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MergeReport {
    /// Kernel entries new to the library, and those merged into an entry it had.
    pub added: usize,
    pub updated: usize,
    /// Copy kinds merged (new or not).
    pub copies: usize,
    /// Least-counted kernel entries dropped to keep [`MAX_KERNELS`].
    pub dropped: usize,
    /// The key's entries and runs after the merge.
    pub kernels: usize,
    pub runs: u64,
}

impl MergeReport {
    /// "12 kernel entries added, 30 updated, 2 copy kinds; 45 entries, 3 runs"
    /// (and "; 7 least-counted entries dropped (at most 200000 per GPU)").
    pub fn sentence(&self) -> String {
        let mut s = format!(
            "{} kernel entries added, {} updated, {} copy kinds; {} entries, {} runs",
            self.added, self.updated, self.copies, self.kernels, self.runs
        );
        if self.dropped > 0 {
            s += &format!("; {} least-counted entries dropped (at most {MAX_KERNELS} per GPU)", self.dropped);
        }
        s
    }
}

/// The count-weighted mean of two values (rounded to the nearest ns).
fn weighted(old: u64, w_old: u64, new: u64, w_new: u64) -> u64 {
    let den = w_old as u128 + w_new as u128;
    if den == 0 {
        return new;
    }
    let num = old as u128 * w_old as u128 + new as u128 * w_new as u128;
    ((num + den / 2) / den) as u64
}

type KernelKey = (String, [u32; 3], [u32; 3], u32);

fn kernel_key(k: &KernelEntry) -> KernelKey {
    (k.kernel.clone(), k.grid, k.block, k.shared_mem)
}

/// Merges the durations one run measured (`measured`, from
/// [`super::durations::calibrate`]) into `key`'s entry of `lib`: per
/// kernel, grid, block and shared memory the counts add up and the median,
/// p10 and p90 are the count-weighted means of the two sides, the library's
/// weight capped at [`OLD_WEIGHT_CAP`]; copies per kind likewise (`base_ns`,
/// `ns_per_byte`). Entries of other keys (another driver of the same model)
/// stay as they are. At most [`MAX_KERNELS`] kernel entries are kept.
pub fn merge(lib: &mut Library, key: &GpuKey, measured: &DurationsFile, now_unix: u64) -> MergeReport {
    merge_bounded(lib, key, measured, now_unix, MAX_KERNELS)
}

/// [`merge`] keeping at most `max_kernels` kernel entries for the key.
pub fn merge_bounded(
    lib: &mut Library,
    key: &GpuKey,
    measured: &DurationsFile,
    now_unix: u64,
    max_kernels: usize,
) -> MergeReport {
    let i = match lib.gpus.iter().position(|g| g.model == key.model && g.driver == key.driver) {
        Some(i) => i,
        None => {
            lib.gpus.push(GpuEntry {
                model: key.model.clone(),
                driver: key.driver.clone(),
                runs: 0,
                updated_unix: 0,
                kernels: Vec::new(),
                copies: Vec::new(),
            });
            lib.gpus.len() - 1
        }
    };
    let g = &mut lib.gpus[i];
    let mut report = MergeReport::default();
    let mut kernels: BTreeMap<KernelKey, KernelEntry> =
        std::mem::take(&mut g.kernels).into_iter().map(|k| (kernel_key(&k), k)).collect();
    for k in &measured.kernels {
        match kernels.get_mut(&kernel_key(k)) {
            Some(old) => {
                let w = old.count.min(OLD_WEIGHT_CAP);
                old.median_ns = weighted(old.median_ns, w, k.median_ns, k.count);
                old.p10_ns = weighted(old.p10_ns, w, k.p10_ns, k.count);
                old.p90_ns = weighted(old.p90_ns, w, k.p90_ns, k.count);
                old.count = old.count.saturating_add(k.count);
                report.updated += 1;
            }
            None => {
                kernels.insert(kernel_key(k), k.clone());
                report.added += 1;
            }
        }
    }
    g.kernels = kernels.into_values().collect();
    report.dropped = trim(g, max_kernels);
    for c in &measured.copies {
        report.copies += 1;
        match g.copies.iter_mut().find(|o| o.kind == c.kind) {
            Some(old) => {
                let w = old.count.min(OLD_WEIGHT_CAP);
                old.base_ns = weighted(old.base_ns, w, c.base_ns, c.count);
                let den = (w + c.count) as f64;
                if den > 0.0 {
                    old.ns_per_byte = (old.ns_per_byte * w as f64 + c.ns_per_byte * c.count as f64) / den;
                }
                old.count = old.count.saturating_add(c.count);
            }
            None => g.copies.push(c.clone()),
        }
    }
    g.copies.sort_by(|a, b| a.kind.cmp(&b.kind));
    g.runs += 1;
    g.updated_unix = now_unix;
    report.kernels = g.kernels.len();
    report.runs = g.runs;
    lib.gpus.sort_by(|a, b| (&a.model, &a.driver).cmp(&(&b.model, &b.driver)));
    report
}

/// Keeps the `max` most counted kernel entries of `g` (ties: the first in
/// key order), in key order; returns how many were dropped.
pub fn trim(g: &mut GpuEntry, max: usize) -> usize {
    let n = g.kernels.len();
    if n <= max {
        return 0;
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| g.kernels[b].count.cmp(&g.kernels[a].count).then(a.cmp(&b)));
    let mut keep = vec![false; n];
    order[..max].iter().for_each(|&i| keep[i] = true);
    let mut i = 0;
    g.kernels.retain(|_| {
        i += 1;
        keep[i - 1]
    });
    n - max
}

/// What [`fit_within`] removed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fit {
    /// Other GPU keys removed, least recently updated first.
    pub keys_removed: Vec<GpuKey>,
    /// Least-counted kernel entries of `key` dropped.
    pub dropped: usize,
}

/// Makes the library's file ([`Library::to_json`]) at most `max_bytes`:
/// removes the other GPU keys, least recently updated first, then drops
/// `key`'s least-counted kernel entries (a quarter at a time).
pub fn fit_within(lib: &mut Library, key: &GpuKey, max_bytes: usize) -> Fit {
    let mut fit = Fit::default();
    while lib.to_json().len() > max_bytes {
        let other = lib.gpus.iter().enumerate().filter(|(_, g)| g.key() != *key).min_by_key(|(_, g)| g.updated_unix);
        if let Some((i, _)) = other {
            fit.keys_removed.push(lib.gpus.remove(i).key());
            continue;
        }
        let Some(g) = lib.gpus.iter_mut().find(|g| g.key() == *key).filter(|g| !g.kernels.is_empty()) else {
            break;
        };
        let n = g.kernels.len();
        fit.dropped += trim(g, n - n.div_ceil(4));
    }
    fit
}

/// Whether the library's entries fit the run's GPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Staleness {
    /// Entries of this model and driver.
    Current,
    /// Entries of this model under other drivers only (not used): their versions.
    OtherDriver(Vec<String>),
    /// No entry of this model.
    NoEntries,
}

/// The library's entries a run needs ([`select`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Selection {
    /// The entries (None when the library has none of the run's kernels and
    /// copy kinds for its key).
    pub durations: Option<DurationsFile>,
    pub staleness: Staleness,
    /// Runs merged into the key's entry (0 without one).
    pub runs: u64,
    /// The run's distinct kernel names, and those the library has.
    pub kernels: usize,
    pub kernels_known: usize,
    /// The run's distinct (kernel, geometry) pairs, and those the library has exactly.
    pub geometries: usize,
    pub geometries_exact: usize,
    /// One line: what was selected, or why nothing.
    pub note: String,
}

/// The entries of `lib` for `key` that a run needs: every geometry of the
/// kernel names it launched (`kernels`: name and geometry of its launches;
/// the other geometries keep the by-name fallback as the library has it),
/// and the copy models of the kinds it used (`copy_kinds`: `h2d`, …,
/// `memset`). Entries of another driver are not used; the note says so.
pub fn select<S: AsRef<str>, C: AsRef<str>>(
    lib: &Library,
    key: &GpuKey,
    kernels: impl IntoIterator<Item = (S, Geom)>,
    copy_kinds: impl IntoIterator<Item = C>,
) -> Selection {
    let mut run: BTreeMap<String, BTreeSet<KernelGeom>> = BTreeMap::new();
    for (name, g) in kernels {
        run.entry(name.as_ref().to_string()).or_default().insert((g.grid, g.block, g.shared_mem));
    }
    let kinds: BTreeSet<String> = copy_kinds.into_iter().map(|c| c.as_ref().to_string()).collect();
    let geometries = run.values().map(BTreeSet::len).sum();
    let mut s = Selection {
        durations: None,
        staleness: Staleness::Current,
        runs: 0,
        kernels: run.len(),
        kernels_known: 0,
        geometries,
        geometries_exact: 0,
        note: String::new(),
    };
    let Some(g) = lib.gpu(key) else {
        let mut others: Vec<String> =
            lib.gpus.iter().filter(|g| g.model == key.model).map(|g| g.driver.clone()).collect();
        others.sort();
        others.dedup();
        if others.is_empty() {
            s.staleness = Staleness::NoEntries;
            s.note = format!("the durations library has no entries for {}", key.model);
        } else {
            let drivers = if others.len() == 1 { "driver" } else { "drivers" };
            s.note = format!(
                "the durations library has {} entries of {drivers} {} only: not used (another driver)",
                key.model,
                others.join(", ")
            );
            s.staleness = Staleness::OtherDriver(others);
        }
        return s;
    };
    s.runs = g.runs;
    let kernels: Vec<KernelEntry> = g.kernels.iter().filter(|k| run.contains_key(&k.kernel)).cloned().collect();
    let known: BTreeSet<&str> = kernels.iter().map(|k| k.kernel.as_str()).collect();
    s.kernels_known = known.len();
    s.geometries_exact = kernels
        .iter()
        .filter(|k| run.get(&k.kernel).is_some_and(|gs| gs.contains(&(k.grid, k.block, k.shared_mem))))
        .count();
    let copies: Vec<CopyEntry> = g.copies.iter().filter(|c| kinds.contains(&c.kind)).cloned().collect();
    // names alone (the zero geometry, no launch has it): no claim about geometries
    let unknown: KernelGeom = ([0; 3], [0; 3], 0);
    let geometries_known = run.values().any(|gs| gs.iter().any(|g| *g != unknown));
    let exactly = if geometries_known {
        format!(" ({} of {} launch geometries exactly)", s.geometries_exact, s.geometries)
    } else {
        String::new()
    };
    s.note = format!(
        "the durations library ({key}, {}) has {} of this run's {} kernels{exactly} and {} of its {} copy kinds",
        plural(g.runs, "run"),
        s.kernels_known,
        s.kernels,
        copies.len(),
        kinds.len()
    );
    if !kernels.is_empty() || !copies.is_empty() {
        s.durations = Some(DurationsFile {
            format: durations_file::FORMAT.into(),
            version: 1,
            source: "durations library".into(),
            gpu: Some(key.model.clone()),
            kernels,
            copies,
        });
    }
    s
}

type KernelGeom = ([u32; 3], [u32; 3], u32);

fn plural(n: u64, what: &str) -> String {
    if n == 1 { format!("1 {what}") } else { format!("{n} {what}s") }
}

/// The `origin` of a run's durations line: "durations library PATH (NVIDIA
/// H200, driver 580.159.04, 3 runs)".
pub fn origin(path: &str, key: &GpuKey, runs: u64) -> String {
    format!("durations library {path} ({key}, {})", plural(runs, "run"))
}

#[cfg(test)]
#[path = "durations_library_tests.rs"]
mod tests;
