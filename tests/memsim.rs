//! End-to-end tests of `osmeter trace` and `osmeter memsim`, good input and bad.

mod common;

use common::{entries, interrupt_after, which, TestEnv};
use predicates::prelude::*;
use serde_json::Value;
use std::path::Path;

fn synth(env: &TestEnv, name: &str, refs: u64) -> std::path::PathBuf {
    let p = env.dir.path().join(name);
    env.osmeter()
        .args([
            "trace",
            "synth",
            "--refs",
            &refs.to_string(),
            "--seed",
            "3",
            "-o",
        ])
        .arg(&p)
        .assert()
        .success();
    p
}

fn info(env: &TestEnv, p: &Path) -> Value {
    let out = env
        .osmeter()
        .args(["trace", "info", "--json"])
        .arg(p)
        .assert()
        .success();
    serde_json::from_slice(&out.get_output().stdout).unwrap()
}

#[test]
fn synth_info_and_simulate_a_preset_sweep() {
    let env = TestEnv::new();
    let t = synth(&env, "s.osmt", 50_000);
    let i = info(&env, &t);
    assert_eq!(i["references"], 50_000);
    let sum: u64 = ["user", "kernel"]
        .iter()
        .flat_map(|m| ["instructions", "reads", "writes"].map(|k| i[m][k].as_u64().unwrap()))
        .sum();
    assert_eq!(sum, 50_000);
    assert!(i["kernel"]["instructions"].as_u64().unwrap() > 0);

    let out = env
        .osmeter()
        .args([
            "memsim",
            "--json",
            "--no-store",
            "--preset",
            "paper",
            "--preset",
            "x86-modern",
        ])
        .arg(&t)
        .assert()
        .success();
    let doc: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(doc["schema"], "osmeter.memsim/1");
    assert_eq!(doc["references"], 50_000);
    let names: Vec<&str> = doc["machines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "ds5000-200",
            "ds5000-200-2way",
            "ds5000-200-random",
            "ds5000-200-unified",
            "x86-modern"
        ]
    );
    assert!(
        doc["machines"][0]["mcpi"]["system"]["icache"]
            .as_f64()
            .unwrap()
            > 0.0
    );
}

#[test]
fn sweep16_is_sixteen_geometries_in_one_pass() {
    let env = TestEnv::new();
    let t = synth(&env, "s.osmt", 60_000);
    let doc = env.json(&[
        "memsim",
        "--json",
        "--no-store",
        "--no-3c",
        "--preset",
        "sweep16",
        t.to_str().unwrap(),
    ]);
    assert_eq!(doc["references"], 60_000);
    let machines = doc["machines"].as_array().unwrap();
    assert_eq!(machines.len(), 16);
    let misses = |name: &str| -> u64 {
        let m = machines.iter().find(|m| m["name"] == name).expect(name);
        ["user", "system"]
            .iter()
            .map(|side| m[side]["caches"]["l1i"]["misses"].as_u64().unwrap())
            .sum()
    };
    // Along the diagonal the instruction caches have the same 1024 sets of 16-byte lines and
    // only gain ways: an LRU set holding more ways never misses more.
    let diagonal = [
        "ds5000-200-16K-dm",
        "ds5000-200-32K-2way",
        "ds5000-200-64K-4way",
        "ds5000-200-128K-8way",
    ]
    .map(misses);
    assert!(diagonal.windows(2).all(|w| w[0] >= w[1]), "{diagonal:?}");
    assert!(
        diagonal[0] > diagonal[3],
        "the trace does conflict in 16 KB: {diagonal:?}"
    );
}

