//! End-to-end tests of `osmeter history --kernels` on made-up guest runs saved into a test store
//! (no guest boots: the counts are chosen), and of the bad input of `bisect` and `guest-check`
//! that is refused before anything boots. tests/guest.rs boots real kernels for both.

mod common;

use common::schema_check::{assert_follow_their_schemas, validator};
use common::TestEnv;
use osmeter::results::document::Sections;
use osmeter::results::guest::{GuestDoc, KernelParts};
use osmeter::results::model::Run;
use osmeter::results::store::{sqlite::SqliteStore, Store};

fn guest(id: &str, day: u32, release: &str, kernel_ins: f64, split: &[(&str, f64)]) -> Run {
    let mut doc: GuestDoc =
        osmeter_results::fixtures::guest_doc(&format!("linux-image-{release}"), kernel_ins);
    doc.release = Some(release.into());
    if !split.is_empty() {
        doc.probes[0].kernel_parts = Some(KernelParts {
            categories: Default::default(),
            functions: split.iter().map(|(f, v)| (f.to_string(), *v)).collect(),
        });
    }
    Run {
        tool_version: "test".into(),
        sections: Sections::of(doc),
        ..Run::new(id.into(), format!("2026-12-{day:02}T00:00:00Z"))
    }
}

/// Four cloud kernels stored out of order (one change, 6.1.0-10 -> 6.12.100, split by function)
/// and an RT kernel, a series of its own.
fn store(env: &TestEnv) {
    let mut s = SqliteStore::open(&env.store()).unwrap();
    for r in [
        guest(
            "c3",
            3,
            "6.12.100+deb12-cloud-amd64",
            309.0,
            &[("x64_sys_getppid", 12.0), ("entry", 297.0)],
        ),
        guest("c1", 1, "6.1.0-9-cloud-amd64", 307.0, &[]),
        guest(
            "c2",
            2,
            "6.1.0-10-cloud-amd64",
            307.0,
            &[("x64_sys_getppid", 10.0), ("entry", 297.0)],
        ),
        guest("c4", 4, "6.12.101+deb12-cloud-amd64", 309.0, &[]),
        guest("r1", 5, "6.1.0-9-rt-amd64", 330.0, &[]),
    ] {
        s.save(&r).unwrap();
    }
}

