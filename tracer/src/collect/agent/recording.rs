//! Duty-cycled full traces in the agent: a window of `for` every `every`
//! (and on SIGUSR1 or `POST /record`) writes every line that arrives into
//! a new zstd JSONL file `agent-<UTC>-<n>.jsonl.zst` in the directory, with
//! a header and a footer, readable by every `tracer` command. Before a file
//! is created, the oldest of ours are deleted until the directory's total
//! stays under its cap; a file stops growing at its own cap. A write error
//! ends the window and pauses recording with the reason (`disk_full` for
//! ENOSPC, else `write_error`; `cannot_create` when the file cannot be
//! created) until a later window is written whole; metrics never stop.
//! The files are their owner's only (0600; they hold kernel names, pointers
//! and arguments), and a directory the agent creates is 0700.
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::collect::writer::TraceWriter;
use crate::decode::fastline::Line;

#[derive(Clone, Debug)]
pub struct RecordingOptions {
    pub dir: PathBuf,
    /// None: windows only on request (signal, HTTP).
    pub every: Option<Duration>,
    pub window: Duration,
    /// Cap of one file (bytes on disk, compressed).
    pub file_max_bytes: u64,
    /// Cap of all our files in the directory.
    pub dir_max_bytes: u64,
}

struct Active {
    writer: TraceWriter,
    path: PathBuf,
    until: Instant,
    started: Instant,
}

pub struct Recording {
    opts: RecordingOptions,
    active: Option<Active>,
    next_at: Option<Instant>,
    requested: bool,
    seq: u64,
    pub files: u64,
    pub bytes: u64,
    pub paused: Option<&'static str>,
    /// The last pause's error, for the log.
    pub last_error: Option<String>,
}

/// Our files in `dir`, oldest first, with their sizes.
fn ours(dir: &Path) -> Vec<(PathBuf, u64)> {
    let mut v: Vec<(PathBuf, u64, std::time::SystemTime)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| {
            e.file_name().to_string_lossy().starts_with("agent-")
                && e.file_name().to_string_lossy().ends_with(".jsonl.zst")
        })
        .filter_map(|e| {
            let m = e.metadata().ok()?;
            Some((e.path(), m.len(), m.modified().ok()?))
        })
        .collect();
    v.sort_by(|a, b| a.2.cmp(&b.2).then(a.0.cmp(&b.0)));
    v.into_iter().map(|(p, n, _)| (p, n)).collect()
}

/// Deletes our oldest files until `total + room <= cap`; returns how many.
pub fn rotate(dir: &Path, cap: u64, room: u64) -> usize {
    let files = ours(dir);
    let mut total: u64 = files.iter().map(|f| f.1).sum();
    let mut n = 0;
    for (p, len) in files {
        if total + room <= cap {
            break;
        }
        if std::fs::remove_file(&p).is_ok() {
            total -= len;
            n += 1;
        }
    }
    n
}

fn pause_reason(e: &std::io::Error) -> &'static str {
    if e.raw_os_error() == Some(libc::ENOSPC) || e.raw_os_error() == Some(libc::EDQUOT) {
        "disk_full"
    } else {
        "write_error"
    }
}

impl Recording {
    pub fn new(opts: RecordingOptions, now: Instant) -> anyhow::Result<Recording> {
        use std::os::unix::fs::{DirBuilderExt as _, PermissionsExt as _};
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&opts.dir)
            .map_err(|e| anyhow::anyhow!("--record-dir {}: {e}", opts.dir.display()))?;
        let mode = std::fs::metadata(&opts.dir).map(|m| m.permissions().mode() & 0o777).unwrap_or(0);
        if mode & 0o077 != 0 {
            // An existing directory keeps its mode (it may be shared); the files are 0600 anyway.
            eprintln!(
                "tracer agent: warning: --record-dir {} is mode {mode:o}: others can list the recordings (chmod 700 it)",
                opts.dir.display()
            );
        }
        let next_at = opts.every.map(|_| now);
        Ok(Recording {
            opts,
            active: None,
            next_at,
            requested: false,
            seq: 0,
            files: 0,
            bytes: 0,
            paused: None,
            last_error: None,
        })
    }

    /// A window now (signal or HTTP); false when one is running already.
    pub fn request(&mut self) -> bool {
        if self.active.is_some() || self.requested {
            return false;
        }
        self.requested = true;
        true
    }

    pub fn window(&self) -> Duration {
        self.opts.window
    }

    pub fn active(&self) -> bool {
        self.active.is_some()
    }

    /// Starts and ends windows; `header` makes the header line of a new file,
    /// `footer` the footer of one that ends (its lines, seconds).
    pub fn tick(&mut self, now: Instant, header: &dyn Fn() -> Value, footer: &dyn Fn(u64, f64) -> Value) {
        if let Some(a) = self.active.as_mut() {
            a.writer.flush();
            let len = std::fs::metadata(&a.path).map(|m| m.len()).unwrap_or(0);
            if a.writer.error.is_some() || now >= a.until || len >= self.opts.file_max_bytes {
                self.end(footer);
            }
        }
        let due = self.next_at.is_some_and(|t| now >= t);
        if self.active.is_none() && (due || std::mem::take(&mut self.requested)) {
            if due {
                self.next_at = self.opts.every.map(|e| now + e);
            }
            self.start(now, header);
        }
    }

    fn start(&mut self, now: Instant, header: &dyn Fn() -> Value) {
        rotate(&self.opts.dir, self.opts.dir_max_bytes, self.opts.file_max_bytes);
        let stamp = crate::collect::sysinfo::compact_utc(
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_secs(),
        );
        self.seq += 1;
        let path = self.opts.dir.join(format!("agent-{stamp}-{}.jsonl.zst", self.seq));
        use std::os::unix::fs::OpenOptionsExt as _;
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .and_then(|f| crate::collect::zstd_out::TraceFile::new(f, &path, true));
        match file {
            Ok(f) => {
                let mut writer = TraceWriter::new(f);
                writer.write(&header());
                self.active = Some(Active { writer, path, until: now + self.opts.window, started: now });
            }
            Err(e) => {
                self.paused = Some("cannot_create");
                self.last_error = Some(format!("{}: {e}", path.display()));
            }
        }
    }

    fn end(&mut self, footer: &dyn Fn(u64, f64) -> Value) {
        let Some(mut a) = self.active.take() else { return };
        let lines = a.writer.lines + 1;
        a.writer.write(&footer(lines, a.started.elapsed().as_secs_f64()));
        let err = a.writer.finish().map(|e| (pause_reason(e), e.to_string()));
        self.files += 1;
        self.bytes += std::fs::metadata(&a.path).map(|m| m.len()).unwrap_or(0);
        match err {
            Some((reason, e)) => {
                self.paused = Some(reason);
                self.last_error = Some(format!("{}: {e}", a.path.display()));
            }
            None => self.paused = None,
        }
    }

    /// A line, written when a window is open.
    pub fn line(&mut self, l: &Line) {
        if let Some(a) = self.active.as_mut() {
            a.writer.write_line(l);
        }
    }

    /// Ends the open window (the agent stops).
    pub fn finish(&mut self, footer: &dyn Fn(u64, f64) -> Value) {
        self.end(footer);
    }
}

