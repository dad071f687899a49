use super::*;
use crate::meter::counts::LOST_TIME_NS;
use crate::results::model::{Params, SampleInterference, Status, Unit};

fn quiet() -> Evidence {
    Evidence {
        seconds: 30.0,
        others_share: Some(0.01),
        runnable_others: Some(0.0),
        steal_share: Some(0.0),
        cpu_bound_samples: 100,
        disturbed_samples: 2,
        ..Evidence::default()
    }
}

#[test]
fn a_quiet_machine_is_quiet() {
    let (v, reasons) = judge(1, &quiet());
    assert_eq!(v, Verdict::Quiet);
    assert!(reasons.is_empty(), "{reasons:?}");
}

#[test]
fn other_processes_on_the_cpu_either_side_of_the_threshold() {
    let mut e = quiet();
    e.others_share = Some(OTHERS_SHARE - 0.001);
    assert_eq!(judge(1, &e).0, Verdict::Quiet);
    e.others_share = Some(OTHERS_SHARE);
    e.takers = vec![Taker {
        pid: 77,
        command: "sh".into(),
        cpu_ms: 1500.0,
    }];
    let (v, reasons) = judge(1, &e);
    assert_eq!(v, Verdict::Busy);
    assert_eq!(reasons.len(), 1, "{reasons:?}");
    assert!(
        reasons[0].contains("10 % of CPU 1's time: sh (pid 77) 1.50 s"),
        "{}",
        reasons[0]
    );
    // Unreadable tasks are no evidence either way.
    e.others_share = None;
    assert_eq!(judge(1, &e).0, Verdict::Quiet);
}

#[test]
fn a_taker_with_a_long_command_line_is_named_by_its_start() {
    let mut e = quiet();
    e.others_share = Some(0.5);
    let long = format!(
        "rustc --crate-name osmeter {}",
        "--cfg feature=\"x\" ".repeat(40)
    );
    e.takers = (0..5)
        .map(|pid| Taker {
            pid,
            command: long.clone(),
            cpu_ms: 900.0,
        })
        .collect();
    let (_, reasons) = judge(1, &e);
    let quoted = reasons[0].matches("rustc --crate-name osmeter").count();
    assert_eq!(quoted, 5, "{}", reasons[0]);
    // Five takers, each named by the start of its command line, not by hundreds of columns.
    assert!(reasons[0].chars().count() < 5 * 80, "{}", reasons[0]);
    assert!(reasons[0].contains("... (pid 0)"), "{}", reasons[0]);
    assert_eq!(shortened("sh -c true", TAKER_NAME), "sh -c true");
}

#[test]
fn disturbed_samples_either_side_of_the_threshold_and_too_few_to_say() {
    let mut e = quiet();
    e.disturbed_samples = 24;
    assert_eq!(judge(0, &e).0, Verdict::Quiet);
    e.disturbed_samples = 25;
    let (v, reasons) = judge(0, &e);
    assert_eq!(v, Verdict::Busy);
    assert!(reasons[0].starts_with("25 of 100 samples"), "{reasons:?}");
    // All of nine samples disturbed: too few to call.
    e.cpu_bound_samples = MIN_SAMPLES - 1;
    e.disturbed_samples = MIN_SAMPLES - 1;
    assert_eq!(judge(0, &e).0, Verdict::Quiet);
}

#[test]
fn stolen_time_either_side_of_the_threshold() {
    let mut e = quiet();
    e.steal_share = Some(STEAL_SHARE - 0.001);
    assert_eq!(judge(0, &e).0, Verdict::Quiet);
    e.steal_share = Some(STEAL_SHARE);
    let (v, reasons) = judge(0, &e);
    assert_eq!(v, Verdict::Busy);
    assert!(reasons[0].contains("hypervisor stole 5 %"), "{reasons:?}");
}

