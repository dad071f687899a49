//! The baseline (R1) against every other run: speed-up per figure as bars sorted from the most
//! improved to the most regressed, on a logarithmic axis centred at 1 (twice as fast and half as fast
//! lie equally far from the centre), with the bootstrap interval as whiskers and the verdict as
//! colour; then the figures that changed, with the counters that explain them.

use super::hbars::{HBar, HBars};
use super::html::{esc, figure, note, num, table, Cell, Row};
use super::plot::{clip_label, Axis, LegendItem, Scale, FASTER, GREY, SLOWER};
use super::{has_own_section, Context, Section};
use crate::results::compare::{Comparison, FigureComparison, Verdict};
use crate::results::figure::Direction;
use crate::units;
use anyhow::Result;
use std::fmt::Write as _;

pub struct ComparisonSection;

/// The interval of the speed-up (above 1 is faster whatever the unit).
fn speedup_ci(f: &FigureComparison) -> Option<[f64; 2]> {
    let [lo, hi] = f.ratio_ci95?;
    Some(match f.direction {
        Direction::Higher => [lo, hi],
        Direction::Lower => [1.0 / hi, 1.0 / lo],
    })
}

/// The probe a microbenchmark figure belongs to (its key up to the parameters).
fn probe_of(f: &FigureComparison) -> &str {
    f.key.split(' ').next().unwrap_or(&f.key)
}

fn changed(f: &FigureComparison) -> bool {
    matches!(f.verdict, Verdict::Faster | Verdict::Slower)
}

fn verdict_color(v: Verdict) -> plotters::style::RGBColor {
    match v {
        Verdict::Faster => FASTER,
        Verdict::Slower => SLOWER,
        Verdict::NoChange | Verdict::Untested => GREY,
    }
}

/// A speed-up interval in words: an end at zero (a ratio interval reaching 0) leaves the speed-up
/// without an upper bound, which reads "at least", never as a broken number.
fn interval_text(lo: f64, hi: f64) -> String {
    match (lo.is_finite() && lo > 0.0, hi.is_finite()) {
        (true, true) => format!("{} – {}", factor(lo), factor(hi)),
        (true, false) => format!("at least {}", factor(lo)),
        (false, true) => format!("at most {}", factor(hi)),
        (false, false) => "-".into(),
    }
}

fn factor(v: f64) -> String {
    format!("{}×", crate::units::number(v))
}

/// Tick labels carry no more digits than the tick needs: "2×", "1.25×", "0.91×".
fn factor_tick(v: f64) -> String {
    let s = if v < 1.0 {
        format!("{v:.2}")
    } else {
        super::plot::compact(v)
    };
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        &s
    };
    format!("{s}×")
}

/// Figures shown in the general comparison chart and table (swept ones have their own section).
fn general(c: &Comparison) -> impl Iterator<Item = &FigureComparison> {
    c.figures.iter().filter(|f| !has_own_section(probe_of(f)))
}

/// Ticks symmetric about 1 in log space, a handful per side.
fn ratio_ticks(half_span: f64) -> Vec<f64> {
    const NICE: [f64; 14] = [
        1.02, 1.05, 1.1, 1.25, 1.5, 2.0, 3.0, 5.0, 10.0, 20.0, 50.0, 100.0, 1000.0, 10000.0,
    ];
    let min_gap = half_span.log10() / 4.5;
    let mut picked: Vec<f64> = Vec::new();
    for c in NICE.into_iter().filter(|c| *c <= half_span) {
        let last = picked.last().map_or(0.0, |l: &f64| l.log10());
        if c.log10() - last >= min_gap {
            picked.push(c);
        }
    }
    let mut out: Vec<f64> = picked.iter().rev().map(|c| 1.0 / c).collect();
    out.push(1.0);
    out.extend(picked);
    out
}

