//! Pure parsers for the text files the fingerprint reads. Nothing here touches the file system, so
//! each one is tested on fixed sample texts.

/// The facts osmeter keeps from /proc/cpuinfo.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct CpuInfo {
    pub vendor: Option<String>,
    pub model_name: Option<String>,
    pub family: Option<u64>,
    pub model: Option<u64>,
    pub stepping: Option<u64>,
    pub microcode: Option<String>,
    /// Number of `processor` entries (CPUs online when the file was read).
    pub logical: usize,
    /// Whether the first CPU's `flags` line holds `hypervisor`; None when there is no flags line
    /// (non-x86 kernels do not print one).
    pub hypervisor_flag: Option<bool>,
    /// (physical id, core id) of each CPU, when every entry gives both.
    pub topology: Option<Vec<(u64, u64)>>,
}

/// Splits /proc/cpuinfo into one list of (key, value) per CPU. Entries are separated by blank lines;
/// a key and its value by the first colon, with tabs and spaces around both.
fn cpuinfo_blocks(text: &str) -> Vec<Vec<(&str, &str)>> {
    let mut blocks = Vec::new();
    let mut cur = Vec::new();
    for line in text.lines() {
        if line.trim().is_empty() {
            if !cur.is_empty() {
                blocks.push(std::mem::take(&mut cur));
            }
            continue;
        }
        if let Some((k, v)) = line.split_once(':') {
            cur.push((k.trim(), v.trim()));
        }
    }
    if !cur.is_empty() {
        blocks.push(cur);
    }
    blocks
}

pub fn parse_cpuinfo(text: &str) -> CpuInfo {
    let blocks: Vec<_> = cpuinfo_blocks(text)
        .into_iter()
        .filter(|b| b.iter().any(|(k, _)| *k == "processor"))
        .collect();
    let Some(first) = blocks.first() else {
        return CpuInfo::default();
    };
    let get = |block: &[(&str, &str)], key: &str| -> Option<String> {
        block
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v.to_string())
            .filter(|v| !v.is_empty())
    };
    let num = |key: &str| get(first, key).and_then(|v| v.parse::<u64>().ok());
    let topology: Option<Vec<(u64, u64)>> = blocks
        .iter()
        .map(|b| {
            let pkg = get(b, "physical id")?.parse().ok()?;
            let core = get(b, "core id")?.parse().ok()?;
            Some((pkg, core))
        })
        .collect();
    CpuInfo {
        vendor: get(first, "vendor_id").or_else(|| get(first, "CPU implementer")),
        model_name: get(first, "model name"),
        family: num("cpu family"),
        model: num("model"),
        stepping: num("stepping"),
        microcode: get(first, "microcode"),
        logical: blocks.len(),
        hypervisor_flag: get(first, "flags")
            .map(|f| f.split_whitespace().any(|flag| flag == "hypervisor")),
        topology,
    }
}

/// Physical cores and sockets from (package, core) pairs: distinct pairs and distinct packages.
pub fn count_topology(pairs: &[(u64, u64)]) -> (usize, usize) {
    let mut cores: Vec<(u64, u64)> = pairs.to_vec();
    cores.sort_unstable();
    cores.dedup();
    let mut sockets: Vec<u64> = pairs.iter().map(|p| p.0).collect();
    sockets.sort_unstable();
    sockets.dedup();
    (cores.len(), sockets.len())
}

/// A value of a shell-style `KEY=value` line as os-release writes it: unquoted, or in single or
/// double quotes, with backslash escapes inside double quotes.
fn unquote(value: &str) -> String {
    let v = value.trim();
    if v.len() >= 2 && v.starts_with('\'') && v.ends_with('\'') {
        return v[1..v.len() - 1].to_string();
    }
    if v.len() >= 2 && v.starts_with('"') && v.ends_with('"') {
        let mut out = String::new();
        let mut chars = v[1..v.len() - 1].chars();
        while let Some(c) = chars.next() {
            if c == '\\' {
                if let Some(n) = chars.next() {
                    out.push(n);
                }
            } else {
                out.push(c);
            }
        }
        return out;
    }
    v.to_string()
}

