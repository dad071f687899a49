//! Export to ChampSim's trace format: one fixed 64-byte record per instruction, little-endian:
//!
//! | bytes  | field |
//! |--------|-------|
//! | 0..8   | instruction address |
//! | 8      | is a branch (always 0: osmeter traces do not say) |
//! | 9      | branch taken (0) |
//! | 10..12 | two destination register numbers (0: none known) |
//! | 12..16 | four source register numbers (0) |
//! | 16..32 | two store addresses (0: none) |
//! | 32..64 | four load addresses (0: none) |
//!
//! Each instruction fetch opens a record and the loads and stores after it, up to the next
//! fetch, fill its address slots. ChampSim has no user/kernel distinction: kernel instructions
//! are simply more instructions, which is what a full-system trace adds. With physical addresses
//! in the trace, they are what is written (ChampSim's own translation then maps them once more,
//! consistently), so that different address spaces do not alias.

use super::{Kind, RefSource};
use anyhow::Result;
use std::io::Write;

const LOADS: usize = 4;
const STORES: usize = 2;
pub const RECORD: usize = 64;

/// What an export wrote and what it had to leave out.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ChampsimCounts {
    pub instructions: u64,
    pub loads: u64,
    pub stores: u64,
    /// Loads or stores past the record's slots, or before the first instruction.
    pub dropped: u64,
}

#[derive(Default)]
struct Record {
    ip: u64,
    loads: [u64; LOADS],
    stores: [u64; STORES],
    nl: usize,
    ns: usize,
}

impl Record {
    fn bytes(&self) -> [u8; RECORD] {
        let mut b = [0u8; RECORD];
        b[..8].copy_from_slice(&self.ip.to_le_bytes());
        for (i, a) in self.stores.iter().enumerate() {
            b[16 + 8 * i..24 + 8 * i].copy_from_slice(&a.to_le_bytes());
        }
        for (i, a) in self.loads.iter().enumerate() {
            b[32 + 8 * i..40 + 8 * i].copy_from_slice(&a.to_le_bytes());
        }
        b
    }
}

/// Writes every instruction of `src` as a ChampSim record into `out`.
pub fn export(src: &mut dyn RefSource, out: &mut dyn Write) -> Result<ChampsimCounts> {
    let mut counts = ChampsimCounts::default();
    let mut cur: Option<Record> = None;
    let mut batch = Vec::with_capacity(1 << 16);
    let mut buf = Vec::with_capacity(RECORD << 12);
    loop {
        batch.clear();
        if src.next_batch(&mut batch, 1 << 16)? == 0 {
            break;
        }
        for r in &batch {
            let addr = r.paddr.unwrap_or(r.vaddr);
            match (r.kind, cur.as_mut()) {
                (Kind::Instr, _) => {
                    if let Some(done) = cur.take() {
                        buf.extend_from_slice(&done.bytes());
                    }
                    counts.instructions += 1;
                    cur = Some(Record {
                        ip: addr,
                        ..Record::default()
                    });
                }
                (Kind::Read, Some(rec)) if rec.nl < LOADS => {
                    rec.loads[rec.nl] = addr;
                    rec.nl += 1;
                    counts.loads += 1;
                }
                (Kind::Write, Some(rec)) if rec.ns < STORES => {
                    rec.stores[rec.ns] = addr;
                    rec.ns += 1;
                    counts.stores += 1;
                }
                _ => counts.dropped += 1,
            }
        }
        out.write_all(&buf)?;
        buf.clear();
    }
    if let Some(done) = cur {
        out.write_all(&done.bytes())?;
    }
    Ok(counts)
}

/// One ChampSim record read back: instruction address, loads, stores (empty slots left out).
pub type Instruction = (u64, Vec<u64>, Vec<u64>);

