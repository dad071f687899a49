//! Wakeup latency (`osmeter latency`, the run's "latency" section): the lateness histogram of every
//! class/path stream on log-log axes, a table of its percentiles and worst cases, and the buffer
//! model's mean time to underrun for each pipeline configuration.
//!
//! The stored histogram has 128 buckets per octave, far finer than a plot can show: the buckets are
//! summed into quarter-octave bins (their edges fall on stored bucket edges, so no count is split),
//! and each bin's height is its share of all periods, which on a logarithmic x axis is a density.

use crate::latency::buffer::BufferResult;
use crate::latency::document::{Estimate, LatencyDoc, StreamDoc, LATENCY_SCHEMA};
use crate::results::model::Unit;
use crate::results::report::html::{esc, figure, note, num, table, value, Cell, Row};
use crate::results::report::plot::{
    color, legend, legend_height, svg, Axis, LegendItem, Scale, Swatch, Ticked,
};
use crate::results::report::plot::{compact, FONT, WIDTH};
use crate::results::report::plot::{line_chart, AxisText, Chart};
use crate::results::report::{Context, Section};
use anyhow::Result;
use plotters::prelude::*;
use std::collections::BTreeMap;
use std::fmt::Write as _;

mod detail;
mod plots;
mod tables;

use plots::*;
use tables::*;

pub struct Latency;

/// Bins per octave of the plotted histogram.
const BINS_PER_OCTAVE: u64 = 4;

/// One class/path stream of one run's latency document.
struct Stream<'a> {
    /// "normal/timer cpu1", prefixed with the run ("R2 ...") when several runs have latency data.
    label: String,
    doc: &'a StreamDoc,
}

impl Stream<'_> {
    fn error(&self) -> Option<&str> {
        self.doc.error.as_deref()
    }
}

/// The latency documents of the runs, with the index of their run.
fn documents<'a>(ctx: &Context<'a>) -> Vec<(usize, &'a LatencyDoc)> {
    ctx.runs
        .iter()
        .enumerate()
        .filter_map(|(i, r)| {
            r.sections
                .get::<crate::latency::document::LatencyDoc>()
                .map(|d| (i, d))
        })
        .filter(|(_, d)| d.schema == LATENCY_SCHEMA)
        .collect()
}

fn streams<'a>(docs: &[(usize, &'a LatencyDoc)]) -> Vec<Stream<'a>> {
    let several = docs.len() > 1;
    let mut out = Vec::new();
    for &(run, doc) in docs {
        for s in &doc.streams {
            let label = if several {
                format!("R{} {}", run + 1, s.label())
            } else {
                s.label()
            };
            out.push(Stream { label, doc: s });
        }
    }
    out
}

/// The loads of a latency run, as the legend names them.
fn load_names(d: &LatencyDoc) -> String {
    if d.loads.is_empty() {
        "none".into()
    } else {
        let names: Vec<&str> = d.loads.iter().map(|l| l.load.as_str()).collect();
        names.join(", ")
    }
}

/// What each run measured: period, duration, loads, skipped classes.
fn setup(ctx: &Context, docs: &[(usize, &LatencyDoc)]) -> String {
    let mut out = String::new();
    for &(r, d) in docs {
        let loads: Vec<&str> = d.loads.iter().map(|l| l.load.as_str()).collect();
        let mut text = format!(
            "{}: period {} us, {} s measured, load: {}{}.",
            ctx.run_label(r),
            num(d.period_ns as f64 / 1e3),
            num(d.measured_s),
            if loads.is_empty() {
                "none".to_string()
            } else {
                loads.join(", ")
            },
            if d.interrupted { " (interrupted)" } else { "" }
        );
        for k in &d.skipped {
            text.push_str(&format!(
                " Class {} skipped: {}",
                k.class.as_str(),
                k.reason
            ));
        }
        out.push_str(&note(&text));
    }
    out
}

