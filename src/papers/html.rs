//! "Then and now", one section per seed paper: the paper's tables with today's figures beside them
//! (from the first run that holds any of them), and for papers that rate their machines in MIPS a
//! plot of each primitive's speed-up relative to the CPU's, one bar per primitive and run, drawn
//! from 1 (as fast as the CPU) as Ousterhout set each machine against its MIPS rating.
//!
//! The tables are the grids `osmeter paper` prints, so the terminal and the page cannot disagree.

use crate::papers::brief::holds_part_of;
use crate::papers::data::Paper;
use crate::papers::render::{self, Grid};
use crate::papers::spec::spec;
use crate::papers::view::{self, Here, PaperDoc};
use crate::papers::PaperId;
use crate::results::report::hbars::{HBar, HBars};
use crate::results::report::html::{esc, figure, note, table, Cell, Row};
use crate::results::report::plot::{color, compact, Axis, LegendItem};
use crate::results::report::{Context, Section};
use anyhow::Result;
use std::fmt::Write as _;

/// Runs the relative-speed plot draws at most.
const MAX_PLOTTED_RUNS: usize = 8;

/// The then-and-now section of one paper.
pub struct ThenAndNow(pub PaperId);

impl Section for ThenAndNow {
    fn id(&self) -> &'static str {
        match self.0 {
            PaperId::Ousterhout89 => "paper-ousterhout89",
            PaperId::Chen96 => "paper-chen96",
            PaperId::ChenBershad93 => "paper-chen-bershad93",
            PaperId::CotaRobles99 => "paper-cota-robles99",
        }
    }

    fn title(&self) -> &'static str {
        match self.0 {
            PaperId::Ousterhout89 => "Then and now: Ousterhout 1989",
            PaperId::Chen96 => "Then and now: Chen et al. 1996",
            PaperId::ChenBershad93 => "Then and now: Chen and Bershad 1993",
            PaperId::CotaRobles99 => "Then and now: Cota-Robles and Held 1999",
        }
    }

    fn render(&self, ctx: &Context) -> Result<Option<String>> {
        let paper = Paper::load(self.0)?;
        let here = Here::detect();
        let mut views: Vec<(usize, PaperDoc)> = Vec::new();
        for (i, run) in ctx.runs.iter().enumerate() {
            if holds_part_of(self.0, run) {
                let doc = view::build(&paper, spec(self.0), std::slice::from_ref(run), &here)?;
                if doc.cells.iter().any(|c| c.now_value.is_some()) {
                    views.push((i, doc));
                }
            }
        }
        let Some((first, doc)) = views.first() else {
            return Ok(None);
        };
        let mut out = format!(
            "<p class=\"note\"><cite>{}</cite>. Today's figures: run {} ({}).</p>\n",
            esc(self.0.title()),
            esc(&ctx.run_label(*first)),
            esc(&today_words(doc))
        );
        if let Some(plot) = relative_plot(ctx, &views)? {
            out.push_str(&plot);
        }
        out.push_str(&tables(&paper, doc));
        if views.len() > 1 {
            out.push_str(&note(&format!(
                "The tables show {}; the plot shows every run that has the paper's figures.",
                ctx.run_label(*first)
            )));
        }
        Ok(Some(out))
    }
}

fn today_words(doc: &PaperDoc) -> String {
    let mut what: Vec<String> = Vec::new();
    what.extend(doc.host.clone());
    what.extend(doc.cpu_model.clone());
    what.extend(doc.kernel.as_ref().map(|k| format!("Linux {k}")));
    if let Some(c) = &doc.cpu {
        what.push(format!(
            "{} MIPS on osmeter's integer mix",
            crate::papers::quantity::format_number(c.mips)
        ));
    } else if let Some(why) = &doc.cpu_missing {
        what.push(format!("no MIPS figure: {why}"));
    }
    if let Some(t) = &doc.today_source {
        what.push(t.clone());
    }
    what.join(", ")
}

