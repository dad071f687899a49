//! `osmeter report`: one self-contained HTML file (inline CSS and SVG, no script, nothing fetched)
//! that shows stored runs to a person, on screen and on paper.
//!
//! The page is a list of sections. Each section is a type implementing [`Section`] in its own module
//! (the general ones here, each domain's in that domain: `latency::html`, `memsim::html`,
//! `stat::html`, `apps::html`, `papers::html`), listed once in page order by the commands layer
//! (`commands::report::sections`); a section that has nothing to show for the given runs returns
//! `None` and is left out. The microbenchmark sections show runs of kind `run` only; sections over a
//! run's own document (command statistics, wake-up latency, memory simulation) read their part of
//! `Run::sections`: a report of any mix of kinds draws each run in its own sections.

pub mod bars;
pub mod comparison;
pub mod counters;
pub mod fingerprint;
pub mod guest;
pub mod hbars;
pub mod html;
pub mod memory_curve;
pub mod overview;
pub mod plot;
pub mod profiles;
pub mod runs;
pub mod summary;

use crate::results::compare::{compare, CompareConfig, Comparison};
use crate::results::model::{Run, RunKind};
use anyhow::Result;
use std::fmt::Write as _;

/// What every section sees: the runs in the order given (the first is the baseline) and, for two or
/// more runs, the baseline compared with each other run.
pub struct Context<'a> {
    pub runs: &'a [Run],
    /// `comparisons[i]` compares `runs[0]` (A) with `runs[i + 1]` (B); `None` when their kinds
    /// differ.
    pub comparisons: Vec<Option<Comparison>>,
}

impl<'a> Context<'a> {
    pub fn new(runs: &'a [Run]) -> Context<'a> {
        let config = &CompareConfig::default();
        let Some((base, rest)) = runs.split_first() else {
            return Context {
                runs,
                comparisons: Vec::new(),
            };
        };
        // The bootstrap intervals are most of a many-run report's cost, and the comparisons are
        // independent: spread them over the CPUs.
        let comparisons = crate::parallel::by_parts(rest, |part| {
            part.iter()
                .map(|other| compare(&[base], &[other], config).ok())
                .collect()
        });
        Context { runs, comparisons }
    }

    /// Whether any run is of this kind (sections of a kind are left out otherwise).
    pub fn has_kind(&self, kind: RunKind) -> bool {
        self.runs.iter().any(|r| r.kind() == kind)
    }

    /// Short name of a run in legends and headings: "R1", or "R1 kernel=6.6" when it has tags.
    pub fn run_label(&self, index: usize) -> String {
        let run = &self.runs[index];
        let tags: Vec<String> = run.tags.iter().map(|(k, v)| format!("{k}={v}")).collect();
        if tags.is_empty() {
            format!("R{}", index + 1)
        } else {
            format!("R{} {}", index + 1, tags.join(","))
        }
    }
}

/// Probes whose figures form a plot of their own section (a curve over a swept parameter): the
/// general tables and charts leave them out and say where they are.
const OWN_SECTION: &[&str] = &[memory_curve::PROBE];

pub fn has_own_section(probe: &str) -> bool {
    OWN_SECTION.contains(&probe)
}

/// One part of the page.
pub trait Section {
    /// The element id of the section (stable: tests and links use it).
    fn id(&self) -> &'static str;
    fn title(&self) -> &'static str;
    /// The section's inner HTML, or `None` when it has nothing to show for these runs.
    fn render(&self, ctx: &Context) -> Result<Option<String>>;
    /// Shown closed (a click opens it): detail few readers need first.
    fn collapsed(&self) -> bool {
        false
    }
}

/// The page's sections in order: this toolkit's general ones around the domains' own, which the
/// commands layer gives (`domains` after the profiles, `papers` after the guest table and before
/// the fingerprint), so the toolkit fixes the page's shape without naming a domain.
pub fn page_sections(
    domains: Vec<Box<dyn Section>>,
    papers: Vec<Box<dyn Section>>,
) -> Vec<Box<dyn Section>> {
    let leading: Vec<Box<dyn Section>> = vec![
        Box::new(overview::Overview),
        Box::new(runs::Runs),
        Box::new(comparison::ComparisonSection),
        Box::new(summary::SummaryTables),
        Box::new(bars::Bars::TIME),
        Box::new(bars::Bars::BANDWIDTH),
        Box::new(bars::Bars::RATE),
        Box::new(memory_curve::MemoryCurve),
        Box::new(counters::Counters),
        Box::new(profiles::Profiles),
    ];
    leading
        .into_iter()
        .chain(domains)
        .chain(std::iter::once(Box::new(guest::Guest) as Box<dyn Section>))
        .chain(papers)
        .chain(std::iter::once(
            Box::new(fingerprint::Fingerprint) as Box<dyn Section>
        ))
        .collect()
}

/// The whole page for these runs (at least one), made of these sections in this order: the
/// commands layer lists them (each domain's own sections beside the general ones here), so this
/// toolkit never names a domain.
pub fn render(runs: &[Run], sections: &[Box<dyn Section>]) -> Result<String> {
    anyhow::ensure!(!runs.is_empty(), "a report needs at least one run");
    let ctx = Context::new(runs);
    let mut body = String::new();
    let mut toc = Vec::new();
    for section in sections {
        let Some(inner) = section.render(&ctx)? else {
            continue;
        };
        toc.push((section.id(), section.title()));
        let title = html::esc(section.title());
        let inner = if section.collapsed() {
            format!("<details>\n<summary>{title}</summary>\n{inner}</details>\n")
        } else {
            format!("<h2>{title}</h2>\n{inner}")
        };
        let _ = write!(
            body,
            "<section id=\"{}\">\n{inner}</section>\n",
            section.id()
        );
    }
    let title = match runs {
        [one] => format!("osmeter report: run {}", one.id),
        many => format!("osmeter report: {} runs", many.len()),
    };
    Ok(html::page(&title, &toc, &body))
}

#[cfg(test)]
mod tests;