fn chart(ctx: &Context, index: usize, c: &Comparison) -> Result<String> {
    // A share that is 0 on one side has no finite speed-up: it has no bar.
    let mut figs: Vec<&FigureComparison> = general(c)
        .filter(|f| f.speedup.is_finite() && f.speedup > 0.0)
        .collect();
    figs.sort_by(|a, b| b.speedup.total_cmp(&a.speedup));
    let half = figs
        .iter()
        .flat_map(|f| {
            let [lo, hi] = speedup_ci(f).unwrap_or([f.speedup; 2]);
            [f.speedup, lo, hi]
        })
        .filter(|v| v.is_finite() && *v > 0.0)
        .map(|v| v.max(1.0 / v))
        .fold(1.25f64, f64::max)
        * 1.15;
    let axis = Axis {
        scale: Scale::Log10,
        lo: 1.0 / half,
        hi: half,
    };
    let bars = figs
        .iter()
        .enumerate()
        .map(|(i, f)| HBar {
            category: i,
            slot: 0,
            value: f.speedup,
            // An interval reaching 0 or infinity (a ratio of shares with zeros) ends at the axis.
            interval: speedup_ci(f).map(|i| i.map(|v| v.clamp(axis.lo, axis.hi))),
            color: verdict_color(f.verdict),
            text: Some(factor(f.speedup)),
        })
        .collect();
    let fmt = |v: f64| factor_tick(v);
    let other = ctx.run_label(index + 1);
    let svg = HBars {
        categories: figs.iter().map(|f| clip_label(&f.key, 60)).collect(),
        slots: 1,
        bars,
        axis,
        origin: 1.0,
        x_desc: format!(
            "speed-up of {} over R1 (right of 1: faster; left: slower)",
            other.split(' ').next().unwrap_or("")
        ),
        x_fmt: &fmt,
        legend: vec![
            LegendItem::boxed("faster beyond noise".into(), FASTER),
            LegendItem::boxed("slower beyond noise".into(), SLOWER),
            LegendItem::boxed("no significant change".into(), GREY),
        ],
        reference: Some(1.0),
        ticks: Some(ratio_ticks(half)),
    }
    .to_svg()?;
    Ok(figure(
        &svg,
        &format!(
            "<b>Speed-up of {} against R1, per figure.</b> A bar right of the centre line means the \
             figure is faster in {} (shorter time or higher bandwidth), left means slower; its \
             length is the factor, on a logarithmic axis so that 2× and 0.5× are equally far from \
             1. Whiskers are the 95&nbsp;% bootstrap interval of the ratio. A bar is coloured only \
             when the change is beyond noise: rank-test p&nbsp;&lt;&nbsp;{}, interval excluding \
             1 and a change of at least {}&nbsp;%.",
            esc(&other),
            esc(&other),
            c.alpha,
            super::plot::compact(c.min_effect * 100.0)
        ),
    ))
}

fn changed_table(c: &Comparison) -> String {
    let mut moved: Vec<&FigureComparison> = general(c).filter(|f| changed(f)).collect();
    if moved.is_empty() {
        return String::new();
    }
    moved.sort_by(|a, b| a.speedup.total_cmp(&b.speedup));
    let rows: Vec<Row> = moved
        .iter()
        .map(|f| {
            let interval = speedup_ci(f)
                .map(|[lo, hi]| interval_text(lo, hi))
                .unwrap_or_else(|| "-".into());
            let deltas: Vec<String> = f
                .counter_deltas
                .iter()
                .map(|(e, a, b)| format!("{}: {} → {}", esc(e), num(*a), num(*b)))
                .collect();
            let verdict = match f.verdict {
                Verdict::Faster => "faster",
                Verdict::Slower => "<span class=\"bad\">slower</span>",
                Verdict::NoChange => "~",
                Verdict::Untested => "?",
            };
            let scale = f.unit.scale_for(f.value_a.abs().max(f.value_b.abs()));
            Row {
                class: "",
                cells: vec![
                    Cell::from(format!("<code>{}</code>", esc(&f.key))),
                    Cell::num(units::in_scale(f.value_a, scale)),
                    Cell::num(units::in_scale(f.value_b, scale)),
                    Cell::num(factor(f.speedup)),
                    Cell::num(interval),
                    Cell::num(
                        f.p_value
                            .map(|p| format!("{p:.2e}"))
                            .unwrap_or_else(|| "-".into()),
                    ),
                    Cell::from(verdict.to_string()),
                    Cell::with_class("warn", deltas.join("<br>")),
                ],
            }
        })
        .collect();
    table(
        "changed",
        &[
            "figure",
            "R1",
            "other",
            "speed-up",
            "95 % CI",
            "p",
            "verdict",
            "counters per op that moved",
        ],
        &rows,
    )
}

