//! Independent pieces of work spread over the CPUs.

/// `work` on consecutive parts of `items`, one part per CPU (all on this thread when there is one
/// CPU or one item), and what the parts gave, in the order of the items. A part is handed over
/// whole, so `work` may keep what serves all its items (a cache, a buffer).
pub fn by_parts<T: Sync, R: Send>(items: &[T], work: impl Fn(&[T]) -> Vec<R> + Sync) -> Vec<R> {
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(items.len());
    if workers < 2 {
        return work(items);
    }
    let work = &work;
    std::thread::scope(|scope| {
        // A part whose thread cannot start (a limit on threads) is worked on here instead.
        let parts: Vec<_> = items
            .chunks(items.len().div_ceil(workers))
            .map(|part| {
                std::thread::Builder::new()
                    .name("osm-part".into())
                    .spawn_scoped(scope, move || work(part))
                    .map_err(|_| part)
            })
            .collect();
        parts
            .into_iter()
            .flat_map(|part| match part {
                Ok(thread) => thread.join().expect("a worker thread panicked"),
                Err(part) => work(part),
            })
            .collect()
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_parts_come_back_in_the_order_of_the_items() {
        let items: Vec<u32> = (0..1001).collect();
        let doubled = super::by_parts(&items, |part| part.iter().map(|x| 2 * x).collect());
        assert_eq!(doubled, items.iter().map(|x| 2 * x).collect::<Vec<_>>());
        assert!(super::by_parts(&[] as &[u32], |part| part.to_vec()).is_empty());
    }
}
