//! The resource limits a process runs under, named when they are met. Rust's own
//! `std::thread::spawn` panics ("failed to spawn thread") and a failed allocation aborts, so a
//! user's `ulimit -u` or `ulimit -v` turned into exit 101 or 134, or, where one side of a pair
//! of threads waited for a partner that never started, into a hang. Threads are started here
//! instead, and memory of a size the user chose is taken here: a refusal is an error that says
//! which limit was reached and how to lift it.

use anyhow::anyhow;
use std::io;
use std::thread::{JoinHandle, Scope, ScopedJoinHandle};

/// A resource limit: the soft limit in force and the hard one it may be raised to (None: no
/// limit).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limit {
    pub soft: Option<u64>,
    pub hard: Option<u64>,
}

/// `resource` (libc::RLIMIT_*) of this process; None if the kernel does not say.
pub fn of(resource: libc::__rlimit_resource_t) -> Option<Limit> {
    let mut l = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit fills the struct we own.
    if unsafe { libc::getrlimit(resource, &mut l) } != 0 {
        return None;
    }
    let finite = |v: libc::rlim_t| (v != libc::RLIM_INFINITY).then_some(v);
    Some(Limit {
        soft: finite(l.rlim_cur),
        hard: finite(l.rlim_max),
    })
}

fn hard_text(limit: Option<Limit>, unit: impl Fn(u64) -> String) -> String {
    match limit.and_then(|l| l.hard) {
        Some(h) => format!("its hard limit is {}", unit(h)),
        None => "its hard limit is unlimited".to_string(),
    }
}

/// Starts `f` on a thread named `name`; when the system refuses the thread, the error names the
/// limit that was reached.
pub fn spawn<F, T>(name: &str, f: F) -> anyhow::Result<JoinHandle<T>>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    std::thread::Builder::new()
        .name(name.to_string())
        .spawn(f)
        .map_err(|e| cannot_start(&format!("the thread {name}"), &e))
}

/// [`spawn`] within `scope`.
pub fn spawn_scoped<'scope, 'env, F, T>(
    scope: &'scope Scope<'scope, 'env>,
    name: &str,
    f: F,
) -> anyhow::Result<ScopedJoinHandle<'scope, T>>
where
    F: FnOnce() -> T + Send + 'scope,
    T: Send + 'scope,
{
    std::thread::Builder::new()
        .name(name.to_string())
        .spawn_scoped(scope, f)
        .map_err(|e| cannot_start(&format!("the thread {name}"), &e))
}

/// Why the thread `what` could not start, `err` being what clone said: the limit on this user's
/// tasks (RLIMIT_NPROC), the pids cgroup's, the system's, or memory. Processes have their own
/// entry, [`super::processes::cannot_start`], with the same reasons.
pub fn cannot_start(what: &str, err: &io::Error) -> anyhow::Error {
    match refusal(Task::Thread, err) {
        Some(why) => anyhow!("cannot start {what} ({err}): {why}"),
        None => anyhow!("cannot start {what}: {err}"),
    }
}

/// What the system refused to make: the words of a refusal differ (a thread needs a stack, a
/// process a copy of its parent), the limits do not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Task {
    Thread,
    Process,
}

/// Which limit refused a new task, when `err` (from clone, fork or posix_spawn) is a refusal of
/// the system's (EAGAIN, ENOMEM) rather than something about the program (not found, not
/// executable): None then.
pub fn refusal(task: Task, err: &io::Error) -> Option<String> {
    match (err.raw_os_error()?, task) {
        (libc::EAGAIN, _) => Some(too_many_tasks(task)),
        (libc::ENOMEM, Task::Thread) => {
            Some(format!("no memory for its stack: {}", memory_limit()))
        }
        (libc::ENOMEM, Task::Process) => {
            Some(format!("no memory for a new process: {}", memory_limit()))
        }
        _ => None,
    }
}

/// This user's tasks against RLIMIT_NPROC, read when a task was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskCount {
    /// The real user, whom the kernel counts tasks by.
    pub uid: u32,
    /// The soft limit in force (`ulimit -u`).
    pub limit: u64,
    /// The hard limit it may be raised to (None: unlimited).
    pub hard: Option<u64>,
    /// The user's tasks (threads of every process) now, where /proc shows them.
    pub running: Option<u64>,
}

