//! The guest's file system for a guest run: busybox, this osmeter (stripped of its symbols, with
//! its shared libraries) and an init that runs the probes and powers off; compressed with zstd,
//! which the kernel unpacks itself.

use crate::capture::system::capture::{base_initramfs, INIT_PREAMBLE};
use crate::capture::system::initramfs::shared_libraries;
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

/// Where osmeter lives inside the guest.
pub const GUEST_OSMETER: &str = "/bin/osmeter";

/// The guest's init: run the probes, report on the second serial port, power off.
pub fn init_script(probes: &[String], iterations: u64) -> String {
    format!(
        "{INIT_PREAMBLE}cd /tmp\n{GUEST_OSMETER} guest-inside --iterations {iterations} \
         --report /dev/ttyS1 {}\npoweroff -f\n",
        probes.join(" ")
    )
}

/// This executable without its symbol tables (a debug build carries hundreds of MB of them),
/// or as it is where `strip` is missing.
fn stripped_self(scratch: &Path) -> Result<PathBuf> {
    let exe = std::env::current_exe().context("cannot find this osmeter's executable")?;
    let out = scratch.join("osmeter");
    let stripped = std::process::Command::new("strip")
        .arg("--strip-all")
        .arg("-o")
        .arg(&out)
        .arg(&exe)
        .status()
        .is_ok_and(|s| s.success());
    if stripped {
        return Ok(out);
    }
    std::fs::copy(&exe, &out)
        .with_context(|| format!("cannot copy {} for the guest", exe.display()))?;
    Ok(out)
}

/// Writes the compressed archive to `scratch/initrd.cpio.zst`; returns its path and size.
pub fn build(scratch: &Path, probes: &[String], iterations: u64) -> Result<(PathBuf, u64)> {
    let mut fs = base_initramfs()?;
    let osmeter = stripped_self(scratch)?;
    fs.host_file(&osmeter, Path::new(GUEST_OSMETER))?;
    for lib in shared_libraries(&osmeter)? {
        fs.host_file(&lib, &lib)?;
    }
    fs.bytes(
        Path::new("/init"),
        0o755,
        init_script(probes, iterations).into_bytes(),
    )?;
    let path = scratch.join("initrd.cpio.zst");
    let file = crate::scratch::create_new(&path)?;
    let mut z = zstd::Encoder::new(std::io::BufWriter::new(file), 3)?;
    fs.write(&mut z)?;
    std::io::Write::flush(&mut z.finish()?)?;
    let _ = std::fs::remove_file(&osmeter);
    let size = std::fs::metadata(&path)?.len();
    Ok((path, size))
}

#[cfg(test)]
mod tests {
    #[test]
    fn init_runs_the_probes_then_powers_off() {
        let s = super::init_script(&["syscall.null".into(), "ipc.pipe".into()], 500);
        assert!(s.contains(
            "/bin/osmeter guest-inside --iterations 500 --report /dev/ttyS1 syscall.null ipc.pipe\n"
        ));
        assert!(s.trim_end().ends_with("poweroff -f"));
    }
}
