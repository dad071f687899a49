//! The fleet store at scale: 200 hosts x 50 runs (10,000 runs, each with the quick suite's
//! figures, copied from one real quick-suite run) in SQLite and in a throwaway PostgreSQL, then the
//! questions a fleet owner asks, each timed through the osmeter binary as a user runs it:
//! `runs --since`, `history FIGURE`, `compare --tag-a/--tag-b` and `fleet`, with the query plans
//! of the store's statements; then fifty `osmeter push` processes of twenty runs each at once,
//! checked to land every run exactly once.
//!
//! `cargo bench --bench fleet_scale` (needs PostgreSQL's server binaries, as the tests do). The
//! template run is measured first (the quick suite, about a minute) unless
//! OSMETER_FLEET_TEMPLATE names a stored run document (`osmeter show RUN --json`). Figures are
//! printed, not asserted: the target is each query within 1 s on the machine at hand.

#[path = "../tests/common/fleet_gen.rs"]
mod fleet_gen;
#[path = "../tests/common/pg.rs"]
mod pg;

use osmeter::results::model::Run;
use osmeter::results::store::sqlite::SqliteStore;
use osmeter::results::store::{postgres as pg_store, schema, sqlite, Store};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const HOSTS: usize = 200;
const RUNS_PER_HOST: usize = 50;
const PUSHERS: usize = 50;
const RUNS_PER_PUSHER: usize = 20;
const REPEATS: usize = 5;
const TARGET: Duration = Duration::from_secs(1);

fn osmeter() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_osmeter"));
    c.env_remove("OSMETER_STORE");
    c
}

fn template(dir: &Path) -> Run {
    if let Some(path) = std::env::var_os("OSMETER_FLEET_TEMPLATE") {
        let text = std::fs::read_to_string(&path).expect("reading OSMETER_FLEET_TEMPLATE");
        return serde_json::from_str(&text).expect("OSMETER_FLEET_TEMPLATE holds a run document");
    }
    eprintln!("measuring the template run (the quick suite)...");
    let out = osmeter()
        .args(["run", "--json", "--store"])
        .arg(dir.join("template.db"))
        .stderr(Stdio::inherit())
        .output()
        .unwrap();
    assert!(out.status.success(), "the quick suite failed");
    serde_json::from_slice(&out.stdout).expect("a run document")
}

