//! The agent's HTTP endpoint, on one thread with std's TcpListener (one
//! request per connection, one connection at a time: a scrape every few
//! seconds needs no more): `GET /metrics` answers the exposition,
//! `POST /record` starts a duty-cycled recording window now.
use std::io::{Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::time::Duration;

/// What the endpoint serves: the exposition and its content type, and what
/// `POST /record` does (its answer: status line and body).
pub struct Handlers {
    pub metrics: Box<dyn Fn() -> String + Send + Sync>,
    pub content_type: &'static str,
    pub record: Box<dyn Fn() -> (&'static str, String) + Send + Sync>,
}

/// Serves on `listener` until the process ends (the thread is detached).
pub fn spawn(listener: TcpListener, h: Arc<Handlers>) -> std::io::Result<()> {
    std::thread::Builder::new().name("tracer-agent-http".into()).spawn(move || {
        for conn in listener.incoming() {
            match conn {
                Ok(s) => {
                    if let Err(e) = handle(s, &h) {
                        log::debug!("agent http: {e}");
                    }
                }
                Err(e) => log::warn!("agent http: accept: {e}"),
            }
        }
    })?;
    Ok(())
}

/// Reads the request head (at most 16 KiB); returns (method, path).
fn read_head(s: &mut TcpStream) -> std::io::Result<(String, String)> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") && buf.len() < 16 * 1024 {
        let n = s.read(&mut chunk)?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let head = String::from_utf8_lossy(&buf);
    let mut first = head.lines().next().unwrap_or("").split_whitespace();
    let method = first.next().unwrap_or("").to_string();
    let path = first.next().unwrap_or("").to_string();
    Ok((method, path))
}

fn handle(mut s: TcpStream, h: &Handlers) -> std::io::Result<()> {
    s.set_read_timeout(Some(Duration::from_secs(5)))?;
    s.set_write_timeout(Some(Duration::from_secs(10)))?;
    let (method, path) = read_head(&mut s)?;
    let path = path.split('?').next().unwrap_or("");
    let (status, ctype, body) = route(&method, path, h);
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes())?;
    if method != "HEAD" {
        s.write_all(body.as_bytes())?;
    }
    s.flush()
}

fn route(method: &str, path: &str, h: &Handlers) -> (&'static str, &'static str, String) {
    const TEXT: &str = "text/plain; charset=utf-8";
    match (method, path) {
        ("GET" | "HEAD", "/metrics") => ("200 OK", h.content_type, (h.metrics)()),
        ("POST", "/record") => {
            let (status, body) = (h.record)();
            (status, TEXT, body)
        }
        ("GET" | "HEAD", "/") => ("200 OK", TEXT, "tracer agent: GET /metrics, POST /record\n".into()),
        (_, "/metrics" | "/record" | "/") => ("405 Method Not Allowed", TEXT, "method not allowed\n".into()),
        _ => ("404 Not Found", TEXT, "not found: GET /metrics, POST /record\n".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(addr: std::net::SocketAddr, req: &str) -> String {
        let mut c = TcpStream::connect(addr).unwrap();
        c.write_all(req.as_bytes()).unwrap();
        let mut out = String::new();
        c.read_to_string(&mut out).unwrap();
        out
    }

    #[test]
    fn serves_metrics_record_and_errors() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let h = Handlers {
            metrics: Box::new(|| "# EOF\n".into()),
            content_type: "application/openmetrics-text; version=1.0.0; charset=utf-8",
            record: Box::new(|| ("202 Accepted", "recording for 2 s\n".into())),
        };
        spawn(l, Arc::new(h)).unwrap();
        let r = request(addr, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
        assert!(r.starts_with("HTTP/1.1 200 OK\r\n"), "{r}");
        assert!(r.contains("Content-Type: application/openmetrics-text; version=1.0.0"), "{r}");
        assert!(r.ends_with("\r\n\r\n# EOF\n") && r.contains("Content-Length: 6\r\n"), "{r}");
        let r = request(addr, "POST /record HTTP/1.1\r\nContent-Length: 0\r\n\r\n");
        assert!(r.starts_with("HTTP/1.1 202 Accepted") && r.ends_with("recording for 2 s\n"), "{r}");
        assert!(request(addr, "GET /nope HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 404"));
        assert!(request(addr, "DELETE /metrics HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 405"));
    }
}
