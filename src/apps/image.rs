//! One ext4 file system image, mounted two ways: by the kernel's own ext4 (a loop mount) or by a
//! user-space server through FUSE (fuse2fs). Same on-disk format, same files, same mkfs options:
//! what differs is where the file system code runs, the modern form of the seeds' monolithic
//! kernel against microkernel servers.
//!
//! The image is made without a journal, because fuse2fs cannot write one: both mounts then run the
//! same journal-less ext4 (the file probes' fresh images, which only the kernel mounts, keep
//! mkfs.ext4's journal: [`Mounted::journaled_ext4`]). Root only (mount(8) and /dev/fuse). The
//! mount is undone when the [`Mounted`] is dropped; a measuring process killed outright leaves it
//! to the scratch directory's clean-up, which detaches every mount below it ([`crate::scratch`]).

use super::packages::{need, Need};
use anyhow::{bail, Context, Result};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How the image is mounted (`--fs`, and app.andrew's `fs=ext4|fuse`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Kind {
    /// The kernel's ext4 over a loop device.
    Ext4,
    /// fuse2fs, a user-space ext4 server, through /dev/fuse.
    Fuse,
}

impl Kind {
    pub fn parse(name: &str) -> Option<Kind> {
        match name {
            "ext4" => Some(Kind::Ext4),
            "fuse" => Some(Kind::Fuse),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Kind::Ext4 => "ext4",
            Kind::Fuse => "fuse",
        }
    }

    pub fn needs(self) -> &'static [Need] {
        match self {
            Kind::Ext4 => EXT4_NEEDS,
            Kind::Fuse => FUSE_NEEDS,
        }
    }

    pub fn describe(self) -> &'static str {
        match self {
            Kind::Ext4 => "in-kernel ext4 (loop mount)",
            Kind::Fuse => "ext4 served by fuse2fs through FUSE",
        }
    }
}

const EXT4_NEEDS: &[Need] = &[
    need("/usr/sbin/mkfs.ext4", "e2fsprogs"),
    need("/usr/bin/mount", "mount"),
];
const FUSE_NEEDS: &[Need] = &[
    need("/usr/sbin/mkfs.ext4", "e2fsprogs"),
    need("/usr/bin/mount", "mount"),
    need("/usr/bin/fuse2fs", "fuse2fs"),
];

/// Fixed so that every image is the same file system (ids and directory hashing included).
const UUID: &str = "0f5e7e12-1989-4a4d-8b00-05ee0a4d1989";
const HASH_SEED: &str = "5eed1989-0a4d-4e77-9b1e-00000000a4d1";

/// A mounted image, unmounted on drop.
pub struct Mounted {
    kind: Kind,
    mountpoint: PathBuf,
    /// The fuse2fs server, a child of the measuring process (so its work is in the workload's
    /// cgroup).
    server: Option<Child>,
    /// The server's own cgroup, when it serves a whole run rather than one workload.
    server_cell: Option<super::cell::Cell>,
    _dir: tempfile::TempDir,
}

/// Why mounting cannot work here, or None.
pub fn unavailable(kind: Kind) -> Option<String> {
    unavailable_but_packages(kind).or_else(|| super::packages::missing_reason(kind.needs()))
}

/// Why mounting cannot work here whatever is installed (root, /dev/fuse), or None.
pub fn unavailable_but_packages(kind: Kind) -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some(format!(
            "mounting an image ({}) needs root (mount(8), loop devices, /dev/fuse)",
            kind.describe()
        ));
    }
    if kind == Kind::Fuse && !Path::new("/dev/fuse").exists() {
        return Some("/dev/fuse is missing: load the fuse module (modprobe fuse)".into());
    }
    None
}

