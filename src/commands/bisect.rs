//! `osmeter bisect --good K --bad K PROBE`: the first kernel whose exact count moved, in log2
//! boots, each step printed, then the kernel functions that moved.

use super::guest_check::{count, describe, point, probe_id, request, value};
use crate::cli::BisectArgs;
use crate::error::{EXIT_OK, EXIT_RUNTIME};
use crate::results::keep::Keeper;
use crate::results::kernel_timeline::{moved_functions, text as t, FunctionMove};
use crate::suite::guest::bisect::{self as b, BisectDoc, BisectStep, Verdict};
use crate::usage;
use anyhow::Result;

/// Where the lines of a bisection go: stdout, or stderr when stdout holds the JSON document.
struct Say {
    json: bool,
}

impl Say {
    fn line(&self, text: &str) -> Result<()> {
        if self.json {
            eprint!("{text}");
            Ok(())
        } else {
            super::emit_unwrapped(text)
        }
    }
}

/// The kernels from good to bad: the archive's, or good, `--between` and bad.
fn kernels(args: &BisectArgs) -> Result<Vec<String>> {
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
    Ok(list)
}

pub fn bisect(args: &BisectArgs) -> Result<i32> {
    let id = probe_id(&args.probe)?;
    let list = kernels(args)?;
    let say = Say {
        json: args.output.json,
    };
    let most = b::boots_needed(list.len());
    let mut head = format!(
        "{} kernel(s) from good to bad; the ends and at most {most} between them boot\n",
        list.len()
    );
    for (i, k) in list.iter().enumerate() {
        head.push_str(&format!("  {:>3}  {k}\n", i + 1));
    }
    say.line(&head)?;
    let mut doc = BisectDoc {
        probe: args.probe.clone(),
        figure: args.boot.figure.clone(),
        min_change: args.boot.min_change,
        kernels: list.clone(),
        ..BisectDoc::default()
    };
    if args.dry_run {
        return emit(&say, &doc, EXIT_OK);
    }
    let keeper = crate::config::keeper(&args.keep)?;
    let a = &args.boot;
    let judge = |i: usize, good: Option<f64>| -> Result<Verdict> {
        let got = count(&request(&list[i], id, a, false)?, &keeper)?
            .and_then(|doc| value(&doc, &args.probe, &a.figure));
        Ok(match (got, good) {
            (Err(why), _) => Verdict::Untestable(why),
            (Ok(v), Some(g)) if b::is_bad(g, v, a.min_change) => Verdict::Bad(v),
            (Ok(v), _) => Verdict::Good(v),
        })
    };
    let (first, last) = (&list[0], &list[list.len() - 1]);
    let good = match judge(0, None)? {
        Verdict::Good(g) => g,
        other => return no_count("good", first, &other),
    };
    doc.steps.push(BisectStep::of(first, &Verdict::Good(good)));
    say.line(&format!(
        "good  {first}: {} {} = {good}\n",
        args.probe, a.figure
    ))?;
    let bad = judge(list.len() - 1, Some(good))?;
    doc.steps.push(BisectStep::of(last, &bad));
    match bad {
        Verdict::Bad(v) => say.line(&format!("bad   {last}: {}\n", describe(v, good)))?,
        Verdict::Good(v) => {
            eprintln!(
                "osmeter: {last} counts {} {}: within --min-change {} % of the good kernel's: \
                 nothing to bisect (lower --min-change, or name a bad kernel whose count moved)",
                describe(v, good),
                a.figure,
                a.min_change
            );
            return Ok(EXIT_RUNTIME);
        }
        other => return no_count("bad", last, &other),
    }
    let found = b::bisect(list.len(), &mut |i| {
        let v = judge(i, Some(good))?;
        let line = match &v {
            Verdict::Good(x) => format!("good  {}", describe(*x, good)),
            Verdict::Bad(x) => format!("bad   {}", describe(*x, good)),
            Verdict::Untestable(why) => format!("cannot test, skipped: {why}"),
        };
        doc.steps.push(BisectStep::of(&list[i], &v));
        let n = doc.steps.len() - 2;
        say.line(&format!("step {n} (at most {most}): {}: {line}\n", list[i]))?;
        Ok(v)
    })?;
    finish(args, &say, &mut doc, found, &keeper)?;
    emit(&say, &doc, EXIT_OK)
}

fn no_count(which: &str, kernel: &str, v: &Verdict) -> Result<i32> {
    let why = match v {
        Verdict::Untestable(why) => why.clone(),
        _ => "no count".into(),
    };
    Err(anyhow::anyhow!(
        "the {which} kernel {kernel} gave no count: {why}"
    ))
}

fn emit(say: &Say, doc: &BisectDoc, code: i32) -> Result<i32> {
    if say.json {
        super::emit_json(doc)?;
    }
    Ok(code)
}

/// The answer, and the kernel functions that moved between the last good and first bad kernel.
fn finish(
    args: &BisectArgs,
    say: &Say,
    doc: &mut BisectDoc,
    found: b::Found,
    keeper: &Keeper,
) -> Result<()> {
    let list = &doc.kernels;
    let (lg, fb) = (list[found.last_good].clone(), list[found.first_bad].clone());
    doc.untestable_between = found.first_bad - found.last_good - 1;
    let mut out = format!("\nFirst bad kernel: {fb}\nLast good kernel: {lg}\n");
    if doc.untestable_between > 0 {
        out.push_str(&format!(
            "  ({} kernel(s) between could not be counted: the change is in one of them or in \
             {fb})\n",
            doc.untestable_between
        ));
    }
    say.line(&out)?;
    doc.last_good = Some(lg.clone());
    doc.first_bad = Some(fb.clone());
    if args.no_split || args.boot.figure != "kernel.instructions" {
        return Ok(());
    }
    eprintln!("osmeter: booting both again with --preset pentium to split the change by function");
    let Some((moved, change)) = split(args, keeper, &lg, &fb)? else {
        eprintln!("osmeter: no kernel symbols for the split (see the messages above)");
        return Ok(());
    };
    let mut text = format!(
        "Kernel functions that moved ({} {} kernel instructions per operation):\n",
        args.probe,
        t::signed(change)
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
    say.line(&text)?;
    doc.functions = Some(moved);
    Ok(())
}

/// The two kernels counted again with the split by function: the functions that moved and the
/// change of the count; None without symbols.
fn split(
    args: &BisectArgs,
    keeper: &Keeper,
    lg: &str,
    fb: &str,
) -> Result<Option<(Vec<FunctionMove>, f64)>> {
    let mut sides = Vec::new();
    for k in [lg, fb] {
        let doc = count(
            &request(k, probe_id(&args.probe)?, &args.boot, true)?,
            keeper,
        )?
        .map_err(|why| anyhow::anyhow!("{k} did not boot again for the split: {why}"))?;
        let p = point(&doc, &args.probe).map_err(|e| anyhow::anyhow!(e))?;
        let v = value(&doc, &args.probe, "kernel.instructions").unwrap_or(0.0);
        sides.push((p.kernel_parts.clone(), v));
    }
    let (Some(pa), Some(pb)) = (&sides[0].0, &sides[1].0) else {
        return Ok(None);
    };
    Ok(Some((moved_functions(pa, pb), sides[1].1 - sides[0].1)))
}
