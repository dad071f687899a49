//! osmeter's HTTP/1.1 client: worker threads replay a request trace against a server, each over
//! one kept-alive connection or a new connection per request, and time each request from its
//! first byte sent (the connect, for a new connection) to the last byte of the body received.
//!
//! Requests are prepared before the clock starts and bodies are read into one reused buffer, so
//! the timed loop does only the network work. A response is checked for status 200 and the file's
//! length; the verification pass also checks every byte.

use crate::apps::context::CpuTime;
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// A stalled server fails a request after this long instead of hanging the run.
const IO_TIMEOUT: Duration = Duration::from_secs(20);
/// Response headers longer than this are an error.
const MAX_HEADER: usize = 16 << 10;

/// What the client asks for and what it must get back.
pub struct Target<'a> {
    pub addr: SocketAddr,
    pub urls: &'a [String],
    pub sizes: &'a [u64],
}

/// Writes the bytes a file holds from an offset on: `expected(file, offset, buf)`.
pub type Expected = dyn Fn(usize, u64, &mut [u8]) + Sync;

/// How the requests of one run are sent.
#[derive(Clone, Copy)]
pub struct Plan<'a> {
    pub trace: &'a [u32],
    pub concurrency: usize,
    pub keep_alive: bool,
    /// Check each body's bytes (the verification pass).
    pub verify: Option<&'a Expected>,
}

/// What one run did.
#[derive(Debug, Clone, Default)]
pub struct Replay {
    pub requests: u64,
    pub errors: u64,
    pub first_error: Option<String>,
    pub body_bytes: u64,
    pub seconds: f64,
    /// One per answered request, unsorted.
    pub latencies_ns: Vec<u64>,
    pub client_cpu: CpuTime,
}

/// Replays `plan.trace` against `target` with `plan.concurrency` workers taking requests in trace
/// order; stops early when `stop` is set or the user interrupts.
pub fn replay(target: &Target, plan: Plan, stop: &AtomicBool) -> anyhow::Result<Replay> {
    let requests: Vec<Vec<u8>> = target
        .urls
        .iter()
        .map(|u| request_bytes(u, plan.keep_alive))
        .collect();
    let next = AtomicUsize::new(0);
    let started = Instant::now();
    let parts = std::thread::scope(|s| -> anyhow::Result<Vec<Replay>> {
        let mut workers = Vec::new();
        for _ in 0..plan.concurrency.max(1) {
            let started = crate::system::limits::spawn_scoped(s, "osm-web-client", || {
                worker(target, &plan, &requests, &next, stop)
            });
            match started {
                Ok(w) => workers.push(w),
                Err(e) => {
                    // Fewer clients would measure another load: the ones started take no more
                    // requests, and the replay is refused.
                    next.store(usize::MAX / 2, Ordering::Relaxed);
                    for w in workers {
                        let _ = w.join();
                    }
                    return Err(e);
                }
            }
        }
        Ok(workers
            .into_iter()
            .map(|w| w.join().unwrap_or_default())
            .collect())
    })?;
    let mut total = Replay {
        seconds: started.elapsed().as_secs_f64(),
        latencies_ns: Vec::with_capacity(plan.trace.len()),
        ..Replay::default()
    };
    for p in parts {
        total.requests += p.requests;
        total.errors += p.errors;
        total.body_bytes += p.body_bytes;
        total.first_error = total.first_error.or(p.first_error);
        total.latencies_ns.extend(p.latencies_ns);
        total.client_cpu = total.client_cpu.plus(p.client_cpu);
    }
    Ok(total)
}

fn request_bytes(url: &str, keep_alive: bool) -> Vec<u8> {
    let connection = if keep_alive {
        ""
    } else {
        "Connection: close\r\n"
    };
    format!("GET {url} HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: osmeter\r\n{connection}\r\n")
        .into_bytes()
}

fn worker(
    target: &Target,
    plan: &Plan,
    requests: &[Vec<u8>],
    next: &AtomicUsize,
    stop: &AtomicBool,
) -> Replay {
    let cpu_before = CpuTime::this_thread();
    let mut out = Replay {
        latencies_ns: Vec::with_capacity(plan.trace.len() / plan.concurrency.max(1) + 1),
        ..Replay::default()
    };
    let mut conn: Option<Conn> = None;
    let mut expected = vec![0u8; if plan.verify.is_some() { 64 << 10 } else { 0 }];
    loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        if i >= plan.trace.len() || stop.load(Ordering::Relaxed) || crate::interrupt::requested() {
            break;
        }
        let file = plan.trace[i] as usize;
        let t0 = Instant::now();
        let result = one_request(
            target,
            plan,
            &mut conn,
            &requests[file],
            file,
            &mut expected,
        );
        let ns = t0.elapsed().as_nanos() as u64;
        out.requests += 1;
        match result {
            Ok(bytes) => {
                out.body_bytes += bytes;
                out.latencies_ns.push(ns);
            }
            Err(e) => {
                out.errors += 1;
                out.first_error
                    .get_or_insert_with(|| format!("{} (request for {})", e, target.urls[file]));
                conn = None;
            }
        }
        if !plan.keep_alive {
            conn = None;
        }
    }
    out.client_cpu = CpuTime::this_thread().since(cpu_before);
    out
}

