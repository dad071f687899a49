use super::*;
use crate::apps::context::live_in_group;
use crate::apps::packages::present_for_test;

fn nginx() -> &'static std::path::Path {
    std::path::Path::new(NEEDS[0].program)
}

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
    if !present_for_test(NEEDS) {
        return;
    }
    let ctx = quick_context(11);
    let site = Site::start(&ctx, nginx(), true).unwrap();
    let (pgid, scratch) = (
        site.server.pid(),
        site.tree.root.parent().unwrap().to_owned(),
    );
    // The master answers before its worker has forked: on a busy machine the test can look
    // between the two, so the worker gets a few seconds to appear.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while live_in_group(pgid).len() < 2 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(live_in_group(pgid).len() >= 2, "a master and a worker");
    // Run by root, the workers that read the files and talk to clients are nobody's.
    if let Some(account) = unprivileged_account().unwrap() {
        let nobody = std::fs::read_to_string("/etc/passwd")
            .unwrap()
            .lines()
            .find(|l| l.starts_with(&format!("{}:", account.user)))
            .map(|l| l.split(':').nth(2).unwrap().to_string())
            .unwrap();
        // A worker forks as root and drops to nobody as it starts: on a busy machine the test can
        // look between the two, so each gets a few seconds to have done it.
        let effective_uid = |pid: i32| {
            let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
            let uid = status.lines().find(|l| l.starts_with("Uid:"))?.to_string();
            uid.split_whitespace().nth(2).map(str::to_string)
        };
        for pid in live_in_group(pgid).into_iter().filter(|&p| p != pgid) {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
            let mut uid = effective_uid(pid);
            while uid.as_deref() == Some("0") && std::time::Instant::now() < deadline {
                std::thread::sleep(std::time::Duration::from_millis(20));
                uid = effective_uid(pid);
            }
            assert_eq!(uid.as_deref(), Some(nobody.as_str()), "worker {pid}");
        }
    }
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
    let r = client::replay(&target, plan, &AtomicBool::new(false)).unwrap();
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
    if !present_for_test(NEEDS) {
        return;
    }
    let site = Site::start(&quick_context(12), nginx(), false).unwrap();
    std::fs::remove_file(site.tree.path_of(5)).unwrap();
    let err = format!("{:#}", site.verify().unwrap_err());
    assert!(err.contains("status 404"), "{err}");
    assert!(err.contains(&site.tree.files[5].url), "{err}");
}

/// For the notes, not a check: osmeter's client against wrk (Debian package wrk) on the same
/// nginx in the same run, kept-alive connections, alternating A B A B. Run with
/// `cargo test --release --lib apps::web::tests::client_against_wrk -- --ignored --nocapture`.
#[test]
#[ignore]
fn client_against_wrk() {
    let wrk = std::path::Path::new("/usr/bin/wrk");
    if !present_for_test(NEEDS) || !crate::programs::executable(wrk) {
        eprintln!("needs nginx-light and wrk");
        return;
    }
    let site = Site::start(&quick_context(21), nginx(), false).unwrap();
    site.verify().unwrap();
    let trace = trace::covering(21, site.tree.files.len(), 16_384);
    let (urls, sizes) = (site.urls(), site.sizes());
    let script = site.tree.root.parent().unwrap().join("trace.lua");
    let paths: Vec<String> = trace
        .iter()
        .take(1024)
        .map(|&f| format!("{:?}", urls[f as usize]))
        .collect();
    std::fs::write(
        &script,
        format!(
            "local paths = {{ {} }}\nlocal i = 0\nrequest = function()\n  i = i % #paths + 1\n  \
             return wrk.format(nil, paths[i])\nend\n",
            paths.join(", ")
        ),
    )
    .unwrap();
    let target = client::Target {
        addr: site.server.addr,
        urls: &urls,
        sizes: &sizes,
    };
    for concurrency in [4usize, 16] {
        let (mut ours, mut theirs) = (Vec::new(), Vec::new());
        for _ in 0..3 {
            let plan = client::Plan {
                trace: &trace,
                concurrency,
                keep_alive: true,
                verify: None,
            };
            let r = client::replay(&target, plan, &AtomicBool::new(false)).unwrap();
            assert_eq!(r.errors, 0, "{:?}", r.first_error);
            ours.push(r.requests as f64 / r.seconds);
            let out = std::process::Command::new(wrk)
                .args(["-t2", &format!("-c{concurrency}"), "-d3s", "-s"])
                .arg(&script)
                .arg(format!("http://{}/", site.server.addr))
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(!text.contains("Non-2xx"), "{text}");
            let rate: f64 = text
                .lines()
                .find_map(|l| l.strip_prefix("Requests/sec:"))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or_else(|| panic!("no rate in wrk's output: {text}"));
            theirs.push(rate);
        }
        let med = |v: &[f64]| crate::stats::summary::median_of(&mut v.to_vec());
        let (a, b) = (med(&ours), med(&theirs));
        println!(
            "c={concurrency}: osmeter {ours:.0?} req/s, wrk {theirs:.0?} req/s; medians {a:.0} vs \
             {b:.0}, ratio {:.2}",
            a / b
        );
    }
}
