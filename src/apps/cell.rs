//! A cgroup (v2) of its own for one application workload: the measuring process moves into it
//! before the workload starts anything, so every process the workload involves (compilers,
//! interpreters, a FUSE daemon, a server and its clients) is inside, and the cgroup's times and
//! perf_event counts are the workload's, whoever did the work.
//!
//! The cgroup is made next to the one osmeter runs in, named `osmeter-app-PID-N`, and removed when
//! the [`Cell`] is dropped (the process moves back first). A measuring process killed outright
//! cannot remove it: the next cell made in the same place removes cgroups whose process is gone, and
//! says so.

use anyhow::{anyhow, bail, Context, Result};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

const PREFIX: &str = "osmeter-app-";

/// The cgroup of one workload, joined by the calling process.
pub struct Cell {
    path: PathBuf,
    /// Where the process came from, to go back before the cgroup is removed.
    home: PathBuf,
    /// The process moved in.
    member: u32,
}

/// Times of a cgroup's processes so far (cpu.stat), microseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuStat {
    pub user_us: u64,
    pub system_us: u64,
}

impl CpuStat {
    pub fn parse(text: &str) -> Option<CpuStat> {
        let field = |name: &str| {
            text.lines().find_map(|l| {
                let (k, v) = l.split_once(' ')?;
                (k == name).then(|| v.trim().parse::<u64>().ok()).flatten()
            })
        };
        Some(CpuStat {
            user_us: field("user_usec")?,
            system_us: field("system_usec")?,
        })
    }
}

impl Cell {
    /// Makes a cgroup beside the caller's and moves the calling process into it. Fails with the
    /// reason when there is no cgroup v2 hierarchy or no permission to write it.
    pub fn join() -> Result<Cell> {
        Cell::adopt(std::process::id())
    }

    /// Makes a cgroup beside the caller's and moves process `pid` (the caller or a child of it)
    /// into it: a server that the workloads of a whole run share (the run's FUSE server) is
    /// counted apart from the measuring process and added to each workload's counts.
    pub fn adopt(pid: u32) -> Result<Cell> {
        let home = home()?;
        sweep_and_say(&home);
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        // Named after the measuring process, which owns the cgroup whoever is in it.
        let path = home.join(format!(
            "{PREFIX}{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir(&path).with_context(|| {
            format!(
                "cannot create the cgroup {} (needs root, or a cgroup delegated to this user)",
                path.display()
            )
        })?;
        let cell = Cell {
            path,
            home,
            member: pid,
        };
        write_pid(&cell.path, pid)
            .with_context(|| format!("cannot move process {pid} into {}", cell.path.display()))?;
        Ok(cell)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The cgroup's user and kernel time so far.
    pub fn cpu_stat(&self) -> Option<CpuStat> {
        cpu_stat_of(&self.path)
    }
}

impl Drop for Cell {
    fn drop(&mut self) {
        // A member that has ended is gone from the cgroup already.
        let _ = write_pid(&self.home, self.member);
        if let Err(e) = remove(&self.path) {
            eprintln!("osmeter: {e:#}");
        }
    }
}

/// The user and kernel time so far of the cgroup at `path`.
pub fn cpu_stat_of(path: &Path) -> Option<CpuStat> {
    std::fs::read_to_string(path.join("cpu.stat"))
        .ok()
        .and_then(|t| CpuStat::parse(&t))
}

fn write_pid(cgroup: &Path, pid: u32) -> std::io::Result<()> {
    std::fs::write(cgroup.join("cgroup.procs"), pid.to_string())
}

/// Removes a cgroup, killing what is still in it (a child the workload failed to reap).
fn remove(path: &Path) -> Result<()> {
    for attempt in 0..50 {
        match std::fs::remove_dir(path) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                if attempt == 0 {
                    kill_members(path);
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            Err(e) => bail!("cannot remove the cgroup {}: {e}", path.display()),
        }
    }
    bail!(
        "cannot remove the cgroup {}: processes are still in it (see {}/cgroup.procs)",
        path.display(),
        path.display()
    )
}

fn kill_members(path: &Path) {
    // cgroup.kill (Linux 5.14) kills every member at once; older kernels get one signal per pid.
    if std::fs::write(path.join("cgroup.kill"), "1").is_ok() {
        return;
    }
    let procs = std::fs::read_to_string(path.join("cgroup.procs")).unwrap_or_default();
    for pid in procs.lines().filter_map(|l| l.trim().parse::<i32>().ok()) {
        // SAFETY: signalling a process that is in the workload's own cgroup.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
}

/// The cgroup this process is in, where workload cgroups are made.
fn home() -> Result<PathBuf> {
    let mounts = crate::mounts::read().context("cannot read /proc/self/mountinfo")?;
    let root = cgroup2_mount(&mounts).ok_or_else(|| {
        anyhow!("no cgroup v2 hierarchy is mounted (mount -t cgroup2 none /sys/fs/cgroup)")
    })?;
    let own =
        std::fs::read_to_string("/proc/self/cgroup").context("cannot read /proc/self/cgroup")?;
    let rel = v2_path(&own)
        .ok_or_else(|| anyhow!("this process is in no cgroup v2 (/proc/self/cgroup)"))?;
    Ok(root.join(rel.trim_start_matches('/')))
}

fn sweep_and_say(home: &Path) {
    for gone in sweep(home) {
        eprintln!(
            "osmeter: removed cgroup {}, left by a measuring process that was killed",
            gone.display()
        );
    }
}

/// Removes the workload cgroups that killed measuring processes left beside this process's own
/// (a run killed outright leaves its file system server's); nothing when there are none or no
/// cgroup v2.
pub fn sweep_left() {
    if let Ok(home) = home() {
        sweep_and_say(&home);
    }
}

/// Removes the cgroups in `dir` that measuring processes now gone left behind; returns them.
fn sweep(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(PREFIX))
            .and_then(|rest| rest.split('-').next())
            .and_then(|p| p.parse::<i32>().ok())
        else {
            continue;
        };
        // SAFETY: signal 0 only asks whether the process exists.
        let alive = unsafe { libc::kill(pid, 0) } == 0
            || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
        if !alive && remove(&e.path()).is_ok() {
            out.push(e.path());
        }
    }
    out
}

