//! The agent's HTTP endpoint: hyper's HTTP/1.1 server (keep-alive,
//! pipelining, header limits) on its own thread and tokio runtime, so that
//! the collection loop never waits on a client and a client never waits on
//! another: `GET /metrics` answers the exposition, `POST /record` (opt-in)
//! starts a duty-cycled recording window now.
//!
//! Hostile clients get bounded resources: at most `max_connections` at
//! once (past it the oldest connection that is not being answered is
//! closed to make room, so that a scraper always gets in; if none can be,
//! the new one is closed at accept), the request head must
//! arrive whole within `header_timeout` (slowloris), a connection on which
//! no byte moves either way for `idle_timeout` is closed (a client that
//! never reads its reply, an idle keep-alive), a head over
//! `max_header_bytes` is answered 431 and a body over `max_body_bytes` 413.
//! Bytes that are not HTTP (garbage, a TLS ClientHello on the plain port)
//! are answered 400 and the connection closed at once. With a web config
//! file (webconfig.rs): TLS (rustls) and basic auth on every path.
use std::convert::Infallible;
use std::future::Future as _;
use std::io;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use http_body_util::{BodyExt as _, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::{Method, Request, Response, StatusCode, header};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

use super::webconfig::BasicAuth;

/// What `POST /record` did.
pub enum RecordAnswer {
    /// 202: a window starts now (the text says how long).
    Started(String),
    /// 409: a window is recording or about to.
    Busy(String),
    /// 429: too soon after the last accepted request; retry in this many seconds.
    TooSoon(u64),
}

/// What the endpoint serves: the exposition and its content type, and what
/// `POST /record` does (None: the endpoint is off, 403).
pub struct Handlers {
    pub metrics: Box<dyn Fn() -> String + Send + Sync>,
    pub content_type: &'static str,
    pub record: Option<Box<dyn Fn() -> RecordAnswer + Send + Sync>>,
}

#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub max_connections: usize,
    pub header_timeout: Duration,
    pub idle_timeout: Duration,
    pub max_header_bytes: usize,
    pub max_body_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_connections: 1024,
            header_timeout: Duration::from_secs(5),
            idle_timeout: Duration::from_secs(10),
            max_header_bytes: 16 * 1024,
            max_body_bytes: 4096,
        }
    }
}

/// What the server counts (tracer_http_* metrics).
#[derive(Debug, Default)]
pub struct Stats {
    /// Connections closed at accept: `max_connections` were open and
    /// being answered.
    pub refused: AtomicU64,
    /// Connections closed to make room for a new one (the oldest not being
    /// answered, at `max_connections`).
    pub evicted: AtomicU64,
    /// Connections closed by a timeout (head, idle, TLS handshake).
    pub timed_out: AtomicU64,
    /// Requests answered 401.
    pub unauthorized: AtomicU64,
}

pub struct Server {
    pub handlers: Handlers,
    pub limits: Limits,
    pub tls: Option<Arc<rustls::ServerConfig>>,
    pub auth: Option<BasicAuth>,
    pub stats: Arc<Stats>,
}

/// Binds `--listen`: `HOST:PORT`, `IP:PORT`, `[IPV6]:PORT`, or `:PORT` for
/// every address of the machine, IPv6 and IPv4 (one dual-stack socket; IPv4
/// alone where the kernel has no IPv6). Port 0 picks a free one.
pub fn bind(listen: &str) -> Result<std::net::TcpListener, String> {
    let hint = "HOST:PORT, :PORT, 0.0.0.0:PORT or [::]:PORT";
    let any = listen.strip_prefix(':').map(|p| (p, Ipv6Addr::UNSPECIFIED.into()));
    let v6 = listen.strip_prefix("[::]:").map(|p| (p, Ipv6Addr::UNSPECIFIED.into()));
    if let Some((port, ip)) = any.or(v6) {
        let port: u16 = port.parse().map_err(|_| format!("--listen {listen}: {port:?} is not a port ({hint})"))?;
        return match dual_stack(SocketAddr::new(ip, port)) {
            Ok(l) => Ok(l),
            Err(e)
                if listen.starts_with(':')
                    && matches!(e.raw_os_error(), Some(libc::EAFNOSUPPORT) | Some(libc::EADDRNOTAVAIL)) =>
            {
                std::net::TcpListener::bind((Ipv4Addr::UNSPECIFIED, port))
                    .map_err(|e| format!("--listen {listen}: {e} (no IPv6 here, and IPv4 failed)"))
            }
            Err(e) => Err(format!("--listen {listen}: {e}")),
        };
    }
    std::net::TcpListener::bind(listen).map_err(|e| format!("--listen {listen}: {e} ({hint})"))
}