/// The footer of a window file.
pub fn footer(lines: u64, seconds: f64, lost: u64) -> Value {
    json!({
        "type": "footer",
        "agent_window": true,
        "lines": lines,
        "duration_s": seconds,
        "lost": { "total": lost },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("tracer-agent-rec-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    fn opts(d: &Path) -> RecordingOptions {
        RecordingOptions {
            dir: d.to_path_buf(),
            every: Some(Duration::from_secs(60)),
            window: Duration::from_secs(2),
            file_max_bytes: 1 << 20,
            dir_max_bytes: 10 << 20,
        }
    }

    #[test]
    fn a_window_every_period_with_header_and_footer() {
        let d = dir("period");
        let t0 = Instant::now();
        let mut r = Recording::new(opts(&d), t0).unwrap();
        let h = || json!({"type": "header", "format": "tracer-jsonl"});
        let f = |n, s| footer(n, s, 0);
        r.tick(t0, &h, &f);
        assert!(r.active());
        r.line(&Line::Value(json!({"type": "init", "name": "cuInit", "pid": 1, "ts": 5})));
        r.tick(t0 + Duration::from_secs(1), &h, &f);
        assert!(r.active());
        r.tick(t0 + Duration::from_secs(2), &h, &f);
        assert!(!r.active());
        assert!(r.request());
        assert!(!r.request(), "a second request while one is pending is refused");
        r.tick(t0 + Duration::from_secs(3), &h, &f);
        assert!(r.active(), "the requested window");
        r.tick(t0 + Duration::from_secs(5), &h, &f);
        assert_eq!((r.files, r.paused), (2, None));
        let files = ours(&d);
        assert_eq!(files.len(), 2);
        let mut lines: Vec<Value> = vec![];
        tracer_format::read::for_each(&files[0].0, |v| lines.push(v.clone())).unwrap();
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[0]["type"], "header");
        use std::os::unix::fs::PermissionsExt as _;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!((mode(&d), mode(&files[0].0)), (0o700, 0o600));
        assert_eq!(lines[1]["name"], "cuInit");
        assert_eq!((lines[2]["type"].as_str(), lines[2]["lines"].as_u64()), (Some("footer"), Some(3)));
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn rotation_deletes_the_oldest_of_ours_only() {
        let d = dir("rotate");
        std::fs::create_dir_all(&d).unwrap();
        for (i, name) in ["agent-a-1.jsonl.zst", "agent-a-2.jsonl.zst", "other.txt"].iter().enumerate() {
            std::fs::write(d.join(name), vec![0u8; 100]).unwrap();
            let t = std::time::SystemTime::UNIX_EPOCH + Duration::from_secs(1_000 + i as u64);
            std::fs::File::options().write(true).open(d.join(name)).unwrap().set_modified(t).unwrap();
        }
        // Ours: 200 bytes; 50 more must fit under 200: the oldest goes.
        assert_eq!(rotate(&d, 200, 50), 1);
        assert!(!d.join("agent-a-1.jsonl.zst").exists());
        assert!(d.join("agent-a-2.jsonl.zst").exists() && d.join("other.txt").exists());
        assert_eq!(rotate(&d, 200, 50), 0);
        let _ = std::fs::remove_dir_all(&d);
    }
}
