//! A small seeded generator, so that shuffles and resamples are the same on every machine and in
//! every osmeter version given the same seed (a stored run can be replayed exactly).
//!
//! xoshiro256++ (Blackman and Vigna), its state filled from the seed by SplitMix64 as its authors
//! advise. SplitMix64 is offered alone too, and Marsaglia's xorshift64 and Vigna's xorshift64*,
//! for the inputs of workloads, synthetic traces and simulated replacement: their streams were
//! drawn from them before this crate existed, and a stream that changed would change what those
//! measure and simulate.

/// Seeded pseudo-random numbers; not for anything secret.
#[derive(Clone, Debug)]
pub struct Rng {
    s: [u64; 4],
}

/// One number of SplitMix64 (Steele, Lea and Flood): `state` advances by the golden-ratio increment
/// and comes back mixed.
#[inline]
pub fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// One number of Marsaglia's xorshift64 (shifts 13, 7, 17): `state`, which must not be zero, moves
/// on and is the number.
#[inline]
pub fn xorshift64(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

/// SplitMix64 as a generator, its state in the open: one addition and a mix per number, for the
/// streams that must stay as they are (the module's documentation says which). Resampling and
/// shuffles draw from [`Rng`].
#[derive(Clone, Debug)]
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        splitmix64(&mut self.0)
    }

    /// The next number scaled into [0, n): the high half of its 128-bit product with `n`, which
    /// is Lemire's multiply without the rejection step of [`Rng::below`]. It is biased by at most
    /// n / 2^64, nothing at the sizes drawn, and the streams drawn so far (memsim's random
    /// replacement and synthetic traces, the pointer chase's permutation) are exactly this.
    #[inline]
    pub fn scaled(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }
}

/// Vigna's xorshift64* (shifts 12, 25, 27, then a multiply) as a generator, its state in the open:
/// the stream of the `cpu.mix` workload's inputs. The state must not be zero.
#[derive(Clone, Debug)]
pub struct XorShift64Star(pub u64);

impl XorShift64Star {
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

impl Rng {
    pub fn new(seed: u64) -> Rng {
        let mut st = seed;
        let s = [
            splitmix64(&mut st),
            splitmix64(&mut st),
            splitmix64(&mut st),
            splitmix64(&mut st),
        ];
        Rng { s }
    }

    /// A generator for a sub-task (a figure, a round) derived from a parent seed and a stream
    /// number, independent of how many numbers other streams drew.
    pub fn stream(seed: u64, stream: u64) -> Rng {
        let mut st = seed ^ stream.wrapping_mul(0xD1B5_4A32_D192_ED03);
        Rng::new(splitmix64(&mut st))
    }

    pub fn next_u64(&mut self) -> u64 {
        let s = &mut self.s;
        let result = s[0].wrapping_add(s[3]).rotate_left(23).wrapping_add(s[0]);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// Uniform in [0, n), without the bias of a plain modulo (Lemire's multiply-and-reject).
    pub fn below(&mut self, n: usize) -> usize {
        assert!(n > 0, "below(0)");
        let n = n as u64;
        let mut m = (self.next_u64() as u128) * (n as u128);
        if (m as u64) < n {
            let threshold = n.wrapping_neg() % n;
            while (m as u64) < threshold {
                m = (self.next_u64() as u128) * (n as u128);
            }
        }
        (m >> 64) as usize
    }

    /// Uniform in [0, 1), 53 random bits.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Standard normal (Box-Muller; one of the pair is thrown away, which keeps it stateless).
    pub fn normal(&mut self) -> f64 {
        let u1 = 1.0 - self.unit(); // (0, 1]
        let u2 = self.unit();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }

    /// Fisher-Yates shuffle in place.
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i + 1);
            items.swap(i, j);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;
    use proptest::prelude::*;