/// Runs `args` against `store` REPEATS times; returns the median and the slowest wall time.
fn timed(store: &str, args: &[&str]) -> (Duration, Duration) {
    let mut times: Vec<Duration> = (0..REPEATS)
        .map(|_| {
            let t0 = Instant::now();
            let out = osmeter()
                .args(args)
                .args(["--store", store])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .output()
                .unwrap();
            let took = t0.elapsed();
            assert!(
                out.status.success() || out.status.code() == Some(4),
                "osmeter {args:?} --store {store}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            took
        })
        .collect();
    times.sort();
    (times[REPEATS / 2], times[REPEATS - 1])
}

fn sqlite_plans(path: &Path, figure: &str) {
    let conn = rusqlite::Connection::open(path).unwrap();
    let statements = [
        (
            "runs --since",
            "SELECT r.id FROM runs r WHERE r.placed_at >= '2026-10-12' ORDER BY r.placed_at DESC, r.id DESC",
        ),
        (
            "runs --host (history --host)",
            "SELECT r.id FROM runs r WHERE r.host = 'fleet-049' ORDER BY r.placed_at DESC, r.id DESC",
        ),
        (
            "--tag wave=50",
            "SELECT r.id FROM runs r WHERE EXISTS (SELECT 1 FROM run_tags t WHERE t.run_id = r.id \
             AND t.key = 'wave' AND t.value = '50') ORDER BY r.placed_at DESC, r.id DESC",
        ),
        (
            "figure values",
            &format!("SELECT run_id, value FROM figures WHERE key = '{figure}'"),
        ),
        ("figure keys", "SELECT DISTINCT key FROM figures"),
        (
            "a run's document",
            "SELECT document FROM documents WHERE run_id = 'x'",
        ),
        (
            "values of the listed runs (fleet)",
            &schema::figures_of_runs_statement(&sqlite::DIALECT),
        ),
        (
            "documents of a set (compare)",
            &schema::documents_statement(&sqlite::DIALECT),
        ),
    ];
    for (what, sql) in statements {
        let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
        // The statements of a set of runs take the set (a JSON array) as their one argument.
        let set = vec!["[\"x\"]"; stmt.parameter_count()];
        let plan: Vec<String> = stmt
            .query_map(rusqlite::params_from_iter(set), |r| r.get::<_, String>(3))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        println!("  sqlite   {what:<30} {}", plan.join(" / "));
    }
}

fn postgres_plans(db: &str, figure: &str) {
    let mut c = pg::cluster().admin(db).unwrap();
    c.batch_execute("ANALYZE").unwrap();
    let statements = [
        (
            "runs --since",
            "SELECT r.id FROM runs r WHERE r.placed_at COLLATE \"C\" >= '2026-10-12' \
             ORDER BY r.placed_at COLLATE \"C\" DESC, r.id COLLATE \"C\" DESC"
                .to_string(),
        ),
        (
            "runs --host (history --host)",
            "SELECT r.id FROM runs r WHERE r.host = 'fleet-049' \
             ORDER BY r.placed_at COLLATE \"C\" DESC, r.id COLLATE \"C\" DESC"
                .to_string(),
        ),
        (
            "--tag wave=50",
            "SELECT r.id FROM runs r WHERE EXISTS (SELECT 1 FROM run_tags t WHERE t.run_id = r.id \
             AND t.key = 'wave' AND t.value = '50')"
                .to_string(),
        ),
        (
            "figure values",
            format!("SELECT run_id, value FROM figures WHERE key = '{figure}'"),
        ),
        (
            "a run's document",
            "SELECT document FROM documents WHERE run_id = 'x'".to_string(),
        ),
    ];
    for (what, sql) in statements {
        let plan: Vec<String> = c
            .query(&format!("EXPLAIN (COSTS OFF) {sql}"), &[])
            .unwrap()
            .iter()
            .map(|r| r.get::<_, String>(0).trim().to_string())
            .collect();
        println!("  postgres {what:<30} {}", plan.join(" / "));
    }
    // The statements that read a set of runs, with the sets a fleet's view and `compare --tag-a
    // wave=49 --tag-b wave=50` ask for.
    let mut ids = |sql: &str| -> Vec<String> {
        c.query(sql, &[])
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect()
    };
    let all = ids("SELECT id FROM runs");
    let tagged = ids("SELECT run_id FROM run_tags WHERE key = 'wave' AND value IN ('49', '50')");
    let sets = [
        (
            "values of the listed runs (fleet)",
            schema::figures_of_runs_statement(&pg_store::DIALECT),
            all,
        ),
        (
            "documents of a set (compare)",
            schema::documents_statement(&pg_store::DIALECT),
            tagged,
        ),
    ];
    for (what, sql, ids) in sets {
        // The plan spells the set out: its first ids are enough.
        let shown = |line: String| match line.char_indices().nth(100) {
            Some((cut, _)) => format!("{}...", &line[..cut]),
            None => line,
        };
        let plan: Vec<String> = c
            .query(&format!("EXPLAIN (COSTS OFF) {sql}"), &[&ids])
            .unwrap()
            .iter()
            .map(|r| shown(r.get::<_, String>(0).trim().to_string()))
            .collect();
        println!("  postgres {what:<30} {}", plan.join(" / "));
    }
}

fn fifty_pushes(dir: &Path, template: &Run) {
    let url = pg::fresh_database();
    let stores: Vec<PathBuf> = (0..PUSHERS)
        .map(|p| {
            let path = dir.join(format!("pusher-{p}.db"));
            let mut store = SqliteStore::open(&path).unwrap();
            for k in 0..RUNS_PER_PUSHER {
                store
                    .save(&fleet_gen::fleet_run(template, HOSTS + p, k))
                    .unwrap();
            }
            path
        })
        .collect();
    let t0 = Instant::now();
    let children: Vec<_> = stores
        .iter()
        .map(|s| {
            osmeter()
                .args(["push", "--all", "--store"])
                .arg(s)
                .args(["--to", &url])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let failed = children
        .into_iter()
        .map(|c| c.wait_with_output().unwrap())
        .filter(|o| !o.status.success())
        .count();
    let took = t0.elapsed();
    let db = url.rsplit('/').next().unwrap();
    let mut c = pg::cluster().admin(db).unwrap();
    let row = c
        .query_one("SELECT count(*), count(DISTINCT id) FROM runs", &[])
        .unwrap();
    let (rows, distinct): (i64, i64) = (row.get(0), row.get(1));
    let want = (PUSHERS * RUNS_PER_PUSHER) as i64;
    println!(
        "\n{PUSHERS} concurrent pushes of {RUNS_PER_PUSHER} runs: {:.2} s wall, {failed} failed, \
         {rows} rows for {distinct} distinct runs (want {want}): {}",
        took.as_secs_f64(),
        if failed == 0 && rows == want && distinct == want {
            "every run exactly once"
        } else {
            "NOT exactly once"
        }
    );
}

fn main() {
    // `cargo bench` passes --bench; nothing else is taken.
    let dir = tempfile::tempdir().unwrap();
    let template = template(dir.path());
    let figure = template
        .figures()
        .into_iter()
        .map(|f| f.key)
        .find(|k| k.starts_with("syscall."))
        .expect("the template states a syscall figure");
    let sqlite = dir.path().join("fleet.db");
    let t0 = Instant::now();
    {
        let mut store = SqliteStore::open(&sqlite).unwrap();
        for run in fleet_gen::fleet_runs(&template, HOSTS, RUNS_PER_HOST) {
            store.save(&run).unwrap();
        }
    }
    println!(
        "generated {} runs ({HOSTS} hosts x {RUNS_PER_HOST}, {} figures each, document {} KiB) \
         into SQLite in {:.1} s",
        HOSTS * RUNS_PER_HOST,
        template.figures().len(),
        serde_json::to_string(&template).unwrap().len() / 1024,
        t0.elapsed().as_secs_f64()
    );
    let url = pg::fresh_database();
    let t0 = Instant::now();
    let out = osmeter()
        .args(["push", "--all", "--store"])
        .arg(&sqlite)
        .args(["--to", &url])
        .stdout(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    println!(
        "pushed them into PostgreSQL with one `osmeter push --all` in {:.1} s",
        t0.elapsed().as_secs_f64()
    );
    // A store that has just taken ten thousand runs is vacuumed and analysed by the server in
    // the background, for seconds: done first, so that the queries are timed against the store
    // as it stands between pushes, not against the server's own clean-up.
    let t0 = Instant::now();
    pg::cluster()
        .admin(url.rsplit('/').next().unwrap())
        .unwrap()
        .batch_execute("VACUUM ANALYZE")
        .unwrap();
    println!(
        "vacuumed and analysed it (as its server's autovacuum would) in {:.1} s",
        t0.elapsed().as_secs_f64()
    );
    let slow = fleet_gen::slow_hosts(HOSTS);
    let queries: Vec<(&str, Vec<&str>)> = vec![
        (
            "runs --since (800 of 10,000)",
            vec!["runs", "--since", "2026-10-12T12:00"],
        ),
        ("runs (all 10,000)", vec!["runs"]),
        (
            "history FIGURE --host H (50 runs)",
            vec!["history", &figure, "--host", &slow[0]],
        ),
        (
            "history FIGURE (10,000 runs, 200 hosts)",
            vec!["history", &figure],
        ),
        (
            "history FIGURE --since (800 runs)",
            vec!["history", &figure, "--since", "2026-10-12T12:00"],
        ),
        (
            "compare --tag-a wave=49 --tag-b wave=50",
            vec!["compare", "--tag-a", "wave=49", "--tag-b", "wave=50"],
        ),
        ("fleet (10,000 runs)", vec!["fleet"]),
        (
            "fleet --since (2,000 runs)",
            vec!["fleet", "--since", "2026-10-11"],
        ),
    ];
    let sqlite_text = sqlite.display().to_string();
    println!(
        "\n{:<42} {:>17} {:>17}",
        "query (median / slowest of 5)", "SQLite", "PostgreSQL"
    );
    let show = |(median, max): (Duration, Duration)| {
        format!(
            "{:.3} / {:.3} s{}",
            median.as_secs_f64(),
            max.as_secs_f64(),
            if max <= TARGET { " " } else { "!" }
        )
    };
    for (what, args) in &queries {
        let s = timed(&sqlite_text, args);
        let p = timed(&url, args);
        println!("{what:<42} {:>17} {:>17}", show(s), show(p));
    }
    println!("(! marks a query slower than {} s)", TARGET.as_secs());
    println!("\nquery plans:");
    sqlite_plans(&sqlite, &figure);
    postgres_plans(url.rsplit('/').next().unwrap(), &figure);
    fifty_pushes(dir.path(), &template);
    pg::cluster().stop();
}
