//! A description of the system a run came from: kernel, CPU, memory, virtualisation, clock and the
//! file system under the scratch directory.
//!
//! The result is a typed [`Fingerprint`] (in [`document`]) whose fields are always written, null
//! when the value could not be read, so two fingerprints compare field by field; `notes` says why
//! something is null or where a value came from when the best source was missing. The parsers are
//! in [`parse`]; this file only reads files and assembles.

pub mod capabilities;
pub mod document;
pub mod parse;
pub mod settings;
pub mod text;

pub use document::Fingerprint;
use parse::HypervisorEvidence;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Version of the fingerprint's layout; bump it when a key changes meaning.
pub const FINGERPRINT_SCHEMA: &str = "osmeter.fingerprint/1";

/// The fingerprint of this system. Never fails: whatever cannot be read is null.
pub fn collect(scratch: Option<&Path>) -> Fingerprint {
    let sources = Sources {
        root: PathBuf::from("/"),
        real_machine: true,
    };
    // The collectors are written not to panic; this keeps a surprise from ending a finished run.
    std::panic::catch_unwind(|| sources.collect(scratch)).unwrap_or_else(|_| Fingerprint {
        fingerprint_schema: FINGERPRINT_SCHEMA.into(),
        tool_version: env!("CARGO_PKG_VERSION").into(),
        notes: vec!["collecting the fingerprint failed unexpectedly".into()],
        ..Fingerprint::default()
    })
}

/// Where the files are read from: `/` normally, a temporary tree in tests.
struct Sources {
    root: PathBuf,
    /// Whether questions to the CPU itself (cpuid, uname) describe this tree.
    real_machine: bool,
}

impl Sources {
    fn path(&self, abs: &str) -> PathBuf {
        self.root.join(abs.trim_start_matches('/'))
    }

    fn read(&self, abs: &str) -> Option<String> {
        std::fs::read_to_string(self.path(abs)).ok()
    }

    /// The file's text without surrounding white space; None when missing or empty.
    fn value(&self, abs: &str) -> Option<String> {
        self.read(abs)
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
    }

    /// The host name; one that is not UTF-8 (the kernel takes any bytes) is kept with those bytes
    /// escaped, rather than lost.
    fn host_name(&self) -> Option<String> {
        let bytes = std::fs::read(self.path("/proc/sys/kernel/hostname")).ok()?;
        Some(crate::text::from_bytes_escaped(bytes.trim_ascii())).filter(|s| !s.is_empty())
    }

    fn number(&self, abs: &str) -> Option<u64> {
        self.value(abs)?.parse().ok()
    }

