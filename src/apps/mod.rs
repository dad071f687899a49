//! Application workloads: real programs measured whole, the way the seeds measured the modified
//! Andrew benchmark (Ousterhout 1989) and Wish, Ghostscript and a web server (Chen et al. 1996).
//!
//! # Adding a workload
//! A workload is an [`App`]: `run_once` performs one whole operation (a build phase, an interpreter
//! start, a rendering) by starting real programs and waiting for them. Its probe (a row of
//! [`crate::probes::app::PROBES`], group `app`) builds it in the measuring process and hands it to
//! [`whole`], which
//! - names any missing Debian package and skips the figure with the command that installs it
//!   ([`packages`]; `osmeter run --install` installs them),
//! - moves the measuring process into a cgroup of the workload's own ([`cell`]), so that every
//!   process started from then on (servers, clients, compilers, daemons) is counted, user and
//!   kernel apart, and the cgroup is removed on every way out,
//! - and gives the harness a [`crate::harness::Workload`] whose operation is one `run_once`.
//!
//! The harness then times it like any other probe: samples of whole operations, rounds in fresh
//! processes, the rounds interleaved with the other figures, so app figures are stored, compared,
//! exported and reported like every other figure. The counters of an app figure are the
//! workload's cgroup (`software.task-clock`, `software.context-switches`, `software.page-faults`,
//! `software.workload-user-ns` and `-kernel-ns`, hardware events user and kernel apart where the
//! machine has them) and the whole machine's (`software.machine-{user,kernel,irq,softirq,idle,
//! iowait,steal}-ns`, `software.irq:DEVICE`), per operation.
//!
//! Start servers in the probe's `build` (after [`whole`] has made the cgroup, i.e. inside
//! [`App::start`]) so they are counted too, and stop them in `Drop`.

pub mod andrew;
pub mod cell;
pub mod context;
pub mod count;
pub mod ghostscript;
pub mod html;
pub mod image;
pub mod interp;
pub mod packages;
pub mod program;
pub mod summary;
pub mod web;
#[cfg(feature = "x11")]
pub mod x11;
#[cfg(not(feature = "x11"))]
#[path = "x11_absent.rs"]
pub mod x11;

use crate::harness::env::Built;
use crate::harness::Workload;
use crate::results::model::CounterScopes;
use crate::results::model::Params;
use anyhow::Result;
use count::{Reading, WholeCounters};

/// The Debian packages an app probe variant needs, for `--install` (the same lists its build
/// checks). A new workload adds its arm here.
pub fn needs_of(probe: &str, params: &Params) -> Vec<packages::Need> {
    let text = |k: &str| params.get(k).and_then(|v| v.as_str()).unwrap_or("");
    match probe {
        "app.andrew" => {
            let mut out = andrew::NEEDS.to_vec();
            if let Some(kind) = image::Kind::parse(text("fs")) {
                out.extend_from_slice(kind.needs());
            }
            out
        }
        "app.ghostscript" => ghostscript::NEEDS.to_vec(),
        "app.interp" => interp::need_of(text("interp")).into_iter().collect(),
        "app.web" => web::NEEDS.to_vec(),
        "app.wish" => x11::WISH_NEEDS.to_vec(),
        "app.bitblt" => x11::BITBLT_NEEDS.to_vec(),
        _ => Vec::new(),
    }
}

/// `osmeter run --install`: installs what the selected variants need (root; apt-get).
pub fn install_for<'a>(
    variants: impl IntoIterator<Item = (&'a str, &'a Params)>,
    run_fs: Option<image::Kind>,
) -> Result<()> {
    let mut needs: Vec<packages::Need> = run_fs.map(|k| k.needs().to_vec()).unwrap_or_default();
    for (probe, params) in variants {
        for n in needs_of(probe, params) {
            if !needs.contains(&n) {
                needs.push(n);
            }
        }
    }
    let done = packages::install(&needs)?;
    if !done.is_empty() {
        eprintln!("osmeter: installed {}", done.join(", "));
    }
    Ok(())
}

