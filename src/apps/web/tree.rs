//! The file tree a web server serves: sizes drawn from a heavy-tailed model of web files, contents
//! that follow from the seed (so the client can check every byte), and the page-cache state of the
//! tree (dropped file by file for cold runs, and measured before each run).
//!
//! Sizes follow the shape measured for web servers in the late 1990s (and used by the SURGE
//! generator): most files from a lognormal body with a median near 11 KiB, about one in fourteen
//! from a Pareto tail starting at 133 kB with index 1.1, which puts most of the bytes in a few
//! large files. The largest size is capped so the tree stays bounded.

use crate::stats::rng::Rng;
use crate::system::page_size;
use anyhow::{Context, Result};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

/// The size model (natural-log lognormal body, Pareto tail).
const BODY_MU: f64 = 9.357;
const BODY_SIGMA: f64 = 1.318;
const TAIL_SHARE: f64 = 0.07;
const TAIL_START: f64 = 133_000.0;
const TAIL_ALPHA: f64 = 1.1;

/// Files per directory, so the tree has directories as a real site does.
const PER_DIR: usize = 32;

/// One file of the tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileSpec {
    /// The URL path, `/d003/f0101.bin`.
    pub url: String,
    pub size: u64,
}

/// A generated tree on disk.
#[derive(Debug)]
pub struct Tree {
    pub root: PathBuf,
    pub files: Vec<FileSpec>,
    seed: u64,
}

/// `count` file sizes from the model, none larger than `cap`, the same for the same seed.
pub fn sizes(seed: u64, count: usize, cap: u64) -> Vec<u64> {
    let mut rng = Rng::stream(seed, 0x5123);
    (0..count)
        .map(|_| {
            let raw = if rng.unit() < TAIL_SHARE {
                // Inverse CDF of the Pareto distribution; 1 - u is in (0, 1].
                TAIL_START / (1.0 - rng.unit()).powf(1.0 / TAIL_ALPHA)
            } else {
                (BODY_MU + BODY_SIGMA * rng.normal()).exp().min(TAIL_START)
            };
            (raw.round() as u64).clamp(1, cap)
        })
        .collect()
}

/// The URL path of file `index`.
pub fn url_of(index: usize) -> String {
    format!("/d{:03}/f{index:04}.bin", index / PER_DIR)
}

/// The bytes of file `index` from `offset` on, filling `out`: a 4 KiB block drawn from the seed
/// and the index, repeated.
pub fn fill_content(seed: u64, index: usize, offset: u64, out: &mut [u8]) {
    let block = block_of(seed, index);
    for (i, b) in out.iter_mut().enumerate() {
        *b = block[((offset + i as u64) % BLOCK as u64) as usize];
    }
}

const BLOCK: usize = 4096;

fn block_of(seed: u64, index: usize) -> [u8; BLOCK] {
    let mut rng = Rng::stream(seed, 0xb10c_0000 + index as u64);
    let mut block = [0u8; BLOCK];
    for chunk in block.chunks_mut(8) {
        chunk.copy_from_slice(&rng.next_u64().to_le_bytes());
    }
    block
}

