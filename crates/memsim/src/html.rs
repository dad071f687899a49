//! Memory-system simulation (`osmeter memsim`, the run's "memsim" section): memory cycles per
//! instruction of every simulated machine as one stacked bar, user components then system ones,
//! with tables of the figures, the miss rates and the 3C shares of the misses.
//!
//! The stored `mcpi.user` and `mcpi.system` both divide by all instructions, so their segments add
//! up to the machine's total MCPI and can share one bar.

mod curves;

use crate::memsim::document::{AssertionVerdict, MachineDoc, Mcpi, MemsimDoc, SCHEMA};
use crate::memsim::machine::COMPONENTS;
use crate::results::report::html::{esc, figure, note, num, table, Cell, Row};
use crate::results::report::plot::{
    color, compact, legend, legend_height, svg, Axis, LegendItem, Ticked,
};
use crate::results::report::plot::{FONT, WIDTH};
use crate::results::report::{Context, Section};
use crate::units::percent;
use anyhow::Result;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

pub struct Memsim;

/// How much of the component colour the system segments keep (the rest is white).
const SYSTEM_TINT: f64 = 0.4;

struct Machine<'a> {
    /// "ds5000-200", prefixed with the run ("R2 ...") when several runs have simulations.
    label: String,
    doc: &'a MachineDoc,
}

fn documents<'a>(ctx: &Context<'a>) -> Vec<(usize, &'a MemsimDoc)> {
    ctx.runs
        .iter()
        .enumerate()
        .filter_map(|(i, r)| {
            r.sections
                .get::<crate::memsim::document::MemsimDoc>()
                .map(|d| (i, d))
        })
        .filter(|(_, d)| d.schema == SCHEMA)
        .collect()
}

fn machines<'a>(docs: &[(usize, &'a MemsimDoc)]) -> Vec<Machine<'a>> {
    let several = docs.len() > 1;
    let mut out = Vec::new();
    for &(run, doc) in docs {
        for m in &doc.machines {
            let name = &m.name;
            out.push(Machine {
                label: if several {
                    format!("R{} {name}", run + 1)
                } else {
                    name.to_string()
                },
                doc: m,
            });
        }
    }
    out
}

/// A colour lightened towards white, for the system half of a bar.
fn tint(c: RGBColor) -> RGBColor {
    let mix = |x: u8| (f64::from(x) * SYSTEM_TINT + 255.0 * (1.0 - SYSTEM_TINT)).round() as u8;
    RGBColor(mix(c.0), mix(c.1), mix(c.2))
}

/// The segments of one bar: (start, end, colour), user components first.
fn segments(m: &MachineDoc) -> Vec<(f64, f64, RGBColor)> {
    let mut out = Vec::new();
    let mut at = 0.0;
    for (mode, system) in [(&m.mcpi.user, false), (&m.mcpi.system, true)] {
        for (i, (_, v)) in mode
            .by_name()
            .into_iter()
            .take(COMPONENTS.len())
            .enumerate()
        {
            if v > 0.0 {
                let col = if system { tint(color(i)) } else { color(i) };
                out.push((at, at + v, col));
                at += v;
            }
        }
    }
    out
}

