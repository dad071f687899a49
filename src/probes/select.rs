//! Asking the kernel which descriptors are readable, without waiting: select, poll and epoll over
//! sets of pipes that are either all empty or all holding data.

use super::util::{param_bool, param_u64};
use super::{Built, Origin, ProbeDef, ProbeEnv, Scale};
use crate::harness::Workload;
use crate::params;
use crate::results::model::{Params, Unit};
use anyhow::{anyhow, bail, Context, Result};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

pub const PROBES: &[ProbeDef] = &[
    ProbeDef {
        id: "select.select",
        summary: "select() with a zero timeout over the read ends of a set of pipes",
        params: "fds=pipes in the read set; ready=true: each pipe holds a byte, false: all empty",
        unit: Unit::Nanoseconds,
        origins: &[Origin::Ousterhout89],
        variants: select_variants,
        build: |env, p| build(env, p, Kind::Select),
    },
    ProbeDef {
        id: "select.poll",
        summary: "poll() with a zero timeout over the read ends of a set of pipes",
        params: "fds=pipes polled; ready=true: each pipe holds a byte, false: all empty",
        unit: Unit::Nanoseconds,
        origins: &[Origin::Lmbench, Origin::LEBench],
        variants: poll_variants,
        build: |env, p| build(env, p, Kind::Poll),
    },
    ProbeDef {
        id: "select.epoll",
        summary:
            "epoll_wait() with a zero timeout on an epoll set (built beforehand) of pipe read ends",
        params: "fds=pipes in the epoll set; ready=true: each pipe holds a byte, false: all empty",
        unit: Unit::Nanoseconds,
        origins: &[Origin::Lmbench, Origin::LEBench],
        variants: poll_variants,
        build: |env, p| build(env, p, Kind::Epoll),
    },
];

fn point(fds: u64, ready: bool) -> Params {
    params![("fds", fds), ("ready", ready)]
}

/// Ousterhout's three configurations (1 empty, 10 empty, 10 full), then larger sets.
fn select_variants(scale: Scale) -> Vec<Params> {
    let mut v = vec![point(1, false), point(10, false), point(10, true)];
    if scale == Scale::Full {
        for n in [100, 1000] {
            v.push(point(n, false));
            v.push(point(n, true));
        }
    }
    v
}

fn poll_variants(scale: Scale) -> Vec<Params> {
    match scale {
        Scale::Quick => vec![point(10, false), point(1000, false)],
        Scale::Full => [10, 100, 1000]
            .into_iter()
            .flat_map(|n| [point(n, false), point(n, true)])
            .collect(),
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Select,
    Poll,
    Epoll,
}

const MAX_FDS: u64 = 100_000;

fn build(_env: &ProbeEnv, params: &Params, kind: Kind) -> Result<Built> {
    let n = param_u64(params, "fds")?;
    let ready = param_bool(params, "ready")?;
    if n == 0 || n > MAX_FDS {
        bail!("fds must be between 1 and {MAX_FDS}, not {n}");
    }
    let n = n as usize;
    let pipes = match Pipes::new(n, ready, kind == Kind::Select)? {
        Ok(p) => p,
        Err(why) => return Ok(Built::Skip(why)),
    };
    let expected = if ready { n as i32 } else { 0 };
    Ok(Built::Ready(match kind {
        Kind::Select => match SelectWait::new(pipes, expected) {
            Ok(w) => Box::new(w),
            Err(why) => return Ok(Built::Skip(why)),
        },
        Kind::Poll => Box::new(PollWait::new(pipes, expected)),
        Kind::Epoll => Box::new(EpollWait::new(pipes, expected)?),
    }))
}

/// Makes room for `extra` more descriptors beyond those open now (and for descriptor numbers up to
/// `floor`), raising the soft RLIMIT_NOFILE up to the hard limit if needed. `Err` says why not.
fn ensure_fd_room(extra: u64, floor: u64) -> Result<Result<(), String>> {
    let open = std::fs::read_dir("/proc/self/fd")
        .map(|d| d.count() as u64)
        .unwrap_or(64);
    let need = (open + extra + 64).max(floor);
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: lim is a valid out-pointer.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return Err(std::io::Error::last_os_error()).context("getrlimit(RLIMIT_NOFILE)");
    }
    if lim.rlim_cur >= need {
        return Ok(Ok(()));
    }
    if lim.rlim_max < need {
        return Ok(Err(format!(
            "needs about {need} open descriptors but the hard limit (ulimit -Hn) is {}",
            lim.rlim_max
        )));
    }
    lim.rlim_cur = lim.rlim_max;
    // SAFETY: lim holds a valid limit no higher than the hard limit.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) } != 0 {
        return Err(std::io::Error::last_os_error()).context("raising RLIMIT_NOFILE");
    }
    Ok(Ok(()))
}

