//! Stored strings shown on a terminal. Tags, host names, suites, reasons and commands come from
//! the store, which any host of a fleet may write to: an escape sequence in them would recolour,
//! retitle or rewrite the reader's terminal, a bell would ring, a line feed would forge a table
//! row. Every text output shows them through [`escape_controls`] (one field, one row) or, as a
//! last net over a whole output, [`escape_controls_keep_lines`].

use std::borrow::Cow;
use std::fmt::Write;

/// `text` with every control character (C0, DEL, C1; line feeds and tabs too) written as a
/// visible escape: `\n`, `\r`, `\t`, `\x1b`, `\x7f`, `\u{9b}`. Printable text, other languages
/// and backslashes are left as they are.
pub fn escape_controls(text: &str) -> Cow<'_, str> {
    escape(text, |_| false)
}

/// The same, keeping line feeds and tabs: for a whole output whose lines and columns osmeter
/// laid out itself.
pub fn escape_controls_keep_lines(text: &str) -> Cow<'_, str> {
    escape(text, |c| c == '\n' || c == '\t')
}

fn escape(text: &str, keep: impl Fn(char) -> bool) -> Cow<'_, str> {
    let hostile = |c: char| c.is_control() && !keep(c);
    if !text.chars().any(hostile) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            c if !hostile(c) => out.push(c),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x80 => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
        }
    }
    Cow::Owned(out)
}

/// The command line as a user would type it, for messages.
pub fn command_line(argv: &[String]) -> String {
    argv.iter()
        .map(|a| {
            let plain = !a.is_empty()
                && a.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c));
            if plain {
                a.clone()
            } else {
                // Quoted for a shell, and control characters shown escaped: a stored command is
                // printed in tables, and a line feed in it would start a new row.
                let quoted = format!("'{}'", a.replace('\'', r"'\''"));
                escape_controls(&quoted).into_owned()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_control_character_is_shown_and_nothing_else_changes() {
        assert_eq!(
            escape_controls("a\x1b[31mred\x07\nfake row\r\t\x7f\u{9b}2J"),
            "a\\x1b[31mred\\x07\\nfake row\\r\\t\\x7f\\u{9b}2J"
        );
        assert!(matches!(
            escape_controls("Grüße, 東京 \\ ok"),
            Cow::Borrowed("Grüße, 東京 \\ ok")
        ));
        assert_eq!(
            escape_controls_keep_lines("row 1\tx\nrow\x1b]0;title\x07 2\n"),
            "row 1\tx\nrow\\x1b]0;title\\x07 2\n"
        );
        let all: String = (0u32..0x110000).filter_map(char::from_u32).collect();
        assert!(!escape_controls(&all).chars().any(char::is_control));
    }
}
