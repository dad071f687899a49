//! Which hosts of a fleet are off, and since when. Hosts of one class (same CPU model and count,
//! kernel release and preemption model, from each host's newest fingerprint) are set against the
//! class's own median, figure by figure: a host's value is the median of its runs in the window,
//! its distance from the class is judged on a log scale against a noise (see [`judge`]: the
//! spread between hosts where a class has enough of them, else each host's own runs), and the
//! many host x figure tests are held to a false-discovery rate (Benjamini-Hochberg). For each
//! host called off, the change points of its series say when it moved.
//!
//! Values come from the store's `figures` table, one row per run and figure, read for the listed
//! runs in one statement; each host's class comes from the listing (the store keeps it beside
//! each run), so a fleet of many runs stays cheap. Only the classes too small to measure the
//! spread between their hosts read run documents, a few per host, for the machine's own speed
//! each run read (see [`machine`]).

mod cells;
pub mod html;
mod judge;
pub mod machine;
pub mod text;

pub use judge::{Cause, Noise, Relative, SPREAD_HOSTS};

use cells::{summarise, wanted, Across, MedianRanks, Point};

use crate::results::figure::Direction;
use crate::results::store::{RunFilter, RunInfo, RunValue, Store};
use crate::stats::changepoint::e_divisive;
use crate::stats::segments::segments;
use crate::stats::summary::{median, median_ci_ranks, median_of};
use crate::units::Unit;
use crate::usage;
use anyhow::Result;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

/// Fewest hosts in a class for a median to set them against.
pub const MIN_HOSTS: usize = 3;

/// What to compare.
#[derive(Debug, Clone)]
pub struct FleetQuery {
    pub filter: RunFilter,
    /// Figure keys, or group prefixes such as `syscall`; empty: every figure.
    pub figures: Vec<String>,
    /// False-discovery rate of the outlier calls.
    pub alpha: f64,
    /// Smallest distance from the class median worth calling, as a fraction (0.03: 3 %).
    pub min_effect: f64,
}

impl Default for FleetQuery {
    fn default() -> FleetQuery {
        FleetQuery {
            filter: RunFilter::default(),
            figures: Vec::new(),
            alpha: 0.05,
            min_effect: 0.03,
        }
    }
}

/// How hosts were judged; stated in every report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Method {
    pub alpha: f64,
    pub min_effect: f64,
    pub min_hosts: usize,
    /// Fewest hosts whose spread is the noise a figure is judged on; below, each host's own
    /// runs are (see [`judge`]).
    #[serde(default)]
    pub spread_hosts: usize,
    pub class_of: String,
}

/// One host's standing on one figure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Cell {
    pub host: String,
    /// Median of the host's runs in the window.
    pub value: f64,
    /// 95 % interval of that value (order statistics over its runs, or the run's own interval).
    pub interval: [f64; 2],
    pub runs: usize,
    /// value / class median, and its interval.
    pub ratio: f64,
    pub ratio_interval: [f64; 2],
    /// Distance from the class median in robust standard deviations (log scale).
    pub z: f64,
    pub p_value: f64,
    /// p-value adjusted for the number of tests (Benjamini-Hochberg).
    pub q_value: f64,
    pub outlier: bool,
    /// Worse than the class, in the figure's direction.
    pub slower: bool,
    /// The host's machine speed over the runs judged: its CPU yardstick, in nanoseconds per step
    /// (see [`machine`]), where those runs read one (classes judged on their own runs only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine_ns: Option<f64>,
    /// The same judgement with each host's value taken relative to its machine's speed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relative: Option<Relative>,
    /// For a host called off: whether it holds relative to its machine's speed too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause: Option<Cause>,
    /// For a host not called although it is at least the smallest distance worth calling away
    /// from its class: how many runs each host would need for the distance to be decided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runs_to_decide: Option<usize>,
    /// The uncertainty of `machine_ns` (a standard deviation on the log scale).
    #[serde(skip)]
    pub(crate) machine_sd: f64,
}

/// One figure across the hosts of one class.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FigureRow {
    pub figure: String,
    pub unit: Unit,
    pub direction: Direction,
    /// Median of the hosts' values.
    pub median: f64,
    /// What the hosts' distances were judged against.
    #[serde(default)]
    pub noise: Noise,
    pub cells: Vec<Cell>,
}

/// Hosts that share CPU model, CPU count, kernel and preemption model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Class {
    pub name: String,
    pub hosts: Vec<String>,
    pub figures: Vec<FigureRow>,
    /// Why the class was not judged (fewer than [`MIN_HOSTS`] hosts), if it was not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_judged: Option<String>,
}

