//! End-to-end tests of kernel attribution: `trace info` and `memsim` with kernel symbols, the
//! assertions table, and bad symbol files.

mod common;

use common::{entries, TestEnv};
use osmeter::memsim::trace::binary::TraceWriter;
use osmeter::memsim::trace::{Kind, Mode, Ref, FLAG_PHYSICAL};
use predicates::prelude::*;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// A kallsyms excerpt in the shape of a real one: markers, data, a module function.
const KALLSYMS: &str = "\
0000000000000000 A fixed_percpu_data
ffffffff81000000 T _stext
ffffffff81000000 T startup_64
ffffffff81001000 T entry_SYSCALL_64
ffffffff81001100 T do_syscall_64
ffffffff81001400 T __x64_sys_read
ffffffff81001600 T vfs_read
ffffffff81002000 T copy_user_enhanced_fast_string
ffffffff81002100 T syscall_exit_to_user_mode
ffffffff81002400 T asm_sysvec_apic_timer_interrupt
ffffffff81002500 T hrtimer_interrupt
ffffffff81002800 T __schedule
ffffffff81003000 T default_idle
ffffffff81003100 t do_idle
ffffffff81004000 T _etext
ffffffff82000000 D jiffies
ffffffffc0000000 t e1000_intr\t[e1000]
";

const KTEXT: u64 = 0xffff_ffff_8100_0000;
const KDATA: u64 = 0xffff_8880_0100_0000;
const ITERATIONS: u64 = 300;

/// Instruction counts per function of one system call, and of the timer tick and idle period
/// every tenth iteration.
struct Shape;
impl Shape {
    const USER: u64 = 200;
    const ENTRY: u64 = 10;
    const DISPATCH: u64 = 20;
    const READ: u64 = 50;
    const COPY: u64 = 64;
    const EXIT: u64 = 10;
    const TICK: u64 = 40;
    const SCHED: u64 = 40;
    const IDLE: u64 = 120;
}

fn physical(v: u64) -> u64 {
    if v >= 0xffff_ffff_8000_0000 {
        v - 0xffff_ffff_8000_0000
    } else if v >= 0xffff_8880_0000_0000 {
        v - 0xffff_8880_0000_0000
    } else {
        0x4000_0000 + v
    }
}

struct Gen(TraceWriter<std::fs::File>);

impl Gen {
    fn put(&mut self, kind: Kind, mode: Mode, v: u64) {
        let mut r = Ref::new(kind, mode, 1, if kind == Kind::Instr { 4 } else { 8 }, v);
        r.paddr = Some(physical(v));
        self.0.write(&r).unwrap();
    }
    /// `n` kernel instructions in the function at `func`, each with a load from `data(j)` if given.
    fn kernel(&mut self, func: u64, n: u64, data: Option<&dyn Fn(u64) -> u64>) {
        for j in 0..n {
            self.put(Kind::Instr, Mode::Kernel, KTEXT + func + 4 * (j % 32));
            if let Some(d) = data {
                self.put(Kind::Read, Mode::Kernel, d(j));
            }
        }
    }
}

/// A read-heavy workload: user code, then a read system call whose copy routine streams
/// through new page-cache data into a user buffer; a timer tick, a schedule and an idle period
/// every tenth iteration.
fn system_trace(dir: &Path) -> PathBuf {
    let path = dir.join("sys.osmt");
    let mut g =
        Gen(TraceWriter::new(std::fs::File::create(&path).unwrap(), FLAG_PHYSICAL).unwrap());
    for i in 0..ITERATIONS {
        for j in 0..Shape::USER {
            g.put(Kind::Instr, Mode::User, 0x40_0000 + 4 * (j % 256));
            g.put(Kind::Read, Mode::User, 0x60_0000 + 8 * (j % 128));
        }
        g.kernel(0x1000, Shape::ENTRY, None);
        g.kernel(0x1100, Shape::DISPATCH, Some(&|j| KDATA + 8 * j));
        g.kernel(0x1600, Shape::READ, Some(&|j| KDATA + 0x1000 + 8 * j));
        for j in 0..Shape::COPY {
            g.put(Kind::Instr, Mode::Kernel, KTEXT + 0x2000 + 4 * (j % 8));
            g.put(
                Kind::Read,
                Mode::Kernel,
                KDATA + 0x10_0000 + 8 * (i * Shape::COPY + j),
            );
            g.put(Kind::Write, Mode::Kernel, 0x70_0000 + 8 * j);
        }
        g.kernel(0x2100, Shape::EXIT, None);
        if i % 10 == 0 {
            g.kernel(0x2500, Shape::TICK, Some(&|j| KDATA + 0x2000 + 8 * j));
            g.kernel(0x2800, Shape::SCHED, Some(&|j| KDATA + 0x3000 + 8 * j));
            g.kernel(0x3000, Shape::IDLE, None);
        }
    }
    g.0.finish(0).unwrap();
    path
}

