//! `paper chen96 --guest K`: Chen et al. 1996 explained every benchmark by its instruction counts,
//! user and kernel apart, read from the Pentium's event counters. Where this host has no PMU, a
//! guest run counts them exactly instead (for the guest's kernel, not this host's): one row per
//! figure the paper's table reads, each saying whether the guest counted it, at which point, or
//! why it could not.

use super::source::{Param, ProbeRef};
use super::spec::spec;
use super::PaperId;
use crate::probes::{self, Scale};
use crate::results::guest::{side_label, GuestDoc};
use crate::results::model::{Params, Status};
use crate::suite::guest::plan::Planned;
use serde::Serialize;
use std::fmt::Write;

/// The parameter a one-CPU guest cannot honour: both parties of a two-party probe share its CPU.
const PLACEMENT: &str = "placement";

/// Where a row's counts come from.
#[derive(Debug, Clone, Serialize, PartialEq, schemars::JsonSchema)]
#[serde(tag = "from", rename_all = "kebab-case")]
pub enum CountSource {
    /// Counted in the guest at this point (the figure's own, or the same with both parties on
    /// the guest's one CPU).
    Guest { point: String },
    /// The guest has no count of it, for this reason.
    NotCounted { reason: String },
}

/// Instructions per operation of one of the paper's figures in one guest.
#[derive(Debug, Clone, Serialize, PartialEq, schemars::JsonSchema)]
pub struct CountRow {
    /// The figure as the paper's table reads it (`probe key=value ...`).
    pub figure: String,
    pub kernel: String,
    pub user_instructions: Option<f64>,
    pub kernel_instructions: Option<f64>,
    pub source: CountSource,
}

fn value(p: &Param) -> serde_json::Value {
    match *p {
        Param::Str(s) => serde_json::json!(s),
        Param::Num(n) => serde_json::json!(n),
        Param::Bool(b) => serde_json::json!(b),
    }
}

/// The probe's own point with the figure's parameters, both parties on one CPU where the probe
/// places two: the probe's points are searched so that parameters the figure leaves open get
/// the probe's values.
fn guest_point(r: &ProbeRef) -> Planned {
    let fits =
        |v: &Params| r.wants_except(v, PLACEMENT) && v.get(PLACEMENT).is_none_or(|p| p == "same");
    let found = probes::find(r.probe).and_then(|def| {
        [Scale::Full, Scale::Quick]
            .into_iter()
            .flat_map(|s| (def.variants)(s))
            .find(fits)
    });
    let params = found.unwrap_or_else(|| {
        r.params
            .iter()
            .map(|(k, p)| (k.to_string(), value(p)))
            .collect()
    });
    Planned {
        probe: r.probe.to_string(),
        params: Some(params),
    }
}

/// The points to count: one per figure the paper's table reads (those no guest can run are
/// skipped by the guest run, with the reason, and shown so).
pub fn points() -> Vec<Planned> {
    spec(PaperId::Chen96)
        .figures()
        .iter()
        .map(guest_point)
        .collect()
}

fn row(doc: &GuestDoc, r: &ProbeRef) -> CountRow {
    let mut row = CountRow {
        figure: r.label(),
        kernel: side_label(doc),
        user_instructions: None,
        kernel_instructions: None,
        source: CountSource::NotCounted {
            reason: "not in this guest run".into(),
        },
    };
    let Some(p) = doc
        .probes
        .iter()
        .find(|p| p.probe == r.probe && r.wants_except(&p.params, PLACEMENT))
    else {
        return row;
    };
    match (&p.per_op, p.status) {
        (Some(c), Status::Ok) => {
            row.user_instructions = Some(c.user.instructions);
            row.kernel_instructions = Some(c.kernel.instructions);
            row.source = CountSource::Guest { point: p.label() };
        }
        _ => {
            row.source = CountSource::NotCounted {
                reason: p
                    .reason
                    .clone()
                    .unwrap_or_else(|| format!("{:?} in the guest", p.status).to_lowercase()),
            }
        }
    }
    row
}

/// Every figure of the paper's table, for each guest.
pub fn rows(docs: &[&GuestDoc]) -> Vec<CountRow> {
    let figures = spec(PaperId::Chen96).figures();
    docs.iter()
        .flat_map(|d| figures.iter().map(move |r| row(d, r)))
        .collect()
}

