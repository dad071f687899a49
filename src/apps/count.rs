//! Counting a workload whole: perf_event counters of its cgroup on every CPU (software events
//! always; hardware events user-only and kernel-only where the machine has a PMU), the cgroup's
//! user and kernel time, and what the machine as a whole did (CPU time by state, interrupts by
//! device). Without a cgroup (no permission, no cgroup v2) the measuring process and the children
//! it waited for are counted through getrusage instead, and the figure says so.
//!
//! Every value is a count over one sample; the harness divides by the operations in it.

use super::cell::{cpu_stat_of, Cell, CpuStat};
use crate::meter::machine::MachineReading;
use crate::meter::perf::events::{self, EventDef};
use crate::meter::perf::sys;
use crate::meter::Scope;
use crate::results::model::CounterScopes;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::Path;

/// One event open on one CPU for the cgroup.
struct Open {
    scope: Scope,
    name: &'static str,
    fd: OwnedFd,
}

/// Where the workload's own counts come from.
enum Source {
    Cgroup {
        cell: Cell,
        events: Vec<Open>,
        /// The cgroup of a server the whole run shares (`--fs fuse`), counted with the workload.
        server: Option<std::path::PathBuf>,
    },
    /// No cgroup: this process and its waited-for children.
    Rusage,
}

/// The counters of one workload, read around every sample.
pub struct WholeCounters {
    source: Source,
    /// Why the cgroup or the hardware events are missing, for the reader.
    notes: Vec<String>,
}

/// One reading, for a delta later.
pub struct Reading {
    events: Vec<(Scope, &'static str, u64, u64, u64)>,
    cpu: Option<CpuStat>,
    rusage: (u64, u64, u64, u64),
    machine: MachineReading,
}

impl WholeCounters {
    /// Joins a cgroup of the workload's own and opens its counters; falls back to getrusage with
    /// the reason in [`WholeCounters::notes`].
    pub fn start() -> WholeCounters {
        match Cell::join() {
            Ok(cell) => {
                let (mut events, mut notes) = open_cgroup_events(cell.path());
                let server = super::image::run_server_cgroup();
                if let Some(path) = &server {
                    let (more, why) = open_cgroup_events(path);
                    events.extend(more);
                    notes.extend(why);
                    notes.push(format!(
                        "counted with the workload: the run's file system server (fuse2fs, \
                         cgroup {})",
                        path.display()
                    ));
                }
                WholeCounters {
                    source: Source::Cgroup {
                        cell,
                        events,
                        server,
                    },
                    notes,
                }
            }
            Err(e) => WholeCounters {
                source: Source::Rusage,
                notes: vec![format!(
                    "counted: the measuring process and the children it waited for (getrusage), \
                     not a cgroup of the workload: {e:#}; processes started elsewhere are missed"
                )],
            },
        }
    }

    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// The cgroup the workload runs in, when it has one.
    pub fn cell(&self) -> Option<&Cell> {
        match &self.source {
            Source::Cgroup { cell, .. } => Some(cell),
            Source::Rusage => None,
        }
    }

    pub fn read(&self) -> Reading {
        let mut events = Vec::new();
        let mut cpu = None;
        if let Source::Cgroup {
            cell,
            events: open,
            server,
        } = &self.source
        {
            let mut buf = [0u64; 4];
            for o in open {
                if let Ok(n) = sys::read_words(&o.fd, &mut buf) {
                    if let Some(v) = sys::parse_single(&buf[..n]) {
                        events.push((o.scope, o.name, v.value, v.enabled_ns, v.running_ns));
                    }
                }
            }
            cpu = cell.cpu_stat();
            if let (Some(c), Some(extra)) = (&mut cpu, server.as_deref().and_then(cpu_stat_of)) {
                c.user_us += extra.user_us;
                c.system_us += extra.system_us;
            }
        }
        Reading {
            events,
            cpu,
            rusage: rusage(),
            machine: MachineReading::now(),
        }
    }

