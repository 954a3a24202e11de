//! `tracer record --gpu-timestamps`: injects tracer-cupti's library into the
//! command through CUDA_INJECTION64_PATH and turns what it sends through a
//! FIFO into `type: "gpu"` lines (docs/gpu-timestamps.md).
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use serde_json::{Value, json};
use tracer_cupti::sample::{self, Plan};
use tracer_cupti::wire::StreamDecoder;

use crate::collect::collector::Collector;
use crate::collect::spawn::{self, RunAs};
use crate::collect::sysinfo;
use crate::decode::gpu_lines::GpuLines;
use crate::error::UsageError;

/// File name of the injection library (`cargo xtask build` puts it next to tracer).
pub const LIBRARY: &str = "libtracer_cupti.so";
/// The variable naming the FIFO the injection library writes to.
pub const FIFO_ENV: &str = "TRACER_CUPTI_FIFO";
/// The variable naming the libcupti to load (from --cupti-lib).
pub const CUPTI_LIB_ENV: &str = "TRACER_CUPTI_LIB";
const INJECTION_ENV: &str = "CUDA_INJECTION64_PATH";
/// Pipe capacity asked for: ~14,000 kernel records of slack.
const PIPE_BYTES: i32 = 1 << 20;
/// Most bytes read per drain, so the eBPF ring buffer is not starved.
const DRAIN_MAX: usize = 16 << 20;
/// Demands the footer lists (`window_demands`); `windows_demanded` counts them all.
const DEMANDS_LISTED: usize = 32;

pub struct GpuSession {
    library: PathBuf,
    plan: Option<Plan>,
    /// The default recording's GPU side (not asked for with --gpu-timestamps).
    pub implicit: bool,
    /// Measured durations of this run, for the durations library.
    pub measured: crate::collect::gpu_durations::Measured,
    /// Adaptive windows on demand: kernel names known (the library's, then
    /// every one this run launched), the demand file and its counter.
    window_demand: crate::collect::window_demand::WindowDemand,
    demand: Option<(std::fs::File, u64)>,
    /// Windows asked for because a kernel nobody knew was launched.
    pub demanded: u64,
    /// The first [`DEMANDS_LISTED`] demands, for the footer's `window_demands`.
    demands: Vec<Value>,
    dir: PathBuf,
    fd: i32,
    decoder: StreamDecoder,
    pub lines: GpuLines,
}

/// The injection library to use: `--cupti-injection`, else next to the tracer executable.
pub fn find_library(explicit: Option<&Path>, exe: &Path) -> anyhow::Result<PathBuf> {
    let p = match explicit {
        Some(p) => p.to_path_buf(),
        None => exe.parent().unwrap_or(Path::new(".")).join(LIBRARY),
    };
    if !p.is_file() {
        let hint = match explicit {
            Some(_) => "(--cupti-injection)".to_string(),
            None => {
                "(looked next to the tracer executable; build it with `cargo xtask build --release`, which puts it \
                     in target/release/, or pass --cupti-injection PATH)"
                    .to_string()
            }
        };
        return Err(UsageError(format!("--gpu-timestamps: {} not found {hint}", p.display())).into());
    }
    // The driver dlopens the path from the environment: make it absolute.
    p.canonicalize().with_context(|| format!("resolving {}", p.display()))
}

/// Refuses a CUDA_INJECTION64_PATH the user set: two injections cannot share it.
pub fn check_injection_env(current: Option<&std::ffi::OsStr>) -> Result<(), UsageError> {
    match current {
        Some(v) if !v.is_empty() => Err(UsageError(format!(
            "--gpu-timestamps sets CUDA_INJECTION64_PATH, which is already set ({}): unset it, or leave out --gpu-timestamps",
            v.to_string_lossy()
        ))),
        _ => Ok(()),
    }
}

/// The header's `gpu_timestamps` object when the GPU side is off, and why.
pub fn header_off(reason: &str) -> Value {
    json!({ "enabled": false, "library": null, "reason": reason })
}

