//! The Debian packages application workloads need: which program each must provide, the reason a
//! workload is skipped when one is missing (with the command that installs it), and `--install`,
//! which installs them with apt-get (root only). Nothing else is ever fetched.

use anyhow::{bail, Result};
use std::path::Path;

/// A program a workload runs and the Debian package that ships it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Need {
    pub program: &'static str,
    pub package: &'static str,
}

pub const fn need(program: &'static str, package: &'static str) -> Need {
    Need { program, package }
}

/// The packages among `needs` whose program is not installed, each once, in order.
pub fn missing(needs: &[Need]) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for n in needs {
        if !crate::programs::executable(Path::new(n.program)) && !out.contains(&n.package) {
            out.push(n.package);
        }
    }
    out
}

/// The command that installs `packages`.
pub fn install_command(packages: &[&str]) -> String {
    format!("apt-get install -y {}", packages.join(" "))
}

/// Why a workload cannot run, naming every missing package and how to install it; None when all
/// are there.
pub fn missing_reason(needs: &[Need]) -> Option<String> {
    let gone = missing(needs);
    if gone.is_empty() {
        return None;
    }
    let programs: Vec<&str> = needs
        .iter()
        .filter(|n| gone.contains(&n.package))
        .map(|n| n.program)
        .collect();
    Some(format!(
        "needs the Debian package{} {} (missing {}): install with `{}` as root, or run osmeter \
         with --install",
        if gone.len() == 1 { "" } else { "s" },
        gone.join(", "),
        programs.join(", "),
        install_command(&gone)
    ))
}

/// An error naming every missing package of `needs` and the command that installs them: for a
/// workload that cannot be skipped (a load of `osmeter latency`).
pub fn require(needs: &[Need]) -> Result<()> {
    match missing_reason(needs) {
        Some(why) => bail!("{why}"),
        None => Ok(()),
    }
}

/// For tests of real programs: true when every package of `needs` is installed; outside CI a
/// missing one is said (with the command that installs it) and the test skips, under CI=1 (where
/// `.ci/run` installs them) it fails.
#[cfg(test)]
pub fn present_for_test(needs: &[Need]) -> bool {
    let Some(why) = missing_reason(needs) else {
        return true;
    };
    assert!(std::env::var_os("CI").is_none(), "{why}");
    eprintln!("SKIPPED: {why}");
    false
}

/// Installs the missing packages among `needs` with apt-get (refreshing the package lists first
/// when a package is not known yet). Root only; says what it installs on stderr.
pub fn install(needs: &[Need]) -> Result<Vec<&'static str>> {
    let gone = missing(needs);
    if gone.is_empty() {
        return Ok(gone);
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        bail!(
            "--install needs root to run apt-get; run as root, or install them yourself: `{}`",
            install_command(&gone)
        );
    }
    eprintln!("osmeter: installing {} with apt-get", gone.join(", "));
    let apt = |args: &[&str]| -> Result<bool> {
        let status = crate::programs::command("apt-get")
            .args(args)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .stdout(std::process::Stdio::null())
            .status()
            .map_err(|e| {
                crate::system::processes::cannot_start_or("apt-get", &e, "is this a Debian system?")
            })?;
        Ok(status.success())
    };
    let mut args = vec!["install", "-y", "-q", "--no-install-recommends"];
    args.extend(gone.iter().copied());
    if !apt(&args)? {
        // A fresh machine may not know the package yet.
        if !apt(&["update", "-q"])? || !apt(&args)? {
            bail!(
                "apt-get could not install {} (see its messages above)",
                gone.join(", ")
            );
        }
    }
    let still = missing(needs);
    if !still.is_empty() {
        bail!(
            "apt-get installed {} but {} is still missing",
            gone.join(", "),
            still.join(", ")
        );
    }
    Ok(gone)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NEEDS: &[Need] = &[
        need("/bin/sh", "dash"),
        need("/nonexistent/osmeter-test-a", "pkg-a"),
        need("/nonexistent/osmeter-test-b", "pkg-a"),
        need("/nonexistent/osmeter-test-c", "pkg-c"),
    ];

    #[test]
    fn missing_packages_are_named_once_with_the_command() {
        assert_eq!(missing(NEEDS), vec!["pkg-a", "pkg-c"]);
        let r = missing_reason(NEEDS).unwrap();
        assert!(
            r.contains("packages pkg-a, pkg-c")
                && r.contains("apt-get install -y pkg-a pkg-c")
                && r.contains("/nonexistent/osmeter-test-c")
                && r.contains("--install"),
            "{r}"
        );
        assert_eq!(missing_reason(&NEEDS[..1]), None);
    }
}
