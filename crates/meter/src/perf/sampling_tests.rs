use super::*;

fn record(kind: u32, misc: u16, words: &[u64]) -> Vec<u8> {
    let size = (8 + words.len() * 8) as u16;
    let mut out = Vec::new();
    out.extend_from_slice(&kind.to_ne_bytes());
    out.extend_from_slice(&misc.to_ne_bytes());
    out.extend_from_slice(&size.to_ne_bytes());
    for w in words {
        out.extend_from_slice(&w.to_ne_bytes());
    }
    out
}

#[test]
fn a_sample_splits_its_chain_at_the_context_markers() {
    let ids = 7u64 | (9u64 << 32);
    let words = [
        0xffff_ffff_8100_0010, // ip
        ids,
        123_456, // time
        50_000,  // period
        6,       // nr
        CONTEXT_KERNEL,
        0xffff_ffff_8100_0010,
        0xffff_ffff_8100_0200,
        CONTEXT_USER,
        0x5555_0000_1000,
        0x5555_0000_2000,
    ];
    let mut stats = RingStats::default();
    let s = decode_record(&record(RECORD_SAMPLE, MISC_KERNEL, &words), &mut stats).unwrap();
    assert_eq!((s.pid, s.tid, s.time_ns, s.period), (7, 9, 123_456, 50_000));
    assert!(s.in_kernel);
    assert_eq!(
        s.kernel_chain,
        vec![0xffff_ffff_8100_0010, 0xffff_ffff_8100_0200]
    );
    assert_eq!(s.user_chain, vec![0x5555_0000_1000, 0x5555_0000_2000]);
    assert_eq!(stats, RingStats::default());
}

#[test]
fn lost_throttled_and_truncated_records_are_counted_not_decoded() {
    let mut stats = RingStats::default();
    assert!(decode_record(&record(RECORD_LOST, 0, &[1, 42]), &mut stats).is_none());
    assert!(decode_record(&record(RECORD_THROTTLE, 0, &[1, 2, 3]), &mut stats).is_none());
    // Claims five chain entries, holds one.
    let short = record(RECORD_SAMPLE, 2, &[0x1000, 1, 2, 3, 5, 0x1000]);
    assert!(decode_record(&short, &mut stats).is_none());
    assert!(decode_record(&record(3, 0, &[]), &mut stats).is_none());
    assert_eq!(
        stats,
        RingStats {
            lost: 42,
            throttled: 1,
            skipped: 2
        }
    );
    // A user-mode sample without markers keeps its chain as user frames.
    let s = decode_record(
        &record(RECORD_SAMPLE, 2, &[0x10, 0, 0, 1, 1, 0x10]),
        &mut stats,
    )
    .unwrap();
    assert!(!s.in_kernel);
    assert_eq!(s.user_chain, vec![0x10]);
}

/// The real ring: this thread, busy in system calls, is sampled with kernel chains (as root).
#[test]
fn a_busy_thread_is_sampled_in_the_kernel() {
    let mut sampler = match Sampler::open() {
        Ok(s) => s,
        Err(r) if unsafe { libc::geteuid() } != 0 => {
            eprintln!("skipped: {}", r.reason);
            return;
        }
        Err(r) => panic!("root cannot sample: {}", r.reason),
    };
    assert!(sampler.enable());
    let mut samples = Vec::new();
    let t = std::time::Instant::now();
    while t.elapsed() < std::time::Duration::from_millis(200) {
        for _ in 0..1000 {
            // SAFETY: getppid has no preconditions.
            unsafe { libc::getppid() };
        }
        sampler.drain(&mut samples);
    }
    assert!(sampler.disable());
    sampler.drain(&mut samples);
    assert!(samples.len() > 100, "{} samples", samples.len());
    // SAFETY: gettid has no preconditions.
    let tid = unsafe { libc::gettid() } as u32;
    assert!(samples.iter().all(|s| s.tid == tid));
    let kernel = samples.iter().filter(|s| s.in_kernel).count();
    assert!(kernel > 0, "no kernel samples of {}", samples.len());
    assert!(samples
        .iter()
        .filter(|s| s.in_kernel)
        .all(|s| !s.kernel_chain.is_empty() && s.kernel_chain[0] >= 0xffff_0000_0000_0000));
}
