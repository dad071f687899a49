//! The mount table, read once and parsed in one place: /proc/self/mountinfo, its octal escapes,
//! optional fields and the mount that holds a path. Scratch clean-up, image mounts, cgroups,
//! tracefs, the real-time diagnosis and the fingerprint all ask here.

use std::path::{Path, PathBuf};

/// One line of /proc/self/mountinfo.
#[derive(Debug, Clone, PartialEq)]
pub struct Mount {
    /// "major:minor" of the device holding the file system.
    pub device_number: String,
    /// The directory of the file system that is mounted (not "/" for bind mounts and for cgroup
    /// hierarchies seen from inside some containers).
    pub root: String,
    pub mount_point: String,
    pub mount_options: String,
    pub fs_type: String,
    pub source: String,
    pub super_options: String,
}

impl Mount {
    pub fn path(&self) -> &Path {
        Path::new(&self.mount_point)
    }
}

/// This process's mount table; empty when /proc is not mounted or cannot be read (callers then
/// find nothing mounted, which is what they can act on).
pub fn table() -> Vec<Mount> {
    parse(&std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default())
}

/// This process's mount table, or why it cannot be read.
pub fn read() -> std::io::Result<Vec<Mount>> {
    std::fs::read_to_string("/proc/self/mountinfo").map(|text| parse(&text))
}

/// Parses mountinfo text; lines that are not mountinfo lines are skipped.
pub fn parse(text: &str) -> Vec<Mount> {
    text.lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            // Optional fields (shared:N, master:N ...) sit between field 6 and a lone "-".
            let sep = fields.iter().skip(6).position(|f| *f == "-")? + 6;
            if fields.len() < sep + 3 {
                return None;
            }
            Some(Mount {
                device_number: fields[2].to_string(),
                root: unescape_octal(fields[3]),
                mount_point: unescape_octal(fields[4]),
                mount_options: fields[5].to_string(),
                fs_type: fields[sep + 1].to_string(),
                source: unescape_octal(fields[sep + 2]),
                super_options: fields
                    .get(sep + 3)
                    .map_or_else(String::new, |s| s.to_string()),
            })
        })
        .collect()
}

/// Undoes the kernel's octal escapes in mountinfo fields (space \040, tab \011, newline \012,
/// backslash \134).
pub fn unescape_octal(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' && i + 4 <= bytes.len() {
            let digits = &bytes[i + 1..i + 4];
            if digits.iter().all(|d| (b'0'..=b'7').contains(d)) {
                let v = digits
                    .iter()
                    .fold(0u32, |acc, d| acc * 8 + u32::from(d - b'0'));
                if let Ok(b) = u8::try_from(v) {
                    out.push(b);
                    i += 4;
                    continue;
                }
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The mount that holds `path` (absolute, canonical): the longest mount point that is `path` or a
/// parent directory of it. Of two mounts on the same point the later one is on top, so it wins.
pub fn mount_for<'a>(mounts: &'a [Mount], path: &str) -> Option<&'a Mount> {
    let covers = |mp: &str| {
        mp == "/"
            || path == mp
            || (path.starts_with(mp) && path.as_bytes().get(mp.len()) == Some(&b'/'))
    };
    let mut best: Option<&Mount> = None;
    for m in mounts.iter().filter(|m| covers(&m.mount_point)) {
        if best.is_none_or(|b| m.mount_point.len() >= b.mount_point.len()) {
            best = Some(m);
        }
    }
    best
}

/// The mount on top at exactly `path`, if `path` is a mount point now.
pub fn mounted_at(path: &Path) -> Option<Mount> {
    table().into_iter().rev().find(|m| m.path() == path)
}

/// Every mount point at or below `dir`, deepest first (the order to unmount them in).
pub fn points_below(mounts: &[Mount], dir: &Path) -> Vec<PathBuf> {
    let mut points: Vec<PathBuf> = mounts
        .iter()
        .map(|m| PathBuf::from(&m.mount_point))
        .filter(|p| p.starts_with(dir))
        .collect();
    points.sort_by_key(|p| std::cmp::Reverse(p.components().count()));
    points
}

