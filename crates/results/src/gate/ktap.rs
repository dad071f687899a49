//! A gate as KTAP version 1, the kernel's test output format (Documentation/dev-tools/ktap.rst):
//! the version line, the plan `1..N`, then one result line per case, numbered from 1:
//! `ok N NAME`, `not ok N NAME`, or `ok N NAME # SKIP reason`. The verdict line goes before its
//! result as a diagnostic line (`# ...`), which KTAP parsers keep with the case that follows.
//! A name holds no `#` (it would start a directive) and no control characters; a gate that could
//! not judge is one `not ok` case saying why.

use super::{Gate, Outcome};
use std::fmt::Write;

pub fn render(gate: &Gate) -> String {
    let mut out = String::from("KTAP version 1\n");
    let _ = writeln!(out, "# {}", one_line(&gate.name));
    let _ = writeln!(out, "1..{}", gate.cases.len());
    for (i, case) in gate.cases.iter().enumerate() {
        let n = i + 1;
        let name = one_line(&case.name).replace('#', "_");
        let message = one_line(&case.message);
        match case.outcome {
            Outcome::Passed => {
                let _ = writeln!(out, "# {name}: {message}\nok {n} {name}");
            }
            Outcome::Failed | Outcome::Error => {
                let _ = writeln!(out, "# {name}: {message}\nnot ok {n} {name}");
            }
            Outcome::Skipped => {
                let _ = writeln!(out, "ok {n} {name} # SKIP {message}");
            }
        }
    }
    out
}

/// Text on one line of printable characters: a line feed in a stored reason would start a line
/// a parser reads as a result.
fn one_line(text: &str) -> String {
    crate::text::escape_controls(text).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_case_has_one_numbered_result_line_after_the_plan() {
        let ktap = render(&super::super::sample());
        let lines: Vec<&str> = ktap.lines().collect();
        assert_eq!(lines[0], "KTAP version 1");
        assert!(lines.contains(&"1..3"), "{ktap}");
        assert!(lines.contains(&"ok 1 syscall.null"), "{ktap}");
        assert!(lines.contains(&"not ok 2 syscall.dup _ <&>\"'"), "{ktap}");
        assert!(
            lines.contains(&"ok 3 fs.open_close # SKIP not tested"),
            "{ktap}"
        );
        // The escape sequence of the message is shown, not sent.
        assert!(!ktap.contains('\u{1b}'));
        assert!(ktap.contains("\\x1b[31m"));
    }
}
