//! `osmeter paper`: the list of papers, a paper measured now, its JSON, a stored run reused, and the
//! requests it must refuse.

mod common;

use common::{which, TestEnv, FAST};
use predicates::prelude::*;
use serde_json::Value;

/// `osmeter paper ousterhout89 --table T` measured now with short samples, as JSON.
fn measured(env: &TestEnv, table: &str) -> Value {
    let mut args = vec![
        "paper",
        "ousterhout89",
        "--table",
        table,
        "--json",
        "--quick",
    ];
    args.extend_from_slice(FAST);
    env.json(&args)
}

fn cells<'a>(doc: &'a Value, table: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
    doc["cells"]
        .as_array()
        .unwrap()
        .iter()
        .filter(move |c| c["table"] == table)
}

#[test]
fn the_papers_are_listed() {
    let env = TestEnv::new();
    env.osmeter()
        .arg("paper")
        .assert()
        .success()
        .stdout(predicate::str::contains("ousterhout89"))
        .stdout(predicate::str::contains("chen96"))
        .stdout(predicate::str::contains("chen-bershad93"))
        .stdout(predicate::str::contains("cota-robles99"))
        .stdout(predicate::str::contains("syscall.null"));
    let list = env.json(&["paper", "--json"]);
    let list = list.as_array().unwrap();
    assert_eq!(list.len(), 4);
    for l in list {
        assert!(l["values"].as_u64().unwrap() > 20, "{l}");
        assert!(l["tables"].as_u64().unwrap() >= 8, "{l}");
    }
}

#[test]
fn a_table_is_measured_and_laid_out_as_the_paper_did() {
    let env = TestEnv::new();
    let mut args = vec!["paper", "ousterhout89", "--table", "2", "--quick"];
    args.extend_from_slice(FAST);
    let out = env.osmeter().args(&args).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    // The paper's rows in the paper's order, today's row, and the speed-ups.
    let m2000 = text.find("M2000 RISC/os 4.0").unwrap();
    let mvax = text.find("MVAX2 Ultrix 3.0").unwrap();
    let today = text.find("this machine").unwrap();
    assert!(m2000 < mvax && mvax < today, "{text}");
    assert!(
        text.contains("speed-up to this machine") && text.contains("÷CPU"),
        "{text}"
    );
    assert!(text.contains("MIPS"), "{text}");
    // Only that table's probes were measured, and the run was kept with the paper as its suite.
    let runs = env.json(&["runs", "--json"]);
    let runs = runs.as_array().unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["suite"], "ousterhout89");
    let run = env.json(&["show", runs[0]["id"].as_str().unwrap(), "--json"]);
    let probes: Vec<&str> = run["measurements"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["probe"].as_str().unwrap())
        .collect();
    assert_eq!(probes, vec!["cpu.reference", "syscall.null"]);
}

#[test]
fn json_has_one_object_per_pair_of_values() {
    let env = TestEnv::new();
    let doc = measured(&env, "4");
    assert_eq!(doc["schema"], "osmeter.paper/1");
    assert_eq!(doc["paper"], "ousterhout89");
    let mips = doc["cpu"]["mips"].as_f64().expect("a MIPS figure");
    assert!(mips > 1.0, "{mips}");
    // Nine machines x three measured columns, plus the recomputed MIPS-relative column.
    let measured: Vec<&Value> = cells(&doc, "4")
        .filter(|c| c["column"] != "mips_relative")
        .collect();
    assert_eq!(measured.len(), 27);
    for c in &measured {
        let paper = c["paper_value"]["value"].as_f64().unwrap();
        let now = c["now_value"].as_f64().expect("measured today");
        assert_eq!(c["unit"], "us");
        assert!(c["machine_mips"].as_f64().unwrap() > 0.0);
        let speedup = c["speedup"].as_f64().unwrap();
        assert!((speedup - paper / now).abs() < 1e-6 * speedup, "{c}");
        let cpu = c["cpu_speedup"].as_f64().unwrap();
        assert!((cpu - mips / c["machine_mips"].as_f64().unwrap()).abs() < 1e-6 * cpu);
        let rel = c["speedup_relative_to_cpu"].as_f64().unwrap();
        assert!(
            (rel - speedup / cpu).abs() < 1e-9 * rel.abs().max(1.0),
            "{c}"
        );
        assert!(c["now_figure"]
            .as_str()
            .unwrap()
            .starts_with("select.select fds="));
    }
    let full = cells(&doc, "4")
        .find(|c| c["column"] == "10_full" && c["row"] == "DS3100 Ultrix 3.1")
        .unwrap();
    assert_eq!(full["paper_value"]["value"], 151.0);
    assert_eq!(full["now_figure"], "select.select fds=10 ready=true");
    let rel = cells(&doc, "4")
        .find(|c| c["column"] == "mips_relative")
        .unwrap();
    assert!(rel["now_value"].as_f64().unwrap() > 0.0, "{rel}");
    assert!(rel["speedup"].is_null(), "a ratio has no speed-up");
    assert_eq!(doc["relative_to_cpu"].as_array().unwrap().len(), 3);
}

