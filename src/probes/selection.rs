//! Which probes a run measures: suites, groups and probe ids resolved in order without duplicates,
//! and `--set` overrides applied to their parameter points.

use super::{ProbeDef, Scale};
use crate::probes;
use crate::results::model::Params;
use crate::suggest::closest;
use crate::usage;
use anyhow::Result;

/// One probe to run, at a scale.
#[derive(Clone)]
pub struct Selected {
    pub probe: &'static ProbeDef,
    pub scale: Scale,
    /// The parameter points to measure: the probe's own at this scale, with `--set` applied.
    pub variants: Vec<Params>,
}

/// `--set`, read by clap (a bad one is a usage error).
pub fn set_arg(raw: &str) -> std::result::Result<(String, serde_json::Value), String> {
    parse_set(raw).map_err(|e| e.to_string())
}

/// `--set key=value`: a number, a size in K, M or G (powers of 1024, with or without `iB`, so
/// `size=64M` is 67108864), `true`/`false`, or text.
pub fn parse_set(raw: &str) -> Result<(String, serde_json::Value)> {
    let (k, v) = raw
        .split_once('=')
        .filter(|(k, _)| !k.is_empty())
        .ok_or_else(|| usage!("expected KEY=VALUE, e.g. rcvbuf=65536, not {raw:?}"))?;
    let value = if let Some(n) = v.parse::<u64>().ok().or_else(|| binary_size(v)) {
        serde_json::json!(n)
    } else if let Ok(b) = v.parse::<bool>() {
        serde_json::json!(b)
    } else {
        serde_json::json!(v)
    };
    Ok((k.to_string(), value))
}

/// `64K`, `64M`, `1G` (or `64KiB`, ...) in bytes; None for anything else or a size past u64.
fn binary_size(text: &str) -> Option<u64> {
    let text = text.strip_suffix("iB").unwrap_or(text);
    let shift = match text.chars().last()? {
        'K' | 'k' => 10,
        'M' => 20,
        'G' => 30,
        _ => return None,
    };
    let digits = &text[..text.len() - 1];
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse::<u64>().ok()?.checked_mul(1 << shift)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_in_binary_units_are_bytes_and_other_text_stays_text() {
        let value = |raw: &str| parse_set(raw).unwrap().1;
        assert_eq!(value("size=64M"), serde_json::json!(67_108_864u64));
        assert_eq!(value("size=64MiB"), serde_json::json!(67_108_864u64));
        assert_eq!(value("size=4k"), serde_json::json!(4096u64));
        assert_eq!(value("size=1G"), serde_json::json!(1u64 << 30));
        assert_eq!(value("size=4096"), serde_json::json!(4096u64));
        for text in ["M", "1.5M", "64T", "huge", "-4K", "99999999999999999999G"] {
            assert_eq!(
                value(&format!("k={text}")),
                serde_json::json!(text),
                "{text}"
            );
        }
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
