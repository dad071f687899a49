//! The reference mix: four small integer kernels of the kinds that made up the integer benchmarks of
//! the papers' time (text compression, sorting, hashing, an interpreter), run one after another on
//! inputs that fit the first-level caches, so the mix measures the processor, not memory.
//!
//! A pass draws its inputs from one of [`VARIANTS`] seeds in turn, so the branch predictors see a
//! long pattern rather than one input repeated; the instruction count of a whole cycle of variants is
//! fixed for a given binary, which is what the calibration counts. Nothing in a pass calls the C
//! library (no memcpy or memset): those pick a CPU-specific routine at load time and would count
//! differently under valgrind than natively.

use crate::stats::rng::XorShift64Star;
use std::hint::black_box;

/// Input sets a cycle of passes goes through.
pub const VARIANTS: u64 = 64;
/// Bumped whenever the mix changes, so cached instruction counts of an older mix are not reused.
pub const MIX_VERSION: u32 = 1;

const TEXT: usize = 1024;
const HASH_BITS: u32 = 10;
const MAX_MATCH: usize = 64;
const SORT_N: usize = 128;
const TABLE: usize = 512;
const WORDS: usize = 48;
const COLLATZ_STARTS: i64 = 2;
/// The seed of the made-up vocabulary's generator.
const VOCABULARY_SEED: u64 = 0x05E3_7E11;

fn fold(h: u64, v: u64) -> u64 {
    (h ^ v).wrapping_mul(0x100_0000_01B3).rotate_left(17)
}

/// A tiny stack machine's instructions.
#[derive(Clone, Copy, Debug)]
enum Op {
    Push(i64),
    Load(u8),
    Store(u8),
    Add,
    Mul,
    And,
    Shr,
    Lt,
    Gt,
    Jz(u16),
    Jmp(u16),
    Halt,
}

// Slots of the interpreted program.
const I: u8 = 0;
const X: u8 = 1;
const STEPS: u8 = 2;
const ACC: u8 = 3;
const N: u8 = 4;
const SEED: u8 = 5;

/// Sums the Collatz step counts (capped at 200) of `N` numbers from `SEED` on.
fn collatz_program() -> Vec<Op> {
    use Op::*;
    let mut p = vec![Push(0), Store(I)];
    let outer = p.len() as u16;
    p.extend([Load(I), Load(N), Lt, Jz(0)]);
    let exit_jump = p.len() - 1;
    p.extend([Load(SEED), Load(I), Add, Store(X), Push(0), Store(STEPS)]);
    let inner = p.len() as u16;
    p.extend([Load(X), Push(1), Gt, Jz(0)]);
    let done_jump_a = p.len() - 1;
    p.extend([Load(STEPS), Push(200), Lt, Jz(0)]);
    let done_jump_b = p.len() - 1;
    p.extend([Load(X), Push(1), And, Jz(0)]);
    let even_jump = p.len() - 1;
    p.extend([Load(X), Push(3), Mul, Push(1), Add, Store(X), Jmp(0)]);
    let next_jump = p.len() - 1;
    let even = p.len() as u16;
    p.extend([Load(X), Push(1), Shr, Store(X)]);
    let next = p.len() as u16;
    p.extend([Load(STEPS), Push(1), Add, Store(STEPS), Jmp(inner)]);
    let done = p.len() as u16;
    p.extend([Load(ACC), Load(STEPS), Add, Store(ACC)]);
    p.extend([Load(I), Push(1), Add, Store(I), Jmp(outer)]);
    let end = p.len() as u16;
    p.extend([Load(ACC), Halt]);
    p[exit_jump] = Jz(end);
    p[done_jump_a] = Jz(done);
    p[done_jump_b] = Jz(done);
    p[even_jump] = Jz(even);
    p[next_jump] = Jmp(next);
    p
}

fn interpret(program: &[Op], slots: &mut [i64; 8]) -> i64 {
    let mut stack = [0i64; 16];
    let mut sp = 0usize;
    let mut pc = 0usize;
    loop {
        let op = program[pc];
        pc += 1;
        match op {
            Op::Push(v) => {
                stack[sp] = v;
                sp += 1;
            }
            Op::Load(s) => {
                stack[sp] = slots[s as usize];
                sp += 1;
            }
            Op::Store(s) => {
                sp -= 1;
                slots[s as usize] = stack[sp];
            }
            Op::Jz(t) => {
                sp -= 1;
                if stack[sp] == 0 {
                    pc = t as usize;
                }
            }
            Op::Jmp(t) => pc = t as usize,
            Op::Halt => return stack[sp - 1],
            binary => {
                sp -= 1;
                let (a, b) = (stack[sp - 1], stack[sp]);
                stack[sp - 1] = match binary {
                    Op::Add => a.wrapping_add(b),
                    Op::Mul => a.wrapping_mul(b),
                    Op::And => a & b,
                    Op::Shr => a >> (b & 63),
                    Op::Lt => i64::from(a < b),
                    Op::Gt => i64::from(a > b),
                    _ => unreachable!("every other op is handled above"),
                };
            }
        }
    }
}

