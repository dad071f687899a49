//! The versioned run document itself, raw samples included, headed by its `"$schema"`.

use super::{ExportOptions, Exporter};
use crate::results::model::Run;
use std::io::{self, Write};

pub struct Json;

impl Exporter for Json {
    fn name(&self) -> &'static str {
        "json"
    }
    fn write(&self, run: &Run, _: &ExportOptions, out: &mut dyn Write) -> io::Result<()> {
        serde_json::to_writer_pretty(&mut *out, &crate::results::schema::Stamped(run))?;
        writeln!(out)
    }
}

#[cfg(test)]
mod tests {
    use super::super::*;

    #[test]
    fn round_trips_and_matches_snapshot() {
        let run = sample_run();
        let text = render(&json::Json, &run, ExportOptions::default());
        let back: Run = serde_json::from_str(&text).unwrap();
        assert_eq!(back, run);
        check_snapshot("run.json", &text);
    }
}
