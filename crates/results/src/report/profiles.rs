//! Where the time goes (`run --profile`, `stat --profile`): per profiled figure its totals and one
//! flame graph drawn as an icicle (the root on top, callees below, each frame as wide as its share
//! of the samples), inline SVG with the frame's name, samples and share as its tooltip; and for
//! the figures a comparison of two runs called changed, a differential flame graph.

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
/// Frames narrower than this are not drawn: a frame of less than two pixels in a 1000-pixel
/// picture is too thin to hover, and such frames made most of a page of three runs' flame graphs
/// (8 MB).
const MIN_WIDTH: f64 = 2.0;

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
             graph (open a figure's line to see it) the root is on top and a frame is as wide \
             as its share of the samples; hover a frame for its name and share.",
        );
        out.push_str(&differences(ctx));
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

/// A figure's line of totals, its flame graph folded under it: opened one at a time, a page of
/// every figure's graphs is no longer tens of thousands of pixels tall.
fn figure(out: &mut String, p: &ProbeProfile) {
    let title = format!(
        "{}: {:.1} ns/op, user {:.1}, kernel {:.1} ({} samples)",
        esc(&p.label),
        p.ns_per_op,
        p.user_ns_per_op,
        p.kernel_ns_per_op,
        p.samples
    );
    if p.folded.is_empty() {
        let _ = writeln!(out, "<h4>{title}</h4>");
        for n in &p.notes {
            out.push_str(&note(n));
        }
        return;
    }
    let _ = writeln!(
        out,
        "<details class=\"flame\">\n<summary><h4>{title}</h4></summary>"
    );
    for n in &p.notes {
        out.push_str(&note(n));
    }
    out.push_str(&icicle(p));
    out.push_str("</details>\n");
}

/// For every figure called changed between R1 and another run and profiled in both: one
/// differential flame graph, drawn from the later run's profile, each frame coloured by how its
/// time per operation moved (red grew, blue shrank, white held).
fn differences(ctx: &Context) -> String {
    let Some(base) = ctx.runs.first().and_then(|r| r.profiles.as_ref()) else {
        return String::new();
    };
    let mut out = String::new();
    for (i, c) in ctx.comparisons.iter().enumerate() {
        let (Some(c), Some(other)) = (c, ctx.runs.get(i + 1)) else {
            continue;
        };
        let Some(theirs) = &other.profiles else {
            continue;
        };
        let changed = c.figures.iter().filter(|f| {
            matches!(
                f.verdict,
                crate::results::compare::Verdict::Faster | crate::results::compare::Verdict::Slower
            )
        });
        for f in changed {
            let find = |p: &crate::results::profile::Profiles| {
                p.probes
                    .iter()
                    .find(|q| q.label == f.key && !q.folded.is_empty())
                    .cloned()
            };
            let (Some(a), Some(b)) = (find(base), find(theirs)) else {
                continue;
            };
            let _ = writeln!(
                out,
                "<h4>{} to {}: {}, {:.1} -> {:.1} ns/op</h4>",
                esc(&ctx.run_label(0)),
                esc(&ctx.run_label(i + 1)),
                esc(&f.key),
                a.ns_per_op,
                b.ns_per_op
            );
            out.push_str(&differential(&a, &b));
        }
    }
    if out.is_empty() {
        return out;
    }
    let mut head = String::from("<h3>What changed, by function</h3>\n");
    head.push_str(&note(
        "For each figure called changed and profiled on both sides: the later run's flame graph, \
         frames as wide as their time per operation (against the larger of the two totals), \
         coloured by how that time moved from the first run: red grew, blue shrank, white held. \
         A frame the later run no longer has is not drawn; `osmeter compare --explain` lists it.",
    ));
    head + &out
}

/// Time per operation of every path of calls (root first), from a profile's folded stacks.
#[derive(Default)]
struct Timed {
    ns: f64,
    children: BTreeMap<String, Timed>,
}

fn timed(p: &ProbeProfile) -> Timed {
    let total: u64 = p.folded.iter().map(|s| s.samples).sum();
    let per_sample = if total > 0 {
        p.ns_per_op / total as f64
    } else {
        0.0
    };
    let mut root = Timed::default();
    for s in &p.folded {
        let ns = s.samples as f64 * per_sample;
        root.ns += ns;
        let mut node = &mut root;
        for frame in std::iter::once(p.label.as_str())
            .chain(s.stack.split(';'))
            .take(MAX_DEPTH)
        {
            node = node.children.entry(frame.to_string()).or_default();
            node.ns += ns;
        }
    }
    root
}

fn differential(a: &ProbeProfile, b: &ProbeProfile) -> String {
    let (ta, tb) = (timed(a), timed(b));
    let scale = ta.ns.max(tb.ns);
    let largest = largest_change(&tb, Some(&ta)).max(1e-12);
    let mut rects = String::new();
    let mut depth = 0;
    draw_differential(
        &tb,
        Some(&ta),
        &Frame {
            scale,
            largest,
            x0: 0.0,
            level: 0,
        },
        &mut rects,
        &mut depth,
    );
    let height = (depth + 1) as f64 * ROW;
    format!(
        "<svg class=\"icicle differential\" viewBox=\"0 0 {WIDTH} {height}\" width=\"100%\" \
         xmlns=\"http://www.w3.org/2000/svg\" font-size=\"11\" font-family=\"monospace\">\n{rects}</svg>\n"
    )
}

