//! The guest's file system for a guest run, in two archives the kernel unpacks one after the
//! other: a small uncompressed one with the init and the plan of this command, then busybox and
//! this osmeter (stripped of its symbols, with its shared libraries) compressed with zstd. The
//! second is the same for every command of one osmeter build, so it is built once and kept in
//! osmeter's cache (a debug build takes seconds to strip and compress; a test suite boots many
//! guests).

use super::plan::{Plan, GUEST_PLAN};
use crate::capture::system::capture::{base_initramfs, INIT_PREAMBLE};
use crate::capture::system::initramfs::{shared_libraries, Initramfs};
use crate::capture::system::kernel;
use anyhow::{Context, Result};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Where osmeter lives inside the guest.
pub const GUEST_OSMETER: &str = "/bin/osmeter";

/// The guest's init: count the plan, report on the second serial port, power off.
pub fn init_script() -> String {
    format!(
        "{INIT_PREAMBLE}cd /tmp\n{GUEST_OSMETER} guest-inside --plan {GUEST_PLAN} \
         --report /dev/ttyS1\npoweroff -f\n"
    )
}

/// This executable without its symbol tables (a debug build carries hundreds of MB of them),
/// or as it is where `strip` is missing.
fn stripped_self(exe: &Path, scratch: &Path) -> Result<PathBuf> {
    let out = scratch.join("osmeter");
    let stripped = crate::programs::command("strip")
        .arg("--strip-all")
        .arg("-o")
        .arg(&out)
        .arg(exe)
        .status()
        .is_ok_and(|s| s.success());
    if stripped {
        return Ok(out);
    }
    std::fs::copy(exe, &out)
        .with_context(|| format!("cannot copy {} for the guest", exe.display()))?;
    Ok(out)
}

/// FNV-1a of a short text: a file name for a cache entry.
fn short_hash(text: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
    }
    format!("{h:016x}")
}

/// What the cached archive was made from: every file's path, size, change time and inode. A
/// rebuilt osmeter or an upgraded busybox or libc gives another identity, hence a new archive.
fn identity(files: &[PathBuf]) -> Result<String> {
    use std::os::unix::fs::MetadataExt;
    let mut id = format!("osmeter {}\n", env!("CARGO_PKG_VERSION"));
    for f in files {
        let m = std::fs::metadata(f).with_context(|| format!("cannot read {}", f.display()))?;
        id.push_str(&format!(
            "{} {} {}.{} {}\n",
            f.display(),
            m.len(),
            m.ctime(),
            m.ctime_nsec(),
            m.ino()
        ));
    }
    Ok(id)
}

/// The compressed archive of busybox and this osmeter: from the cache when this very build made
/// it, else built, kept (replacing the one of an earlier build at the same path) and returned.
fn cached_base(scratch: &Path) -> Result<PathBuf> {
    let exe = std::env::current_exe().context("cannot find this osmeter's executable")?;
    let busybox = crate::capture::system::workloads::host_program("busybox")?;
    let mut inputs = vec![exe.clone(), busybox.clone()];
    inputs.extend(shared_libraries(&exe)?);
    inputs.extend(shared_libraries(&busybox)?);
    let dir = kernel::cache_dir().join("guest-fs");
    let _lock = kernel::lock_cache()?;
    std::fs::create_dir_all(&dir)
        .with_context(|| format!("cannot create the cache directory {}", dir.display()))?;
    let owner = short_hash(&exe.display().to_string());
    let path = dir.join(format!(
        "{owner}-{}.cpio.zst",
        short_hash(&identity(&inputs)?)
    ));
    if path.is_file() {
        return Ok(path);
    }
    let mut fs = base_initramfs()?;
    let osmeter = stripped_self(&exe, scratch)?;
    fs.host_file(&osmeter, Path::new(GUEST_OSMETER))?;
    for lib in shared_libraries(&osmeter)? {
        fs.host_file(&lib, &lib)?;
    }
    let partial = dir.join(format!(".{owner}-{}.partial", std::process::id()));
    let written = (|| -> Result<()> {
        let file = std::fs::File::create(&partial)?;
        let mut z = zstd::Encoder::new(std::io::BufWriter::new(file), 3)?;
        fs.write(&mut z)?;
        z.finish()?.into_inner()?.sync_all()?;
        Ok(())
    })();
    let _ = std::fs::remove_file(&osmeter);
    if let Err(e) = written.and_then(|_| Ok(std::fs::rename(&partial, &path)?)) {
        let _ = std::fs::remove_file(&partial);
        return Err(e.context(format!(
            "cannot keep the guest's file system in {} (free some space there, or set \
             OSMETER_CACHE to another directory)",
            dir.display()
        )));
    }
    // The archives of earlier builds at this path are of no further use.
    for e in std::fs::read_dir(&dir)?.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with(&format!("{owner}-")) && e.path() != path {
            let _ = std::fs::remove_file(e.path());
        }
    }
    Ok(path)
}

/// Writes the guest's initrd to `scratch/initrd.img`; returns its path and size.
pub fn build(scratch: &Path, plan: &Plan) -> Result<(PathBuf, u64)> {
    let base = cached_base(scratch)?;
    let mut head = Initramfs::new();
    head.bytes(Path::new("/init"), 0o755, init_script().into_bytes())?;
    head.bytes(Path::new(GUEST_PLAN), 0o644, plan.to_bytes())?;
    let mut bytes = Vec::new();
    head.write(&mut bytes)?;
    let path = scratch.join("initrd.img");
    let mut out = crate::scratch::create_new(&path)?;
    out.write_all(&bytes)?;
    // The kernel looks for the next archive at a multiple of four bytes.
    out.write_all(&[0u8; 3][..(4 - bytes.len() % 4) % 4])?;
    let mut cached =
        std::fs::File::open(&base).with_context(|| format!("cannot read {}", base.display()))?;
    std::io::copy(&mut cached, &mut out)?;
    out.flush()?;
    let size = std::fs::metadata(&path)?.len();
    Ok((path, size))
}

#[cfg(test)]
mod tests {
    #[test]
    fn init_counts_the_plan_then_powers_off() {
        let s = super::init_script();
        assert!(s.contains("/bin/osmeter guest-inside --plan /plan.json --report /dev/ttyS1\n"));
        assert!(s.trim_end().ends_with("poweroff -f"));
    }

    #[test]
    fn a_cache_identity_changes_with_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("x");
        std::fs::write(&f, b"one").unwrap();
        let a = super::identity(std::slice::from_ref(&f)).unwrap();
        std::fs::write(&f, b"three").unwrap();
        assert_ne!(a, super::identity(&[f]).unwrap());
        assert_ne!(super::short_hash("a"), super::short_hash("b"));
    }
}
