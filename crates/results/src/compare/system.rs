//! What differs between the systems of two sides: the fingerprint field by field, the kernel's
//! settings first (a changed tunable is the likeliest cause of a changed figure), and the settings
//! that osmeter's own set-up keeps from the figures.

use crate::results::fingerprint::settings::{self, MeasuredWith};
use crate::results::fingerprint::Fingerprint;
use crate::results::model::Run;
use std::collections::BTreeMap;

/// The fingerprint field that holds the settings; its flattened keys start with it and a dot.
const SETTINGS: &str = "settings";

/// Fields that differ between the first run of each side, settings first (the hostname and
/// run-specific paths are expected to differ in a fleet, so they are reported like any other
/// field). A side stored before settings were kept gets one line for all of them.
pub fn fingerprint_differences(
    a: Option<&Fingerprint>,
    b: Option<&Fingerprint>,
) -> Vec<(String, String, String)> {
    let (mut fa, mut fb) = (BTreeMap::new(), BTreeMap::new());
    let fields = |f: Option<&Fingerprint>| {
        serde_json::Value::Object(f.map(Fingerprint::fields).unwrap_or_default())
    };
    flatten("", &fields(a), &mut fa);
    flatten("", &fields(b), &mut fb);
    if a.is_some() && b.is_some() {
        one_line_for_unrecorded_settings(&mut fa, &mut fb);
        one_line_for_unrecorded_settings(&mut fb, &mut fa);
    }
    let keys: std::collections::BTreeSet<&String> = fa.keys().chain(fb.keys()).collect();
    let mut out: Vec<(String, String, String)> = keys
        .into_iter()
        .filter_map(|k| {
            let (va, vb) = (fa.get(k), fb.get(k));
            (va != vb).then(|| {
                let show = |v: Option<&String>| v.cloned().unwrap_or_else(|| "(absent)".into());
                (k.clone(), show(va), show(vb))
            })
        })
        .collect();
    // Stable: settings first, each group in the order of its names.
    out.sort_by_key(|(k, _, _)| !is_setting(k));
    out
}

fn is_setting(key: &str) -> bool {
    key == SETTINGS || key.starts_with("settings.")
}

/// When `none` kept no settings (null) and `some` did, the many `settings.*` lines become one.
fn one_line_for_unrecorded_settings(
    none: &mut BTreeMap<String, String>,
    some: &mut BTreeMap<String, String>,
) {
    if none.get(SETTINGS).map(String::as_str) != Some("null") {
        return;
    }
    let before = some.len();
    some.retain(|k, _| !k.starts_with("settings."));
    let recorded = before - some.len();
    if recorded > 0 {
        none.insert(
            SETTINGS.into(),
            "(not recorded: stored by an older osmeter)".into(),
        );
        some.insert(SETTINGS.into(), format!("{recorded} recorded"));
    }
}

/// Flattens a JSON object to dotted keys with display values.
fn flatten(prefix: &str, v: &serde_json::Value, out: &mut BTreeMap<String, String>) {
    match v {
        serde_json::Value::Object(map) => {
            for (k, v) in map {
                let p = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(&p, v, out);
            }
        }
        serde_json::Value::String(s) => {
            out.insert(prefix.to_string(), s.clone());
        }
        other => {
            out.insert(prefix.to_string(), other.to_string());
        }
    }
}

/// The settings that differ between the sides' first runs and that osmeter's own set-up keeps
/// from (some of) the figures: (setting, why and how to measure it).
pub fn setting_blind_spots(a: &[&Run], b: &[&Run]) -> Vec<(String, String)> {
    let (Some(ra), Some(rb)) = (a.first(), b.first()) else {
        return Vec::new();
    };
    let runs = || a.iter().chain(b);
    let with = MeasuredWith {
        system_aslr: runs().any(|r| r.options.system_aslr),
        fifo: runs().any(|r| r.options.fifo_priority.is_some()),
    };
    let (Some(sa), Some(sb)) = (settings_of(ra), settings_of(rb)) else {
        return Vec::new();
    };
    let names: std::collections::BTreeSet<&String> = sa.keys().chain(sb.keys()).collect();
    names
        .into_iter()
        .filter(|n| sa.get(*n) != sb.get(*n))
        .filter_map(|n| Some((n.clone(), settings::blind_spot(n, with)?.to_string())))
        .collect()
}

fn settings_of(run: &Run) -> Option<&BTreeMap<String, String>> {
    run.fingerprint.as_ref()?.settings.as_ref()
}
