use super::super::tests::{doc, stream};
use super::super::Latency;
use crate::latency::compute::{ComputeRun, Work};
use crate::latency::histogram::Histogram;
use crate::latency::stacks::{aggregate, StackSample};
use crate::latency::stage_capture::{StageCaptureInfo, StreamStages};
use crate::latency::stages::{KernelWake, Overhead, StreamStageAcc};
use crate::latency::threads::ClassName;
use crate::results::fixtures::empty_run;
use crate::results::report::{Context, Section};
use std::collections::BTreeMap;

const US: u64 = 1_000;
const MS: u64 = 1_000_000;

/// Two wakes: 2 + 0 + 1 + 40 + 1 us and 2 + 0 + 1 + 2 + 1 us late.
fn stream_stages() -> StreamStages {
    let mut acc = StreamStageAcc::new(2 * MS);
    let mut traced = Histogram::new();
    for (k, thread) in [(0u64, 40 * US), (1, 2 * US)] {
        let d = 10 * MS + k * MS;
        let w = KernelWake {
            tid: 7,
            deadline_ns: d,
            irq_entry_ns: None,
            expiry_ns: d + 2 * US,
            in_softirq: false,
            waking_ns: d + 3 * US,
            switch_in_ns: d + 3 * US + thread,
        };
        acc.record(k * MS, &w, w.switch_in_ns + US);
        traced.record(w.switch_in_ns + US - d);
    }
    StreamStages {
        traced_wakes: 3,
        with_stages: 2,
        incomplete: 1,
        unmatched: 0,
        stages: Some(acc.stages(2 * MS)),
        not_applicable: BTreeMap::from([(
            "softirq".to_string(),
            "timers expired in the hard interrupt".to_string(),
        )]),
        // Every wake was traced: nothing to compare with.
        overhead: Some(Overhead::from(&traced, &Histogram::new(), 10)),
    }
}

fn sample(function: &str, task: &str) -> StackSample {
    StackSample {
        event: "hrtimer_expire_entry".into(),
        offset_ns: 5 * US,
        task: task.into(),
        function: function.into(),
        kernel_stack: vec![function.into(), "do_anonymous_page".into()],
        user_stack: Vec::new(),
    }
}

#[test]
fn stages_causes_and_the_real_pipeline_get_their_tables() {
    let mut d = doc(vec![stream(ClassName::Normal, vec![[1000, 1007, 2]], None)]);
    d.stage_capture = Some(StageCaptureInfo {
        method: "tracefs".into(),
        events: vec!["sched/sched_switch".into()],
        phase_ms: Some(1000),
        lost_events: 0,
    });
    d.streams[0].stages = Some(stream_stages());
    let eps = [
        vec![
            sample("clear_page_erms", "hog"),
            sample("[user] <hog>", "hog"),
        ],
        vec![sample("clear_page_erms", "kswapd0")],
    ];
    d.episodes = Some(Vec::new());
    d.causes = Some(aggregate(eps.iter().map(Vec::as_slice)));
    let mut run = ComputeRun::new(
        600 * US,
        MS,
        Work {
            iterations_per_us: 1.0,
        },
    );
    run.wake(1_200 * US);
    run.buffer(0, Some(1_800 * US));
    run.buffer(MS, None);
    d.streams[0].compute = Some(run.result(2 * MS));
    let mut r = empty_run();
    r.sections.put(d);
    let runs = [r];
    let html = Latency.render(&Context::new(&runs)).unwrap().unwrap();

    let stages = &html[html.find("<table class=\"stages\">").expect("stage table")..];
    let stages = &stages[..stages.find("</table>").unwrap()];
    // interrupt, handler, thread, to_user and total: no softirq stage here.
    assert_eq!(stages.matches("<tr>").count(), 1 + 5, "{stages}");
    assert!(!stages.contains("softirq"));
    // The thread stage's max is the 40 us wake; its share of the mean is 21 of 25 us.
    assert!(stages.contains("<td>thread</td>"));
    assert!(stages.contains(">84 %<"), "{stages}");
    // Beside the table, the stream's stage histograms: one plot (after the whole wake's), its
    // legend naming each stage that has a histogram.
    assert_eq!(html.matches("<svg").count(), 2);
    let plot = &html[html
        .find("where the time of each wake went")
        .expect("stage plot")..];
    assert!(plot.starts_with("where the time"));
    let svg = &html[html.rfind("<svg").unwrap()..];
    for stage in ["interrupt", "handler", "thread", "to_user", "total"] {
        assert!(svg.contains(stage), "no {stage} in the stage plot");
    }
    // A document written before stage histograms were stored shows the table without the plot.
    let mut old = Latency.render(&Context::new(&runs)).unwrap().unwrap();
    old.clear();
    let mut r2 = runs[0].clone();
    let d2 = r2
        .sections
        .get_mut::<crate::latency::document::LatencyDoc>()
        .unwrap();
    let x = d2.streams[0]
        .stages
        .as_mut()
        .unwrap()
        .stages
        .as_mut()
        .unwrap();
    for s in [
        &mut x.interrupt,
        &mut x.handler,
        &mut x.thread,
        &mut x.to_user,
        &mut x.total,
    ] {
        s.histogram = Default::default();
    }
    let runs2 = [r2];
    old.push_str(&Latency.render(&Context::new(&runs2)).unwrap().unwrap());
    assert_eq!(old.matches("<svg").count(), 1);
    assert!(old.contains("<table class=\"stages\">"));
    assert!(html.contains("2 of 3 traced wakes split (1 with events missing)"));
    assert!(html.contains("overhead not measured (2 traced and 0 untraced wakes)"));
    assert!(html.contains("no softirq stage: timers expired in the hard interrupt"));

    let causes = &html[html.find("<table class=\"causes\">").expect("cause table")..];
    let causes = &causes[..causes.find("</table>").unwrap()];
    let first = &causes[causes.find("<tbody>").unwrap()..];
    assert!(
        first[..first.find("</tr>").unwrap()].contains("clear_page_erms"),
        "most samples first: {causes}"
    );
    assert!(causes.contains("66.7 %"));
    assert!(causes.contains("hog, kswapd0"));
    assert!(causes.contains("[user] &lt;hog&gt;"), "escaped");
    assert!(html.contains("3 samples in 0 episode(s)"));

    let compute = &html[html
        .find("<table class=\"compute\">")
        .expect("compute table")..];
    let compute = &compute[..compute.find("</table>").unwrap()];
    assert_eq!(compute.matches("<tr>").count(), 1 + 3, "depths 2, 3, 4");
    assert!(html.contains("1 buffers were dropped"), "{html}");
    assert!(html.contains("c = 600 us"));
}

#[test]
fn no_tables_when_nothing_was_asked_and_a_note_when_no_stack_was_sampled() {
    let mut d = doc(vec![stream(ClassName::Normal, vec![[1000, 1007, 2]], None)]);
    let mut r = empty_run();
    r.sections.put(d.clone());
    let runs = [r];
    let html = Latency.render(&Context::new(&runs)).unwrap().unwrap();
    for t in ["stages", "causes", "compute"] {
        assert!(!html.contains(&format!("<table class=\"{t}\">")), "{t}");
    }
    d.episodes = Some(Vec::new());
    d.causes = Some(Vec::new());
    let mut r = empty_run();
    r.sections.put(d);
    let runs = [r];
    let html = Latency.render(&Context::new(&runs)).unwrap().unwrap();
    assert!(html.contains("No stack was sampled in the 0 episode(s)"));
}
