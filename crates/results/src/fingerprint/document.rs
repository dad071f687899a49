//! The fingerprint as a typed document: every field is always written (null when it could not be
//! read), so two fingerprints compare field by field; fields this version does not know (written
//! by a newer osmeter) are kept as they were.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct Fingerprint {
    pub fingerprint_schema: String,
    pub tool_version: String,
    pub hostname: Option<String>,
    /// This machine's id (/etc/machine-id) as osmeter's own keyed hash of it: it tells apart two
    /// hosts that share a host name without showing the id itself, which systemd asks programs
    /// to keep to the machine.
    pub machine_id: Option<String>,

    pub kernel_release: Option<String>,
    pub kernel_version: Option<String>,
    pub kernel_cmdline: Option<String>,
    pub arch: Option<String>,
    pub preempt_model: Option<String>,
    /// Where `preempt_model` was read: debugfs (the mode it runs in now) or the version string.
    pub preempt_model_source: Option<String>,
    pub preempt_boot_param: Option<String>,
    pub distribution: Option<String>,

    pub hypervisor: Option<String>,
    pub hypervisor_source: Option<String>,
    pub hypervisor_cpuid_flag: Option<bool>,
    pub hypervisor_signature: Option<String>,
    pub dmi_sys_vendor: Option<String>,
    pub dmi_product_name: Option<String>,

    pub cpu_vendor: Option<String>,
    pub cpu_model: Option<String>,
    pub cpu_family: Option<u64>,
    pub cpu_model_number: Option<u64>,
    pub cpu_stepping: Option<u64>,
    pub cpu_microcode: Option<String>,
    pub cpus_logical: Option<usize>,
    pub cpus_online: Option<usize>,
    pub cpus_online_list: Option<String>,
    pub cpu_cores: Option<usize>,
    pub cpu_sockets: Option<usize>,
    pub smt_control: Option<String>,
    pub smt_active: Option<bool>,
    pub cache_l1d_bytes: Option<u64>,
    pub cache_l1i_bytes: Option<u64>,
    pub cache_l2_bytes: Option<u64>,
    pub cache_l3_bytes: Option<u64>,
    pub cache_line_bytes: Option<u64>,
    pub cpufreq_driver: Option<String>,
    pub cpufreq_governor: Option<String>,
    pub cpufreq_min_khz: Option<u64>,
    pub cpufreq_max_khz: Option<u64>,
    pub cpufreq_boost: Option<bool>,
    /// Each file of /sys/devices/system/cpu/vulnerabilities and what it says.
    pub cpu_vulnerabilities: Option<BTreeMap<String, String>>,

    pub memory_total_bytes: Option<u64>,
    pub thp_enabled: Option<String>,
    pub thp_defrag: Option<String>,

    pub clocksource: Option<String>,
    pub clocksources_available: Option<Vec<String>>,

    /// The file system under the scratch directory, where file probes run.
    pub scratch_path: Option<String>,
    pub scratch_fs_type: Option<String>,
    pub scratch_device: Option<String>,
    pub scratch_device_number: Option<String>,
    pub scratch_mount_point: Option<String>,
    pub scratch_mount_options: Option<String>,
    pub scratch_super_options: Option<String>,
    pub scratch_rotational: Option<bool>,

    /// The kernel's tunables that can move a figure and the limits of osmeter's own cgroup, by
    /// name (`kernel.randomize_va_space`, `cgroup.memory.max`; the list is in
    /// fingerprint::settings). Null in runs stored before it was kept.
    pub settings: Option<BTreeMap<String, String>>,

    /// Why a field is null, or where a value came from when the best source was missing.
    pub notes: Vec<String>,
    /// Fields of another osmeter version, kept as they were.
    #[serde(flatten)]
    pub other: serde_json::Map<String, serde_json::Value>,
}

impl Fingerprint {
    /// A fingerprint from its JSON document (as stored, or written by hand in a test); `None` when
    /// it is not one.
    pub fn from_json(doc: serde_json::Value) -> Option<Fingerprint> {
        serde_json::from_value(doc).ok()
    }

    /// The cache sizes it names, smallest level first, as (label, bytes).
    pub fn cache_sizes(&self) -> Vec<(&'static str, u64)> {
        [
            ("L1d", self.cache_l1d_bytes),
            ("L2", self.cache_l2_bytes),
            ("L3", self.cache_l3_bytes),
        ]
        .into_iter()
        .filter_map(|(label, size)| Some((label, size?)))
        .collect()
    }

    /// The fields as one flat JSON object (every field present), for field-by-field display and
    /// comparison.
    pub fn fields(&self) -> serde_json::Map<String, serde_json::Value> {
        match serde_json::to_value(self) {
            Ok(serde_json::Value::Object(m)) => m,
            _ => serde_json::Map::new(),
        }
    }
}
