//! Process creation: fork of a copy that exits at once, and starting a new program (fork, vfork or
//! posix_spawn, then exec and wait) with a helper that is statically or dynamically linked.
//!
//! The helpers are C programs compiled by build.rs and embedded in the binary, so osmeter needs no
//! files beside itself; each workload writes its copy into the scratch directory.

use super::util::param_str;
use super::{Built, Origin, ProbeDef, ProbeEnv, Scale};
use crate::harness::Workload;
use crate::params;
use crate::results::model::{Params, Unit};
use crate::system::processes::{forked, posix_spawned};
use anyhow::{anyhow, bail, Context, Result};
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

const HELLO_STATIC: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/hello-static"));
const HELLO_DYNAMIC: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/hello-dynamic"));

const LINKS: &[&str] = &["static", "dynamic"];
const METHODS: &[&str] = &["fork", "vfork", "posix_spawn"];

pub const PROBES: &[ProbeDef] = &[
    ProbeDef {
        id: "process.fork_exit",
        summary: "fork, the child calls _exit(0) at once, the parent waits for it",
        params: "",
        unit: Unit::Nanoseconds,
        origins: &[Origin::Lmbench, Origin::LEBench],
        variants: |_| vec![params!()],
        build: |_, _| Ok(Built::Ready(Box::new(ForkExit { last_pid: 0 }))),
    },
    ProbeDef {
        id: "process.exec",
        summary: "start a program that exits at once: create a child, exec the helper, wait for it",
        params: "link=static|dynamic (how the helper is linked); method=fork|vfork|posix_spawn \
                 (fork+execve, clone(CLONE_VM|CLONE_VFORK)+execve, posix_spawn)",
        unit: Unit::Nanoseconds,
        origins: &[Origin::Chen96, Origin::Lmbench],
        variants: exec_variants,
        build: build_exec,
    },
];

fn exec_variants(_: Scale) -> Vec<Params> {
    // Every point is cheap (well under a millisecond per operation), so Quick measures them all.
    LINKS
        .iter()
        .flat_map(|l| {
            METHODS
                .iter()
                .map(move |m| params![("link", l), ("method", m)])
        })
        .collect()
}

/// Waits for `pid`, retrying on EINTR so the child is always reaped (it exits on its own at once),
/// and returns its wait status.
fn reap(pid: libc::pid_t) -> Result<libc::c_int> {
    let mut status = 0;
    loop {
        // SAFETY: status is a valid out-pointer; pid is our own child.
        let rc = unsafe { libc::waitpid(pid, &mut status, 0) };
        if rc == pid {
            return Ok(status);
        }
        let err = std::io::Error::last_os_error();
        if rc < 0 && err.raw_os_error() == Some(libc::EINTR) {
            continue;
        }
        bail!("waitpid({pid}) failed: {err}");
    }
}

fn check_exit(status: libc::c_int, what: &str) -> Result<()> {
    if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0 {
        return Ok(());
    }
    if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 127 {
        bail!("{what}: the child could not exec the helper (exit status 127)");
    }
    bail!("{what}: the child ended with wait status {status:#x}, expected exit 0")
}

struct ForkExit {
    last_pid: libc::pid_t,
}

impl Workload for ForkExit {
    fn notes(&self) -> Vec<String> {
        super::fork_state::ForkingProcess::read()
            .map(|p| p.note())
            .into_iter()
            .collect()
    }

