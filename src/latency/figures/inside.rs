//! Figures from inside the wakes of a timer stream, where the run asked for them: each stage's
//! median and p99 and its worst per second (`--stages`), and for each depth of the pipeline the
//! thread really fed (`--compute`) the share of buffers that were not ready and the mean time
//! between underruns. Stage percentiles and the pipeline have one value a side, a stage
//! percentile with its order-statistic interval from the stage's stored histogram; a stage's
//! worst per second has one round per second, like the whole wake's.

use super::{single, worst_per_second, Direction, Figure};
use crate::latency::document::StreamDoc;
use crate::latency::intervals::{mttf, quantile_interval, wilson};
use crate::latency::stages::StageStats;
use crate::units::Unit;

fn stage_figures(name: &str, stage: &str, st: &StageStats, out: &mut Vec<Figure>) {
    for (p, q, ns) in [("p50", 0.5, st.dist.p50_ns), ("p99", 0.99, st.dist.p99_ns)] {
        // Order statistics of the stage's own histogram, like the whole wake's percentiles
        // (none from a document that stored no stage histogram).
        out.push(Figure {
            interval: quantile_interval(&st.histogram.buckets, q),
            ..single(
                format!("{name} stage {stage} {p}"),
                Unit::Nanoseconds,
                Direction::Lower,
                ns as f64,
            )
        });
    }
    out.extend(worst_per_second(
        &st.windows,
        format!("{name} stage {stage} worst-per-1s"),
    ));
}

