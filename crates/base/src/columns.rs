//! Text tables and messages that fit a terminal. Every table osmeter prints is at most [`width`]
//! columns wide (the `COLUMNS` variable when set, else the terminal's width, else 100, the width
//! people read, when the output is a file or a pipe; `--wide` asks for one line per row whatever
//! its length): a table wider than that is cut into stacked blocks of columns, each block
//! repeating the columns that name the row, so a row can still be read across.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// The width tables are fitted to when nothing says otherwise.
pub const DEFAULT_WIDTH: usize = 100;

/// Narrower than this, a table of a name and two figures no longer fits: a smaller `COLUMNS` or
/// terminal is taken as this.
pub const NARROWEST: usize = 40;

static WIDE: AtomicBool = AtomicBool::new(false);
static WIDTH: AtomicUsize = AtomicUsize::new(DEFAULT_WIDTH);

/// `--wide`: tables keep every column on one line.
pub fn set_wide(wide: bool) {
    WIDE.store(wide, Ordering::Relaxed);
}

/// Fits the output to where it goes: `COLUMNS` when set, else the terminal stdout is on, else
/// [`DEFAULT_WIDTH`]. The command line calls this once; code that never does (the library's own
/// tests, whose stdout may be a developer's terminal) keeps the default.
pub fn fit_to_terminal() {
    let columns = std::env::var("COLUMNS").ok();
    // The terminal of stdout, where the tables go: `osmeter show ID > file` from a terminal
    // writes the file at the width of a pipe.
    let width = width_from(columns.as_deref(), || terminal_width(libc::STDOUT_FILENO));
    WIDTH.store(width, Ordering::Relaxed);
}

/// The width to fit tables and messages to, or None with `--wide`.
pub fn width() -> Option<usize> {
    (!WIDE.load(Ordering::Relaxed)).then(|| WIDTH.load(Ordering::Relaxed))
}

/// The width to wrap paragraphs to: the tables' width, and with `--wide` (which keeps table rows
/// whole) still that width, since a paragraph on one line is no easier to read.
pub fn prose_width() -> usize {
    WIDTH.load(Ordering::Relaxed)
}

/// `COLUMNS` when it is a number, else the terminal's width, else [`DEFAULT_WIDTH`]; never
/// narrower than [`NARROWEST`].
fn width_from(columns: Option<&str>, terminal: impl FnOnce() -> Option<usize>) -> usize {
    columns
        .and_then(|c| c.trim().parse::<usize>().ok())
        .filter(|&c| c > 0)
        .or_else(terminal)
        .unwrap_or(DEFAULT_WIDTH)
        .max(NARROWEST)
}