fn stacked_bars(all: &[Machine]) -> Result<String> {
    let totals: Vec<f64> = all.iter().map(|m| m.doc.mcpi.total.total).collect();
    let axis = Axis::for_values(totals.iter().copied(), f64::INFINITY);
    let mut items: Vec<LegendItem> = COMPONENTS
        .iter()
        .enumerate()
        .map(|(i, c)| LegendItem::boxed(c.to_string(), color(i)))
        .collect();
    items.push(LegendItem::boxed(
        "pale: the same, in system mode".into(),
        tint(RGBColor(80, 80, 80)),
    ));
    let legend_h = legend_height(&items);
    let n = all.len();
    let row_h = 44u32;
    let longest = all
        .iter()
        .map(|m| m.label.chars().count())
        .max()
        .unwrap_or(8);
    let label_w = (longest as u32 * 7 + 16).clamp(90, 400);
    svg((WIDTH, legend_h + 20 + n as u32 * row_h + 56), |root| {
        let (top, body) = root.split_vertically(legend_h);
        legend(&top, &items)?;
        let mut chart = ChartBuilder::on(&body)
            .margin_top(12)
            .margin_right(250)
            .x_label_area_size(44)
            .y_label_area_size(label_w)
            .build_cartesian_2d(
                Ticked::new(axis.range(), axis.ticks()),
                Ticked::new(-0.5..(n as f64 - 0.5), (0..n).map(|i| i as f64).collect()),
            )?;
        let x_fmt = |t: &f64| compact(*t);
        let y_fmt = |t: &f64| {
            let i = n as i64 - 1 - t.round() as i64;
            all.get(i.max(0) as usize)
                .map(|m| m.label.clone())
                .unwrap_or_default()
        };
        chart
            .configure_mesh()
            .disable_y_mesh()
            .x_label_formatter(&x_fmt)
            .y_label_formatter(&y_fmt)
            .x_desc("memory stall cycles per instruction (MCPI; shorter is better)")
            .axis_desc_style((FONT, 14))
            .label_style((FONT, 13))
            .bold_line_style(RGBColor(225, 228, 232))
            .draw()?;
        let text_style = (FONT, 12)
            .into_font()
            .color(&RGBColor(60, 60, 60))
            .pos(Pos::new(HPos::Left, VPos::Center));
        for (k, m) in all.iter().enumerate() {
            let center = (n - 1 - k) as f64;
            let (y0, y1) = (center - 0.3, center + 0.3);
            for (a, b, c) in segments(m.doc) {
                chart.draw_series(std::iter::once(Rectangle::new(
                    [(a, y0), (b, y1)],
                    c.filled(),
                )))?;
                // A white hairline keeps neighbouring segments apart in grey print.
                chart.draw_series(std::iter::once(Rectangle::new(
                    [(a, y0), (b, y1)],
                    WHITE.stroke_width(1),
                )))?;
            }
            let user = m.doc.mcpi.user.total;
            let system = m.doc.mcpi.system.total;
            // The user/system boundary, drawn a little past the bar so it shows on thin segments.
            chart.draw_series(LineSeries::new(
                [(user, y0 - 0.08), (user, y1 + 0.08)],
                BLACK.stroke_width(2),
            ))?;
            chart.draw_series(std::iter::once(
                EmptyElement::at((user + system, center))
                    + Text::new(
                        format!(
                            "{} = user {} + system {}",
                            num(user + system),
                            num(user),
                            num(system)
                        ),
                        (8, 0),
                        text_style.clone(),
                    ),
            ))?;
        }
        Ok(())
    })
}

/// A mode's MCPI and, for user and system, its share of instructions and MCPI per own instruction.
type ModeRow<'a> = (&'a str, &'a Mcpi, Option<(f64, f64)>);

/// MCPI by component: per machine a row for user, system and the total, with the MCPI over the
/// mode's own instructions beside.
fn mcpi_table(all: &[Machine]) -> String {
    let mut header = vec!["machine", "mode"];
    header.extend(COMPONENTS);
    header.extend(["total", "per own instruction", "share of instructions"]);
    let mut rows = Vec::new();
    for m in all {
        let d = m.doc;
        let system_share = d.system_fraction;
        let modes: [ModeRow; 3] = [
            (
                "user",
                &d.mcpi.user,
                Some((1.0 - system_share, d.own_mcpi.user.total)),
            ),
            (
                "system",
                &d.mcpi.system,
                Some((system_share, d.own_mcpi.system.total)),
            ),
            ("total", &d.mcpi.total, None),
        ];
        for (mode, mcpi, share) in modes {
            let mut cells = vec![Cell::from(esc(&m.label)), Cell::from(mode.to_string())];
            for (_, v) in mcpi.by_name() {
                cells.push(Cell::num(format!("{v:.3}")));
            }
            cells.push(Cell::num(match share {
                Some((_, own)) => format!("{own:.3}"),
                None => String::new(),
            }));
            cells.push(Cell::num(match share {
                Some((s, _)) => format!("{:.1} %", 100.0 * s),
                None => format!("{} instr.", d.instructions),
            }));
            rows.push(Row { class: "", cells });
        }
    }
    table("mcpi", &header, &rows)
}

