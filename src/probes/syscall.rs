//! Kernel entry and exit: the cheapest system calls, and the vDSO call that avoids the kernel.

use super::{Built, Origin, ProbeDef, Scale};
use crate::harness::Workload;
use crate::params;
use crate::results::model::{Params, Unit};
use anyhow::Result;

pub const PROBES: &[ProbeDef] = &[
    ProbeDef {
        id: "syscall.null",
        summary: "null system call: getppid through syscall(2), a real kernel entry and exit",
        params: "",
        unit: Unit::Nanoseconds,
        origins: &[
            Origin::Ousterhout89,
            Origin::Chen96,
            Origin::PerfBench,
            Origin::LEBench,
        ],
        variants: no_params,
        build: |_, _| Ok(Built::Ready(Box::new(NullSyscall))),
    },
    ProbeDef {
        id: "syscall.dup",
        summary: "dup of an open descriptor, then close of the copy",
        params: "",
        unit: Unit::Nanoseconds,
        origins: &[Origin::Chen96, Origin::Lmbench],
        variants: no_params,
        build: |_, _| Ok(Built::Ready(Box::new(Dup::new()?))),
    },
    ProbeDef {
        id: "syscall.clock_gettime",
        summary: "clock_gettime(CLOCK_MONOTONIC) through the vDSO, no kernel entry",
        params: "",
        unit: Unit::Nanoseconds,
        origins: &[Origin::LEBench],
        variants: no_params,
        build: |_, _| Ok(Built::Ready(Box::new(ClockGettime))),
    },
    ProbeDef {
        id: "syscall.sched_yield",
        summary: "sched_yield with no other runnable thread on the CPU",
        params: "",
        unit: Unit::Nanoseconds,
        origins: &[Origin::LEBench, Origin::Lmbench],
        variants: no_params,
        build: |_, _| Ok(Built::Ready(Box::new(SchedYield))),
    },
];

pub fn no_params(_: Scale) -> Vec<Params> {
    vec![params!()]
}

struct NullSyscall;

impl Workload for NullSyscall {
    fn run(&mut self, iters: u64) -> Result<()> {
        for _ in 0..iters {
            // SAFETY: getppid takes no arguments and cannot fail. Called through syscall(2) so no
            // libc cache can answer it in user space.
            std::hint::black_box(unsafe { libc::syscall(libc::SYS_getppid) });
        }
        Ok(())
    }
}

struct Dup {
    fd: std::fs::File,
}

impl Dup {
    fn new() -> Result<Self> {
        Ok(Dup {
            fd: std::fs::File::open("/dev/null")?,
        })
    }
}

impl Workload for Dup {
    fn run(&mut self, iters: u64) -> Result<()> {
        use std::os::fd::AsRawFd;
        let fd = self.fd.as_raw_fd();
        for _ in 0..iters {
            // SAFETY: fd is open for the life of self; the copy is closed at once.
            let copy = unsafe { libc::dup(fd) };
            if copy < 0 {
                anyhow::bail!("dup failed: {}", std::io::Error::last_os_error());
            }
            unsafe { libc::close(copy) };
        }
        Ok(())
    }
}

struct ClockGettime;

impl Workload for ClockGettime {
    fn run(&mut self, iters: u64) -> Result<()> {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        for _ in 0..iters {
            // SAFETY: ts is a valid out-pointer.
            unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
            std::hint::black_box(&ts);
        }
        Ok(())
    }
}

struct SchedYield;

impl Workload for SchedYield {
    fn run(&mut self, iters: u64) -> Result<()> {
        for _ in 0..iters {
            // SAFETY: no arguments.
            unsafe { libc::sched_yield() };
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_probe_builds_and_runs() {
        crate::probes::testing::exercise(PROBES, 100, crate::probes::testing::all);
    }
}
