//! How many instructions one pass of the reference mix executes in this very binary, so the mix's
//! speed can be given in instructions per second (the unit of the papers' MIPS ratings).
//!
//! The count is a property of the compiled code, not of the machine: callgrind counts it exactly
//! and repeatably, even where there are no hardware counters (most VMs). osmeter runs itself under
//! `valgrind --tool=callgrind`, collecting only inside [`super::mix::cpu_mix_count_region`], and
//! keeps the result in its cache, keyed by the executable's path, size and modification time, so
//! this happens once per build. Without valgrind, the hardware instruction counter of the calling
//! thread counts the same passes, where the machine has one.

use super::mix::{self, Mix, MIX_VERSION, VARIANTS};
use crate::meter::perf::CounterSet;
use crate::meter::{counter_delta, Scope};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// Cycles of [`VARIANTS`] passes counted. Two cycles make the count an exact multiple of the cycle,
/// whatever each variant costs.
const CYCLES: u64 = 2;
/// Longest a callgrind count may take (valgrind starting on a loaded machine included).
const CALLGRIND_TIMEOUT: Duration = Duration::from_secs(120);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Method {
    Callgrind,
    /// The calling thread's hardware `instructions` counter, user mode.
    Pmu,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Calibration {
    /// Instructions of one pass, averaged over whole cycles of the variants.
    pub instructions_per_pass: f64,
    pub method: Method,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
struct CacheEntry {
    exe: PathBuf,
    size: u64,
    modified_ns: u128,
    mix_version: u32,
    calibration: Calibration,
}

fn cache_file() -> PathBuf {
    crate::capture::system::kernel::cache_dir().join("cpu-mix.json")
}

fn identity(exe: &Path) -> Option<(u64, u128)> {
    let meta = std::fs::metadata(exe).ok()?;
    let modified = meta
        .modified()
        .ok()?
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?;
    Some((meta.len(), modified.as_nanos()))
}

fn read_cache() -> Vec<CacheEntry> {
    std::fs::read(cache_file())
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

fn cached(exe: &Path) -> Option<Calibration> {
    let (size, modified_ns) = identity(exe)?;
    read_cache()
        .into_iter()
        .find(|e| {
            e.exe == exe
                && e.size == size
                && e.modified_ns == modified_ns
                && e.mix_version == MIX_VERSION
        })
        .map(|e| e.calibration)
}

/// Adds the entry, keeping the newest few builds; a cache that cannot be written costs only time.
fn remember(exe: &Path, calibration: Calibration) {
    let Some((size, modified_ns)) = identity(exe) else {
        return;
    };
    let mut entries: Vec<CacheEntry> = read_cache().into_iter().filter(|e| e.exe != exe).collect();
    entries.push(CacheEntry {
        exe: exe.to_path_buf(),
        size,
        modified_ns,
        mix_version: MIX_VERSION,
        calibration,
    });
    let keep = entries.len().saturating_sub(16);
    entries.drain(..keep);
    let file = cache_file();
    let Some(dir) = file.parent() else { return };
    let write = || -> anyhow::Result<()> {
        std::fs::create_dir_all(dir)?;
        crate::files::write_atomic(&file, &serde_json::to_vec(&entries)?)
    };
    let _ = write();
}

/// The instructions of one pass, from the cache, callgrind, or the hardware counter, in that order;
/// the reasons each way failed otherwise.
pub fn instructions_per_pass() -> Result<Calibration, String> {
    let exe = std::env::current_exe()
        .and_then(|p| p.canonicalize())
        .map_err(|e| format!("cannot find osmeter's own executable to count the mix in: {e}"))?;
    if let Some(c) = cached(&exe) {
        return Ok(c);
    }
    let callgrind = by_callgrind(&exe);
    if let Ok(c) = callgrind {
        remember(&exe, c);
        return Ok(c);
    }
    let pmu = by_pmu();
    pmu.map_err(|pmu_err| {
        format!(
            "the reference mix's instructions cannot be counted here: callgrind: {}; hardware \
             counter: {pmu_err}. Install valgrind (apt-get install valgrind) to count them without \
             hardware counters",
            callgrind.unwrap_err()
        )
    })
}

/// Runs the mix for `cycles` cycles inside the counted region (the hidden `osmeter cpu-mix`).
pub fn run_counted_cycles(cycles: u64) -> u64 {
    let mut m = Mix::new();
    mix::cpu_mix_count_region(&mut m, cycles * VARIANTS)
}

fn by_callgrind(exe: &Path) -> Result<Calibration, String> {
    if exe.file_name().and_then(|n| n.to_str()) != Some("osmeter") {
        return Err(format!(
            "{} is not the osmeter executable (a test harness?)",
            exe.display()
        ));
    }
    let dir = tempfile::tempdir().map_err(|e| format!("no temporary directory: {e}"))?;
    let out = dir.path().join("callgrind.out");
    // valgrind's messages go to a file, not a pipe nobody reads while it runs.
    let log_path = dir.path().join("valgrind.log");
    let log = std::fs::File::create(&log_path)
        .map_err(|e| format!("cannot create {}: {e}", log_path.display()))?;
    let mut command = crate::programs::command("valgrind");
    crate::interrupt::die_with_parent(&mut command);
    let mut child = command
        .arg("--tool=callgrind")
        .arg(format!("--callgrind-out-file={}", out.display()))
        .arg("--collect-atstart=no")
        .arg("--toggle-collect=*cpu_mix_count_region*")
        .arg(exe)
        .args(["cpu-mix", "--cycles", &CYCLES.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => "valgrind is not installed".to_string(),
            _ => format!(
                "{:#}",
                crate::system::processes::cannot_start("valgrind", &e)
            ),
        })?;
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if crate::interrupt::requested() => {
                let _ = child.kill();
                let _ = child.wait();
                return Err("interrupted while counting".into());
            }
            Ok(None) if started.elapsed() > CALLGRIND_TIMEOUT => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "valgrind did not finish in {} s",
                    CALLGRIND_TIMEOUT.as_secs()
                ));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(format!("waiting for valgrind: {e}")),
        }
    };
    if !status.success() {
        let err = std::fs::read_to_string(&log_path).unwrap_or_default();
        let tail: Vec<&str> = err.lines().rev().take(3).collect();
        return Err(format!(
            "valgrind failed ({status}): {}",
            tail.into_iter().rev().collect::<Vec<_>>().join(" / ")
        ));
    }
    let text =
        std::fs::read_to_string(&out).map_err(|e| format!("callgrind wrote no profile ({e})"))?;
    let total = total_instructions(&text)?;
    if total == 0 {
        return Err("callgrind counted nothing inside the mix (symbol not found?)".into());
    }
    Ok(Calibration {
        instructions_per_pass: total as f64 / (CYCLES * VARIANTS) as f64,
        method: Method::Callgrind,
    })
}

