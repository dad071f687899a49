//! The kernel's lockdown level (the lockdown security module; `lockdown=` on the kernel command
//! line, or Secure Boot on some distributions), which decides what even root may not do to the
//! running kernel. Tracing cares about one line of it: at `confidentiality` tracefs, kprobes and
//! perf's kernel reads are closed; at `integrity` they stay open (only writes to the kernel's
//! memory and code loading are closed), so a tracing refusal there has another cause.
//!
//! Read from securityfs where it is mounted, else from a detached mount of it ([`detached`])
//! that leaves the mount table as it was.

use osmeter_base::detached;
use std::path::Path;

/// The levels the kernel lists in securityfs's `lockdown`, the one in force in brackets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    None,
    Integrity,
    Confidentiality,
}

impl Level {
    pub fn name(self) -> &'static str {
        match self {
            Level::None => "none",
            Level::Integrity => "integrity",
            Level::Confidentiality => "confidentiality",
        }
    }

    /// Whether this level keeps tracefs from root (the kernel's tracefs reason is one of those
    /// above the integrity line).
    pub fn closes_tracefs(self) -> bool {
        self == Level::Confidentiality
    }
}

/// The level in force in the text of securityfs's `lockdown` (`none [integrity] confidentiality`).
pub fn parse(text: &str) -> Option<Level> {
    let chosen = text
        .split_whitespace()
        .find_map(|w| w.strip_prefix('[')?.strip_suffix(']'))?;
    match chosen {
        "none" => Some(Level::None),
        "integrity" => Some(Level::Integrity),
        "confidentiality" => Some(Level::Confidentiality),
        _ => None,
    }
}

/// The level in force; `Ok(None)` when the kernel has no lockdown module. The error says why it
/// could not be read.
pub fn read() -> Result<Option<Level>, String> {
    let mounted = Path::new("/sys/kernel/security");
    if mounted.join("lsm").is_file() {
        return read_in(mounted);
    }
    let mount = detached::mount(c"securityfs").map_err(|e| {
        format!(
            "securityfs is not mounted and cannot be reached here ({e}); as root: \
             mount -t securityfs securityfs /sys/kernel/security, then read lockdown there"
        )
    })?;
    read_in(&detached::root_of(&mount))
}

fn read_in(securityfs: &Path) -> Result<Option<Level>, String> {
    let path = securityfs.join("lockdown");
    match std::fs::read_to_string(&path) {
        Ok(text) => parse(&text).map(Some).ok_or_else(|| {
            format!(
                "securityfs's lockdown reads {:?}, no level in brackets",
                text.trim()
            )
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("cannot read securityfs's lockdown: {e}")),
    }
}

/// How `level` (as [`read`] gave it) is written in a reason: `lockdown=integrity`, `no lockdown
/// module`, or why it is unknown.
pub fn describe(level: &Result<Option<Level>, String>) -> String {
    match level {
        Ok(Some(l)) => format!("lockdown={}", l.name()),
        Ok(None) => "no lockdown module".into(),
        Err(why) => format!("lockdown level unknown: {why}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bracketed_level_is_the_one_in_force() {
        assert_eq!(
            parse("none [integrity] confidentiality\n"),
            Some(Level::Integrity)
        );
        assert_eq!(parse("[none] integrity confidentiality"), Some(Level::None));
        assert_eq!(
            parse("none integrity [confidentiality]"),
            Some(Level::Confidentiality)
        );
        assert_eq!(parse("none integrity confidentiality"), None);
        assert_eq!(parse("[paranoid]"), None);
        assert!(Level::Confidentiality.closes_tracefs());
        assert!(!Level::Integrity.closes_tracefs());
    }

    #[test]
    fn reading_this_kernels_level_never_fails_silently() {
        // Whatever the machine: a level, no module, or a reason that says what to do.
        match read() {
            Ok(_) => {}
            Err(why) => assert!(why.contains("securityfs"), "{why}"),
        }
    }
}
