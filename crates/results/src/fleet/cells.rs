//! One figure set against its class in every class that has it: each host's cell (its value, the
//! class's, the ratio and its interval), the hosts that changed, and each host's summary.

use super::*;

/// What every figure is set against: the listed runs, whose host each is, and the hosts of each
/// class (in the order of the classes).
pub(super) struct Across<'a> {
    pub(super) runs: &'a [RunInfo],
    pub(super) places: &'a [(usize, usize)],
    pub(super) numbers: &'a HashMap<&'a str, usize>,
    pub(super) members: &'a [&'a [String]],
    /// Each run's machine speed, where it was read (see [`machine::speeds`]).
    pub(super) speeds: &'a machine::Speeds,
    pub(super) query: &'a FleetQuery,
}

impl Across<'_> {
    /// One figure's row in each class that has values of it (by the class's place), and the
    /// changes of its hosts.
    pub(super) fn figure(
        &self,
        key: &str,
        values: &[RunValue],
        ranks: &mut MedianRanks,
    ) -> (Vec<(usize, FigureRow)>, Vec<HostChange>) {
        let (mut rows, mut changes) = (Vec::new(), Vec::new());
        let Some(first) = values.first() else {
            return (rows, changes);
        };
        let mut series = series_by_host(values, self.runs, self.places, self.numbers.len());
        for (class, hosts) in self.members.iter().enumerate() {
            let points: Vec<(String, Vec<Point>)> = hosts
                .iter()
                .map(|h| {
                    (
                        h.clone(),
                        std::mem::take(&mut series[self.numbers[h.as_str()]]),
                    )
                })
                .filter(|(_, points)| !points.is_empty())
                .collect();
            if points.is_empty() {
                continue;
            }
            let cells = current_cells(key, &points, self, &mut changes, ranks);
            rows.push((
                class,
                FigureRow {
                    figure: key.to_string(),
                    unit: first.unit,
                    direction: first.direction,
                    median: 0.0,
                    noise: Noise::default(),
                    cells,
                },
            ));
        }
        (rows, changes)
    }
}

/// Each host's cell from what it is now: where its series looks off the class, its latest
/// stretch (after its last change point, which goes to `changes`); elsewhere all its runs.
pub(super) fn current_cells(
    key: &str,
    rows: &[(String, Vec<Point>)],
    across: &Across,
    changes: &mut Vec<HostChange>,
    ranks: &mut MedianRanks,
) -> Vec<Cell> {
    let query = across.query;
    let config = crate::results::history::method_config();
    let value_median = |p: &[Point]| median_of(&mut p.iter().map(|x| x.value).collect::<Vec<_>>());
    let screen = median_of(
        &mut rows
            .iter()
            .map(|(_, p)| value_median(p))
            .collect::<Vec<_>>(),
    );
    let off = |v: f64| (v / screen - 1.0).abs() >= query.min_effect;
    let mut cells = Vec::new();
    for (host, points) in rows {
        let whole = value_median(points);
        let newest = points.last().map_or(whole, |p| p.value);
        let mut current: &[Point] = points;
        if points.len() >= 2 * config.min_segment && (off(whole) || off(newest)) {
            let values: Vec<f64> = points.iter().map(|p| p.value).collect();
            let cuts: Vec<usize> = e_divisive(&values, &config)
                .iter()
                .map(|c| c.index)
                .collect();
            if let Some(&last) = cuts.last() {
                let levels = segments(&values, &cuts);
                changes.push(HostChange {
                    host: host.clone(),
                    figure: key.to_string(),
                    run: points[last].run.id.clone(),
                    started_at: points[last].run.started_at.clone(),
                    before: levels[levels.len() - 2].level,
                    after: levels[levels.len() - 1].level,
                });
                current = &points[last..];
            }
        }
        let mut cell = host_cell(host, current, ranks);
        // The machine's speed over the very runs the value comes from.
        if let Some((ns, sd)) =
            machine::of_runs(across.speeds, current.iter().map(|p| p.run.id.as_str()))
        {
            (cell.machine_ns, cell.machine_sd) = (Some(ns), sd);
        }
        cells.push(cell);
    }
    cells
}

