//! Built-in guest workloads in the spirit of Chen and Bershad's: each puts what it needs into the
//! initramfs (host programs with their libraries, generated input files) and names the command
//! line the guest runs inside the trace window. Inputs are generated from fixed seeds, so a
//! workload is the same on every machine that has the same programs.

use super::initramfs::Initramfs;
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};

#[derive(Debug)]
pub struct Workload {
    pub name: &'static str,
    pub summary: &'static str,
    setup: fn(&mut Initramfs) -> Result<Vec<String>>,
}

impl Workload {
    /// Adds the workload's files and returns the command to run inside the guest.
    pub fn setup(&self, fs: &mut Initramfs) -> Result<Vec<String>> {
        (self.setup)(fs).with_context(|| format!("preparing workload {}", self.name))
    }
}

pub const WORKLOADS: &[Workload] = &[
    Workload {
        name: "compile",
        summary: "gcc -O2 -c of a small C program (the compiler proper and the assembler)",
        setup: compile,
    },
    Workload {
        name: "sort",
        summary: "sort of 20,000 generated lines (about 300 KB)",
        setup: sort,
    },
    Workload {
        name: "grep",
        summary: "grep -r over a generated tree of 256 files (about 600 KB)",
        setup: grep,
    },
    Workload {
        name: "copy",
        summary: "cp of a 4 MiB file",
        setup: copy,
    },
    Workload {
        name: "net",
        summary: "500 round trips of 1 KB over a loopback TCP connection",
        setup: |_| Ok(guest_helper(&["pingpong", "500", "1024"])),
    },
    Workload {
        name: "spawn",
        summary: "100 fork+exec+wait of a small static program",
        setup: |_| Ok(guest_helper(&["spawn", "100"])),
    },
];

pub fn find(name: &str) -> Option<&'static Workload> {
    WORKLOADS.iter().find(|w| w.name == name)
}

/// `--workload NAME`, read by clap: the names are its possible values (listed on a mistake, and
/// offered by shell completion).
pub fn parser() -> impl clap::builder::TypedValueParser<Value = &'static Workload> {
    use clap::builder::TypedValueParser as _;
    clap::builder::PossibleValuesParser::new(names())
        .map(|name| find(&name).expect("clap checked the name against the same table"))
}

pub fn names() -> Vec<&'static str> {
    WORKLOADS.iter().map(|w| w.name).collect()
}

fn guest_helper(args: &[&str]) -> Vec<String> {
    std::iter::once(super::GUEST_HELPER_PATH)
        .chain(args.iter().copied())
        .map(str::to_string)
        .collect()
}

/// A program on this machine's PATH (or a path), as the guest will find it.
pub fn host_program(name: &str) -> Result<PathBuf> {
    let found = crate::programs::find(name).with_context(|| {
        if name.contains('/') {
            format!("command {name} not found: the guest gets its programs from this machine")
        } else {
            format!(
                "command {name:?} not found on this machine's PATH (the guest gets its programs from this machine)"
            )
        }
    })?;
    if name.contains('/') {
        return Ok(std::fs::canonicalize(&found).unwrap_or(found));
    }
    Ok(found)
}

/// Deterministic pseudo-random numbers for generated inputs (xorshift64, whose stream the inputs
/// have always been made of).
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        crate::stats::rng::xorshift64(&mut self.0)
    }
    fn word(&mut self, out: &mut String) {
        let len = 3 + self.next() % 9;
        for _ in 0..len {
            out.push(char::from(b'a' + (self.next() % 26) as u8));
        }
    }
}

fn lines(seed: u64, count: usize, words: usize) -> String {
    let mut rng = XorShift(seed);
    let mut s = String::new();
    for _ in 0..count {
        for w in 0..words {
            if w > 0 {
                s.push(' ');
            }
            rng.word(&mut s);
        }
        s.push('\n');
    }
    s
}

fn sort(fs: &mut Initramfs) -> Result<Vec<String>> {
    let sort = host_program("sort")?;
    fs.program(&sort)?;
    fs.bytes(
        Path::new("/work/words.txt"),
        0o644,
        lines(0x5eed_0001, 20_000, 2).into_bytes(),
    )?;
    Ok(vec![
        sort.display().to_string(),
        "-o".into(),
        "/tmp/sorted.txt".into(),
        "/work/words.txt".into(),
    ])
}

fn grep(fs: &mut Initramfs) -> Result<Vec<String>> {
    let grep = host_program("grep")?;
    fs.program(&grep)?;
    for d in 0..16 {
        for f in 0..16 {
            let mut text = lines(0x5eed_1000 + d * 16 + f, 40, 8);
            if (d + f) % 5 == 0 {
                text.push_str("a needle in the haystack\n");
            }
            fs.bytes(
                &PathBuf::from(format!("/work/tree/d{d:02}/f{f:02}.txt")),
                0o644,
                text.into_bytes(),
            )?;
        }
    }
    Ok(vec![
        grep.display().to_string(),
        "-r".into(),
        "-l".into(),
        "needle".into(),
        "/work/tree".into(),
    ])
}

fn copy(fs: &mut Initramfs) -> Result<Vec<String>> {
    let cp = host_program("cp")?;
    fs.program(&cp)?;
    let mut rng = XorShift(0x5eed_2000);
    let data: Vec<u8> = (0..(4 << 20) / 8)
        .flat_map(|_| rng.next().to_le_bytes())
        .collect();
    fs.bytes(Path::new("/work/big.bin"), 0o644, data)?;
    Ok(vec![
        cp.display().to_string(),
        "/work/big.bin".into(),
        "/tmp/copy.bin".into(),
    ])
}

