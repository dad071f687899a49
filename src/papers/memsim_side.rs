//! What `osmeter paper chen-bershad93` measures without `--run`: a full-system trace of one
//! built-in workload under QEMU (as `osmeter trace --system --workload`), simulated on the
//! DECstation 5000/200 preset with the seven assertions judged (as `osmeter memsim --preset
//! ds5000-200 --assertions`), kept as a memsim run under the paper's name.

use crate::capture::system::capture::{self as system, SystemCapture, Target};
use crate::capture::system::{kernel as guest_kernel, workloads};
use crate::memsim::config::PresetName;
use crate::memsim::document::MemsimDoc;
use crate::memsim::kernel;
use crate::memsim::simulation::{self, Simulation};
use crate::results::keep::Keeper;
use crate::results::model::{Run, Sections};
use anyhow::Result;
use std::path::PathBuf;

/// The paper's workloads were Unix utilities and compilers; `grep` over a generated tree is
/// the shortest of osmeter's guest workloads that still spends a large share in the kernel
/// (file system calls), so the trace and its simulation take minutes, not tens of them.
pub const DEFAULT_WORKLOAD: &str = "grep";

/// What the trace is asked for: `paper --workload`, `--dir` and `--install`, lowered by the
/// configuration layer.
#[derive(Debug, Clone)]
pub struct TraceRequest {
    pub workload: &'static workloads::Workload,
    /// Where the scratch directory holding the trace is made.
    pub dir: PathBuf,
    pub install: bool,
}

/// The guest workload `--workload` names (the default when it is not given).
pub fn workload(name: Option<&str>) -> Result<&'static workloads::Workload> {
    let name = name.unwrap_or(DEFAULT_WORKLOAD);
    workloads::find(name).ok_or_else(|| {
        crate::usage!(
            "--workload {name}: no such guest workload; use one of {}",
            workloads::names().join(", ")
        )
    })
}

/// How the trace and simulation ended: a run to show, or the capture's exit code when it failed
/// (it has said why on stderr).
pub enum Outcome {
    Kept(Box<Run>),
    CaptureFailed(i32),
}

/// Traces, simulates and keeps. The trace lives in a scratch directory under `--dir` and is
/// removed afterwards: the run keeps the simulation, not the references.
pub fn measure(req: &TraceRequest, keeper: &Keeper, suite: &str) -> Result<Outcome> {
    let name = req.workload.name;
    let scratch = crate::scratch::ScratchDir::create(&req.dir, "paper-trace")?;
    let trace_path = scratch.path().join(format!("{name}.osmt"));
    let started_at = crate::clock::now_rfc3339();
    let code = system::run(&SystemCapture {
        output: trace_path.clone(),
        zstd: false,
        target: Target::Workload(req.workload),
        kernel: None,
        system_map: None,
        kernel_package: guest_kernel::DEFAULT_PACKAGE.to_string(),
        include: Vec::new(),
        // As `osmeter trace --system` has them by default.
        memory_mib: system::DEFAULT_MEMORY_MIB,
        timeout: std::time::Duration::from_nanos(
            crate::units::duration_arg(system::DEFAULT_TIMEOUT)
                .expect("the default timeout is valid"),
        ),
        install: req.install,
        guest_output_on_stderr: true,
    })?;
    if code != crate::error::EXIT_OK || !trace_path.is_file() {
        return Ok(Outcome::CaptureFailed(code.max(crate::error::EXIT_RUNTIME)));
    }
    let doc = simulate(&trace_path, name)?;
    let mut run = keeper.run_of(Sections::of(doc), started_at, false);
    run.suite = Some(suite.to_string());
    keeper.save(&run)?;
    Ok(Outcome::Kept(Box::new(run)))
}

/// The simulation `osmeter memsim TRACE --preset ds5000-200 --assertions` makes, with the
/// kernel symbols the capture left beside the trace.
fn simulate(trace_path: &std::path::Path, workload: &str) -> Result<MemsimDoc> {
    let presets = [PresetName("ds5000-200")];
    let machines = crate::memsim::choice::machines(&crate::memsim::choice::MachineChoice {
        presets: &presets,
        configs: &[],
        l1d: None,
        l1i: None,
        l2: None,
        tlb: None,
        no_3c: false,
        curves: &[],
    })?;
    eprintln!("osmeter: simulating the trace on ds5000-200 and judging the seven assertions");
    let done = simulation::simulate(Simulation {
        trace: trace_path,
        format: None,
        shown_as: format!("the system trace of workload {workload} (removed after simulation)"),
        machines: &machines,
        symbols: kernel::find_symbols(trace_path, None)?,
        include_idle: false,
        assertions: true,
        curves: Vec::new(),
        interval: None,
        threads: None,
    })?;
    Ok(done.doc)
}