pub(super) fn figures(s: &StreamDoc, name: &str, out: &mut Vec<Figure>) {
    if let Some(stages) = s.stages.as_ref().and_then(|x| x.stages.as_ref()) {
        let mut each = vec![("interrupt", &stages.interrupt)];
        each.extend(stages.softirq.as_ref().map(|st| ("softirq", st)));
        each.extend([
            ("handler", &stages.handler),
            ("thread", &stages.thread),
            ("to_user", &stages.to_user),
        ]);
        for (stage, st) in each.into_iter().filter(|(_, st)| st.dist.count > 0) {
            stage_figures(name, stage, st, out);
        }
    }
    let Some(compute) = &s.compute else { return };
    for d in &compute.depths {
        let depth = format!(
            "n={} c={}",
            d.buffers,
            crate::units::format(compute.compute_ns as f64, Unit::Nanoseconds).replace(' ', "")
        );
        out.push(Figure {
            interval: wilson(d.real.underruns, d.real.buffers),
            ..single(
                format!("{name} real underrun {depth}"),
                Unit::Ratio,
                Direction::Lower,
                d.real.p_underrun,
            )
        });
        if let Some(m) = d.real.mttf_s {
            out.push(Figure {
                interval: mttf(d.real.failures, s.measured_s),
                ..single(
                    format!("{name} real mttf {depth}"),
                    Unit::Seconds,
                    Direction::Higher,
                    m,
                )
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::latency::accounting::Accounting;
    use crate::latency::compute::{ComputeRun, Work};
    use crate::latency::stage_capture::StreamStages;
    use crate::latency::stages::{StageAcc, Stages};
    use crate::latency::threads::{Class, ClassName, Path, StreamResult, StreamSpec};
    use crate::results::figure::Evidence;

    const US: u64 = 1_000;
    const MS: u64 = 1_000_000;
    const PERIODS: u64 = 2_000;

    /// Two seconds of 1 ms wakes: every stage the same each time, but one wake at 1.5 s whose
    /// thread stage takes 3 ms; a pipeline computing 300 us a buffer, one buffer done 2.5 ms after
    /// its deadline (late for 2 and 3 buffers) and one 1.5 ms after (late for 2).
    fn stream() -> StreamDoc {
        let mut acct = Accounting::new(MS, PERIODS, &[]);
        let acc = |value: &dyn Fn(u64) -> u64| {
            let mut a = StageAcc::new(PERIODS * MS);
            for k in 0..PERIODS {
                a.record(k * MS, value(k));
            }
            a
        };
        let thread_ns = |k| if k == 1_500 { 3 * MS } else { 10 * US };
        let (interrupt, handler, to_user) = (acc(&|_| 5 * US), acc(&|_| US), acc(&|_| 2 * US));
        let (thread, total) = (acc(&thread_ns), acc(&|k| thread_ns(k) + 8 * US));
        let mean = total.stats(PERIODS * MS, 0.0).dist.mean_ns;
        let stats = |a: &StageAcc| a.stats(PERIODS * MS, mean);
        let mut run = ComputeRun::new(300 * US, MS, Work::calibrate());
        for k in 0..PERIODS {
            acct.period(k, thread_ns(k) + 8 * US, true);
            let done = match k {
                1_000 => 2_500 * US,
                1_500 => 1_500 * US,
                _ => 400 * US,
            };
            run.buffer(k * MS, Some(k * MS + done));
        }
        let mut doc = StreamDoc::of(&StreamResult {
            spec: StreamSpec {
                class: Class {
                    name: ClassName::High,
                    fifo: Some(90),
                },
                path: Path::Timer,
                cpu: 1,
            },
            periods_planned: PERIODS,
            acct,
            cpu_ns: 0,
            error: None,
            compute: Some(run.result(PERIODS * MS)),
        });
        doc.stages = Some(StreamStages {
            traced_wakes: PERIODS,
            with_stages: PERIODS,
            incomplete: 0,
            unmatched: 0,
            stages: Some(Stages {
                interrupt: stats(&interrupt),
                softirq: None,
                handler: stats(&handler),
                thread: stats(&thread),
                to_user: stats(&to_user),
                total: stats(&total),
            }),
            not_applicable: Default::default(),
            overhead: None,
        });
        doc
    }

    fn find<'a>(f: &'a [Figure], key: &str) -> &'a Figure {
        f.iter().find(|x| x.key == key).unwrap_or_else(|| {
            panic!(
                "no figure {key} in {:?}",
                f.iter().map(|x| &x.key).collect::<Vec<_>>()
            )
        })
    }

    fn near(value: f64, want: f64) -> bool {
        (value - want).abs() <= want * 0.02
    }

    #[test]
    fn every_stage_has_its_percentiles_and_a_worst_per_second() {
        let s = stream();
        let mut out = Vec::new();
        figures(&s, "high/timer cpu1", &mut out);
        let p50 = find(&out, "high/timer cpu1 stage thread p50");
        assert!(near(p50.value, 10e3), "{p50:?}");
        // 2000 equal values but one: the interval is the bucket that holds them.
        let [lo, hi] = p50.interval.expect("an interval from the stage histogram");
        assert!(lo <= 10e3 && hi >= 10e3 && hi - lo < 200.0, "{p50:?}");
        let mut old = s.clone();
        let st = old.stages.as_mut().unwrap().stages.as_mut().unwrap();
        st.thread.histogram = Default::default();
        let mut without = Vec::new();
        figures(&old, "high/timer cpu1", &mut without);
        let p50 = find(&without, "high/timer cpu1 stage thread p50");
        assert_eq!(p50.interval, None, "a document without stage histograms");
        assert_eq!(p50.direction, Direction::Lower);
        assert!(near(
            find(&out, "high/timer cpu1 stage interrupt p99").value,
            5e3
        ));
        // One round per second: the second holding the 3 ms wake has it as its worst.
        let worst = find(&out, "high/timer cpu1 stage thread worst-per-1s");
        let Evidence::Rounds(rounds) = &worst.evidence else {
            panic!("{worst:?}")
        };
        assert_eq!(rounds.len(), 2, "{rounds:?}");
        assert!(
            near(rounds[0][0], 10e3) && near(rounds[1][0], 3e6),
            "{rounds:?}"
        );
        assert!(out.iter().all(|f| !f.key.contains("softirq")));
    }

    #[test]
    fn the_real_pipeline_counts_its_underruns_per_depth() {
        let s = stream();
        let mut out = Vec::new();
        figures(&s, "high/timer cpu1", &mut out);
        let two = find(&out, "high/timer cpu1 real underrun n=2 c=300us");
        assert_eq!(two.value, 2.0 / PERIODS as f64);
        assert_eq!(two.interval, wilson(2, PERIODS));
        assert_eq!(
            find(&out, "high/timer cpu1 real underrun n=3 c=300us").value,
            1.0 / PERIODS as f64
        );
        assert_eq!(
            find(&out, "high/timer cpu1 real underrun n=4 c=300us").value,
            0.0
        );
        // Two failures in two seconds for 2 buffers, one for 3, none for 4 (no MTTF to give).
        let mttf2 = find(&out, "high/timer cpu1 real mttf n=2 c=300us");
        assert_eq!((mttf2.value, mttf2.direction), (1.0, Direction::Higher));
        assert_eq!(mttf2.interval, mttf(2, 2.0));
        assert_eq!(
            find(&out, "high/timer cpu1 real mttf n=3 c=300us").value,
            2.0
        );
        assert!(!out.iter().any(|f| f.key.contains("mttf n=4")));
    }
}
