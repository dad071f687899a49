//! Turns raw command-line arguments into a validated run configuration before anything runs, so that
//! every usage error is reported up front with a way out.

use crate::cli::RunArgs;
use crate::harness::HarnessConfig;
use crate::meter::placement;
use crate::probes::{self, ProbeDef, Scale};
use crate::results::keep::Keeper;
use crate::results::model::Params;
use crate::usage;
use anyhow::Result;
use std::path::{Path, PathBuf};

/// One probe to run, at a scale.
#[derive(Clone)]
pub struct Selected {
    pub probe: &'static ProbeDef,
    pub scale: Scale,
    /// The parameter points to measure: the probe's own at this scale, with `--set` applied.
    pub variants: Vec<Params>,
}

/// `--set key=value`: a number, `true`/`false`, or text.
pub fn parse_set(raw: &str) -> Result<(String, serde_json::Value)> {
    let (k, v) = raw
        .split_once('=')
        .filter(|(k, _)| !k.is_empty())
        .ok_or_else(|| usage!("--set {raw:?}: expected KEY=VALUE, e.g. --set rcvbuf=65536"))?;
    let value = if let Ok(n) = v.parse::<u64>() {
        serde_json::json!(n)
    } else if let Ok(b) = v.parse::<bool>() {
        serde_json::json!(b)
    } else {
        serde_json::json!(v)
    };
    Ok((k.to_string(), value))
}

/// Applies `--set` overrides: every variant that has the key gets the value (duplicates collapse);
/// a probe that has none of the keys keeps its variants. A key that no selected probe has is an error.
pub fn apply_sets(selected: &mut [Selected], sets: &[(String, serde_json::Value)]) -> Result<()> {
    for (key, value) in sets {
        let mut used = false;
        for sel in selected.iter_mut() {
            if !sel.variants.iter().any(|v| v.contains_key(key)) {
                continue;
            }
            used = true;
            let mut out: Vec<Params> = Vec::new();
            for mut v in sel.variants.drain(..) {
                v.insert(key.clone(), value.clone());
                if !out.contains(&v) {
                    out.push(v);
                }
            }
            sel.variants = out;
        }
        if !used {
            let mut keys: Vec<&String> = selected
                .iter()
                .flat_map(|s| s.variants.iter().flat_map(|v| v.keys()))
                .collect();
            keys.sort();
            keys.dedup();
            let keys: Vec<&str> = keys.into_iter().map(String::as_str).collect();
            return Err(usage!(
                "--set {key}: no selected probe has a parameter {key:?} (their parameters: {})",
                if keys.is_empty() {
                    "none".to_string()
                } else {
                    keys.join(", ")
                }
            ));
        }
    }
    Ok(())
}

/// Rounds per figure unless --rounds says otherwise: enough for a spread between rounds, few enough
/// for the quick suite to stay well under a minute.
pub const DEFAULT_ROUNDS: usize = 5;
/// More rounds than this is a typo: every round is a process per figure.
pub const MAX_ROUNDS: usize = 1000;

pub struct RunConfig {
    /// The suite name when exactly one suite was asked for.
    pub suite: Option<String>,
    pub selected: Vec<Selected>,
    pub harness: HarnessConfig,
    /// Rounds per figure, each in a fresh process.
    pub rounds: usize,
    /// Seed of the rounds' shuffled order.
    pub seed: u64,
    pub cpu: usize,
    pub scratch_parent: PathBuf,
    pub counters: bool,
    pub fifo: Option<i32>,
    /// Tags and store, checked before measuring.
    pub keeper: Keeper,
    pub json: bool,
}

/// `5ms`, `20ms`, `1.5s`, `250us`, `100000ns`.
pub fn parse_duration_ns(text: &str) -> Result<u64> {
    let t = text.trim();
    let split = t.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 = num.trim().parse().map_err(|_| {
        usage!("cannot read the duration {text:?}: expected a number and a unit, e.g. 20ms")
    })?;
    let scale = match unit {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" | "" => 1e9,
        "min" => 60e9,
        "h" => 3600e9,
        other => {
            return Err(usage!(
                "unknown time unit {other:?} in {text:?}: use ns, us, ms, s, min or h"
            ))
        }
    };
    let ns = value * scale;
    if !ns.is_finite() || ns <= 0.0 {
        return Err(usage!("the duration {text:?} must be positive"));
    }
    Ok(ns as u64)
}

