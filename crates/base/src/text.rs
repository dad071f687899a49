//! Stored strings shown on a terminal. Tags, host names, suites, reasons and commands come from
//! the store, which any host of a fleet may write to: an escape sequence in them would recolour,
//! retitle or rewrite the reader's terminal, a bell would ring, a line feed would forge a table
//! row. Every text output shows them through [`escape_controls`] (one field, one row) or, as a
//! last net over a whole output, [`escape_controls_keep_lines`]. Unicode's bidirectional
//! controls are shown the same way: a right-to-left override in a tag would make a row read
//! differently from what it holds (the "Trojan source" trick).
//!
//! Exports meant for spreadsheets (CSV, and Markdown tables pasted into one) pass every text cell
//! through [`spreadsheet_safe`]: a machine name or reason written by anyone must not become a
//! formula on the reader's desk.

use std::borrow::Cow;
use std::fmt::Write;

/// `text` with every control character (C0, DEL, C1; line feeds and tabs too) and every
/// bidirectional control written as a visible escape: `\n`, `\r`, `\t`, `\x1b`, `\x7f`,
/// `\u{9b}`, `\u{202e}`. Printable text, other languages and backslashes are left as they are.
pub fn escape_controls(text: &str) -> Cow<'_, str> {
    escape(text, |_| false)
}

/// The same, keeping line feeds and tabs: for a whole output whose lines and columns osmeter
/// laid out itself.
pub fn escape_controls_keep_lines(text: &str) -> Cow<'_, str> {
    escape(text, |c| c == '\n' || c == '\t')
}

fn escape(text: &str, keep: impl Fn(char) -> bool) -> Cow<'_, str> {
    let hostile = |c: char| (c.is_control() || is_bidi_control(c)) && !keep(c);
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

/// Bytes from the system (a host name, a file the kernel fills) as text: valid UTF-8 as it is,
/// every byte that is not part of it as `\xNN`, so a name that is not UTF-8 is kept, and told
/// apart from others, instead of being lost.
pub fn from_bytes_escaped(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        out.push_str(chunk.valid());
        for b in chunk.invalid() {
            let _ = write!(out, "\\x{b:02x}");
        }
    }
    out
}

/// The characters that change the direction text is laid out in (embeddings, overrides,
/// isolates and the directional marks), which no stored string needs to show as they act.
pub fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' | '\u{061c}')
}

/// A JSON text with every bidirectional control written as JSON's own escape (`\u202e`): the
/// same document, which a terminal shows as it is.
pub fn escape_bidi_in_json(json: &str) -> Cow<'_, str> {
    if !json.chars().any(is_bidi_control) {
        return Cow::Borrowed(json);
    }
    let mut out = String::with_capacity(json.len() + 8);
    for c in json.chars() {
        if is_bidi_control(c) {
            let _ = write!(out, "\\u{:04x}", c as u32);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// A text cell as a spreadsheet will not run it: one that starts with what makes a formula or a
/// command (`=`, `+`, `-`, `@`, a tab or a carriage return) gets a leading apostrophe, which
/// spreadsheets take as "text" and do not show.
pub fn spreadsheet_safe(cell: &str) -> Cow<'_, str> {
    if cell.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        Cow::Owned(format!("'{cell}"))
    } else {
        Cow::Borrowed(cell)
    }
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
    fn bytes_that_are_not_utf8_are_kept_as_escapes() {
        assert_eq!(from_bytes_escaped(b"a\xffb"), "a\\xffb");
        assert_eq!(from_bytes_escaped("h\u{f6}st".as_bytes()), "h\u{f6}st");
        assert_eq!(from_bytes_escaped(b"\xc3"), "\\xc3");
    }

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
        assert!(!escape_controls(&all)
            .chars()
            .any(|c| c.is_control() || is_bidi_control(c)));
    }

    #[test]
    fn bidirectional_controls_are_shown_escaped() {
        assert_eq!(
            escape_controls("tag=\u{202e}txt.exe\u{202c} \u{2067}x\u{2069}\u{200f}\u{61c}"),
            "tag=\\u{202e}txt.exe\\u{202c} \\u{2067}x\\u{2069}\\u{200f}\\u{61c}"
        );
        // Right-to-left text itself is text.
        assert!(matches!(escape_controls("שלום"), Cow::Borrowed(_)));
        assert_eq!(escape_controls_keep_lines("a\u{202d}b\n"), "a\\u{202d}b\n");
    }

    #[test]
    fn bidirectional_controls_in_json_stay_json() {
        let json = serde_json::to_string(&serde_json::json!({"tag": "a\u{202e}b\u{61c}"})).unwrap();
        let shown = escape_bidi_in_json(&json);
        assert_eq!(shown, r#"{"tag":"a\u202eb\u061c"}"#);
        let back: serde_json::Value = serde_json::from_str(&shown).unwrap();
        assert_eq!(back["tag"], "a\u{202e}b\u{61c}");
    }

    #[test]
    fn cells_a_spreadsheet_would_run_start_with_an_apostrophe() {
        for cell in [
            "=cmd|' /C calc'!A0",
            "+1+1",
            "-2+3",
            "@SUM(A1)",
            "\tx",
            "\r=1",
        ] {
            assert_eq!(spreadsheet_safe(cell), format!("'{cell}"));
        }
        for cell in ["syscall.null", "a=b", "", "'quoted", "1e-3"] {
            assert!(matches!(spreadsheet_safe(cell), Cow::Borrowed(_)), "{cell}");
        }
    }
}
