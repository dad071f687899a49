//! A gate as JUnit XML: one `<testsuite>` inside `<testsuites>`, one `<testcase>` per case
//! (`classname` the figure's group, `name` the figure), a failed case carrying `<failure>` with
//! the verdict, a skipped one `<skipped>`, a gate that could not judge `<error>`, and every case
//! its verdict line in `<system-out>`. Text from the store is escaped twice over: controls made
//! visible (XML 1.0 cannot hold most of them at all), then XML's own five characters.

use super::{Gate, Outcome};
use std::fmt::Write;

pub fn render(gate: &Gate) -> String {
    let (failures, skipped, errors) = (
        gate.count(Outcome::Failed),
        gate.count(Outcome::Skipped),
        gate.count(Outcome::Error),
    );
    let tests = gate.cases.len();
    let name = escape(&gate.name);
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"{name}\" tests=\"{tests}\" failures=\"{failures}\" \
         errors=\"{errors}\" skipped=\"{skipped}\">"
    );
    let _ = writeln!(
        out,
        "  <testsuite name=\"{name}\" tests=\"{tests}\" failures=\"{failures}\" \
         errors=\"{errors}\" skipped=\"{skipped}\">"
    );
    for case in &gate.cases {
        let message = escape(&case.message);
        let _ = writeln!(
            out,
            "    <testcase classname=\"osmeter.{}\" name=\"{}\">",
            escape(&case.group),
            escape(&case.name)
        );
        match case.outcome {
            Outcome::Passed => {}
            Outcome::Failed => {
                let _ = writeln!(
                    out,
                    "      <failure message=\"{message}\" type=\"{}\">{message}</failure>",
                    gate.failure
                );
            }
            Outcome::Skipped => {
                let _ = writeln!(out, "      <skipped message=\"{message}\"/>");
            }
            Outcome::Error => {
                let _ = writeln!(
                    out,
                    "      <error message=\"{message}\" type=\"not judged\">{message}</error>"
                );
            }
        }
        let _ = writeln!(out, "      <system-out>{message}</system-out>");
        out.push_str("    </testcase>\n");
    }
    out.push_str("  </testsuite>\n</testsuites>\n");
    out
}

/// Text fit for an XML attribute or element: controls made visible (XML 1.0 cannot hold most of
/// them, nor the two noncharacters U+FFFE and U+FFFF), then the markup characters as the report's
/// HTML escapes them, which XML reads alike.
fn escape(text: &str) -> String {
    let visible = crate::text::escape_controls(text)
        .replace('\u{fffe}', "\\u{fffe}")
        .replace('\u{ffff}', "\\u{ffff}");
    crate::results::report::html::esc(&visible)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_outcomes_are_in_the_suite_and_its_cases() {
        let xml = render(&super::super::sample());
        assert!(
            xml.contains("tests=\"3\" failures=\"1\" errors=\"0\" skipped=\"1\""),
            "{xml}"
        );
        assert_eq!(xml.matches("<testcase ").count(), 3);
        assert_eq!(xml.matches("<failure ").count(), 1);
        assert_eq!(xml.matches("<skipped ").count(), 1);
        assert!(xml.contains("classname=\"osmeter.syscall\" name=\"syscall.null\""));
    }

    #[test]
    fn markup_and_controls_from_the_store_cannot_break_the_document() {
        let xml = render(&super::super::sample());
        assert!(
            xml.contains("syscall.dup # &lt;&amp;&gt;&quot;&#39;"),
            "{xml}"
        );
        assert!(xml.contains("&lt;script&gt;\\x1b[31m"), "{xml}");
        assert!(!xml.contains('\u{1b}'));
        assert!(!xml.contains("<script>"));
        assert_eq!(escape("a\u{ffff}b\u{fffe}"), "a\\u{ffff}b\\u{fffe}");
    }
}
