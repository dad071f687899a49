//! The guest's initramfs: a cpio archive (the kernel's "newc" format, uncompressed) holding
//! busybox, osmeter's guest helper, the programs to run with the shared libraries they need, the
//! workload's input files and an init script. No disk image is involved.

use anyhow::{bail, Context, Result};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Component, Path, PathBuf};

enum Entry {
    Dir,
    File { mode: u32, data: Data },
}

enum Data {
    Bytes(Vec<u8>),
    Host(PathBuf),
}

/// Files to put in the guest, by their path inside it.
#[derive(Default)]
pub struct Initramfs {
    entries: BTreeMap<PathBuf, Entry>,
}

/// Guest paths are absolute; the archive stores them relative to the root.
fn archive_name(guest: &Path) -> Result<PathBuf> {
    let mut rel = PathBuf::new();
    for c in guest.components() {
        match c {
            Component::RootDir => {}
            Component::Normal(s) => rel.push(s),
            _ => bail!("guest path {} must be absolute and plain", guest.display()),
        }
    }
    if rel.as_os_str().is_empty() {
        bail!("guest path {} names the root", guest.display());
    }
    Ok(rel)
}

impl Initramfs {
    pub fn new() -> Initramfs {
        Initramfs::default()
    }

    pub fn dir(&mut self, guest: &Path) -> Result<()> {
        let rel = archive_name(guest)?;
        for a in rel.ancestors().filter(|a| !a.as_os_str().is_empty()) {
            self.entries.entry(a.to_path_buf()).or_insert(Entry::Dir);
        }
        Ok(())
    }

    fn file(&mut self, guest: &Path, mode: u32, data: Data) -> Result<()> {
        let rel = archive_name(guest)?;
        if let Some(parent) = guest.parent().filter(|p| p != &Path::new("/")) {
            self.dir(parent)?;
        }
        self.entries.insert(rel, Entry::File { mode, data });
        Ok(())
    }

    pub fn bytes(&mut self, guest: &Path, mode: u32, data: Vec<u8>) -> Result<()> {
        self.file(guest, mode, Data::Bytes(data))
    }

    /// A host file at a guest path; its content is read when the archive is written, following
    /// symbolic links (the guest gets a plain file where the host had a link).
    pub fn host_file(&mut self, host: &Path, guest: &Path) -> Result<()> {
        use std::os::unix::fs::PermissionsExt;
        let meta = std::fs::metadata(host)
            .with_context(|| format!("cannot put {} in the guest", host.display()))?;
        if !meta.is_file() {
            bail!("{} is not a regular file", host.display());
        }
        self.file(
            guest,
            meta.permissions().mode() & 0o7777,
            Data::Host(host.to_path_buf()),
        )
    }

    /// A host directory tree at a guest path.
    pub fn host_tree(&mut self, host: &Path, guest: &Path) -> Result<()> {
        self.dir(guest)?;
        let mut listing: Vec<_> = std::fs::read_dir(host)
            .with_context(|| format!("cannot read directory {}", host.display()))?
            .collect::<std::io::Result<_>>()?;
        listing.sort_by_key(|e| e.file_name());
        for e in listing {
            let (h, g) = (e.path(), guest.join(e.file_name()));
            if std::fs::metadata(&h)?.is_dir() {
                self.host_tree(&h, &g)?;
            } else {
                self.host_file(&h, &g)?;
            }
        }
        Ok(())
    }

    /// A program at its own path, with every shared library `ldd` names, at their paths.
    pub fn program(&mut self, host: &Path) -> Result<()> {
        self.host_file(host, host)?;
        for lib in shared_libraries(host)? {
            self.host_file(&lib, &lib)?;
        }
        Ok(())
    }

    pub fn contains(&self, guest: &Path) -> bool {
        archive_name(guest).is_ok_and(|rel| self.entries.contains_key(&rel))
    }

    /// Writes the archive. Entries carry fixed owners and times so the same content gives the
    /// same bytes, which keeps captures repeatable.
    pub fn write(&self, mut out: impl Write) -> Result<u64> {
        let mut written = 0u64;
        for (ino, (name, entry)) in self.entries.iter().enumerate() {
            let (mode, data) = match entry {
                Entry::Dir => (0o040755, Vec::new()),
                Entry::File { mode, data } => (
                    0o100000 | mode,
                    match data {
                        Data::Bytes(b) => b.clone(),
                        Data::Host(p) => std::fs::read(p)
                            .with_context(|| format!("cannot read {}", p.display()))?,
                    },
                ),
            };
            let nlink = if matches!(entry, Entry::Dir) { 2 } else { 1 };
            written += write_entry(
                &mut out,
                &name.to_string_lossy(),
                ino as u32 + 1,
                mode,
                nlink,
                &data,
            )?;
        }
        written += write_entry(&mut out, "TRAILER!!!", 0, 0, 1, &[])?;
        out.flush()?;
        Ok(written)
    }
}

fn pad4(out: &mut impl Write, len: u64) -> Result<u64> {
    let pad = (4 - len % 4) % 4;
    out.write_all(&[0u8; 3][..pad as usize])?;
    Ok(pad)
}

