//! References per second of the memsim engine on a synthetic trace decoded from memory (machines,
//! a one-pass miss-ratio curve, per-interval statistics, drmemtrace export and import), and of
//! the decoder alone on a real trace when `OSMETER_BENCH_TRACE` names one (its first 128 MB are
//! read into memory first, so the disk does not count).

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use osmeter::memsim::cache::CacheConfig;
use osmeter::memsim::config::{preset, SWEEPS};
use osmeter::memsim::curve::CurveSpec;
use osmeter::memsim::machine::{Machine, MachineConfig};
use osmeter::memsim::mapping::Mapping;
use osmeter::memsim::sweep::{simulate, simulate_with, Extras};
use osmeter::memsim::trace::binary::{TraceReader, TraceWriter};
use osmeter::memsim::trace::drmem;
use osmeter::memsim::trace::packed::{Batch, Refs};
use osmeter::memsim::trace::synth::Synth;
use osmeter::memsim::trace::{read_all, RefSource};
use std::io::Read;
use std::time::Duration;

/// References per packed batch, as a pass hands them over.
const PASS_BATCH: usize = 1 << 12;

const REFS: u64 = 2_000_000;

fn trace_bytes() -> Vec<u8> {
    let refs = read_all(&mut Synth::new(REFS, 1)).unwrap();
    let mut w = TraceWriter::new(Vec::new(), 0).unwrap();
    for r in &refs {
        w.write(r).unwrap();
    }
    w.finish(0).unwrap()
}

/// A plain split L1 (32K 8-way, 64-byte lines each), virtual, no TLB or write buffer.
fn l1_only() -> MachineConfig {
    let mut m = preset("x86-modern").unwrap();
    m.name = "l1".into();
    let mut c = CacheConfig::new(32 * 1024, 8, 64);
    c.physical = false;
    m.l1i = Some(c.clone());
    m.l1d = c;
    m.lower.clear();
    m.tlb = None;
    m.mapping = Mapping::Identity;
    m.three_c = false;
    m
}

fn no3c(name: &str) -> MachineConfig {
    let mut m = preset(name).unwrap();
    m.three_c = false;
    m
}

/// Decodes every record of `bytes` in batches of `batch`; returns the count.
fn decode_all(bytes: &[u8], batch: usize) -> usize {
    let mut r = TraceReader::new(bytes).unwrap();
    let mut v = Vec::with_capacity(batch);
    count_batches(|| {
        v.clear();
        r.next_batch(&mut v, batch).unwrap()
    })
}

/// Adds up what `next` returns until it returns 0.
fn count_batches(mut next: impl FnMut() -> usize) -> usize {
    std::iter::from_fn(|| Some(next()))
        .take_while(|&k| k > 0)
        .sum()
}

/// The first `limit` bytes' worth of whole records of a trace file, re-encoded with a trailer.
fn real_trace(path: &str, limit: u64) -> (Vec<u8>, u64) {
    let mut head = Vec::new();
    std::fs::File::open(path)
        .unwrap()
        .take(limit)
        .read_to_end(&mut head)
        .unwrap();
    let mut r = TraceReader::new(&head[..]).unwrap();
    let mut w = TraceWriter::new(Vec::new(), 0).unwrap();
    let mut batch = Vec::new();
    // The cut-off tail has no trailer: keep what decoded before the error.
    while let Ok(k) = r.next_batch(&mut batch, 1 << 16) {
        if k == 0 {
            break;
        }
        for x in &batch {
            w.write(x).unwrap();
        }
        batch.clear();
    }
    let n = w.count();
    (w.finish(0).unwrap(), n)
}

