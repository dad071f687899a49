use super::*;

// Two CPUs of one socket, written for this test in the layout an x86 kernel prints.
const CPUINFO_TWO: &str = "processor\t: 0
vendor_id\t: GenuineIntel
cpu family\t: 6
model\t\t: 85
model name\t: Intel(R) Xeon(R) Test CPU @ 2.00GHz
stepping\t: 7
microcode\t: 0x5003604
cpu MHz\t\t: 2000.000
physical id\t: 0
siblings\t: 2
core id\t\t: 0
cpu cores\t: 1
flags\t\t: fpu vme de pse tsc msr hypervisor lahf_lm
bogomips\t: 4000.00

processor\t: 1
vendor_id\t: GenuineIntel
cpu family\t: 6
model\t\t: 85
model name\t: Intel(R) Xeon(R) Test CPU @ 2.00GHz
stepping\t: 7
microcode\t: 0x5003604
physical id\t: 0
siblings\t: 2
core id\t\t: 0
cpu cores\t: 1
flags\t\t: fpu vme de pse tsc msr hypervisor lahf_lm

";

#[test]
fn cpuinfo_two_cpus() {
    let c = parse_cpuinfo(CPUINFO_TWO);
    assert_eq!(c.vendor.as_deref(), Some("GenuineIntel"));
    assert_eq!(
        c.model_name.as_deref(),
        Some("Intel(R) Xeon(R) Test CPU @ 2.00GHz")
    );
    assert_eq!(
        (c.family, c.model, c.stepping),
        (Some(6), Some(85), Some(7))
    );
    assert_eq!(c.microcode.as_deref(), Some("0x5003604"));
    assert_eq!(c.logical, 2);
    assert_eq!(c.hypervisor_flag, Some(true));
    // Both CPUs are hyper-threads of one core.
    let topo = c.topology.unwrap();
    assert_eq!(topo, vec![(0, 0), (0, 0)]);
    assert_eq!(count_topology(&topo), (1, 1));
}

#[test]
fn cpuinfo_without_x86_fields() {
    let text =
        "processor\t: 0\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd\nCPU implementer\t: 0x41\n\n\
                processor\t: 1\nBogoMIPS\t: 50.00\n";
    let c = parse_cpuinfo(text);
    assert_eq!(c.logical, 2);
    assert_eq!(c.vendor.as_deref(), Some("0x41"));
    assert_eq!(c.model_name, None);
    assert_eq!(c.family, None);
    assert_eq!(c.hypervisor_flag, None);
    assert_eq!(c.topology, None);
    assert_eq!(parse_cpuinfo(""), CpuInfo::default());
}

#[test]
fn topology_counts_cores_and_sockets() {
    let pairs = [(0, 0), (0, 1), (1, 0), (1, 1), (0, 0), (1, 1)];
    assert_eq!(count_topology(&pairs), (4, 2));
    assert_eq!(count_topology(&[]), (0, 0));
}

#[test]
fn os_release_pretty_name_and_fallback() {
    let text = "# comment\nNAME=\"Test Linux\"\nVERSION=\"7 (cedar)\"\n\
                PRETTY_NAME=\"Test Linux 7 \\\"cedar\\\"\"\nID=test\n";
    assert_eq!(
        os_release_name(text).as_deref(),
        Some("Test Linux 7 \"cedar\"")
    );
    let no_pretty = "NAME='Other OS'\nVERSION=3.1\n";
    assert_eq!(os_release_name(no_pretty).as_deref(), Some("Other OS 3.1"));
    assert_eq!(os_release_name("ID=x\n"), None);
}

#[test]
fn selected_choice_in_brackets_and_parentheses() {
    assert_eq!(
        selected_choice("always [madvise] never\n", '[', ']').as_deref(),
        Some("madvise")
    );
    assert_eq!(
        selected_choice("always defer defer+madvise [madvise] never", '[', ']').as_deref(),
        Some("madvise")
    );
    assert_eq!(
        selected_choice("none voluntary (full) lazy\n", '(', ')').as_deref(),
        Some("full")
    );
    assert_eq!(selected_choice("always madvise never", '[', ']'), None);
    assert_eq!(selected_choice("[", '[', ']'), None);
}

#[test]
fn meminfo_total() {
    let text = "MemTotal:       24684084 kB\nMemFree:        24298980 kB\n";
    assert_eq!(meminfo_total_bytes(text), Some(24_684_084 * 1024));
    assert_eq!(meminfo_total_bytes("MemFree: 1 kB\n"), None);
    assert_eq!(meminfo_total_bytes("MemTotal: lots kB\n"), None);
}

