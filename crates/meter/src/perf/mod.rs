//! perf_event counters: hardware events opened twice (user-only and kernel-only), software events
//! once, in groups so related events share one counting interval. What cannot be opened is kept with
//! a reason the user can act on.
//!
//! Counters are enabled once and left running; every [`CounterSet::read`] returns cumulative values
//! with the time each event was enabled and actually on a counter, and
//! [`crate::counter_delta`] turns two readings into scaled counts.

pub mod events;
pub mod sampling;
mod spawn;
pub mod sys;
#[cfg(test)]
mod tests;

pub use events::paranoid;
pub use spawn::{spawn_counted, CountedChild};

use super::{CounterReading, EventCount, Scope};
use events::{EventDef, Privilege};
use std::collections::BTreeMap;
use std::os::fd::OwnedFd;

/// Whether one event can be counted here, and if not why (for `osmeter info`).
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub struct EventStatus {
    pub scope: Scope,
    pub name: &'static str,
    pub available: bool,
    /// Why not: "not supported by this CPU or VM", "perf_event_paranoid is 3", "permission denied" ...
    pub reason: Option<String>,
}

/// Tries every event osmeter knows, user and kernel apart, and says which can be opened.
pub fn event_availability() -> Vec<EventStatus> {
    let mut opener = Opener::new(Target::Probe);
    let mut out = Vec::new();
    let mut check = |scope: Scope, def: &EventDef| {
        let mut set = CounterSet::default();
        opener.open_single(&mut set, scope, def);
        let reason = set.unavailable.values().next().cloned();
        out.push(EventStatus {
            scope,
            name: def.name,
            available: reason.is_none(),
            reason,
        });
    };
    for scope in [Scope::User, Scope::Kernel] {
        for def in events::HARDWARE_GROUPS.iter().flat_map(|g| g.iter()) {
            check(scope, def);
        }
    }
    for def in events::SOFTWARE_GROUP {
        check(Scope::Software, def);
    }
    out
}

/// Events opened together: read through the leader (`fds[0]`) in one system call when `grouped`,
/// otherwise a single event.
struct Handle {
    fds: Vec<OwnedFd>,
    /// Scope, name and kernel id of each event, in the order of `fds`.
    events: Vec<(Scope, &'static str, u64)>,
    grouped: bool,
    buf: Vec<u64>,
}

/// The open counters of the calling thread, or of a child process and its descendants.
#[derive(Default)]
pub struct CounterSet {
    handles: Vec<Handle>,
    unavailable: BTreeMap<String, String>,
    values: Vec<sys::Value>,
}

impl CounterSet {
    /// A set that counts nothing (for `--no-counters` and tests).
    pub fn none() -> Self {
        CounterSet::default()
    }

    /// Opens every event osmeter knows on the calling thread. Never fails: what cannot be opened is
    /// recorded in [`CounterSet::unavailable`] with its reason.
    pub fn open_all() -> Self {
        Opener::new(Target::Thread).open_everything()
    }

    /// Opens every event on process `pid` and the children it creates, enabled when it calls exec
    /// (for `osmeter stat`, which holds the child back until the counters are open).
    pub fn open_for_process(pid: libc::pid_t) -> Self {
        Opener::new(Target::Process(pid)).open_everything()
    }

    pub fn read(&mut self) -> CounterReading {
        let mut out = Vec::with_capacity(self.len());
        for h in &mut self.handles {
            let Ok(n) = sys::read_words(&h.fds[0], &mut h.buf) else {
                continue;
            };
            self.values.clear();
            if h.grouped {
                if !sys::parse_group(&h.buf[..n], &mut self.values) {
                    continue;
                }
            } else if let Some(v) = sys::parse_single(&h.buf[..n]) {
                self.values.push(v);
            }
            for &(scope, name, id) in &h.events {
                if let Some(v) = self.values.iter().find(|v| v.id == id) {
                    out.push(EventCount {
                        scope,
                        name,
                        value: v.value,
                        enabled_ns: v.enabled_ns,
                        running_ns: v.running_ns,
                    });
                }
            }
        }
        CounterReading(out)
    }