/// CPU time of the calling thread: other programs on the machine inflate it far less than they
/// inflate wall time.
fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid timespec for clock_gettime to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Decodes `bytes` packed, batch by batch, into `each` (as a pass hands batches to its
/// simulators), timing decode and `each` apart (thread CPU time).
fn timed_pass(bytes: &[u8], mut each: impl FnMut(Refs<'_>)) -> (Duration, Duration) {
    let mut r = TraceReader::new(bytes).unwrap();
    let mut batch = Batch::with_capacity(PASS_BATCH);
    let (mut decode, mut work) = (Duration::ZERO, Duration::ZERO);
    loop {
        batch.clear();
        let t0 = thread_cpu();
        let k = r.next_packed(&mut batch, PASS_BATCH).unwrap();
        let t1 = thread_cpu();
        decode += t1 - t0;
        if k == 0 {
            return (decode, work);
        }
        each(batch.view());
        work += thread_cpu() - t1;
    }
}

/// `decode_all`, packed.
fn decode_packed(bytes: &[u8], batch: usize) -> usize {
    let mut r = TraceReader::new(bytes).unwrap();
    let mut b = Batch::with_capacity(batch);
    count_batches(|| {
        b.clear();
        r.next_packed(&mut b, batch).unwrap()
    })
}

fn bench(c: &mut Criterion) {
    let bytes = trace_bytes();
    let mut g = c.benchmark_group("memsim");
    g.sample_size(10);
    g.throughput(Throughput::Elements(REFS));
    g.bench_function("decode", |b| b.iter(|| decode_all(&bytes, 1 << 12)));
    g.bench_function("decode-packed", |b| {
        b.iter(|| decode_packed(&bytes, PASS_BATCH))
    });
    let cases: Vec<(&str, Vec<MachineConfig>, usize)> = vec![
        ("l1-split-32K", vec![l1_only()], 1),
        ("l1-split-32K-2-threads", vec![l1_only()], 2),
        ("ds5000-200", vec![no3c("ds5000-200")], 1),
        ("ds5000-200+3C", vec![preset("ds5000-200").unwrap()], 1),
        (
            "4-configs-one-pass",
            ["ds5000-200", "ds5000-200-2way", "pentium", "x86-modern"]
                .iter()
                .map(|n| no3c(n))
                .collect(),
            2,
        ),
        (
            "sweep16-one-pass",
            SWEEPS
                .iter()
                .find(|s| s.0 == "sweep16")
                .unwrap()
                .1
                .iter()
                .map(|n| no3c(n))
                .collect(),
            2,
        ),
    ];
    for (name, cfgs, threads) in cases {
        g.bench_function(name, |b| {
            b.iter(|| {
                let mut r = TraceReader::new(&bytes[..]).unwrap();
                simulate(&mut r, &cfgs, threads).unwrap().refs
            })
        });
    }
    // A whole miss-ratio curve (8 sizes) in one pass, against the one machine of its middle size.
    let curve = Extras {
        curves: vec![CurveSpec::parse("l1d:8K-1M:8:64").unwrap()],
        interval: None,
        max_intervals: None,
    };
    g.bench_function("curve-l1d-8K-1M-8way", |b| {
        b.iter(|| {
            let mut r = TraceReader::new(&bytes[..]).unwrap();
            simulate_with(&mut r, &[], &curve, 1).unwrap().refs
        })
    });
    let intervals = Extras {
        curves: vec![],
        interval: Some(100_000),
        max_intervals: None,
    };
    g.bench_function("l1-split-32K-intervals-100K", |b| {
        b.iter(|| {
            let mut r = TraceReader::new(&bytes[..]).unwrap();
            simulate_with(&mut r, &[l1_only()], &intervals, 1)
                .unwrap()
                .refs
        })
    });
    let mut drm = Vec::new();
    drmem::export(&mut TraceReader::new(&bytes[..]).unwrap(), &mut drm).unwrap();
    g.bench_function("drmemtrace-export", |b| {
        b.iter(|| {
            let mut out = Vec::with_capacity(drm.len());
            drmem::export(&mut TraceReader::new(&bytes[..]).unwrap(), &mut out).unwrap();
            out.len()
        })
    });
    g.bench_function("drmemtrace-import", |b| {
        b.iter(|| {
            read_all(&mut drmem::DrmemReader::new(&drm[..]).unwrap())
                .unwrap()
                .len()
        })
    });
    g.finish();

    let Ok(path) = std::env::var("OSMETER_BENCH_TRACE") else {
        return;
    };
    let (real, n) = real_trace(&path, 128 << 20);
    let mut g = c.benchmark_group("memsim-real-cpu");
    g.sample_size(10);
    g.throughput(Throughput::Elements(n));
    g.bench_function("decode", |b| {
        b.iter_custom(|iters| (0..iters).map(|_| timed_pass(&real, |_| {}).0).sum())
    });
    for (name, cfg) in [
        ("l1-split-32K-engine", l1_only()),
        ("ds5000-200-engine", no3c("ds5000-200")),
    ] {
        g.bench_function(name, |b| {
            b.iter_custom(|iters| {
                (0..iters)
                    .map(|_| {
                        let mut m = Machine::new(&cfg);
                        timed_pass(&real, |v| m.run_packed(v)).1
                    })
                    .sum()
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
