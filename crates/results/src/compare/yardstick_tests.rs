//! The machine's speed read from the yardstick readings every run keeps, without `cpu.reference`
//! among the figures.

use super::*;
use crate::meter::yardstick::{Yardstick, YardstickReading};
use crate::results::model::tests::{empty_run, in_rounds};
use crate::results::model::Measurement;

fn rounds_of(probe: &str, values: &[f64]) -> Measurement {
    in_rounds(
        probe,
        values
            .iter()
            .map(|&v| vec![v * 0.999, v, v * 1.001])
            .collect(),
    )
}

fn run(id: &str, scale: f64, cpu: &[f64], memory: &[f64]) -> Run {
    let mut r = empty_run();
    r.id = id.into();
    let wobble = [1.0, 1.004, 0.997, 1.002, 0.999];
    r.measurements = vec![
        rounds_of("syscall.null", &wobble.map(|w| 100.0 * scale * w)),
        rounds_of("syscall.dup", &wobble.map(|w| 300.0 * scale * w)),
    ];
    r.yardstick = Some(Yardstick {
        readings: cpu
            .iter()
            .zip(memory)
            .map(|(&cpu_ns, &memory_ns)| YardstickReading {
                cpu_ns,
                memory_ns,
                at_ms: 0,
            })
            .collect(),
    });
    r
}

#[test]
fn a_whole_machine_thirty_percent_slower_is_named_first_and_no_figure_is_called_slower() {
    let a = run(
        "a",
        1.0,
        &[1.00, 1.01, 0.99, 1.00],
        &[80.0, 81.0, 79.5, 80.2],
    );
    let b = run(
        "b",
        1.3,
        &[1.30, 1.31, 1.29, 1.30],
        &[80.5, 80.0, 79.8, 80.4],
    );
    let c = compare(&[&a], &[&b], &CompareConfig::default()).unwrap();
    let m = c.machine_speed.as_ref().expect("the CPU yardstick moved");
    assert_eq!(m.source, "yardstick");
    assert!((1.0 / m.speedup - 1.3).abs() < 0.02, "{}", m.speedup);
    assert!(!m.memory_moved, "the memory walk did not move");
    for f in &c.figures {
        assert_eq!(f.verdict, Verdict::NoChange, "{}: {}", f.key, f.reason);
    }
    let text = text::render(&c, false);
    assert!(
        text.starts_with(
            "MACHINE SPEED: the whole machine was 30 % slower in B: CPU-bound yardstick 1.30x"
        ),
        "{text}"
    );
}

#[test]
fn a_steady_yardstick_leaves_a_real_change_a_change() {
    let a = run(
        "a",
        1.0,
        &[1.00, 1.01, 0.99, 1.00],
        &[80.0, 81.0, 79.5, 80.2],
    );
    let mut b = run(
        "b",
        1.0,
        &[1.00, 0.99, 1.01, 1.00],
        &[80.5, 80.0, 79.8, 80.4],
    );
    b.measurements[0] = rounds_of("syscall.null", &[120.0, 120.5, 119.6, 120.2, 119.9]);
    let c = compare(&[&a], &[&b], &CompareConfig::default()).unwrap();
    assert!(c.machine_speed.is_none());
    let null = c.figures.iter().find(|f| f.key == "syscall.null").unwrap();
    assert_eq!(null.verdict, Verdict::Slower, "{}", null.reason);
}

#[test]
fn runs_without_readings_fall_back_on_the_figures() {
    let mut a = run("a", 1.0, &[1.0, 1.0], &[80.0, 80.0]);
    let mut b = run("b", 1.3, &[1.3, 1.3], &[80.0, 80.0]);
    a.yardstick = None;
    b.yardstick = None;
    let c = compare(&[&a], &[&b], &CompareConfig::default()).unwrap();
    // No cpu.reference and no readings: nothing tells the machine's speed.
    assert!(c.machine_speed.is_none());
}