/// `n` pipes, empty or each holding one byte that is never read, so they stay readable.
struct Pipes {
    reads: Vec<OwnedFd>,
    /// Kept open: an empty pipe with no writer would report end-of-file, which counts as readable.
    _writes: Vec<OwnedFd>,
}

impl Pipes {
    /// With `low_reads`, write ends are moved above FD_SETSIZE when the limit allows, so the read
    /// ends get the low numbers select() can address.
    fn new(n: usize, ready: bool, low_reads: bool) -> Result<Result<Pipes, String>> {
        let floor = if low_reads {
            libc::FD_SETSIZE as u64 + n as u64
        } else {
            0
        };
        if let Err(why) = ensure_fd_room(2 * n as u64, floor)? {
            return Ok(Err(why));
        }
        let mut reads = Vec::with_capacity(n);
        let mut writes = Vec::with_capacity(n);
        for _ in 0..n {
            let mut fds = [0; 2];
            // SAFETY: fds is a valid two-element out-array.
            if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
                return Err(std::io::Error::last_os_error()).context("pipe2");
            }
            // SAFETY: both descriptors were just created and are owned by nobody else.
            let (r, mut w) =
                unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
            if low_reads {
                // SAFETY: duplicating a descriptor we own; failure leaves it where it is.
                let high = unsafe {
                    libc::fcntl(
                        w.as_raw_fd(),
                        libc::F_DUPFD_CLOEXEC,
                        libc::FD_SETSIZE as RawFd,
                    )
                };
                if high >= 0 {
                    // SAFETY: just created, owned by nobody else.
                    w = unsafe { OwnedFd::from_raw_fd(high) };
                }
            }
            if ready {
                let b = 1u8;
                // SAFETY: one byte from a local into a pipe we own.
                if unsafe { libc::write(w.as_raw_fd(), (&b as *const u8).cast(), 1) } != 1 {
                    return Err(std::io::Error::last_os_error()).context("filling a pipe");
                }
            }
            reads.push(r);
            writes.push(w);
        }
        Ok(Ok(Pipes {
            reads,
            _writes: writes,
        }))
    }

    fn raw_reads(&self) -> impl Iterator<Item = RawFd> + '_ {
        self.reads.iter().map(|f| f.as_raw_fd())
    }
}

#[cold]
#[inline(never)]
fn wrong_count(call: &str, rc: i32, expected: i32) -> anyhow::Error {
    if rc < 0 {
        let err = std::io::Error::last_os_error();
        if err.kind() == std::io::ErrorKind::Interrupted && crate::interrupt::requested() {
            return anyhow::Error::new(crate::interrupt::Interrupted);
        }
        return anyhow!("{call} failed: {err}");
    }
    anyhow!("{call} reported {rc} ready descriptors, expected {expected}")
}

struct SelectWait {
    template: libc::fd_set,
    nfds: i32,
    expected: i32,
    _pipes: Pipes,
}

