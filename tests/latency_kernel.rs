//! End-to-end tests of what `osmeter latency` reads from the kernel and what it runs for real:
//! `--stages` (wakes split into stages from kernel timestamps), `--trace` with stacks (causes
//! counted by function), and `--compute` (the buffer model run by a computing thread). Each as
//! root, with a FIFO hog injected where a known answer is needed; bad requests refused; nothing
//! left in tracefs.

mod common;
#[path = "common/cpu_hog.rs"]
mod cpu_hog;

use common::{interrupt_after, is_root, TestEnv};
use cpu_hog::{exclusive, hog, last_cpu, periodic_hog};
use osmeter::latency::document::LatencyDoc;
use osmeter::latency::stages::StageStats;
use osmeter::latency::threads::{ClassName, Path};
use osmeter::latency::trace::StackMode;
use osmeter::results::model::Run;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The instances of one process, seen through a private tracefs mount of the test's own.
fn instances_of(pid: u32) -> Vec<String> {
    // SAFETY: fsopen/fsconfig/fsmount with checked results; the descriptors are owned.
    let fd = unsafe {
        let fs = libc::syscall(libc::SYS_fsopen, c"tracefs".as_ptr(), 1);
        if fs < 0 {
            return Vec::new();
        }
        let fs = OwnedFd::from_raw_fd(fs as i32);
        let null = std::ptr::null::<libc::c_void>();
        libc::syscall(libc::SYS_fsconfig, fs.as_raw_fd(), 6, null, null, 0);
        let m = libc::syscall(libc::SYS_fsmount, fs.as_raw_fd(), 1, 0);
        if m < 0 {
            return Vec::new();
        }
        OwnedFd::from_raw_fd(m as i32)
    };
    std::fs::read_dir(format!("/proc/self/fd/{}/instances", fd.as_raw_fd()))
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(&format!("osmeter-{pid}-")))
                .collect()
        })
        .unwrap_or_default()
}