/// The instruction total of a callgrind profile (its `totals:` or `summary:` line; the first event
/// is Ir, instructions executed).
pub fn total_instructions(profile: &str) -> Result<u64, String> {
    profile
        .lines()
        .find_map(|l| {
            l.strip_prefix("totals:")
                .or_else(|| l.strip_prefix("summary:"))
        })
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| "the callgrind profile has no totals line".to_string())
}

fn by_pmu() -> Result<Calibration, String> {
    let mut counters = CounterSet::open_all();
    if !counters.has(Scope::User, "instructions") {
        let why = counters
            .unavailable()
            .get("user:instructions")
            .cloned()
            .unwrap_or_else(|| "not available".into());
        return Err(why);
    }
    let mut m = Mix::new();
    // One cycle untimed first, so page faults and first-touch effects are not in the count.
    mix::cpu_mix_count_region(&mut m, VARIANTS);
    let before = counters.read();
    mix::cpu_mix_count_region(&mut m, CYCLES * VARIANTS);
    let after = counters.read();
    let counted = counter_delta(&before, &after);
    let instructions = counted
        .user
        .get("instructions")
        .copied()
        .ok_or("the instruction counter read nothing")?;
    Ok(Calibration {
        instructions_per_pass: instructions / (CYCLES * VARIANTS) as f64,
        method: Method::Pmu,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profile_totals_are_read() {
        let profile =
            "version: 1\ncreator: callgrind-3.19.0\nevents: Ir\nfl=(1) x\nfn=(1) f\n3 10\n\
                       totals: 123456\n";
        assert_eq!(total_instructions(profile), Ok(123456));
        assert_eq!(
            total_instructions("summary: 99 1 2\n"),
            Ok(99),
            "the first event is the instruction count"
        );
        assert!(total_instructions("events: Ir\n").is_err());
        assert!(total_instructions("totals: lots\n").is_err());
    }

    #[test]
    fn the_test_harness_is_not_counted_as_osmeter() {
        let exe = std::env::current_exe().unwrap();
        assert!(by_callgrind(&exe)
            .unwrap_err()
            .contains("not the osmeter executable"));
    }

    #[test]
    fn cache_entries_match_only_the_same_build() {
        let dir = tempfile::tempdir().unwrap();
        let exe = dir.path().join("osmeter");
        std::fs::write(&exe, b"one").unwrap();
        let (size, modified_ns) = identity(&exe).unwrap();
        let entry = CacheEntry {
            exe: exe.clone(),
            size,
            modified_ns,
            mix_version: MIX_VERSION,
            calibration: Calibration {
                instructions_per_pass: 1.0,
                method: Method::Callgrind,
            },
        };
        let text = serde_json::to_string(&vec![entry.clone()]).unwrap();
        let back: Vec<CacheEntry> = serde_json::from_str(&text).unwrap();
        assert_eq!(back, vec![entry]);
        std::fs::write(&exe, b"a longer build").unwrap();
        assert_ne!(identity(&exe).unwrap().0, size);
    }
}
