use super::*;

fn write(root: &Path, abs: &str, text: &str) {
    let p = root.join(abs.trim_start_matches('/'));
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn fake(root: &Path) -> Sources {
    Sources {
        root: root.to_path_buf(),
        real_machine: false,
    }
}

/// The document as stored, for checks by field name.
fn json(fp: Fingerprint) -> serde_json::Value {
    serde_json::to_value(fp).unwrap()
}

fn keys(v: &serde_json::Value) -> Vec<String> {
    v.as_object().unwrap().keys().cloned().collect()
}

#[test]
fn empty_tree_gives_nulls_not_panics() {
    let dir = tempfile::tempdir().unwrap();
    let fp = json(fake(dir.path()).collect(None));
    assert_eq!(fp["fingerprint_schema"], FINGERPRINT_SCHEMA);
    assert_eq!(fp["tool_version"], env!("CARGO_PKG_VERSION"));
    for k in [
        "hostname",
        "machine_id",
        "kernel_release",
        "preempt_model",
        "cpu_model",
        "cpus_logical",
        "cache_l1d_bytes",
        "cpufreq_governor",
        "memory_total_bytes",
        "thp_enabled",
        "cpu_vulnerabilities",
        "clocksource",
        "scratch_fs_type",
    ] {
        assert!(fp[k].is_null(), "{k} should be null, got {}", fp[k]);
    }
    assert!(fp["notes"]
        .as_array()
        .unwrap()
        .iter()
        .any(|n| n.as_str().unwrap().starts_with("cpufreq:")));
}

#[test]
fn key_set_is_the_same_whatever_is_readable() {
    let dir = tempfile::tempdir().unwrap();
    let empty = json(fake(dir.path()).collect(Some(dir.path())));
    let real = json(collect(Some(dir.path())));
    assert_eq!(keys(&empty), keys(&real));
    for k in keys(&real) {
        assert_eq!(k, k.to_ascii_lowercase(), "keys are snake_case");
    }
}

#[test]
fn fake_tree_is_read_and_parsed() {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    write(r, "/proc/sys/kernel/hostname", "box1\n");
    write(r, "/etc/machine-id", "0123456789abcdef0123456789abcdef\n");
    write(r, "/proc/sys/kernel/osrelease", "6.9.0-test\n");
    write(
        r,
        "/proc/sys/kernel/version",
        "#1 SMP PREEMPT_DYNAMIC Mon\n",
    );
    write(r, "/proc/cmdline", "root=/dev/sda preempt=voluntary\n");
    write(r, "/etc/os-release", "PRETTY_NAME=\"Fake OS 1\"\n");
    write(
        r,
        "/proc/cpuinfo",
        "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: Fake CPU\nphysical id\t: 0\n\
         core id\t: 0\nflags\t: fpu\n\nprocessor\t: 1\nphysical id\t: 0\ncore id\t: 1\n",
    );
    write(r, "/sys/devices/system/cpu/present", "0-1\n");
    write(r, "/sys/devices/system/cpu/online", "0\n");
    write(r, "/sys/devices/system/cpu/smt/control", "notsupported\n");
    write(r, "/sys/devices/system/cpu/smt/active", "0\n");
    let cache = "/sys/devices/system/cpu/cpu0/cache";
    for (i, level, ty, size) in [
        (0, "1", "Data", "48K"),
        (1, "1", "Instruction", "32K"),
        (2, "2", "Unified", "2048K"),
        (3, "3", "Unified", "30M"),
    ] {
        write(r, &format!("{cache}/index{i}/level"), level);
        write(r, &format!("{cache}/index{i}/type"), ty);
        write(r, &format!("{cache}/index{i}/size"), size);
        write(r, &format!("{cache}/index{i}/coherency_line_size"), "64\n");
    }
    let freq = "/sys/devices/system/cpu/cpu0/cpufreq";
    write(r, &format!("{freq}/scaling_governor"), "performance\n");
    write(r, &format!("{freq}/scaling_driver"), "acpi-cpufreq\n");
    write(r, &format!("{freq}/cpuinfo_min_freq"), "800000\n");
    write(r, &format!("{freq}/cpuinfo_max_freq"), "3500000\n");
    write(r, "/sys/devices/system/cpu/cpufreq/boost", "1\n");
    write(r, "/proc/meminfo", "MemTotal:  1000 kB\n");
    write(
        r,
        "/sys/kernel/mm/transparent_hugepage/enabled",
        "always [madvise] never\n",
    );
    write(
        r,
        "/sys/kernel/mm/transparent_hugepage/defrag",
        "[always] defer never\n",
    );
    let vuln = "/sys/devices/system/cpu/vulnerabilities";
    write(r, &format!("{vuln}/meltdown"), "Not affected\n");
    write(r, &format!("{vuln}/spectre_v2"), "Mitigation: Retpolines\n");
    let cs = "/sys/devices/system/clocksource/clocksource0";
    write(r, &format!("{cs}/current_clocksource"), "tsc\n");
    write(
        r,
        &format!("{cs}/available_clocksource"),
        "tsc hpet acpi_pm \n",
    );
    write(r, "/sys/class/dmi/id/sys_vendor", "QEMU\n");
    write(r, "/sys/class/dmi/id/product_name", "Standard PC\n");
    // Everything under "/" is the fake ext4; the scratch directory is the temporary tree itself.
    let scratch = std::fs::canonicalize(r).unwrap();
    write(
        r,
        "/proc/self/mountinfo",
        &format!(
            "1 0 8:1 / / rw,relatime - ext4 /dev/sda1 rw\n\
             2 1 0:30 / {} rw,nosuid - tmpfs tmp\\040fs rw,size=4k\n",
            scratch.display()
        ),
    );

    let fp = json(fake(r).collect(Some(r)));
    assert_eq!(fp["hostname"], "box1");
    assert_eq!(
        fp["machine_id"],
        parse::keyed_machine_id("0123456789abcdef0123456789abcdef")
    );
    assert_eq!(fp["kernel_release"], "6.9.0-test");
    assert_eq!(fp["preempt_model"], "PREEMPT_DYNAMIC");
    assert_eq!(fp["preempt_model_source"], "kernel version string");
    assert_eq!(fp["preempt_boot_param"], "voluntary");
    assert_eq!(fp["distribution"], "Fake OS 1");
    assert_eq!(fp["cpu_vendor"], "AuthenticAMD");
    assert_eq!(fp["cpu_model"], "Fake CPU");
    assert!(fp["cpu_family"].is_null());
    assert_eq!(fp["cpus_logical"], 2);
    assert_eq!(fp["cpus_online"], 1);
    assert_eq!(fp["cpus_online_list"], "0");
    assert_eq!(fp["cpu_cores"], 2);
    assert_eq!(fp["cpu_sockets"], 1);
    assert_eq!(fp["smt_control"], "notsupported");
    assert_eq!(fp["smt_active"], false);
    assert_eq!(fp["cache_l1d_bytes"], 48 * 1024);
    assert_eq!(fp["cache_l1i_bytes"], 32 * 1024);
    assert_eq!(fp["cache_l2_bytes"], 2048 * 1024);
    assert_eq!(fp["cache_l3_bytes"], 30 << 20);
    assert_eq!(fp["cache_line_bytes"], 64);
    assert_eq!(fp["cpufreq_governor"], "performance");
    assert_eq!(fp["cpufreq_driver"], "acpi-cpufreq");
    assert_eq!(fp["cpufreq_min_khz"], 800_000);
    assert_eq!(fp["cpufreq_max_khz"], 3_500_000);
    assert_eq!(fp["cpufreq_boost"], true);
    assert_eq!(fp["memory_total_bytes"], 1_024_000);
    assert_eq!(fp["thp_enabled"], "madvise");
    assert_eq!(fp["thp_defrag"], "always");
    assert_eq!(
        fp["cpu_vulnerabilities"],
        serde_json::json!({"meltdown": "Not affected", "spectre_v2": "Mitigation: Retpolines"})
    );
    assert_eq!(fp["clocksource"], "tsc");
    assert_eq!(
        fp["clocksources_available"],
        serde_json::json!(["tsc", "hpet", "acpi_pm"])
    );
    // A flags line without "hypervisor", but DMI names QEMU.
    assert_eq!(fp["hypervisor_cpuid_flag"], false);
    assert_eq!(fp["hypervisor"], "kvm");
    assert_eq!(fp["hypervisor_source"], "DMI system vendor/product");
    assert_eq!(fp["scratch_path"], scratch.to_string_lossy().as_ref());
    assert_eq!(fp["scratch_fs_type"], "tmpfs");
    assert_eq!(fp["scratch_device"], "tmp fs");
    assert_eq!(fp["scratch_device_number"], "0:30");
    assert_eq!(fp["scratch_mount_options"], "rw,nosuid");
    assert_eq!(fp["scratch_super_options"], "rw,size=4k");
    assert!(fp["scratch_rotational"].is_null());
    let notes = fp["notes"].as_array().unwrap();
    assert!(notes
        .iter()
        .any(|n| n.as_str().unwrap().contains("PREEMPT_DYNAMIC")));
    assert!(!notes
        .iter()
        .any(|n| n.as_str().unwrap().starts_with("cpufreq:")));
}

/// The kernel takes any bytes as a host name (in a UTS namespace of one's own too); one that is
/// not UTF-8 is kept, escaped, where reading it as text lost it.
#[test]
fn a_host_name_that_is_not_utf8_is_kept_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    write(r, "/proc/sys/kernel/hostname", "");
    std::fs::write(r.join("proc/sys/kernel/hostname"), b"a\xffb\n").unwrap();
    assert_eq!(json(fake(r).collect(None))["hostname"], "a\\xffb");
}

