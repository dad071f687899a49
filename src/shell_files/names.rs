//! Names a completion offers that the clap definition cannot know: the probes, groups and suites
//! of this build, and the ids of the runs in the user's store. The generated scripts ask for them
//! at completion time through the hidden `osmeter complete-names KIND`, and each shell's script
//! gets a few lines of its own that call it where a subcommand takes such a name.

use crate::results::store::{Location, RunFilter};
use clap::ValueEnum;

/// What a positional argument names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum NameKind {
    /// Suites, groups and probe ids (`run`, `ab`, `history`).
    Targets,
    /// Ids of stored runs, newest first (`show`, `rm`, `compare`, `export`, `report`, `push`).
    Runs,
}

/// Subcommands whose positional arguments are targets, and those whose are run ids.
const TARGET_COMMANDS: &[&str] = &["run", "ab", "history"];
const RUN_COMMANDS: &[&str] = &["show", "rm", "compare", "export", "report", "push"];

/// The names of `kind`, one per line. A store that cannot be read gives no run ids: a completion
/// never prints an error into the user's command line.
pub fn names(kind: NameKind) -> Vec<String> {
    match kind {
        NameKind::Targets => {
            let mut out: Vec<String> = crate::probes::SUITES
                .iter()
                .map(|s| s.name.to_string())
                .collect();
            let registry = crate::probes::registry();
            for def in &registry {
                let group = def.group().to_string();
                if !out.contains(&group) {
                    out.push(group);
                }
            }
            out.extend(registry.iter().map(|d| d.id.to_string()));
            out
        }
        NameKind::Runs => Location::resolve(None)
            .and_then(|l| l.open_read_only())
            .and_then(|mut store| store.list(&RunFilter::default()))
            .map(|list| list.into_iter().map(|r| r.id).collect())
            .unwrap_or_default(),
    }
}

/// `osmeter complete-names KIND`: the names, one per line.
pub fn print(kind: NameKind) -> anyhow::Result<i32> {
    let mut text = names(kind).join("\n");
    text.push('\n');
    crate::console::print_bytes(text.as_bytes())?;
    Ok(crate::error::EXIT_OK)
}

/// Lines appended to `shell`'s generated script (which defines `_osmeter`) so that the
/// positional arguments of the subcommands above complete to names.
pub fn dynamic_part(shell: clap_complete::Shell, script: &str) -> String {
    use clap_complete::Shell;
    match shell {
        Shell::Bash => bash(script),
        Shell::Fish => fish(script),
        Shell::Zsh => zsh(script),
        _ => script.to_string(),
    }
}

