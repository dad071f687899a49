//! Tests against the real kernel. They pass on this VM (software events only) and on machines with
//! a hardware PMU, where the hardware counts must then be plausible.

use super::*;
use crate::counter_delta;
use std::process::Command;

const PAGE: usize = 4096;

/// Maps `pages` fresh anonymous pages without transparent huge pages, so each touch is one fault.
fn touch_fresh_pages(pages: usize) {
    // SAFETY: an anonymous private mapping, written only inside its bounds and unmapped after.
    unsafe {
        let len = pages * PAGE;
        let p = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        assert_ne!(p, libc::MAP_FAILED);
        libc::madvise(p, len, libc::MADV_NOHUGEPAGE);
        let base = p.cast::<u8>();
        for i in 0..pages {
            std::ptr::write_volatile(base.add(i * PAGE), 1);
        }
        libc::munmap(p, len);
    }
}

fn busy_loop() -> u64 {
    let mut x = 0u64;
    for i in 0..2_000_000u64 {
        x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
    }
    x
}

fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime fills ts.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn pmu_absent() -> bool {
    !hardware_pmu_present()
}

#[test]
fn software_events_count_page_faults_of_this_thread() {
    let mut set = CounterSet::open_all();
    assert!(
        set.has(Scope::Software, "page-faults"),
        "{:?}",
        set.unavailable()
    );
    let cpu0 = thread_cpu_ns();
    let before = set.read();
    touch_fresh_pages(500);
    std::hint::black_box(busy_loop());
    let after = set.read();
    let cpu = thread_cpu_ns() - cpu0;
    let d = counter_delta(&before, &after);
    assert!(d.software["page-faults"] >= 500.0, "{d:?}");
    assert!(d.software["minor-faults"] >= 500.0, "{d:?}");
    // task-clock is this thread's CPU time: a member that stopped counting would fall far short.
    let tc = d.software["task-clock"];
    assert!(
        tc > 0.5 * cpu as f64 && tc <= 1.5 * cpu as f64,
        "{tc} vs {cpu}: {d:?}"
    );
}

