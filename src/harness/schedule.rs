//! The order in which a run measures its rounds: round by round, every figure once per round, in an
//! order shuffled afresh for each round (randomised interleaving, as Abedi and Brecht advise), so
//! that no figure always follows the same neighbour or always runs at the same moment of the run.
//! The order depends only on the seed and the number of figures and rounds.

use crate::stats::rng::Rng;

/// One round of one figure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slot {
    /// Index of the figure (probe variant) in the run's list.
    pub variant: usize,
    pub round: usize,
}

/// Every round of every figure, in the order to measure them.
pub fn order(variants: usize, rounds: usize, seed: u64) -> Vec<Slot> {
    let mut rng = Rng::new(seed);
    let mut out = Vec::with_capacity(variants * rounds);
    let mut previous: Option<usize> = None;
    for round in 0..rounds {
        let mut this: Vec<usize> = (0..variants).collect();
        rng.shuffle(&mut this);
        // A figure never measured twice in a row across the seam between two rounds.
        if variants > 1 && previous == this.first().copied() {
            let other = 1 + rng.below(variants - 1);
            this.swap(0, other);
        }
        previous = this.last().copied();
        out.extend(this.into_iter().map(|variant| Slot { variant, round }));
    }
    out
}

/// An extra round of some figures (`variants`, indices into the run's list), in an order shuffled
/// by the seed and the round, never starting with the figure measured last (`previous`).
pub fn extra(variants: &[usize], round: usize, seed: u64, previous: Option<usize>) -> Vec<Slot> {
    let mut rng = Rng::stream(seed, 1 + round as u64);
    let mut this = variants.to_vec();
    rng.shuffle(&mut this);
    if this.len() > 1 && previous == this.first().copied() {
        let other = 1 + rng.below(this.len() - 1);
        this.swap(0, other);
    }
    this.into_iter()
        .map(|variant| Slot { variant, round })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_same_seed_gives_the_same_order_and_another_seed_another() {
        assert_eq!(order(30, 5, 42), order(30, 5, 42));
        assert_ne!(order(30, 5, 42), order(30, 5, 43));
        // Rounds are shuffled independently: round 2 is not round 1 again.
        let o = order(30, 2, 42);
        let first: Vec<usize> = o[..30].iter().map(|s| s.variant).collect();
        let second: Vec<usize> = o[30..].iter().map(|s| s.variant).collect();
        assert_ne!(first, second);
    }

    #[test]
    fn known_order_for_a_fixed_seed() {
        // Pinned so that a stored seed replays the same order in later versions.
        let o: Vec<usize> = order(4, 2, 7).iter().map(|s| s.variant).collect();
        assert_eq!(o, KNOWN_4_2_7);
    }
    const KNOWN_4_2_7: [usize; 8] = [2, 1, 3, 0, 3, 0, 2, 1];

    #[test]
    fn edge_cases() {
        assert!(order(0, 5, 1).is_empty());
        assert!(order(5, 0, 1).is_empty());
        let one: Vec<Slot> = order(1, 3, 1);
        assert_eq!(one.len(), 3);
        assert!(one
            .iter()
            .enumerate()
            .all(|(r, s)| s.variant == 0 && s.round == r));
    }

    #[test]
    fn extra_rounds_are_shuffled_under_the_seed_and_avoid_the_last_figure() {
        let some = [1, 4, 6, 9, 12];
        assert_eq!(extra(&some, 3, 5, None), extra(&some, 3, 5, None));
        let orders: Vec<Vec<usize>> = (0..20)
            .map(|seed| {
                extra(&some, 3, seed, None)
                    .iter()
                    .map(|s| s.variant)
                    .collect()
            })
            .collect();
        assert!(orders.iter().any(|o| o != &orders[0]), "never shuffled");
        for seed in 0..50 {
            let o = extra(&some, 4, seed, Some(6));
            assert_ne!(o[0].variant, 6);
            assert!(o.iter().all(|s| s.round == 4));
            let mut got: Vec<usize> = o.iter().map(|s| s.variant).collect();
            got.sort_unstable();
            assert_eq!(got, some);
        }
        assert_eq!(
            extra(&[7], 3, 1, Some(7)),
            vec![Slot {
                variant: 7,
                round: 3
            }]
        );
        assert!(extra(&[], 3, 1, None).is_empty());
    }

    proptest! {
        #[test]
        fn each_round_measures_every_figure_once_and_no_figure_twice_in_a_row(
            variants in 1usize..60,
            rounds in 1usize..8,
            seed: u64,
        ) {
            let o = order(variants, rounds, seed);
            prop_assert_eq!(o.len(), variants * rounds);
            for (r, chunk) in o.chunks(variants).enumerate() {
                prop_assert!(chunk.iter().all(|s| s.round == r));
                let mut seen: Vec<usize> = chunk.iter().map(|s| s.variant).collect();
                seen.sort();
                prop_assert_eq!(seen, (0..variants).collect::<Vec<_>>());
            }
            if variants > 1 {
                prop_assert!(o.windows(2).all(|w| w[0].variant != w[1].variant));
            }
        }
    }
}
