//! Shell completions and man pages, generated from the clap definition so they never drift from
//! the flags the binary really takes.

use crate::cli::Cli;
use anyhow::{Context, Result};
use clap::CommandFactory;
pub use clap_complete::Shell;
use std::path::{Path, PathBuf};

pub mod names;

/// The completion script for `shell`: clap's, with the lines that complete probe names and run
/// ids (see [`names`]).
pub fn completion(shell: Shell) -> Vec<u8> {
    let mut cmd = visible(&Cli::command());
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut cmd, "osmeter", &mut out);
    names::dynamic_part(shell, &String::from_utf8_lossy(&out)).into_bytes()
}

/// `cmd` without its hidden subcommands (the workers osmeter starts itself): clap_complete offers
/// hidden subcommands like any other, so a user typing `osmeter me<TAB>` would be offered
/// `measure-worker`. Completion needs only names, help lines, aliases, arguments and their groups.
fn visible(cmd: &clap::Command) -> clap::Command {
    let mut out = clap::Command::new(cmd.get_name().to_string())
        .visible_aliases(cmd.get_visible_aliases().map(str::to_string))
        .disable_help_subcommand(cmd.is_disable_help_subcommand_set());
    if let Some(about) = cmd.get_about() {
        out = out.about(about.clone());
    }
    if let Some(version) = cmd.get_version() {
        out = out.version(version.to_string());
    }
    out = out
        .args(cmd.get_arguments().cloned())
        .groups(cmd.get_groups().cloned());
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        out = out.subcommand(visible(sub));
    }
    out
}

/// One man page per command: `osmeter.1` and `osmeter-SUB.1` for every subcommand (nested ones
/// too, e.g. `osmeter-trace-info.1`), as (file name, roff text).
pub fn man_pages() -> Result<Vec<(String, Vec<u8>)>> {
    let mut cmd = Cli::command();
    cmd.build();
    let mut pages = Vec::new();
    collect_pages(&cmd, "osmeter", &mut pages)?;
    Ok(pages)
}

fn collect_pages(
    cmd: &clap::Command,
    name: &str,
    pages: &mut Vec<(String, Vec<u8>)>,
) -> Result<()> {
    // clap_mangen titles a page by the command's own name; a subcommand's page is named after its
    // whole path so `man osmeter-trace-info` finds it.
    let page_cmd = cmd.clone().name(name.to_string());
    let mut roff = Vec::new();
    clap_mangen::Man::new(page_cmd)
        .render(&mut roff)
        .with_context(|| format!("cannot render the man page of {name}"))?;
    pages.push((format!("{name}.1"), roff));
    for sub in cmd
        .get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_name() != "help")
    {
        collect_pages(sub, &format!("{name}-{}", sub.get_name()), pages)?;
    }
    Ok(())
}

/// Where a user's shell looks for completions without any configuration (the XDG data directory
/// for bash, the fish configuration directory); zsh and the others have no such place.
pub fn completion_install_path(shell: Shell) -> Result<PathBuf> {
    match shell {
        Shell::Bash => Ok(data_home()?.join("bash-completion/completions/osmeter")),
        Shell::Fish => Ok(config_home()?.join("fish/completions/osmeter.fish")),
        Shell::Zsh => Ok(data_home()?.join("zsh/site-functions/_osmeter")),
        other => Err(crate::usage!(
            "{other} has no standard per-user completion directory; write the script with \
             `osmeter completions {other} > FILE` and load FILE from your profile"
        )),
    }
}

/// Whether the bash-completion package's loader is installed (Debian's path, and the one most
/// distributions share).
pub fn bash_completion_present() -> bool {
    [
        "/usr/share/bash-completion/bash_completion",
        "/etc/bash_completion",
    ]
    .iter()
    .any(|p| Path::new(p).exists())
}

