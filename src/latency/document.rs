//! The latency document (`osmeter.latency/1`): what one `osmeter latency` measured, as typed structs
//! that are stored as they serialise and read back as the same types.

use super::accounting::{
    fit_gumbel, summarise_windows, Accounting, GumbelFit, WindowSummary, WINDOWS,
};
use super::buffer::{evaluate, BufferResult};
use super::compute::ComputeResult;
use super::histogram::Histogram;
use super::load::LoadReport;
use super::seconds::SecondStats;
use super::stacks::Cause;
use super::stage_capture::{StageCaptureInfo, StreamStages};
use super::threads::{ClassName, Path, StreamResult};
use super::trace::{Episode, StackMode};
use serde::{Deserialize, Serialize};

pub const LATENCY_SCHEMA: &str = "osmeter.latency/1";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LatencyDoc {
    pub schema: String,
    pub period_ns: u64,
    /// The duration asked for, and the time the periods really covered (shorter after Ctrl-C).
    pub duration_s: f64,
    pub measured_s: f64,
    pub cpus: Vec<usize>,
    pub classes: Vec<ClassDoc>,
    pub paths: Vec<Path>,
    /// Classes that could not run here, with the reason.
    #[serde(default)]
    pub skipped: Vec<SkippedClass>,
    pub rttime_limit_us: u64,
    pub timer_slack_ns: u64,
    pub cpu_dma_latency_us: Option<u32>,
    pub fail_over_ns: Option<u64>,
    /// Latest wake of any stream that ran, missed periods included.
    pub worst_ns: u64,
    pub interrupted: bool,
    #[serde(default)]
    pub loads: Vec<LoadReport>,
    /// Cause-capture episodes; `None` when `--trace` was not asked for.
    pub episodes: Option<Vec<Episode>>,
    /// Which stacks cause capture took, and the functions they found across episodes, most
    /// samples first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stacks: Option<StackMode>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub causes: Option<Vec<Cause>>,
    /// How `--stages` captured (each stream has its stages).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage_capture: Option<StageCaptureInfo>,
    pub streams: Vec<StreamDoc>,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ClassDoc {
    pub name: ClassName,
    pub fifo_priority: Option<i32>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SkippedClass {
    pub class: ClassName,
    pub reason: String,
}

/// Percentiles of one lateness distribution, nanoseconds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Distribution {
    pub count: u64,
    pub mean_ns: f64,
    pub p50_ns: u64,
    pub p90_ns: u64,
    pub p99_ns: u64,
    pub p99_9_ns: u64,
    /// Absent in the stages of documents written before stages shared this type.
    #[serde(default)]
    pub p99_99_ns: u64,
    pub max_ns: u64,
}

impl Distribution {
    pub fn of(h: &Histogram) -> Distribution {
        Distribution {
            count: h.count(),
            mean_ns: h.mean(),
            p50_ns: h.percentile(0.5),
            p90_ns: h.percentile(0.9),
            p99_ns: h.percentile(0.99),
            p99_9_ns: h.percentile(0.999),
            p99_99_ns: h.percentile(0.9999),
            max_ns: h.max(),
        }
    }

    /// The percentiles by name, in order: the figures a latency run states.
    pub fn percentiles(&self) -> [(&'static str, u64); 6] {
        let values = [
            self.p50_ns,
            self.p90_ns,
            self.p99_ns,
            self.p99_9_ns,
            self.p99_99_ns,
            self.max_ns,
        ];
        std::array::from_fn(|i| (PERCENTILE_NAMES[i], values[i]))
    }
}

/// The names of the percentiles a stream states, in order (the column heads of every table).
pub const PERCENTILE_NAMES: [&str; 6] = ["p50", "p90", "p99", "p99.9", "p99.99", "max"];

/// The non-empty buckets of a histogram as `[low_ns, high_ns, count]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StoredHistogram {
    pub columns: Vec<String>,
    pub buckets: Vec<[u64; 3]>,
}

impl StoredHistogram {
    pub fn is_empty(&self) -> bool {
        self.buckets.is_empty()
    }

    pub fn of(h: &Histogram) -> StoredHistogram {
        StoredHistogram {
            columns: ["low_ns", "high_ns", "count"].map(String::from).to_vec(),
            buckets: h
                .buckets()
                .map(|b| [b.low_ns, b.high_ns, b.count])
                .collect(),
        }
    }
}

/// The Gumbel projection of the worst case, or why there is none.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum Estimate {
    Fitted { label: String, fit: GumbelFit },
    Unavailable { unavailable: String },
}