/// An IPv6 socket that takes IPv4 connections too, whatever the sysctl
/// net.ipv6.bindv6only says.
fn dual_stack(addr: SocketAddr) -> io::Result<std::net::TcpListener> {
    use socket2::{Domain, Socket, Type};
    let s = Socket::new(Domain::IPV6, Type::STREAM, None)?;
    s.set_only_v6(false)?;
    s.set_reuse_address(true)?;
    s.bind(&addr.into())?;
    s.listen(1024)?;
    Ok(s.into())
}

/// Raises the soft limit of open files to the hard one (a service's soft
/// limit is often 1024: the agent's probes and maps take hundreds of
/// descriptors, and `max_connections` clients one each). Returns the limit.
pub fn raise_open_files_limit() -> u64 {
    // SAFETY: getrlimit/setrlimit on a struct we own.
    unsafe {
        let mut r: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) != 0 {
            return 0;
        }
        if r.rlim_cur < r.rlim_max {
            let want = libc::rlimit { rlim_cur: r.rlim_max, rlim_max: r.rlim_max };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &want) == 0 {
                return want.rlim_cur as u64;
            }
        }
        r.rlim_cur as u64
    }
}

/// Serves on `listener` until the process ends (the thread is detached).
pub fn spawn(listener: std::net::TcpListener, server: Arc<Server>) -> io::Result<()> {
    listener.set_nonblocking(true)?;
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    std::thread::Builder::new()
        .name("tracer-agent-http".into())
        .spawn(move || rt.block_on(accept(listener, server)))?;
    Ok(())
}

/// One open connection, as the accept loop sees it.
#[derive(Default)]
struct Conn {
    /// A request is being answered (never evicted then).
    busy: AtomicU64,
    done: std::sync::atomic::AtomicBool,
    evicted: std::sync::atomic::AtomicBool,
    evict: tokio::sync::Notify,
}

