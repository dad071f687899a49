//! The guest kernel: the user's own (`--kernel PATH`) or a Debian `linux-image-*` package fetched
//! with `apt-get download` and unpacked into osmeter's cache, so it is fetched once per machine.
//! Only the package's `boot/` is kept (the image, its config and System.map, some 8-14 MB): the
//! guest boots the image alone, and the modules beside it (90-390 MB unpacked) would only fill
//! the cache.

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};

/// The meta-package whose dependency names the current cloud kernel: the cloud flavour has the
/// drivers a QEMU guest needs built in and boots fastest.
pub const DEFAULT_PACKAGE: &str = "linux-image-cloud-amd64";

#[derive(Debug, Clone)]
pub struct Kernel {
    pub image: PathBuf,
    /// What it is, for the output and the stored run: a package name or the given path.
    pub label: String,
    /// A content hash, naming the cached symbol table of this exact kernel.
    pub key: String,
}

/// Where osmeter keeps what it fetches: `$OSMETER_CACHE`, else `$XDG_CACHE_HOME/osmeter`, else
/// `~/.cache/osmeter` (relative values of either ignored, as the XDG spec says).
pub fn cache_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("OSMETER_CACHE") {
        return PathBuf::from(d);
    }
    if let Some(d) = crate::files::xdg::absolute("XDG_CACHE_HOME") {
        return d.join("osmeter");
    }
    // A relative HOME is no better than none: the cache must not follow the working directory.
    let home = crate::files::xdg::absolute_home().unwrap_or_else(|| "/tmp".into());
    home.join(".cache").join("osmeter")
}

/// Holds osmeter's cache for one process at a time while it fetches or fills it, so two
/// captures started together do not unpack the same package twice. Released when dropped.
pub struct CacheLock(#[allow(dead_code)] std::fs::File);

pub fn lock_cache() -> Result<CacheLock> {
    use std::os::fd::AsRawFd;
    let dir = cache_dir();
    std::fs::create_dir_all(&dir)
        .with_context(|| format!("cannot create the cache directory {}", dir.display()))?;
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.join("lock"))?;
    // SAFETY: flock on a descriptor we own; it is released when the file is closed.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
        return Err(std::io::Error::last_os_error()).context("cannot lock the osmeter cache");
    }
    Ok(CacheLock(file))
}

/// FNV-1a over the file: cheap, and enough to tell kernels apart for a cache key.
fn content_key(path: &Path) -> Result<String> {
    let bytes =
        std::fs::read(path).with_context(|| format!("cannot read kernel {}", path.display()))?;
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in &bytes {
        h = (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3);
    }
    Ok(format!("{h:016x}-{}", bytes.len()))
}

/// What `trace --system --kernel` takes.
pub const TRACE_KERNEL: &str = "--kernel takes a bzImage/vmlinuz file such as /boot/vmlinuz-*";

/// The kernel image at `path`; `wanted` says what the option takes, for the error when `path` is
/// no regular file (`run --guest` and `trace --kernel` take different things).
pub fn from_path(path: &Path, wanted: &str) -> Result<Kernel> {
    if let Some(what) = not_a_file(path) {
        bail!("{} {what}, not a kernel image: {wanted}", path.display());
    }
    check_bzimage(path)?;
    Ok(Kernel {
        image: path.to_path_buf(),
        label: path.display().to_string(),
        key: content_key(path)?,
    })
}

/// What `path` is when it is not a regular file (following links): "does not exist", "is a
/// directory", "is a character device", ...
fn not_a_file(path: &Path) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt;
    let Ok(meta) = std::fs::metadata(path) else {
        return Some(if path.symlink_metadata().is_ok() {
            "is a symbolic link to nothing"
        } else {
            "does not exist"
        });
    };
    let t = meta.file_type();
    match () {
        _ if t.is_file() => None,
        _ if t.is_dir() => Some("is a directory"),
        _ if t.is_char_device() => Some("is a character device"),
        _ if t.is_block_device() => Some("is a block device"),
        _ if t.is_fifo() => Some("is a FIFO"),
        _ if t.is_socket() => Some("is a socket"),
        _ => Some("is not a regular file"),
    }
}

