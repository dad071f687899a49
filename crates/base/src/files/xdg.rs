//! Where osmeter keeps its own files by default: the XDG base directories, read as the XDG spec
//! says. A relative `$XDG_DATA_HOME` (or `$XDG_CACHE_HOME`) is ignored, and a relative `$HOME` is
//! refused: either would put the store, or the cache, wherever the working directory happens to
//! be, a different one for every directory a command is started in.

use anyhow::Result;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// `$var` when it is an absolute path, else `$HOME/fallback`. A relative `$var` is ignored with
/// a warning; a relative or missing `$HOME` is a usage error that ends with `what_to_do`.
pub fn base_dir(var: &str, fallback: &str, what_to_do: &str) -> Result<PathBuf> {
    if let Some(dir) = absolute(var) {
        return Ok(dir);
    }
    match std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        Some(home) if Path::new(&home).is_absolute() => Ok(PathBuf::from(home).join(fallback)),
        Some(home) => Err(crate::usage!(
            "HOME is {:?}, a relative path, so ~/{fallback} would be relative to the working \
             directory: set HOME to an absolute directory (or {var}), or {what_to_do}",
            Path::new(&home)
        )),
        None => Err(crate::usage!(
            "neither {var} nor HOME is set to an absolute directory: set one, or {what_to_do}"
        )),
    }
}

/// `$var` if it is an absolute path. A relative one is ignored, with a warning, since the XDG spec
/// calls it invalid.
pub fn absolute(var: &str) -> Option<PathBuf> {
    let value: OsString = std::env::var_os(var).filter(|v| !v.is_empty())?;
    if Path::new(&value).is_absolute() {
        return Some(PathBuf::from(value));
    }
    eprintln!(
        "osmeter: warning: {var} is {:?}, which is not an absolute path; it is ignored, as the XDG \
         base directory spec says",
        Path::new(&value)
    );
    None
}

/// `$HOME` if it is an absolute path.
pub fn absolute_home() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .filter(|h| h.is_absolute())
}
