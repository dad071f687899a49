//! What measuring features work on this machine, and why not: the second half of `osmeter info`,
//! beside the fingerprint that describes the machine itself.
//!
//! Every check only looks: nothing is mounted, no setting is changed (the real-time check raises a
//! short-lived thread of its own and puts it back).

use crate::meter::perf::EventStatus;
use crate::meter::Scope;
use std::fmt::Write as _;
use std::path::Path;

/// One capability: whether it works here, and why (not).
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub struct Feature {
    pub name: &'static str,
    pub available: bool,
    pub detail: String,
}

fn feature(name: &'static str, available: bool, detail: impl Into<String>) -> Feature {
    Feature {
        name,
        available,
        detail: detail.into(),
    }
}

/// Every check, in the order they are shown.
pub fn features(counters: &[EventStatus]) -> Vec<Feature> {
    // SAFETY: geteuid cannot fail.
    let euid = unsafe { libc::geteuid() };
    let root = euid == 0;
    let mut out = vec![feature(
        "root",
        root,
        if root {
            "running as root (euid 0): privileged checks below are not limited by permissions"
                .to_string()
        } else {
            format!(
                "running as euid {euid}: tracefs cause capture and some counters need root; \
                 see the lines below"
            )
        },
    )];
    let paranoid = read_trimmed("/proc/sys/kernel/perf_event_paranoid");
    let (ok, detail) = paranoid_meaning(paranoid.as_deref(), root);
    out.push(feature("perf_event_paranoid", ok, detail));
    out.push(counter_summary(counters));
    out.push(realtime_check());
    out.extend(tracefs_checks(root));
    let cpus = crate::meter::placement::allowed_cpus();
    out.push(feature(
        "cross_cpu_placement",
        cpus.len() >= 2,
        format!(
            "{} usable CPU(s) ({}); two-party probes need two for their cross-CPU variant",
            cpus.len(),
            crate::meter::placement::format_cpu_list(&cpus)
        ),
    ));
    for (name, program, used_for) in [
        ("valgrind", "valgrind", "capturing memory-reference traces"),
        ("perf", "perf", "cross-checking counter figures"),
        ("cyclictest", "cyclictest", "cross-checking wakeup latency"),
    ] {
        out.push(match crate::programs::find(program) {
            Some(p) => feature(name, true, format!("{} (for {used_for})", p.display())),
            None => feature(name, false, format!("not on PATH (only for {used_for})")),
        });
    }
    out
}

