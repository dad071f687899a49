//! Chen et al. 1996 explain each primitive by its counts split between user and kernel mode. This
//! is that split today, per operation of every figure the paper's tables read: from the hardware
//! counters where the run counted cycles (or else instructions) in each mode apart, and from the
//! run's profile (`--profile`: sampled CPU time in each mode) where the machine has no counters, as
//! on most VMs. Every row names its source; a figure with neither says how to get one.

use super::spec::spec;
use super::PaperId;
use crate::results::model::{Measurement, Run, Status};
use crate::results::profile::FEW_SAMPLES;
use serde::{Deserialize, Serialize};
use std::fmt::Write;

/// Where a row's split comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum SplitSource {
    /// The hardware counters, counted user-only and kernel-only.
    Counters,
    /// The run's profile: sampled CPU time.
    Profile,
}

/// One figure's split per operation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ModeSplit {
    /// The figure (`probe key=value ...`) and the run it came from.
    pub figure: String,
    pub run: String,
    pub source: Option<SplitSource>,
    /// What is counted: `cycles` or `instructions` (counters), `ns of CPU` (a profile).
    pub unit: Option<String>,
    pub user: Option<f64>,
    pub kernel: Option<f64>,
    /// The counter or the sampling the split came from, or why there is none.
    pub detail: String,
}

impl ModeSplit {
    /// The kernel's share, 0 to 1.
    pub fn kernel_share(&self) -> Option<f64> {
        let (u, k) = (self.user?, self.kernel?);
        (u + k > 0.0).then(|| k / (u + k))
    }
}

/// The split of every measured figure of `probes` in `runs` (each figure from the first run that
/// measured it), in the order the runs hold them.
pub fn mode_split(probes: &[&str], runs: &[Run]) -> Vec<ModeSplit> {
    let mut out: Vec<ModeSplit> = Vec::new();
    for run in runs {
        for m in &run.measurements {
            if m.status != Status::Ok || !probes.contains(&m.probe.as_str()) {
                continue;
            }
            let figure = m.label();
            if out.iter().any(|s| s.figure == figure) {
                continue;
            }
            out.push(split_of(run, m, figure));
        }
    }
    out
}

fn split_of(run: &Run, m: &Measurement, figure: String) -> ModeSplit {
    let mut split = ModeSplit {
        figure,
        run: run.id.clone(),
        source: None,
        unit: None,
        user: None,
        kernel: None,
        detail: String::new(),
    };
    for event in ["cycles", "instructions"] {
        let counted = |scope: &crate::meter::counts::CounterValues| scope.get(event).copied();
        if let (Some(u), Some(k)) = (counted(&m.counters.user), counted(&m.counters.kernel)) {
            if u + k > 0.0 {
                split.source = Some(SplitSource::Counters);
                split.unit = Some(event.to_string());
                (split.user, split.kernel) = (Some(u), Some(k));
                split.detail = format!("hardware counter: {event}, user-only and kernel-only");
                return split;
            }
        }
    }
    let profile = run
        .profiles
        .iter()
        .flat_map(|p| &p.probes)
        .find(|p| p.label == split.figure);
    match profile {
        Some(p) if p.source.is_some() && p.samples >= FEW_SAMPLES => {
            split.source = Some(SplitSource::Profile);
            split.unit = Some("ns of CPU".into());
            (split.user, split.kernel) = (Some(p.user_ns_per_op), Some(p.kernel_ns_per_op));
            split.detail = format!(
                "profile: {} samples on {}",
                p.samples,
                p.source.map_or("?", |s| s.name())
            );
        }
        Some(p) if p.source.is_some() => {
            split.detail = format!(
                "the profile has only {} samples, too few to split (it mostly waits)",
                p.samples
            );
        }
        Some(p) => {
            split.detail = p
                .notes
                .first()
                .cloned()
                .unwrap_or_else(|| "not profiled".into());
        }
        None => {
            split.detail = match run.profiles.as_ref().and_then(|p| p.refused.as_ref()) {
                Some(refused) => {
                    format!("no hardware counters, and profiling was refused: {refused}")
                }
                None => "no hardware counters here: measure with --profile to split it by sampling"
                    .into(),
            }
        }
    }
    split
}

/// The split for the papers that explain their primitives by mode (Chen et al. 1996); none for the
/// others.
pub fn for_paper(paper: PaperId, runs: &[Run]) -> Vec<ModeSplit> {
    if paper != PaperId::Chen96 {
        return Vec::new();
    }
    mode_split(&spec(paper).probes(), runs)
}

/// The split's rows of the figures `only` (a table) reads, or all of them.
pub fn render_for(paper: PaperId, rows: &[ModeSplit], only: Option<&str>) -> String {
    let probes = spec(paper).probes_of(only);
    let shown: Vec<ModeSplit> = rows
        .iter()
        .filter(|r| {
            probes
                .iter()
                .any(|p| r.figure.split(' ').next() == Some(*p))
        })
        .cloned()
        .collect();
    render(&shown)
}

