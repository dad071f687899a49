//! `osmeter compare`: two runs or two groups of runs, figure by figure.

use crate::cli::CompareArgs;
use crate::error::{EXIT_BUSY, EXIT_OK, EXIT_THRESHOLD};
use crate::results::compare::{
    common_kind, compare as compare_runs, exact, history, text, CompareConfig, Verdict,
};
use crate::results::gate;
use crate::results::model::{Run, RunKind};
use crate::results::profile::explain;
use crate::results::store::Location;
use crate::usage;
use anyhow::Result;
use std::collections::BTreeMap;

pub fn compare(args: &CompareArgs) -> Result<i32> {
    let mut store = Location::resolve(args.store.store.as_ref())?.open_read_only()?;
    let (side_a, side_b) = crate::config::compare::sides(args);
    let a = side_a.load(store.as_mut(), "a")?;
    let b = side_b.load(store.as_mut(), "b")?;
    if a.is_empty() || b.is_empty() {
        return Err(usage!(
            "compare needs a baseline and a candidate: `osmeter compare A B`, `--a RUN... --b RUN...` \
             or `--tag-a K=V --tag-b K=V`"
        ));
    }
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
        if args.gate.junit.is_some() || args.gate.ktap {
            return Err(usage!(
                "--junit and --ktap judge timed runs; guest runs hold exact counts, which \
                 `compare --fail-if-slower PCT` gates by their growth (exit 4)"
            ));
        }
        return exact_guest(&ra, &rb, args);
    }
    let mut c = compare_runs(&ra, &rb, &config)?;
    c.history_runs = history_runs;
    let refused = !c.busy.is_empty() && !args.force;
    let gate = gate::of_comparison(&c, refused, args.fail_if_slower);
    let ktap = super::gate::write(&args.gate, &gate)?;
    if refused {
        eprintln!("{}", text::busy_refusal(&c.busy));
        if let Some(ktap) = &ktap {
            super::emit_unwrapped(ktap)?;
        }
        return Ok(EXIT_BUSY);
    }
    let explained = args.explain.then(|| {
        let changed: Vec<String> = c
            .figures
            .iter()
            .filter(|f| args.all || matches!(f.verdict, Verdict::Faster | Verdict::Slower))
            .map(|f| f.key.clone())
            .collect();
        let mut e = explain::explain(&ra, &rb, &changed);
        crate::results::profile::drift::withhold_drift(&mut e, &c);
        e
    });
    if args.output.json {
        super::emit_json(&CompareDoc {
            comparison: &c,
            explain: explained.as_ref(),
        })?;
    } else if let Some(ktap) = &ktap {
        super::emit_unwrapped(ktap)?;
    } else {
        let why = explained.as_ref().map(explain::render).unwrap_or_default();
        super::emit(&(text::render(&c, args.all) + &why))?;
    }
    if let Some(pct) = args.fail_if_slower {
        let bad = c.slower_beyond(pct);
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
        let bad = c.grown_beyond(pct);
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

/// `compare --json`: the comparison, and with `--explain` why each changed figure moved.
#[derive(serde::Serialize, schemars::JsonSchema)]
pub(crate) struct CompareDoc<'a> {
    #[serde(flatten)]
    comparison: &'a crate::results::compare::Comparison,
    #[serde(skip_serializing_if = "Option::is_none")]
    explain: Option<&'a explain::Explanation>,
}
