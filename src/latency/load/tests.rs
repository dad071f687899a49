use super::*;

/// Processes of a process group that are not zombies, from /proc/PID/stat.
fn live_in_group(pgid: libc::pid_t) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        // Fields after the ")" closing the command name: state, ppid, pgrp, ...
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
            continue;
        };
        let f: Vec<&str> = rest.split_whitespace().collect();
        if f.len() > 2 && f[2] == pgid.to_string() && f[0] != "Z" {
            out.push(stat);
        }
    }
    out
}

fn parse(list: &str) -> Result<Vec<Kind>, String> {
    let loads: Vec<Load> = list.split(',').map(Load::parse).collect::<Result<_, _>>()?;
    Ok(kinds_of(&loads))
}

#[test]
fn mixes_expand_and_unknown_names_name_the_choices() {
    assert_eq!(parse("cpu,cpu").unwrap(), vec![Kind::Cpu]);
    assert_eq!(parse("desktop").unwrap().len(), 3);
    assert_eq!(
        parse("server,io").unwrap(),
        vec![Kind::Net, Kind::Io, Kind::Fork, Kind::Cpu]
    );
    assert_eq!(
        parse("gpu").unwrap_err(),
        format!("no such load: use {NAMES}")
    );
    assert_eq!(
        parse("app.web,cpu,app.bitblt,app.wish").unwrap(),
        vec![
            Kind::App(AppLoad::Web),
            Kind::Cpu,
            Kind::App(AppLoad::Bitblt),
            Kind::App(AppLoad::Wish)
        ]
    );
    assert!(parse("app.nope").unwrap_err().contains("app.web"));
}

#[test]
fn every_generator_runs_reports_a_rate_and_cleans_up() {
    // Every generator loads every CPU, the measured one too: not beside the tests that
    // measure real wakes there.
    let _cpu = crate::latency::MEASURED_CPU
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let all = parse("cpu,memory,io,net,fork,faults").unwrap();
    let mut set = LoadSet::start(&all, Some("sleep 30"), dir.path(), 1).unwrap();
    let pgid = set.command.as_ref().unwrap().1.shell_pid();
    // Every generator gets going (the debug build is slow to fill its buffers).
    let deadline = Instant::now() + std::time::Duration::from_secs(10);
    while Instant::now() < deadline
        && set
            .generators
            .iter()
            .any(|g| g.count.load(Ordering::Relaxed) == 0)
    {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let reports = set.stop();
    assert_eq!(reports.len(), 7);
    for r in &reports[..6] {
        assert!(r.error.is_none(), "{r:?}");
        assert!(r.ops > 0 && r.rate > 0.0, "{r:?}");
    }
    // The command's process group is gone and the scratch directory is removed.
    // SAFETY: probing a process group with signal 0.
    // (A zombie whose parent shell already died may linger until init reaps it: dead is enough.)
    assert!(live_in_group(pgid).is_empty(), "{:?}", live_in_group(pgid));
    assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none());
    drop(set);
}