/// Where `man` finds the pages without MANPATH: man-db searches `../share/man` beside every
/// directory on PATH, so when osmeter runs from PREFIX/bin (~/.cargo/bin after `cargo install`)
/// the pages go to PREFIX/share/man/man1. From anywhere else (a build tree) they go to the
/// per-user data directory, which man searches when ~/.local/bin is on PATH.
pub fn man_install_dir() -> Result<PathBuf> {
    let exe = std::env::current_exe().ok();
    let prefix = exe
        .as_deref()
        .and_then(Path::parent)
        .filter(|bin| bin.file_name().is_some_and(|n| n == "bin"))
        .and_then(Path::parent);
    match prefix {
        Some(prefix) => Ok(prefix.join("share/man/man1")),
        None => Ok(data_home()?.join("man/man1")),
    }
}

/// Whether `man` now finds osmeter's page where it was written, and if not, what to do.
pub fn man_lookup_advice(dir: &Path) -> Option<String> {
    let found = crate::programs::command("man")
        .args(["-w", "osmeter"])
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    let page = dir.join("osmeter.1");
    let path = String::from_utf8_lossy(&found.stdout).trim().to_string();
    if found.status.success() && Path::new(&path) == page {
        return None;
    }
    let root = dir.parent().unwrap_or(dir);
    Some(format!(
        "`man osmeter` does not find {} from this shell ({}); add `export MANPATH=\"{}:$(manpath 2>/dev/null)\"` to your profile, or put {} on PATH",
        page.display(),
        if path.is_empty() {
            "no page found".to_string()
        } else {
            format!("it finds {path}")
        },
        root.display(),
        root.parent()
            .map(|p| p.join("bin").display().to_string())
            .unwrap_or_default()
    ))
}

fn data_home() -> Result<PathBuf> {
    xdg_dir("XDG_DATA_HOME", ".local/share")
}

fn config_home() -> Result<PathBuf> {
    xdg_dir("XDG_CONFIG_HOME", ".config")
}

fn xdg_dir(var: &str, fallback: &str) -> Result<PathBuf> {
    crate::files::xdg::base_dir(
        var,
        fallback,
        "write the files where you choose (`osmeter completions SHELL > FILE`, `osmeter man --dir \
         DIR`)",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_subcommand_and_flag_is_completed() {
        let bash = String::from_utf8(completion(Shell::Bash)).unwrap();
        for sub in Cli::command()
            .get_subcommands()
            .filter(|s| !s.is_hide_set())
        {
            assert!(bash.contains(sub.get_name()), "{} missing", sub.get_name());
        }
        assert!(bash.contains("--fail-if-slower"));
        let fish = String::from_utf8(completion(Shell::Fish)).unwrap();
        assert!(fish.contains("complete -c osmeter"));
        assert!(fish.contains("-l fail-if-slower") && fish.contains("-l wide"));
    }

    #[test]
    fn hidden_workers_are_not_offered() {
        let hidden: Vec<String> = Cli::command()
            .get_subcommands()
            .filter(|s| s.is_hide_set())
            .map(|s| s.get_name().to_string())
            .collect();
        assert!(hidden.iter().any(|h| h == "measure-worker"), "{hidden:?}");
        for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
            let script = String::from_utf8(completion(shell)).unwrap();
            // The scripts call `complete-names` for probe names and run ids; they never offer it.
            let script = script.replace("osmeter complete-names", "");
            for h in &hidden {
                assert!(!script.contains(h.as_str()), "{shell} offers {h}");
            }
        }
    }

    #[test]
    fn a_page_per_command_named_by_its_path() {
        let pages = man_pages().unwrap();
        let names: Vec<&str> = pages.iter().map(|(n, _)| n.as_str()).collect();
        assert!(names.contains(&"osmeter.1"));
        assert!(names.contains(&"osmeter-run.1"));
        assert!(names.contains(&"osmeter-trace-info.1"));
        assert!(!names.iter().any(|n| n.contains("help")));
        let run = &pages.iter().find(|(n, _)| n == "osmeter-run.1").unwrap().1;
        let run = String::from_utf8_lossy(run);
        assert!(
            run.starts_with(".ie") || run.contains(".TH osmeter-run"),
            "{run}"
        );
        assert!(run.contains("repeat"));
    }
}