#[test]
fn context_switches_rise_when_the_thread_sleeps() {
    let mut set = CounterSet::open_all();
    if !set.has(Scope::Software, "context-switches") {
        // Only when not privileged at perf_event_paranoid >= 2; the reason must say so.
        let r = &set.unavailable()["software:context-switches"];
        assert!(r.contains("perf_event_paranoid"), "{r}");
        return;
    }
    let before = set.read();
    for _ in 0..10 {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let after = set.read();
    let d = counter_delta(&before, &after);
    // Each sleep blocks, but the kernel may account a switch to a later one: ask for half.
    assert!(d.software["context-switches"] >= 5.0, "{d:?}");
}

#[test]
fn hardware_events_count_or_say_why_not() {
    let mut set = CounterSet::open_all();
    let before = set.read();
    std::hint::black_box(busy_loop());
    let after = set.read();
    let d = counter_delta(&before, &after);
    for scope in [Scope::User, Scope::Kernel] {
        for def in events::HARDWARE_GROUPS.iter().flat_map(|g| g.iter()) {
            let key = events::key(scope, def.name);
            let open = set.has(scope, def.name);
            assert_ne!(open, set.unavailable().contains_key(&key), "{key}");
            if let Some(r) = set.unavailable().get(&key) {
                assert!(!r.is_empty());
                if pmu_absent() {
                    assert!(r.contains("not supported"), "{key}: {r}");
                }
            }
        }
    }
    if pmu_absent() {
        assert!(d.user.is_empty() && d.kernel.is_empty());
        return;
    }
    // A PMU is there: the busy loop runs at least one instruction per turn in user mode.
    if let Some(instr) = d.user.get("instructions") {
        assert!(*instr >= 2_000_000.0, "{d:?}");
    }
    if let Some(cycles) = d.user.get("cycles") {
        assert!(*cycles > 0.0, "{d:?}");
    }
}

#[test]
fn availability_lists_every_event_with_reasons() {
    let list = event_availability();
    assert_eq!(list.len(), 2 * 10 + 6);
    let tc = list
        .iter()
        .find(|s| s.scope == Scope::Software && s.name == "task-clock")
        .unwrap();
    assert!(tc.available, "{tc:?}");
    for s in &list {
        assert_eq!(s.available, s.reason.is_none(), "{s:?}");
        if pmu_absent() && s.scope != Scope::Software {
            assert!(s.reason.as_deref().unwrap().contains("not supported"));
        }
    }
}

#[test]
fn none_reads_nothing() {
    let mut set = CounterSet::none();
    assert!(set.read().0.is_empty());
    assert!(set.unavailable().is_empty());
    assert!(set.is_empty());
}

/// Re-run of this test binary as the counted child: touches pages and exits.
#[test]
#[ignore = "helper process for counts_a_child_from_exec"]
fn child_touches_pages() {
    if let Ok(n) = std::env::var("OSMETER_TEST_TOUCH_PAGES") {
        touch_fresh_pages(n.parse().unwrap());
    }
}

#[test]
fn counts_a_child_from_exec() {
    const PAGES: usize = 3000;
    // The test's name as libtest knows it: the module path without the crate's name.
    let child = concat!(module_path!(), "::child_touches_pages");
    let child = child.split_once("::").map_or(child, |(_, path)| path);
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["--ignored", "--exact", child, "--test-threads=1", "-q"])
        .env("OSMETER_TEST_TOUCH_PAGES", PAGES.to_string())
        .stdout(std::process::Stdio::null());
    let mut counted = spawn_counted(cmd).unwrap();
    assert!(counted.child.wait().unwrap().success());
    let reading = counted.counters.read();
    let d = crate::counts_since_open(&reading);
    assert!(
        d.software["page-faults"] >= PAGES as f64,
        "{d:?} {:?}",
        counted.counters.unavailable()
    );
    assert!(d.software["task-clock"] > 0.0);
}

#[test]
fn counting_a_process_starts_at_exec() {
    // A child held before exec has run nothing counted yet; the parent's own faults are not its.
    let mut cmd = Command::new("true");
    cmd.stdout(std::process::Stdio::null());
    let mut counted = spawn_counted(cmd).unwrap();
    assert!(counted.child.wait().unwrap().success());
    let r = counted.counters.read();
    let faults =
        r.0.iter()
            .find(|e| e.name == "page-faults")
            .expect("page-faults open");
    // `true` faults in its own pages (tens), far fewer than this test process has.
    assert!(faults.value > 0 && faults.value < 5000, "{faults:?}");
}

#[test]
fn a_command_that_cannot_start_is_an_error() {
    let err = match spawn_counted(Command::new("/nonexistent/osmeter-no-such-command")) {
        Err(e) => e,
        Ok(_) => panic!("started a command that does not exist"),
    };
    assert_eq!(err.kind(), std::io::ErrorKind::NotFound);
}

#[test]
fn events_opened_one_by_one_read_the_same_way() {
    // The path taken where the kernel refuses group reads: every event alone.
    let mut opener = Opener::new(Target::Thread);
    opener.groups_work = false;
    let mut set = opener.open_everything();
    assert!(set.handles.iter().all(|h| !h.grouped));
    assert!(set.has(Scope::Software, "task-clock"));
    let before = set.read();
    touch_fresh_pages(200);
    let d = counter_delta(&before, &set.read());
    assert!(d.software["page-faults"] >= 200.0, "{d:?}");
    assert!(d.software["task-clock"] > 0.0, "{d:?}");
}

#[test]
fn groups_are_used_where_the_kernel_allows_them() {
    let set = CounterSet::open_all();
    let sw = set
        .handles
        .iter()
        .find(|h| h.events.iter().any(|e| e.1 == "task-clock"))
        .unwrap();
    assert!(sw.grouped && sw.events.len() >= 4, "{:?}", sw.events);
}
