use super::*;
use crate::kernel_parts::SymbolTable;
use crate::profile::symbolize::Mapping;

const KALLSYMS: &str = "\
ffffffff81000000 T entry_SYSCALL_64
ffffffff81000100 T do_syscall_64
ffffffff81000200 T __seccomp_filter
ffffffff81000300 T __x64_sys_getppid
ffffffff81000400 D some_data
ffffffff81000500 T perf_ioctl
ffffffff81000600 T generic_exec_single
ffffffff81000700 T pvclock_clocksource_read_nowd
ffffffff81000800 T ring_buffer_lock_reserve
";

fn symbolizer(table: &SymbolTable) -> Symbolizer<'_> {
    let mut sym = Symbolizer::with_kernel(Some(table));
    sym.set_maps(
        7,
        vec![Mapping {
            start: 0x5000,
            end: 0x6000,
            offset: 0x1000,
            path: "/usr/bin/osmeter".into(),
        }],
    );
    sym
}

fn kernel_sample(chain: &[u64]) -> Sample {
    Sample {
        pid: 7,
        tid: 7,
        period: 50_000,
        ip: chain[0],
        in_kernel: true,
        kernel_chain: chain.to_vec(),
        user_chain: vec![0x5010],
        ..Sample::default()
    }
}

#[test]
fn time_per_operation_by_component_function_and_stack() {
    let got = Gathered {
        source: SamplingSource::CpuClock,
        samples: vec![
            kernel_sample(&[0xffffffff81000210, 0xffffffff81000110, 0xffffffff81000010]),
            kernel_sample(&[0xffffffff81000210, 0xffffffff81000110, 0xffffffff81000010]),
            kernel_sample(&[0xffffffff81000310, 0xffffffff81000110, 0xffffffff81000010]),
            // A JIT-compiled program: no symbol; its caller's component, its address as name.
            kernel_sample(&[0xffffffffc0001234, 0xffffffff81000210, 0xffffffff81000110]),
            Sample {
                pid: 7,
                tid: 7,
                period: 50_000,
                ip: 0x5020,
                user_chain: vec![0x5020, 0x5010],
                ..Sample::default()
            },
        ],
        stats: RingStats::default(),
        operations: 1000,
        pace: None,
        notes: Vec::new(),
    };
    let table = SymbolTable::parse(KALLSYMS).unwrap();
    let p = profile("syscall.null", &got, &mut symbolizer(&table));
    assert_eq!((p.samples, p.processes, p.threads), (5, 1, 1));
    // 5 samples of 50 us over 1000 operations: 250 ns each, 200 of it in the kernel.
    assert_eq!(p.ns_per_op, 250.0);
    assert_eq!(p.kernel_ns_per_op, 200.0);
    assert_eq!(p.user_ns_per_op, 50.0);
    assert_eq!(p.components[0].component, Component::Security);
    assert_eq!(p.components[0].samples, 3);
    assert_eq!(p.components[1].component, Component::EntryExit);
    assert_eq!(p.functions[0].name, "__seccomp_filter");
    assert_eq!(p.functions[0].ns_per_op, 100.0);
    let jit = p
        .functions
        .iter()
        .find(|f| f.name == "0xffffffffc0001xxx")
        .unwrap();
    assert_eq!(jit.component, Some(Component::Security));
    let user = p.functions.iter().find(|f| !f.kernel).unwrap();
    assert_eq!(user.name, "osmeter+0x1020");
    assert_eq!(
        p.folded[0],
        FoldedStack {
            stack: "osmeter+0x1010;entry_SYSCALL_64;do_syscall_64;__seccomp_filter".into(),
            samples: 2
        }
    );
    assert!(
        p.notes
            .iter()
            .any(|n| n.contains("only 5 samples: the workload was on a CPU too briefly")),
        "{:?}",
        p.notes
    );
}

#[test]
fn hidden_kernel_symbols_leave_addresses_and_lost_samples_are_told() {
    let got = Gathered {
        source: SamplingSource::CpuClock,
        samples: vec![kernel_sample(&[0xffffffff81000210])],
        stats: RingStats {
            lost: 3,
            ..RingStats::default()
        },
        operations: 10,
        pace: None,
        notes: Vec::new(),
    };
    let mut sym = Symbolizer::with_kernel(None);
    let p = profile("x", &got, &mut sym);
    assert_eq!(p.functions[0].name, "0xffffffff81000xxx");
    assert_eq!(p.components[0].component, Component::Other);
    // The user frame of a process whose mappings were never read stays an address too.
    assert_eq!(p.folded[0].stack, "0x5010;0xffffffff81000xxx");
    assert!(p.notes.iter().any(|n| n.contains("3 samples lost")));
}