impl GpuSession {
    /// Creates the FIFO (owned by the user the command runs as) and sets the
    /// variables the command will inherit. Call before spawning the command.
    pub fn start(
        injection: Option<&Path>,
        cupti_lib: Option<&Path>,
        plan: Option<Plan>,
        implicit: bool,
        run_as: Option<&RunAs>,
    ) -> anyhow::Result<GpuSession> {
        check_injection_env(std::env::var_os(INJECTION_ENV).as_deref())?;
        let exe = std::env::current_exe().context("finding the tracer executable")?;
        let library = find_library(injection, &exe)?;
        if let Some(l) = cupti_lib
            && !l.is_file()
        {
            return Err(UsageError(format!("--cupti-lib {}: no such file", l.display())).into());
        }
        let mut tmpl = *b"/tmp/tracer-cupti-XXXXXX\0";
        // SAFETY: a writable NUL-terminated template.
        if unsafe { libc::mkdtemp(tmpl.as_mut_ptr().cast()) }.is_null() {
            bail!("creating a directory in /tmp for the CUPTI FIFO: {}", std::io::Error::last_os_error());
        }
        let dir = PathBuf::from(std::str::from_utf8(&tmpl[..tmpl.len() - 1]).expect("ASCII template"));
        let fifo = dir.join("records");
        let c = CString::new(fifo.as_os_str().as_bytes()).expect("no NUL in a mkdtemp path");
        // SAFETY: valid path; plain syscalls.
        let fd = unsafe {
            if libc::mkfifo(c.as_ptr(), 0o600) != 0 {
                let e = std::io::Error::last_os_error();
                let _ = std::fs::remove_dir(&dir);
                bail!("creating the FIFO {}: {e}", fifo.display());
            }
            // O_RDWR: opening never blocks and reads never see EOF when a
            // writer goes away (several processes come and go).
            libc::open(c.as_ptr(), libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC)
        };
        if fd < 0 {
            let e = std::io::Error::last_os_error();
            let _ = std::fs::remove_dir_all(&dir);
            bail!("opening the FIFO {}: {e}", fifo.display());
        }
        // SAFETY: fcntl on our fd; failure only leaves the default 64 KiB.
        unsafe { libc::fcntl(fd, libc::F_SETPIPE_SZ, PIPE_BYTES) };
        spawn::chown_to(&dir, run_as).context("giving the CUPTI FIFO directory to the invoking user")?;
        spawn::chown_to(&fifo, run_as).context("giving the CUPTI FIFO to the invoking user")?;
        // SAFETY: tracer is still single-threaded here (current-thread tokio
        // runtime, no other threads started); the command inherits these.
        unsafe {
            std::env::set_var(INJECTION_ENV, &library);
            std::env::set_var(FIFO_ENV, &fifo);
            match cupti_lib {
                Some(l) => std::env::set_var(CUPTI_LIB_ENV, l.canonicalize().unwrap_or(l.to_path_buf())),
                None => std::env::remove_var(CUPTI_LIB_ENV),
            }
            match plan {
                Some(p) => std::env::set_var(sample::ENV, p.env_value()),
                None => std::env::remove_var(sample::ENV),
            }
            std::env::remove_var(sample::KNOWN_ENV);
            std::env::remove_var(sample::DEMAND_ENV);
        }
        Ok(GpuSession {
            library,
            plan,
            implicit,
            measured: Default::default(),
            window_demand: Default::default(),
            demand: None,
            demanded: 0,
            demands: Vec::new(),
            dir,
            fd,
            decoder: StreamDecoder::default(),
            lines: GpuLines::default(),
        })
    }

