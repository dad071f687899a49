//! `ab`'s arguments lowered into a validated request: the probes and how they are measured (as
//! `run` checks them), the two sides, and whether a duet is possible here.

use crate::ab::document::Mode;
use crate::ab::sides::SideSpec;
use crate::cli::{AbArgs, RunArgs};
use crate::meter::placement;
use crate::usage;
use anyhow::Result;
use std::time::Duration;

/// What `ab` was asked for, checked.
pub struct AbPlan {
    /// The probes, their harness, the CPU, the scratch place and the store, as `run` lowers them.
    pub run: super::RunConfig,
    pub sides: [SideSpec; 2],
    pub mode: Mode,
    pub min_effect: f64,
    pub budget: Duration,
    pub max_pairs: usize,
    pub cpus: [usize; 2],
    pub fail_if_slower: Option<f64>,
}

pub fn from_args(args: &AbArgs) -> Result<AbPlan> {
    if args.targets.is_empty() {
        return Err(usage!(
            "ab needs the probes to measure on both sides, e.g. `osmeter ab syscall.null \
             --b-wrap 'env LD_BIND_NOW=1'` (`osmeter list` shows the probes and groups)"
        ));
    }
    let refused = [
        (
            args.measure.rounds.is_some(),
            "--rounds",
            "ab takes pairs until its interval is narrow enough: give --max-pairs or --budget",
        ),
        (
            args.measure.profile,
            "--profile",
            "ab does not sample profiles yet: profile each set-up with `osmeter run --profile`",
        ),
        (
            args.measure.fs.is_some(),
            "--fs",
            "ab measures on the scratch directory as it is: give --dir",
        ),
        (
            args.measure.install,
            "--install",
            "install the packages first with `osmeter run --install PROBE`",
        ),
    ];
    if let Some((_, flag, why)) = refused.iter().find(|(given, _, _)| *given) {
        return Err(usage!("{flag} does not apply to ab: {why}"));
    }
    let side =
        |name: &str, setup: &Option<String>, teardown: &Option<String>, wrap: &Option<String>| {
            SideSpec {
                name: name.into(),
                setup: setup.clone().filter(|c| !c.trim().is_empty()),
                teardown: teardown.clone().filter(|c| !c.trim().is_empty()),
                wrap: wrap.clone().filter(|c| !c.trim().is_empty()),
            }
        };
    let a = side("A", &args.a_setup, &args.a_teardown, &args.a_wrap);
    let b = side("B", &args.b_setup, &args.b_teardown, &args.b_wrap);
    for (this, other) in [(&a, &b), (&b, &a)] {
        if this.setup.is_some() && this.teardown.is_none() && other.setup.is_none() {
            return Err(usage!(
                "--{}-setup without --{}-setup: {} would run under whatever {}'s set-up left; give \
                 --{}-setup (the command that puts the setting back) or --{}-teardown",
                this.name.to_lowercase(),
                other.name.to_lowercase(),
                other.name,
                this.name,
                other.name.to_lowercase(),
                this.name.to_lowercase()
            ));
        }
        if this.teardown.is_some() && this.setup.is_none() {
            return Err(usage!(
                "--{0}-teardown without --{0}-setup: a tear-down undoes a set-up; give both",
                this.name.to_lowercase()
            ));
        }
    }
    for side in [&a, &b] {
        if let Some(wrap) = &side.wrap {
            check_wrapper(&side.name, wrap)?;
        }
    }
    let run_args = RunArgs {
        targets: args.targets.clone(),
        measure: args.measure.clone(),
        sets: args.sets.clone(),
        guest: Default::default(),
        keep: args.keep.clone(),
        output: args.output,
    };
    let run = super::RunConfig::from_args(&run_args)?;
    if run.suite.is_some() {
        eprintln!(
            "osmeter: ab: a whole suite in every pair takes long; a few probes or a group \
             find a change sooner"
        );
    }
    let mode = chosen_mode(args, &a, &b);
    let cpus = match mode {
        Mode::Interleaved => [run.cpu, run.cpu],
        Mode::Lockstep => {
            at_once_refused(&a, &b, "--lockstep")?;
            [run.cpu, run.cpu]
        }
        Mode::Duet => [run.cpu, duet_partner(&a, &b, run.cpu)?],
    };
    Ok(AbPlan {
        run,
        sides: [a, b],
        mode,
        min_effect: args.min_effect / 100.0,
        budget: Duration::from_nanos(args.budget),
        max_pairs: args.max_pairs,
        cpus,
        fail_if_slower: args.fail_if_slower,
    })
}

/// The mode asked for, or else the one that finds most here: lockstep when the sides differ only
/// per process (on a shared VM its pairs are milliseconds apart and found a 5 % change 10 times in
/// 10 where interleaved rounds a second apart found it twice; docs/ab.md), interleaved when a
/// set-up switches the whole machine and A and B cannot run at once.
fn chosen_mode(args: &AbArgs, a: &SideSpec, b: &SideSpec) -> Mode {
    if args.duet {
        Mode::Duet
    } else if args.lockstep {
        Mode::Lockstep
    } else if args.interleaved || a.setup.is_some() || b.setup.is_some() {
        Mode::Interleaved
    } else {
        Mode::Lockstep
    }
}

/// The wrapper's program is found before anything runs (a wrapper that cannot start would fail
/// every round of its side): its first word past any `NAME=value` assignments.
fn check_wrapper(side: &str, wrap: &str) -> Result<()> {
    let program = wrap
        .split_whitespace()
        .find(|w| !w.contains('=') || w.starts_with('/') || w.starts_with('.'));
    match program {
        Some(p) => crate::programs::startable(p)
            .map(|_| ())
            .map_err(|e| usage!("--{}-wrap: {e:#}", side.to_lowercase())),
        None => Ok(()),
    }
}

/// Why A and B cannot run at the same time (`flag` is --duet or --lockstep), if they cannot.
fn at_once_refused(a: &SideSpec, b: &SideSpec, flag: &str) -> Result<()> {
    if let Some(side) = [a, b].into_iter().find(|s| s.setup.is_some()) {
        return Err(usage!(
            "{flag} with --{}-setup: {flag} runs A and B at the same time, so a set-up command \
             (a switch of the whole machine, like a sysctl) would hold for both sides; use \
             --a-wrap/--b-wrap for a difference that acts per process, or leave out {flag} to \
             interleave A and B",
            side.name.to_lowercase()
        ));
    }
    Ok(())
}

/// The second CPU of a duet, or why there is no duet.
fn duet_partner(a: &SideSpec, b: &SideSpec, cpu: usize) -> Result<usize> {
    at_once_refused(a, b, "--duet")?;
    let usable = placement::usable_cpus();
    let (_, choice) = super::least_busy_cpu();
    let partner = choice
        .busy
        .iter()
        .filter(|b| b.cpu != cpu)
        .min_by(|x, y| x.busy.total_cmp(&y.busy))
        .map(|b| b.cpu)
        .or_else(|| usable.iter().copied().find(|&c| c != cpu));
    partner.ok_or_else(|| {
        usage!(
            "--duet needs two CPUs, and osmeter may use only CPU {cpu} here (its affinity or \
             cgroup); leave out --duet to interleave A and B on one CPU"
        )
    })
}