    /// Event name (`user:cycles`, `software:page-faults`, ...) to the reason it is not counted.
    pub fn unavailable(&self) -> &BTreeMap<String, String> {
        &self.unavailable
    }

    /// Number of events open.
    pub fn len(&self) -> usize {
        self.handles.iter().map(|h| h.events.len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.handles.is_empty()
    }

    /// True when `scope:name` is open.
    pub fn has(&self, scope: Scope, name: &str) -> bool {
        self.handles
            .iter()
            .any(|h| h.events.iter().any(|e| e.0 == scope && e.1 == name))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Target {
    /// The calling thread, counting from now on.
    Thread,
    /// A process that has not exec'd yet, and everything it forks, counting from its exec.
    Process(libc::pid_t),
    /// Open disabled on the calling thread and close again: only asks whether the kernel agrees.
    Probe,
}

struct Opener {
    target: Target,
    privilege: Privilege,
    /// Whether any hardware event opens at all, decided on the first "not supported" answer.
    pmu_present: Option<bool>,
    /// Cleared when the kernel refuses group reads here (inherit together with PERF_FORMAT_GROUP on
    /// some kernels); every later event is then opened alone.
    groups_work: bool,
}

impl Opener {
    fn new(target: Target) -> Self {
        Opener {
            target,
            privilege: Privilege::current(),
            pmu_present: None,
            groups_work: target != Target::Probe,
        }
    }

    fn pid(&self) -> libc::pid_t {
        match self.target {
            Target::Process(pid) => pid,
            Target::Thread | Target::Probe => 0,
        }
    }

    fn open_everything(mut self) -> CounterSet {
        let mut set = CounterSet::default();
        for scope in [Scope::User, Scope::Kernel] {
            for group in events::HARDWARE_GROUPS {
                self.open_group(&mut set, scope, group);
            }
        }
        self.open_group(&mut set, Scope::Software, events::SOFTWARE_GROUP);
        set
    }

    fn attr(
        &self,
        def: &EventDef,
        scope: Scope,
        leader: bool,
        grouped: bool,
    ) -> sys::PerfEventAttr {
        let mut flags = events::scope_flags(scope);
        if scope == Scope::Software && self.privilege.kernel_refused() {
            flags |= sys::FLAG_EXCLUDE_KERNEL | sys::FLAG_EXCLUDE_HV;
        }
        match self.target {
            // A group made while its leader already counts can leave members stopped (seen with
            // task-clock leading page-faults on 6.x): build it stopped and start it whole.
            Target::Thread if leader => flags |= sys::FLAG_DISABLED,
            Target::Thread => {}
            Target::Process(_) => {
                flags |= sys::FLAG_INHERIT;
                // Members follow their leader: only the leader waits for exec.
                if leader {
                    flags |= sys::FLAG_DISABLED | sys::FLAG_ENABLE_ON_EXEC;
                }
            }
            Target::Probe => flags |= sys::FLAG_DISABLED,
        }
        let mut read_format =
            sys::FORMAT_TOTAL_TIME_ENABLED | sys::FORMAT_TOTAL_TIME_RUNNING | sys::FORMAT_ID;
        if grouped {
            read_format |= sys::FORMAT_GROUP;
        }
        sys::PerfEventAttr::new(def.type_, def.config, read_format, flags)
    }

    fn refuse(&mut self, set: &mut CounterSet, scope: Scope, def: &EventDef, errno: i32) {
        let pmu_present = if def.type_ == sys::TYPE_SOFTWARE {
            true
        } else {
            *self.pmu_present.get_or_insert_with(hardware_pmu_present)
        };
        // Without a PMU, privileges would not help: say what would remain true as root.
        let errno = if !pmu_present && matches!(errno, libc::EACCES | libc::EPERM) {
            libc::ENOENT
        } else {
            errno
        };
        set.unavailable.insert(
            events::key(scope, def.name),
            events::reason(errno, scope, self.privilege, pmu_present),
        );
    }

    /// Software events that exclude_kernel would zero out are refused up front.
    fn skip_zeroed(&self, set: &mut CounterSet, scope: Scope, def: &EventDef) -> bool {
        if scope == Scope::Software
            && self.privilege.kernel_refused()
            && events::counted_in_kernel_mode(def)
        {
            set.unavailable.insert(
                events::key(scope, def.name),
                events::kernel_mode_software_reason(self.privilege),
            );
            return true;
        }
        false
    }

    fn open_single(&mut self, set: &mut CounterSet, scope: Scope, def: &EventDef) {
        if self.skip_zeroed(set, scope, def) {
            return;
        }
        let attr = self.attr(def, scope, true, false);
        match sys::open(&attr, self.pid(), None) {
            Ok(fd) if self.target == Target::Probe => drop(fd),
            Ok(fd) => {
                if self.target == Target::Thread {
                    sys::enable(&fd);
                }
                push_single(set, scope, def, fd)
            }
            Err(e) => self.refuse(set, scope, def, e),
        }
    }

    fn open_group(&mut self, set: &mut CounterSet, scope: Scope, defs: &[EventDef]) {
        let mut group = Handle {
            fds: Vec::new(),
            events: Vec::new(),
            grouped: true,
            buf: Vec::new(),
        };
        for def in defs {
            if !self.groups_work {
                self.open_single(set, scope, def);
                continue;
            }
            if self.skip_zeroed(set, scope, def) {
                continue;
            }
            let is_leader = group.fds.is_empty();
            let attr = self.attr(def, scope, is_leader, true);
            match sys::open(&attr, self.pid(), group.fds.first()) {
                Ok(fd) => match sys::event_id(&fd) {
                    Some(id) => {
                        group.fds.push(fd);
                        group.events.push((scope, def.name, id));
                    }
                    // Without its id a member's value cannot be told apart in the group read.
                    None => self.refuse(set, scope, def, libc::EIO),
                },
                Err(libc::EINVAL) if is_leader => {
                    // Perhaps the group read format is what the kernel refuses (inherit with
                    // PERF_FORMAT_GROUP); if the event opens alone, give up on groups here.
                    let alone = self.attr(def, scope, true, false);
                    match sys::open(&alone, self.pid(), None) {
                        Ok(fd) => {
                            self.groups_work = false;
                            if self.target == Target::Thread {
                                sys::enable(&fd);
                            }
                            push_single(set, scope, def, fd);
                        }
                        Err(e) => self.refuse(set, scope, def, e),
                    }
                }
                // The event exists but cannot share the PMU with the group: count it alone.
                Err(libc::EINVAL | libc::ENOSPC) => self.open_single(set, scope, def),
                Err(e) => self.refuse(set, scope, def, e),
            }
        }
        if !group.fds.is_empty() {
            if self.target == Target::Thread {
                sys::enable(&group.fds[0]);
            }
            group.buf = vec![0; 3 + 2 * group.fds.len()];
            set.handles.push(group);
        }
    }
}

fn push_single(set: &mut CounterSet, scope: Scope, def: &EventDef, fd: OwnedFd) {
    let id = sys::event_id(&fd).unwrap_or(0);
    set.handles.push(Handle {
        fds: vec![fd],
        events: vec![(scope, def.name, id)],
        grouped: false,
        buf: vec![0; 4],
    });
}

/// True when a user-mode cycles counter opens: tells "no PMU at all" from "this event is missing".
pub fn hardware_pmu_present() -> bool {
    let attr = sys::PerfEventAttr::new(
        sys::TYPE_HARDWARE,
        sys::HW_CPU_CYCLES,
        0,
        sys::FLAG_DISABLED | events::scope_flags(Scope::User),
    );
    match sys::open(&attr, 0, None) {
        Ok(_) => true,
        Err(e) => !matches!(e, libc::ENOENT | libc::EOPNOTSUPP | libc::ENODEV),
    }
}
