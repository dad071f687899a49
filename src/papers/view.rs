//! A paper's tables beside today's figures: one typed record per pair of a published value and
//! today's counterpart, with the speed-up and, where the paper rates its machines in MIPS, the
//! speed-up relative to the CPU's.

use super::arith;
use super::cpu::{cpu_speed, CpuSpeed};
use super::data::{Cell, Paper, Verdict};
use super::quantity::{Quantity, Unit};
use super::source::{now_value, NowValue, ProbeRef};
use super::spec::{Comparison, Derived, LatencyFigure, Now, Spec, Today, Underrun, UnderrunFigure};
use super::summary::{self, OsMean, PrimitiveSummary};
use super::PaperId;
use crate::latency::accounting::WINDOWS;
use crate::latency::document::Estimate;
use crate::memsim::document::{AssertionVerdict, MachineDoc, MemsimDoc};
use crate::results::model::Run;
use serde::{Deserialize, Serialize};

mod latency;

use latency::*;

pub const PAPER_SCHEMA: &str = "osmeter.paper/1";

/// One published value and today's counterpart.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct CellPair {
    pub table: String,
    pub row: String,
    pub column: String,
    /// The paper's machine and its MIPS rating, where the paper gives one.
    pub machine: String,
    pub machine_mips: Option<f64>,
    pub os: Option<String>,
    pub unit: Unit,
    pub paper_value: Quantity,
    /// Which of today's rows this is ("this machine", "this machine, across CPUs", ...).
    pub now_label: String,
    /// Today's value in the paper's unit, its 95 % interval, and the figure it came from.
    pub now_value: Option<f64>,
    pub now_ci95: Option<[f64; 2]>,
    pub now_figure: Option<String>,
    pub now_run: Option<String>,
    /// How many times faster today is (paper time over today's, or today's rate over the paper's).
    pub speedup: Option<f64>,
    /// This machine's MIPS over the paper machine's.
    pub cpu_speedup: Option<f64>,
    /// `speedup / cpu_speedup`: below 1, the primitive gained less than the processor.
    pub speedup_relative_to_cpu: Option<f64>,
    /// Why today's value is missing.
    pub missing: Option<String>,
}

/// One of Chen and Bershad's assertions: the paper's verdict and today's (memsim `--assertions`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct AssertionPair {
    pub number: u8,
    pub claim: String,
    pub paper: Verdict,
    pub today: Option<AssertionVerdict>,
    /// The figures behind today's verdict, in words.
    pub today_detail: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct TableNote {
    pub table: String,
    pub note: String,
}

/// The whole view of one paper: the `osmeter paper NAME --json` document, read back as the same
/// value.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct PaperDoc {
    pub schema: String,
    pub paper: PaperId,
    pub name: String,
    pub title: String,
    /// The runs today's figures came from.
    pub runs: Vec<String>,
    pub host: Option<String>,
    pub cpu_model: Option<String>,
    pub kernel: Option<String>,
    pub cpu: Option<CpuSpeed>,
    /// Why there is no CPU speed, when there is none.
    pub cpu_missing: Option<String>,
    pub cells: Vec<CellPair>,
    /// Per primitive, the speed-up relative to the CPU across the paper's machines.
    pub relative_to_cpu: Vec<PrimitiveSummary>,
    /// The OS primitives' relative speed-ups as one number (hardware figures left out).
    pub os_relative_to_cpu: Option<OsMean>,
    pub notes: Vec<TableNote>,
    /// Today's figures that could not be found, with the reason.
    pub missing: Vec<String>,
    /// What today's side is, when it is a stored document (the trace simulated, the latency run).
    pub today_source: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub assertions: Vec<AssertionPair>,
    /// Where today's side comes from for papers that `osmeter run` does not measure.
    pub elsewhere: Option<String>,
    /// Per operation of each figure, user and kernel apart, and from what (chen96 only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mode_split: Vec<super::split::ModeSplit>,
}

/// What the view needs to know about the machine that is showing it.
#[derive(Debug, Clone, Default)]
pub struct Here {
    /// The nominal processor clock of this machine, used for cycle figures of runs made here
    /// without a cycle counter.
    pub mhz: Option<f64>,
    pub hostname: Option<String>,
}

impl Here {
    /// This machine's host name and the clock /proc/cpuinfo reports (a VM's nominal one).
    pub fn detect() -> Here {
        let mhz = std::fs::read_to_string("/proc/cpuinfo").ok().and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("cpu MHz"))
                .and_then(|l| l.split(':').nth(1))
                .and_then(|v| v.trim().parse().ok())
        });
        let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .ok()
            .map(|h| h.trim().to_string());
        Here { mhz, hostname }
    }
}

