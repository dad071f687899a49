//! The two sides of an A/B: what each one's set-up and tear-down commands are, which wrapper the
//! measuring process runs under, and the switch that moves the machine from one side to the
//! other and always back: whatever ends `ab` (an error, a failing probe, Ctrl-C, SIGTERM), the
//! side in force is torn down and every kernel setting a set-up names is put back as it was.

use crate::suite::worker::{WorkerCommand, SUBCOMMAND};
use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::process::Stdio;

/// One side as the user gave it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SideSpec {
    /// "A" or "B".
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setup: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub teardown: Option<String>,
    /// A command the measuring process runs under, its arguments followed by the worker's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wrap: Option<String>,
}

impl SideSpec {
    /// How this side's measuring processes are started: osmeter itself, under the wrapper if
    /// there is one (through `sh -c 'exec WRAP "$@"'`, so the wrapper is given as a shell would
    /// read it and the worker's own arguments reach it untouched).
    pub fn worker(&self) -> Result<WorkerCommand> {
        let Some(wrap) = &self.wrap else {
            return Ok(WorkerCommand::this_executable());
        };
        // The wrapper execs the worker by path; /proc/self/exe would name the wrapper by then.
        let exe = std::env::current_exe().context("cannot find osmeter's own executable")?;
        Ok(WorkerCommand {
            program: PathBuf::from("/bin/sh"),
            args: vec![
                "-c".into(),
                format!("exec {wrap} \"$@\""),
                "osmeter-ab-wrap".into(),
                exe.display().to_string(),
                SUBCOMMAND.into(),
            ],
        })
    }

    /// Whether anything distinguishes this side (a set-up or a wrapper).
    pub fn is_plain(&self) -> bool {
        self.setup.is_none() && self.wrap.is_none()
    }
}

/// Runs one of a side's commands through `sh -c`, its output kept to be shown if it fails.
pub fn run_step(side: &str, what: &str, command: &str) -> Result<()> {
    let out = crate::programs::command("/bin/sh")
        .args(["-c", command])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| {
            crate::system::processes::cannot_start(&format!("{side}'s {what} `{command}`"), &e)
        })?;
    if out.status.success() {
        return Ok(());
    }
    let mut said = String::from_utf8_lossy(&out.stdout).into_owned();
    said.push_str(&String::from_utf8_lossy(&out.stderr));
    let said = said.trim();
    let tail: Vec<&str> = said.lines().rev().take(10).collect();
    let tail: Vec<&str> = tail.into_iter().rev().collect();
    bail!(
        "{side}'s {what} `{command}` failed ({}){}",
        describe(out.status),
        if said.is_empty() {
            String::from(" and printed nothing")
        } else {
            format!(":\n  {}", tail.join("\n  "))
        }
    )
}

fn describe(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit {code}"),
        (None, Some(sig)) => format!("ended by signal {sig}"),
        _ => "ended".into(),
    }
}

/// A kernel setting a set-up command names (`sysctl -w key=value`, `sysctl key=value`, or a write
/// into a file under /proc/sys or /sys, such as a tracing event's `enable`), and its value before
/// `ab` began.
#[derive(Debug, Clone, PartialEq)]
pub struct Saved {
    pub path: PathBuf,
    pub value: String,
}

/// The settings the commands name, with their values now; those that cannot be read are left out
/// (the set-up will fail on them, and say so).
pub fn save_settings(commands: &[&str]) -> Vec<Saved> {
    let mut out: Vec<Saved> = Vec::new();
    for path in commands.iter().flat_map(|c| named_settings(c)) {
        if out.iter().any(|s| s.path == path) {
            continue;
        }
        if let Ok(value) = std::fs::read_to_string(&path) {
            out.push(Saved {
                path,
                value: chosen(value.trim_end()).to_string(),
            });
        }
    }
    out
}

/// The value to write back: files that list their choices read with the one in force in
/// brackets (`always [madvise] never`) and take that word alone.
fn chosen(value: &str) -> &str {
    value
        .split_whitespace()
        .find_map(|w| w.strip_prefix('[')?.strip_suffix(']'))
        .unwrap_or(value)
}

