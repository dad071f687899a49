//! Figures that depend on physical page placement say which pages their buffers had, in the
//! stored run and once under the table.

mod common;

use common::TestEnv;

#[test]
fn memory_copy_says_which_pages_it_had() {
    let env = TestEnv::new();
    let args = [
        "run",
        "memory.copy",
        "--set",
        "size=16384",
        "--rounds",
        "1",
        "--repeat",
        "2",
        "--min-time",
        "2ms",
    ];
    let mut json_args = args.to_vec();
    json_args.push("--json");
    let run = env.json(&json_args);
    let mode =
        std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").unwrap_or_default();
    for m in run["measurements"].as_array().unwrap() {
        let pages = m["pages"]
            .as_str()
            .expect("a memory.copy figure names its pages");
        if mode.contains("[never]") || mode.is_empty() {
            assert_eq!(pages, "base", "THP off: {m}");
        } else {
            assert!(["huge", "mixed", "base"].contains(&pages), "{m}");
        }
    }
    let out = env.osmeter().args(args).output().unwrap();
    // Lines of prose wrap at the terminal's width: read the words, not the lines.
    let text = String::from_utf8_lossy(&out.stdout);
    let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        words.contains("figures that depend on physical placement:")
            && words.contains("compared only with runs that had the same"),
        "{text}"
    );
}
