//! The one place osmeter touches tracefs.
//!
//! What could outlive osmeter, and how it cannot:
//! - The mount. osmeter never mounts tracefs in the mount table: it opens a private, detached
//!   mount ([`detached`]) that exists only as a descriptor of this process and vanishes with it,
//!   whatever signal ends it. Only when the kernel cannot give one (before Linux 5.2, or without
//!   the privilege) does it use a tracefs somebody already mounted.
//! - Trace instances. Everything osmeter sets (events, filters, triggers, options, buffer sizes,
//!   the clock, the CPU mask) lives inside instances of its own, so the global trace settings are
//!   never written and nothing outside an instance needs restoring. An instance is removed when its
//!   handle drops; one left by a process that was killed (kill -9 keeps it recording, with its
//!   buffers) is removed by the next osmeter that opens tracefs, which says so on stderr.
//!
//! Instance names carry the owner's pid and start time (`osmeter-PID-START-PURPOSE-N`), so a
//! reused pid is not mistaken for the owner. An instance that is still open (its owner alive,
//! perhaps in another PID namespace) cannot be removed and is left alone.

use anyhow::{bail, Context, Result};
use osmeter_base::{detached, mounts};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// How this process reaches tracefs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// A detached mount private to this process.
    Private,
    /// A tracefs already mounted by somebody else, at the path in `Tracefs::root`.
    Existing,
}

pub struct Tracefs {
    root: PathBuf,
    pub access: Access,
    // Keeps the private mount alive; the kernel drops it when this closes.
    _mount: Option<OwnedFd>,
}

/// An instance left by an osmeter that no longer runs, and what happened to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StaleInstance {
    pub name: String,
    pub pid: u32,
    pub buffer_kb: Option<u64>,
    /// `None` when removed; otherwise why it was left.
    pub left: Option<String>,
}

/// Where tracefs is mounted in this process's mount table, the usual place first.
pub fn mount_points() -> Vec<PathBuf> {
    let mut points = mounts::points_of_type(&mounts::table(), "tracefs");
    points.sort_by_key(|p| p != Path::new("/sys/kernel/tracing"));
    points
}

/// A mounted tracefs that can hold instances.
fn existing_mount() -> Option<PathBuf> {
    mount_points()
        .into_iter()
        .find(|p| p.join("instances").is_dir())
}

/// Removes the trace instances of osmeter processes that no longer run (a `kill -9` leaves them
/// recording, with their buffers), saying so on stderr: every root `latency` and `run` calls this
/// as it starts, whether or not it traces, so a leftover never outlives the next command. Without
/// root, or without tracefs, there is nothing this user could remove, and nothing is said.
pub fn sweep_stale_instances() {
    // SAFETY: geteuid only reads this process's credentials.
    if unsafe { libc::geteuid() } != 0 {
        return;
    }
    // What it removed is reported by `open`; the private mount goes with the value.
    let _ = Tracefs::open();
}

impl Tracefs {
    /// Reaches tracefs without changing the mount table, then removes instances that dead osmeter
    /// processes left behind (reported on stderr).
    pub fn open() -> Result<Arc<Tracefs>> {
        let fs = Tracefs::reach()?;
        for stale in fs.remove_stale_instances() {
            let size = stale
                .buffer_kb
                .map(|kb| format!(", {} KB of trace buffers", kb))
                .unwrap_or_default();
            match &stale.left {
                None => eprintln!(
                    "osmeter: removed trace instance {} left by process {}, which no longer runs{size}",
                    stale.name, stale.pid
                ),
                Some(why) => eprintln!(
                    "osmeter: trace instance {} of process {} (not running here) was left: {why}",
                    stale.name, stale.pid
                ),
            }
        }
        Ok(fs)
    }

