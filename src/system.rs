//! What the kernel tells this process about the machine, asked in one place for every layer.
//!
//! The statistics crate stays free of system calls, so the random seed of a run that was given
//! none is drawn here and handed to it.

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