/// One line per swept probe: how many of its points changed, and their geometric mean.
fn swept_notes(c: &Comparison) -> String {
    let mut probes: Vec<&str> = Vec::new();
    for f in c.figures.iter().filter(|f| has_own_section(probe_of(f))) {
        if !probes.contains(&probe_of(f)) {
            probes.push(probe_of(f));
        }
    }
    let mut out = String::new();
    for p in probes {
        let pts: Vec<&FigureComparison> = c.figures.iter().filter(|f| probe_of(f) == p).collect();
        let n_changed = pts.iter().filter(|f| changed(f)).count();
        // Compare keeps only figures with positive values, so every speed-up is a ratio.
        let geo = crate::stats::geomean::geomean(pts.iter().map(|f| f.speedup)).unwrap_or(f64::NAN);
        out.push_str(&note(&format!(
            "{p}: {} points compared, {n_changed} changed beyond noise, geometric mean speed-up {}; \
             the runs' curves are drawn together in their own section.",
            pts.len(),
            factor(geo)
        )));
    }
    out
}

impl Section for ComparisonSection {
    fn id(&self) -> &'static str {
        "comparison"
    }
    fn title(&self) -> &'static str {
        "Comparison with the baseline"
    }
    fn render(&self, ctx: &Context) -> Result<Option<String>> {
        if ctx.comparisons.is_empty() {
            return Ok(None);
        }
        let mut out = String::new();
        for (i, c) in ctx.comparisons.iter().enumerate() {
            let other = ctx.run_label(i + 1);
            let _ = writeln!(out, "<h3>R1 → {}</h3>", esc(&other));
            let Some(c) = c else {
                out.push_str(&note(&format!(
                    "R1 is a {} run and {other} a {} run: runs of different kinds are not compared.",
                    ctx.runs[0].kind(),
                    ctx.runs[i + 1].kind()
                )));
                continue;
            };
            if c.figures.is_empty() {
                out.push_str(&note(&format!(
                    "R1 and {other} have no measured figure in common."
                )));
                continue;
            }
            let n_changed = c.figures.iter().filter(|f| changed(f)).count();
            let mut line = format!(
                "{n_changed} of {} common figures changed beyond noise.",
                c.figures.len()
            );
            if let Some(g) = c.geomean {
                let _ = write!(line, " Geometric mean speed-up: {}", factor(g));
                if let Some([lo, hi]) = c.geomean_ci95 {
                    let _ = write!(line, " (95 % interval {} to {})", factor(lo), factor(hi));
                }
                line.push('.');
            }
            if let (Some(cpu), Some(rel)) = (c.cpu_speedup, c.os_speedup_relative_to_cpu) {
                let _ = write!(
                    line,
                    " The CPU-bound reference sped up {}; the OS primitives relative to it \
                     (hardware figures left out): {} (below 1: the OS gained less than the CPU).",
                    factor(cpu),
                    factor(rel)
                );
            }
            out.push_str(&format!("<p>{}</p>\n", esc(&line)));
            if let Some(m) = &c.machine_speed {
                out.push_str(&note(&crate::results::compare::text::machine_moved(m)));
            }
            if general(c).next().is_some() {
                out.push_str(&chart(ctx, i, c)?);
                out.push_str(&changed_table(c));
            }
            out.push_str(&swept_notes(c));
            for (side, keys) in [("R1", &c.only_in_a), (other.as_str(), &c.only_in_b)] {
                if !keys.is_empty() {
                    out.push_str(&note(&format!(
                        "Only in {side} (not compared): {}",
                        keys.join(", ")
                    )));
                }
            }
        }
        Ok(Some(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_symmetric_about_one() {
        let t = ratio_ticks(2.5);
        assert!(t.contains(&1.0));
        let n = t.len();
        for i in 0..n / 2 {
            assert!((t[i] * t[n - 1 - i] - 1.0).abs() < 1e-9, "{t:?}");
        }
        assert!(t.len() <= 11);
        assert_eq!(interval_text(2.0, f64::INFINITY), "at least 2.00×");
        assert_eq!(interval_text(0.0, 0.5), "at most 0.500×");
        assert_eq!(interval_text(1.5, 2.0), "1.50× – 2.00×");
        assert_eq!(factor(1.5), "1.50×");
        assert_eq!(factor(0.25), "0.250×");
        assert_eq!(factor(20.0), "20.0×");
        assert_eq!(factor_tick(2.0), "2×");
        assert_eq!(factor_tick(0.8), "0.8×");
        assert_eq!(factor_tick(1.0 / 1.1), "0.91×");
    }
}