fn run(cmd: &mut Command, what: &str) -> Result<()> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(|e| crate::system::processes::cannot_start(what, &e))?;
    if !out.status.success() {
        bail!(
            "{what} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

/// True when `path` is a mount point now.
pub fn is_mounted(path: &Path) -> bool {
    crate::mounts::mounted_at(path).is_some()
}

impl Mounted {
    /// Makes a fresh journal-less image of `size_mib` in a new directory under `parent` and mounts
    /// it.
    pub fn new(kind: Kind, parent: &Path, size_mib: u64) -> Result<Mounted> {
        Mounted::make(kind, parent, size_mib, false)
    }

    /// Makes a fresh ext4 image with a journal, as mkfs.ext4 makes one by default (the
    /// distribution's /etc/mke2fs.conf), and mounts it with the kernel's ext4.
    pub fn journaled_ext4(parent: &Path, size_mib: u64) -> Result<Mounted> {
        Mounted::make(Kind::Ext4, parent, size_mib, true)
    }

    fn make(kind: Kind, parent: &Path, size_mib: u64, journal: bool) -> Result<Mounted> {
        if let Some(why) = unavailable(kind) {
            bail!("{why}");
        }
        let dir = crate::scratch::private_dir(parent, "image-")?;
        let image = dir.path().join("ext4.img");
        let file = crate::scratch::create_new(&image)?;
        file.set_len(size_mib << 20)
            .with_context(|| format!("cannot size {}", image.display()))?;
        drop(file);
        run(
            crate::programs::command("/usr/sbin/mkfs.ext4")
                .args(["-q", "-F"])
                .args(if journal {
                    &[][..]
                } else {
                    &["-O", "^has_journal"][..]
                })
                .args(["-U", UUID, "-E"])
                .arg(format!(
                    "lazy_itable_init=0,lazy_journal_init=0,hash_seed={HASH_SEED}"
                ))
                .arg(&image),
            "mkfs.ext4",
        )?;
        let mountpoint = dir.path().join("mnt");
        std::fs::create_dir(&mountpoint)?;
        let mut mounted = Mounted {
            kind,
            mountpoint,
            server: None,
            server_cell: None,
            _dir: dir,
        };
        match kind {
            Kind::Ext4 => run(
                crate::programs::command("/usr/bin/mount")
                    .args(["-t", "ext4", "-o", "loop"])
                    .arg(&image)
                    .arg(&mounted.mountpoint),
                "mount -o loop",
            )?,
            Kind::Fuse => {
                let mut server = crate::programs::command("/usr/bin/fuse2fs");
                // Killed with osmeter (or its measuring process) whatever ends it: an orphaned
                // server would keep the image mounted and busy.
                crate::interrupt::die_with_parent(&mut server);
                let child = server
                    .arg(&image)
                    .arg(&mounted.mountpoint)
                    .arg("-f")
                    // Its own process group: Ctrl-C at a terminal reaches osmeter, which unmounts
                    // in order, and not the server under the files still open.
                    .process_group(0)
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .map_err(|e| crate::system::processes::cannot_start("fuse2fs", &e))?;
                mounted.server = Some(child);
                mounted.wait_for_mount()?;
            }
        }
        Ok(mounted)
    }

    fn wait_for_mount(&mut self) -> Result<()> {
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(10) {
            if is_mounted(&self.mountpoint) {
                return Ok(());
            }
            if let Some(status) = self
                .server
                .as_mut()
                .and_then(|s| s.try_wait().ok().flatten())
            {
                bail!("fuse2fs ended ({status}) before mounting the image");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        bail!("fuse2fs did not mount the image within 10 s")
    }

    pub fn path(&self) -> &Path {
        &self.mountpoint
    }

    /// Moves the FUSE server into a cgroup of its own, so that workloads can count it with
    /// themselves ([`run_server_cgroup`]); returns that cgroup. Nothing to move for the kernel's ext4.
    pub fn server_apart(&mut self) -> Result<Option<&Path>> {
        let Some(server) = &self.server else {
            return Ok(None);
        };
        self.server_cell = Some(super::cell::Cell::adopt(server.id())?);
        Ok(self.server_cell.as_ref().map(|c| c.path()))
    }

    /// The file system type the kernel shows for the mount (`ext4`, `fuse.fuse2fs`, `fuseblk`).
    pub fn fs_type(&self) -> Option<String> {
        crate::mounts::mounted_at(&self.mountpoint).map(|m| m.fs_type)
    }

    pub fn kind(&self) -> Kind {
        self.kind
    }

    pub fn describe(&self) -> &'static str {
        self.kind.describe()
    }

    /// Flushes the file system's dirty data (untimed, between samples).
    pub fn sync(&self) {
        if let Ok(f) = std::fs::File::open(&self.mountpoint) {
            // SAFETY: syncfs on a descriptor we own.
            unsafe { libc::syncfs(std::os::fd::AsRawFd::as_raw_fd(&f)) };
        }
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        let umount = |lazy: bool| {
            let mut c = crate::programs::command("/usr/bin/umount");
            if lazy {
                c.arg("-l");
            }
            c.arg(&self.mountpoint)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        };
        if is_mounted(&self.mountpoint) && !umount(false) {
            umount(true);
        }
        if let Some(mut server) = self.server.take() {
            let t = Instant::now();
            while t.elapsed() < Duration::from_secs(5) {
                if server.try_wait().ok().flatten().is_some() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            let _ = server.kill();
            let _ = server.wait();
        }
    }
}

/// Names the cgroup of the run's file system server for the measuring processes the run starts.
const SERVER_CGROUP_ENV: &str = "OSMETER_RUN_FS_SERVER_CGROUP";

/// Tells the measuring processes started from now on (they inherit the environment) to count the
/// server in `cgroup` with their workloads; None stops it.
pub fn announce_server_cgroup(cgroup: Option<&Path>) {
    match cgroup {
        Some(p) => std::env::set_var(SERVER_CGROUP_ENV, p),
        None => std::env::remove_var(SERVER_CGROUP_ENV),
    }
}

/// The cgroup of the run's file system server (`--fs fuse`), in a measuring process: only a
/// workload cgroup osmeter made (name and place checked), never an arbitrary path.
pub fn run_server_cgroup() -> Option<PathBuf> {
    let path = PathBuf::from(std::env::var_os(SERVER_CGROUP_ENV)?);
    let ours = path
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with("osmeter-app-"));
    (ours && path.join("cgroup.procs").is_file()).then_some(path)
}

/// Smallest image: the Andrew tree's copies and the file probes' files with room to spare.
const MIN_IMAGE_MIB: u64 = 1024;

/// The image's size for variants that write at most `disk` bytes at once: twice that and 256 MiB
/// more for the file system's own blocks, never below [`MIN_IMAGE_MIB`]. The file is sparse, so
/// only what is written takes space.
pub fn image_mib(disk: u64) -> u64 {
    (disk.saturating_mul(2) >> 20)
        .saturating_add(256)
        .max(MIN_IMAGE_MIB)
}

#[cfg(test)]
mod size_tests {
    use super::*;

    #[test]
    fn image_size_covers_twice_the_largest_footprint() {
        assert_eq!(image_mib(0), MIN_IMAGE_MIB);
        assert_eq!(image_mib(1 << 30), 2048 + 256);
        assert_eq!(image_mib(u64::MAX), (u64::MAX >> 20) + 256);
    }
}