    fn run(&mut self, iters: u64) -> Result<()> {
        for _ in 0..iters {
            // SAFETY: the child touches nothing and leaves through _exit, which is async-signal-safe,
            // so forking a possibly multi-threaded parent is sound. The child needs no
            // PR_SET_PDEATHSIG: it cannot outlive the parent by more than its own exit.
            let pid = unsafe { libc::fork() };
            if pid == 0 {
                unsafe { libc::_exit(0) };
            }
            forked(pid, "the child process to fork")?;
            self.last_pid = pid;
            check_exit(reap(pid)?, "fork")?;
        }
        Ok(())
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Method {
    Fork,
    Vfork,
    PosixSpawn,
}

/// Everything the child needs to exec, prepared before timing so the loop allocates nothing. The
/// pointer arrays point into the CStrings held alongside them.
struct ExecImage {
    path: CString,
    _arg0: CString,
    argv: [*const libc::c_char; 2],
    envp: [*const libc::c_char; 1],
}

impl ExecImage {
    fn new(path: &std::path::Path) -> Result<Box<ExecImage>> {
        let path = CString::new(path.as_os_str().as_bytes())
            .map_err(|_| anyhow!("scratch path {} holds a NUL byte", path.display()))?;
        let arg0 = CString::new("hello").expect("no NUL");
        let mut image = Box::new(ExecImage {
            path,
            _arg0: arg0,
            argv: [std::ptr::null(); 2],
            envp: [std::ptr::null()],
        });
        image.argv[0] = image._arg0.as_ptr();
        Ok(image)
    }
}

/// Entry point of the clone(CLONE_VM|CLONE_VFORK) child: it runs on its own stack in the parent's
/// memory while the parent is suspended, so it may only exec or exit.
extern "C" fn vfork_child(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: arg is the ExecImage the parent keeps alive (and unmoved) until the child has exec'd.
    unsafe {
        let image = &*(arg as *const ExecImage);
        libc::syscall(
            libc::SYS_execve,
            image.path.as_ptr(),
            image.argv.as_ptr(),
            image.envp.as_ptr(),
        );
        libc::_exit(127)
    }
}

/// Stack for the vfork-style child; 64 KiB is plenty for a call into execve.
const CHILD_STACK: usize = 64 * 1024;

struct Exec {
    method: Method,
    image: Box<ExecImage>,
    stack: Vec<u128>,
    file: PathBuf,
    last_pid: libc::pid_t,
}

impl Drop for Exec {
    fn drop(&mut self) {
        // Every child was reaped in run(); only the helper file is left to remove.
        let _ = std::fs::remove_file(&self.file);
    }
}

impl Exec {
    fn spawn_once(&mut self) -> Result<libc::pid_t> {
        let img = &*self.image;
        match self.method {
            Method::Fork => {
                // SAFETY: the child only calls execve and _exit, both async-signal-safe, on data
                // prepared before the fork.
                let pid = unsafe { libc::fork() };
                if pid == 0 {
                    unsafe {
                        libc::execve(img.path.as_ptr(), img.argv.as_ptr(), img.envp.as_ptr());
                        libc::_exit(127);
                    }
                }
                forked(pid, "the child process to exec the helper (fork)")
            }
            Method::Vfork => {
                // clone with a separate stack rather than vfork(): Rust cannot express a function
                // that returns twice, while a child on its own stack is sound. The flags are what
                // vfork(2) itself uses: share memory, suspend the parent until exec or exit.
                // SAFETY: the stack is ours, 16-byte aligned (u128 elements) and unused while the
                // parent is suspended; the image outlives the child's use of it.
                let top = unsafe { self.stack.as_mut_ptr().add(self.stack.len()) };
                let pid = unsafe {
                    libc::clone(
                        vfork_child,
                        top.cast(),
                        libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
                        img as *const ExecImage as *mut libc::c_void,
                    )
                };
                forked(
                    pid,
                    "the child process to exec the helper (clone(CLONE_VM|CLONE_VFORK))",
                )
            }
            Method::PosixSpawn => {
                let mut pid = 0;
                // SAFETY: all pointers are valid, NULL-terminated arrays prepared at build time.
                let rc = unsafe {
                    libc::posix_spawn(
                        &mut pid,
                        img.path.as_ptr(),
                        std::ptr::null(),
                        std::ptr::null(),
                        img.argv.as_ptr() as *const *mut libc::c_char,
                        img.envp.as_ptr() as *const *mut libc::c_char,
                    )
                };
                posix_spawned(rc, "the helper (posix_spawn)")?;
                Ok(pid)
            }
        }
    }
}

impl Workload for Exec {
    fn run(&mut self, iters: u64) -> Result<()> {
        for _ in 0..iters {
            let pid = self.spawn_once()?;
            self.last_pid = pid;
            check_exit(reap(pid)?, "exec")?;
        }
        Ok(())
    }
}

/// Distinguishes helper copies of workloads that exist at the same time (tests build many).
static HELPER_SEQ: AtomicU64 = AtomicU64::new(0);

/// Writes `bytes` as an executable file in the scratch directory.
fn write_helper(env: &ProbeEnv, link: &str, bytes: &[u8]) -> Result<PathBuf> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let n = HELPER_SEQ.fetch_add(1, Ordering::Relaxed);
    let path = env
        .scratch
        .join(format!("hello-{link}-{}-{n}", std::process::id()));
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o755)
        .open(&path)
        .with_context(|| format!("cannot create {}", path.display()))?;
    f.write_all(bytes)
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(path)
}