fn with_sidecar(env: &TestEnv) -> PathBuf {
    let t = system_trace(env.dir.path());
    std::fs::write(env.dir.path().join("sys.osmt.kallsyms"), KALLSYMS).unwrap();
    t
}

fn category<'a>(list: &'a Value, name: &str) -> &'a Value {
    list.as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no category {name} in {list}"))
}

const TICKS: u64 = ITERATIONS / 10;

#[test]
fn trace_info_attributes_kernel_references_from_the_sidecar() {
    let env = TestEnv::new();
    let t = with_sidecar(&env);
    let doc = env.json(&[
        "trace",
        "info",
        "--json",
        "--functions",
        "2",
        t.to_str().unwrap(),
    ]);
    let a = &doc["attribution"];
    assert!(a["symbols"]
        .as_str()
        .unwrap()
        .ends_with("sys.osmt.kallsyms"));
    assert_eq!(
        a["functions"], 13,
        "markers, data and absolute symbols are not functions"
    );
    let cats = &a["categories"];
    let syscall = category(cats, "syscall");
    assert_eq!(
        syscall["instructions"],
        ITERATIONS * (Shape::ENTRY + Shape::DISPATCH + Shape::EXIT)
    );
    assert_eq!(syscall["reads"], ITERATIONS * Shape::DISPATCH);
    let fs = category(cats, "filesystem");
    assert_eq!(fs["instructions"], ITERATIONS * Shape::READ);
    let block = category(cats, "block-copy");
    assert_eq!(block["instructions"], ITERATIONS * Shape::COPY);
    assert_eq!(block["reads"], ITERATIONS * Shape::COPY);
    assert_eq!(block["writes"], ITERATIONS * Shape::COPY);
    assert_eq!(
        block["top_functions"][0]["name"],
        "copy_user_enhanced_fast_string"
    );
    assert_eq!(
        category(cats, "interrupt")["instructions"],
        TICKS * Shape::TICK
    );
    assert_eq!(category(cats, "scheduler")["reads"], TICKS * Shape::SCHED);
    assert_eq!(category(cats, "idle")["instructions"], TICKS * Shape::IDLE);
    assert_eq!(category(cats, "no-symbol")["references"], 0);
    let kernel: u64 = ["instructions", "reads", "writes"]
        .iter()
        .map(|k| doc["kernel"][k].as_u64().unwrap())
        .sum();
    assert_eq!(a["kernel_references"], kernel);
    let share = doc["kernel_share"]["references"].as_f64().unwrap();
    assert!(share > 0.3 && share < 0.7, "{share}");

    // The table, with functions; and an explicit System.map-style file gives the same counts.
    env.osmeter()
        .args(["trace", "info", "--functions", "1"])
        .arg(&t)
        .assert()
        .success()
        .stdout(predicate::str::contains("kernel share:"))
        .stdout(predicate::str::contains("block-copy"))
        .stdout(predicate::str::contains("copy_user_enhanced_fast"))
        .stdout(predicate::str::contains("idle"));
    let map = env.dir.path().join("System.map");
    let plain: String = KALLSYMS.replace("\t[e1000]", "");
    std::fs::write(&map, plain).unwrap();
    let other = env.json(&[
        "trace",
        "info",
        "--json",
        "--symbols",
        map.to_str().unwrap(),
        t.to_str().unwrap(),
    ]);
    assert_eq!(
        other["attribution"]["categories"],
        a["categories"]
            .clone()
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                let mut c = c.clone();
                c["top_functions"] = Value::Array(vec![]);
                c
            })
            .collect::<Value>()
    );
}

#[test]
fn trace_info_without_symbols_still_gives_the_kernel_share() {
    let env = TestEnv::new();
    let t = system_trace(env.dir.path());
    let doc = env.json(&["trace", "info", "--json", t.to_str().unwrap()]);
    assert!(doc["attribution"].is_null());
    assert!(doc["kernel_share"]["instructions"].as_f64().unwrap() > 0.0);
    env.osmeter()
        .args(["trace", "info", "--functions", "3"])
        .arg(&t)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--functions needs kernel symbols"));
}

fn memsim(env: &TestEnv, extra: &[&str], t: &Path) -> Value {
    let mut args = vec!["memsim", "--json", "--no-store"];
    args.extend_from_slice(extra);
    args.push(t.to_str().unwrap());
    env.json(&args)
}

