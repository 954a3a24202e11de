//! The agent's HTTP server against ordinary and hostile clients, on
//! 127.0.0.1 only, bounded in connections (at most ~1,000). The verdicts
//! are what was answered and what the server counted, never how long it
//! took: a client waits at most [`HUNG`] for a byte, and only to fail with
//! "hung" instead of blocking forever.
use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::sync::Mutex;
use std::time::Instant;

use super::*;

/// How long a client waits for the server before calling it hung: far
/// beyond anything a loaded machine takes to answer (milliseconds).
const HUNG: Duration = Duration::from_secs(60);

/// A server on 127.0.0.1:0 serving `body` at /metrics; `record` answers POST /record.
fn start(body: String, record: Option<Box<dyn Fn() -> RecordAnswer + Send + Sync>>, limits: Limits) -> SocketAddr {
    start_counted(body, record, limits).0
}

/// [`start`], with what the server counts.
fn start_counted(
    body: String,
    record: Option<Box<dyn Fn() -> RecordAnswer + Send + Sync>>,
    limits: Limits,
) -> (SocketAddr, Arc<Stats>) {
    let l = bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let stats = Arc::new(Stats::default());
    let server = Server {
        handlers: Handlers {
            metrics: Box::new(move || body.clone()),
            content_type: "application/openmetrics-text; version=1.0.0; charset=utf-8",
            record,
        },
        limits,
        tls: None,
        auth: None,
        stats: stats.clone(),
    };
    spawn(l, Arc::new(server)).unwrap();
    (addr, stats)
}

fn connect(addr: SocketAddr) -> TcpStream {
    let c = TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(HUNG)).unwrap();
    c
}

/// Reads `c` until the server closes it (EOF or a reset); panics "hung"
/// when no byte and no close came for [`HUNG`].
fn read_until_closed(c: &mut TcpStream, what: &str) -> Vec<u8> {
    let mut out = vec![];
    match c.read_to_end(&mut out) {
        Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {
            panic!("{what}: hung: no byte and no close for {HUNG:?} after {} bytes", out.len())
        }
        _ => out,
    }
}

/// Sends `req` and reads until the server closes: the whole answer.
fn exchange(addr: SocketAddr, req: &[u8]) -> String {
    let mut c = connect(addr);
    c.write_all(req).unwrap();
    let out = read_until_closed(&mut c, &format!("{:?}", String::from_utf8_lossy(&req[..req.len().min(40)])));
    String::from_utf8_lossy(&out).into_owned()
}

