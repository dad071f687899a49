//! `osmeter compare`: two runs or two groups of runs, figure by figure.

use crate::cli::CompareArgs;
use crate::config::parse_tags;
use crate::error::{EXIT_OK, EXIT_THRESHOLD};
use crate::results::compare::{
    compare as compare_runs, CompareConfig, Comparison, History, Verdict,
};
use crate::results::model::Run;
use crate::results::model::Status;
use crate::results::store::{resolve_id, Location, RunFilter, Store};
use crate::results::table::human;
use crate::usage;
use anyhow::Result;
use std::collections::BTreeMap;
use std::fmt::Write;

fn load_all(store: &mut dyn Store, wanted: &[String]) -> Result<Vec<Run>> {
    wanted
        .iter()
        .map(|w| {
            let id = resolve_id(store, w)?;
            store
                .load(&id)?
                .ok_or_else(|| anyhow::anyhow!("run {id} vanished while reading"))
        })
        .collect()
}

fn by_tag(store: &mut dyn Store, tag: &str, side: &str) -> Result<Vec<Run>> {
    let tags: Vec<(String, String)> = parse_tags(&[tag.to_string()])?.into_iter().collect();
    let ids: Vec<String> = store
        .list(&RunFilter {
            tags,
            ..Default::default()
        })?
        .into_iter()
        .map(|r| r.id)
        .collect();
    if ids.is_empty() {
        return Err(usage!(
            "--tag-{side} {tag}: no stored run has this tag (`osmeter runs` lists the tags)"
        ));
    }
    load_all(store, &ids)
}

/// The two sides, from positional ids, --a/--b lists or --tag-a/--tag-b.
fn sides(args: &CompareArgs, store: &mut dyn Store) -> Result<(Vec<Run>, Vec<Run>)> {
    let a = if !args.group_a.is_empty() {
        load_all(store, &args.group_a)?
    } else if let Some(t) = &args.tag_a {
        by_tag(store, t, "a")?
    } else {
        load_all(
            store,
            &args.runs.iter().take(1).cloned().collect::<Vec<_>>(),
        )?
    };
    let b = if !args.group_b.is_empty() {
        load_all(store, &args.group_b)?
    } else if let Some(t) = &args.tag_b {
        by_tag(store, t, "b")?
    } else {
        let skip = usize::from(args.group_a.is_empty() && args.tag_a.is_none());
        load_all(
            store,
            &args
                .runs
                .iter()
                .skip(skip)
                .take(1)
                .cloned()
                .collect::<Vec<_>>(),
        )?
    };
    if a.is_empty() || b.is_empty() {
        return Err(usage!(
            "compare needs a baseline and a candidate: `osmeter compare A B`, `--a RUN... --b RUN...` \
             or `--tag-a K=V --tag-b K=V`"
        ));
    }
    Ok((a, b))
}

/// Earlier runs whose spread sets each figure's run-to-run noise.
const HISTORY_RUNS: usize = 20;

/// Run-to-run spread of every figure over the latest stored runs of the baseline's host (the runs
/// being compared left out), and how many runs it came from.
fn history_noise(
    store: &mut dyn Store,
    a: &[Run],
    b: &[Run],
) -> Result<(BTreeMap<String, History>, usize)> {
    let Some(host) = a.first().and_then(Run::host) else {
        return Ok((BTreeMap::new(), 0));
    };
    let compared: Vec<&str> = a.iter().chain(b).map(|r| r.id.as_str()).collect();
    let earlier: Vec<String> = store
        .list(&RunFilter {
            host: Some(host),
            ..Default::default()
        })?
        .into_iter()
        .filter(|r| r.kind == "run" && !compared.contains(&r.id.as_str()))
        .take(HISTORY_RUNS)
        .map(|r| r.id)
        .collect();
    let mut medians: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for id in &earlier {
        let Some(run) = store.load(id)? else { continue };
        for m in run.measurements.iter().filter(|m| m.status == Status::Ok) {
            if let Some(s) = &m.summary {
                medians.entry(m.label()).or_default().push(s.median);
            }
        }
    }
    let noise = medians
        .into_iter()
        .filter_map(|(k, v)| Some((k, History::from_medians(&v)?)))
        .collect();
    Ok((noise, earlier.len()))
}

