//! Where the trace goes: stdout, a trace file, or a recording directory
//! (`--replayable`) with the trace inside, created before the command.
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;

use crate::collect::record::options::RecordOptions;
use crate::collect::replayable::store::Store;
use crate::collect::{spawn, sysinfo};
use crate::error::UsageError;

/// The recording directory (`--replayable`) and the trace file, created.
pub struct Output {
    pub store: Option<Store>,
    pub path: PathBuf,
    pub file: std::fs::File,
}

/// Removes the trace file `path` (not stdout) after a failure before its header.
pub fn remove_output(path: &Path) {
    if path != Path::new("-") {
        let _ = std::fs::remove_file(path);
    }
}

/// Creates the recording directory (`--replayable`, the trace inside it) or
/// names the trace file, and creates the trace file.
pub fn create_output(o: &RecordOptions, run_as: Option<&spawn::RunAs>, started: Duration) -> anyhow::Result<Output> {
    let zstd = o.compress == crate::collect::zstd_out::Compress::Zstd;
    if o.to_stdout() {
        if o.replayable() {
            return Err(UsageError(
                "-o - writes the trace to stdout: not with --replayable (a recording is a directory)".into(),
            )
            .into());
        }
        if std::io::IsTerminal::is_terminal(&std::io::stdout()) {
            return Err(UsageError("-o -: stdout is a terminal; redirect it to a file or a pipe".into()).into());
        }
        use std::os::fd::AsFd as _;
        let fd = std::io::stdout().as_fd().try_clone_to_owned().context("duplicating stdout")?;
        return Ok(Output { store: None, path: PathBuf::from("-"), file: std::fs::File::from(fd) });
    }
    let store = match o.replayable() {
        true => {
            let dir = o
                .output
                .clone()
                .unwrap_or_else(|| PathBuf::from(format!("trace_{}.rec", sysinfo::compact_utc(started.as_secs()))));
            Some(
                Store::create(&dir, o.force, run_as, o.private)
                    .map_err(|e| UsageError(crate::error::one_line(&e)))?
                    .zstd(zstd),
            )
        }
        false => None,
    };
    let path = match &store {
        Some(s) => s.trace_path(),
        None => {
            o.compress.output_path(o.output.as_deref(), &sysinfo::compact_utc(started.as_secs())).map_err(UsageError)?
        }
    };
    let mode = if o.private { 0o600 } else { 0o644 };
    let file = spawn::create_output_file(&path, o.force || store.is_some(), run_as, mode)
        .map_err(|e| UsageError(crate::error::one_line(&e)))?;
    Ok(Output { store, path, file })
}

/// `--private`: an existing file (`--force`) keeps its mode on open, so set
/// it (never on a device such as `--force -o /dev/null`).
pub fn make_private(o: &RecordOptions, file: &std::fs::File, out_path: &Path) -> anyhow::Result<()> {
    if o.private && file.metadata().is_ok_and(|m| m.is_file()) {
        use std::os::unix::fs::PermissionsExt as _;
        file.set_permissions(std::fs::Permissions::from_mode(0o600))
            .with_context(|| format!("making {} private", out_path.display()))?;
    }
    Ok(())
}
