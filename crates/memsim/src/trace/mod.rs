//! Memory-reference traces: one record per instruction fetch, load or store.
//!
//! # The osmeter trace format, version 1
//!
//! A file is an 8-byte header followed by records and one trailer record. The whole stream may be
//! wrapped in a zstd frame or in gzip; readers recognise the zstd magic (`28 b5 2f fd`) and gzip's
//! (`1f 8b`) and decompress. (So do the other formats' readers.)
//!
//! Header:
//!
//! | bytes | meaning |
//! |-------|---------|
//! | 0..4  | magic `OSMT` |
//! | 4     | version, 1 |
//! | 5     | flags: bit 0 user-only (no kernel references were captured), bit 1 records carry physical addresses, bit 2 incomplete (the capture was cut short) |
//! | 6..8  | zero, reserved |
//!
//! Record: a tag byte, then optional fields in this order.
//!
//! | tag bits | meaning |
//! |----------|---------|
//! | 0-1 | kind: 0 instruction fetch, 1 read, 2 write, 3 control record (see below) |
//! | 2   | mode: 0 user, 1 kernel |
//! | 3   | uncached access (bypasses the caches, e.g. device memory) |
//! | 4   | a new address-space id follows as a varint; otherwise the previous record's id holds (0 at the start) |
//! | 5-7 | size code: 1..7 stand for 1, 2, 3, 4, 5, 6 or 8 bytes; 0 means a varint size follows |
//!
//! After the tag (and the optional asid and size) comes the virtual address as a zigzag varint
//! delta from the previous address of the same stream, where the four streams are instruction and
//! data (reads and writes together) crossed with user and kernel. With header bit 1, a physical
//! address follows as a zigzag varint delta from the previous physical address of the same stream.
//! Varints are LEB128: 7 bits per byte, low bits first, high bit set on all but the last byte.
//!
//! Control records (kind 3) use tag `0x03` only: the trailer, followed by a varint count of the
//! records and a varint of flags that are ORed into the header's (bit 2 marks a capture that ended
//! early, which a streaming writer cannot know when it writes the header). A stream that ends
//! without a trailer is truncated and is reported as an error, with the byte offset.

pub mod binary;
pub mod champsim;
pub mod drmem;
pub mod drmem_dir;
#[cfg(feature = "zip")]
mod drmem_zip;
#[cfg(not(feature = "zip"))]
#[path = "drmem_zip_absent.rs"]
mod drmem_zip;
pub mod file;
pub mod packed;
pub mod summary;
pub mod synth;
pub mod text;

use crate::progress::{Counted, Counter};
use anyhow::{Context, Result};
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

/// The most bytes one record may touch. Readers refuse larger sizes with the record's place in
/// the file: a corrupt or hostile size (up to 4 GiB fits the format) would otherwise make the
/// simulator walk every line of it.
///
/// The bound comes from what one x86-64 instruction can touch. A vector load or store reaches 64
/// bytes (AVX-512); the largest single access is XSAVE/XRSTOR of every state component, which with
/// AMX tile data is about 11 KB (11,008 bytes on Sapphire Rapids, CPUID leaf 0xD). String
/// instructions with a `rep` prefix do not count: valgrind's lackey and osmeter's QEMU plugin both
/// report each element of them as an access of its own (8 bytes at most), and lackey itself never
/// reports more than 512 bytes for one access (FXSAVE's area). 16 KiB leaves room for a larger
/// XSAVE area while a record can still cost the simulator no more than a few thousand lines.
pub const MAX_ACCESS_BYTES: u32 = 16 * 1024;

/// What a reference does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Kind {
    Instr = 0,
    Read = 1,
    Write = 2,
}

/// The processor mode the reference was made in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Mode {
    User = 0,
    Kernel = 1,
}

/// One memory reference.
///
/// Whole, as sources produce it and the general path simulates it; a pass hands references
/// between threads packed (`packed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ref {
    pub vaddr: u64,
    /// Present only in traces whose header says so.
    pub paddr: Option<u64>,
    pub asid: u32,
    pub size: u32,
    pub kind: Kind,
    pub mode: Mode,
    pub uncached: bool,
    /// Attribution of the reference, set by `memsim::kernel` (0: user or not attributed; otherwise
    /// a kernel category). Never stored in a trace file.
    pub tag: u8,
}