#[test]
fn write_merging_is_a_preset_and_a_config_field() {
    let env = TestEnv::new();
    let t = synth(&env, "s.osmt", 60_000);
    let doc = env.json(&[
        "memsim",
        "--json",
        "--no-store",
        "--no-3c",
        "--preset",
        "ds5000-200",
        "--preset",
        "ds5000-200-merge",
        t.to_str().unwrap(),
    ]);
    let wb = |i: usize, field: &str| -> u64 {
        ["user", "system"]
            .iter()
            .map(|side| {
                doc["machines"][i][side]["write_buffer"][field]
                    .as_u64()
                    .unwrap()
            })
            .sum()
    };
    assert_eq!(wb(0, "merged"), 0, "the ds5000-200 does not merge");
    assert!(
        wb(1, "merged") > 0,
        "sequential stores merge into waiting entries"
    );
    assert_eq!(
        wb(0, "writes"),
        wb(1, "writes"),
        "the same writes reach the buffer"
    );

    // In a config file: the field, and a width that is not a power of two refused.
    let mut cfg = doc["machines"][1]["config"].clone();
    assert_eq!(cfg["write_buffer"]["merge_bytes"], 16);
    cfg["write_buffer"]["merge_bytes"] = 12.into();
    let path = env.dir.path().join("m.json");
    std::fs::write(&path, cfg.to_string()).unwrap();
    env.osmeter()
        .args(["memsim", "--no-store", "--config"])
        .arg(&path)
        .arg(&t)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("merge width 12"));
}

#[test]
fn memsim_table_is_stored_as_a_run_section() {
    let env = TestEnv::new();
    let t = synth(&env, "s.osmt", 20_000);
    let out = env
        .osmeter()
        .args(["memsim", "--l1d", "32K:8:64", "--tlb", "64:full:4K"])
        .arg(&t)
        .assert()
        .success()
        .stdout(predicate::str::contains("MCPI"))
        .stdout(predicate::str::contains("l1d=32K:8:64"));
    let err = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    let id = err
        .split_whitespace()
        .skip_while(|w| *w != "run")
        .nth(1)
        .expect("run id on stderr")
        .to_string();
    let out = env
        .osmeter()
        .args(["show", &id, "--json"])
        .assert()
        .success();
    let run: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(run["sections"]["memsim"]["schema"], "osmeter.memsim/1");
    assert_eq!(run["measurements"].as_array().unwrap().len(), 0);
}

#[test]
fn convert_lackey_din_zstd_and_stdin_agree() {
    let env = TestEnv::new();
    let d = env.dir.path();
    std::fs::write(
        d.join("l.txt"),
        "==1== Lackey\nI  0400000,4\n L 7ff000,8\n S 601000,4\n M 601008,4\nI  0400004,4\n",
    )
    .unwrap();
    std::fs::write(
        d.join("d.din"),
        "2 400000\n0 7ff000 8\n1 601000\n0 601008\n1 601008\n2 400004\n",
    )
    .unwrap();
    for (src, out) in [("l.txt", "l.osmt.zst"), ("d.din", "d.osmt")] {
        env.osmeter()
            .args(["trace", "convert"])
            .arg(d.join(src))
            .arg(d.join(out))
            .assert()
            .success();
    }
    let a = info(&env, &d.join("l.osmt.zst"));
    let b = info(&env, &d.join("d.osmt"));
    assert_eq!(a["references"], 6);
    assert_eq!(a["user"], b["user"]);
    assert_eq!(
        a["user_only"], true,
        "lackey traces carry the user-only flag"
    );
    let compressed = std::fs::read(d.join("l.osmt.zst")).unwrap();
    assert_eq!(&compressed[..4], &[0x28, 0xb5, 0x2f, 0xfd]);

    let out = env
        .osmeter()
        .args(["memsim", "-", "--json", "--no-store"])
        .pipe_stdin(d.join("d.osmt"))
        .unwrap()
        .assert()
        .success();
    let doc: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(doc["references"], 6);
}

#[test]
fn corrupt_and_truncated_traces_fail_cleanly_and_store_nothing() {
    let env = TestEnv::new();
    let t = synth(&env, "s.osmt", 10_000);
    let bytes = std::fs::read(&t).unwrap();
    let cut = env.dir.path().join("cut.osmt");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    env.osmeter()
        .arg("memsim")
        .arg(&cut)
        .assert()
        .code(1)
        .stdout(predicate::str::is_empty())
        .stderr(predicate::str::contains("truncated"))
        .stderr(predicate::str::contains("byte"));
    let mut bad = bytes.clone();
    bad[4] = 7;
    let badv = env.dir.path().join("v.osmt");
    std::fs::write(&badv, &bad).unwrap();
    env.osmeter()
        .arg("memsim")
        .arg(&badv)
        .assert()
        .code(1)
        .stderr(predicate::str::contains("version 7"));
    assert!(
        !env.store().exists(),
        "nothing stored for a failed simulation"
    );
}

