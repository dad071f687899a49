//! Today's side of a paper: the runs set beside its published values, measured now (the paper's
//! probes, its latency run, or a traced memsim run) or loaded from the store. `osmeter paper`
//! lowers its flags into a [`Side`] and calls [`measure`] once.

use super::latency_side::{self, LatencyRequest};
use super::memsim_side::{self, TraceRequest};
use super::{plan, PaperId};
use crate::latency::session::Verdict;
use crate::results::keep::Keeper;
use crate::results::model::Run;
use crate::results::store::{resolve_id, Location};
use crate::run::RunConfig;
use anyhow::Result;

/// Where today's figures come from.
pub enum Side {
    /// Stored runs, by the ids (or prefixes) `--run` gave.
    Stored {
        wanted: Vec<String>,
        store: Location,
    },
    /// The paper's latency run (Cota-Robles and Held), and how it is kept.
    Latency(LatencyRequest, Keeper),
    /// A full-system trace simulated on the paper's machine (Chen and Bershad), and how the
    /// simulation is kept.
    Traced(TraceRequest, Keeper),
    /// The paper's probes at its points (the configuration holds how the run is kept).
    Probes(Box<RunConfig>),
    /// The table asked for has nothing of today's beside it.
    Nothing,
}

/// What was measured or loaded, and how it ended.
#[derive(Default)]
pub struct Today {
    pub runs: Vec<Run>,
    pub interrupted: bool,
    /// The latency run's verdict, when one was measured.
    pub verdict: Option<Verdict>,
    /// How many figures failed when none of them was measured.
    pub all_failed: Option<usize>,
    /// The exit code of a system capture that failed (it has said why on stderr).
    pub capture_failed: Option<i32>,
}

/// Measures and keeps, or loads, today's side of paper `id`. `table` is the one table asked for,
/// if any.
pub fn measure(id: PaperId, table: Option<&str>, side: Side) -> Result<Today> {
    match side {
        Side::Stored { wanted, store } => {
            let runs = load(&wanted, &store)?;
            for m in plan::check_runs(id, table, &runs)? {
                eprintln!("osmeter: warning: {m} is not in the given runs; its cells stay empty");
            }
            Ok(Today {
                runs,
                ..Today::default()
            })
        }
        Side::Latency(req, keeper) => {
            let (run, verdict) = measure_latency(id, &req, &keeper)?;
            Ok(Today {
                runs: vec![run],
                interrupted: verdict == Verdict::Interrupted,
                verdict: Some(verdict),
                ..Today::default()
            })
        }
        Side::Traced(req, keeper) => match memsim_side::measure(&req, &keeper, id.key())? {
            memsim_side::Outcome::Kept(run) => Ok(Today {
                runs: vec![*run],
                ..Today::default()
            }),
            memsim_side::Outcome::CaptureFailed(code) => Ok(Today {
                capture_failed: Some(code),
                ..Today::default()
            }),
        },
        Side::Probes(config) => {
            let run = crate::run::measure(&config)?;
            config.keeper.save(&run)?;
            Ok(Today {
                interrupted: run.interrupted,
                all_failed: plan::nothing_measured(&run),
                runs: vec![run],
                ..Today::default()
            })
        }
        Side::Nothing => Ok(Today::default()),
    }
}

/// Measures the paper's latency run and keeps it as `osmeter latency` keeps its own, saying on
/// stderr which classes could not run here and why.
fn measure_latency(id: PaperId, req: &LatencyRequest, keeper: &Keeper) -> Result<(Run, Verdict)> {
    let settings = latency_side::settings(id, req)?;
    if let Some(w) = latency_side::short_warning(settings.duration_ns) {
        eprintln!("{w}");
    }
    let (run, verdict) = crate::latency::run::measure_run(&settings, keeper, id.key())?;
    if let Some(doc) = run.sections.get::<crate::latency::document::LatencyDoc>() {
        for s in &doc.skipped {
            eprintln!(
                "osmeter: warning: the {} class was not measured: {}",
                s.class.as_str(),
                s.reason
            );
        }
    }
    keeper.save(&run)?;
    Ok((run, verdict))
}

fn load(wanted: &[String], location: &Location) -> Result<Vec<Run>> {
    let mut store = location.open()?;
    let mut runs = Vec::new();
    for wanted in wanted {
        let id = resolve_id(store.as_mut(), wanted)?;
        let run = store.load(&id)?.ok_or_else(|| {
            anyhow::anyhow!("run {id} vanished from {} while reading", store.describe())
        })?;
        runs.push(run);
    }
    Ok(runs)
}
