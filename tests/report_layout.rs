//! The report as a person sees it, in a real headless Chromium: on a 1400 px screen the page never
//! scrolls sideways and no table hides behind a scroll bar of its own, and printed on A4 every
//! table fits the page with its last column on paper. Screenshots of the first screen and the
//! PDF land in target/ for a person to look at.
//!
//! The report holds no script (tests/report.rs checks that), so the layout is measured on a copy
//! that has one appended: it writes every measurement into the page, and `--dump-dom` reads them
//! back. The print layout is measured the same way with the print style sheet made the screen's
//! at the A4 text width; the PDF itself is then printed from the report as written and read with
//! poppler's pdfinfo and pdftotext.

mod common;

use common::browser::{chromium, run_chromium, screenshot_path};
use common::{which, TestEnv, FAST};
use std::path::{Path, PathBuf};

/// A4's text width in CSS pixels: 210 mm less the 12 mm margins of the report's `@page`, at 96
/// pixels to the inch.
const A4_TEXT_PX: u32 = ((210.0 - 2.0 * 12.0) * 96.0 / 25.4) as u32;

/// Appended to a copy of the report: one line per measurement into `<pre id="layout">`.
/// `page SCROLL VIEWPORT`, then per table `table INDEX SECTION RIGHT LIMIT SCROLL CLIENT|LAST`
/// (its right edge and the main column's, the scroll and client widths of its wrapper, and the
/// text of its last header cell), and per plot `svg INDEX SECTION RIGHT LIMIT`.
const MEASURE: &str = r#"<script>
(function () {
  var out = [];
  var d = document.documentElement;
  var main = document.querySelector('main');
  var m = main.getBoundingClientRect();
  var pad = parseFloat(getComputedStyle(main).paddingRight) || 0;
  var limit = Math.ceil(m.right - pad);
  out.push('page ' + d.scrollWidth + ' ' + window.innerWidth);
  function section(e) { var s = e.closest('section'); return s ? s.id : '-'; }
  document.querySelectorAll('table').forEach(function (t, i) {
    var w = t.parentElement;
    var ths = t.querySelectorAll('thead th');
    var last = ths.length ? ths[ths.length - 1].textContent : '';
    out.push('table ' + i + ' ' + section(t) + ' ' + Math.ceil(t.getBoundingClientRect().right) +
      ' ' + limit + ' ' + w.scrollWidth + ' ' + w.clientWidth + '|' + last);
  });
  document.querySelectorAll('figure svg').forEach(function (s, i) {
    out.push('svg ' + i + ' ' + section(s) + ' ' + Math.ceil(s.getBoundingClientRect().right) +
      ' ' + limit);
  });
  var pre = document.createElement('pre');
  pre.id = 'layout';
  pre.textContent = out.join('\n');
  document.body.appendChild(pre);
})();
</script>
"#;

/// What the page measured at one window width.
#[derive(Debug)]
struct Layout {
    scroll_width: u32,
    viewport: u32,
    tables: Vec<Table>,
    /// (section, right edge, limit) of every plot.
    svgs: Vec<(String, u32, u32)>,
}

#[derive(Debug)]
struct Table {
    section: String,
    right: u32,
    limit: u32,
    scroll: u32,
    client: u32,
    last_header: String,
}