pub fn render(rows: &[CountRow], host_has_pmu: bool) -> String {
    let mut out = String::new();
    let why = if host_has_pmu {
        "this host has a PMU, and `osmeter paper chen96` without --guest counts on it; these \
         counts are the guest kernel's"
    } else {
        "this host has no hardware PMU, so instead of the Pentium's event counters the paper \
         used, the instructions are counted exactly in a QEMU guest (the guest's kernel, not \
         this host's; no cycles: TCG keeps no time)"
    };
    let _ = writeln!(
        out,
        "Chen et al. 1996: instructions per operation of the figures its table reads, user and \
         kernel apart; {why}\n"
    );
    let width = |f: fn(&CountRow) -> usize| rows.iter().map(f).max().unwrap_or(6).max(6);
    let w = width(|r| r.figure.chars().count());
    let k = width(|r| r.kernel.chars().count());
    let _ = writeln!(
        out,
        "{:w$}  {:k$}  {:>12} {:>12}  source",
        "figure", "kernel", "user ins.", "kernel ins."
    );
    let cell = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.0}"));
    let mut notes = Vec::new();
    for r in rows {
        let source = match &r.source {
            CountSource::Guest { point } if *point == r.figure => "guest".to_string(),
            CountSource::Guest { point } => {
                notes.push(format!(
                    "{}: counted as {point} (the guest has one CPU)",
                    r.figure
                ));
                "guest, see below".to_string()
            }
            CountSource::NotCounted { reason } => {
                let note = format!("{}: not counted in a guest: {reason}", r.figure);
                if !notes.contains(&note) {
                    notes.push(note);
                }
                "none, see below".to_string()
            }
        };
        let _ = writeln!(
            out,
            "{:w$}  {:k$}  {:>12} {:>12}  {source}",
            r.figure,
            r.kernel,
            cell(r.user_instructions),
            cell(r.kernel_instructions)
        );
    }
    if !notes.is_empty() {
        let _ = writeln!(out);
        for n in notes {
            let _ = writeln!(out, "{n}");
        }
    }
    let _ = writeln!(out, "\n{SEVERAL_SYSTEMS}");
    out
}

/// The paper set three systems on one machine; osmeter's command for that, named where the
/// papers' system comparisons are shown.
pub const SEVERAL_SYSTEMS: &str = "Several systems on one machine, as the paper compares them: \
    `osmeter run --guest 'linux-image-6.1.0-57*-amd64' --append \"\" --append mitigations=off \
    --preset pentium PROBES` sets the flavours of one kernel (generic, cloud, RT) and its \
    parameters side by side, with the kernel functions that differ (docs/guest-kernels.md).";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::guest::GuestProbe;

    fn point_of(points: &[Planned], probe: &str) -> Params {
        points
            .iter()
            .find(|p| p.probe == probe)
            .and_then(|p| p.params.clone())
            .unwrap_or_else(|| panic!("no {probe} in {points:?}"))
    }

    #[test]
    fn every_figure_gets_one_full_point_on_one_cpu() {
        let points = points();
        assert_eq!(points.len(), spec(PaperId::Chen96).figures().len());
        let tcp = point_of(&points, "net.tcp_bandwidth");
        assert_eq!(tcp[PLACEMENT], "same");
        assert_eq!(tcp["rcvbuf"], 24576);
        let exec: Vec<&Planned> = points
            .iter()
            .filter(|p| p.probe == "process.exec")
            .collect();
        assert_eq!(exec.len(), 2, "static and dynamic, as the table reads them");
        assert!(exec
            .iter()
            .all(|p| p.params.as_ref().unwrap()["method"] == "vfork"));
    }

    #[test]
    fn rows_say_what_the_guest_counted_and_why_not() {
        let mut d = crate::results::fixtures::guest_doc("K", 321.0);
        let points = points();
        let mut tcp = d.probes[0].clone();
        tcp.probe = "net.tcp_bandwidth".into();
        tcp.params = point_of(&points, "net.tcp_bandwidth");
        d.probes = vec![
            tcp,
            GuestProbe {
                probe: "memory.latency".into(),
                params: point_of(&points, "memory.latency"),
                status: Status::Skipped,
                reason: Some("a hardware figure".into()),
                iterations: 0,
                per_op: None,
                simulated: Vec::new(),
                kernel_parts: None,
            },
        ];
        let rows = rows(&[&d]);
        let tcp = rows
            .iter()
            .find(|r| r.figure.starts_with("net.tcp_bandwidth"))
            .unwrap();
        assert!(tcp.figure.contains("placement=cross"));
        assert_eq!(tcp.kernel_instructions, Some(321.0));
        assert!(
            matches!(&tcp.source, CountSource::Guest { point } if point.contains("placement=same"))
        );
        let mem = rows
            .iter()
            .find(|r| r.figure.starts_with("memory.latency"))
            .unwrap();
        assert_eq!(mem.user_instructions, None);
        assert_eq!(
            mem.source,
            CountSource::NotCounted {
                reason: "a hardware figure".into()
            }
        );
        let exec = rows
            .iter()
            .find(|r| r.figure.starts_with("process.exec"))
            .unwrap();
        assert!(
            matches!(&exec.source, CountSource::NotCounted { reason } if reason.contains("not in"))
        );
        let text = render(&rows, false);
        assert!(
            text.contains("no hardware PMU") && text.contains("321"),
            "{text}"
        );
        assert!(text.contains("(the guest has one CPU)"), "{text}");
        assert!(
            text.contains("not counted in a guest: a hardware figure"),
            "{text}"
        );
        assert!(render(&rows, true).contains("has a PMU"));
    }
}
