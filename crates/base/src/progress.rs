//! Progress on stderr for jobs that run long (a simulation, a capture, a latency measurement): one
//! line redrawn in place on a terminal, plain lines when asked for elsewhere, nothing otherwise.
//! A thread draws it from counters the job updates, so the job's own loop only adds to an atomic.
//!
//! `OSMETER_PROGRESS=always` draws even when stderr is not a terminal (one line a second, for logs
//! and tests); `never` never draws.

use std::io::{Read, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// Redrawn in place (stderr is a terminal).
    InPlace,
    /// A line at a time (forced on a pipe or file).
    Lines,
}

/// How progress is drawn here, or None when it is not.
pub fn style() -> Option<Style> {
    use std::io::IsTerminal;
    match std::env::var("OSMETER_PROGRESS").as_deref() {
        Ok("never") => None,
        Ok("always") if !std::io::stderr().is_terminal() => Some(Style::Lines),
        _ if std::io::stderr().is_terminal() => Some(Style::InPlace),
        _ => None,
    }
}

/// Shows `text` as the current status of a job that reports its own steps (`run`): redrawn in
/// place, or one line per step; an empty text clears an in-place line.
pub fn status(style: Option<Style>, text: &str) {
    let mut err = std::io::stderr().lock();
    let _ = match style {
        Some(Style::InPlace) => write!(err, "\r\x1b[2K{text}"),
        Some(Style::Lines) if !text.is_empty() => writeln!(err, "{text}"),
        _ => Ok(()),
    };
    let _ = err.flush();
}

/// Draws `status(elapsed)` until dropped; the line is cleared at the end.
pub struct Ticker {
    stop: Arc<(Mutex<bool>, Condvar)>,
    handle: Option<JoinHandle<()>>,
}

impl Ticker {
    pub fn start(status: impl FnMut(Duration) -> String + Send + 'static) -> Ticker {
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        // A progress line is no part of the job: where no thread may start for it (a limit on
        // threads), the job goes on without one.
        let handle = style().and_then(|style| {
            let stop = Arc::clone(&stop);
            std::thread::Builder::new()
                .name("osm-progress".into())
                .spawn(move || draw_until_stopped(style, &stop, status))
                .ok()
        });
        Ticker { stop, handle }
    }
}

fn draw_until_stopped(
    style: Style,
    stop: &(Mutex<bool>, Condvar),
    mut status: impl FnMut(Duration) -> String,
) {
    let started = Instant::now();
    let every = match style {
        Style::InPlace => Duration::from_millis(250),
        Style::Lines => Duration::from_secs(1),
    };
    let (lock, wake) = stop;
    let mut stopped = lock.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        // The first line waits one period so that jobs shorter than that draw nothing.
        let (guard, _) = wake
            .wait_timeout(stopped, every)
            .unwrap_or_else(|e| e.into_inner());
        stopped = guard;
        if *stopped {
            break;
        }
        let line = status(started.elapsed());
        let mut err = std::io::stderr().lock();
        // A relayed child that has written part of a line owns the cursor until its line ends.
        if MID_LINE.load(Ordering::SeqCst) {
            continue;
        }
        let _ = match style {
            Style::InPlace => write!(err, "\r\x1b[2K{line}"),
            Style::Lines => writeln!(err, "{line}"),
        };
        let _ = err.flush();
        SHOWN.store(style == Style::InPlace, Ordering::SeqCst);
    }
    if style == Style::InPlace && SHOWN.swap(false, Ordering::SeqCst) {
        let _ = write!(std::io::stderr(), "\r\x1b[2K");
    }
}

/// An in-place progress line is on the screen (cleared before a relayed write).
static SHOWN: AtomicBool = AtomicBool::new(false);
/// A relayed child's output ended without a line feed: no progress line is drawn until it does.
static MID_LINE: AtomicBool = AtomicBool::new(false);

/// Whether a child that inherits our descriptor `fd` (1 or 2) would write where progress lines
/// are drawn: progress is drawn, and `fd` is the same open file as stderr (one terminal, or one
/// log file for both). Such a child's output goes through [`Relay`], so that the two never run
/// into each other.
pub fn shares_progress(fd: i32) -> bool {
    if style().is_none() {
        return false;
    }
    let id = |fd: i32| {
        // SAFETY: fstat writes into the zeroed struct we own.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        (unsafe { libc::fstat(fd, &mut st) } == 0).then_some((st.st_dev, st.st_ino))
    };
    id(fd).is_some_and(|a| Some(a) == id(2))
}

/// Where a relayed stream goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Out {
    Stdout,
    Stderr,
}

/// Copies a child's output to our stdout or stderr as it comes, each write made while holding
/// stderr (so a progress line is never drawn halfway through it), after clearing a progress line
/// that is on the screen; a write that ends inside a line holds progress back until the line ends.
/// Used instead of letting the child inherit a terminal it would share with the progress line.
pub struct Relay {
    done: std::sync::mpsc::Receiver<()>,
    handle: Option<JoinHandle<()>>,
}