/// Refuses a file without the x86 boot protocol's header (the "HdrS" magic at 0x202), which
/// QEMU would otherwise boot into a silent hang or a terse "linux kernel too old to load a ram
/// disk".
fn check_bzimage(path: &Path) -> Result<()> {
    use std::io::Read;
    let mut head = [0u8; 0x206];
    let mut f = std::fs::File::open(path)
        .with_context(|| format!("cannot read kernel {}", path.display()))?;
    let got = f.read(&mut head).unwrap_or(0);
    if got < head.len() || &head[0x202..0x206] != b"HdrS" {
        bail!(
            "{} is not an x86 Linux kernel image (no bzImage header): give a bzImage/vmlinuz \
             file such as /boot/vmlinuz-*, or a Debian kernel package name",
            path.display()
        );
    }
    Ok(())
}

/// The concrete package a meta-package depends on (`linux-image-cloud-amd64` ->
/// `linux-image-6.1.0-NN-cloud-amd64`), or the name itself when it is already concrete.
pub fn resolve_package(name: &str) -> Result<String> {
    let out = crate::programs::command("apt-cache")
        .args(["depends", name])
        .output()
        .map_err(|e| {
            crate::system::processes::cannot_start_or(
                "apt-cache",
                &e,
                "a Debian kernel package needs apt; or give the kernel image's path",
            )
        })?;
    if !out.status.success() {
        bail!(
            "apt-cache does not know {name}: {} (run apt-get update, or give the kernel image's path)",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let dep = text
        .lines()
        .filter_map(|l| l.trim().strip_prefix("Depends: "))
        .find(|d| d.starts_with("linux-image-") && !d.contains('<'));
    Ok(dep.map_or_else(|| name.to_string(), str::to_string))
}

/// Removes everything of an unpacked kernel package but its `boot/` (modules, documentation):
/// the guest boots the image alone. Best effort: what cannot be removed only takes room.
fn keep_only_boot(root: &Path) {
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    for entry in entries.flatten() {
        if entry.file_name() == "boot" {
            continue;
        }
        let path = entry.path();
        let _ = match entry.file_type() {
            Ok(t) if t.is_dir() => std::fs::remove_dir_all(&path),
            _ => std::fs::remove_file(&path),
        };
    }
}

fn find_image(root: &Path) -> Option<PathBuf> {
    let boot = root.join("boot");
    let mut found: Vec<PathBuf> = std::fs::read_dir(boot)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("vmlinuz-"))
        })
        .collect();
    found.sort();
    found.pop()
}

/// Where the cache keeps a package's `boot/`.
pub fn package_dir(package: &str) -> PathBuf {
    cache_dir().join("kernels").join(package)
}

/// Whether the cache holds a package's kernel (touching nothing).
pub fn is_cached(package: &str) -> bool {
    find_image(&package_dir(package)).is_some()
}

/// A package already in the cache, or None.
pub fn cached(package: &str) -> Result<Option<Kernel>> {
    let root = package_dir(package);
    let Some(image) = find_image(&root) else {
        return Ok(None);
    };
    // Cached by an osmeter that kept the whole package.
    keep_only_boot(&root);
    // Its time of last use, by which `--cache-max` removes the least recently used first.
    let _ = std::fs::File::open(&root).and_then(|f| f.set_modified(std::time::SystemTime::now()));
    Ok(Some(Kernel {
        key: content_key(&image)?,
        image,
        label: package.to_string(),
    }))
}

/// A Debian kernel package, fetched and unpacked under the cache unless it already is.
pub fn from_package(name: &str) -> Result<Kernel> {
    let package = resolve_package(name)?;
    match cached(&package)? {
        Some(k) => Ok(k),
        None => fetch(&package),
    }
}

/// Fetches a concrete package into the cache: downloaded into a directory of its own and
/// unpacked beside the final place, then renamed, so that neither an interrupted download nor an
/// interrupted unpack is ever taken for a cached kernel. Callers hold the cache's lock; several
/// fetches of different packages may run at once.
pub fn fetch(package: &str) -> Result<Kernel> {
    let root = package_dir(package);
    let unique = format!(
        "{package}.{}.{:?}.partial",
        std::process::id(),
        std::thread::current().id()
    )
    .replace(['(', ')'], "");
    let download = cache_dir().join("downloads").join(&unique);
    std::fs::create_dir_all(&download)
        .with_context(|| format!("cannot create {}", download.display()))?;
    let result = fetch_into(
        package,
        &download,
        &root.with_file_name(format!(".{unique}")),
    );
    let _ = std::fs::remove_dir_all(&download);
    result
}

