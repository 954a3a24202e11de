//! `cargo xtask demo`: build release, then trace the transformer example on a GPU machine,
//! or, without a usable GPU, summarise the recording committed in traces/.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use anyhow::{Context, Result, bail};

use crate::{build, util};

/// The committed recording (made on an H100), relative to the repo root.
pub const DEFAULT_TRACE: &str = "traces/transformer_inference.jsonl.gz";
const EXAMPLE: &str = "examples/transformer_inference.py";
/// The torch-enabled Python of the H100 test machine, tried after python3 from PATH.
const TORCH_VENV_PYTHON: &str = "/opt/torch/.venv/bin/python3";
const FALLBACK: &str = "showing the summary of the recording committed in traces/ (recorded on an H100)";

pub fn run() -> Result<()> {
    build::run(true)?;
    let tracer = util::target_dir().join("release/tracer");
    match gpu_python() {
        Some(python) => {
            fs::create_dir_all(util::repo_root().join("traces")).context("creating traces/")?;
            let out = format!("traces/demo_{}.jsonl", util::utc_timestamp());
            util::run(util::cmd(&tracer).args(["-o", &out, "--"]).arg(&python).arg(EXAMPLE))?;
            util::run(util::cmd(&tracer).args(["summary", &out]))
        }
        None => {
            if !util::repo_root().join(DEFAULT_TRACE).is_file() {
                bail!("{DEFAULT_TRACE} is missing: nothing to summarise");
            }
            util::run(util::cmd(&tracer).args(["summary", DEFAULT_TRACE]))
        }
    }
}

/// A python3 that can import torch, if this machine has an NVIDIA driver and the example.
/// Otherwise prints one line saying why and returns None.
fn gpu_python() -> Option<PathBuf> {
    if !Path::new("/proc/driver/nvidia/version").exists() && !Path::new("/dev/nvidiactl").exists() {
        println!("no NVIDIA driver on this machine: {FALLBACK}");
        return None;
    }
    if !util::repo_root().join(EXAMPLE).is_file() {
        println!("{EXAMPLE} is missing: {FALLBACK}");
        return None;
    }
    let candidates: Vec<PathBuf> = util::find_in_path("python3")
        .into_iter()
        .chain(Some(PathBuf::from(TORCH_VENV_PYTHON)).filter(|p| p.is_file()))
        .collect();
    let found = candidates.iter().find(|py| {
        util::cmd(py)
            .args(["-c", "import torch"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    });
    if found.is_none() {
        let tried: Vec<String> = candidates.iter().map(|p| p.display().to_string()).collect();
        let tried = if tried.is_empty() { "no python3 found".to_owned() } else { tried.join(", ") };
        println!("python3 cannot import torch ({tried}): {FALLBACK}");
    }
    found.cloned()
}
