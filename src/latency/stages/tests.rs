use super::*;

const TID: i32 = 700;
const TIMER: u64 = 0xffff_c900_0001_0000;

fn hard_wake(tracker: &mut Tracker, d: u64) -> Option<KernelWake> {
    let evs = [
        Event::TimerStart {
            pid: TID,
            timer: TIMER,
            soft_expires: d,
        },
        // Someone else's timer and wake on the same CPU change nothing.
        Event::TimerStart {
            pid: 9,
            timer: 0x1234,
            soft_expires: d - 5,
        },
        Event::Expire {
            timer: 0x1234,
            now: d - 4,
            in_softirq: false,
        },
        Event::Waking {
            pid: 9,
            ts: d - 3,
            current: 0,
        },
        Event::SwitchIn {
            next_pid: 9,
            ts: d - 2,
        },
        Event::TimerInterrupt { ts: d + 900 },
        Event::Expire {
            timer: TIMER,
            now: d + 1_000,
            in_softirq: false,
        },
        Event::Waking {
            pid: TID,
            ts: d + 1_400,
            current: 0,
        },
        Event::SwitchIn {
            next_pid: TID,
            ts: d + 4_000,
        },
    ];
    let mut out = None;
    for e in evs {
        if let Some(w) = tracker.feed(e) {
            if w.tid == TID {
                assert!(out.is_none());
                out = Some(w);
            } else {
                // The other thread's wake is complete too; the caller keeps only its own.
                assert_eq!(w.tid, 9);
            }
        }
    }
    out
}

#[test]
fn a_hard_interrupt_wake_is_followed_through_its_events() {
    let mut t = Tracker::default();
    let w = hard_wake(&mut t, 1_000_000).unwrap();
    assert_eq!(
        w,
        KernelWake {
            tid: TID,
            deadline_ns: 1_000_000,
            irq_entry_ns: None,
            expiry_ns: 1_001_000,
            in_softirq: false,
            waking_ns: 1_001_400,
            switch_in_ns: 1_004_000,
        }
    );
    let s = WakeStages::split(&w, 1_004_500).unwrap();
    assert_eq!(
        s,
        WakeStages {
            interrupt: 1_000,
            softirq: None,
            handler: 400,
            thread: 2_600,
            to_user: 500,
        }
    );
    assert_eq!(s.total(), 4_500);
    // The next period works the same way.
    assert!(hard_wake(&mut t, 2_000_000).is_some());
    assert_eq!(t.incomplete(TID), 0);
}

#[test]
fn a_softirq_expiry_splits_off_the_deferred_delay() {
    let mut t = Tracker::default();
    let d = 5_000;
    for e in [
        Event::TimerStart {
            pid: TID,
            timer: TIMER,
            soft_expires: d,
        },
        Event::TimerInterrupt { ts: d + 200 },
        Event::Expire {
            timer: TIMER,
            now: d + 3_200,
            in_softirq: true,
        },
        Event::Waking {
            pid: TID,
            ts: d + 3_300,
            current: 0,
        },
    ] {
        assert!(t.feed(e).is_none());
    }
    let w = t
        .feed(Event::SwitchIn {
            next_pid: TID,
            ts: d + 3_800,
        })
        .unwrap();
    let s = WakeStages::split(&w, d + 4_000).unwrap();
    assert_eq!(s.interrupt, 200);
    assert_eq!(s.softirq, Some(3_000));
    assert_eq!(s.total(), 4_000);
}

#[test]
fn a_broken_chain_is_counted_not_matched() {
    let mut t = Tracker::default();
    // Expired and woken, but the switch-in was lost: the next arming counts it.
    for e in [
        Event::TimerStart {
            pid: TID,
            timer: TIMER,
            soft_expires: 100,
        },
        Event::Expire {
            timer: TIMER,
            now: 110,
            in_softirq: false,
        },
        Event::Waking {
            pid: TID,
            ts: 120,
            current: 0,
        },
        Event::TimerStart {
            pid: TID,
            timer: TIMER,
            soft_expires: 200,
        },
    ] {
        assert!(t.feed(e).is_none());
    }
    assert_eq!(t.incomplete(TID), 1);
    // A switch-in without a wake before it (a preempted thread resuming) is no wake.
    assert!(t
        .feed(Event::SwitchIn {
            next_pid: TID,
            ts: 150
        })
        .is_none());
}

