//! Two measuring processes on one CPU taking their samples in turn (`ab --lockstep`). A token, one
//! byte, goes back and forth over two pipes: a process holds it from the start of its round to
//! the end of each timing sample, hands it over, and waits for it before the next one; after its
//! last sample (and its counting samples) it hands it over for good and closes its end. Adjacent
//! samples of A and B are then milliseconds apart, so the machine's state (a host that slows its
//! virtual CPU for a second at a time) is the same for both, where rounds a second apart see it
//! change. A partner that ended or died closes its pipe: the one left goes on alone.
//!
//! The parent names the two descriptors in the worker's environment ([`TURNS_ENV`],
//! `READ,WRITE,first` or `READ,WRITE,second`); the worker checks they are pipes before trusting
//! them. The second process hands the first the token once it is ready to measure, so the first
//! never samples while its partner is still starting on the same CPU.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::OnceLock;

pub const TURNS_ENV: &str = "OSMETER_TURNS";

/// One process's side of the token: where it reads it and where it hands it on.
pub struct Turns {
    read: AtomicI32,
    write: AtomicI32,
    /// The partner closed its end: no more waiting.
    alone: AtomicBool,
    /// This process starts second: it gives the token before it first waits for it.
    second: bool,
}

/// The worker's turns, when its parent gave it any.
static TURNS: OnceLock<Turns> = OnceLock::new();

/// Takes the turn descriptors the parent named, if any; an error names a malformed variable.
pub fn adopt_from_env() -> Result<bool, String> {
    let Ok(value) = std::env::var(TURNS_ENV) else {
        return Ok(false);
    };
    let fields: Vec<&str> = value.split(',').collect();
    let parsed = match fields[..] {
        [r, w, order @ ("first" | "second")] => Some((
            r.parse::<i32>().ok(),
            w.parse::<i32>().ok(),
            order == "second",
        )),
        _ => None,
    };
    let Some((Some(r), Some(w), second)) = parsed else {
        return Err(format!(
            "{TURNS_ENV}={value} is not READ,WRITE,first|second"
        ));
    };
    let is_pipe = |fd| crate::programs::pipe_identity(fd).is_some();
    if !(r > 2 && w > 2 && is_pipe(r) && is_pipe(w)) {
        return Err(format!(
            "{TURNS_ENV}={value} does not name two pipes of this process"
        ));
    }
    // Not for the programs a probe starts.
    // SAFETY: setting a flag on descriptors checked above.
    unsafe {
        libc::fcntl(r, libc::F_SETFD, libc::FD_CLOEXEC);
        libc::fcntl(w, libc::F_SETFD, libc::FD_CLOEXEC);
    }
    Ok(TURNS.set(Turns::new(r, w, second)).is_ok())
}

/// The harness's calls: without turns they do nothing.
pub fn begin() {
    if let Some(t) = TURNS.get() {
        t.begin();
    }
}

pub fn wait() {
    if let Some(t) = TURNS.get() {
        t.wait();
    }
}

pub fn pass() {
    if let Some(t) = TURNS.get() {
        t.pass();
    }
}

pub fn leave() {
    if let Some(t) = TURNS.get() {
        t.leave();
    }
}

impl Turns {
    /// Owns `read` and `write` from here on.
    pub fn new(read: i32, write: i32, second: bool) -> Turns {
        Turns {
            read: AtomicI32::new(read),
            write: AtomicI32::new(write),
            alone: AtomicBool::new(false),
            second,
        }
    }

    /// The start of a round: the second process first hands over the token it never had (saying
    /// it is ready), then both wait for it.
    pub fn begin(&self) {
        if self.second {
            self.pass();
        }
        self.wait();
    }