impl TaskCount {
    /// The refusal in words: the limit with both its values, the count, and what to do.
    pub fn explain(&self) -> String {
        let running = self
            .running
            .map(|n| format!(" ({n} running now)"))
            .unwrap_or_default();
        let raise = match self.hard {
            Some(h) if h > self.limit => format!("up to its hard limit, {h}"),
            Some(_) => "its hard limit is the same, so only root can raise it".to_string(),
            None => "its hard limit is unlimited".to_string(),
        };
        format!(
            "this user (uid {}) may run at most {} processes and threads at once (RLIMIT_NPROC, \
             `ulimit -u`), and has reached that{running}; raise it with `ulimit -u` ({raise}), \
             or end some of the user's processes",
            self.uid, self.limit
        )
    }
}

/// Which limit refused a new task (process or thread) with EAGAIN, as far as can be told: this
/// user's limit on tasks, the pids cgroup's, no memory for a thread's stack under an
/// address-space limit (glibc says EAGAIN for that too; a fork copies its parent's address space,
/// which the limit already held), or the system's.
fn too_many_tasks(task: Task) -> String {
    // SAFETY: geteuid and getuid have no preconditions.
    let (euid, uid) = unsafe { (libc::geteuid(), libc::getuid()) };
    let nproc = of(libc::RLIMIT_NPROC);
    // Root (CAP_SYS_RESOURCE) is not held to RLIMIT_NPROC, which counts by the real user.
    let per_user = nproc.and_then(|l| l.soft).filter(|_| euid != 0);
    let running = per_user.and_then(|_| tasks_of(uid));
    let user_limit = |n: u64| {
        TaskCount {
            uid,
            limit: n,
            hard: nproc.and_then(|l| l.hard),
            running,
        }
        .explain()
    };
    if let Some(n) = per_user {
        // The kernel's count and this one may differ by the task being made.
        match running {
            Some(count) if count + 1 >= n => return user_limit(n),
            None => return user_limit(n),
            Some(_) => {}
        }
    }
    if let Some(why) = pids_cgroup_full() {
        return why;
    }
    if task == Task::Thread && of(libc::RLIMIT_AS).is_some_and(|l| l.soft.is_some()) {
        return format!("no memory for its stack: {}", memory_limit());
    }
    if let Some(n) = per_user {
        return user_limit(n);
    }
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .map(|t| t.trim().to_string())
            .unwrap_or_else(|_| "?".into())
    };
    format!(
        "the system's limit on threads (kernel.threads-max {}) or on process ids \
         (kernel.pid_max {}) is reached",
        read("/proc/sys/kernel/threads-max"),
        read("/proc/sys/kernel/pid_max")
    )
}

/// The tasks (threads of every process) whose real user is `uid`, as far as /proc shows them.
fn tasks_of(uid: u32) -> Option<u64> {
    let mut count = 0;
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        if !entry
            .file_name()
            .to_string_lossy()
            .bytes()
            .all(|b| b.is_ascii_digit())
        {
            continue;
        }
        let Ok(status) = std::fs::read_to_string(entry.path().join("status")) else {
            continue;
        };
        let field = |name: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|rest| rest.split_whitespace().next())
                .and_then(|v| v.parse::<u64>().ok())
        };
        if field("Uid:") == Some(u64::from(uid)) {
            count += field("Threads:").unwrap_or(1);
        }
    }
    Some(count)
}

/// The pids cgroup (v2) of this process when it holds as many tasks as it may.
fn pids_cgroup_full() -> Option<String> {
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let path = own.lines().find_map(|l| l.strip_prefix("0::"))?;
    let mut dir = std::path::PathBuf::from("/sys/fs/cgroup").join(path.trim_start_matches('/'));
    loop {
        let read = |f: &str| std::fs::read_to_string(dir.join(f)).ok();
        if let (Some(max), Some(current)) = (read("pids.max"), read("pids.current")) {
            if let (Ok(max), Ok(current)) =
                (max.trim().parse::<u64>(), current.trim().parse::<u64>())
            {
                if current >= max {
                    return Some(format!(
                        "the pids cgroup {} allows {max} tasks and holds {current}; raise its \
                         pids.max",
                        dir.display()
                    ));
                }
            }
        }
        if !dir.pop() || dir == std::path::Path::new("/sys/fs") {
            return None;
        }
    }
}

/// What limits this process's memory, for a refusal: the address-space limit (`ulimit -v`) when
/// there is one, else the memory the machine (or its cgroup) has left.
pub fn memory_limit() -> String {
    let limit = of(libc::RLIMIT_AS);
    if let Some(bytes) = limit.and_then(|l| l.soft) {
        let mapped = mapped_bytes()
            .map(|m| format!("; osmeter has {} mapped", crate::units::bytes(m)))
            .unwrap_or_default();
        return format!(
            "the address-space limit (RLIMIT_AS, `ulimit -v` {} KiB) allows {}{mapped}; raise it \
             with `ulimit -v` ({})",
            bytes / 1024,
            crate::units::bytes(bytes),
            hard_text(limit, |h| format!("{} KiB", h / 1024))
        );
    }
    match crate::memory_room::now() {
        Some(room) => room.what,
        None => "the machine is out of memory".to_string(),
    }
}

