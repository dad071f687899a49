//! `osmeter paper [NAME]`: the seed papers, and one paper's tables with today's figures beside them,
//! measured now or taken from stored runs.

use crate::cli::{JsonArg, PaperArgs};
use crate::papers::data::Paper;
use crate::papers::view::{self, Here};
use crate::papers::{plan, render, spec, today};
use anyhow::Result;
use std::fmt::Write;

pub fn paper(args: &PaperArgs) -> Result<i32> {
    let Some(id) = args.name else {
        return list(args.output);
    };
    let paper = Paper::load(id)?;
    if !args.guests.is_empty() {
        return super::paper_guest::paper(id, &paper, args);
    }
    let side = crate::config::paper::side(id, &paper, args)?;
    let today = today::measure(id, args.table.as_deref(), side)?;
    if let Some(code) = today.capture_failed {
        return Ok(code);
    }
    let doc = view::build(&paper, spec::spec(id), &today.runs, &Here::detect())?;
    if args.output.json {
        super::emit_json(&doc)?;
    } else {
        super::emit(&render::render(&paper, &doc, args.table.as_deref()))?;
        // Today's side measured on a busy machine is not today's machine quiet: said once.
        for machine in today
            .runs
            .iter()
            .filter_map(|r| r.machine.as_ref().filter(|m| m.busy()))
        {
            super::emit(&format!("\n{}", machine.text()))?;
        }
    }
    if today.interrupted {
        return Ok(crate::error::EXIT_INTERRUPTED);
    }
    if let Some(failed) = today.all_failed {
        eprintln!(
            "osmeter: every figure failed ({failed} failed, none measured); the reasons are in \
             `osmeter show {}`",
            today
                .runs
                .first()
                .map(|r| r.id.as_str())
                .unwrap_or("latest")
        );
        return Ok(crate::error::EXIT_RUNTIME);
    }
    Ok(today
        .verdict
        .map_or(crate::error::EXIT_OK, super::latency::exit_code))
}

fn list(output: JsonArg) -> Result<i32> {
    let catalogue = plan::catalogue()?;
    if output.json {
        super::emit_json_all(&catalogue)?;
        return Ok(0);
    }
    let mut out = String::new();
    for l in &catalogue {
        writeln!(out, "{:<16} {}: {}", l.paper.key(), l.name, l.title)?;
        writeln!(
            out,
            "{:<16} {} tables, {} published values",
            "", l.tables, l.values
        )?;
        match (l.probes.is_empty(), l.elsewhere.as_deref()) {
            (false, _) => writeln!(out, "{:<16} measures: {}", "", l.probes.join(", "))?,
            (true, Some(e)) => writeln!(out, "{:<16} {e}", "")?,
            (true, None) => {}
        }
    }
    out.push_str(
        "\n`osmeter paper NAME` measures and shows one; `--run ID` reuses a stored run.\n",
    );
    super::emit(&out)?;
    Ok(0)
}