/// bash: a function that calls clap's, then puts names in place of its answer where a
/// subcommand's positional argument is being completed, registered in its place.
fn bash(script: &str) -> String {
    let targets = TARGET_COMMANDS.join("|");
    let runs = RUN_COMMANDS.join("|");
    let wrapper = format!(
        r#"
# Probe names and run ids, asked of osmeter itself when a positional argument is completed.
_osmeter_with_names() {{
    _osmeter "$@"
    local cur="${{COMP_WORDS[COMP_CWORD]}}" prev="${{COMP_WORDS[COMP_CWORD-1]}}" sub="" kind i
    [[ "$cur" == -* ]] && return 0
    [[ "$prev" == -* && ${{#COMPREPLY[@]}} -gt 0 ]] && return 0
    for ((i = 1; i < COMP_CWORD; i++)); do
        [[ "${{COMP_WORDS[i]}}" == -* ]] || {{ sub="${{COMP_WORDS[i]}}"; break; }}
    done
    case "$sub" in
        {targets}) kind=targets ;;
        {runs}) kind=runs ;;
        *) return 0 ;;
    esac
    COMPREPLY=($(compgen -W "$(osmeter complete-names "$kind" 2>/dev/null)" -- "$cur"))
}}
"#
    );
    // Registered in place of the generated function, with the same options.
    let registered = script.replace("complete -F _osmeter ", "complete -F _osmeter_with_names ");
    // The last test of bash's version is the registration's (the function opens with one).
    match registered.rfind("if [[ \"${BASH_VERSINFO") {
        Some(at) => format!("{}{wrapper}\n{}", &registered[..at], &registered[at..]),
        None => format!("{registered}{wrapper}"),
    }
}

/// fish: one more `complete` line per subcommand, its arguments from `complete-names`.
fn fish(script: &str) -> String {
    let mut out = script.to_string();
    out.push_str("\n# Probe names and run ids, asked of osmeter itself.\n");
    for sub in TARGET_COMMANDS {
        out.push_str(&format!(
            "complete -c osmeter -n \"__fish_osmeter_using_subcommand {sub}\" -f -a \
             \"(osmeter complete-names targets 2>/dev/null)\"\n"
        ));
    }
    for sub in RUN_COMMANDS {
        out.push_str(&format!(
            "complete -c osmeter -n \"__fish_osmeter_using_subcommand {sub}\" -f -a \
             \"(osmeter complete-names runs 2>/dev/null)\"\n"
        ));
    }
    out
}

/// zsh: the positional specs of those subcommands call a function of ours instead of
/// `_default`.
fn zsh(script: &str) -> String {
    let mut out = String::with_capacity(script.len() + 600);
    for line in script.split_inclusive('\n') {
        let spec = line.trim_start();
        let function = if spec.starts_with("'*::targets -- ") {
            Some("_osmeter_targets")
        } else if spec.starts_with("':run -- ") || spec.starts_with("'*::runs -- ") {
            Some("_osmeter_runs")
        } else {
            None
        };
        match function {
            Some(f) => out.push_str(&line.replacen(":_default'", &format!(":{f}'"), 1)),
            None => out.push_str(line),
        }
    }
    let functions = "
_osmeter_targets() {
    local -a names
    names=(${(f)\"$(osmeter complete-names targets 2>/dev/null)\"})
    _describe 'suite, group or probe' names
}
_osmeter_runs() {
    local -a ids
    ids=(${(f)\"$(osmeter complete-names runs 2>/dev/null)\"})
    _describe 'run' ids
}
";
    match out.rfind("if [ \"$funcstack[1]\" = \"_osmeter\" ]") {
        Some(at) => format!("{}{functions}\n{}", &out[..at], &out[at..]),
        None => out + functions,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_hold_suites_groups_and_probes_once_each() {
        let names = names(NameKind::Targets);
        for expected in ["quick", "syscall", "syscall.null", "ipc"] {
            assert!(names.iter().any(|n| n == expected), "{expected}: {names:?}");
        }
        let mut sorted = names.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), names.len(), "a name twice: {names:?}");
    }

    #[test]
    fn each_shell_script_calls_for_names_where_they_go() {
        let script = |shell| String::from_utf8(super::super::completion(shell)).unwrap();
        for shell in [clap_complete::Shell::Fish, clap_complete::Shell::Zsh] {
            let text = script(shell);
            assert!(text.contains("osmeter complete-names targets"), "{shell}");
            assert!(text.contains("osmeter complete-names runs"), "{shell}");
        }
        let bash = script(clap_complete::Shell::Bash);
        assert!(bash.contains("osmeter complete-names \"$kind\""), "{bash}");
        assert!(
            bash.contains("kind=targets") && bash.contains("kind=runs"),
            "{bash}"
        );
        assert!(!bash.contains("complete -F _osmeter "), "{bash}");
        // Defined after clap's function ends, not inside it.
        let end_of_clap = bash.find("\n}\n").unwrap();
        assert!(bash.find("_osmeter_with_names() {").unwrap() > end_of_clap);
        let zsh = script(clap_complete::Shell::Zsh);
        assert!(zsh.contains(":_osmeter_targets'") && zsh.contains(":_osmeter_runs'"));
    }
}
