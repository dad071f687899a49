//! `app.andrew`: the modified Andrew benchmark (Ousterhout 1989), one figure per phase and one
//! for the whole. A generated C program ([`tree`]) is the input; the phases are, in order:
//! make its directories, copy every file, stat every file of the copy, read every byte of the
//! copy, and compile the copy with a fixed compiler and flags (`gcc -O2`, one file at a time, then
//! the link). An operation of the `phase=X` figure is phase X on a fresh copy whose earlier phases
//! were done untimed just before; `phase=total` does all five.
//!
//! `fs=dir` runs in the run's scratch directory (`--dir`); `fs=ext4` and `fs=fuse` in a fresh
//! ext4 image mounted by the kernel or by fuse2fs ([`super::image`]), so the two structures are
//! measured side by side, in the same run, with the FUSE server counted in the workload.

pub mod tree;

use super::image::{self, Mounted};
use super::packages::{need, Need};
use super::program::{version_line, Program};
use super::App;
use crate::harness::env::ProbeEnv;
use crate::results::model::Params;
use crate::results::params::{param_str, param_u64};
use anyhow::{bail, Context, Result};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The phases, in the order the benchmark runs them.
pub const PHASES: &[&str] = &["mkdir", "copy", "stat", "read", "compile"];

/// Where the benchmark runs.
pub const FILE_SYSTEMS: &[&str] = &["dir", "ext4", "fuse"];

/// The compiler and its flags: fixed, so figures from two machines compare.
const CC: &str = "/usr/bin/gcc";
const CFLAGS: &[&str] = &["-O2", "-c"];

/// Functions per generated source file.
const FUNCTIONS: usize = 12;

/// Size of the ext4 image for fs=ext4 and fs=fuse.
const IMAGE_MIB: u64 = 256;

pub const NEEDS: &[Need] = &[need(CC, "gcc")];
/// One phase of the benchmark, or all of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    One(usize),
    Total,
}

pub struct Andrew {
    phase: Phase,
    fs: &'static str,
    tree: tree::Tree,
    scratch: PathBuf,
    /// Where the copies go: a directory of the scratch directory, or the mounted image.
    base: PathBuf,
    source: PathBuf,
    mount: Option<Mounted>,
    _workdir: Option<tempfile::TempDir>,
    /// The copies of the current sample, one per operation.
    targets: Vec<PathBuf>,
    compilers: Vec<Vec<Program>>,
    next_target: u64,
    buf: Vec<u8>,
    compiler_version: String,
}

impl Andrew {
    pub fn new(env: &ProbeEnv, params: &Params) -> Result<Andrew> {
        let text = |k: &str| param_str(params, k).context("app.andrew");
        let phase = match text("phase")? {
            "total" => Phase::Total,
            p => match PHASES.iter().position(|x| *x == p) {
                Some(i) => Phase::One(i),
                None => bail!(
                    "unknown Andrew phase {p:?}: choose one of {}, or total",
                    PHASES.join(", ")
                ),
            },
        };
        let fs_name = text("fs")?;
        let Some(&fs) = FILE_SYSTEMS.iter().find(|f| **f == fs_name) else {
            bail!(
                "unknown file system {fs_name:?} for app.andrew: choose one of {}",
                FILE_SYSTEMS.join(", ")
            );
        };
        let sources = param_u64(params, "sources").context("app.andrew")?;
        if !(1..=2000).contains(&sources) {
            bail!("sources={sources}: give 1 to 2000 source files");
        }
        Ok(Andrew {
            phase,
            fs,
            tree: tree::generate(sources as usize, FUNCTIONS),
            scratch: env.scratch.to_path_buf(),
            base: PathBuf::new(),
            source: PathBuf::new(),
            mount: None,
            _workdir: None,
            targets: Vec::new(),
            compilers: Vec::new(),
            next_target: 0,
            buf: vec![0; 64 << 10],
            compiler_version: String::new(),
        })
    }

    fn phases(&self) -> std::ops::Range<usize> {
        match self.phase {
            Phase::One(i) => i..i + 1,
            Phase::Total => 0..PHASES.len(),
        }
    }

    /// The compiler runs of one copy: each source alone, then the link.
    fn compile_programs(&self, target: &Path) -> Result<Vec<Program>> {
        let limit = Duration::from_secs(300);
        let mut programs = Vec::new();
        let mut objects = Vec::new();
        for (n, s) in self.tree.sources.iter().enumerate() {
            let object = format!("o{n}.o");
            let src = s.to_string_lossy();
            let mut argv = vec![CC];
            argv.extend_from_slice(CFLAGS);
            argv.extend_from_slice(&[&src, "-o", &object]);
            programs.push(Program::new(&argv, target, limit)?);
            objects.push(object);
        }
        let mut link = vec![CC, "-o", "program"];
        link.extend(objects.iter().map(String::as_str));
        programs.push(Program::new(&link, target, limit)?);
        Ok(programs)
    }

