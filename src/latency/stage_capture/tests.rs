use super::*;
use crate::latency::buffer::BufferConfig;
use crate::latency::threads::{run_streams, Class, Path, Plan, StreamSpec};
use crate::meter::placement;

fn is_root() -> bool {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// A FIFO 80 thread that holds `cpu` for `ms` after `after_ms`: it keeps interrupts on, so the
/// delay it causes must land in the thread stage of the classes below it.
fn hog(cpu: usize, after_ms: u64, ms: u64) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(after_ms));
        placement::pin_current_thread(cpu).unwrap();
        placement::set_fifo(80).unwrap();
        let end = std::time::Instant::now() + std::time::Duration::from_millis(ms);
        while std::time::Instant::now() < end {
            std::hint::spin_loop();
        }
    })
}

#[test]
fn real_wakes_split_into_stages_that_add_up_and_a_hog_lands_in_the_thread_stage() {
    if !is_root() || placement::check_fifo_priority(90).is_err() {
        eprintln!("skipped: needs root and SCHED_FIFO");
        return;
    }
    let cpu = *placement::usable_cpus().last().unwrap();
    let specs: Vec<StreamSpec> = [("high", Some(90)), ("normal", None)]
        .into_iter()
        .map(|(name, fifo)| StreamSpec {
            class: Class { name, fifo },
            path: Path::Timer,
            cpu,
        })
        .collect();
    let taps: StageTaps = specs.iter().map(|_| Some(StageTap::new())).collect();
    let period = 1_000_000;
    let periods = 3_000;
    let start = monotonic_ns() + 50_000_000;
    let capture = StageCapture::start(&[cpu], &taps, &[cpu, cpu], period * periods, start).unwrap();
    let plan = Plan {
        period_ns: period,
        periods,
        start_ns: start,
        buffers: BufferConfig::default_table(0.5),
        stop: Arc::new(AtomicBool::new(false)),
        trigger: None,
        stages: Some(Arc::new(taps)),
    };
    let h = hog(cpu, 400, 30);
    let results = run_streams(&specs, &plan);
    h.join().unwrap();
    let report = capture.finish().unwrap();
    assert!(report.events.iter().any(|e| e == "sched/sched_switch"));
    for (r, s) in results.iter().zip(&report.streams) {
        assert!(r.error.is_none(), "{:?}", r.error);
        let s = s.as_ref().unwrap();
        let st = s.stages.as_ref().expect("no stages");
        assert!(s.traced_wakes > 500, "{s:?}");
        assert!(s.overhead.untraced_wakes > 500, "{:?}", s.overhead);
        // Nearly every traced wake is matched (a few straddle the phase switches).
        assert!(
            s.with_stages * 10 >= s.traced_wakes * 9,
            "{} of {}",
            s.with_stages,
            s.traced_wakes
        );
        assert!(s.incomplete * 100 <= s.traced_wakes, "{s:?}");
        assert!(
            s.overhead.events_per_wake >= 2.0 && s.overhead.events_per_wake < 50.0,
            "{:?}",
            s.overhead
        );
        // The stages of the matched wakes describe the same wakes the thread measured.
        assert!(st.total.max_ns <= r.acct.raw.max() + r.acct.raw.max() / 100 + 1_000);
        let shares = st.interrupt.mean_share
            + st.handler.mean_share
            + st.thread.mean_share
            + st.to_user.mean_share
            + st.softirq.as_ref().map_or(0.0, |x| x.mean_share);
        assert!((shares - 1.0).abs() < 0.05, "{shares}");
        assert!(st.softirq.is_none() == s.not_applicable.contains_key("softirq"));
    }
    let normal = report.streams[1].as_ref().unwrap().stages.as_ref().unwrap();
    let high = report.streams[0].as_ref().unwrap().stages.as_ref().unwrap();
    assert!(
        normal.thread.max_ns > 20_000_000,
        "the hog's 30 ms is not in the thread stage: {:?}",
        normal.thread
    );
    assert!(
        normal.interrupt.p90_ns < 1_000_000,
        "{:?}",
        normal.interrupt
    );
    // (Not the maximum: on a shared VM the host may stall the CPU at any time.)
    assert!(
        high.thread.p99_ns < 1_000_000,
        "FIFO 90 should run over the FIFO 80 hog: {:?}",
        high.thread
    );
}

#[test]
fn the_tap_hands_over_wake_times_by_period() {
    let tap = StageTap::new();
    tap.begin(1_000, 100);
    assert!(tap.tid() > 0);
    assert_eq!(tap.schedule(), (1_000, 100));
    assert_eq!(tap.wake_of(3), None);
    tap.record(3, 1_350);
    assert_eq!(tap.wake_of(3), Some(1_350));
    // A slot reused RING periods later no longer answers for the old period.
    tap.record(3 + RING as u64, 9_999);
    assert_eq!(tap.wake_of(3), None);
}

#[test]
fn filters_name_every_thread() {
    assert_eq!(any_of("pid", &[3, 4]), "pid == 3 || pid == 4");
}
