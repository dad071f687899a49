//! What the kernel tells this process about the machine, asked in one place for every layer: the
//! page size, the unit of /proc's CPU times, and a random seed (the statistics crate makes no
//! system calls, so the seed of a run that was given none is drawn here and handed to it). Its
//! [`limits`] name the resource limits a thread, an allocation or a file meets, and
//! [`processes`] those a process meets when it cannot start.

pub mod limits;
pub mod processes;

/// The size of a page of memory; 4096 if the kernel does not say.
pub fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as usize
    } else {
        4096
    }
}

/// USER_HZ, the clock ticks per second that /proc counts CPU times in; 100 if the kernel does not
/// say.
pub fn ticks_per_second() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if hz > 0 {
        hz as f64
    } else {
        100.0
    }
}

/// A seed from the kernel's random source (the time of day if that fails), for runs that were
/// given none.
pub fn seed_from_entropy() -> u64 {
    let mut bytes = [0u8; 8];
    // SAFETY: getrandom writes at most bytes.len() bytes into bytes.
    let n = unsafe { libc::getrandom(bytes.as_mut_ptr().cast(), bytes.len(), 0) };
    if n == bytes.len() as isize {
        return u64::from_ne_bytes(bytes);
    }
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}