/// Miss rates per cache and mode, and which of the three C's the misses were.
fn miss_table(all: &[Machine]) -> String {
    let header = [
        "machine",
        "cache",
        "accesses",
        "miss rate user",
        "miss rate system",
        "compulsory",
        "capacity",
        "conflict",
    ];
    let mut rows = Vec::new();
    for m in all {
        let d = m.doc;
        for c in d.caches_both() {
            let mut cells = vec![
                Cell::from(esc(&m.label)),
                Cell::from(esc(c.name)),
                Cell::num(format!("{}", c.accesses)),
                Cell::num(percent(c.user.miss_rate)),
                Cell::num(percent(c.system.miss_rate)),
            ];
            match c.class_shares() {
                Some(shares) => cells.extend(shares.map(|x| Cell::num(percent(x)))),
                None => cells.extend((0..3).map(|_| Cell::num("-".to_string()))),
            }
            rows.push(Row { class: "", cells });
        }
        if d.user.tlb.present {
            let refs = d.user.tlb.refs + d.system.tlb.refs;
            let mut cells = vec![
                Cell::from(esc(&m.label)),
                Cell::from("tlb".to_string()),
                Cell::num(format!("{refs}")),
                Cell::num(percent(d.user.tlb.miss_rate)),
                Cell::num(percent(d.system.tlb.miss_rate)),
            ];
            cells.extend((0..3).map(|_| Cell::default()));
            rows.push(Row { class: "", cells });
        }
    }
    table("misses", &header, &rows)
}

/// What each run simulated: the trace, its length, and whether it lacks the kernel or its end.
fn setup(ctx: &Context, docs: &[(usize, &MemsimDoc)]) -> String {
    let mut out = String::new();
    for &(r, d) in docs {
        let mut text = format!(
            "{}: {} references from {}.",
            ctx.run_label(r),
            d.references,
            d.trace.path
        );
        if d.user_only {
            text.push_str(" User mode only: the capture saw no kernel references.");
        }
        if d.incomplete {
            text.push_str(" Incomplete trace: the capture ended early.");
        }
        out.push_str(&note(&text));
    }
    out
}

impl Section for Memsim {
    fn id(&self) -> &'static str {
        "memsim"
    }
    fn title(&self) -> &'static str {
        "Memory-system simulation"
    }
    fn render(&self, ctx: &Context) -> Result<Option<String>> {
        let docs = documents(ctx);
        if docs.is_empty() {
            return Ok(None);
        }
        let all = machines(&docs);
        let mut out = setup(ctx, &docs);
        if all.is_empty() {
            out.push_str(&note("The simulation holds no machine."));
            return Ok(Some(out));
        }
        out.push_str(&figure(
            &stacked_bars(&all)?,
            "<b>Memory cycles per instruction.</b> One bar per simulated machine: the stall \
             cycles of each component divided by all instructions of the trace, user mode in \
             full colour left of the black mark, system mode pale right of it, so the whole bar \
             is the machine's MCPI. Components: instruction and data cache misses, write-buffer \
             stalls, TLB misses and uncached accesses.",
        ));
        out.push_str("<h3>Cycles per instruction by component</h3>\n");
        out.push_str(&note(
            "User and system rows divide by all instructions and add up to the total; \"per own \
             instruction\" divides each mode's stalls by that mode's instructions only.",
        ));
        out.push_str(&mcpi_table(&all));
        out.push_str("<h3>Miss rates and the 3C shares of the misses</h3>\n");
        out.push_str(&three_c_note());
        out.push_str(&miss_table(&all));
        out.push_str(&kernel_parts(ctx, &docs));
        out.push_str(&curves::render(ctx, &docs)?);
        Ok(Some(out))
    }
}

