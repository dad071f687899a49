//! `osmeter paper`'s flags lowered into what the papers layer takes: the run configuration of
//! exactly the paper's probes and points, and the request of its latency run.

use crate::cli::{PaperArgs, RunArgs};
use crate::config::RunConfig;
use crate::papers::latency_side::LatencyRequest;
use crate::papers::PaperId;
use crate::probes::Scale;
use anyhow::Result;

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
