//! Small helpers shared by probes: reading parameters, checking system-call results.

pub use crate::results::params::{param_bool, param_str, param_u64};
use anyhow::{anyhow, Result};

/// `libc` return value to `Result`, with the call named in the error.
pub fn check(rc: libc::c_long, what: &str) -> Result<libc::c_long> {
    if rc < 0 {
        Err(anyhow!(
            "{what} failed: {}",
            std::io::Error::last_os_error()
        ))
    } else {
        Ok(rc)
    }
}
