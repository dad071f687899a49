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

/// Tables 4-4 and 4-5 take the kernel's block copies and clears from memsim's attribution: their
/// MCPI, its share of the machine's, and (4-5) their data reads in thousands; the columns memsim
/// does not keep per routine stay empty.
#[test]
fn block_operations_fill_tables_4_4_and_4_5_from_the_attribution() {
    use crate::memsim::document::{
        AttributionDoc, CategoryRow, CategoryTable, IdleDropped, Mcpi, StallCycles,
    };
    let mut run = memsim_run();
    let doc = run
        .sections
        .get_mut::<crate::memsim::document::MemsimDoc>()
        .unwrap();
    let machine = doc.machines[0].name.clone();
    let total_mcpi = doc.machines[0].mcpi.total.total;
    assert!(total_mcpi > 0.0);
    let block_mcpi = total_mcpi / 4.0;
    doc.attribution = Some(AttributionDoc {
        symbols: "made up".into(),
        idle_excluded: false,
        idle_dropped: IdleDropped {
            instructions: 0,
            reads: 0,
            writes: 0,
        },
        machines: vec![CategoryTable {
            name: machine,
            non_idle_instructions: 1_000_000,
            categories: vec![CategoryRow {
                name: "block-copy".into(),
                instructions: 50_000,
                reads: 57_000,
                writes: 40_000,
                instruction_share: 0.05,
                stall_cycles: StallCycles::of(&[0, 1000, 0, 0, 0]),
                mcpi: Mcpi {
                    total: block_mcpi,
                    ..Default::default()
                },
                own_mcpi: 0.02,
            }],
        }],
    });
    let id = PaperId::ChenBershad93;
    let paper = Paper::load(id).unwrap();
    let view = build(&paper, spec(id), &[run], &Here::default()).unwrap();
    let cell = |table: &str, column: &str| {
        view.cells
            .iter()
            .find(|c| c.table == table && c.column == column && c.now_value.is_some())
            .unwrap_or_else(|| panic!("no figure of today in {table} {column}"))
            .now_value
            .unwrap()
    };
    for table in ["4-4", "4-5"] {
        assert!((cell(table, "u_mcpi") - block_mcpi).abs() < 1e-12);
        assert!((cell(table, "u_share") - 25.0).abs() < 1e-9);
    }
    assert_eq!(cell("4-5", "u_cacheable"), 57.0);
    assert!(view
        .cells
        .iter()
        .filter(|c| c.table == "4-5" && c.column == "u_memory")
        .all(|c| c.now_value.is_none()));
}

/// Table 4-2 is assertion 3's competition figures: the instruction and data stalls the mixed trace
/// adds over its user and kernel references simulated apart, for the machine that was judged.
#[test]
fn competition_fills_table_4_2_from_the_third_assertion() {
    use crate::memsim::document::{AssertionDoc, AssertionVerdict};
    let mut run = memsim_run();
    let doc = run
        .sections
        .get_mut::<crate::memsim::document::MemsimDoc>()
        .unwrap();
    doc.assertions
        .as_mut()
        .unwrap()
        .assertions
        .push(AssertionDoc {
            number: 3,
            assertion: "made up".into(),
            implication: "none".into(),
            verdict: AssertionVerdict::DoesNotHold,
            detail: "made up".into(),
            figures: [
                ("competition_mcpi_icache".to_string(), Some(0.01)),
                ("competition_mcpi_dcache".to_string(), Some(0.003)),
                ("competition_mcpi_cache".to_string(), Some(0.013)),
            ]
            .into(),
        });
    let id = PaperId::ChenBershad93;
    let paper = Paper::load(id).unwrap();
    let view = build(&paper, spec(id), &[run.clone()], &Here::default()).unwrap();
    let today = |view: &PaperDoc, column: &str| {
        view.cells
            .iter()
            .find(|c| c.table == "4-2" && c.column == column)
            .and_then(|c| c.now_value)
    };
    assert_eq!(today(&view, "u_inst"), Some(0.01));
    assert_eq!(today(&view, "u_data"), Some(0.003));
    assert_eq!(today(&view, "u_total"), Some(0.013));
    assert_eq!(today(&view, "m_total"), None);
    // Judged on another machine: not this one's figures.
    run.sections
        .get_mut::<crate::memsim::document::MemsimDoc>()
        .unwrap()
        .assertions
        .as_mut()
        .unwrap()
        .machine = "other".into();
    let view = build(&paper, spec(id), &[run], &Here::default()).unwrap();
    assert_eq!(today(&view, "u_inst"), None);
}

/// A class the latency run could not measure here (no SCHED_FIFO without privileges) leaves its
/// cells empty with the reason the run recorded, not only that it is absent.
#[test]
fn a_skipped_class_gives_its_reason_in_each_cell() {
    use crate::latency::document::SkippedClass;
    use crate::latency::threads::ClassName;
    let mut run = latency_run(5e6);
    let doc = run
        .sections
        .get_mut::<crate::latency::document::LatencyDoc>()
        .unwrap();
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