#[test]
fn the_timeline_orders_kernels_by_version_and_splits_change_points() {
    let env = TestEnv::new();
    store(&env);
    let out = env
        .osmeter()
        .args(["--wide", "history", "--kernels", "syscall"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("Kernel timeline: cloud-amd64, no parameters"),
        "{text}"
    );
    assert!(text.contains("Kernel timeline: rt-amd64"), "{text}");
    let order: Vec<usize> = [
        "6.1.0-9 ",
        "6.1.0-10 ",
        "6.12.100+deb12 ",
        "6.12.101+deb12 ",
    ]
    .iter()
    .map(|v| text.find(v).unwrap_or_else(|| panic!("{v} in {text}")))
    .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{text}");
    assert!(
        text.contains(
            "6.1.0-10 -> 6.12.100+deb12: syscall.null +2 kernel instructions (+0.7 % of 307)"
        ),
        "{text}"
    );
    assert!(text.contains("+2 in x64_sys_getppid (10 -> 12)"), "{text}");

    let json = env.json(&["history", "--kernels", "--json"]);
    assert!(
        json["$schema"]
            .as_str()
            .unwrap()
            .contains("kernel-timeline"),
        "{json}"
    );
    if let Some(python) = validator() {
        let docs = vec![("history --kernels --json".to_string(), json.clone())];
        assert_follow_their_schemas(&env, python, docs);
    }
    assert_eq!(json["series"].as_array().unwrap().len(), 2, "{json}");
    assert_eq!(
        json["series"][0]["change_points"][0]["after"], 309.0,
        "{json}"
    );

    let out = env
        .osmeter()
        .args(["history", "--kernels", "--csv"])
        .output()
        .unwrap();
    let csv = String::from_utf8_lossy(&out.stdout);
    assert!(
        csv.starts_with("flavour,append,cpu,build,iterations,version,kernel,point,"),
        "{csv}"
    );
    assert_eq!(csv.lines().count(), 1 + 5, "{csv}");
}

/// Exit 2 with what is wrong and what to do, for every mistake `history --kernels` can see.
#[test]
fn bad_timeline_requests_are_usage_errors() {
    let env = TestEnv::new();
    let refused = |args: &[&str], says: &str| {
        let out = env.osmeter().args(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    };
    refused(&["history", "--kernels"], "holds no guest run");
    store(&env);
    refused(
        &["history", "--kernels", "syscall.nul"],
        "did you mean syscall.null",
    );
    refused(&["history"], "needs a FIGURE");
    refused(&["history", "a", "b"], "takes one FIGURE");
    refused(
        &["history", "--kernels", "--csv", "--json"],
        "cannot be used with",
    );
    refused(
        &["history", "--kernels", "--fail-if-slower", "5"],
        "cannot be used with",
    );
    refused(&["history", "--csv", "syscall.null"], "--kernels");
}

/// `bisect` and `guest-check` refuse what they can before booting: bisect's usage errors exit 2;
/// guest-check's exit 255 (which stops `git bisect run`), and a kernel image that is missing or
/// no kernel is "cannot test", 125 (a build that made no image).
#[test]
fn bisect_and_guest_check_refuse_bad_input_before_booting() {
    let env = TestEnv::new();
    let run = |args: &[&str]| {
        let out = env.osmeter().args(args).output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    let (code, err, _) = run(&["bisect", "--good", "a", "--bad", "b", "syscall.nul"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("did you mean syscall.null"), "{err}");
    let (code, err, _) = run(&["bisect", "--good", "./a", "--bad", "./b", "syscall.null"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--between"), "{err}");
    for (flag, value) in [("--min-change", "150"), ("--figure", "kernel.cycles")] {
        let (code, err, _) = run(&[
            "bisect",
            "--good",
            "a",
            "--bad",
            "b",
            flag,
            value,
            "syscall.null",
        ]);
        assert_eq!(code, Some(2), "{flag} {value}: {err}");
    }
    let (code, err, out) = run(&[
        "bisect",
        "--good",
        "./g",
        "--between",
        "./m1",
        "--between",
        "./m2",
        "--bad",
        "./b",
        "--dry-run",
        "--min-change",
        "1%",
        "syscall.null",
    ]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.starts_with("4 kernel(s) from good to bad; the ends and at most 2 between"),
        "{out}"
    );

    let (code, err, _) = run(&[
        "guest-check",
        "--guest",
        "./no-such-bzImage",
        "--expect",
        "307",
        "syscall.nul",
    ]);
    assert_eq!(code, Some(255), "{err}");
    assert!(
        err.contains("did you mean syscall.null") && err.contains("git bisect run"),
        "{err}"
    );
    let (code, err, _) = run(&[
        "guest-check",
        "--guest",
        "./no-such-bzImage",
        "--expect",
        "307",
        "syscall.null",
    ]);
    assert_eq!(code, Some(125), "{err}");
    assert!(err.contains("cannot test ./no-such-bzImage"), "{err}");
    let (code, err, out) = run(&[
        "guest-check",
        "--guest",
        "./no-such-bzImage",
        "--expect",
        "307",
        "--json",
        "syscall.null",
    ]);
    assert_eq!(code, Some(125), "{err}");
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc["verdict"], "untestable", "{doc}");
    assert!(
        doc["$schema"].as_str().unwrap().contains("guest-check"),
        "{doc}"
    );
    if let Some(python) = validator() {
        let docs = vec![("guest-check --json".to_string(), doc.clone())];
        assert_follow_their_schemas(&env, python, docs);
    }
    let (code, err, out) = run(&[
        "bisect",
        "--good",
        "./g",
        "--between",
        "./m",
        "--bad",
        "./b",
        "--dry-run",
        "--json",
        "syscall.null",
    ]);
    assert_eq!(code, Some(0), "{err}");
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc["kernels"].as_array().unwrap().len(), 3, "{doc}");
    if let Some(python) = validator() {
        let docs = vec![("bisect --dry-run --json".to_string(), doc.clone())];
        assert_follow_their_schemas(&env, python, docs);
    }
    assert!(err.contains("3 kernel(s) from good to bad"), "{err}");
    let (code, err, _) = run(&[
        "guest-check",
        "--guest",
        "./x",
        "--expect",
        "-1",
        "syscall.null",
    ]);
    assert_eq!(code, Some(2), "{err}");
}