#[test]
fn only_cpu_bound_figures_count_their_preempted_samples() {
    let fig = |role: Role, switches: u64| {
        let mut m = Measurement::not_measured(
            "x.y",
            Params::new(),
            Unit::Nanoseconds,
            Status::Ok,
            String::new(),
        );
        m.role = Some(role);
        m.interference.csw_involuntary = switches * 3;
        m.interference.per_sample = vec![
            SampleInterference {
                csw_involuntary: switches,
                ..Default::default()
            };
            3
        ];
        m
    };
    let mut e = Evidence::default();
    // A same-CPU two-party OS figure is preempted by its own partner: not counted as disturbed.
    e.count_samples(&[
        fig(Role::Os, 5),
        fig(Role::CpuReference, 1),
        fig(Role::Hardware, 0),
    ]);
    assert_eq!((e.cpu_bound_samples, e.disturbed_samples), (6, 3));
    assert_eq!(e.csw_involuntary, 18);
    // Samples taken again count as seen, and as disturbed as far as they lost time.
    let mut retook = fig(Role::Hardware, 0);
    retook.interference.retaken_samples = 2;
    retook.interference.retaken_lost_time = 1;
    let mut e = Evidence::default();
    e.count_samples(&[retook]);
    assert_eq!((e.cpu_bound_samples, e.disturbed_samples), (5, 1));
}

#[test]
fn a_sample_is_disturbed_by_the_time_it_waited_not_by_being_preempted_at_all() {
    let sample = |switches: u64, waited: Option<u64>, steal_ms: f64| SampleInterference {
        csw_involuntary: switches,
        run_delay_ns: waited,
        steal_ms,
        ..Default::default()
    };
    // Daemons pushed onto the measuring CPU by a hog on the other one: preempted for 50 us.
    assert!(sample(3, Some(50_000), 0.0).preempted());
    assert!(!sample(3, Some(50_000), 0.0).lost_time());
    // A second job sharing the CPU: a scheduler slice or more.
    assert!(sample(1, Some(LOST_TIME_NS), 0.0).lost_time());
    // Without schedstat any preemption counts; stolen time always does.
    assert!(sample(1, None, 0.0).lost_time());
    assert!(!sample(0, None, 0.0).lost_time());
    assert!(sample(0, Some(0), 10.0).lost_time());
    // A delta of two readings waits as long as the thread waited between them.
    let before = sample(0, Some(7_000_000), 0.0);
    let after = sample(2, Some(9_500_000), 0.0);
    assert_eq!(after.delta(&before).run_delay_ns, Some(2_500_000));
    assert_eq!(after.delta(&sample(0, None, 0.0)).run_delay_ns, None);
}

#[test]
fn a_busy_run_says_it_in_one_paragraph_naming_the_cpu_and_the_way_out() {
    let mut e = quiet();
    e.others_share = Some(0.5);
    let (verdict, reasons) = judge(1, &e);
    let m = Machine {
        verdict,
        cpu: 1,
        cpu_choice: CpuChoice {
            chosen: true,
            busy: vec![CpuBusy { cpu: 0, busy: 0.6 }, CpuBusy { cpu: 1, busy: 0.5 }],
        },
        reasons,
        evidence: e,
    };
    let text = m.text();
    assert!(
        text.starts_with(
            "Machine: BUSY. Measured on CPU 1 (the least busy: CPU 0 60 %, CPU 1 50 %)"
        ),
        "{text}"
    );
    assert!(
        text.contains("--force") && text.contains("--include-busy"),
        "{text}"
    );
    assert!(
        !text.contains("\n\n") && text.lines().all(|l| l.len() <= 100),
        "{text}"
    );
    let quiet = Machine {
        verdict: Verdict::Quiet,
        reasons: Vec::new(),
        cpu_choice: CpuChoice {
            chosen: false,
            busy: Vec::new(),
        },
        ..m
    };
    assert_eq!(
        quiet.text(),
        "Machine: quiet. Measured on CPU 1 (given with --cpu), other processes 50 % of it.\n"
    );
}

#[test]
fn the_least_busy_cpu_is_chosen_and_of_equals_the_last() {
    let choice = |busy: &[f64]| CpuChoice {
        chosen: true,
        busy: busy
            .iter()
            .enumerate()
            .map(|(cpu, &busy)| CpuBusy { cpu, busy })
            .collect(),
    };
    assert_eq!(choice(&[0.1, 0.5]).least_busy(), Some(0));
    assert_eq!(choice(&[0.5, 0.1]).least_busy(), Some(1));
    assert_eq!(choice(&[0.0, 0.0]).least_busy(), Some(1));
    assert_eq!(choice(&[]).least_busy(), None);
}
