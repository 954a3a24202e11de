//! Phase markers: the traced program writes lines such as `phase warmup` or
//! `iteration 3 tokens=20` to a FIFO named by the environment variable
//! TRACER_MARKER_FIFO; a reader thread turns them into `marker` lines of the
//! trace. The protocol and its rationale are in docs/markers.md.
pub mod lines;
pub mod parse;

use std::ffi::{CString, OsString};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt as _;
use std::path::PathBuf;
use std::sync::mpsc::{SyncSender, TrySendError};
use std::thread::JoinHandle;

use anyhow::{Context as _, bail};
use serde_json::{Value, json};

use crate::collect::spawn::RunAs;
use lines::{LineSplitter, Piece};
use parse::MarkerError;

/// The variable the traced command gets.
pub const ENV_VAR: &str = "TRACER_MARKER_FIFO";
/// How many malformed lines the footer quotes.
const EXAMPLES: usize = 5;

/// A FIFO in a fresh private directory, owned by the user the command runs
/// as. Tracer holds its read end and also a write end, so that reads never
/// see end-of-file while writers come and go, and a program opening it for
/// writing never blocks (a reader is always there). Removed on drop.
pub struct MarkerFifo {
    dir: PathBuf,
    pub path: PathBuf,
    rd: OwnedFd,
    _keep_wr: OwnedFd,
}

fn cstr(p: &std::path::Path) -> anyhow::Result<CString> {
    CString::new(p.as_os_str().as_bytes()).context("path contains a NUL byte")
}

