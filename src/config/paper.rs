//! `osmeter paper`'s flags checked and lowered into what the papers layer takes: which today's
//! side the paper gets ([`side`]), with the run configuration of exactly the paper's probes and
//! points, the request of its latency run, or that of its traced simulation.

use crate::cli::{PaperArgs, RunArgs};
use crate::config::RunConfig;
use crate::papers::data::Paper;
use crate::papers::latency_side::{self, LatencyRequest};
use crate::papers::memsim_side::{self, TraceRequest};
use crate::papers::spec::{self, Today};
use crate::papers::today::Side;
use crate::papers::PaperId;
use crate::probes::Scale;
use crate::results::store::Location;
use anyhow::Result;

/// Checks the flags against the paper and the table asked for (a flag that the paper's today's
/// side would not use is refused, not ignored) and chooses that side.
pub fn side(id: PaperId, paper: &Paper, args: &PaperArgs) -> Result<Side> {
    let table = args.table.as_deref();
    if let Some(t) = table {
        if paper.table(t).is_none() {
            let ids: Vec<&str> = paper.tables.iter().map(|t| t.id.as_str()).collect();
            return Err(crate::usage!(
                "--table {t}: {} has no table {t:?}; its tables are {}",
                id.name(),
                ids.join(", ")
            ));
        }
    }
    latency_side::check_flags(id, &latency_request(args))?;
    let latency = latency_side::wanted(id, table);
    let traced = traced(id, table);
    let given = probe_flags(args);
    if args.runs.is_empty() && (latency || traced) && !given.is_empty() {
        return Err(crate::usage!(
            "{} set how probes are sampled, and {}{} measures no probes: {}",
            given.join(", "),
            id.name(),
            table.map(|t| format!(" table {t}")).unwrap_or_default(),
            match spec::spec(id).today() {
                Today::Latency => {
                    "its today's side is a latency run, set by --duration, --load, --cpu and --dir"
                }
                Today::Memsim => {
                    "its today's side is a traced memsim run, set by --workload, --install and --dir"
                }
                Today::Probes => "that table has nothing of today's beside it",
            }
        ));
    }
    if args.workload.is_some() && !traced {
        return Err(crate::usage!(
            "--workload applies only to chen-bershad93 (the tables memsim fills), whose today's \
             side is a full-system trace of that workload"
        ));
    }
    Ok(if !args.runs.is_empty() {
        Side::Stored {
            wanted: args.runs.clone(),
            store: Location::resolve(args.keep.store.store.as_ref())?,
        }
    } else if latency {
        Side::Latency(latency_request(args), crate::config::keeper(&args.keep)?)
    } else if traced {
        let req = TraceRequest {
            workload: memsim_side::workload(args.workload.as_deref())?,
            dir: args.measure.dir.clone().unwrap_or_else(std::env::temp_dir),
            install: args.measure.install,
        };
        Side::Traced(req, crate::config::keeper(&args.keep)?)
    } else if spec::spec(id).probes_of(table).is_empty() {
        Side::Nothing
    } else {
        Side::Probes(Box::new(measuring_config(id, args)?))
    })
}

/// The sampling flags of `run` given on the command line, which only papers measured by probes
/// use.
fn probe_flags(args: &PaperArgs) -> Vec<&'static str> {
    let m = &args.measure;
    [
        ("--quick", args.quick),
        ("--repeat", m.repeat.is_some()),
        ("--rounds", m.rounds.is_some()),
        ("--seed", m.seed.is_some()),
        ("--min-time", m.min_time.is_some()),
        ("--fifo", m.fifo.is_some()),
        ("--system-aslr", m.system_aslr),
        ("--no-counters", m.no_counters),
        ("--fs", m.fs.is_some()),
    ]
    .into_iter()
    .filter_map(|(name, given)| given.then_some(name))
    .collect()
}

/// Whether `osmeter paper` traces the whole system for this paper and table: Chen and Bershad's
/// tables that memsim fills (not the paper-only ones such as its workloads' list).
fn traced(id: PaperId, table: Option<&str>) -> bool {
    let s = spec::spec(id);
    s.today() == Today::Memsim
        && s.comparisons
            .iter()
            .any(|c| table.is_none_or(|t| t == c.table))
}

