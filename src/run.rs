//! Measuring a run: the selected probes in rounds through the harness's suite runner, in a
//! scratch directory (on the file system `--fs` asked for), with the machine's fingerprint and the
//! derived figures. `osmeter run` and `osmeter paper` both measure through here.

use crate::harness;
use crate::harness::HarnessConfig;
use crate::interrupt;
use crate::meter::look::Look;
use crate::meter::perf;
use crate::meter::watch::Watch;
use crate::probes::selection::Selected;
use crate::results::fingerprint;
use crate::results::keep::Keeper;
use crate::results::machine;
use crate::results::machine::CpuChoice;
use crate::results::model::{Run, RunOptions, RUN_SCHEMA};
use crate::suite::worker::WorkerCommand;
use crate::suite::SuiteConfig;
use anyhow::Result;
use std::path::PathBuf;

/// A validated `run` request: what to measure, how, where, and where to keep it (lowered from the
/// command line by `config`, or built by `paper` for the figures a paper needs).
pub struct RunConfig {
    /// The suite name when exactly one suite was asked for.
    pub suite: Option<String>,
    pub selected: Vec<Selected>,
    pub harness: HarnessConfig,
    /// Rounds of every figure, each in a fresh process.
    pub rounds: usize,
    /// Rounds in all for figures whose rounds disagree (`rounds` when --rounds fixes them).
    pub max_rounds: usize,
    /// Wall time the run's extra rounds must fit in (see [`crate::suite::SuiteConfig`]).
    pub budget: Option<std::time::Duration>,
    /// Seed of the rounds' shuffled order.
    pub seed: u64,
    pub cpu: usize,
    /// How `cpu` came to be: given, or chosen as the one with least other work.
    pub cpu_choice: CpuChoice,
    pub scratch_parent: PathBuf,
    pub counters: bool,
    /// `--profile`: a sampling round of every figure after its timed rounds.
    pub profile: bool,
    pub fifo: Option<i32>,
    /// `--system-aslr`: no measuring process starts with a fixed address-space layout.
    pub system_aslr: bool,
    /// Install the Debian packages of the selected app workloads first (`--install`).
    pub install: bool,
    /// `--fs`: the scratch directory on an ext4 image mounted by the kernel or by fuse2fs.
    pub fs: Option<crate::apps::image::Kind>,
    /// Where the file-system probes work: fresh file systems of their own, or the scratch
    /// directory's as it is when the user chose it (`--dir`, `--fs`).
    pub file_systems: crate::probes::FileSystems,
    /// Tags and store, checked before measuring.
    pub keeper: Keeper,
    pub json: bool,
}

/// Measures the configured probes in rounds and returns the annotated run (marked interrupted
/// after Ctrl-C, holding what was measured).
pub fn measure(config: &RunConfig) -> Result<Run> {
    interrupt::install();
    if config.install {
        crate::apps::install_for(
            config
                .selected
                .iter()
                .flat_map(|s| s.variants.iter().map(move |v| (s.probe.id, v))),
            config.fs,
        )?;
    }
    let scratch = crate::scratch::ScratchDir::create(&config.scratch_parent, "run")?;
    crate::apps::cell::sweep_left();
    // Declared after the scratch directory, so it is unmounted before the directory goes.
    let run_fs = crate::suite::runfs::RunFs::mount_for(config.fs, &scratch, &config.selected)?;
    let suite = SuiteConfig {
        variants: crate::suite::variants_of(&config.selected),
        harness: config.harness.clone(),
        rounds: config.rounds,
        max_rounds: config.max_rounds,
        budget: config.budget,
        usual: usual_noise(config),
        seed: config.seed,
        cpu: config.cpu,
        fifo: config.fifo,
        system_aslr: config.system_aslr,
        counters: config.counters,
        profile: config.profile,
        scratch: run_fs.as_ref().map_or(scratch.path(), |fs| fs.path()),
        file_systems: config.file_systems,
        worker: WorkerCommand::this_executable(),
    };

    let started_at = crate::clock::now_rfc3339();
    let style = crate::progress::style();
    let before = Look::now(std::process::id());
    let watch = Watch::start(config.cpu);
    let outcome = crate::suite::run(&suite, &mut |p| crate::progress::status(style, &p.line()));
    // A worker killed because it did not answer Ctrl-C within the grace (a workload still tearing
    // its server down) cannot remove its workload's cgroup: remove it now, not at the next run.
    crate::apps::cell::sweep_left();
    let watched = watch.finish();
    let outcome = outcome?;
    crate::progress::status(style, "");
    let after = Look::now(std::process::id());

    // The parent, not the fresh subdirectory: its path is stable from run to run.
    let mut fingerprint = fingerprint::collect(Some(&config.scratch_parent));
    if let Some(fs) = &run_fs {
        fingerprint.scratch_fs_type = Some(fs.fs_type());
    }
    let counters_unavailable = if config.counters {
        perf::CounterSet::open_all().unavailable().clone()
    } else {
        Default::default()
    };
    let mut run = Run {
        profiles: outcome.profiles,
        schema: RUN_SCHEMA.to_string(),
        id: crate::clock::new_run_id(),
        started_at,
        finished_at: Some(crate::clock::now_rfc3339()),
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        suite: config.suite.clone(),
        options: RunOptions {
            probes: config
                .selected
                .iter()
                .map(|s| s.probe.id.to_string())
                .collect(),
            samples: config.harness.samples,
            min_sample_ms: config.harness.min_sample_ns as f64 / 1e6,
            warmup_samples: config.harness.warmup_samples,
            cpu: Some(config.cpu),
            fifo_priority: config.fifo,
            system_aslr: config.system_aslr,
            scratch_dir: config.scratch_parent.display().to_string(),
            scratch_fs: fingerprint.scratch_fs_type.clone(),
            rounds: config.rounds,
            seed: Some(config.seed),
        },
        tags: config.keeper.tags().clone(),
        fingerprint: Some(fingerprint.clone()),
        counters_unavailable,
        overhead: outcome.overhead,
        measurements: outcome.measurements,
        interrupted: outcome.interrupted,
        sections: Default::default(),
        machine: None,
        yardstick: (!outcome.yardstick.readings.is_empty()).then_some(outcome.yardstick),
    };
    run.machine = Some(machine::judged(
        config.cpu,
        config.cpu_choice.clone(),
        watched,
        [before, after],
        &run.measurements,
    ));
    drop(run_fs);
    drop(scratch);
    crate::results::derive::annotate(&mut run);

    Ok(run)
}

/// How much each figure's rounds usually disagree on this host, from the store's latest runs (see
/// [`harness::usual`]); empty with `--no-store`, a store that cannot be read, or too little history.
fn usual_noise(config: &RunConfig) -> std::collections::BTreeMap<String, harness::usual::Usual> {
    let (Some(location), Some(host)) = (config.keeper.location(), harness::usual::this_host())
    else {
        return Default::default();
    };
    location
        .open_read_only()
        .and_then(|mut store| harness::usual::from_store(store.as_mut(), &host))
        .unwrap_or_default()
}