impl SelectWait {
    fn new(pipes: Pipes, expected: i32) -> std::result::Result<SelectWait, String> {
        // SAFETY: fd_set is plain data; FD_ZERO initialises it.
        let mut template: libc::fd_set = unsafe { std::mem::zeroed() };
        unsafe { libc::FD_ZERO(&mut template) };
        let mut max = 0;
        for fd in pipes.raw_reads() {
            if fd as usize >= libc::FD_SETSIZE {
                return Err(format!(
                    "descriptor {fd} is past select()'s FD_SETSIZE ({}): too many descriptors \
                     were already open",
                    libc::FD_SETSIZE
                ));
            }
            // SAFETY: fd < FD_SETSIZE, checked above.
            unsafe { libc::FD_SET(fd, &mut template) };
            max = max.max(fd);
        }
        Ok(SelectWait {
            template,
            nfds: max + 1,
            expected,
            _pipes: pipes,
        })
    }
}

impl Workload for SelectWait {
    fn run(&mut self, iters: u64) -> Result<()> {
        for _ in 0..iters {
            // select() overwrites both the set and the timeout, so every call starts from fresh
            // copies, as any program calling it in a loop must (a 128-byte copy).
            let mut set = self.template;
            let mut tv = libc::timeval {
                tv_sec: 0,
                tv_usec: 0,
            };
            // SAFETY: set and tv are valid locals; no write or except sets.
            let rc = unsafe {
                libc::select(
                    self.nfds,
                    &mut set,
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                    &mut tv,
                )
            };
            if rc != self.expected {
                return Err(wrong_count("select", rc, self.expected));
            }
        }
        Ok(())
    }
}

struct PollWait {
    fds: Vec<libc::pollfd>,
    expected: i32,
    _pipes: Pipes,
}