/// The distribution's display name: PRETTY_NAME, else NAME and VERSION.
pub fn os_release_name(text: &str) -> Option<String> {
    let mut fields = std::collections::HashMap::new();
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('#') {
            continue;
        }
        if let Some((k, v)) = line.split_once('=') {
            fields.insert(k.trim(), unquote(v));
        }
    }
    if let Some(p) = fields.get("PRETTY_NAME").filter(|p| !p.is_empty()) {
        return Some(p.clone());
    }
    let name = fields.get("NAME")?;
    Some(match fields.get("VERSION") {
        Some(v) => format!("{name} {v}"),
        None => name.clone(),
    })
}

/// The marked choice in a sysfs selector such as "always [madvise] never" (open '[', close ']') or
/// the preemption selector "none voluntary (full) lazy" (open '(', close ')').
pub fn selected_choice(text: &str, open: char, close: char) -> Option<String> {
    let start = text.find(open)? + open.len_utf8();
    let len = text[start..].find(close)?;
    let choice = text[start..start + len].trim();
    (!choice.is_empty()).then(|| choice.to_string())
}

/// MemTotal in bytes.
pub fn meminfo_total_bytes(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let mut parts = line["MemTotal:".len()..].split_whitespace();
    let value: u64 = parts.next()?.parse().ok()?;
    let scale = match parts.next() {
        Some("kB") | Some("KB") => 1024,
        None => 1,
        Some(_) => return None,
    };
    value.checked_mul(scale)
}

/// A sysfs cache size ("32K", "1024K", "8M", "512") in bytes.
pub fn cache_size_bytes(text: &str) -> Option<u64> {
    let t = text.trim();
    let (num, scale) = match t.chars().last()? {
        'K' | 'k' => (&t[..t.len() - 1], 1u64 << 10),
        'M' | 'm' => (&t[..t.len() - 1], 1 << 20),
        'G' | 'g' => (&t[..t.len() - 1], 1 << 30),
        _ => (t, 1),
    };
    num.trim().parse::<u64>().ok()?.checked_mul(scale)
}

/// Number of CPUs in a kernel CPU list such as "0-3,8,10-11". None when the list is malformed.
pub fn cpu_list_count(text: &str) -> Option<usize> {
    let t = text.trim();
    if t.is_empty() {
        return Some(0);
    }
    let mut n = 0usize;
    for part in t.split(',') {
        match part.split_once('-') {
            Some((a, b)) => {
                let a: usize = a.trim().parse().ok()?;
                let b: usize = b.trim().parse().ok()?;
                n += b.checked_sub(a)? + 1;
            }
            None => {
                part.trim().parse::<usize>().ok()?;
                n += 1;
            }
        }
    }
    Some(n)
}

/// The preemption model as far as the kernel version string tells it (scripts put PREEMPT_RT,
/// PREEMPT_DYNAMIC or PREEMPT there; voluntary and none leave no trace).
pub fn preempt_from_version(version: &str) -> &'static str {
    let has = |word: &str| version.split_whitespace().any(|w| w == word);
    if has("PREEMPT_RT") {
        "PREEMPT_RT"
    } else if has("PREEMPT_DYNAMIC") {
        "PREEMPT_DYNAMIC"
    } else if has("PREEMPT") {
        "PREEMPT"
    } else {
        "none/voluntary (unknown)"
    }
}

/// The value of one `name=value` parameter on the kernel command line (the last one wins, as in
/// the kernel). Arguments after a bare `--` go to init and are ignored.
pub fn cmdline_param<'a>(cmdline: &'a str, name: &str) -> Option<&'a str> {
    cmdline
        .split_whitespace()
        .take_while(|w| *w != "--")
        .filter_map(|w| w.split_once('='))
        .filter(|(k, _)| *k == name)
        .map(|(_, v)| v)
        .last()
}

