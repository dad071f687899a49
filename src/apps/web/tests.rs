use super::*;
use crate::apps::context::{live_in_group, programs_for_test};

#[test]
fn percentiles_of_one_to_a_hundred() {
    // 1..=100 microseconds, shuffled.
    let mut ns: Vec<u64> = (1..=100u64).rev().map(|u| u * 1000).collect();
    ns.swap(3, 70);
    let p = percentiles(&mut ns).unwrap();
    assert!((p.p50_us - 50.5).abs() < 1e-9, "{p:?}");
    assert!((p.p90_us - 90.1).abs() < 1e-9, "{p:?}");
    assert!((p.p99_us - 99.01).abs() < 1e-9, "{p:?}");
    assert_eq!(p.max_us, 100.0);
    assert_eq!(percentiles(&mut []), None);
    let one = percentiles(&mut [7000]).unwrap();
    assert_eq!((one.p50_us, one.p99_us, one.max_us), (7.0, 7.0, 7.0));
}

/// A context in the system temporary directory: when the tests run as root, nginx's workers run
/// as nobody and must be able to pass through the parent.
fn quick_context(seed: u64) -> Context {
    Context::new(&std::env::temp_dir(), Scale::Quick, seed)
}

#[test]
fn nginx_serves_every_file_byte_for_byte_and_leaves_nothing_behind() {
    let Some(found) = programs_for_test(NEEDED) else {
        return;
    };
    let ctx = quick_context(11);
    let site = Site::start(&ctx, &found[0], true).unwrap();
    let (pgid, scratch) = (
        site.server.pid(),
        site.tree.root.parent().unwrap().to_owned(),
    );
    assert!(live_in_group(pgid).len() >= 2, "a master and a worker");
    site.verify().unwrap();
    // A new connection per request, four at a time, every file asked for at least once.
    let trace = trace::covering(11, site.tree.files.len(), 600);
    let (urls, sizes) = (site.urls(), site.sizes());
    let target = client::Target {
        addr: site.server.addr,
        urls: &urls,
        sizes: &sizes,
    };
    let plan = client::Plan {
        trace: &trace,
        concurrency: 4,
        keep_alive: false,
        verify: None,
    };
    let r = client::replay(&target, plan, &AtomicBool::new(false));
    assert_eq!((r.requests, r.errors), (600, 0), "{:?}", r.first_error);
    let want: u64 = trace.iter().map(|&f| sizes[f as usize]).sum();
    assert_eq!(r.body_bytes, want);
    assert_eq!(r.latencies_ns.len(), 600);
    // The server's access log saw them all (plus the verification pass).
    let log = std::fs::read_to_string(scratch.join("server/try0/access.log")).unwrap_or_default();
    assert_eq!(log.lines().count(), 600 + urls.len());
    drop(site);
    assert!(live_in_group(pgid).is_empty(), "nginx left running");
    assert!(!scratch.exists(), "{} left behind", scratch.display());
}

#[test]
fn a_missing_file_is_an_error_that_names_it() {
    let Some(found) = programs_for_test(NEEDED) else {
        return;
    };
    let site = Site::start(&quick_context(12), &found[0], false).unwrap();
    std::fs::remove_file(site.tree.path_of(5)).unwrap();
    let err = format!("{:#}", site.verify().unwrap_err());
    assert!(err.contains("status 404"), "{err}");
    assert!(err.contains(&site.tree.files[5].url), "{err}");
}

#[test]
fn the_quick_workload_answers_every_request_at_every_level() {
    let Some(_) = programs_for_test(NEEDED) else {
        return;
    };
    let ctx = quick_context(13);
    let Outcome::Measured(w) = run(&ctx).unwrap() else {
        panic!("nginx is installed but the workload was skipped")
    };
    let size = sizes(Scale::Quick);
    let runs_per_level = if w.cold_skipped.is_some() { 2 } else { 4 };
    assert_eq!(w.levels.len(), size.concurrency.len() * runs_per_level);
    assert!(w.server.starts_with("nginx/"), "{}", w.server);
    for l in &w.levels {
        assert_eq!(l.requests as usize, w.trace_requests, "{l:?}");
        assert_eq!(l.errors, 0, "{l:?}");
        let p = l.latency.unwrap();
        assert!(p.p50_us <= p.p90_us && p.p90_us <= p.p99_us && p.p99_us <= p.max_us);
        assert!(l.requests_per_s > 0.0 && l.bytes_per_s > 0.0);
        // Warm runs start with the whole tree cached; cold ones with (nearly) none of it.
        match l.cache {
            Cache::Warm => assert!(l.resident_share > 0.99, "{l:?}"),
            Cache::Cold => assert!(l.resident_share < 0.05, "{l:?}"),
        }
    }
    // Typed figures, one unit each, and a document that reads back as the same type.
    let figures = w.figures();
    assert_eq!(figures.len(), w.levels.len() * 5);
    assert!(figures
        .iter()
        .any(|f| f.key == "app.web keep-alive warm c=4 requests"));
    let text = serde_json::to_string(&Outcome::Measured(w.clone())).unwrap();
    assert_eq!(
        serde_json::from_str::<Outcome<WebFigures>>(&text).unwrap(),
        Outcome::Measured(w)
    );
}
