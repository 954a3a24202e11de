//! `replay run`.

use std::process::ExitCode;

use anyhow::Result;

use crate::cli::RunArgs;

pub fn run(_a: &RunArgs) -> Result<ExitCode> {
    anyhow::bail!("not built yet")
}
