//! Text importers: valgrind lackey (`--tool=lackey --trace-mem=yes`) and Dinero `din`.
//!
//! Lackey lines: `I  addr,size` (instruction fetch), ` L addr,size` (load), ` S addr,size` (store),
//! ` M addr,size` (modify: a load then a store); addresses in hex without `0x`. Lines starting with
//! `==` are valgrind's own messages and are skipped. Every lackey reference is user mode, address
//! space 0.
//!
//! Din lines: `label address [size]`, label 0 read, 1 write, 2 instruction fetch, 3 and 4 (escape,
//! flush) ignored; address in hex with or without `0x`; size defaults to 4.

use super::{Kind, Mode, Ref, RefSource, TraceMeta, FLAG_USER_ONLY, MAX_ACCESS_BYTES};
use anyhow::{bail, Result};
use std::io::Read;

/// Line splitter over a reader with its own buffer.
struct Lines<R: Read> {
    inp: R,
    buf: Vec<u8>,
    pos: usize,
    end: usize,
    eof: bool,
    line_no: u64,
}

impl<R: Read> Lines<R> {
    fn new(inp: R) -> Self {
        Lines {
            inp,
            buf: vec![0; 1 << 18],
            pos: 0,
            end: 0,
            eof: false,
            line_no: 0,
        }
    }

    /// Range of the next line in `buf` (without the line feed), or None at the end.
    fn next_line(&mut self) -> Result<Option<(usize, usize)>> {
        loop {
            if let Some(i) = self.buf[self.pos..self.end]
                .iter()
                .position(|&b| b == b'\n')
            {
                let start = self.pos;
                self.pos += i + 1;
                self.line_no += 1;
                return Ok(Some((start, start + i)));
            }
            if self.eof {
                if self.pos < self.end {
                    let start = self.pos;
                    self.pos = self.end;
                    self.line_no += 1;
                    return Ok(Some((start, self.end)));
                }
                return Ok(None);
            }
            self.buf.copy_within(self.pos..self.end, 0);
            self.end -= self.pos;
            self.pos = 0;
            if self.end == self.buf.len() {
                bail!(
                    "line {} is longer than {} bytes: not a text trace",
                    self.line_no + 1,
                    self.buf.len()
                );
            }
            match self.inp.read(&mut self.buf[self.end..]) {
                Ok(0) => self.eof = true,
                Ok(n) => self.end += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e.into()),
            }
        }
    }
}

#[inline]
fn hex(s: &[u8]) -> Option<u64> {
    let s = s
        .strip_prefix(b"0x")
        .or_else(|| s.strip_prefix(b"0X"))
        .unwrap_or(s);
    if s.is_empty() || s.len() > 16 {
        return None;
    }
    let mut v = 0u64;
    for &c in s {
        let d = match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            b'A'..=b'F' => c - b'A' + 10,
            _ => return None,
        };
        v = v << 4 | u64::from(d);
    }
    Some(v)
}

#[inline]
fn dec(s: &[u8]) -> Option<u32> {
    if s.is_empty() || s.len() > 9 {
        return None;
    }
    let mut v = 0u32;
    for &c in s {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v * 10 + u32::from(c - b'0');
    }
    Some(v)
}

/// A line for an error message: quoted and cut at 60 characters when it is printable ASCII,
/// otherwise its first 16 bytes in hex, so binary data never reaches the terminal.
fn shown(line: &[u8]) -> String {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line
        .iter()
        .all(|&b| b == b'\t' || (0x20..0x7f).contains(&b))
    {
        let cut = String::from_utf8_lossy(&line[..line.len().min(60)]).into_owned();
        let more = if line.len() > 60 { "..." } else { "" };
        return format!("{cut:?}{more}");
    }
    let hex: Vec<String> = line.iter().take(16).map(|b| format!("{b:02x}")).collect();
    format!(
        "bytes {}{} (not text: a binary file?)",
        hex.join(" "),
        if line.len() > 16 { " ..." } else { "" }
    )
}

/// Refuses an access larger than any instruction makes (see `MAX_ACCESS_BYTES`).
fn check_size(size: u32, format: &str, line: u64) -> Result<()> {
    if size > MAX_ACCESS_BYTES {
        bail!(
            "{format} trace line {line}: an access of {size} bytes; no instruction touches more than {MAX_ACCESS_BYTES}, so the trace is corrupt"
        );
    }
    Ok(())
}