/// The run `osmeter latency --json` printed, which must have succeeded.
fn printed_run(out: &std::process::Output) -> Run {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn latency_doc(out: &std::process::Output) -> LatencyDoc {
    printed_run(out)
        .sections
        .take::<LatencyDoc>()
        .expect("a latency section")
}

/// Cause capture of the wakes later than 15 ms.
const TRACED: &[&str] = &["--trace", "--threshold", "15ms"];

/// `osmeter latency --json` of the normal class's timer path on `cpu` for two seconds, with
/// `args`, while the hogs that `start_hogs` starts take the CPU away; waits for the hogs and
/// returns the run printed. With `--trace` the hogs start once osmeter has made its trace
/// instance, so their delays count from its set-up, not from its start (a busy machine can stretch
/// the start past the first hog's delay, and the hog then runs before anything is measured).
fn normal_timer_run<H: IntoIterator<Item = std::thread::JoinHandle<()>>>(
    env: &TestEnv,
    cpu: usize,
    args: &[&str],
    start_hogs: impl FnOnce() -> H,
) -> Run {
    let cpu = cpu.to_string();
    let mut child = env
        .osmeter_std()
        .args(["latency", "--classes", "normal", "--paths", "timer"])
        .args(["--duration", "2s", "--cpus", &cpu, "--json"])
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    if args.contains(&"--trace") {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while instances_of(child.id()).is_empty()
            && std::time::Instant::now() < deadline
            && child.try_wait().unwrap().is_none()
        {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }
    let hogs = start_hogs();
    let out = child.wait_with_output().unwrap();
    for h in hogs {
        h.join().unwrap();
    }
    printed_run(&out)
}

#[test]
fn stages_split_each_timer_wake_and_the_hog_is_in_the_thread_stage() {
    let _cpu = exclusive();
    if !is_root() {
        eprintln!("skipped: stages need root");
        return;
    }
    let cpu = last_cpu();
    let h = hog(cpu, 700, 40);
    let env = TestEnv::new();
    let child = env
        .osmeter_std()
        .args(["latency", "--stages", "--classes", "high,normal"])
        .args(["--paths", "timer,futex", "--duration", "3s", "--json"])
        .args(["--cpus", &cpu.to_string()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    h.join().unwrap();
    let doc = latency_doc(&out);
    let info = doc.stage_capture.as_ref().expect("stage capture info");
    assert!(info.events.iter().any(|e| e == "sched/sched_switch"));
    assert_eq!(info.phase_ms, Some(1000));
    let mut normal_thread_max = 0;
    for s in &doc.streams {
        if s.path == Path::Futex {
            assert!(s.stages.is_none(), "stages only for the timer path");
            continue;
        }
        let stages = s.stages.as_ref().expect("stages of a timer stream");
        let st = stages.stages.as_ref().expect("some wakes split");
        let named: [&StageStats; 4] = [&st.interrupt, &st.handler, &st.thread, &st.to_user];
        for x in named.iter().chain([&&st.total]) {
            assert!(
                x.dist.p50_ns <= x.dist.p90_ns && x.dist.p90_ns <= x.dist.p99_ns,
                "{x:?}"
            );
            assert!(
                x.dist.p99_ns <= x.dist.p99_9_ns && x.dist.p99_9_ns <= x.dist.max_ns,
                "{x:?}"
            );
        }
        // The stages add up: their mean shares make the whole.
        let shares: f64 = named.iter().map(|x| x.mean_share).sum::<f64>()
            + st.softirq.as_ref().map_or(0.0, |x| x.mean_share);
        assert!((shares - 1.0).abs() < 0.05, "{shares}");
        assert!(stages.traced_wakes > 800, "{stages:?}");
        // Nearly all: the first wake of each traced phase was armed before it, and events lost
        // or cut by the other tests on this CPU break a few more.
        assert!(
            stages.with_stages * 10 >= stages.traced_wakes * 8,
            "{stages:?}"
        );
        let o = stages.overhead.as_ref().expect("overhead from the phases");
        assert!(o.untraced_wakes > 500, "{o:?}");
        if s.class == ClassName::Normal {
            normal_thread_max = st.thread.dist.max_ns;
        }
    }
    // The hog ran 40 ms in the first (traced) second: the normal thread waited for it after its
    // wake-up, which is the thread stage.
    assert!(
        normal_thread_max > 30_000_000,
        "normal thread stage max {normal_thread_max}"
    );
    assert!(instances_of(pid).is_empty(), "{:?}", instances_of(pid));
}

#[test]
fn stages_and_compute_need_the_timer_path_and_compute_must_fit_the_period() {
    let _cpu = exclusive();
    for args in [
        &["--stages", "--paths", "futex"][..],
        &["--compute", "300us", "--paths", "pipe"],
        &["--compute", "0"],
        &["--compute", "1ms"],
        &["--compute", "5ms", "--period", "2ms"],
        &["--compute", "soon"],
        &["--stacks", "kernel"],
        &["--trace", "--stacks", "everything"],
    ] {
        let out = TestEnv::new()
            .osmeter()
            .arg("latency")
            .args(args)
            .arg("--no-store")
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!out.stderr.is_empty());
    }
}

#[test]
fn causes_name_the_function_of_what_ran_instead_across_episodes() {
    let _cpu = exclusive();
    if !is_root() {
        eprintln!("skipped: cause capture needs root");
        return;
    }
    let cpu = last_cpu();
    let hogs = || [hog(cpu, 600, 30), hog(cpu, 1300, 30)];
    let args = [TRACED, &["--episodes", "2", "--no-store"]].concat();
    let run = normal_timer_run(&TestEnv::new(), cpu, &args, hogs);
    let doc = run
        .sections
        .get::<osmeter::latency::document::LatencyDoc>()
        .cloned()
        .expect("a latency section");
    assert_eq!(doc.stacks, Some(StackMode::Kernel));
    let eps = doc.episodes.as_ref().expect("episodes");
    assert!(!eps.is_empty());
    for e in eps {
        assert!(!e.samples.is_empty(), "no stack samples: {}", e.summary);
        assert!(e.samples.iter().all(|s| !s.function.is_empty()));
    }
    // The hog spins in user space: the tick samples it there, and the causes count it first.
    let causes = doc.causes.as_ref().expect("causes");
    let hog_cause = causes
        .iter()
        .find(|c| c.function == "[user] osm-hog")
        .unwrap_or_else(|| panic!("the hog is not among the causes: {causes:?}"));
    assert!(hog_cause.samples >= 2, "{hog_cause:?}");
    assert_eq!(causes[0].function, "[user] osm-hog", "{causes:?}");
}

/// Spins in user space for `ms` without leaving this function but for a clock read every
/// hundred thousand turns: the function the user-stack test must find named.
#[inline(never)]
#[no_mangle]
extern "C" fn osmeter_user_hog(ms: u64) {
    let end = std::time::Instant::now() + std::time::Duration::from_millis(ms);
    let mut x = 0u64;
    while std::time::Instant::now() < end {
        // No range iterator, wrapping_add or black_box: in a debug build each is a call, and a
        // tick landing in one names that function instead of this one.
        let mut i = 0u64;
        while i < 100_000 {
            x ^= i;
            // SAFETY: an empty asm block that only claims to read and change `x`.
            unsafe { std::arch::asm!("/* {0} */", inout(reg) x) };
            i += 1;
        }
    }
}

/// A thread named osm-uhog that takes `cpu` at SCHED_FIFO 80 after `after_ms` and spins in
/// `osmeter_user_hog` for `ms`.
fn user_hog(cpu: usize, after_ms: u64, ms: u64) -> std::thread::JoinHandle<()> {
    std::thread::Builder::new()
        .name("osm-uhog".into())
        .spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(after_ms));
            // SAFETY: pinning and switching the class of the calling thread only.
            unsafe {
                let mut set: libc::cpu_set_t = std::mem::zeroed();
                libc::CPU_SET(cpu, &mut set);
                libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
                let p = libc::sched_param { sched_priority: 80 };
                libc::sched_setscheduler(0, libc::SCHED_FIFO, &p);
            }
            osmeter_user_hog(ms);
        })
        .unwrap()
}