#[test]
fn hostile_access_sizes_are_refused_at_their_record_not_simulated() {
    let env = TestEnv::new();
    let d = tempfile::tempdir().unwrap();
    // Four records declaring 4 GiB accesses each: a 58-byte file that used to hang memsim.
    let mut bytes = b"OSMT\x01\0\0\0".to_vec();
    for _ in 0..4 {
        bytes.extend([0x01, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x80, 0x80, 0x80, 0x01]);
    }
    bytes.extend([0x03, 0x04, 0x00]);
    let huge = d.path().join("huge.osmt");
    std::fs::write(&huge, &bytes).unwrap();
    let lackey = d.path().join("huge.lackey");
    std::fs::write(
        &lackey,
        "I  0400000,4\n L 7ff0000,999999999\n S 7ff0000,999999999\n",
    )
    .unwrap();
    for (trace, place) in [(&huge, "byte 8"), (&lackey, "line 2")] {
        env.osmeter()
            .args(["memsim", "--preset", "ds5000-200", "--l1d", "64K:1:4"])
            .arg(trace)
            .timeout(std::time::Duration::from_secs(60))
            .assert()
            .code(1)
            .stdout(predicate::str::is_empty())
            .stderr(predicate::str::contains(place))
            .stderr(predicate::str::contains(
                "no instruction touches more than 16384",
            ));
    }
    assert!(!env.store().exists(), "nothing stored");
}

/// Largest resident set of the children this test process has waited for, in bytes.
fn children_max_rss() -> u64 {
    // SAFETY: getrusage fills the zeroed struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut u) };
    u.ru_maxrss as u64 * 1024
}

#[test]
fn absurd_sizes_are_usage_errors_naming_the_option_before_anything_is_allocated() {
    let env = TestEnv::new();
    let t = synth(&env, "s.osmt", 20_000);
    let refuse = |args: &[&str], names: &[&str]| {
        let mut a = env.osmeter();
        a.arg("memsim").args(args).arg(&t);
        let mut assert = a
            .timeout(std::time::Duration::from_secs(60))
            .assert()
            .code(2)
            .stdout(predicate::str::is_empty());
        for n in names {
            assert = assert.stderr(predicate::str::contains(*n));
        }
    };
    // These ended in "memory allocation failed" (SIGABRT).
    refuse(
        &["--l1d", "1024G:8:64"],
        &[
            "--l1d 1024G:8:64",
            "of memory but",
            "is available",
            "--no-3c",
        ],
    );
    refuse(
        &["--l1d", "1024G:8:64", "--no-3c"],
        &["--l1d 1024G:8:64", "make it smaller"],
    );
    // The ds5000-200's TLB replaces at random, searching every way; x86-modern's is LRU.
    refuse(
        &["--tlb", "4294967295:full:4K"],
        &["--tlb", "4294967287 ways with random replacement"],
    );
    refuse(
        &["--preset", "x86-modern", "--tlb", "4294967295:full:4K"],
        &["--tlb 4294967295:full:4K", "a TLB of 4294967295 entries"],
    );
    let d = tempfile::tempdir().unwrap();
    let huge = d.path().join("huge.json");
    std::fs::write(
        &huge,
        r#"{"name":"huge","l1d":{"size":1099511627776,"assoc":4,"line":64},"lower":[{"size":1099511627776,"assoc":8,"line":64}],"memory_cycles":100,"mapping":{"policy":"identity"},"page_size":4096}"#,
    )
    .unwrap();
    refuse(
        &["--config", huge.to_str().unwrap()],
        &["machine config", "huge.json", "1 TiB cache"],
    );
    let deep = d.path().join("deep.json");
    std::fs::write(
        &deep,
        r#"{"name":"deep","l1d":{"size":32768,"assoc":4,"line":64,"write_back":false},"write_buffer":{"depth":4294967295,"page_cycles":1,"other_cycles":5,"page_size":4096},"memory_cycles":100,"mapping":{"policy":"identity"},"page_size":4096}"#,
    )
    .unwrap();
    refuse(
        &["--config", deep.to_str().unwrap()],
        &[
            "deep.json",
            "write_buffer (a write buffer of depth 4294967295)",
        ],
    );
    // Searching a million ways one by one, or fetching a million lines a miss, would never end.
    let fifo = d.path().join("fifo.json");
    std::fs::write(
        &fifo,
        r#"{"name":"fifo","l1d":{"size":67108864,"assoc":0,"line":64,"replacement":"fifo"},"memory_cycles":100,"mapping":{"policy":"identity"},"page_size":4096}"#,
    )
    .unwrap();
    refuse(
        &["--config", fifo.to_str().unwrap()],
        &["fifo.json", "1048576 ways with FIFO"],
    );
    let fetch = d.path().join("fetch.json");
    std::fs::write(
        &fetch,
        r#"{"name":"fetch","l1d":{"size":1073741824,"assoc":1,"line":4,"fetch":1073741824},"memory_cycles":100,"mapping":{"policy":"identity"},"page_size":4096}"#,
    )
    .unwrap();
    refuse(
        &["--config", fetch.to_str().unwrap()],
        &["fetch.json", "at most 1024 lines"],
    );
    assert!(!env.store().exists(), "nothing stored");

    // 64 GiB direct-mapped of 64-byte lines is 9 GiB of tags at worst: it either fits in what
    // this machine has (and then takes only what the small trace fills: it used to take 8.5 GB
    // first) or is refused. With 3C its shadow alone would need 68 GiB more.
    let out = env
        .osmeter()
        .args(["memsim", "--no-store", "--no-3c", "--l1d", "64G:1:64"])
        .arg(&t)
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    match out.status.code() {
        Some(0) => {
            let rss = children_max_rss();
            assert!(rss < 1 << 30, "64G:1:64 took {} MiB", rss >> 20);
        }
        Some(2) => assert!(
            err.contains("--l1d 64G:1:64") && err.contains("is available"),
            "{err}"
        ),
        other => panic!("exit {other:?}: {err}"),
    }
}