    /// Reaches tracefs without changing anything (no clean-up either).
    pub fn reach() -> Result<Arc<Tracefs>> {
        let fs = match detached::mount(c"tracefs") {
            Ok(fd) => Tracefs {
                root: detached::root_of(&fd),
                access: Access::Private,
                _mount: Some(fd),
            },
            Err(private) => match existing_mount() {
                Some(root) => Tracefs {
                    root,
                    access: Access::Existing,
                    _mount: None,
                },
                None => bail!(
                    "cannot reach tracefs: a private mount failed ({private}) and none is mounted; \
                     run as root on a kernel with tracing, or mount it with \
                     `mount -t tracefs nodev /sys/kernel/tracing`"
                ),
            },
        };
        if !fs.root.join("instances").is_dir() {
            bail!(
                "tracefs at {} has no instances directory (kernel too old for trace instances)",
                fs.root.display()
            );
        }
        Ok(Arc::new(fs))
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `osmeter-...` instances whose owner is gone (names and owners), without touching them.
    pub fn stale_instances(&self) -> Vec<(String, InstanceOwner)> {
        let Ok(entries) = std::fs::read_dir(self.root.join("instances")) else {
            return Vec::new();
        };
        entries
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                let owner = InstanceOwner::parse(&name)?;
                (!owner.is_running()).then_some((name, owner))
            })
            .collect()
    }

    /// Removes every `osmeter-...` instance whose owner is gone; returns what it found.
    pub fn remove_stale_instances(&self) -> Vec<StaleInstance> {
        let mut out = Vec::new();
        for (name, owner) in self.stale_instances() {
            let dir = self.root.join("instances").join(&name);
            let buffer_kb = std::fs::read_to_string(dir.join("buffer_total_size_kb"))
                .ok()
                .and_then(|t| t.trim().parse().ok());
            // No write before the removal: an instance still open belongs to a live owner (one
            // this process cannot see), and rmdir refuses it with EBUSY untouched.
            let left = match std::fs::remove_dir(&dir) {
                Ok(()) => None,
                // Another osmeter sweeping at the same moment removed it first: not ours to report.
                Err(e) if e.raw_os_error() == Some(libc::ENOENT) => continue,
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                    Some("it is open, so its owner still runs (another PID namespace?)".into())
                }
                Err(e) => Some(format!("cannot remove it: {e}")),
            };
            out.push(StaleInstance {
                name,
                pid: owner.pid,
                buffer_kb,
                left,
            });
        }
        out
    }
}

/// Who made an instance, from its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InstanceOwner {
    pub pid: u32,
    /// Start time in clock ticks after boot (field 22 of /proc/PID/stat); absent in names made by
    /// osmeter versions that only wrote the pid.
    pub start: Option<u64>,
}

impl InstanceOwner {
    /// `osmeter-PID` or `osmeter-PID-START[-PURPOSE]`.
    pub fn parse(name: &str) -> Option<InstanceOwner> {
        let mut parts = name.strip_prefix("osmeter-")?.split('-');
        let pid = parts.next()?.parse().ok()?;
        let start = match parts.next() {
            None => None,
            Some(s) => Some(s.parse().ok()?),
        };
        Some(InstanceOwner { pid, start })
    }

    pub fn is_running(&self) -> bool {
        match process_start_ticks(self.pid) {
            None => false,
            Some(now) => self.start.is_none_or(|s| s == now),
        }
    }
}

/// Start time of a process in clock ticks after boot, or None when it does not exist.
pub fn process_start_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses: fields count from the last ')'.
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(19)?.parse().ok()
}

/// A trace instance of this process: created empty and stopped, removed on drop.
pub struct Instance {
    fs: Arc<Tracefs>,
    dir: PathBuf,
    name: String,
}

impl Instance {
    /// `purpose` names what it is for (`causes`, `stages`); a sequence number keeps several of the
    /// same purpose in one process apart.
    pub fn create(fs: &Arc<Tracefs>, purpose: &str) -> Result<Instance> {
        static SEQ: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let pid = std::process::id();
        let start = process_start_ticks(pid).unwrap_or(0);
        let seq = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let name = format!("osmeter-{pid}-{start}-{purpose}-{seq}");
        let dir = fs.root.join("instances").join(&name);
        std::fs::create_dir(&dir)
            .with_context(|| format!("cannot create the trace instance {name}"))?;
        let instance = Instance {
            fs: Arc::clone(fs),
            dir,
            name,
        };
        // A new instance records at once; nothing until it is set up.
        instance.write("tracing_on", "0")?;
        Ok(instance)
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn path(&self, relative: &str) -> PathBuf {
        self.dir.join(relative)
    }

    pub fn has(&self, relative: &str) -> bool {
        self.path(relative).exists()
    }

    pub fn write(&self, relative: &str, text: &str) -> Result<()> {
        let path = self.path(relative);
        std::fs::write(&path, text)
            .with_context(|| format!("cannot write {text:?} to {} in {}", relative, self.name))
    }

    pub fn read(&self, relative: &str) -> Result<String> {
        std::fs::read_to_string(self.path(relative))
            .with_context(|| format!("cannot read {} in {}", relative, self.name))
    }

    /// Enables `group/event` if this kernel has it; false when it does not.
    pub fn enable_event(&self, event: &str) -> Result<bool> {
        let enable = format!("events/{event}/enable");
        if !self.has(&enable) {
            return Ok(false);
        }
        self.write(&enable, "1")?;
        Ok(true)
    }

    /// Traces only these CPUs.
    pub fn set_cpus(&self, cpus: &[usize]) -> Result<()> {
        self.write("tracing_cpumask", &cpu_mask(cpus))
    }

    pub fn tracefs(&self) -> &Arc<Tracefs> {
        &self.fs
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = self.write("tracing_on", "0");
        // Removing the instance drops its events, filters, triggers and buffers with it. A reader
        // that has just closed its descriptor may still hold a reference for a moment.
        for _ in 0..50 {
            match std::fs::remove_dir(&self.dir) {
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                    std::thread::sleep(std::time::Duration::from_millis(10))
                }
                _ => return,
            }
        }
        eprintln!(
            "osmeter: trace instance {} is still busy and was left; the next osmeter run removes it",
            self.name
        );
    }
}