async fn accept(listener: std::net::TcpListener, server: Arc<Server>) {
    let listener = match tokio::net::TcpListener::from_std(listener) {
        Ok(l) => l,
        Err(e) => {
            log::error!("agent http: {e}");
            return;
        }
    };
    let cap = server.limits.max_connections;
    let slots = Arc::new(tokio::sync::Semaphore::new(cap));
    let tls = server.tls.clone().map(tokio_rustls::TlsAcceptor::from);
    // Oldest first.
    let mut conns: std::collections::VecDeque<Arc<Conn>> = std::collections::VecDeque::new();
    loop {
        let s = match listener.accept().await {
            Ok((s, _)) => s,
            Err(e) => {
                // EMFILE and the like: let connections end before the next.
                log::warn!("agent http: accept: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        if conns.len() >= cap {
            conns.retain(|c| !c.done.load(Ordering::Relaxed));
        }
        let slot = match slots.clone().try_acquire_owned() {
            Ok(p) => p,
            Err(_) => {
                // Full: the oldest connection not being answered makes room.
                let victim = conns.iter().find(|c| {
                    !c.done.load(Ordering::Relaxed)
                        && c.busy.load(Ordering::Relaxed) == 0
                        && !c.evicted.swap(true, Ordering::Relaxed)
                });
                if let Some(v) = victim {
                    v.evict.notify_one();
                    server.stats.evicted.fetch_add(1, Ordering::Relaxed);
                }
                // An evicted connection that has not ended yet gives its slot
                // back as soon as its task runs (it ends at the notice): wait
                // for it, however loaded the machine. Only when every slot is
                // held by a request being answered is the wait bounded.
                let freeing =
                    conns.iter().any(|c| c.evicted.load(Ordering::Relaxed) && !c.done.load(Ordering::Relaxed));
                let slot = match freeing {
                    true => slots.clone().acquire_owned().await.ok(),
                    false => tokio::time::timeout(Duration::from_secs(1), slots.clone().acquire_owned())
                        .await
                        .ok()
                        .and_then(Result::ok),
                };
                match slot {
                    Some(p) => p,
                    None => {
                        server.stats.refused.fetch_add(1, Ordering::Relaxed);
                        continue;
                    }
                }
            }
        };
        let _ = s.set_nodelay(true);
        let conn = Arc::new(Conn::default());
        conns.push_back(conn.clone());
        let (server, tls) = (server.clone(), tls.clone());
        tokio::spawn(async move {
            tokio::select! {
                _ = connection(s, server, tls, conn.clone()) => {}
                _ = conn.evict.notified() => {}
            }
            conn.done.store(true, Ordering::Relaxed);
            drop(slot);
        });
    }
}

async fn connection(s: TcpStream, server: Arc<Server>, tls: Option<tokio_rustls::TlsAcceptor>, conn: Arc<Conn>) {
    let io = Watchdog::new(s, server.limits.idle_timeout, server.stats.clone());
    match tls {
        None => serve(io, server, conn).await,
        Some(acceptor) => match tokio::time::timeout(server.limits.header_timeout, acceptor.accept(io)).await {
            Ok(Ok(tls)) => serve(tls, server, conn).await,
            Ok(Err(e)) => log::debug!("agent https: handshake: {e}"),
            Err(_) => {
                server.stats.timed_out.fetch_add(1, Ordering::Relaxed);
            }
        },
    }
}

async fn serve<I: AsyncRead + AsyncWrite + Unpin + Send + 'static>(io: I, server: Arc<Server>, conn: Arc<Conn>) {
    let l = server.limits;
    let s = server.clone();
    let svc = hyper::service::service_fn(move |req| {
        let (s, conn) = (s.clone(), conn.clone());
        async move {
            conn.busy.fetch_add(1, Ordering::Relaxed);
            let r = respond(req, s).await;
            conn.busy.fetch_sub(1, Ordering::Relaxed);
            Ok::<_, Infallible>(r)
        }
    });
    let r = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(l.header_timeout)
        .max_buf_size(l.max_header_bytes.max(8192))
        .max_headers(64)
        .keep_alive(true)
        .pipeline_flush(true)
        .serve_connection(TokioIo::new(io), svc)
        .await;
    if let Err(e) = r {
        if e.is_timeout() {
            server.stats.timed_out.fetch_add(1, Ordering::Relaxed);
        }
        log::debug!("agent http: {e}");
    }
}

fn text(status: StatusCode, body: impl Into<String>) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(body.into())));
    *r.status_mut() = status;
    r.headers_mut().insert(header::CONTENT_TYPE, header::HeaderValue::from_static("text/plain; charset=utf-8"));
    r
}

async fn respond(req: Request<Incoming>, s: Arc<Server>) -> Response<Full<Bytes>> {
    if s.auth.is_some() && !authorized(&req, &s).await {
        s.stats.unauthorized.fetch_add(1, Ordering::Relaxed);
        let mut r = text(StatusCode::UNAUTHORIZED, "unauthorized\n");
        r.headers_mut()
            .insert(header::WWW_AUTHENTICATE, header::HeaderValue::from_static("Basic realm=\"tracer agent\""));
        return r;
    }
    let path = req.uri().path().to_string();
    match (req.method(), path.as_str()) {
        (&Method::GET | &Method::HEAD, "/metrics") => {
            let s2 = s.clone();
            let body = tokio::task::spawn_blocking(move || (s2.handlers.metrics)()).await.unwrap_or_default();
            let mut r = text(StatusCode::OK, body);
            r.headers_mut().insert(header::CONTENT_TYPE, header::HeaderValue::from_static(s.handlers.content_type));
            r
        }
        (&Method::POST, "/record") => record(req, &s).await,
        (&Method::GET | &Method::HEAD, "/") => text(StatusCode::OK, "tracer agent: GET /metrics, POST /record\n"),
        (_, "/metrics" | "/") => {
            let mut r = text(StatusCode::METHOD_NOT_ALLOWED, "method not allowed\n");
            r.headers_mut().insert(header::ALLOW, header::HeaderValue::from_static("GET, HEAD"));
            r
        }
        (_, "/record") => {
            let mut r = text(StatusCode::METHOD_NOT_ALLOWED, "method not allowed\n");
            r.headers_mut().insert(header::ALLOW, header::HeaderValue::from_static("POST"));
            r
        }
        _ => text(StatusCode::NOT_FOUND, "not found: GET /metrics, POST /record\n"),
    }
}