/// The largest change of one frame's time per operation, over the frames B has.
fn largest_change(b: &Timed, a: Option<&Timed>) -> f64 {
    b.children
        .iter()
        .map(|(name, child)| {
            let before = a.and_then(|a| a.children.get(name));
            let own = (child.ns - before.map_or(0.0, |n| n.ns)).abs();
            own.max(largest_change(child, before))
        })
        .fold(0.0, f64::max)
}

struct Frame {
    /// ns per operation that the whole width stands for.
    scale: f64,
    /// The largest change of any frame: full colour.
    largest: f64,
    x0: f64,
    level: usize,
}

fn draw_differential(
    b: &Timed,
    a: Option<&Timed>,
    at: &Frame,
    out: &mut String,
    depth: &mut usize,
) {
    let mut x = at.x0;
    for (name, child) in &b.children {
        let w = WIDTH * child.ns / at.scale.max(1e-12);
        let before = a.and_then(|a| a.children.get(name));
        if w >= MIN_WIDTH {
            *depth = (*depth).max(at.level);
            let was = before.map_or(0.0, |n| n.ns);
            let change = child.ns - was;
            let y = at.level as f64 * ROW;
            let fits = ((w - 4.0) / 6.6).floor().max(0.0) as usize;
            let label: String = name.chars().take(fits).collect();
            let _ = writeln!(
                out,
                "<g><title>{}: {was:.1} -> {:.1} ns/op ({change:+.1})</title><rect x=\"{x:.1}\" \
                 y=\"{y}\" width=\"{w:.1}\" height=\"{}\" fill=\"{}\" stroke=\"#fff\" \
                 stroke-width=\"0.5\"/><text x=\"{:.1}\" y=\"{:.1}\">{}</text></g>",
                esc(name),
                child.ns,
                ROW - 1.0,
                change_colour(change / at.largest),
                x + 2.0,
                y + ROW - 4.0,
                esc(&label)
            );
            let inner = Frame {
                x0: x,
                level: at.level + 1,
                ..*at
            };
            draw_differential(child, before, &inner, out, depth);
        }
        x += w;
    }
}

/// Red for growth, blue for shrinking, deeper the nearer `share` (-1 to 1) is to either end.
fn change_colour(share: f64) -> String {
    let share = share.clamp(-1.0, 1.0);
    let hue = if share >= 0.0 { 0 } else { 220 };
    let lightness = 97.0 - 47.0 * share.abs();
    format!("hsl({hue}, 80%, {lightness:.0}%)")
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

    fn profile(ns_per_op: f64, stacks: &[(&str, u64)]) -> ProbeProfile {
        ProbeProfile {
            label: "syscall.null".into(),
            ns_per_op,
            folded: stacks
                .iter()
                .map(|(s, n)| FoldedStack {
                    stack: s.to_string(),
                    samples: *n,
                })
                .collect(),
            ..ProbeProfile::default()
        }
    }

    #[test]
    fn the_differential_graph_colours_what_grew_red_and_what_shrank_blue() {
        // A: 100 ns/op, entry 50 + getpid 50. B: 200 ns/op, entry 50, seccomp 120, getpid 30.
        let a = profile(100.0, &[("entry;getpid", 50), ("entry", 50)]);
        let b = profile(
            200.0,
            &[("entry;getpid", 30), ("entry", 50), ("entry;seccomp", 120)],
        );
        let svg = differential(&a, &b);
        // Widths against the larger total (B's 200 ns): seccomp 120 of 200.
        assert!(
            svg.contains("<title>seccomp: 0.0 -> 120.0 ns/op (+120.0)</title><rect x=\"150.0\" y=\"32\" width=\"600.0\""),
            "{svg}"
        );
        // The largest change is full red; getpid's -20 of 120 is a light blue.
        assert!(svg.contains("fill=\"hsl(0, 80%, 50%)\""), "{svg}");
        assert!(
            svg.contains("<title>getpid: 50.0 -> 30.0 ns/op (-20.0)</title>"),
            "{svg}"
        );
        assert!(svg.contains("fill=\"hsl(220, 80%, 89%)\""), "{svg}");
        // A profile that shrank is drawn narrower than the full width.
        let svg = differential(&b, &a);
        assert!(
            svg.contains("<title>syscall.null: 200.0 -> 100.0 ns/op (-100.0)</title><rect x=\"0.0\" y=\"0\" width=\"500.0\""),
            "{svg}"
        );
    }

    #[test]
    fn change_colours_span_white_to_full() {
        assert_eq!(change_colour(0.0), "hsl(0, 80%, 97%)");
        assert_eq!(change_colour(1.0), "hsl(0, 80%, 50%)");
        assert_eq!(change_colour(-1.0), "hsl(220, 80%, 50%)");
        assert_eq!(change_colour(-7.0), "hsl(220, 80%, 50%)");
    }
}