/// When a host that is off moved, from the change points of its series.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct HostChange {
    pub host: String,
    pub figure: String,
    pub run: String,
    pub started_at: String,
    pub before: f64,
    pub after: f64,
}

/// One host in a line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct HostSummary {
    /// The host name, with the machine id beside it (`name [id]`) when another machine goes by
    /// the same name.
    pub host: String,
    /// The machine id (a keyed hash, see the fingerprint) of the host's newest run.
    #[serde(default)]
    pub machine_id: Option<String>,
    /// How far the host's clock was ahead of the store's (seconds, negative: behind) when its
    /// newest run arrived, where that was more than the tolerance: its runs are then placed by
    /// the store's clock, not its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_off: Option<f64>,
    pub class: String,
    pub runs: usize,
    pub newest_run: String,
    pub figures: usize,
    pub slower: usize,
    pub faster: usize,
}

/// `osmeter fleet`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FleetReport {
    pub store: String,
    pub method: Method,
    pub classes: Vec<Class>,
    pub hosts: Vec<HostSummary>,
    pub changes: Vec<HostChange>,
    /// Runs left out, and why (no host name, an unreadable document).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<(String, String)>,
}

impl FleetReport {
    pub fn outliers(&self) -> impl Iterator<Item = (&FigureRow, &Cell)> {
        self.classes
            .iter()
            .flat_map(|c| c.figures.iter())
            .flat_map(|f| f.cells.iter().filter(|c| c.outlier).map(move |c| (f, c)))
    }

    /// Host x figure pairs not called off though they are at least the smallest distance worth
    /// calling away from their class: too few runs to tell (never to be read as fine).
    pub fn undecided(&self) -> impl Iterator<Item = (&FigureRow, &Cell)> {
        self.classes
            .iter()
            .flat_map(|c| c.figures.iter())
            .flat_map(|f| {
                f.cells
                    .iter()
                    .filter(|c| c.runs_to_decide.is_some())
                    .map(move |c| (f, c))
            })
    }
}

pub(crate) struct HostRuns<'a> {
    /// Oldest first.
    pub(crate) runs: Vec<&'a RunInfo>,
    class: String,
}

pub fn fleet(store: &mut dyn Store, query: &FleetQuery) -> Result<FleetReport> {
    let mut runs = store.list_untagged(&query.filter)?;
    if runs.is_empty() {
        return Err(usage!(
            "no run in {} matches the filters: `osmeter runs` with the same filters shows what \
             there is",
            store.describe()
        ));
    }
    runs.reverse(); // oldest first
    let mut left_out = Vec::new();
    let names = host_names(&runs);
    let hosts = hosts_of(store, &runs, &names, &mut left_out)?;
    // Hosts by number (their place in `hosts`), and each listed run's place and host.
    let numbers: HashMap<&str, usize> = hosts
        .keys()
        .enumerate()
        .map(|(n, h)| (h.as_str(), n))
        .collect();
    let places = run_places(&names, &numbers);
    let listed: Vec<&str> = places.iter().map(|&(i, _)| runs[i].id.as_str()).collect();
    let values: Vec<(String, Vec<RunValue>)> = store
        .figure_values_of(&listed)?
        .into_iter()
        .filter(|(k, _)| wanted(k, &query.figures))
        .collect();
    // Only when the listed runs state no figure asked for: whether any stored run does.
    if values.is_empty()
        && !store
            .figure_keys()?
            .iter()
            .any(|k| wanted(k, &query.figures))
    {
        return Err(usage!(
            "no stored figure matches {}: `osmeter show RUN` lists a run's figures",
            query.figures.join(", ")
        ));
    }
    let mut classes = classes_of(&hosts);
    let speeds = machine::speeds(store, &hosts, &classes);
    // The figures apart, on every CPU; their rows and changes are then taken in figure order.
    let members: Vec<&[String]> = classes.values().map(|c| c.hosts.as_slice()).collect();
    let across = Across {
        runs: &runs,
        places: &places,
        numbers: &numbers,
        members: &members,
        speeds: &speeds,
        query,
    };
    let figures = crate::parallel::by_parts(&values, |part| {
        let mut ranks = MedianRanks::default();
        part.iter()
            .map(|(key, values)| across.figure(key, values, &mut ranks))
            .collect()
    });
    let mut changes = Vec::new();
    let mut order: Vec<&mut Class> = classes.values_mut().collect();
    for (rows, found) in figures {
        for (class, row) in rows {
            order[class].figures.push(row);
        }
        changes.extend(found);
    }
    judge::judge(&mut classes, query);
    // Only the changes of hosts called off are news.
    changes.retain(|c| {
        classes.values().any(|cl| {
            cl.figures.iter().any(|f| {
                f.figure == c.figure && f.cells.iter().any(|x| x.host == c.host && x.outlier)
            })
        })
    });
    let summaries = hosts
        .iter()
        .map(|(host, hr)| summarise(host, hr, &classes))
        .collect();
    Ok(FleetReport {
        store: store.describe(),
        method: Method {
            alpha: query.alpha,
            min_effect: query.min_effect,
            min_hosts: MIN_HOSTS,
            spread_hosts: SPREAD_HOSTS,
            class_of: "CPU model and count, kernel release, preemption model".to_string(),
        },
        classes: classes.into_values().collect(),
        hosts: summaries,
        changes,
        left_out,
    })
}