fn fetch_into(package: &str, download: &Path, partial: &Path) -> Result<Kernel> {
    let out = crate::programs::command("apt-get")
        .args(["download", package])
        .current_dir(download)
        .output()
        .map_err(|e| {
            crate::system::processes::cannot_start_or(
                "apt-get to fetch the guest kernel",
                &e,
                "give the kernel image's path instead",
            )
        })?;
    if !out.status.success() {
        bail!(
            "apt-get download {package} failed: {} (check the package sources, or give the \
             kernel image's path)",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    let deb = std::fs::read_dir(download)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| {
            p.file_name().is_some_and(|n| {
                let n = n.to_string_lossy();
                n.starts_with(&format!("{package}_")) && n.ends_with(".deb")
            })
        })
        .with_context(|| format!("apt-get download left no {package}_*.deb"))?;
    let _ = std::fs::remove_dir_all(partial);
    std::fs::create_dir_all(partial)?;
    let unpacked = (|| -> Result<()> {
        let status = crate::programs::command("dpkg-deb")
            .arg("-x")
            .arg(&deb)
            .arg(partial)
            .status()
            .map_err(|e| {
                crate::system::processes::cannot_start("dpkg-deb to unpack the kernel package", &e)
            })?;
        if !status.success() {
            bail!(
                "dpkg-deb could not unpack {} (a damaged download?)",
                deb.display()
            );
        }
        keep_only_boot(partial);
        find_image(partial).with_context(|| format!("{package} holds no boot/vmlinuz-* kernel"))?;
        let root = package_dir(package);
        let _ = std::fs::remove_dir_all(&root);
        std::fs::rename(partial, &root)?;
        Ok(())
    })();
    if let Err(e) = unpacked {
        let _ = std::fs::remove_dir_all(partial);
        return Err(e);
    }
    cached(package)?.with_context(|| format!("{package} holds no boot/vmlinuz-* kernel"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_changes_with_the_content() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        let image = |tail: &[u8]| {
            let mut v = vec![0u8; 0x202];
            v.extend_from_slice(b"HdrS");
            v.extend_from_slice(tail);
            v
        };
        std::fs::write(&a, image(b"one")).unwrap();
        std::fs::write(&b, image(b"two")).unwrap();
        let ka = from_path(&a, TRACE).unwrap();
        assert_eq!(ka.key, from_path(&a, TRACE).unwrap().key);
        assert_ne!(ka.key, from_path(&b, TRACE).unwrap().key);
        assert!(ka.key.ends_with(&format!("-{}", 0x206 + 3)));
    }

    #[test]
    fn a_file_that_is_not_a_kernel_is_refused_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("notes.txt");
        std::fs::write(&f, vec![b'x'; 4096]).unwrap();
        let err = from_path(&f, TRACE).unwrap_err().to_string();
        assert!(err.contains("not an x86 Linux kernel image"), "{err}");
        std::fs::write(&f, b"short").unwrap();
        assert!(from_path(&f, TRACE).is_err());
    }

    const TRACE: &str = TRACE_KERNEL;

    #[test]
    fn a_missing_kernel_file_says_what_to_give() {
        let err = from_path(Path::new("/no/vmlinuz"), TRACE)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("does not exist") && err.contains("--kernel"),
            "{err}"
        );
        let err = from_path(Path::new("/dev/zero"), TRACE)
            .unwrap_err()
            .to_string();
        assert!(err.contains("/dev/zero is a character device"), "{err}");
        let err = from_path(Path::new("/"), TRACE).unwrap_err().to_string();
        assert!(err.contains("/ is a directory"), "{err}");
    }

    #[test]
    fn images_are_found_under_boot() {
        let dir = tempfile::tempdir().unwrap();
        assert!(find_image(dir.path()).is_none());
        std::fs::create_dir(dir.path().join("boot")).unwrap();
        std::fs::write(dir.path().join("boot/config-6.1"), b"").unwrap();
        std::fs::write(dir.path().join("boot/vmlinuz-6.1"), b"x").unwrap();
        assert_eq!(
            find_image(dir.path()).unwrap(),
            dir.path().join("boot/vmlinuz-6.1")
        );
    }

    #[test]
    fn only_the_packages_boot_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for d in ["boot", "lib/modules/6.1/kernel", "usr/share/doc"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        std::fs::write(root.join("boot/vmlinuz-6.1"), b"x").unwrap();
        std::fs::write(root.join("lib/modules/6.1/kernel/a.ko"), b"m").unwrap();
        std::fs::write(root.join("stray"), b"s").unwrap();
        keep_only_boot(root);
        let mut left: Vec<String> = std::fs::read_dir(root)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, ["boot"]);
        assert_eq!(find_image(root).unwrap(), root.join("boot/vmlinuz-6.1"));
    }
}