#[test]
fn a_stored_run_is_reused() {
    let env = TestEnv::new();
    let first = measured(&env, "2");
    let id = first["runs"][0].as_str().unwrap().to_string();
    let again = env.json(&["paper", "ousterhout89", "--run", &id[..10], "--json"]);
    assert_eq!(again["runs"][0], id.as_str());
    // The same figures, now beside every table that run can fill (table 2 only) ...
    let pick = |d: &Value| -> Vec<f64> {
        cells(d, "2")
            .filter_map(|c| c["now_value"].as_f64())
            .collect()
    };
    // (The store keeps figures to the last bit or so, not beyond.)
    let same = |a: &[f64], b: &[f64]| {
        a.len() == b.len()
            && a.iter()
                .zip(b)
                .all(|(x, y)| (x - y).abs() <= 1e-12 * x.abs())
    };
    assert!(same(&pick(&first), &pick(&again)));
    let mips = |d: &Value| d["cpu"]["mips"].as_f64().unwrap();
    assert!(same(&[mips(&first)], &[mips(&again)]));
    assert_eq!(first["cpu"]["run"], again["cpu"]["run"]);
    // ... and the others marked as not in the run.
    let select = cells(&again, "4").next().unwrap();
    assert!(select["now_value"].is_null());
    assert!(select["missing"]
        .as_str()
        .unwrap()
        .contains("select.select fds=1 ready=false is not in the run"));
    // Nothing new was measured or stored.
    assert_eq!(env.json(&["runs", "--json"]).as_array().unwrap().len(), 1);
    let out = env
        .osmeter()
        .args(["paper", "ousterhout89", "--run", &id])
        .output()
        .unwrap();
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("select.select fds=1 ready=false is not in the given runs"),
        "{stderr}"
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("no figure today"));
}

#[test]
fn an_unknown_paper_is_a_usage_error_with_a_suggestion() {
    let env = TestEnv::new();
    env.osmeter()
        .args(["paper", "ousterhout"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("ousterhout89"))
        .stderr(predicate::str::contains("similar"));
    env.osmeter()
        .args(["paper", "ousterhout89", "--table", "11"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no table \"11\""))
        .stderr(predicate::str::contains("1, 2, 3"));
    env.osmeter()
        .args(["paper", "ousterhout89", "--run", "nosuchrun"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no run \"nosuchrun\""));
    env.osmeter()
        .args(["paper", "ousterhout89", "--run", "x", "--quick"])
        .assert()
        .code(2);
    env.osmeter()
        .args(["paper", "ousterhout89", "--table", "2", "--fifo", "0"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--fifo 0"));
    // Nothing was measured or stored by any of them.
    assert!(!env.store().exists() || env.json(&["runs", "--json"]).as_array().unwrap().is_empty());
}

#[test]
fn a_run_without_the_papers_figures_is_refused_clearly() {
    let env = TestEnv::new();
    let id = env.run_id(&["syscall.dup"]);
    env.osmeter()
        .args(["paper", "ousterhout89", "--run", &id])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "none of the figures Ousterhout 1989 compares",
        ))
        .stderr(predicate::str::contains("syscall.null"))
        .stderr(predicate::str::contains("osmeter paper ousterhout89"));
    // Papers whose today's side is not a run say where it comes from.
    env.osmeter()
        .args(["paper", "cota-robles99", "--run", &id])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("osmeter latency"));
}

#[test]
fn papers_without_probes_print_their_tables() {
    let env = TestEnv::new();
    env.osmeter()
        .args(["paper", "chen-bershad93", "--table", "2-1"])
        .assert()
        .success()
        .stdout(predicate::str::contains("Table 2-1."))
        .stdout(predicate::str::contains("instruction cache line"))
        .stdout(predicate::str::contains("osmeter memsim"));
    // Table 1 (the applications' buffering) sets nothing of today's beside it: nothing is
    // measured for it.
    let doc = env.json(&["paper", "cota-robles99", "--table", "1", "--json"]);
    assert!(doc["runs"].as_array().unwrap().is_empty());
    assert!(doc["elsewhere"]
        .as_str()
        .unwrap()
        .contains("osmeter latency"));
    assert!(!env.store().exists() || env.json(&["runs", "--json"]).as_array().unwrap().is_empty());
}

