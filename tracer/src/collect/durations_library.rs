//! The durations library's file (docs/durations-library.md; its form,
//! merge and selection: `crate::analysis::durations_library`).
//!
//! Where: `$TRACER_DURATIONS_LIBRARY` (empty: no library), else
//! `/var/lib/tracer/durations.json` as root, else
//! `$XDG_STATE_HOME/tracer/durations.json` or
//! `~/.local/state/tracer/durations.json` ([`default_path`]).
//!
//! Read with tracer_format's bounded reads ([`Kind::DurationsLibrary`]:
//! 64 MiB, a regular file, never through a link). [`update`] takes an
//! exclusive `flock` on `PATH.lock`, reads the library again under it,
//! merges, writes `PATH.tmp.PID` (fsynced) and renames it over PATH (the
//! directory fsynced), so concurrent runs all land and a reader sees the
//! old or the new library, never a part. A corrupt or foreign file is moved
//! aside to `PATH.corrupt-UNIXSECS` and a new library started; a newer
//! version's library, a link or a file that is not regular is left alone
//! and refused.
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde_json::Value;
use tracer_format::open::Kind;

pub use crate::collect::kept_file::ErrorKind;
use crate::collect::kept_file::{self, Kept, KeptError};

use crate::analysis::durations_file::{DurationsFile, durations_line};
use crate::analysis::durations_library::{self as lib, GpuKey, Library, MergeReport, Selection, fit_within, merge};
use crate::analysis::model::Geom;

/// The variable naming the library's file (empty: no library).
pub const ENV: &str = "TRACER_DURATIONS_LIBRARY";

/// The library's path, or None when `$TRACER_DURATIONS_LIBRARY` is empty
/// (or no home is known).
pub fn default_path() -> Option<PathBuf> {
    kept_file::default_path("durations.json", ENV)
}

/// [`default_path`] from the variables and the effective uid.
pub fn path_from(
    env: Option<OsString>,
    euid: u32,
    xdg_state: Option<OsString>,
    home: Option<OsString>,
) -> Option<PathBuf> {
    kept_file::path_from("durations.json", env, euid, xdg_state, home)
}

/// The variable that names the GPU key ("MODEL;DRIVER") where
/// /proc/driver/nvidia does not (a container without it, the tests' fake driver).
pub const KEY_ENV: &str = "TRACER_GPU_KEY";

/// The GPU key of this machine's GPU `ordinal` (PCI bus order), from
/// /proc/driver/nvidia, else from `$TRACER_GPU_KEY`.
pub fn machine_key(ordinal: usize) -> Option<GpuKey> {
    let from_proc = || {
        let driver = super::sysinfo::driver_version()?;
        let gpus = super::sysinfo::gpus();
        let model = gpus.get(ordinal)?["model"].as_str()?.to_string();
        Some(GpuKey::new(model, driver))
    };
    from_proc().or_else(|| key_from_env(std::env::var(KEY_ENV).ok().as_deref()))
}

/// "MODEL;DRIVER" (both non-empty) as a key.
pub fn key_from_env(v: Option<&str>) -> Option<GpuKey> {
    let (model, driver) = v?.split_once(';')?;
    let (model, driver) = (model.trim(), driver.trim());
    (!model.is_empty() && !driver.is_empty()).then(|| GpuKey::new(model, driver))
}

/// Every entry the library at `path` has for `key`, as durations (the
/// agent times the launches of processes without CUPTI with them), and one
/// line saying what was taken or why nothing.
pub fn entries_for(
    path: Option<&Path>,
    key: Option<&GpuKey>,
) -> (Option<crate::analysis::durations::Durations>, String) {
    let (Some(path), Some(key)) = (path, key) else {
        let why = if path.is_none() {
            "no durations library ($TRACER_DURATIONS_LIBRARY is empty)"
        } else {
            "no GPU key (no NVIDIA GPU in /proc/driver/nvidia, no $TRACER_GPU_KEY)"
        };
        return (None, format!("{why}: GPU busy/idle of processes without CUPTI are bounds"));
    };
    let lib = match load(path) {
        Ok(Some(l)) => l,
        Ok(None) => {
            return (
                None,
                format!(
                    "no durations library at {}: GPU busy/idle of processes without CUPTI are bounds",
                    path.display()
                ),
            );
        }
        Err(e) => return (None, format!("{}: GPU busy/idle of processes without CUPTI are bounds", e.message)),
    };
    // every entry of the key: the selection of all its kernel names and copy kinds
    let selected = lib.gpu(key).and_then(|g| {
        let names = g.kernels.iter().map(|k| (k.kernel.as_str(), Geom::default()));
        let kinds = g.copies.iter().map(|c| c.kind.as_str());
        let f = crate::analysis::durations_library::select(&lib, key, names, kinds).durations?;
        (!f.kernels.is_empty()).then_some((f, g.runs))
    });
    match selected {
        Some((f, runs)) => {
            let origin = crate::analysis::durations_library::origin(&path.display().to_string(), key, runs);
            let line = format!(
                "GPU busy/idle of processes without CUPTI inferred from the {origin}: {} kernel entries",
                f.kernels.len()
            );
            (Some(crate::analysis::durations::Durations::new(f).with_origin(origin)), line)
        }
        None => (
            None,
            format!(
                "the durations library {} has no kernels for {key}: GPU busy/idle of processes without CUPTI are bounds",
                path.display()
            ),
        ),
    }
}