fn fingerprint_text(
    runs: &[Run],
    field: impl Fn(&crate::results::fingerprint::Fingerprint) -> Option<&String>,
) -> Option<String> {
    field(runs.first()?.fingerprint.as_ref()?).cloned()
}

fn find_both<'a>(
    a: &ProbeRef,
    b: &ProbeRef,
    runs: &'a [Run],
) -> Result<
    (
        &'a crate::results::model::Measurement,
        &'a crate::results::model::Measurement,
    ),
    String,
> {
    let (_, ma) = a.find(runs).ok_or_else(|| a.missing_reason(runs))?;
    let (_, mb) = b.find(runs).ok_or_else(|| b.missing_reason(runs))?;
    Ok((ma, mb))
}

/// The memsim document of the runs and its DECstation 5000/200 machine (else its first).
pub fn memsim_machine(runs: &[Run]) -> Result<(&Run, &MemsimDoc, &MachineDoc), String> {
    let (run, doc) = runs
        .iter()
        .find_map(|r| {
            r.sections
                .get::<crate::memsim::document::MemsimDoc>()
                .map(|d| (r, d))
        })
        .ok_or("no memsim document in the runs (a run of `osmeter memsim`)")?;
    let machine = doc
        .machines
        .iter()
        .find(|m| m.name == DS5000)
        .or(doc.machines.first())
        .ok_or("the memsim document simulated no machine")?;
    Ok((run, doc, machine))
}

const DS5000: &str = "ds5000-200";

/// Today's value of a comparison, in `unit`.
fn today(
    now: &Now,
    unit: Unit,
    runs: &[Run],
    cpu: &Result<CpuSpeed, String>,
    here: &Here,
) -> Result<NowValue, String> {
    match now {
        Now::Figure(r) => now_value(r, runs, unit),
        Now::Scaled(r, count) => now_value(r, runs, unit).map(|v| NowValue {
            value: v.value * count,
            ci95: [v.ci95[0] * count, v.ci95[1] * count],
            figure: format!("{} x {}", v.figure, crate::units::compact(*count)),
            run: v.run,
        }),
        Now::Mips => cpu.as_ref().map_err(Clone::clone).map(|c| NowValue {
            value: c.mips,
            ci95: c.mips_ci95,
            figure: c.figure.clone(),
            run: c.run.clone(),
        }),
        Now::Ratio(a, b) => {
            let (ma, mb) = find_both(a, b, runs)?;
            let (sa, sb) = (ma.summary.as_ref().unwrap(), mb.summary.as_ref().unwrap());
            if sb.median <= 0.0 || sb.ci95[0] <= 0.0 {
                return Err(format!("{} took no time", mb.label()));
            }
            Ok(NowValue {
                value: sa.median / sb.median,
                ci95: [sa.ci95[0] / sb.ci95[1], sa.ci95[1] / sb.ci95[0]],
                figure: format!("{} / {}", ma.label(), mb.label()),
                run: a.find(runs).map(|(r, _)| r.id.clone()).unwrap_or_default(),
            })
        }
        Now::Sum(parts) => {
            let mut total = NowValue {
                value: 0.0,
                ci95: [0.0, 0.0],
                figure: String::new(),
                run: String::new(),
            };
            for r in parts.iter() {
                let part = now_value(r, runs, unit)?;
                total.value += part.value;
                // The parts' intervals added: wider than the sum's own, never narrower.
                total.ci95 = [total.ci95[0] + part.ci95[0], total.ci95[1] + part.ci95[1]];
                if total.figure.is_empty() {
                    total.figure = part.figure;
                    total.run = part.run;
                } else {
                    total.figure = format!("{} + {}", total.figure, part.figure);
                }
            }
            Ok(total)
        }
        Now::PercentMore(a, b) => {
            let (ma, mb) = find_both(a, b, runs)?;
            let (sa, sb) = (ma.summary.as_ref().unwrap(), mb.summary.as_ref().unwrap());
            if sb.median <= 0.0 || sb.ci95[0] <= 0.0 {
                return Err(format!("{} took no time", mb.label()));
            }
            let more = |x: f64, y: f64| (x / y - 1.0) * 100.0;
            Ok(NowValue {
                value: more(sa.median, sb.median),
                ci95: [more(sa.ci95[0], sb.ci95[1]), more(sa.ci95[1], sb.ci95[0])],
                figure: format!("{} over {}", ma.label(), mb.label()),
                run: a.find(runs).map(|(r, _)| r.id.clone()).unwrap_or_default(),
            })
        }
        Now::Memsim(f) => {
            let (run, doc, machine) = memsim_machine(runs)?;
            let value = f.value(doc, machine).ok_or_else(|| {
                format!(
                    "the memsim run {} lacks this figure (kernel symbols or --assertions missing?)",
                    run.id
                )
            })?;
            Ok(NowValue {
                value,
                ci95: [value, value],
                figure: format!("memsim {} on {}", machine.name, doc.trace.path),
                run: run.id.clone(),
            })
        }
        Now::Latency(f) => {
            let (ns, figure, run) = latency_worst(f, runs)?;
            let value = unit
                .nanoseconds()
                .map(|u| ns / u)
                .ok_or("the paper's unit is not a time")?;
            Ok(NowValue {
                value,
                ci95: [value, value],
                figure,
                run,
            })
        }
        Now::Underruns(f) => underrun_value(f, unit, runs),
        Now::Cycles(r) => {
            let (run, m) = r.find(runs).ok_or_else(|| r.missing_reason(runs))?;
            let s = m.summary.as_ref().unwrap();
            let counted = m.counters.user.get("cycles").copied().filter(|c| *c > 0.0);
            let made_here = here.hostname.is_some() && run.host() == here.hostname;
            let value = match (counted, here.mhz) {
                (Some(c), _) => c,
                (None, Some(mhz)) if made_here => s.median * mhz / 1e3,
                _ => {
                    return Err(format!(
                        "{} has no cycle count (no hardware counter) and was measured on another \
                         machine, whose clock is not recorded",
                        m.label()
                    ))
                }
            };
            let scale = value / s.median;
            Ok(NowValue {
                value,
                ci95: [s.ci95[0] * scale, s.ci95[1] * scale],
                figure: m.label(),
                run: run.id.clone(),
            })
        }
    }
}

