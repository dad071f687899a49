//! The index of issue 29's hostile cases (the third hardening round), and the line each of their
//! tests prints at its end, so a run says how many hostile inputs were tried and held:
//! `cargo test --test hostile_output --test hostile_stores -- --nocapture 2>&1 | grep '^issue 29:'`.
//!
//! Two lists, one per test file, so the two can grow apart: output paths, text and limits
//! (items 1, 5, 9, 10) in tests/hostile_output.rs; stores, signals and leftovers (items 2, 3, 4, 6,
//! 7, 8) in tests/hostile_stores.rs.
#![allow(dead_code)]

/// (issue 29 item, file under the crate root, test function, hostile inputs it tries).
pub type Case = (u8, &'static str, &'static str, u32);

/// Items 1, 5, 9 and 10.
pub const OUTPUT_CASES: &[Case] = &[
    (
        1,
        "tests/hostile_output.rs",
        "every_writer_leaves_devices_fifos_and_links_as_they_are",
        24,
    ),
    (
        1,
        "tests/hostile_output.rs",
        "a_closed_stdout_or_stderr_ends_quietly",
        14,
    ),
    (
        1,
        "tests/hostile_output.rs",
        "a_writer_stopped_by_a_signal_leaves_no_partial_file",
        4,
    ),
    (
        1,
        "tests/hostile_output.rs",
        "an_output_fifo_nobody_reads_is_given_up_naming_it",
        3,
    ),
    (
        5,
        "tests/hostile_output.rs",
        "stored_control_characters_reach_no_terminal",
        4,
    ),
    (
        9,
        "tests/hostile_output.rs",
        "absurd_counts_and_out_of_range_parameters_are_usage_errors_before_measuring",
        8,
    ),
    (
        9,
        "tests/hostile_output.rs",
        "the_memory_check_sees_a_memory_cgroup",
        2,
    ),
    (
        10,
        "tests/hostile_output.rs",
        "a_store_without_its_schema_version_is_named_and_left_untouched",
        2,
    ),
    (
        10,
        "tests/hostile_output.rs",
        "a_web_dir_the_server_cannot_reach_fails_once_before_measuring",
        1,
    ),
    (
        10,
        "tests/hostile_output.rs",
        "a_synthetic_trace_larger_than_the_disk_is_refused_before_writing",
        2,
    ),
];

/// Items 2, 3, 4, 6, 7 and 8.
pub const STORE_CASES: &[Case] = &[
    (
        3,
        "tests/hostile_stores.rs",
        "every_stopping_signal_ends_a_run_cleanly_and_keeps_it",
        5,
    ),
    (
        3,
        "tests/hostile_stores.rs",
        "the_command_under_stat_dies_with_osmeter",
        2,
    ),
    (
        3,
        "tests/hostile_stores.rs",
        "valgrind_under_trace_dies_with_osmeter",
        2,
    ),
    (
        3,
        "tests/hostile_stores.rs",
        "the_whole_tree_of_the_command_under_stat_dies_with_osmeter",
        5,
    ),
    (
        3,
        "tests/hostile_stores.rs",
        "the_whole_tree_under_trace_dies_with_osmeter",
        2,
    ),
    (
        3,
        "tests/hostile_stores.rs",
        "a_latency_run_and_its_load_end_together_on_any_signal",
        2,
    ),
    (
        3,
        "tests/hostile_stores.rs",
        "the_fuse_server_of_a_run_dies_with_it",
        2,
    ),
    (
        6,
        "tests/hostile_stores.rs",
        "a_store_that_is_not_a_regular_file_is_refused_before_measuring",
        7,
    ),
    (
        8,
        "tests/hostile_stores.rs",
        "leftovers_of_app_web_are_swept",
        2,
    ),
    (
        4,
        "tests/hostile_stores.rs",
        "a_disk_that_fills_up_while_measuring_keeps_the_run_elsewhere",
        1,
    ),
    (
        4,
        "tests/hostile_stores.rs",
        "a_store_remounted_read_only_while_measuring_keeps_the_run_elsewhere",
        1,
    ),
    (
        4,
        "tests/hostile_stores.rs",
        "a_link_planted_beside_the_store_keeps_the_run_elsewhere",
        2,
    ),
    (
        4,
        "tests/hostile_stores.rs",
        "a_store_locked_by_another_process_is_waited_for_boundedly_and_interruptibly",
        3,
    ),
    (
        7,
        "tests/hostile_stores.rs",
        "a_store_other_users_can_reach_is_refused_before_measuring",
        6,
    ),
    (
        7,
        "tests/hostile_stores.rs",
        "a_dir_whose_parents_other_users_can_change_is_refused",
        3,
    ),
    (
        2,
        "tests/hostile_stores.rs",
        "a_locked_postgres_table_is_waited_for_boundedly_and_interruptibly",
        3,
    ),
    (
        3,
        "tests/hostile_stores.rs",
        "a_terminal_that_hangs_up_stops_the_run_and_keeps_it",
        1,
    ),
    (
        3,
        "tests/hostile_stores.rs",
        "sighup_stays_ignored_under_nohup",
        1,
    ),
];

pub fn all() -> impl Iterator<Item = &'static Case> {
    OUTPUT_CASES.iter().chain(STORE_CASES.iter())
}

pub fn count(test: &str) -> u32 {
    all()
        .find(|c| c.2 == test)
        .unwrap_or_else(|| panic!("{test} is not in the issue 29 index"))
        .3
}

/// Called by a test of the index once its `tried` hostile inputs all held: the number must be the
/// index's, so the index cannot claim more than is tried.
pub fn held(test: &str, tried: u32) {
    assert_eq!(
        tried,
        count(test),
        "{test} tried {tried} hostile inputs; the issue 29 index says {}",
        count(test)
    );
    eprintln!("issue 29: {test}: {tried} tried, {tried} held");
}

/// Called by a test of the index that cannot run here: reported as skipped, never as held.
pub fn skipped(test: &str, why: &str) {
    eprintln!("issue 29: {test}: skipped ({why})");
}

/// Every test the index names exists in its file and reports to [`held`] or [`skipped`].
pub fn check_index(root: &std::path::Path, cases: &[Case]) {
    for (item, file, test, _) in cases {
        let text = std::fs::read_to_string(root.join(file)).unwrap();
        let Some(at) = text.find(&format!("fn {test}()")) else {
            panic!("issue 29 item {item}: {file} has no test {test}");
        };
        let body = &text[at..];
        let body = &body[..body.find("\n}\n").unwrap_or(body.len())];
        assert!(
            body.contains("issue29::held(") || body.contains("issue29::skipped("),
            "{file}: {test} does not report to issue29::held"
        );
    }
}
