//! `app.interp`: how long an interpreter takes to start and exit with nothing to do — python3,
//! perl and tclsh, the scripting languages a system leans on. Start-up is mostly the kernel's
//! work (exec, mapping shared libraries, page faults) plus the interpreter's own initialisation,
//! so it shows how OS structure reaches programs that run for milliseconds.

use super::packages::{need, Need};
use super::program::{version_line, Program};
use super::App;
use crate::harness::env::ProbeEnv;
use crate::results::model::Params;
use crate::results::params::param_str;
use anyhow::{bail, Context, Result};
use std::time::Duration;

/// The interpreters measured: name, program and arguments that do nothing, version query,
/// Debian package.
const INTERPRETERS: &[(&str, &[&str], &[&str], Need)] = &[
    (
        "python3",
        &["/usr/bin/python3", "-c", "pass"],
        &["/usr/bin/python3", "--version"],
        need("/usr/bin/python3", "python3"),
    ),
    (
        "perl",
        &["/usr/bin/perl", "-e", "1"],
        &["/usr/bin/perl", "-e", "print \"perl $^V\\n\""],
        need("/usr/bin/perl", "perl-base"),
    ),
    (
        "tclsh",
        // tclsh reads its script from the file named; an empty one does nothing.
        &["/usr/bin/tclsh", "/dev/null"],
        &[
            "/bin/sh",
            "-c",
            "echo 'puts \"tclsh [info patchlevel]\"' | /usr/bin/tclsh",
        ],
        need("/usr/bin/tclsh", "tcl"),
    ),
];

pub fn names() -> impl Iterator<Item = &'static str> {
    INTERPRETERS.iter().map(|i| i.0)
}

/// The package of an interpreter, by name.
pub fn need_of(name: &str) -> Option<Need> {
    INTERPRETERS.iter().find(|i| i.0 == name).map(|i| i.3)
}

pub struct Interp {
    /// Row of [`INTERPRETERS`].
    row: usize,
    scratch: std::path::PathBuf,
    program: Option<Program>,
}

impl Interp {
    pub fn new(env: &ProbeEnv, params: &Params) -> Result<Interp> {
        let want = param_str(params, "interp").context("app.interp")?;
        let Some(row) = INTERPRETERS.iter().position(|i| i.0 == want) else {
            bail!(
                "unknown interpreter {want:?}: choose one of {}",
                names().collect::<Vec<_>>().join(", ")
            );
        };
        Ok(Interp {
            row,
            scratch: env.scratch.to_path_buf(),
            program: None,
        })
    }
}

impl App for Interp {
    fn needs(&self) -> &'static [Need] {
        std::slice::from_ref(&INTERPRETERS[self.row].3)
    }

    fn start(&mut self) -> Result<()> {
        let (_, argv, version, _) = INTERPRETERS[self.row];
        // A broken install fails here, before any timing.
        version_line(version)?;
        self.program = Some(Program::new(argv, &self.scratch, Duration::from_secs(60))?);
        Ok(())
    }

    fn run_once(&mut self, _index: u64) -> Result<()> {
        match &mut self.program {
            Some(p) => p.run(),
            None => bail!("the interpreter was not set up; this is a bug"),
        }
    }
}