#[test]
fn user_stacks_name_the_function_of_a_user_space_hog() {
    let _cpu = exclusive();
    if !is_root() {
        eprintln!("skipped: cause capture with user stacks needs root");
        return;
    }
    let cpu = last_cpu();
    let hogs = || [user_hog(cpu, 600, 30), user_hog(cpu, 1300, 30)];
    let args = [
        TRACED,
        &["--stacks", "all", "--episodes", "2", "--no-store"],
    ]
    .concat();
    let run = normal_timer_run(&TestEnv::new(), cpu, &args, hogs);
    let doc = run
        .sections
        .get::<osmeter::latency::document::LatencyDoc>()
        .cloned()
        .expect("a latency section");
    assert_eq!(doc.stacks, Some(StackMode::All));
    let causes = doc.causes.as_ref().expect("causes");
    // The tick cut into the hog in user space: its function is named from this test binary's
    // symbol table, and its samples are counted under that name.
    let exe = std::env::current_exe().unwrap();
    let object = exe.file_name().unwrap().to_string_lossy().into_owned();
    let want = format!("[user] osmeter_user_hog ({object})");
    let hog = causes
        .iter()
        .find(|c| c.function == want)
        .unwrap_or_else(|| panic!("no {want} among the causes: {causes:#?}"));
    assert!(hog.samples >= 2, "{hog:?}");
    assert!(hog.tasks.iter().any(|t| t == "osm-uhog"), "{hog:?}");
    assert!(
        hog.user_example
            .first()
            .is_some_and(|f| f.starts_with("osmeter_user_hog (")),
        "{hog:?}"
    );
}

#[test]
fn compute_counts_real_underruns_beside_the_model() {
    let _cpu = exclusive();
    let cpu = last_cpu();
    let hogging = is_root();
    let hogs = || hogging.then(|| hog(cpu, 700, 20));
    let compute = ["--compute", "500us", "--period", "2ms", "--no-store"];
    let run = normal_timer_run(&TestEnv::new(), cpu, &compute, hogs);
    let doc = run
        .sections
        .get::<osmeter::latency::document::LatencyDoc>()
        .cloned()
        .expect("a latency section");
    let s = &doc.streams[0];
    let c = s.compute.as_ref().expect("a compute result");
    assert_eq!(c.compute_ns, 500_000);
    let depths: Vec<u32> = c.depths.iter().map(|d| d.buffers).collect();
    assert_eq!(depths, [2, 3, 4]);
    for d in &c.depths {
        assert_eq!(d.real.buffers, s.periods, "every buffer is accounted for");
        assert_eq!(d.model.buffers, d.buffers);
        if hogging {
            // 20 ms without the CPU: longer than every depth allows, so the pipeline underran.
            assert!(d.real.failures >= 1, "{d:?}");
            // The model sees only wake latencies. Where the hog took the CPU while the thread was
            // computing, the wake was on time and the computation stretched instead, which only
            // the real count sees: then the model may see nothing, but the stretch must be there
            // (at least what the depth's slack of under 8 ms leaves of the hog's 20 ms).
            assert!(
                d.model.failures >= 1 || c.compute_max_ns >= 10_000_000,
                "the model saw no failure and no computation was stretched: {d:?} {c:?}"
            );
        }
    }
    assert!(c.compute_p50_ns >= 250_000, "{c:?}");
}

#[test]
fn ctrl_c_during_stages_removes_the_instance_and_keeps_the_stages() {
    let _cpu = exclusive();
    if !is_root() {
        eprintln!("skipped: stages need root");
        return;
    }
    let env = TestEnv::new();
    let mut cmd = env.osmeter_std();
    cmd.args([
        "latency",
        "--stages",
        "--classes",
        "normal",
        "--paths",
        "timer",
    ])
    .args(["--duration", "60s", "--json", "--no-store"]);
    let (out, _) = interrupt_after(&mut cmd, std::time::Duration::from_millis(2500), || {});
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run: Run = serde_json::from_slice(&out.stdout).unwrap();
    let doc = run
        .sections
        .get::<osmeter::latency::document::LatencyDoc>()
        .cloned()
        .expect("a latency section");
    let stages = doc.streams[0].stages.as_ref().expect("stages");
    assert!(stages.with_stages > 100, "{stages:?}");
    assert!(doc.interrupted);
}

