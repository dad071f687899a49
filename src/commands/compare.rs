//! `osmeter compare`: two runs or two groups of runs, figure by figure.

use crate::cli::CompareArgs;
use crate::error::{EXIT_BUSY, EXIT_OK, EXIT_THRESHOLD};
use crate::results::compare::{
    common_kind, compare as compare_runs, exact, history, text, BusyRun, CompareConfig, Verdict,
};
use crate::results::keep::Tag;
use crate::results::model::{Run, RunKind};
use crate::results::profile::explain;
use crate::results::store::{load_listed, resolve_id, Location, RunFilter, Store};
use crate::usage;
use anyhow::Result;
use std::collections::BTreeMap;

fn load_all(store: &mut dyn Store, wanted: &[String]) -> Result<Vec<Run>> {
    let ids = wanted
        .iter()
        .map(|w| resolve_id(store, w))
        .collect::<Result<Vec<_>>>()?;
    load_listed(store, &ids)
}

fn by_tag(store: &mut dyn Store, tag: &Tag, side: &str) -> Result<Vec<Run>> {
    let tags = vec![tag.clone()];
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
            "--tag-{side} {}={}: no stored run has this tag (`osmeter runs` lists the tags)",
            tag.0,
            tag.1
        ));
    }
    // The ids come from the store itself: each is loaded as it is, without matching it against
    // every stored id as a prefix typed by a user would be, and all in one read.
    load_listed(store, &ids)
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

/// Says why nothing is compared: a busy run's figures hold the other work, and a change between
/// them would be presented as a finding.
fn refuse_busy(busy: &[BusyRun]) -> i32 {
    let runs: Vec<String> = busy
        .iter()
        .map(|r| {
            format!(
                "{} {} ({})",
                r.side,
                r.run,
                crate::text::escape_controls(&r.reasons.join("; "))
            )
        })
        .collect();
    eprintln!(
        "osmeter: not compared: measured on a busy machine: {}. Its figures hold the other work \
         as much as the system, so no figure is called changed; measure again on a quiet machine, \
         or give --force to see the comparison with every figure marked",
        runs.join("; ")
    );
    EXIT_BUSY
}

pub fn compare(args: &CompareArgs) -> Result<i32> {
    let mut store = Location::resolve(args.store.store.as_ref())?.open_read_only()?;
    let (a, b) = sides(args, store.as_mut())?;
    let (history_noise, history_runs) = if args.no_history {
        (BTreeMap::new(), 0)
    } else {
        history::history_noise(store.as_mut(), &a, &b)?
    };
    let config = CompareConfig {
        min_effect: args.threshold / 100.0,
        history_noise,
        ..CompareConfig::default()
    };
    let ra: Vec<&Run> = a.iter().collect();
    let rb: Vec<&Run> = b.iter().collect();
    if common_kind(&ra, &rb)? == RunKind::Guest {
        return exact_guest(&ra, &rb, args);
    }
    let mut c = compare_runs(&ra, &rb, &config)?;
    c.history_runs = history_runs;
    if !c.busy.is_empty() && !args.force {
        return Ok(refuse_busy(&c.busy));
    }
    let explained = args.explain.then(|| {
        let changed: Vec<String> = c
            .figures
            .iter()
            .filter(|f| args.all || matches!(f.verdict, Verdict::Faster | Verdict::Slower))
            .map(|f| f.key.clone())
            .collect();
        explain::explain(&ra, &rb, &changed)
    });
    if args.output.json {
        #[derive(serde::Serialize)]
        struct Explained<'a, C> {
            #[serde(flatten)]
            comparison: &'a C,
            explain: &'a Option<explain::Explanation>,
        }
        match &explained {
            Some(_) => super::emit_json(&Explained {
                comparison: &c,
                explain: &explained,
            })?,
            None => super::emit_json(&c)?,
        }
    } else {
        let why = explained.as_ref().map(explain::render).unwrap_or_default();
        super::emit(&(text::render(&c, args.all) + &why))?;
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

/// Guest runs: exact counts, every difference shown; --fail-if-slower applies to instruction
/// counts that grew by more than the percentage.
fn exact_guest(a: &[&Run], b: &[&Run], args: &CompareArgs) -> Result<i32> {
    let c = exact::compare(a, b)?;
    if args.output.json {
        super::emit_json(&c)?;
    } else {
        super::emit(&exact::render(&c, args.all))?;
    }
    if let Some(pct) = args.fail_if_slower {
        let bad: Vec<String> = c
            .changed()
            .filter(|r| r.event == "instructions" && r.ratio.is_some_and(|x| x > 1.0 + pct / 100.0))
            .map(|r| format!("{} {}.{}", r.figure, r.mode, r.event))
            .collect();
        if !bad.is_empty() {
            eprintln!(
                "osmeter: {} count(s) grew by more than {pct} %: {}",
                bad.len(),
                bad.join(", ")
            );
            return Ok(EXIT_THRESHOLD);
        }
    }
    Ok(EXIT_OK)
}