/// One application workload. An operation is one call of [`App::run_once`].
pub trait App {
    /// Debian packages (and the program each must provide) this workload needs.
    fn needs(&self) -> &'static [packages::Need];
    /// Untimed set-up inside the workload's cgroup, once, before any sample: start servers, make
    /// file systems, generate inputs.
    fn start(&mut self) -> Result<()> {
        Ok(())
    }
    /// Untimed work before a sample of `iters` operations (fresh directories, say).
    fn prepare(&mut self, _iters: u64) -> Result<()> {
        Ok(())
    }
    /// The `index`-th operation of the sample (from 0): start the programs, wait for them, and
    /// fail if any did not succeed.
    fn run_once(&mut self, index: u64) -> Result<()>;
    /// A sample of `iters` operations: one [`App::run_once`] after another unless the workload
    /// sends its operations together (requests from several clients, frames without waiting).
    fn run(&mut self, iters: u64) -> Result<()> {
        for i in 0..iters {
            self.run_once(i)?;
        }
        Ok(())
    }
    /// Untimed work after a sample (checking what the server drew, say).
    fn finish(&mut self) -> Result<()> {
        Ok(())
    }
    /// Bytes one operation moves, for figures that are also a bandwidth (a web server's).
    fn bytes_per_op(&self) -> Option<u64> {
        None
    }
    /// The sample's figure in ns over its operations when the workload times each operation
    /// itself and the figure is a statistic of them (a percentile of request latency), instead
    /// of the sample's elapsed time (see [`crate::harness::Workload::timed_ns`]).
    fn timed_ns(&mut self) -> Option<u64> {
        None
    }
    /// Conditions the reader should know (versions, file system, cache state).
    fn notes(&self) -> Vec<String> {
        Vec::new()
    }
    /// Largest number of operations one sample may hold (files, disk space).
    fn max_iters(&self) -> u64 {
        u64::MAX / 2
    }
}

/// Runs `app` over and over until `stop` or Ctrl-C, one operation per sample, as the load of
/// `osmeter latency` (which has checked the app's packages before starting); `count` receives the
/// operations done. Not counted whole: the load is background, not a figure.
pub fn repeat_until<A: App>(
    mut app: A,
    stop: &std::sync::atomic::AtomicBool,
    count: &std::sync::atomic::AtomicU64,
) -> Result<()> {
    use std::sync::atomic::Ordering::Relaxed;
    app.start()?;
    while !stop.load(Relaxed) && !crate::interrupt::requested() {
        app.prepare(1)?;
        app.run(1)?;
        app.finish()?;
        count.fetch_add(1, Relaxed);
    }
    Ok(())
}

/// The harness's view of an [`App`]: counted whole, stopped cleanly on Ctrl-C.
pub struct Whole<A: App> {
    // Declared first so the app (its servers, mounts, files) goes before the cgroup does.
    app: A,
    counters: WholeCounters,
    before: Option<Reading>,
}

/// The entry point for every app probe: checks the packages, makes the cgroup, starts the app.
pub fn whole<A: App + 'static>(mut app: A) -> Result<Built> {
    if let Some(reason) = packages::missing_reason(app.needs()) {
        return Ok(Built::Skip(reason));
    }
    let counters = WholeCounters::start();
    app.start()?;
    Ok(Built::Ready(Box::new(Whole {
        app,
        counters,
        before: None,
    })))
}

impl<A: App> Workload for Whole<A> {
    fn prepare(&mut self, iters: u64) -> Result<()> {
        self.app.prepare(iters)?;
        self.before = Some(self.counters.read());
        Ok(())
    }

    fn run(&mut self, iters: u64) -> Result<()> {
        if let Err(e) = self.app.run(iters) {
            // Ctrl-C reaches the workload's children too: their failure is the interruption.
            if crate::interrupt::requested() {
                return Err(crate::interrupt::Interrupted.into());
            }
            return Err(e);
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<()> {
        self.app.finish()
    }

    fn bytes_per_op(&self) -> Option<u64> {
        self.app.bytes_per_op()
    }

    fn timed_ns(&mut self) -> Option<u64> {
        self.app.timed_ns()
    }

    fn counted(&mut self) -> Option<CounterScopes> {
        let before = self.before.take()?;
        let after = self.counters.read();
        Some(self.counters.delta(&before, &after))
    }

    fn subtract_loop_overhead(&self) -> bool {
        false
    }

    fn cgroup(&self) -> Option<std::path::PathBuf> {
        self.counters.cell().map(|c| c.path().to_path_buf())
    }

    fn max_iters(&self) -> u64 {
        self.app.max_iters()
    }

    fn notes(&self) -> Vec<String> {
        let mut out = self.app.notes();
        out.extend(self.counters.notes().iter().cloned());
        out
    }
}