/// Polls `done` until it holds; panics "hung" with `what` after [`HUNG`].
fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !done() {
        assert!(t0.elapsed() < HUNG, "hung: {what} after {HUNG:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// GET /metrics with Connection: close: (status line, body length, seconds).
fn scrape(addr: SocketAddr) -> (String, usize, f64) {
    let t = Instant::now();
    let r = exchange(addr, b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    let status = r.lines().next().unwrap_or("").to_string();
    let body = r.split_once("\r\n\r\n").map_or(0, |x| x.1.len());
    (status, body, t.elapsed().as_secs_f64())
}

#[test]
fn serves_metrics_record_and_errors() {
    let n = Arc::new(Mutex::new(0));
    let n2 = n.clone();
    let record: Box<dyn Fn() -> RecordAnswer + Send + Sync> = Box::new(move || {
        let mut n = n2.lock().unwrap();
        *n += 1;
        match *n {
            1 => RecordAnswer::Started("recording for 2 s\n".into()),
            2 => RecordAnswer::Busy("a window is recording\n".into()),
            _ => RecordAnswer::TooSoon(7),
        }
    });
    let addr = start("# EOF\n".into(), Some(record), Limits::default());
    let r = exchange(addr, b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert!(r.starts_with("HTTP/1.1 200 OK\r\n"), "{r}");
    let lower = r.to_ascii_lowercase();
    assert!(lower.contains("content-type: application/openmetrics-text; version=1.0.0"), "{r}");
    assert!(r.ends_with("\r\n\r\n# EOF\n") && lower.contains("content-length: 6\r\n"), "{r}");
    let head = exchange(addr, b"HEAD /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert!(head.starts_with("HTTP/1.1 200 OK\r\n") && head.ends_with("\r\n\r\n"), "{head}");
    let post = |body: &str| {
        exchange(
            addr,
            format!(
                "POST /record HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            )
            .as_bytes(),
        )
    };
    let r = post("");
    assert!(r.starts_with("HTTP/1.1 202 Accepted") && r.ends_with("recording for 2 s\n"), "{r}");
    assert!(post("x").starts_with("HTTP/1.1 409 Conflict"));
    let r = post("");
    assert!(
        r.starts_with("HTTP/1.1 429 Too Many Requests") && r.to_ascii_lowercase().contains("retry-after: 7"),
        "{r}"
    );
    assert!(post(&"x".repeat(5000)).starts_with("HTTP/1.1 413"));
    assert_eq!(*n.lock().unwrap(), 3, "a refused body never reaches the handler");
    assert!(exchange(addr, b"GET /nope HTTP/1.1\r\nConnection: close\r\n\r\n").starts_with("HTTP/1.1 404"));
    let r = exchange(addr, b"DELETE /metrics HTTP/1.1\r\nConnection: close\r\n\r\n");
    assert!(r.starts_with("HTTP/1.1 405") && r.to_ascii_lowercase().contains("allow: get, head"), "{r}");

    // Off: 403, whatever the body.
    let off = start("# EOF\n".into(), None, Limits::default());
    let r = exchange(off, b"POST /record HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    assert!(r.starts_with("HTTP/1.1 403 Forbidden") && r.contains("--web.enable-record"), "{r}");
}

#[test]
fn keep_alive_and_pipelining_answer_every_request_in_order() {
    let addr = start("# EOF\n".into(), None, Limits::default());
    let mut c = connect(addr);
    // Three requests in one write, the last one closing.
    c.write_all(
        b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\nGET /nope HTTP/1.1\r\nHost: x\r\n\r\nHEAD / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    )
    .unwrap();
    let mut out = String::new();
    c.read_to_string(&mut out).unwrap();
    let statuses: Vec<&str> = out.lines().filter(|l| l.starts_with("HTTP/1.1 ")).collect();
    assert_eq!(statuses, ["HTTP/1.1 200 OK", "HTTP/1.1 404 Not Found", "HTTP/1.1 200 OK"], "{out}");
    // Keep-alive: two requests one after the other on one connection.
    let mut c = connect(addr);
    for _ in 0..2 {
        c.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        let mut buf = vec![0u8; 4096];
        let mut got = String::new();
        while !got.ends_with("# EOF\n") {
            let n = c.read(&mut buf).unwrap();
            assert!(n > 0, "closed after {got:?}");
            got.push_str(&String::from_utf8_lossy(&buf[..n]));
        }
        assert!(got.starts_with("HTTP/1.1 200 OK"), "{got}");
    }
}

/// 100 slowloris connections (a header line every 300 ms, never the end of
/// the head), 4 clients that pipeline requests for a 1 MiB exposition and
/// never read, garbage bytes, a TLS ClientHello, an oversized head: every
/// scrape made meanwhile is answered whole; the bad requests get their
/// status or a close; the slow and silent connections are closed by the
/// timeouts, and counted as such (100 head timeouts, 4 idle ones). How long
/// the scrapes took is printed, not judged.
#[test]
fn metrics_answered_whole_under_hostile_clients() {
    let limits = Limits {
        max_connections: 512,
        header_timeout: Duration::from_secs(3),
        idle_timeout: Duration::from_secs(3),
        ..Limits::default()
    };
    let body = format!("{}# EOF\n", "tracer_x 1\n".repeat(96 * 1024));
    let size = body.len();
    let (addr, stats) = start_counted(body, None, limits);

    // Slowloris: one thread keeps 100 heads growing.
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (stop2, closed) = (stop.clone(), Arc::new(AtomicU64::new(0)));
    let closed2 = closed.clone();
    let loris = std::thread::spawn(move || {
        let mut conns: Vec<Option<TcpStream>> = (0..100)
            .map(|_| {
                let mut c = TcpStream::connect(addr).unwrap();
                c.write_all(b"GET /metrics HTTP/1.1\r\n").unwrap();
                Some(c)
            })
            .collect();
        let mut i = 0;
        while !stop2.load(Ordering::Relaxed) {
            for c in conns.iter_mut() {
                let gone = c.as_mut().is_some_and(|s| s.write_all(format!("X-{i}: y\r\n").as_bytes()).is_err());
                if gone {
                    *c = None;
                    closed2.fetch_add(1, Ordering::Relaxed);
                }
            }
            i += 1;
            std::thread::sleep(Duration::from_millis(300));
        }
        conns
    });
    // Clients that never read: 20 pipelined requests each.
    let silent: Vec<TcpStream> = (0..4)
        .map(|_| {
            let mut c = connect(addr);
            c.set_write_timeout(Some(Duration::from_secs(1))).unwrap();
            for _ in 0..20 {
                if c.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n").is_err() {
                    break;
                }
            }
            c
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));

    let mut worst: f64 = 0.0;
    let mut scrape_ok = |what: &str| {
        let (status, n, secs) = scrape(addr);
        assert_eq!((status.as_str(), n), ("HTTP/1.1 200 OK", size), "{what}");
        worst = worst.max(secs);
    };
    scrape_ok("with 100 slowloris connections and 4 non-readers");

    // Bad input: a status or a close, the server unharmed.
    let garbage: Vec<u8> = (0..64u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    let r = exchange(addr, &garbage);
    assert!(r.starts_with("HTTP/1.1 400") || r.is_empty(), "{r:?}");
    scrape_ok("after garbage");
    // The start of a TLS 1.2/1.3 ClientHello (record header, handshake header, version, random).
    let mut hello = vec![0x16, 0x03, 0x01, 0x00, 0xf8, 0x01, 0x00, 0x00, 0xf4, 0x03, 0x03];
    hello.extend(std::iter::repeat_n(0x5a, 32));
    let r = exchange(addr, &hello);
    assert!(r.starts_with("HTTP/1.1 400") || r.is_empty(), "{r:?}");
    scrape_ok("after a ClientHello");
    let big = format!("GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: {}\r\n\r\n", "a".repeat(64 * 1024));
    let r = exchange(addr, big.as_bytes());
    // 431, or a reset: the server closes with the rest of the head unread,
    // and the kernel may drop the answer with it.
    assert!(r.starts_with("HTTP/1.1 431") || r.is_empty(), "{r:?}");
    for i in 0..5 {
        scrape_ok(&format!("scrape {i}"));
        std::thread::sleep(Duration::from_millis(100));
    }

    // The head timeout (3 s) closes every slowloris connection; the idle
    // timeout (3 s without a byte moving) the non-readers'.
    wait_until("the slowloris connections still open", || closed.load(Ordering::Relaxed) == 100);
    stop.store(true, Ordering::Relaxed);
    let conns = loris.join().unwrap();
    assert_eq!(conns.iter().flatten().count(), 0);
    wait_until("the server counted fewer than 104 timeouts", || stats.timed_out.load(Ordering::Relaxed) >= 104);
    for mut c in silent {
        // What was sent before the close, then EOF (or a reset): the server
        // stopped answering the 20 requests when the client stopped reading.
        let got = read_until_closed(&mut c, "a non-reader");
        assert!(got.len() < 20 * size, "a non-reader got all {} bytes: never closed", got.len());
    }
    scrape_ok("at the end");
    assert_eq!(stats.timed_out.load(Ordering::Relaxed), 104, "100 head timeouts and 4 idle ones");
    assert_eq!((stats.refused.load(Ordering::Relaxed), stats.evicted.load(Ordering::Relaxed)), (0, 0));
    eprintln!("worst scrape: {worst:.3} s");
}

/// `:PORT` and `[::]:PORT` take IPv4 and IPv6 connections; a bad port or
/// host is one clear line.
#[test]
fn listen_addresses_of_the_readme() {
    for spec in [":0", "[::]:0"] {
        let l = bind(spec).unwrap();
        let port = l.local_addr().unwrap().port();
        for client in [format!("127.0.0.1:{port}"), format!("[::1]:{port}")] {
            TcpStream::connect(&client).unwrap_or_else(|e| panic!("{spec}: {client}: {e}"));
            l.accept().unwrap();
        }
    }
    assert!(bind(":x").unwrap_err().contains("--listen :x: \"x\" is not a port"));
    assert!(bind("127.0.0.1").unwrap_err().starts_with("--listen 127.0.0.1: "));
}

/// 1,000 connections that send nothing against a cap of 256: the oldest
/// idle ones are closed to make room (counted as evicted, none refused),
/// and every scrape gets in and is answered whole. How long the scrapes
/// took is printed, not judged.
#[test]
fn a_thousand_idle_connections_do_not_lock_out_a_scrape() {
    raise_open_files_limit();
    let limits = Limits { max_connections: 256, ..Limits::default() };
    let (addr, stats) = start_counted("tracer_x 1\n# EOF\n".into(), None, limits);
    let mut idle = Vec::with_capacity(1000);
    let mut worst: f64 = 0.0;
    for i in 0..1000 {
        idle.push(TcpStream::connect(addr).unwrap_or_else(|e| panic!("connection {i}: {e}")));
        if i % 250 == 249 {
            let (status, n, secs) = scrape(addr);
            assert_eq!((status.as_str(), n), ("HTTP/1.1 200 OK", 17), "after {} connections", i + 1);
            worst = worst.max(secs);
        }
    }
    // The server accepts in order, so the last scrape came after all 1,000:
    // 1,004 connections through 256 slots, the 4 scrapes' freed when they
    // ended (one of them maybe just after the next accept found it taken).
    let evicted = stats.evicted.load(Ordering::Relaxed);
    assert_eq!(stats.refused.load(Ordering::Relaxed), 0, "a connection was refused");
    assert!((1004 - 256 - 4..=1004 - 256).contains(&evicted), "{evicted} evicted");
    // The connections made last are still open; the first ones were closed.
    let mut first = idle.swap_remove(0);
    first.set_read_timeout(Some(HUNG)).unwrap();
    assert!(read_until_closed(&mut first, "the oldest idle connection").is_empty());
    eprintln!("worst scrape: {worst:.3} s");
}
