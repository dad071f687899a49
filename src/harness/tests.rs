//! The harness's arithmetic checked against a fake clock and fake counters: no timing noise.

use super::*;
use crate::meter::{CounterReading, EventCount, InterferenceReading, Scope};
use std::cell::Cell;
use std::rc::Rc;

/// State shared between the fake sensors and a fake workload: the workload advances time and
/// counters exactly as a real operation of known cost would.
#[derive(Default)]
struct FakeWorld {
    now: Cell<u64>,
    kernel_instr: Cell<u64>,
    faults: Cell<u64>,
    steal: Cell<f64>,
    /// Counters attached: each operation then costs `attach_tax_ns` more, as perf events do at
    /// context switches.
    counting: Cell<bool>,
    attach_tax_ns: Cell<u64>,
}

struct FakeSensors {
    world: Rc<FakeWorld>,
    /// Reports this cut once it has been asked this many times (a Ctrl-C between two samples).
    cut_after: Option<(usize, Cut)>,
    cut_checks: usize,
    /// Cost of one clock read, ns.
    clock_cost: u64,
    /// Kernel instructions spent reading the counters.
    read_cost_instr: u64,
}

impl Sensors for FakeSensors {
    fn now_ns(&mut self) -> u64 {
        let t = self.world.now.get();
        self.world.now.set(t + self.clock_cost);
        t
    }
    fn counters(&mut self) -> CounterReading {
        let w = &self.world;
        w.kernel_instr
            .set(w.kernel_instr.get() + self.read_cost_instr);
        CounterReading(vec![
            EventCount {
                scope: Scope::Kernel,
                name: "instructions",
                value: w.kernel_instr.get(),
                enabled_ns: w.now.get(),
                running_ns: w.now.get(),
            },
            EventCount {
                scope: Scope::Software,
                name: "page-faults",
                value: w.faults.get(),
                enabled_ns: w.now.get(),
                running_ns: w.now.get(),
            },
        ])
    }
    fn interference(&mut self) -> InterferenceReading {
        InterferenceReading {
            steal_ms: self.world.steal.get(),
            ..Default::default()
        }
    }
    fn set_counting(&mut self, on: bool) {
        self.world.counting.set(on);
    }
    fn cut(&mut self) -> Option<Cut> {
        self.cut_checks += 1;
        self.cut_after
            .filter(|(after, _)| self.cut_checks > *after)
            .map(|(_, c)| c)
    }
}

/// An operation costing `ns` and `instr` kernel instructions each time, plus one page fault per op.
struct FakeOp {
    world: Rc<FakeWorld>,
    ns: u64,
    instr: u64,
    loop_ns: u64,
    /// Extra delay added to the nth sample (counting every sample, calibration included).
    hiccup: Option<(usize, u64)>,
    samples_seen: usize,
}

impl Workload for FakeOp {
    fn run(&mut self, iters: u64) -> Result<()> {
        let w = &self.world;
        let tax = if w.counting.get() {
            w.attach_tax_ns.get()
        } else {
            0
        };
        let mut t = w.now.get() + iters * (self.ns + self.loop_ns + tax);
        if let Some((n, extra)) = self.hiccup {
            if self.samples_seen == n {
                t += extra;
                w.steal.set(w.steal.get() + 1.0);
            }
        }
        self.samples_seen += 1;
        w.now.set(t);
        w.kernel_instr
            .set(w.kernel_instr.get() + iters * self.instr);
        w.faults.set(w.faults.get() + iters);
        Ok(())
    }
    fn bytes_per_op(&self) -> Option<u64> {
        Some(1000)
    }
}

fn setup(op_ns: u64, loop_ns: u64) -> (FakeSensors, FakeOp, Rc<FakeWorld>) {
    let world = Rc::new(FakeWorld::default());
    let sensors = FakeSensors {
        world: world.clone(),
        cut_after: None,
        cut_checks: 0,
        clock_cost: 20,
        read_cost_instr: 300,
    };
    let op = FakeOp {
        world: world.clone(),
        ns: op_ns,
        instr: 50,
        loop_ns,
        hiccup: None,
        samples_seen: 0,
    };
    (sensors, op, world)
}

fn config() -> HarnessConfig {
    HarnessConfig {
        min_sample_ns: 1_000_000,
        samples: 9,
        warmup_samples: 1,
        counting_samples: 3,
        realtime: false,
        retake_preempted: false,
    }
}

