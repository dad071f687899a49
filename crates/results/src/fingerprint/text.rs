//! The fingerprint as aligned "key: value" sections for people (System, CPU, Memory, Clock, Scratch
//! directory, Notes). Unknown values read "unknown"; the JSON keeps them as null.

use super::Fingerprint;
use serde_json::Value;
use std::fmt::Write as _;

/// How one field is shown.
#[derive(Clone, Copy)]
enum Show {
    Text,
    Bytes,
    Khz,
    YesNo,
    List,
}

const SYSTEM: &[(&str, &str, Show)] = &[
    ("hostname", "hostname", Show::Text),
    ("machine id (keyed hash)", "machine_id", Show::Text),
    ("distribution", "distribution", Show::Text),
    ("kernel release", "kernel_release", Show::Text),
    ("kernel version", "kernel_version", Show::Text),
    ("kernel command line", "kernel_cmdline", Show::Text),
    ("architecture", "arch", Show::Text),
    ("osmeter version", "tool_version", Show::Text),
];

const CPU: &[(&str, &str, Show)] = &[
    ("vendor", "cpu_vendor", Show::Text),
    ("model", "cpu_model", Show::Text),
    ("family", "cpu_family", Show::Text),
    ("model number", "cpu_model_number", Show::Text),
    ("stepping", "cpu_stepping", Show::Text),
    ("microcode", "cpu_microcode", Show::Text),
    ("logical CPUs", "cpus_logical", Show::Text),
    ("online CPUs", "cpus_online", Show::Text),
    ("online CPU list", "cpus_online_list", Show::Text),
    ("physical cores", "cpu_cores", Show::Text),
    ("sockets", "cpu_sockets", Show::Text),
    ("SMT control", "smt_control", Show::Text),
    ("SMT active", "smt_active", Show::YesNo),
    ("L1d cache", "cache_l1d_bytes", Show::Bytes),
    ("L1i cache", "cache_l1i_bytes", Show::Bytes),
    ("L2 cache", "cache_l2_bytes", Show::Bytes),
    ("L3 cache", "cache_l3_bytes", Show::Bytes),
    ("cache line", "cache_line_bytes", Show::Bytes),
    ("frequency driver", "cpufreq_driver", Show::Text),
    ("frequency governor", "cpufreq_governor", Show::Text),
    ("minimum frequency", "cpufreq_min_khz", Show::Khz),
    ("maximum frequency", "cpufreq_max_khz", Show::Khz),
    ("boost", "cpufreq_boost", Show::YesNo),
];

const MEMORY: &[(&str, &str, Show)] = &[
    ("total", "memory_total_bytes", Show::Bytes),
    ("transparent huge pages", "thp_enabled", Show::Text),
    ("THP defrag", "thp_defrag", Show::Text),
];

const CLOCK: &[(&str, &str, Show)] = &[
    ("clock source", "clocksource", Show::Text),
    ("available", "clocksources_available", Show::List),
];

const SCRATCH: &[(&str, &str, Show)] = &[
    ("path", "scratch_path", Show::Text),
    ("file system", "scratch_fs_type", Show::Text),
    ("device", "scratch_device", Show::Text),
    ("device number", "scratch_device_number", Show::Text),
    ("mount point", "scratch_mount_point", Show::Text),
    ("mount options", "scratch_mount_options", Show::Text),
    ("super block options", "scratch_super_options", Show::Text),
    ("marked rotational", "scratch_rotational", Show::YesNo),
];

/// Binary units, exact when the size is a whole number of them ("32 KiB", "23.5 GiB").
pub use crate::units::bytes;

fn show(v: &Value, how: Show) -> String {
    match (v, how) {
        (Value::Null, _) => "unknown".into(),
        (Value::Number(n), Show::Bytes) => n.as_u64().map_or_else(|| n.to_string(), bytes),
        (Value::Number(n), Show::Khz) => match n.as_u64() {
            Some(k) => format!("{} MHz", k / 1000),
            None => n.to_string(),
        },
        (Value::Bool(b), _) => if *b { "yes" } else { "no" }.into(),
        (Value::Array(items), _) => items
            .iter()
            .map(|i| show(i, Show::Text))
            .collect::<Vec<_>>()
            .join(" "),
        (Value::String(s), _) => s.clone(),
        (other, _) => other.to_string(),
    }
}