/// The events of an armed, expired wake of `TID` at deadline `d`, woken while `current` ran.
fn woken(t: &mut Tracker, d: u64, current: i32) {
    for e in [
        Event::TimerStart {
            pid: TID,
            timer: TIMER,
            soft_expires: d,
        },
        Event::Expire {
            timer: TIMER,
            now: d + 10,
            in_softirq: false,
        },
        Event::Waking {
            pid: TID,
            ts: d + 20,
            current,
        },
    ] {
        assert!(t.feed(e).is_none());
    }
}

#[test]
fn a_wake_from_idle_without_a_switch_event_ends_at_the_sleep_exit() {
    // What this project's 6.18 kernel records when the idle task gives way: no sched_switch.
    let mut t = Tracker::default();
    woken(&mut t, 1_000, 0);
    let w = t
        .feed(Event::SleepExit {
            pid: TID,
            ts: 1_050,
        })
        .unwrap();
    assert_eq!((w.tid, w.waking_ns, w.switch_in_ns), (TID, 1_020, 1_050));
    let s = WakeStages::split(&w, 1_060).unwrap();
    assert_eq!(
        (s.interrupt, s.handler, s.thread, s.to_user),
        (10, 10, 30, 10)
    );
    // The next arming finds the chain closed, not broken.
    woken(&mut t, 2_000, 0);
    assert_eq!(t.incomplete(TID), 0);
}

#[test]
fn where_the_kernel_reports_the_switch_from_idle_the_sleep_exit_adds_nothing() {
    let mut t = Tracker::default();
    woken(&mut t, 1_000, 0);
    let w = t
        .feed(Event::SwitchIn {
            next_pid: TID,
            ts: 1_040,
        })
        .unwrap();
    assert_eq!(w.switch_in_ns, 1_040);
    assert!(t
        .feed(Event::SleepExit {
            pid: TID,
            ts: 1_050
        })
        .is_none());
    woken(&mut t, 2_000, 0);
    assert_eq!(t.incomplete(TID), 0);
}

#[test]
fn a_missing_switch_after_a_wake_from_another_task_stays_a_broken_chain() {
    // Another task was running: the switch to the thread must exist, so its absence is a loss.
    let mut t = Tracker::default();
    woken(&mut t, 1_000, 4_242);
    assert!(t
        .feed(Event::SleepExit {
            pid: TID,
            ts: 1_050
        })
        .is_none());
    woken(&mut t, 2_000, 0);
    assert_eq!(t.incomplete(TID), 1);
    // A sleep exit of a thread that was never armed is nothing.
    assert!(t.feed(Event::SleepExit { pid: 77, ts: 3_000 }).is_none());
}

#[test]
fn a_thread_caught_before_it_slept_completes_at_its_next_arming() {
    let mut t = Tracker::default();
    for e in [
        Event::TimerStart {
            pid: TID,
            timer: TIMER,
            soft_expires: 1_000,
        },
        Event::Expire {
            timer: TIMER,
            now: 1_010,
            in_softirq: false,
        },
        // Recorded while the thread itself was running: it had not left the CPU.
        Event::Waking {
            pid: TID,
            ts: 1_020,
            current: TID,
        },
        // A later switch-in (after a preemption) is not the end of this wake.
        Event::SwitchIn {
            next_pid: TID,
            ts: 1_500,
        },
    ] {
        assert!(t.feed(e).is_none());
    }
    let w = t
        .feed(Event::TimerStart {
            pid: TID,
            timer: TIMER,
            soft_expires: 2_000,
        })
        .unwrap();
    assert_eq!(w.deadline_ns, 1_000);
    assert_eq!(w.switch_in_ns, 1_020);
    let s = WakeStages::split(&w, 1_100).unwrap();
    assert_eq!(
        (s.interrupt, s.handler, s.thread, s.to_user),
        (10, 10, 0, 80)
    );
    assert_eq!(t.incomplete(TID), 0);
}

#[test]
fn out_of_order_times_are_refused() {
    let k = KernelWake {
        tid: 1,
        deadline_ns: 1_000,
        irq_entry_ns: None,
        expiry_ns: 900,
        in_softirq: false,
        waking_ns: 1_100,
        switch_in_ns: 1_200,
    };
    assert!(WakeStages::split(&k, 1_300).is_none());
    let k = KernelWake {
        expiry_ns: 1_050,
        ..k
    };
    assert!(
        WakeStages::split(&k, 1_100).is_none(),
        "user before switch-in"
    );
    let mut acc = StreamStageAcc::new(1_000_000_000);
    acc.record(0, &k, 1_100);
    assert_eq!(acc.inconsistent, 1);
    assert_eq!(acc.total.hist.count(), 0);
}

