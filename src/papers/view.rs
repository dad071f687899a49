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

pub const PAPER_SCHEMA: &str = "osmeter.paper/1";

/// One published value and today's counterpart.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
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
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct AssertionPair {
    pub number: u8,
    pub claim: String,
    pub paper: Verdict,
    pub today: Option<AssertionVerdict>,
    /// The figures behind today's verdict, in words.
    pub today_detail: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TableNote {
    pub table: String,
    pub note: String,
}

/// The whole view of one paper: the `osmeter paper NAME --json` document, read back as the same
/// value.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
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

/// The Gumbel fit of one class and path of the stored latency run: the run, the fit, its window's
/// width in seconds and the stream's name.
fn latency_fit(
    class: crate::latency::threads::ClassName,
    path: crate::latency::threads::Path,
    runs: &[Run],
) -> Result<(&Run, &crate::latency::accounting::GumbelFit, f64, String), String> {
    let (run, doc) = runs
        .iter()
        .find_map(|r| {
            r.sections
                .get::<crate::latency::document::LatencyDoc>()
                .map(|d| (r, d))
        })
        .ok_or("no latency document in the runs (a run of `osmeter latency`)")?;
    let name = format!("{} class, {} path", class.as_str(), path.name());
    let stream = doc
        .streams
        .iter()
        .find(|s| s.class == class && s.path == path && s.error.is_none())
        .ok_or_else(|| match doc.skipped.iter().find(|k| k.class == class) {
            Some(k) => format!(
                "the latency run measured no {name}: the class could not run ({})",
                k.reason
            ),
            None => format!("the latency run measured no {name}"),
        })?;
    let fit = match &stream.estimate {
        Estimate::Fitted { fit, .. } => fit,
        Estimate::Unavailable { unavailable } => {
            return Err(format!("{name}: no worst-case estimate ({unavailable})"))
        }
    };
    let width_s = WINDOWS
        .iter()
        .find(|(w, _)| *w == fit.window)
        .map(|(_, ns)| *ns as f64 / 1e9)
        .ok_or_else(|| format!("{name}: unknown window {:?}", fit.window))?;
    Ok((run, fit, width_s, name))
}

/// The worst lateness expected over a horizon, from the Gumbel fit of a stored latency stream.
fn latency_worst(f: &LatencyFigure, runs: &[Run]) -> Result<(f64, String, String), String> {
    let (run, fit, width_s, name) = latency_fit(f.class, f.path, runs)?;
    let median = gumbel_median(fit.location_ns, fit.scale_ns, width_s, f.horizon_s);
    Ok((
        median,
        format!("latency {name}, Gumbel median"),
        run.id.clone(),
    ))
}

/// The mean time between windows whose largest lateness exceeds `tolerance_ns`, when each
/// window's maximum follows a Gumbel law: the window's width over the chance 1 - G(tolerance).
/// Infinite when that chance is below what a double can hold.
pub fn gumbel_mttf(location: f64, scale: f64, width_s: f64, tolerance_ns: f64) -> f64 {
    let z = (tolerance_ns - location) / scale;
    // 1 - exp(-exp(-z)), kept exact for large z.
    let p = -(-(-z).exp()).exp_m1();
    width_s / p
}

/// The lateness whose mean time between exceeding windows is `mttf_s`: the inverse of
/// [`gumbel_mttf`], G(x) = 1 - width / mttf.
pub fn gumbel_tolerance(location: f64, scale: f64, width_s: f64, mttf_s: f64) -> f64 {
    let p = (width_s / mttf_s).min(1.0 - 1e-12);
    location - scale * (-(-p).ln_1p()).ln()
}

/// An underrun figure of a stored latency stream, in `unit` (a time for either question).
fn underrun_value(f: &UnderrunFigure, unit: Unit, runs: &[Run]) -> Result<NowValue, String> {
    let (run, fit, width_s, name) = latency_fit(f.class, f.path, runs)?;
    let per_unit = unit.nanoseconds().ok_or("the paper's unit is not a time")?;
    let (ns, figure) = match f.ask {
        Underrun::MttfAt { tolerance_ms } => (
            1e9 * gumbel_mttf(fit.location_ns, fit.scale_ns, width_s, tolerance_ms * 1e6),
            format!(
                "latency {name}, time between wakes later than {} ms (Gumbel)",
                crate::units::compact(tolerance_ms)
            ),
        ),
        Underrun::ToleranceFor { mttf_s } => (
            gumbel_tolerance(fit.location_ns, fit.scale_ns, width_s, mttf_s),
            format!(
                "latency {name}, lateness exceeded once per {} (Gumbel)",
                crate::units::format(mttf_s, crate::units::Unit::Seconds)
            ),
        ),
    };
    if !ns.is_finite() {
        return Err(format!(
            "{name}: no wake of the run comes near the buffering, so the fit puts no finite time \
             between underruns"
        ));
    }
    let value = ns / per_unit;
    Ok(NowValue {
        value,
        ci95: [value, value],
        figure,
        run: run.id.clone(),
    })
}

/// The median of the largest of the window maxima over `horizon_s`, when each window's maximum
/// follows a Gumbel law: the maximum of m such maxima is Gumbel with its location moved up by
/// scale * ln m, and a Gumbel law's median is location - scale * ln ln 2.
pub fn gumbel_median(location: f64, scale: f64, width_s: f64, horizon_s: f64) -> f64 {
    let shifted = location + scale * (horizon_s / width_s).max(1.0).ln();
    shifted - scale * 2f64.ln().ln()
}

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
mod tests {
    use super::*;
    use crate::latency::accounting::gumbel_cdf;

    /// Table 7's copy is the sum of the four phases before the compilation, Table 8's
    /// MIPS-relative comes from Table 7's total against Sun3 Sprite, and its penalty is FUSE's
    /// total over the kernel's.
    #[test]
    fn andrew_tables_add_the_copy_phases_and_derive_table_8_from_table_7() {
        use crate::papers::fixtures::{measured, ousterhout_run};
        use crate::papers::PaperId;
        // 100 ns per 1000 instructions: 10,000 MIPS.
        let mut run = ousterhout_run(100.0, 100.0, 1e10);
        let seconds = |fs: &str, phase: &str| -> f64 {
            let base = if fs == "ext4" { 1.0 } else { 1.5 };
            base * match phase {
                "mkdir" => 0.01,
                "copy" => 0.1,
                "stat" => 0.02,
                "read" => 0.05,
                "compile" => 2.0,
                _ => 2.18,
            }
        };
        for fs in ["ext4", "fuse"] {
            for phase in ["mkdir", "copy", "stat", "read", "compile", "total"] {
                run.measurements.push(measured(
                    "app.andrew",
                    crate::params![("phase", phase), ("fs", fs), ("sources", 10)],
                    crate::results::model::Unit::Nanoseconds,
                    seconds(fs, phase) * 1e9,
                ));
            }
        }
        let id = PaperId::Ousterhout89;
        let paper = Paper::load(id).unwrap();
        let here = Here {
            mhz: None,
            hostname: None,
        };
        let doc = build(&paper, crate::papers::spec::spec(id), &[run], &here).unwrap();
        let cell = |table: &str, column: &str, label: &str| {
            doc.cells
                .iter()
                .find(|p| p.table == table && p.column == column && p.now_label.contains(label))
                .unwrap_or_else(|| panic!("no {table} {column} {label}"))
                .clone()
        };
        let copy = cell("7", "copy", "ext4 in the kernel");
        assert!((copy.now_value.unwrap() - 0.18).abs() < 1e-9, "{copy:?}");
        assert!(copy.now_figure.unwrap().matches(" + ").count() == 3);
        assert!(copy.speedup_relative_to_cpu.is_some());
        let fuse_total = cell("7", "total", "fuse2fs").now_value.unwrap();
        assert!((fuse_total - 3.27).abs() < 1e-9);
        let sun3_mips = paper.machine("Sun3").and_then(|m| m.mips).unwrap();
        let local = cell("8", "mips_relative_local", "ext4 in the kernel");
        let want = (427.0 / 2.18) / (10_000.0 / sun3_mips);
        assert!(
            (local.now_value.unwrap() - want).abs() < 1e-9 * want,
            "{local:?}"
        );
        let penalty = cell("8", "remote_penalty", "fuse2fs");
        assert!(
            (penalty.now_value.unwrap() - 50.0).abs() < 1e-9,
            "{penalty:?}"
        );
        let [lo, hi] = penalty.now_ci95.unwrap();
        assert!(lo < 50.0 && 50.0 < hi, "{lo} {hi}");
        // Table 8's local column is the kernel's ext4 alone: no FUSE row gets it.
        let local_rows: Vec<&str> = doc
            .cells
            .iter()
            .filter(|p| p.table == "8" && p.column == "mips_relative_local")
            .map(|p| p.now_label.as_str())
            .collect();
        assert!(!local_rows.is_empty());
        assert!(
            local_rows.iter().all(|l| l.contains("ext4 in the kernel")),
            "{local_rows:?}"
        );
        // The copy sum is a primitive of the summary and plot, as compile and total are, and
        // the Andrew primitives are applications: out of the OS mean, as compare leaves them.
        let names: Vec<&str> = doc
            .relative_to_cpu
            .iter()
            .filter(|s| s.table == "7")
            .map(|s| s.column.as_str())
            .collect();
        assert_eq!(names, vec!["copy", "compile", "total"]);
        let os = doc.os_relative_to_cpu.as_ref().unwrap();
        assert!(
            os.left_out.iter().any(|l| l.contains("copy (application)")),
            "{os:?}"
        );
        let counted = doc
            .relative_to_cpu
            .iter()
            .filter(|s| s.counts_as_os())
            .count();
        assert_eq!(os.primitives, counted);
        assert!(doc
            .relative_to_cpu
            .iter()
            .filter(|s| s.probe == "app.andrew")
            .all(|s| !s.counts_as_os()));
    }

    /// Chen et al.'s Table VII: today's Ghostscript, Wish and web server times stand beside each
    /// system's time only, in seconds, with the speed-up (the web server's time per request over
    /// the paper's 1024-request trace); section 5.3's throughput is one over the time per request;
    /// without the figures every such cell says why.
    #[test]
    fn applications_stand_beside_table_vii_times_and_the_web_throughput() {
        use crate::papers::fixtures::measured;
        use crate::papers::PaperId;
        use crate::results::model::Unit as RunUnit;
        let mut run = crate::results::model::tests::empty_run();
        run.measurements.push(measured(
            "app.ghostscript",
            crate::params![("pages", 13)],
            RunUnit::Nanoseconds,
            2.0e9,
        ));
        run.measurements.push(measured(
            "app.wish",
            crate::params![("panels", 100)],
            RunUnit::Nanoseconds,
            0.5e9,
        ));
        for (clients, ns) in [(1u64, 9.0e6), (16, 2.0e6)] {
            run.measurements.push(measured(
                "app.web",
                crate::params![
                    ("conn", "close"),
                    ("cache", "warm"),
                    ("clients", clients),
                    ("stat", "time")
                ],
                RunUnit::Nanoseconds,
                ns,
            ));
        }
        let id = PaperId::Chen96;
        let paper = Paper::load(id).unwrap();
        let spec = crate::papers::spec::spec(id);
        let doc = build(&paper, spec, &[run], &Here::default()).unwrap();
        let vii: Vec<&CellPair> = doc.cells.iter().filter(|p| p.table == "VII").collect();
        assert_eq!(vii.len(), 9, "{vii:?}");
        assert!(vii.iter().all(|p| p.column.starts_with("time_")));
        let nt = |row: &str| {
            *vii.iter()
                .find(|p| p.row == row && p.column == "time_nt")
                .unwrap()
        };
        assert_eq!(nt("Ghostscript").now_value, Some(2.0));
        assert!((nt("Ghostscript").speedup.unwrap() - 9.30 / 2.0).abs() < 1e-9);
        assert_eq!(nt("Wish").now_value, Some(0.5));
        // 16 clients' 2 ms per request, not one client's 9 ms, over 1024 requests.
        let web = nt("Web Server");
        assert!((web.now_value.unwrap() - 2.048).abs() < 1e-9, "{web:?}");
        assert!((web.speedup.unwrap() - 83.33 / 2.048).abs() < 1e-9);
        assert!(
            web.now_figure.as_deref().unwrap().ends_with("x 1024"),
            "{web:?}"
        );
        let throughput: Vec<&CellPair> = doc
            .cells
            .iter()
            .filter(|p| p.table == "5.3" && p.row == "throughput")
            .collect();
        assert_eq!(throughput.len(), 3, "{throughput:?}");
        for p in throughput {
            assert!((p.now_value.unwrap() - 500.0).abs() < 1e-9, "{p:?}");
        }
        let text = crate::papers::render::render(&paper, &doc, Some("VII"));
        assert!(text.contains("this machine, web server"), "{text}");
        // Each paper row's speed-up is against today's row of the same workload.
        let speedups = text
            .split("speed-up to today's row of the same workload")
            .nth(1)
            .unwrap_or_else(|| panic!("{text}"));
        for (row, x) in [
            ("Wish", "14.1x"),
            ("Ghostscript", "8.46x"),
            ("Web Server", "22.2x"),
        ] {
            let line = speedups
                .lines()
                .find(|l| l.trim_start().starts_with(row))
                .unwrap();
            assert!(line.contains(x), "{row}: {line}");
        }
        // No figure: the cells say why, and the text says it was not measured.
        let empty = crate::results::model::tests::empty_run();
        let doc = build(&paper, spec, &[empty], &Here::default()).unwrap();
        let nt = doc
            .cells
            .iter()
            .find(|p| p.table == "VII" && p.row == "Ghostscript" && p.column == "time_nt")
            .unwrap();
        assert!(nt.now_value.is_none());
        assert!(
            nt.missing.as_deref().unwrap().contains("app.ghostscript"),
            "{nt:?}"
        );
    }

    /// The buffer model over a Gumbel law of one-second maxima: with location 1 ms and scale
    /// 0.1 ms, a buffering of location + scale * ln 1000 is exceeded in a window with chance
    /// 1 - exp(-1/1000), so once per 1000.5 s; the inverse gives the buffering back.
    #[test]
    fn gumbel_mttf_known_answers() {
        let (loc, scale) = (1e6, 1e5);
        let x = loc + scale * 1000f64.ln();
        let mttf = gumbel_mttf(loc, scale, 1.0, x);
        let want = 1.0 / -(-1e-3f64).exp_m1();
        assert!((mttf - want).abs() < 1e-9 * want, "{mttf}");
        assert!((want - 1000.5).abs() < 1e-3);
        let back = gumbel_tolerance(loc, scale, 1.0, mttf);
        assert!((back - x).abs() < 1e-6, "{back} {x}");
        // More buffering, rarer underruns; far out the chance is exact, not rounded to zero.
        assert!(gumbel_mttf(loc, scale, 1.0, x + scale) > mttf);
        let far = gumbel_mttf(loc, scale, 1.0, loc + 40.0 * scale);
        assert!((far / 40f64.exp() - 1.0).abs() < 1e-6, "{far}");
        // A buffering below every window's maximum underruns once per window.
        assert!((gumbel_mttf(loc, scale, 10.0, 0.0) - 10.0).abs() < 1e-9);
        // An hour between underruns with one-second windows: each window exceeds with 1/3600.
        let hour = gumbel_tolerance(loc, scale, 1.0, 3600.0);
        assert!((1.0 - gumbel_cdf(hour, loc, scale) - 1.0 / 3600.0).abs() < 1e-12);
    }

    #[test]
    fn gumbel_median_known_answers() {
        // One window: the law's own median, where its distribution function is one half.
        let m = gumbel_median(1e6, 1e5, 1.0, 1.0);
        assert!((gumbel_cdf(m, 1e6, 1e5) - 0.5).abs() < 1e-12);
        // An hour of one-second windows: half the time the hour's maximum is below the median,
        // i.e. each of the 3600 windows' maxima is below it with probability 0.5^(1/3600).
        let h = gumbel_median(1e6, 1e5, 1.0, 3600.0);
        assert!(
            (gumbel_cdf(h, 1e6, 1e5).powf(3600.0) - 0.5).abs() < 1e-9,
            "{h}"
        );
        assert!((h - 1_855_520.0).abs() < 1.0, "{h}");
        // Longer horizons expect worse; shorter than a window is the window.
        assert!(gumbel_median(1e6, 1e5, 1.0, 86_400.0) > h);
        assert_eq!(gumbel_median(1e6, 1e5, 60.0, 1.0), m);
    }
}
