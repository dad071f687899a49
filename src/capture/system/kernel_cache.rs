//! The kernels of a sweep fetched together, and the cache held under `--cache-max`: a download
//! waits on the network, not a CPU, so several run at once; a sweep of twenty kernels must not
//! leave the cache twenty kernels larger without a word.

use super::kernel::{self, Kernel};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Instant, SystemTime};

/// The cache's bound when `--cache-max` is not given: some 150 kernels' `boot/` (8-14 MB each),
/// more than the archive's kernel series hold.
pub const DEFAULT_MAX: &str = "2G";

/// Downloads at once: enough to keep a link busy, few enough not to hammer a mirror.
const FETCHES_AT_ONCE: usize = 4;

/// `500M`, `2G`, `2GiB`, `1T`: bytes.
pub fn size_arg(text: &str) -> std::result::Result<u64, String> {
    let t = text.trim();
    let t = t
        .strip_suffix("iB")
        .or_else(|| t.strip_suffix('B'))
        .unwrap_or(t);
    let (digits, shift) = match t.chars().last() {
        Some('K' | 'k') => (&t[..t.len() - 1], 10),
        Some('M' | 'm') => (&t[..t.len() - 1], 20),
        Some('G' | 'g') => (&t[..t.len() - 1], 30),
        Some('T' | 't') => (&t[..t.len() - 1], 40),
        _ => (t, 0),
    };
    digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(1 << shift))
        .filter(|n| *n > 0)
        .ok_or_else(|| format!("{text:?} is not a size: give bytes with a unit, e.g. 500M or 2G"))
}

/// One package of a sweep: its name and download size (0 when unknown).
pub struct Wanted<'a> {
    pub name: &'a str,
    pub size: u64,
}

/// Fetches every package not yet cached, `FETCHES_AT_ONCE` at a time, with a line per package
/// done and the time left; returns each package's kernel or why it could not be fetched, in the
/// order given. The caller holds the cache's lock.
pub fn fetch_all(wanted: &[Wanted]) -> Vec<std::result::Result<Kernel, String>> {
    let slots: Vec<Mutex<Option<std::result::Result<Kernel, String>>>> =
        wanted.iter().map(|_| Mutex::new(None)).collect();
    let mut missing = Vec::new();
    for (i, w) in wanted.iter().enumerate() {
        match kernel::cached(w.name) {
            Ok(Some(k)) => *slots[i].lock().unwrap() = Some(Ok(k)),
            Ok(None) => missing.push(i),
            Err(e) => *slots[i].lock().unwrap() = Some(Err(format!("{e:#}"))),
        }
    }
    if !missing.is_empty() {
        let total: u64 = missing.iter().map(|&i| wanted[i].size).sum();
        // A package named on its own was not sized (the archive was not asked).
        let size = if total > 0 {
            format!(", {} to download", crate::units::bytes(total))
        } else {
            String::new()
        };
        eprintln!(
            "osmeter: fetching {} kernel package(s) into {}{size}, {FETCHES_AT_ONCE} at once",
            missing.len(),
            kernel::cache_dir().join("kernels").display()
        );
        let (next, done, bytes) = (AtomicUsize::new(0), AtomicUsize::new(0), AtomicU64::new(0));
        let start = Instant::now();
        std::thread::scope(|scope| {
            for _ in 0..FETCHES_AT_ONCE.min(missing.len()) {
                let (next, done, bytes, missing, slots) = (&next, &done, &bytes, &missing, &slots);
                // Where no thread may start, the fetches left run on the ones that did.
                let _ = crate::system::limits::spawn_scoped(scope, "osm-fetch", move || loop {
                    if crate::interrupt::requested() {
                        break;
                    }
                    let Some(&i) = missing.get(next.fetch_add(1, Ordering::SeqCst)) else {
                        break;
                    };
                    let w = &wanted[i];
                    let got = kernel::fetch(w.name).map_err(|e| format!("{e:#}"));
                    let n = done.fetch_add(1, Ordering::SeqCst) + 1;
                    let so_far = bytes.fetch_add(w.size, Ordering::SeqCst) + w.size;
                    // Unsized packages count as one share each.
                    let left = if total > 0 {
                        eta(start.elapsed().as_secs_f64(), so_far, total)
                    } else {
                        eta(
                            start.elapsed().as_secs_f64(),
                            n as u64,
                            missing.len() as u64,
                        )
                    };
                    eprintln!(
                        "osmeter: fetched {} of {}: {}{}{left}",
                        n,
                        missing.len(),
                        w.name,
                        if got.is_ok() { "" } else { " (failed)" }
                    );
                    *slots[i].lock().unwrap() = Some(got);
                });
            }
        });
    }
    slots
        .into_iter()
        .map(|s| {
            s.into_inner()
                .unwrap()
                .unwrap_or_else(|| Err("not fetched: interrupted".into()))
        })
        .collect()
}

