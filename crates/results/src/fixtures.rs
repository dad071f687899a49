//! Values the tests of this crate and of the crates above it build on: a run with nothing in it,
//! a guest run's document. Compiled for this crate's tests and, through the `test-support`
//! feature, for the dev-dependencies of the crates above.

use crate::guest::*;
use crate::model::Run;
use crate::model::{Params, Status};

/// A run with no figures, as a test's starting point.
pub fn empty_run() -> Run {
    Run {
        tool_version: "0".into(),
        ..Run::new("test".into(), "2026-01-01T00:00:00Z".into())
    }
}

/// A guest document with one probe, syscall.null, of `kernel_ins` kernel instructions.
pub fn guest_doc(kernel: &str, kernel_ins: f64) -> GuestDoc {
    GuestDoc {
        schema: GUEST_SCHEMA.into(),
        kernel: kernel.into(),
        kernel_key: "k".into(),
        release: Some("6.1.0".into()),
        build: "release".into(),
        append: String::new(),
        cmdline: "console=ttyS0".into(),
        qemu: "QEMU emulator version 7.2".into(),
        iterations: 100,
        cpu: None,
        loop_overhead: None,
        seccomp_rules: None,
        presets: Vec::new(),
        symbols: None,
        probes: vec![
            GuestProbe {
                probe: "syscall.null".into(),
                params: Params::new(),
                status: Status::Ok,
                reason: None,
                iterations: 100,
                per_op: Some(OpCounts {
                    user: ModeCounts {
                        instructions: 12.0,
                        loads: 3.0,
                        stores: 2.0,
                    },
                    kernel: ModeCounts {
                        instructions: kernel_ins,
                        loads: 90.5,
                        stores: 40.0,
                    },
                }),
                simulated: Vec::new(),
                kernel_parts: None,
            },
            GuestProbe {
                probe: "app.make".into(),
                params: Params::new(),
                status: Status::Skipped,
                reason: Some("not in a guest".into()),
                iterations: 0,
                per_op: None,
                simulated: Vec::new(),
                kernel_parts: None,
            },
        ],
    }
}

/// The document `guest_doc` gives, with its syscall.null simulated on one preset.
pub fn simulated_guest_doc(kernel: &str, kernel_mcpi: f64) -> GuestDoc {
    let mut d = guest_doc(kernel, 600.0);
    d.presets = vec!["pentium".into()];
    d.probes[0].simulated = vec![SimulatedOp {
        preset: "pentium".into(),
        user: SimulatedMode::default(),
        kernel: SimulatedMode {
            l1i_misses: 12.0,
            l1d_misses: 7.5,
            lower_misses: vec![1.0],
            tlb_misses: 0.0,
            stall_cycles: kernel_mcpi * 600.0,
            stalls: StallParts {
                icache: kernel_mcpi * 600.0,
                ..StallParts::default()
            },
            mcpi: kernel_mcpi,
        },
    }];
    d.probes[0].kernel_parts = Some(KernelParts {
        categories: [("syscall".to_string(), 500.0), ("other".to_string(), 100.0)].into(),
        functions: [("do_syscall_64".to_string(), 40.0)].into(),
    });
    d
}
