//! Statistics of their own, as pure functions over plain numbers: no measurement, no results model.
//!
//! A figure is measured in rounds (fresh processes, shuffled order), each round holding several
//! samples. Samples of one round share page placement, cache colouring and the machine's state of the
//! moment, so they understate how much a figure moves between runs; the rounds do not. Everything
//! here that speaks of uncertainty therefore works from the variation between rounds:
//!
//! - [`summary`]: medians, spreads, outliers and order-statistic intervals of plain samples;
//! - [`rounds`]: a figure's value and confidence interval from its rounds (two-level bootstrap);
//! - [`twosample`]: two figures' round values compared: ratio, its interval, a p-value;
//! - [`fdr`]: false-discovery-rate control over the many p-values of a comparison;
//! - [`geomean`]: the geometric mean of speed-ups and its interval, resampling whole probes;
//! - [`changepoint`]: change points in a series of stored values (E-Divisive means), with
//!   [`energy`] finding a split's best place in O(n log n);
//! - [`segments`]: the stretches between change points, each with its level and interval;
//! - [`dist`], [`rng`]: the distributions and the seeded generators the others rest on.

pub mod changepoint;
pub mod dist;
pub mod energy;
pub mod fdr;
pub mod geomean;
pub mod paired;
pub mod rng;
pub mod rounds;
pub mod segments;
pub mod summary;
pub mod twosample;