/// The /proc/sys and /sys files a shell command names, as far as its words show them.
pub fn named_settings(command: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for part in command.split([';', '&', '|']) {
        let words: Vec<&str> = part.split_whitespace().collect();
        if let Some(at) = words
            .iter()
            .position(|w| *w == "sysctl" || w.ends_with("/sysctl"))
        {
            for w in &words[at + 1..] {
                if w.starts_with('-') {
                    continue;
                }
                if let Some((key, _)) = w.split_once('=') {
                    let key = key.trim_matches(|c| c == '\'' || c == '"');
                    out.push(PathBuf::from("/proc/sys").join(key.replace('.', "/")));
                }
            }
        }
        for w in &words {
            let w = w
                .trim_start_matches('>')
                .trim_matches(|c| c == '\'' || c == '"');
            if w.starts_with("/proc/sys/") || w.starts_with("/sys/") {
                out.push(PathBuf::from(w));
            }
        }
    }
    out
}

/// Puts every saved setting back where it changed, and reads it again; returns what could not be
/// put back, in words.
pub fn restore(saved: &[Saved]) -> Vec<String> {
    let mut problems = Vec::new();
    for s in saved {
        let now = std::fs::read_to_string(&s.path).map(|v| chosen(v.trim_end()).to_string());
        if now.as_deref().ok() == Some(s.value.as_str()) {
            continue;
        }
        let written = std::fs::write(&s.path, format!("{}\n", s.value));
        let after = std::fs::read_to_string(&s.path).map(|v| chosen(v.trim_end()).to_string());
        if after.as_deref().ok() != Some(s.value.as_str()) {
            problems.push(format!(
                "{} is {} and could not be put back to {}{}",
                s.path.display(),
                after.unwrap_or_else(|_| "unreadable".into()),
                s.value,
                written.err().map(|e| format!(" ({e})")).unwrap_or_default()
            ));
        }
    }
    problems
}

/// The machine on one side or neither. Entering a side runs its set-up; leaving runs its
/// tear-down; dropping the switch leaves the side in force and restores the saved settings, so
/// no way out of `ab` leaves a side's set-up behind.
pub struct Switch<'a> {
    sides: [&'a SideSpec; 2],
    active: Option<usize>,
    saved: Vec<Saved>,
    /// What went wrong on the way out (a tear-down that failed, a setting not put back).
    pub left: Vec<String>,
    done: bool,
}