fn applies(c: &Comparison, cell: &Cell) -> bool {
    c.table == cell.table && c.cells.contains(cell.row, cell.column)
}

fn pair(cell: &Cell, label: &str) -> CellPair {
    CellPair {
        table: cell.table.to_string(),
        row: cell.row.to_string(),
        column: cell.column.to_string(),
        machine: cell.machine.id.clone(),
        machine_mips: cell.machine.mips,
        os: cell.os.map(str::to_string),
        unit: cell.unit,
        paper_value: cell.value,
        now_label: label.to_string(),
        now_value: None,
        now_ci95: None,
        now_figure: None,
        now_run: None,
        speedup: None,
        cpu_speedup: None,
        speedup_relative_to_cpu: None,
        missing: None,
    }
}

/// Builds the view of `paper` from `runs` (empty for the paper's side alone).
pub fn build(paper: &Paper, spec: &Spec, runs: &[Run], here: &Here) -> anyhow::Result<PaperDoc> {
    let cpu = cpu_speed(runs);
    let cells = paper.cells()?;
    let mut pairs: Vec<CellPair> = Vec::new();
    let mut missing: Vec<String> = Vec::new();
    let measuring = !runs.is_empty();
    let needs_cpu = measuring && spec.cpu_relative;
    for cell in &cells {
        for c in spec.comparisons.iter().filter(|c| applies(c, cell)) {
            let mut p = pair(cell, c.label);
            if measuring {
                match today(&c.now, cell.unit, runs, &cpu, here) {
                    Ok(now) => {
                        p.now_value = Some(now.value);
                        p.now_ci95 = Some(now.ci95);
                        p.now_figure = Some(now.figure);
                        p.now_run = Some(now.run);
                        if matches!(
                            c.now,
                            Now::Figure(_)
                                | Now::Sum(_)
                                | Now::Scaled(..)
                                | Now::Mips
                                | Now::Latency(_)
                        ) {
                            p.speedup = arith::speedup(cell.value.central(), now.value, cell.unit);
                        }
                        if let (Now::Figure(_) | Now::Sum(_), Ok(cpu), Some(mips)) =
                            (&c.now, &cpu, cell.machine.mips)
                        {
                            p.cpu_speedup = Some(cpu.mips / mips);
                            p.speedup_relative_to_cpu = p
                                .speedup
                                .and_then(|s| arith::relative_to_cpu(s, cpu.mips, mips));
                        }
                    }
                    Err(why) => {
                        if !missing.contains(&why) {
                            missing.push(why.clone());
                        }
                        p.missing = Some(why);
                    }
                }
            }
            pairs.push(p);
        }
    }
    if measuring {
        derive_today(paper, spec, &cells, &cpu, &mut pairs);
    }
    let relative = summary::summarise(paper, spec, &pairs);
    Ok(PaperDoc {
        schema: PAPER_SCHEMA.to_string(),
        paper: paper.paper,
        name: paper.paper.name().to_string(),
        title: paper.paper.title().to_string(),
        runs: runs.iter().map(|r| r.id.clone()).collect(),
        host: runs.first().and_then(Run::host),
        cpu_model: fingerprint_text(runs, |f| f.cpu_model.as_ref()),
        kernel: fingerprint_text(runs, |f| f.kernel_release.as_ref()),
        cpu_missing: if needs_cpu {
            cpu.as_ref().err().cloned()
        } else {
            None
        },
        cpu: cpu.ok(),
        relative_to_cpu: relative.clone(),
        os_relative_to_cpu: summary::os_mean(&relative),
        cells: pairs,
        notes: spec
            .notes
            .iter()
            .map(|(t, n)| TableNote {
                table: t.to_string(),
                note: n.to_string(),
            })
            .collect(),
        missing,
        today_source: today_source(spec, runs),
        assertions: assertions(paper, runs),
        elsewhere: spec.elsewhere.map(str::to_string),
        mode_split: super::split::for_paper(paper.paper, runs),
    })
}