/// The run configuration of `osmeter run` for exactly the paper's probes and parameter points.
pub fn measuring_config(id: PaperId, args: &PaperArgs) -> Result<RunConfig> {
    let run_args = RunArgs {
        targets: crate::papers::spec::spec(id)
            .probes_of(args.table.as_deref())
            .into_iter()
            .map(str::to_string)
            .collect(),
        measure: args.measure.clone(),
        keep: args.keep.clone(),
        ..RunArgs::default()
    };
    let mut config = RunConfig::from_args(&run_args)?;
    let scale = if args.quick {
        Scale::Quick
    } else {
        Scale::Full
    };
    for sel in &mut config.selected {
        sel.scale = scale;
        sel.variants = crate::papers::plan::variants(id, args.table.as_deref(), sel.probe, scale);
    }
    config.selected.retain(|s| !s.variants.is_empty());
    config.suite = Some(id.key().to_string());
    // Settings left to their defaults follow the scale, as `osmeter run quick` sets them.
    if args.quick {
        if args.measure.repeat.is_none() {
            config.harness.samples = crate::config::QUICK_SAMPLES;
        }
        if args.measure.min_time.is_none() {
            config.harness.min_sample_ns = crate::config::QUICK_MIN_SAMPLE_NS;
        }
    }
    Ok(config)
}

/// The latency run's request: the table, `--duration`, `--load`, and the measuring `--cpu` and
/// `--dir`.
pub fn latency_request(args: &PaperArgs) -> LatencyRequest {
    LatencyRequest {
        table: args.table.clone(),
        duration_ns: args.duration,
        loads: args.load.clone(),
        cpu: args.measure.cpu,
        dir: args.measure.dir.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paper_args(argv: &[&str]) -> PaperArgs {
        use clap::Parser;
        let cli = crate::cli::Cli::try_parse_from(["osmeter", "paper"].iter().chain(argv).copied())
            .unwrap();
        match cli.command {
            crate::cli::Command::Paper(a) => a,
            other => panic!("{other:?}"),
        }
    }

    /// One table measures its probe and the CPU reference at the paper's points only, at the
    /// quick scale's settings when asked, tagged with the paper as its suite.
    #[test]
    fn the_measuring_config_holds_the_papers_points() {
        let args = paper_args(&["ousterhout89", "--table", "7", "--quick"]);
        let config = measuring_config(PaperId::Ousterhout89, &args).unwrap();
        let probes: Vec<&str> = config.selected.iter().map(|s| s.probe.id).collect();
        assert_eq!(probes, vec!["cpu.reference", "app.andrew"]);
        let andrew = &config.selected[1];
        assert_eq!(andrew.scale, Scale::Quick);
        // Six phases on each of two file systems, at the full size the paper's table needs.
        assert_eq!(andrew.variants.len(), 12, "{:?}", andrew.variants);
        assert_eq!(config.suite.as_deref(), Some("ousterhout89"));
        assert_eq!(config.harness.samples, crate::config::QUICK_SAMPLES);
        let args = paper_args(&["ousterhout89", "--table", "2", "--repeat", "7"]);
        let config = measuring_config(PaperId::Ousterhout89, &args).unwrap();
        assert_eq!(config.harness.samples, 7);
        assert!(config.selected.iter().all(|s| s.scale == Scale::Full));
    }

    /// The flags reach the latency run as given; clap refuses what cannot be one.
    #[test]
    fn latency_flags_are_lowered_into_the_request() {
        let args = paper_args(&[
            "cota-robles99",
            "--duration",
            "3s",
            "--load",
            "none",
            "--cpu",
            "0",
        ]);
        let req = latency_request(&args);
        assert_eq!(req.duration_ns, Some(3_000_000_000));
        assert_eq!(req.loads.len(), 1);
        assert_eq!(req.cpu, Some(0));
        let parse = |argv: &[&str]| {
            use clap::Parser;
            crate::cli::Cli::try_parse_from(["osmeter", "paper"].iter().chain(argv).copied())
        };
        assert!(parse(&["cota-robles99", "--load", "bogus"]).is_err());
        assert!(parse(&["cota-robles99", "--duration", "25h"]).is_err());
        assert!(parse(&["cota-robles99", "--duration", "3s", "--run", "x"]).is_err());
    }
}