/// The mount point of the cgroup v2 hierarchy.
pub fn cgroup2_mount(mounts: &[crate::mounts::Mount]) -> Option<PathBuf> {
    mounts
        .iter()
        .find(|m| m.fs_type == "cgroup2")
        .map(|m| m.path().to_path_buf())
}

/// The cgroup v2 path of /proc/self/cgroup (the `0::` line).
pub fn v2_path(proc_cgroup: &str) -> Option<&str> {
    proc_cgroup
        .lines()
        .find_map(|l| l.strip_prefix("0::"))
        .map(str::trim)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_v2_mount_in_hybrid_and_unified_layouts() {
        let hybrid = "\
30 25 0:26 / /sys/fs/cgroup ro,nosuid shared:9 - tmpfs tmpfs ro,mode=755
31 30 0:27 / /sys/fs/cgroup/unified rw,nosuid shared:10 - cgroup2 cgroup2 rw
32 30 0:28 / /sys/fs/cgroup/cpu rw shared:11 - cgroup cgroup rw,cpu
";
        assert_eq!(
            cgroup2_mount(&crate::mounts::parse(hybrid)),
            Some(PathBuf::from("/sys/fs/cgroup/unified"))
        );
        let unified = "35 24 0:30 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw,nsdelegate\n";
        assert_eq!(
            cgroup2_mount(&crate::mounts::parse(unified)),
            Some(PathBuf::from("/sys/fs/cgroup"))
        );
        assert_eq!(
            cgroup2_mount(&crate::mounts::parse("1 0 0:1 / / rw - ext4 /dev/vda rw\n")),
            None
        );
    }

    #[test]
    fn own_cgroup_path_is_the_v2_line() {
        let text = "4:memory:/x\n1:cpu:/\n0::/user.slice/session-1.scope\n";
        assert_eq!(v2_path(text), Some("/user.slice/session-1.scope"));
        assert_eq!(v2_path("4:memory:/x\n"), None);
    }

    #[test]
    fn cpu_stat_reads_user_and_system() {
        let text = "usage_usec 1500\nuser_usec 1000\nsystem_usec 500\nnr_periods 0\n";
        assert_eq!(
            CpuStat::parse(text),
            Some(CpuStat {
                user_us: 1000,
                system_us: 500
            })
        );
        assert_eq!(CpuStat::parse("usage_usec 3\n"), None);
    }
}