/// Parses one lackey record line; None for a line that is not one.
#[inline]
fn lackey_line(line: &[u8]) -> Option<(u8, u64, u32)> {
    if line.len() < 4 {
        return None;
    }
    let (op, rest) = match (line[0], line[1], line[2]) {
        (b'I', b' ', b' ') => (b'I', &line[3..]),
        (b' ', op @ (b'L' | b'S' | b'M'), b' ') => (op, &line[3..]),
        _ => return None,
    };
    let rest = rest.strip_suffix(b"\r").unwrap_or(rest);
    let comma = rest.iter().position(|&b| b == b',')?;
    Some((op, hex(&rest[..comma])?, dec(&rest[comma + 1..])?))
}

pub struct LackeyReader<R: Read> {
    lines: Lines<R>,
}

impl<R: Read> LackeyReader<R> {
    pub fn new(inp: R) -> Self {
        LackeyReader {
            lines: Lines::new(inp),
        }
    }

    pub fn lines_read(&self) -> u64 {
        self.lines.line_no
    }
}

impl<R: Read> RefSource for LackeyReader<R> {
    fn next_batch(&mut self, out: &mut Vec<Ref>, max: usize) -> Result<usize> {
        let mut n = 0;
        while n < max {
            let Some((a, b)) = self.lines.next_line()? else {
                break;
            };
            let line = &self.lines.buf[a..b];
            let Some((op, addr, size)) = lackey_line(line) else {
                if line.starts_with(b"==") || line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                bail!(
                    "lackey trace line {}: expected \"I  addr,size\" or \" L|S|M addr,size\", found {}",
                    self.lines.line_no,
                    shown(line)
                );
            };
            check_size(size, "lackey", self.lines.line_no)?;
            let mut r = Ref::new(Kind::Read, Mode::User, 0, size, addr);
            match op {
                b'I' => r.kind = Kind::Instr,
                b'L' => {}
                b'S' => r.kind = Kind::Write,
                _ => {
                    out.push(r);
                    n += 1;
                    r.kind = Kind::Write;
                }
            }
            out.push(r);
            n += 1;
        }
        Ok(n)
    }

    fn meta(&self) -> TraceMeta {
        TraceMeta {
            flags: FLAG_USER_ONLY,
        }
    }
}

pub struct DinReader<R: Read> {
    lines: Lines<R>,
}

impl<R: Read> DinReader<R> {
    pub fn new(inp: R) -> Self {
        DinReader {
            lines: Lines::new(inp),
        }
    }
}

impl<R: Read> RefSource for DinReader<R> {
    fn next_batch(&mut self, out: &mut Vec<Ref>, max: usize) -> Result<usize> {
        let mut n = 0;
        while n < max {
            let Some((a, b)) = self.lines.next_line()? else {
                break;
            };
            let line = &self.lines.buf[a..b];
            let mut fields = line
                .split(|c| c.is_ascii_whitespace())
                .filter(|f| !f.is_empty());
            let Some(label) = fields.next() else { continue };
            if label.starts_with(b"#") {
                continue;
            }
            let bad = || {
                anyhow::anyhow!(
                    "din trace line {}: expected \"label address [size]\" with label 0-4 and a hex address, found {}",
                    self.lines.line_no,
                    shown(line)
                )
            };
            let kind = match label {
                b"0" => Kind::Read,
                b"1" => Kind::Write,
                b"2" => Kind::Instr,
                b"3" | b"4" => continue,
                _ => return Err(bad()),
            };
            let addr = fields.next().and_then(hex).ok_or_else(bad)?;
            let size = match fields.next() {
                Some(s) => dec(s).filter(|&s| s > 0).ok_or_else(bad)?,
                None => 4,
            };
            if fields.next().is_some() {
                return Err(bad());
            }
            check_size(size, "din", self.lines.line_no)?;
            out.push(Ref::new(kind, Mode::User, 0, size, addr));
            n += 1;
        }
        Ok(n)
    }

    fn meta(&self) -> TraceMeta {
        TraceMeta::default()
    }
}

/// Din when the first line that is not a valgrind message or a `#` comment (which only din
/// allows) looks like `digit space hex`.
pub fn sniff(head: &[u8]) -> super::Format {
    let first = head.split(|&b| b == b'\n').find(|l| {
        !l.starts_with(b"==") && !l.starts_with(b"#") && !l.iter().all(u8::is_ascii_whitespace)
    });
    match first {
        Some(l) if l.len() > 2 && l[0].is_ascii_digit() && l[1].is_ascii_whitespace() => {
            super::Format::Din
        }
        _ => super::Format::Lackey,
    }
}