/// tracing_cpumask text: 32-bit hex words, most significant first, comma-separated.
pub fn cpu_mask(cpus: &[usize]) -> String {
    let mut mask = vec![0u32; cpus.iter().max().map(|m| m / 32 + 1).unwrap_or(1)];
    for &c in cpus {
        mask[c / 32] |= 1 << (c % 32);
    }
    let words: Vec<String> = mask.iter().rev().map(|w| format!("{w:08x}")).collect();
    words.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owner_names_parse() {
        assert_eq!(
            InstanceOwner::parse("osmeter-123"),
            Some(InstanceOwner {
                pid: 123,
                start: None
            })
        );
        assert_eq!(
            InstanceOwner::parse("osmeter-123-4567-causes"),
            Some(InstanceOwner {
                pid: 123,
                start: Some(4567)
            })
        );
        assert_eq!(InstanceOwner::parse("osmeter-x"), None);
        assert_eq!(InstanceOwner::parse("osmeter-12-start"), None);
        assert_eq!(InstanceOwner::parse("rtla-12"), None);
    }

    #[test]
    fn this_process_runs_and_a_wrong_start_time_does_not() {
        let pid = std::process::id();
        let start = process_start_ticks(pid).unwrap();
        assert!(InstanceOwner {
            pid,
            start: Some(start)
        }
        .is_running());
        assert!(!InstanceOwner {
            pid,
            start: Some(start + 1)
        }
        .is_running());
        assert!(!InstanceOwner {
            pid: u32::MAX,
            start: None
        }
        .is_running());
    }

    #[test]
    fn cpu_masks() {
        assert_eq!(cpu_mask(&[0]), "00000001");
        assert_eq!(cpu_mask(&[1, 3]), "0000000a");
        assert_eq!(cpu_mask(&[33]), "00000002,00000000");
    }

    fn root() -> bool {
        // SAFETY: geteuid cannot fail.
        unsafe { libc::geteuid() == 0 }
    }

    fn mount_table_tracefs() -> usize {
        mounts::points_of_type(&mounts::read().unwrap(), "tracefs").len()
    }

    #[test]
    fn an_instance_lives_in_a_private_mount_and_goes_with_its_handle() {
        if !root() {
            eprintln!("skipped: tracefs needs root");
            return;
        }
        let before = mount_table_tracefs();
        let fs = Tracefs::open().unwrap();
        let inst = Instance::create(&fs, "unit").unwrap();
        assert!(inst.has("tracing_on"));
        assert_eq!(inst.read("tracing_on").unwrap().trim(), "0");
        assert!(inst.enable_event("sched/sched_switch").unwrap());
        assert!(!inst.enable_event("nosuch/event").unwrap());
        let dir = inst.path("");
        drop(inst);
        assert!(!dir.exists(), "the instance was not removed");
        if fs.access == Access::Private {
            assert_eq!(mount_table_tracefs(), before, "the mount table changed");
        }
    }

    #[test]
    fn a_dead_owners_instance_is_removed_and_a_live_one_kept() {
        if !root() {
            eprintln!("skipped: tracefs needs root");
            return;
        }
        let fs = Tracefs::open().unwrap();
        // A process that has exited: its pid with a start time no process has.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let stale = format!("osmeter-{dead}-1-unit");
        std::fs::create_dir(fs.root().join("instances").join(&stale)).unwrap();
        let live = Instance::create(&fs, "unit-live").unwrap();
        let found = fs.remove_stale_instances();
        // Any other osmeter opening tracefs meanwhile may have removed it first.
        for s in found.iter().filter(|s| s.name == stale) {
            assert_eq!(s.left, None);
            assert_eq!(s.pid, dead);
            assert!(s.buffer_kb.is_some());
        }
        assert!(!fs.root().join("instances").join(&stale).exists());
        assert!(live.has("tracing_on"), "a live instance was removed");
    }
}