#[test]
fn samples_of_the_sampler_switching_itself_are_left_out() {
    let got = Gathered {
        source: SamplingSource::CpuClock,
        samples: vec![
            kernel_sample(&[0xffffffff81000310, 0xffffffff81000110]),
            // Inside the enable ioctl: the sampler's cost, not the workload's.
            kernel_sample(&[0xffffffff81000610, 0xffffffff81000510, 0xffffffff81000110]),
            kernel_sample(&[0xffffffff81000510, 0xffffffff81000110]),
        ],
        stats: RingStats::default(),
        operations: 100,
        pace: None,
        notes: Vec::new(),
    };
    let table = SymbolTable::parse(KALLSYMS).unwrap();
    let p = profile("syscall.null", &got, &mut symbolizer(&table));
    assert_eq!(p.samples, 1);
    // One sample of 50 us over 100 operations.
    assert_eq!(p.kernel_ns_per_op, 500.0);
    assert_eq!(p.functions.len(), 1);
    assert_eq!(p.functions[0].name, "__x64_sys_getppid");
    assert!(p.folded.iter().all(|f| !f.stack.contains("perf_ioctl")));
    assert!(
        p.notes
            .iter()
            .any(|n| n.starts_with("2 samples left out: taken while the sampler")),
        "{:?}",
        p.notes
    );
}

#[test]
fn a_leaf_placed_nowhere_counts_for_its_callers_component() {
    let table = SymbolTable::parse(KALLSYMS).unwrap();
    assert_eq!(
        crate::kernel_parts::component_of("pvclock_clocksource_read_nowd"),
        Component::Other
    );
    let got = Gathered {
        source: SamplingSource::CpuClock,
        // The trace clock read while a tracepoint reserves its event, then the same clock read
        // straight from the system call: the first is tracing's time, the second stays "other".
        samples: vec![
            kernel_sample(&[0xffffffff81000710, 0xffffffff81000810, 0xffffffff81000110]),
            kernel_sample(&[0xffffffff81000710]),
        ],
        stats: RingStats::default(),
        operations: 1,
        pace: None,
        notes: Vec::new(),
    };
    let p = profile("x", &got, &mut symbolizer(&table));
    let of = |c| {
        p.components
            .iter()
            .find(|s| s.component == c)
            .map(|s| s.samples)
    };
    assert_eq!(of(Component::Tracing), Some(1));
    assert_eq!(of(Component::Other), Some(1));
}

#[test]
fn a_sampler_that_slowed_the_workload_is_taken_out_of_its_times() {
    let sample = || kernel_sample(&[0xffffffff81000210, 0xffffffff81000110, 0xffffffff81000010]);
    let paced = |sampled: f64, unsampled: f64| Gathered {
        source: SamplingSource::CpuClock,
        samples: vec![sample(), sample(), sample(), sample()],
        stats: RingStats::default(),
        operations: 1000,
        notes: Vec::new(),
        pace: Some(Pace {
            sampled_ns_per_op: sampled,
            unsampled_ns_per_op: unsampled,
        }),
    };
    let table = SymbolTable::parse(KALLSYMS).unwrap();
    // 4 samples of 50 us over 1000 operations is 200 ns each as sampled; the sampled runs took
    // 2.5 times as long as the unsampled ones, so the workload's own time is 80 ns.
    let p = profile(
        "syscall.null",
        &paced(500.0, 200.0),
        &mut symbolizer(&table),
    );
    assert_eq!(p.sampling_slowdown, Some(2.5));
    assert!((p.ns_per_op - 80.0).abs() < 1e-9, "{}", p.ns_per_op);
    assert!((p.kernel_ns_per_op - 80.0).abs() < 1e-9);
    assert!((p.components[0].ns_per_op - 80.0).abs() < 1e-9);
    assert!((p.functions[0].ns_per_op - 80.0).abs() < 1e-9);
    assert_eq!(p.samples, 4, "the samples themselves are kept as counted");
    assert!(
        p.notes
            .iter()
            .any(|n| n.contains("slowed the workload 2.50x")),
        "{:?}",
        p.notes
    );
    // Sampled runs that came out faster are noise: nothing is scaled, nothing said.
    let p = profile(
        "syscall.null",
        &paced(190.0, 200.0),
        &mut symbolizer(&table),
    );
    assert_eq!(p.sampling_slowdown, Some(1.0));
    assert_eq!(p.ns_per_op, 200.0);
    assert!(
        !p.notes.iter().any(|n| n.contains("slowed")),
        "{:?}",
        p.notes
    );
}