fn read_trimmed(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

/// What a perf_event_paranoid value allows, and whether this user may open counters at all.
pub fn paranoid_meaning(value: Option<&str>, root: bool) -> (bool, String) {
    let Some(text) = value else {
        return (
            false,
            "/proc/sys/kernel/perf_event_paranoid is missing: this kernel has no perf_event".into(),
        );
    };
    let Ok(level) = text.parse::<i32>() else {
        return (false, format!("unreadable value {text:?}"));
    };
    let meaning = match level {
        i32::MIN..=-1 => "no limits: any user may count any event, CPU-wide and kernel included",
        0 => "users may count user and kernel events, CPU-wide too, but not raw tracepoint data",
        1 => "users may count user and kernel events of their own processes (no CPU-wide events)",
        2 => {
            "users may count user-space events of their own processes only; kernel-side counts \
             need root or CAP_PERFMON"
        }
        _ => {
            "users may not open perf events at all (a distribution patch; upstream treats this \
             like 2); counters need root or CAP_PERFMON"
        }
    };
    let who = if root {
        "running as root, so the limit does not apply"
    } else if level >= 3 {
        "so without privileges osmeter reports time and interference only"
    } else {
        "it applies to this user"
    };
    (root || level < 3, format!("{level}: {meaning}; {who}"))
}

fn counter_summary(counters: &[EventStatus]) -> Feature {
    if counters.is_empty() {
        return feature("perf_counters", false, "no counter information");
    }
    let open = counters.iter().filter(|c| c.available).count();
    feature(
        "perf_counters",
        open > 0,
        format!(
            "{open} of {} events can be opened (user and kernel counted apart)",
            counters.len()
        ),
    )
}

/// The counter lines of the human report: "no counter information", or the events grouped by
/// scope with the reason for each one that cannot be opened.
pub fn counter_lines(counters: &[EventStatus]) -> Vec<String> {
    if counters.is_empty() {
        return vec!["no counter information".into()];
    }
    let width = counters.iter().map(|c| c.name.len()).max().unwrap_or(0);
    let mut lines = Vec::new();
    for (scope, title) in [
        (Scope::User, "user"),
        (Scope::Kernel, "kernel"),
        (Scope::Software, "software"),
    ] {
        let group: Vec<&EventStatus> = counters.iter().filter(|c| c.scope == scope).collect();
        if group.is_empty() {
            continue;
        }
        lines.push(format!("{title}:"));
        for c in group {
            let mut line = format!(
                "  {:<width$}  {}",
                c.name,
                if c.available { "yes" } else { "no " }
            );
            if !c.available {
                let reason = c.reason.as_deref().unwrap_or("no reason given");
                let _ = write!(line, "  {reason}");
            }
            lines.push(line.trim_end().to_string());
        }
    }
    lines
}

/// Whether SCHED_FIFO can be set (tried on a thread of its own), and if not, which rule refused it.
fn realtime_check() -> Feature {
    let d = crate::meter::realtime::check(1);
    feature(
        "realtime_scheduling",
        d.allowed,
        format!("{}; {}", d.message(), d.budget),
    )
}

fn tracefs_checks(root: bool) -> Vec<Feature> {
    // osmeter itself reaches tracefs through a private mount that changes nothing, when it can.
    let private = crate::tracefs::Tracefs::reach()
        .ok()
        .filter(|fs| fs.access == crate::tracefs::Access::Private);
    let mounted = crate::tracefs::mount_points().into_iter().next();
    let stale = private
        .as_ref()
        .map(|fs| fs.stale_instances())
        .unwrap_or_default();
    let Some(mount) = mounted
        .clone()
        .or_else(|| private.as_ref().map(|fs| fs.root().to_path_buf()))
    else {
        let supported = std::fs::read_to_string("/proc/filesystems")
            .map(|t| {
                t.lines()
                    .any(|l| l.split_whitespace().last() == Some("tracefs"))
            })
            .unwrap_or(false);
        let detail = if !supported {
            "this kernel has no tracefs (built without tracing)".to_string()
        } else if root {
            "not mounted, but root can mount it: mount -t tracefs nodev /sys/kernel/tracing \
             (osmeter does not mount it)"
                .to_string()
        } else {
            "not mounted; the kernel supports it, but mounting needs root".to_string()
        };
        let why = "tracefs is not mounted";
        return vec![
            feature("tracefs", false, detail),
            feature("tracefs_sched_events", false, why),
            feature("tracefs_writable", false, why),
        ];
    };
    let mut out = vec![feature(
        "tracefs",
        true,
        match &mounted {
            Some(m) => format!("mounted at {}", m.display()),
            None => "not mounted; osmeter reaches it through a private mount of its own, which \
                     leaves the mount table alone"
                .to_string(),
        },
    )];
    if !stale.is_empty() {
        let names: Vec<&str> = stale.iter().map(|(n, _)| n.as_str()).collect();
        out.push(feature(
            "tracefs_stale_instances",
            false,
            format!(
                "trace instances left by osmeter runs that no longer run: {} (still recording; \
                 the next `osmeter latency --trace` removes them)",
                names.join(", ")
            ),
        ));
    }
    let sched = mount.join("events/sched");
    out.push(match std::fs::metadata(&sched) {
        Ok(m) if m.is_dir() => feature(
            "tracefs_sched_events",
            true,
            format!("{} is there", sched.display()),
        ),
        Ok(_) => feature(
            "tracefs_sched_events",
            false,
            format!("{} is not a directory", sched.display()),
        ),
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => feature(
            "tracefs_sched_events",
            false,
            format!(
                "cannot look into {}: permission denied (tracefs is root-only by default)",
                mount.display()
            ),
        ),
        Err(_) => feature(
            "tracefs_sched_events",
            false,
            format!("{} is missing: no scheduler trace events", sched.display()),
        ),
    });
    let enable = sched.join("sched_switch/enable");
    let target = if enable.exists() {
        enable
    } else {
        mount.clone()
    };
    out.push(match writable(&target) {
        Ok(()) => feature(
            "tracefs_writable",
            true,
            format!("{} can be written", target.display()),
        ),
        Err(e) => feature(
            "tracefs_writable",
            false,
            format!(
                "{} cannot be written ({e}); cause capture needs root",
                target.display()
            ),
        ),
    });
    if root {
        if let Ok(fs) = crate::tracefs::Tracefs::reach() {
            out.push(function_tracer_filter(&fs));
        }
    }
    out
}

/// Whether the function tracer can be aimed at chosen functions (a known answer of
/// `run --profile` needs it), and the cause when the kernel refuses.
fn function_tracer_filter(fs: &crate::tracefs::Tracefs) -> Feature {
    use crate::function_tracer::{check, FunctionTracer};
    let name = "function_tracer_filter";
    match check(fs) {
        FunctionTracer::Aimable => feature(name, true, "set_ftrace_filter can be opened"),
        FunctionTracer::Refused(why) | FunctionTracer::Missing(why) => feature(name, false, why),
    }
}

fn writable(path: &Path) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
    // SAFETY: c is a valid NUL-terminated path.
    if unsafe { libc::access(c.as_ptr(), libc::W_OK) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// The "what works here" part of `osmeter info`, after the fingerprint's sections.
pub fn render(features: &[Feature], counters: &[EventStatus]) -> String {
    let mut out = String::new();
    out.push_str("\nWhat works here\n");
    let width = features.iter().map(|f| f.name.len()).max().unwrap_or(0);
    for f in features {
        let yes = if f.available { "yes" } else { "no " };
        let _ = writeln!(out, "  {:<width$}  {yes}  {}", f.name, f.detail);
    }
    out.push_str("\nperf_event counters, event by event\n");
    for line in counter_lines(counters) {
        let _ = writeln!(out, "  {line}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(scope: Scope, name: &'static str, reason: Option<&str>) -> EventStatus {
        EventStatus {
            scope,
            name,
            available: reason.is_none(),
            reason: reason.map(str::to_string),
        }
    }

    #[test]
    fn empty_counter_list_says_so() {
        assert_eq!(counter_lines(&[]), vec!["no counter information"]);
        let f = counter_summary(&[]);
        assert!(!f.available);
        assert_eq!(f.detail, "no counter information");
    }

    #[test]
    fn counters_grouped_by_scope_with_reasons() {
        let list = [
            status(Scope::Software, "task-clock", None),
            status(
                Scope::User,
                "cycles",
                Some("not supported by this CPU or VM"),
            ),
            status(Scope::Kernel, "cycles", Some("perf_event_paranoid is 2")),
            status(Scope::User, "page-faults", None),
        ];
        let lines = counter_lines(&list);
        let user = lines.iter().position(|l| l == "user:").unwrap();
        let kernel = lines.iter().position(|l| l == "kernel:").unwrap();
        let software = lines.iter().position(|l| l == "software:").unwrap();
        assert!(user < kernel && kernel < software);
        assert!(
            lines[user + 1].contains("cycles")
                && lines[user + 1].ends_with("not supported by this CPU or VM")
        );
        assert!(lines[kernel + 1].ends_with("perf_event_paranoid is 2"));
        assert!(lines
            .iter()
            .any(|l| l.contains("task-clock") && l.ends_with("yes")));
        let f = counter_summary(&list);
        assert!(f.available);
        assert!(f.detail.starts_with("2 of 4 events"));
    }

    #[test]
    fn paranoid_levels() {
        let (ok, d) = paranoid_meaning(Some("2"), false);
        assert!(ok && d.starts_with("2: ") && d.contains("user-space events"));
        let (ok, d) = paranoid_meaning(Some("4"), false);
        assert!(!ok && d.contains("may not open"));
        let (ok, d) = paranoid_meaning(Some("4"), true);
        assert!(ok && d.contains("does not apply"));
        let (ok, d) = paranoid_meaning(Some("-1"), false);
        assert!(ok && d.contains("no limits"));
        assert!(!paranoid_meaning(None, true).0);
        assert!(!paranoid_meaning(Some("x"), true).0);
    }

    #[test]
    fn live_checks_do_not_fail() {
        let features = features(&[]);
        let names: Vec<&str> = features.iter().map(|f| f.name).collect();
        for n in [
            "root",
            "perf_event_paranoid",
            "perf_counters",
            "realtime_scheduling",
            "tracefs",
            "tracefs_sched_events",
            "tracefs_writable",
            "cross_cpu_placement",
            "valgrind",
            "perf",
            "cyclictest",
        ] {
            assert!(names.contains(&n), "no {n} in {names:?}");
        }
        assert!(features.iter().all(|f| !f.detail.is_empty()));
        let text = render(&features, &[]);
        assert!(text.contains("What works here"));
        assert!(text.contains("no counter information"));
    }
}