fn row(out: &mut String, width: usize, label: &str, value: &str) {
    // A stored fingerprint may come from any host of a fleet (see crate::text).
    let value = crate::text::escape_controls(value);
    let _ = writeln!(out, "  {:<width$}  {value}", format!("{label}:"));
}

/// The sections `osmeter info` prints. The tables name fields by their serialised names (a test
/// holds every name against the document), so the layout stays a table.
pub fn render(fp: &Fingerprint) -> String {
    let fields = fp.fields();
    let get = |k: &str| fields.get(k).unwrap_or(&Value::Null);
    let with_source = |k: &str, src: &str| {
        let v = show(get(k), Show::Text);
        match get(src).as_str() {
            Some(s) if !get(k).is_null() => format!("{v} (from {s})"),
            _ => v,
        }
    };
    // Labels of all sections share one column so the report reads as one table.
    let width = 1 + [SYSTEM, CPU, MEMORY, CLOCK, SCRATCH]
        .iter()
        .flat_map(|s| s.iter().map(|r| r.0.len()))
        .chain(
            [
                "preemption model",
                "preempt= at boot",
                "hypervisor",
                "vulnerabilities",
            ]
            .map(str::len),
        )
        .max()
        .unwrap_or(0);

    let mut out = String::new();
    let section = |out: &mut String, title: &str, rows: &[(&str, &str, Show)]| {
        let _ = writeln!(out, "{title}");
        for (label, key, how) in rows {
            row(out, width, label, &show(get(key), *how));
        }
    };
    section(&mut out, "System", SYSTEM);
    row(
        &mut out,
        width,
        "preemption model",
        &with_source("preempt_model", "preempt_model_source"),
    );
    row(
        &mut out,
        width,
        "preempt= at boot",
        &show(get("preempt_boot_param"), Show::Text),
    );
    row(
        &mut out,
        width,
        "hypervisor",
        &with_source("hypervisor", "hypervisor_source"),
    );

    out.push('\n');
    section(&mut out, "CPU", CPU);
    vulnerabilities(&mut out, width, get("cpu_vulnerabilities"));
    out.push('\n');
    section(&mut out, "Memory", MEMORY);
    out.push('\n');
    section(&mut out, "Clock", CLOCK);
    out.push('\n');
    section(&mut out, "Scratch directory", SCRATCH);
    if let Some(settings) = &fp.settings {
        // Names as `sysctl` prints them, in a column of their own (they are longer than labels).
        out.push_str("\nSettings (kernel tunables, and the limits of osmeter's cgroup)\n");
        let inner = settings.keys().map(|k| k.len()).max().unwrap_or(0);
        for (name, value) in settings {
            row(&mut out, inner, name, value);
        }
    }
    if let Some(notes) = get("notes").as_array().filter(|n| !n.is_empty()) {
        out.push_str("\nNotes\n");
        for n in notes {
            let _ = writeln!(out, "  - {}", show(n, Show::Text));
        }
    }
    out
}

