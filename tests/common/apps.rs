//! What the application-workload tests look at: the typed run document, and what a run may leave
//! behind on the machine (mounts, fuse2fs servers, loop devices, workload cgroups).

use osmeter::results::model::{Measurement, Run};
use std::path::{Path, PathBuf};

/// The run document osmeter printed with --json.
pub fn run_of(value: serde_json::Value) -> Run {
    serde_json::from_value(value).expect("stdout is a run document")
}

/// The figure of `probe` whose parameters include every `(key, value)` of `with`.
pub fn figure<'a>(run: &'a Run, probe: &str, with: &[(&str, &str)]) -> &'a Measurement {
    run.measurements
        .iter()
        .find(|m| {
            m.probe == probe
                && with.iter().all(|(k, v)| match m.params.get(*k) {
                    Some(serde_json::Value::String(s)) => s == v,
                    Some(other) => {
                        serde_json::from_str::<serde_json::Value>(v).is_ok_and(|x| &x == other)
                    }
                    None => false,
                })
        })
        .unwrap_or_else(|| {
            let have: Vec<String> = run
                .measurements
                .iter()
                .map(|m| osmeter::results::model::label(&m.probe, &m.params))
                .collect();
            panic!("no figure {probe} {with:?} among {have:?}")
        })
}

/// A software counter of a figure, per operation.
pub fn software(m: &Measurement, name: &str) -> f64 {
    *m.counters
        .software
        .get(name)
        .unwrap_or_else(|| panic!("no software.{name} in {:?}", m.counters))
}

/// The cgroup v2 directory osmeter makes workload cgroups in (beside this process's own).
pub fn cgroup_home() -> Option<PathBuf> {
    let root = osmeter::apps::cell::cgroup2_mount(&osmeter::mounts::read().ok()?)?;
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let rel = osmeter::apps::cell::v2_path(&own)?
        .trim_start_matches('/')
        .to_string();
    Some(root.join(rel))
}

/// Workload cgroups whose measuring process is gone: what a run that cleans up leaves none of.
pub fn leaked_cgroups() -> Vec<String> {
    let Some(home) = cgroup_home() else {
        return Vec::new();
    };
    std::fs::read_dir(home)
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().into_string().ok())
                .filter(|n| {
                    n.strip_prefix("osmeter-app-")
                        .and_then(|r| r.split('-').next())
                        .and_then(|p| p.parse::<u32>().ok())
                        .is_some_and(|pid| !PathBuf::from(format!("/proc/{pid}")).exists())
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Mount points at or below `dir`.
pub fn mounts_below(dir: &Path) -> Vec<String> {
    osmeter::mounts::points_below(&osmeter::mounts::read().unwrap(), dir)
        .into_iter()
        .map(|p| p.display().to_string())
        .collect()
}

/// fuse2fs processes serving an image below `dir`.
pub fn fuse2fs_on(dir: &Path) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let pid = e.file_name().to_str()?.parse::<u32>().ok()?;
            let cmdline = std::fs::read(e.path().join("cmdline")).ok()?;
            let c = String::from_utf8_lossy(&cmdline);
            (c.contains("fuse2fs") && c.contains(&*dir.to_string_lossy())).then_some(pid)
        })
        .collect()
}

/// Loop devices whose backing file lies below `dir` (the kernel keeps the name of a deleted file).
pub fn loops_on(dir: &Path) -> Vec<String> {
    let Ok(devices) = std::fs::read_dir("/sys/block") else {
        return Vec::new();
    };
    devices
        .flatten()
        .filter_map(|d| {
            let file = std::fs::read_to_string(d.path().join("loop/backing_file")).ok()?;
            file.trim()
                .starts_with(&*dir.to_string_lossy())
                .then(|| d.file_name().to_string_lossy().into_owned())
        })
        .collect()
}

/// Panics unless nothing of a run in `dir` is left: no mount, no fuse2fs, no loop device, no
/// workload cgroup, no file.
pub fn assert_nothing_left(dir: &Path) {
    // A lazily detached FUSE mount lets its server go a moment later.
    let t = std::time::Instant::now();
    while !fuse2fs_on(dir).is_empty() && t.elapsed().as_secs() < 10 {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(mounts_below(dir), Vec::<String>::new(), "mounts left");
    assert_eq!(fuse2fs_on(dir), Vec::<u32>::new(), "fuse2fs left running");
    assert_eq!(loops_on(dir), Vec::<String>::new(), "loop devices left");
    assert_eq!(leaked_cgroups(), Vec::<String>::new(), "cgroups left");
    assert_eq!(super::entries(dir), Vec::<String>::new(), "files left");
}
