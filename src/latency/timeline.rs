//! The late wakes of a latency run as a timeline (`export --format trace-event`). Each CPU has two
//! tracks. On `late wakes`, every wake that cause capture kept (`--trace`) is a slice from its
//! deadline to the wake, with the wake's own stages nested in it where the kernel's events show
//! them (interrupt, handler, thread, to_user: the stages of `--stages`). On `what ran`, what the
//! CPU did meanwhile, stretch by stretch: the tasks that held it (scheduling), and nested in them
//! the interrupts and timers, and the deferred work (softirqs, work items).

use super::document::LatencyDoc;
use super::trace::{field, Episode, Event, Mark};
use crate::results::timeline::{Slice, Timeline, Track};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One stretch of an episode, from the deadline on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Span {
    pub kind: SpanKind,
    /// The task's command, the interrupt (`irq 11 virtio0`), softirq, timer or work function.
    pub name: String,
    pub start_ns: u64,
    pub dur_ns: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SpanKind {
    /// A task held the CPU (from one switch to the next).
    Task,
    /// A device interrupt's handler.
    Interrupt,
    /// An hrtimer's expiry function (in the timer interrupt, or its softirq).
    Timer,
    Softirq,
    /// A workqueue item.
    Work,
    /// One of the late wake's own stages (see [`wake_stages`]).
    Stage,
}

impl SpanKind {
    /// The stage of a wake it stands for, as the slice's category.
    pub fn stage(self) -> &'static str {
        match self {
            SpanKind::Task => "scheduling",
            SpanKind::Interrupt | SpanKind::Timer => "interrupt",
            SpanKind::Softirq | SpanKind::Work => "deferred work",
            SpanKind::Stage => "stage",
        }
    }

    fn label(self, name: &str) -> String {
        match self {
            SpanKind::Task => format!("ran: {name}"),
            SpanKind::Interrupt => name.to_string(),
            SpanKind::Timer => format!("timer {name}"),
            SpanKind::Softirq => format!("softirq {name}"),
            SpanKind::Work => format!("work {name}"),
            SpanKind::Stage => name.to_string(),
        }
    }
}

/// What each stage of a wake spans, as `--stages` defines them (docs/latency.md).
const STAGES: [(&str, &str); 4] = [
    ("interrupt", "from the deadline to the timer's expiry"),
    ("handler", "from the expiry to the wake-up"),
    ("thread", "from the wake-up to running"),
    ("to_user", "from running to the program's own clock read"),
];

/// The command name of a measuring thread as the kernel's events show it: the name it was given
/// (`threads.rs`), cut to the 15 bytes a task's comm holds.
fn thread_comm(class: &str, path: &str) -> String {
    let mut comm = format!("{}{class}-{path}", super::threads::THREAD_PREFIX);
    comm.truncate(15);
    comm
}

/// The late wake's own stages from the events on its CPU between the deadline and the wake: the
/// timer's expiry (`hrtimer_wakeup`, in which the thread is woken), the thread's wake-up and its
/// switch in. A stage whose ends the window lacks is left out (a thread-to-thread path has no timer,
/// a wake-up from another CPU is not on this one's events).
pub fn wake_stages(mark: &Mark, on_cpu: &[&Event]) -> Vec<Span> {
    let comm = thread_comm(mark.class, mark.path);
    let (from, to) = (mark.reference_ns, mark.wake_ns);
    let mut open_expiry = None;
    let mut expiry = None;
    let mut woken = None;
    let mut running = None;
    for e in on_cpu.iter().filter(|e| e.ts_ns > from && e.ts_ns <= to) {
        match e.name.as_str() {
            "hrtimer_expire_entry" if field(&e.detail, "function") == Some("hrtimer_wakeup") => {
                open_expiry = Some(e.ts_ns);
            }
            "hrtimer_expire_exit" => open_expiry = None,
            "sched_wakeup" if field(&e.detail, "comm") == Some(comm.as_str()) => {
                // The wake-up inside a timer's expiry is that timer's.
                expiry = open_expiry;
                woken = Some(e.ts_ns);
                running = None;
            }
            "sched_switch"
                if woken.is_some()
                    && running.is_none()
                    && field(&e.detail, "next_comm") == Some(comm.as_str()) =>
            {
                running = Some(e.ts_ns);
            }
            _ => {}
        }
    }
    let bounds = [Some(from), expiry, woken, running, Some(to)];
    STAGES
        .iter()
        .zip(bounds.windows(2))
        .filter_map(|(&(name, _), ends)| {
            let (start, end) = (ends[0]?, ends[1]?);
            Some(Span {
                kind: SpanKind::Stage,
                name: name.to_string(),
                start_ns: start - from,
                dur_ns: end.saturating_sub(start),
            })
        })
        .collect()
}

