//! The request trace: which file each request asks for. Popularity follows Zipf's law (the k-th
//! most popular file is asked for in proportion to 1/k^alpha), as measured in web proxy and server
//! logs; which file holds which popularity rank is a shuffle, so popularity does not follow size.

use crate::stats::rng::Rng;

/// Zipf exponent: web logs show values a little under 1.
pub const ZIPF_ALPHA: f64 = 0.8;

/// The cumulative popularity of ranks 1..=n (the last entry is 1).
pub fn zipf_cdf(n: usize, alpha: f64) -> Vec<f64> {
    let weights: Vec<f64> = (1..=n).map(|k| (k as f64).powf(-alpha)).collect();
    let total: f64 = weights.iter().sum();
    let mut acc = 0.0;
    let mut cdf: Vec<f64> = weights
        .iter()
        .map(|w| {
            acc += w / total;
            acc
        })
        .collect();
    if let Some(last) = cdf.last_mut() {
        *last = 1.0;
    }
    cdf
}

/// The rank (0-based) that a uniform draw `u` in [0, 1) falls on.
pub fn rank_of(cdf: &[f64], u: f64) -> usize {
    cdf.partition_point(|&c| c <= u).min(cdf.len() - 1)
}

/// `requests` file indices over `files` files, the same for the same seed.
pub fn generate(seed: u64, files: usize, requests: usize) -> Vec<u32> {
    assert!(files > 0, "a trace needs at least one file");
    let mut rng = Rng::stream(seed, 0x7ace);
    let mut file_of_rank: Vec<u32> = (0..files as u32).collect();
    rng.shuffle(&mut file_of_rank);
    let cdf = zipf_cdf(files, ZIPF_ALPHA);
    (0..requests)
        .map(|_| file_of_rank[rank_of(&cdf, rng.unit())])
        .collect()
}

/// The trace with every file asked for at least once: the files the trace never asks for are
/// put in place of repeated requests at the end, so a run also shows that every size is served.
pub fn covering(seed: u64, files: usize, requests: usize) -> Vec<u32> {
    let mut trace = generate(seed, files, requests.max(files));
    let mut seen = vec![0u32; files];
    for &f in &trace {
        seen[f as usize] += 1;
    }
    let never: Vec<u32> = (0..files as u32)
        .filter(|&f| seen[f as usize] == 0)
        .collect();
    let mut missing = never.into_iter();
    for slot in trace.iter_mut().rev() {
        if seen[*slot as usize] > 1 {
            let Some(m) = missing.next() else { break };
            seen[*slot as usize] -= 1;
            seen[m as usize] += 1;
            *slot = m;
        }
    }
    trace
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zipf_of_three_files_with_alpha_one() {
        // Weights 1, 1/2, 1/3 sum to 11/6: the shares are 6/11, 3/11 and 2/11.
        let cdf = zipf_cdf(3, 1.0);
        assert!((cdf[0] - 6.0 / 11.0).abs() < 1e-12);
        assert!((cdf[1] - 9.0 / 11.0).abs() < 1e-12);
        assert_eq!(cdf[2], 1.0);
        assert_eq!(rank_of(&cdf, 0.0), 0);
        assert_eq!(rank_of(&cdf, 0.5), 0);
        // A draw equal to a boundary belongs to the next rank.
        assert_eq!(rank_of(&cdf, cdf[0]), 1);
        assert_eq!(rank_of(&cdf, 0.8), 1);
        assert_eq!(rank_of(&cdf, 0.85), 2);
        assert_eq!(rank_of(&cdf, 0.999_999), 2);
    }

    #[test]
    fn same_seed_same_trace_and_popularity_is_zipf() {
        let t = generate(1, 100, 50_000);
        assert_eq!(t, generate(1, 100, 50_000));
        assert_ne!(t, generate(2, 100, 50_000));
        let mut counts = vec![0usize; 100];
        for &f in &t {
            counts[f as usize] += 1;
        }
        counts.sort_unstable_by(|a, b| b.cmp(a));
        let cdf = zipf_cdf(100, ZIPF_ALPHA);
        // The most popular file's share and the top ten's share, against the law.
        let top = counts[0] as f64 / t.len() as f64;
        assert!((top - cdf[0]).abs() < 0.01, "{top} vs {}", cdf[0]);
        let ten = counts[..10].iter().sum::<usize>() as f64 / t.len() as f64;
        assert!((ten - cdf[9]).abs() < 0.02, "{ten} vs {}", cdf[9]);
    }

    #[test]
    fn a_covering_trace_asks_for_every_file_and_keeps_its_length() {
        let t = covering(3, 500, 1024);
        assert_eq!(t.len(), 1024);
        let mut seen = [false; 500];
        t.iter().for_each(|&f| seen[f as usize] = true);
        assert!(seen.iter().all(|&s| s));
        // Fewer requests than files: the trace grows to one request per file.
        assert_eq!(covering(3, 50, 10).len(), 50);
    }
}