fn min_time(ns: u64) -> HarnessConfig {
    HarnessConfig {
        min_sample_ns: ns,
        ..config()
    }
}

/// An empty loop that costs `loop_ns` per turn in the fake world.
struct FakeNull {
    world: Rc<FakeWorld>,
    loop_ns: u64,
}

impl Workload for FakeNull {
    fn run(&mut self, iters: u64) -> Result<()> {
        self.world
            .now
            .set(self.world.now.get() + iters * self.loop_ns);
        Ok(())
    }
}

fn fake_overhead_with_loop(sensors: &mut FakeSensors, loop_ns: u64) -> Overhead {
    let mut null = FakeNull {
        world: sensors.world.clone(),
        loop_ns,
    };
    measure_overhead_with(sensors, &config(), &mut null).unwrap()
}

/// The overhead of a fake world whose empty loop costs 1 ns a turn.
fn fake_overhead(sensors: &mut FakeSensors) -> Overhead {
    fake_overhead_with_loop(sensors, 1)
}

#[test]
fn overhead_finds_clock_and_counter_read_cost() {
    let (mut sensors, _, _) = setup(0, 0);
    let oh = fake_overhead(&mut sensors);
    // t0 and t1 are read back to back: the second read sees the first's 20 ns.
    assert_eq!(oh.per_sample_ns, 20.0);
    // The fake empty loop costs 1 ns a turn.
    assert!(
        (oh.per_iteration_ns - 1.0).abs() < 1e-9,
        "{}",
        oh.per_iteration_ns
    );
    // Each sample's "after" read adds 300 kernel instructions to the delta.
    assert_eq!(oh.per_sample_counters.kernel["instructions"], 300.0);
}

#[test]
fn calibration_reaches_min_sample_time() {
    let (mut sensors, mut op, _) = setup(1000, 0);
    let iters = calibrate(&mut sensors, &mut op, &min_time(1_000_000)).unwrap();
    assert!(iters * 1000 >= 1_000_000, "iters {iters}");
    // Never more than 10x past what was needed.
    assert!(iters * 1000 < 10_000_000, "iters {iters}");
}

#[test]
fn a_sample_just_short_of_the_target_grows_by_a_fifth_not_double() {
    // 950 ns per iteration against 1 ms: 1, 10, 100 (95 us, grown 10x), 1000 (0.95 ms, just
    // short), then 1.2 ms / 0.95 ms of that: 1264 iterations, not 2000.
    let (mut sensors, mut op, _) = setup(950, 0);
    assert_eq!(
        calibrate(&mut sensors, &mut op, &min_time(1_000_000)).unwrap(),
        1264
    );
}

#[test]
fn calibration_respects_max_iters() {
    struct Capped(FakeOp);
    impl Workload for Capped {
        fn run(&mut self, iters: u64) -> Result<()> {
            self.0.run(iters)
        }
        fn max_iters(&self) -> u64 {
            7
        }
    }
    let (mut sensors, op, _) = setup(10, 0);
    assert_eq!(
        calibrate(&mut sensors, &mut Capped(op), &min_time(1_000_000)).unwrap(),
        7
    );
}

#[test]
fn per_op_time_and_counters_are_corrected_exactly() {
    let (mut sensors, mut op, _) = setup(1000, 1);
    let oh = fake_overhead(&mut sensors);
    let m = measure(
        &mut sensors,
        &mut op,
        &config(),
        &oh,
        "fake.op",
        Params::new(),
        Unit::Nanoseconds,
    )
    .unwrap();
    let s = m.summary.as_ref().unwrap();
    assert_eq!(m.samples.len(), 9);
    // Elapsed per sample = iters*(1000 + 1) + 20 (clock); minus 20 fixed and 1 per turn => 1000 per op.
    assert!(
        m.samples.iter().all(|&x| (x - 1000.0).abs() < 1e-9),
        "{:?}",
        m.samples
    );
    assert_eq!(s.median, 1000.0);
    assert_eq!(s.cv, 0.0);
    // 50 kernel instructions per op once the 300 per-sample read cost is removed.
    assert!((m.counters.kernel["instructions"] - 50.0).abs() < 1e-9);
    assert!((m.counters.software["page-faults"] - 1.0).abs() < 1e-9);
    assert!(m.warnings.is_empty(), "{:?}", m.warnings);
}

