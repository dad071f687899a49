//! Reading trace events in the kernel's binary form: the per-CPU `trace_pipe_raw` files hand out
//! ring-buffer sub-buffers (a page each by default), and each event's fields sit at the offsets its
//! `format` file states. Unlike the text files this keeps nanosecond timestamps and costs the kernel
//! no formatting.
//!
//! Sub-buffer layout: u64 timestamp of the first event, a long "commit" word holding the data length
//! (low 27 bits) and lost-event flags, then the events. Each event starts with a u32 header: low 5
//! bits type_len, high 27 bits time delta from the previous event. type_len 1..=28 is a data event of
//! type_len*4 bytes; 0 a data event whose length (plus 4) is in the next word; 29 padding (a delta of
//! 0 ends the sub-buffer); 30 a time extension (delta += next word << 27); 31 an absolute stamp.

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

const TYPE_PADDING: u32 = 29;
const TYPE_TIME_EXTEND: u32 = 30;
const TYPE_TIME_STAMP: u32 = 31;
const COMMIT_MASK: u64 = (1 << 27) - 1;
const MISSED_EVENTS: u64 = 1 << 31;
const MISSED_STORED: u64 = 1 << 30;
const TS_MSB: u64 = 0xf8 << 56;

/// One field of an event as its format file declares it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    pub name: String,
    pub offset: usize,
    pub size: usize,
    pub signed: bool,
    /// `__data_loc`: the field holds (length << 16 | offset) of a variable part.
    pub data_loc: bool,
}

impl Field {
    /// The field as an unsigned number (1, 2, 4 or 8 bytes, little-endian); None past the end.
    pub fn uint(&self, data: &[u8]) -> Option<u64> {
        let b = data.get(self.offset..self.offset + self.size)?;
        Some(match self.size {
            1 => u64::from(b[0]),
            2 => u64::from(u16::from_le_bytes([b[0], b[1]])),
            4 => u64::from(u32::from_le_bytes(b.try_into().ok()?)),
            8 => u64::from_le_bytes(b.try_into().ok()?),
            _ => return None,
        })
    }

    /// The field as a signed number.
    pub fn int(&self, data: &[u8]) -> Option<i64> {
        let v = self.uint(data)?;
        let bits = self.size * 8;
        Some(if self.signed && bits < 64 {
            ((v << (64 - bits)) as i64) >> (64 - bits)
        } else {
            v as i64
        })
    }

    /// A text field: a fixed `char[N]` or a `__data_loc char[]`, up to its first NUL.
    pub fn text<'a>(&self, data: &'a [u8]) -> Option<&'a str> {
        let bytes = if self.data_loc {
            let loc = self.uint(data)? as usize;
            let (off, len) = (loc & 0xffff, loc >> 16);
            data.get(off..off + len)?
        } else if self.size == 0 {
            // A trailing `char buf[]`: the rest of the record.
            data.get(self.offset..)?
        } else {
            data.get(self.offset..self.offset + self.size)?
        };
        let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
        std::str::from_utf8(&bytes[..end]).ok()
    }
}

/// An event type: its name, numeric id and fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventFormat {
    pub name: String,
    pub id: u16,
    pub fields: Vec<Field>,
}

impl EventFormat {
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.name == name)
    }
}

/// Reads a `format` file.
pub fn parse_format(text: &str) -> Option<EventFormat> {
    let mut name = None;
    let mut id = None;
    let mut fields = Vec::new();
    for line in text.lines().map(str::trim) {
        if let Some(n) = line.strip_prefix("name:") {
            name = Some(n.trim().to_string());
        } else if let Some(n) = line.strip_prefix("ID:") {
            id = n.trim().parse().ok();
        } else if let Some(decl) = line.strip_prefix("field:") {
            // `field:unsigned long caller[8];	offset:16;	size:64;	signed:0;`
            let mut parts = decl.split(';').map(str::trim);
            let declaration = parts.next()?;
            let mut offset = None;
            let mut size = None;
            let mut signed = false;
            for p in parts {
                if let Some(v) = p.strip_prefix("offset:") {
                    offset = v.parse().ok();
                } else if let Some(v) = p.strip_prefix("size:") {
                    size = v.parse().ok();
                } else if let Some(v) = p.strip_prefix("signed:") {
                    signed = v == "1";
                }
            }
            let last = declaration.split_whitespace().last()?;
            let field_name = last.split('[').next()?.to_string();
            fields.push(Field {
                name: field_name,
                offset: offset?,
                size: size?,
                signed,
                data_loc: declaration.starts_with("__data_loc"),
            });
        }
    }
    Some(EventFormat {
        name: name?,
        id: id?,
        fields,
    })
}

/// One event as read: its timestamp and its record (common fields first).
#[derive(Debug, Clone, Copy)]
pub struct RawEvent<'a> {
    pub ts: u64,
    pub data: &'a [u8],
}

/// Bits of `common_flags` (the context the event was recorded in).
pub const FLAG_HARDIRQ: u8 = 0x08;
pub const FLAG_SOFTIRQ: u8 = 0x10;