fn open_fd(p: &CString, flags: i32) -> std::io::Result<OwnedFd> {
    // SAFETY: p is a valid C string; the returned fd is owned by us.
    let fd = unsafe { libc::open(p.as_ptr(), flags | libc::O_CLOEXEC | libc::O_NONBLOCK) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: fd is a fresh open file descriptor.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

impl MarkerFifo {
    pub fn create(run_as: Option<&RunAs>) -> anyhow::Result<Self> {
        let template = std::env::temp_dir().join("tracer-markers-XXXXXX");
        let mut t = cstr(&template)?.into_bytes_with_nul();
        // SAFETY: t is a writable NUL-terminated template.
        if unsafe { libc::mkdtemp(t.as_mut_ptr().cast()) }.is_null() {
            return Err(std::io::Error::last_os_error())
                .with_context(|| format!("creating a directory like {}", template.display()));
        }
        t.pop();
        let dir = PathBuf::from(std::ffi::OsStr::from_bytes(&t));
        let path = dir.join("markers");
        let made = (|| -> anyhow::Result<(OwnedFd, OwnedFd)> {
            let c = cstr(&path)?;
            // SAFETY: c is a valid C string.
            if unsafe { libc::mkfifo(c.as_ptr(), 0o600) } != 0 {
                return Err(std::io::Error::last_os_error()).context("mkfifo");
            }
            crate::collect::spawn::chown_to(&path, run_as).context("chown")?;
            crate::collect::spawn::chown_to(&dir, run_as).context("chown")?;
            let rd = open_fd(&c, libc::O_RDONLY).context("opening for reading")?;
            let wr = open_fd(&c, libc::O_WRONLY).context("opening for writing")?;
            Ok((rd, wr))
        })();
        match made {
            Ok((rd, wr)) => Ok(MarkerFifo { dir, path, rd, _keep_wr: wr }),
            Err(e) => {
                let _ = std::fs::remove_file(&path);
                let _ = std::fs::remove_dir(&dir);
                Err(e).with_context(|| format!("marker FIFO {}", path.display()))
            }
        }
    }

    /// The variable to add to the command's environment.
    pub fn env(&self) -> (OsString, OsString) {
        (ENV_VAR.into(), self.path.clone().into_os_string())
    }
}

impl Drop for MarkerFifo {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// What the footer says about markers.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct MarkerStats {
    /// Marker lines handed to the writer.
    pub markers: u64,
    pub malformed: u64,
    /// Lost because the channel to the writer was full.
    pub dropped: u64,
    /// Markers without ts= (stamped when read) or pid= (the traced command's pid).
    pub without_ts: u64,
    pub without_pid: u64,
    /// The first malformed lines: "line N: reason: text".
    pub examples: Vec<String>,
    /// Lines seen, blank ones included (numbering for the examples).
    pub lines: u64,
}

impl MarkerStats {
    pub fn to_json(&self) -> Value {
        json!({
            "markers": self.markers,
            "malformed": self.malformed,
            "dropped": self.dropped,
            "without_ts": self.without_ts,
            "without_pid": self.without_pid,
            "malformed_examples": self.examples,
        })
    }
}

/// Turns pieces of the FIFO's byte stream into trace lines: the parser and
/// the counting, without I/O (tested directly).
pub struct MarkerDecoder {
    pub splitter: LineSplitter,
    pub stats: MarkerStats,
    pub default_pid: u32,
}

impl MarkerDecoder {
    pub fn new(default_pid: u32) -> Self {
        MarkerDecoder { splitter: LineSplitter::default(), stats: MarkerStats::default(), default_pid }
    }

    fn piece(stats: &mut MarkerStats, default_pid: u32, p: Piece<'_>, now: u64, send: &mut dyn FnMut(Value) -> bool) {
        stats.lines += 1;
        let parsed = match p {
            Piece::Line(l) => parse::parse_line(l).map_err(|e| (e, l)),
            Piece::TooLong(n) => Err((MarkerError::TooLong(n), &b""[..])),
        };
        let result = parsed.and_then(|m| match m {
            None => Ok(None),
            Some(m) => parse::marker_line(&m, now, default_pid).map(|v| Some((m, v))).map_err(|e| (e, &b""[..])),
        });
        match result {
            Ok(None) => {}
            Ok(Some((m, v))) => {
                stats.without_ts += m.ts.is_none() as u64;
                stats.without_pid += m.pid.is_none() as u64;
                if send(v) {
                    stats.markers += 1;
                } else {
                    stats.dropped += 1;
                }
            }
            Err((e, text)) => {
                stats.malformed += 1;
                if stats.examples.len() < EXAMPLES {
                    let text: String = String::from_utf8_lossy(text).chars().take(80).collect();
                    stats.examples.push(if text.is_empty() {
                        format!("line {}: {e}", stats.lines)
                    } else {
                        format!("line {}: {e}: {text:?}", stats.lines)
                    });
                }
            }
        }
    }

    /// Feeds bytes read at `now` (CLOCK_MONOTONIC ns). `send` returns false
    /// when the line could not be queued.
    pub fn push(&mut self, data: &[u8], now: u64, send: &mut dyn FnMut(Value) -> bool) {
        let MarkerDecoder { splitter, stats, default_pid } = self;
        splitter.push(data, &mut |p| Self::piece(stats, *default_pid, p, now, send));
    }

    pub fn finish(&mut self, now: u64, send: &mut dyn FnMut(Value) -> bool) {
        let MarkerDecoder { splitter, stats, default_pid } = self;
        splitter.finish(&mut |p| Self::piece(stats, *default_pid, p, now, send));
    }
}

/// The reader thread.
pub struct MarkerReader {
    stop_wr: OwnedFd,
    thread: JoinHandle<MarkerStats>,
}

fn pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: fds has room for two descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both are fresh descriptors we own.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Reads what is available now; false at EOF or on an error other than EAGAIN.
fn read_available(fd: &OwnedFd, buf: &mut [u8], dec: &mut MarkerDecoder, send: &mut dyn FnMut(Value) -> bool) -> bool {
    loop {
        // SAFETY: buf is valid for buf.len() bytes.
        let n = unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        if n > 0 {
            let now = crate::collect::sysinfo::clock_ns(libc::CLOCK_MONOTONIC);
            dec.push(&buf[..n as usize], now, send);
            continue;
        }
        if n == 0 {
            return false;
        }
        let e = std::io::Error::last_os_error();
        return match e.raw_os_error() {
            Some(libc::EAGAIN) => true,
            Some(libc::EINTR) => continue,
            _ => {
                log::warn!("reading the marker FIFO: {e}");
                false
            }
        };
    }
}

impl MarkerReader {
    /// Starts reading `fifo`; lines go to `tx` (try_send: a full channel
    /// drops and counts, the FIFO is never left unread).
    pub fn start(fifo: MarkerFifo, default_pid: u32, tx: SyncSender<Value>) -> anyhow::Result<Self> {
        let (stop_rd, stop_wr) = pipe().context("creating a pipe")?;
        let thread = std::thread::Builder::new()
            .name("tracer-markers".into())
            .spawn(move || {
                crate::collect::own_sched::apply(crate::collect::own_sched::Role::Keeps);
                let mut dec = MarkerDecoder::new(default_pid);
                let mut send = |v: Value| match tx.try_send(v) {
                    Ok(()) => true,
                    Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => false,
                };
                let mut buf = vec![0u8; 65536];
                loop {
                    let mut pfd = [
                        libc::pollfd { fd: fifo.rd.as_raw_fd(), events: libc::POLLIN, revents: 0 },
                        libc::pollfd { fd: stop_rd.as_raw_fd(), events: libc::POLLIN, revents: 0 },
                    ];
                    // SAFETY: pfd is a valid array of two pollfds.
                    let r = unsafe { libc::poll(pfd.as_mut_ptr(), 2, -1) };
                    if r < 0 {
                        if std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                            continue;
                        }
                        break;
                    }
                    if pfd[0].revents != 0 && !read_available(&fifo.rd, &mut buf, &mut dec, &mut send) {
                        break;
                    }
                    if pfd[1].revents != 0 {
                        // Stop: take what the program wrote before it ended.
                        read_available(&fifo.rd, &mut buf, &mut dec, &mut send);
                        break;
                    }
                }
                dec.finish(crate::collect::sysinfo::clock_ns(libc::CLOCK_MONOTONIC), &mut send);
                drop(fifo);
                dec.stats
            })
            .context("starting the marker thread")?;
        Ok(MarkerReader { stop_wr, thread })
    }

    /// Reads what is left, removes the FIFO and returns the counts.
    pub fn stop(self) -> anyhow::Result<MarkerStats> {
        // SAFETY: writing one byte from a valid buffer.
        if unsafe { libc::write(self.stop_wr.as_raw_fd(), [1u8].as_ptr().cast(), 1) } != 1 {
            bail!("stopping the marker thread: {}", std::io::Error::last_os_error());
        }
        self.thread.join().map_err(|_| anyhow::anyhow!("the marker thread panicked"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(chunks: &[&[u8]], now: u64) -> (Vec<Value>, MarkerStats) {
        let mut dec = MarkerDecoder::new(77);
        let mut out = vec![];
        for c in chunks {
            dec.push(c, now, &mut |v| {
                out.push(v);
                true
            });
        }
        dec.finish(now + 1, &mut |v| {
            out.push(v);
            true
        });
        (out, dec.stats)
    }

    #[test]
    fn decoder_counts_and_quotes() {
        let (out, st) = decode(
            &[
                b"phase import ts=100 pid=5 tid=6\nbogus line\n\n",
                b"iteration 0 tokens=20\nmark x ts=99999999999999\nmark ",
                b"end",
            ],
            1000,
        );
        assert_eq!(
            out,
            vec![
                json!({"ts":100,"pid":5,"tid":6,"type":"marker","op":"phase","name":"marker","label":"import"}),
                json!({"ts":1000,"pid":77,"tid":0,"type":"marker","op":"iteration","name":"marker","label":"0","tokens":20}),
                json!({"ts":1001,"pid":77,"tid":0,"type":"marker","op":"mark","name":"marker","label":"end"}),
            ]
        );
        assert_eq!((st.markers, st.malformed, st.dropped, st.without_ts, st.without_pid), (3, 2, 0, 2, 2));
        assert_eq!(
            st.examples,
            vec![
                "line 2: unknown marker \"bogus\": expected phase, iteration or mark: \"bogus line\"".to_string(),
                "line 5: ts=99999999999999 is 99999 s ahead of CLOCK_MONOTONIC: use time.monotonic_ns() / clock_gettime(CLOCK_MONOTONIC)".to_string(),
            ]
        );
    }

    #[test]
    fn full_channel_drops() {
        let mut dec = MarkerDecoder::new(1);
        let mut n = 0;
        dec.push(b"mark a\nmark b\nmark c\n", 5, &mut |_| {
            n += 1;
            n != 2
        });
        assert_eq!((dec.stats.markers, dec.stats.dropped), (2, 1));
    }

    /// The real FIFO and thread: a writer process, a blank line, garbage,
    /// and a marker written just before stop all come out.
    #[test]
    fn fifo_round_trip() {
        let fifo = MarkerFifo::create(None).unwrap();
        let path = fifo.path.clone();
        let dir = path.parent().unwrap().to_path_buf();
        let (tx, rx) = std::sync::mpsc::sync_channel(16);
        let reader = MarkerReader::start(fifo, 42, tx).unwrap();
        let st = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!(
                "printf 'phase load ts=10 pid=9\\n\\nnonsense\\n' > {p}; echo 'iteration 1 tokens=3 ts=11' > {p}",
                p = path.display()
            ))
            .status()
            .unwrap();
        assert!(st.success());
        let stats = reader.stop().unwrap();
        let got: Vec<Value> = rx.try_iter().collect();
        assert_eq!(
            got,
            vec![
                json!({"ts":10,"pid":9,"tid":0,"type":"marker","op":"phase","name":"marker","label":"load"}),
                json!({"ts":11,"pid":42,"tid":0,"type":"marker","op":"iteration","name":"marker","label":"1","tokens":3}),
            ]
        );
        assert_eq!((stats.markers, stats.malformed), (2, 1));
        assert!(!path.exists() && !dir.exists(), "FIFO left behind");
    }
}
