//! `osmeter info`: the system fingerprint, and which measuring features work here and why not.

use crate::meter::perf::{self, EventStatus};
use crate::results::fingerprint::{self, capabilities, capabilities::Feature};
use anyhow::Result;

pub const INFO_SCHEMA: &str = "osmeter.info/1";

/// `osmeter info --json`.
#[derive(serde::Serialize, schemars::JsonSchema)]
pub(crate) struct InfoDoc<'a> {
    schema: &'static str,
    fingerprint: &'a fingerprint::Fingerprint,
    features: &'a [Feature],
    counters: &'a [EventStatus],
}

pub fn info(json: bool) -> Result<i32> {
    // The directory `run` uses for scratch files when no --dir is given.
    let fp = fingerprint::collect(Some(&std::env::temp_dir()));
    let counters = perf::event_availability();
    let features = capabilities::features(&counters);
    if json {
        super::emit_json(&InfoDoc {
            schema: INFO_SCHEMA,
            fingerprint: &fp,
            features: &features,
            counters: &counters,
        })?;
    } else {
        super::emit(&format!(
            "{}{}",
            fingerprint::text::render(&fp),
            capabilities::render(&features, &counters)
        ))?;
    }
    Ok(crate::error::EXIT_OK)
}
