//! The kernel timeline of stored guest runs (`history --kernels`), and its part of the HTML
//! report: per series of three kernel versions or more, a line per probe over the versions, its
//! kernel instructions per operation as a change from the oldest kernel that counted it.

use crate::capture::system::debver;
use crate::results::guest::GuestDoc;
use crate::results::kernel_timeline::{self, text, KernelTimeline, Series, Stored};
use crate::results::model::Run;
use crate::results::report::html::{esc, figure};
use crate::results::report::plot::{color, line_chart, Axis, AxisText, LegendItem, Scale};
use crate::results::report::{Context, Section};
use anyhow::Result;
use plotters::prelude::*;

/// The timeline of `runs` (newest first) over the points `asked` names, by Debian version.
pub fn timeline(runs: &[Run], asked: &[String]) -> KernelTimeline {
    let stored: Vec<Stored> = runs
        .iter()
        .filter_map(|r| {
            let doc: &GuestDoc = r.sections.get()?;
            Some(Stored { run: &r.id, doc })
        })
        .collect();
    kernel_timeline::build(&stored, asked, &debver::compare)
}

pub struct KernelLines;

/// Each point's kernel instructions as a change in % from the first kernel that counted it.
fn lines(s: &Series) -> Vec<(String, Vec<(f64, f64)>)> {
    s.points
        .iter()
        .enumerate()
        .filter_map(|(j, p)| {
            let values: Vec<(usize, f64)> = s
                .kernels
                .iter()
                .enumerate()
                .filter_map(|(i, k)| Some((i, k.counts[j]?.kernel_instructions)))
                .collect();
            let base = values.first()?.1;
            (base > 0.0).then(|| {
                let line = values
                    .iter()
                    .map(|(i, v)| (*i as f64, 100.0 * (v - base) / base))
                    .collect();
                (p.clone(), line)
            })
        })
        .collect()
}

fn chart(s: &Series) -> Result<String> {
    let lines = lines(s);
    let ys = lines.iter().flat_map(|(_, l)| l.iter().map(|p| p.1));
    let (lo, hi) = ys.fold((0f64, 0f64), |(a, b), y| (a.min(y), b.max(y)));
    let pad = ((hi - lo) * 0.1).max(0.5);
    let y = Axis {
        scale: Scale::Linear,
        lo: lo - pad,
        hi: hi + pad,
    };
    let x = Axis {
        scale: Scale::Linear,
        lo: 0.0,
        hi: (s.kernels.len() - 1) as f64,
    };
    let items: Vec<LegendItem> = lines
        .iter()
        .enumerate()
        .map(|(i, (p, _))| LegendItem::boxed(p.clone(), color(i)))
        .collect();
    let x_label = |v: f64| {
        let i = v.round();
        if (v - i).abs() > 1e-6 || i < 0.0 {
            return String::new();
        }
        s.kernels
            .get(i as usize)
            .map_or(String::new(), |k| k.version.clone())
    };
    let y_label = |v: f64| format!("{v:+.1} %");
    let axes = AxisText {
        x_label: &x_label,
        y_label: &y_label,
        x_desc: "kernel version (oldest first, Debian's order)",
        y_desc: "kernel instructions per operation, change from the oldest",
    };
    line_chart(360, &items, (&x, &y), 72, &axes, |c| {
        for (i, (_, line)) in lines.iter().enumerate() {
            let col = color(i);
            c.draw_series(LineSeries::new(line.clone(), col.stroke_width(2)))?;
            c.draw_series(line.iter().map(|p| Circle::new(*p, 3, col.filled())))?;
        }
        Ok(())
    })
}

impl Section for KernelLines {
    fn id(&self) -> &'static str {
        "kernel-timeline"
    }
    fn title(&self) -> &'static str {
        "Kernel timeline (guest runs)"
    }
    fn render(&self, ctx: &Context) -> Result<Option<String>> {
        let t = timeline(ctx.runs, &[]);
        let mut out = String::new();
        for s in t.series.iter().filter(|s| s.kernels.len() >= 3) {
            let caption = format!(
                "{}: {} kernels, {} change point(s){}",
                text::series_name(s),
                s.kernels.len(),
                s.change_points.len(),
                s.change_points
                    .iter()
                    .take(6)
                    .map(|c| {
                        let line = text::change_line(c);
                        format!("; {}", line.lines().next().unwrap_or("").trim())
                    })
                    .collect::<String>()
            );
            out.push_str(&figure(&chart(s)?, &esc(&caption)));
        }
        Ok((!out.is_empty()).then_some(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::document::Sections;
    use crate::results::fixtures::guest_doc;

    fn run(id: &str, release: &str, ins: f64) -> Run {
        let mut d = guest_doc(&format!("linux-image-{release}"), ins);
        d.release = Some(release.into());
        Run {
            sections: Sections::of(d),
            ..Run::new(id.into(), "2026-12-08T00:00:00Z".into())
        }
    }

    #[test]
    fn three_versions_draw_a_line_per_probe() {
        let runs = [
            run("a", "6.12.100+deb12-cloud-amd64", 309.0),
            run("b", "6.1.0-9-cloud-amd64", 307.0),
            run("c", "6.1.0-10-cloud-amd64", 307.0),
        ];
        let ctx = Context::new(&runs);
        let html = KernelLines.render(&ctx).unwrap().unwrap();
        assert!(
            html.contains("<svg") && html.contains("syscall.null"),
            "{html}"
        );
        assert!(
            html.contains("6.1.0-10") && html.contains("1 change point(s)"),
            "{html}"
        );
        let ctx = Context::new(&runs[..2]);
        assert!(KernelLines.render(&ctx).unwrap().is_none());
    }
}