/// The state of the mix: inputs are rebuilt every pass, tables are invalidated by stamps rather
/// than cleared (clearing would be a memset).
pub struct Mix {
    words: Vec<([u8; 8], usize)>,
    text: Vec<u8>,
    /// Absolute position + 1 of the last occurrence of each 3-byte hash; entries from earlier
    /// passes are below `base` and count as empty.
    head: Vec<u64>,
    base: u64,
    keys: Vec<u32>,
    table_stamp: Vec<u64>,
    table_key: Vec<u32>,
    table_value: Vec<u32>,
    stamp: u64,
    program: Vec<Op>,
    pass: u64,
}

/// What one pass computed, kept apart for the known-answer tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PassResult {
    pub compressed_bits: u64,
    pub tokens: u64,
    pub sorted_fold: u64,
    pub found: u64,
    pub text_hash: u64,
    pub collatz_steps: i64,
}

impl PassResult {
    fn checksum(&self) -> u64 {
        [
            self.compressed_bits,
            self.tokens,
            self.sorted_fold,
            self.found,
            self.text_hash,
            self.collatz_steps as u64,
        ]
        .into_iter()
        .fold(0, fold)
    }
}

impl Default for Mix {
    fn default() -> Self {
        Mix::new()
    }
}

impl Mix {
    pub fn new() -> Mix {
        // A vocabulary of made-up words, 2 to 8 letters, so the text compresses like prose.
        // xorshift64*, a cheap deterministic generator, from an odd (so non-zero) seed.
        let mut rng = XorShift64Star(VOCABULARY_SEED);
        let words = (0..WORDS)
            .map(|_| {
                let len = 2 + (rng.next_u64() % 7) as usize;
                let mut w = [0u8; 8];
                for b in w.iter_mut().take(len) {
                    *b = b'a' + (rng.next_u64() % 26) as u8;
                }
                (w, len)
            })
            .collect();
        Mix {
            words,
            text: vec![0; TEXT],
            head: vec![0; 1 << HASH_BITS],
            base: 0,
            keys: vec![0; SORT_N],
            table_stamp: vec![0; TABLE],
            table_key: vec![0; TABLE],
            table_value: vec![0; TABLE],
            stamp: 0,
            program: collatz_program(),
            pass: 0,
        }
    }

    /// One pass over the next variant's inputs; returns its checksum.
    pub fn pass(&mut self) -> u64 {
        self.pass_result().checksum()
    }

    pub fn pass_result(&mut self) -> PassResult {
        let variant = self.pass % VARIANTS;
        self.pass += 1;
        // Made odd, so never zero, as xorshift64* needs.
        let mut rng =
            XorShift64Star(black_box(0x9E37_79B9_7F4A_7C15 ^ variant.wrapping_mul(0xD1B5)) | 1);
        self.make_text(&mut rng);
        let (compressed_bits, tokens) = self.compress();
        let sorted_fold = self.sort(&mut rng);
        let (found, text_hash) = self.hash();
        let mut slots = [0i64; 8];
        slots[N as usize] = COLLATZ_STARTS;
        slots[SEED as usize] = 3 + (rng.next_u64() % 500) as i64;
        let collatz_steps = interpret(&self.program, &mut slots);
        PassResult {
            compressed_bits,
            tokens,
            sorted_fold,
            found,
            text_hash,
            collatz_steps,
        }
    }

    fn make_text(&mut self, rng: &mut XorShift64Star) {
        let mut pos = 0;
        while pos < TEXT {
            let (word, len) = self.words[(rng.next_u64() % WORDS as u64) as usize];
            // Capitalise one word in eight; the xor also keeps this loop from becoming a memcpy.
            let case = if rng.next_u64() & 7 == 0 { 0x20 } else { 0 };
            for &b in &word[..len] {
                if pos == TEXT {
                    break;
                }
                self.text[pos] = b ^ case;
                pos += 1;
            }
            if pos < TEXT {
                self.text[pos] = b' ';
                pos += 1;
            }
        }
    }