/// With kernel symbols, MCPI per kernel category; with `--assertions`, the paper's seven.
fn kernel_parts(ctx: &Context, docs: &[(usize, &MemsimDoc)]) -> String {
    let several = docs.len() > 1;
    let mut out = String::new();
    for &(r, d) in docs {
        let run = if several {
            format!("{}: ", ctx.run_label(r))
        } else {
            String::new()
        };
        if let Some(a) = &d.attribution {
            out.push_str(&format!("<h3>{}MCPI by kernel category</h3>\n", esc(&run)));
            out.push_str(&note(&format!(
                "Every kernel instruction is charged to the function holding it (symbols: {}) and \
                 every kernel data reference to the latest kernel instruction; functions fall into \
                 categories after the paper's breakdown of system time. MCPI divides a category's \
                 stalls by all non-idle instructions, so the rows add up; \"own\" divides by the \
                 category's own instructions. Idle loop {}.",
                a.symbols,
                if a.idle_excluded {
                    "left out"
                } else {
                    "included"
                }
            )));
            let mut header = vec!["machine", "category", "instructions"];
            header.extend(COMPONENTS);
            header.extend(["total", "own"]);
            let mut rows = Vec::new();
            for t in &a.machines {
                for c in t
                    .categories
                    .iter()
                    .filter(|c| c.instructions + c.reads + c.writes > 0)
                {
                    let mut cells = vec![
                        Cell::from(esc(&t.name)),
                        Cell::from(esc(&c.name)),
                        Cell::num(percent(c.instruction_share)),
                    ];
                    for (_, v) in c.mcpi.by_name() {
                        cells.push(Cell::num(format!("{v:.4}")));
                    }
                    cells.push(Cell::num(format!("{:.3}", c.own_mcpi)));
                    rows.push(Row { class: "", cells });
                }
            }
            out.push_str(&table("categories", &header, &rows));
        }
        if let Some(a) = &d.assertions {
            out.push_str(&format!(
                "<h3>{}The paper's assertions on {}</h3>\n",
                esc(&run),
                esc(&a.machine)
            ));
            out.push_str(&note(&format!(
                "Chen and Bershad (1993), Table 1-1, judged on this trace; significant means at \
                 least {:.0} %. Variants simulated in the same pass: {}.",
                a.significant * 100.0,
                a.variants.join(", ")
            )));
            let rows: Vec<Row> = a
                .assertions
                .iter()
                .map(|x| {
                    let verdict = match x.verdict {
                        AssertionVerdict::Holds => "<b>holds</b>".to_string(),
                        AssertionVerdict::DoesNotHold => "does not hold".to_string(),
                        AssertionVerdict::NotMeasurable => {
                            "<span class=\"warn\">not measurable</span>".to_string()
                        }
                    };
                    Row {
                        class: "",
                        cells: vec![
                            Cell::num(x.number.to_string()),
                            Cell::from(esc(&x.assertion)),
                            Cell::from(verdict),
                            Cell::from(esc(&x.detail)),
                        ],
                    }
                })
                .collect();
            out.push_str(&table(
                "assertions",
                &["", "assertion", "verdict", "the figures behind it"],
                &rows,
            ));
        }
    }
    out
}

fn three_c_note() -> String {
    note(
        "Compulsory: first touch of a line; capacity: would miss in a fully associative cache \
         of the same size too; conflict: the rest, due to the mapping. Shares are of all misses, \
         user and system together; \"-\" where the simulation did not classify them.",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memsim::config::preset;
    use crate::memsim::document::TraceRef;
    use crate::memsim::sweep::simulate;
    use crate::memsim::trace::synth::Synth;
    use crate::results::fixtures::empty_run;

    pub fn simulated(refs: u64) -> MemsimDoc {
        let cfgs = [preset("ds5000-200").unwrap()];
        let r = simulate(&mut Synth::new(refs, 1), &cfgs, 1).unwrap();
        let trace = TraceRef {
            path: "synth".into(),
            format: None,
        };
        MemsimDoc::new(trace, &cfgs, &r)
    }

    #[test]
    fn segments_add_up_to_the_total() {
        let doc = simulated(50_000);
        let m = &doc.machines[0];
        let segs = segments(m);
        assert!(segs.len() >= 2);
        let end = segs.last().unwrap().1;
        assert!((end - m.mcpi.total.total).abs() < 1e-9);
        for w in segs.windows(2) {
            assert_eq!(w[0].1, w[1].0, "segments touch");
        }
        assert_eq!(tint(RGBColor(0, 0, 0)), RGBColor(153, 153, 153));
    }

    #[test]
    fn section_has_bars_and_tables_from_the_document() {
        let mut a = empty_run();
        a.sections.put(simulated(20_000));
        let mut b = empty_run();
        b.sections.put(simulated(40_000));
        let runs = [a, b];
        let html = Memsim.render(&Context::new(&runs)).unwrap().unwrap();
        assert_eq!(
            html.matches("<svg").count(),
            1,
            "one chart for all machines"
        );
        assert!(html.contains("R1 ds5000-200") && html.contains("R2 ds5000-200"));
        for text in [
            "l1i",
            "l1d",
            "tlb",
            "compulsory",
            "per own instruction",
            "40000",
        ] {
            assert!(html.contains(text), "{text}");
        }
        let total = format!(
            "{:.3}",
            runs[0]
                .sections
                .get::<crate::memsim::document::MemsimDoc>()
                .unwrap()
                .machines[0]
                .mcpi
                .total
                .total
        );
        assert!(html.contains(&total), "{total}");
    }

    #[test]
    fn nothing_without_a_memsim_section() {
        let runs = [empty_run()];
        assert!(Memsim.render(&Context::new(&runs)).unwrap().is_none());
    }
}