/// Loads a copy of `report` (with `print_css`, its print rules made the screen's) with the
/// measuring script in a window `width` pixels wide.
fn measure(bin: &Path, report: &Path, width: u32, print_css: bool) -> Layout {
    let dir = tempfile::tempdir().unwrap();
    let mut html = std::fs::read_to_string(report).unwrap();
    if print_css {
        assert!(html.contains("@media print {"));
        html = html.replace("@media print {", "@media all {");
    }
    let at = html.rfind("</body>").expect("a whole page");
    html.insert_str(at, MEASURE);
    let copy = dir.path().join("measured.html");
    std::fs::write(&copy, html).unwrap();
    let profile = dir.path().join("profile");
    let (dom, log) = run_chromium(
        bin,
        &profile,
        &["--dump-dom".into(), format!("--window-size={width},1000")],
        &format!("file://{}", copy.display()),
    );
    let text = dom
        .split("<pre id=\"layout\">")
        .nth(1)
        .and_then(|s| s.split("</pre>").next())
        .unwrap_or_else(|| panic!("no measurements in the DOM; chromium said:\n{log}"));
    let text = text
        .replace("&amp;", "&")
        .replace("&lt;", "<")
        .replace("&gt;", ">");
    let mut layout = Layout {
        scroll_width: 0,
        viewport: 0,
        tables: Vec::new(),
        svgs: Vec::new(),
    };
    for line in text.lines() {
        let (fields, last) = line.split_once('|').unwrap_or((line, ""));
        let f: Vec<&str> = fields.split_whitespace().collect();
        let n = |i: usize| f[i].parse::<u32>().unwrap();
        match f[0] {
            "page" => (layout.scroll_width, layout.viewport) = (n(1), n(2)),
            "table" => layout.tables.push(Table {
                section: f[2].into(),
                right: n(3),
                limit: n(4),
                scroll: n(5),
                client: n(6),
                last_header: last.into(),
            }),
            "svg" => layout.svgs.push((f[2].into(), n(3), n(4))),
            other => panic!("unexpected measurement {other}"),
        }
    }
    assert_eq!(layout.viewport, width, "the window is {width} px wide");
    layout
}

/// Every table and plot within the text column, no table scrolled inside its wrapper, and no
/// sideways scroll of the page; the offenders named.
fn assert_fits(layout: &Layout, what: &str) {
    let mut bad = Vec::new();
    if layout.scroll_width > layout.viewport {
        bad.push(format!(
            "the page is {} px wide in a {} px window",
            layout.scroll_width, layout.viewport
        ));
    }
    for t in &layout.tables {
        if t.right > t.limit || t.scroll > t.client {
            bad.push(format!(
                "table in #{} (last column {:?}): right edge {} px, column ends at {} px, \
                 {} px of content in {} px",
                t.section, t.last_header, t.right, t.limit, t.scroll, t.client
            ));
        }
    }
    for (section, right, limit) in &layout.svgs {
        if right > limit {
            bad.push(format!(
                "plot in #{section}: right edge {right} px, column ends at {limit} px"
            ));
        }
    }
    assert!(bad.is_empty(), "{what}:\n{}", bad.join("\n"));
}

/// Runs a poppler tool on the PDF and returns its stdout (pdftotext is told to write there).
fn poppler(tool: &str, args: &[&str], pdf: &Path) -> String {
    let mut cmd = std::process::Command::new(tool);
    cmd.args(args).arg(pdf);
    if tool == "pdftotext" {
        cmd.arg("-");
    }
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {tool}: {e}"));
    assert!(
        out.status.success(),
        "{tool}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The words of a text, for finding a header whatever the PDF's line breaks did to it.
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| c.is_whitespace())
        .filter(|w| !w.is_empty())
        .map(String::from)
        .collect()
}

/// The report of two runs of the same probes, a latency run (every class and path: the buffer
/// model's table has a column per stream, the histograms a panel per stream) and an Ousterhout paper run (the then-and-now tables):
/// the report whose tables were the widest.
fn wide_report(env: &TestEnv) -> PathBuf {
    let run = |tag: &str| {
        let mut args = vec!["run", "syscall.null", "memory.copy", "cpu.reference"];
        args.extend_from_slice(FAST);
        args.extend(["--tag", tag]);
        env.saved(&args).1
    };
    let (a, b) = (run("kernel=one"), run("kernel=two"));
    // Twelve streams where real-time classes are allowed (root), four elsewhere.
    let latency = env
        .saved(&[
            "latency",
            "--duration",
            "2s",
            "--classes",
            "high,medium,normal",
            "--paths",
            "timer,futex,eventfd,pipe",
        ])
        .1;
    let mut paper = vec!["paper", "ousterhout89", "--table", "4", "--quick"];
    paper.extend_from_slice(FAST);
    let paper = env.saved(&paper).1;
    let out = env.dir.path().join("wide.html");
    env.osmeter()
        .args(["report", &a, &b, &latency, &paper, "-o"])
        .arg(&out)
        .assert()
        .success();
    out
}

