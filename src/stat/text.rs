//! What `osmeter stat` reports: the figures taken from each run, their summaries, and the table.

use super::document::{FigureSummary, RunRecord, StatDoc, StatUnit, STAT_SCHEMA};
use crate::results::model::{CounterScopes, CounterValues};
use crate::stats::summary as stats;
use crate::text::command_line;
use crate::units::{number, Unit};
use std::collections::BTreeMap;
use std::fmt::Write as _;

impl FigureSummary {
    fn of(unit: StatUnit, xs: &[f64]) -> Self {
        let mean = stats::mean(xs);
        let sd = stats::stddev(xs);
        FigureSummary {
            unit,
            n: xs.len(),
            mean,
            // Every stat figure is a time, a size or a count.
            ci95: stats::mean_ci95_nonnegative(xs),
            stddev: sd,
            cv: stats::cv(xs).unwrap_or(0.0),
            min: xs.iter().copied().fold(f64::INFINITY, f64::min),
            max: xs.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        }
    }
}

/// Event names in the order they are shown: software first, then hardware.
const EVENT_ORDER: &[&str] = &[
    "task-clock",
    "page-faults",
    "minor-faults",
    "major-faults",
    "context-switches",
    "cpu-migrations",
    "cycles",
    "instructions",
    "branch-misses",
    "stalled-cycles-frontend",
    "stalled-cycles-backend",
    "L1-dcache-load-misses",
    "L1-icache-load-misses",
    "LLC-load-misses",
    "dTLB-load-misses",
    "iTLB-load-misses",
];

/// One figure: key, label for the table, unit, and its value in each run that has one.
pub struct StatFigure {
    pub key: String,
    pub label: String,
    pub unit: StatUnit,
    pub values: Vec<f64>,
}

fn scope_values<'a>(c: &'a CounterScopes, scope: &str) -> &'a CounterValues {
    match scope {
        "software" => &c.software,
        "user" => &c.user,
        _ => &c.kernel,
    }
}

/// A figure every run has.
fn every_run(
    runs: &[RunRecord],
    key: &str,
    label: &str,
    unit: StatUnit,
    f: impl Fn(&RunRecord) -> f64,
) -> StatFigure {
    StatFigure {
        key: key.to_string(),
        label: label.to_string(),
        unit,
        values: runs.iter().map(f).collect(),
    }
}

fn figures(runs: &[RunRecord]) -> Vec<StatFigure> {
    let mut out = vec![
        every_run(runs, "time:wall", "wall time", StatUnit::Nanoseconds, |r| {
            r.wall_ns as f64
        }),
        every_run(runs, "time:user", "user time", StatUnit::Nanoseconds, |r| {
            r.user_ns as f64
        }),
        every_run(
            runs,
            "time:system",
            "system time",
            StatUnit::Nanoseconds,
            |r| r.system_ns as f64,
        ),
        every_run(
            runs,
            "rusage:max-rss",
            "max resident set",
            StatUnit::KiB,
            |r| r.max_rss_kib as f64,
        ),
        every_run(
            runs,
            "rusage:csw-voluntary",
            "voluntary switches",
            StatUnit::Count,
            |r| r.csw_voluntary as f64,
        ),
        every_run(
            runs,
            "rusage:csw-involuntary",
            "involuntary switches",
            StatUnit::Count,
            |r| r.csw_involuntary as f64,
        ),
    ];
    for scope in ["software", "user", "kernel"] {
        let map = |c| scope_values(c, scope);
        for name in EVENT_ORDER {
            let values: Vec<f64> = runs
                .iter()
                .filter_map(|r| map(&r.counters).get(*name).copied())
                .collect();
            if values.is_empty() {
                continue;
            }
            let (unit, label) = match (scope, *name) {
                (_, "task-clock") => (StatUnit::Nanoseconds, "task-clock".to_string()),
                ("software", n) => (StatUnit::Count, n.to_string()),
                (s, n) => (StatUnit::Count, format!("{n} ({s})")),
            };
            out.push(StatFigure {
                key: format!("{scope}:{name}"),
                label,
                unit,
                values,
            });
        }
        // Instructions per cycle, run by run, where both were counted.
        let ipc: Vec<f64> = runs
            .iter()
            .filter_map(|r| {
                let m = map(&r.counters);
                Some(m.get("instructions")? / m.get("cycles").filter(|c| **c > 0.0)?)
            })
            .collect();
        if !ipc.is_empty() {
            out.push(StatFigure {
                key: format!("{scope}:insn-per-cycle"),
                label: format!("insn per cycle ({scope})"),
                unit: StatUnit::Ratio,
                values: ipc,
            });
        }
    }
    out.push(every_run(
        runs,
        "system:irq-timer",
        "timer interrupts, all CPUs",
        StatUnit::Count,
        |r| r.irq_timer as f64,
    ));
    out.push(every_run(
        runs,
        "system:irq-other",
        "other interrupts, all CPUs",
        StatUnit::Count,
        |r| r.irq_other as f64,
    ));
    out.push(every_run(
        runs,
        "system:steal",
        "stolen by hypervisor",
        StatUnit::Milliseconds,
        |r| r.steal_ms,
    ));
    out
}