    fn collect(&self, scratch: Option<&Path>) -> Fingerprint {
        let mut notes: Vec<String> = Vec::new();
        let version = self.value("/proc/sys/kernel/version");
        let cmdline = self.value("/proc/cmdline");
        let (preempt_model, preempt_model_source) = self.preemption(version.as_deref(), &mut notes);
        let mut fp = Fingerprint {
            fingerprint_schema: FINGERPRINT_SCHEMA.into(),
            tool_version: env!("CARGO_PKG_VERSION").into(),
            hostname: self.host_name(),
            machine_id: self
                .value("/etc/machine-id")
                .or_else(|| self.value("/var/lib/dbus/machine-id"))
                .map(|id| parse::keyed_machine_id(&id)),
            kernel_release: self.value("/proc/sys/kernel/osrelease"),
            preempt_boot_param: cmdline
                .as_deref()
                .and_then(|c| parse::cmdline_param(c, "preempt"))
                .map(str::to_string),
            kernel_version: version,
            kernel_cmdline: cmdline,
            arch: self.arch(),
            preempt_model,
            preempt_model_source,
            distribution: self
                .read("/etc/os-release")
                .or_else(|| self.read("/usr/lib/os-release"))
                .and_then(|t| parse::os_release_name(&t)),
            ..Fingerprint::default()
        };

        let cpu = parse::parse_cpuinfo(&self.read("/proc/cpuinfo").unwrap_or_default());
        self.virtualisation(&cpu, &mut fp, &mut notes);
        fp.cpu_vendor = cpu.vendor.clone();
        fp.cpu_model = cpu.model_name.clone();
        fp.cpu_family = cpu.family;
        fp.cpu_model_number = cpu.model;
        fp.cpu_stepping = cpu.stepping;
        fp.cpu_microcode = cpu.microcode.clone();
        let from_cpuinfo = (cpu.logical > 0).then_some(cpu.logical);
        fp.cpus_logical = self
            .value("/sys/devices/system/cpu/present")
            .and_then(|l| parse::cpu_list_count(&l))
            .or(from_cpuinfo);
        let online = self.value("/sys/devices/system/cpu/online");
        fp.cpus_online = online
            .as_deref()
            .and_then(parse::cpu_list_count)
            .or(from_cpuinfo);
        fp.cpus_online_list = online;
        let topology = cpu.topology.clone().or_else(|| self.sysfs_topology());
        if let Some(pairs) = topology.as_deref().filter(|p| !p.is_empty()) {
            let (cores, sockets) = parse::count_topology(pairs);
            fp.cpu_cores = Some(cores);
            fp.cpu_sockets = Some(sockets);
        }
        fp.smt_control = self.value("/sys/devices/system/cpu/smt/control");
        fp.smt_active = self
            .value("/sys/devices/system/cpu/smt/active")
            .map(|v| v == "1");
        self.caches(&mut fp);
        self.cpufreq(&mut fp, &mut notes);
        fp.cpu_vulnerabilities =
            read_dir_map(&self.path("/sys/devices/system/cpu/vulnerabilities"));

        fp.memory_total_bytes = self
            .read("/proc/meminfo")
            .and_then(|t| parse::meminfo_total_bytes(&t));
        let thp = |f: &str| {
            self.value(&format!("/sys/kernel/mm/transparent_hugepage/{f}"))
                .and_then(|t| parse::selected_choice(&t, '[', ']'))
        };
        fp.thp_enabled = thp("enabled");
        fp.thp_defrag = thp("defrag");

        let cs = "/sys/devices/system/clocksource/clocksource0";
        fp.clocksource = self.value(&format!("{cs}/current_clocksource"));
        fp.clocksources_available = self
            .value(&format!("{cs}/available_clocksource"))
            .map(|t| t.split_whitespace().map(str::to_string).collect());

        fp.settings = settings::read(|path| self.value(path));
        self.scratch(scratch, &mut fp, &mut notes);
        fp.notes = notes;
        fp
    }

    fn arch(&self) -> Option<String> {
        if !self.real_machine {
            return None;
        }
        // SAFETY: utsname is plain data and uname fills it with NUL-terminated strings.
        unsafe {
            let mut u: libc::utsname = std::mem::zeroed();
            if libc::uname(&mut u) != 0 {
                return None;
            }
            let s = std::ffi::CStr::from_ptr(u.machine.as_ptr());
            Some(s.to_string_lossy().into_owned()).filter(|s| !s.is_empty())
        }
    }