/// Edit distance, for "did you mean" suggestions.
pub fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

/// Up to three known names closest to `wanted`.
pub fn closest<'a>(wanted: &str, known: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut scored: Vec<(usize, &str)> = known
        .map(|k| {
            let d = levenshtein(wanted, k);
            // A name that contains the word typed is a good suggestion whatever its length.
            let d = if k.contains(wanted) || wanted.contains(k) {
                d.min(2)
            } else {
                d
            };
            (d, k)
        })
        .collect();
    scored.sort();
    let limit = (wanted.len() / 2).max(3);
    scored
        .into_iter()
        .filter(|(d, _)| *d <= limit)
        .take(3)
        .map(|(_, k)| k)
        .collect()
}

fn known_targets() -> Vec<&'static str> {
    let mut names: Vec<&str> = probes::SUITES.iter().map(|s| s.name).collect();
    let registry = probes::registry();
    for p in &registry {
        if !names.contains(&p.group()) {
            names.push(p.group());
        }
    }
    names.extend(registry.iter().map(|p| p.id));
    names
}

/// Resolves suites, groups and probe ids into an ordered list without duplicates.
pub fn select(targets: &[String]) -> Result<(Vec<Selected>, Option<String>)> {
    let targets: Vec<&str> = if targets.is_empty() {
        vec!["quick"]
    } else {
        targets.iter().map(String::as_str).collect()
    };
    let mut out: Vec<Selected> = Vec::new();
    let mut push = |probe: &'static ProbeDef, scale: Scale| {
        if !out.iter().any(|s| s.probe.id == probe.id) {
            out.push(Selected {
                probe,
                scale,
                variants: (probe.variants)(scale),
            });
        }
    };
    for t in &targets {
        if let Some(suite) = probes::suite(t) {
            suite
                .probes()
                .into_iter()
                .for_each(|p| push(p, suite.scale));
        } else if let Some(p) = probes::find(t) {
            push(p, Scale::Full);
        } else {
            let group: Vec<_> = probes::registry()
                .into_iter()
                .filter(|p| p.group() == *t)
                .collect();
            if group.is_empty() {
                let known = known_targets();
                let near = closest(t, known.iter().copied());
                let hint = if near.is_empty() {
                    "see `osmeter list` for every probe and suite".to_string()
                } else {
                    format!(
                        "did you mean {}? (`osmeter list` shows all)",
                        near.join(", ")
                    )
                };
                return Err(usage!("unknown probe, group or suite {t:?}: {hint}"));
            }
            group.into_iter().for_each(|p| push(p, Scale::Full));
        }
    }
    let suite = match targets.as_slice() {
        [one] if probes::suite(one).is_some() => Some(one.to_string()),
        _ => None,
    };
    Ok((out, suite))
}

/// Checks that `dir` can hold scratch directories: it exists, is a writable directory, and no
/// other user can swap what osmeter makes in it (see [`crate::scratch::parent_problem`]).
pub fn check_scratch_parent(dir: &Path) -> Result<()> {
    match crate::scratch::parent_problem(dir) {
        None => Ok(()),
        Some(why) => Err(usage!("--dir {}: {why}", dir.display())),
    }
}

