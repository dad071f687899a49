//! What the store already knows about how much each figure moves from run to run on a host.

use super::History;
use crate::results::model::Run;
use crate::results::store::{RunFilter, Store};
use anyhow::Result;
use std::collections::BTreeMap;

/// Earlier runs whose spread sets each figure's run-to-run noise.
pub const HISTORY_RUNS: usize = 20;

/// Run-to-run spread of every figure over the latest stored runs of the baseline's host and kind
/// (the runs being compared left out), and how many runs it came from.
pub fn history_noise(
    store: &mut dyn Store,
    a: &[Run],
    b: &[Run],
) -> Result<(BTreeMap<String, History>, usize)> {
    let Some(first) = a.first() else {
        return Ok((BTreeMap::new(), 0));
    };
    let Some(host) = first.host() else {
        return Ok((BTreeMap::new(), 0));
    };
    let kind = first.kind();
    let compared: Vec<&str> = a.iter().chain(b).map(|r| r.id.as_str()).collect();
    let earlier: Vec<String> = store
        .list(&RunFilter {
            host: Some(host),
            ..Default::default()
        })?
        .into_iter()
        .filter(|r| r.kind == kind.as_str() && !compared.contains(&r.id.as_str()))
        .take(HISTORY_RUNS)
        .map(|r| r.id)
        .collect();
    let mut values: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let wanted: Vec<&str> = earlier.iter().map(String::as_str).collect();
    for run in store.load_many(&wanted)?.into_iter().flatten() {
        // A busy run's spread is its disturbance, not the figure's.
        if run.busy() {
            continue;
        }
        for f in run.figures() {
            values.entry(f.key).or_default().push(f.value);
        }
    }
    let noise = values
        .into_iter()
        .filter_map(|(k, v)| Some((k, History::from_medians(&v)?)))
        .collect();
    Ok((noise, earlier.len()))
}
