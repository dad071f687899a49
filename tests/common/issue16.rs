//! The index of issue 16's hostile cases, shared by tests/hostile.rs and tests/run_signals.rs,
//! and the line each of their tests prints at its end, so that a run of the tests says how many
//! hostile inputs were tried, how many held and which tests could not run here:
//! `cargo test --test hostile --test run_signals -- --nocapture 2>&1 | grep '^issue 16:'`.
#![allow(dead_code)]

/// (issue 16 item, file under the crate root, test function, hostile inputs it tries).
pub const ISSUE_16: &[(u8, &str, &str, u32)] = &[
    (
        1,
        "tests/hostile.rs",
        "scratch_directory_is_private_under_umask_000",
        1,
    ),
    (
        1,
        "tests/hostile.rs",
        "a_link_planted_by_another_user_redirects_nothing",
        1,
    ),
    (
        1,
        "tests/hostile.rs",
        "a_world_writable_dir_without_sticky_bit_is_refused",
        1,
    ),
    (
        1,
        "crates/base/src/scratch/tests.rs",
        "private_whatever_the_umask",
        4,
    ),
    // Five signals, each against four ways out of the shell's process group; chrt and prlimit.
    (
        3,
        "tests/hostile.rs",
        "no_descendant_of_a_load_command_outlives_osmeter_whatever_signal_ends_it",
        5,
    ),
    (
        3,
        "tests/hostile.rs",
        "a_load_command_cannot_take_real_time_priority_or_lift_its_limit",
        2,
    ),
    // Two kinds of damage, each against run and rm; then runs.
    (
        4,
        "tests/hostile.rs",
        "a_damaged_store_is_refused_untouched_and_named",
        5,
    ),
    (
        4,
        "crates/results/src/store/sqlite/tests.rs",
        "a_damaged_store_is_never_written_and_says_what_to_do",
        2,
    ),
    (
        5,
        "tests/memsim.rs",
        "hostile_access_sizes_are_refused_at_their_record_not_simulated",
        2,
    ),
    (
        6,
        "tests/memsim.rs",
        "absurd_sizes_are_usage_errors_naming_the_option_before_anything_is_allocated",
        9,
    ),
    (
        6,
        "tests/hostile.rs",
        "absurd_repeat_counts_are_refused_before_anything_runs",
        2,
    ),
    (
        6,
        "tests/hostile.rs",
        "a_scratch_file_larger_than_the_free_space_is_refused_before_it_is_written",
        1,
    ),
    (
        8,
        "tests/hostile.rs",
        "a_password_with_a_bare_at_sign_is_never_shown",
        1,
    ),
    (
        8,
        "tests/hostile.rs",
        "a_foreign_sqlite_file_is_refused_untouched",
        3,
    ),
    (
        8,
        "tests/hostile.rs",
        "rm_of_an_empty_id_removes_nothing",
        1,
    ),
    (
        8,
        "tests/hostile.rs",
        "push_to_postgres_keeps_each_runs_kind",
        1,
    ),
    (
        8,
        "tests/hostile.rs",
        "a_din_trace_starting_with_a_comment_is_read_as_din",
        1,
    ),
    // Two files (binary, text turning binary), each given to memsim and trace info.
    (
        8,
        "tests/hostile.rs",
        "binary_garbage_never_reaches_the_terminal",
        4,
    ),
    (
        8,
        "tests/hostile.rs",
        "a_user_who_may_only_read_the_store_reads_it_and_is_told_why_saving_fails",
        1,
    ),
    (
        8,
        "tests/hostile.rs",
        "scratch_left_by_a_killed_run_is_removed_by_the_next_one",
        1,
    ),
    (
        8,
        "tests/hostile.rs",
        "ctrl_c_of_trace_leaves_no_valgrind_pipes",
        1,
    ),
    // Found on the way: a store path that SQLite would read as a URI (and keep in memory).
    (
        8,
        "tests/hostile.rs",
        "a_store_path_that_looks_like_a_uri_is_a_plain_file",
        1,
    ),
    (
        2,
        "tests/run_signals.rs",
        "sigint_during_an_endless_warm_up_stops_at_once_and_keeps_the_run",
        1,
    ),
    (
        2,
        "tests/run_signals.rs",
        "sigterm_during_the_overhead_phase_stops_at_once_and_keeps_the_run",
        1,
    ),
    (
        2,
        "tests/run_signals.rs",
        "sigint_while_sampling_keeps_the_samples_taken_marked_as_cut_short",
        1,
    ),
    // Found in the audit: a signal inside a long sample, --min-time without bound, a FIFO worker
    // allowed 17 s of CPU; a damaged store found only after measuring, a directory as store.
    (
        2,
        "tests/run_signals.rs",
        "sigint_inside_a_long_sample_ends_the_run_within_about_a_second",
        1,
    ),
    (
        2,
        "tests/run_signals.rs",
        "min_time_beyond_its_limit_is_a_usage_error",
        2,
    ),
    (
        2,
        "tests/run_signals.rs",
        "a_fifo_worker_never_runs_more_than_a_few_seconds_without_sleeping",
        1,
    ),
    (
        4,
        "tests/hostile.rs",
        "a_damaged_store_is_refused_before_measuring_or_simulating",
        2,
    ),
    (
        8,
        "tests/hostile.rs",
        "a_store_path_that_is_a_directory_is_called_one",
        1,
    ),
    (
        2,
        "tests/run_signals.rs",
        "fifo_run_is_time_limited_and_stops_on_signals",
        2,
    ),
    (
        2,
        "tests/run_signals.rs",
        "a_killed_run_leaves_no_worker_behind",
        1,
    ),
    (
        7,
        "tests/hostile.rs",
        "leftover_trace_instances_are_swept_by_every_root_latency_and_run",
        2,
    ),
    (
        7,
        "tests/tracefs.rs",
        "an_instance_left_by_kill_9_is_removed_by_the_next_run_and_nothing_is_mounted",
        1,
    ),
    (
        8,
        "tests/realtime.rs",
        "root_in_a_cgroup_without_real_time_budget_is_told_so_not_to_become_root",
        1,
    ),
    (
        8,
        "tests/realtime.rs",
        "root_without_cap_sys_nice_is_told_which_capability_is_missing",
        1,
    ),
    (
        8,
        "tests/realtime.rs",
        "a_user_with_a_low_rtprio_limit_is_told_both_numbers",
        1,
    ),
];

/// The number of hostile inputs the index gives `test`.
pub fn count(test: &str) -> u32 {
    ISSUE_16
        .iter()
        .find(|c| c.2 == test)
        .unwrap_or_else(|| panic!("{test} is not in the issue 16 index"))
        .3
}

/// Called by a test of the index once its `tried` hostile inputs all held (every assertion before
/// it passed): the number must be the index's, so the index cannot claim more than is tried.
pub fn held(test: &str, tried: u32) {
    assert_eq!(
        tried,
        count(test),
        "{test} tried {tried} hostile inputs; the issue 16 index says {}",
        count(test)
    );
    eprintln!("issue 16: {test}: {tried} tried, {tried} held");
}

/// Called by a test of the index that cannot run here: it is reported as skipped, never as held.
pub fn skipped(test: &str, why: &str) {
    eprintln!("issue 16: {test}: skipped ({why})");
}
