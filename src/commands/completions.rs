//! `osmeter completions SHELL [--install]`

use crate::cli::CompletionsArgs;
use crate::shell_files;
use anyhow::Result;

pub fn completions(args: &CompletionsArgs) -> Result<i32> {
    let script = shell_files::completion(args.shell);
    if !args.install {
        crate::console::print_bytes(&script)?;
        return Ok(0);
    }
    let path = shell_files::completion_install_path(args.shell)?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| anyhow::anyhow!("cannot create the directory {}: {e}", dir.display()))?;
    }
    crate::files::write_atomic(&path, &script)?;
    eprintln!(
        "osmeter: wrote {} completions to {}",
        args.shell,
        path.display()
    );
    // The per-user directory is read by the bash-completion package's loader, not by bash itself:
    // without the package the file sits there unread.
    if args.shell == shell_files::Shell::Bash && !shell_files::bash_completion_present() {
        eprintln!(
            "osmeter: bash reads it only with the bash-completion package, which is not \
             installed here: apt-get install bash-completion (then open a new shell)"
        );
    }
    if args.shell == shell_files::Shell::Zsh {
        let dir = path
            .parent()
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        eprintln!(
            "osmeter: zsh reads it once `fpath+=({dir})` comes before `compinit` in ~/.zshrc"
        );
    }
    Ok(0)
}