impl Ref {
    pub fn new(kind: Kind, mode: Mode, asid: u32, size: u32, vaddr: u64) -> Ref {
        Ref {
            kind,
            mode,
            uncached: false,
            asid,
            size,
            vaddr,
            paddr: None,
            tag: 0,
        }
    }
}

/// Header flags.
pub const FLAG_USER_ONLY: u8 = 1;
pub const FLAG_PHYSICAL: u8 = 2;
pub const FLAG_INCOMPLETE: u8 = 4;

/// What a reader knows about the trace it is reading.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TraceMeta {
    pub flags: u8,
}

impl TraceMeta {
    pub fn user_only(&self) -> bool {
        self.flags & FLAG_USER_ONLY != 0
    }
    pub fn physical(&self) -> bool {
        self.flags & FLAG_PHYSICAL != 0
    }
    pub fn incomplete(&self) -> bool {
        self.flags & FLAG_INCOMPLETE != 0
    }
}

/// A source of references, read in batches so the caller's loop stays tight.
pub trait RefSource {
    /// Appends up to `max` references to `out`; returns how many. Zero means the end.
    fn next_batch(&mut self, out: &mut Vec<Ref>, max: usize) -> Result<usize>;
    /// Flags known so far (a trailer can add some at the end).
    fn meta(&self) -> TraceMeta;
    /// Appends up to `max` references to `out` packed; returns how many. Zero means the end.
    /// Sources that decode straight into words override it; the others decode and pack.
    fn next_packed(&mut self, out: &mut packed::Batch, max: usize) -> Result<usize> {
        let mut refs = std::mem::take(&mut out.scratch);
        refs.clear();
        let n = self.next_batch(&mut refs, max)?;
        for r in &refs {
            out.push(r);
        }
        out.scratch = refs;
        Ok(n)
    }
}

// The command line's `--from` values (src/cli/memsim_args.rs in the binary) are one for each
// format, under the names `Format::name` gives. (A doc comment here would be the description in
// the stored documents' JSON Schemas, which stay as released.)
/// Input formats.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// osmeter's own binary format (.osmt, optionally zstd-compressed)
    #[serde(alias = "osmt", alias = "bin")]
    Osmeter,
    /// valgrind lackey's --trace-mem text
    Lackey,
    /// Dinero's din text (label address [size])
    #[serde(alias = "dinero")]
    Din,
    /// DynamoRIO drmemtrace's trace entries (plain, gzip or zstd), or a drmemtrace run directory
    #[serde(alias = "drmem")]
    Drmemtrace,
}

impl Format {
    /// Every input format, in the order the command line lists them.
    pub const ALL: [Format; 4] = [
        Format::Osmeter,
        Format::Lackey,
        Format::Din,
        Format::Drmemtrace,
    ];

    /// Its name, as `--from` takes it and the stored document writes it.
    pub fn name(self) -> &'static str {
        match self {
            Format::Osmeter => "osmeter",
            Format::Lackey => "lackey",
            Format::Din => "din",
            Format::Drmemtrace => "drmemtrace",
        }
    }
}

/// What `trace convert --to` writes (its values on the command line: src/cli/memsim_args.rs in
/// the binary).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ExportFormat {
    /// osmeter's own binary format
    #[default]
    Osmeter,
    /// ChampSim's 64-byte instruction records
    Champsim,
    /// DynamoRIO drmemtrace's trace entries
    Drmemtrace,
}

impl std::fmt::Display for ExportFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ExportFormat::Osmeter => "osmeter",
            ExportFormat::Champsim => "champsim",
            ExportFormat::Drmemtrace => "drmemtrace",
        })
    }
}

const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];
const BUF: usize = 1 << 18;