#[test]
fn empty_loop_cost_is_subtracted() {
    // Each op really costs 1000 ns, the loop around it 3 ns.
    let (mut sensors, mut op, _) = setup(1000, 3);
    let oh = fake_overhead_with_loop(&mut sensors, 3);
    assert!((oh.per_iteration_ns - 3.0).abs() < 1e-9);
    let m = measure(
        &mut sensors,
        &mut op,
        &config(),
        &oh,
        "fake.op",
        Params::new(),
        Unit::Nanoseconds,
    )
    .unwrap();
    assert_eq!(m.summary.unwrap().median, 1000.0);
}

#[test]
fn bandwidth_is_bytes_over_corrected_time() {
    let (mut sensors, mut op, _) = setup(500, 1);
    let oh = fake_overhead(&mut sensors);
    let m = measure(
        &mut sensors,
        &mut op,
        &config(),
        &oh,
        "fake.bw",
        Params::new(),
        Unit::BytesPerSecond,
    )
    .unwrap();
    // 1000 bytes per 500 ns = 2e9 B/s.
    assert!((m.summary.unwrap().median - 2e9).abs() < 1.0);
    assert_eq!(m.bytes_per_op, Some(1000));
}

#[test]
fn a_hiccup_is_an_outlier_that_leaves_the_median_and_the_spread_is_flagged() {
    let (mut sensors, mut op, _) = setup(1000, 1);
    let oh = fake_overhead(&mut sensors);
    let iters_probe = {
        let (mut s2, mut o2, _) = setup(1000, 1);
        calibrate(&mut s2, &mut o2, &config()).unwrap()
    };
    // Calibration takes a few samples, the last of them the one warm-up sample; hit the 4th kept
    // sample.
    let calibration_samples = (0..).take_while(|&k| 10u64.pow(k) < iters_probe).count() + 1;
    op.hiccup = Some((calibration_samples + 3, 5_000_000));
    let m = measure(
        &mut sensors,
        &mut op,
        &config(),
        &oh,
        "fake.op",
        Params::new(),
        Unit::Nanoseconds,
    )
    .unwrap();
    let s = m.summary.as_ref().unwrap();
    assert_eq!(s.median, 1000.0);
    assert_eq!(s.outliers, vec![3], "samples {:?}", m.samples);
    // One round: its samples' spread is held to the probe's usual spread; the outlier itself and
    // a steal in one sample of nine are no reason of their own (the median resists them).
    assert!(
        m.warnings
            .iter()
            .any(|w| w.contains("samples differ by") && w.contains("expected for this probe")),
        "{:?}",
        m.warnings
    );
    assert!(!m.warnings.iter().any(|w| w.contains("outliers")));
    assert!(!m.warnings.iter().any(|w| w.contains("stole time")));
    assert_eq!(m.interference.disturbed_samples, 1);
    assert_eq!(m.interference.steal_ms, 1.0);
}

#[test]
fn a_preempted_sample_of_a_workload_that_runs_alone_is_taken_again() {
    let (mut sensors, mut op, _) = setup(1000, 1);
    let oh = fake_overhead(&mut sensors);
    let cfg = HarnessConfig {
        retake_preempted: true,
        ..config()
    };
    let iters_probe = {
        let (mut s2, mut o2, _) = setup(1000, 1);
        calibrate(&mut s2, &mut o2, &cfg).unwrap()
    };
    let calibration_samples = (0..).take_while(|&k| 10u64.pow(k) < iters_probe).count() + 1;
    op.hiccup = Some((calibration_samples + 3, 5_000_000));
    let r =
        round::measure_round(&mut sensors, &mut op, &cfg, &oh, Unit::Nanoseconds, None).unwrap();
    // The stolen-from sample is set aside and another taken: nine clean samples, no outlier.
    assert_eq!(r.samples.len(), 9);
    assert_eq!(r.retaken.len(), 1);
    assert_eq!(r.retaken[0].steal_ms, 1.0);
    assert!(r.samples.iter().all(|&s| s == 1000.0), "{:?}", r.samples);
    assert!(r.interference.iter().all(|i| !i.preempted()));
    // Without the setting the same sample is kept.
    let (mut sensors, mut op, _) = setup(1000, 1);
    let oh = fake_overhead(&mut sensors);
    op.hiccup = Some((calibration_samples + 3, 5_000_000));
    let r = round::measure_round(
        &mut sensors,
        &mut op,
        &config(),
        &oh,
        Unit::Nanoseconds,
        None,
    )
    .unwrap();
    assert!(r.retaken.is_empty());
    assert!(r.samples.iter().any(|&s| s > 1000.0), "{:?}", r.samples);
}

