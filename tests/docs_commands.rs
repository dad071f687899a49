//! Every osmeter command line the README and docs/ quote is one osmeter's parser accepts: the lines
//! of fenced blocks (`$ osmeter ...` and bare `osmeter ...`) and the code spans of the prose that
//! hold a complete command (no placeholder such as RUN or `[...]` in them). A renamed flag or
//! subcommand then fails here instead of in a reader's terminal.

use clap::Parser;
use osmeter::cli::Cli;
use std::path::{Path, PathBuf};

/// A command line found in a document, with where it was found.
struct Quoted {
    place: String,
    line: String,
    /// A code span in prose, which may name a command without all it needs (`osmeter memsim`,
    /// `osmeter latency --load`); a fenced line is a whole command.
    in_prose: bool,
}

fn documents() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![root.join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/ exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    files
}

/// Command lines of fenced blocks, and complete commands in code spans of the prose.
fn quoted_commands(path: &Path) -> Vec<Quoted> {
    let text = std::fs::read_to_string(path).unwrap();
    let name = path.file_name().unwrap().to_string_lossy().to_string();
    let mut found = Vec::new();
    let mut fenced = false;
    for (n, line) in text.lines().enumerate() {
        let place = format!("{name}:{}", n + 1);
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            let line = line.trim_start();
            let command = line.strip_prefix("$ ").unwrap_or(line);
            // `osmeter stat: ...` is output that names itself, not a command.
            let output = command.split(' ').nth(1).is_some_and(|w| w.ends_with(':'));
            if command.starts_with("osmeter ") && !output {
                found.push(Quoted {
                    place,
                    line: command.to_string(),
                    in_prose: false,
                });
            }
            continue;
        }
        for span in line.split('`').skip(1).step_by(2) {
            if span.starts_with("osmeter ") && is_complete(span) {
                found.push(Quoted {
                    place: place.clone(),
                    line: span.to_string(),
                    in_prose: true,
                });
            }
        }
    }
    found
}

/// A code span is a complete command when it holds no placeholder: no word in capitals (RUN, N,
/// FILE), no `[...]`, no `...` and no alternatives written `a|b`.
fn is_complete(span: &str) -> bool {
    !span.contains('[')
        && !span.contains("...")
        && !span.contains('|')
        && !span
            .split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
            .any(|word| {
                !word.is_empty()
                    && word.chars().any(|c| c.is_ascii_uppercase())
                    && word
                        .chars()
                        .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
            })
}

/// Shell words of a command line, up to the first pipe, redirection, `;`, `&&` or comment.
fn shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                for q in chars.by_ref() {
                    if q == '\'' {
                        break;
                    }
                    word.push(q);
                }
            }
            '"' => {
                in_word = true;
                while let Some(q) = chars.next() {
                    match q {
                        '"' => break,
                        '\\' => word.extend(chars.next()),
                        _ => word.push(q),
                    }
                }
            }
            '\\' => {
                in_word = true;
                word.extend(chars.next());
            }
            ' ' | '\t' => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '|' | '>' | '<' | ';' | '&' | '#' if !in_word || c != '#' => {
                // A redirection such as `2>&1` starts with digits that are not an argument.
                if c == '>' && word.chars().all(|d| d.is_ascii_digit()) {
                    word.clear();
                    in_word = false;
                }
                break;
            }
            _ => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

#[test]
fn the_splitter_reads_quotes_and_stops_at_pipes_and_redirections() {
    assert_eq!(
        shell_words("osmeter stat -- sh -c 'ls / > x' 2>&1 | head -1"),
        ["osmeter", "stat", "--", "sh", "-c", "ls / > x"]
    );
    assert_eq!(
        shell_words(r#"osmeter run --tag "kernel=6.6 rt" # note"#),
        ["osmeter", "run", "--tag", "kernel=6.6 rt"]
    );
    assert!(is_complete("osmeter run syscall --rounds 5"));
    assert!(!is_complete("osmeter show RUN"));
    assert!(!is_complete("osmeter run [SUITE]"));
    assert!(!is_complete("osmeter export --format json|csv"));
}

#[test]
fn a_renamed_flag_would_be_caught() {
    let bad = Cli::try_parse_from(shell_words("osmeter run --no-such-flag"));
    assert!(bad.is_err(), "the parser must refuse an unknown flag");
}

#[test]
fn every_command_the_documents_quote_parses() {
    let mut checked = 0;
    let mut refused = Vec::new();
    for path in documents() {
        for quoted in quoted_commands(&path) {
            let words = shell_words(&quoted.line);
            checked += 1;
            if let Err(err) = Cli::try_parse_from(&words) {
                use clap::error::ErrorKind::{
                    DisplayHelp, DisplayVersion, InvalidValue, MissingRequiredArgument,
                };
                let ends_in_flag = words.last().is_some_and(|w| w.starts_with("--"));
                let a_mention = quoted.in_prose
                    && (err.kind() == MissingRequiredArgument
                        || (err.kind() == InvalidValue && ends_in_flag));
                if !a_mention && !matches!(err.kind(), DisplayHelp | DisplayVersion) {
                    let first = err.to_string();
                    let first = first.lines().next().unwrap_or_default().to_string();
                    refused.push(format!("{}: `{}`: {first}", quoted.place, quoted.line));
                }
            }
        }
    }
    assert!(
        checked > 30,
        "only {checked} commands found in README.md and docs/: is the extraction broken?"
    );
    assert!(
        refused.is_empty(),
        "{} of {checked} quoted commands do not parse:\n{}",
        refused.len(),
        refused.join("\n")
    );
}

/// Every fenced block that shows a `$ ` command is either rerun by scripts/docs-examples (an
/// `example` marker right above it) or says why it is not (a `static` marker), so an output that
/// could drift from the build is never there by oversight.
#[test]
fn every_shown_output_is_rerun_or_says_why_not() {
    let mut bare = Vec::new();
    for path in documents() {
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let mut i = 0;
        while i < lines.len() {
            if !lines[i].trim_start().starts_with("```") {
                i += 1;
                continue;
            }
            let end = (i + 1..lines.len())
                .find(|&j| lines[j].trim_start().starts_with("```"))
                .unwrap_or(lines.len());
            let shows_a_command = lines[i + 1..end].iter().any(|l| l.starts_with("$ "));
            let above = if i > 0 { lines[i - 1] } else { "" };
            let marked = above.starts_with("<!-- example") || above.starts_with("<!-- static: ");
            if shows_a_command && !marked {
                bare.push(format!("{name}:{}: {}", i + 1, lines[i + 1]));
            }
            i = end + 1;
        }
    }
    assert!(
        bare.is_empty(),
        "blocks with neither an example nor a static marker above them:\n{}",
        bare.join("\n")
    );
}

/// The README is the front door: what osmeter answers, the two first commands, one example per
/// command and the exit codes; everything else belongs to a page of docs/ that it links.
#[test]
fn the_readme_stays_a_front_door_under_250_lines() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(
        lines < 250,
        "README.md has {lines} lines: move detail into docs/ and link it"
    );
    // Every page of docs/ is linked from the README's table, so nothing moved there is lost.
    for doc in documents().iter().skip(1) {
        let name = doc.file_name().unwrap().to_string_lossy();
        assert!(
            readme.contains(&format!("(docs/{name})")),
            "docs/{name} is not linked from the README"
        );
    }
}
