//! DuckDB for tracer/tests/parquet_duckdb.rs (it reads `tracer export
//! --format parquet`'s files): PyPI's `duckdb`, pinned, in a virtual
//! environment under the target directory (no system Python package is
//! touched). Needs Debian's python3-venv (apt.rs).

use std::path::PathBuf;

use anyhow::Result;

use crate::util;

pub const VERSION: &str = "2.0.1";

/// `target/duckdb-venv`: the test finds its `bin/python3` there.
fn venv() -> PathBuf {
    util::target_dir().join("duckdb-venv")
}

pub fn ensure() -> Result<()> {
    let python = venv().join("bin/python3");
    let check = format!("import duckdb, sys; sys.exit(duckdb.__version__ != '{VERSION}')");
    if python.is_file() && util::output(util::cmd(&python).args(["-c", &check])).is_ok() {
        println!("ok: duckdb {VERSION} present (target/duckdb-venv)");
        return Ok(());
    }
    println!("installing duckdb {VERSION} (pip, into target/duckdb-venv)");
    if !python.is_file() {
        util::run(util::cmd("/usr/bin/python3").arg("-m").arg("venv").arg(venv()))?;
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