fn grid_table(g: &Grid) -> String {
    let Some((head, rows)) = g.rows.split_first() else {
        return String::new();
    };
    let head: Vec<&str> = head.iter().map(String::as_str).collect();
    let rows: Vec<Row> = rows
        .iter()
        .map(|r| Row {
            class: "",
            cells: r
                .iter()
                .enumerate()
                .map(|(i, c)| match i {
                    // Today's rows stand out from the paper's.
                    0 if c.starts_with("this machine") => Cell::from(format!("<b>{}</b>", esc(c))),
                    0 => Cell::from(esc(c)),
                    // Figures right-aligned and kept whole; words (a figure's name with its
                    // parameters) left to wrap, or the table outgrows A4 paper.
                    _ if c.starts_with(|ch: char| ch.is_alphabetic()) => Cell::from(esc(c)),
                    _ => Cell::num(esc(c)),
                })
                .collect(),
        })
        .collect();
    table("", &head, &rows)
}

/// The paper's tables that today's run fills at least in part, as `osmeter paper` lays them out.
fn tables(paper: &Paper, doc: &PaperDoc) -> String {
    let mut out = String::new();
    let mut empty: Vec<&str> = Vec::new();
    // Why cells are empty, said once for the whole paper: the same figure missing from several
    // tables (or from several cells of one) is one notice, not one per cell.
    let mut missing_today: Vec<&str> = Vec::new();
    for t in &paper.tables {
        if !doc
            .cells
            .iter()
            .any(|c| c.table == t.id && c.now_value.is_some())
        {
            empty.push(&t.id);
            continue;
        }
        let _ = writeln!(out, "<h3>{}</h3>", esc(&render::heading(t)));
        for g in render::table_grids(paper, t, doc) {
            out.push_str(&grid_table(&g));
        }
        let (notes, missing) = render::table_notes(doc, t);
        for n in notes {
            out.push_str(&note(n));
        }
        for m in missing {
            if !missing_today.contains(&m) {
                missing_today.push(m);
            }
        }
    }
    if !missing_today.is_empty() {
        out.push_str(&note(&format!(
            "No figure today for some cells: {}",
            missing_today.join("; ")
        )));
    }
    if let Some(g) = render::relative_grid(doc) {
        let _ = writeln!(out, "<h3>{}</h3>", esc(render::RELATIVE_HEADING));
        out.push_str(&grid_table(&g));
        if let Some(line) = render::os_mean_line(doc) {
            out.push_str(&note(&line));
        }
    }
    if !doc.assertions.is_empty() {
        out.push_str("<h3>The seven assertions</h3>\n");
        let rows: Vec<Vec<String>> = doc
            .assertions
            .iter()
            .map(|a| {
                vec![
                    a.number.to_string(),
                    esc(&a.claim),
                    esc(match a.paper {
                        crate::papers::data::Verdict::Holds => "holds",
                        crate::papers::data::Verdict::DoesNotHold => "does not hold",
                    }),
                    esc(a.today.map(|v| v.as_str()).unwrap_or("")),
                    esc(a.today_detail.as_deref().unwrap_or("")),
                ]
            })
            .collect();
        out.push_str(&table(
            "",
            &["", "assertion", "paper", "this trace", "why"],
            &rows,
        ));
    }
    if !empty.is_empty() {
        out.push_str(&note(&format!(
            "Tables without a figure today: {}.",
            empty.join(", ")
        )));
    }
    out
}