/// VmSize of this process: the address space it has mapped.
fn mapped_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmSize:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Under an address-space limit (`ulimit -v`), keeps glibc's allocator to one arena: it would
/// otherwise reserve 64 MiB of address space for each thread that allocates, so that a limit
/// that leaves room for every buffer and stack still runs out. Call first thing in `main`.
pub fn fit_allocator_to_address_space() {
    #[cfg(target_env = "gnu")]
    if of(libc::RLIMIT_AS).is_some_and(|l| l.soft.is_some()) {
        // SAFETY: mallopt only sets a parameter of the allocator, before any thread exists.
        unsafe { libc::mallopt(libc::M_ARENA_MAX, 1) };
    }
}

/// Why `bytes` for `what` could not be taken.
pub fn no_memory(what: &str, bytes: usize) -> anyhow::Error {
    anyhow!(
        "cannot allocate {} for {what}: {}",
        crate::units::bytes(bytes as u64),
        memory_limit()
    )
}

/// `len` bytes of `fill`, or an error naming the memory limit where a plain `vec!` would abort
/// the process.
pub fn filled(len: usize, fill: u8, what: &str) -> anyhow::Result<Vec<u8>> {
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|_| no_memory(what, len))?;
    v.resize(len, fill);
    Ok(v)
}

/// Why a write of `path` failed with EFBIG: the file-size limit (`ulimit -f`), when there is one.
pub fn file_too_large(path: &std::path::Path) -> String {
    file_too_large_writing(&path.display().to_string())
}

/// [`file_too_large`] for a write whose file is not known (`what` names it, e.g. "a file").
pub fn file_too_large_writing(what: &str) -> String {
    let limit = of(libc::RLIMIT_FSIZE);
    match limit.and_then(|l| l.soft) {
        Some(bytes) => format!(
            "file too large: writing {what} went past the file-size limit osmeter runs under \
             (RLIMIT_FSIZE, `ulimit -f` {} blocks of 1 KiB, {}); raise it with `ulimit -f` ({})",
            bytes / 1024,
            crate::units::bytes(bytes),
            hard_text(limit, |h| format!("{} blocks", h / 1024))
        ),
        None => format!("file too large: {what} reached the largest size its file system allows"),
    }
}

/// The CPU-time limit (RLIMIT_CPU, `ulimit -t`) in seconds, soft and hard, when there is one.
pub fn cpu_time() -> Option<Limit> {
    of(libc::RLIMIT_CPU).filter(|l| l.soft.is_some() || l.hard.is_some())
}

/// The CPU-time limit named for a message about a process that reached it after `used_s`
/// seconds of CPU.
pub fn cpu_time_reached(used_s: f64) -> Option<String> {
    let limit = cpu_time()?;
    let at = limit.soft.or(limit.hard)?;
    Some(format!(
        "it reached the CPU-time limit osmeter runs under (RLIMIT_CPU, `ulimit -t` {at} s) after \
         {used_s:.1} s of CPU; raise it with `ulimit -t` ({}), or make rounds shorter \
         (--min-time, --repeat)",
        hard_text(Some(limit), |h| format!("{h} s"))
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_thread_names_the_limit_on_tasks() {
        let e = cannot_start("the thread x", &io::Error::from_raw_os_error(libc::EAGAIN));
        let text = format!("{e:#}");
        assert!(text.starts_with("cannot start the thread x ("), "{text}");
        assert!(
            text.contains("RLIMIT_NPROC")
                || text.contains("pids cgroup")
                || text.contains("RLIMIT_AS")
                || text.contains("kernel.threads-max"),
            "{text}"
        );
        let e = cannot_start("the thread y", &io::Error::from_raw_os_error(libc::ENOMEM));
        assert!(format!("{e:#}").contains("no memory for its stack"));
    }

    #[test]
    fn memory_is_taken_or_refused_with_the_limit_named() {
        assert_eq!(filled(3, 7, "a test").unwrap(), vec![7, 7, 7]);
        let e = filled(usize::MAX / 2, 0, "a huge buffer").unwrap_err();
        assert!(format!("{e:#}").contains("cannot allocate"), "{e:#}");
    }
}
