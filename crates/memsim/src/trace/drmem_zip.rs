//! A drmemtrace thread file zipped (`.trace.zip`): its members, in name order, read as one stream.
//! The `zip` feature (on by default); without it such a file is refused with the way to read it.

use crate::progress::{Counted, Counter};
use anyhow::{bail, Context, Result};
use std::collections::VecDeque;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// A zip member's place in the archive.
struct Member {
    name: String,
    start: u64,
    len: u64,
    deflated: bool,
}

/// The members of a `.trace.zip`, in name order, read as one stream. The zip crate's member
/// readers borrow the archive, so this reads each member's bytes itself from the offsets the
/// archive's directory gives, inflating them when they are deflated: one member at a time, never
/// a whole member in memory (drmemtrace's members run to hundreds of megabytes).
pub struct ZipChunks {
    path: PathBuf,
    file: File,
    members: VecDeque<Member>,
    current: Option<Box<dyn Read + Send>>,
    read: Option<Counter>,
}

impl ZipChunks {
    pub fn open(path: &Path, read: Option<Counter>) -> Result<ZipChunks> {
        let file =
            File::open(path).with_context(|| format!("cannot open trace {}", path.display()))?;
        let bad = || format!("{} is not a readable zip archive", path.display());
        let mut archive = zip::ZipArchive::new(file.try_clone()?).with_context(bad)?;
        let mut members = Vec::new();
        for i in 0..archive.len() {
            let m = archive.by_index_raw(i).with_context(bad)?;
            if m.is_dir() {
                continue;
            }
            let name = m.name().to_string();
            if m.encrypted() {
                bail!("{}: member {name:?} is encrypted", path.display());
            }
            let deflated = match m.compression() {
                zip::CompressionMethod::Stored => false,
                zip::CompressionMethod::Deflated => true,
                other => bail!(
                    "{}: member {name:?} is compressed with {other}; osmeter reads stored and deflated members (re-zip it with `zip`)",
                    path.display()
                ),
            };
            let start = m.data_start().with_context(|| {
                format!("{}: member {name:?} has no data offset", path.display())
            })?;
            members.push(Member {
                name,
                start,
                len: m.compressed_size(),
                deflated,
            });
        }
        members.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(ZipChunks {
            path: path.to_path_buf(),
            file,
            members: members.into(),
            current: None,
            read,
        })
    }

    fn open_member(&self, m: &Member) -> std::io::Result<Box<dyn Read + Send>> {
        // A clone shares the file position, which is fine: one member is read at a time.
        let mut f = self.file.try_clone()?;
        f.seek(SeekFrom::Start(m.start))?;
        let raw: Box<dyn Read + Send> = match &self.read {
            Some(count) => Box::new(Counted::new(f.take(m.len), count.clone())),
            None => Box::new(f.take(m.len)),
        };
        Ok(if m.deflated {
            Box::new(flate2::read::DeflateDecoder::new(raw))
        } else {
            raw
        })
    }
}

impl Read for ZipChunks {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            if let Some(cur) = &mut self.current {
                let n = cur.read(buf)?;
                if n > 0 {
                    return Ok(n);
                }
                self.current = None;
            }
            let Some(m) = self.members.pop_front() else {
                return Ok(0);
            };
            let member = self.open_member(&m).map_err(|e| {
                std::io::Error::new(
                    e.kind(),
                    format!("{} member {:?}: {e}", self.path.display(), m.name),
                )
            })?;
            self.current = Some(member);
        }
    }
}
