//! `app.wish`: a Tcl/Tk script written by osmeter builds a panel of widgets (buttons, labels,
//! entries, check buttons, scales, a list box, a canvas full of items, a text), redraws it, changes
//! every widget and invokes the buttons, then destroys it, over and over, with the display brought
//! up to date after each step, so every step turns into X requests that the server must draw.
//! Chen et al. 1996 drove Tk's widget demo the same way to see what a graphical interface costs
//! the system: the client, the X server and the switches between them.

use crate::apps::context::CpuTime;
use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::time::{Duration, Instant};

/// Widgets of each row kind in a panel (a button, a label, an entry, a check button, a scale).
const ROWS: usize = 4;
/// Widgets one panel holds: five per row, then a list box, a canvas and a text.
pub const WIDGETS_PER_PANEL: usize = ROWS * 5 + 3;

/// A wish run may take this long before it is stopped as hung.
const RUN_TIMEOUT: Duration = Duration::from_secs(300);

/// What one wish run did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct WishRun {
    pub iterations: u64,
    pub widgets_created: u64,
    /// The script's own loop, timed inside Tcl.
    pub loop_seconds: f64,
    /// From starting wish to its exit (start-up and connection included).
    pub wall_seconds: f64,
    pub wish_cpu: CpuTime,
    pub xvfb_cpu: CpuTime,
}

/// The script: `iterations` panels, its counts written to `result`.
pub fn script(iterations: u64, result: &Path) -> String {
    let result = tcl_word(&result.to_string_lossy());
    format!(
        r#"# Written by osmeter: build, update and destroy a panel of widgets {iterations} times.
set out [open {result} w]
set created 0
set t0 [clock microseconds]
for {{set i 0}} {{$i < {iterations}}} {{incr i}} {{
    frame .f
    for {{set j 0}} {{$j < {ROWS}}} {{incr j}} {{
        button .f.b$j -text "Button $i.$j" -command [list set ::pressed $j]
        label .f.l$j -text "Label $j" -relief sunken
        entry .f.e$j -width 16
        .f.e$j insert 0 "entry $i $j"
        checkbutton .f.c$j -text "Check $j" -variable ::check$j
        scale .f.s$j -from 0 -to 100 -orient horizontal
        grid .f.b$j .f.l$j .f.e$j .f.c$j .f.s$j -row $j -sticky ew
        incr created 5
    }}
    listbox .f.lb -height 6
    for {{set k 0}} {{$k < 20}} {{incr k}} {{ .f.lb insert end "item $k of panel $i" }}
    canvas .f.cv -width 320 -height 200 -background white
    for {{set k 0}} {{$k < 20}} {{incr k}} {{
        set x [expr {{($k * 37 + $i) % 300}}]
        set y [expr {{($k * 23 + $i) % 180}}]
        .f.cv create rectangle $x $y [expr {{$x + 20}}] [expr {{$y + 15}}] -fill [lindex {{red green blue orange}} [expr {{$k % 4}}]]
        .f.cv create text [expr {{$x + 10}}] [expr {{$y + 8}}] -text $k
    }}
    text .f.t -width 40 -height 6
    .f.t insert end "Panel $i\nThe quick brown fox jumps over the lazy dog.\n"
    grid .f.lb .f.cv .f.t -row {ROWS} -columnspan 2
    incr created 3
    pack .f
    update
    for {{set j 0}} {{$j < {ROWS}}} {{incr j}} {{
        .f.b$j configure -text "Pressed $i.$j" -background gray80
        .f.b$j invoke
        .f.l$j configure -text "Now $i" -relief raised
        .f.e$j delete 0 end
        .f.e$j insert 0 "changed $i $j"
        .f.c$j invoke
        .f.s$j set [expr {{($i * 7 + $j * 13) % 100}}]
    }}
    .f.lb selection set [expr {{$i % 20}}]
    .f.lb see end
    .f.cv move all 3 2
    .f.t insert end "One more line for panel $i\n"
    update
    destroy .f
    update
}}
set t1 [clock microseconds]
puts $out "iterations {iterations} widgets $created microseconds [expr {{$t1 - $t0}}]"
close $out
exit 0
"#
    )
}

/// A Tcl word: in braces, or with every special character escaped when it holds braces.
fn tcl_word(s: &str) -> String {
    if s.contains(['{', '}', '\\']) {
        // Quoting each character keeps any path safe, at the cost of readability.
        let escaped: String = s
            .chars()
            .flat_map(|c| {
                if c.is_ascii_alphanumeric() || "/._-".contains(c) {
                    vec![c]
                } else {
                    vec!['\\', c]
                }
            })
            .collect();
        return escaped;
    }
    format!("{{{s}}}")
}

