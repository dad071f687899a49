use super::*;

/// Live (not zombie) processes whose command line holds `marker`.
fn alive_with(marker: &str) -> usize {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| {
            let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
            let zombie = std::fs::read_to_string(e.path().join("stat"))
                .ok()
                .and_then(|s| {
                    s.rsplit_once(')')
                        .map(|(_, r)| r.trim_start().starts_with('Z'))
                })
                .unwrap_or(true);
            !zombie && String::from_utf8_lossy(&cmdline).contains(marker)
        })
        .count()
}

fn run(script: &str) -> (GuardedChild, Ended, u64) {
    let mut child =
        GuardedChild::spawn(&["/bin/sh", "-c", script], Stream::Null, Stream::Null, None).unwrap();
    let start = child.release().unwrap();
    let ended = child.wait(|_| {}).unwrap();
    let wall = nanos_between(start, ended.at);
    (child, ended, wall)
}

#[test]
fn the_status_and_rusage_are_the_programs_own() {
    // About 0.2 s of CPU in a grandchild that its shell reaps: counted, as wait4 counts it.
    let (_child, ended, wall) = run("i=0; (while [ $i -lt 30000 ]; do i=$((i+1)); done); exit 7");
    assert!(libc::WIFEXITED(ended.status));
    assert_eq!(libc::WEXITSTATUS(ended.status), 7);
    let cpu =
        ended.rusage.ru_utime.tv_sec as u64 * 1_000_000 + ended.rusage.ru_utime.tv_usec as u64;
    assert!(cpu > 0, "the subshell's CPU time was counted");
    assert!(wall > 0);
}

#[test]
fn what_the_program_leaves_running_ends_with_it() {
    let marker = format!("{}.{}1", 300, std::process::id());
    let (child, ended, _) = run(&format!("sleep {marker} & exit 0"));
    assert_eq!(libc::WEXITSTATUS(ended.status), 0);
    drop(child);
    assert_eq!(alive_with(&marker), 0);
}

#[test]
fn a_dropped_child_ends_with_its_whole_tree() {
    let marker = format!("{}.{}2", 300, std::process::id());
    let script = format!("sleep {marker} & (setsid sleep {marker} &); sleep {marker}");
    let mut child = GuardedChild::spawn(
        &["/bin/sh", "-c", &script],
        Stream::Null,
        Stream::Null,
        None,
    )
    .unwrap();
    child.release().unwrap();
    for _ in 0..200 {
        if alive_with(&marker) >= 3 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    drop(child);
    assert_eq!(alive_with(&marker), 0);
}

#[test]
fn a_program_that_is_not_found_says_so() {
    let mut child = GuardedChild::spawn(
        &["/nonexistent/osmeter-no-such-program"],
        Stream::Null,
        Stream::Null,
        None,
    )
    .unwrap();
    let err = child.release().unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::NotFound, "{err}");
}
