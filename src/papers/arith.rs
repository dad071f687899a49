//! The arithmetic of "then and now": how many times faster a primitive got, how many times faster
//! the processor got, and the first over the second, which is Ousterhout's question.

use super::quantity::Unit;

/// True for units where a larger figure is the better one (bandwidths, rates, speed ratings).
pub fn higher_is_better(unit: Unit) -> bool {
    matches!(
        unit,
        Unit::MegabytesPerSecond | Unit::KilobytesPerSecond | Unit::RequestsPerSecond | Unit::Mips
    )
}

/// How many times faster today's figure is than the paper's (both in `unit`): paper time over
/// today's time, or today's rate over the paper's. `None` for units that are not a speed.
pub fn speedup(paper: f64, now: f64, unit: Unit) -> Option<f64> {
    if paper <= 0.0 || now <= 0.0 || !paper.is_finite() || !now.is_finite() {
        return None;
    }
    if higher_is_better(unit) {
        Some(now / paper)
    } else if unit.nanoseconds().is_some() {
        Some(paper / now)
    } else {
        None
    }
}

/// The speed-up of a primitive divided by the speed-up of the processor (MIPS now over the paper
/// machine's MIPS): 1 means the primitive kept pace with the CPU, less means it fell behind.
/// Ousterhout's formula, (t_paper / t_now) / (cpu_now / cpu_paper).
pub fn relative_to_cpu(speedup: f64, mips_now: f64, mips_paper: f64) -> Option<f64> {
    (mips_now > 0.0 && mips_paper > 0.0).then(|| speedup / (mips_now / mips_paper))
}

/// Ousterhout's MIPS-relative speed of a configuration against a base one (his Sun-3):
/// (base time / time) / (MIPS / base MIPS), or with rates, (rate / base rate) / (MIPS ratio).
pub fn mips_relative(value: f64, mips: f64, base: f64, base_mips: f64, unit: Unit) -> Option<f64> {
    let s = speedup(base, value, unit)?;
    relative_to_cpu(s, mips, base_mips)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_answers() {
        // Ousterhout's own example: the M2000's getpid, 18 us against the Sun-3's 108 us,
        // at 20 MIPS against 1.8.
        let r = mips_relative(18.0, 20.0, 108.0, 1.8, Unit::Microseconds).unwrap();
        assert!((r - 0.54).abs() < 0.001, "{r}");
        // 18 us then, 0.1 us now: 180 times faster; 20 MIPS then, 10,000 now: 500 times; 0.36.
        let s = speedup(18.0, 0.1, Unit::Microseconds).unwrap();
        assert!((s - 180.0).abs() < 1e-9);
        assert!((relative_to_cpu(s, 10_000.0, 20.0).unwrap() - 0.36).abs() < 1e-12);
        // Bandwidth: 20 MB/s then, 10,000 MB/s now.
        assert_eq!(
            speedup(20.0, 10_000.0, Unit::MegabytesPerSecond),
            Some(500.0)
        );
        // Not speeds.
        assert_eq!(speedup(2.0, 1.0, Unit::Ratio), None);
        assert_eq!(speedup(2.0, 1.0, Unit::Count), None);
        assert_eq!(speedup(0.0, 1.0, Unit::Seconds), None);
        assert_eq!(relative_to_cpu(2.0, 0.0, 20.0), None);
    }

    proptest! {
        /// A figure set against itself has kept pace exactly, and a primitive k times slower today
        /// is k times further behind the CPU.
        #[test]
        fn relative_speed_scales(t in 1e-3f64..1e6, k in 1e-3f64..1e3, mips in 0.5f64..1e5) {
            let same = mips_relative(t, mips, t, mips, Unit::Milliseconds).unwrap();
            prop_assert!((same - 1.0).abs() < 1e-9);
            let base = relative_to_cpu(speedup(t, t, Unit::Seconds).unwrap(), mips * 10.0, mips).unwrap();
            let slower = relative_to_cpu(speedup(t, t * k, Unit::Seconds).unwrap(), mips * 10.0, mips).unwrap();
            prop_assert!((base / slower - k).abs() < 1e-6 * k);
            // Time and rate views agree: half the time is twice the bandwidth.
            let by_time = speedup(t, t / 2.0, Unit::Seconds).unwrap();
            let by_rate = speedup(t, t * 2.0, Unit::MegabytesPerSecond).unwrap();
            prop_assert!((by_time - by_rate).abs() < 1e-9);
        }
    }
}
