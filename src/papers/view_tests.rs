//! Round trips of the paper views: what `osmeter paper --json` prints and the report draws reads
//! back as the same value, for every paper, with today's side filled in and without it.

use super::data::Paper;
use super::fixtures::{latency_run, measured, memsim_run, ousterhout_run};
use super::plan::{catalogue, Listing};
use super::spec::spec;
use super::view::{build, Here, PaperDoc};
use super::PaperId;
use crate::results::model::{Run, Unit};

/// Runs that give each paper some of today's figures.
fn todays_runs(id: PaperId) -> Vec<Run> {
    match id {
        PaperId::Ousterhout89 => vec![ousterhout_run(100.0, 100.0, 1e10)],
        PaperId::Chen96 => {
            let mut run = ousterhout_run(100.0, 100.0, 1e10);
            run.measurements.push(measured(
                "app.ghostscript",
                crate::params![("pages", 13)],
                Unit::Nanoseconds,
                2.0e9,
            ));
            vec![run]
        }
        PaperId::ChenBershad93 => vec![memsim_run()],
        // Worst wakes around 5 ms: the buffering the paper asks about is within reach.
        PaperId::CotaRobles99 => vec![latency_run(5e6)],
    }
}

fn assert_round_trips(doc: &PaperDoc) {
    let text = serde_json::to_string_pretty(doc).unwrap();
    let back: PaperDoc = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("the view of {} does not read back: {e}", doc.name));
    assert_eq!(
        &back, doc,
        "the view of {} changed on its way back",
        doc.name
    );
}

#[test]
fn every_papers_view_round_trips_with_and_without_todays_figures() {
    let here = Here {
        mhz: Some(2000.0),
        hostname: Some("test".into()),
    };
    for id in PaperId::ALL {
        let paper = Paper::load(id).unwrap();
        let alone = build(&paper, spec(id), &[], &here).unwrap();
        assert!(alone.cells.iter().all(|c| c.now_value.is_none()));
        assert_round_trips(&alone);
        let today = build(&paper, spec(id), &todays_runs(id), &here).unwrap();
        let filled = today.cells.iter().filter(|c| c.now_value.is_some()).count();
        assert!(filled > 0, "{}: no figure of today", id.name());
        assert_round_trips(&today);
    }
}

/// The parts only some papers have come back too: the CPU speed and its relative figures, the
/// assertions and the stored document today's side comes from.
#[test]
fn the_parts_of_single_papers_round_trip() {
    let view = |id: PaperId| {
        let paper = Paper::load(id).unwrap();
        build(&paper, spec(id), &todays_runs(id), &Here::default()).unwrap()
    };
    let ousterhout = view(PaperId::Ousterhout89);
    assert!(ousterhout.cpu.is_some() && ousterhout.os_relative_to_cpu.is_some());
    assert!(!ousterhout.relative_to_cpu.is_empty());
    assert_round_trips(&ousterhout);
    let chen_bershad = view(PaperId::ChenBershad93);
    assert!(chen_bershad.assertions.iter().any(|a| a.today.is_some()));
    assert!(chen_bershad.today_source.is_some());
    assert_round_trips(&chen_bershad);
    let cota_robles = view(PaperId::CotaRobles99);
    assert!(cota_robles.today_source.is_some());
    assert!(cota_robles
        .cells
        .iter()
        .any(|c| c.table == "mttf" && c.now_value.is_some()));
    assert_round_trips(&cota_robles);
}

#[test]
fn the_catalogue_round_trips() {
    let listed = catalogue().unwrap();
    let text = serde_json::to_string(&listed).unwrap();
    let back: Vec<Listing> = serde_json::from_str(&text).unwrap();
    assert_eq!(back, listed);
}

/// A class the latency run could not measure here (no SCHED_FIFO without privileges) leaves its
/// cells empty with the reason the run recorded, not only that it is absent.
#[test]
fn a_skipped_class_gives_its_reason_in_each_cell() {
    use crate::latency::document::SkippedClass;
    use crate::latency::threads::ClassName;
    let mut run = latency_run(5e6);
    let doc = run.sections.latency.as_mut().unwrap();
    doc.streams.retain(|s| s.class != ClassName::Medium);
    doc.skipped.push(SkippedClass {
        class: ClassName::Medium,
        reason: "SCHED_FIFO needs root here".into(),
    });
    let paper = Paper::load(PaperId::CotaRobles99).unwrap();
    let view = build(
        &paper,
        spec(PaperId::CotaRobles99),
        &[run],
        &Here::default(),
    )
    .unwrap();
    let medium: Vec<_> = view
        .cells
        .iter()
        .filter(|c| c.row.contains("medium-priority"))
        .collect();
    assert!(!medium.is_empty());
    for c in medium {
        let why = c.missing.as_deref().unwrap();
        assert!(
            why.contains("measured no medium class") && why.contains("needs root here"),
            "{why}"
        );
    }
    assert!(view
        .cells
        .iter()
        .any(|c| c.row.contains("high-priority") && c.now_value.is_some()));
}
