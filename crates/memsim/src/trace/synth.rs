//! A deterministic synthetic trace: a few user processes with loops over their text, stack, array
//! and heap data, interrupted now and then by system calls whose kernel code runs in an unmapped
//! segment (as on MIPS kseg0) and which copy blocks between kernel and user buffers. It is not a
//! model of any real program; it exercises every part of the simulator with the same references
//! every time for one seed.

use super::{Kind, Mode, Ref, RefSource, TraceMeta};
use crate::stats::rng::SplitMix64;
use anyhow::Result;
use std::path::Path;

/// Start of the unmapped kernel segment used for kernel text and data (MIPS kseg0).
pub const KERNEL_BASE: u64 = 0x8000_0000;

/// memsim's seeded generator, for synthetic traces and random replacement: SplitMix64 (of the
/// statistics crate) from the seed mixed with the golden ratio, drawn as memsim always drew it,
/// so the same seed gives the same trace and the same victims as before.
pub fn rng(seed: u64) -> SplitMix64 {
    SplitMix64(seed ^ 0x9e37_79b9_7f4a_7c15)
}

struct Proc {
    asid: u32,
    pc: u64,
    text: (u64, u64),
    array_pos: u64,
    array: (u64, u64),
    heap: (u64, u64),
    sp: u64,
}

pub struct Synth {
    rng: SplitMix64,
    left: u64,
    procs: Vec<Proc>,
    cur: usize,
    /// Remaining kernel instructions of the system call in progress.
    in_kernel: u64,
    kpc: u64,
    copy: Option<(u64, u64, u64)>,
}

impl Synth {
    pub fn new(refs: u64, seed: u64) -> Synth {
        let procs = (0..3u32)
            .map(|i| {
                let base = 0x40_0000 + u64::from(i) * 0x10_0000;
                Proc {
                    asid: i + 1,
                    pc: base,
                    text: (base, 24 * 1024 + u64::from(i) * 16 * 1024),
                    array_pos: 0,
                    array: (0x1000_0000, 96 * 1024),
                    heap: (0x2000_0000, 512 * 1024),
                    sp: 0x7fff_f000,
                }
            })
            .collect();
        Synth {
            rng: rng(seed),
            left: refs,
            procs,
            cur: 0,
            in_kernel: 0,
            kpc: KERNEL_BASE,
            copy: None,
        }
    }

    fn one(&mut self) -> Ref {
        let r = self.rng.next_u64();
        let asid = self.procs[self.cur].asid;
        if self.in_kernel > 0 {
            self.in_kernel -= 1;
            if let Some((src, dst, left)) = self.copy {
                // A block copy: a load and a store per word, then on with the system call.
                let off = left * 4;
                self.copy = (left > 1).then_some((src, dst, left - 1));
                return if r & 1 == 0 {
                    Ref::new(Kind::Read, Mode::Kernel, asid, 4, src + off)
                } else {
                    Ref::new(Kind::Write, Mode::Kernel, asid, 4, dst + off)
                };
            }
            return match r % 10 {
                0..=5 => {
                    self.kpc = if r % 97 == 0 {
                        (KERNEL_BASE + (r >> 20) % (192 * 1024)) & !3
                    } else {
                        self.kpc + 4
                    };
                    Ref::new(Kind::Instr, Mode::Kernel, asid, 4, self.kpc)
                }
                6 | 7 => Ref::new(
                    Kind::Read,
                    Mode::Kernel,
                    asid,
                    4,
                    (KERNEL_BASE + 0x40_0000 + (r >> 16) % (128 * 1024)) & !3,
                ),
                _ => Ref::new(
                    Kind::Write,
                    Mode::Kernel,
                    asid,
                    4,
                    (KERNEL_BASE + 0x40_0000 + (r >> 16) % (32 * 1024)) & !3,
                ),
            };
        }
        if r % 5000 == 0 {
            // A system call; every few of them switches to another process.
            self.in_kernel = 200 + (r >> 8) % 800;
            self.kpc = (KERNEL_BASE + (r >> 24) % (64 * 1024)) & !3;
            if r % 3 == 0 {
                let words = 256 + (r >> 40) % 768;
                let user = (self.procs[self.cur].heap.0 + (r >> 12) % (256 * 1024)) & !3;
                self.copy = Some((KERNEL_BASE + 0x80_0000, user, words));
                self.in_kernel += words;
            }
            if r % 7 == 0 {
                self.cur = (self.cur + 1) % self.procs.len();
            }
        }
        let p = &mut self.procs[self.cur];
        match r % 100 {
            0..=69 => {
                p.pc = if r % 61 == 0 {
                    (p.text.0 + (r >> 20) % p.text.1) & !3
                } else if p.pc + 4 >= p.text.0 + p.text.1 {
                    p.text.0
                } else {
                    p.pc + 4
                };
                Ref::new(Kind::Instr, Mode::User, asid, 4, p.pc)
            }
            70..=79 => {
                let off = ((r >> 16) % 256) & !7;
                let kind = if r & 1 == 0 { Kind::Read } else { Kind::Write };
                Ref::new(kind, Mode::User, asid, 8, p.sp - off)
            }
            80..=89 => {
                p.array_pos = (p.array_pos + 8) % p.array.1;
                Ref::new(Kind::Read, Mode::User, asid, 8, p.array.0 + p.array_pos)
            }
            90..=95 => Ref::new(
                Kind::Read,
                Mode::User,
                asid,
                4,
                (p.heap.0 + (r >> 16) % p.heap.1) & !3,
            ),
            _ => Ref::new(
                Kind::Write,
                Mode::User,
                asid,
                4,
                (p.heap.0 + (r >> 16) % p.heap.1) & !3,
            ),
        }
    }
}