#[test]
fn curves_and_intervals_come_with_the_machines_in_one_pass() {
    let env = TestEnv::new();
    let t = synth(&env, "s.osmt", 60_000);
    let d = tempfile::tempdir().unwrap();
    // Virtually addressed, like the curve on a trace without physical addresses.
    let cfg = d.path().join("v.json");
    std::fs::write(
        &cfg,
        r#"{"name":"v","l1i":{"size":65536,"assoc":1,"line":16,"physical":false},"l1d":{"size":4096,"assoc":2,"line":16,"physical":false},"memory_cycles":20,"mapping":{"policy":"identity"},"page_size":4096}"#,
    )
    .unwrap();
    let out = env
        .osmeter()
        .args([
            "memsim",
            "--json",
            "--no-3c",
            "--curve",
            "l1d:1K-64K:2:16",
            "--curve",
            "unified:4K-16K:full:64",
            "--interval",
            "25000",
            "--preset",
            "pentium",
            "--config",
        ])
        .arg(&cfg)
        .arg(&t)
        .assert()
        .success();
    let doc: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let curves = doc["curves"].as_array().unwrap();
    assert_eq!(curves.len(), 2);
    let points = curves[0]["points"].as_array().unwrap();
    assert_eq!(points.len(), 7, "1K to 64K");
    assert_eq!(points[2]["size"], 4096);
    // The machine's 4K 2-way data cache is the curve's 4K point, user and kernel apart.
    let machine = &doc["machines"][1];
    for (mode, side) in [("user", "user"), ("system", "kernel")] {
        assert_eq!(
            curves[0][side][2]["misses"], machine[mode]["caches"]["l1d"]["misses"],
            "{mode}"
        );
    }
    let total = points[2]["misses"].as_u64().unwrap();
    let rate = points[2]["miss_rate"].as_f64().unwrap();
    assert!(total > 0 && rate > 0.0 && rate < 1.0);
    assert!(points
        .windows(2)
        .all(|w| w[1]["misses"].as_u64() <= w[0]["misses"].as_u64()));
    assert_eq!(curves[1]["assoc"], 0);
    // Intervals: every machine, 60000 references in 25000s.
    let intervals = doc["intervals"].as_array().unwrap();
    assert_eq!(intervals.len(), 2);
    let iv = intervals[1]["intervals"].as_array().unwrap();
    assert_eq!(iv.len(), 3);
    assert_eq!(iv[2]["first"], 50000);
    assert_eq!(iv[2]["references"], 10000);
    let instr: u64 = iv.iter().map(|p| p["instructions"].as_u64().unwrap()).sum();
    assert_eq!(instr, machine["instructions"].as_u64().unwrap());

    // The table says the same; with kernel symbols the attributed pass computes them too.
    let syms = d.path().join("s.kallsyms");
    std::fs::write(
        &syms,
        "ffffffff81000000 T do_syscall_64\nffffffff81100000 T schedule\n",
    )
    .unwrap();
    env.osmeter()
        .args([
            "memsim",
            "--no-store",
            "--no-3c",
            "--curve",
            "l1i:1K-4K:1:16",
            "--interval",
            "30000",
            "--symbols",
        ])
        .arg(&syms)
        .arg(&t)
        .assert()
        .success()
        .stdout(predicate::str::contains("miss-ratio curve l1i:1K-4K:1:16"))
        .stdout(predicate::str::contains(
            "ds5000-200: every 30000 references",
        ));

    for (args, why) in [
        (vec!["--curve", "l1d:8K-1M:8"], "CACHE:MIN-MAX:ASSOC:LINE"),
        (vec!["--curve", "l3:8K-1M:8:64"], "not l1i, l1d or unified"),
        (vec!["--interval", "10"], "1000"),
        (vec!["--curve", "l1d:64K-1T:8:64"], "not a size"),
    ] {
        env.osmeter()
            .arg("memsim")
            .args(&args)
            .arg(&t)
            .assert()
            .code(2)
            .stderr(predicate::str::contains(why));
    }
}