/// One line about the stored document today's side comes from.
fn today_source(spec: &Spec, runs: &[Run]) -> Option<String> {
    match spec.today() {
        Today::Probes => None,
        Today::Memsim => memsim_machine(runs).ok().map(|(_, d, m)| {
            format!(
                "memsim of {} on {} ({} non-idle instructions, {:.1} % in the kernel)",
                d.trace.path,
                m.name,
                super::quantity::format_number(m.instructions as f64),
                100.0 * m.system_fraction
            )
        }),
        Today::Latency => runs
            .iter()
            .find_map(|r| r.sections.get::<crate::latency::document::LatencyDoc>())
            .map(|d| {
                let loads: Vec<&str> = d.loads.iter().map(|l| l.load.as_str()).collect();
                format!(
                    "latency, {:.0} s at a {} us period, load {}",
                    d.measured_s,
                    d.period_ns / 1000,
                    if loads.is_empty() {
                        "none".to_string()
                    } else {
                        loads.join(", ")
                    }
                )
            }),
    }
}

/// The paper's assertions beside today's verdicts, when the runs hold memsim's judgement.
fn assertions(paper: &Paper, runs: &[Run]) -> Vec<AssertionPair> {
    let judged = runs.iter().find_map(|r| {
        r.sections
            .get::<crate::memsim::document::MemsimDoc>()?
            .assertions
            .as_ref()
    });
    paper
        .assertions
        .iter()
        .map(|a| {
            let today = judged.and_then(|j| {
                j.assertions
                    .iter()
                    .find(|t| t.number == u32::from(a.number))
            });
            AssertionPair {
                number: a.number,
                claim: a.claim.clone(),
                paper: a.verdict,
                today: today.map(|t| t.verdict),
                today_detail: today.map(|t| t.detail.clone()),
            }
        })
        .collect()
}

/// Recomputes the paper's derived columns for each of today's rows that has the column they are
/// derived from.
fn derive_today(
    paper: &Paper,
    spec: &Spec,
    cells: &[Cell],
    cpu: &Result<CpuSpeed, String>,
    pairs: &mut Vec<CellPair>,
) {
    for d in spec.derived {
        let Some(table) = paper.table(d.source()) else {
            continue;
        };
        let sources: Vec<(String, Option<f64>)> = pairs
            .iter()
            .filter(|p| p.table == d.source() && p.column == d.from())
            .filter(|p| d.derives_for(&p.now_label))
            .fold(Vec::new(), |mut acc, p| {
                if !acc.iter().any(|(l, _)| *l == p.now_label) {
                    acc.push((p.now_label.clone(), p.now_value));
                }
                acc
            });
        let Some((_, from_col)) = table.column(d.from()) else {
            continue;
        };
        let Some(from_unit) = from_col.unit else {
            continue;
        };
        for (label, now) in sources {
            let value = match (*d, now, cpu) {
                (Derived::MipsRelative { base, .. }, Some(v), Ok(cpu)) => {
                    let base_row = table.row(base);
                    let base_value = table.value(base, d.from());
                    let base_mips = base_row
                        .and_then(|r| r.machine.as_deref())
                        .and_then(|m| paper.machine(m))
                        .and_then(|m| m.mips);
                    match (base_value, base_mips) {
                        (Some(b), Some(bm)) => {
                            arith::mips_relative(v, cpu.mips, b.central(), bm, from_unit)
                        }
                        _ => None,
                    }
                }
                (Derived::BytesPerInstruction { .. }, Some(v), Ok(cpu)) => from_unit
                    .bytes_per_second()
                    .map(|bps| v * bps / (cpu.mips * 1e6)),
                _ => None,
            };
            for cell in cells
                .iter()
                .filter(|c| c.table == d.table() && c.column == d.column())
            {
                let mut p = pair(cell, &label);
                p.now_value = value;
                p.now_figure = value.map(|_| format!("computed from today's {}", d.from()));
                if value.is_none() {
                    p.missing = Some(format!("needs today's {} and the CPU speed", d.from()));
                }
                pairs.push(p);
            }
        }
    }
}

#[cfg(test)]
mod tests;
