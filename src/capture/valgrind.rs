//! User-mode traces: a command run under valgrind's lackey, its references converted as they
//! arrive into an osmeter trace.

use crate::guard::command::{output_pipe, GuardedChild, Stream};
use crate::memsim::trace::binary::TraceWriter;
use crate::memsim::trace::file::{Sink, ZSTD_LEVEL};
use crate::memsim::trace::{self, RefSource, FLAG_INCOMPLETE, FLAG_USER_ONLY};
use anyhow::{Context, Result};
use std::os::fd::AsRawFd;
use std::path::Path;

/// What a capture did: references written, how long it took, whether Ctrl-C cut it short, and how
/// the command ended.
pub struct UserCapture {
    pub references: u64,
    pub seconds: f64,
    pub interrupted: bool,
    pub status: std::process::ExitStatus,
}

/// Runs the command under lackey with its trace on a pipe (fd 3), converting as it arrives. Lackey
/// logging to a file would make a system call per record; through the pipe it writes in blocks.
///
/// The trace appears under `out` only once its trailer is written. A capture cut short (Ctrl-C,
/// or the command killed by a signal) keeps the references read so far in a complete file whose
/// trailer marks it incomplete. A conversion error leaves no file.
pub fn capture(valgrind: &Path, out: &Path, zstd: bool, cmd: &[String]) -> Result<UserCapture> {
    let file = crate::files::AtomicFile::create(out)?;
    let sink = Sink::create(&file, out, zstd, ZSTD_LEVEL)?;
    let mut writer = TraceWriter::new(sink, FLAG_USER_ONLY)
        .with_context(|| format!("cannot write {}", out.display()))?;
    let mut fds = [0; 2];
    // SAFETY: fds has room for the two descriptors pipe2 writes.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error()).context("cannot create a pipe for the trace");
    }
    let (rfd, wfd) = (fds[0], fds[1]);
    // SAFETY: rfd is a fresh descriptor we own.
    let reader = unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(rfd) };
    let mut argv: Vec<&std::ffi::OsStr> = vec![valgrind.as_os_str()];
    // --vgdb=no: no gdbserver FIFOs in the temporary directory, which a valgrind stopped by a
    // signal (Ctrl-C) would leave behind.
    for a in [
        "--tool=lackey",
        "--trace-mem=yes",
        "--log-fd=3",
        "--vgdb=no",
    ] {
        argv.push(a.as_ref());
    }
    argv.extend(cmd.iter().map(std::ffi::OsStr::new));
    // The command's output would run into the progress line where both go to one terminal (or
    // one file): such a stream is passed through osmeter instead (see progress::Relay).
    // When stdout and stderr are both that one file, one pipe carries both: the kernel keeps the
    // command's writes in their order, where two pipes relayed by two threads could swap a line
    // ending of one with the half line of the other on a stalled machine.
    let [out_shares, err_shares] = [1, 2].map(crate::progress::shares_progress);
    let one_pipe = out_shares && err_shares;
    let err_pipe = err_shares.then(output_pipe).transpose()?;
    let out_pipe = (out_shares && !one_pipe).then(output_pipe).transpose()?;
    let stream = |p: &Option<(std::os::fd::OwnedFd, std::os::fd::OwnedFd)>| {
        p.as_ref()
            .map_or(Stream::Inherit, |(_, w)| Stream::Fd(w.as_raw_fd()))
    };
    let out_stream = if one_pipe {
        stream(&err_pipe)
    } else {
        stream(&out_pipe)
    };
    crate::interrupt::install();
    let start = std::time::Instant::now();
    // Under a guardian: whatever the command starts (valgrind runs it in its own process, and its
    // children natively) ends with osmeter, SIGKILL included.
    let spawned = GuardedChild::spawn(&argv, out_stream, stream(&err_pipe), Some(wfd))
        .and_then(|mut child| child.release().map(|_| child));
    // SAFETY: the parent's copy of the write end is ours to close; the child has its own.
    unsafe { libc::close(wfd) };
    use crate::progress::{Out, Relay};
    // The write ends are the program's now; the reads end when it (and its guardian) are gone.
    let relays: Result<Vec<Relay>> = [(out_pipe, Out::Stdout), (err_pipe, Out::Stderr)]
        .into_iter()
        .filter_map(|(p, to)| p.map(|(r, _)| Relay::start(std::fs::File::from(r), to)))
        .collect();
    let mut proc = spawned.map_err(|e| crate::system::processes::cannot_start("valgrind", &e))?;
    // A thread that cannot start ends the command: nothing would read its output or stop it.
    let give_up = |proc: &mut GuardedChild, e: anyhow::Error| {
        proc.signal(libc::SIGKILL);
        let _ = proc.wait(|_| {});
        Err(e)
    };
    let relays = match relays {
        Ok(r) => r,
        Err(e) => return give_up(&mut proc, e),
    };
    let mut src =
        trace::text::LackeyReader::new(std::io::BufReader::with_capacity(1 << 20, reader));
    let done = std::sync::atomic::AtomicBool::new(false);
    let captured = crate::progress::Counter::default();
    let progress = super::progress(captured.clone(), "starting the command under valgrind");
    let copied = std::thread::scope(|scope| -> Result<Result<()>> {
        let child = &proc;
        let watcher = crate::system::limits::spawn_scoped(scope, "osm-capture-stop", || {
            stop_on_interrupt(child, &done)
        })?;
        let copied = copy_refs(&mut src, &mut writer, &captured, out);
        done.store(true, std::sync::atomic::Ordering::SeqCst);
        let _ = watcher.join();
        Ok(copied)
    });
    let copied = match copied {
        Ok(c) => c,
        Err(e) => return give_up(&mut proc, e),
    };
    if copied.is_err() {
        proc.signal(libc::SIGKILL);
    }
    // Closing the read end first: a child still writing gets EPIPE instead of blocking.
    drop(src);
    let ended = proc.wait(|_| {}).context("waiting for valgrind")?;
    let status: std::process::ExitStatus =
        std::os::unix::process::ExitStatusExt::from_raw(ended.status);
    // The command's last words before the progress line is cleared and the summary follows.
    for r in relays {
        r.finish(std::time::Duration::from_secs(2));
    }
    drop(progress);
    copied.context("converting lackey's output")?;
    let interrupted = crate::interrupt::requested();
    let cut_short = interrupted || status.code().is_none();
    let references = writer.count();
    writer
        .finish(if cut_short { FLAG_INCOMPLETE } else { 0 })
        .and_then(Sink::finish)
        .with_context(|| format!("cannot write {}", out.display()))?;
    file.commit()?;
    Ok(UserCapture {
        references,
        seconds: start.elapsed().as_secs_f64(),
        interrupted,
        status,
    })
}