/// Mount points of file systems of type `fs_type`, in the table's order.
pub fn points_of_type(mounts: &[Mount], fs_type: &str) -> Vec<PathBuf> {
    mounts
        .iter()
        .filter(|m| m.fs_type == fs_type)
        .map(|m| PathBuf::from(&m.mount_point))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    // Several mounts, an optional field, a mount point with an escaped space, a bind mount of a
    // subdirectory, and a file system mounted twice on the same point (the later one is on top).
    const MOUNTINFO: &str = "\
22 27 0:21 / /proc rw,relatime - proc proc rw
27 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw,discard
30 27 0:27 / /tmp rw,nosuid,nodev - tmpfs tmpfs rw,size=1024k
31 27 8:17 / /mnt/my\\040disk rw,noatime master:3 - xfs /dev/sdb1 rw,attr2
32 27 8:33 /sub\\040dir /mnt/my rw - ext4 /dev/sdc1 rw
33 30 0:40 / /tmp rw,relatime - tmpfs tmpfs rw,size=2048k
";

    #[test]
    fn mountinfo_parses_fields_and_escapes() {
        let m = parse(MOUNTINFO);
        assert_eq!(m.len(), 6);
        assert_eq!(m[1].mount_point, "/");
        assert_eq!(m[1].fs_type, "ext4");
        assert_eq!(m[1].source, "/dev/vda");
        assert_eq!(m[1].device_number, "254:0");
        assert_eq!(m[1].super_options, "rw,discard");
        assert_eq!(m[3].mount_point, "/mnt/my disk");
        assert_eq!(m[3].mount_options, "rw,noatime");
        assert_eq!(m[3].fs_type, "xfs");
        assert_eq!(m[4].root, "/sub dir");
        assert_eq!(parse("garbage line\n\n"), vec![]);
    }

    #[test]
    fn mount_for_picks_longest_covering_point() {
        let m = parse(MOUNTINFO);
        assert_eq!(mount_for(&m, "/home/u").unwrap().fs_type, "ext4");
        assert_eq!(mount_for(&m, "/").unwrap().source, "/dev/vda");
        assert_eq!(mount_for(&m, "/mnt/my disk/x").unwrap().fs_type, "xfs");
        assert_eq!(mount_for(&m, "/mnt/my").unwrap().source, "/dev/sdc1");
        // "/mnt/mystery" is not under "/mnt/my".
        assert_eq!(mount_for(&m, "/mnt/mystery").unwrap().mount_point, "/");
        let tmp = mount_for(&m, "/tmp/osmeter-1").unwrap();
        assert_eq!(tmp.super_options, "rw,size=2048k");
        assert_eq!(mount_for(&[], "/x"), None);
    }

    #[test]
    fn points_below_come_deepest_first() {
        let m = parse(MOUNTINFO);
        assert_eq!(
            points_below(&m, Path::new("/mnt")),
            vec![PathBuf::from("/mnt/my disk"), PathBuf::from("/mnt/my")]
        );
        assert_eq!(points_below(&m, Path::new("/mn")), Vec::<PathBuf>::new());
        assert_eq!(points_of_type(&m, "tmpfs").len(), 2);
    }

    #[test]
    fn octal_unescape() {
        assert_eq!(unescape_octal("a\\040b\\011c\\134d"), "a b\tc\\d");
        assert_eq!(unescape_octal("trailing\\04"), "trailing\\04");
        assert_eq!(unescape_octal("\\999"), "\\999");
        assert_eq!(unescape_octal("plain"), "plain");
    }

    #[test]
    fn this_process_sees_its_root() {
        let table = read().unwrap();
        assert!(mount_for(&table, "/").is_some());
        assert!(mounted_at(Path::new("/")).is_some());
    }
}
