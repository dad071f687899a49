//! A figure over the stored runs: its series, oldest run first, the points where it changed (found
//! by E-Divisive means, see `stats::changepoint`), and the level of each stretch between them.
//!
//! The values come from the store's `figures` table, so a fleet's history costs one row per run
//! rather than a whole run document. The search works on the ranks of the values within each
//! stretch it searches: a step is the same step at 100 ns as at 10 ms, and a few runs disturbed by
//! other work on the machine (a value several times the others) weigh no more than any other high
//! value, so they do not hide a step behind the spread they give.

pub mod text;

use crate::results::figure::Direction;
use crate::results::store::{RunFilter, RunInfo, Store};
use crate::stats::changepoint::{e_divisive, ChangePointConfig};
use crate::stats::segments::segments;
use crate::units::Unit;
use crate::usage;
use anyhow::Result;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// How change points are searched for; stated in every history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Method {
    pub name: String,
    /// A split is kept when its permutation p-value is below this.
    pub significance: f64,
    pub permutations: usize,
    /// Fewest runs on either side of a change.
    pub min_runs: usize,
    /// Whether the search ran on the ranks of the values within each stretch searched (robust
    /// to the odd disturbed run).
    pub ranks: bool,
}

/// One run's value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Point {
    pub run: String,
    pub started_at: String,
    pub host: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tags: BTreeMap<String, String>,
    pub value: f64,
    /// The run's own 95 % interval of the value, where it has one.
    pub interval: Option<[f64; 2]>,
}

/// A stretch of runs between change points.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Segment {
    /// Index in `points` of its first run, and one past its last.
    pub start: usize,
    pub end: usize,
    pub first_run: String,
    pub last_run: String,
    /// Median of the runs' values.
    pub level: f64,
    /// Order-statistic interval of that median.
    pub interval: [f64; 2],
    /// The interval's coverage: 0.95 or more, less when the stretch has too few runs for it.
    pub coverage: f64,
}

/// Faster or slower, in the figure's direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Move {
    Faster,
    Slower,
}

/// A change point: where one stretch ends and the next begins.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Change {
    /// Index in `points` of the first run after the change.
    pub index: usize,
    pub run: String,
    pub started_at: String,
    /// Permutation p-value of the split when it was accepted.
    pub p_value: f64,
    /// Levels of the stretches before and after.
    pub before: f64,
    pub after: f64,
    /// How many times better the stretch after is (below 1: slower), whatever the direction.
    pub speedup: f64,
    pub moved: Move,
}

/// A run that matched but was left out of the series, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LeftOut {
    pub run: String,
    pub reason: String,
}

/// `osmeter history FIGURE`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FigureHistory {
    pub figure: String,
    pub unit: Unit,
    pub direction: Direction,
    pub store: String,
    pub method: Method,
    /// Oldest run first.
    pub points: Vec<Point>,
    pub changes: Vec<Change>,
    pub segments: Vec<Segment>,
    /// Runs that matched the filters but do not state this figure (another kind or suite).
    pub runs_without_figure: usize,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<LeftOut>,
}

impl FigureHistory {
    /// The latest change when it made the figure slower by more than `pct` percent (the same
    /// measure as `compare --fail-if-slower`: a speed-up below 1 - pct/100), and only when the
    /// newest run is in the stretch after it.
    pub fn slower_than(&self, pct: f64) -> Option<&Change> {
        let last = self.changes.last()?;
        (last.moved == Move::Slower && last.speedup < 1.0 - pct / 100.0).then_some(last)
    }
}

/// What to fetch.
#[derive(Debug, Clone, Default)]
pub struct HistoryQuery {
    pub figure: String,
    pub filter: RunFilter,
    /// Keep runs measured on a busy machine (left out otherwise: their values hold the other
    /// work, and a change point between them and quiet runs is no change of the system).
    pub include_busy: bool,
}

/// The search's settings: stricter than the module's default (1 % rather than 5 %), since a
/// history is read again at every CI run and a false alarm fails a build.
pub fn method_config() -> ChangePointConfig {
    ChangePointConfig {
        min_segment: 3,
        significance: 0.01,
        permutations: 499,
        ranks: true,
        ..ChangePointConfig::default()
    }
}

