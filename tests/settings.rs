//! The kernel's tunables kept with every run (issue 43 item 7): `info` shows them, `compare`
//! lists a changed one first and says when osmeter's own set-up keeps it from the figures, and
//! `--system-aslr` measures what address-space randomisation would otherwise not reach.

mod common;

use common::{is_root, TestEnv, FAST};
use predicates::prelude::*;

const ASLR: &str = "/proc/sys/kernel/randomize_va_space";

/// One test of this file changes kernel.randomize_va_space for a moment; the others read it, so
/// they take turns (tests of one file run on parallel threads).
static ASLR_TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn aslr_turn() -> std::sync::MutexGuard<'static, ()> {
    ASLR_TURN
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[test]
fn info_shows_the_settings_a_run_keeps() {
    let _turn = aslr_turn();
    let env = TestEnv::new();
    let now = std::fs::read_to_string(ASLR).unwrap();
    env.osmeter()
        .arg("info")
        .assert()
        .success()
        .stdout(predicate::str::contains("Settings (kernel tunables"))
        .stdout(
            predicate::str::is_match(format!(r"kernel\.randomize_va_space:\s+{}", now.trim()))
                .unwrap(),
        );
}

/// Puts a kernel setting back when dropped, whatever ends the test.
struct PutBack {
    path: &'static str,
    was: String,
}

impl Drop for PutBack {
    fn drop(&mut self) {
        let _ = std::fs::write(self.path, &self.was);
    }
}

#[test]
fn a_changed_setting_comes_first_and_one_osmeter_hides_is_named_with_the_way_to_see_it() {
    if !is_root() {
        eprintln!("skipped: writing kernel.randomize_va_space needs root");
        return;
    }
    let _turn = aslr_turn();
    let env = TestEnv::new();
    let was = std::fs::read_to_string(ASLR).unwrap();
    let _guard = PutBack {
        path: ASLR,
        was: was.clone(),
    };
    let other = if was.trim() == "0" { "2" } else { "0" };
    let a = env.run_id(&["syscall.null"]);
    std::fs::write(ASLR, other).unwrap();
    let b = env.run_id(&["syscall.null"]);
    std::fs::write(ASLR, &was).unwrap();

    let out = env
        .osmeter()
        .args(["compare", &a, &b, "--no-history", "--force"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let block: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("System differences"))
        .skip(1)
        .collect();
    assert!(
        block.first().is_some_and(|l| l.trim().starts_with(&format!(
            "settings.kernel.randomize_va_space: {} -> {other}",
            was.trim()
        ))),
        "the changed setting is the first difference:\n{text}"
    );
    let note = block[1..]
        .iter()
        .take_while(|l| l.starts_with("    "))
        .map(|l| l.trim())
        .collect::<Vec<_>>()
        .join(" ");
    assert!(note.contains("cannot see it whole"), "{text}");
    assert!(note.contains("process.fork_exit"), "{text}");
    assert!(note.contains("--system-aslr"), "{text}");

    let json = env.json(&["compare", &a, &b, "--no-history", "--force", "--json"]);
    assert_eq!(
        json["setting_blind_spots"][0][0], "kernel.randomize_va_space",
        "{json:#}"
    );
    assert_eq!(std::fs::read_to_string(ASLR).unwrap(), was, "put back");
}

#[test]
fn system_aslr_starts_the_fork_workers_with_randomisation_and_the_run_says_so() {
    let _turn = aslr_turn();
    let env = TestEnv::new();
    let layout = |extra: &[&str]| {
        let run = env.json(
            &[
                &["run", "process.fork_exit", "--json", "--no-store"],
                FAST,
                extra,
            ]
            .concat(),
        );
        let warnings = run["measurements"][0]["warnings"].to_string();
        (warnings, run["options"]["system_aslr"].as_bool())
    };
    let (fixed, flag) = layout(&[]);
    assert!(
        fixed.contains("without address-space randomisation"),
        "{fixed}"
    );
    assert_eq!(flag, None, "not written when off");
    let (system, flag) = layout(&["--system-aslr"]);
    if std::fs::read_to_string(ASLR).unwrap().trim() == "0" {
        assert!(system.contains("randomize_va_space is 0"), "{system}");
    } else {
        assert!(
            system.contains("with address-space randomisation"),
            "{system}"
        );
    }
    assert_eq!(flag, Some(true));
}