/// Copies lackey's references into the trace until its output ends. After Ctrl-C the output
/// may end in the middle of a line: the records before it are kept, the error is not one.
fn copy_refs(
    src: &mut dyn RefSource,
    w: &mut TraceWriter<Sink>,
    copied: &crate::progress::Counter,
    out: &Path,
) -> Result<()> {
    let mut batch = Vec::with_capacity(1 << 16);
    loop {
        batch.clear();
        let got = src.next_batch(&mut batch, 1 << 16);
        for r in &batch {
            w.write(r)
                .with_context(|| format!("cannot write {}", out.display()))?;
        }
        copied.add(batch.len() as u64);
        match got {
            Ok(0) => return Ok(()),
            Ok(_) => {}
            Err(_) if crate::interrupt::requested() => return Ok(()),
            Err(e) => return Err(e),
        }
    }
}

/// Until `done`, watches for Ctrl-C; then stops valgrind (`child`) as a terminal would, with
/// SIGINT, and with SIGKILL if it has not finished within a few seconds (a command that ignores
/// SIGINT). Its output then ends, which ends the copy.
fn stop_on_interrupt(child: &GuardedChild, done: &std::sync::atomic::AtomicBool) {
    use std::sync::atomic::Ordering;
    use std::time::{Duration, Instant};
    while !crate::interrupt::requested() {
        if done.load(Ordering::SeqCst) {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.signal(libc::SIGINT);
    let deadline = Instant::now() + Duration::from_secs(3);
    while Instant::now() < deadline {
        if done.load(Ordering::SeqCst) {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.signal(libc::SIGKILL);
}
