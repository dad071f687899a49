//! References packed one to a 64-bit word, the form in which a pass hands batches from the thread
//! that decodes to the threads that simulate. A [`Ref`] is 40 bytes; a word is 8, so a batch
//! crosses between cores in a fifth of the cache lines, and the simulator's common case reads one
//! word and no other memory.
//!
//! A word holds the virtual address's low 48 bits (sign-extended back: x86-64 and AArch64 user
//! and kernel addresses are canonical 48-bit), the size (up to 255 bytes), the kind, the mode and
//! the uncached mark. The address space is kept per run of words ([`Batch`]'s changes list), and
//! physical addresses, when the trace has them, in a vector beside the words. A reference that
//! does not fit (a wider address, a longer access, an attribution tag) is kept whole on the side,
//! and its word says where.

use super::{Kind, Mode, Ref};

/// Bits 0-47: the virtual address.
const ADDR_BITS: u32 = 48;
const ADDR_MASK: u64 = (1 << ADDR_BITS) - 1;
/// Bits 48-55: the size in bytes.
const SIZE_SHIFT: u32 = 48;
/// Bits 56-63: the class, `CLASS_*` below (bits 0-2 of it count references by kind and mode).
pub(crate) const CLASS_SHIFT: u32 = 56;
/// The kind is the class's low two bits (`Kind`'s values); a write is kind 2.
pub(crate) const CLASS_WRITE: u64 = 2;
pub(crate) const CLASS_KERNEL: u64 = 4;
pub(crate) const CLASS_UNCACHED: u64 = 8;
/// The reference is kept whole in the batch's side list; the word's low 32 bits index it.
pub(crate) const CLASS_SIDE: u64 = 16;
/// The reference lies within one aligned block of `1 << BLOCK_BITS` bytes, so within one line of
/// any cache whose lines are that long or longer: a simulator need not work out where it ends.
pub(crate) const CLASS_IN_BLOCK: u64 = 32;
pub(crate) const BLOCK_BITS: u32 = 6;

const KINDS: [Kind; 3] = [Kind::Instr, Kind::Read, Kind::Write];

/// The word of a reference, or None when it must be kept whole.
#[inline(always)]
pub(crate) fn pack(r: &Ref) -> Option<u64> {
    // A canonical address is its own low bits sign-extended, as `vaddr` unpacks them.
    if vaddr(r.vaddr) != r.vaddr || r.size > 0xff || r.tag != 0 {
        return None;
    }
    Some(word(r.kind, r.mode, r.uncached, r.size, r.vaddr))
}

/// The word of a reference known to fit (a canonical address, a size below 256).
#[inline(always)]
pub(crate) fn word(kind: Kind, mode: Mode, uncached: bool, size: u32, vaddr: u64) -> u64 {
    word_with(class_bits(kind, mode, uncached), size, vaddr)
}

/// The class of a reference, in place in its word.
pub(crate) const fn class_bits(kind: Kind, mode: Mode, uncached: bool) -> u64 {
    (kind as u64 | (mode as u64) << 2 | (uncached as u64) << 3) << CLASS_SHIFT
}

/// `word`, with the class already in place (a decoder keeps it per record tag).
#[inline(always)]
pub(crate) fn word_with(class_bits: u64, size: u32, vaddr: u64) -> u64 {
    let offset = vaddr & ((1 << BLOCK_BITS) - 1);
    let in_block = offset + u64::from(size.max(1)) <= 1 << BLOCK_BITS;
    (vaddr & ADDR_MASK)
        | u64::from(size) << SIZE_SHIFT
        | class_bits
        | (u64::from(in_block) * (CLASS_IN_BLOCK << CLASS_SHIFT))
}

/// The virtual address of a word that is not a side reference.
#[inline(always)]
pub(crate) fn vaddr(w: u64) -> u64 {
    ((w << (64 - ADDR_BITS)) as i64 >> (64 - ADDR_BITS)) as u64
}

/// The size of a word that is not a side reference.
#[inline(always)]
pub(crate) fn size(w: u64) -> u32 {
    ((w >> SIZE_SHIFT) & 0xff) as u32
}

