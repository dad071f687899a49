//! `osmeter guest-check --guest K --expect N PROBE`: one kernel judged with `git bisect run`'s
//! exit codes; and what `bisect` shares with it: one probe counted in one kernel.

use crate::cli::{GuestBootArgs, GuestCheckArgs};
use crate::error::EXIT_OK;
use crate::results::guest::{GuestDoc, GuestProbe};
use crate::results::keep::Keeper;
use crate::results::model::Status;
use crate::suite::guest::bisect::{self as b, GuestCheckDoc};
use crate::suite::guest::{self, GuestProbes, GuestRequest};
use crate::usage;
use anyhow::Result;
use std::time::Duration;

/// `git bisect run`: this kernel cannot be tested (skip it).
pub const EXIT_CANNOT_TEST: i32 = 125;
/// `git bisect run`: stop the bisection (the command itself is wrong, not the kernel).
pub const EXIT_ABORT: i32 = 255;

/// The probe id of a `PROBE` or `"PROBE PARAMS"` argument, checked.
pub fn probe_id(arg: &str) -> Result<&str> {
    let id = arg.split_whitespace().next().unwrap_or("");
    if crate::probes::find(id).is_some() {
        return Ok(id);
    }
    let near = crate::suggest::closest(id, crate::probes::registry().into_iter().map(|p| p.id));
    Err(usage!(
        "there is no probe {id:?}{} (`osmeter list` names them)",
        if near.is_empty() {
            String::new()
        } else {
            format!("; did you mean {}?", near.join(", "))
        }
    ))
}

/// One kernel, one probe: the request of a bisection step or a check (`split`: with the preset
/// that splits kernel instructions by function).
pub fn request(spec: &str, probe: &str, a: &GuestBootArgs, split: bool) -> Result<GuestRequest> {
    Ok(GuestRequest {
        kernels: vec![spec.to_string()],
        appends: a.append.iter().cloned().collect(),
        probes: GuestProbes::Targets(vec![probe.to_string()]),
        iterations: guest::check_iterations(a.guest_iterations)?,
        cpu: a.guest_cpu.clone(),
        timeout: Duration::from_nanos(a.guest_timeout),
        memory_mib: guest::MEMORY_MIB,
        presets: if split {
            b::split_presets()?
        } else {
            Vec::new()
        },
        cache_max: a.cache_max,
    })
}

/// The point of `doc` the argument names: its label, or the probe's only point.
pub fn point<'d>(doc: &'d GuestDoc, arg: &str) -> std::result::Result<&'d GuestProbe, String> {
    let id = arg.split_whitespace().next().unwrap_or("");
    if let Some(p) = doc.probes.iter().find(|p| p.label() == arg.trim()) {
        return Ok(p);
    }
    let of_probe: Vec<&GuestProbe> = doc.probes.iter().filter(|p| p.probe == id).collect();
    match of_probe.as_slice() {
        [one] => Ok(one),
        [] => Err(format!("{arg} was not counted in this guest")),
        many => Err(format!(
            "{id} has {} points; name one, quoted: {}",
            many.len(),
            many.iter()
                .map(|p| format!("\"{}\"", p.label()))
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// The count `figure` (MODE.EVENT) of the argument's point, or why there is none.
pub fn value(doc: &GuestDoc, arg: &str, figure: &str) -> std::result::Result<f64, String> {
    let p = point(doc, arg)?;
    let c = p.per_op.filter(|_| p.status == Status::Ok).ok_or_else(|| {
        format!(
            "{} not counted: {}",
            p.label(),
            p.reason.as_deref().unwrap_or("no counts")
        )
    })?;
    let (mode, event) = figure.split_once('.').unwrap_or(("kernel", "instructions"));
    let m = if mode == "user" { c.user } else { c.kernel };
    Ok(m.by_name()
        .iter()
        .find(|(n, _)| *n == event)
        .map_or(0.0, |(_, v)| *v))
}

/// Boots one kernel: its document, or why it gave none (a line).
pub fn count(req: &GuestRequest, keeper: &Keeper) -> Result<std::result::Result<GuestDoc, String>> {
    let (runs, failed, outcome) = guest::count_and_keep(req, keeper, None);
    outcome?;
    if let Some(doc) = runs.first().and_then(|r| r.sections.get::<GuestDoc>()) {
        return Ok(Ok(doc.clone()));
    }
    Ok(Err(failed
        .first()
        .map_or("no counts".to_string(), |f| f.line())))
}

/// A count with its difference from the good one: `909 (+19, +2.13 % of 890)`.
pub fn describe(v: f64, good: f64) -> String {
    let d = v - good;
    if good != 0.0 {
        format!("{v} ({d:+}, {:+.2} % of {good})", 100.0 * d / good)
    } else {
        format!("{v} ({d:+})")
    }
}

pub fn check(args: &GuestCheckArgs) -> Result<i32> {
    match check_kernel(args) {
        Ok(code) => Ok(code),
        Err(e) if e.is::<crate::interrupt::Interrupted>() => Err(e),
        Err(e) => {
            eprintln!(
                "osmeter: error: {e:#}\nosmeter: guest-check exits {EXIT_ABORT}, which stops \
                 `git bisect run`: the command, not the kernel, needs mending"
            );
            Ok(EXIT_ABORT)
        }
    }
}

/// The count of the check's kernel, or why it cannot be tested.
fn counted(args: &GuestCheckArgs, id: &str) -> Result<std::result::Result<(f64, String), String>> {
    if guest::sweep::is_path(&args.kernel) {
        if let Err(e) = crate::capture::system::kernel::from_path(
            std::path::Path::new(&args.kernel),
            "give the kernel tree's arch/x86/boot/bzImage",
        ) {
            return Ok(Err(format!("cannot test {}: {e:#}", args.kernel)));
        }
    }
    let req = request(&args.kernel, id, &args.boot, false)?;
    Ok(match count(&req, &Keeper::new(&[], true, None)?)? {
        Ok(doc) => value(&doc, &args.probe, &args.boot.figure)
            .map(|v| (v, doc.kernel.clone()))
            .map_err(|why| format!("cannot test: {why}")),
        Err(why) => Err(format!("cannot test: did not boot: {why}")),
    })
}

fn check_kernel(args: &GuestCheckArgs) -> Result<i32> {
    let id = probe_id(&args.probe)?;
    let a = &args.boot;
    let mut doc = GuestCheckDoc {
        kernel: args.kernel.clone(),
        probe: args.probe.clone(),
        figure: a.figure.clone(),
        expect: args.expect,
        min_change: a.min_change,
        verdict: "untestable".into(),
        count: None,
        reason: None,
    };
    let code = match counted(args, id)? {
        Err(why) => {
            eprintln!("osmeter: {why}");
            doc.reason = Some(why);
            EXIT_CANNOT_TEST
        }
        Ok((v, kernel)) => {
            let bad = b::is_bad(args.expect, v, a.min_change);
            doc.verdict = if bad { "bad" } else { "good" }.into();
            doc.count = Some(v);
            if !args.output.json {
                super::emit_unwrapped(&format!(
                    "{kernel}: {} {} {}: {}\n",
                    args.probe,
                    a.figure,
                    describe(v, args.expect),
                    doc.verdict
                ))?;
            }
            if bad {
                1
            } else {
                EXIT_OK
            }
        }
    };
    if args.output.json {
        super::emit_json(&doc)?;
    }
    Ok(code)
}
