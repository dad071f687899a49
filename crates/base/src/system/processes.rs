//! Processes started with the limit named when the system refuses one. A fork under `ulimit -u`
//! fails with EAGAIN, which Rust and libc spell "Resource temporarily unavailable": true, and no
//! help to a user who has to find out that it was their limit on processes, at what value, and
//! how to lift it. Every place osmeter starts a process (a measuring worker, a probe's partner or
//! child, the command of `stat`, a load, a tool it drives) turns the error into words here, the
//! same words [`super::limits`] gives a thread that cannot start.
//!
//! Nothing here cleans up: each caller owns what it made before the refusal (pipes, scratch
//! files, a guardian) and drops it on the error path, so a refused start leaves nothing running.

use super::limits::{refusal, Task};
use anyhow::anyhow;
use std::io;

/// Why the process `what` could not start, `err` being what fork, clone, posix_spawn or exec
/// said: the limit in force (RLIMIT_NPROC with its soft and hard values and this user's count,
/// the pids cgroup's, the system's, or memory) and what to do; any other error as it is.
pub fn cannot_start(what: &str, err: &io::Error) -> anyhow::Error {
    match refusal(Task::Process, err) {
        Some(why) => anyhow!("cannot start {what} ({err}): {why}"),
        None => anyhow!("cannot start {what}: {err}"),
    }
}

/// [`cannot_start`], with `hint` (how to install the program, what to give instead) where the
/// error is about the program rather than a limit of the system's, which a hint about the
/// program would only hide.
pub fn cannot_start_or(what: &str, err: &io::Error, hint: &str) -> anyhow::Error {
    if refused(err) {
        return cannot_start(what, err);
    }
    anyhow!("cannot start {what} ({err}): {hint}")
}

/// Whether `err` is the system refusing a new process (a limit, memory), not anything about
/// the program itself: a refusal is never the program's fault, so callers that would blame the
/// program (a noexec mount, a missing tool) must not.
pub fn refused(err: &io::Error) -> bool {
    matches!(err.raw_os_error(), Some(libc::EAGAIN | libc::ENOMEM))
}

/// fork's (or clone's) return value `rc` checked, in the parent: the child's pid, or why `what`
/// could not start (errno is read here, so call this right after the fork).
pub fn forked(rc: libc::pid_t, what: &str) -> anyhow::Result<libc::pid_t> {
    if rc < 0 {
        return Err(cannot_start(what, &io::Error::last_os_error()));
    }
    Ok(rc)
}

/// posix_spawn's return value `rc` (an errno, not -1) checked.
pub fn posix_spawned(rc: libc::c_int, what: &str) -> anyhow::Result<()> {
    if rc != 0 {
        return Err(cannot_start(what, &io::Error::from_raw_os_error(rc)));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_process_names_the_limit_and_what_did_not_start() {
        let e = cannot_start(
            "the partner process",
            &io::Error::from_raw_os_error(libc::EAGAIN),
        );
        let text = format!("{e:#}");
        assert!(
            text.starts_with("cannot start the partner process (Resource temporarily"),
            "{text}"
        );
        assert!(
            text.contains("RLIMIT_NPROC")
                || text.contains("pids cgroup")
                || text.contains("kernel.threads-max"),
            "{text}"
        );
        // A process needs no stack of its own from osmeter: no word of one.
        assert!(!text.contains("stack"), "{text}");
        let e = cannot_start("qemu", &io::Error::from_raw_os_error(libc::ENOENT));
        assert_eq!(
            format!("{e:#}"),
            "cannot start qemu: No such file or directory (os error 2)"
        );
        let e = cannot_start_or(
            "apt-get",
            &io::Error::from_raw_os_error(libc::ENOENT),
            "hint",
        );
        assert!(format!("{e:#}").ends_with("(os error 2)): hint"), "{e:#}");
        let e = cannot_start_or(
            "apt-get",
            &io::Error::from_raw_os_error(libc::EAGAIN),
            "hint",
        );
        assert!(!format!("{e:#}").contains("hint"), "{e:#}");
        assert!(refused(&io::Error::from_raw_os_error(libc::EAGAIN)));
        assert!(!refused(&io::Error::from_raw_os_error(libc::ENOENT)));
    }

    /// The words of RLIMIT_NPROC reached: both its values, the count, and the way out.
    #[test]
    fn the_limit_on_tasks_is_told_with_both_values_and_the_count() {
        use super::super::limits::TaskCount;
        let text = TaskCount {
            uid: 65534,
            limit: 5,
            hard: Some(64),
            running: Some(5),
        }
        .explain();
        assert_eq!(
            text,
            "this user (uid 65534) may run at most 5 processes and threads at once \
             (RLIMIT_NPROC, `ulimit -u`), and has reached that (5 running now); raise it with \
             `ulimit -u` (up to its hard limit, 64), or end some of the user's processes"
        );
        let fixed = TaskCount {
            uid: 1000,
            limit: 5,
            hard: Some(5),
            running: None,
        }
        .explain();
        assert!(
            fixed.contains("that; raise it") && fixed.contains("only root can raise it"),
            "{fixed}"
        );
    }
}
