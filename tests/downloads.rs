//! What `cargo test` fetches from the network and where it keeps it is what README.md says
//! (issue 43 item 12: the tests once fetched 929 MB of kernel packages into ~/.cache/osmeter
//! without a word): the kernel packages the guest tests boot are the two the README names, the
//! cache every test's osmeter uses is the directory it names under target/ (under
//! $CARGO_TARGET_DIR where that is set), and the variable it names skips those tests.

mod common;

use common::TestEnv;
use std::path::Path;

fn source(path: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(path)).unwrap()
}

/// Every `linux-image-...` package name quoted in `text`.
fn packages_named(text: &str) -> Vec<String> {
    let mut found: Vec<String> = text
        .match_indices("linux-image-")
        .map(|(at, _)| {
            text[at..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '+'))
                .collect::<String>()
                .trim_end_matches(['.', '-'])
                .to_string()
        })
        // The prefix alone (`starts_with("linux-image-")`) names no package.
        .filter(|name| name.len() > "linux-image-".len())
        .collect();
    found.sort();
    found.dedup();
    found
}

#[test]
fn the_kernels_the_tests_fetch_are_the_ones_the_readme_names() {
    let readme = source("README.md");
    let front = &readme[..readme.find("## One example per command").unwrap()];
    let named = packages_named(front);
    assert_eq!(
        named,
        ["linux-image-cloud-amd64", "linux-image-rt-amd64"],
        "{front}"
    );
    // Every package a test boots is one of them (a name apt does not know fetches nothing).
    for test in ["tests/guest.rs", "tests/system.rs"] {
        for package in packages_named(&source(test)) {
            assert!(
                named.contains(&package) || package == "linux-image-no-such-kernel-9",
                "{test} boots {package}, which README.md does not say `cargo test` fetches"
            );
        }
    }
    // trace --system and run --guest boot the cloud kernel unless told otherwise.
    assert!(source("src/capture/system/kernel.rs")
        .contains("pub const DEFAULT_PACKAGE: &str = \"linux-image-cloud-amd64\";"));
    assert!(front.contains(common::NO_DOWNLOADS), "{front}");
}

#[test]
fn the_tests_cache_is_where_the_readme_says() {
    let readme = source("README.md");
    assert!(readme.contains("`target/tmp/osmeter-cache`"));
    let cache = common::test_cache();
    // Cargo's directory for the integration tests' files: target/tmp (or $CARGO_TARGET_DIR/tmp).
    let target_tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    assert_eq!(cache, target_tmp.join("osmeter-cache"));
    assert_eq!(target_tmp.file_name().unwrap(), "tmp");
    if std::env::var_os("CARGO_TARGET_DIR").is_none() {
        assert_eq!(
            target_tmp,
            Path::new(env!("CARGO_MANIFEST_DIR")).join("target/tmp")
        );
    }
    // The osmeter every test starts finds its cache there: the programs it starts see the
    // variable it was given (`stat --show-output` puts the command's output on stderr).
    let env = TestEnv::new();
    let out = env
        .osmeter()
        .args(["stat", "-r", "1", "--no-store", "--show-output", "--"])
        .args(["sh", "-c", "printf 'cache=%s\\n' \"$OSMETER_CACHE\""])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains(&format!("cache={}\n", cache.display())),
        "{err}"
    );
}