/// The name each run's host goes by in the report, beside `runs`: its host name, or, where runs of
/// one name come from more than one machine (two hosts given the same name), the name with the
/// machine id. A run without a machine id (stored by an osmeter that did not keep it) joins the
/// one machine of its name, or stands apart when there are several.
pub fn host_names(runs: &[RunInfo]) -> Vec<Option<String>> {
    let mut machines: BTreeMap<&str, std::collections::BTreeSet<&str>> = BTreeMap::new();
    for r in runs {
        if let Some(h) = &r.host {
            let ids = machines.entry(h.as_str()).or_default();
            ids.extend(r.machine_id.as_deref());
        }
    }
    runs.iter()
        .map(|r| {
            let host = r.host.as_ref()?;
            Some(if machines[host.as_str()].len() > 1 {
                // Eight hex digits tell a handful of machines of one name apart.
                let id = r
                    .machine_id
                    .as_deref()
                    .map_or("no id", |m| m.get(..8).unwrap_or(m));
                format!("{host} [{id}]")
            } else {
                host.clone()
            })
        })
        .collect()
}

/// The runs of each host, oldest first, and the host's class from its newest run's fingerprint
/// (as the store keeps it; read from the document only where the store could not).
fn hosts_of<'a>(
    store: &mut dyn Store,
    runs: &'a [RunInfo],
    names: &[Option<String>],
    left_out: &mut Vec<(String, String)>,
) -> Result<BTreeMap<String, HostRuns<'a>>> {
    let mut by_host: BTreeMap<String, Vec<&RunInfo>> = BTreeMap::new();
    for (r, name) in runs.iter().zip(names) {
        match name {
            Some(h) => by_host.entry(h.clone()).or_default().push(r),
            None => left_out.push((r.id.clone(), "its fingerprint names no host".to_string())),
        }
    }
    let mut hosts = BTreeMap::new();
    for (host, host_runs) in by_host {
        let newest = host_runs.last().expect("a host has a run");
        let class = match &newest.host_class {
            Some(class) => class.clone(),
            None => match store.load(&newest.id)? {
                Some(run) => run.class(),
                None => "unknown machine".to_string(),
            },
        };
        hosts.insert(
            host,
            HostRuns {
                runs: host_runs,
                class,
            },
        );
    }
    Ok(hosts)
}

fn classes_of(hosts: &BTreeMap<String, HostRuns>) -> BTreeMap<String, Class> {
    let mut classes: BTreeMap<String, Class> = BTreeMap::new();
    for (host, hr) in hosts {
        classes
            .entry(hr.class.clone())
            .or_insert_with(|| Class {
                name: hr.class.clone(),
                hosts: Vec::new(),
                figures: Vec::new(),
                not_judged: None,
            })
            .hosts
            .push(host.clone());
    }
    classes
}

/// Each run of a host: where it stands in `runs` (oldest first), and the host's number.
fn run_places(names: &[Option<String>], numbers: &HashMap<&str, usize>) -> Vec<(usize, usize)> {
    names
        .iter()
        .enumerate()
        .filter_map(|(i, name)| Some((i, *numbers.get(name.as_deref()?)?)))
        .collect()
}

/// One figure's values (of the runs `places` gives) as each host's series, oldest run first,
/// by host number.
fn series_by_host<'a>(
    values: &[RunValue],
    runs: &'a [RunInfo],
    places: &[(usize, usize)],
    hosts: usize,
) -> Vec<Vec<Point<'a>>> {
    let mut series: Vec<Vec<(usize, Point)>> = (0..hosts).map(|_| Vec::new()).collect();
    for v in values {
        let (index, host) = places[v.run];
        if v.value.is_finite() && v.value > 0.0 {
            series[host].push((
                index,
                Point {
                    run: &runs[index],
                    value: v.value,
                    interval: v.interval,
                },
            ));
        }
    }
    series
        .into_iter()
        .map(|mut points| {
            points.sort_by_key(|(index, _)| *index);
            points.into_iter().map(|(_, p)| p).collect()
        })
        .collect()
}

#[cfg(test)]
mod tests;