#[cfg(test)]
mod tests {
    use super::super::read_all;
    use super::*;

    #[test]
    fn lackey_records_and_modify_split() {
        let text = "==12== Lackey, an example\nI  04011a0,3\n L 1ffefffd58,8\n S 0601000,4\n M 0601008,2\n\n";
        let refs = read_all(&mut LackeyReader::new(text.as_bytes())).unwrap();
        let want = [
            (Kind::Instr, 0x4011a0, 3),
            (Kind::Read, 0x1ffefffd58, 8),
            (Kind::Write, 0x601000, 4),
            (Kind::Read, 0x601008, 2),
            (Kind::Write, 0x601008, 2),
        ];
        assert_eq!(refs.len(), want.len());
        for (r, (k, a, s)) in refs.iter().zip(want) {
            assert_eq!((r.kind, r.vaddr, r.size, r.mode), (k, a, s, Mode::User));
        }
    }

    #[test]
    fn lackey_garbage_names_the_line() {
        let text = "I  0400000,4\nhello world\n";
        let e = read_all(&mut LackeyReader::new(text.as_bytes()))
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 2") && e.contains("hello world"), "{e}");
        let text = "I  04zz000,4\n";
        assert!(read_all(&mut LackeyReader::new(text.as_bytes())).is_err());
    }

    #[test]
    fn lackey_last_line_without_newline() {
        let refs = read_all(&mut LackeyReader::new(&b"I  10,4\n L 20,4"[..])).unwrap();
        assert_eq!(refs.len(), 2);
        assert_eq!(refs[1].vaddr, 0x20);
    }

    #[test]
    fn din_labels_sizes_and_errors() {
        let text = "2 0x400000\n0 7fff0010 8\n1 1000\n4 0\n3 0\n";
        let refs = read_all(&mut DinReader::new(text.as_bytes())).unwrap();
        assert_eq!(refs.len(), 3);
        assert_eq!(
            (refs[0].kind, refs[0].vaddr, refs[0].size),
            (Kind::Instr, 0x400000, 4)
        );
        assert_eq!(
            (refs[1].kind, refs[1].vaddr, refs[1].size),
            (Kind::Read, 0x7fff0010, 8)
        );
        assert_eq!(refs[2].kind, Kind::Write);
        let e = read_all(&mut DinReader::new(&b"2 400\n9 400\n"[..]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 2"), "{e}");
    }

    #[test]
    fn binary_lines_are_shown_as_hex_and_text_lines_quoted() {
        assert_eq!(shown(b"hello\r"), "\"hello\"");
        let long = [b'a'; 100];
        assert_eq!(shown(&long), format!("{:?}...", "a".repeat(60)));
        let garbage = b"\x1b[31m\xff\xfe\x00 red \xe2\x80\xae evil";
        let s = shown(garbage);
        assert_eq!(
            s,
            "bytes 1b 5b 33 31 6d ff fe 00 20 72 65 64 20 e2 80 ae ... (not text: a binary file?)"
        );
        let e = read_all(&mut LackeyReader::new(&garbage[..]))
            .unwrap_err()
            .to_string();
        assert!(e.bytes().all(|b| (0x20..0x7f).contains(&b)), "{e:?}");
    }

    #[test]
    fn sizes_past_what_an_instruction_touches_name_the_line() {
        // Nine-digit sizes took the simulator a second a line.
        let text = "I  0400000,4\n L 7ff000,999999999\n";
        let e = read_all(&mut LackeyReader::new(text.as_bytes()))
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 2") && e.contains("999999999 bytes"), "{e}");
        let e = read_all(&mut DinReader::new(&b"2 400\n0 1000 16385\n"[..]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 2") && e.contains("16385"), "{e}");
        let ok = read_all(&mut DinReader::new(&b"0 1000 16384\n"[..])).unwrap();
        assert_eq!(ok[0].size, MAX_ACCESS_BYTES);
    }

    #[test]
    fn sniffing() {
        assert_eq!(
            sniff(b"# made by a script\n2 400000\n"),
            super::super::Format::Din
        );
        assert_eq!(sniff(b"2 400000\n"), super::super::Format::Din);
        assert_eq!(
            sniff(b"==1== Lackey\nI  0400,4\n"),
            super::super::Format::Lackey
        );
    }
}