#[test]
fn zero_samples_is_refused() {
    let (mut sensors, mut op, _) = setup(1000, 0);
    let oh = fake_overhead(&mut sensors);
    let cfg = HarnessConfig {
        samples: 0,
        ..config()
    };
    assert!(measure(
        &mut sensors,
        &mut op,
        &cfg,
        &oh,
        "x",
        Params::new(),
        Unit::Nanoseconds
    )
    .is_err());
}

#[test]
fn a_workload_can_keep_its_loop_overhead() {
    struct Unrolled(FakeOp);
    impl Workload for Unrolled {
        fn run(&mut self, iters: u64) -> Result<()> {
            self.0.run(iters)
        }
        fn subtract_loop_overhead(&self) -> bool {
            false
        }
    }
    // 1000 ns of work plus 3 ns of loop per op, loop overhead measured at 3 ns: kept, so 1003.
    let (mut sensors, op, _) = setup(1000, 3);
    let oh = fake_overhead_with_loop(&mut sensors, 3);
    let m = measure(
        &mut sensors,
        &mut Unrolled(op),
        &config(),
        &oh,
        "fake.op",
        Params::new(),
        Unit::Nanoseconds,
    )
    .unwrap();
    assert!((m.summary.unwrap().median - 1003.0).abs() < 1e-9);
}

#[test]
fn timing_samples_are_taken_with_the_counters_detached() {
    let (mut sensors, mut op, world) = setup(1000, 1);
    world.attach_tax_ns.set(400);
    // Attached from the start, as counters opened once for a whole run would be.
    world.counting.set(true);
    let oh = fake_overhead(&mut sensors);
    let m = measure(
        &mut sensors,
        &mut op,
        &config(),
        &oh,
        "fake.op",
        Params::new(),
        Unit::Nanoseconds,
    )
    .unwrap();
    // The 400 ns a switch would cost with counters attached is not in the time...
    assert_eq!(m.summary.unwrap().median, 1000.0);
    // ...and the counters still come from the counting samples.
    assert!((m.counters.kernel["instructions"] - 50.0).abs() < 1e-9);
    assert!(
        !world.counting.get(),
        "counters are detached again afterwards"
    );
}

/// Checks the harness makes before calibration's first sample, and in the loops up to the kept samples.
fn checks_before_kept_samples() -> usize {
    let (mut s, mut o, _) = setup(1000, 1);
    fake_overhead(&mut s);
    s.cut_checks = 0;
    calibrate(&mut s, &mut o, &config()).unwrap();
    // Calibration's last sample is the first warm-up sample.
    s.cut_checks + config().warmup_samples.saturating_sub(1)
}

#[test]
fn a_cut_during_the_samples_keeps_what_was_measured_and_says_so() {
    let (mut sensors, mut op, world) = setup(1000, 1);
    let oh = fake_overhead(&mut sensors);
    // Three kept samples, then Ctrl-C.
    sensors.cut_checks = 0;
    sensors.cut_after = Some((checks_before_kept_samples() + 3, Cut::Interrupted));
    let m = measure(
        &mut sensors,
        &mut op,
        &config(),
        &oh,
        "fake.op",
        Params::new(),
        Unit::Nanoseconds,
    )
    .unwrap();
    assert_eq!(m.samples.len(), 3);
    assert_eq!(m.summary.as_ref().unwrap().median, 1000.0);
    assert!(
        m.warnings
            .iter()
            .any(|w| w.contains("cut short after 3 of 9 samples: interrupted")),
        "{:?}",
        m.warnings
    );
    // No counting samples after a cut: the counters stay empty and detached.
    assert!(m.counters.is_empty());
    assert!(!world.counting.get());
}

#[test]
fn a_cut_before_any_kept_sample_is_an_interruption() {
    for after in [0, 1, checks_before_kept_samples()] {
        let (mut sensors, mut op, _) = setup(1000, 1);
        let oh = fake_overhead(&mut sensors);
        sensors.cut_checks = 0;
        sensors.cut_after = Some((after, Cut::Interrupted));
        let err = measure(
            &mut sensors,
            &mut op,
            &config(),
            &oh,
            "fake.op",
            Params::new(),
            Unit::Nanoseconds,
        )
        .unwrap_err();
        assert!(
            err.chain().any(|c| c.is::<crate::interrupt::Interrupted>()),
            "after {after}: {err:#}"
        );
    }
}

