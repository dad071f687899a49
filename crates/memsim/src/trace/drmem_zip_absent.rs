//! Stands in for drmem_zip.rs in an osmeter built without the `zip` feature: a zipped thread file
//! is refused with the way to read it.

use crate::progress::Counter;
use anyhow::{bail, Result};
use std::io::Read;
use std::path::Path;

pub enum ZipChunks {}

impl ZipChunks {
    pub fn open(path: &Path, _read: Option<Counter>) -> Result<ZipChunks> {
        bail!(
            "{} is a zipped drmemtrace file, and this osmeter was built without the `zip` \
             feature: build it with the default features (`cargo build --release`), or unzip \
             the file's members into one `.trace` file",
            path.display()
        )
    }
}

impl Read for ZipChunks {
    fn read(&mut self, _buf: &mut [u8]) -> std::io::Result<usize> {
        match *self {}
    }
}