const COMPILE_SOURCE: &str = r#"#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct entry { char key[16]; long value; struct entry *next; };

static unsigned hash(const char *s) {
    unsigned h = 2166136261u;
    while (*s) h = (h ^ (unsigned char)*s++) * 16777619u;
    return h;
}

static struct entry *table[256];

static void put(const char *key, long value) {
    unsigned b = hash(key) & 255;
    for (struct entry *e = table[b]; e; e = e->next)
        if (strcmp(e->key, key) == 0) { e->value += value; return; }
    struct entry *e = calloc(1, sizeof *e);
    snprintf(e->key, sizeof e->key, "%s", key);
    e->value = value;
    e->next = table[b];
    table[b] = e;
}

static int cmp(const void *a, const void *b) {
    const struct entry *x = *(struct entry *const *)a, *y = *(struct entry *const *)b;
    return x->value < y->value ? 1 : x->value > y->value ? -1 : strcmp(x->key, y->key);
}

int main(int argc, char **argv) {
    char word[64];
    for (int i = 1; i < argc; i++) put(argv[i], i);
    while (scanf("%63s", word) == 1) put(word, 1);
    struct entry *all[4096];
    int n = 0;
    for (int b = 0; b < 256; b++)
        for (struct entry *e = table[b]; e && n < 4096; e = e->next) all[n++] = e;
    qsort(all, n, sizeof all[0], cmp);
    for (int i = 0; i < n && i < 20; i++) printf("%8ld %s\n", all[i]->value, all[i]->key);
    return 0;
}
"#;

fn gcc_prog(gcc: &Path, name: &str) -> Result<PathBuf> {
    let out = crate::programs::command(gcc)
        .arg(format!("-print-prog-name={name}"))
        .output()
        .map_err(|e| crate::system::processes::cannot_start("gcc", &e))?;
    let s = String::from_utf8_lossy(&out.stdout).trim().to_string();
    host_program(&s).with_context(|| format!("gcc's {name} not found"))
}

fn compile(fs: &mut Initramfs) -> Result<Vec<String>> {
    let gcc = host_program("gcc")?;
    fs.program(&gcc)?;
    fs.program(&gcc_prog(&gcc, "cc1")?)?;
    fs.program(&gcc_prog(&gcc, "as")?)?;
    let dir = crate::scratch::private_dir(&std::env::temp_dir(), "osmeter-compile-")?;
    let src = dir.path().join("wordfreq.c");
    std::fs::write(&src, COMPILE_SOURCE)?;
    // The headers the program includes, as this machine's gcc finds them with the same flags
    // (optimisation pulls in extra inline headers).
    let deps = crate::programs::command(&gcc)
        .args(["-O2", "-M"])
        .arg(&src)
        .output()
        .map_err(|e| crate::system::processes::cannot_start("gcc -M", &e))?;
    if !deps.status.success() {
        bail!(
            "gcc -M failed: {}",
            String::from_utf8_lossy(&deps.stderr).trim()
        );
    }
    for word in String::from_utf8_lossy(&deps.stdout).split_whitespace() {
        if word.starts_with('/') && word.ends_with(".h") {
            let p = Path::new(word);
            fs.host_file(p, p)?;
        }
    }
    fs.bytes(
        Path::new("/work/wordfreq.c"),
        0o644,
        COMPILE_SOURCE.as_bytes().to_vec(),
    )?;
    Ok(vec![
        gcc.display().to_string(),
        "-O2".into(),
        "-c".into(),
        "/work/wordfreq.c".into(),
        "-o".into(),
        "/tmp/wordfreq.o".into(),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_inputs_are_deterministic() {
        assert_eq!(lines(1, 50, 3), lines(1, 50, 3));
        assert_ne!(lines(1, 50, 3), lines(2, 50, 3));
        assert_eq!(lines(7, 10, 2).lines().count(), 10);
    }

    #[test]
    fn every_workload_sets_up_where_its_programs_exist() {
        for w in WORKLOADS {
            let mut fs = Initramfs::new();
            match w.setup(&mut fs) {
                Ok(argv) => {
                    assert!(argv[0].starts_with('/'), "{}: {argv:?}", w.name);
                    let helper = argv[0] == super::super::GUEST_HELPER_PATH;
                    assert!(helper || fs.contains(Path::new(&argv[0])), "{}", w.name);
                }
                // Only a program missing from this machine may stop a workload here.
                Err(e) => assert!(format!("{e:#}").contains("not found"), "{}: {e:#}", w.name),
            }
        }
    }

    #[test]
    fn the_compile_workload_brings_the_compiler_and_its_headers() {
        let Ok(gcc) = host_program("gcc") else { return };
        let mut fs = Initramfs::new();
        compile(&mut fs).unwrap();
        assert!(fs.contains(&gcc));
        assert!(fs.contains(&gcc_prog(&gcc, "cc1").unwrap()));
        assert!(fs.contains(Path::new("/usr/include/stdio.h")));
    }

    #[test]
    fn unknown_commands_are_reported_as_not_found() {
        let err = host_program("osmeter-no-such-program").unwrap_err();
        assert!(err.to_string().contains("not found"));
        assert!(host_program("/no/such/bin").is_err());
        assert!(host_program("sh").is_ok());
    }
}