impl RefSource for Synth {
    fn next_batch(&mut self, out: &mut Vec<Ref>, max: usize) -> Result<usize> {
        let n = (max as u64).min(self.left);
        for _ in 0..n {
            let r = self.one();
            out.push(r);
        }
        self.left -= n;
        Ok(n as usize)
    }

    fn meta(&self) -> TraceMeta {
        TraceMeta::default()
    }
}

/// Refuses a synthetic trace that cannot fit where it is to be written, before writing any of it
/// (`--refs 18446744073709551615` used to write until the disk was full). A synthetic reference
/// takes 2.9 bytes in a plain trace and 1.2-1.3 compressed (measured on 2 M references); the
/// bound uses 2 and 1, so only a trace that surely cannot fit is refused.
pub fn check_room(output: &Path, refs: u64, zstd: bool) -> Result<()> {
    let crate::files::Destination::Replace(into) = crate::files::classify(output)? else {
        return Ok(()); // a device or pipe: the reader decides where the bytes go
    };
    let compressed = zstd || into.extension().is_some_and(|e| e == "zst" || e == "gz");
    let per_ref = if compressed { 1 } else { 2 };
    let dir = crate::files::parent(&into);
    let Some(free) = crate::scratch::free_space(dir) else {
        return Ok(());
    };
    let need = refs.saturating_mul(per_ref);
    if need > free {
        return Err(crate::usage!(
            "--refs {refs}: the trace would take at least {} ({per_ref} byte{} a reference) and \
             {} has {} free: give fewer --refs (at most about {}), or an -o on a larger file \
             system",
            crate::units::bytes(need),
            if per_ref == 1 { "" } else { "s" },
            dir.display(),
            crate::units::bytes(free),
            free / per_ref
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::read_all;
    use super::*;

    /// The numbers memsim's own generator drew from seed 4 before it gave way to the statistics
    /// crate's SplitMix64: the next number, then three scaled into [0, 20), [0, 64) and [0, 2^40).
    #[test]
    fn the_generator_draws_the_stream_it_drew_before() {
        let mut g = rng(4);
        assert_eq!(g.next_u64(), 0xc9ff_3692_c775_38ad);
        assert_eq!(
            [g.scaled(20), g.scaled(64), g.scaled(1 << 40)],
            [6, 0, 1_000_368_673_872]
        );
    }

    #[test]
    fn deterministic_and_mixed() {
        let a = read_all(&mut Synth::new(200_000, 1)).unwrap();
        let b = read_all(&mut Synth::new(200_000, 1)).unwrap();
        let c = read_all(&mut Synth::new(200_000, 2)).unwrap();
        assert_eq!(a.len(), 200_000);
        assert_eq!(a, b);
        assert_ne!(a, c);
        let kernel = a.iter().filter(|r| r.mode == Mode::Kernel).count();
        assert!(kernel > 1000 && kernel < 150_000, "{kernel}");
        for k in [Kind::Instr, Kind::Read, Kind::Write] {
            assert!(a.iter().any(|r| r.kind == k));
        }
        assert!(
            a.iter()
                .map(|r| r.asid)
                .collect::<std::collections::BTreeSet<_>>()
                .len()
                > 1
        );
    }
}