#[test]
fn memsim_charges_every_system_stall_to_a_category_and_drops_idle() {
    let env = TestEnv::new();
    let t = with_sidecar(&env);
    let doc = memsim(&env, &[], &t);
    let a = &doc["attribution"];
    assert_eq!(a["idle_excluded"], true);
    assert_eq!(a["idle_dropped"]["instructions"], TICKS * Shape::IDLE);
    let m = &doc["machines"][0];
    let cats = &a["machines"][0]["categories"];
    assert_eq!(a["machines"][0]["non_idle_instructions"], m["instructions"]);
    // The categories' MCPI adds up to the system MCPI of the machine table, component by
    // component, and the user row is the user MCPI.
    for comp in ["icache", "dcache", "wbuffer", "tlb", "uncached", "total"] {
        let kernel: f64 = cats
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["name"] != "user")
            .map(|c| c["mcpi"][comp].as_f64().unwrap())
            .sum();
        let system = m["mcpi"]["system"][comp].as_f64().unwrap();
        assert!(
            (kernel - system).abs() < 1e-9,
            "{comp}: {kernel} vs {system}"
        );
        let user = category(cats, "user")["mcpi"][comp].as_f64().unwrap();
        assert!((user - m["mcpi"]["user"][comp].as_f64().unwrap()).abs() < 1e-12);
    }
    // The copy streams through new data: it misses, and costs more per instruction than the
    // system-call entry, which loops over a few lines.
    let block = category(cats, "block-copy");
    assert!(block["mcpi"]["dcache"].as_f64().unwrap() > 0.0);
    assert!(
        block["own_mcpi"].as_f64().unwrap()
            > category(cats, "syscall")["own_mcpi"].as_f64().unwrap()
    );
    assert_eq!(category(cats, "idle")["instructions"], 0);

    let kept = memsim(&env, &["--include-idle"], &t);
    let cats = &kept["attribution"]["machines"][0]["categories"];
    assert_eq!(category(cats, "idle")["instructions"], TICKS * Shape::IDLE);
    assert_eq!(kept["attribution"]["idle_dropped"]["instructions"], 0);
    assert_eq!(
        kept["attribution"]["machines"][0]["non_idle_instructions"], m["instructions"],
        "MCPI is per non-idle instruction either way"
    );

    let text = env
        .osmeter()
        .args(["memsim", "--no-store"])
        .arg(&t)
        .assert()
        .success();
    let out = String::from_utf8_lossy(&text.get_output().stdout).to_string();
    assert!(
        out.contains("kernel categories") && out.contains("block-copy"),
        "{out}"
    );
    assert!(out.contains("idle loop excluded"), "{out}");
}

#[test]
fn assertions_are_judged_printed_and_stored() {
    let env = TestEnv::new();
    let t = with_sidecar(&env);
    let out = env
        .osmeter()
        .args(["memsim", "--assertions"])
        .arg(&t)
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "The paper's assertions on ds5000-200",
        ))
        .stdout(predicate::str::contains("7. Virtual page mapping"));
    let err = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    let id = err
        .split_whitespace()
        .skip_while(|w| *w != "run")
        .nth(1)
        .expect("run id on stderr")
        .to_string();
    let run = env.json(&["show", &id, "--json"]);
    let doc = &run["sections"]["memsim"];
    assert_eq!(doc["schema"], "osmeter.memsim/1");
    let list = doc["assertions"]["assertions"].as_array().unwrap();
    assert_eq!(list.len(), 7);
    for a in list {
        let v = a["verdict"].as_str().unwrap();
        assert!(
            ["holds", "does not hold"].contains(&v),
            "a system trace with symbols measures every assertion: {a}"
        );
        assert!(!a["figures"].as_object().unwrap().is_empty());
    }
    // The copy routine streams through new data while everything else loops: block operations
    // are a large part of the cost.
    assert_eq!(list[4]["verdict"], "holds", "{}", list[4]);
    assert!(!doc["attribution"].is_null());
    // The trace's own physical addresses are one of the mappings compared.
    assert!(list[6]["figures"]["mcpi_traced_physical"]
        .as_f64()
        .is_some());
    assert_eq!(
        doc["machines"].as_array().unwrap().len(),
        1,
        "variants are not listed as machines"
    );
}