impl RawEvent<'_> {
    pub fn id(&self) -> u16 {
        self.data
            .get(0..2)
            .map_or(0, |b| u16::from_le_bytes([b[0], b[1]]))
    }
    pub fn flags(&self) -> u8 {
        self.data.get(2).copied().unwrap_or(0)
    }
    /// The task that was current when the event was recorded.
    pub fn pid(&self) -> i32 {
        self.data
            .get(4..8)
            .and_then(|b| b.try_into().ok())
            .map_or(-1, i32::from_le_bytes)
    }
}

/// What a sub-buffer held besides its events.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SubbufInfo {
    pub events: usize,
    /// Events the kernel dropped before this sub-buffer (overwritten or not stored); `Some(0)`
    /// with the flag set but no count stored is reported as 1 (at least one).
    pub lost: u64,
    /// Malformed content stopped the walk early.
    pub truncated: bool,
}

fn word(page: &[u8], at: usize) -> Option<u32> {
    page.get(at..at + 4)
        .and_then(|b| b.try_into().ok())
        .map(u32::from_le_bytes)
}

/// Walks the events of one sub-buffer, calling `each` for every data event in order.
pub fn parse_subbuf(page: &[u8], mut each: impl FnMut(RawEvent)) -> SubbufInfo {
    let mut info = SubbufInfo::default();
    if page.len() < 16 {
        info.truncated = true;
        return info;
    }
    let mut ts = u64::from_le_bytes(page[0..8].try_into().unwrap_or_default());
    let commit = u64::from_le_bytes(page[8..16].try_into().unwrap_or_default());
    let len = (commit & COMMIT_MASK) as usize;
    let end = 16 + len;
    if end > page.len() {
        info.truncated = true;
        return info;
    }
    if commit & MISSED_EVENTS != 0 {
        info.lost = if commit & MISSED_STORED != 0 {
            page.get(end..end + 8)
                .and_then(|b| b.try_into().ok())
                .map_or(1, u64::from_le_bytes)
                .max(1)
        } else {
            1
        };
    }
    let mut at = 16;
    while at + 4 <= end {
        let Some(header) = word(page, at) else { break };
        let type_len = header & 0x1f;
        let delta = u64::from(header >> 5);
        let next = match type_len {
            TYPE_PADDING => {
                if delta == 0 {
                    break; // the rest of the sub-buffer is empty
                }
                ts += delta;
                let Some(n) = word(page, at + 4) else { break };
                at + 4 + n as usize
            }
            TYPE_TIME_EXTEND => {
                let Some(n) = word(page, at + 4) else { break };
                ts += (u64::from(n) << 27) + delta;
                at + 8
            }
            TYPE_TIME_STAMP => {
                let Some(n) = word(page, at + 4) else { break };
                ts = ((u64::from(n) << 27) + delta) | (ts & TS_MSB);
                at + 8
            }
            0 => {
                let Some(n) = word(page, at + 4) else { break };
                ts += delta;
                let length = (n as usize).saturating_sub(4).div_ceil(4) * 4;
                let data = at + 8;
                if data + length > end {
                    info.truncated = true;
                    break;
                }
                each(RawEvent {
                    ts,
                    data: &page[data..data + length],
                });
                info.events += 1;
                data + length
            }
            n => {
                ts += delta;
                let data = at + 4;
                let length = n as usize * 4;
                if data + length > end {
                    info.truncated = true;
                    break;
                }
                each(RawEvent {
                    ts,
                    data: &page[data..data + length],
                });
                info.events += 1;
                data + length
            }
        };
        if next <= at {
            info.truncated = true;
            break;
        }
        at = next;
    }
    info
}

/// A CPU's `trace_pipe_raw`, read without blocking: each read consumes one sub-buffer.
pub struct CpuPipe {
    pub cpu: usize,
    file: std::fs::File,
    buf: Vec<u8>,
}

impl CpuPipe {
    /// `instance_dir` is the instance's directory; `subbuf_bytes` the sub-buffer size.
    pub fn open(instance_dir: &Path, cpu: usize, subbuf_bytes: usize) -> std::io::Result<CpuPipe> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(instance_dir.join(format!("per_cpu/cpu{cpu}/trace_pipe_raw")))?;
        Ok(CpuPipe {
            cpu,
            file,
            buf: vec![0; subbuf_bytes],
        })
    }

    /// The next sub-buffer, or None when the CPU's buffer is empty for now.
    pub fn next_subbuf(&mut self) -> std::io::Result<Option<&[u8]>> {
        match self.file.read(&mut self.buf) {
            Ok(0) => Ok(None),
            Ok(n) => Ok(Some(&self.buf[..n])),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => Ok(None),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// The sub-buffer size of an instance: its `buffer_subbuf_size_kb` where the kernel has one
/// (Linux 6.8 and later), else the page size.
pub fn subbuf_bytes(instance_dir: &Path) -> usize {
    std::fs::read_to_string(instance_dir.join("buffer_subbuf_size_kb"))
        .ok()
        .and_then(|t| t.trim().parse::<usize>().ok())
        .map(|kb| kb * 1024)
        .unwrap_or_else(|| crate::system::page_size().max(4096))
}

#[cfg(test)]
mod tests;