    #[test]
    fn same_seed_same_numbers_and_streams_differ() {
        let a: Vec<u64> = (0..5)
            .map({
                let mut r = Rng::new(7);
                move |_| r.next_u64()
            })
            .collect();
        let mut r = Rng::new(7);
        assert!(a.iter().all(|&x| x == r.next_u64()));
        assert_ne!(Rng::stream(7, 1).next_u64(), Rng::stream(7, 2).next_u64());
        assert_ne!(Rng::new(7).next_u64(), Rng::new(8).next_u64());
    }

    #[test]
    fn splitmix_known_answer() {
        // First outputs of SplitMix64 from seed 0, as published with the algorithm.
        let mut st = 0u64;
        assert_eq!(splitmix64(&mut st), 0xE220_A839_7B1D_CDAF);
        assert_eq!(splitmix64(&mut st), 0x6E78_9E6A_A1B9_65F4);
        let mut g = SplitMix64(0);
        assert_eq!(g.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(g.0, 0x9E37_79B9_7F4A_7C15);
    }

    #[test]
    fn xorshift64_known_answer() {
        // By hand from 1: ^ << 13 gives 0x2001, ^ >> 7 gives 0x2041, ^ << 17 gives 0x4082_2041.
        let mut st = 1u64;
        assert_eq!(xorshift64(&mut st), 0x4082_2041);
        assert_eq!(st, 0x4082_2041);
    }

    #[test]
    fn xorshift64_star_known_answer() {
        // By hand from 1: ^ >> 12 leaves 1, ^ << 25 gives 0x0200_0001, ^ >> 27 leaves it (it is
        // below 2^27); the number is that times the multiplier.
        let mut g = XorShift64Star(1);
        assert_eq!(g.next_u64(), 0x47E4_CE4B_896C_DD1D);
        assert_eq!(g.0, 0x0200_0001);
        assert_eq!(g.next_u64(), 0xABCF_A6A8_E079_651D);
    }

    #[test]
    fn scaled_is_the_high_half_of_the_product() {
        let mut a = SplitMix64(5);
        let mut b = SplitMix64(5);
        for n in [1u64, 2, 20, 64, 1 << 40, u64::MAX] {
            let x = b.next_u64();
            assert_eq!(a.scaled(n), ((u128::from(x) * u128::from(n)) >> 64) as u64);
        }
        assert_eq!(SplitMix64(9).scaled(1), 0);
    }

    #[test]
    fn below_is_roughly_uniform() {
        let mut r = Rng::new(42);
        let mut counts = [0usize; 6];
        for _ in 0..60_000 {
            counts[r.below(6)] += 1;
        }
        // Each face expects 10000; 5 standard deviations is about 456.
        assert!(
            counts.iter().all(|&c| (9_500..10_500).contains(&c)),
            "{counts:?}"
        );
    }

    #[test]
    fn normal_has_mean_zero_and_unit_variance() {
        let mut r = Rng::new(3);
        let xs: Vec<f64> = (0..100_000).map(|_| r.normal()).collect();
        let m = xs.iter().sum::<f64>() / xs.len() as f64;
        let v = xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / xs.len() as f64;
        assert!(m.abs() < 0.02 && (v - 1.0).abs() < 0.02, "{m} {v}");
    }

    proptest! {
        #[test]
        fn shuffle_is_a_permutation(n in 0usize..200, seed: u64) {
            let mut v: Vec<usize> = (0..n).collect();
            Rng::new(seed).shuffle(&mut v);
            let mut sorted = v.clone();
            sorted.sort();
            prop_assert_eq!(sorted, (0..n).collect::<Vec<_>>());
        }

        #[test]
        fn below_stays_below(n in 1usize..1_000_000, seed: u64) {
            let mut r = Rng::new(seed);
            for _ in 0..20 {
                prop_assert!(r.below(n) < n);
            }
            let u = r.unit();
            prop_assert!((0.0..1.0).contains(&u));
        }
    }
}