pub(super) fn wanted(key: &str, figures: &[String]) -> bool {
    figures.is_empty()
        || figures.iter().any(|f| {
            key == f
                || key
                    .strip_prefix(f.as_str())
                    .is_some_and(|rest| rest.starts_with(['.', ' ']))
        })
}

/// One run's value of a figure, in a host's series.
pub(super) struct Point<'a> {
    pub(super) run: &'a RunInfo,
    pub(super) value: f64,
    pub(super) interval: Option<[f64; 2]>,
}

/// The ranks of the 95 % interval of the median of n values ([`median_ci_ranks`]), worked out
/// once per n: a fleet's view asks for the same few n for every host and figure.
#[derive(Default)]
pub(super) struct MedianRanks(pub(super) HashMap<usize, (usize, usize)>);

impl MedianRanks {
    fn of(&mut self, n: usize) -> (usize, usize) {
        *self.0.entry(n).or_insert_with(|| {
            let (lo, hi, _) = median_ci_ranks(n, 0.95);
            (lo, hi)
        })
    }
}

/// A host's value now (median of the runs given) and its interval, not yet set against the class.
pub(super) fn host_cell(host: &str, points: &[Point], ranks: &mut MedianRanks) -> Cell {
    let mut sorted: Vec<f64> = points.iter().map(|p| p.value).collect();
    sorted.sort_by(f64::total_cmp);
    let value = median(&sorted);
    let interval = match sorted.len() {
        n if n >= 3 => {
            let (lo, hi) = ranks.of(n);
            [sorted[lo], sorted[hi]]
        }
        // Two runs: both runs' own intervals and both values, so that what moved the one run
        // against the other (a machine that drifted between them) counts as the host's noise,
        // as the order statistics of more runs count it.
        2 => points.iter().fold([value, value], |[lo, hi], p| {
            let [plo, phi] = p.interval.unwrap_or([p.value, p.value]);
            [lo.min(plo).min(p.value), hi.max(phi).max(p.value)]
        }),
        _ => points
            .last()
            .and_then(|p| p.interval)
            .unwrap_or([value, value]),
    };
    Cell {
        host: host.to_string(),
        value,
        // An interval always holds its estimate, and a positive figure's never goes below zero.
        interval: [interval[0].min(value).max(0.0), interval[1].max(value)],
        runs: sorted.len(),
        ratio: 1.0,
        ratio_interval: [1.0, 1.0],
        z: 0.0,
        p_value: 1.0,
        q_value: 1.0,
        outlier: false,
        slower: false,
        machine_ns: None,
        relative: None,
        cause: None,
        runs_to_decide: None,
        machine_sd: 0.0,
    }
}

pub(super) fn summarise(
    host: &str,
    hr: &HostRuns,
    classes: &BTreeMap<String, Class>,
) -> HostSummary {
    let class = &classes[&hr.class];
    let cells: Vec<&Cell> = class
        .figures
        .iter()
        .flat_map(|f| f.cells.iter())
        .filter(|c| c.host == host)
        .collect();
    let newest = hr.runs.last();
    HostSummary {
        host: host.to_string(),
        machine_id: newest.and_then(|r| r.machine_id.clone()),
        clock_off: newest
            .filter(|r| r.clock_off())
            .and_then(|r| r.clock_offset),
        class: hr.class.clone(),
        runs: hr.runs.len(),
        newest_run: hr.runs.last().map(|r| r.id.clone()).unwrap_or_default(),
        figures: cells.len(),
        slower: cells.iter().filter(|c| c.outlier && c.slower).count(),
        faster: cells.iter().filter(|c| c.outlier && !c.slower).count(),
    }
}