#[test]
fn export_to_champsim_and_drmemtrace_and_read_drmemtrace_back() {
    let env = TestEnv::new();
    let t = synth(&env, "s.osmt", 50_000);
    let d = tempfile::tempdir().unwrap();
    let drm = d.path().join("s.drmem");
    env.osmeter()
        .args(["trace", "convert", "--to", "drmemtrace"])
        .arg(&t)
        .arg(&drm)
        .assert()
        .success()
        .stderr(predicate::str::contains("50000 references"))
        .stderr(predicate::str::contains("kernel sections"));
    // Read back, detected by its header entry: the same references, user and kernel.
    let back = d.path().join("back.osmt");
    env.osmeter()
        .args(["trace", "convert"])
        .arg(&drm)
        .arg(&back)
        .assert()
        .success();
    let (a, b) = (info(&env, &t), info(&env, &back));
    assert_eq!(a["references"], b["references"]);
    assert_eq!(a["user"], b["user"]);
    assert_eq!(a["kernel"], b["kernel"]);
    // memsim reads it directly, with the same results.
    let sim = |p: &Path| {
        let out = env
            .osmeter()
            .args(["memsim", "--json", "--no-store", "--preset", "pentium"])
            .arg(p)
            .assert()
            .success();
        let doc: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
        doc["machines"].clone()
    };
    assert_eq!(sim(&t), sim(&drm));

    let cs = d.path().join("s.champsim");
    env.osmeter()
        .args(["trace", "convert", "--to", "champsim"])
        .arg(&t)
        .arg(&cs)
        .assert()
        .success()
        .stderr(predicate::str::contains("instructions"));
    let bytes = std::fs::read(&cs).unwrap();
    let instr =
        a["user"]["instructions"].as_u64().unwrap() + a["kernel"]["instructions"].as_u64().unwrap();
    assert_eq!(
        bytes.len() as u64,
        64 * instr,
        "one 64-byte record per instruction"
    );

    env.osmeter()
        .args(["trace", "convert", "--to", "pin"])
        .arg(&t)
        .arg(d.path().join("x"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("champsim"));
    let mut bad = std::fs::read(&drm).unwrap();
    bad.truncate(bad.len() - 12);
    std::fs::write(d.path().join("cut.drmem"), &bad).unwrap();
    env.osmeter()
        .args(["memsim", "--no-store"])
        .arg(d.path().join("cut.drmem"))
        .assert()
        .code(1)
        .stderr(predicate::str::contains("without its footer"));
}

#[test]
fn bad_presets_geometry_and_lackey_lines() {
    let env = TestEnv::new();
    let t = synth(&env, "s.osmt", 1000);
    env.osmeter()
        .args(["memsim", "--preset", "vax-780"])
        .arg(&t)
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "invalid value 'vax-780' for '--preset",
        ))
        .stderr(predicate::str::contains("ds5000-200"))
        .stderr(predicate::str::contains("sweep16"));
    env.osmeter()
        .args(["memsim", "--l1d", "33000:8:64"])
        .arg(&t)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("not a multiple"));
    env.osmeter()
        .args(["memsim", "--tlb", "64:full"])
        .arg(&t)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("three fields"));

    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("g.txt"), "I  0400000,4\nthis is not lackey\n").unwrap();
    env.osmeter()
        .args(["trace", "convert"])
        .arg(d.path().join("g.txt"))
        .arg(d.path().join("out.osmt"))
        .assert()
        .code(1)
        .stderr(predicate::str::contains("line 2"));
    assert_eq!(entries(d.path()), ["g.txt"], "no partial output file");
    assert!(!env.store().exists());
}

