//! Folded stacks of a run's profiles (`run --profile`), one `frame;frame;... count` line per stack,
//! the figure's label as the root frame: flamegraph.pl, inferno-flamegraph and speedscope read it.

use super::{ExportOptions, Exporter};
use crate::results::model::Run;
use std::io::{self, Write};

pub struct Folded;

impl Exporter for Folded {
    fn name(&self) -> &'static str {
        "folded"
    }

    fn needs(&self) -> Option<super::Needs> {
        Some(super::PROFILES)
    }

    fn write(&self, run: &Run, _: &ExportOptions, out: &mut dyn Write) -> io::Result<()> {
        let profiles = super::profiles_of(run)?;
        out.write_all(crate::results::profile::folded_text(profiles).as_bytes())
    }
}
