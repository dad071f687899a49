//! `osmeter compare` of two latency runs with stages and a really computed pipeline: the figures
//! a run has one value of (stage percentiles, real underruns, missed share, tail percentiles) are
//! listed with both runs' own values and judged by the interval each run gives them, and a hog in
//! the second run moves them the way it must.

mod common;
#[path = "common/cpu_hog.rs"]
mod cpu_hog;

use common::{is_root, TestEnv};
use cpu_hog::{exclusive, hog, last_cpu};
use serde_json::Value;

const STREAM: &str = "normal/timer";

/// A 3 s run of the normal class on the timer path with stages and 300 us of work per period,
/// stored; returns its id and its latency document.
fn measure(env: &TestEnv, cpu: usize) -> (String, Value) {
    let run = env.json(&[
        "latency",
        "--classes",
        "normal",
        "--paths",
        "timer",
        "--stages",
        "--compute",
        "300us",
        "--duration",
        "3s",
        "--cpus",
        &cpu.to_string(),
        "--json",
    ]);
    (
        run["id"].as_str().unwrap().to_string(),
        run["sections"]["latency"].clone(),
    )
}

fn num(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("{v} is not a number"))
}

fn row<'a>(figures: &'a [Value], key: &str) -> &'a Value {
    figures.iter().find(|f| f["key"] == key).unwrap_or_else(|| {
        let keys: Vec<&Value> = figures.iter().map(|f| &f["key"]).collect();
        panic!("no row {key} in {keys:?}")
    })
}

#[test]
fn figures_of_one_value_a_run_are_compared_with_each_runs_own_values() {
    let _cpu = exclusive();
    if !is_root() {
        eprintln!("skipped: --stages needs root, and the hog SCHED_FIFO");
        return;
    }
    let env = TestEnv::new();
    let cpu = last_cpu();
    let label = format!("{STREAM} cpu{cpu}");
    let (a, doc_a) = measure(&env, cpu);
    // B: a SCHED_FIFO 80 thread holds the CPU for 40 ms, 1.5 s in: 40 periods in a row cannot be
    // produced in time at any depth.
    let h = hog(cpu, 1500, 40);
    let (b, doc_b) = measure(&env, cpu);
    h.join().unwrap();

    let out = env
        .osmeter()
        .args(["compare", &a, &b, "--json"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let cmp: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(cmp["kind"], "latency");
    let figures = cmp["figures"].as_array().unwrap();
    let stream = |doc: &Value| doc["streams"][0].clone();
    let (sa, sb) = (stream(&doc_a), stream(&doc_b));

    // Each side's value is its own run's, as the document has it.
    for (side, s) in [("value_a", &sa), ("value_b", &sb)] {
        let stages = &s["stages"]["stages"];
        for stage in ["interrupt", "handler", "thread", "to_user"] {
            for p in ["p50", "p99"] {
                let r = row(figures, &format!("{label} stage {stage} {p}"));
                assert_eq!(num(&r[side]), num(&stages[stage][format!("{p}_ns")]), "{r}");
                assert_eq!(r["direction"], "lower");
            }
        }
        for (i, depth) in s["compute"]["depths"]
            .as_array()
            .unwrap()
            .iter()
            .enumerate()
        {
            let n = depth["buffers"].as_u64().unwrap();
            // A depth that never ran dry in one of the runs has no ratio, so compare leaves it
            // out (as every figure of value 0); on a quiet machine that is the idle run's deep
            // pipelines.
            let both = [&sa, &sb]
                .iter()
                .all(|x| num(&x["compute"]["depths"][i]["real"]["p_underrun"]) > 0.0);
            let key = format!("{label} real underrun n={n} c=300us");
            if !both {
                assert!(figures.iter().all(|f| f["key"] != key.as_str()), "{key}");
                continue;
            }
            let r = row(figures, &key);
            assert_eq!(num(&r[side]), num(&depth["real"]["p_underrun"]), "{r}");
        }
        let missed = s["missed"].as_f64().unwrap() / s["periods"].as_f64().unwrap();
        // Likewise a run that missed no period at all has no missed-share row.
        let key = format!("{label} missed");
        if [&sa, &sb].iter().all(|x| num(&x["missed"]) > 0.0) {
            let r = row(figures, &key);
            assert!((r[side].as_f64().unwrap() - missed).abs() < 1e-12, "{r}");
        } else {
            assert!(figures.iter().all(|f| f["key"] != key.as_str()), "{key}");
        }
        let r = row(figures, &format!("{label} max"));
        assert_eq!(num(&r[side]), num(&s["corrected"]["max_ns"]), "{r}");
    }

    // The hog shows where it must. Stage capture traces every other second, so the hog may fall
    // in an untraced one; the pipeline and the whole wake see every period. 40 ms held: at least
    // 36 buffers in a row are late even for 4 buffers (3 ms of slack), whatever else the busy
    // machine adds.
    let max = row(figures, &format!("{label} max"));
    assert!(num(&max["value_b"]) >= 30e6, "{max}");
    let four = &sb["compute"]["depths"][2];
    assert_eq!(four["buffers"], 4);
    assert!(four["real"]["underruns"].as_u64().unwrap() >= 36, "{four}");
    assert!(four["real"]["failures"].as_u64().unwrap() >= 1, "{four}");

    // One value a side is judged by the interval each side carries: order statistics for a stage
    // percentile (never zero, so always judged), Wilson's for a share, Poisson's for an MTTF. A
    // share of zero has no ratio and stays untested, saying why.
    for p in ["p50", "p99"] {
        let r = row(figures, &format!("{label} stage thread {p}"));
        assert_ne!(r["verdict"], "untested", "{r}");
        assert_eq!(r["noise_source"], "intervals", "{r}");
        let why = r["reason"].as_str().unwrap();
        assert!(
            why.starts_with("intervals of each side (order statistics"),
            "{r}"
        );
        assert!(r["p_value"].is_number() && r["q_value"].is_number(), "{r}");
    }
    for (key, kind) in [
        (format!("{label} real underrun n=4 c=300us"), "Wilson"),
        (format!("{label} missed"), "Wilson"),
        (format!("{label} real mttf n=4 c=300us"), "Poisson"),
    ] {
        let Some(r) = figures.iter().find(|f| f["key"] == key) else {
            continue; // an MTTF only where both runs saw failures
        };
        if !(r["value_a"].is_number() && r["value_b"].is_number()) {
            continue;
        }
        let why = r["reason"].as_str().unwrap();
        if r["verdict"] == "untested" {
            assert!(why.contains("one value"), "{r}");
        } else {
            assert!(
                why.starts_with(&format!("intervals of each side ({kind}")),
                "{r}"
            );
        }
    }
    let worst = row(figures, &format!("{label} stage thread worst-per-1s"));
    assert_ne!(worst["verdict"], "untested", "{worst}");

    // The text table (`--all`: unchanged rows too, now that these are judged) shows the same
    // rows, both sides in one unit, and says what judged them.
    let text = env
        .osmeter()
        .args(["compare", &a, &b, "--all"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    let mut keys = vec![format!("{label} stage thread p99")];
    // The two-buffer pipeline has a row only when both runs ran dry at least once.
    if [&sa, &sb]
        .iter()
        .all(|x| num(&x["compute"]["depths"][0]["real"]["p_underrun"]) > 0.0)
    {
        keys.push(format!("{label} real underrun n=2 c=300us"));
    }
    for key in keys {
        assert!(text.contains(&key), "{key} missing:\n{text}");
    }
    assert!(
        text.contains("why: intervals of each side (order statistics"),
        "{text}"
    );
}