    /// Adaptive windows on demand: a file of one counter (u64, little-endian)
    /// that the injection library's window thread reads while CUPTI is
    /// detached; [`GpuSession::demand_windows`] adds one when the program
    /// launched a kernel configuration that neither the library (`known`,
    /// configuration keys) nor this run knew, or one the library has too few
    /// samples of (`under_measured`) often, and the next window opens then
    /// instead of after its gap (crate::collect::window_demand). Call before
    /// spawning the command.
    pub fn set_demand(
        &mut self,
        known: impl IntoIterator<Item = u64>,
        under_measured: impl IntoIterator<Item = u64>,
        run_as: Option<&RunAs>,
    ) -> anyhow::Result<()> {
        if !matches!(self.plan, Some(Plan::Adaptive(_))) {
            return Ok(());
        }
        self.window_demand = crate::collect::window_demand::WindowDemand::new(known, under_measured);
        let path = self.dir.join("demand");
        std::fs::write(&path, 0u64.to_le_bytes()).with_context(|| format!("writing {}", path.display()))?;
        spawn::chown_to(&path, run_as).context("giving the window demand file to the invoking user")?;
        let f = std::fs::OpenOptions::new().write(true).open(&path)?;
        self.demand = Some((f, 0));
        // SAFETY: still single-threaded, as in start.
        unsafe { std::env::set_var(sample::DEMAND_ENV, &path) };
        Ok(())
    }

    /// Whether windows are asked for on demand (then the collector counts
    /// the run's kernel configurations for [`GpuSession::demand_windows`]).
    pub fn on_demand(&self) -> bool {
        self.demand.is_some()
    }

    /// Asks for a window when a kernel configuration new to the library and
    /// the run is launched a second time, or named by a graph line, or one
    /// the library has too few samples of is launched often
    /// ([`crate::collect::window_demand`]).
    pub fn demand_windows(&mut self, run: &crate::collect::launch_configs::LaunchConfigs) {
        if self.demand.is_none() {
            return;
        }
        let Some(asked) = self.window_demand.check(run) else { return };
        if let Some((f, n)) = self.demand.as_mut() {
            use std::os::unix::fs::FileExt as _;
            *n += 1;
            self.demanded += 1;
            let written = f.write_all_at(&n.to_le_bytes(), 0);
            if self.demands.len() < DEMANDS_LISTED {
                // the footer's list: when (the trace's clock), for what, and whether the file took it
                let now = sysinfo::clock_ns(libc::CLOCK_MONOTONIC);
                let mut d = json!({
                    "ts": now,
                    // how far behind the program the collector was: now less the last line's time
                    "behind_ns": now.saturating_sub(run.last_ts()),
                    "configs": asked.configs,
                    "under_measured": asked.under_measured,
                    "kernel": run.name(asked.first),
                });
                if let Err(e) = written {
                    d["error"] = json!(e.to_string());
                }
                self.demands.push(d);
            }
        }
    }

    /// Adaptive windows: the keys of the work the durations library already
    /// knows go to a file in the session's directory (readable by the user
    /// the command runs as), named to the injection library in the
    /// command's environment. Call before spawning the command.
    pub fn set_known(&self, keys: &[u64], run_as: Option<&RunAs>) -> anyhow::Result<()> {
        if !matches!(self.plan, Some(Plan::Adaptive(_))) || keys.is_empty() {
            return Ok(());
        }
        let path = self.dir.join("known");
        let text: String = keys.iter().map(|k| format!("{k:x}\n")).collect();
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
        spawn::chown_to(&path, run_as).context("giving the known keys to the invoking user")?;
        // SAFETY: still single-threaded, as in start.
        unsafe { std::env::set_var(sample::KNOWN_ENV, &path) };
        Ok(())
    }

    pub fn header(&self) -> Value {
        json!({
            "enabled": true,
            "library": self.library.display().to_string(),
            "reason": null,
            "cupti_lib": std::env::var(CUPTI_LIB_ENV).ok(),
            "mode": match self.plan {
                None => "full",
                Some(Plan::Duty(_)) => "sampled",
                Some(Plan::Adaptive(_)) => "adaptive",
            },
            "implicit": self.implicit,
            "sample": match self.plan {
                Some(Plan::Duty(s)) => json!({"window_ms": s.window_ms, "period_ms": s.period_ms, "lead_ms": s.lead_ms}),
                _ => Value::Null,
            },
            "adaptive": match self.plan {
                Some(Plan::Adaptive(a)) => {
                    json!({"window_ms": a.window_ms, "max_window_ms": a.max_window_ms, "max_gap_ms": a.max_gap_ms,
                        "budget_pct": a.budget_bp as f64 / 100.0, "budget_horizon_ms": a.horizon_ms})
                }
                _ => Value::Null,
            },
            "clock": "CLOCK_MONOTONIC ns, from CUPTI's timestamp callback (or an offset, per process in the footer)",
        })
    }