/// Basic auth: a known pair at once; else one bcrypt check at a time, off
/// the runtime (a flood of wrong passwords costs one core at most).
async fn authorized(req: &Request<Incoming>, s: &Arc<Server>) -> bool {
    static CHECKS: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(1);
    let Some(auth) = &s.auth else { return true };
    let h = req.headers().get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).map(str::to_string);
    if auth.cached(h.as_deref()) {
        return true;
    }
    let Ok(_permit) = CHECKS.acquire().await else { return false };
    let s = s.clone();
    tokio::task::spawn_blocking(move || s.auth.as_ref().is_some_and(|a| a.check(h.as_deref()))).await.unwrap_or(false)
}

async fn record(req: Request<Incoming>, s: &Server) -> Response<Full<Bytes>> {
    let Some(rec) = &s.handlers.record else {
        return text(
            StatusCode::FORBIDDEN,
            "POST /record is off: start the agent with --web.enable-record (and --record-dir DIR)\n",
        );
    };
    let max = s.limits.max_body_bytes;
    let declared = req.headers().get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if declared.is_some_and(|n| n > max as u64) {
        return text(StatusCode::PAYLOAD_TOO_LARGE, format!("a body of at most {max} bytes\n"));
    }
    match tokio::time::timeout(s.limits.header_timeout, Limited::new(req.into_body(), max).collect()).await {
        Ok(Ok(_)) => {}
        Ok(Err(_)) => return text(StatusCode::PAYLOAD_TOO_LARGE, format!("a body of at most {max} bytes\n")),
        Err(_) => return text(StatusCode::REQUEST_TIMEOUT, "the body did not arrive in time\n"),
    }
    match rec() {
        RecordAnswer::Started(msg) => text(StatusCode::ACCEPTED, msg),
        RecordAnswer::Busy(msg) => text(StatusCode::CONFLICT, msg),
        RecordAnswer::TooSoon(secs) => {
            let mut r = text(
                StatusCode::TOO_MANY_REQUESTS,
                format!("too many recording requests: the next is accepted in {secs} s\n"),
            );
            r.headers_mut().insert(header::RETRY_AFTER, header::HeaderValue::from(secs));
            r
        }
    }
}

/// A connection on which no byte moved either way for `timeout` is closed:
/// the timer starts at the last read or write that made progress, and is
/// looked at whenever one of them has to wait.
struct Watchdog<S> {
    inner: S,
    timeout: Duration,
    deadline: Pin<Box<tokio::time::Sleep>>,
    stats: Arc<Stats>,
    fired: bool,
}

impl<S> Watchdog<S> {
    fn new(inner: S, timeout: Duration, stats: Arc<Stats>) -> Self {
        Watchdog { inner, timeout, deadline: Box::pin(tokio::time::sleep(timeout)), stats, fired: false }
    }

    fn progress(&mut self) {
        self.deadline.as_mut().reset(tokio::time::Instant::now() + self.timeout);
    }

    /// Pending, or the timeout error once the deadline passed.
    fn waiting<T>(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<T>> {
        match self.deadline.as_mut().poll(cx) {
            Poll::Ready(()) => {
                if !std::mem::replace(&mut self.fired, true) {
                    self.stats.timed_out.fetch_add(1, Ordering::Relaxed);
                }
                Poll::Ready(Err(io::Error::new(io::ErrorKind::TimedOut, "no progress on the connection")))
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Watchdog<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let me = &mut *self;
        match Pin::new(&mut me.inner).poll_read(cx, buf) {
            Poll::Pending => me.waiting(cx),
            r => {
                me.progress();
                r
            }
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Watchdog<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let me = &mut *self;
        match Pin::new(&mut me.inner).poll_write(cx, buf) {
            Poll::Pending => me.waiting(cx),
            r => {
                me.progress();
                r
            }
        }
    }
    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let me = &mut *self;
        match Pin::new(&mut me.inner).poll_write_vectored(cx, bufs) {
            Poll::Pending => me.waiting(cx),
            r => {
                me.progress();
                r
            }
        }
    }
    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let me = &mut *self;
        match Pin::new(&mut me.inner).poll_flush(cx) {
            Poll::Pending => me.waiting(cx),
            r => r,
        }
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let me = &mut *self;
        match Pin::new(&mut me.inner).poll_shutdown(cx) {
            Poll::Pending => me.waiting(cx),
            r => r,
        }
    }
}

#[cfg(test)]
mod tests;