fn write_entry(
    out: &mut impl Write,
    name: &str,
    ino: u32,
    mode: u32,
    nlink: u32,
    data: &[u8],
) -> Result<u64> {
    let fields = [
        ino,
        mode,
        0,
        0,
        nlink,
        0,
        u32::try_from(data.len()).context("a guest file over 4 GiB")?,
        0,
        0,
        0,
        0,
        name.len() as u32 + 1,
        0,
    ];
    let mut head = String::from("070701");
    for f in fields {
        head.push_str(&format!("{f:08x}"));
    }
    out.write_all(head.as_bytes())?;
    out.write_all(name.as_bytes())?;
    out.write_all(&[0])?;
    let mut n = head.len() as u64 + name.len() as u64 + 1;
    n += pad4(out, n)?;
    out.write_all(data)?;
    n += data.len() as u64;
    n += pad4(out, data.len() as u64)?;
    Ok(n)
}

/// The shared libraries (and dynamic loader) a program needs, as `ldd` resolves them on this
/// machine; empty for a static program or a script.
pub fn shared_libraries(program: &Path) -> Result<Vec<PathBuf>> {
    let out = crate::programs::command("ldd")
        .arg(program)
        .output()
        .map_err(|e| {
            crate::system::processes::cannot_start_or(
                "ldd",
                &e,
                "it is in the package libc-bin; osmeter needs it to find a program's shared \
                 libraries",
            )
        })?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        // Static programs and scripts: nothing to add.
        return Ok(Vec::new());
    }
    let mut libs = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.contains("not found") {
            bail!(
                "{} needs a shared library this machine lacks: {line}",
                program.display()
            );
        }
        let path = match line.split_once("=>") {
            Some((_, rest)) => rest.split_whitespace().next(),
            None => line.split_whitespace().next(),
        };
        if let Some(p) = path.filter(|p| p.starts_with('/')) {
            libs.push(PathBuf::from(p));
        }
    }
    Ok(libs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newc_entries_have_the_kernels_layout() {
        let mut fs = Initramfs::new();
        fs.bytes(Path::new("/a/b"), 0o755, b"xyz".to_vec()).unwrap();
        let mut out = Vec::new();
        let n = fs.write(&mut out).unwrap();
        assert_eq!(n as usize, out.len());
        assert_eq!(out.len() % 4, 0);
        // Directory "a" first (ino 1), then file "a/b" (ino 2), then the trailer.
        let text = String::from_utf8_lossy(&out);
        let dir = "070701".to_string()
            + "00000001"
            + "000041ed"
            + "00000000"
            + "00000000"
            + "00000002"
            + "00000000"
            + "00000000"
            + &"00000000".repeat(4)
            + "00000002"
            + "00000000";
        assert!(text.starts_with(&(dir + "a\0")), "{text:?}");
        let file_head = "07070100000002000081ed00000000000000000000000100000000\
                         00000003000000000000000000000000000000000000000400000000a/b\0";
        let at = text.find("070701000000020").unwrap();
        assert_eq!(&text[at..at + file_head.len()], file_head);
        // 110-byte header + 4-byte name = 114, padded to 116; then the data padded to 4.
        assert_eq!(&out[at + 116..at + 120], b"xyz\0");
        assert!(text.contains("TRAILER!!!\0"));
    }

    #[test]
    fn parents_are_added_once_and_relative_paths_refused() {
        let mut fs = Initramfs::new();
        fs.bytes(Path::new("/x/y/z"), 0o644, vec![]).unwrap();
        fs.bytes(Path::new("/x/y/w"), 0o644, vec![]).unwrap();
        assert!(fs.contains(Path::new("/x")));
        assert!(fs.contains(Path::new("/x/y")));
        assert_eq!(fs.entries.len(), 4);
        assert!(fs.bytes(Path::new("rel"), 0o644, vec![]).is_err());
        assert!(fs.bytes(Path::new("/a/../b"), 0o644, vec![]).is_err());
    }

    #[test]
    fn the_same_content_gives_the_same_bytes() {
        let build = || {
            let mut fs = Initramfs::new();
            fs.bytes(Path::new("/init"), 0o755, b"#!/bin/sh\n".to_vec())
                .unwrap();
            fs.dir(Path::new("/proc")).unwrap();
            let mut out = Vec::new();
            fs.write(&mut out).unwrap();
            out
        };
        assert_eq!(build(), build());
    }

    #[test]
    fn a_dynamic_program_brings_its_loader_and_libc() {
        let sh = Path::new("/bin/sh");
        let libs = shared_libraries(sh).unwrap();
        assert!(
            libs.iter().any(|l| l.to_string_lossy().contains("libc.so")),
            "{libs:?}"
        );
        assert!(
            libs.iter()
                .any(|l| l.to_string_lossy().contains("ld-linux")),
            "{libs:?}"
        );
        let mut fs = Initramfs::new();
        fs.program(sh).unwrap();
        for l in &libs {
            assert!(fs.contains(l));
        }
    }

    #[test]
    fn a_static_program_needs_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s");
        std::fs::write(&p, crate::capture::system::GUEST_HELPER).unwrap();
        if crate::capture::system::GUEST_HELPER.is_empty() {
            return; // no static libc on this machine; build.rs warned
        }
        assert!(shared_libraries(&p).unwrap().is_empty());
    }

    #[test]
    fn missing_host_files_are_named() {
        let mut fs = Initramfs::new();
        let err = fs
            .host_file(Path::new("/no/such/file"), Path::new("/f"))
            .unwrap_err();
        assert!(format!("{err:#}").contains("/no/such/file"));
    }
}