/// Names a hypervisor from the vendor signature of CPUID leaf 0x40000000.
pub fn hypervisor_from_signature(sig: &str) -> Option<&'static str> {
    let s = sig.trim_matches(|c: char| c == '\0' || c.is_whitespace());
    Some(match s {
        "KVMKVMKVM" => "kvm",
        "Microsoft Hv" => "hyperv",
        "VMwareVMware" => "vmware",
        "XenVMMXenVMM" => "xen",
        "TCGTCGTCGTCG" => "qemu-tcg",
        "VBoxVBoxVBox" => "virtualbox",
        "bhyve bhyve" => "bhyve",
        "ACRNACRNACRN" => "acrn",
        "lrpepyh  vr" => "parallels",
        _ => return None,
    })
}

/// Names a hypervisor from the DMI system vendor and product, when they name a known one.
pub fn hypervisor_from_dmi(vendor: &str, product: &str) -> Option<&'static str> {
    let v = vendor.to_ascii_lowercase();
    let p = product.to_ascii_lowercase();
    Some(if v.contains("vmware") || p.contains("vmware") {
        "vmware"
    } else if v.contains("xen") || p.contains("hvm domu") {
        "xen"
    } else if v.contains("microsoft") && p.contains("virtual machine") {
        "hyperv"
    } else if v.contains("qemu") || p.contains("kvm") || v.contains("red hat") {
        "kvm"
    } else if p.contains("virtualbox") || v.contains("innotek") {
        "virtualbox"
    } else if v.contains("parallels") {
        "parallels"
    } else if p.contains("google compute engine") || v.contains("amazon ec2") {
        "kvm"
    } else {
        return None;
    })
}

/// What the fingerprint knows about virtualisation, and how it came to know it.
pub struct HypervisorEvidence<'a> {
    /// The "hypervisor" flag of /proc/cpuinfo (None: no flags line).
    pub cpuid_flag: Option<bool>,
    /// Vendor signature from CPUID leaf 0x40000000 (only asked when the flag is set).
    pub cpuid_signature: Option<&'a str>,
    /// /sys/hypervisor/type (Xen guests, some others).
    pub sys_type: Option<&'a str>,
    pub dmi_vendor: Option<&'a str>,
    pub dmi_product: Option<&'a str>,
}

/// ("kvm" | "xen" | "vmware" | "hyperv" | ... | "bare metal" | a vendor string, how it was decided).
pub fn decide_hypervisor(e: &HypervisorEvidence) -> (String, String) {
    if let Some(t) = e.sys_type.map(str::trim).filter(|t| !t.is_empty()) {
        return (t.to_ascii_lowercase(), "/sys/hypervisor/type".into());
    }
    if let Some(h) = e.cpuid_signature.and_then(hypervisor_from_signature) {
        return (h.into(), "cpuid hypervisor signature".into());
    }
    let vendor = e.dmi_vendor.unwrap_or("").trim();
    let product = e.dmi_product.unwrap_or("").trim();
    if let Some(h) = hypervisor_from_dmi(vendor, product) {
        return (h.into(), "DMI system vendor/product".into());
    }
    match e.cpuid_flag {
        Some(true) if !vendor.is_empty() => (
            if product.is_empty() {
                vendor.to_string()
            } else {
                format!("{vendor} {product}")
            },
            "cpuid hypervisor flag; vendor from DMI".into(),
        ),
        Some(true) => (
            "unknown hypervisor".into(),
            "cpuid hypervisor flag, no vendor signature or DMI".into(),
        ),
        Some(false) => (
            "bare metal".into(),
            "no cpuid hypervisor flag, no hypervisor in DMI".into(),
        ),
        // Without a flags line (non-x86) bare metal is only a guess.
        None => (
            "bare metal".into(),
            "no hypervisor in DMI or /sys/hypervisor (this architecture has no cpuid flag)".into(),
        ),
    }
}

#[cfg(test)]
#[path = "parse_tests.rs"]
mod tests;

/// osmeter's name for a machine id: the first 16 hex digits of HMAC-SHA256 of the id under a key
/// of osmeter's own, as systemd's machine-id(5) asks of programs that send the id elsewhere. The
/// same machine always gets the same name; the id itself cannot be read back from it.
pub fn keyed_machine_id(id: &str) -> String {
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, b"osmeter machine id v1");
    let tag = ring::hmac::sign(&key, id.trim().to_ascii_lowercase().as_bytes());
    tag.as_ref()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}
