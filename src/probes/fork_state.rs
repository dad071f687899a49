//! What a fork copies: the page tables that map the forking process's private memory, which fork
//! write-protects and copies and the child's exit frees again, so a fork's time grows with them.
//! On the 2-CPU KVM guest this was measured on, a small C process forked in ~137 us and each
//! page-table page it added (one touched page per 2 MiB) cost ~2.8 us more; 16 MiB touched in base
//! pages took it to ~690 us, the same 16 MiB in huge pages to ~180 us. The osmeter worker's page
//! tables moved between 92 and 112 KiB from round to round with address-space randomisation, which
//! its workers for fork now start without ([`super::wants_fixed_layout`]). The figure states
//! the sizes it was measured at.

/// The forking process's memory, from /proc/self.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ForkingProcess {
    /// Resident anonymous memory (RssAnon).
    pub anon_kib: u64,
    /// Of it, in transparent huge pages (AnonHugePages of smaps_rollup).
    pub anon_huge_kib: u64,
    /// Page tables (VmPTE).
    pub page_tables_kib: u64,
    /// Whether the process runs without address-space randomisation (ADDR_NO_RANDOMIZE).
    pub layout_fixed: bool,
    /// Whether the system randomises layouts at all (kernel.randomize_va_space is not 0).
    pub system_randomises: bool,
}

impl ForkingProcess {
    pub fn read() -> Option<ForkingProcess> {
        let status = std::fs::read_to_string("/proc/self/status").ok()?;
        let rollup = std::fs::read_to_string("/proc/self/smaps_rollup").unwrap_or_default();
        Some(ForkingProcess {
            anon_kib: kib_field(&status, "RssAnon:")?,
            anon_huge_kib: kib_field(&rollup, "AnonHugePages:").unwrap_or(0),
            page_tables_kib: kib_field(&status, "VmPTE:")?,
            layout_fixed: std::fs::read_to_string("/proc/self/personality")
                .ok()
                .and_then(|t| u64::from_str_radix(t.trim(), 16).ok())
                .is_some_and(|p| p & ADDR_NO_RANDOMIZE != 0),
            system_randomises: std::fs::read_to_string("/proc/sys/kernel/randomize_va_space")
                .map_or(true, |v| v.trim() != "0"),
        })
    }

    pub fn note(&self) -> String {
        format!(
            "the forking process held {:.1} MiB of anonymous memory ({:.1} MiB in huge pages) and \
             {} KiB of page tables, {}: fork copies the page tables and the child's exit frees \
             them, so the figure grows with them; the child runs on the measuring CPU",
            self.anon_kib as f64 / 1024.0,
            self.anon_huge_kib as f64 / 1024.0,
            self.page_tables_kib,
            if self.layout_fixed {
                "laid out without address-space randomisation (the same in every round)"
            } else if !self.system_randomises {
                "laid out as the system has it, without randomisation (kernel.randomize_va_space \
                 is 0)"
            } else {
                "laid out with address-space randomisation (page tables vary by round)"
            }
        )
    }
}

/// personality(2)'s flag, as /proc/self/personality shows it (hexadecimal).
const ADDR_NO_RANDOMIZE: u64 = 0x0040000;

/// The value in KiB of a `Name:   123 kB` line.
fn kib_field(text: &str, name: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix(name))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_read_in_kib() {
        let status = "Name:\tx\nVmPTE:\t      88 kB\nRssAnon:\t    2048 kB\n";
        assert_eq!(kib_field(status, "VmPTE:"), Some(88));
        assert_eq!(kib_field(status, "RssAnon:"), Some(2048));
        assert_eq!(kib_field(status, "VmSwap:"), None);
    }

    #[test]
    fn this_process_is_read() {
        let p = ForkingProcess::read().unwrap();
        assert!(p.anon_kib > 0 && p.page_tables_kib > 0, "{p:?}");
        assert!(p.anon_huge_kib <= p.anon_kib, "{p:?}");
        assert!(p.note().contains("MiB of anonymous memory"));
    }
}
