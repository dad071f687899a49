//! What `osmeter paper NAME` measures when the paper's today's side is a latency run (Cota-Robles
//! and Held): the classes and wake paths its comparisons read, for long enough that the
//! worst-case fit has its one-second windows, under a load near the paper's workloads.

use super::spec::spec;
use super::PaperId;
use crate::latency::accounting::MIN_WINDOWS_FOR_FIT;
use crate::latency::buffer::BufferConfig;
use crate::latency::load::{self, Load};
use crate::latency::session::Settings;
use crate::latency::threads::{Class, ClassName, DEFAULT_PRIO_HIGH, DEFAULT_PRIO_MEDIUM};
use crate::latency::values::{self, DEFAULT_COMPUTE_FRACTION, DEFAULT_PERIOD};
use crate::meter::placement;
use anyhow::Result;
use std::path::PathBuf;

/// A minute: sixty one-second windows, six times what the Gumbel fit needs at least.
pub const DEFAULT_DURATION_NS: u64 = 60_000_000_000;

/// The paper measured under office, workstation, 3D-game and web use: interactive desktop work,
/// which osmeter's `desktop` mix (computation, memory traffic, fresh pages) stands for.
pub const DEFAULT_LOAD: Load = Load::Desktop;

/// One name of `paper --load`: a load of `osmeter latency --load`, or `none`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoadChoice(pub Option<Load>);

/// The value parser of `paper --load`.
pub fn load_choice(text: &str) -> Result<LoadChoice, String> {
    if text.trim() == "none" {
        return Ok(LoadChoice(None));
    }
    Load::parse(text)
        .map(|l| LoadChoice(Some(l)))
        .map_err(|e| format!("{e}, or none"))
}

/// What the paper's latency run is asked for: `osmeter paper`'s flags, lowered by the
/// configuration layer.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LatencyRequest {
    pub table: Option<String>,
    pub duration_ns: Option<u64>,
    /// Empty: the paper's default load.
    pub loads: Vec<LoadChoice>,
    pub cpu: Option<usize>,
    pub dir: Option<PathBuf>,
}

/// Whether `osmeter paper` measures a latency run for this paper (and table).
pub fn wanted(id: PaperId, table: Option<&str>) -> bool {
    !spec(id).latency_streams_of(table).0.is_empty()
}

/// Refuses `--duration` and `--load` for a paper that `osmeter paper` does not take a latency
/// run for, rather than ignore them.
pub fn check_flags(id: PaperId, req: &LatencyRequest) -> Result<()> {
    if (req.duration_ns.is_some() || !req.loads.is_empty()) && !wanted(id, req.table.as_deref()) {
        return Err(crate::usage!(
            "--duration and --load apply only to papers whose today's side is a latency run \
             (cota-robles99, tables 3 and mttf); {}{} has none",
            id.name(),
            req.table
                .as_deref()
                .map(|t| format!(" table {t}"))
                .unwrap_or_default()
        ));
    }
    Ok(())
}

/// The latency settings of the paper's run: the classes and paths its comparisons read, the
/// latency command's period, priorities and buffer table, `--cpu` and `--dir` of the measuring
/// flags. When no real-time class may run here the normal class is measured instead, as
/// `osmeter latency` does by default, so the run says what an unprivileged thread gets and the
/// paper's cells say why theirs are missing.
pub fn settings(id: PaperId, req: &LatencyRequest) -> Result<Settings> {
    let (names, paths) = spec(id).latency_streams_of(req.table.as_deref());
    let mut classes: Vec<Class> = names.iter().map(|&n| class(n)).collect();
    let fifo_allowed = classes.iter().any(|c| {
        c.fifo
            .is_none_or(|p| placement::check_fifo_priority(p).is_ok())
    });
    if !fifo_allowed {
        classes.push(class(ClassName::Normal));
    }
    let loads: Vec<Load> = if req.loads.is_empty() {
        vec![DEFAULT_LOAD]
    } else {
        req.loads.iter().filter_map(|c| c.0).collect()
    };
    let duration_ns = req.duration_ns.unwrap_or(DEFAULT_DURATION_NS);
    // The latency command's defaults, so that a paper run and an `osmeter latency` run with the
    // same load are alike.
    Settings {
        period_ns: default_period_ns(),
        duration_ns,
        cpus: req.cpu.into_iter().collect(),
        classes,
        paths,
        buffers: BufferConfig::default_table(DEFAULT_COMPUTE_FRACTION),
        fail_over_ns: None,
        loads: load::kinds_of(&loads),
        load_command: None,
        dir: req.dir.clone(),
        compute_ns: None,
        causes: None,
        stages: false,
        cpu_dma_latency_us: None,
    }
    .check()
}

