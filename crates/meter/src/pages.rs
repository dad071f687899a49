//! Which pages back a buffer: 2 MiB pages (transparent huge pages) or the base 4 KiB ones. A
//! figure that depends on where its buffer lies in physical memory (a pointer chase near a cache's
//! size, a copy) moves with the placement of 4 KiB pages from run to run; inside a 2 MiB page the
//! placement is contiguous, so that noise is gone, and a figure is compared only with runs that had
//! the same kind of pages.

use serde::{Deserialize, Serialize};

/// Size of a transparent huge page on x86-64 and most arm64 kernels.
pub const HUGE_PAGE: usize = 2 << 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Pages {
    /// Every byte in 2 MiB pages.
    Huge,
    /// None in 2 MiB pages: the base pages (THP off, or none free).
    Base,
    /// Some of each, or rounds that had different kinds.
    Mixed,
}

impl Pages {
    /// From the bytes of a region held in huge pages, of `len`.
    pub fn of(huge_bytes: usize, len: usize) -> Pages {
        if huge_bytes == 0 {
            Pages::Base
        } else if huge_bytes >= len {
            Pages::Huge
        } else {
            Pages::Mixed
        }
    }

    /// Two buffers' kinds (or two rounds') as one.
    pub fn with(self, other: Pages) -> Pages {
        if self == other {
            self
        } else {
            Pages::Mixed
        }
    }

    pub fn describe(self) -> &'static str {
        match self {
            Pages::Huge => "2 MiB pages",
            Pages::Base => "4 KiB pages",
            Pages::Mixed => "a mix of 2 MiB and 4 KiB pages",
        }
    }
}

/// Bytes of the mapping that holds `addr` that are in transparent huge pages, from the
/// `AnonHugePages` line of its entry in /proc/self/smaps; None when that cannot be read.
pub fn huge_bytes(addr: usize) -> Option<usize> {
    let text = std::fs::read_to_string("/proc/self/smaps").ok()?;
    huge_bytes_in(&text, addr)
}

pub fn huge_bytes_in(smaps: &str, addr: usize) -> Option<usize> {
    let mut inside = false;
    for line in smaps.lines() {
        let first = line.split_whitespace().next().unwrap_or("");
        if let Some((a, b)) = first.split_once('-') {
            if let (Ok(start), Ok(end)) =
                (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16))
            {
                inside = (start..end).contains(&addr);
                continue;
            }
        }
        if inside {
            if let Some(rest) = line.strip_prefix("AnonHugePages:") {
                let kb: usize = rest.trim().trim_end_matches("kB").trim().parse().ok()?;
                return Some(kb * 1024);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMAPS: &str = "\
55d0c0000000-55d0c0400000 rw-p 00000000 00:00 0
Size:               4096 kB
AnonHugePages:      2048 kB
Locked:                0 kB
7f0000000000-7f0000200000 rw-p 00000000 00:00 0
Size:               2048 kB
AnonHugePages:         0 kB
";

    #[test]
    fn the_mapping_holding_the_address_is_read() {
        assert_eq!(huge_bytes_in(SMAPS, 0x55d0c0001000), Some(2 << 20));
        assert_eq!(huge_bytes_in(SMAPS, 0x7f0000100000), Some(0));
        assert_eq!(huge_bytes_in(SMAPS, 0x1000), None);
    }

    #[test]
    fn kinds() {
        assert_eq!(Pages::of(0, 4096), Pages::Base);
        assert_eq!(Pages::of(2 << 20, 2 << 20), Pages::Huge);
        assert_eq!(Pages::of(2 << 20, 4 << 20), Pages::Mixed);
        assert_eq!(Pages::Huge.with(Pages::Huge), Pages::Huge);
        assert_eq!(Pages::Huge.with(Pages::Base), Pages::Mixed);
    }
}