impl StatDoc {
    /// The document of a set of runs, with a summary of every figure.
    pub fn new(
        argv: &[String],
        repeat: usize,
        runs: Vec<RunRecord>,
        counters_unavailable: BTreeMap<String, String>,
        failure: Option<String>,
        interrupted: bool,
    ) -> StatDoc {
        let summary = figures(&runs)
            .into_iter()
            .map(|f| (f.key, FigureSummary::of(f.unit, &f.values)))
            .collect();
        StatDoc {
            schema: STAT_SCHEMA.to_string(),
            command: argv.to_vec(),
            repeat,
            counters_scaled: runs.iter().any(|r| r.counters.scaled),
            runs,
            summary,
            counters_unavailable,
            failure,
            interrupted,
        }
    }

    /// Every figure with its value in each run that has one, in table order.
    pub fn figures(&self) -> Vec<StatFigure> {
        figures(&self.runs)
    }
}

impl StatUnit {
    /// The general unit, and the factor from this unit's values to it.
    pub fn general(self) -> (Unit, f64) {
        match self {
            StatUnit::Nanoseconds => (Unit::Nanoseconds, 1.0),
            StatUnit::Milliseconds => (Unit::Nanoseconds, 1e6),
            StatUnit::KiB => (Unit::Bytes, 1024.0),
            StatUnit::Count => (Unit::Count, 1.0),
            StatUnit::Ratio => (Unit::Ratio, 1.0),
        }
    }
}

/// The terminal report. Written after the command's own output.
/// Several commands set against the fastest by wall time: how many times faster it ran than each
/// other one, with the 95 % interval of that ratio (Welch's test on the logarithms of the runs'
/// wall times, so the ratio is of geometric means and its interval never reaches below zero).
pub fn render_comparison(docs: &[StatDoc]) -> String {
    let walls: Vec<Vec<f64>> = docs
        .iter()
        .map(|d| d.runs.iter().map(|r| r.wall_ns as f64).collect())
        .collect();
    let log_mean = |w: &[f64]| w.iter().map(|x| x.ln()).sum::<f64>() / w.len() as f64;
    // A command that failed ran only up to its failure: its times are not its speed.
    let comparable = |i: usize| !walls[i].is_empty() && docs[i].failure.is_none();
    let Some(fastest) = (0..docs.len())
        .filter(|&i| comparable(i))
        .min_by(|&a, &b| log_mean(&walls[a]).total_cmp(&log_mean(&walls[b])))
    else {
        return String::new();
    };
    let name = |i: usize| format!("`{}`", command_line(&docs[i].command));
    let mut out = format!("\n{} ran fastest (wall time):\n", name(fastest));
    for other in (0..docs.len()).filter(|&i| i != fastest) {
        if !comparable(other) {
            let _ = writeln!(out, "  not compared with {}: it failed", name(other));
            continue;
        }
        let test = crate::stats::twosample::log_ratio_test(&walls[fastest], &walls[other], 0.95);
        let _ = match test {
            Ok(t) => {
                let shown_none = if t.ci[0] <= 1.0 {
                    ": no difference shown"
                } else {
                    ""
                };
                writeln!(
                    out,
                    "  {:.2} times faster than {} (95 % interval {:.2}-{:.2}{shown_none})",
                    t.ratio,
                    name(other),
                    t.ci[0],
                    t.ci[1]
                )
            }
            Err(why) => writeln!(out, "  than {}: not compared ({why})", name(other)),
        };
    }
    out
}

