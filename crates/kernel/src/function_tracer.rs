//! Whether the function tracer can be aimed at chosen kernel functions here (its filter files,
//! `set_ftrace_filter` and company), and, when the kernel refuses them, the cause and what to do.
//! osmeter itself traces through events only; the function tracer is a known answer of
//! `run --profile` (tests/profile_known.rs) and a line of `osmeter info`.

use crate::lockdown::{self, Level};
use crate::tracefs::Tracefs;

/// What the function tracer can do on this kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FunctionTracer {
    /// Its filter is open: chosen functions can be traced.
    Aimable,
    /// The tracer is listed but the kernel refuses its filter, with why (a kernel that refuses the
    /// filter may refuse the tracer itself too: this VM's does).
    Refused(String),
    /// No function tracer in this kernel, with why.
    Missing(String),
}

/// Looks, changing nothing: opening a filter file for reading only lists it (a write, or an open
/// that truncates, is what resets a filter).
pub fn check(fs: &Tracefs) -> FunctionTracer {
    let root = fs.root();
    let tracers = std::fs::read_to_string(root.join("available_tracers")).unwrap_or_default();
    if !tracers.split_whitespace().any(|t| t == "function") {
        return FunctionTracer::Missing(
            "the kernel has no function tracer (built without CONFIG_FUNCTION_TRACER)".into(),
        );
    }
    match std::fs::File::open(root.join("set_ftrace_filter")) {
        Ok(_) => FunctionTracer::Aimable,
        Err(e) => FunctionTracer::Refused(refusal("set_ftrace_filter", &e, &lockdown::read())),
    }
}

/// Why the kernel refused to open the function tracer's `file` with `err`, given its lockdown
/// `level` (as [`lockdown::read`] gave it), and what to do.
pub fn refusal(file: &str, err: &std::io::Error, level: &Result<Option<Level>, String>) -> String {
    let permission = matches!(err.raw_os_error(), Some(libc::EPERM | libc::EACCES));
    if !permission {
        return match err.raw_os_error() {
            Some(libc::ENOENT) => format!(
                "the kernel has no {file}: it was built without dynamic ftrace \
                 (CONFIG_DYNAMIC_FTRACE), so the function tracer can only trace every function"
            ),
            Some(libc::ENODEV) => format!(
                "the kernel refuses {file} ({err}): ftrace switched itself off after an error \
                 (see the kernel log, dmesg) and stays off until the next boot"
            ),
            _ => format!("cannot open {file}: {err}"),
        };
    }
    match level {
        Ok(Some(l)) if l.closes_tracefs() => format!(
            "the kernel refuses {file} ({err}): it is locked down at confidentiality \
             (/sys/kernel/security/lockdown), which closes tracefs even to root; boot it with \
             lockdown=integrity or lockdown=none (where the distribution locks down with Secure \
             Boot, that means Secure Boot off or a kernel of one's own)"
        ),
        Ok(_) => format!(
            "the kernel refuses {file} ({err}), and lockdown is not why ({}; tracefs stays open \
             below confidentiality): this kernel's build or platform forbids the function tracer's \
             files, though its trace events work; to trace chosen functions, use a kernel on \
             which `cat /sys/kernel/tracing/set_ftrace_filter` works as root",
            lockdown::describe(level)
        ),
        Err(_) => format!(
            "the kernel refuses {file} ({err}); {}; if `cat /sys/kernel/security/lockdown` shows \
             [confidentiality], boot with lockdown=integrity, otherwise this kernel itself forbids \
             the function tracer's files",
            lockdown::describe(level)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn errno(e: i32) -> std::io::Error {
        std::io::Error::from_raw_os_error(e)
    }

    #[test]
    fn a_refusal_names_its_cause_and_what_to_do() {
        let f = "set_ftrace_filter";
        let locked = refusal(f, &errno(libc::EPERM), &Ok(Some(Level::Confidentiality)));
        assert!(
            locked.contains("locked down at confidentiality"),
            "{locked}"
        );
        assert!(locked.contains("lockdown=integrity"), "{locked}");
        // At integrity the lockdown module leaves tracefs alone: the reason must not blame it.
        let open = refusal(f, &errno(libc::EPERM), &Ok(Some(Level::Integrity)));
        assert!(
            open.contains("lockdown is not why (lockdown=integrity"),
            "{open}"
        );
        assert!(
            open.contains("cat /sys/kernel/tracing/set_ftrace_filter"),
            "{open}"
        );
        let none = refusal(f, &errno(libc::EPERM), &Ok(None));
        assert!(none.contains("no lockdown module"), "{none}");
        let unknown = refusal(f, &errno(libc::EPERM), &Err("securityfs is gone".into()));
        assert!(unknown.contains("securityfs is gone"), "{unknown}");
        assert!(unknown.contains("[confidentiality]"), "{unknown}");
        let missing = refusal(f, &errno(libc::ENOENT), &Ok(None));
        assert!(missing.contains("CONFIG_DYNAMIC_FTRACE"), "{missing}");
        let off = refusal(f, &errno(libc::ENODEV), &Ok(None));
        assert!(off.contains("next boot"), "{off}");
    }

    #[test]
    fn this_kernels_function_tracer_is_judged_without_changing_it() {
        // SAFETY: geteuid cannot fail.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("skipped: tracefs needs root");
            return;
        }
        let Ok(fs) = Tracefs::reach() else {
            eprintln!("skipped: no tracefs");
            return;
        };
        let before = std::fs::read_to_string(fs.root().join("current_tracer")).ok();
        match check(&fs) {
            FunctionTracer::Aimable => {}
            FunctionTracer::Refused(why) | FunctionTracer::Missing(why) => {
                assert!(why.contains("kernel"), "{why}")
            }
        }
        let after = std::fs::read_to_string(fs.root().join("current_tracer")).ok();
        assert_eq!(before, after);
    }
}
