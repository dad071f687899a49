//! Turns raw command-line arguments into a validated run configuration before anything runs, so that
//! every usage error is reported up front with a way out.

pub mod ab;
pub mod compare;
pub mod guest;
pub mod paper;
pub mod stat;

use crate::cli::RunArgs;
use crate::harness::HarnessConfig;
use crate::meter::placement;
use crate::probes::selection::{apply_sets, select};
use crate::probes::Scale;
use crate::results::keep::Keeper;
use crate::results::machine::{CpuBusy, CpuChoice};
use crate::usage;
use anyhow::Result;

pub use crate::suite::{DEFAULT_ROUNDS, MAX_REPEAT, MAX_ROUNDS, MAX_WARMUP};
/// Without --rounds, figures whose rounds disagree get more, up to this many in all, within the
/// run's time budget.
pub const MAX_ADAPTIVE_ROUNDS: usize = 8;
/// The quick suite's wall-time budget for those extra rounds (the whole run, first rounds included).
pub const QUICK_BUDGET: std::time::Duration = std::time::Duration::from_secs(50);
/// Samples per round and shortest sample at the quick scale (the `quick` suite, `paper --quick`),
/// and otherwise.
pub const QUICK_SAMPLES: usize = 3;
pub const FULL_SAMPLES: usize = 5;
pub const QUICK_MIN_SAMPLE_NS: u64 = 10_000_000;
pub const FULL_MIN_SAMPLE_NS: u64 = 20_000_000;
/// A longer --min-time is a typo: one sample would outlast any sensible run.
pub const MAX_MIN_SAMPLE_NS: u64 = 60_000_000_000;

pub use crate::run::RunConfig;

/// --min-time within [`MAX_MIN_SAMPLE_NS`], and with --fifo within what a worker that never sleeps
/// during a sample may run (see [`crate::meter::rt_limit::FIFO_MAX_SAMPLE_NS`]).
fn check_min_time(ns: u64, fifo: bool) -> Result<()> {
    let seconds = |ns: u64| crate::units::format(ns as f64 / 1e9, crate::units::Unit::Seconds);
    if ns > MAX_MIN_SAMPLE_NS {
        return Err(usage!(
            "--min-time {}: at most {} per sample (a run takes --repeat x --rounds samples of \
             every figure); give a shorter --min-time, or more --repeat",
            seconds(ns),
            seconds(MAX_MIN_SAMPLE_NS)
        ));
    }
    let fifo_max = crate::meter::rt_limit::FIFO_MAX_SAMPLE_NS;
    if fifo && ns > fifo_max {
        return Err(usage!(
            "--min-time {} with --fifo: at SCHED_FIFO a sample runs without ever sleeping, and a \
             real-time worker may take at most a few seconds of CPU at a time, so the limit is {}; \
             give --min-time {} or less, or leave out --fifo",
            seconds(ns),
            seconds(fifo_max),
            seconds(fifo_max)
        ));
    }
    Ok(())
}

/// How long the machine is looked at to choose the measuring CPU: a few scheduler ticks on each.
const CPU_LOOK: std::time::Duration = std::time::Duration::from_millis(200);

/// Without `--cpu`: the usable CPU with the least other work over a short look (the last one
/// when /proc/stat cannot say).
pub(crate) fn least_busy_cpu() -> (usize, CpuChoice) {
    let usable = placement::usable_cpus();
    let fallback = *usable.last().unwrap_or(&0);
    if usable.len() < 2 {
        // Nothing to choose between.
        let only = CpuChoice {
            chosen: true,
            busy: Vec::new(),
        };
        return (fallback, only);
    }
    let choice = CpuChoice {
        chosen: true,
        busy: crate::meter::look::busy_shares(&usable, CPU_LOOK)
            .into_iter()
            .map(|(cpu, busy)| CpuBusy { cpu, busy })
            .collect(),
    };
    (choice.least_busy().unwrap_or(fallback), choice)
}

impl RunConfig {
    pub fn from_args(args: &RunArgs) -> Result<RunConfig> {
        let (mut selected, suite) = select(&args.targets)?;
        apply_sets(&mut selected, &args.sets)?;
        if let Some(kind) = args.measure.fs {
            crate::suite::runfs::andrew_on_run_fs(&mut selected, &args.sets);
            crate::suite::runfs::check(kind, args.measure.install)?;
        }
        let quick = selected.iter().all(|s| s.scale == Scale::Quick);
        let samples =
            args.measure
                .repeat
                .unwrap_or(if quick { QUICK_SAMPLES } else { FULL_SAMPLES });
        // --repeat and --rounds are in range: clap checked them (cli.rs).
        let rounds = args.measure.rounds.unwrap_or(DEFAULT_ROUNDS);
        let min_sample_ns = match args.measure.min_time {
            Some(ns) => ns,
            None if quick => QUICK_MIN_SAMPLE_NS,
            None => FULL_MIN_SAMPLE_NS,
        };
        check_min_time(min_sample_ns, args.measure.fifo.is_some())?;
        let (cpu, cpu_choice) = match args.measure.cpu {
            Some(c) => {
                placement::validate_cpu(c).map_err(|e| usage!("--cpu {c}: {e:#}"))?;
                (c, CpuChoice::given())
            }
            None => least_busy_cpu(),
        };
        if let Some(prio) = args.measure.fifo {
            placement::check_fifo_priority(prio).map_err(|e| usage!("--fifo {prio}: {e:#}"))?;
        }
        let scratch_parent = crate::scratch::check_scratch_parent(args.measure.dir.as_deref())?;
        if selected.iter().any(|s| s.probe.id == "app.web") {
            crate::apps::web::reach::check_dir(&scratch_parent, args.measure.install)?;
        }
        let variants = || {
            selected
                .iter()
                .flat_map(|s| s.variants.iter().map(move |v| (s.probe.id, v)))
        };
        for (probe, params) in variants() {
            crate::probes::limits::check(probe, params)?;
        }
        crate::probes::footprint::check_run(variants(), samples as u64, &scratch_parent)?;
        Ok(RunConfig {
            suite,
            selected,
            harness: HarnessConfig {
                min_sample_ns,
                samples,
                warmup_samples: args.measure.warmup,
                ..HarnessConfig::default()
            },
            rounds,
            max_rounds: match args.measure.rounds {
                Some(_) => rounds,
                None => MAX_ADAPTIVE_ROUNDS,
            },
            budget: quick.then_some(QUICK_BUDGET),
            seed: args
                .measure
                .seed
                .unwrap_or_else(crate::system::seed_from_entropy),
            cpu,
            cpu_choice,
            scratch_parent,
            counters: !args.measure.no_counters,
            profile: args.measure.profile,
            fifo: args.measure.fifo,
            system_aslr: args.measure.system_aslr,
            install: args.measure.install,
            fs: args.measure.fs,
            file_systems: if args.measure.dir.is_some() || args.measure.fs.is_some() {
                crate::probes::FileSystems::Scratch
            } else {
                crate::probes::FileSystems::Fresh
            },
            keeper: Keeper::new(
                &crate::suite::runfs::tags_with_fs(&args.keep.tags, args.measure.fs),
                args.keep.no_store,
                args.keep.store.store.as_ref(),
            )?,
            json: args.output.json,
        })
    }
}

/// The validated keep path of a measuring command: checked before anything is measured.
pub fn keeper(keep: &crate::cli::KeepArgs) -> Result<Keeper> {
    Keeper::new(&keep.tags, keep.no_store, keep.store.store.as_ref())
}