/// What to say before measuring when the run is too short for the worst-case fit.
pub fn short_warning(duration_ns: u64) -> Option<String> {
    let windows = duration_ns / 1_000_000_000;
    (windows < MIN_WINDOWS_FOR_FIT as u64).then(|| {
        format!(
            "osmeter: warning: --duration {} holds {windows} whole one-second windows; the worst \
             cases and times between underruns come from a fit of at least {MIN_WINDOWS_FOR_FIT}, \
             so their cells stay empty (give {MIN_WINDOWS_FOR_FIT}s or more)",
            crate::units::compact(duration_ns as f64 / 1e9) + "s"
        )
    })
}

fn class(name: ClassName) -> Class {
    Class::with_priorities(name, DEFAULT_PRIO_HIGH, DEFAULT_PRIO_MEDIUM)
}

fn default_period_ns() -> u64 {
    values::period(DEFAULT_PERIOD).expect("the default period is valid")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::latency::threads::Path;

    #[test]
    fn the_paper_reads_both_real_time_classes_on_both_paths() {
        let (classes, paths) = spec(PaperId::CotaRobles99).latency_streams_of(None);
        assert_eq!(classes, vec![ClassName::High, ClassName::Medium]);
        assert_eq!(paths, vec![Path::Timer, Path::Futex]);
        // The MTTF table reads only the high class's timer path.
        let (classes, paths) = spec(PaperId::CotaRobles99).latency_streams_of(Some("mttf"));
        assert_eq!((classes, paths), (vec![ClassName::High], vec![Path::Timer]));
        assert!(wanted(PaperId::CotaRobles99, None));
        assert!(!wanted(PaperId::CotaRobles99, Some("1")));
        assert!(!wanted(PaperId::Ousterhout89, None));
        assert!(!wanted(PaperId::ChenBershad93, None));
    }

    #[test]
    fn defaults_are_a_minute_under_the_desktop_mix() {
        let s = settings(PaperId::CotaRobles99, &LatencyRequest::default()).unwrap();
        assert_eq!(s.duration_ns, DEFAULT_DURATION_NS);
        assert_eq!(s.loads, load::kinds_of(&[Load::Desktop]));
        assert_eq!(s.period_ns, 1_000_000);
        assert!(s.classes.iter().any(|c| c.name == ClassName::High));
        let req = LatencyRequest {
            duration_ns: Some(3_000_000_000),
            loads: vec![LoadChoice(None)],
            cpu: Some(0),
            ..LatencyRequest::default()
        };
        let s = settings(PaperId::CotaRobles99, &req).unwrap();
        assert_eq!(s.duration_ns, 3_000_000_000);
        assert!(s.loads.is_empty());
        assert_eq!(s.cpus, vec![0]);
        let req = LatencyRequest {
            loads: vec![LoadChoice(Some(Load::Server))],
            ..LatencyRequest::default()
        };
        let s = settings(PaperId::CotaRobles99, &req).unwrap();
        assert_eq!(s.loads, load::kinds_of(&[Load::Server]));
    }

    #[test]
    fn latency_flags_are_refused_where_they_do_not_apply() {
        let short = LatencyRequest {
            duration_ns: Some(3_000_000_000),
            ..LatencyRequest::default()
        };
        let err = check_flags(PaperId::Ousterhout89, &short).unwrap_err();
        assert_eq!(crate::error::exit_code(&err), crate::error::EXIT_USAGE);
        assert!(err.to_string().contains("cota-robles99"), "{err}");
        let cpu_load = LatencyRequest {
            loads: vec![load_choice("cpu").unwrap()],
            ..LatencyRequest::default()
        };
        let table_1 = LatencyRequest {
            table: Some("1".into()),
            ..cpu_load.clone()
        };
        assert!(check_flags(PaperId::CotaRobles99, &table_1).is_err());
        assert!(check_flags(PaperId::CotaRobles99, &cpu_load).is_ok());
        assert!(load_choice("bogus").is_err());
    }

    #[test]
    fn a_short_run_is_warned_about() {
        assert!(short_warning(3_000_000_000).unwrap().contains("3 whole"));
        assert_eq!(short_warning(10_000_000_000), None);
    }
}