/// ", about 1 min 20 s left" from the share of the work done in `elapsed` seconds.
pub fn eta(elapsed: f64, done: u64, total: u64) -> String {
    if done == 0 || done >= total {
        return String::new();
    }
    let left = elapsed * (total - done) as f64 / done as f64;
    format!(", about {} left", crate::units::duration(left * 1e9))
}

/// A cached kernel: its directory, size on disk and last use.
#[derive(Debug, Clone)]
pub struct Entry {
    pub dir: PathBuf,
    pub bytes: u64,
    pub used: SystemTime,
}

fn size_of(path: &Path) -> u64 {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return 0;
    };
    if !meta.is_dir() {
        return meta.len();
    }
    std::fs::read_dir(path)
        .map(|d| d.flatten().map(|e| size_of(&e.path())).sum())
        .unwrap_or(0)
}

/// The kernels the cache holds (unpacked packages; half-unpacked ones are hidden and ignored).
pub fn entries() -> Vec<Entry> {
    let Ok(dir) = std::fs::read_dir(kernel::cache_dir().join("kernels")) else {
        return Vec::new();
    };
    dir.flatten()
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .map(|e| Entry {
            bytes: size_of(&e.path()),
            used: e
                .metadata()
                .and_then(|m| m.modified())
                .unwrap_or(SystemTime::UNIX_EPOCH),
            dir: e.path(),
        })
        .collect()
}

/// Which entries to remove so that the cache holds at most `max` bytes: the least recently
/// used first, never one of `keep` (the kernels the sweep boots). Returns them and the bytes
/// left.
pub fn to_evict(mut entries: Vec<Entry>, keep: &[PathBuf], max: u64) -> (Vec<Entry>, u64) {
    let mut held: u64 = entries.iter().map(|e| e.bytes).sum();
    entries.sort_by_key(|e| e.used);
    let mut out = Vec::new();
    for e in entries {
        if held <= max {
            break;
        }
        if keep.contains(&e.dir) {
            continue;
        }
        held -= e.bytes;
        out.push(e);
    }
    (out, held)
}

/// Holds the cache under `max`, removing the least recently used kernels but those of this
/// sweep, and says what it removed, or that this sweep's kernels alone are over the bound.
pub fn enforce(max: u64, keep: &[PathBuf]) {
    let (evict, held) = to_evict(entries(), keep, max);
    for e in &evict {
        if std::fs::remove_dir_all(&e.dir).is_ok() {
            eprintln!(
                "osmeter: removed {} ({}) from the kernel cache to stay under --cache-max {}",
                e.dir.display(),
                crate::units::bytes(e.bytes),
                crate::units::bytes(max)
            );
        }
    }
    if held > max {
        eprintln!(
            "osmeter: warning: the kernel cache holds {} in {}, over --cache-max {}: the kernels \
             of this sweep alone take that; raise --cache-max or sweep fewer kernels",
            crate::units::bytes(held),
            kernel::cache_dir().join("kernels").display(),
            crate::units::bytes(max)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn sizes_take_binary_units() {
        assert_eq!(size_arg("2G"), Ok(2 << 30));
        assert_eq!(size_arg("500M"), Ok(500 << 20));
        assert_eq!(size_arg("1GiB"), Ok(1 << 30));
        assert_eq!(size_arg("4096"), Ok(4096));
        assert_eq!(size_arg(DEFAULT_MAX), Ok(2 << 30));
        for bad in ["", "0", "2X", "-1G", "99999999999T"] {
            assert!(size_arg(bad).unwrap_err().contains("500M"), "{bad}");
        }
    }

    #[test]
    fn the_least_recently_used_go_first_and_the_sweep_s_never() {
        let at = |s| SystemTime::UNIX_EPOCH + Duration::from_secs(s);
        let e = |name: &str, bytes, used| Entry {
            dir: PathBuf::from(name),
            bytes,
            used: at(used),
        };
        let all = vec![
            e("new", 10, 30),
            e("old", 10, 10),
            e("mid", 10, 20),
            e("sweep", 10, 5),
        ];
        let (gone, held) = to_evict(all.clone(), &[PathBuf::from("sweep")], 25);
        let names: Vec<_> = gone.iter().map(|e| e.dir.display().to_string()).collect();
        assert_eq!((names, held), (vec!["old".to_string(), "mid".into()], 20));
        let (gone, held) = to_evict(all.clone(), &[], 100);
        assert!(gone.is_empty() && held == 40);
        // Over the bound with only the sweep's own kernels left: said, not removed.
        let keep: Vec<PathBuf> = all.iter().map(|e| e.dir.clone()).collect();
        assert_eq!(to_evict(all, &keep, 5).1, 40);
    }

    #[test]
    fn the_time_left_follows_the_share_done() {
        assert_eq!(eta(10.0, 0, 100), "");
        assert_eq!(eta(10.0, 100, 100), "");
        assert!(eta(10.0, 50, 100).contains("10"), "{}", eta(10.0, 50, 100));
    }
}