#[test]
fn capture_through_valgrind_is_user_only() {
    if which("valgrind").is_none() {
        eprintln!("skipped: valgrind not installed");
        return;
    }
    let env = TestEnv::new();
    let t = env.dir.path().join("true.osmt");
    env.osmeter()
        .args(["trace", "-o"])
        .arg(&t)
        .args(["--", "true"])
        .assert()
        .success()
        .stderr(predicate::str::contains("user mode only"));
    let i = info(&env, &t);
    assert!(i["user"]["instructions"].as_u64().unwrap() > 10_000);
    assert_eq!(i["kernel"]["instructions"], 0);
    assert_eq!(i["user_only"], true);
    env.osmeter()
        .args(["trace", "-o"])
        .arg(env.dir.path().join("x.osmt"))
        .args(["--", "no-such-command-osmeter"])
        .assert()
        .code(2);
    assert!(!env.dir.path().join("x.osmt").exists());
}

/// Ctrl-C during a capture: valgrind is stopped, the references read so far are kept in a
/// complete trace marked incomplete, nothing else is left behind, and the exit code is 130.
/// Two commands: one busy (the pipe full of references when the signal comes) and one asleep
/// (osmeter blocked reading a quiet pipe).
#[test]
fn capture_cut_short_by_ctrl_c_keeps_a_trace_marked_incomplete() {
    if which("valgrind").is_none() {
        eprintln!("skipped: valgrind not installed");
        return;
    }
    let busy: &[&str] = &["sh", "-c", "while :; do :; done"];
    let asleep: &[&str] = &["sleep", "60"];
    for command in [busy, asleep] {
        let env = TestEnv::new();
        let dir = env.dir.path().join("traces");
        std::fs::create_dir(&dir).unwrap();
        let t = dir.join("cut.osmt");
        let mut cmd = env.osmeter_std();
        cmd.args(["trace", "-o"]).arg(&t).arg("--").args(command);
        let (out, stopping) = interrupt_after(&mut cmd, std::time::Duration::from_secs(3), || {
            assert!(!t.exists(), "no trace under its name before it is complete");
        });
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(130), "{command:?}: {err}");
        assert!(err.contains("interrupted"), "{err}");
        assert!(
            stopping < std::time::Duration::from_secs(20),
            "{command:?} took {stopping:?} to stop"
        );
        assert_eq!(entries(&dir), ["cut.osmt"], "no scratch files left");
        let i = info(&env, &t);
        assert_eq!(i["incomplete"], true, "{command:?}");
        assert_eq!(i["user_only"], true);
        assert!(
            i["user"]["instructions"].as_u64().unwrap() > 1000,
            "{command:?}: valgrind ran the start-up at least: {i}"
        );
        // The whole file decodes, trailer included, and simulates.
        env.osmeter()
            .args(["memsim", "--no-store", "--no-3c"])
            .arg(&t)
            .assert()
            .success()
            .stdout(predicate::str::contains("MCPI"));
    }
}