/// The part of `osmeter compare --json` this test reads.
#[derive(serde::Deserialize)]
struct Comparison {
    kind: String,
    figures: Vec<ComparedFigure>,
}

#[derive(serde::Deserialize, Debug)]
struct ComparedFigure {
    key: String,
    value_a: f64,
    value_b: f64,
    ratio_ci95: Option<[f64; 2]>,
    p_value: Option<f64>,
    verdict: String,
}

#[test]
fn compare_of_two_real_latency_runs_flags_the_one_with_a_hog() {
    let _cpu = exclusive();
    if !is_root() {
        eprintln!("skipped: the injected hog needs SCHED_FIFO");
        return;
    }
    let cpu = last_cpu().to_string();
    let env = TestEnv::new();
    let run = |tag: &str| {
        let out = env
            .osmeter()
            .args(["latency", "--classes", "high", "--paths", "timer"])
            .args(["--duration", "10s", "--cpus", &cpu, "--tag", tag])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    run("side=quiet");
    let stop = Arc::new(AtomicBool::new(false));
    let h = periodic_hog(last_cpu(), Arc::clone(&stop));
    run("side=hog");
    stop.store(true, Ordering::Relaxed);
    h.join().unwrap();
    let out = env
        .osmeter()
        .args([
            "compare",
            "--tag-a",
            "side=quiet",
            "--tag-b",
            "side=hog",
            "--json",
        ])
        .output()
        .unwrap();
    // Exit 0: compare reports, it gates only with a threshold.
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let c: Comparison = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(c.kind, "latency");
    let fig = |suffix: &str| -> &ComparedFigure {
        c.figures
            .iter()
            .find(|f| f.key.ends_with(suffix))
            .unwrap_or_else(|| panic!("no figure *{suffix}"))
    };
    // The real-time class is shielded from the other tests' ordinary load on this CPU, not from
    // the hog above it, which holds the CPU more than half the time: many wakes wait hundreds of
    // us. Compared second against second (ten a side, so that a second another test on this
    // machine spoils does not decide), the p90 and the share over 100 us are flagged as worse.
    for suffix in [" p90", " over 100us"] {
        let f = fig(suffix);
        assert!(f.value_b > f.value_a, "{f:?}");
        assert!(f.p_value.is_some() && f.ratio_ci95.is_some(), "{f:?}");
        assert_eq!(f.verdict, "slower", "{f:?}");
    }
    // The tail has one value a side, judged by each run's order-statistic interval; the maximum
    // has none: shown, not tested.
    let tail = fig(" p99.99");
    assert_ne!(tail.verdict, "untested", "{tail:?}");
    assert!(
        tail.p_value.is_some() && tail.ratio_ci95.is_some(),
        "{tail:?}"
    );
    assert_eq!(fig(" max").verdict, "untested");
    // Text: both sides side by side with the verdict; a CI gate on it exits 4.
    let text = env
        .osmeter()
        .args(["compare", "--tag-a", "side=quiet", "--tag-b", "side=hog"])
        .args(["--fail-if-slower", "50"])
        .output()
        .unwrap();
    assert_eq!(text.status.code(), Some(4));
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("over 100us") && text.contains("SLOWER"),
        "{text}"
    );
}

/// The HTML report of a latency run with cause capture draws its late wakes: the heading, and a
/// row for the measured stream that names the hog as what ran instead.
#[test]
fn the_report_of_a_run_with_cause_capture_draws_its_episodes() {
    let _cpu = exclusive();
    if !is_root() {
        eprintln!("skipped: cause capture needs root");
        return;
    }
    let cpu = last_cpu();
    let env = TestEnv::new();
    // Stored this time: the report reads the run from the store.
    let run = normal_timer_run(&env, cpu, TRACED, || [hog(cpu, 600, 30)]);
    let eps = run
        .sections
        .get::<osmeter::latency::document::LatencyDoc>()
        .unwrap()
        .episodes
        .as_ref();
    assert!(
        !eps.expect("episodes").is_empty(),
        "the hog made a late wake"
    );
    let report = env.dir.path().join("latency.html");
    env.osmeter()
        .args(["report", &run.id, "-o"])
        .arg(&report)
        .output()
        .unwrap();
    let html = std::fs::read_to_string(&report).unwrap();
    assert!(
        html.contains("<h3>Late wakes and their causes</h3>"),
        "{html}"
    );
    let start = html.find("Late wakes and their causes").unwrap();
    let table = &html[start..start + html[start..].find("</table>").unwrap()];
    assert!(
        table.contains(&format!("<td>normal/timer cpu{cpu}</td>")),
        "no row for the measured stream:\n{table}"
    );
    assert!(table.contains("osm-hog"), "the hog ran instead:\n{table}");
}