    /// Greedy LZ77 over the text with a one-entry hash of 3-byte prefixes; returns the size in bits
    /// (a literal costs 9, a match 17) and the number of tokens.
    fn compress(&mut self) -> (u64, u64) {
        let text = &self.text;
        let base = self.base;
        let (mut bits, mut tokens, mut i) = (0u64, 0u64, 0usize);
        while i < TEXT {
            let mut len = 0;
            let mut from = 0;
            if i + 3 <= TEXT {
                let key = (u32::from(text[i]) << 16
                    | u32::from(text[i + 1]) << 8
                    | u32::from(text[i + 2]))
                .wrapping_mul(2_654_435_761)
                    >> (32 - HASH_BITS);
                let slot = &mut self.head[key as usize];
                if *slot > base {
                    from = (*slot - base - 1) as usize;
                    while i + len < TEXT && len < MAX_MATCH && text[from + len] == text[i + len] {
                        len += 1;
                    }
                }
                *slot = base + i as u64 + 1;
            }
            tokens += 1;
            if len >= 3 {
                bits += 17;
                black_box((i - from, len));
                i += len;
            } else {
                bits += 9;
                i += 1;
            }
        }
        self.base += TEXT as u64;
        (bits, tokens)
    }

    fn sort(&mut self, rng: &mut XorShift64Star) -> u64 {
        for k in self.keys.iter_mut() {
            *k = rng.next_u64() as u32;
        }
        quicksort(&mut self.keys);
        self.keys
            .iter()
            .enumerate()
            .fold(0, |h, (i, &k)| fold(h, u64::from(k) * (i as u64 + 1)))
    }

    /// Inserts the sorted keys into an open-addressing table, looks up as many keys of which half
    /// are there, and hashes the text with FNV-1a.
    fn hash(&mut self) -> (u64, u64) {
        self.stamp += 1;
        let slot_of = |k: u32| (k.wrapping_mul(0x9E37_79B1) >> (32 - 9)) as usize & (TABLE - 1);
        for (v, &k) in self.keys.iter().enumerate() {
            let mut s = slot_of(k);
            while self.table_stamp[s] == self.stamp && self.table_key[s] != k {
                s = (s + 1) & (TABLE - 1);
            }
            self.table_stamp[s] = self.stamp;
            self.table_key[s] = k;
            self.table_value[s] = v as u32;
        }
        let mut found = 0u64;
        for (i, &k) in self.keys.iter().enumerate() {
            let wanted = if i & 1 == 0 { k } else { k ^ 0x8000_0001 };
            let mut s = slot_of(wanted);
            while self.table_stamp[s] == self.stamp {
                if self.table_key[s] == wanted {
                    found += 1 + u64::from(self.table_value[s] & 1);
                    break;
                }
                s = (s + 1) & (TABLE - 1);
            }
        }
        let text_hash = self.text.iter().fold(0xCBF2_9CE4_8422_2325u64, |h, &b| {
            (h ^ u64::from(b)).wrapping_mul(0x100_0000_01B3)
        });
        (found, text_hash)
    }
}

/// Quicksort with a median-of-three pivot, insertion sort below 16 elements. Written out rather
/// than the standard library's sort, whose small-sort step copies through memcpy.
fn quicksort(a: &mut [u32]) {
    if a.len() < 16 {
        for i in 1..a.len() {
            let x = a[i];
            let mut j = i;
            while j > 0 && a[j - 1] > x {
                a[j] = a[j - 1];
                j -= 1;
            }
            a[j] = x;
        }
        return;
    }
    let (lo, mid, hi) = (0, a.len() / 2, a.len() - 1);
    if a[mid] < a[lo] {
        a.swap(mid, lo);
    }
    if a[hi] < a[lo] {
        a.swap(hi, lo);
    }
    if a[hi] < a[mid] {
        a.swap(hi, mid);
    }
    let pivot = a[mid];
    let (mut i, mut j) = (0, a.len() - 1);
    loop {
        while a[i] < pivot {
            i += 1;
        }
        while a[j] > pivot {
            j -= 1;
        }
        if i >= j {
            break;
        }
        a.swap(i, j);
        i += 1;
        j -= 1;
    }
    let (left, right) = a.split_at_mut(j + 1);
    quicksort(left);
    quicksort(right);
}

