//! End-to-end tests of `osmeter bisect` and `osmeter guest-check` on packaged kernels: real QEMU
//! (TCG), two Debian cloud kernels of two series whose `syscall.null` differs (fetched once into
//! the tests' cache under target/, some 65 MB), four boots in all. OSMETER_TEST_NO_DOWNLOADS=1
//! skips them; tests/kernel_history.rs holds the cases refused before anything boots.

mod common;

use common::schema_check::{assert_follow_their_schemas, validator};
use common::{which, TestEnv};

/// The last kernel of the 6.1 series and the first of the 6.12 series the archive offers:
/// `syscall.null` takes 2 more kernel instructions in the second.
const GOOD: &str = "linux-image-6.1.0-57-cloud-amd64";
const BAD: &str = "linux-image-6.12.100+deb12-cloud-amd64";

fn possible() -> bool {
    if !common::downloads_allowed() {
        return false;
    }
    if which("qemu-system-x86_64").is_none() || which("busybox").is_none() {
        eprintln!("skipped: needs the Debian packages qemu-system-x86 and busybox-static");
        return false;
    }
    let known = |p: &str| {
        std::process::Command::new("apt-cache")
            .args(["show", "--no-all-versions", p])
            .output()
            .is_ok_and(|o| o.status.success() && !o.stdout.is_empty())
    };
    if !known(GOOD) || !known(BAD) {
        eprintln!("skipped: the archive (apt-cache) offers no {GOOD} or {BAD}");
        return false;
    }
    true
}

/// The number after `label` in `text` (`... = 307`, `...: 309 (`).
fn number_after(text: &str, label: &str) -> f64 {
    let at = text
        .find(label)
        .unwrap_or_else(|| panic!("no {label:?} in {text}"));
    text[at + label.len()..]
        .split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .find(|w| !w.is_empty())
        .unwrap()
        .parse()
        .unwrap()
}

/// A bisection over good, a kernel that cannot be counted (a bzImage header QEMU refuses), and
/// bad: the untestable one is skipped and named, the first bad kernel found; then `guest-check`
/// with `git bisect run`'s exit codes: 0 on the good kernel with its count, 1 on the bad one,
/// 125 on the image that cannot be counted.
#[test]
fn bisect_finds_the_first_bad_kernel_and_guest_check_speaks_git_bisect() {
    if !possible() {
        return;
    }
    let env = TestEnv::new();
    let refused = env.dir.path().join("refused-bzImage");
    let mut image = vec![0u8; 8192];
    image[0x202..0x206].copy_from_slice(b"HdrS");
    std::fs::write(&refused, image).unwrap();
    let refused = refused.to_str().unwrap();
    let common = ["--guest-iterations", "10", "syscall.null"];

    let out = env
        .osmeter()
        .args(["bisect", "--good", GOOD, "--bad", BAD, "--between", refused])
        .args(["--no-split", "--no-store", "--json"])
        .args(common)
        .output()
        .unwrap();
    // With --json the steps go to stderr, beside the progress, and stdout holds the document.
    let text = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{text}");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    if let Some(python) = validator() {
        let docs = vec![("bisect --json".to_string(), doc.clone())];
        assert_follow_their_schemas(&env, python, docs);
    }
    assert_eq!(doc["first_bad"], BAD, "{doc}");
    assert_eq!(doc["last_good"], GOOD, "{doc}");
    assert_eq!(doc["untestable_between"], 1, "{doc}");
    let verdicts: Vec<&str> = doc["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["verdict"].as_str().unwrap())
        .collect();
    assert_eq!(verdicts, ["good", "bad", "untestable"], "{doc}");
    let good = number_after(&text, "kernel.instructions = ");
    let bad = number_after(&text, &format!("bad   {BAD}: "));
    assert!(bad > good, "{text}");
    assert!(
        text.contains(&format!(
            "step 1 (at most 1): {refused}: cannot test, skipped"
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!("First bad kernel: {BAD}"))
            && text.contains(&format!("Last good kernel: {GOOD}"))
            && text.contains("1 kernel(s) between could not be counted"),
        "{text}"
    );

    let check = |kernel: &str, expect: f64| {
        let out = env
            .osmeter()
            .args(["guest-check", "--guest", kernel, "--expect"])
            .arg(expect.to_string())
            .args(common)
            .output()
            .unwrap();
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.code(), all)
    };
    let (code, all) = check(GOOD, good);
    assert_eq!(code, Some(0), "{all}");
    assert!(all.contains(": good"), "{all}");
    let (code, all) = check(BAD, good);
    assert_eq!(code, Some(1), "{all}");
    assert!(all.contains(": bad"), "{all}");
    let (code, all) = check(refused, good);
    assert_eq!(code, Some(125), "{all}");
    assert!(all.contains("cannot test"), "{all}");

    // Over the archive: the kernels of one flavour between the two, listed without booting;
    // two flavours are refused.
    let out = env
        .osmeter()
        .args([
            "bisect",
            "--good",
            GOOD,
            "--bad",
            BAD,
            "--dry-run",
            "syscall.null",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.starts_with("2 kernel(s) from good to bad"), "{text}");
    let out = env
        .osmeter()
        .args([
            "bisect",
            "--good",
            GOOD,
            "--bad",
            "linux-image-6.1.0-57-rt-amd64",
        ])
        .args(["--dry-run", "syscall.null"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("one flavour"), "{err}");
}