/// The class bits of a word.
#[inline(always)]
pub(crate) fn class(w: u64) -> u64 {
    w >> CLASS_SHIFT
}

/// References in order: words, the physical addresses beside them (when the trace has them), the
/// references kept whole, and where the address space changes.
#[derive(Debug, Default, Clone)]
pub struct Batch {
    pub(crate) words: Vec<u64>,
    /// One per word when the trace has physical addresses, otherwise empty.
    pub(crate) paddrs: Vec<u64>,
    pub(crate) side: Vec<Ref>,
    /// (first word, address space) of every run of one address space, the first at word 0.
    pub(crate) spaces: Vec<(u32, u32)>,
    /// Where a source without a packing decoder of its own decodes before packing.
    pub(crate) scratch: Vec<Ref>,
}

impl Batch {
    pub fn with_capacity(n: usize) -> Batch {
        Batch {
            words: Vec::with_capacity(n),
            ..Batch::default()
        }
    }

    pub fn from_refs(refs: &[Ref]) -> Batch {
        let mut b = Batch::with_capacity(refs.len());
        for r in refs {
            b.push(r);
        }
        b
    }

    pub fn len(&self) -> usize {
        self.words.len()
    }

    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    pub fn clear(&mut self) {
        self.words.clear();
        self.paddrs.clear();
        self.side.clear();
        self.spaces.clear();
    }

    /// Opens a run of address space `asid` at the next word, unless one is open already.
    #[inline(always)]
    pub(crate) fn space(&mut self, asid: u32) {
        let at = self.words.len() as u32;
        // A run that got no words is given up.
        if self
            .spaces
            .last()
            .is_some_and(|&(first, a)| first == at && a != asid)
        {
            self.spaces.pop();
        }
        if self.spaces.last().is_none_or(|&(_, a)| a != asid) {
            self.spaces.push((at, asid));
        }
    }

    /// Appends one reference.
    pub fn push(&mut self, r: &Ref) {
        self.space(r.asid);
        let w = pack(r).unwrap_or_else(|| {
            self.side.push(*r);
            CLASS_SIDE << CLASS_SHIFT | (self.side.len() - 1) as u64
        });
        if let Some(p) = r.paddr {
            // The first physical address of a batch that had none so far: the words before it
            // had none either (a trace has them on every reference or on none).
            self.paddrs.resize(self.words.len(), u64::MAX);
            self.paddrs.push(p);
        } else if !self.paddrs.is_empty() {
            self.paddrs.push(u64::MAX);
        }
        self.words.push(w);
    }

    pub fn view(&self) -> Refs<'_> {
        Refs {
            words: &self.words,
            paddrs: &self.paddrs,
            side: &self.side,
            spaces: &self.spaces,
            offset: 0,
            whole: None,
        }
    }
}

/// A run of a batch's references, as the simulators are fed them.
#[derive(Debug, Clone, Copy)]
pub struct Refs<'a> {
    words: &'a [u64],
    paddrs: &'a [u64],
    side: &'a [Ref],
    spaces: &'a [(u32, u32)],
    /// Index of `words[0]` in the batch (the spaces list counts from the batch's start).
    offset: u32,
    /// The same references unpacked, when a thread feeding several simulators has done that
    /// once for all of them.
    whole: Option<&'a [Ref]>,
}

