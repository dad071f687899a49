//! Threads: creating one and waiting for it to end.

use super::syscall::no_params;
use super::{Built, Origin, ProbeDef};
use crate::harness::Workload;
use crate::results::model::Unit;
use anyhow::{bail, Result};
use std::sync::atomic::{AtomicU64, Ordering};

pub const PROBES: &[ProbeDef] = &[ProbeDef {
    id: "thread.create_join",
    summary: "pthread_create of a thread (64 KiB stack, same CPU) that returns at once, then \
              pthread_join; raw pthreads, so after warm-up the stack comes from glibc's cache and \
              the work is the kernel's clone, exit and the join wake-up",
    params: "",
    unit: Unit::Nanoseconds,
    origins: &[Origin::LEBench, Origin::Osmeter],
    variants: no_params,
    build: |_, _| Ok(Built::Ready(Box::new(CreateJoin::new()?))),
}];

/// Small and fixed so that the cost does not depend on RLIMIT_STACK (glibc's default thread
/// stack size), and so that glibc can keep recycling the same stacks.
const STACK_BYTES: usize = 64 * 1024;

extern "C" fn count_and_return(arg: *mut libc::c_void) -> *mut libc::c_void {
    // SAFETY: arg points to the AtomicU64 owned by the CreateJoin that is joining this thread.
    unsafe { (*arg.cast::<AtomicU64>()).fetch_add(1, Ordering::Relaxed) };
    std::ptr::null_mut()
}

struct CreateJoin {
    /// Boxed so its address stays fixed for glibc between init and destroy.
    attr: Box<libc::pthread_attr_t>,
    /// How many threads ran: proof that each created thread really executed.
    ran: Box<AtomicU64>,
}

impl CreateJoin {
    fn new() -> Result<CreateJoin> {
        // SAFETY: pthread_attr_init initialises the zeroed storage.
        let mut attr: Box<libc::pthread_attr_t> = Box::new(unsafe { std::mem::zeroed() });
        let rc = unsafe { libc::pthread_attr_init(&mut *attr) };
        if rc != 0 {
            bail!(
                "pthread_attr_init failed: {}",
                std::io::Error::from_raw_os_error(rc)
            );
        }
        let mut w = CreateJoin {
            attr,
            ran: Box::new(AtomicU64::new(0)),
        };
        // SAFETY: attr was initialised above.
        let rc = unsafe { libc::pthread_attr_setstacksize(&mut *w.attr, STACK_BYTES) };
        if rc != 0 {
            bail!(
                "pthread_attr_setstacksize({STACK_BYTES}) failed: {}",
                std::io::Error::from_raw_os_error(rc)
            );
        }
        Ok(w)
    }
}

impl Workload for CreateJoin {
    fn run(&mut self, iters: u64) -> Result<()> {
        let arg = (&*self.ran as *const AtomicU64)
            .cast_mut()
            .cast::<libc::c_void>();
        for _ in 0..iters {
            // SAFETY: zeroed pthread_t is only an out-value for pthread_create.
            let mut t: libc::pthread_t = unsafe { std::mem::zeroed() };
            // SAFETY: attr is initialised; arg outlives the thread, which is joined below.
            let rc = unsafe { libc::pthread_create(&mut t, &*self.attr, count_and_return, arg) };
            if rc != 0 {
                bail!(
                    "pthread_create failed: {}",
                    std::io::Error::from_raw_os_error(rc)
                );
            }
            // SAFETY: t is a joinable thread created just above.
            let rc = unsafe { libc::pthread_join(t, std::ptr::null_mut()) };
            if rc != 0 {
                bail!(
                    "pthread_join failed: {}",
                    std::io::Error::from_raw_os_error(rc)
                );
            }
        }
        Ok(())
    }
}

impl Drop for CreateJoin {
    fn drop(&mut self) {
        // SAFETY: initialised in new(); every thread using it has been joined.
        unsafe { libc::pthread_attr_destroy(&mut *self.attr) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_probe_builds_and_runs() {
        crate::probes::testing::exercise(PROBES, 20, crate::probes::testing::all);
    }

    #[test]
    fn each_operation_runs_one_thread_to_completion() {
        let mut w = CreateJoin::new().unwrap();
        w.run(250).unwrap();
        // Joined threads have run their body; nothing is left running.
        assert_eq!(w.ran.load(Ordering::Relaxed), 250);
    }
}
