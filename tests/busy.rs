//! A run on a busy machine: a real CPU hog (a spinning shell pinned to the measuring CPU) makes the
//! run be called busy with the hog named; compare refuses a busy run unless forced; history leaves
//! busy runs out unless asked; runs stored before the verdict existed still load and compare.

mod common;
#[path = "common/cpu_hog.rs"]
mod cpu_hog;

use common::TestEnv;
use cpu_hog::{exclusive, last_cpu};
use std::process::{Child, Command};

/// A shell spinning on one CPU; killed when dropped, also when the test fails.
struct Hog(Child);

impl Hog {
    fn on(cpu: usize) -> Hog {
        let child = Command::new("taskset")
            .args(["-c", &cpu.to_string(), "sh", "-c", "while :; do :; done"])
            .spawn()
            .expect("taskset (util-linux) and sh");
        Hog(child)
    }
    fn pid(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for Hog {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Short: a CPU-bound figure (whose preempted samples count) and an OS one.
const SHORT: &[&str] = &[
    "cpu.reference",
    "syscall.null",
    "--rounds",
    "2",
    "--repeat",
    "3",
    "--min-time",
    "5ms",
];

fn run_json(env: &TestEnv, cpu: usize) -> serde_json::Value {
    let cpu = cpu.to_string();
    let mut args = vec!["run", "--json", "--cpu", &cpu];
    args.extend_from_slice(SHORT);
    env.json(&args)
}

fn busy(run: &serde_json::Value) -> bool {
    run["machine"]["verdict"] == "busy"
}

#[test]
fn a_hog_on_the_measuring_cpu_makes_the_run_busy_and_is_named() {
    let _cpu = exclusive();
    let env = TestEnv::new();
    let cpu = last_cpu();
    let hog = Hog::on(cpu);
    let run = run_json(&env, cpu);
    let pid = hog.pid();
    drop(hog);
    let m = &run["machine"];
    assert!(busy(&run), "{m:#}");
    assert_eq!(m["cpu"], cpu);
    assert_eq!(m["cpu_choice"]["chosen"], false);
    let takers = m["evidence"]["takers"].as_array().unwrap();
    let named = takers.iter().find(|t| t["pid"] == pid);
    assert!(named.is_some_and(|t| t["command"] == "sh"), "{takers:?}");
    assert!(m["evidence"]["before"]["loadavg"].is_array(), "{m:#}");
    assert!(
        m["reasons"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r.as_str().unwrap().contains(&format!("sh (pid {pid})"))),
        "{m:#}"
    );

    // The same run as text: one paragraph, no `!` at any figure, no list of figures to read with
    // care.
    let shown = env
        .osmeter()
        .args(["show", run["id"].as_str().unwrap()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&shown.stdout);
    assert!(text.contains("Machine: BUSY. Measured on CPU"), "{text}");
    assert!(
        !text.contains(" !\n") && !text.contains("read with care"),
        "{text}"
    );
    // A paper's today's side taken from it says the same, once.
    let paper = env
        .osmeter()
        .args([
            "paper",
            "ousterhout89",
            "--run",
            run["id"].as_str().unwrap(),
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&paper.stdout);
    assert!(
        paper.status.success(),
        "{}",
        String::from_utf8_lossy(&paper.stderr)
    );
    assert_eq!(text.matches("Machine: BUSY.").count(), 1, "{text}");
}

#[test]
fn compare_refuses_a_busy_run_and_force_shows_it_marked() {
    let _cpu = exclusive();
    let env = TestEnv::new();
    let cpu = last_cpu();
    let a = run_json(&env, cpu);
    let hog = Hog::on(cpu);
    let b = run_json(&env, cpu);
    drop(hog);
    assert!(busy(&b), "{:#}", b["machine"]);
    let (ia, ib) = (a["id"].as_str().unwrap(), b["id"].as_str().unwrap());
    // `runs` says which runs compare and history leave out.
    let listed = env.osmeter().args(["runs"]).output().unwrap();
    let listed = String::from_utf8_lossy(&listed.stdout);
    let line = |id: &str| {
        listed
            .lines()
            .find(|l| l.starts_with(id))
            .unwrap()
            .to_string()
    };
    assert!(line(ib).ends_with("(busy)"), "{listed}");
    assert_eq!(line(ia).ends_with("(busy)"), busy(&a), "{listed}");

    let out = env.osmeter().args(["compare", ia, ib]).output().unwrap();
    assert_eq!(out.status.code(), Some(6));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("not compared: measured on a busy machine")
            && err.contains(&format!("B {ib}"))
            && err.contains("--force"),
        "{err}"
    );
    // One line per run and per reason, each within 100 columns, however many processes took the
    // CPU and however long their command lines.
    assert!(err.lines().all(|l| l.chars().count() <= 100), "{err}");
    // --fail-if-slower does not turn a refusal into a pass.
    let out = env
        .osmeter()
        .args(["compare", ia, ib, "--fail-if-slower", "5"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(6));

    let forced = env
        .osmeter()
        .args(["compare", ia, ib, "--force", "--all"])
        .output()
        .unwrap();
    assert!(forced.status.success());
    let text = String::from_utf8_lossy(&forced.stdout);
    assert!(text.contains("BUSY: shown because of --force"), "{text}");
    assert!(
        text.contains(&format!("B: run {ib} was measured on a busy machine")),
        "{text}"
    );
    let json = env.json(&["compare", ia, ib, "--force", "--json"]);
    assert!(
        json["busy"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["run"] == ib && r["side"] == "B"),
        "{json:#}"
    );
}

#[test]
fn history_leaves_busy_runs_out_unless_asked() {
    let _cpu = exclusive();
    let env = TestEnv::new();
    let cpu = last_cpu();
    let mut runs = vec![run_json(&env, cpu), run_json(&env, cpu)];
    let hog = Hog::on(cpu);
    runs.push(run_json(&env, cpu));
    drop(hog);
    assert!(busy(&runs[2]), "{:#}", runs[2]["machine"]);

    let h = env.json(&["history", "syscall.null", "--json"]);
    let points: Vec<&str> = h["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["run"].as_str().unwrap())
        .collect();
    let left: Vec<&str> = h["left_out"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["reason"].as_str().unwrap().contains("busy machine"))
        .map(|l| l["run"].as_str().unwrap())
        .collect();
    // Whatever this shared machine did to the first two, each run is where its verdict puts it.
    for r in &runs {
        let id = r["id"].as_str().unwrap();
        if busy(r) {
            assert!(left.contains(&id) && !points.contains(&id), "{h:#}");
        } else {
            assert!(points.contains(&id) && !left.contains(&id), "{h:#}");
        }
    }
    let all = env.json(&["history", "syscall.null", "--json", "--include-busy"]);
    assert_eq!(all["points"].as_array().unwrap().len(), 3, "{all:#}");
}

#[test]
fn runs_stored_before_the_verdict_load_and_compare() {
    let env = TestEnv::new();
    let v1 = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/v1/store.db");
    std::fs::copy(v1, env.store()).unwrap();
    let old = "6b050a5b-c5af4c56";
    let shown = env.json(&["show", old, "--json"]);
    assert!(shown.get("machine").is_none(), "{shown:#}");
    let out = env.osmeter().args(["compare", old, old]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!String::from_utf8_lossy(&out.stdout).contains("BUSY"));
}