#[test]
fn the_real_time_limit_cuts_one_figure_with_its_own_reason() {
    let (mut sensors, mut op, _) = setup(1000, 1);
    let oh = fake_overhead(&mut sensors);
    sensors.cut_checks = 0;
    sensors.cut_after = Some((checks_before_kept_samples() + 5, Cut::RealTimeLimit));
    let m = measure(
        &mut sensors,
        &mut op,
        &config(),
        &oh,
        "fake.op",
        Params::new(),
        Unit::Nanoseconds,
    )
    .unwrap();
    assert_eq!(m.samples.len(), 5);
    assert!(m.warnings.iter().any(|w| w.contains("RLIMIT_RTTIME")));
    // Before anything was kept it is a plain error naming what to change, not an interruption.
    let (mut sensors, mut op, _) = setup(1000, 1);
    sensors.cut_after = Some((0, Cut::RealTimeLimit));
    let err = measure(
        &mut sensors,
        &mut op,
        &config(),
        &oh,
        "fake.op",
        Params::new(),
        Unit::Nanoseconds,
    )
    .unwrap_err();
    assert!(!err.chain().any(|c| c.is::<crate::interrupt::Interrupted>()));
    assert!(format!("{err:#}").contains("--min-time"), "{err:#}");
}

#[test]
fn every_phase_of_the_overhead_measurement_can_be_cut() {
    // However many checks pass first, the overhead phase ends with the interruption, not later.
    let (mut s, _, _) = setup(0, 0);
    fake_overhead(&mut s);
    let checks = s.cut_checks;
    assert!(checks > config().samples, "{checks} checks");
    for after in [0, checks / 3, checks / 2, checks - 1] {
        let (mut s, _, _) = setup(0, 0);
        s.cut_after = Some((after, Cut::Interrupted));
        let mut null = FakeNull {
            world: s.world.clone(),
            loop_ns: 1,
        };
        let err = measure_overhead_with(&mut s, &config(), &mut null).unwrap_err();
        assert!(err.chain().any(|c| c.is::<crate::interrupt::Interrupted>()));
        assert_eq!(
            s.cut_checks,
            after + 1,
            "stopped at the first check that saw it"
        );
    }
}

#[test]
fn calibration_counts_as_the_first_warm_up_sample() {
    // Every run of the workload a round makes: calibration, the warm-up samples beyond the one
    // calibration's last sample stands for, the kept samples, the counting samples.
    let runs_with = |warmup_samples: usize| {
        let (mut sensors, mut op, _) = setup(1000, 1);
        let oh = fake_overhead(&mut sensors);
        let config = HarnessConfig {
            warmup_samples,
            ..config()
        };
        measure(
            &mut sensors,
            &mut op,
            &config,
            &oh,
            "fake.op",
            Params::new(),
            Unit::Nanoseconds,
        )
        .unwrap();
        op.samples_seen
    };
    let calibration = {
        let (mut s, mut o, _) = setup(1000, 1);
        fake_overhead(&mut s);
        calibrate(&mut s, &mut o, &config()).unwrap();
        o.samples_seen
    };
    let (kept, counting) = (config().samples, config().counting_samples);
    assert_eq!(runs_with(0), calibration + kept + counting);
    assert_eq!(runs_with(1), calibration + kept + counting);
    assert_eq!(runs_with(4), calibration + 3 + kept + counting);
}

/// The machine's CPU times come in whole ticks: of five samples of 100 operations, one saw a 10 ms
/// tick of kernel time. Per operation that is 20 us on average, where the median of the samples
/// would say 0; counters of the workload itself keep their median.
#[test]
fn tick_counted_machine_times_are_averaged_over_samples() {
    let sample = |kernel_ns: f64, faults: f64| {
        let mut c = CounterScopes::default();
        c.software.insert("machine-kernel-ns".into(), kernel_ns);
        c.software.insert("page-faults".into(), faults);
        c
    };
    let samples = [
        sample(0.0, 1.0),
        sample(0.0, 1.0),
        sample(10e6, 900.0),
        sample(0.0, 1.0),
        sample(0.0, 1.0),
    ];
    let per_op = median_counters(&samples, 100.0, &CounterScopes::default());
    assert_eq!(per_op.software["machine-kernel-ns"], 20_000.0);
    assert_eq!(per_op.software["page-faults"], 0.01);
}
