//! Why /proc/kallsyms shows this process zeros instead of addresses, and what to change. The
//! kernel shows a reader the addresses when kernel.kptr_restrict is 0 and kernel.perf_event_paranoid
//! is at 1 or below, or when kptr_restrict is at most 1 and the reader has CAP_SYSLOG (root); at 2
//! nobody sees them.

/// The error of a symbol table whose every address is zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HiddenAddresses;

impl std::fmt::Display for HiddenAddresses {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(
            "every function address is zero: the kernel hid them from the process that read it \
             (kernel.kptr_restrict, kernel.perf_event_paranoid); read /proc/kallsyms as root",
        )
    }
}

impl std::error::Error for HiddenAddresses {}

/// The cause, from the two settings (None: unreadable) and whether the reader has CAP_SYSLOG.
pub fn why(kptr_restrict: Option<i64>, paranoid: Option<i64>, syslog_capable: bool) -> String {
    let show = |v: Option<i64>| v.map_or("unreadable".to_string(), |v| v.to_string());
    match (kptr_restrict, syslog_capable) {
        (Some(k), _) if k >= 2 => format!(
            "kernel.kptr_restrict is {k}, which hides kernel addresses even from root: \
             `sysctl kernel.kptr_restrict=1` shows them to root (CAP_SYSLOG)"
        ),
        (Some(1), false) => "kernel.kptr_restrict is 1: only CAP_SYSLOG (root) sees kernel \
                             addresses; run as root, or `sysctl kernel.kptr_restrict=0` with \
                             kernel.perf_event_paranoid at 1 or below"
            .to_string(),
        (Some(0), false) if paranoid.is_none_or(|p| p > 1) => format!(
            "kernel.kptr_restrict is 0 but kernel.perf_event_paranoid is {}: without CAP_SYSLOG \
             the kernel shows addresses only at paranoid 1 or below; \
             `sysctl kernel.perf_event_paranoid=1`, or run as root",
            show(paranoid)
        ),
        _ => format!(
            "the kernel hid them (kernel.kptr_restrict {}, kernel.perf_event_paranoid {}); \
             read /proc/kallsyms as root with kptr_restrict at 1 or below",
            show(kptr_restrict),
            show(paranoid)
        ),
    }
}

/// [`why`] for this process on this machine.
pub fn why_here() -> String {
    let read = |name: &str| -> Option<i64> {
        std::fs::read_to_string(format!("/proc/sys/kernel/{name}"))
            .ok()?
            .trim()
            .parse()
            .ok()
    };
    // SAFETY: geteuid only reads this process's credentials.
    let root = unsafe { libc::geteuid() } == 0;
    why(read("kptr_restrict"), read("perf_event_paranoid"), root)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_setting_that_hides_addresses_is_named_with_its_fix() {
        let e = why(Some(2), Some(2), true);
        assert!(
            e.contains("even from root") && e.contains("kptr_restrict=1"),
            "{e}"
        );
        let e = why(Some(1), Some(2), false);
        assert!(
            e.contains("only CAP_SYSLOG") && e.contains("run as root"),
            "{e}"
        );
        let e = why(Some(0), Some(2), false);
        assert!(
            e.contains("perf_event_paranoid is 2") && e.contains("paranoid=1"),
            "{e}"
        );
        let e = why(None, None, false);
        assert!(e.contains("unreadable"), "{e}");
        // Settings that show addresses yet zeros came back: both values reported.
        let e = why(Some(0), Some(1), true);
        assert!(
            e.contains("kptr_restrict 0") && e.contains("paranoid 1"),
            "{e}"
        );
    }
}