/// Reads ChampSim records back.
pub fn read(bytes: &[u8]) -> Result<Vec<Instruction>> {
    if bytes.len() % RECORD != 0 {
        anyhow::bail!(
            "a ChampSim trace is a whole number of {RECORD}-byte records; {} bytes is not",
            bytes.len()
        );
    }
    let word = |c: &[u8], i: usize| u64::from_le_bytes(c[i..i + 8].try_into().expect("8 bytes"));
    Ok(bytes
        .chunks_exact(RECORD)
        .map(|c| {
            let stores = (0..STORES).map(|i| word(c, 16 + 8 * i)).filter(|&a| a != 0);
            let loads = (0..LOADS).map(|i| word(c, 32 + 8 * i)).filter(|&a| a != 0);
            (word(c, 0), loads.collect(), stores.collect())
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::super::{read_all, Mode, Ref};
    use super::*;
    use crate::memsim::trace::synth::Synth;

    struct Refs(Vec<Ref>);
    impl RefSource for Refs {
        fn next_batch(&mut self, out: &mut Vec<Ref>, max: usize) -> Result<usize> {
            let n = self.0.len().min(max);
            out.extend(self.0.drain(..n));
            Ok(n)
        }
        fn meta(&self) -> super::super::TraceMeta {
            Default::default()
        }
    }

    #[test]
    fn known_layout_and_slots() {
        let mut refs = vec![Ref::new(Kind::Read, Mode::User, 0, 4, 0x10)];
        refs.push(Ref::new(Kind::Instr, Mode::User, 0, 3, 0x40_1000));
        for a in 1..=5u64 {
            refs.push(Ref::new(Kind::Read, Mode::User, 0, 8, 0x7000 + 8 * a));
        }
        for a in 1..=3u64 {
            refs.push(Ref::new(Kind::Write, Mode::User, 0, 8, 0x9000 + 8 * a));
        }
        let mut k = Ref::new(Kind::Instr, Mode::Kernel, 0, 4, 0xffff_ffff_8100_0000);
        k.paddr = Some(0x100_0000);
        refs.push(k);
        let mut out = Vec::new();
        let c = export(&mut Refs(refs), &mut out).unwrap();
        assert_eq!(
            c,
            ChampsimCounts {
                instructions: 2,
                loads: 4,
                stores: 2,
                dropped: 3
            }
        );
        assert_eq!(out.len(), 128);
        assert_eq!(&out[..8], &0x40_1000u64.to_le_bytes());
        assert_eq!(&out[8..16], &[0; 8], "no branch or register information");
        assert_eq!(&out[16..24], &0x9008u64.to_le_bytes());
        assert_eq!(&out[32..40], &0x7008u64.to_le_bytes());
        assert_eq!(&out[56..64], &0x7020u64.to_le_bytes());
        // The kernel instruction is written at its physical address.
        assert_eq!(&out[64..72], &0x100_0000u64.to_le_bytes());
    }

    #[test]
    fn exported_traces_read_back() {
        let refs = read_all(&mut Synth::new(20_000, 4)).unwrap();
        let mut out = Vec::new();
        let c = export(&mut Refs(refs.clone()), &mut out).unwrap();
        let back = read(&out).unwrap();
        assert_eq!(back.len() as u64, c.instructions);
        // Rebuild what the export should hold from the references themselves.
        let mut want: Vec<Instruction> = Vec::new();
        for r in &refs {
            match (r.kind, want.last_mut()) {
                (Kind::Instr, _) => want.push((r.vaddr, vec![], vec![])),
                (Kind::Read, Some(w)) if w.1.len() < LOADS => w.1.push(r.vaddr),
                (Kind::Write, Some(w)) if w.2.len() < STORES => w.2.push(r.vaddr),
                _ => {}
            }
        }
        // Address 0 stands for an empty slot, so a reference to address 0 cannot come back.
        for w in &mut want {
            w.1.retain(|&a| a != 0);
            w.2.retain(|&a| a != 0);
        }
        assert_eq!(back, want);
        assert!(read(&out[..100]).is_err());
    }
}