    /// (model, source). debugfs names the mode a PREEMPT_DYNAMIC kernel runs in now; the version
    /// string only tells how the kernel was built.
    fn preemption(
        &self,
        version: Option<&str>,
        notes: &mut Vec<String>,
    ) -> (Option<String>, Option<String>) {
        let debugfs = "/sys/kernel/debug/sched/preempt";
        if let Some(mode) = self
            .value(debugfs)
            .and_then(|t| parse::selected_choice(&t, '(', ')'))
        {
            let built = version.map(parse::preempt_from_version);
            let model = match built {
                Some(b) if b.starts_with("PREEMPT") => format!("{mode} ({b})"),
                _ => mode,
            };
            return (Some(model), Some(debugfs.to_string()));
        }
        let Some(v) = version else {
            return (None, None);
        };
        let built = parse::preempt_from_version(v);
        if built == "PREEMPT_DYNAMIC" {
            let why = match std::fs::read_to_string(self.path(debugfs)) {
                Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
                    "reading it needs root".to_string()
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    "debugfs is not mounted on /sys/kernel/debug".to_string()
                }
                Err(e) => e.to_string(),
                Ok(_) => "it names no mode".to_string(),
            };
            notes.push(format!(
                "preempt_model: {debugfs} is not readable ({why}), so the mode this \
                 PREEMPT_DYNAMIC kernel runs in now is unknown; see preempt_boot_param"
            ));
        }
        (
            Some(built.to_string()),
            Some("kernel version string".to_string()),
        )
    }

    fn virtualisation(&self, cpu: &parse::CpuInfo, fp: &mut Fingerprint, notes: &mut Vec<String>) {
        let signature = if self.real_machine && cpu.hypervisor_flag == Some(true) {
            cpuid_hypervisor_signature()
        } else {
            None
        };
        let sys_type = self.value("/sys/hypervisor/type");
        let dmi_vendor = self.value("/sys/class/dmi/id/sys_vendor");
        let dmi_product = self.value("/sys/class/dmi/id/product_name");
        let (name, source) = parse::decide_hypervisor(&HypervisorEvidence {
            cpuid_flag: cpu.hypervisor_flag,
            cpuid_signature: signature.as_deref(),
            sys_type: sys_type.as_deref(),
            dmi_vendor: dmi_vendor.as_deref(),
            dmi_product: dmi_product.as_deref(),
        });
        if cpu.hypervisor_flag.is_none() && dmi_vendor.is_none() {
            notes.push(
                "hypervisor: no cpuid flags and no DMI data; \"bare metal\" is a guess".into(),
            );
        }
        fp.hypervisor = Some(name);
        fp.hypervisor_source = Some(source);
        fp.hypervisor_cpuid_flag = cpu.hypervisor_flag;
        fp.hypervisor_signature = signature;
        fp.dmi_sys_vendor = dmi_vendor;
        fp.dmi_product_name = dmi_product;
    }

    /// (package, core) of every CPU from sysfs, for kernels whose cpuinfo does not say.
    fn sysfs_topology(&self) -> Option<Vec<(u64, u64)>> {
        let dir = std::fs::read_dir(self.path("/sys/devices/system/cpu")).ok()?;
        let mut pairs = Vec::new();
        for entry in dir.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let is_cpu = name
                .strip_prefix("cpu")
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
            if !is_cpu {
                continue;
            }
            let base = format!("/sys/devices/system/cpu/{name}/topology");
            if let (Some(p), Some(c)) = (
                self.number(&format!("{base}/physical_package_id")),
                self.number(&format!("{base}/core_id")),
            ) {
                pairs.push((p, c));
            }
        }
        (!pairs.is_empty()).then_some(pairs)
    }

    /// Cache sizes and line size of CPU 0.
    fn caches(&self, fp: &mut Fingerprint) {
        let base = "/sys/devices/system/cpu/cpu0/cache";
        let Ok(dir) = std::fs::read_dir(self.path(base)) else {
            return;
        };
        let mut names: Vec<String> = dir
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("index"))
            .collect();
        names.sort();
        for n in names {
            let get = |f: &str| self.value(&format!("{base}/{n}/{f}"));
            let field = match (get("level").as_deref(), get("type").as_deref()) {
                (Some("1"), Some("Data")) => &mut fp.cache_l1d_bytes,
                (Some("1"), Some("Instruction")) => &mut fp.cache_l1i_bytes,
                (Some("2"), _) => &mut fp.cache_l2_bytes,
                (Some("3"), _) => &mut fp.cache_l3_bytes,
                _ => continue,
            };
            if let Some(size) = get("size").and_then(|s| parse::cache_size_bytes(&s)) {
                *field = Some(size);
            }
            if fp.cache_line_bytes.is_none() {
                fp.cache_line_bytes = get("coherency_line_size").and_then(|s| s.parse().ok());
            }
        }
    }

    fn cpufreq(&self, fp: &mut Fingerprint, notes: &mut Vec<String>) {
        let base = "/sys/devices/system/cpu/cpu0/cpufreq";
        let present = self.path(base).is_dir();
        let get = |f: &str| self.value(&format!("{base}/{f}"));
        let num = |f: &str| get(f).and_then(|v| v.parse::<u64>().ok());
        fp.cpufreq_driver = get("scaling_driver");
        fp.cpufreq_governor = get("scaling_governor");
        fp.cpufreq_min_khz = num("cpuinfo_min_freq");
        fp.cpufreq_max_khz = num("cpuinfo_max_freq");
        // Boost lives in a different place for each driver family.
        let boost = self
            .value("/sys/devices/system/cpu/cpufreq/boost")
            .or_else(|| get("boost"))
            .map(|v| v == "1")
            .or_else(|| {
                self.value("/sys/devices/system/cpu/intel_pstate/no_turbo")
                    .map(|v| v == "0")
            });
        fp.cpufreq_boost = boost;
        if !present {
            notes.push(
                "cpufreq: no frequency scaling interface in sysfs (usual in VMs), so governor, \
                 frequency limits and boost are unknown"
                    .into(),
            );
        }
    }

    fn scratch(&self, scratch: Option<&Path>, fp: &mut Fingerprint, notes: &mut Vec<String>) {
        let Some(dir) = scratch else { return };
        let real = match std::fs::canonicalize(dir) {
            Ok(real) => real.to_string_lossy().into_owned(),
            Err(e) => {
                notes.push(format!(
                    "scratch directory {}: cannot resolve it ({e})",
                    dir.display()
                ));
                return;
            }
        };
        let mounts = crate::mounts::parse(&self.read("/proc/self/mountinfo").unwrap_or_default());
        match crate::mounts::mount_for(&mounts, &real) {
            None => notes.push(format!(
                "scratch directory {real}: no mount found in /proc/self/mountinfo"
            )),
            Some(m) => {
                fp.scratch_fs_type = Some(m.fs_type.clone());
                fp.scratch_device = Some(m.source.clone());
                fp.scratch_device_number = Some(m.device_number.clone());
                fp.scratch_mount_point = Some(m.mount_point.clone());
                fp.scratch_mount_options = Some(m.mount_options.clone());
                fp.scratch_super_options = Some(m.super_options.clone());
                fp.scratch_rotational = self.rotational(&m.device_number);
            }
        }
        fp.scratch_path = Some(real);
    }

    /// Whether the block device is a spinning disk; None for file systems without one (tmpfs).
    fn rotational(&self, device_number: &str) -> Option<bool> {
        let dev = format!("/sys/dev/block/{device_number}");
        // A partition has no queue of its own; its disk (the parent directory) has.
        self.value(&format!("{dev}/queue/rotational"))
            .or_else(|| self.value(&format!("{dev}/../queue/rotational")))
            .map(|v| v == "1")
    }
}