    /// Everything counted between two readings.
    pub fn delta(&self, before: &Reading, after: &Reading) -> CounterScopes {
        let mut out = CounterScopes::default();
        match &self.source {
            Source::Cgroup { .. } => {
                // Sum each event over CPUs, each CPU's share scaled by its own enabled/running.
                for (i, a) in after.events.iter().enumerate() {
                    let Some(b) = before.events.get(i).filter(|b| b.0 == a.0 && b.1 == a.1) else {
                        continue;
                    };
                    let value = a.2.saturating_sub(b.2) as f64;
                    let enabled = a.3.saturating_sub(b.3);
                    let running = a.4.saturating_sub(b.4);
                    let count = if running > 0 && running < enabled {
                        out.scaled = true;
                        value * enabled as f64 / running as f64
                    } else {
                        value
                    };
                    let map = match a.0 {
                        Scope::User => &mut out.user,
                        Scope::Kernel => &mut out.kernel,
                        Scope::Software => &mut out.software,
                    };
                    *map.entry(a.1.to_string()).or_insert(0.0) += count;
                }
                if let (Some(a), Some(b)) = (after.cpu, before.cpu) {
                    let us = |x: u64, y: u64| x.saturating_sub(y) as f64 * 1000.0;
                    out.software
                        .insert("workload-user-ns".into(), us(a.user_us, b.user_us));
                    out.software
                        .insert("workload-kernel-ns".into(), us(a.system_us, b.system_us));
                }
            }
            Source::Rusage => {
                let (au, ak, af, ac) = after.rusage;
                let (bu, bk, bf, bc) = before.rusage;
                let s = &mut out.software;
                s.insert("workload-user-ns".into(), au.saturating_sub(bu) as f64);
                s.insert("workload-kernel-ns".into(), ak.saturating_sub(bk) as f64);
                s.insert("page-faults".into(), af.saturating_sub(bf) as f64);
                s.insert("context-switches".into(), ac.saturating_sub(bc) as f64);
            }
        }
        out.software.extend(after.machine.since(&before.machine));
        out
    }
}

/// User ns, kernel ns, page faults and context switches of this process plus its waited-for
/// children.
fn rusage() -> (u64, u64, u64, u64) {
    let get = |who| {
        // SAFETY: getrusage fills the zeroed struct it is given.
        unsafe {
            let mut ru: libc::rusage = std::mem::zeroed();
            libc::getrusage(who, &mut ru);
            ru
        }
    };
    let ns = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
    let (a, b) = (get(libc::RUSAGE_SELF), get(libc::RUSAGE_CHILDREN));
    (
        ns(a.ru_utime) + ns(b.ru_utime),
        ns(a.ru_stime) + ns(b.ru_stime),
        (a.ru_minflt + a.ru_majflt + b.ru_minflt + b.ru_majflt) as u64,
        (a.ru_nvcsw + a.ru_nivcsw + b.ru_nvcsw + b.ru_nivcsw) as u64,
    )
}

fn online_cpus() -> i32 {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) };
    n.max(1) as i32
}

/// Opens every software event, and the hardware ones in each privilege level where the machine
/// has them, on every CPU for the cgroup. Events are opened one by one (not as groups) so that a
/// CPU that refuses one keeps the others.
fn open_cgroup_events(cgroup: &Path) -> (Vec<Open>, Vec<String>) {
    let mut notes = Vec::new();
    let dir = match std::fs::File::open(cgroup) {
        Ok(d) => d,
        Err(e) => {
            notes.push(format!(
                "no counters for the cgroup: cannot open {}: {e}",
                cgroup.display()
            ));
            return (Vec::new(), notes);
        }
    };
    let mut open = Vec::new();
    let mut refused: Vec<(Scope, &'static str, i32)> = Vec::new();
    let mut try_open = |scope: Scope, def: &EventDef| {
        for cpu in 0..online_cpus() {
            let read_format =
                sys::FORMAT_TOTAL_TIME_ENABLED | sys::FORMAT_TOTAL_TIME_RUNNING | sys::FORMAT_ID;
            let attr = sys::PerfEventAttr::new(
                def.type_,
                def.config,
                read_format,
                events::scope_flags(scope),
            );
            match sys::open_on(&attr, dir.as_raw_fd(), cpu, None, sys::PERF_FLAG_PID_CGROUP) {
                Ok(fd) => open.push(Open {
                    scope,
                    name: def.name,
                    fd,
                }),
                // An offline CPU refuses; the others still count.
                Err(libc::ENODEV) if cpu > 0 => {}
                Err(errno) => {
                    refused.push((scope, def.name, errno));
                    return;
                }
            }
        }
    };
    for def in events::SOFTWARE_GROUP {
        try_open(Scope::Software, def);
    }
    for scope in [Scope::User, Scope::Kernel] {
        for def in events::HARDWARE_GROUPS.iter().flat_map(|g| g.iter()) {
            try_open(scope, def);
        }
    }
    // Without a PMU the run already says so once for every event; any other refusal is news.
    if let Some((_, name, errno)) = refused.iter().find(|(s, _, e)| {
        *s != Scope::Software && !matches!(*e, libc::ENOENT | libc::EOPNOTSUPP | libc::ENODEV)
    }) {
        notes.push(format!(
            "hardware counters of the workload's cgroup not counted ({name}: {}); user and \
             kernel are told apart by the cgroup's times and software events",
            std::io::Error::from_raw_os_error(*errno)
        ));
    }
    for (_, name, errno) in refused.iter().filter(|(s, _, _)| *s == Scope::Software) {
        notes.push(format!(
            "software event {name} of the workload's cgroup not counted: {}",
            std::io::Error::from_raw_os_error(*errno)
        ));
    }
    (open, notes)
}