pub fn compare(args: &CompareArgs) -> Result<i32> {
    if !(0.0..100.0).contains(&args.threshold) {
        return Err(usage!(
            "--threshold {}: give a percentage between 0 and 100",
            args.threshold
        ));
    }
    if let Some(p) = args.fail_if_slower {
        if !(0.0..100.0).contains(&p) {
            return Err(usage!(
                "--fail-if-slower {p}: give a percentage between 0 and 100"
            ));
        }
    }
    let mut store = Location::resolve(args.store.store.as_deref())?.open_read_only()?;
    let (a, b) = sides(args, store.as_mut())?;
    let (history_noise, history_runs) = if args.no_history {
        (BTreeMap::new(), 0)
    } else {
        history_noise(store.as_mut(), &a, &b)?
    };
    let config = CompareConfig {
        min_effect: args.threshold / 100.0,
        history_noise,
        ..CompareConfig::default()
    };
    let ra: Vec<&Run> = a.iter().collect();
    let rb: Vec<&Run> = b.iter().collect();
    let mut c = compare_runs(&ra, &rb, &config);
    c.history_runs = history_runs;
    if args.output.json {
        super::emit_json(&c)?;
    } else {
        super::emit(&render(&c, args.all))?;
    }
    if let Some(pct) = args.fail_if_slower {
        let limit = 1.0 - pct / 100.0;
        let bad: Vec<&str> = c
            .figures
            .iter()
            .filter(|f| f.verdict == Verdict::Slower && f.speedup < limit)
            .map(|f| f.key.as_str())
            .collect();
        if !bad.is_empty() {
            eprintln!(
                "osmeter: {} figure(s) slower by more than {pct} %: {}",
                bad.len(),
                bad.join(", ")
            );
            return Ok(EXIT_THRESHOLD);
        }
    }
    Ok(EXIT_OK)
}

fn fmt_value(v: f64, unit: crate::results::model::Unit) -> String {
    let (x, u) = human(v, unit);
    format!("{x:.3} {u}")
}

/// Three significant digits, without an exponent for everyday sizes.
fn sig3(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    let digits = (2 - v.abs().log10().floor() as i32).clamp(0, 6) as usize;
    format!("{v:.digits$}")
}

pub fn render(c: &Comparison, all: bool) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "A: {}\nB: {}", c.runs_a.join(" "), c.runs_b.join(" "));
    if !c.fingerprint_differences.is_empty() {
        let _ = writeln!(out, "\nSystem differences:");
        for (k, a, b) in &c.fingerprint_differences {
            let _ = writeln!(out, "  {k}: {a} -> {b}");
        }
    }
    let changed = c
        .figures
        .iter()
        .filter(|f| f.verdict != Verdict::NoChange)
        .count();
    let width = c
        .figures
        .iter()
        .map(|f| f.key.len())
        .max()
        .unwrap_or(6)
        .max(6);
    let _ = writeln!(
        out,
        "\n{changed} of {} figures changed beyond noise (rank test p < {}, change >= {} % and >= {} x the \
         figure's run-to-run spread, interval excluding 1).",
        c.figures.len(),
        c.alpha,
        c.min_effect * 100.0,
        crate::results::compare::NOISE_MULTIPLE
    );
    let _ = writeln!(
        out,
        "{}",
        if c.history_runs >= 3 {
            format!(
                "Run-to-run spread learned from {} earlier runs of this host.",
                c.history_runs
            )
        } else {
            "Run-to-run spread unknown (fewer than 3 earlier runs of this host): \
             compare groups of runs (--a/--b or --tag-a/--tag-b) for a sturdier verdict."
                .to_string()
        }
    );
    let _ = writeln!(
        out,
        "{:<width$}  {:>14} {:>14} {:>7} {:>17} {:>8}  verdict",
        "figure", "A", "B", "B/A", "95% CI of B/A", "p"
    );
    for f in c
        .figures
        .iter()
        .filter(|f| all || f.verdict != Verdict::NoChange)
    {
        let verdict = match f.verdict {
            Verdict::Faster => "faster",
            Verdict::Slower => "SLOWER",
            Verdict::NoChange => "~",
        };
        let _ = writeln!(
            out,
            "{:<width$}  {:>14} {:>14} {:>7.3} {:>17} {:>8.4}  {verdict}",
            f.key,
            fmt_value(f.median_a, f.unit),
            fmt_value(f.median_b, f.unit),
            f.ratio,
            format!("[{:.3}, {:.3}]", f.ratio_ci95[0], f.ratio_ci95[1]),
            f.p_value
        );
        for (event, va, vb) in &f.counter_deltas {
            let _ = writeln!(
                out,
                "{:<width$}    {event}: {} -> {} per op",
                "",
                sig3(*va),
                sig3(*vb)
            );
        }
    }
    if let Some(g) = c.geomean {
        let groups: Vec<String> = c
            .geomean_by_group
            .iter()
            .map(|(k, v)| format!("{k} {v:.3}"))
            .collect();
        let _ = writeln!(
            out,
            "\nGeometric mean speed-up of B over A: {g:.3} ({})",
            groups.join(", ")
        );
    }
    if let (Some(cpu), Some(rel)) = (c.cpu_speedup, c.os_speedup_relative_to_cpu) {
        let _ = writeln!(
            out,
            "CPU reference speed-up: {cpu:.3}; OS figures relative to the CPU: {rel:.3} (below 1: the OS gained less than the CPU)"
        );
    }
    for (side, keys) in [("A", &c.only_in_a), ("B", &c.only_in_b)] {
        if !keys.is_empty() {
            let _ = writeln!(out, "Only in {side}: {}", keys.join(", "));
        }
    }
    out
}
