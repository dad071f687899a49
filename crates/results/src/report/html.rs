//! The page shell, its style sheet, and small HTML helpers shared by the sections.

use crate::results::model::Unit;
use crate::results::table::human;
use std::fmt::Write as _;

/// Escapes text for element content and quoted attribute values.
pub fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Three significant digits or so: the one number formatter (units::number).
pub use crate::units::number as num;

/// A value with a readable unit: "163 ns", "1.14 us", "2.50 GB/s".
pub fn value(v: f64, unit: Unit) -> String {
    let (x, u) = human(v, unit);
    format!("{} {u}", num(x))
}

/// A 95 % interval in the unit its median is shown in: "[163, 610] ns".
pub fn interval(median: f64, ci: [f64; 2], unit: Unit) -> String {
    let (m, u) = human(median, unit);
    let scale = if median != 0.0 { m / median } else { 1.0 };
    format!("[{}, {}] {u}", num(ci[0] * scale), num(ci[1] * scale))
}

/// A `<figure>` holding one plot and a caption that says what it shows and how to read it.
pub fn figure(svg: &str, caption: &str) -> String {
    format!("<figure>\n{svg}\n<figcaption>{caption}</figcaption>\n</figure>\n")
}

/// A paragraph of plain text.
pub fn note(text: &str) -> String {
    format!("<p class=\"note\">{}</p>\n", esc(text))
}

/// One table cell: HTML content and an optional class ("num" right-aligns figures).
#[derive(Debug, Clone, Default)]
pub struct Cell {
    pub class: &'static str,
    pub html: String,
}

impl Cell {
    pub fn num(html: String) -> Cell {
        Cell { class: "num", html }
    }
    pub fn with_class(class: &'static str, html: String) -> Cell {
        Cell { class, html }
    }
}

impl From<String> for Cell {
    fn from(html: String) -> Cell {
        Cell { class: "", html }
    }
}

/// One table row and an optional class.
#[derive(Debug, Clone, Default)]
pub struct Row {
    pub class: &'static str,
    pub cells: Vec<Cell>,
}

impl From<Vec<String>> for Row {
    fn from(cells: Vec<String>) -> Row {
        Row {
            class: "",
            cells: cells.into_iter().map(Cell::from).collect(),
        }
    }
}

fn class_attr(class: &str) -> String {
    if class.is_empty() {
        String::new()
    } else {
        format!(" class=\"{class}\"")
    }
}

