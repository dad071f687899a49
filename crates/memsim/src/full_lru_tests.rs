use super::*;
use proptest::prelude::*;

/// The obvious fully associative LRU: keys from most to least recent, with their dirty bits.
struct Model {
    order: std::collections::VecDeque<(u64, bool)>,
    capacity: usize,
}

impl Model {
    fn touch(&mut self, k: u64, dirty: bool) -> bool {
        match self.order.iter().position(|e| e.0 == k) {
            Some(p) => {
                let (_, d) = self.order.remove(p).unwrap();
                self.order.push_front((k, d | dirty));
                true
            }
            None => false,
        }
    }

    fn insert(&mut self, k: u64, dirty: bool) -> Option<(u64, bool)> {
        let evicted = (self.order.len() >= self.capacity)
            .then(|| self.order.pop_back())
            .flatten();
        self.order.push_front((k, dirty));
        evicted
    }
}

/// Runs `keys` as a cache would (touch, and insert on a miss) on `lru` and on the model, and
/// checks they agree at every step.
fn agree(mut lru: FullLru, capacity: usize, keys: &[(u64, bool)]) -> Result<(), TestCaseError> {
    let mut model = Model {
        order: Default::default(),
        capacity,
    };
    for (step, &(k, dirty)) in keys.iter().enumerate() {
        prop_assert_eq!(
            lru.is_first(k),
            model.order.front().is_some_and(|e| e.0 == k)
        );
        let hit = lru.touch(k, dirty);
        prop_assert_eq!(hit, model.touch(k, dirty), "touch at step {}", step);
        if !hit {
            let evicted = lru.insert(k, dirty);
            prop_assert_eq!(evicted, model.insert(k, dirty), "insert at step {}", step);
        }
        prop_assert!(lru.contains(k));
        prop_assert_eq!(lru.len, model.order.len());
    }
    for &(k, _) in &model.order {
        prop_assert!(lru.contains(k), "{} lost", k);
    }
    Ok(())
}

/// Keys that collide: neighbours (sharing a group of slots), a few far apart, and some that
/// differ only in high bits, as address spaces' keys do.
fn keys() -> impl Strategy<Value = Vec<(u64, bool)>> {
    let key = prop_oneof![
        4 => 0u64..24,
        2 => (0u64..8).prop_map(|k| k << 60 | 3),
        1 => any::<u64>(),
        1 => Just(u64::MAX),
        1 => Just(EMPTY),
    ];
    prop::collection::vec((key, prop::bool::weighted(0.2)), 1..600)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn matches_the_obvious_lru(capacity in 1usize..40, keys in keys()) {
        agree(FullLru::new(capacity), capacity, &keys)?;
    }

    /// Starting with the least room, so that the table grows (and places every key again)
    /// many times.
    #[test]
    fn grows_without_losing_order(capacity in 1usize..300, keys in keys()) {
        agree(FullLru::with_slots(capacity, 8), capacity, &keys)?;
    }
}

#[test]
fn a_full_table_evicts_the_least_recent_key() {
    let mut lru = FullLru::new(3);
    for k in [10, 11, 12] {
        assert_eq!(lru.insert(k, k == 11), None);
    }
    assert!(lru.touch(10, false));
    assert_eq!(lru.insert(13, false), Some((11, true)));
    assert_eq!(lru.insert(14, false), Some((12, false)));
    assert!(lru.is_first(14) && lru.contains(10) && !lru.contains(11));
}
