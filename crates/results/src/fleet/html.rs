//! `osmeter fleet --html FILE`: one self-contained page with a heatmap per class, hosts down and
//! figures across, each cell coloured by how far the host is from its class's median (red slower,
//! blue faster, on a log scale that saturates at twice or half), outliers marked, and the exact
//! value, interval and q-value in the cell's title; then the hosts and their change points.

use super::{Cell, Class, FleetReport};
use crate::results::figure::Direction;
use crate::results::report::html::{self, esc};
use std::fmt::Write as _;

/// The heatmap's own style: small square cells, the colour carries the reading.
const CSS: &str = "<style>.heat{border-collapse:collapse;font-size:11px}\
.heat td{width:16px;height:16px;padding:0;border:1px solid #fff;text-align:center}\
.heat td.off{outline:2px solid #000;outline-offset:-2px;font-weight:bold}\
.heat th.fig{writing-mode:vertical-rl;transform:rotate(180deg);font-weight:normal;\
max-height:14em;white-space:nowrap;overflow:hidden}\
.heat th.host{text-align:right;padding-right:6px;font-weight:normal;white-space:nowrap}\
.scroll{overflow-x:auto}.legend span{display:inline-block;width:16px;height:12px}</style>\n";

pub fn render(r: &FleetReport) -> String {
    let mut body = String::from(CSS);
    let mut toc = Vec::new();
    let _ = write!(
        body,
        "<section id=\"fleet-summary\"><h2>Hosts off their class</h2>\n{}{}</section>\n",
        html::note(&format!(
            "{} hosts in {} classes from {}; each host against its class's median, called off at \
             a false-discovery rate of {} and {} % or more away.",
            r.hosts.len(),
            r.classes.len(),
            r.store,
            r.method.alpha,
            r.method.min_effect * 100.0
        )),
        outliers_table(r)
    );
    toc.push((
        "fleet-summary".to_string(),
        "Hosts off their class".to_string(),
    ));
    for (i, class) in r.classes.iter().enumerate() {
        let id = format!("fleet-class-{i}");
        let title = format!("Class {}", class.name);
        let _ = write!(
            body,
            "<section id=\"{id}\"><h2>{}</h2>\n{}</section>\n",
            esc(&title),
            heatmap(class)
        );
        toc.push((id, title));
    }
    if !r.changes.is_empty() {
        let rows: Vec<Vec<String>> = r
            .changes
            .iter()
            .map(|c| {
                vec![
                    esc(&c.host),
                    esc(&c.figure),
                    html::num(c.before),
                    html::num(c.after),
                    esc(&format!("{} ({})", c.run, c.started_at)),
                ]
            })
            .collect();
        let _ = write!(
            body,
            "<section id=\"fleet-changes\"><h2>Since when</h2>\n{}</section>\n",
            html::table(
                "changes",
                &["host", "figure", "before", "after", "from run"],
                &rows
            )
        );
        toc.push(("fleet-changes".to_string(), "Since when".to_string()));
    }
    let toc: Vec<(&str, &str)> = toc.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    html::page("osmeter fleet", &toc, &body)
}

fn outliers_table(r: &FleetReport) -> String {
    let rows: Vec<Vec<String>> = r
        .outliers()
        .map(|(row, c)| {
            vec![
                esc(&c.host),
                esc(&row.figure),
                html::value(c.value, row.unit),
                html::value(row.median, row.unit),
                format!(
                    "{} [{}, {}]",
                    html::num(c.ratio),
                    html::num(c.ratio_interval[0]),
                    html::num(c.ratio_interval[1])
                ),
                format!("{:.1e}", c.q_value),
                esc(if c.slower { "slower" } else { "faster" }),
            ]
        })
        .collect();
    if rows.is_empty() {
        return html::note("No host is off its class on any figure.");
    }
    html::table(
        "outliers",
        &[
            "host",
            "figure",
            "value",
            "class median",
            "ratio [95 % interval]",
            "q",
            "",
        ],
        &rows,
    )
}

fn heatmap(class: &Class) -> String {
    if let Some(why) = &class.not_judged {
        return html::note(&format!("Not judged: {why}."));
    }
    let mut out = String::from("<p class=\"legend\">slower ");
    for step in [1.0, 0.5, 0.0, -0.5, -1.0] {
        let _ = write!(out, "<span style=\"background:{}\"></span>", colour(step));
    }
    out.push_str(
        " faster: each square is one host on one figure, by its distance from the class median \
         (full colour at twice or half); outlined squares are the hosts called off.</p>\n",
    );
    out.push_str("<div class=\"scroll\"><table class=\"heat\"><tr><th></th>");
    for row in &class.figures {
        let _ = write!(out, "<th class=\"fig\">{}</th>", esc(&row.figure));
    }
    out.push_str("</tr>\n");
    for host in &class.hosts {
        let _ = write!(out, "<tr><th class=\"host\">{}</th>", esc(host));
        for row in &class.figures {
            match row.cells.iter().find(|c| &c.host == host) {
                Some(cell) => out.push_str(&square(cell, row.direction, row.unit)),
                None => out.push_str("<td title=\"not measured\"></td>"),
            }
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table></div>\n");
    out
}

fn square(cell: &Cell, direction: Direction, unit: crate::units::Unit) -> String {
    // Positive: worse than the class, in the figure's own direction.
    let worse = match direction {
        Direction::Lower => cell.ratio.log2(),
        Direction::Higher => -cell.ratio.log2(),
    };
    format!(
        "<td{} style=\"background:{}\" title=\"{}: {} ({} x the class median, [{}, {}], q {:.1e})\">{}</td>",
        if cell.outlier { " class=\"off\"" } else { "" },
        colour(worse.clamp(-1.0, 1.0)),
        esc(&cell.host),
        esc(&html::value(cell.value, unit)),
        html::num(cell.ratio),
        html::num(cell.ratio_interval[0]),
        html::num(cell.ratio_interval[1]),
        cell.q_value,
        if cell.outlier { "!" } else { "" }
    )
}

/// -1 (faster) blue, 0 white, 1 (slower) red.
fn colour(t: f64) -> String {
    let (r, g, b) = if t >= 0.0 {
        (255.0, 255.0 * (1.0 - t), 255.0 * (1.0 - t))
    } else {
        (255.0 * (1.0 + t), 255.0 * (1.0 + t), 255.0)
    };
    format!("rgb({:.0},{:.0},{:.0})", r, g, b)
}