/// Sends one request and reads its response; returns the body's length.
fn one_request(
    target: &Target,
    plan: &Plan,
    conn: &mut Option<Conn>,
    request: &[u8],
    file: usize,
    expected: &mut [u8],
) -> Result<u64, String> {
    if conn.is_none() {
        *conn = Some(Conn::open(target.addr)?);
    }
    let c = conn.as_mut().expect("just opened");
    c.stream
        .write_all(request)
        .map_err(|e| format!("cannot send the request: {e}"))?;
    let head = c.read_head()?;
    if head.status != 200 {
        return Err(format!("status {} instead of 200", head.status));
    }
    let want = target.sizes[file];
    match head.length {
        Some(n) if n == want => {}
        Some(n) => return Err(format!("Content-Length {n} instead of the file's {want}")),
        None => return Err("no Content-Length in the response".into()),
    }
    let check = plan.verify;
    let mut offset = 0u64;
    c.read_body(want, |chunk| {
        if let Some(fill) = check {
            let want = &mut expected[..chunk.len()];
            fill(file, offset, want);
            if chunk != want {
                return Err(format!(
                    "the body differs from the file at or after byte {offset}"
                ));
            }
        }
        offset += chunk.len() as u64;
        Ok(())
    })?;
    if head.close {
        *conn = None;
    }
    Ok(want)
}

/// The parts of a response head the client needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    pub status: u16,
    pub length: Option<u64>,
    /// The server will close the connection after this response.
    pub close: bool,
}

/// Parses a response head (status line and headers, without the blank line).
pub fn parse_head(text: &[u8]) -> Result<Head, String> {
    let text = std::str::from_utf8(text).map_err(|_| "a response head that is not text")?;
    let mut lines = text.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let mut parts = status_line.splitn(3, ' ');
    let version = parts.next().unwrap_or_default();
    if !version.starts_with("HTTP/1.") {
        return Err(format!("not an HTTP/1 response: {status_line:?}"));
    }
    let status = parts
        .next()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("no status code in {status_line:?}"))?;
    let mut head = Head {
        status,
        length: None,
        close: version == "HTTP/1.0",
    };
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-length") {
            head.length = Some(
                value
                    .parse()
                    .map_err(|_| format!("a bad Content-Length: {value:?}"))?,
            );
        } else if name.eq_ignore_ascii_case("connection") {
            head.close = value.eq_ignore_ascii_case("close");
        }
    }
    Ok(head)
}

/// A connection with its receive buffer (bytes past the head wait there for the body).
struct Conn {
    stream: TcpStream,
    buf: Vec<u8>,
    start: usize,
    end: usize,
}

impl Conn {
    fn open(addr: SocketAddr) -> Result<Conn, String> {
        let stream =
            TcpStream::connect_timeout(&addr, IO_TIMEOUT).map_err(|e| format!("connect: {e}"))?;
        stream
            .set_read_timeout(Some(IO_TIMEOUT))
            .and_then(|()| stream.set_write_timeout(Some(IO_TIMEOUT)))
            .and_then(|()| stream.set_nodelay(true))
            .map_err(|e| format!("socket set-up: {e}"))?;
        Ok(Conn {
            stream,
            buf: vec![0u8; 64 << 10],
            start: 0,
            end: 0,
        })
    }

    /// More bytes into the buffer's free tail; an error at end of stream.
    fn fill(&mut self) -> Result<(), String> {
        loop {
            match self.stream.read(&mut self.buf[self.end..]) {
                Ok(0) => return Err("the server closed the connection mid-response".into()),
                Ok(n) => {
                    self.end += n;
                    return Ok(());
                }
                Err(e) if e.kind() == ErrorKind::Interrupted && !crate::interrupt::requested() => {}
                Err(e) => return Err(format!("receive: {e}")),
            }
        }
    }

    fn read_head(&mut self) -> Result<Head, String> {
        loop {
            let pending = &self.buf[self.start..self.end];
            if let Some(at) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = parse_head(&pending[..at])?;
                self.start += at + 4;
                return Ok(head);
            }
            if self.end - self.start >= MAX_HEADER {
                return Err(format!("a response head longer than {MAX_HEADER} bytes"));
            }
            // Room at the tail: move what is pending to the front.
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
            self.fill()?;
        }
    }

    fn read_body(
        &mut self,
        mut left: u64,
        mut each: impl FnMut(&[u8]) -> Result<(), String>,
    ) -> Result<(), String> {
        while left > 0 {
            if self.start == self.end {
                self.start = 0;
                self.end = 0;
                self.fill()?;
            }
            let n = ((self.end - self.start) as u64).min(left) as usize;
            each(&self.buf[self.start..self.start + n])?;
            self.start += n;
            left -= n as u64;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn response_heads() {
        let h = parse_head(b"HTTP/1.1 200 OK\r\nServer: x\r\ncontent-length: 12\r\n").unwrap();
        assert_eq!(
            h,
            Head {
                status: 200,
                length: Some(12),
                close: false
            }
        );
        let h = parse_head(b"HTTP/1.1 404 Not Found\r\nConnection: close").unwrap();
        assert_eq!((h.status, h.length, h.close), (404, None, true));
        assert!(parse_head(b"HTTP/1.0 200 OK").unwrap().close);
        assert!(parse_head(b"SSH-2.0-x").is_err());
        assert!(parse_head(b"HTTP/1.1 OK").is_err());
        assert!(parse_head(b"HTTP/1.1 200 OK\r\nContent-Length: -1").is_err());
    }
}
