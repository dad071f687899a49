use super::*;

fn mode(p: &Path) -> u32 {
    std::fs::symlink_metadata(p).unwrap().mode() & 0o7777
}

#[test]
fn scratch_is_private_marked_and_removed_on_drop() {
    let parent = tempfile::tempdir().unwrap();
    let s = ScratchDir::create(parent.path(), "test").unwrap();
    let path = s.path().to_path_buf();
    assert!(path
        .file_name()
        .unwrap()
        .to_string_lossy()
        .starts_with("osmeter-test-"));
    assert_eq!(mode(&path), 0o700);
    let marker = std::fs::read_to_string(path.join(MARKER)).unwrap();
    assert_eq!(marker, format!("pid {}\n", std::process::id()));
    // Alive: a sweep leaves it alone.
    assert!(sweep(parent.path()).is_empty());
    assert!(path.exists());
    drop(s);
    assert!(!path.exists());
}

fn age(dir: &Path) {
    let old = std::time::SystemTime::now() - SETUP_GRACE * 2;
    File::open(dir).unwrap().set_modified(old).unwrap();
}

#[test]
fn directories_never_marked_are_swept_once_old() {
    let parent = tempfile::tempdir().unwrap();
    let p = parent.path();
    let private = |name: &str| {
        let d = p.join(name);
        std::fs::create_dir(&d).unwrap();
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700)).unwrap();
        d
    };
    let bare = private("osmeter-run-bare");
    let half = private("osmeter-run-half");
    std::fs::write(half.join(MARKER), "pid 12").unwrap();
    let data = private("osmeter-run-data");
    std::fs::write(data.join("file"), b"x").unwrap();
    let young = private("osmeter-run-young");
    for d in [&bare, &half, &data] {
        age(d);
    }
    let mut removed = sweep(p);
    removed.sort_by(|a, b| a.path.cmp(&b.path));
    assert_eq!(
        removed,
        vec![
            Removed {
                path: bare.clone(),
                pid: None
            },
            Removed {
                path: half.clone(),
                pid: None
            }
        ]
    );
    assert!(data.join("file").exists(), "unmarked but not empty: kept");
    assert!(young.exists(), "within the set-up grace: kept");
}

#[test]
fn a_dead_owners_directory_is_swept_and_nothing_else() {
    let parent = tempfile::tempdir().unwrap();
    let p = parent.path();
    // A live one in the same place.
    let live = ScratchDir::create(p, "run").unwrap();
    // A leftover: private, complete marker, unlocked (its process is gone).
    let dead = p.join("osmeter-run-dead");
    std::fs::create_dir(&dead).unwrap();
    std::fs::set_permissions(&dead, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::write(dead.join(MARKER), "pid 4000000\n").unwrap();
    std::fs::write(dead.join("data"), b"x").unwrap();
    // Not ours to judge: no marker, a half-written marker, another name, a group-readable one.
    let bare = p.join("osmeter-run-bare");
    std::fs::create_dir(&bare).unwrap();
    std::fs::set_permissions(&bare, std::fs::Permissions::from_mode(0o700)).unwrap();
    let half = p.join("osmeter-run-half");
    std::fs::create_dir(&half).unwrap();
    std::fs::set_permissions(&half, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::write(half.join(MARKER), "pid 12").unwrap();
    let other = p.join("someone-else");
    std::fs::create_dir(&other).unwrap();
    std::fs::write(other.join(MARKER), "pid 4000000\n").unwrap();
    let open = p.join("osmeter-run-open");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(open.join(MARKER), "pid 4000000\n").unwrap();
    // A link named like a leftover, pointing at a directory that looks like one.
    let target = tempfile::tempdir().unwrap();
    std::fs::set_permissions(target.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::write(target.path().join(MARKER), "pid 4000000\n").unwrap();
    std::os::unix::fs::symlink(target.path(), p.join("osmeter-run-link")).unwrap();

    let removed = sweep(p);
    assert_eq!(
        removed,
        vec![Removed {
            path: dead.clone(),
            pid: Some(4_000_000)
        }]
    );
    assert!(!dead.exists());
    for kept in [&bare, &half, &other, &open, live.path()] {
        assert!(kept.exists(), "{} was removed", kept.display());
    }
    assert!(target.path().join(MARKER).exists());
}

#[test]
fn private_whatever_the_umask() {
    // The umask is process-wide, so it is changed in a child process of its own.
    let parent = tempfile::tempdir().unwrap();
    for umask in [0o000, 0o022, 0o077, 0o777] {
        // SAFETY: fork in a test; the child only creates a directory, reports and exits.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            unsafe { libc::umask(umask) };
            let code = match private_dir(parent.path(), "u-") {
                Ok(d) if mode(d.path()) == 0o700 => std::fs::write(d.path().join("f"), b"x")
                    .map(|_| 0)
                    .unwrap_or(3),
                Ok(_) => 2,
                Err(_) => 1,
            };
            unsafe { libc::_exit(code) };
        }
        let mut status = 0;
        // SAFETY: waiting for the child forked above.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "umask {umask:o}: status {status:#x}"
        );
    }
}

#[test]
fn unsafe_parents_are_refused_with_the_reason() {
    let d = tempfile::tempdir().unwrap();
    assert_eq!(parent_problem(d.path()), None);
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let why = parent_problem(d.path()).unwrap();
    assert!(why.contains("sticky"), "{why}");
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o1777)).unwrap();
    assert_eq!(parent_problem(d.path()), None);
    let why = parent_problem(&d.path().join("missing")).unwrap();
    assert!(why.contains("create it first"), "{why}");
    let f = d.path().join("file");
    std::fs::write(&f, b"").unwrap();
    assert_eq!(parent_problem(&f).unwrap(), "not a directory");
}

#[test]
fn create_new_never_follows_or_reuses() {
    let d = tempfile::tempdir().unwrap();
    let victim = d.path().join("victim");
    std::fs::write(&victim, b"precious").unwrap();
    let link = d.path().join("link");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    assert!(create_new(&link).is_err());
    assert!(create_new(&victim).is_err());
    assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
    let mut f = create_new(&d.path().join("fresh")).unwrap();
    f.write_all(b"ok").unwrap();
    assert_eq!(mode(&d.path().join("fresh")), 0o600);
}
