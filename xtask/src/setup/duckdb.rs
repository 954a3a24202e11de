//! DuckDB for tracer/tests/parquet_duckdb.rs (it reads `tracer export
//! --format parquet`'s files): PyPI's `duckdb`, pinned, in a virtual
//! environment in `~/.cache/tracer/duckdb-venv` (no system Python package
//! is touched; kept across clones and `cargo clean`, as bpf-linker in
//! ~/.cargo/bin). Needs Debian's python3-venv (apt.rs).

use std::env;
use std::path::PathBuf;

use anyhow::{Context, Result};

use crate::util;

pub const VERSION: &str = "2.0.1";

/// `$HOME/.cache/tracer/duckdb-venv`: the test finds its `bin/python3` there.
fn venv() -> Result<PathBuf> {
    let home = env::var_os("HOME").context("HOME is not set: no place for the DuckDB virtual environment")?;
    Ok(PathBuf::from(home).join(".cache/tracer/duckdb-venv"))
}

pub fn ensure() -> Result<()> {
    let venv = venv()?;
    let python = venv.join("bin/python3");
    let check = format!("import duckdb, sys; sys.exit(duckdb.__version__ != '{VERSION}')");
    if python.is_file() && util::output(util::cmd(&python).args(["-c", &check])).is_ok() {
        println!("ok: duckdb {VERSION} present ({})", venv.display());
        return Ok(());
    }
    println!("installing duckdb {VERSION} (pip, into {})", venv.display());
    if !python.is_file() {
        util::run(util::cmd("/usr/bin/python3").arg("-m").arg("venv").arg(&venv))?;
    }
    util::run(util::cmd(&python).args([
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        &format!("duckdb=={VERSION}"),
    ]))
}