impl<'a> Refs<'a> {
    pub fn len(&self) -> usize {
        self.words.len()
    }

    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    pub(crate) fn words(&self) -> &'a [u64] {
        self.words
    }

    /// The same view, with `whole` holding its references unpacked (`unpack_into`), so that
    /// every simulator that wants them whole reads them there.
    pub fn with_whole(self, whole: &'a [Ref]) -> Refs<'a> {
        assert_eq!(whole.len(), self.len(), "one whole reference per word");
        Refs {
            whole: Some(whole),
            ..self
        }
    }

    /// The references unpacked beside the words, when they are (`with_whole`).
    pub fn whole(&self) -> Option<&'a [Ref]> {
        self.whole
    }

    /// Appends the references, whole, to `out`.
    pub fn unpack_into(&self, out: &mut Vec<Ref>) {
        out.extend(self.iter());
    }

    /// The reference at `i`, whole.
    #[inline]
    pub fn get(&self, i: usize) -> Ref {
        match self.whole {
            Some(w) => w[i],
            None => self.get_in(i, self.asid_at(i)),
        }
    }

    /// Whether some references carry a physical address from the trace.
    pub(crate) fn has_paddrs(&self) -> bool {
        !self.paddrs.is_empty()
    }

    /// The address space of the reference at `i`.
    pub fn asid_at(&self, i: usize) -> u32 {
        let at = self.offset + i as u32;
        let k = self.spaces.partition_point(|&(first, _)| first <= at);
        self.spaces[k.saturating_sub(1)].1
    }

    /// The references in order, whole.
    pub fn iter(&self) -> Iter<'a> {
        Iter {
            refs: *self,
            at: 0,
            space: self
                .spaces
                .partition_point(|&(first, _)| first <= self.offset),
        }
    }

    /// `get` with the address space already known.
    #[inline(always)]
    fn get_in(&self, i: usize, asid: u32) -> Ref {
        let w = self.words[i];
        if class(w) & CLASS_SIDE != 0 {
            return self.side[(w & 0xffff_ffff) as usize];
        }
        let c = class(w);
        Ref {
            vaddr: vaddr(w),
            paddr: self.paddrs.get(i).copied().filter(|&p| p != u64::MAX),
            asid,
            size: size(w),
            kind: KINDS[(c & 3) as usize],
            mode: if c & CLASS_KERNEL != 0 {
                Mode::Kernel
            } else {
                Mode::User
            },
            uncached: c & CLASS_UNCACHED != 0,
            tag: 0,
        }
    }

    /// The first `mid` references and the rest.
    pub fn split_at(&self, mid: usize) -> (Refs<'a>, Refs<'a>) {
        let (a, b) = self.words.split_at(mid);
        let (pa, pb) = if self.paddrs.is_empty() {
            (self.paddrs, self.paddrs)
        } else {
            self.paddrs.split_at(mid)
        };
        let (wa, wb) = match self.whole {
            Some(w) => {
                let (x, y) = w.split_at(mid);
                (Some(x), Some(y))
            }
            None => (None, None),
        };
        (
            Refs {
                words: a,
                paddrs: pa,
                whole: wa,
                ..*self
            },
            Refs {
                words: b,
                paddrs: pb,
                offset: self.offset + mid as u32,
                whole: wb,
                ..*self
            },
        )
    }

    /// The runs of one address space, in order: (address space, its references).
    pub fn by_space(&self) -> impl Iterator<Item = (u32, Refs<'a>)> + 'a {
        let this = *self;
        let mut at = 0usize;
        std::iter::from_fn(move || {
            if at >= this.len() {
                return None;
            }
            let abs = this.offset + at as u32;
            let k = this.spaces.partition_point(|&(first, _)| first <= abs);
            let asid = this.spaces[k.saturating_sub(1)].1;
            let end = this
                .spaces
                .get(k)
                .map_or(this.len(), |&(first, _)| (first - this.offset) as usize)
                .min(this.len());
            let (_, rest) = this.split_at(at);
            let (run, _) = rest.split_at(end - at);
            at = end;
            Some((asid, run))
        })
    }
}

/// The references of a view in order, whole.
pub struct Iter<'a> {
    refs: Refs<'a>,
    at: usize,
    /// The run of one address space `at` is in, plus one.
    space: usize,
}

impl Iterator for Iter<'_> {
    type Item = Ref;

    #[inline(always)]
    fn next(&mut self) -> Option<Ref> {
        let i = self.at;
        if i >= self.refs.len() {
            return None;
        }
        self.at += 1;
        if let Some(w) = self.refs.whole {
            return Some(w[i]);
        }
        let at = self.refs.offset + i as u32;
        let spaces = self.refs.spaces;
        while spaces
            .get(self.space)
            .is_some_and(|&(first, _)| first <= at)
        {
            self.space += 1;
        }
        Some(self.refs.get_in(i, spaces[self.space.saturating_sub(1)].1))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.refs.len() - self.at;
        (left, Some(left))
    }
}

#[cfg(test)]
#[path = "packed_tests.rs"]
mod tests;
