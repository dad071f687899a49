use super::*;
use crate::latency::accounting::Accounting;
use crate::latency::buffer::BufferConfig;
use crate::latency::threads::{Class, ClassName, Path, StreamResult, StreamSpec};

const MS: u64 = 1_000_000;

/// A stream of 1 ms periods for 3.5 s through the real accounting: every wake 20 us late but for
/// one 2 ms late in each of the first two seconds, and a 15 ms stall that misses 14 periods in
/// the third.
fn stream() -> StreamDoc {
    let buffers = [BufferConfig {
        period_ns: MS,
        buffers: 2,
        compute_ns: MS / 2,
    }];
    let mut acct = Accounting::new(MS, 3500, &buffers);
    let mut k = 0;
    while k < 3500 {
        match k {
            100 | 1100 => acct.period(k, 2 * MS, true),
            2100 => {
                acct.period(k, 15 * MS, true);
                for j in 1..=14 {
                    acct.period(k + j, 15 * MS - j * MS, false);
                }
                k += 14;
            }
            _ => acct.period(k, 20_000, true),
        }
        k += 1;
    }
    let spec = StreamSpec {
        class: Class {
            name: ClassName::High,
            fifo: Some(90),
        },
        path: Path::Timer,
        cpu: 1,
    };
    StreamDoc::of(&StreamResult {
        spec,
        periods_planned: 3500,
        acct,
        cpu_ns: 0,
        error: None,
        compute: None,
    })
}

fn doc(streams: Vec<StreamDoc>) -> LatencyDoc {
    LatencyDoc::for_tests(streams)
}

fn find<'a>(f: &'a [Figure], key: &str) -> &'a Figure {
    f.iter()
        .find(|x| x.key == key)
        .unwrap_or_else(|| panic!("no figure {key}"))
}

#[test]
fn percentiles_have_intervals_and_a_round_per_second() {
    let s = stream();
    assert_eq!(s.seconds.len(), 3, "the half second at the end is left out");
    let f = figures(&doc(vec![s]));
    let p50 = find(&f, "high/timer cpu1 p50");
    let [lo, hi] = p50.interval.unwrap();
    assert!(lo <= p50.value && p50.value <= hi, "{p50:?}");
    assert!(hi < 20_500.0, "all the middle values are 20 us: {hi}");
    assert_eq!(p50.evidence.round_values(), vec![20_000.0; 3]);
    // The tail has one value a side and an interval that reaches the stall.
    let p9999 = find(&f, "high/timer cpu1 p99.99");
    assert_eq!(p9999.evidence.round_values().len(), 1);
    assert!(p9999.interval.unwrap()[1] >= 14.0 * MS as f64);
    assert!(find(&f, "high/timer cpu1 max").interval.is_none());
}

#[test]
fn shares_over_thresholds_count_each_second() {
    let f = figures(&doc(vec![stream()]));
    // Over 100 us: one 2 ms wake in each of the first two seconds, the stall's 15 periods
    // (15 ms down to 1 ms late) in the third: 17 of 3000.
    let over = find(&f, "high/timer cpu1 over 100us");
    assert!((over.value - 17.0 / 3000.0).abs() < 1e-12, "{}", over.value);
    assert_eq!(
        over.evidence.round_values(),
        vec![0.001, 0.001, 0.015],
        "one share per second"
    );
    let [lo, hi] = over.interval.unwrap();
    assert!(lo < over.value && over.value < hi);
    // Over 1 ms: 1 ms itself is not over it, so 2 + 14.
    let over_1ms = find(&f, "high/timer cpu1 over 1ms");
    assert!((over_1ms.value - 16.0 / 3000.0).abs() < 1e-12);
    // Over 10 ms: the stall's first five periods (15 down to 11 ms late).
    let over_10ms = find(&f, "high/timer cpu1 over 10ms");
    assert!((over_10ms.value - 5.0 / 3000.0).abs() < 1e-12);
    let missed = find(&f, "high/timer cpu1 missed");
    assert!((missed.value - 14.0 / 3500.0).abs() < 1e-12);
    assert!(missed.interval.is_some());
}

#[test]
fn the_mttf_interval_comes_from_the_failure_count() {
    let f = figures(&doc(vec![stream()]));
    // t = 1 ms, n = 2, c = 0.5 ms tolerates 0.5 ms: the two 2 ms wakes and the stall (one run of
    // consecutive overruns) are three failures in 3.5 s.
    let m = find(&f, "high/timer cpu1 mttf t=1ms n=2 c=0.5ms");
    assert!((m.value - 3.5 / 3.0).abs() < 1e-9, "{}", m.value);
    let [lo, hi] = m.interval.unwrap();
    // Garwood: 3 events lie in [0.619, 8.767] at 95 %.
    assert!(
        (lo - 3.5 / 8.767).abs() < 1e-2 && (hi - 3.5 / 0.619).abs() < 2e-2,
        "{lo} {hi}"
    );
    let u = find(&f, "high/timer cpu1 underrun t=1ms n=2 c=0.5ms");
    assert!(u.interval.unwrap()[0] > 0.0);
}

#[test]
fn a_run_shorter_than_a_second_has_no_rounds_or_shares() {
    let mut s = stream();
    s.seconds.clear();
    let f = figures(&doc(vec![s]));
    assert!(f.iter().all(|x| !x.key.contains(" over ")));
    assert_eq!(
        find(&f, "high/timer cpu1 p99")
            .evidence
            .round_values()
            .len(),
        1
    );
    assert_eq!(threshold_name(100_000), "100us");
    assert_eq!(threshold_name(10_000_000), "10ms");
}