/// The run's late wakes on a timeline, or why there is none to draw.
pub fn timeline(doc: &LatencyDoc) -> Result<Timeline, String> {
    let Some(episodes) = &doc.episodes else {
        return Err(
            "it was measured without --trace, which keeps the kernel's events around \
                    each late wake (`osmeter latency --trace --threshold 100us ...`)"
                .into(),
        );
    };
    if episodes.is_empty() {
        return Err("no wake was later than the --trace threshold, so none was kept".into());
    }
    let timed: Vec<(&Episode, u64)> = episodes
        .iter()
        .filter_map(|e| Some((e, e.deadline_ns?)))
        .collect();
    let Some(origin) = timed.iter().map(|&(_, at)| at).min() else {
        return Err(format!(
            "its {} late wakes were stored before osmeter kept their times; measure again \
             with --trace",
            episodes.len()
        ));
    };
    // Per CPU: the wakes with their stages, and what ran.
    let mut by_cpu: BTreeMap<usize, (Vec<Slice>, Vec<Slice>)> = BTreeMap::new();
    for (e, at) in timed {
        let start = at - origin;
        let (wakes, ran) = by_cpu.entry(e.cpu).or_default();
        wakes.push(Slice {
            name: format!(
                "{}/{} {:.1} us late",
                e.class,
                e.path,
                e.lateness_ns as f64 / 1e3
            ),
            category: "late wake".into(),
            start_ns: start,
            dur_ns: e.lateness_ns,
            args: BTreeMap::from([
                ("verdict".to_string(), e.verdict.clone()),
                ("events".to_string(), e.events.to_string()),
                (
                    "longest gap (us)".to_string(),
                    format!("{:.1}", e.longest_gap_ns as f64 / 1e3),
                ),
            ]),
        });
        for s in &e.timeline {
            let slice = Slice {
                name: s.kind.label(&s.name),
                category: s.kind.stage().into(),
                start_ns: start + s.start_ns,
                dur_ns: s.dur_ns,
                args: STAGES
                    .iter()
                    .find(|(name, _)| s.kind == SpanKind::Stage && *name == s.name)
                    .map(|(_, spans)| BTreeMap::from([("spans".to_string(), spans.to_string())]))
                    .unwrap_or_default(),
            };
            if s.kind == SpanKind::Stage {
                wakes.push(slice);
            } else {
                ran.push(slice);
            }
        }
    }
    let mut tracks = Vec::new();
    for (cpu, (wakes, ran)) in by_cpu {
        let group = format!("CPU {cpu}");
        tracks.push(Track {
            group: group.clone(),
            name: "late wakes".into(),
            slices: wakes,
        });
        tracks.push(Track {
            group,
            name: "what ran".into(),
            slices: ran,
        });
    }
    Ok(Timeline { tracks })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::latency::trace::{parse, summarise};

    /// Like the trace of trace.rs's tests: an interrupt and a softirq on the idle CPU, then a hog
    /// takes it; the thread's timer expires 1.5 ms after its deadline and wakes it, and it runs
    /// when the hog gives the CPU up.
    const TRACE: &str = "\
          <idle>-0       [001] d..2.   10.000000: sched_switch: prev_comm=lat-normal-time prev_pid=100 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
          <idle>-0       [001] d.h1.   10.000900: irq_handler_entry: irq=11 name=virtio0
          <idle>-0       [001] d.h1.   10.000920: irq_handler_exit: irq=11 ret=handled
          <idle>-0       [001] ..s1.   10.000930: softirq_entry: vec=3 [action=NET_RX]
          <idle>-0       [001] ..s1.   10.000960: softirq_exit: vec=3 [action=NET_RX]
          <idle>-0       [001] d..2.   10.000970: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=hog next_pid=200 next_prio=120
             hog-200     [001] d.h1.   10.002000: hrtimer_expire_entry: hrtimer=0000 function=hrtimer_wakeup now=1
             hog-200     [001] d.h2.   10.002002: sched_wakeup: comm=lat-normal-time pid=100 prio=120 target_cpu=001
             hog-200     [001] d.h1.   10.002004: hrtimer_expire_exit: hrtimer=0000
             hog-200     [001] ....1   10.002100: workqueue_execute_start: work struct 00000000deadbeef: function vmstat_update
             hog-200     [001] ....1   10.002150: workqueue_execute_end: work struct 00000000deadbeef: function vmstat_update
             hog-200     [001] d..2.   10.004970: sched_switch: prev_comm=hog prev_pid=200 prev_prio=120 prev_state=R ==> next_comm=lat-normal-time next_pid=100 next_prio=120
";

    fn episode() -> Episode {
        let mark = Mark {
            cpu: 1,
            class: "normal",
            path: "timer",
            reference_ns: 10_000_500_000,
            wake_ns: 10_005_000_000,
        };
        summarise(&mark, &parse(TRACE))
    }

    fn span(kind: SpanKind, name: &str, start_ns: u64, dur_ns: u64) -> Span {
        Span {
            kind,
            name: name.into(),
            start_ns,
            dur_ns,
        }
    }

    #[test]
    fn an_episode_keeps_each_stretch_from_its_deadline() {
        let e = episode();
        assert_eq!(e.deadline_ns, Some(10_000_500_000));
        let mut ran: Vec<Span> = e
            .timeline
            .iter()
            .filter(|s| s.kind != SpanKind::Stage)
            .cloned()
            .collect();
        ran.sort_by_key(|s| s.start_ns);
        assert_eq!(
            ran,
            vec![
                // Idle from the deadline (the switch to it came before) to the hog's switch.
                span(SpanKind::Task, "swapper/1", 0, 470_000),
                span(SpanKind::Interrupt, "irq 11 virtio0", 400_000, 20_000),
                span(SpanKind::Softirq, "NET_RX", 430_000, 30_000),
                span(SpanKind::Task, "hog", 470_000, 4_000_000),
                span(SpanKind::Timer, "hrtimer_wakeup", 1_500_000, 4_000),
                span(SpanKind::Work, "vmstat_update", 1_600_000, 50_000),
                span(SpanKind::Task, "lat-normal-time", 4_470_000, 30_000),
            ]
        );
        // The stretches of tasks add up to the lateness, as `ran` does.
        let tasks: u64 = ran
            .iter()
            .filter(|s| s.kind == SpanKind::Task)
            .map(|s| s.dur_ns)
            .sum();
        assert_eq!(tasks, e.lateness_ns);
        // The wake's own stages, end to end from the deadline to the wake.
        let stages: Vec<Span> = e
            .timeline
            .iter()
            .filter(|s| s.kind == SpanKind::Stage)
            .cloned()
            .collect();
        assert_eq!(
            stages,
            vec![
                span(SpanKind::Stage, "interrupt", 0, 1_500_000),
                span(SpanKind::Stage, "handler", 1_500_000, 2_000),
                span(SpanKind::Stage, "thread", 1_502_000, 2_968_000),
                span(SpanKind::Stage, "to_user", 4_470_000, 30_000),
            ]
        );
    }

    #[test]
    fn a_stage_whose_events_are_missing_is_left_out() {
        let mark = Mark {
            cpu: 1,
            class: "normal",
            path: "futex",
            reference_ns: 10_000_500_000,
            wake_ns: 10_005_000_000,
        };
        // The futex thread's comm is another, and no timer of its wakes it: nothing is claimed.
        assert!(wake_stages(&mark, &parse(TRACE).iter().collect::<Vec<_>>()).is_empty());
        assert_eq!(thread_comm("medium", "eventfd"), "lat-medium-even");
        assert_eq!(thread_comm("high", "timer"), "lat-high-timer");
    }

    #[test]
    fn late_wakes_are_slices_on_their_cpus_track_with_their_stages_inside() {
        let mut doc = LatencyDoc::for_tests(vec![]);
        let mut second = episode();
        second.cpu = 0;
        second.deadline_ns = Some(10_000_500_000 + 2_000_000_000);
        doc.episodes = Some(vec![second, episode()]);
        let t = timeline(&doc).unwrap();
        let tracks: Vec<(&str, &str)> = t
            .tracks
            .iter()
            .map(|t| (t.group.as_str(), t.name.as_str()))
            .collect();
        assert_eq!(
            tracks,
            [
                ("CPU 0", "late wakes"),
                ("CPU 0", "what ran"),
                ("CPU 1", "late wakes"),
                ("CPU 1", "what ran")
            ]
        );
        let wakes = &t.tracks[2].slices;
        assert_eq!(wakes[0].name, "normal/timer 4500.0 us late");
        assert_eq!((wakes[0].start_ns, wakes[0].dur_ns), (0, 4_500_000));
        assert_eq!(wakes[0].category, "late wake");
        let stages: Vec<&str> = wakes[1..].iter().map(|s| s.name.as_str()).collect();
        assert_eq!(stages, ["interrupt", "handler", "thread", "to_user"]);
        assert!(wakes[1..].iter().all(|s| s.category == "stage"));
        assert_eq!(wakes[3].args["spans"], "from the wake-up to running");
        let ran: Vec<(&str, &str)> = t.tracks[3]
            .slices
            .iter()
            .map(|s| (s.name.as_str(), s.category.as_str()))
            .collect();
        for want in [
            ("irq 11 virtio0", "interrupt"),
            ("timer hrtimer_wakeup", "interrupt"),
            ("softirq NET_RX", "deferred work"),
            ("work vmstat_update", "deferred work"),
            ("ran: hog", "scheduling"),
        ] {
            assert!(ran.contains(&want), "{want:?} in {ran:?}");
        }
        // Everything lies inside its wake.
        let inside = |s: &Slice| s.start_ns + s.dur_ns <= 4_500_000;
        assert!(wakes.iter().chain(&t.tracks[3].slices).all(inside));
        // The CPU 0 wake came 2 s after the first deadline of the run.
        assert_eq!(t.tracks[0].slices[0].start_ns, 2_000_000_000);
    }

    #[test]
    fn a_run_without_trace_or_without_times_says_what_to_do() {
        let mut doc = LatencyDoc::for_tests(vec![]);
        assert!(timeline(&doc).unwrap_err().contains("--trace"));
        doc.episodes = Some(vec![]);
        assert!(timeline(&doc).unwrap_err().contains("no wake was later"));
        let mut old = episode();
        old.deadline_ns = None;
        old.timeline.clear();
        doc.episodes = Some(vec![old]);
        assert!(timeline(&doc).unwrap_err().contains("measure again"));
    }

    #[test]
    fn only_the_timeline_formats_take_a_latency_run_and_the_report_names_the_export() {
        use crate::results::export::{refusal, Format};
        use crate::results::report::Section;
        let mut run = crate::results::fixtures::empty_run();
        run.id = "6750a000-1a7e".into();
        let mut doc = LatencyDoc::for_tests(vec![]);
        doc.episodes = Some(vec![episode()]);
        run.sections.put(doc);
        assert_eq!(refusal(Format::TraceEvent, &run), None);
        assert_eq!(refusal(Format::Json, &run), None);
        let why = refusal(Format::Pprof, &run).unwrap();
        assert_eq!(
            why,
            "--format pprof needs profiles (`osmeter run --profile` or `osmeter stat --profile`), \
             which runs of kind run, stat have; run 6750a000-1a7e is of kind latency, whose formats are json, csv, markdown, \
             openmetrics, trace-event"
        );
        assert!(refusal(Format::Folded, &run).is_some());
        let runs = [run];
        let ctx = crate::results::report::Context::new(&runs);
        let html = crate::latency::html::Latency.render(&ctx).unwrap().unwrap();
        assert!(
            html.contains("osmeter export 6750a000-1a7e --format trace-event"),
            "{html}"
        );
    }
}