pub fn render(doc: &StatDoc) -> String {
    let mut out = String::new();
    let n = doc.runs.len();
    let _ = writeln!(
        out,
        "\nosmeter stat: `{}`, {n} run{}{}",
        command_line(&doc.command),
        if n == 1 { "" } else { "s" },
        if n < doc.repeat {
            format!(" of {} asked", doc.repeat)
        } else {
            String::new()
        }
    );
    let _ = writeln!(
        out,
        "\n  {:<28} {:>10} {:>21} {:<4} {:>7}",
        "figure", "mean", "95% CI of the mean", "unit", "CV"
    );
    let figs = figures(&doc.runs);
    let wall = stats::mean(&figs[0].values);
    for f in &figs {
        let s = FigureSummary::of(f.unit, &f.values);
        let (unit, factor) = f.unit.general();
        let scale = unit.scale_for(s.mean * factor);
        let shown = |v: f64| number(v * factor / scale.divisor);
        let (ci, cv) = if s.n < 2 {
            ("-".to_string(), "-".to_string())
        } else {
            let [lo, hi] = s.ci95;
            (
                format!("{} - {}", shown(lo), shown(hi)),
                format!("{:.1}%", s.cv * 100.0),
            )
        };
        let line = format!(
            "  {:<28} {:>10} {:>21} {:<4} {:>7}",
            f.label,
            shown(s.mean),
            ci,
            scale.name,
            cv
        );
        let mut notes = Vec::new();
        if f.key == "software:task-clock" && wall > 0.0 {
            notes.push(format!("{:.2} CPUs utilized", s.mean / wall));
        }
        if s.n < n {
            notes.push(format!("({} of {n} runs)", s.n));
        }
        let line = line.trim_end();
        let beside = format!("{line}   {}", notes.join("   "));
        let width = crate::columns::width().unwrap_or(usize::MAX);
        if notes.is_empty() {
            let _ = writeln!(out, "{line}");
        } else if beside.chars().count() <= width {
            let _ = writeln!(out, "{beside}");
        } else {
            // A narrow terminal: the notes go under the figure's line rather than past its edge.
            let _ = writeln!(out, "{line}\n    {}", notes.join("   "));
        }
    }
    if let Some(note) = cold_first_run(&doc.runs) {
        out.push('\n');
        out.push_str(&wrap(2, "", note.split(' '), crate::columns::prose_width()));
    }
    if doc.counters_scaled {
        let _ = writeln!(
            out,
            "\n  Some counts were multiplexed and are scaled by time enabled / time running."
        );
    }
    if !doc.counters_unavailable.is_empty() {
        let _ = writeln!(out, "\n  Not counted here:");
        for ReasonGroup { reason, by_scopes } in group_unavailable(&doc.counters_unavailable) {
            for (scopes, names) in by_scopes {
                let list = names.join(", ");
                out.push_str(&wrap(
                    4,
                    &format!("{scopes}: "),
                    list.split(' '),
                    crate::columns::prose_width(),
                ));
            }
            out.push_str(&wrap(
                6,
                "",
                reason.split(' '),
                crate::columns::prose_width(),
            ));
        }
    }
    out
}

