//! Today's latency figures of a paper: worst cases from the stored run's Gumbel fit, and the
//! buffer model's underruns.

use super::*;

/// The Gumbel fit of one class and path of the stored latency run: the run, the fit, its window's
/// width in seconds and the stream's name.
pub(super) fn latency_fit(
    class: crate::latency::threads::ClassName,
    path: crate::latency::threads::Path,
    runs: &[Run],
) -> Result<(&Run, &crate::latency::accounting::GumbelFit, f64, String), String> {
    let (run, doc) = runs
        .iter()
        .find_map(|r| {
            r.sections
                .get::<crate::latency::document::LatencyDoc>()
                .map(|d| (r, d))
        })
        .ok_or("no latency document in the runs (a run of `osmeter latency`)")?;
    let name = format!("{} class, {} path", class.as_str(), path.name());
    let stream = doc
        .streams
        .iter()
        .find(|s| s.class == class && s.path == path && s.error.is_none())
        .ok_or_else(|| match doc.skipped.iter().find(|k| k.class == class) {
            Some(k) => format!(
                "the latency run measured no {name}: the class could not run ({})",
                k.reason
            ),
            None => format!("the latency run measured no {name}"),
        })?;
    let fit = match &stream.estimate {
        Estimate::Fitted { fit, .. } => fit,
        Estimate::Unavailable { unavailable } => {
            return Err(format!("{name}: no worst-case estimate ({unavailable})"))
        }
    };
    let width_s = WINDOWS
        .iter()
        .find(|(w, _)| *w == fit.window)
        .map(|(_, ns)| *ns as f64 / 1e9)
        .ok_or_else(|| format!("{name}: unknown window {:?}", fit.window))?;
    Ok((run, fit, width_s, name))
}

/// The worst lateness expected over a horizon, from the Gumbel fit of a stored latency stream.
pub(super) fn latency_worst(
    f: &LatencyFigure,
    runs: &[Run],
) -> Result<(f64, String, String), String> {
    let (run, fit, width_s, name) = latency_fit(f.class, f.path, runs)?;
    let median = gumbel_median(fit.location_ns, fit.scale_ns, width_s, f.horizon_s);
    Ok((
        median,
        format!("latency {name}, Gumbel median"),
        run.id.clone(),
    ))
}

/// The mean time between windows whose largest lateness exceeds `tolerance_ns`, when each
/// window's maximum follows a Gumbel law: the window's width over the chance 1 - G(tolerance).
/// Infinite when that chance is below what a double can hold.
pub fn gumbel_mttf(location: f64, scale: f64, width_s: f64, tolerance_ns: f64) -> f64 {
    let z = (tolerance_ns - location) / scale;
    // 1 - exp(-exp(-z)), kept exact for large z.
    let p = -(-(-z).exp()).exp_m1();
    width_s / p
}

/// The lateness whose mean time between exceeding windows is `mttf_s`: the inverse of
/// [`gumbel_mttf`], G(x) = 1 - width / mttf.
pub fn gumbel_tolerance(location: f64, scale: f64, width_s: f64, mttf_s: f64) -> f64 {
    let p = (width_s / mttf_s).min(1.0 - 1e-12);
    location - scale * (-(-p).ln_1p()).ln()
}

/// An underrun figure of a stored latency stream, in `unit` (a time for either question).
pub(super) fn underrun_value(
    f: &UnderrunFigure,
    unit: Unit,
    runs: &[Run],
) -> Result<NowValue, String> {
    let (run, fit, width_s, name) = latency_fit(f.class, f.path, runs)?;
    let per_unit = unit.nanoseconds().ok_or("the paper's unit is not a time")?;
    let (ns, figure) = match f.ask {
        Underrun::MttfAt { tolerance_ms } => (
            1e9 * gumbel_mttf(fit.location_ns, fit.scale_ns, width_s, tolerance_ms * 1e6),
            format!(
                "latency {name}, time between wakes later than {} ms (Gumbel)",
                crate::units::compact(tolerance_ms)
            ),
        ),
        Underrun::ToleranceFor { mttf_s } => (
            gumbel_tolerance(fit.location_ns, fit.scale_ns, width_s, mttf_s),
            format!(
                "latency {name}, lateness exceeded once per {} (Gumbel)",
                crate::units::format(mttf_s, crate::units::Unit::Seconds)
            ),
        ),
    };
    if !ns.is_finite() {
        return Err(format!(
            "{name}: no wake of the run comes near the buffering, so the fit puts no finite time \
             between underruns"
        ));
    }
    let value = ns / per_unit;
    Ok(NowValue {
        value,
        ci95: [value, value],
        figure,
        run: run.id.clone(),
    })
}

/// The median of the largest of the window maxima over `horizon_s`, when each window's maximum
/// follows a Gumbel law: the maximum of m such maxima is Gumbel with its location moved up by
/// scale * ln m, and a Gumbel law's median is location - scale * ln ln 2.
pub fn gumbel_median(location: f64, scale: f64, width_s: f64, horizon_s: f64) -> f64 {
    let shifted = location + scale * (horizon_s / width_s).max(1.0).ln();
    shifted - scale * 2f64.ln().ln()
}
