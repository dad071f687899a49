//! Intervals for `compare --explain` by bootstrap over the samples of the profiles.
//!
//! A profile keeps its samples as counts: per listed function, per kernel component (the rest of
//! it, past its listed functions), and the rest of the user time. Samples are exchangeable within
//! one run's profile, so resampling them is resampling those counts. This is the Poisson bootstrap:
//! each sample is kept a Poisson(1) number of times, so a cell of n samples is kept Poisson(n)
//! times; unlike a resample of fixed size, the total may move too, as a repeated sampling round's
//! would. When a side has two or more runs that profiled the figure, its runs are resampled as
//! well (with replacement, as many as it has), and each side's value is the mean over the runs
//! drawn: the interval then holds the variation between runs on top of the sampling noise. With
//! one run a side it holds only the sampling noise: whether sampling alone could make the
//! difference.

use crate::stats::dist::ln_gamma;
use crate::stats::rng::Rng;

/// Resamples per interval: a 95 % percentile interval's ends settle to a few percent of its width.
pub const REPLICATES: usize = 1000;

/// One description of the method, carried with every explanation.
pub const METHOD: &str = "bootstrap (1000 resamples): each sample kept a Poisson(1) number of \
                          times; runs resampled too where a side has two or more";

/// Samples of one run's profile that stand for some of the figure's quantities.
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    /// How many samples, and the ns per operation they stand for.
    pub samples: u64,
    pub ns_per_op: f64,
    /// The quantities (indices) these samples count in: the total, user or kernel, a component,
    /// a function.
    pub into: Vec<usize>,
}

/// One run's profile of the figure, as cells.
pub type RunCells = Vec<Cell>;

/// Each quantity's value in a run: the sum of its cells.
pub fn values(run: &[Cell], quantities: usize) -> Vec<f64> {
    let mut out = vec![0.0; quantities];
    for c in run {
        for &q in &c.into {
            out[q] += c.ns_per_op;
        }
    }
    out
}

/// Mean over a side's runs of each quantity.
pub fn side_mean(runs: &[RunCells], quantities: usize) -> Vec<f64> {
    let mut out = vec![0.0; quantities];
    for r in runs {
        for (o, v) in out.iter_mut().zip(values(r, quantities)) {
            *o += v / runs.len() as f64;
        }
    }
    out
}

/// 95 % percentile intervals of B's mean minus A's, per quantity. Seeded, so the same runs give
/// the same intervals.
pub fn intervals(a: &[RunCells], b: &[RunCells], quantities: usize, seed: u64) -> Vec<[f64; 2]> {
    let mut rng = Rng::new(seed);
    let mut draws: Vec<Vec<f64>> = vec![Vec::with_capacity(REPLICATES); quantities];
    for _ in 0..REPLICATES {
        let ra = resampled_mean(a, quantities, &mut rng);
        let rb = resampled_mean(b, quantities, &mut rng);
        for (q, d) in draws.iter_mut().enumerate() {
            d.push(rb[q] - ra[q]);
        }
    }
    draws
        .into_iter()
        .map(|mut d| {
            d.sort_by(f64::total_cmp);
            [percentile(&d, 0.025), percentile(&d, 0.975)]
        })
        .collect()
}

fn resampled_mean(runs: &[RunCells], quantities: usize, rng: &mut Rng) -> Vec<f64> {
    let mut out = vec![0.0; quantities];
    let k = runs.len();
    for i in 0..k {
        let run = if k > 1 { &runs[rng.below(k)] } else { &runs[i] };
        for c in run {
            // A cell without samples (a value written by hand, or none at all) stays as it is.
            let v = if c.samples == 0 {
                c.ns_per_op
            } else {
                c.ns_per_op * poisson(rng, c.samples as f64) as f64 / c.samples as f64
            };
            for &q in &c.into {
                out[q] += v / k as f64;
            }
        }
    }
    out
}

/// Linear interpolation between the closest ranks of a sorted, non-empty slice.
fn percentile(sorted: &[f64], p: f64) -> f64 {
    let pos = p * (sorted.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

/// A Poisson(`mean`) draw: by multiplying uniforms for small means, by Hörmann's transformed
/// rejection with squeeze (PTRS, 1993) for large ones, where the product would take too long.
pub fn poisson(rng: &mut Rng, mean: f64) -> u64 {
    if mean <= 0.0 {
        return 0;
    }
    if mean < 10.0 {
        let limit = (-mean).exp();
        let mut product = rng.unit();
        let mut k = 0;
        while product > limit {
            product *= rng.unit();
            k += 1;
        }
        return k;
    }
    let (root, log_mean) = (mean.sqrt(), mean.ln());
    let b = 0.931 + 2.53 * root;
    let a = -0.059 + 0.02483 * b;
    let inv_alpha = 1.1239 + 1.1328 / (b - 3.4);
    let v_r = 0.9277 - 3.6224 / (b - 2.0);
    loop {
        let u = rng.unit() - 0.5;
        let v = rng.unit();
        let us = 0.5 - u.abs();
        let k = ((2.0 * a / us + b) * u + mean + 0.43).floor();
        if us >= 0.07 && v <= v_r {
            return k as u64;
        }
        if k < 0.0 || (us < 0.013 && v > us) {
            continue;
        }
        let accept = v.ln() + inv_alpha.ln() - (a / (us * us) + b).ln();
        if accept <= -mean + k * log_mean - ln_gamma(k + 1.0) {
            return k as u64;
        }
    }
}

#[cfg(test)]
#[path = "bootstrap_tests.rs"]
mod tests;