/// Runs the helper once through posix_spawn, which reports exec failures as its return value.
/// Retries briefly on ETXTBSY: another thread that forked while our write descriptor was open holds
/// a copy of it until that child execs. The outer error is the system refusing a process (a limit
/// such as `ulimit -u`, which fails the figure with the limit named); the inner one is the helper
/// failing to run from the scratch directory (which skips the point).
fn trial_spawn(image: &ExecImage) -> Result<std::result::Result<(), String>> {
    for attempt in 0..50 {
        let mut pid = 0;
        // SAFETY: as in Exec::spawn_once.
        let rc = unsafe {
            libc::posix_spawn(
                &mut pid,
                image.path.as_ptr(),
                std::ptr::null(),
                std::ptr::null(),
                image.argv.as_ptr() as *const *mut libc::c_char,
                image.envp.as_ptr() as *const *mut libc::c_char,
            )
        };
        if rc == libc::ETXTBSY && attempt < 49 {
            std::thread::sleep(std::time::Duration::from_millis(2));
            continue;
        }
        if rc != 0 {
            let err = std::io::Error::from_raw_os_error(rc);
            if crate::system::processes::refused(&err) {
                posix_spawned(rc, "the helper's trial run (posix_spawn)")?;
            }
            return Ok(Err(err.to_string()));
        }
        let status = reap(pid)?;
        return Ok(check_exit(status, "trial run").map_err(|e| e.to_string()));
    }
    Ok(Err("the helper stayed busy (ETXTBSY)".into()))
}

fn build_exec(env: &ProbeEnv, p: &Params) -> Result<Built> {
    let link = param_str(p, "link")?;
    let method = match param_str(p, "method")? {
        "fork" => Method::Fork,
        "vfork" => Method::Vfork,
        "posix_spawn" => Method::PosixSpawn,
        other => bail!("method={other}: expected fork, vfork or posix_spawn"),
    };
    let bytes = match link {
        "static" => HELLO_STATIC,
        "dynamic" => HELLO_DYNAMIC,
        other => bail!("link={other}: expected static or dynamic"),
    };
    if let Some(reason) = missing_helper_reason(link, bytes) {
        return Ok(Built::Skip(reason));
    }
    let file = write_helper(env, link, bytes)?;
    let image = match ExecImage::new(&file) {
        Ok(i) => i,
        Err(e) => {
            let _ = std::fs::remove_file(&file);
            return Err(e);
        }
    };
    let work = Exec {
        method,
        image,
        stack: vec![0u128; CHILD_STACK / 16],
        file,
        last_pid: 0,
    };
    // A refusal of the system's is an error (`work` is dropped, and its helper file with it).
    if let Err(why) = trial_spawn(&work.image)? {
        return Ok(Built::Skip(format!(
            "cannot run the helper {} from the scratch directory: {why} (a noexec mount? choose \
             another --dir)",
            work.file.display()
        )));
    }
    Ok(Built::Ready(Box::new(work)))
}