/// Opens `path` (`-` for stdin), undoing zstd or gzip compression if present. Returns the stream
/// and its first bytes so the caller can tell the format.
fn open_raw(path: &Path, read: Option<Counter>) -> Result<Box<dyn BufRead + Send>> {
    let inner: Box<dyn Read + Send> = if path.as_os_str() == "-" {
        Box::new(std::io::stdin())
    } else {
        Box::new(
            std::fs::File::open(path)
                .with_context(|| format!("cannot open trace {}", path.display()))?,
        )
    };
    // Counted below any decompression, so progress compares with the file's size.
    let inner: Box<dyn Read + Send> = match read {
        Some(count) => Box::new(Counted::new(inner, count)),
        None => inner,
    };
    let mut buffered = BufReader::with_capacity(BUF, inner);
    let head = buffered.fill_buf()?;
    let name = if path.as_os_str() == "-" {
        "standard input".to_string()
    } else {
        path.display().to_string()
    };
    if head.len() >= 4 && head[..4] == ZSTD_MAGIC {
        let dec = zstd::stream::read::Decoder::with_buffer(buffered)
            .context("cannot start zstd decompression")?;
        let dec = Decompressed {
            inner: dec,
            name,
            codec: "zstd",
        };
        Ok(Box::new(BufReader::with_capacity(BUF, dec)))
    } else if head.starts_with(&GZIP_MAGIC) {
        // Multi-member: `cat a.gz b.gz` is a valid gzip file of both, as gunzip reads it.
        let dec = flate2::bufread::MultiGzDecoder::new(buffered);
        let dec = Decompressed {
            inner: dec,
            name,
            codec: "gzip",
        };
        Ok(Box::new(BufReader::with_capacity(BUF, dec)))
    } else {
        Ok(Box::new(buffered))
    }
}

/// A decompressor whose errors name the file and say what they mean: the libraries' own words
/// ("incomplete frame", "unexpected end of file") name neither the file nor the cause.
struct Decompressed<R> {
    inner: R,
    name: String,
    codec: &'static str,
}

impl<R: Read> Read for Decompressed<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.inner.read(buf).map_err(|e| {
            let said = e.to_string();
            let cut = e.kind() == std::io::ErrorKind::UnexpectedEof
                || said.contains("incomplete frame")
                || said.contains("unexpected end");
            let text = if cut {
                format!(
                    "the {codec} trace {name} is cut short: the file ends inside a compressed \
                     frame ({said}); it was truncated or is still being written, so copy or \
                     capture it again",
                    codec = self.codec,
                    name = self.name
                )
            } else {
                format!(
                    "the {codec} trace {name} is damaged: {said}",
                    codec = self.codec,
                    name = self.name
                )
            };
            std::io::Error::new(e.kind(), text)
        })
    }
}

/// Opens a trace in any supported format. Without `format`, the osmeter magic selects the binary
/// reader, and text is taken for lackey unless its first record line looks like Dinero `din`.
pub fn open(path: &Path, format: Option<Format>) -> Result<Box<dyn RefSource + Send>> {
    open_counted(path, format, None)
}

/// As `open`, adding the bytes read from the file (compressed, if it is) to `read`.
pub fn open_counted(
    path: &Path,
    format: Option<Format>,
    read: Option<Counter>,
) -> Result<Box<dyn RefSource + Send>> {
    if path.is_dir() {
        return drmem_dir::open(path, format, read);
    }
    let mut raw = open_raw(path, read)?;
    let head = raw.fill_buf()?.to_vec();
    let format = match format {
        Some(f) => f,
        None if head.starts_with(binary::MAGIC) => Format::Osmeter,
        None if drmem::sniff(&head) => Format::Drmemtrace,
        None if head.is_empty() => {
            return Err(anyhow::anyhow!(
                "trace {} is empty: not an osmeter, lackey or din trace",
                path.display()
            ))
        }
        None => text::sniff(&head),
    };
    let name = path.display().to_string();
    Ok(match format {
        Format::Osmeter => Box::new(binary::TraceReader::new(raw).with_context(|| name.clone())?),
        Format::Lackey => Box::new(text::LackeyReader::new(raw)),
        Format::Din => Box::new(text::DinReader::new(raw)),
        Format::Drmemtrace => Box::new(drmem::DrmemReader::new(raw).with_context(|| name.clone())?),
    })
}

/// Feeds every batch of `src` to `each`, in order, through one reused buffer.
pub fn for_each_batch(
    src: &mut dyn RefSource,
    mut each: impl FnMut(&[Ref]) -> Result<()>,
) -> Result<()> {
    let mut batch = Vec::with_capacity(1 << 16);
    loop {
        batch.clear();
        if src.next_batch(&mut batch, 1 << 16)? == 0 {
            return Ok(());
        }
        each(&batch)?;
    }
}

/// Reads every reference of a source into memory (tests and small traces).
pub fn read_all(src: &mut dyn RefSource) -> Result<Vec<Ref>> {
    let mut all = Vec::new();
    while src.next_batch(&mut all, 1 << 16)? > 0 {}
    Ok(all)
}