/// The history of one figure over the runs the filter keeps.
pub fn history(store: &mut dyn Store, query: &HistoryQuery) -> Result<FigureHistory> {
    let key = query.figure.trim();
    if key.is_empty() {
        return Err(usage!(
            "an empty figure names nothing: give a figure's key as `osmeter show RUN` prints it, \
             e.g. syscall.null"
        ));
    }
    if store.ids()?.is_empty() {
        return Err(usage!(
            "the store {} holds no runs yet: `osmeter run` measures and keeps one",
            store.describe()
        ));
    }
    let stored = store.figure_values(key)?;
    if stored.is_empty() {
        return Err(unknown_figure(store, key));
    }
    let mut runs: Vec<RunInfo> = store.list(&query.filter)?;
    if runs.is_empty() {
        return Err(usage!(
            "no run in {} matches {}: `osmeter runs` with the same filters shows what there is",
            store.describe(),
            describe_filter(&query.filter)
        ));
    }
    runs.reverse(); // oldest first
    let by_run: BTreeMap<&str, &crate::results::store::StoredFigure> =
        stored.iter().map(|s| (s.run_id.as_str(), s)).collect();
    let matched: Vec<(&RunInfo, &crate::results::store::StoredFigure)> = runs
        .iter()
        .filter_map(|r| Some((r, *by_run.get(r.id.as_str())?)))
        .collect();
    let Some(&(_, newest)) = matched.last() else {
        return Err(usage!(
            "{key:?} is stored, but none of the {} runs matching {} states it: widen the filters \
             (`osmeter runs` lists the runs)",
            runs.len(),
            describe_filter(&query.filter)
        ));
    };
    // One unit and direction: a key another kind of run uses in another unit is not this figure.
    let (unit, direction) = (newest.unit, newest.direction);
    let mut left_out = Vec::new();
    let mut points = Vec::new();
    for (info, s) in &matched {
        if info.busy && !query.include_busy {
            left_out.push(LeftOut {
                run: info.id.clone(),
                reason: "measured on a busy machine (--include-busy takes it in)".to_string(),
            });
        } else if s.unit != unit || s.direction != direction {
            left_out.push(LeftOut {
                run: info.id.clone(),
                reason: format!("states {key} in {} rather than {unit}", s.unit),
            });
        } else if !s.value.is_finite() {
            left_out.push(LeftOut {
                run: info.id.clone(),
                reason: "its value is not a number".to_string(),
            });
        } else {
            points.push(Point {
                run: info.id.clone(),
                started_at: info.started_at.clone(),
                host: info.host.clone(),
                tags: info.tags.clone(),
                value: s.value,
                interval: s.interval,
            });
        }
    }
    let config = method_config();
    let values: Vec<f64> = points.iter().map(|p| p.value).collect();
    let found = e_divisive(&values, &config);
    let cuts: Vec<usize> = found.iter().map(|c| c.index).collect();
    let p_values: BTreeMap<usize, f64> = found.iter().map(|c| (c.index, c.p_value)).collect();
    let stretches = segments(&values, &cuts);
    let changes = stretches
        .windows(2)
        .map(|w| {
            let speedup = direction.speedup(w[0].level, w[1].level);
            let p = &points[w[1].start];
            Change {
                index: w[1].start,
                run: p.run.clone(),
                started_at: p.started_at.clone(),
                p_value: p_values.get(&w[1].start).copied().unwrap_or(f64::NAN),
                before: w[0].level,
                after: w[1].level,
                speedup,
                moved: if speedup < 1.0 {
                    Move::Slower
                } else {
                    Move::Faster
                },
            }
        })
        .collect();
    let segments = stretches
        .iter()
        .map(|s| Segment {
            start: s.start,
            end: s.end,
            first_run: points[s.start].run.clone(),
            last_run: points[s.end - 1].run.clone(),
            level: s.level,
            interval: s.interval,
            coverage: s.coverage,
        })
        .collect();
    Ok(FigureHistory {
        figure: key.to_string(),
        unit,
        direction,
        store: store.describe(),
        method: Method {
            name: "E-Divisive means".to_string(),
            significance: config.significance,
            permutations: config.permutations,
            min_runs: config.min_segment,
            ranks: config.ranks,
        },
        runs_without_figure: runs.len() - matched.len(),
        points,
        changes,
        segments,
        left_out,
    })
}

fn unknown_figure(store: &mut dyn Store, key: &str) -> anyhow::Error {
    let keys = match store.figure_keys() {
        Ok(k) => k,
        Err(e) => return e,
    };
    let near = crate::suggest::closest(key, keys.iter().map(String::as_str));
    let hint = if near.is_empty() {
        String::new()
    } else {
        format!(" (did you mean {}?)", near.join(", "))
    };
    usage!(
        "no run in {} states a figure {key:?}{hint}: give a figure's key as `osmeter show RUN` \
         prints it, e.g. syscall.null or \"ipc.pipe_pingpong placement=cross\"",
        store.describe()
    )
}

fn describe_filter(f: &RunFilter) -> String {
    let mut parts = Vec::new();
    if let Some(h) = &f.host {
        parts.push(format!("--host {h}"));
    }
    if let Some(s) = &f.suite {
        parts.push(format!("--suite {s}"));
    }
    parts.extend(f.tags.iter().map(|(k, v)| format!("--tag {k}={v}")));
    if let Some(s) = &f.since {
        parts.push(format!("--since {s}"));
    }
    if parts.is_empty() {
        "the filters".to_string()
    } else {
        parts.join(" ")
    }
}