/// One bar per primitive and run: the geometric mean over the paper's rated machines of the
/// speed-up relative to the CPU's, with the smallest and largest as a whisker; the OS mean below.
fn relative_plot(ctx: &Context, views: &[(usize, PaperDoc)]) -> Result<Option<String>> {
    let all: Vec<&(usize, PaperDoc)> = views
        .iter()
        .filter(|(_, d)| !d.relative_to_cpu.is_empty())
        .collect();
    if all.is_empty() {
        return Ok(None);
    }
    // A bar per run and primitive: past a few runs the rows grow taller than a page.
    let rated = &all[..all.len().min(MAX_PLOTTED_RUNS)];
    let mut categories: Vec<String> = Vec::new();
    for (_, d) in rated {
        for p in &d.relative_to_cpu {
            let name = p.marked_name();
            if !categories.contains(&name) {
                categories.push(name);
            }
        }
    }
    let mean = "OS primitives (geometric mean)".to_string();
    if rated.iter().any(|(_, d)| d.os_relative_to_cpu.is_some()) {
        categories.push(mean.clone());
    }
    let slots = rated.len();
    let mut bars = Vec::new();
    let mut values = vec![1.0];
    for (slot, (run, d)) in rated.iter().enumerate() {
        let mut push = |name: &str, value: f64, interval: Option<[f64; 2]>| {
            let Some(category) = categories.iter().position(|c| c == name) else {
                return;
            };
            values.push(value);
            values.extend(interval.iter().flatten());
            bars.push(HBar {
                category,
                slot,
                value,
                interval,
                color: color(*run),
                text: Some(format!("{}x", compact(value))),
            });
        };
        for p in &d.relative_to_cpu {
            push(
                &p.marked_name(),
                p.relative_geomean,
                Some([p.relative_min, p.relative_max]),
            );
        }
        if let Some(m) = &d.os_relative_to_cpu {
            push(&mean, m.relative_geomean, None);
        }
    }
    let fmt = |v: f64| compact(v);
    let svg = HBars {
        categories,
        slots,
        bars,
        axis: Axis::for_values(values, 1.0),
        origin: 1.0,
        x_desc: "speed-up since the paper ÷ the CPU's speed-up (1: as fast as the CPU)".into(),
        x_fmt: &fmt,
        legend: rated
            .iter()
            .map(|(run, _)| LegendItem::boxed(ctx.run_label(*run), color(*run)))
            .collect(),
        reference: Some(1.0),
        ticks: None,
    }
    .to_svg()?;
    let machines = rated
        .iter()
        .flat_map(|(_, d)| d.relative_to_cpu.iter().map(|p| p.rows))
        .max()
        .unwrap_or(0);
    let left_out = if all.len() > rated.len() {
        format!(
            " The plot shows the first {} of the {} runs with these figures.",
            rated.len(),
            all.len()
        )
    } else {
        String::new()
    };
    Ok(Some(figure(
        &svg,
        &format!(
            "How much each primitive sped up since the paper, divided by how much the processor \
             sped up (today's MIPS on osmeter's integer mix over the paper machine's rating): the \
             bar is the geometric mean over the paper's {machines} rated machines, the whisker the \
             smallest and largest. Left of 1 the primitive gained less than the CPU. Hardware \
             figures and applications are marked and left out of the OS mean, as in compare.{left_out}"
        ),
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::papers::fixtures::ousterhout_run;

    fn render(runs: &[crate::results::model::Run]) -> Option<String> {
        ThenAndNow(PaperId::Ousterhout89)
            .render(&Context::new(runs))
            .unwrap()
    }

    #[test]
    fn a_run_with_ousterhouts_primitives_gets_tables_and_a_plot() {
        let html = render(&[ousterhout_run(100.0, 100.0, 1e10)]).unwrap();
        assert!(html.contains("Table 2. getpid: entering and leaving the kernel"));
        assert!(html.contains("<b>this machine</b>"));
        assert!(html.contains("10,000 MIPS on osmeter"));
        assert!(html.contains("<svg") && html.contains("bcopy cached (hardware)"));
        assert!(html.contains("OS primitives (geometric mean)"));
        assert!(html.contains("Tables without a figure today: 3, 4, 6, 7, 8, 9, 10."));
        assert!(!html.contains("first 8"));
    }

    #[test]
    fn runs_without_the_papers_figures_get_no_section() {
        let mut run = ousterhout_run(100.0, 100.0, 1e10);
        run.measurements.truncate(1);
        assert_eq!(render(&[run]), None);
        assert_eq!(
            ThenAndNow(PaperId::ChenBershad93)
                .render(&Context::new(&[ousterhout_run(100.0, 100.0, 1e10)]))
                .unwrap(),
            None
        );
    }

    #[test]
    fn many_runs_plot_the_first_eight_and_say_so() {
        let runs: Vec<_> = (0..10)
            .map(|i| {
                let mut r = ousterhout_run(100.0, 100.0 + i as f64, 1e10);
                r.id = format!("run-{i}");
                r
            })
            .collect();
        let html = render(&runs).unwrap();
        assert!(html.contains("The plot shows the first 8 of the 10 runs"));
        assert!(html.contains("The tables show R1"));
    }
}