#[test]
fn the_report_fits_a_1400_px_screen_and_a4_paper() {
    let Some(bin) = chromium() else { return };
    let env = TestEnv::new();
    let report = wide_report(&env);
    let html = std::fs::read_to_string(&report).unwrap();
    for id in ["comparison", "latency", "paper-ousterhout89"] {
        assert!(html.contains(&format!("<section id=\"{id}\">")), "no #{id}");
    }
    assert!(html.contains("<table class=\"buffers\">"));

    // (a) The screen at 1400 px.
    let screen = measure(&bin, &report, 1400, false);
    assert!(
        screen.tables.len() >= 8 && screen.svgs.len() >= 4,
        "{screen:?}"
    );
    assert_fits(&screen, "at 1400 px");
    let shot = screenshot_path("report-first-screen-1400.png");
    let _ = std::fs::remove_file(&shot);
    let profile = tempfile::tempdir().unwrap();
    let (_, log) = run_chromium(
        &bin,
        profile.path(),
        &[
            format!("--screenshot={}", shot.display()),
            "--window-size=1400,900".into(),
        ],
        &format!("file://{}", report.display()),
    );
    let png = std::fs::read(&shot).unwrap_or_else(|e| panic!("no screenshot ({e}):\n{log}"));
    assert!(png.starts_with(b"\x89PNG"));
    // PNG's IHDR: width and height, big-endian, at bytes 16..24.
    let width = u32::from_be_bytes(png[16..20].try_into().unwrap());
    assert_eq!(width, 1400, "the screenshot is 1400 px wide");
    let _ = std::fs::copy(&report, shot.with_extension("html"));
    eprintln!("first screen at 1400 px: {}", shot.display());

    // (b) The print style sheet at A4's text width: the same measurements.
    let paper = measure(&bin, &report, A4_TEXT_PX, true);
    assert_fits(&paper, "with the print style sheet at A4's text width");

    // (b) The real print: A4 pages, a sane count, every table's last column on them.
    if which("pdftotext").is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "poppler-utils is missing: apt-get install -y poppler-utils"
        );
        eprintln!("SKIPPED the PDF checks: apt-get install -y poppler-utils");
        return;
    }
    let pdf = screenshot_path("report-a4.pdf");
    let _ = std::fs::remove_file(&pdf);
    let profile = tempfile::tempdir().unwrap();
    let (_, log) = run_chromium(
        &bin,
        profile.path(),
        &[
            format!("--print-to-pdf={}", pdf.display()),
            "--no-pdf-header-footer".into(),
        ],
        &format!("file://{}", report.display()),
    );
    assert!(pdf.exists(), "no PDF printed:\n{log}");
    let info = poppler("pdfinfo", &[], &pdf);
    let pages: u32 = info
        .lines()
        .find_map(|l| l.strip_prefix("Pages:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no page count in:\n{info}"));
    assert!(
        info.lines()
            .any(|l| l.starts_with("Page size:") && l.contains("(A4)")),
        "A4 pages:\n{info}"
    );
    // Four runs' tables, plots and notes: more than a page, far fewer than a scroll of screens.
    assert!((2..=40).contains(&pages), "{pages} pages");
    let text = words(&poppler("pdftotext", &["-layout"], &pdf));
    for t in &paper.tables {
        for w in words(&t.last_header) {
            assert!(
                text.iter().any(|p| p.contains(&w)),
                "the last column of a table in #{} ({:?}) is not on paper: no {w:?}",
                t.section,
                t.last_header
            );
        }
    }
    eprintln!("printed on {pages} A4 pages: {}", pdf.display());
}