#[test]
fn preemption_from_debugfs_wins() {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    write(
        r,
        "/proc/sys/kernel/version",
        "#1 SMP PREEMPT_DYNAMIC Mon\n",
    );
    write(
        r,
        "/sys/kernel/debug/sched/preempt",
        "none voluntary (full) lazy\n",
    );
    let fp = json(fake(r).collect(None));
    assert_eq!(fp["preempt_model"], "full (PREEMPT_DYNAMIC)");
    assert_eq!(
        fp["preempt_model_source"],
        "/sys/kernel/debug/sched/preempt"
    );
}

#[test]
fn vulnerabilities_directory_as_map() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("mds"), "Not affected\n").unwrap();
    std::fs::write(dir.path().join("l1tf"), "Mitigation: PTE Inversion\n").unwrap();
    let m = read_dir_map(dir.path()).unwrap();
    assert_eq!(m.len(), 2);
    assert_eq!(m["mds"], "Not affected");
    assert_eq!(m["l1tf"], "Mitigation: PTE Inversion");
    assert_eq!(read_dir_map(&dir.path().join("absent")), None);
}

#[test]
fn real_system_fingerprint() {
    let fp = json(collect(Some(&std::env::temp_dir())));
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    assert_eq!(fp["kernel_release"], release.trim());
    assert!(fp["scratch_fs_type"].is_string(), "{fp:#}");
    assert!(fp["hypervisor"].is_string());
    assert!(fp["cpus_logical"].as_u64().unwrap() >= 1);
}
