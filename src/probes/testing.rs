//! Test support shared by the probe modules.

use super::{Built, ProbeDef, ProbeEnv, Scale};
use crate::meter::placement;
use crate::results::model::Unit;
use std::path::Path;

pub fn first_cpu() -> usize {
    placement::usable_cpus()[0]
}

pub fn env(dir: &Path, scale: Scale) -> ProbeEnv<'_> {
    ProbeEnv {
        scratch: dir,
        cpu: first_cpu(),
        scale,
        file_systems: Default::default(),
    }
}

pub fn two_cpus() -> bool {
    placement::usable_cpus().len() >= 2
}

/// Builds every variant of `probes` at both scales and runs up to `iters` operations through
/// prepare, run and finish. Checks that bandwidth probes say how many bytes an operation moves and
/// that a workload leaves nothing in the scratch directory once dropped. A probe may skip only for
/// want of a second CPU. `include` leaves out (probe, scale) pairs too slow or unsafe for a unit test.
/// Held by every test that builds probe workloads: the select probe opens a thousand descriptors
/// and needs them below FD_SETSIZE (1024), which workloads built at once in the test binary's other
/// threads (poll's thousand pipes, the fs probes' files) would not leave it.
pub fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());
    TURN.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

pub fn exercise(probes: &[ProbeDef], iters: u64, include: impl Fn(&ProbeDef, Scale) -> bool) {
    let _turn = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    for scale in [Scale::Quick, Scale::Full] {
        let env = env(dir.path(), scale);
        for p in probes.iter().filter(|p| include(p, scale)) {
            for v in (p.variants)(scale) {
                let built = (p.build)(&env, &v).unwrap_or_else(|e| panic!("{} {v:?}: {e:#}", p.id));
                match built {
                    Built::Ready(mut w) => {
                        let n = iters.min(w.max_iters());
                        w.prepare(n).unwrap();
                        w.run(n).unwrap_or_else(|e| panic!("{} {v:?}: {e:#}", p.id));
                        w.finish().unwrap();
                        if p.unit == Unit::BytesPerSecond {
                            assert!(w.bytes_per_op().is_some_and(|b| b > 0), "{} {v:?}", p.id);
                        }
                    }
                    Built::Skip(why) => {
                        assert!(
                            !two_cpus() && why.contains("two usable CPUs"),
                            "{} {v:?} skipped: {why}",
                            p.id
                        )
                    }
                }
                let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
                assert!(
                    left.is_empty(),
                    "{} {v:?} left {} entries in scratch",
                    p.id,
                    left.len()
                );
            }
        }
    }
}

/// For `exercise`: every probe at every scale.
pub fn all(_: &ProbeDef, _: Scale) -> bool {
    true
}