/// A table from a header (none when empty) and rows of already-escaped cells.
pub fn table<R: Clone + Into<Row>>(class: &str, header: &[&str], rows: &[R]) -> String {
    // The wrapper scrolls a wide table sideways on a narrow screen instead of widening the page.
    let mut out = format!("<div class=\"wide\"><table{}>\n", class_attr(class));
    if !header.is_empty() {
        out.push_str("<thead><tr>");
        for h in header {
            let _ = write!(out, "<th>{}</th>", esc(h));
        }
        out.push_str("</tr></thead>\n");
    }
    out.push_str("<tbody>\n");
    for row in rows {
        let row: Row = row.clone().into();
        let _ = write!(out, "<tr{}>", class_attr(row.class));
        for cell in &row.cells {
            let _ = write!(out, "<td{}>{}</td>", class_attr(cell.class), cell.html);
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table></div>\n");
    out
}

const CSS: &str = r#"
:root { --ink: #1b1f24; --muted: #5b6470; --rule: #d4d9df; --band: #f3f5f7; --warn: #a15c00; }
* { box-sizing: border-box; }
body { margin: 0; color: var(--ink); background: #fff;
  font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; }
header, main, footer { max-width: 1120px; margin: 0 auto; padding: 0 24px; }
header { padding-top: 20px; border-bottom: 2px solid var(--ink); }
h1 { font-size: 1.6rem; margin: 0 0 4px; }
h2 { font-size: 1.25rem; margin: 34px 0 10px; padding-bottom: 4px; border-bottom: 1px solid var(--rule); }
h3 { font-size: 1.02rem; margin: 20px 0 6px; }
details.flame > summary { cursor: pointer; }
details.flame > summary h4 { display: inline; font-size: 0.95rem; margin: 0; }
details.flame { margin: 6px 0; }
p { margin: 6px 0; }
.sub { color: var(--muted); margin: 0 0 10px; }
nav ol { margin: 6px 0 14px; padding: 0; list-style: none; display: flex; flex-wrap: wrap; gap: 4px 16px; }
nav a { color: #0b5cad; text-decoration: none; }
table { border-collapse: collapse; margin: 8px 0 14px; font-size: 0.88rem; }
th, td { border-bottom: 1px solid var(--rule); padding: 3px 10px 3px 0; text-align: left; vertical-align: top; }
th { border-bottom: 1.5px solid var(--ink); font-weight: 600; }
tbody tr:nth-child(even) { background: var(--band); }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.mono, code { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 0.85rem; }
table.kv td:first-child { color: var(--muted); white-space: nowrap; }
table.diff td, table.kv td { overflow-wrap: anywhere; }
table.diff td { max-width: 380px; }
.wide { overflow-x: auto; }
table.kv { margin: 0; }
.grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(440px, 1fr)); gap: 4px 28px; }
.grid h3 { margin-top: 10px; }
tr.warned td:first-child::before { content: "\26A0\FE0E "; color: var(--warn); }
td.warn { color: var(--warn); font-size: 0.8rem; max-width: 380px; }
.bad { color: #b3261e; }
.note { color: var(--muted); font-size: 0.9rem; }
figure { margin: 14px 0 22px; }
.panels { display: grid; grid-template-columns: repeat(auto-fill, minmax(250px, 1fr)); gap: 6px 18px; }
.panel-title { font-size: 0.82rem; font-weight: 600; margin-top: 4px; }
figure svg { display: block; width: 100%; height: auto; }
figcaption { font-size: 0.86rem; color: var(--muted); margin-top: 4px; max-width: 980px; }
figcaption b { color: var(--ink); }
footer { margin-top: 40px; padding: 10px 24px 30px; color: var(--muted); font-size: 0.8rem; border-top: 1px solid var(--rule); }
@media print {
  @page { size: A4; margin: 14mm 12mm; }
  body { font-size: 10pt; }
  header, main, footer { max-width: none; padding: 0; }
  nav { display: none; }
  h2 { break-after: avoid; page-break-after: avoid; margin-top: 18px; }
  h3 { break-after: avoid; page-break-after: avoid; }
  figure, table.kv, tr { break-inside: avoid; page-break-inside: avoid; }
  section { break-before: auto; }
  tbody tr:nth-child(even) { background: none; }
  * { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
  .grid { grid-template-columns: 1fr 1fr; }
  .panels { grid-template-columns: repeat(3, 1fr); }
  .panel { break-inside: avoid; page-break-inside: avoid; }
  .wide { overflow: visible; }
  table { max-width: 100%; }
  td { overflow-wrap: anywhere; }
}
"#;

/// The whole document around the sections' HTML.
pub fn page(title: &str, toc: &[(&str, &str)], body: &str) -> String {
    let mut nav = String::from("<nav><ol>");
    for (id, name) in toc {
        let _ = write!(nav, "<li><a href=\"#{id}\">{}</a></li>", esc(name));
    }
    nav.push_str("</ol></nav>");
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"generator\" content=\"osmeter {version}\">\n<title>{t}</title>\n\
         <style>{CSS}</style>\n</head>\n<body>\n<header>\n<h1>{t}</h1>\n\
         <p class=\"sub\">Operating-system measurements with their system description; medians with \
         95&nbsp;% confidence intervals.</p>\n{nav}\n</header>\n<main>\n{body}</main>\n\
         <footer>Made by osmeter {version} from the stored run documents. Self-contained: no script, \
         font or image is loaded from elsewhere.</footer>\n</body>\n</html>\n",
        t = esc(title),
        version = env!("CARGO_PKG_VERSION"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_and_numbers() {
        assert_eq!(
            esc("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
        assert_eq!(num(163.46), "163");
        assert_eq!(num(61.7), "61.7");
        assert_eq!(num(1.137), "1.14");
        assert_eq!(num(0.0125), "0.013");
        assert_eq!(num(0.0), "0.00");
        assert_eq!(value(1137.0, Unit::Nanoseconds), "1137 ns");
        assert_eq!(value(25_000.0, Unit::Nanoseconds), "25.0 us");
        assert_eq!(value(2.5e9, Unit::BytesPerSecond), "2.50 GB/s");
        assert_eq!(
            interval(20_000.0, [19_000.0, 21_500.0], Unit::Nanoseconds),
            "[19.0, 21.5] us"
        );
    }
}