    /// Waits for the token; returns at once once the partner has gone.
    pub fn wait(&self) {
        let fd = self.read.load(Ordering::Relaxed);
        if fd < 0 || self.alone.load(Ordering::Relaxed) {
            return;
        }
        let mut byte = 0u8;
        loop {
            // SAFETY: reading one byte into a local.
            let n = unsafe { libc::read(fd, (&mut byte as *mut u8).cast(), 1) };
            if n == 1 {
                return;
            }
            let interrupted =
                n < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR);
            // End of file (the partner is gone), an error, or a signal asking osmeter to stop:
            // no more waiting; a stop cuts the round as usual.
            if !interrupted || crate::interrupt::requested() {
                self.alone.store(true, Ordering::Relaxed);
                return;
            }
        }
    }

    /// Hands the token to the partner.
    pub fn pass(&self) {
        let fd = self.write.load(Ordering::Relaxed);
        if fd < 0 || self.alone.load(Ordering::Relaxed) {
            return;
        }
        // SAFETY: writing one byte from a local; a partner that has gone gives EPIPE (SIGPIPE is
        // ignored in osmeter), and then this process goes on alone.
        if unsafe { libc::write(fd, b"t".as_ptr().cast(), 1) } != 1 {
            self.alone.store(true, Ordering::Relaxed);
        }
    }

    /// Hands the token over for good and closes both ends: the partner finishes alone.
    pub fn leave(&self) {
        self.pass();
        self.alone.store(true, Ordering::Relaxed);
        self.close();
    }

    fn close(&self) {
        for fd in [&self.read, &self.write] {
            let fd = fd.swap(-1, Ordering::Relaxed);
            if fd >= 0 {
                // SAFETY: closing a descriptor this side owns, once (swapped out above).
                unsafe { libc::close(fd) };
            }
        }
    }
}

impl Drop for Turns {
    fn drop(&mut self) {
        self.close();
    }
}

#[cfg(test)]
mod tests {
    use super::Turns;
    use std::sync::{Arc, Mutex};

    fn pipe() -> (i32, i32) {
        let mut fds = [0; 2];
        // SAFETY: fds has room for the two descriptors.
        assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
        (fds[0], fds[1])
    }

    /// Two sides as the harness drives them: begin, then per sample the sample, pass, wait,
    /// and leave after the last. Returns the order the samples were taken in.
    fn play(samples: [usize; 2], second_dies_after: Option<usize>) -> Vec<char> {
        let (to_a_read, to_a_write) = pipe();
        let (to_b_read, to_b_write) = pipe();
        let log = Arc::new(Mutex::new(Vec::new()));
        let sides = [
            ('A', Turns::new(to_a_read, to_b_write, false)),
            ('B', Turns::new(to_b_read, to_a_write, true)),
        ];
        std::thread::scope(|s| {
            for ((name, turns), count) in sides.into_iter().zip(samples) {
                let log = Arc::clone(&log);
                s.spawn(move || {
                    turns.begin();
                    for i in 0..count {
                        if name == 'B' && second_dies_after == Some(i) {
                            // As a process that dies: its descriptors close, nothing is passed.
                            drop(turns);
                            return;
                        }
                        log.lock().unwrap().push(name);
                        std::thread::sleep(std::time::Duration::from_millis(2));
                        turns.pass();
                        turns.wait();
                    }
                    turns.leave();
                });
            }
        });
        let order = log.lock().unwrap().clone();
        order
    }

    #[test]
    fn samples_of_the_two_sides_alternate_the_first_side_first() {
        assert_eq!(play([4, 4], None), ['A', 'B', 'A', 'B', 'A', 'B', 'A', 'B']);
    }

    #[test]
    fn the_side_with_more_samples_finishes_alone() {
        assert_eq!(play([2, 4], None), ['A', 'B', 'A', 'B', 'B', 'B']);
    }

    #[test]
    fn a_partner_that_dies_never_leaves_the_other_waiting() {
        assert_eq!(play([4, 4], Some(1)), ['A', 'B', 'A', 'A', 'A']);
    }
}
