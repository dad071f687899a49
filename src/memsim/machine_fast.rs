//! The fast paths of `Machine`: `run`'s specialised loop for machines whose hit path is only
//! first-level caches, and `access`'s hit path. Both must leave exactly the state and counts the
//! general path would (tested in `fast_path_tests.rs`).

use super::Machine;
use crate::memsim::trace::{Kind, Mode, Ref};

impl Machine {
    /// Simulates references in order; the same as `access` on each, faster.
    pub fn run(&mut self, refs: &[Ref]) {
        if self.plain {
            self.run_plain(refs);
        } else {
            for r in refs {
                self.access(r);
            }
        }
    }

    /// `run` for the plain shape: the loop keeps what a hit needs in registers and falls back to
    /// `access_general` for anything but a first-level hit within one line.
    fn run_plain(&mut self, refs: &[Ref]) {
        let route = self.route;
        let bits = route.map(|i| self.l1[i].line_bits());
        // Only data references write.
        let writes_stay = self.l1[route[1]].cfg.write_back;
        let kernel_ranges = self.kernel_ranges;
        let mut asid = self.cur_asid;
        let mut key = self.space_key;
        // Hits counted in registers (a counter in memory indexed by kind would chain every
        // reference to the previous one's store): user references, instructions and writes;
        // kernel references, rarer and in runs, by kind in memory.
        let mut user = [0u64; 3];
        let mut kernel_hits = [0u64; 3];
        for l in &mut self.l1 {
            l.forget_last();
        }
        for r in refs {
            let data = r.kind != Kind::Instr;
            let d = usize::from(data);
            let write = r.kind == Kind::Write;
            let kernel = r.mode == Mode::Kernel;
            let addr = r.vaddr ^ key;
            let line = addr >> bits[d];
            let end = addr.wrapping_add(u64::from(r.size.max(1)) - 1) >> bits[d];
            let simple = (r.asid == asid)
                & !r.uncached
                & !(kernel & kernel_ranges)
                & (line == end)
                & (writes_stay | !write);
            if simple && self.l1[route[d]].try_hit_pow2(line, write) {
                if kernel {
                    kernel_hits[r.kind as usize] += 1;
                } else {
                    user[0] += 1;
                    user[1] += u64::from(!data);
                    user[2] += u64::from(write);
                }
                continue;
            }
            self.add_hits(&user, &kernel_hits);
            (user, kernel_hits) = Default::default();
            for l in &mut self.l1 {
                l.forget_last();
            }
            self.access_general(r);
            asid = self.cur_asid;
            key = self.space_key;
        }
        self.add_hits(&user, &kernel_hits);
        for l in &mut self.l1 {
            l.forget_last();
        }
    }

    /// Adds hits counted as `run_plain` counts them, and brings the clock up to date (the
    /// general path and the write buffer read it).
    fn add_hits(&mut self, &[all, instrs, writes]: &[u64; 3], kernel: &[u64; 3]) {
        let user = [instrs, all - instrs - writes, writes];
        for (counts, new) in self.hits.iter_mut().zip([user, *kernel]) {
            for (c, n) in counts.iter_mut().zip(new) {
                *c += n;
            }
        }
        let instrs = instrs + kernel[0];
        self.now += instrs;
        self.cur_space.instructions += instrs;
        self.stats.refs += all + kernel.iter().sum::<u64>();
    }

    /// The common case done quickly: a reference of the current address space that hits its
    /// first-level cache within one line, needs nothing from a TLB or the write buffer and stalls
    /// for no cycle. Returns false, having changed nothing that `access_general` would not
    /// change in the same way, for everything else.
    #[inline(always)]
    pub(super) fn try_hit(&mut self, r: &Ref) -> bool {
        let kernel = r.mode == Mode::Kernel;
        if r.asid != self.cur_asid || r.uncached || (kernel && self.kernel_ranges) {
            return false;
        }
        let data = r.kind != Kind::Instr;
        if let Some(t) = &self.tlb {
            if !t.known_hit(r.asid, r.vaddr, kernel, usize::from(data)) {
                return false;
            }
        }
        let write = r.kind == Kind::Write;
        let li = self.route[usize::from(data)];
        let (physical, line_bits, write_back) = {
            let l = &self.l1[li];
            (l.cfg.physical, l.line_bits(), l.cfg.write_back)
        };
        if write && !write_back {
            // A write-through write always goes on to the write buffer or the next level.
            return false;
        }
        let addr = if physical || self.needs_paddr {
            // Translating here too keeps first-touch mappings in reference order; a second
            // translation of the same page (in `access_general`) changes nothing.
            let paddr = match r.paddr {
                Some(p) => p,
                None if self.needs_paddr => {
                    let space = if kernel { u32::MAX } else { r.asid };
                    self.mapper
                        .translate_stream(space, r.vaddr, usize::from(data))
                }
                None => r.vaddr,
            };
            if physical {
                paddr
            } else {
                r.vaddr ^ self.space_key
            }
        } else {
            r.vaddr ^ self.space_key
        };
        let line = addr >> line_bits;
        let end = addr.wrapping_add(u64::from(r.size.max(1)) - 1) >> line_bits;
        if line != end || !self.l1[li].try_hit(line, write) {
            return false;
        }
        self.hits[r.mode as usize][r.kind as usize] += 1;
        let instr = u64::from(!data);
        self.now += instr;
        self.cur_space.instructions += instr;
        self.stats.refs += 1;
        true
    }
}