/// How much slower than the others' median the first run must be to be called cold.
const COLD_FIRST: f64 = 2.0;

/// A note when the first measured run took far longer than the others (it filled the caches the
/// others then found full): its wall time dominates the mean, the interval and the variation, and
/// the reader should know why rather than distrust every figure.
fn cold_first_run(runs: &[RunRecord]) -> Option<String> {
    let (first, rest) = runs.split_first()?;
    if rest.len() < 2 {
        return None;
    }
    let mut others: Vec<f64> = rest.iter().map(|r| r.wall_ns as f64).collect();
    others.sort_by(f64::total_cmp);
    let median = others[others.len() / 2];
    let first = first.wall_ns as f64;
    (median > 0.0 && first > COLD_FIRST * median).then(|| {
        format!(
            "The first run took {}, {:.1} times the others' median ({}): it filled caches the \
             others found full, and it alone makes the wall time's interval wide. `--warmup 1` \
             runs the command once first, unmeasured.",
            crate::units::duration(first),
            first / median,
            crate::units::duration(median)
        )
    })
}

/// `head` then the words, wrapped at `width` columns with continuation lines aligned after `head`;
/// every line starts with `margin` spaces.
fn wrap<'a>(
    margin: usize,
    head: &str,
    words: impl Iterator<Item = &'a str>,
    width: usize,
) -> String {
    let indent = margin + head.len();
    let mut out = format!("{:margin$}{head}", "");
    let mut col = indent;
    for word in words {
        if col > indent && col + 1 + word.len() > width {
            let _ = write!(out, "\n{:indent$}", "");
            col = indent;
        } else if col > indent {
            out.push(' ');
            col += 1;
        }
        out.push_str(word);
        col += word.len();
    }
    out.push('\n');
    out
}

/// Events missing for one reason: (scopes, e.g. "user, kernel", and the events missing in exactly
/// those scopes).
struct ReasonGroup {
    reason: String,
    by_scopes: Vec<(String, Vec<String>)>,
}

