//! CPU placement and scheduling class of the measuring thread and its partners.

use super::realtime;
use anyhow::{bail, Context, Result};

/// CPUs this process could use before osmeter pinned anything, in ascending order. Read once, at the
/// first call (the run command makes it before pinning the measuring thread), so that two-party probes
/// built after pinning still see every CPU they may place a partner on.
pub fn usable_cpus() -> Vec<usize> {
    static USABLE: std::sync::OnceLock<Vec<usize>> = std::sync::OnceLock::new();
    USABLE.get_or_init(allowed_cpus).clone()
}

/// CPUs the calling thread may run on now, in ascending order.
pub fn allowed_cpus() -> Vec<usize> {
    // SAFETY: cpu_set_t is plain data; sched_getaffinity fills it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return vec![0];
        }
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect()
    }
}

/// Pins the calling thread (or, after fork, the calling process) to one CPU.
pub fn pin_current_thread(cpu: usize) -> Result<()> {
    // SAFETY: as above; the set is built locally and passed by pointer.
    let rc = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error())
            .with_context(|| format!("cannot pin to CPU {cpu}"));
    }
    Ok(())
}

/// Restores the affinity mask to the given CPUs.
pub fn set_affinity(cpus: &[usize]) -> Result<()> {
    // SAFETY: as above.
    let rc = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in cpus {
            libc::CPU_SET(c, &mut set);
        }
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error()).context("cannot restore the CPU affinity");
    }
    Ok(())
}

/// CPU the caller is running on right now.
pub fn current_cpu() -> usize {
    // SAFETY: no arguments; returns -1 on error.
    let c = unsafe { libc::sched_getcpu() };
    c.max(0) as usize
}

/// Checks that a CPU given on the command line exists and is usable by this process.
pub fn validate_cpu(cpu: usize) -> Result<()> {
    let allowed = usable_cpus();
    if !allowed.contains(&cpu) {
        bail!(
            "CPU {cpu} does not exist or is not available to this process (usable CPUs: {})",
            format_cpu_list(&allowed)
        );
    }
    Ok(())
}

/// Highest real-time priority osmeter uses: 99 is left to the kernel's own watchdog-class threads.
pub const MAX_FIFO_PRIORITY: i32 = 98;

/// The calling thread's scheduling policy and priority, to restore after a real-time measurement.
#[derive(Debug, Clone, Copy)]
pub struct SchedState {
    policy: libc::c_int,
    priority: libc::c_int,
}

pub fn current_sched() -> SchedState {
    // SAFETY: plain queries of the calling thread.
    unsafe {
        let mut param: libc::sched_param = std::mem::zeroed();
        libc::sched_getparam(0, &mut param);
        SchedState {
            policy: libc::sched_getscheduler(0),
            priority: param.sched_priority,
        }
    }
}

pub fn restore_sched(state: SchedState) -> Result<()> {
    let param = libc::sched_param {
        sched_priority: state.priority,
    };
    // SAFETY: param is a valid pointer for the call.
    if unsafe { libc::sched_setscheduler(0, state.policy, &param) } != 0 {
        return Err(std::io::Error::last_os_error()).context("cannot restore the scheduling class");
    }
    Ok(())
}

/// Switches the calling thread to SCHED_FIFO at `priority`.
pub fn set_fifo(priority: i32) -> Result<()> {
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: as above.
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } != 0 {
        let err = std::io::Error::last_os_error();
        if err.raw_os_error() == Some(libc::EPERM) {
            let why = realtime::diagnose(priority, Err(libc::EPERM), realtime::read_facts());
            bail!("{}", why.message());
        }
        return Err(err).context("cannot switch to SCHED_FIFO");
    }
    Ok(())
}

/// Checks a requested real-time priority before anything runs: in range, and allowed here (tried
/// on a short-lived thread so the caller's own class is untouched); a refusal says which rule
/// refused it and what to do.
pub fn check_fifo_priority(priority: i32) -> Result<()> {
    if !(1..=MAX_FIFO_PRIORITY).contains(&priority) {
        bail!("the priority must be between 1 and {MAX_FIFO_PRIORITY} (99 is left to the kernel)");
    }
    let d = realtime::check(priority);
    if !d.allowed {
        bail!("{}", d.message());
    }
    Ok(())
}

/// Placement of a two-party probe relative to the measuring CPU: the partner on the same CPU, or on
/// a different one. `None` means the machine cannot provide it (a single usable CPU).
pub fn partner_cpu(measuring: usize, cross: bool) -> Option<usize> {
    if !cross {
        return Some(measuring);
    }
    usable_cpus().into_iter().find(|&c| c != measuring)
}

/// `0-3,6` style list.
pub fn format_cpu_list(cpus: &[usize]) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let start = cpus[i];
        let mut end = start;
        while i + 1 < cpus.len() && cpus[i + 1] == end + 1 {
            i += 1;
            end = cpus[i];
        }
        parts.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        i += 1;
    }
    parts.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_list_is_compressed_into_ranges() {
        assert_eq!(format_cpu_list(&[0, 1, 2, 3, 6, 8, 9]), "0-3,6,8-9");
        assert_eq!(format_cpu_list(&[5]), "5");
        assert_eq!(format_cpu_list(&[]), "");
    }

    #[test]
    fn pinning_moves_the_thread_and_can_be_undone() {
        let allowed = allowed_cpus();
        let target = *allowed.last().unwrap();
        std::thread::spawn(move || {
            pin_current_thread(target).unwrap();
            assert_eq!(current_cpu(), target);
        })
        .join()
        .unwrap();
        assert!(validate_cpu(100_000).is_err());
    }
}
