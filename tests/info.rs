//! End-to-end: `osmeter info` as a user would run it, as root and (where setpriv exists) as nobody.

use assert_cmd::Command;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn osrelease() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .unwrap()
        .trim()
        .to_string()
}

fn info_json(cmd: &mut std::process::Command) -> Value {
    let out = cmd.output().expect("running osmeter info --json");
    assert!(
        out.status.success(),
        "exit {:?}, stderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("info --json prints one JSON document")
}

fn feature<'a>(doc: &'a Value, name: &str) -> &'a Value {
    doc["features"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == name)
        .unwrap_or_else(|| panic!("no feature {name} in {doc:#}"))
}

#[test]
fn info_shows_kernel_release_and_sections() {
    let out = Command::cargo_bin("osmeter")
        .unwrap()
        .arg("info")
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("kernel release:"))
        .unwrap_or_else(|| panic!("no kernel release line in\n{text}"));
    assert_eq!(line.split_once(':').unwrap().1.trim(), osrelease());
    for section in [
        "System",
        "CPU",
        "Memory",
        "Clock",
        "Scratch directory",
        "What works here",
    ] {
        assert!(
            text.lines().any(|l| l == section),
            "no {section} section in\n{text}"
        );
    }
    assert!(text.contains("realtime_scheduling"));
}

#[test]
fn info_json_has_schema_fingerprint_and_features() {
    let doc = info_json(
        std::process::Command::new(assert_cmd::cargo::cargo_bin("osmeter"))
            .args(["info", "--json"]),
    );
    assert_eq!(doc["schema"], "osmeter.info/1");
    let fp = &doc["fingerprint"];
    assert_eq!(fp["kernel_release"], osrelease());
    for key in [
        "hostname",
        "kernel_version",
        "kernel_cmdline",
        "preempt_model",
        "distribution",
        "cpu_vendor",
        "cpu_model",
        "cpu_microcode",
        "cpus_logical",
        "cpu_cores",
        "smt_control",
        "cache_l1d_bytes",
        "cpufreq_governor",
        "memory_total_bytes",
        "thp_enabled",
        "cpu_vulnerabilities",
        "hypervisor",
        "clocksource",
        "scratch_fs_type",
        "tool_version",
    ] {
        assert!(fp.get(key).is_some(), "fingerprint has no {key}: {fp:#}");
    }
    assert!(fp["hypervisor"].is_string());
    assert!(fp["cpus_logical"].as_u64().unwrap() >= 1);
    for f in doc["features"].as_array().unwrap() {
        assert!(f["name"].is_string() && f["available"].is_boolean() && f["detail"].is_string());
    }
    assert!(doc["counters"].is_array());
    // SAFETY: geteuid cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    assert_eq!(feature(&doc, "root")["available"], root);
}

/// A copy of the binary that an unprivileged user can execute whatever the permissions of the
/// build directory.
fn world_executable_copy(dir: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let bin = dir.join("osmeter");
    std::fs::copy(assert_cmd::cargo::cargo_bin("osmeter"), &bin).unwrap();
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    bin
}

#[test]
fn info_as_unprivileged_user_explains_what_needs_privileges() {
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: already unprivileged (the other tests cover this path)");
        return;
    }
    let Ok(setpriv) = which("setpriv") else {
        eprintln!("skipped: setpriv (util-linux) is not installed");
        return;
    };
    let dir = tempfile::Builder::new()
        .prefix("osmeter-info-test-")
        .tempdir()
        .unwrap();
    let bin = world_executable_copy(dir.path());
    let doc = info_json(
        std::process::Command::new(setpriv)
            .args([
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                "--inh-caps=-all",
            ])
            .arg(&bin)
            .args(["info", "--json"])
            .env("TMPDIR", "/tmp"),
    );
    assert_eq!(doc["fingerprint"]["kernel_release"], osrelease());
    assert_eq!(feature(&doc, "root")["available"], false);
    let rt = feature(&doc, "realtime_scheduling");
    if rt["available"] == false {
        let detail = rt["detail"].as_str().unwrap();
        assert!(
            detail.contains("without CAP_SYS_NICE") && detail.contains("RLIMIT_RTPRIO is 0"),
            "{detail}"
        );
    }
    let paranoid = feature(&doc, "perf_event_paranoid")["detail"]
        .as_str()
        .unwrap();
    assert!(!paranoid.contains("running as root"), "{paranoid}");
    // The human report works without privileges too.
    let out = std::process::Command::new(which("setpriv").unwrap())
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(&bin)
        .arg("info")
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("What works here"));
}

fn which(program: &str) -> Result<PathBuf, ()> {
    let path = std::env::var_os("PATH").ok_or(())?;
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
        .ok_or(())
}
