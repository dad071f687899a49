//! `osmeter trace -o FILE`: a trace captured, of a command's user-mode references (valgrind's
//! lackey) or of a whole guest system's (`--system`, under QEMU).

use crate::capture::valgrind;
use crate::cli::TraceArgs;
use crate::usage;
use anyhow::Result;
use std::path::Path;

/// `trace --system -o FILE`: a workload or a command in a QEMU guest, user and kernel references.
pub fn system(args: &TraceArgs, out: &Path) -> Result<i32> {
    use crate::capture::system::capture::{SystemCapture, Target};
    use crate::capture::system::workloads;
    let target = match (&args.workload, args.command.is_empty()) {
        (Some(_), false) => {
            return Err(usage!(
                "give either --workload NAME or a command after --, not both"
            ))
        }
        (None, true) => {
            return Err(usage!(
                "nothing to trace: give a command after -- or --workload NAME ({})",
                workloads::names().join(", ")
            ))
        }
        (Some(workload), true) => Target::Workload(workload),
        (None, false) => Target::Command(args.command.clone()),
    };
    crate::capture::system::capture::run(&SystemCapture {
        output: out.to_path_buf(),
        zstd: args.zstd,
        target,
        kernel: args.kernel.clone(),
        system_map: args.system_map.clone(),
        kernel_package: args.kernel_package.clone(),
        include: args.include.clone(),
        memory_mib: args.memory,
        timeout: std::time::Duration::from_nanos(args.timeout),
        install: args.install,
        guest_output_on_stderr: false,
    })
}

/// `trace -o FILE -- CMD`: the user-mode references of CMD through valgrind's lackey.
pub fn user(out: &Path, zstd: bool, cmd: &[String]) -> Result<i32> {
    let valgrind = crate::programs::find("valgrind").ok_or_else(|| {
        anyhow::anyhow!("valgrind is not installed (or not on PATH): osmeter trace runs the command under valgrind's lackey tool; install valgrind")
    })?;
    crate::programs::startable(&cmd[0])?;
    let c = valgrind::capture(&valgrind, out, zstd, cmd)?;
    eprintln!(
        "osmeter: traced {} references in {:.2} s ({:.2} M refs/s) to {}; user mode only: lackey cannot see kernel references",
        c.references,
        c.seconds,
        c.references as f64 / c.seconds.max(1e-9) / 1e6,
        out.display()
    );
    if c.interrupted {
        eprintln!(
            "osmeter: interrupted: the trace holds the references captured before {} and is \
             marked incomplete",
            crate::interrupt::what_stopped()
        );
        return Ok(crate::error::EXIT_INTERRUPTED);
    }
    if !c.status.success() {
        if c.status.code().is_none() {
            eprintln!(
                "osmeter: the traced command was killed ({}); the trace is marked incomplete",
                c.status
            );
        } else {
            eprintln!(
                "osmeter: the traced command failed ({}); its trace is kept",
                c.status
            );
        }
        return Ok(crate::error::EXIT_COMMAND_FAILED);
    }
    Ok(crate::error::EXIT_OK)
}
