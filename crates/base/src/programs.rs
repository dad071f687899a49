//! Finding the programs osmeter runs: the user's command under `stat` and `trace`, and the tools
//! it drives (valgrind, perf, cyclictest, gcc, busybox, qemu). One lookup, so every command agrees
//! on what "found" means: an executable regular file, by path when the name holds a `/`, else the
//! first one on PATH, as execvp would pick it.

mod child_env;

pub use child_env::{command, envp, scrub, vars as child_vars, STORE_ENV};

use anyhow::Result;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// The device and inode of the pipe open on descriptor `fd`, or None when `fd` is not an open
/// pipe. A descriptor number proves nothing about what stands behind it (a shell or
/// `/usr/bin/time -o FILE` may have left anything there): a child told which pipe its parent made
/// checks it with this before trusting it.
pub fn pipe_identity(fd: std::os::fd::RawFd) -> Option<(u64, u64)> {
    // SAFETY: fstat writes into the zeroed struct only; a closed descriptor fails with EBADF.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let open = unsafe { libc::fstat(fd, &mut st) } == 0;
    (open && st.st_mode & libc::S_IFMT == libc::S_IFIFO).then_some((st.st_dev, st.st_ino))
}

/// Whether `path` is a regular file this process may execute.
pub fn executable(path: &Path) -> bool {
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: access reads a NUL-terminated path and has no other effect.
    path.is_file() && unsafe { libc::access(c.as_ptr(), libc::X_OK) } == 0
}

/// The program `name` names: the path itself when it holds a `/`, else the first executable file
/// of that name on PATH.
pub fn find(name: &str) -> Option<PathBuf> {
    if name.is_empty() {
        return None;
    }
    if name.contains('/') {
        let path = PathBuf::from(name);
        return executable(&path).then_some(path);
    }
    let dirs = std::env::var_os("PATH")?;
    std::env::split_paths(&dirs)
        .map(|d| d.join(name))
        .find(|p| executable(p))
}

/// The user's command for `stat` or `trace`, checked before anything starts: a command that cannot
/// start is a usage error (exit 2) saying why and what to do, told the same way by both.
pub fn startable(name: &str) -> Result<PathBuf> {
    if name.is_empty() {
        return Err(crate::usage!(
            "the command to run is empty: give a program after --"
        ));
    }
    if let Some(found) = find(name) {
        return Ok(found);
    }
    if name.contains('/') {
        let why = match std::fs::metadata(name) {
            Err(e) => format!("{e}; check the path"),
            Ok(m) if m.is_dir() => "it is a directory".to_string(),
            Ok(_) => "it is not executable; make it so (chmod +x) or run it through its \
                      interpreter"
                .to_string(),
        };
        return Err(crate::usage!("cannot start `{name}`: {why}"));
    }
    let dirs = std::env::var_os("PATH").unwrap_or_default();
    let not_executable = std::env::split_paths(&dirs)
        .map(|d| d.join(name))
        .find(|p| p.is_file());
    Err(match not_executable {
        Some(p) => crate::usage!(
            "cannot start `{name}`: {} is not executable; make it so (chmod +x) or run it \
             through its interpreter",
            p.display()
        ),
        None => crate::usage!(
            "cannot start `{name}`: no such program on PATH; check the name, and that it is \
             installed"
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn paths_and_path_search() {
        let sh = find("sh").expect("sh on PATH");
        assert!(sh.is_absolute() && executable(&sh));
        assert_eq!(find(sh.to_str().unwrap()), Some(sh.clone()));
        assert_eq!(find(""), None);
        assert_eq!(find("osmeter-no-such-program"), None);
        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("data");
        std::fs::write(&plain, "x").unwrap();
        assert_eq!(find(plain.to_str().unwrap()), None);
        assert_eq!(find(dir.path().to_str().unwrap()), None);
        std::fs::set_permissions(&plain, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(find(plain.to_str().unwrap()), Some(plain));
    }

    #[test]
    fn start_failures_are_usage_errors_that_say_why() {
        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("data");
        std::fs::write(&plain, "x").unwrap();
        for (name, says) in [
            ("", "empty"),
            ("osmeter-no-such-program", "no such program on PATH"),
            (plain.to_str().unwrap(), "not executable"),
            (dir.path().to_str().unwrap(), "is a directory"),
            ("/no/such/dir/prog", "check the path"),
        ] {
            let e = startable(name).unwrap_err();
            assert_eq!(crate::error::exit_code(&e), crate::error::EXIT_USAGE);
            assert!(e.to_string().contains(says), "{name}: {e}");
        }
        assert!(startable("sh").is_ok());
    }
}