/// Unavailable events grouped by reason, then by the set of scopes they are missing in:
/// "user, kernel" -> [cycles, instructions, ...].
fn group_unavailable(map: &BTreeMap<String, String>) -> Vec<ReasonGroup> {
    // Reason -> event name -> scopes it is missing in, in first-seen order.
    type Missing<'a> = Vec<(&'a str, Vec<&'a str>)>;
    let mut by_reason: Vec<(&str, Missing)> = Vec::new();
    for (key, reason) in map {
        let (scope, name) = key.split_once(':').unwrap_or(("", key));
        let idx = match by_reason.iter().position(|(r, _)| r == reason) {
            Some(i) => i,
            None => {
                by_reason.push((reason, Vec::new()));
                by_reason.len() - 1
            }
        };
        let names = &mut by_reason[idx].1;
        match names.iter_mut().find(|(n, _)| *n == name) {
            Some((_, scopes)) => scopes.push(scope),
            None => names.push((name, vec![scope])),
        }
    }
    let event_rank = |n: &str| {
        EVENT_ORDER
            .iter()
            .position(|e| *e == n)
            .unwrap_or(usize::MAX)
    };
    let scope_rank = |s: &&str| ["user", "kernel", "software"].iter().position(|x| x == s);
    by_reason
        .into_iter()
        .map(|(reason, mut names)| {
            names.sort_by_key(|(n, _)| event_rank(n));
            let mut by_scopes: Vec<(String, Vec<String>)> = Vec::new();
            for (name, mut scopes) in names {
                scopes.sort_by_key(scope_rank);
                let label = scopes.join(", ");
                match by_scopes.iter_mut().find(|(l, _)| *l == label) {
                    Some((_, ns)) => ns.push(name.to_string()),
                    None => by_scopes.push((label, vec![name.to_string()])),
                }
            }
            ReasonGroup {
                reason: reason.to_string(),
                by_scopes,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(wall: u64, faults: f64) -> RunRecord {
        let mut r = RunRecord {
            wall_ns: wall,
            exit_code: Some(0),
            ..Default::default()
        };
        r.counters.software.insert("page-faults".into(), faults);
        r.counters
            .software
            .insert("task-clock".into(), wall as f64 / 2.0);
        r
    }

    #[test]
    fn a_cold_first_run_is_named_and_a_warm_one_is_not() {
        let cold = [
            run(100_000_000, 1.0),
            run(10_000_000, 1.0),
            run(11_000_000, 1.0),
        ];
        let note = cold_first_run(&cold).expect("a note");
        assert!(
            note.contains("The first run took 100 ms") && note.contains("--warmup 1"),
            "{note}"
        );
        let even = [
            run(12_000_000, 1.0),
            run(10_000_000, 1.0),
            run(11_000_000, 1.0),
        ];
        assert_eq!(cold_first_run(&even), None);
        // Two runs say nothing about which is usual.
        assert_eq!(cold_first_run(&cold[..2]), None);
    }

    #[test]
    fn summary_has_mean_ci_and_cv() {
        let doc = StatDoc::new(
            &["ls".into()],
            3,
            vec![
                run(1_000_000, 100.0),
                run(2_000_000, 110.0),
                run(3_000_000, 120.0),
            ],
            BTreeMap::new(),
            None,
            false,
        );
        let wall = &doc.summary["time:wall"];
        assert_eq!(wall.mean, 2_000_000.0);
        assert_eq!(wall.n, 3);
        // The t interval would reach below zero; a time's interval stops there.
        let half = 4.303 * 1_000_000.0 / 3f64.sqrt();
        assert_eq!(wall.ci95[0], 0.0);
        assert!((wall.ci95[1] - (2_000_000.0 + half)).abs() < 1e-3);
        assert!((wall.cv - 0.5).abs() < 1e-12);
        assert_eq!(doc.summary["software:page-faults"].mean, 110.0);
        let text = render(&doc);
        assert!(text.contains("3 runs"), "{text}");
        assert!(
            text.contains("wall time") && text.contains(" 2.00 ") && text.contains(" ms "),
            "{text}"
        );
        assert!(text.contains("0.50 CPUs utilized"), "{text}");
    }

    #[test]
    fn derived_ipc_needs_both_counts() {
        let mut r = run(1000, 1.0);
        r.counters.user.insert("instructions".into(), 300.0);
        r.counters.user.insert("cycles".into(), 200.0);
        r.counters.kernel.insert("instructions".into(), 50.0);
        let keys: Vec<String> = figures(&[r]).into_iter().map(|f| f.key).collect();
        assert!(keys.contains(&"user:insn-per-cycle".to_string()));
        assert!(!keys.contains(&"kernel:insn-per-cycle".to_string()));
        assert!(keys.contains(&"kernel:instructions".to_string()));
    }

    #[test]
    fn unavailable_events_are_grouped_by_reason_and_scope() {
        let mut m = BTreeMap::new();
        for n in ["cycles", "instructions"] {
            m.insert(format!("user:{n}"), "no PMU".to_string());
            m.insert(format!("kernel:{n}"), "no PMU".to_string());
        }
        m.insert("kernel:LLC-load-misses".into(), "no PMU".into());
        m.insert("software:context-switches".into(), "paranoid".into());
        let g = group_unavailable(&m);
        assert_eq!(g.len(), 2);
        let pmu = g.iter().find(|r| r.reason == "no PMU").unwrap();
        assert_eq!(
            pmu.by_scopes,
            vec![
                (
                    "user, kernel".to_string(),
                    vec!["cycles".to_string(), "instructions".to_string()]
                ),
                ("kernel".to_string(), vec!["LLC-load-misses".to_string()]),
            ]
        );
    }
}
