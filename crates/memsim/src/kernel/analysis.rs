//! `osmeter memsim` with kernel symbols or assertions: one pass that tags references, drops the
//! idle loop if asked, simulates the requested machines with stalls charged to categories and
//! the assertions' variants beside them, and the parts of the memsim document that come of it.

use super::assertions::{self, Context};
use super::attrib::Attributed;
use super::mcpi::{self, Job};
use super::symbols::SymbolTable;
use crate::memsim::document::{AssertionsDoc, AttributionDoc, IdleDropped, MemsimDoc};
use crate::memsim::machine::MachineConfig;
use crate::memsim::sweep::{Extras, SweepResult};
use crate::memsim::trace::RefSource;
use anyhow::Result;
use std::path::PathBuf;

pub struct Options {
    pub symbols: Option<(PathBuf, SymbolTable)>,
    pub exclude_idle: bool,
    pub assertions: bool,
    pub threads: usize,
    /// Curves and intervals computed in the same pass (intervals for `cfgs` only).
    pub extras: Extras,
}

/// What the pass adds to the memsim document: `attribution` (with symbols) and `assertions`.
pub struct Extra {
    pub attribution: Option<AttributionDoc>,
    pub assertions: Option<AssertionsDoc>,
}

impl Extra {
    pub fn insert_into(self, doc: &mut MemsimDoc) {
        doc.attribution = self.attribution;
        doc.assertions = self.assertions;
    }
}

/// Simulates `cfgs` (and, with assertions, the variants of the first) over `src`. The sweep
/// result holds the stats of `cfgs` only, as the plain sweep would.
pub fn simulate(
    src: &mut dyn RefSource,
    cfgs: &[MachineConfig],
    opts: Options,
) -> Result<(SweepResult, Extra)> {
    let categories = opts.symbols.is_some();
    let mut jobs: Vec<Job> = cfgs
        .iter()
        .map(|c| Job::plain(c.clone(), categories))
        .collect();
    let plan = opts.assertions.then(|| assertions::plan(&mut jobs, 0));
    let (mut sweep, results, dropped, symbols_path) = match opts.symbols {
        Some((path, table)) => {
            let mut tagged = Attributed::new(src, table, opts.exclude_idle);
            let (s, r) =
                mcpi::simulate_with(&mut tagged, &jobs, &opts.extras, cfgs.len(), opts.threads)?;
            (s, r, Some(tagged.dropped()), Some(path))
        }
        None => {
            let (s, r) = mcpi::simulate_with(src, &jobs, &opts.extras, cfgs.len(), opts.threads)?;
            (s, r, None, None)
        }
    };
    let attribution = symbols_path.map(|p| {
        let d = dropped.unwrap_or_default();
        AttributionDoc {
            symbols: p.display().to_string(),
            idle_excluded: opts.exclude_idle,
            idle_dropped: IdleDropped {
                instructions: d.instructions,
                reads: d.reads,
                writes: d.writes,
            },
            machines: cfgs
                .iter()
                .zip(&results)
                .map(|(c, r)| mcpi::categories_doc(&c.name, &r.by_tag))
                .collect(),
        }
    });
    let assertions = plan.map(|plan| {
        let base = &cfgs[0];
        let ctx = Context {
            machine: &base.name,
            results: &results,
            symbols: categories,
            physical_trace: sweep.meta.physical(),
            write_buffer: base.write_buffer.is_some(),
        };
        let mut doc = assertions::evaluate(&ctx, &plan);
        doc.idle_excluded = categories && opts.exclude_idle;
        doc.variants = jobs[cfgs.len()..]
            .iter()
            .map(|j| j.cfg.name.clone())
            .collect();
        doc
    });
    sweep.stats.truncate(cfgs.len());
    Ok((
        sweep,
        Extra {
            attribution,
            assertions,
        },
    ))
}

/// The category tables and the assertions, as text, from the memsim document.
pub fn render(doc: &MemsimDoc) -> String {
    let mut t = String::new();
    if let Some(a) = &doc.attribution {
        t.push_str(&mcpi::render(a));
    }
    if let Some(a) = &doc.assertions {
        t.push_str(&assertions::render(a));
        if doc.attribution.is_none() {
            t.push_str("(no kernel symbols: idle-loop references are counted, block operations cannot be told apart)\n");
        } else if !a.idle_excluded {
            t.push_str("(idle-loop references are counted, as --include-idle asked)\n");
        }
    }
    t
}
