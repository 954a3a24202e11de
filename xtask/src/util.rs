//! Helpers shared by the subcommands: paths, running commands, small formatting.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use std::{env, fs};

use anyhow::{Context, Result, bail};

/// The workspace root (parent of the xtask crate). `cargo run` sets CARGO_MANIFEST_DIR
/// at run time; the compile-time value is the fallback.
pub fn repo_root() -> &'static Path {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    ROOT.get_or_init(|| {
        let manifest = env::var_os("CARGO_MANIFEST_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")));
        manifest.parent().map(Path::to_path_buf).unwrap_or(manifest)
    })
}

/// Cargo's target directory (CARGO_TARGET_DIR or `<root>/target`).
pub fn target_dir() -> PathBuf {
    match env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => repo_root().join(dir),
        None => repo_root().join("target"),
    }
}

/// `$CARGO_HOME/bin`, or `~/.cargo/bin`.
pub fn cargo_bin_dir() -> Option<PathBuf> {
    let home = env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))?;
    Some(home.join("bin"))
}

/// PATH for child processes: the current one, with the cargo bin dir prepended when missing
/// (bpf-linker lives there and aya-build finds it through PATH).
pub fn search_path() -> &'static OsString {
    static PATH: OnceLock<OsString> = OnceLock::new();
    PATH.get_or_init(|| {
        let mut dirs: Vec<PathBuf> = env::var_os("PATH").map(|p| env::split_paths(&p).collect()).unwrap_or_default();
        if let Some(bin) = cargo_bin_dir()
            && !dirs.contains(&bin)
        {
            dirs.insert(0, bin);
        }
        env::join_paths(dirs).unwrap_or_else(|_| env::var_os("PATH").unwrap_or_default())
    })
}

/// First executable called `name` in [`search_path`].
pub fn find_in_path(name: &str) -> Option<PathBuf> {
    env::split_paths(search_path()).map(|dir| dir.join(name)).find(|p| p.is_file())
}

/// A command run from the repo root with [`search_path`] as PATH.
pub fn cmd(program: impl AsRef<OsStr>) -> Command {
    let mut c = Command::new(program);
    c.env("PATH", search_path()).current_dir(repo_root());
    c
}

/// The cargo that runs us (same toolchain), or `cargo`.
pub fn cargo() -> Command {
    cmd(env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
}

/// Short name for messages: program basename plus its first argument if not a flag.
fn describe(c: &Command) -> String {
    let prog = Path::new(c.get_program()).file_name().unwrap_or(c.get_program()).to_string_lossy().into_owned();
    match c.get_args().next().map(|a| a.to_string_lossy()) {
        Some(a) if !a.starts_with('-') => format!("{prog} {a}"),
        _ => prog,
    }
}

/// The command line as shell-like text, with the env vars we set (PATH left out).
fn command_line(c: &Command) -> String {
    let mut parts: Vec<String> = c
        .get_envs()
        .filter(|(k, _)| *k != "PATH")
        .filter_map(|(k, v)| Some(format!("{}={}", k.to_string_lossy(), v?.to_string_lossy())))
        .collect();
    let prog = Path::new(c.get_program());
    parts.push(prog.file_name().unwrap_or(prog.as_os_str()).to_string_lossy().into_owned());
    parts.extend(c.get_args().map(|a| a.to_string_lossy().into_owned()));
    parts.join(" ")
}

fn status_text(s: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (s.code(), s.signal()) {
        (Some(code), _) => format!("exit {code}"),
        (None, Some(sig)) => format!("killed by signal {sig}"),
        _ => s.to_string(),
    }
}

/// Runs `c` with inherited stdio; error if it cannot start or exits non-zero.
pub fn run(c: &mut Command) -> Result<()> {
    println!("$ {}", command_line(c));
    let name = describe(c);
    let status = c.status().with_context(|| format!("cannot run {name}"))?;
    if !status.success() {
        bail!("{name} failed ({})", status_text(status));
    }
    Ok(())
}

/// Runs `c` quietly and returns its stdout; error if it cannot start or exits non-zero.
pub fn output(c: &mut Command) -> Result<String> {
    let name = describe(c);
    let out = c.stdin(Stdio::null()).output().with_context(|| format!("cannot run {name}"))?;
    if !out.status.success() {
        bail!("{name} failed ({}): {}", status_text(out.status), String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Whether the effective uid is 0 (from /proc/self/status, no libc needed).
pub fn is_root() -> Result<bool> {
    let status = fs::read_to_string("/proc/self/status").context("reading /proc/self/status")?;
    let euid = status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|ids| ids.split_whitespace().nth(1))
        .context("no Uid line in /proc/self/status")?;
    Ok(euid == "0")
}

/// Seconds with one decimal, e.g. "12.3 s".
pub fn secs(d: Duration) -> String {
    format!("{:.1} s", d.as_secs_f64())
}

/// Current UTC time as `YYYYMMDDTHHMMSSZ`.
pub fn utc_timestamp() -> String {
    let t = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_secs();
    let (days, rem) = ((t / 86_400) as i64, t % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}{month:02}{day:02}T{:02}{:02}{:02}Z", rem / 3600, rem / 60 % 60, rem % 60)
}