/// The reference mix's instructions are counted by callgrind inside the region it names and
/// nowhere else, with no C library routine in it (those are chosen per CPU and would count
/// differently under valgrind than natively), and the count is cached per build.
#[test]
fn the_cpu_reference_is_calibrated_by_callgrind() {
    if which("valgrind").is_none() {
        eprintln!("skipped: valgrind not installed");
        return;
    }
    let env = TestEnv::new();
    let cache = env.dir.path().join("cache");
    let run = |env: &TestEnv| {
        let mut c = env.osmeter();
        c.env("OSMETER_CACHE", &cache)
            .args(["run", "cpu.reference", "--json", "--no-store"])
            .args(FAST);
        let out = c.output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    };
    let doc = run(&env);
    let m = &doc["measurements"][0];
    assert_eq!(m["status"], "ok", "{m}");
    assert_eq!(m["params"]["instructions"], 1000);
    let cached: Value =
        serde_json::from_slice(&std::fs::read(cache.join("cpu-mix.json")).unwrap()).unwrap();
    let entry = &cached[0];
    assert_eq!(entry["calibration"]["method"], "callgrind");
    let per_pass = entry["calibration"]["instructions_per_pass"]
        .as_f64()
        .unwrap();
    assert!((1e4..1e7).contains(&per_pass), "{per_pass}");
    // A second run reuses the count.
    let modified = std::fs::metadata(cache.join("cpu-mix.json"))
        .unwrap()
        .modified()
        .unwrap();
    run(&env);
    assert_eq!(
        std::fs::metadata(cache.join("cpu-mix.json"))
            .unwrap()
            .modified()
            .unwrap(),
        modified
    );

    let profile = env.dir.path().join("callgrind.out");
    let status = std::process::Command::new("valgrind")
        .arg("--tool=callgrind")
        .arg(format!("--callgrind-out-file={}", profile.display()))
        .args([
            "--collect-atstart=no",
            "--toggle-collect=*cpu_mix_count_region*",
        ])
        .arg(assert_cmd::cargo::cargo_bin("osmeter"))
        .args(["cpu-mix", "--cycles", "1"])
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    let text = std::fs::read_to_string(&profile).unwrap();
    let total: f64 = text
        .lines()
        .find_map(|l| l.strip_prefix("totals:"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // A release build inlines every copy; a debug build calls memcpy and memset for a few small
    // moves per pass, whose CPU-specific variants must stay a negligible part of the count.
    let in_libc = libc_cost(&text);
    assert!(
        in_libc < 1e-3 * total,
        "{in_libc} of {total} instructions in C library routines"
    );
    // One cycle of the 64 variants against the cached two-cycle average.
    assert!(
        (total / 64.0 - per_pass).abs() < 1e-6 * per_pass,
        "{total} vs {per_pass}"
    );
}

/// Instructions a callgrind profile charges to the C library's copy and compare routines (their own
/// cost lines; the line after `calls=` is the inclusive cost of a call and is skipped).
fn libc_cost(profile: &str) -> f64 {
    const ROUTINES: [&str; 6] = ["memcpy", "memmove", "memset", "memcmp", "bcmp", "strlen"];
    let mut inside = false;
    let mut after_call = false;
    let mut sum = 0.0;
    for l in profile.lines() {
        if let Some(name) = l.strip_prefix("fn=") {
            inside = ROUTINES.iter().any(|r| name.contains(r));
            continue;
        }
        if l.starts_with("calls=") {
            after_call = true;
            continue;
        }
        let skip = std::mem::take(&mut after_call);
        let first = l.chars().next();
        if inside && !skip && matches!(first, Some('0'..='9' | '+' | '-' | '*')) {
            sum += l
                .split_whitespace()
                .nth(1)
                .and_then(|c| c.parse::<f64>().ok())
                .unwrap_or(0.0);
        }
    }
    sum
}

/// The id of the only run in the test's store.
fn only_run(env: &TestEnv) -> String {
    let runs = env.json(&["runs", "--json"]);
    assert_eq!(runs.as_array().unwrap().len(), 1, "{runs}");
    runs[0]["id"].as_str().unwrap().to_string()
}

#[test]
fn chen_bershad_is_set_beside_a_memsim_run() {
    let env = TestEnv::new();
    let trace = env.dir.path().join("t.osmt");
    let trace = trace.to_str().unwrap();
    env.osmeter()
        .args(["trace", "synth", "-o", trace, "--refs", "200000"])
        .assert()
        .success();
    env.osmeter()
        .args(["memsim", trace, "--preset", "ds5000-200", "--assertions"])
        .assert()
        .success();
    let id = only_run(&env);
    let stored = env.json(&["show", &id, "--json"]);
    let memsim = &stored["sections"]["memsim"];
    let machine = memsim["machines"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "ds5000-200")
        .unwrap();

    let doc = env.json(&["paper", "chen-bershad93", "--run", &id, "--json"]);
    assert!(doc["today_source"].as_str().unwrap().contains(trace));
    let cell = |table: &str, row: &str, column: &str| -> Value {
        doc["cells"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["table"] == table && c["row"] == row && c["column"] == column)
            .unwrap_or_else(|| panic!("no pair {table} {row} {column}"))
            .clone()
    };
    let system = cell("2-4", "Ultrix system", "icache");
    assert_eq!(system["now_label"], "this trace, system");
    assert_eq!(system["paper_value"]["value"], 0.43);
    assert_eq!(system["now_value"], machine["own_mcpi"]["system"]["icache"]);
    assert_eq!(
        cell("4-6", "gcc", "u_user")["now_value"],
        machine["own_mcpi"]["user"]["wbuffer"]
    );
    let share = cell("2-3", "sed", "instr_u_sys")["now_value"]
        .as_f64()
        .unwrap();
    assert!((share - 100.0 * machine["system_fraction"].as_f64().unwrap()).abs() < 1e-9);
    // Mach's columns stay the paper's alone; block operations need kernel symbols.
    assert!(doc["cells"]
        .as_array()
        .unwrap()
        .iter()
        .all(|c| c["column"] != "i_m_sys"));
    assert!(cell("4-4", "sed", "u_mcpi")["missing"].is_string());
    // Table 4-3: the trace's TLB references and misses per mode, beside every workload's row.
    let tlb = |mode: &str, what: &str| machine[mode]["tlb"][what].as_f64().unwrap();
    let refs = cell("4-3", "gcc", "refs_user")["now_value"]
        .as_f64()
        .unwrap();
    assert!((refs - tlb("user", "refs") / 1e3).abs() < 1e-9, "{refs}");
    assert!(refs > 0.0);
    let ktlb = cell("4-3", "sed", "ktlb_u")["now_value"].as_f64().unwrap();
    assert_eq!(ktlb, tlb("system", "misses"));
    assert_eq!(
        cell("4-3", "sed", "utlb_mcpi_u")["now_value"],
        machine["mcpi"]["user"]["tlb"]
    );
    // The assertions: the paper's verdict and memsim's on this trace.
    let judged = memsim["assertions"]["assertions"].as_array().unwrap();
    let pairs = doc["assertions"].as_array().unwrap();
    assert_eq!(pairs.len(), 7);
    for (p, j) in pairs.iter().zip(judged) {
        assert_eq!(p["number"], j["number"]);
        assert_eq!(p["today"], j["verdict"]);
    }
    assert_eq!(pairs[2]["paper"], "does_not_hold");
    env.osmeter()
        .args(["paper", "chen-bershad93", "--run", &id])
        .assert()
        .success()
        .stdout(predicate::str::contains("this trace, system"))
        .stdout(predicate::str::contains("The seven assertions"));
    // A microbenchmark run is not what this paper is set beside.
    let other = env.run_id(&["syscall.null"]);
    env.osmeter()
        .args(["paper", "chen-bershad93", "--run", &other])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("holds no memsim document"))
        .stderr(predicate::str::contains("osmeter trace --system"));
}

#[test]
fn cota_robles_is_set_beside_a_latency_run() {
    if !common::is_root() {
        eprintln!("skipped: SCHED_FIFO threads need root here");
        return;
    }
    let env = TestEnv::new();
    // Twelve seconds give the ten complete one-second windows the worst-case fit needs.
    env.osmeter()
        .args([
            "latency",
            "--duration",
            "12s",
            "--classes",
            "high",
            "--paths",
            "timer",
        ])
        .assert()
        .success();
    let id = only_run(&env);
    let stored = env.json(&["show", &id, "--json"]);
    let fit = &stored["sections"]["latency"]["streams"][0]["estimate"]["fit"];
    assert_eq!(fit["window"], "1s", "{fit}");
    let (location, scale) = (
        fit["location_ns"].as_f64().unwrap(),
        fit["scale_ns"].as_f64().unwrap(),
    );
    let doc = env.json(&["paper", "cota-robles99", "--run", &id, "--json"]);
    let cells = doc["cells"].as_array().unwrap();
    for (suffix, label, horizon) in [
        ("_hour", "this machine, hour", 3600.0f64),
        ("_week", "this machine, week", 7.0 * 86_400.0),
    ] {
        let c = cells
            .iter()
            .find(|c| {
                c["row"] == "interrupt to high-priority RT thread"
                    && c["column"].as_str().unwrap().ends_with(suffix)
            })
            .unwrap();
        assert_eq!(c["now_label"], label);
        let expected_ms = (location + scale * horizon.ln() - scale * 2f64.ln().ln()) / 1e6;
        let now = c["now_value"].as_f64().unwrap();
        assert!(
            (now - expected_ms).abs() < 1e-9 * expected_ms.abs().max(1.0),
            "{now} vs {expected_ms}"
        );
        let paper = c["paper_value"]["value"].as_f64().unwrap();
        assert!((c["speedup"].as_f64().unwrap() - paper / now).abs() < 1e-9 * paper / now);
    }
    // The MTTF table: the buffer model over the same fit, once per window of width 1 s that
    // exceeds the buffering (1 - G(x)), and the buffering that gives an hour between underruns.
    let value = |row: &str| -> f64 {
        cells
            .iter()
            .find(|c| c["table"] == "mttf" && c["row"] == row)
            .unwrap_or_else(|| panic!("no mttf {row}"))["now_value"]
            .as_f64()
            .unwrap_or_else(|| panic!("no value for {row}: {doc}"))
    };
    let exceed = |x_ns: f64| -(-(-(x_ns - location) / scale).exp()).exp_m1();
    let mttf12 = value("DPC datapump, 3D game, 12 ms of buffering: time between underruns");
    assert!(
        (mttf12 - 1.0 / exceed(12e6)).abs() < 1e-6 * mttf12,
        "{mttf12}"
    );
    let hour_ms = value("thread datapump, 3D game: buffering for an hour between underruns");
    assert!(
        (exceed(hour_ms * 1e6) * 3600.0 - 1.0).abs() < 1e-6,
        "{hour_ms}"
    );
    // The medium class was not measured: its rows say so.
    let medium = cells
        .iter()
        .find(|c| c["row"] == "interrupt to medium-priority RT thread")
        .unwrap();
    assert!(medium["missing"]
        .as_str()
        .unwrap()
        .contains("measured no medium class"));
}

/// app.andrew at the paper's size (ten sources) on the kernel's ext4 and on fuse2fs: needs root to
/// mount the images, gcc and fuse2fs.
fn andrew_or_skip() -> bool {
    let missing: Vec<&str> = ["gcc", "fuse2fs", "mkfs.ext4"]
        .into_iter()
        .filter(|p| which(p).is_none())
        .collect();
    if !common::is_root() || !missing.is_empty() {
        eprintln!(
            "skipped: Table 7 mounts ext4 images (root) and compiles with gcc under fuse2fs; \
             root: {}, missing: {missing:?}",
            common::is_root()
        );
        return false;
    }
    true
}

const ANDREW_EXT4: &str = "this machine, ext4 in the kernel";
const ANDREW_FUSE: &str = "this machine, the same ext4 through fuse2fs";

/// Table 7 measured now, end to end: the copy is the four phases before the compile added up, on
/// both file systems; Table 8's MIPS-relative comes from today's ext4 total alone and its penalty
/// from FUSE's total over ext4's; no mount, fuse2fs or scratch file is left.
#[test]
fn table_7_measures_andrew_on_ext4_and_fuse() {
    if !andrew_or_skip() {
        return;
    }
    let env = TestEnv::new();
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path().to_string_lossy().into_owned();
    let mut args = vec![
        "paper",
        "ousterhout89",
        "--table",
        "7",
        "--json",
        "--quick",
        "--dir",
        &dir,
    ];
    args.extend(common::one_round("1ms"));
    let doc = env.json(&args);
    let cell = |table: &str, column: &str, label: &str| -> Value {
        cells(&doc, table)
            .find(|c| c["column"] == column && c["now_label"] == label)
            .unwrap_or_else(|| panic!("no {table} {column} {label} in {doc}"))
            .clone()
    };
    for label in [ANDREW_EXT4, ANDREW_FUSE] {
        let copy = cell("7", "copy", label);
        assert!(copy["now_value"].as_f64().unwrap() > 0.0, "{copy}");
        let figure = copy["now_figure"].as_str().unwrap();
        for phase in ["mkdir", "copy", "stat", "read"] {
            assert!(figure.contains(&format!("phase={phase}")), "{figure}");
        }
        assert!(cell("7", "compile", label)["speedup_relative_to_cpu"].is_f64());
        assert!(cell("7", "total", label)["now_value"].as_f64().unwrap() > 0.0);
    }
    let local: Vec<&Value> = cells(&doc, "8")
        .filter(|c| c["column"] == "mips_relative_local")
        .collect();
    assert!(!local.is_empty());
    assert!(
        local.iter().all(|c| c["now_label"] == ANDREW_EXT4),
        "{local:?}"
    );
    let (ext4, fuse) = (
        cell("7", "total", ANDREW_EXT4)["now_value"]
            .as_f64()
            .unwrap(),
        cell("7", "total", ANDREW_FUSE)["now_value"]
            .as_f64()
            .unwrap(),
    );
    let penalty = cell("8", "remote_penalty", ANDREW_FUSE)["now_value"]
        .as_f64()
        .unwrap();
    assert!(
        (penalty - (fuse / ext4 - 1.0) * 100.0).abs() < 1e-6,
        "{penalty}"
    );
    // Applications are summarised but not counted in the OS mean, as in compare.
    let summary = doc["relative_to_cpu"].as_array().unwrap();
    let andrew: Vec<&Value> = summary.iter().filter(|s| s["table"] == "7").collect();
    assert_eq!(andrew.len(), 3, "{summary:?}");
    assert!(andrew.iter().all(|s| s["role"] == "other"));
    assert!(
        doc["os_relative_to_cpu"].is_null(),
        "{}",
        doc["os_relative_to_cpu"]
    );
    common::apps::assert_nothing_left(scratch.path());
}

/// Ctrl-C while app.andrew compiles under the paper's Table 7: the run stops in time and leaves no
/// mount, fuse2fs or scratch file behind.
#[test]
fn ctrl_c_stops_the_andrew_table_in_time() {
    if !andrew_or_skip() {
        return;
    }
    let env = TestEnv::new();
    let dir = tempfile::tempdir().unwrap();
    let (out, took) = common::interrupt_after(
        env.osmeter_std()
            .args(["paper", "ousterhout89", "--table", "7", "--dir"])
            .arg(dir.path()),
        std::time::Duration::from_secs(6),
        || {},
    );
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(took < std::time::Duration::from_secs(20), "{took:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("Table 7."));
    common::apps::assert_nothing_left(dir.path());
}

/// Ctrl-C while measuring: what was measured is shown beside the paper and kept, nothing is left in
/// the scratch directory, exit 130.
#[test]
fn ctrl_c_shows_and_keeps_what_was_measured() {
    let env = TestEnv::new();
    let dir = tempfile::tempdir().unwrap();
    let (out, took) = common::interrupt_after(
        env.osmeter_std()
            .args([
                "paper",
                "ousterhout89",
                "--repeat",
                "50",
                "--min-time",
                "50ms",
                "--dir",
            ])
            .arg(dir.path()),
        std::time::Duration::from_millis(2500),
        || {},
    );
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(took < std::time::Duration::from_secs(10), "{took:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("Table 2.") && text.contains("no figure today"),
        "{text}"
    );
    assert!(common::entries(dir.path()).is_empty());
    let runs = env.json(&["runs", "--json"]);
    let run = env.json(&["show", runs[0]["id"].as_str().unwrap(), "--json"]);
    assert_eq!(run["interrupted"], true);
}

#[test]
fn run_show_and_compare_print_the_cpu_relative_figures() {
    let env = TestEnv::new();
    // --wide: the per-primitive rows whole on one line each (tests/width.rs checks their blocks).
    let mut args = vec![
        "run",
        "syscall.null",
        "memory.copy",
        "cpu.reference",
        "--wide",
    ];
    args.extend_from_slice(FAST);
    let (text, a) = env.saved(&args);
    // Prose wraps at the terminal's width wherever its numbers put the line ends: phrases are
    // looked for in the words.
    let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
    // Ousterhout's getpid against the CPU; memcpy shown as hardware and kept out of the OS mean.
    assert!(
        words.contains("Relative to the CPU since Ousterhout 1989"),
        "{text}"
    );
    assert!(words.contains("MIPS on osmeter's integer mix"), "{text}");
    let getpid = text
        .lines()
        .find(|l| l.trim_start().starts_with("getpid "))
        .unwrap_or_else(|| panic!("no getpid row in {text}"));
    assert!(
        getpid.contains("syscall.null") && getpid.contains("of 9"),
        "{getpid}"
    );
    assert!(words.contains("bcopy cached (hardware)"), "{text}");
    assert!(
        words.contains("OS primitives relative to the CPU, geometric mean of 1:")
            && words.contains("left out as not OS primitives: bcopy cached (hardware)"),
        "{text}"
    );
    // `show` prints the same derived figures from the stored run.
    let shown = env.osmeter().args(["show", &a, "--wide"]).output().unwrap();
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(shown.contains(getpid.trim_end()), "{shown}");
    // `compare` sets each figure's speed-up against the CPU reference's.
    let (text_b, b) = env.saved(&args);
    let words_b = text_b.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        words_b.contains("Relative to the CPU since Ousterhout 1989")
            && !words_b.contains("no CPU-relative figures"),
        "{text_b}"
    );
    let out = env
        .osmeter()
        // --wide: one row per figure, its name and values on one line, whatever their width.
        .args(["compare", &a, &b, "--all", "--force", "--wide"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let cmp = String::from_utf8_lossy(&out.stdout);
    assert!(cmp.contains("÷CPU"), "{cmp}");
    let null_row = cmp
        .lines()
        .find(|l| l.starts_with("syscall.null"))
        .unwrap_or_else(|| panic!("{cmp}"));
    let reference_row = cmp
        .lines()
        .find(|l| l.starts_with("cpu.reference"))
        .unwrap_or_else(|| panic!("{cmp}"));
    // The figure's own ÷CPU is a number; the reference's is not defined.
    let cols = |l: &str| l.split_whitespace().map(str::to_string).collect::<Vec<_>>();
    assert!(
        cols(null_row)
            .iter()
            .rev()
            .nth(1)
            .unwrap()
            .parse::<f64>()
            .is_ok(),
        "{null_row}"
    );
    assert_eq!(
        cols(reference_row).iter().rev().nth(1).unwrap(),
        "-",
        "{reference_row}"
    );
    // Without the reference there is nothing to set the primitives against: a run that did not
    // select it ends with its own table, not a block about a paper it cannot be set beside.
    let mut args = vec!["run", "syscall.null", "--no-store"];
    args.extend_from_slice(FAST);
    let out = env.osmeter().args(&args).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        !text.contains("Relative to the CPU since") && !text.contains("CPU-relative"),
        "{text}"
    );
}

/// The cells of Table 3's worst cases and of the MTTF rows: each has today's value or says why not.
fn latency_cells(doc: &Value) -> Vec<&Value> {
    let cells: Vec<&Value> = doc["cells"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["table"] == "3" || c["table"] == "mttf")
        .collect();
    // Four streams times four workloads times three horizons, and three MTTF rows.
    assert_eq!(cells.len(), 51, "{doc}");
    cells
}

/// Without --run the paper measures its own latency run: both SCHED_FIFO classes on the timer and
/// futex paths, kept as a latency run under the paper's name. Three seconds are too few for the
/// worst-case fit, which every cell says.
#[test]
fn cota_robles_measures_and_keeps_its_latency_run() {
    if !common::is_root() {
        eprintln!("skipped: SCHED_FIFO threads need root here");
        return;
    }
    let env = TestEnv::new();
    let out = env
        .osmeter()
        .args(["paper", "cota-robles99", "--duration", "3s", "--json"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("whole one-second windows"), "{stderr}");
    assert!(stderr.contains("(latency) saved to"), "{stderr}");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let id = doc["runs"][0].as_str().unwrap().to_string();
    let source = doc["today_source"].as_str().unwrap();
    assert!(
        source.contains("latency, 3 s") && source.contains("cpu, memory, faults"),
        "{source}"
    );
    for c in latency_cells(&doc) {
        let why = c["missing"].as_str().unwrap_or_else(|| panic!("{c}"));
        assert!(why.contains("the fit needs at least 10"), "{c}");
    }
    let runs = env.json(&["runs", "--json"]);
    let runs = runs.as_array().unwrap();
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0]["id"], id.as_str());
    assert_eq!(runs[0]["kind"], "latency");
    let stored = env.json(&["show", &id, "--json"]);
    assert_eq!(stored["suite"], "cota-robles99");
    let streams: Vec<String> = stored["sections"]["latency"]["streams"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            format!(
                "{}/{}",
                s["class"].as_str().unwrap(),
                s["path"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        streams,
        ["high/timer", "high/futex", "medium/timer", "medium/futex"],
        "{streams:?}"
    );
    // The stored run is set beside the paper again with --run.
    let again = env.json(&["paper", "cota-robles99", "--run", &id, "--json"]);
    assert_eq!(again["runs"][0], id.as_str());
    // The latency flags belong to latency papers only, and the probes' sampling flags to
    // papers measured by probes.
    env.osmeter()
        .args(["paper", "ousterhout89", "--duration", "3s"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("apply only to papers"));
    env.osmeter()
        .args(["paper", "cota-robles99", "--quick", "--repeat", "3"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "--quick, --repeat set how probes are sampled",
        ))
        .stderr(predicate::str::contains("--duration, --load"));
}

/// Without SCHED_FIFO (nobody, no CAP_SYS_NICE) the run measures the normal class instead, as
/// `osmeter latency` does, and every cell of the real-time classes gives the reason.
#[test]
fn cota_robles_without_real_time_classes_says_why() {
    let Some(mut nobody) = common::osmeter_as_nobody() else {
        eprintln!("skipped: needs root and setpriv to run as another user");
        return;
    };
    let out = nobody
        .args([
            "paper",
            "cota-robles99",
            "--duration",
            "2s",
            "--load",
            "none",
            "--dir",
            "/tmp",
            "--no-store",
            "--json",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("the high class was not measured") && stderr.contains("CAP_SYS_NICE"),
        "{stderr}"
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    for c in latency_cells(&doc) {
        let why = c["missing"].as_str().unwrap_or_else(|| panic!("{c}"));
        assert!(
            why.contains("the class could not run") && why.contains("CAP_SYS_NICE"),
            "{c}"
        );
    }
}

/// Without --run Chen and Bershad's tables get a full-system trace of a guest workload (QEMU TCG,
/// about ten seconds) simulated on the DECstation 5000/200 preset with the assertions judged,
/// kept as a memsim run under the paper's name; the guest's output stays off stdout.
#[test]
fn chen_bershad_traces_and_simulates_its_own_run() {
    if which("qemu-system-x86_64").is_none() || which("busybox").is_none() {
        eprintln!("skipped: needs qemu-system-x86_64 and busybox (`--install` brings them)");
        return;
    }
    let env = TestEnv::new();
    let out = env
        .osmeter()
        .args(["paper", "chen-bershad93", "--table", "4-1", "--json"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("(memsim) saved to"), "{stderr}");
    let doc: Value = serde_json::from_slice(&out.stdout).expect("stdout is only the JSON");
    let id = doc["runs"][0].as_str().unwrap().to_string();
    assert!(
        doc["today_source"]
            .as_str()
            .unwrap()
            .contains("workload grep"),
        "{}",
        doc["today_source"]
    );
    let cells: Vec<&Value> = cells(&doc, "4-1").collect();
    assert!(!cells.is_empty());
    for c in cells.iter().filter(|c| c["now_label"].is_string()) {
        assert!(c["now_value"].is_number(), "{c}");
    }
    assert_eq!(doc["assertions"].as_array().unwrap().len(), 7, "{doc}");
    let runs = env.json(&["runs", "--json"]);
    assert_eq!(runs[0]["id"], id.as_str());
    assert_eq!(runs[0]["kind"], "memsim");
    assert_eq!(
        env.json(&["show", &id, "--json"])["suite"],
        "chen-bershad93"
    );
    // A workload the guest does not have is refused before anything boots.
    env.osmeter()
        .args(["paper", "chen-bershad93", "--workload", "nope"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("grep"));
    env.osmeter()
        .args(["paper", "cota-robles99", "--workload", "grep"])
        .assert()
        .code(2);
}

/// Ctrl-C during the paper's latency run stops it, shows the tables from what was measured, keeps
/// the run marked interrupted and exits 130, as `osmeter latency` does.
#[test]
fn ctrl_c_stops_the_latency_run_and_keeps_it() {
    let env = TestEnv::new();
    let (out, took) = common::interrupt_after(
        env.osmeter_std().args([
            "paper",
            "cota-robles99",
            "--duration",
            "60s",
            "--load",
            "none",
        ]),
        std::time::Duration::from_millis(2000),
        || {},
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(took < std::time::Duration::from_secs(5), "{took:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("Table 3.") && text.contains("no figure today"),
        "{text}"
    );
    let runs = env.json(&["runs", "--json"]);
    let run = env.json(&["show", runs[0]["id"].as_str().unwrap(), "--json"]);
    assert_eq!(run["interrupted"], true);
    assert_eq!(runs[0]["kind"], "latency");
}