#[test]
fn drmemtrace_run_directory_is_read_as_one_trace() {
    let env = TestEnv::new();
    let a = synth(&env, "a.osmt", 3000);
    let b = synth(&env, "b.osmt", 5000);
    // A run directory as drmemtrace lays it out, one thread gzip-compressed (written through the
    // .gz name) and one plain; `a` is exported first, so its timestamp is the earlier although
    // its name sorts last.
    let run = env.dir.path().join("drmemtrace.app.1234.0000.dir");
    let trace = run.join("trace");
    std::fs::create_dir_all(&trace).unwrap();
    std::fs::create_dir_all(run.join("raw")).unwrap();
    for (src, name) in [
        (&a, "drmemtrace.app.1234.5678.trace.gz"),
        (&b, "drmemtrace.app.1234.1111.trace"),
    ] {
        env.osmeter()
            .args(["trace", "convert", "--to", "drmemtrace"])
            .arg(src)
            .arg(trace.join(name))
            .assert()
            .success();
    }
    let gz = std::fs::read(trace.join("drmemtrace.app.1234.5678.trace.gz")).unwrap();
    assert_eq!(gz[..2], [0x1f, 0x8b], "gzip by the name");

    let (ia, ib) = (info(&env, &a), info(&env, &b));
    let dir_info = info(&env, &run);
    assert_eq!(dir_info["references"], 8000);
    for side in ["user", "kernel"] {
        let sum =
            ia[side]["instructions"].as_u64().unwrap() + ib[side]["instructions"].as_u64().unwrap();
        assert_eq!(dir_info[side]["instructions"], sum, "{side}");
    }
    assert_eq!(info(&env, &trace)["references"], 8000, "trace/ itself");

    // memsim with a config file reads the directory as the trace it converts to.
    let cfg_doc = env.json(&[
        "memsim",
        "--json",
        "--no-store",
        "--preset",
        "pentium",
        a.to_str().unwrap(),
    ]);
    let cfg = env.dir.path().join("pentium.json");
    std::fs::write(&cfg, cfg_doc["machines"][0]["config"].to_string()).unwrap();
    let merged = env.dir.path().join("merged.osmt");
    env.osmeter()
        .args(["trace", "convert"])
        .arg(&run)
        .arg(&merged)
        .assert()
        .success()
        .stderr(predicate::str::contains("converted 8000 references"));
    let sim = |p: &Path| {
        let out = env
            .osmeter()
            .args(["memsim", "--json", "--no-store", "--config"])
            .arg(&cfg)
            .arg(p)
            .assert()
            .success();
        let doc: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
        doc["machines"].clone()
    };
    let (from_dir, from_file) = (sim(&run), sim(&merged));
    assert_eq!(from_dir, from_file);
    assert_eq!(from_dir.as_array().unwrap().len(), 1);

    // A directory without thread files says so, naming it.
    let empty = env.dir.path().join("empty.dir");
    std::fs::create_dir(&empty).unwrap();
    env.osmeter()
        .args(["trace", "info"])
        .arg(&empty)
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "empty.dir holds no drmemtrace thread files",
        ));
}

/// `trace convert` names its output with `-o`, as every other command does; the second argument
/// of earlier releases still works, and giving both, or neither, is a usage error.
#[test]
fn trace_convert_takes_its_output_with_dash_o() {
    let env = TestEnv::new();
    let t = synth(&env, "s.osmt", 1_000);
    let out = env.dir.path().join("o.osmt");
    env.osmeter()
        .args(["trace", "convert"])
        .arg(&t)
        .arg("-o")
        .arg(&out)
        .assert()
        .success();
    assert_eq!(info(&env, &out)["references"], 1_000);
    let old = env.dir.path().join("positional.osmt");
    env.osmeter()
        .args(["trace", "convert"])
        .arg(&t)
        .arg(&old)
        .assert()
        .success();
    assert!(old.exists());
    env.osmeter()
        .args(["trace", "convert"])
        .arg(&t)
        .arg(&old)
        .arg("-o")
        .arg(&out)
        .assert()
        .code(2);
    env.osmeter()
        .args(["trace", "convert"])
        .arg(&t)
        .assert()
        .code(2)
        .stderr(predicates::str::contains("--output"));
}
