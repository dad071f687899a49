//! A small seeded generator, so that shuffles and resamples are the same on every machine and in
//! every osmeter version given the same seed (a stored run can be replayed exactly).
//!
//! xoshiro256++ (Blackman and Vigna), its state filled from the seed by SplitMix64 as its authors
//! advise. SplitMix64 is offered alone too, and Marsaglia's xorshift64, for the inputs of
//! workloads, synthetic traces and simulated replacement: their streams were drawn from them before
//! this crate existed, and a stream that changed would change what those measure and simulate.

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