/// The split as a table under its own heading; nothing when there are no rows.
pub fn render(rows: &[ModeSplit]) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "\nPer operation, user and kernel (the paper splits each count by mode; source per row)\n",
    );
    let width = rows
        .iter()
        .map(|r| r.figure.chars().count())
        .max()
        .unwrap_or(0);
    for r in rows {
        match (r.user, r.kernel, r.kernel_share(), &r.unit) {
            (Some(u), Some(k), Some(share), Some(unit)) => {
                let _ = writeln!(
                    out,
                    "  {:<width$}  user {:>10.1}  kernel {:>10.1} {unit} ({:.0} % kernel)  [{}]",
                    r.figure,
                    u,
                    k,
                    100.0 * share,
                    r.detail
                );
            }
            _ => {
                let _ = writeln!(out, "  {:<width$}  no split: {}", r.figure, r.detail);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meter::perf::sampling::SamplingSource;
    use crate::papers::fixtures::measured;
    use crate::results::model::{Params, Unit};
    use crate::results::profile::{ProbeProfile, Profiles, PROFILES_SCHEMA};

    fn run_of(ms: Vec<Measurement>, profiles: Option<Profiles>) -> Run {
        let mut run = crate::results::fixtures::empty_run();
        run.id = "r1".into();
        run.measurements = ms;
        run.profiles = profiles;
        run
    }

    fn profiled(label: &str, samples: u64, user: f64, kernel: f64) -> ProbeProfile {
        ProbeProfile {
            label: label.into(),
            source: Some(SamplingSource::CpuClock),
            samples,
            user_ns_per_op: user,
            kernel_ns_per_op: kernel,
            ns_per_op: user + kernel,
            ..ProbeProfile::default()
        }
    }

    #[test]
    fn counters_first_then_the_profile_and_each_row_names_its_source() {
        let mut counted = measured("process.exec", Params::new(), Unit::Nanoseconds, 1e5);
        counted.counters.user.insert("cycles".into(), 30_000.0);
        counted.counters.kernel.insert("cycles".into(), 90_000.0);
        let sampled = measured(
            "net.tcp_bandwidth",
            Params::new(),
            Unit::BytesPerSecond,
            1e9,
        );
        let few = measured("memory.latency", Params::new(), Unit::Nanoseconds, 1.0);
        let bare = measured("app.web", Params::new(), Unit::Nanoseconds, 1e6);
        let other = measured("syscall.null", Params::new(), Unit::Nanoseconds, 100.0);
        let profiles = Profiles {
            schema: PROFILES_SCHEMA.into(),
            probes: vec![
                profiled("net.tcp_bandwidth", 2000, 250.0, 750.0),
                profiled("memory.latency", 12, 1.0, 0.0),
                // Counters win over a profile of the same figure.
                profiled("process.exec", 2000, 1.0, 1.0),
            ],
            ..Profiles::default()
        };
        let run = run_of(vec![counted, sampled, few, bare, other], Some(profiles));
        let probes = [
            "process.exec",
            "net.tcp_bandwidth",
            "memory.latency",
            "app.web",
        ];
        let rows = mode_split(&probes, std::slice::from_ref(&run));
        assert_eq!(rows.len(), 4, "syscall.null is not the paper's");
        assert_eq!(rows[0].source, Some(SplitSource::Counters));
        assert_eq!(rows[0].unit.as_deref(), Some("cycles"));
        assert_eq!(rows[0].kernel_share(), Some(0.75));
        assert_eq!(rows[1].source, Some(SplitSource::Profile));
        assert_eq!((rows[1].user, rows[1].kernel), (Some(250.0), Some(750.0)));
        assert_eq!(rows[1].detail, "profile: 2000 samples on cpu-clock");
        assert_eq!(rows[2].source, None);
        assert!(
            rows[2].detail.contains("only 12 samples"),
            "{}",
            rows[2].detail
        );
        assert_eq!(rows[3].source, None);
        assert!(rows[3].detail.contains("--profile"), "{}", rows[3].detail);
        let text = render(&rows);
        assert!(
            text.contains("(75 % kernel)  [hardware counter: cycles"),
            "{text}"
        );
        assert!(
            text.contains("app.web") && text.contains("no split: no hardware"),
            "{text}"
        );
        assert_eq!(render(&[]), "");
    }

    #[test]
    fn a_refused_profile_is_the_reason_given() {
        let m = measured("process.exec", Params::new(), Unit::Nanoseconds, 1e5);
        let run = run_of(vec![m], Some(Profiles::refused("paranoid 3".into())));
        let rows = mode_split(&["process.exec"], &[run]);
        assert!(rows[0]
            .detail
            .ends_with("profiling was refused: paranoid 3"));
    }
}