    /// Runs phase `p` on copy `i`.
    fn do_phase(&mut self, p: usize, i: usize) -> Result<()> {
        let target = self.targets[i].clone();
        match p {
            0 => {
                std::fs::create_dir(&target)
                    .with_context(|| format!("mkdir {}", target.display()))?;
                for d in &self.tree.dirs {
                    std::fs::create_dir_all(target.join(d))?;
                }
            }
            1 => {
                for f in &self.tree.files {
                    copy(
                        &self.source.join(&f.path),
                        &target.join(&f.path),
                        &mut self.buf,
                    )?;
                }
            }
            2 => walk(&target, &mut |_, _| Ok(()))?,
            3 => {
                let buf = &mut self.buf;
                walk(&target, &mut |path, is_file| {
                    if is_file {
                        let mut f = std::fs::File::open(path)?;
                        while f.read(buf)? > 0 {}
                    }
                    Ok(())
                })?
            }
            _ => {
                for program in &mut self.compilers[i] {
                    program.run()?;
                }
            }
        }
        Ok(())
    }
}

/// Copies one file through a buffer, as cp did when the benchmark was written.
fn copy(from: &Path, to: &Path, buf: &mut [u8]) -> Result<()> {
    let mut src =
        std::fs::File::open(from).with_context(|| format!("cannot open {}", from.display()))?;
    let mut dst =
        std::fs::File::create(to).with_context(|| format!("cannot create {}", to.display()))?;
    loop {
        let n = src.read(buf)?;
        if n == 0 {
            return Ok(());
        }
        dst.write_all(&buf[..n])?;
    }
}

/// Visits every entry below `dir` with lstat, depth first, telling files from directories.
fn walk(dir: &Path, visit: &mut dyn FnMut(&Path, bool) -> std::io::Result<()>) -> Result<()> {
    for entry in std::fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))? {
        let path = entry?.path();
        let meta = std::fs::symlink_metadata(&path)?;
        visit(&path, meta.is_file())?;
        if meta.is_dir() {
            walk(&path, visit)?;
        }
    }
    Ok(())
}

impl App for Andrew {
    fn needs(&self) -> &'static [Need] {
        // The image's own tools are checked with the rest of what mounting needs (the probe's
        // build asks image::unavailable).
        NEEDS
    }

    fn start(&mut self) -> Result<()> {
        self.compiler_version = version_line(&[CC, "--version"])?;
        match self.fs {
            "dir" => {
                let dir = crate::scratch::private_dir(&self.scratch, "andrew-")?;
                self.base = dir.path().to_path_buf();
                self._workdir = Some(dir);
            }
            fs => {
                let kind = image::Kind::parse(fs).context("an unknown image kind; a bug")?;
                let m = Mounted::new(kind, &self.scratch, IMAGE_MIB)?;
                self.base = m.path().to_path_buf();
                self.mount = Some(m);
            }
        }
        self.source = self.base.join("source");
        std::fs::create_dir(&self.source)?;
        self.tree.write(&self.source)
    }

    fn prepare(&mut self, iters: u64) -> Result<()> {
        for t in self.targets.drain(..) {
            std::fs::remove_dir_all(&t)
                .with_context(|| format!("cannot remove {}", t.display()))?;
        }
        self.compilers.clear();
        let first = self.phases().start;
        let compiles = self.phases().contains(&(PHASES.len() - 1));
        for i in 0..iters as usize {
            self.next_target += 1;
            let target = self.base.join(format!("copy{}", self.next_target));
            self.targets.push(target.clone());
            self.compilers.push(if compiles {
                self.compile_programs(&target)?
            } else {
                Vec::new()
            });
            for p in 0..first {
                self.do_phase(p, i)?;
            }
        }
        if let Some(m) = &self.mount {
            m.sync();
        }
        Ok(())
    }

    fn max_iters(&self) -> u64 {
        // Every operation has a copy of its own.
        1000
    }

    fn run_once(&mut self, index: u64) -> Result<()> {
        for p in self.phases() {
            self.do_phase(p, index as usize)?;
        }
        Ok(())
    }

    fn notes(&self) -> Vec<String> {
        let place = match &self.mount {
            Some(m) => format!("a fresh ext4 image without a journal, {}", m.describe()),
            None => "the scratch directory".to_string(),
        };
        vec![format!(
            "{} files ({} KiB) in {place}; compiled by {} with {}",
            self.tree.files.len(),
            self.tree.bytes() >> 10,
            self.compiler_version,
            CFLAGS.join(" ")
        )]
    }
}