/// Runs `passes` passes. The calibration counts the instructions of this function alone (callgrind
/// `--toggle-collect` on its name), so it must stay out of line and keep its name.
#[inline(never)]
pub fn cpu_mix_count_region(mix: &mut Mix, passes: u64) -> u64 {
    let mut sum = 0u64;
    for _ in 0..passes {
        sum = sum.wrapping_add(mix.pass());
    }
    black_box(sum)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernels_compute_what_they_claim() {
        let mut mix = Mix::new();
        for _ in 0..2 * VARIANTS {
            let before = mix.pass;
            let r = mix.pass_result();
            // The text is prose-like: it compresses, but not to nothing.
            assert!(r.compressed_bits < 9 * TEXT as u64 && r.compressed_bits > 9 * 64);
            assert!(mix.keys.windows(2).all(|w| w[0] <= w[1]), "sorted");
            // Every even-indexed key is found; odd-indexed lookups miss unless the flipped key
            // happens to be present.
            assert!(r.found >= SORT_N as u64 / 2, "{r:?}");
            let fnv = mix.text.iter().fold(0xCBF2_9CE4_8422_2325u64, |h, &b| {
                (h ^ b as u64).wrapping_mul(0x100_0000_01B3)
            });
            assert_eq!(r.text_hash, fnv);
            assert!(r.collatz_steps > 0);
            assert_eq!(mix.pass, before + 1);
        }
    }

    /// The inputs are drawn from the statistics crate's xorshift64*; these are the numbers the
    /// mix's own copy of it drew from the vocabulary's seed, and the word lengths, a letter and a
    /// Collatz seed as `below` took them, so the mix (and its MIX_VERSION) stays as it was.
    #[test]
    fn the_generator_draws_the_stream_it_drew_before() {
        let mut rng = XorShift64Star(VOCABULARY_SEED);
        let first = [rng.next_u64(), rng.next_u64(), rng.next_u64()];
        assert_eq!(
            first,
            [
                0xbe48_0102_45ed_e053,
                0x2f5f_e5f2_697a_4ab0,
                0xc2af_9ec7_5829_ef0f
            ]
        );
        let mut rng = XorShift64Star(VOCABULARY_SEED);
        let drawn = [
            rng.next_u64() % 7,
            rng.next_u64() % 26,
            rng.next_u64() % 500,
        ];
        assert_eq!(drawn, [5, 16, 79]);
    }

    #[test]
    fn quicksort_sorts_anything() {
        let mut rng = XorShift64Star(7);
        for n in [0, 1, 2, 15, 16, 17, 100, 128, 1000] {
            for spread in [3, 1 << 32] {
                let mut a: Vec<u32> = (0..n).map(|_| (rng.next_u64() % spread) as u32).collect();
                let mut expected = a.clone();
                expected.sort();
                quicksort(&mut a);
                assert_eq!(a, expected, "n={n} spread={spread}");
            }
        }
    }

    #[test]
    fn interpreter_known_answer() {
        // Collatz steps of 3 (7), 4 (2), 5 (5), 6 (8): 22.
        let mut slots = [0i64; 8];
        slots[N as usize] = 4;
        slots[SEED as usize] = 3;
        assert_eq!(interpret(&collatz_program(), &mut slots), 22);
        slots = [0; 8];
        slots[N as usize] = 1;
        slots[SEED as usize] = 27;
        assert_eq!(interpret(&collatz_program(), &mut slots), 111);
    }

    #[test]
    fn compression_finds_repeats() {
        let mut mix = Mix::new();
        for (i, b) in mix.text.iter_mut().enumerate() {
            *b = b"abcd"[i % 4];
        }
        // Four literals, then matches of MAX_MATCH bytes: the first hash hit is at position 4.
        let (bits, tokens) = mix.compress();
        let matches = (TEXT as u64 - 4).div_ceil(MAX_MATCH as u64);
        assert_eq!(tokens, 4 + matches, "{bits}");
        // A second pass over the same text sees no hit from the first (stamped out).
        let (bits2, _) = mix.compress();
        assert_eq!(bits, bits2);
    }

    #[test]
    fn a_cycle_of_passes_is_repeatable() {
        let mut a = Mix::new();
        let mut b = Mix::new();
        let first: Vec<u64> = (0..VARIANTS).map(|_| a.pass()).collect();
        let second: Vec<u64> = (0..VARIANTS).map(|_| a.pass()).collect();
        assert_eq!(first, second, "the second cycle repeats the first");
        assert_eq!(first[3], {
            (0..3).for_each(|_| {
                b.pass();
            });
            b.pass()
        });
        assert!(first.windows(2).any(|w| w[0] != w[1]), "variants differ");
    }
}