proptest::proptest! {
    /// Stages of any wake with times in order add up to the lateness the thread saw.
    #[test]
    fn stages_add_up_to_the_total(d in 0u64..1_000_000_000, gaps in proptest::array::uniform5(0u64..10_000_000), soft in proptest::bool::ANY) {
        let irq = d + gaps[0];
        let expiry = irq + gaps[1];
        let k = KernelWake {
            tid: 1,
            deadline_ns: d,
            irq_entry_ns: soft.then_some(irq),
            expiry_ns: expiry,
            in_softirq: soft,
            waking_ns: expiry + gaps[2],
            switch_in_ns: expiry + gaps[2] + gaps[3],
        };
        let user = k.switch_in_ns + gaps[4];
        let s = WakeStages::split(&k, user).unwrap();
        proptest::prop_assert_eq!(s.total(), user - d);
        proptest::prop_assert_eq!(s.softirq.is_some(), soft);
    }
}

#[test]
fn accumulated_stages_give_percentiles_shares_and_window_maxima() {
    let mut acc = StreamStageAcc::new(3_000_000_000);
    // 3 s of 1 ms periods; the second second has one slow thread stage.
    for i in 0..3000u64 {
        let d = i * 1_000_000;
        let thread = if i == 1500 { 500_000 } else { 2_000 };
        let k = KernelWake {
            tid: 1,
            deadline_ns: d,
            irq_entry_ns: None,
            expiry_ns: d + 1_000,
            in_softirq: false,
            waking_ns: d + 1_500,
            switch_in_ns: d + 1_500 + thread,
        };
        acc.record(d, &k, k.switch_in_ns + 500);
    }
    let s = acc.stages(3_000_000_000);
    assert!(s.softirq.is_none());
    assert_eq!(s.interrupt.dist.count, 3000);
    assert!((s.interrupt.dist.p50_ns as f64 - 1_000.0).abs() < 10.0);
    assert_eq!(s.thread.dist.max_ns, acc.thread.hist.max());
    let w = &s.thread.windows[0];
    assert_eq!(w.window, "1s");
    assert_eq!(w.windows, 3);
    assert!(w.max_ns >= 495_000 && w.min_ns < 2_100, "{w:?}");
    let shares: f64 = [&s.interrupt, &s.handler, &s.thread, &s.to_user]
        .iter()
        .map(|x| x.mean_share)
        .sum();
    assert!((shares - 1.0).abs() < 0.02, "{shares}");
    let json = serde_json::to_value(&s).unwrap();
    let keys: Vec<&String> = json.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["interrupt", "handler", "thread", "to_user", "total"]);
    assert!(json["thread"]["p50_ns"].is_u64());
}

#[test]
fn wakes_are_put_in_the_phase_that_covers_them() {
    let log = PhaseLog {
        switches: vec![
            (100, 110, true),
            (1_000, 1_020, false),
            (2_000, 2_005, true),
        ],
    };
    assert_eq!(log.state_during(50, 60), None, "before the first switch");
    assert_eq!(log.state_during(200, 900), Some(true));
    assert_eq!(log.state_during(900, 1_010), None, "spans a switch");
    assert_eq!(log.state_during(1_030, 1_990), Some(false));
    assert_eq!(log.state_during(3_000, 4_000), Some(true));
}

#[test]
fn overhead_is_the_difference_of_medians() {
    let mut on = Histogram::new();
    let mut off = Histogram::new();
    for _ in 0..100 {
        on.record(5_000);
        off.record(4_000);
    }
    let o = Overhead::from(&on, &off, 800);
    assert!((o.added_p50_ns - 1_000).abs() < 40, "{o:?}");
    assert_eq!(o.events_per_wake, 8.0);
    assert_eq!(o.traced_wakes, 100);
}

#[test]
fn events_are_counted_for_the_thread_whose_wake_they_belong_to() {
    let mut t = Tracker::default();
    hard_wake(&mut t, 1_000_000).unwrap();
    hard_wake(&mut t, 2_000_000).unwrap();
    // Per wake: its timer's start and expiry, the interrupt that expired it, its wake-up and its
    // switch-in. The other thread's four events each time (no interrupt before its expiry) are
    // its own, and a thread never seen arming a timer has none.
    assert_eq!(t.events_of(TID), 10);
    assert_eq!(t.events_of(9), 8);
    t.feed(Event::SwitchIn {
        next_pid: 4242,
        ts: 3_000_000,
    });
    assert_eq!(t.events_of(4242), 0);
}