impl Tree {
    /// Writes `count` files under `root` (which must exist and be empty), then flushes them to
    /// the device so that their pages can later be dropped. When `group` is set the directories
    /// and files are given to that group and made readable by it (the server's unprivileged
    /// workers read them), and nobody else.
    pub fn generate(
        root: &Path,
        seed: u64,
        count: usize,
        cap: u64,
        group: Option<u32>,
    ) -> Result<Tree> {
        let files: Vec<FileSpec> = sizes(seed, count, cap)
            .into_iter()
            .enumerate()
            .map(|(i, size)| FileSpec {
                url: url_of(i),
                size,
            })
            .collect();
        share_with(root, group, 0o750)?;
        for (i, f) in files.iter().enumerate() {
            let path = root.join(&f.url[1..]);
            let dir = path.parent().expect("a file path has a directory");
            if i % PER_DIR == 0 {
                std::fs::create_dir(dir)
                    .with_context(|| format!("cannot create {}", dir.display()))?;
                share_with(dir, group, 0o750)?;
            }
            let mut file = crate::scratch::create_new(&path)?;
            let block = block_of(seed, i);
            let mut left = f.size;
            while left > 0 {
                let n = left.min(BLOCK as u64) as usize;
                file.write_all(&block[..n])
                    .with_context(|| format!("cannot write {}", path.display()))?;
                left -= n as u64;
            }
            share_with(&path, group, 0o640)?;
        }
        let tree = Tree {
            root: root.to_path_buf(),
            files,
            seed,
        };
        // Dirty pages cannot be dropped: write everything back once, here.
        let dir = std::fs::File::open(root)?;
        // SAFETY: syncfs on a descriptor we own.
        if unsafe { libc::syncfs(dir.as_raw_fd()) } != 0 {
            return Err(std::io::Error::last_os_error())
                .with_context(|| format!("cannot flush {} to its device", root.display()));
        }
        Ok(tree)
    }

    pub fn seed(&self) -> u64 {
        self.seed
    }

    pub fn path_of(&self, index: usize) -> PathBuf {
        self.root.join(&self.files[index].url[1..])
    }

    pub fn total_bytes(&self) -> u64 {
        self.files.iter().map(|f| f.size).sum()
    }

    /// Asks the kernel to drop the cached pages of every file of the tree (and of nothing else).
    pub fn drop_cache(&self) -> Result<()> {
        for i in 0..self.files.len() {
            let path = self.path_of(i);
            let f = std::fs::File::open(&path)
                .with_context(|| format!("cannot open {}", path.display()))?;
            // SAFETY: advice on a descriptor we own; the whole file.
            let rc = unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
            if rc != 0 {
                return Err(std::io::Error::from_raw_os_error(rc)).with_context(|| {
                    format!("cannot drop the cached pages of {}", path.display())
                });
            }
        }
        Ok(())
    }

    /// Reads every file once, so its pages are cached.
    pub fn warm_cache(&self) -> Result<()> {
        let mut buf = vec![0u8; 64 << 10];
        for i in 0..self.files.len() {
            let path = self.path_of(i);
            let mut f = std::fs::File::open(&path)
                .with_context(|| format!("cannot open {}", path.display()))?;
            while std::io::Read::read(&mut f, &mut buf)? > 0 {}
        }
        Ok(())
    }

    /// The share of the tree's pages that are in the page cache now (mincore on each file).
    pub fn resident_share(&self) -> Result<f64> {
        let page = page_size();
        let (mut resident, mut total) = (0u64, 0u64);
        let mut vec = Vec::new();
        for i in 0..self.files.len() {
            let path = self.path_of(i);
            let f = std::fs::File::open(&path)
                .with_context(|| format!("cannot open {}", path.display()))?;
            let len = self.files[i].size as usize;
            let pages = len.div_ceil(page);
            vec.resize(pages, 0u8);
            // SAFETY: a read-only shared mapping of a file we hold open, unmapped below; mincore
            // writes one byte per page of it into vec, which has that many.
            unsafe {
                let p = libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ,
                    libc::MAP_SHARED,
                    f.as_raw_fd(),
                    0,
                );
                if p == libc::MAP_FAILED {
                    return Err(std::io::Error::last_os_error())
                        .with_context(|| format!("cannot map {}", path.display()));
                }
                let rc = libc::mincore(p, len, vec.as_mut_ptr());
                libc::munmap(p, len);
                if rc != 0 {
                    return Err(std::io::Error::last_os_error())
                        .with_context(|| format!("mincore failed on {}", path.display()));
                }
            }
            resident += vec.iter().filter(|&&b| b & 1 == 1).count() as u64;
            total += pages as u64;
        }
        Ok(if total == 0 {
            0.0
        } else {
            resident as f64 / total as f64
        })
    }
}