/// Everything about one class/path/CPU stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StreamDoc {
    pub class: ClassName,
    pub policy: String,
    pub priority: Option<i32>,
    pub path: Path,
    pub cpu: usize,
    pub error: Option<String>,
    pub periods_planned: u64,
    pub periods: u64,
    pub woken: u64,
    pub missed: u64,
    pub measured_s: f64,
    pub cpu_time_ms: f64,
    /// The wakes the thread saw.
    pub raw: Distribution,
    /// Every period, missed ones with the lateness implied by the wake that served them.
    pub corrected: Distribution,
    pub histogram_corrected: StoredHistogram,
    #[serde(default)]
    pub windows: Vec<WindowSummary>,
    pub estimate: Estimate,
    #[serde(default)]
    pub buffers: Vec<BufferResult>,
    /// Each whole second: its percentiles and periods over the fixed thresholds (`seconds`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub seconds: Vec<SecondStats>,
    /// `--stages`: the timer path's wakes split into stages, keyed by stage name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stages: Option<StreamStages>,
    /// `--compute`: real underruns of the pipeline the thread fed, against the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compute: Option<ComputeResult>,
}

impl StreamDoc {
    pub fn of(r: &StreamResult) -> StreamDoc {
        let a: &Accounting = &r.acct;
        let measured_ns = a.periods() * a.period_ns;
        let mut windows = Vec::new();
        let mut estimate = Estimate::Unavailable {
            unavailable: "no complete 1 s window".to_string(),
        };
        for w in &a.windows {
            let maxima = a.complete_window_maxima(w);
            if let Some(s) = summarise_windows(w.name, &maxima) {
                windows.push(s);
            }
            if w.name == WINDOWS[0].0 {
                estimate = match fit_gumbel(w.name, w.width_ns as f64 / 1e9, &maxima) {
                    Ok(fit) => Estimate::Fitted {
                        label: "estimate (Gumbel fit of window maxima)".to_string(),
                        fit,
                    },
                    Err(why) => Estimate::Unavailable { unavailable: why },
                };
            }
        }
        StreamDoc {
            class: r.spec.class.name,
            policy: if r.spec.class.fifo.is_some() {
                "SCHED_FIFO"
            } else {
                "SCHED_OTHER"
            }
            .to_string(),
            priority: r.spec.class.fifo,
            path: r.spec.path,
            cpu: r.spec.cpu,
            error: r.error.clone(),
            periods_planned: r.periods_planned,
            periods: a.periods(),
            woken: a.woken,
            missed: a.missed,
            measured_s: measured_ns as f64 / 1e9,
            cpu_time_ms: r.cpu_ns as f64 / 1e6,
            raw: Distribution::of(&a.raw),
            corrected: Distribution::of(&a.corrected),
            histogram_corrected: StoredHistogram::of(&a.corrected),
            windows,
            estimate,
            buffers: a
                .buffers
                .iter()
                .map(|(c, t)| evaluate(c, t, measured_ns))
                .collect(),
            seconds: a.seconds.whole(a.period_ns, a.periods()),
            stages: None,
            compute: r.compute.clone(),
        }
    }

    /// `high/timer cpu1`: how tables and figures name the stream.
    pub fn label(&self) -> String {
        format!(
            "{}/{} cpu{}",
            self.class.as_str(),
            self.path.name(),
            self.cpu
        )
    }
}

#[cfg(test)]
impl LatencyDoc {
    /// A document around these streams with plain settings (1 ms period, one CPU, the timer
    /// path), for tests of what reads documents.
    pub fn for_tests(streams: Vec<StreamDoc>) -> LatencyDoc {
        let measured_s = streams.iter().map(|s| s.measured_s).fold(0.0, f64::max);
        LatencyDoc {
            schema: LATENCY_SCHEMA.into(),
            period_ns: 1_000_000,
            duration_s: measured_s,
            measured_s,
            cpus: vec![1],
            classes: Vec::new(),
            paths: vec![Path::Timer],
            skipped: Vec::new(),
            rttime_limit_us: 500_000,
            timer_slack_ns: 1,
            cpu_dma_latency_us: None,
            fail_over_ns: None,
            worst_ns: streams
                .iter()
                .map(|s| s.corrected.max_ns)
                .max()
                .unwrap_or(0),
            interrupted: false,
            loads: Vec::new(),
            episodes: None,
            stacks: None,
            causes: None,
            stage_capture: None,
            streams,
        }
    }
}
