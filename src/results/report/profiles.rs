//! Where the time goes (`run --profile`, `stat --profile`): per profiled figure its totals and one
//! flame graph drawn as an icicle (the root on top, callees below, each frame as wide as its share
//! of the samples), inline SVG with the frame's name, samples and share as its tooltip.

use super::html::{esc, note};
use super::{Context, Section};
use crate::results::profile::ProbeProfile;
use anyhow::Result;
use std::collections::BTreeMap;
use std::fmt::Write as _;

pub struct Profiles;

const WIDTH: f64 = 1000.0;
const ROW: f64 = 16.0;
/// Deeper frames are left out (a recursion would make the picture a column).
const MAX_DEPTH: usize = 48;
/// Frames narrower than this are not drawn.
const MIN_WIDTH: f64 = 0.5;

impl Section for Profiles {
    fn id(&self) -> &'static str {
        "profiles"
    }
    fn title(&self) -> &'static str {
        "Where the time goes"
    }
    fn render(&self, ctx: &Context) -> Result<Option<String>> {
        if !ctx.runs.iter().any(|r| r.profiles.is_some()) {
            return Ok(None);
        }
        let mut out = note(
            "From sampling rounds of their own after the timed ones (docs/profiles.md): CPU time \
             per operation of the measuring thread and the processes it started. In each flame \
             graph the root is on top and a frame is as wide as its share of the samples; hover \
             a frame for its name and share.",
        );
        for (i, run) in ctx.runs.iter().enumerate() {
            let Some(p) = &run.profiles else { continue };
            let _ = writeln!(out, "<h3>{}</h3>", esc(&ctx.run_label(i)));
            if let Some(reason) = &p.refused {
                out.push_str(&note(&format!("No profiles: {reason}")));
            }
            for probe in &p.probes {
                figure(&mut out, probe);
            }
        }
        Ok(Some(out))
    }
}

fn figure(out: &mut String, p: &ProbeProfile) {
    let _ = writeln!(
        out,
        "<h4>{}: {:.1} ns/op, user {:.1}, kernel {:.1} ({} samples)</h4>",
        esc(&p.label),
        p.ns_per_op,
        p.user_ns_per_op,
        p.kernel_ns_per_op,
        p.samples
    );
    for n in &p.notes {
        out.push_str(&note(n));
    }
    if !p.folded.is_empty() {
        out.push_str(&icicle(p));
    }
}

#[derive(Default)]
struct Node {
    samples: u64,
    children: BTreeMap<String, Node>,
}

fn icicle(p: &ProbeProfile) -> String {
    let mut root = Node::default();
    for s in &p.folded {
        root.samples += s.samples;
        let mut node = &mut root;
        // The figure is the root frame, as in `export --format folded`.
        let frames = std::iter::once(p.label.as_str()).chain(s.stack.split(';'));
        for frame in frames.take(MAX_DEPTH) {
            node = node.children.entry(frame.to_string()).or_default();
            node.samples += s.samples;
        }
    }
    let mut rects = String::new();
    let mut depth = 0;
    draw(&root, root.samples, 0.0, 0, &mut rects, &mut depth);
    let height = (depth + 1) as f64 * ROW;
    format!(
        "<svg class=\"icicle\" viewBox=\"0 0 {WIDTH} {height}\" width=\"100%\" \
         xmlns=\"http://www.w3.org/2000/svg\" font-size=\"11\" font-family=\"monospace\">\n{rects}</svg>\n"
    )
}

fn draw(node: &Node, total: u64, x0: f64, level: usize, out: &mut String, depth: &mut usize) {
    let mut x = x0;
    for (name, child) in &node.children {
        let w = WIDTH * child.samples as f64 / total.max(1) as f64;
        if w >= MIN_WIDTH {
            *depth = (*depth).max(level);
            let y = level as f64 * ROW;
            let share = 100.0 * child.samples as f64 / total.max(1) as f64;
            let fits = ((w - 4.0) / 6.6).floor().max(0.0) as usize;
            let label: String = name.chars().take(fits).collect();
            let _ = writeln!(
                out,
                "<g><title>{} ({} samples, {share:.1} %)</title><rect x=\"{x:.1}\" y=\"{y}\" \
                 width=\"{w:.1}\" height=\"{}\" fill=\"{}\" stroke=\"#fff\" stroke-width=\"0.5\"/>\
                 <text x=\"{:.1}\" y=\"{:.1}\">{}</text></g>",
                esc(name),
                child.samples,
                ROW - 1.0,
                colour(name),
                x + 2.0,
                y + ROW - 4.0,
                esc(&label)
            );
            draw(child, total, x, level + 1, out, depth);
        }
        x += w;
    }
}

/// Warm colours, the same for a name everywhere (as flamegraph.pl draws them).
fn colour(name: &str) -> String {
    let h = name
        .bytes()
        .fold(2166136261u32, |h, b| (h ^ b as u32).wrapping_mul(16777619));
    format!("hsl({}, 80%, {}%)", h % 50, 60 + (h >> 8) % 20)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::profile::FoldedStack;

    #[test]
    fn frames_are_as_wide_as_their_share_and_nested_under_their_callers() {
        let p = ProbeProfile {
            label: "x".into(),
            folded: vec![
                FoldedStack {
                    stack: "main;read;vfs_read".into(),
                    samples: 3,
                },
                FoldedStack {
                    stack: "main;write".into(),
                    samples: 1,
                },
            ],
            ..ProbeProfile::default()
        };
        let svg = icicle(&p);
        assert!(
            svg.contains(
                "<title>x (4 samples, 100.0 %)</title><rect x=\"0.0\" y=\"0\" width=\"1000.0\""
            ),
            "{svg}"
        );
        assert!(
            svg.contains(
                "<title>main (4 samples, 100.0 %)</title><rect x=\"0.0\" y=\"16\" width=\"1000.0\""
            ),
            "{svg}"
        );
        assert!(
            svg.contains(
                "<title>read (3 samples, 75.0 %)</title><rect x=\"0.0\" y=\"32\" width=\"750.0\""
            ),
            "{svg}"
        );
        assert!(svg.contains("<title>write (1 samples, 25.0 %)</title><rect x=\"750.0\" y=\"32\" width=\"250.0\""), "{svg}");
        assert!(svg.contains("y=\"48\" width=\"750.0\""), "{svg}");
        assert!(svg.contains("viewBox=\"0 0 1000 64\""), "{svg}");
    }
}