impl RunConfig {
    pub fn from_args(args: &RunArgs) -> Result<RunConfig> {
        let (mut selected, suite) = select(&args.targets)?;
        let sets = args
            .sets
            .iter()
            .map(|s| parse_set(s))
            .collect::<Result<Vec<_>>>()?;
        apply_sets(&mut selected, &sets)?;
        let quick = selected.iter().all(|s| s.scale == Scale::Quick);
        let samples = args.repeat.unwrap_or(if quick { 3 } else { 5 });
        if samples == 0 {
            return Err(usage!(
                "--repeat 0: at least one sample is needed (try --repeat 5)"
            ));
        }
        let rounds = args.rounds.unwrap_or(DEFAULT_ROUNDS);
        if rounds == 0 || rounds > MAX_ROUNDS {
            return Err(usage!(
                "--rounds {rounds}: give 1 to {MAX_ROUNDS} rounds (2 or more for intervals from \
                 the spread between rounds; the default is {DEFAULT_ROUNDS})"
            ));
        }
        let min_sample_ns = match &args.min_time {
            Some(t) => parse_duration_ns(t)?,
            None if quick => 10_000_000,
            None => 20_000_000,
        };
        let cpu = match args.cpu {
            Some(c) => {
                placement::validate_cpu(c).map_err(|e| usage!("--cpu {c}: {e:#}"))?;
                c
            }
            None => *placement::usable_cpus().last().unwrap_or(&0),
        };
        if let Some(prio) = args.fifo {
            placement::check_fifo_priority(prio).map_err(|e| usage!("--fifo {prio}: {e:#}"))?;
        }
        let scratch_parent = args.dir.clone().unwrap_or_else(std::env::temp_dir);
        check_scratch_parent(&scratch_parent)?;
        let variants = selected
            .iter()
            .flat_map(|s| s.variants.iter().map(move |v| (s.probe.id, v)));
        crate::budget::check_run(variants, samples as u64, &scratch_parent)?;
        Ok(RunConfig {
            suite,
            selected,
            harness: HarnessConfig {
                min_sample_ns,
                samples,
                warmup_samples: args.warmup,
                ..HarnessConfig::default()
            },
            rounds,
            seed: args
                .seed
                .unwrap_or_else(crate::stats::rng::seed_from_entropy),
            cpu,
            scratch_parent,
            counters: !args.no_counters,
            fifo: args.fifo,
            keeper: Keeper::new(
                &args.keep.tags,
                args.keep.no_store,
                args.keep.store.store.as_deref(),
            )?,
            json: args.output.json,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration_ns("5ms").unwrap(), 5_000_000);
        assert_eq!(parse_duration_ns("1.5s").unwrap(), 1_500_000_000);
        assert_eq!(parse_duration_ns("250us").unwrap(), 250_000);
        assert_eq!(parse_duration_ns("30min").unwrap(), 1_800_000_000_000);
        assert_eq!(parse_duration_ns("2h").unwrap(), 7_200_000_000_000);
        assert!(parse_duration_ns("0ms").is_err());
        assert!(parse_duration_ns("5 parsecs").is_err());
        assert!(parse_duration_ns("fast").is_err());
    }

    #[test]
    fn edit_distance_known_answers() {
        assert_eq!(levenshtein("kitten", "sitting"), 3);
        assert_eq!(levenshtein("", "abc"), 3);
        assert_eq!(levenshtein("syscall.null", "syscall.null"), 0);
    }

    #[test]
    fn typo_suggests_the_probe() {
        let err = select(&["syscall.nul".to_string()])
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("syscall.null"), "{err}");
    }

    #[test]
    fn set_overrides_the_parameter_where_it_exists() {
        let (mut sel, _) = select(&["net.tcp_bandwidth".into(), "syscall.null".into()]).unwrap();
        apply_sets(&mut sel, &[parse_set("rcvbuf=65536").unwrap()]).unwrap();
        let bw = &sel[0];
        assert!(!bw.variants.is_empty());
        assert!(bw
            .variants
            .iter()
            .all(|v| v["rcvbuf"] == serde_json::json!(65536)));
        // The 24 KB and default variants of each placement collapse into one per placement.
        assert_eq!(
            bw.variants.len(),
            (bw.probe.variants)(Scale::Full).len() / 2
        );
        assert_eq!(
            sel[1].variants.len(),
            1,
            "syscall.null has no rcvbuf and keeps its variant"
        );
        let err = apply_sets(&mut sel, &[parse_set("nope=1").unwrap()])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("no selected probe has a parameter \"nope\"") && err.contains("rcvbuf"),
            "{err}"
        );
        assert!(parse_set("=3").is_err() && parse_set("x").is_err());
        assert_eq!(parse_set("fsync=true").unwrap().1, serde_json::json!(true));
        assert_eq!(
            parse_set("placement=cross").unwrap().1,
            serde_json::json!("cross")
        );
    }

    #[test]
    fn suites_groups_and_ids_resolve_without_duplicates() {
        let (sel, suite) = select(&["syscall".into(), "syscall.null".into()]).unwrap();
        assert!(suite.is_none());
        assert_eq!(
            sel.iter().filter(|s| s.probe.id == "syscall.null").count(),
            1
        );
        let (sel, suite) = select(&[]).unwrap();
        assert_eq!(suite.as_deref(), Some("quick"));
        assert!(sel.iter().all(|s| s.scale == Scale::Quick));
    }
}