impl PollWait {
    fn new(pipes: Pipes, expected: i32) -> PollWait {
        let fds = pipes
            .raw_reads()
            .map(|fd| libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        PollWait {
            fds,
            expected,
            _pipes: pipes,
        }
    }
}

impl Workload for PollWait {
    fn run(&mut self, iters: u64) -> Result<()> {
        let (ptr, n) = (self.fds.as_mut_ptr(), self.fds.len() as libc::nfds_t);
        for _ in 0..iters {
            // SAFETY: ptr/n describe self.fds; poll only writes the revents fields.
            let rc = unsafe { libc::poll(ptr, n, 0) };
            if rc != self.expected {
                return Err(wrong_count("poll", rc, self.expected));
            }
        }
        Ok(())
    }
}

struct EpollWait {
    epfd: OwnedFd,
    events: Vec<libc::epoll_event>,
    expected: i32,
    _pipes: Pipes,
}

impl EpollWait {
    fn new(pipes: Pipes, expected: i32) -> Result<EpollWait> {
        // SAFETY: no pointers.
        let ep = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if ep < 0 {
            return Err(std::io::Error::last_os_error()).context("epoll_create1");
        }
        // SAFETY: just created, owned by nobody else.
        let epfd = unsafe { OwnedFd::from_raw_fd(ep) };
        for fd in pipes.raw_reads() {
            // Level-triggered, so a pipe holding data is reported on every call.
            let mut ev = libc::epoll_event {
                events: libc::EPOLLIN as u32,
                u64: fd as u64,
            };
            // SAFETY: ev is a valid local; fd is an open pipe end.
            if unsafe { libc::epoll_ctl(ep, libc::EPOLL_CTL_ADD, fd, &mut ev) } != 0 {
                return Err(std::io::Error::last_os_error()).context("epoll_ctl(EPOLL_CTL_ADD)");
            }
        }
        let events = vec![libc::epoll_event { events: 0, u64: 0 }; pipes.reads.len()];
        Ok(EpollWait {
            epfd,
            events,
            expected,
            _pipes: pipes,
        })
    }
}

impl Workload for EpollWait {
    fn run(&mut self, iters: u64) -> Result<()> {
        let ep = self.epfd.as_raw_fd();
        let (ptr, n) = (self.events.as_mut_ptr(), self.events.len() as i32);
        for _ in 0..iters {
            // SAFETY: ptr/n describe self.events.
            let rc = unsafe { libc::epoll_wait(ep, ptr, n, 0) };
            if rc != self.expected {
                return Err(wrong_count("epoll_wait", rc, self.expected));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probes::testing::env;
    use std::sync::Mutex;

    /// Tests here open up to thousands of descriptors; run concurrently, one test's pipes would push
    /// another's select() read ends past FD_SETSIZE, which a real run (one probe at a time) never sees.
    static FDS: Mutex<()> = Mutex::new(());

    fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
        FDS.lock().unwrap_or_else(|e| e.into_inner())
    }

    #[test]
    fn every_probe_and_variant_builds_and_runs() {
        let _serial = one_at_a_time();
        // run() itself checks the ready count against the set-up.
        crate::probes::testing::exercise(PROBES, 20, crate::probes::testing::all);
    }

    #[test]
    fn ousterhout_configurations_are_the_quick_select_points() {
        let v = select_variants(Scale::Quick);
        assert_eq!(v, vec![point(1, false), point(10, false), point(10, true)]);
        assert!(select_variants(Scale::Full).contains(&point(1000, true)));
    }

    #[test]
    fn ready_pipes_stay_ready_and_empty_ones_stay_empty() {
        let _serial = one_at_a_time();
        for kind in [Kind::Select, Kind::Poll, Kind::Epoll] {
            for ready in [false, true] {
                let pipes = Pipes::new(10, ready, kind == Kind::Select)
                    .unwrap()
                    .unwrap();
                let expected = if ready { 10 } else { 0 };
                let mut w: Box<dyn Workload> = match kind {
                    Kind::Select => Box::new(SelectWait::new(pipes, expected).unwrap()),
                    Kind::Poll => Box::new(PollWait::new(pipes, expected)),
                    Kind::Epoll => Box::new(EpollWait::new(pipes, expected).unwrap()),
                };
                w.run(3).unwrap();
                // A wrong expectation is reported, not ignored.
                let mut wrong = match kind {
                    Kind::Select => Box::new(
                        SelectWait::new(Pipes::new(10, ready, true).unwrap().unwrap(), 5).unwrap(),
                    ) as Box<dyn Workload>,
                    Kind::Poll => Box::new(PollWait::new(
                        Pipes::new(10, ready, false).unwrap().unwrap(),
                        5,
                    )),
                    Kind::Epoll => Box::new(
                        EpollWait::new(Pipes::new(10, ready, false).unwrap().unwrap(), 5).unwrap(),
                    ),
                };
                assert!(wrong.run(1).is_err(), "{kind:?} ready={ready}");
            }
        }
    }

    #[test]
    fn select_read_ends_fit_in_fd_setsize() {
        let _serial = one_at_a_time();
        // 900, not the probe's 1000: tests of other modules running in parallel in this process hold
        // descriptors too, and the point is that the write ends are moved out of the read ends' way.
        let pipes = Pipes::new(900, false, true).unwrap().unwrap();
        assert!(pipes.raw_reads().all(|fd| (fd as usize) < libc::FD_SETSIZE));
    }

    #[test]
    fn descriptors_are_closed_on_drop() {
        let _serial = one_at_a_time();
        let pipes = Pipes::new(50, true, false).unwrap().unwrap();
        let fds: Vec<RawFd> = pipes.raw_reads().collect();
        let w = EpollWait::new(pipes, 50).unwrap();
        drop(w);
        // Other tests may reuse the numbers at once, so only check that at least most are free.
        let still_open = fds
            .iter()
            // SAFETY: F_GETFD only queries.
            .filter(|&&fd| unsafe { libc::fcntl(fd, libc::F_GETFD) } >= 0)
            .count();
        assert!(
            still_open < fds.len(),
            "{still_open} of {} still open",
            fds.len()
        );
    }

    #[test]
    fn bad_parameters_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let env = env(dir.path(), Scale::Quick);
        assert!(build(&env, &point(0, false), Kind::Poll).is_err());
        assert!(build(&env, &params![("fds", 10)], Kind::Poll).is_err());
    }
}