impl Relay {
    /// Starts copying; an error (naming the limit) when no thread may start to copy, for the
    /// caller to end the child that would otherwise block on a full pipe.
    pub fn start(mut from: impl Read + Send + 'static, to: Out) -> anyhow::Result<Relay> {
        let (tell, done) = std::sync::mpsc::channel();
        let handle = crate::system::limits::spawn("osm-relay", move || {
            let mut buf = vec![0u8; 16 << 10];
            loop {
                let n = match from.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(_) => break,
                };
                let mut err = std::io::stderr().lock();
                if SHOWN.swap(false, Ordering::SeqCst) {
                    let _ = write!(err, "\r\x1b[2K");
                    let _ = err.flush();
                }
                let _ = match to {
                    Out::Stderr => err.write_all(&buf[..n]).and_then(|_| err.flush()),
                    Out::Stdout => {
                        let mut out = std::io::stdout().lock();
                        out.write_all(&buf[..n]).and_then(|_| out.flush())
                    }
                };
                MID_LINE.store(buf[n - 1] != b'\n', Ordering::SeqCst);
            }
            MID_LINE.store(false, Ordering::SeqCst);
            let _ = tell.send(());
        })?;
        Ok(Relay {
            done,
            handle: Some(handle),
        })
    }

    /// Waits until the child's output has ended, for at most `grace` once the child itself has
    /// ended: a process it left behind may hold the stream open, and is not waited for.
    pub fn finish(mut self, grace: Duration) {
        if self.done.recv_timeout(grace).is_ok() {
            if let Some(h) = self.handle.take() {
                let _ = h.join();
            }
        }
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        let (lock, wake) = &*self.stop;
        *lock.lock().unwrap_or_else(|e| e.into_inner()) = true;
        wake.notify_all();
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// A count shared between a job and its progress line.
#[derive(Debug, Clone, Default)]
pub struct Counter(Arc<AtomicU64>);

impl Counter {
    pub fn add(&self, n: u64) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// A reader that counts the bytes read through it.
pub struct Counted<R> {
    inner: R,
    count: Counter,
}

impl<R> Counted<R> {
    pub fn new(inner: R, count: Counter) -> Self {
        Counted { inner, count }
    }
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count.add(n as u64);
        Ok(n)
    }
}

/// "3.2 s", "4 min 05 s", "1 h 02 min": elapsed and remaining times in progress lines.
pub fn duration(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s < 60.0 {
        format!("{s:.1} s")
    } else if s < 3600.0 {
        format!("{} min {:02} s", (s / 60.0) as u64, (s % 60.0) as u64)
    } else {
        format!(
            "{} h {:02} min",
            (s / 3600.0) as u64,
            ((s % 3600.0) / 60.0) as u64
        )
    }
}

/// The status of a job that works through `done` of `total` units: its share, and the time left
/// at the rate so far (once there is a rate to speak of).
pub fn fraction(done: u64, total: u64, elapsed: Duration) -> String {
    if total == 0 {
        return String::new();
    }
    let share = done.min(total) as f64 / total as f64;
    let left = if share > 0.01 && share < 1.0 && elapsed.as_secs_f64() > 1.0 {
        let rest = elapsed.as_secs_f64() * (1.0 - share) / share;
        format!(", about {} left", duration(Duration::from_secs_f64(rest)))
    } else {
        String::new()
    };
    format!("{:.0} %{left}", 100.0 * share)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_naturally() {
        assert_eq!(duration(Duration::from_millis(3200)), "3.2 s");
        assert_eq!(duration(Duration::from_secs(245)), "4 min 05 s");
        assert_eq!(duration(Duration::from_secs(3720)), "1 h 02 min");
    }

    #[test]
    fn fraction_and_time_left() {
        assert_eq!(fraction(0, 0, Duration::ZERO), "");
        assert_eq!(fraction(1, 4, Duration::from_millis(500)), "25 %");
        assert_eq!(
            fraction(1, 4, Duration::from_secs(10)),
            "25 %, about 30.0 s left"
        );
        assert_eq!(fraction(9, 4, Duration::from_secs(10)), "100 %");
    }

    #[test]
    fn counted_reader_counts_every_byte() {
        let count = Counter::default();
        let mut r = Counted::new(&b"hello world"[..], count.clone());
        let mut buf = [0u8; 4];
        let mut all = Vec::new();
        loop {
            let n = r.read(&mut buf).unwrap();
            if n == 0 {
                break;
            }
            all.extend_from_slice(&buf[..n]);
        }
        assert_eq!(all, b"hello world");
        assert_eq!(count.get(), 11);
    }
}