/// Why the pages of files under `path` cannot be dropped, if they cannot: on tmpfs (and ramfs)
/// the cached pages are the files themselves, so a run there is never cold.
pub fn cannot_drop(path: &Path) -> Option<String> {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).ok()?;
    // SAFETY: statfs fills the struct we pass.
    let kind = unsafe {
        let mut s: libc::statfs = std::mem::zeroed();
        if libc::statfs(c.as_ptr(), &mut s) != 0 {
            return None;
        }
        s.f_type
    };
    const RAMFS_MAGIC: libc::c_long = 0x8584_58f6;
    (kind == libc::TMPFS_MAGIC || kind as libc::c_long == RAMFS_MAGIC).then(|| {
        format!(
            "{} is in memory (tmpfs): its pages cannot be dropped, so there are no cold runs; \
             choose a --dir on a disk file system",
            path.display()
        )
    })
}

/// Gives `path` to `group` with `mode` (owner keeps it; others get nothing). Without a group the
/// path stays private to its owner.
pub(crate) fn share_with(path: &Path, group: Option<u32>, mode: u32) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let Some(gid) = group else {
        return Ok(());
    };
    std::os::unix::fs::chown(path, None, Some(gid))
        .with_context(|| format!("cannot give {} to group {gid}", path.display()))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .with_context(|| format!("cannot set the mode of {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_deterministic_heavy_tailed_and_capped() {
        let a = sizes(42, 20_000, 4 << 20);
        assert_eq!(a, sizes(42, 20_000, 4 << 20));
        assert_ne!(a, sizes(43, 20_000, 4 << 20));
        let mut s = a.clone();
        s.sort_unstable();
        let median = s[s.len() / 2] as f64;
        // The body's median is e^9.357 = 11.6 kB; the tail shifts the overall median up a little.
        assert!((10_500.0..14_000.0).contains(&median), "median {median}");
        let tail = s.iter().filter(|&&x| x as f64 > TAIL_START).count() as f64 / s.len() as f64;
        assert!((0.055..0.085).contains(&tail), "tail share {tail}");
        let total: u64 = s.iter().sum();
        let top: u64 = s[s.len() * 99 / 100..].iter().sum();
        // Heavy tail: the largest 1 % of files hold a large part of the bytes.
        assert!(
            top as f64 > 0.2 * total as f64,
            "top 1 % hold {top} of {total}"
        );
        assert!(*s.last().unwrap() <= 4 << 20 && s[0] >= 1);
    }

    #[test]
    fn urls_spread_over_directories() {
        assert_eq!(url_of(0), "/d000/f0000.bin");
        assert_eq!(url_of(31), "/d000/f0031.bin");
        assert_eq!(url_of(32), "/d001/f0032.bin");
        assert_eq!(url_of(1234), "/d038/f1234.bin");
    }

    #[test]
    fn files_hold_their_size_and_content_and_their_pages_can_be_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("tree");
        std::fs::create_dir(&root).unwrap();
        let tree = Tree::generate(&root, 7, 40, 1 << 20, None).unwrap();
        for (i, f) in tree.files.iter().enumerate() {
            let bytes = std::fs::read(tree.path_of(i)).unwrap();
            assert_eq!(bytes.len() as u64, f.size, "{}", f.url);
            let mut want = vec![0u8; bytes.len()];
            fill_content(7, i, 0, &mut want);
            assert_eq!(bytes, want, "{}", f.url);
        }
        // Offsets past one block continue the same pattern.
        let (mut a, mut b) = ([0u8; 10], [0u8; 10]);
        fill_content(7, 3, BLOCK as u64 + 5, &mut a);
        fill_content(7, 3, 5, &mut b);
        assert_eq!(a, b);
        tree.warm_cache().unwrap();
        assert!(tree.resident_share().unwrap() > 0.99);
        tree.drop_cache().unwrap();
        // Clean pages of an ext4 or xfs file go at once; a tmpfs keeps them (they are the data).
        let after = tree.resident_share().unwrap();
        let tmpfs = cannot_drop(&root).is_some();
        assert!(tmpfs || after < 0.05, "{after} of the pages still cached");
    }
}