    /// Reads what the traced processes sent and writes the lines.
    pub fn drain(&mut self, col: &mut Collector) {
        let mut buf = [0u8; 65536];
        let mut total = 0;
        while total < DRAIN_MAX {
            // SAFETY: reading into a local buffer from our fd.
            let n = unsafe { libc::read(self.fd, buf.as_mut_ptr().cast(), buf.len()) };
            if n <= 0 {
                break; // EAGAIN: nothing more now
            }
            total += n as usize;
            let GpuSession { decoder, lines, measured, .. } = self;
            decoder.feed(&buf[..n as usize], &mut |pid, m| {
                if let Some(v) = lines.push(pid, m) {
                    measured.add(&v);
                    col.writer.write(&v);
                }
            });
        }
        // Warnings are rare (no CUPTI, CUPTI refusing, losses) and say that
        // the gpu lines are incomplete: shown even with -q.
        let what = if self.implicit { "GPU durations" } else { "--gpu-timestamps" };
        for w in self.lines.warnings.drain(..) {
            eprintln!("tracer: warning: {what}: {w}");
        }
    }

    /// The footer's `gpu_timestamps` object; warns when no process used CUPTI.
    /// `--check-coverage`: the file the processes append CUPTI's driver call counts to,
    /// in the session's directory (owned by the user the command runs as).
    pub fn driver_counts_path(&self) -> PathBuf {
        self.dir.join("driver_counts")
    }

    pub fn finish(&mut self, col: &mut Collector) -> Value {
        self.drain(col);
        if self.lines.procs.is_empty() && !self.implicit {
            eprintln!(
                "tracer: warning: --gpu-timestamps: no process loaded the injection library \
                 (the command did not initialise CUDA, or its CUDA driver ignores CUDA_INJECTION64_PATH)"
            );
        }
        let mut v = self.lines.footer_with_windows();
        if self.demand.is_some() {
            v["windows_demanded"] = json!(self.demanded);
            v["window_demands"] = json!(self.demands);
        }
        v["incomplete_bytes"] = json!(self.decoder.pending());
        v
    }
}

impl Drop for GpuSession {
    fn drop(&mut self) {
        // SAFETY: our fd, closed once.
        unsafe { libc::close(self.fd) };
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_injection_is_refused() {
        assert!(check_injection_env(None).is_ok());
        assert!(check_injection_env(Some("".as_ref())).is_ok());
        let e = check_injection_env(Some("/opt/nsight/libinj.so".as_ref())).unwrap_err();
        assert_eq!(
            e.0,
            "--gpu-timestamps sets CUDA_INJECTION64_PATH, which is already set (/opt/nsight/libinj.so): \
             unset it, or leave out --gpu-timestamps"
        );
    }

    #[test]
    fn library_is_found_next_to_the_executable() {
        let dir = std::env::temp_dir().join(format!("tracer-gpu-ts-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let exe = dir.join("tracer");
        let e = find_library(None, &exe).unwrap_err().to_string();
        assert!(
            e.starts_with(&format!("--gpu-timestamps: {}/libtracer_cupti.so not found (looked next to", dir.display())),
            "{e}"
        );
        std::fs::write(dir.join(LIBRARY), b"").unwrap();
        assert_eq!(find_library(None, &exe).unwrap(), dir.join(LIBRARY).canonicalize().unwrap());
        let e = find_library(Some(Path::new("/nonexistent/x.so")), &exe).unwrap_err().to_string();
        assert_eq!(e, "--gpu-timestamps: /nonexistent/x.so not found (--cupti-injection)");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
