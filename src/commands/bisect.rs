//! `osmeter bisect --good K --bad K PROBE`: the first kernel whose exact count moved, in log2
//! boots, each step printed, then the kernel functions that moved; and `osmeter guest-check`,
//! one kernel judged with `git bisect run`'s exit codes.

use crate::cli::{BisectArgs, GuestBootArgs, GuestCheckArgs};
use crate::error::{EXIT_OK, EXIT_RUNTIME};
use crate::results::guest::{GuestDoc, GuestProbe};
use crate::results::keep::Keeper;
use crate::results::kernel_timeline::text as t;
use crate::results::model::Status;
use crate::suite::guest::bisect::{self as b, Verdict};
use crate::suite::guest::{self, GuestProbes, GuestRequest};
use crate::usage;
use anyhow::Result;
use std::time::Duration;

/// `git bisect run`: this kernel cannot be tested (skip it).
pub const EXIT_CANNOT_TEST: i32 = 125;
/// `git bisect run`: stop the bisection (the command itself is wrong, not the kernel).
pub const EXIT_ABORT: i32 = 255;

/// The probe id of a `PROBE` or `"PROBE PARAMS"` argument, checked.
fn probe_id(arg: &str) -> Result<&str> {
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

fn request(spec: &str, probe: &str, a: &GuestBootArgs, presets: bool) -> Result<GuestRequest> {
    Ok(GuestRequest {
        kernels: vec![spec.to_string()],
        appends: a.append.iter().cloned().collect(),
        probes: GuestProbes::Targets(vec![probe.to_string()]),
        iterations: guest::check_iterations(a.guest_iterations)?,
        cpu: a.guest_cpu.clone(),
        timeout: Duration::from_nanos(a.guest_timeout),
        memory_mib: guest::MEMORY_MIB,
        presets: if presets {
            b::split_presets()?
        } else {
            Vec::new()
        },
        cache_max: a.cache_max,
    })
}

/// The point of `doc` the argument names: its label, or the probe's only point.
fn point<'d>(doc: &'d GuestDoc, arg: &str) -> std::result::Result<&'d GuestProbe, String> {
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
fn value(doc: &GuestDoc, arg: &str, figure: &str) -> std::result::Result<f64, String> {
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
fn count(req: &GuestRequest, keeper: &Keeper) -> Result<std::result::Result<GuestDoc, String>> {
    let (runs, failed, outcome) = guest::count_and_keep(req, keeper, None);
    outcome?;
    if let Some(doc) = runs.first().and_then(|r| r.sections.get::<GuestDoc>()) {
        return Ok(Ok(doc.clone()));
    }
    Ok(Err(failed
        .first()
        .map_or("no counts".to_string(), |f| f.line())))
}

fn describe(v: f64, good: f64) -> String {
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

fn check_kernel(args: &GuestCheckArgs) -> Result<i32> {
    let id = probe_id(&args.probe)?;
    let a = &args.boot;
    if guest::sweep::is_path(&args.kernel) {
        if let Err(e) = crate::capture::system::kernel::from_path(
            std::path::Path::new(&args.kernel),
            "give the kernel tree's arch/x86/boot/bzImage",
        ) {
            eprintln!("osmeter: cannot test {}: {e:#}", args.kernel);
            return Ok(EXIT_CANNOT_TEST);
        }
    }
    let req = request(&args.kernel, id, a, false)?;
    let doc = match count(&req, &Keeper::new(&[], true, None)?)? {
        Ok(doc) => doc,
        Err(why) => {
            eprintln!("osmeter: cannot test: did not boot: {why}");
            return Ok(EXIT_CANNOT_TEST);
        }
    };
    let v = match value(&doc, &args.probe, &a.figure) {
        Ok(v) => v,
        Err(why) => {
            eprintln!("osmeter: cannot test: {why}");
            return Ok(EXIT_CANNOT_TEST);
        }
    };
    let bad = b::is_bad(args.expect, v, a.min_change);
    super::emit_unwrapped(&format!(
        "{}: {} {} {}: {}\n",
        doc.kernel,
        args.probe,
        a.figure,
        describe(v, args.expect),
        if bad { "bad" } else { "good" }
    ))?;
    Ok(if bad { 1 } else { EXIT_OK })
}

pub fn bisect(args: &BisectArgs) -> Result<i32> {
    let id = probe_id(&args.probe)?;
    let list: Vec<String> = if args.between.is_empty() {
        b::archive_between(&args.good, &args.bad)?
    } else {
        std::iter::once(args.good.clone())
            .chain(args.between.iter().cloned())
            .chain(std::iter::once(args.bad.clone()))
            .collect()
    };
    if list.len() < 2 {
        return Err(usage!(
            "bisect --good {} --bad {}: these name one kernel; give two different ones",
            args.good,
            args.bad
        ));
    }
    let most = b::boots_needed(list.len());
    let mut head = format!(
        "{} kernel(s) from good to bad; the ends and at most {most} between them boot\n",
        list.len()
    );
    for (i, k) in list.iter().enumerate() {
        head.push_str(&format!("  {:>3}  {k}\n", i + 1));
    }
    super::emit_unwrapped(&head)?;
    if args.dry_run {
        return Ok(EXIT_OK);
    }
    let keeper = crate::config::keeper(&args.keep)?;
    let a = &args.boot;
    let judge_one = |i: usize| -> Result<std::result::Result<(f64, GuestDoc), String>> {
        Ok(count(&request(&list[i], id, a, false)?, &keeper)?
            .and_then(|doc| Ok((value(&doc, &args.probe, &a.figure)?, doc))))
    };
    let (good, good_doc) = judge_one(0)?
        .map_err(|why| anyhow::anyhow!("the good kernel {} gave no count: {why}", list[0]))?;
    let (bad, _) = judge_one(list.len() - 1)?.map_err(|why| {
        anyhow::anyhow!(
            "the bad kernel {} gave no count: {why}",
            list[list.len() - 1]
        )
    })?;
    super::emit_unwrapped(&format!(
        "good  {}: {} {} = {good}\n",
        list[0], args.probe, a.figure
    ))?;
    if !b::is_bad(good, bad, a.min_change) {
        eprintln!(
            "osmeter: {} counts {} {}: within --min-change {} % of the good kernel's: nothing \
             to bisect (lower --min-change, or name a bad kernel whose count moved)",
            list[list.len() - 1],
            describe(bad, good),
            a.figure,
            a.min_change
        );
        return Ok(EXIT_RUNTIME);
    }
    super::emit_unwrapped(&format!(
        "bad   {}: {}\n",
        list[list.len() - 1],
        describe(bad, good)
    ))?;
    let mut step = 0;
    let found = b::bisect(list.len(), &mut |i| {
        step += 1;
        let v = match judge_one(i)? {
            Ok((v, _)) if b::is_bad(good, v, a.min_change) => Verdict::Bad(v),
            Ok((v, _)) => Verdict::Good(v),
            Err(why) => Verdict::Untestable(why),
        };
        let line = match &v {
            Verdict::Good(x) => format!("good  {}", describe(*x, good)),
            Verdict::Bad(x) => format!("bad   {}", describe(*x, good)),
            Verdict::Untestable(why) => format!("cannot test, skipped: {why}"),
        };
        super::emit_unwrapped(&format!(
            "step {step} (at most {most}): {}: {line}\n",
            list[i]
        ))?;
        Ok(v)
    })?;
    finish(args, &list, found, (good, good_doc), &keeper)
}

/// The answer, and the kernel functions that moved between the last good and first bad kernel.
fn finish(
    args: &BisectArgs,
    list: &[String],
    found: b::Found,
    (good, _): (f64, GuestDoc),
    keeper: &Keeper,
) -> Result<i32> {
    let (lg, fb) = (&list[found.last_good], &list[found.first_bad]);
    let mut out = format!("\nFirst bad kernel: {fb}\nLast good kernel: {lg}\n");
    if found.first_bad > found.last_good + 1 {
        out.push_str(&format!(
            "  ({} kernel(s) between could not be counted: the change is in one of them or in \
             {fb})\n",
            found.first_bad - found.last_good - 1
        ));
    }
    super::emit_unwrapped(&out)?;
    if args.no_split || args.boot.figure != "kernel.instructions" {
        return Ok(EXIT_OK);
    }
    eprintln!("osmeter: booting both again with --preset pentium to split the change by function");
    let mut parts = Vec::new();
    for k in [lg, fb] {
        let doc = count(
            &request(k, probe_id(&args.probe)?, &args.boot, true)?,
            keeper,
        )?
        .map_err(|why| anyhow::anyhow!("{k} did not boot again for the split: {why}"))?;
        let p = point(&doc, &args.probe).map_err(|e| anyhow::anyhow!(e))?;
        parts.push((
            p.kernel_parts.clone(),
            value(&doc, &args.probe, "kernel.instructions"),
        ));
    }
    let (Some(pa), Some(pb)) = (&parts[0].0, &parts[1].0) else {
        eprintln!("osmeter: no kernel symbols for the split (see the messages above)");
        return Ok(EXIT_OK);
    };
    let moved = crate::results::kernel_timeline::moved_functions(pa, pb);
    let after = parts[1].1.clone().unwrap_or(good);
    let mut text = format!(
        "Kernel functions that moved ({} {:+} kernel instructions per operation):\n",
        args.probe,
        after - parts[0].1.clone().unwrap_or(good)
    );
    for m in moved.iter().take(10) {
        text.push_str(&format!(
            "  {} in {} ({} -> {})\n",
            t::signed(m.after - m.before),
            m.function,
            t::count(m.before),
            t::count(m.after)
        ));
    }
    if moved.is_empty() {
        text.push_str("  (none by half an instruction or more)\n");
    }
    super::emit_unwrapped(&text)?;
    Ok(EXIT_OK)
}
