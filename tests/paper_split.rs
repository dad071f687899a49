//! `paper chen96`'s user/kernel split per operation, end to end: from the hardware counters where
//! the machine has them, from the profile (`--profile`) where it has not, each row naming its
//! source, and a clear reason where there is neither.

mod common;

use common::{is_root, TestEnv, FAST};
use osmeter::papers::split::SplitSource;
use osmeter::papers::view::PaperDoc;

const EXEC: [&str; 2] = [
    "process.exec link=static method=vfork",
    "process.exec link=dynamic method=vfork",
];

fn paper(env: &TestEnv, extra: &[&str]) -> (PaperDoc, String) {
    let mut args = vec!["paper", "chen96", "--table", "4.3", "--quick"];
    args.extend_from_slice(extra);
    args.extend_from_slice(FAST);
    let mut json = args.clone();
    json.push("--json");
    let out = env.osmeter().args(&json).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: PaperDoc = serde_json::from_slice(&out.stdout).expect("a paper document");
    // The text of the same runs, read back from the store.
    let mut text = vec!["paper", "chen96", "--table", "4.3"];
    for id in &doc.runs {
        text.extend(["--run", id.as_str()]);
    }
    let out = env.osmeter().args(&text).output().unwrap();
    assert!(out.status.success());
    (doc, String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn chen96_splits_each_operation_from_counters_or_else_from_the_profile() {
    if !is_root() {
        eprintln!("skipped: kernel call chains need root here");
        return;
    }
    let env = TestEnv::new();
    let (doc, text) = paper(&env, &["--profile"]);
    assert!(text.contains("Per operation, user and kernel"), "{text}");
    for figure in EXEC {
        let row = doc
            .mode_split
            .iter()
            .find(|r| r.figure == figure)
            .unwrap_or_else(|| panic!("no split of {figure}: {:?}", doc.mode_split));
        let (user, kernel) = (row.user.unwrap(), row.kernel.unwrap());
        assert!(user > 0.0 && kernel > 0.0, "{row:?}");
        match row.source {
            Some(SplitSource::Counters) => assert!(row.detail.contains("hardware counter")),
            Some(SplitSource::Profile) => {
                assert_eq!(row.unit.as_deref(), Some("ns of CPU"));
                assert!(row.detail.starts_with("profile: "), "{row:?}");
                assert!(text.contains(&format!("[{}]", row.detail)), "{text}");
            }
            None => panic!("{figure} has no split: {}", row.detail),
        }
    }
}

#[test]
fn without_counters_or_a_profile_the_split_says_how_to_get_one() {
    let env = TestEnv::new();
    let (doc, text) = paper(&env, &[]);
    for figure in EXEC {
        let row = doc.mode_split.iter().find(|r| r.figure == figure).unwrap();
        match row.source {
            // A machine with a PMU splits from its counters and needs no profile.
            Some(SplitSource::Counters) => {}
            other => {
                assert_eq!(other, None, "{row:?}");
                assert!(row.detail.contains("--profile"), "{row:?}");
                assert!(
                    text.lines()
                        .any(|l| l.contains(figure) && l.contains("no split: ")),
                    "{text}"
                );
            }
        }
    }
}