#[test]
fn assertions_on_a_user_only_trace_say_what_cannot_be_measured() {
    let env = TestEnv::new();
    let d = env.dir.path();
    std::fs::write(
        d.join("l.txt"),
        "I  0400000,4\n L 7ff000,8\nI  0400004,4\n S 601000,4\n",
    )
    .unwrap();
    env.osmeter()
        .args(["trace", "convert"])
        .arg(d.join("l.txt"))
        .arg(d.join("u.osmt"))
        .assert()
        .success();
    let doc = memsim(&env, &["--assertions"], &d.join("u.osmt"));
    let list = doc["assertions"]["assertions"].as_array().unwrap();
    for a in &list[..6] {
        assert_eq!(a["verdict"], "not measurable", "{a}");
    }
    assert!(list[4]["detail"].as_str().unwrap().contains("symbols"));
    assert_ne!(list[6]["verdict"], "not measurable");
    assert!(doc["attribution"].is_null());
}

#[test]
fn bad_symbol_files_fail_cleanly_and_store_nothing() {
    let env = TestEnv::new();
    let t = system_trace(env.dir.path());
    let d = env.dir.path();
    let before = entries(d);
    env.osmeter()
        .args(["memsim", "--symbols"])
        .arg(d.join("missing.map"))
        .arg(&t)
        .assert()
        .code(1)
        .stdout(predicate::str::is_empty())
        .stderr(predicate::str::contains("cannot read kernel symbols"))
        .stderr(predicate::str::contains("missing.map"));
    std::fs::write(
        d.join("garbage.map"),
        "ffffffff81000000 T ok\nthis is not a symbol\n",
    )
    .unwrap();
    for cmd in [&["memsim"][..], &["trace", "info"][..]] {
        env.osmeter()
            .args(cmd)
            .arg("--symbols")
            .arg(d.join("garbage.map"))
            .arg(&t)
            .assert()
            .code(1)
            .stdout(predicate::str::is_empty())
            .stderr(predicate::str::contains("line 2"));
    }
    std::fs::write(d.join("empty.map"), "").unwrap();
    env.osmeter()
        .args(["memsim", "--symbols"])
        .arg(d.join("empty.map"))
        .arg(&t)
        .assert()
        .code(1)
        .stderr(predicate::str::contains("empty"));
    // A broken sidecar is not silently ignored.
    std::fs::write(d.join("sys.osmt.kallsyms"), "0000000000000000 T hidden\n").unwrap();
    env.osmeter()
        .arg("memsim")
        .arg(&t)
        .assert()
        .code(1)
        .stderr(predicate::str::contains("kptr_restrict"))
        .stderr(predicate::str::contains("--symbols"));
    std::fs::remove_file(d.join("sys.osmt.kallsyms")).unwrap();
    env.osmeter()
        .args(["memsim", "--include-idle"])
        .arg(&t)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("need kernel symbols"));
    env.osmeter()
        .args(["memsim", "--include-idle", "--exclude-idle", "--symbols"])
        .arg(d.join("garbage.map"))
        .arg(&t)
        .assert()
        .code(2);
    assert!(
        !env.store().exists(),
        "nothing stored for a failed simulation"
    );
    let mut after = entries(d);
    after.retain(|e| !["missing.map", "garbage.map", "empty.map"].contains(&e.as_str()));
    let mut before = before;
    before.sort();
    after.sort();
    assert_eq!(before, after, "no scratch files left");
}

/// The HTML report of a memsim run of a full-system trace with symbols draws the MCPI by kernel
/// category (a row per category that ran) and the seven assertions from the stored document.
#[test]
fn the_report_of_a_system_trace_draws_kernel_categories_and_assertions() {
    let env = TestEnv::new();
    let t = with_sidecar(&env);
    let out = env
        .osmeter()
        .args(["memsim", "--assertions"])
        .arg(&t)
        .assert()
        .success();
    let err = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    let id = err
        .split_whitespace()
        .skip_while(|w| *w != "run")
        .nth(1)
        .expect("run id on stderr")
        .to_string();
    let report = env.dir.path().join("memsim.html");
    env.osmeter()
        .args(["report", &id, "-o"])
        .arg(&report)
        .assert()
        .success();
    let html = std::fs::read_to_string(&report).unwrap();
    assert!(html.contains("<h3>MCPI by kernel category</h3>"), "{html}");
    for row in ["block-copy", "syscall", "scheduler", "user"] {
        assert!(
            html.contains(&format!("<td>ds5000-200</td><td>{row}</td>")),
            "no {row} row in the kernel-category table"
        );
    }
    assert!(html.contains("<h3>The paper's assertions on ds5000-200</h3>"));
    assert!(html.contains("Virtual page mapping"), "assertion 7's row");
    let start = html.find("The paper's assertions on").unwrap();
    let table = &html[start..start + html[start..].find("</table>").unwrap()];
    let verdicts = table.matches("<td><b>holds</b></td>").count()
        + table.matches("<td>does not hold</td>").count();
    assert_eq!(
        verdicts, 7,
        "every assertion judged on a system trace:\n{table}"
    );
}