#[test]
fn cache_sizes() {
    assert_eq!(cache_size_bytes("32K\n"), Some(32 * 1024));
    assert_eq!(cache_size_bytes("32768K"), Some(32 << 20));
    assert_eq!(cache_size_bytes("8M"), Some(8 << 20));
    assert_eq!(cache_size_bytes("512"), Some(512));
    assert_eq!(cache_size_bytes(""), None);
    assert_eq!(cache_size_bytes("K"), None);
}

#[test]
fn cpu_lists() {
    assert_eq!(cpu_list_count("0-1\n"), Some(2));
    assert_eq!(cpu_list_count("0-3,8,10-11"), Some(7));
    assert_eq!(cpu_list_count("5"), Some(1));
    assert_eq!(cpu_list_count(""), Some(0));
    assert_eq!(cpu_list_count("3-1"), None);
    assert_eq!(cpu_list_count("a"), None);
}

#[test]
fn preemption_from_version_string() {
    assert_eq!(
        preempt_from_version("#1 SMP PREEMPT_DYNAMIC Debian 6.1.0"),
        "PREEMPT_DYNAMIC"
    );
    assert_eq!(
        preempt_from_version("#1 SMP PREEMPT_RT Thu Jan 1"),
        "PREEMPT_RT"
    );
    assert_eq!(preempt_from_version("#7 SMP PREEMPT Mon"), "PREEMPT");
    assert_eq!(
        preempt_from_version("#1 SMP Tue Oct 3"),
        "none/voluntary (unknown)"
    );
}

#[test]
fn cmdline_parameters() {
    let c = "BOOT_IMAGE=/vmlinuz root=/dev/sda1 preempt=none quiet preempt=full -- preempt=x";
    assert_eq!(cmdline_param(c, "preempt"), Some("full"));
    assert_eq!(cmdline_param(c, "root"), Some("/dev/sda1"));
    assert_eq!(cmdline_param(c, "quiet"), None);
    assert_eq!(cmdline_param(c, "missing"), None);
}

#[test]
fn hypervisor_decisions() {
    let base = HypervisorEvidence {
        cpuid_flag: Some(true),
        cpuid_signature: Some("KVMKVMKVM\0\0\0"),
        sys_type: None,
        dmi_vendor: None,
        dmi_product: None,
    };
    assert_eq!(decide_hypervisor(&base).0, "kvm");
    let xen = HypervisorEvidence {
        sys_type: Some("xen\n"),
        ..base
    };
    assert_eq!(decide_hypervisor(&xen).0, "xen");
    let vmware = HypervisorEvidence {
        cpuid_signature: None,
        dmi_vendor: Some("VMware, Inc."),
        dmi_product: Some("VMware Virtual Platform"),
        ..base
    };
    assert_eq!(decide_hypervisor(&vmware).0, "vmware");
    let hyperv = HypervisorEvidence {
        cpuid_signature: Some("Microsoft Hv"),
        ..base
    };
    assert_eq!(decide_hypervisor(&hyperv).0, "hyperv");
    let other = HypervisorEvidence {
        cpuid_signature: Some("SomethingNew"),
        dmi_vendor: Some("Acme Cloud"),
        dmi_product: Some("C1"),
        ..base
    };
    assert_eq!(decide_hypervisor(&other).0, "Acme Cloud C1");
    let unknown = HypervisorEvidence {
        cpuid_signature: None,
        ..base
    };
    assert_eq!(decide_hypervisor(&unknown).0, "unknown hypervisor");
    let metal = HypervisorEvidence {
        cpuid_flag: Some(false),
        cpuid_signature: None,
        dmi_vendor: Some("Dell Inc."),
        dmi_product: Some("PowerEdge R650"),
        ..base
    };
    let (h, why) = decide_hypervisor(&metal);
    assert_eq!(h, "bare metal");
    assert!(why.contains("no cpuid hypervisor flag"));
}

#[test]
fn the_machine_id_is_kept_as_a_keyed_hash() {
    let id = "0123456789abcdef0123456789abcdef";
    let named = keyed_machine_id(id);
    assert_eq!(named.len(), 16);
    assert!(named.bytes().all(|b| b.is_ascii_hexdigit()));
    assert!(!id.contains(&named), "the id itself shows through: {named}");
    // The same machine gets the same name however the file was written; another gets another.
    assert_eq!(keyed_machine_id(&format!("{}\n", id.to_uppercase())), named);
    assert_ne!(keyed_machine_id("fedcba9876543210fedcba9876543210"), named);
}