/// What went wrong with the library, in one line (it names the file, what
/// is wrong and what to do).
pub type LibraryError = KeptError;

/// The durations library as a kept file.
pub const KEPT: Kept =
    Kept { kind: Kind::DurationsLibrary, form: lib::FORM, replaced_by: "the next measured run", elsewhere: ELSEWHERE };

const ELSEWHERE: &str = "or set TRACER_DURATIONS_LIBRARY to another file (empty: no library)";

/// The library at `path`; `Ok(None)` when there is no such file.
pub fn load(path: &Path) -> Result<Option<Library>, LibraryError> {
    KEPT.load(path, Library::parse)
}

/// The durations line of a run on `key` (at `ts`, just before the footer)
/// with the entries of the library at `path` it needs (`kernels`: name and
/// geometry of its launches; `copy_kinds`: `h2d`, …, `memset`), and the
/// selection (its `note` says what was used, or why nothing). No line when
/// the library has nothing for the run, or there is no library.
pub fn durations_line_for<S: AsRef<str>, C: AsRef<str>>(
    path: &Path,
    key: &GpuKey,
    kernels: impl IntoIterator<Item = (S, Geom)>,
    copy_kinds: impl IntoIterator<Item = C>,
    ts: u64,
) -> Result<(Option<Value>, Option<Selection>), LibraryError> {
    let Some(library) = load(path)? else { return Ok((None, None)) };
    let (line, s) = durations_line_of(&library, path, key, kernels, copy_kinds, ts);
    Ok((line, Some(s)))
}

/// [`durations_line_for`] of a library already read (`path` names it in the line's origin).
pub fn durations_line_of<S: AsRef<str>, C: AsRef<str>>(
    library: &Library,
    path: &Path,
    key: &GpuKey,
    kernels: impl IntoIterator<Item = (S, Geom)>,
    copy_kinds: impl IntoIterator<Item = C>,
    ts: u64,
) -> (Option<Value>, Selection) {
    let s = lib::select(library, key, kernels, copy_kinds);
    let line =
        s.durations.as_ref().map(|f| durations_line(ts, &lib::origin(&path.display().to_string(), key, s.runs), f));
    (line, s)
}

/// What [`update`] did.
#[derive(Debug, Clone, PartialEq)]
pub struct UpdateReport {
    pub path: PathBuf,
    pub key: GpuKey,
    pub merge: MergeReport,
    /// Where a corrupt or foreign file was moved (a new library was started).
    pub moved_aside: Option<(PathBuf, String)>,
    /// What was removed to keep the file within its 64 MiB.
    pub fit: lib::Fit,
    /// The library as written.
    pub library: Library,
}

impl UpdateReport {
    /// One line each: the merge, then what was moved aside or removed.
    pub fn lines(&self) -> Vec<String> {
        let mut v = Vec::new();
        if let Some(m) = &self.moved_aside {
            v.push(KEPT.moved_aside_line(&self.path, m));
        }
        v.push(format!("durations library {} ({}): {}", self.path.display(), self.key, self.merge.sentence()));
        if !self.fit.keys_removed.is_empty() || self.fit.dropped > 0 {
            let keys: Vec<String> = self.fit.keys_removed.iter().map(|k| format!("({k})")).collect();
            v.push(format!(
                "durations library {}: over {} MiB: removed {} other GPU keys {}and {} least-counted entries",
                self.path.display(),
                Kind::DurationsLibrary.cap() >> 20,
                keys.len(),
                if keys.is_empty() { String::new() } else { format!("{} ", keys.join(", ")) },
                self.fit.dropped
            ));
        }
        v
    }
}

/// Merges `measured` (one run's durations on `key`) into the library at
/// `path` (see the module header).
pub fn update(path: &Path, key: &GpuKey, measured: &DurationsFile) -> Result<UpdateReport, LibraryError> {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    update_at(path, key, measured, now)
}

/// [`update`] at `now_unix`.
pub fn update_at(
    path: &Path,
    key: &GpuKey,
    measured: &DurationsFile,
    now_unix: u64,
) -> Result<UpdateReport, LibraryError> {
    let (library, (merge, fit), moved_aside) =
        KEPT.update(path, (Library::parse, Library::to_json), now_unix, |library| {
            let merge = merge(library, key, measured, now_unix);
            (merge, fit_within(library, key, Kind::DurationsLibrary.cap() as usize))
        })?;
    Ok(UpdateReport { path: path.to_owned(), key: key.clone(), merge, moved_aside, fit, library })
}

#[cfg(test)]
#[path = "durations_library_tests.rs"]
mod tests;