impl Section for Latency {
    fn id(&self) -> &'static str {
        "latency"
    }
    fn title(&self) -> &'static str {
        "Wake-up latency"
    }
    fn render(&self, ctx: &Context) -> Result<Option<String>> {
        let docs = documents(ctx);
        if docs.is_empty() {
            return Ok(None);
        }
        let all = streams(&docs);
        let series: Vec<Series> = docs
            .iter()
            .flat_map(|&(run, doc)| {
                doc.streams
                    .iter()
                    .filter(|s| s.error.is_none())
                    .map(move |s| Series {
                        run,
                        panel: format!("{}/{}", s.class.as_str(), s.path.name()),
                        bins: bins(&s.histogram_corrected.buckets),
                        doc,
                    })
            })
            .filter(|s| !s.bins.is_empty())
            .collect();
        let mut out = setup(ctx, &docs);
        if series.is_empty() {
            out.push_str(&note("No stream recorded a wake-up."));
        } else {
            out.push_str(&figure(
                &histogram_panels(ctx, &series)?,
                "<b>How late the periodic threads woke.</b> A panel per class/path stream, all on \
                 the same axes: wake-up lateness across (missed periods included, with the \
                 lateness they would have had), and up the share of all periods whose lateness \
                 fell in each quarter-octave bin, both logarithmic so a long tail stays visible \
                 next to the common case. Each run is a line of its own colour; lines join \
                 neighbouring bins only, so a lone dot is a bin with empty neighbours.",
            ));
        }
        out.push_str("<h3>Percentiles and worst cases</h3>\n");
        out.push_str(&summary_table(&all));
        out.push_str(&episodes(ctx, &docs));
        out.push_str(&detail::render(ctx, &docs)?);
        let buffers = buffer_table(&all);
        if !buffers.is_empty() {
            out.push_str("<h3>Buffer model: mean time to underrun</h3>\n");
            out.push_str(&note(
                "A pipeline that plays one buffer of length t per period, keeps n buffers queued \
                 and needs c of computing per buffer survives a wake up to (n-1)t - c late. Each \
                 cell is the mean time between underruns if it were driven by these wakes (p: \
                 share of periods over the tolerance); \"> X\" means no underrun in the X \
                 measured.",
            ));
            out.push_str(&buffers);
        }
        Ok(Some(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_join_neighbouring_bins_only() {
        let bin = |index: u64| Bin {
            lo: 1.0,
            hi: 1.0,
            share: index as f64,
            index,
        };
        let bins: Vec<Bin> = [1, 2, 3, 5, 7, 8].into_iter().map(bin).collect();
        let runs = neighbouring_runs(&bins, |b| (b.index as f64, b.share));
        // 5 stands alone: a dot, no line.
        assert_eq!(
            runs,
            vec![
                vec![(1.0, 1.0), (2.0, 2.0), (3.0, 3.0)],
                vec![(7.0, 7.0), (8.0, 8.0)]
            ]
        );
        assert!(neighbouring_runs(&[], |b| (b.lo, b.hi)).is_empty());
    }
    use crate::latency::accounting::WindowSummary;
    use crate::latency::document::{Distribution, StoredHistogram};
    use crate::latency::threads::{ClassName, Path};
    use crate::results::fixtures::empty_run;

    fn buffer(period_ms: f64, n: u32, c: f64, p: f64, mttf: Option<f64>) -> BufferResult {
        BufferResult {
            period_ms,
            buffers: n,
            compute_ms: c,
            tolerance_ms: (n - 1) as f64 * period_ms - c,
            periods: 1000,
            overruns: (p * 1000.0) as u64,
            failures: u64::from(mttf.is_some()),
            p_underrun: p,
            mttf_s: mttf,
            mttf_more_than_s: mttf.is_none().then_some(1.0),
            mttf: String::new(),
        }
    }

    pub fn stream(class: ClassName, buckets: Vec<[u64; 3]>, error: Option<&str>) -> StreamDoc {
        StreamDoc {
            class,
            policy: "SCHED_OTHER".into(),
            priority: None,
            path: Path::Timer,
            cpu: 1,
            error: error.map(String::from),
            periods_planned: 1000,
            periods: 1000,
            woken: 990,
            missed: 10,
            measured_s: 1.0,
            cpu_time_ms: 1.0,
            raw: Distribution {
                max_ns: 900_000,
                ..Default::default()
            },
            corrected: Distribution {
                count: 1000,
                mean_ns: 30_000.0,
                p50_ns: 20_000,
                p90_ns: 30_000,
                p99_ns: 400_000,
                p99_9_ns: 900_000,
                p99_99_ns: 1_200_000,
                max_ns: 1_200_000,
            },
            histogram_corrected: StoredHistogram {
                columns: vec!["low_ns".into(), "high_ns".into(), "count".into()],
                buckets,
            },
            windows: vec![WindowSummary {
                window: "1s".into(),
                windows: 1,
                min_ns: 1_200_000,
                p50_ns: 1_200_000,
                p90_ns: 1_200_000,
                max_ns: 1_200_000,
                maxima_ns: vec![1_200_000],
            }],
            estimate: Estimate::Unavailable {
                unavailable: "1 complete 1s windows; the fit needs at least 10".into(),
            },
            buffers: vec![
                buffer(1.0, 2, 0.5, 0.01, Some(0.1)),
                buffer(5.0, 3, 2.5, 0.0, None),
            ],
            seconds: Vec::new(),
            stages: None,
            compute: None,
        }
    }

    pub fn doc(streams: Vec<StreamDoc>) -> LatencyDoc {
        LatencyDoc {
            measured_s: 1.0,
            duration_s: 1.0,
            worst_ns: 1_200_000,
            ..LatencyDoc::for_tests(streams)
        }
    }

    #[test]
    fn buckets_sum_into_quarter_octaves() {
        // The octave 16384..32768 has quarters 16384..20480, 20480..24576, ...: the buckets at
        // 20480 and 24000 share the second one.
        let b = bins(&[
            [16384, 16511, 3],
            [20480, 20607, 1],
            [24000, 24063, 4],
            [1_048_576, 1_056_767, 2],
        ]);
        assert_eq!(b.len(), 3, "{b:?}");
        assert_eq!((b[0].lo, b[0].hi), (16384.0, 20480.0));
        assert_eq!((b[1].lo, b[1].hi), (20480.0, 24576.0));
        assert_eq!(b[1].index, b[0].index + 1);
        assert!((b[1].share - 0.5).abs() < 1e-12, "1 + 4 of 10");
        assert_eq!((b[2].lo, b[2].hi), (1_048_576.0, 1_310_720.0));
        assert!((b.iter().map(|x| x.share).sum::<f64>() - 1.0).abs() < 1e-12);
        let tiny = bins(&[[0, 0, 1], [3, 3, 1]]);
        assert_eq!(tiny.len(), 2);
    }

    #[test]
    fn section_shows_histogram_percentiles_and_buffer_table() {
        let buckets = vec![
            [16384, 16511, 800],
            [20480, 20607, 190],
            [1_048_576, 1_056_767, 10],
        ];
        let mut run = empty_run();
        run.sections.put(doc(vec![
            stream(ClassName::Normal, buckets, None),
            stream(ClassName::High, vec![], Some("cannot set SCHED_FIFO")),
        ]));
        let runs = [run];
        let ctx = Context::new(&runs);
        let html = Latency.render(&ctx).unwrap().unwrap();
        assert_eq!(html.matches("<svg").count(), 1);
        assert!(html.contains("normal/timer cpu1"));
        assert!(html.contains("failed: cannot set SCHED_FIFO"));
        assert!(
            html.contains("100 ms<br><span class=\"note\">(p 1.0e-2)</span>"),
            "MTTF as the text report"
        );
        assert!(html.contains("&gt; 1.00 s"));
        assert!(html.contains("tolerated lateness"));
        assert!(html.contains("not estimated"));
        // Percentiles in microseconds.
        assert!(html.contains(">400<") && html.contains(">1200<"));
    }

    /// Three runs under three loads, each with a timer and a futex stream: a panel per stream,
    /// each with a line per run in the run's own colour, and a legend naming the loads.
    #[test]
    fn streams_are_small_multiples_with_a_line_per_load() {
        use crate::latency::load::LoadReport;
        let buckets = || {
            vec![
                [16384, 16511, 800],
                [20480, 20607, 190],
                [1_048_576, 1_056_767, 10],
            ]
        };
        let runs: Vec<_> = [Some("cpu"), Some("memory"), None]
            .into_iter()
            .map(|load| {
                let mut futex = stream(ClassName::Normal, buckets(), None);
                futex.path = Path::Futex;
                let mut d = doc(vec![stream(ClassName::Normal, buckets(), None), futex]);
                d.loads = load
                    .map(|l| LoadReport {
                        load: l.into(),
                        threads: 1,
                        ops: 1,
                        rate: 1.0,
                        unit: "ops/s".into(),
                        error: None,
                    })
                    .into_iter()
                    .collect();
                let mut run = empty_run();
                run.sections.put(d);
                run
            })
            .collect();
        let ctx = Context::new(&runs);
        let html = Latency.render(&ctx).unwrap().unwrap();
        let panels: Vec<&str> = html.split("<div class=\"panel\">").skip(1).collect();
        assert_eq!(panels.len(), 2, "a panel per stream");
        assert!(panels[0].contains("normal/timer") && panels[1].contains("normal/futex"));
        let hex = |c: RGBColor| format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2);
        for panel in &panels {
            let panel = &panel[..panel.find("</svg>").unwrap()];
            for run in 0..3 {
                assert!(
                    panel.contains(&hex(color(run))),
                    "run {run}'s colour in {panel}"
                );
            }
        }
        for load in ["load: cpu", "load: memory", "load: none"] {
            assert!(html.contains(load), "legend names {load}");
        }
        // Three panels' worth of colours that a person tells apart: no two alike.
        let (a, b, c) = (color(0), color(1), color(2));
        assert!(a != b && b != c && a != c);
    }

    #[test]
    fn nothing_without_a_latency_section() {
        let runs = [empty_run()];
        assert!(Latency.render(&Context::new(&runs)).unwrap().is_none());
        let mut other = empty_run();
        let mut future = doc(vec![]);
        future.schema = "osmeter.latency/99".into();
        other.sections.put(future);
        let runs = [other];
        assert!(Latency.render(&Context::new(&runs)).unwrap().is_none());
    }
}