/// Why an embedded helper is unusable: build.rs leaves an empty file when it could not compile it.
fn missing_helper_reason(link: &str, bytes: &[u8]) -> Option<String> {
    if !bytes.is_empty() {
        return None;
    }
    Some(if link == "static" {
        "no static libc at build time; install libc6-dev".to_string()
    } else {
        "no C compiler at build time; install gcc and libc6-dev, then rebuild".to_string()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(dir: &std::path::Path) -> ProbeEnv<'_> {
        ProbeEnv {
            scratch: dir,
            cpu: 0,
            scale: Scale::Quick,
            file_systems: Default::default(),
        }
    }

    fn gone(pid: libc::pid_t) -> bool {
        // A reaped child no longer exists; a zombie would still answer kill(pid, 0).
        let rc = unsafe { libc::kill(pid, 0) };
        rc != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
    }

    #[test]
    fn every_probe_builds_and_runs() {
        // Every helper copy must be removed when its workload is dropped: exercise checks scratch.
        crate::probes::testing::exercise(PROBES, 3, crate::probes::testing::all);
    }

    #[test]
    fn quick_measures_all_six_exec_points() {
        assert_eq!(exec_variants(Scale::Quick).len(), 6);
    }

    #[test]
    fn children_are_reaped() {
        let mut w = ForkExit { last_pid: 0 };
        w.run(5).unwrap();
        assert!(w.last_pid > 0 && gone(w.last_pid));

        let dir = tempfile::tempdir().unwrap();
        for method in METHODS {
            let file = write_helper(&env(dir.path()), "dynamic", HELLO_DYNAMIC).unwrap();
            let mut w = Exec {
                method: match *method {
                    "fork" => Method::Fork,
                    "vfork" => Method::Vfork,
                    _ => Method::PosixSpawn,
                },
                image: ExecImage::new(&file).unwrap(),
                stack: vec![0u128; CHILD_STACK / 16],
                file: file.clone(),
                last_pid: 0,
            };
            // As build_exec does: wait out a fork of another test that still holds the file
            // open for writing (ETXTBSY), which is no fault of the method under test.
            trial_spawn(&w.image).unwrap().unwrap();
            w.run(4).unwrap();
            assert!(w.last_pid > 0 && gone(w.last_pid), "{method}");
            drop(w);
            assert!(!file.exists());
        }
    }

    #[test]
    fn failed_exec_is_an_error_and_still_reaped() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("no-such-helper");
        for method in [Method::Fork, Method::Vfork, Method::PosixSpawn] {
            let mut w = Exec {
                method,
                image: ExecImage::new(&missing).unwrap(),
                stack: vec![0u128; CHILD_STACK / 16],
                file: missing.clone(),
                last_pid: 0,
            };
            assert!(w.run(1).is_err(), "{method:?}");
            if w.last_pid > 0 {
                assert!(gone(w.last_pid), "{method:?}");
            }
        }
    }

    #[test]
    fn helpers_are_linked_as_named() {
        assert!(HELLO_DYNAMIC.starts_with(b"\x7fELF"));
        assert!(HELLO_STATIC.starts_with(b"\x7fELF"));
        // A dynamically linked ELF64 file names its loader in a PT_INTERP program header.
        let has_interp = |b: &[u8]| {
            let u16_at = |o: usize| u16::from_le_bytes([b[o], b[o + 1]]) as usize;
            let phoff = u64::from_le_bytes(b[0x20..0x28].try_into().unwrap()) as usize;
            let (size, count) = (u16_at(0x36), u16_at(0x38));
            (0..count).any(|i| {
                let o = phoff + i * size;
                u32::from_le_bytes(b[o..o + 4].try_into().unwrap()) == 3
            })
        };
        assert!(has_interp(HELLO_DYNAMIC));
        assert!(!has_interp(HELLO_STATIC));
    }

    #[test]
    fn empty_helper_means_skip_with_reason() {
        assert_eq!(
            missing_helper_reason("static", b"").unwrap(),
            "no static libc at build time; install libc6-dev"
        );
        assert!(missing_helper_reason("dynamic", b"").is_some());
        assert!(missing_helper_reason("static", b"\x7fELF").is_none());
    }
}