/// Every file of a directory as name -> trimmed contents, sorted by name. None when the directory
/// cannot be listed. Files that cannot be read (permissions) are skipped.
pub fn read_dir_map(dir: &Path) -> Option<BTreeMap<String, String>> {
    let entries = std::fs::read_dir(dir).ok()?;
    let mut map = BTreeMap::new();
    for e in entries.flatten() {
        if let Ok(text) = std::fs::read_to_string(e.path()) {
            map.insert(
                e.file_name().to_string_lossy().into_owned(),
                text.trim().to_string(),
            );
        }
    }
    Some(map)
}

/// The 12-byte vendor signature a hypervisor puts in CPUID leaf 0x40000000, printable part only.
#[cfg(target_arch = "x86_64")]
fn cpuid_hypervisor_signature() -> Option<String> {
    // SAFETY: every x86-64 CPU has cpuid; the caller asks only when the hypervisor bit says the
    // leaf range is defined. (Safe to call on newer toolchains, hence the allow.)
    #[allow(unused_unsafe)]
    let r = unsafe { std::arch::x86_64::__cpuid(0x4000_0000) };
    let bytes: Vec<u8> = [r.ebx, r.ecx, r.edx]
        .iter()
        .flat_map(|reg| reg.to_le_bytes())
        .collect();
    let s: String = bytes
        .iter()
        .filter(|b| b.is_ascii_graphic() || **b == b' ')
        .map(|&b| char::from(b))
        .collect();
    let s = s.trim().to_string();
    (!s.is_empty()).then_some(s)
}

#[cfg(not(target_arch = "x86_64"))]
fn cpuid_hypervisor_signature() -> Option<String> {
    None
}

#[cfg(test)]
mod tests;