/// Parses the script's result line.
pub fn parse_result(line: &str) -> Option<(u64, u64, f64)> {
    let f: Vec<&str> = line.split_whitespace().collect();
    match f.as_slice() {
        ["iterations", n, "widgets", w, "microseconds", us] => Some((
            n.parse().ok()?,
            w.parse().ok()?,
            us.parse::<f64>().ok()? / 1e6,
        )),
        _ => None,
    }
}

/// Runs `wish` on a script of `iterations` panels against `xvfb`, files in `dir`.
pub fn run_once(
    wish: &Path,
    xvfb: &super::xvfb::Xvfb,
    dir: &Path,
    iterations: u64,
    tag: &str,
) -> Result<WishRun> {
    let script_path = dir.join(format!("panels-{tag}.tcl"));
    let result = dir.join(format!("panels-{tag}.out"));
    std::fs::write(&script_path, script(iterations, &result))
        .with_context(|| format!("cannot write {}", script_path.display()))?;
    let x_before = xvfb.cpu_time();
    let started = Instant::now();
    let mut command = crate::programs::command(wish);
    crate::interrupt::die_with_parent(&mut command);
    let child = command
        .arg(&script_path)
        .envs(xvfb.client_env())
        .stdin(std::process::Stdio::null())
        .process_group(0)
        .spawn()
        .map_err(|e| crate::system::processes::cannot_start(&wish.display().to_string(), &e))?;
    let mut child = Child(child.id() as libc::pid_t);
    let (status, wish_cpu) = child.wait(RUN_TIMEOUT)?;
    let wall_seconds = started.elapsed().as_secs_f64();
    let xvfb_cpu = xvfb.cpu_time().since(x_before);
    if status != Some(0) {
        bail!(
            "wish exited with {} instead of 0 (its messages are above); Xvfb: {}",
            status.map_or("a signal".into(), |c| format!("status {c}")),
            xvfb.log_tail()
        );
    }
    let text = std::fs::read_to_string(&result)
        .with_context(|| format!("wish wrote no result to {}", result.display()))?;
    let (iterations, widgets_created, loop_seconds) = parse_result(text.trim())
        .with_context(|| format!("wish's result {text:?} is not what the script writes"))?;
    Ok(WishRun {
        iterations,
        widgets_created,
        loop_seconds,
        wall_seconds,
        wish_cpu,
        xvfb_cpu,
    })
}

/// A child in its own process group, killed with the group unless it was reaped.
struct Child(libc::pid_t);

impl Child {
    /// Waits for the exit (polling, so Ctrl-C and the timeout are seen) and returns the exit
    /// code (`None` after a signal) and the child's CPU time.
    fn wait(&mut self, timeout: Duration) -> Result<(Option<i32>, CpuTime)> {
        let deadline = Instant::now() + timeout;
        loop {
            let mut status = 0;
            // SAFETY: wait4 on our own child, writing into locals.
            let (pid, ru) = unsafe {
                let mut ru: libc::rusage = std::mem::zeroed();
                let pid = libc::wait4(self.0, &mut status, libc::WNOHANG, &mut ru);
                (pid, ru)
            };
            if pid == self.0 {
                self.0 = 0;
                let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
                let cpu = CpuTime {
                    user_s: secs(ru.ru_utime),
                    system_s: secs(ru.ru_stime),
                };
                let code = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
                return Ok((code, cpu));
            }
            if pid < 0 {
                let e = std::io::Error::last_os_error();
                if e.kind() != std::io::ErrorKind::Interrupted {
                    self.0 = 0;
                    return Err(e).context("cannot wait for wish");
                }
            }
            if crate::interrupt::requested() {
                return Err(crate::interrupt::Interrupted.into());
            }
            if Instant::now() > deadline {
                bail!("wish did not finish within {} s", timeout.as_secs());
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        if self.0 > 0 {
            // SAFETY: signalling and reaping our own child's group.
            unsafe {
                libc::kill(-self.0, libc::SIGKILL);
                libc::waitpid(self.0, std::ptr::null_mut(), 0);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn result_lines_and_words() {
        assert_eq!(
            parse_result("iterations 3 widgets 69 microseconds 1500000"),
            Some((3, 69, 1.5))
        );
        assert_eq!(parse_result("iterations 3"), None);
        assert_eq!(tcl_word("/tmp/a b/x.out"), "{/tmp/a b/x.out}");
        assert_eq!(tcl_word("/tmp/a{b"), r"/tmp/a\{b");
    }
}