/// One line per vulnerability the CPU has (mitigated or not); the unaffected ones on one line.
fn vulnerabilities(out: &mut String, width: usize, v: &Value) {
    let Some(map) = v.as_object() else {
        row(out, width, "vulnerabilities", "unknown");
        return;
    };
    let (clear, affected): (Vec<_>, Vec<_>) = map
        .iter()
        .partition(|(_, text)| text.as_str() == Some("Not affected"));
    row(
        out,
        width,
        "vulnerabilities",
        &format!("{} listed, {} affect this CPU", map.len(), affected.len()),
    );
    let inner = affected.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    for (name, text) in &affected {
        let _ = writeln!(
            out,
            "  {:<width$}    {:<inner$}  {}",
            "",
            format!("{name}:"),
            show(text, Show::Text),
            inner = inner + 1
        );
    }
    if !clear.is_empty() {
        let names: Vec<&str> = clear.iter().map(|(k, _)| k.as_str()).collect();
        let _ = writeln!(
            out,
            "  {:<width$}    not affected: {}",
            "",
            names.join(", ")
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn byte_sizes() {
        assert_eq!(bytes(64), "64 B");
        assert_eq!(bytes(32 * 1024), "32 KiB");
        assert_eq!(bytes(32 << 20), "32 MiB");
        assert_eq!(bytes(24_684_084 * 1024), "23.5 GiB");
    }

    #[test]
    fn every_field_a_table_names_is_in_the_document() {
        let fields = Fingerprint::default().fields();
        let named = [SYSTEM, CPU, MEMORY, CLOCK, SCRATCH]
            .iter()
            .flat_map(|s| s.iter().map(|r| r.1))
            .chain([
                "preempt_model",
                "preempt_model_source",
                "preempt_boot_param",
                "hypervisor",
                "hypervisor_source",
                "cpu_vulnerabilities",
                "notes",
            ]);
        for key in named {
            assert!(fields.contains_key(key), "no field {key}");
        }
    }

    #[test]
    fn sections_and_unknowns() {
        let fp: Fingerprint = serde_json::from_value(json!({
            "kernel_release": "6.1.0-test",
            "preempt_model": "PREEMPT_DYNAMIC",
            "preempt_model_source": "kernel version string",
            "hypervisor": "kvm",
            "hypervisor_source": "cpuid hypervisor signature",
            "cache_l1d_bytes": 32768,
            "cpufreq_max_khz": 3_500_000,
            "smt_active": false,
            "clocksources_available": ["tsc", "kvm-clock"],
            "cpu_vulnerabilities": {"mds": "Not affected", "spectre_v1": "Mitigation: x", "l1tf": "Not affected"},
            "notes": ["cpufreq: none here"],
        }))
        .unwrap();
        let text = render(&fp);
        for title in [
            "System\n",
            "CPU\n",
            "Memory\n",
            "Clock\n",
            "Scratch directory\n",
            "Notes\n",
        ] {
            assert!(text.contains(title), "missing section {title:?} in\n{text}");
        }
        let line = |label: &str| {
            text.lines()
                .find(|l| l.trim_start().starts_with(&format!("{label}:")))
                .unwrap_or_else(|| panic!("no {label} line in\n{text}"))
                .to_string()
        };
        assert!(line("kernel release").ends_with(" 6.1.0-test"));
        assert!(line("hostname").ends_with(" unknown"));
        assert!(line("preemption model").ends_with("PREEMPT_DYNAMIC (from kernel version string)"));
        assert!(line("hypervisor").contains("kvm"));
        assert!(line("L1d cache").ends_with(" 32 KiB"));
        assert!(line("maximum frequency").ends_with(" 3500 MHz"));
        assert!(line("SMT active").ends_with(" no"));
        assert!(line("available").ends_with(" tsc kvm-clock"));
        assert!(line("vulnerabilities").ends_with("3 listed, 1 affect this CPU"));
        assert!(text.contains("spectre_v1:  Mitigation: x"));
        assert!(
            text.contains("not affected: l1tf, mds") || text.contains("not affected: mds, l1tf")
        );
        // Values start in one column in every section.
        let col = |l: String| l.len() - l.trim_start_matches(|c: char| c != ':').len();
        let starts: Vec<usize> = ["hostname", "L1d cache", "total", "clock source", "path"]
            .iter()
            .map(|l| {
                let s = line(l);
                let after = col(s.clone()) + 1;
                after + s[after..].len() - s[after..].trim_start().len()
            })
            .collect();
        assert!(
            starts.windows(2).all(|w| w[0] == w[1]),
            "{starts:?}\n{text}"
        );
    }
}