/// The width of the terminal on this descriptor, if it is one.
fn terminal_width(fd: libc::c_int) -> Option<usize> {
    let mut size = libc::winsize {
        ws_row: 0,
        ws_col: 0,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCGWINSZ fills a winsize, which `size` is; a descriptor that is not a terminal
    // fails with ENOTTY and leaves it alone.
    let ok = unsafe { libc::ioctl(fd, libc::TIOCGWINSZ, &mut size) } == 0;
    (ok && size.ws_col > 0).then_some(size.ws_col as usize)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
}

/// A table: its header, how each column is aligned, its rows, and how many leading columns name
/// a row (repeated in every block when the table is cut).
#[derive(Debug, Clone)]
pub struct Table {
    pub header: Vec<String>,
    pub align: Vec<Align>,
    pub rows: Vec<Vec<String>>,
    pub key_columns: usize,
    /// Put before every line.
    pub indent: String,
    /// The columns after the keys come in groups of this many (one kernel's counts, say), and a
    /// block is cut only between groups: a group split over two blocks would lose its name.
    pub group: usize,
}

impl Table {
    pub fn new(header: &[&str], align: &[Align], key_columns: usize) -> Table {
        Table {
            header: header.iter().map(|h| h.to_string()).collect(),
            align: align.to_vec(),
            rows: Vec::new(),
            key_columns,
            indent: String::new(),
            group: 1,
        }
    }

    /// Columns after the keys in groups of `size`, kept in one block each.
    pub fn grouped(mut self, size: usize) -> Table {
        self.group = size.max(1);
        self
    }

    pub fn indented(mut self, indent: &str) -> Table {
        self.indent = indent.to_string();
        self
    }

    pub fn push(&mut self, row: Vec<String>) {
        self.rows.push(row);
    }

    fn widths(&self) -> Vec<usize> {
        (0..self.header.len())
            .map(|c| {
                self.rows
                    .iter()
                    .filter_map(|r| r.get(c))
                    .chain(std::iter::once(&self.header[c]))
                    .map(|s| s.chars().count())
                    .max()
                    .unwrap_or(0)
            })
            .collect()
    }

    /// The table laid out for `width` columns (None: one block whatever its width).
    pub fn render(&self, width: Option<usize>) -> String {
        let widths = self.widths();
        let keys = self.key_columns.min(widths.len());
        let line = |cols: &[usize]| -> usize {
            self.indent.chars().count()
                + cols.iter().map(|&c| widths[c]).sum::<usize>()
                + 2 * cols.len().saturating_sub(1)
        };
        let key_cols: Vec<usize> = (0..keys).collect();
        let mut blocks: Vec<Vec<usize>> = Vec::new();
        let mut current = key_cols.clone();
        let rest: Vec<usize> = (keys..widths.len()).collect();
        for group in rest.chunks(self.group) {
            let mut tried = current.clone();
            tried.extend_from_slice(group);
            let fits = width.is_none_or(|w| line(&tried) <= w);
            if fits || current.len() == keys {
                current = tried;
            } else {
                blocks.push(current);
                current = key_cols.clone();
                current.extend_from_slice(group);
            }
        }
        if current.len() > keys || blocks.is_empty() {
            blocks.push(current);
        }
        let mut out = String::new();
        for (i, block) in blocks.iter().enumerate() {
            if i > 0 {
                out.push('\n');
            }
            // A block cut off the first holds no figure of its own, only more columns of the
            // same rows: rows with nothing in those columns are left out, and said to be.
            let shown: Vec<&Vec<String>> = self
                .rows
                .iter()
                .filter(|row| i == 0 || !block[keys..].iter().all(|&c| nothing(row.get(c))))
                .collect();
            let left_out = self.rows.len() - shown.len();
            let names: Vec<&str> = block[keys..]
                .iter()
                .map(|&c| self.header[c].as_str())
                .collect();
            if shown.is_empty() {
                out.push_str(&format!(
                    "{}{}: zero or empty in all {} rows\n",
                    self.indent,
                    names.join(", "),
                    left_out
                ));
                continue;
            }
            self.write_row(&mut out, &self.header, block, &widths);
            for row in shown {
                self.write_row(&mut out, row, block, &widths);
            }
            if left_out > 0 {
                out.push_str(&format!(
                    "{}({left_out} more rows with zero or nothing in {})\n",
                    self.indent,
                    names.join(", ")
                ));
            }
        }
        out
    }

    fn write_row(&self, out: &mut String, row: &[String], cols: &[usize], widths: &[usize]) {
        let mut line = self.indent.clone();
        for (i, &c) in cols.iter().enumerate() {
            if i > 0 {
                line.push_str("  ");
            }
            let cell = row.get(c).map(String::as_str).unwrap_or("");
            let pad = widths[c].saturating_sub(cell.chars().count());
            match self.align.get(c).copied().unwrap_or(Align::Left) {
                Align::Left => {
                    line.push_str(cell);
                    line.extend(std::iter::repeat_n(' ', pad));
                }
                Align::Right => {
                    line.extend(std::iter::repeat_n(' ', pad));
                    line.push_str(cell);
                }
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
}

/// A cell that says nothing: empty, a dash, or a number that is zero (`0`, `0.00`, `-0.0`).
fn nothing(cell: Option<&String>) -> bool {
    let cell = cell.map_or("", |c| c.trim());
    cell.is_empty() || cell == "-" || cell.parse::<f64>().is_ok_and(|v| v == 0.0)
}

/// `text` wrapped at spaces to `width` columns (None: one line), continuation lines indented by
/// `indent`; a word longer than the width stays whole on a line of its own. Ends in a line feed.
pub fn wrap(text: &str, width: Option<usize>, indent: &str) -> String {
    let Some(width) = width else {
        return format!("{text}\n");
    };
    let mut out = String::new();
    let mut line = String::new();
    let mut started = false;
    for word in text.split(' ') {
        if started && line.chars().count() + 1 + word.chars().count() > width {
            out.push_str(line.trim_end());
            out.push('\n');
            line = format!("{indent}{word}");
        } else {
            if started {
                line.push(' ');
            }
            line.push_str(word);
        }
        started = true;
    }
    out.push_str(line.trim_end());
    out.push('\n');
    out
}

/// The last resort for text that is not a [`Table`]: every line wider than `width` is wrapped at
/// spaces under its last column (the text after its last gap of two or more spaces: an `info`
/// value, a probe's summary, a note), or under its own indent plus two when it has no gap (a
/// paragraph). A line whose last column starts past two thirds of the width is a table row and is
/// left alone rather than torn.
pub fn fit_prose(text: &str, width: Option<usize>) -> std::borrow::Cow<'_, str> {
    let Some(width) = width else {
        return std::borrow::Cow::Borrowed(text);
    };
    if fits(text, width) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + text.len() / 50);
    for line in text.split_inclusive('\n') {
        let body = line.strip_suffix('\n').unwrap_or(line);
        let column = hanging_column(body);
        if body.chars().count() <= width || column > width * 2 / 3 {
            out.push_str(line);
            continue;
        }
        let head: String = body.chars().take(column).collect();
        let tail: String = body.chars().skip(column).collect();
        let pad = " ".repeat(column);
        for (i, piece) in wrap(&tail, Some(width - column), "").lines().enumerate() {
            out.push_str(if i == 0 { &head } else { &pad });
            out.push_str(piece);
            out.push('\n');
        }
        if !line.ends_with('\n') {
            out.pop();
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Where a wrapped line's continuation starts: after the last gap of two or more spaces past the
/// indent, else two past the indent.
fn hanging_column(line: &str) -> usize {
    let chars: Vec<char> = line.chars().collect();
    let indent = chars.iter().take_while(|c| **c == ' ').count();
    let mut column = None;
    for i in indent + 1..chars.len() {
        if chars[i] != ' ' && chars[i - 1] == ' ' && i >= 2 && chars[i - 2] == ' ' {
            column = Some(i);
        }
    }
    column.unwrap_or(indent + 2)
}

/// Every line of `text` fits `width` columns.
pub fn fits(text: &str, width: usize) -> bool {
    text.lines().all(|l| l.chars().count() <= width)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn table(columns: usize, cell: &str) -> Table {
        let header: Vec<String> = (0..columns).map(|c| format!("C{c}")).collect();
        let header: Vec<&str> = header.iter().map(String::as_str).collect();
        let mut t = Table::new(&header, &vec![Align::Right; columns], 1);
        t.push((0..columns).map(|c| format!("{cell}{c}")).collect());
        t
    }

    #[test]
    fn the_width_is_columns_then_the_terminal_then_a_hundred() {
        let no_terminal = || None;
        assert_eq!(width_from(Some("80"), || Some(132)), 80);
        assert_eq!(width_from(Some(" 120 "), no_terminal), 120);
        assert_eq!(width_from(None, || Some(132)), 132);
        assert_eq!(width_from(None, no_terminal), DEFAULT_WIDTH);
        // A COLUMNS that is not a width is passed over, not obeyed.
        assert_eq!(width_from(Some("wide"), || Some(90)), 90);
        assert_eq!(width_from(Some("0"), no_terminal), DEFAULT_WIDTH);
        assert_eq!(width_from(Some("-5"), no_terminal), DEFAULT_WIDTH);
        // Too narrow for any table: the narrowest that holds one.
        assert_eq!(width_from(Some("12"), no_terminal), NARROWEST);
        assert_eq!(width_from(None, || Some(20)), NARROWEST);
    }

    #[test]
    fn a_narrow_table_is_one_block_and_aligned() {
        let mut t = Table::new(&["probe", "median"], &[Align::Left, Align::Right], 1);
        t.push(vec!["syscall.null".into(), "165".into()]);
        t.push(vec!["ipc".into(), "7777".into()]);
        assert_eq!(
            t.render(Some(100)),
            "probe         median\nsyscall.null     165\nipc             7777\n"
        );
    }

    #[test]
    fn a_wide_table_is_cut_into_blocks_that_repeat_the_row_names() {
        let t = table(12, "value-");
        let text = t.render(Some(40));
        assert!(fits(&text, 40), "{text}");
        let blocks: Vec<&str> = text.split("\n\n").collect();
        assert!(blocks.len() > 1, "{text}");
        assert!(blocks
            .iter()
            .all(|b| b.lines().nth(1).unwrap().starts_with("value-0")));
        // --wide: one block.
        assert_eq!(t.render(None).split("\n\n").count(), 1);
    }

    #[test]
    fn a_cut_off_block_leaves_out_rows_with_nothing_in_it_and_says_so() {
        let mut t = Table::new(
            &["probe", "median", "faults", "csw"],
            &[Align::Left, Align::Right, Align::Right, Align::Right],
            1,
        );
        for (name, csw) in [("a", "0.00"), ("b", "1.50"), ("c", "-"), ("d", "")] {
            t.push(vec![
                name.repeat(40),
                "165".into(),
                "0.00".into(),
                csw.into(),
            ]);
        }
        let text = t.render(Some(50));
        let blocks: Vec<&str> = text.split("\n\n").collect();
        assert_eq!(blocks.len(), 3, "{text}");
        // The first block keeps every row, zeros included: it holds the figures.
        assert_eq!(blocks[0].lines().count(), 5, "{text}");
        assert_eq!(
            blocks[1].trim_end(),
            "faults: zero or empty in all 4 rows",
            "{text}"
        );
        let csw: Vec<&str> = blocks[2].lines().collect();
        assert_eq!(csw.len(), 3, "{text}");
        assert!(
            csw[1].starts_with("bbb") && csw[1].ends_with("1.50"),
            "{text}"
        );
        assert_eq!(csw[2], "(3 more rows with zero or nothing in csw)");
        // --wide: every row and column on one line, nothing left out.
        assert_eq!(t.render(None).lines().count(), 5);
    }

    #[test]
    fn groups_of_columns_stay_in_one_block() {
        let t = table(9, "value-").grouped(4);
        let text = t.render(Some(60));
        let blocks: Vec<&str> = text.split("\n\n").collect();
        assert_eq!(blocks.len(), 2, "{text}");
        // The first group's columns 1-4 together, then 5-8 together.
        assert!(
            blocks[0].contains("C4") && !blocks[0].contains("C5"),
            "{text}"
        );
        assert!(
            blocks[1].contains("C5") && blocks[1].contains("C8"),
            "{text}"
        );
    }

    #[test]
    fn long_text_wraps_at_spaces_with_an_indent() {
        let text =
            "syscall.null  skipped: this probe needs a kernel with a feature it does not have";
        let wrapped = wrap(text, Some(40), "    ");
        assert!(fits(&wrapped, 40), "{wrapped}");
        assert!(
            wrapped.lines().skip(1).all(|l| l.starts_with("    ")),
            "{wrapped}"
        );
        let words = |s: &str| s.split_whitespace().map(String::from).collect::<Vec<_>>();
        assert_eq!(words(&wrapped), words(text));
        assert_eq!(wrap(text, None, "    "), format!("{text}\n"));
    }

    #[test]
    fn prose_wraps_under_its_last_column_and_tables_are_left_alone() {
        let info = format!(
            "  kernel command line:     {}\n",
            "word ".repeat(40).trim_end()
        );
        let fitted = fit_prose(&info, Some(60));
        assert!(fits(&fitted, 60), "{fitted}");
        assert!(
            fitted
                .lines()
                .skip(1)
                .all(|l| l.starts_with(&" ".repeat(27))),
            "{fitted}"
        );
        assert!(fitted.ends_with('\n'));
        let paragraph = "0 of 7 figures changed beyond noise ".repeat(4);
        let fitted = fit_prose(&paragraph, Some(50));
        assert!(
            fits(&fitted, 50) && fitted.lines().nth(1).unwrap().starts_with("  "),
            "{fitted}"
        );
        // A row whose last column starts past two thirds is a table's: untouched.
        let row = format!("{}  {}\n", "x".repeat(70), "y".repeat(40));
        assert_eq!(fit_prose(&row, Some(100)), row);
        assert_eq!(fit_prose(&info, None), info);
    }

    proptest! {
        #[test]
        fn every_cell_is_shown_once_and_blocks_fit(columns in 2usize..20, cell in "[a-z]{1,12}") {
            let t = table(columns, &cell);
            let text = t.render(Some(60));
            // Fits, unless the row names and one column alone are wider than the width.
            let widest = text.lines().map(|l| l.chars().count()).max().unwrap();
            let key_and_one = 2 * (cell.len() + 2) + 2;
            prop_assert!(widest <= 60.max(key_and_one), "{}", text);
            for c in 1..columns {
                let needle = format!("{cell}{c}");
                let hits = text.matches(&needle).count();
                // `abc1` is also found inside `abc10`..`abc19`.
                let inside = (0..columns).filter(|&o| o != c && format!("{cell}{o}").contains(&needle)).count();
                prop_assert_eq!(hits, 1 + inside, "{}", text);
            }
        }
    }
}