impl<'a> Switch<'a> {
    pub fn new(sides: [&'a SideSpec; 2]) -> Switch<'a> {
        let commands: Vec<&str> = sides
            .iter()
            .flat_map(|s| [s.setup.as_deref(), s.teardown.as_deref()])
            .flatten()
            .collect();
        Switch {
            sides,
            active: None,
            saved: save_settings(&commands),
            left: Vec::new(),
            done: false,
        }
    }

    /// The settings saved before the first set-up.
    pub fn saved(&self) -> &[Saved] {
        &self.saved
    }

    /// Runs side `i`'s set-up (leaving the other side first).
    pub fn enter(&mut self, i: usize) -> Result<()> {
        if self.active == Some(i) {
            return Ok(());
        }
        self.leave()?;
        let side = self.sides[i];
        if let Some(setup) = &side.setup {
            // Marked active first: a set-up that fails half-way still gets its tear-down.
            self.active = Some(i);
            run_step(&side.name, "set-up", setup)?;
        }
        self.active = Some(i);
        Ok(())
    }

    /// Runs the tear-down of the side in force, if any.
    pub fn leave(&mut self) -> Result<()> {
        let Some(i) = self.active.take() else {
            return Ok(());
        };
        let side = self.sides[i];
        match &side.teardown {
            Some(teardown) => run_step(&side.name, "tear-down", teardown),
            None => Ok(()),
        }
    }

    /// Leaves the side in force and restores the saved settings; returns what was left changed.
    pub fn finish(mut self) -> Vec<String> {
        self.close();
        std::mem::take(&mut self.left)
    }

    fn close(&mut self) {
        if self.done {
            return;
        }
        self.done = true;
        if let Err(e) = self.leave() {
            self.left.push(format!("{e:#}"));
        }
        self.left.extend(restore(&self.saved));
    }
}

impl Drop for Switch<'_> {
    fn drop(&mut self) {
        self.close();
        for problem in &self.left {
            eprintln!("osmeter: ab: left changed: {problem}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_named_by_sysctl_and_by_proc_writes_are_found() {
        let found = named_settings(
            "sysctl -w kernel.randomize_va_space=0; sysctl -q vm.swappiness=10 && echo 1 > \
             /proc/sys/kernel/sched_autogroup_enabled; echo 1 >/sys/kernel/tracing/events/\
             raw_syscalls/enable",
        );
        let want: Vec<PathBuf> = [
            "/proc/sys/kernel/randomize_va_space",
            "/proc/sys/vm/swappiness",
            "/proc/sys/kernel/sched_autogroup_enabled",
            "/sys/kernel/tracing/events/raw_syscalls/enable",
        ]
        .iter()
        .map(PathBuf::from)
        .collect();
        assert_eq!(found, want);
        assert!(named_settings("true").is_empty());
        assert!(named_settings("sysctl -a").is_empty());
    }

    #[test]
    fn a_file_of_choices_is_saved_as_the_one_in_force() {
        assert_eq!(chosen("always [madvise] never"), "madvise");
        assert_eq!(chosen("[always] madvise never"), "always");
        assert_eq!(chosen("1"), "1");
        assert_eq!(
            named_settings("echo never > /sys/kernel/mm/transparent_hugepage/enabled"),
            vec![PathBuf::from("/sys/kernel/mm/transparent_hugepage/enabled")]
        );
    }

    #[test]
    fn saved_settings_are_put_back_and_a_missing_one_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let knob = dir.path().join("knob");
        std::fs::write(&knob, "1\n").unwrap();
        let saved = vec![Saved {
            path: knob.clone(),
            value: "0".into(),
        }];
        assert!(restore(&saved).is_empty());
        assert_eq!(std::fs::read_to_string(&knob).unwrap(), "0\n");
        // Already as it was: left alone.
        assert!(restore(&saved).is_empty());
        let gone = vec![Saved {
            path: dir.path().join("no/such/knob"),
            value: "0".into(),
        }];
        let problems = restore(&gone);
        assert_eq!(problems.len(), 1);
        assert!(
            problems[0].contains("could not be put back to 0"),
            "{problems:?}"
        );
    }

    #[test]
    fn a_failing_step_names_the_side_the_command_and_its_output() {
        let e = run_step("B", "set-up", "echo no such knob >&2; exit 3").unwrap_err();
        let text = format!("{e:#}");
        assert!(text.contains("B's set-up `echo no such knob >&2; exit 3` failed (exit 3)"));
        assert!(text.contains("no such knob"), "{text}");
        assert!(run_step("A", "set-up", "true").is_ok());
    }

    #[test]
    fn the_switch_tears_down_the_side_in_force_whatever_ends_it() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("log");
        let side = |name: &str| SideSpec {
            name: name.into(),
            setup: Some(format!("echo {name}+ >> {}", log.display())),
            teardown: Some(format!("echo {name}- >> {}", log.display())),
            wrap: None,
        };
        let (a, b) = (side("A"), side("B"));
        {
            let mut switch = Switch::new([&a, &b]);
            switch.enter(0).unwrap();
            switch.enter(1).unwrap();
            switch.enter(1).unwrap();
            // Dropped with B in force, as an error or Ctrl-C would.
        }
        let text = std::fs::read_to_string(&log).unwrap();
        assert_eq!(text, "A+\nA-\nB+\nB-\n");
    }

    #[test]
    fn a_wrapped_side_starts_the_worker_under_the_wrapper() {
        let side = SideSpec {
            name: "B".into(),
            wrap: Some("env FOO=1".into()),
            ..SideSpec::default()
        };
        let w = side.worker().unwrap();
        assert_eq!(w.program, PathBuf::from("/bin/sh"));
        assert_eq!(w.args[1], "exec env FOO=1 \"$@\"");
        assert_eq!(w.args.last().unwrap(), SUBCOMMAND);
        assert!(SideSpec::default().worker().unwrap().args == vec![SUBCOMMAND.to_string()]);
    }
}
